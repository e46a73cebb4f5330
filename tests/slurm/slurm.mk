# Jobs started by Slurm on a two-node cluster the test starts itself
# (root only, skipped otherwise; docs/launcher.md). Included from
# tests/Makefile.include.
EXTRA_DIST += tests/slurm/slurm_cluster.sh
if HAVE_CHECK
check_PROGRAMS += tests/check_slurm tests/slurm/mp_slurm
TESTS += tests/check_slurm
tests_check_slurm_SOURCES = tests/slurm/check_slurm.c
tests_check_slurm_CPPFLAGS = $(TEST_CPPFLAGS) \
    -DRMB_TEST_SLURM_CLUSTER='"$(abs_top_srcdir)/tests/slurm/slurm_cluster.sh"'
tests_check_slurm_LDADD = $(TEST_LDADD)
tests_slurm_mp_slurm_SOURCES = tests/slurm/mp_slurm.c
tests_slurm_mp_slurm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
tests_slurm_mp_slurm_LDADD = librmb.la
tests_slurm_mp_slurm_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
