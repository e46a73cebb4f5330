# btl/ofi: libfabric RMA and atomics; optional.
AC_DEFUN([RMB_BTL_OFI_SETUP], [
    AC_ARG_WITH([ofi],
        [AS_HELP_STRING([--with-ofi@<:@=DIR@:>@], [build btl/ofi with libfabric (default: if found)])],
        [], [with_ofi=check])
    rmb_have_ofi=no
    AS_IF([test "x$with_ofi" != "xno"], [
        AS_IF([test "x$with_ofi" = "xyes" || test "x$with_ofi" = "xcheck"],
              [PKG_CHECK_MODULES([OFI], [libfabric >= 1.10], [rmb_have_ofi=yes], [rmb_have_ofi=no])],
              [OFI_CFLAGS="-I$with_ofi/include"
               OFI_LIBS="-L$with_ofi/lib -Wl,-rpath,$with_ofi/lib -lfabric"
               rmb_have_ofi=yes])
        AS_IF([test "x$rmb_have_ofi" = "xyes"], [
            rmb_save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $OFI_CFLAGS"
            AC_CHECK_HEADER([rdma/fi_rma.h], [], [rmb_have_ofi=no])
            CPPFLAGS=$rmb_save_CPPFLAGS])
        AS_IF([test "x$rmb_have_ofi" = "xno" && test "x$with_ofi" != "xcheck"],
              [AC_MSG_ERROR([--with-ofi given but libfabric was not found (apt-get install libfabric-dev)])])
        AS_IF([test "x$rmb_have_ofi" = "xno"],
              [AC_MSG_NOTICE([libfabric not found (apt-get install libfabric-dev): btl/ofi disabled])])
    ])
    AS_IF([test "x$rmb_have_ofi" = "xyes"],
          [AC_DEFINE([RMB_HAVE_BTL_OFI], [1], [btl/ofi is built])
           rmb_btl_ofi_summary="yes"],
          [OFI_CFLAGS=; OFI_LIBS=; rmb_btl_ofi_summary="no"])
    AC_SUBST([OFI_CFLAGS])
    AC_SUBST([OFI_LIBS])
    AM_CONDITIONAL([RMB_HAVE_BTL_OFI], [test "x$rmb_have_ofi" = "xyes"])
])
