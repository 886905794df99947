# RL_ENABLE_SANITIZERS -- --enable-sanitizers builds with AddressSanitizer and
# UndefinedBehaviorSanitizer (-fno-omit-frame-pointer, -fno-sanitize-recover).
AC_DEFUN([RL_ENABLE_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with ASan and UBSan])],
    [rl_sanitizers=$enableval], [rl_sanitizers=no])
  SAN_CFLAGS=""; SAN_LDFLAGS=""
  AS_IF([test "x$rl_sanitizers" = xyes], [
    rl_san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    AX_CHECK_LINK_FLAG([$rl_san], [SAN_CFLAGS="$rl_san"; SAN_LDFLAGS="$rl_san"],
      [AC_MSG_ERROR([the compiler cannot build with $rl_san])])])
  AC_SUBST([SAN_CFLAGS])
  AC_SUBST([SAN_LDFLAGS])
])
