# RL_ENABLE_DEBUG -- --enable-debug turns on RL_DASSERT (hot-loop assertions).
AC_DEFUN([RL_ENABLE_DEBUG], [
  AC_ARG_ENABLE([debug],
    [AS_HELP_STRING([--enable-debug], [enable hot-loop assertions (RL_DASSERT)])],
    [rl_debug=$enableval], [rl_debug=no])
  AS_IF([test "x$rl_debug" = xyes], [AC_DEFINE([RL_DEBUG], [1], [hot-loop assertions])])
])
