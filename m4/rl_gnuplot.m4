# RL_CHECK_GNUPLOT -- optional gnuplot for SVG plots (Debian: gnuplot-nox).
AC_DEFUN([RL_CHECK_GNUPLOT], [
  AC_PATH_PROG([GNUPLOT], [gnuplot], [])
  AS_IF([test -n "$GNUPLOT"],
    [AC_DEFINE_UNQUOTED([RL_GNUPLOT], ["$GNUPLOT"], [gnuplot found at configure time])])
])
