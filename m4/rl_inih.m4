# RL_CHECK_INIH -- libinih (INI parsing) through pkg-config, with a fallback.
AC_DEFUN([RL_CHECK_INIH], [
  PKG_CHECK_MODULES([INIH], [inih], [], [
    AC_CHECK_HEADER([ini.h], [], [AC_MSG_ERROR([ini.h not found: install Debian's libinih-dev])])
    AC_CHECK_LIB([inih], [ini_parse], [INIH_LIBS="-linih"],
      [AC_MSG_ERROR([libinih not found: install Debian's libinih-dev])])
  ])
])
