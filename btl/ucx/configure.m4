# btl/ucx: UCX's UCP layer (RMA and atomics); optional, on when found.
AC_DEFUN([RMB_BTL_UCX_SETUP], [
    AC_ARG_WITH([ucx],
        [AS_HELP_STRING([--with-ucx@<:@=DIR@:>@], [build btl/ucx with UCX (default: if found)])],
        [], [with_ucx=check])
    rmb_have_ucx=no
    AS_IF([test "x$with_ucx" != "xno"], [
        AS_IF([test "x$with_ucx" = "xyes" || test "x$with_ucx" = "xcheck"],
              [PKG_CHECK_MODULES([UCX], [ucx >= 1.10], [rmb_have_ucx=yes], [rmb_have_ucx=no])],
              [UCX_CFLAGS="-I$with_ucx/include"
               UCX_LIBS="-L$with_ucx/lib -Wl,-rpath,$with_ucx/lib -lucp -luct -lucs"
               rmb_have_ucx=yes])
        AS_IF([test "x$rmb_have_ucx" = "xyes"], [
            rmb_save_CPPFLAGS=$CPPFLAGS; rmb_save_LIBS=$LIBS
            CPPFLAGS="$CPPFLAGS $UCX_CFLAGS"; LIBS="$LIBS $UCX_LIBS"
            AC_CHECK_HEADER([ucp/api/ucp.h],
                [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ucp/api/ucp.h>]],
                                                 [[return ucp_put_nbx(0, 0, 0, 0, 0, 0) != 0;]])],
                                [], [rmb_have_ucx=no])],
                [rmb_have_ucx=no])
            CPPFLAGS=$rmb_save_CPPFLAGS; LIBS=$rmb_save_LIBS])
        AS_IF([test "x$rmb_have_ucx" = "xno" && test "x$with_ucx" != "xcheck"],
              [AC_MSG_ERROR([--with-ucx given but UCX >= 1.10 (ucp_put_nbx) was not found (apt-get install libucx-dev)])])
        AS_IF([test "x$rmb_have_ucx" = "xno"],
              [AC_MSG_NOTICE([UCX not found (apt-get install libucx-dev): btl/ucx disabled])])
    ])
    AS_IF([test "x$rmb_have_ucx" = "xyes"],
          [AC_DEFINE([RMB_HAVE_BTL_UCX], [1], [btl/ucx is built])
           rmb_btl_ucx_summary="yes ($($PKG_CONFIG --modversion ucx 2>/dev/null || echo "$with_ucx"))"],
          [UCX_CFLAGS=; UCX_LIBS=; rmb_btl_ucx_summary="no"])
    AC_SUBST([UCX_CFLAGS])
    AC_SUBST([UCX_LIBS])
    AM_CONDITIONAL([RMB_HAVE_BTL_UCX], [test "x$rmb_have_ucx" = "xyes"])
])
