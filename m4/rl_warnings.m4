# RL_ENABLE_WARNINGS -- probe warning flags before use; --enable-werror adds -Werror.
AC_DEFUN([RL_ENABLE_WARNINGS], [
  AX_APPEND_COMPILE_FLAGS([-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes dnl
    -Wpointer-arith -Wwrite-strings -Wvla -Wformat=2 -Wno-unknown-pragmas], [WARN_CFLAGS])
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [rl_werror=$enableval], [rl_werror=no])
  AS_IF([test "x$rl_werror" = xyes], [AX_APPEND_COMPILE_FLAGS([-Werror], [WARN_CFLAGS])])
  AC_SUBST([WARN_CFLAGS])
])
