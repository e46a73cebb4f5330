# Tests of spaces (docs/spaces.md); included from shmem/Makefile.include.
# The Check driver runs mp_shmem_space (public shmem.h and shmemx.h only)
# under oshrun and Open MPI's mpirun.
if HAVE_CHECK
check_PROGRAMS += tests/check_shmem_space tests/shmem/mp_shmem_space
TESTS += tests/check_shmem_space
tests_check_shmem_space_SOURCES = tests/shmem/check_shmem_space.c
tests_check_shmem_space_CPPFLAGS = $(TEST_CPPFLAGS)
tests_check_shmem_space_LDADD = $(TEST_LDADD)
tests_shmem_mp_shmem_space_SOURCES = tests/shmem/mp_shmem_space.c
tests_shmem_mp_shmem_space_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_shmem_mp_shmem_space_LDADD = librmb.la
tests_shmem_mp_shmem_space_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
