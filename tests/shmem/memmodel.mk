# Memory-model stress test (docs/btl.md, "Memory-model stress test"):
# mp_shmem_memmodel (public shmem.h only, shared library) under every
# backend: shm, ofi (tcp;ofi_rxm and sockets), 2 emulated nodes, btl/mpi
# under Open MPI's mpirun. Included from tests/Makefile.include.
EXTRA_DIST += tests/shmem/memmodel.mk
if HAVE_CHECK
check_PROGRAMS += tests/check_shmem_memmodel tests/shmem/mp_shmem_memmodel
TESTS += tests/check_shmem_memmodel
tests_check_shmem_memmodel_SOURCES = tests/shmem/check_shmem_memmodel.c
tests_check_shmem_memmodel_CPPFLAGS = $(TEST_CPPFLAGS) \
    -DRMB_TEST_LSAN_MPI_SUPP='"$(abs_top_srcdir)/tests/btl/lsan_mpi.supp"'
tests_check_shmem_memmodel_LDADD = $(TEST_LDADD)
tests_shmem_mp_shmem_memmodel_SOURCES = tests/shmem/mp_shmem_memmodel.c
tests_shmem_mp_shmem_memmodel_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_shmem_mp_shmem_memmodel_LDADD = librmb.la
tests_shmem_mp_shmem_memmodel_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
