# btl/mpi and the MPI bootstrap: MPI-3 RMA through a plugin per MPI; optional.
#
# librmb links no MPI. Each MPI found here gets its own plugin,
# rmb_mpi_openmpi.so and/or rmb_mpi_mpich.so, compiled with that MPI's
# wrapper flags; librmb loads the one matching the process at run time
# (docs/btl_mpi.md). Wrappers probed: mpicc.openmpi and mpicc.mpich (Debian
# names), or the ones named by --with-mpi=WRAPPER[,WRAPPER]; each is
# classified by how it answers (--showme: Open MPI; -compile-info: MPICH).
#
# Sets RMB_HAVE_MPI (any plugin), MPI_OMPI_CFLAGS/LIBS, MPI_MPICH_CFLAGS/LIBS,
# the conditionals RMB_HAVE_MPI, RMB_HAVE_MPI_OMPI, RMB_HAVE_MPI_MPICH, and
# the launchers MPICH_MPIEXEC (mpiexec.mpich) for the tests; Open MPI's
# mpirun is OMPI_MPIRUN in configure.ac.

# RMB_BTL_MPI_PROBE(WRAPPER): rmb_probe_kind=openmpi|mpich|"" and its flags.
AC_DEFUN([RMB_BTL_MPI_PROBE], [
    rmb_probe_kind=; rmb_probe_cflags=; rmb_probe_libs=
    AS_IF([$1 --showme:version >/dev/null 2>&1], [
        rmb_probe_kind=openmpi
        rmb_probe_cflags=`$1 --showme:compile 2>/dev/null`
        rmb_probe_libs=`$1 --showme:link 2>/dev/null`
    ], [$1 -compile-info >/dev/null 2>&1], [
        rmb_probe_kind=mpich
        rmb_probe_cflags=`$1 -compile-info 2>/dev/null | cut -d' ' -f2- | tr ' ' '\n' | grep -E '^-I' | tr '\n' ' '`
        rmb_probe_libs=`$1 -link-info 2>/dev/null | cut -d' ' -f2- | tr ' ' '\n' | grep -E '^-(L|l)' | tr '\n' ' '`
    ])
    AS_IF([test -n "$rmb_probe_kind"], [
        AC_MSG_CHECKING([whether $1 ($rmb_probe_kind) links MPI-3 RMA])
        rmb_save_CPPFLAGS=$CPPFLAGS; rmb_save_LIBS=$LIBS
        CPPFLAGS="$CPPFLAGS $rmb_probe_cflags"; LIBS="$rmb_probe_libs $LIBS"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                [[MPI_Win w = MPI_WIN_NULL; MPI_Win_lock_all(0, w); MPI_Win_flush_local_all(w);
                  MPI_Compare_and_swap(0, 0, 0, MPI_UINT64_T, 0, 0, w);]])],
            [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); rmb_probe_kind=])
        CPPFLAGS=$rmb_save_CPPFLAGS; LIBS=$rmb_save_LIBS])
])

AC_DEFUN([RMB_BTL_MPI_SETUP], [
    AC_ARG_WITH([mpi],
        [AS_HELP_STRING([--with-mpi@<:@=WRAPPER@<:@,WRAPPER@:>@@:>@],
            [MPI compiler wrappers to build btl/mpi and the MPI bootstrap for (default: mpicc.openmpi and mpicc.mpich, if found)])],
        [], [with_mpi=check])
    rmb_have_mpi=no; rmb_have_ompi=no; rmb_have_mpich=no
    rmb_btl_mpi_summary=""
    AS_IF([test "x$with_mpi" != "xno"], [
        AS_IF([test "x$with_mpi" = "xyes" || test "x$with_mpi" = "xcheck"],
              [rmb_mpi_wrappers=""
               for rmb_w in mpicc.openmpi mpicc.mpich mpicc; do
                   rmb_p=`command -v $rmb_w 2>/dev/null` && rmb_mpi_wrappers="$rmb_mpi_wrappers $rmb_p"
               done],
              [rmb_mpi_wrappers=`echo "$with_mpi" | tr ',' ' '`])
        for rmb_w in $rmb_mpi_wrappers; do
            RMB_BTL_MPI_PROBE([$rmb_w])
            AS_IF([test "x$rmb_probe_kind" = "xopenmpi" && test "x$rmb_have_ompi" = "xno"],
                  [rmb_have_ompi=yes; OMPI_MPICC=$rmb_w
                   MPI_OMPI_CFLAGS=$rmb_probe_cflags; MPI_OMPI_LIBS=$rmb_probe_libs],
                  [test "x$rmb_probe_kind" = "xmpich" && test "x$rmb_have_mpich" = "xno"],
                  [rmb_have_mpich=yes; MPICH_MPICC=$rmb_w
                   MPI_MPICH_CFLAGS=$rmb_probe_cflags; MPI_MPICH_LIBS=$rmb_probe_libs])
        done
        AS_IF([test "x$rmb_have_ompi" = "xyes" || test "x$rmb_have_mpich" = "xyes"], [rmb_have_mpi=yes])
        AS_IF([test "x$rmb_have_mpi" = "xno" && test "x$with_mpi" != "xcheck"],
              [AC_MSG_ERROR([--with-mpi given but no working MPI-3 compiler wrapper was found (apt-get install libopenmpi-dev or libmpich-dev)])])
        AS_IF([test "x$rmb_have_mpi" = "xno"],
              [AC_MSG_NOTICE([no MPI-3 compiler wrapper found (apt-get install libopenmpi-dev or libmpich-dev): btl/mpi disabled])])
    ])
    # MPICH's launcher for the tests (hydra), next to its wrapper.
    AS_IF([test "x$rmb_have_mpich" = "xyes"], [AC_PATH_PROGS([MPICH_MPIEXEC], [mpiexec.mpich mpiexec.hydra], [])])
    AS_IF([test "x$rmb_have_ompi" = "xyes"], [rmb_btl_mpi_summary="Open MPI ($OMPI_MPICC)"])
    AS_IF([test "x$rmb_have_mpich" = "xyes"],
          [rmb_btl_mpi_summary="${rmb_btl_mpi_summary:+$rmb_btl_mpi_summary, }MPICH ($MPICH_MPICC)"])
    AS_IF([test "x$rmb_have_mpi" = "xyes"],
          [AC_DEFINE([RMB_HAVE_MPI], [1], [an MPI plugin (btl/mpi, MPI bootstrap) is built])
           rmb_btl_mpi_summary="yes: plugin for $rmb_btl_mpi_summary"
           rmb_mpi_bootstrap_summary=" mpi"],
          [rmb_btl_mpi_summary="no"; rmb_mpi_bootstrap_summary=""])
    AC_SUBST([MPI_OMPI_CFLAGS])
    AC_SUBST([MPI_OMPI_LIBS])
    AC_SUBST([MPI_MPICH_CFLAGS])
    AC_SUBST([MPI_MPICH_LIBS])
    AC_SUBST([MPICH_MPIEXEC])
    AM_CONDITIONAL([RMB_HAVE_MPI], [test "x$rmb_have_mpi" = "xyes"])
    AM_CONDITIONAL([RMB_HAVE_MPI_OMPI], [test "x$rmb_have_ompi" = "xyes"])
    AM_CONDITIONAL([RMB_HAVE_MPI_MPICH], [test "x$rmb_have_mpich" = "xyes"])
])
