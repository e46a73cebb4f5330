# examples/{halo,em3d,dht}: the thesis's application study (§5.2.2-5.2.4,
# §6.3). Each app has four variants sharing one kernel file: rpipe and
# OpenSHMEM (librmb, run under oshrun) and, when MPI is found, MPI two-sided
# and MPI-3 RMA (plain MPI, run under mpirun; they do not link librmb).
# scripts/apps-compare.sh runs and compares them; docs/apps.md has the numbers.
apps_rmb_ldflags = $(AM_LDFLAGS) -no-install
# The MPI variants are built against Open MPI (its mpirun runs them);
# configure's per-MPI probe gives its flags (btl/mpi/configure.m4).
apps_mpi_cppflags = $(AM_CPPFLAGS) $(MPI_OMPI_CFLAGS)
apps_mpi_libs = $(MPI_OMPI_LIBS) -lm

# ---- halo: 2-D heat equation ------------------------------------------------
noinst_PROGRAMS += examples/halo/halo_rpipe examples/halo/halo_shmem
examples_halo_halo_rpipe_SOURCES = examples/halo/halo_rpipe.c examples/halo/halo.c examples/halo/halo.h
examples_halo_halo_rpipe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/rpipe
examples_halo_halo_rpipe_LDADD = librmb.la -lm
examples_halo_halo_rpipe_LDFLAGS = $(apps_rmb_ldflags)
examples_halo_halo_shmem_SOURCES = examples/halo/halo_shmem.c examples/halo/halo.c examples/halo/halo.h
examples_halo_halo_shmem_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
examples_halo_halo_shmem_LDADD = librmb.la -lm
examples_halo_halo_shmem_LDFLAGS = $(apps_rmb_ldflags)
if RMB_HAVE_MPI_OMPI
noinst_PROGRAMS += examples/halo/halo_mpi examples/halo/halo_mpi_rma
examples_halo_halo_mpi_SOURCES = examples/halo/halo_mpi.c examples/halo/halo.c examples/halo/halo.h
examples_halo_halo_mpi_CPPFLAGS = $(apps_mpi_cppflags)
examples_halo_halo_mpi_LDADD = $(apps_mpi_libs)
examples_halo_halo_mpi_rma_SOURCES = examples/halo/halo_mpi_rma.c examples/halo/halo.c examples/halo/halo.h
examples_halo_halo_mpi_rma_CPPFLAGS = $(apps_mpi_cppflags)
examples_halo_halo_mpi_rma_LDADD = $(apps_mpi_libs)
endif

# ---- em3d: irregular bipartite graph ----------------------------------------
noinst_PROGRAMS += examples/em3d/em3d_rpipe examples/em3d/em3d_shmem
examples_em3d_em3d_rpipe_SOURCES = examples/em3d/em3d_rpipe.c examples/em3d/em3d.c examples/em3d/em3d.h
examples_em3d_em3d_rpipe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/rpipe
examples_em3d_em3d_rpipe_LDADD = librmb.la -lm
examples_em3d_em3d_rpipe_LDFLAGS = $(apps_rmb_ldflags)
examples_em3d_em3d_shmem_SOURCES = examples/em3d/em3d_shmem.c examples/em3d/em3d.c examples/em3d/em3d.h
examples_em3d_em3d_shmem_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
examples_em3d_em3d_shmem_LDADD = librmb.la -lm
examples_em3d_em3d_shmem_LDFLAGS = $(apps_rmb_ldflags)
if RMB_HAVE_MPI_OMPI
noinst_PROGRAMS += examples/em3d/em3d_mpi examples/em3d/em3d_mpi_rma
examples_em3d_em3d_mpi_SOURCES = examples/em3d/em3d_mpi.c examples/em3d/em3d.c examples/em3d/em3d.h
examples_em3d_em3d_mpi_CPPFLAGS = $(apps_mpi_cppflags)
examples_em3d_em3d_mpi_LDADD = $(apps_mpi_libs)
examples_em3d_em3d_mpi_rma_SOURCES = examples/em3d/em3d_mpi_rma.c examples/em3d/em3d.c examples/em3d/em3d.h
examples_em3d_em3d_mpi_rma_CPPFLAGS = $(apps_mpi_cppflags)
examples_em3d_em3d_mpi_rma_LDADD = $(apps_mpi_libs)
endif

# ---- dht: distributed hash table --------------------------------------------
noinst_PROGRAMS += examples/dht/dht_rpipe examples/dht/dht_shmem
examples_dht_dht_rpipe_SOURCES = examples/dht/dht_rpipe.c examples/dht/dht.c examples/dht/dht.h
examples_dht_dht_rpipe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/rpipe
examples_dht_dht_rpipe_LDADD = librmb.la
examples_dht_dht_rpipe_LDFLAGS = $(apps_rmb_ldflags)
examples_dht_dht_shmem_SOURCES = examples/dht/dht_shmem.c examples/dht/dht.c examples/dht/dht.h
examples_dht_dht_shmem_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/shmem
examples_dht_dht_shmem_LDADD = librmb.la
examples_dht_dht_shmem_LDFLAGS = $(apps_rmb_ldflags)
if RMB_HAVE_MPI_OMPI
noinst_PROGRAMS += examples/dht/dht_mpi examples/dht/dht_mpi_rma
examples_dht_dht_mpi_SOURCES = examples/dht/dht_mpi.c examples/dht/dht.c examples/dht/dht.h
examples_dht_dht_mpi_CPPFLAGS = $(apps_mpi_cppflags)
examples_dht_dht_mpi_LDADD = $(apps_mpi_libs)
examples_dht_dht_mpi_rma_SOURCES = examples/dht/dht_mpi_rma.c examples/dht/dht.c examples/dht/dht.h
examples_dht_dht_mpi_rma_CPPFLAGS = $(apps_mpi_cppflags)
examples_dht_dht_mpi_rma_LDADD = $(apps_mpi_libs)
endif

# ---- tests: small sizes of every variant, verified --------------------------
if HAVE_CHECK
check_PROGRAMS += tests/check_apps
TESTS += tests/check_apps
tests_check_apps_SOURCES = tests/apps/check_apps.c
tests_check_apps_CPPFLAGS = $(TEST_CPPFLAGS)
tests_check_apps_LDADD = $(TEST_LDADD)
endif
noinst_HEADERS += examples/app_common.h examples/app_rpipe.h
