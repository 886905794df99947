# RL_CHECK_MPI -- optional Open MPI for `mpirun ropelab run` (sweeps over ranks, data-parallel
# training).  --with-mpi requires it, --without-mpi leaves it out, the default uses it when
# found: pkg-config's ompi-c first, else the flags `mpicc --showme:compile/:link` prints.
# Defines HAVE_MPI and the automake conditional HAVE_MPI, substitutes MPI_CFLAGS, MPI_LIBS
# and MPIRUN (the launcher the tests use).  Debian: libopenmpi-dev and openmpi-bin.
AC_DEFUN([RL_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi],
      [build with Open MPI: sweep points over ranks and data-parallel training under mpirun
       (default: when found; --without-mpi: never)])],
    [], [with_mpi=check])
  AC_ARG_VAR([MPICC], [Open MPI's compiler wrapper, asked for flags when pkg-config has no ompi-c])
  rl_mpi=no
  AS_IF([test "x$with_mpi" != xno], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [rl_mpi=yes], [
      AC_PATH_PROGS([MPICC], [mpicc])
      AS_IF([test -n "$MPICC"], [
        AC_MSG_CHECKING([MPI flags from $MPICC --showme])
        MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null` &&
          MPI_LIBS=`$MPICC --showme:link 2>/dev/null` && rl_mpi=yes
        AC_MSG_RESULT([$rl_mpi])
      ])
    ])
    AS_IF([test $rl_mpi = yes], [
      rl_mpi_save_CFLAGS=$CFLAGS rl_mpi_save_LIBS=$LIBS
      CFLAGS="$CFLAGS $MPI_CFLAGS" LIBS="$MPI_LIBS $LIBS"
      AC_MSG_CHECKING([whether a program with MPI_Init_thread links])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
          [[int p; return MPI_Init_thread(0, 0, MPI_THREAD_FUNNELED, &p);]])],
        [], [rl_mpi=no])
      AC_MSG_RESULT([$rl_mpi])
      CFLAGS=$rl_mpi_save_CFLAGS LIBS=$rl_mpi_save_LIBS
    ])
    AS_IF([test "x$with_mpi" = xyes && test $rl_mpi = no],
      [AC_MSG_ERROR([--with-mpi: Open MPI not found: install Debian's libopenmpi-dev and openmpi-bin])])
  ])
  AS_IF([test $rl_mpi = yes],
    [AC_DEFINE([HAVE_MPI], [1], [Define to 1 when built with MPI (Open MPI)])],
    [MPI_CFLAGS= MPI_LIBS=])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [])
  AM_CONDITIONAL([HAVE_MPI], [test $rl_mpi = yes])
])
