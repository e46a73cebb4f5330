# btl/shm: on-node shared memory; needs only Linux (memfd or shm_open, CMA).
AC_DEFUN([RMB_BTL_SHM_SETUP], [
    rmb_btl_shm_summary="yes"
    AC_DEFINE([RMB_HAVE_BTL_SHM], [1], [btl/shm is built])
    AM_CONDITIONAL([RMB_HAVE_BTL_SHM], [true])
])
