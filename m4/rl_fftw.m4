# RL_CHECK_FFTW3 -- double-precision FFTW 3.3 (float transforms lose accuracy
# on causal Toeplitz products), through pkg-config with a header/library fallback.
AC_DEFUN([RL_CHECK_FFTW3], [
  PKG_CHECK_MODULES([FFTW3], [fftw3 >= 3.3], [], [
    AC_CHECK_HEADER([fftw3.h], [],
      [AC_MSG_ERROR([fftw3.h not found: install Debian's libfftw3-dev])])
    AC_CHECK_LIB([fftw3], [fftw_execute], [FFTW3_LIBS="-lfftw3"],
      [AC_MSG_ERROR([libfftw3 not found: install Debian's libfftw3-dev])], [-lm])
  ])
])
