# btl/verbs: libibverbs RC; optional, built whenever the library is present.
AC_DEFUN([RMB_BTL_VERBS_SETUP], [
    AC_ARG_WITH([verbs],
        [AS_HELP_STRING([--with-verbs@<:@=DIR@:>@], [build btl/verbs with libibverbs (default: if found)])],
        [], [with_verbs=check])
    rmb_have_verbs=no
    AS_IF([test "x$with_verbs" != "xno"], [
        VERBS_CFLAGS=; VERBS_LIBS="-libverbs"
        AS_IF([test "x$with_verbs" != "xyes" && test "x$with_verbs" != "xcheck"],
              [VERBS_CFLAGS="-I$with_verbs/include"
               VERBS_LIBS="-L$with_verbs/lib -Wl,-rpath,$with_verbs/lib -libverbs"])
        rmb_save_CPPFLAGS=$CPPFLAGS; rmb_save_LIBS=$LIBS
        CPPFLAGS="$CPPFLAGS $VERBS_CFLAGS"; LIBS="$LIBS $VERBS_LIBS"
        AC_CHECK_HEADER([infiniband/verbs.h],
            [AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <infiniband/verbs.h>]],
                                             [[ibv_get_device_list(0);]])],
                            [rmb_have_verbs=yes])])
        CPPFLAGS=$rmb_save_CPPFLAGS; LIBS=$rmb_save_LIBS
        AS_IF([test "x$rmb_have_verbs" = "xno" && test "x$with_verbs" != "xcheck"],
              [AC_MSG_ERROR([--with-verbs given but libibverbs was not found (apt-get install libibverbs-dev)])])
        AS_IF([test "x$rmb_have_verbs" = "xno"],
              [AC_MSG_NOTICE([libibverbs not found (apt-get install libibverbs-dev): btl/verbs disabled])])
    ])
    AS_IF([test "x$rmb_have_verbs" = "xyes"],
          [AC_DEFINE([RMB_HAVE_BTL_VERBS], [1], [btl/verbs is built])
           rmb_btl_verbs_summary="yes"],
          [VERBS_CFLAGS=; VERBS_LIBS=; rmb_btl_verbs_summary="no"])
    AC_SUBST([VERBS_CFLAGS])
    AC_SUBST([VERBS_LIBS])
    AM_CONDITIONAL([RMB_HAVE_BTL_VERBS], [test "x$rmb_have_verbs" = "xyes"])
])
