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
    dnl btl/ofi dlopens libfabric (btl_ofi_lib.c): the library found here, by
    dnl path where it is not in the loader's default places.
    AS_IF([test "x$rmb_have_ofi" = "xyes"], [
        rmb_ofi_libdir=
        AS_IF([test "x$with_ofi" = "xyes" || test "x$with_ofi" = "xcheck"],
              [rmb_ofi_libdir=`$PKG_CONFIG --variable=libdir libfabric 2>/dev/null`],
              [for rmb_d in "$with_ofi/lib" "$with_ofi/lib64"; do
                   AS_IF([test -z "$rmb_ofi_libdir" && test -e "$rmb_d/libfabric.so.1"],
                         [rmb_ofi_libdir=$rmb_d])
               done])
        rmb_ofi_library=libfabric.so.1
        AS_CASE([$rmb_ofi_libdir],
                [""|/usr/lib|/usr/lib64|/lib|/lib64|/usr/lib/*-linux-gnu|/lib/*-linux-gnu], [],
                [AS_IF([test -e "$rmb_ofi_libdir/libfabric.so.1"],
                       [rmb_ofi_library="$rmb_ofi_libdir/libfabric.so.1"])])
        AC_DEFINE_UNQUOTED([RMB_OFI_LIBRARY], ["$rmb_ofi_library"],
                           [libfabric as btl/ofi dlopens it])])
    AS_IF([test "x$rmb_have_ofi" = "xyes"],
          [AC_DEFINE([RMB_HAVE_BTL_OFI], [1], [btl/ofi is built])
           rmb_btl_ofi_summary="yes"],
          [OFI_CFLAGS=; rmb_btl_ofi_summary="no"])
    AC_SUBST([OFI_CFLAGS])
    AM_CONDITIONAL([RMB_HAVE_BTL_OFI], [test "x$rmb_have_ofi" = "xyes"])
])
