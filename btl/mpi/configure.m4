# btl/mpi and the MPI bootstrap: MPI-3 RMA through an MPI compiler wrapper; optional.
AC_DEFUN([RMB_BTL_MPI_SETUP], [
    AC_ARG_WITH([mpi],
        [AS_HELP_STRING([--with-mpi@<:@=MPICC@:>@], [MPI compiler wrapper for btl/mpi and MPI bootstrap (default: mpicc if found)])],
        [], [with_mpi=check])
    rmb_have_mpi=no
    AS_IF([test "x$with_mpi" != "xno"], [
        AS_IF([test "x$with_mpi" = "xyes" || test "x$with_mpi" = "xcheck"],
              [AC_PATH_PROGS([MPICC], [mpicc], [])],
              [MPICC=$with_mpi])
        AS_IF([test -n "$MPICC" && test -x "$MPICC" -o -x "`command -v $MPICC 2>/dev/null`"], [
            # Open MPI answers --showme, MPICH answers -compile-info/-link-info.
            MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null` || MPI_CFLAGS=
            MPI_LIBS=`$MPICC --showme:link 2>/dev/null` || MPI_LIBS=
            AS_IF([test -z "$MPI_LIBS"], [
                MPI_CFLAGS=`$MPICC -compile-info 2>/dev/null | cut -d' ' -f2- | tr ' ' '\n' | grep -E '^-I' | tr '\n' ' '`
                MPI_LIBS=`$MPICC -link-info 2>/dev/null | cut -d' ' -f2- | tr ' ' '\n' | grep -E '^-(L|l|Wl)' | tr '\n' ' '`])
            rmb_save_CPPFLAGS=$CPPFLAGS; rmb_save_LIBS=$LIBS
            CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"; LIBS="$LIBS $MPI_LIBS"
            AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Win_lock_all(0, MPI_WIN_NULL);]])],
                           [rmb_have_mpi=yes])
            CPPFLAGS=$rmb_save_CPPFLAGS; LIBS=$rmb_save_LIBS])
        AS_IF([test "x$rmb_have_mpi" = "xno" && test "x$with_mpi" != "xcheck"],
              [AC_MSG_ERROR([--with-mpi given but no working MPI-3 compiler was found (apt-get install libopenmpi-dev)])])
        AS_IF([test "x$rmb_have_mpi" = "xno"],
              [AC_MSG_NOTICE([no MPI-3 compiler wrapper found (apt-get install libopenmpi-dev): btl/mpi disabled])])
    ])
    AS_IF([test "x$rmb_have_mpi" = "xyes"],
          [AC_DEFINE([RMB_HAVE_MPI], [1], [an MPI-3 library is available])
           rmb_btl_mpi_summary="MPI found: $MPICC (backend arrives with issue 7)"
           rmb_mpi_bootstrap_summary=""],
          [MPI_CFLAGS=; MPI_LIBS=; rmb_btl_mpi_summary="no"; rmb_mpi_bootstrap_summary=""])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AM_CONDITIONAL([RMB_HAVE_MPI], [test "x$rmb_have_mpi" = "xyes"])
])
