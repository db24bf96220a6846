# TUNE_CHECK_CFLAG(FLAG, IF-OK, IF-NOT)
# -------------------------------------
# Compiles and links an empty program with FLAG (and -Werror, so a warning
# about an unknown option counts as a refusal).
AC_DEFUN([TUNE_CHECK_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  tune_cf_save=$CFLAGS
  CFLAGS="$CFLAGS -Werror $1"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); CFLAGS=$tune_cf_save; $2],
    [AC_MSG_RESULT([no]); CFLAGS=$tune_cf_save; $3])
])

# TUNE_WARN_CFLAGS
# ----------------
# The warnings every file must build clean under; each is added only when the
# compiler accepts it, so another compiler still configures.
AC_DEFUN([TUNE_WARN_CFLAGS], [
  WARN_CFLAGS=""
  for tune_flag in -Wall -Wextra -Wshadow -Wstrict-prototypes \
                   -Wmissing-prototypes -Wvla -Wformat=2; do
    TUNE_CHECK_CFLAG([$tune_flag], [WARN_CFLAGS="$WARN_CFLAGS $tune_flag"], [])
  done
  AC_SUBST([WARN_CFLAGS])
])

# TUNE_FP_CFLAGS
# --------------
# Every file is compiled without floating-point contraction: the reference
# evaluator, the device and its emulation all round each product and each
# sum on its own, in a documented order, and results must be the same bits
# whatever the compiler and -march.  A compiler that cannot be told so
# cannot build tune.
AC_DEFUN([TUNE_FP_CFLAGS], [
  TUNE_CHECK_CFLAG([-ffp-contract=off], [FP_CFLAGS=-ffp-contract=off],
    [AC_MSG_ERROR([the compiler does not accept -ffp-contract=off, which tune's numerics need])])
  AC_SUBST([FP_CFLAGS])
])

# TUNE_ENABLE_SANITIZERS
# ----------------------
# --enable-sanitizers builds everything with AddressSanitizer and UBSan, and
# makes UBSan findings fatal so a test run cannot pass over them.
AC_DEFUN([TUNE_ENABLE_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UBSan])],
    [], [enable_sanitizers=no])
  AS_IF([test "x$enable_sanitizers" = xyes], [
    tune_san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    TUNE_CHECK_CFLAG([$tune_san], [],
      [AC_MSG_ERROR([the compiler does not support $tune_san])])
    CFLAGS="$CFLAGS $tune_san -g"
    LDFLAGS="$LDFLAGS $tune_san"
  ])
  AM_CONDITIONAL([SANITIZERS], [test "x$enable_sanitizers" = xyes])
])
