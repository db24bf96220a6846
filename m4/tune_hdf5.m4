# TUNE_CHECK_HDF5
# ---------------
# Finds HDF5's C library: pkg-config `hdf5` first (Debian registers it through
# update-alternatives), then the h5cc wrapper, whose -show output names the
# include directory and the libraries.  Sets HDF5_CFLAGS and HDF5_LIBS.
AC_DEFUN([TUNE_CHECK_HDF5], [
  PKG_CHECK_MODULES([HDF5], [hdf5], [tune_hdf5=yes], [tune_hdf5=no])
  AS_IF([test "x$tune_hdf5" = xno], [
    AC_PATH_PROGS([H5CC], [h5cc h5pcc], [])
    AS_IF([test -n "$H5CC"], [
      tune_h5show=`$H5CC -show 2>/dev/null`
      HDF5_CFLAGS=""
      HDF5_LIBS=""
      for tune_w in $tune_h5show; do
        case $tune_w in
          -I*|-D*) HDF5_CFLAGS="$HDF5_CFLAGS $tune_w" ;;
          -L*|-l*|-Wl,*) HDF5_LIBS="$HDF5_LIBS $tune_w" ;;
          *.a|*.so) HDF5_LIBS="$HDF5_LIBS $tune_w" ;;
        esac
      done
      AS_IF([test -n "$HDF5_LIBS"], [tune_hdf5=yes])
    ])
  ])
  AS_IF([test "x$tune_hdf5" = xno],
        [AC_MSG_ERROR([HDF5 not found (Debian package: libhdf5-dev)])])
  tune_save_CFLAGS=$CFLAGS
  tune_save_LIBS=$LIBS
  CFLAGS="$CFLAGS $HDF5_CFLAGS"
  LIBS="$HDF5_LIBS $LIBS"
  AC_MSG_CHECKING([whether HDF5 links])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>]], [[return H5open();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([HDF5 was found but does not link (Debian package: libhdf5-dev)])])
  CFLAGS=$tune_save_CFLAGS
  LIBS=$tune_save_LIBS
  AC_SUBST([HDF5_CFLAGS])
  AC_SUBST([HDF5_LIBS])
])
