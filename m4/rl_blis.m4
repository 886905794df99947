# RL_CHECK_BLIS -- find BLIS (Debian ships no blis.pc): header blis.h and bli_sgemm.
# --with-blis=PREFIX looks in PREFIX/include and PREFIX/lib only (a blis.pc that
# pkg-config finds elsewhere is then not consulted: the user's prefix wins).
AC_DEFUN([RL_CHECK_BLIS], [
  AC_ARG_WITH([blis],
    [AS_HELP_STRING([--with-blis=PREFIX], [BLIS installation prefix (default: system)])],
    [], [with_blis=check])
  rl_save_CPPFLAGS=$CPPFLAGS; rl_save_LIBS=$LIBS; rl_save_LDFLAGS=$LDFLAGS
  BLIS_CFLAGS=""; BLIS_LIBS=""
  AS_IF([test "x$with_blis" != xcheck && test "x$with_blis" != xyes && test "x$with_blis" != xno],
        [BLIS_CFLAGS="-I$with_blis/include -I$with_blis/include/blis"; BLIS_LIBS="-L$with_blis/lib"])
  AS_IF([test "x$with_blis" = xno], [AC_MSG_ERROR([BLIS is required; --without-blis is not supported])])
  AS_IF([test "x$with_blis" = xcheck || test "x$with_blis" = xyes],
        [PKG_CHECK_MODULES([BLISPC], [blis], [BLIS_CFLAGS="$BLISPC_CFLAGS"; BLIS_LIBS="$BLISPC_LIBS"], [:])])
  CPPFLAGS="$CPPFLAGS $BLIS_CFLAGS"; LDFLAGS="$LDFLAGS $BLIS_LIBS"
  AC_CHECK_HEADER([blis.h], [],
    [AC_MSG_ERROR([blis.h not found: install Debian's libblis-dev (apt-get install libblis-dev) or use --with-blis=PREFIX])])
  AC_SEARCH_LIBS([bli_sgemm], [blis blis-mt], [],
    [AC_MSG_ERROR([bli_sgemm not found in -lblis: install Debian's libblis-dev or use --with-blis=PREFIX])], [-lm -lpthread])
  AS_CASE([$ac_cv_search_bli_sgemm], ["none required"], [], [BLIS_LIBS="$BLIS_LIBS $ac_cv_search_bli_sgemm"])
  CPPFLAGS=$rl_save_CPPFLAGS; LIBS=$rl_save_LIBS; LDFLAGS=$rl_save_LDFLAGS
  AC_SUBST([BLIS_CFLAGS])
  AC_SUBST([BLIS_LIBS])
])
