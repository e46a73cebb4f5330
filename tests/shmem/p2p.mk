# Tests of contexts, signals, set waits and locks (docs/shmem_p2p.md);
# included from shmem/Makefile.include.
if HAVE_CHECK
check_PROGRAMS += tests/check_shmem_p2p tests/shmem/mp_shmem_p2p
TESTS += tests/check_shmem_p2p
tests_check_shmem_p2p_SOURCES = tests/shmem/check_shmem_p2p.c
tests_check_shmem_p2p_CPPFLAGS = $(TEST_CPPFLAGS)
tests_check_shmem_p2p_LDADD = $(TEST_LDADD)
# public API only, through the shared library
tests_shmem_mp_shmem_p2p_SOURCES = tests/shmem/mp_shmem_p2p.c
tests_shmem_mp_shmem_p2p_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_shmem_mp_shmem_p2p_LDADD = librmb.la
tests_shmem_mp_shmem_p2p_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
