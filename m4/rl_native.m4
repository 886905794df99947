# RL_ENABLE_NATIVE -- --enable-native adds -march=native (off by default).
# The hot paths are BLIS GEMMs, whose kernels BLIS picks at run time for the CPU, so a
# portable build keeps nearly all the speed; -march=native only helps the elementwise
# loops and makes the binary unportable.
AC_DEFUN([RL_ENABLE_NATIVE], [
  AC_ARG_ENABLE([native],
    [AS_HELP_STRING([--enable-native], [compile with -march=native (default: no, portable)])],
    [rl_native=$enableval], [rl_native=no])
  AS_IF([test "x$rl_native" = xyes],
    [AX_CHECK_COMPILE_FLAG([-march=native], [AM_CFLAGS="$AM_CFLAGS -march=native"], [rl_native="no (unsupported)"])])
  AC_SUBST([AM_CFLAGS])
])
