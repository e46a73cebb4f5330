# Multi-node tests: programs on emulated nodes in network namespaces
# (oshrun --nodes K --netns; root only, skipped otherwise). Included from
# tests/Makefile.include.
EXTRA_DIST += docs/multinode.md
if HAVE_CHECK
check_PROGRAMS += tests/check_multinode tests/multinode/mp_netns
TESTS += tests/check_multinode
tests_check_multinode_SOURCES = tests/multinode/check_multinode.c
tests_check_multinode_CPPFLAGS = $(TEST_CPPFLAGS)
tests_check_multinode_LDADD = $(TEST_LDADD)
tests_multinode_mp_netns_SOURCES = tests/multinode/mp_netns.c
tests_multinode_mp_netns_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_multinode_mp_netns_LDADD = librmb.la
tests_multinode_mp_netns_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
