# Multi-node tests: programs on emulated nodes in network namespaces
# (oshrun --nodes K --netns; root only, skipped otherwise). Included from
# tests/Makefile.include.
EXTRA_DIST += docs/multinode.md tests/multinode/first_contact_stress.sh
if HAVE_CHECK
check_PROGRAMS += tests/check_multinode tests/multinode/mp_netns
# Own copies of the layers' programs: `make -j check` runs the suites in
# parallel, and each checks that no process of its programs survived.
check_PROGRAMS += tests/multinode/mp_rpipe tests/multinode/mp_rcoll tests/multinode/mp_shmem \
                  tests/multinode/mp_shmem_p2p tests/multinode/mp_shmem_team \
                  tests/multinode/mp_first_contact
TESTS += tests/check_multinode
tests_check_multinode_SOURCES = tests/multinode/check_multinode.c
tests_check_multinode_CPPFLAGS = $(TEST_CPPFLAGS)
tests_check_multinode_LDADD = $(TEST_LDADD)
tests_multinode_mp_netns_SOURCES = tests/multinode/mp_netns.c
tests_multinode_mp_netns_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_netns_LDADD = librmb.la
tests_multinode_mp_netns_LDFLAGS = $(AM_LDFLAGS) -no-install
# First contact under stress (docs/multinode.md): run by check_multinode's
# first_contact case, FIRST_CONTACT_REPS times per configuration, and by
# tests/multinode/first_contact_stress.sh.
tests_multinode_mp_first_contact_SOURCES = tests/multinode/mp_first_contact.c
tests_multinode_mp_first_contact_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_first_contact_LDADD = librmb.la
tests_multinode_mp_first_contact_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_multinode_mp_rpipe_SOURCES = tests/rpipe/mp_rpipe.c
tests_multinode_mp_rcoll_SOURCES = tests/rpipe/mp_rcoll.c
tests_multinode_mp_shmem_SOURCES = tests/shmem/mp_shmem.c
tests_multinode_mp_shmem_p2p_SOURCES = tests/shmem/mp_shmem_p2p.c
tests_multinode_mp_shmem_team_SOURCES = tests/shmem/mp_shmem_team.c
tests_multinode_mp_rpipe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_rpipe_LDADD = librmb.la
tests_multinode_mp_rpipe_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_multinode_mp_rcoll_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_rcoll_LDADD = librmb.la
tests_multinode_mp_rcoll_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_multinode_mp_shmem_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_shmem_LDADD = librmb.la
tests_multinode_mp_shmem_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_multinode_mp_shmem_p2p_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_shmem_p2p_LDADD = librmb.la
tests_multinode_mp_shmem_p2p_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_multinode_mp_shmem_team_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_shmem_team_LDADD = librmb.la
tests_multinode_mp_shmem_team_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
