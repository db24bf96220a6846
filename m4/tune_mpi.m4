# TUNE_CHECK_MPI
# --------------
# Optional MPI (issue 20): `tune --sweep` under mpirun or srun hands the
# sweep's units out to the ranks.  --with-mpi demands it, --without-mpi
# leaves it out, and by default it is used when found: pkg-config `ompi-c`
# first (Open MPI's own file), then the mpicc wrapper, whose --showme
# options name the flags.  Without MPI the build is exactly as before.
# Sets MPI_CFLAGS, MPI_LIBS, MPIRUN (for the tests), HAVE_MPI (config.h and
# an automake conditional).
AC_DEFUN([TUNE_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi], [distribute --sweep over MPI ranks (default: when Open MPI is found)])],
    [], [with_mpi=check])
  tune_mpi=no
  AS_IF([test "x$with_mpi" != xno], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [tune_mpi=yes], [tune_mpi=no])
    AS_IF([test "x$tune_mpi" = xno], [
      AC_PATH_PROG([MPICC], [mpicc], [])
      AS_IF([test -n "$MPICC"], [
        MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null`
        MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
        AS_IF([test -n "$MPI_LIBS"], [tune_mpi=yes])
      ])
    ])
    AS_IF([test "x$tune_mpi" = xyes], [
      tune_save_CFLAGS=$CFLAGS
      tune_save_LIBS=$LIBS
      CFLAGS="$CFLAGS $MPI_CFLAGS"
      LIBS="$MPI_LIBS $LIBS"
      AC_MSG_CHECKING([whether MPI links])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[return MPI_Init(0, 0);]])],
        [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); tune_mpi=no])
      CFLAGS=$tune_save_CFLAGS
      LIBS=$tune_save_LIBS
    ])
    AS_IF([test "x$tune_mpi" = xno && test "x$with_mpi" = xyes],
          [AC_MSG_ERROR([--with-mpi: no usable MPI found (Debian packages: openmpi-bin libopenmpi-dev)])])
  ])
  AS_IF([test "x$tune_mpi" = xyes], [
    AC_DEFINE([HAVE_MPI], [1], [Define to 1 to distribute sweeps over MPI ranks.])
    AC_PATH_PROG([MPIRUN], [mpirun], [])
  ], [
    MPI_CFLAGS=""
    MPI_LIBS=""
  ])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPIRUN])
  AM_CONDITIONAL([HAVE_MPI], [test "x$tune_mpi" = xyes])
])
