#!/bin/sh
# build.sh -- build the libFuzzer targets of tests/fuzz/ with clang (ASan + UBSan).
#
#   tests/fuzz/build.sh [BUILDDIR]      (default: the current directory)
#
# BUILDDIR is a configured build (its config.h and Makefile give the library flags); the
# sources are those next to this script.  The targets land in BUILDDIR/tests/fuzz/:
# fuzz_npy, fuzz_json, fuzz_checkpoint, fuzz_ini.  CLANG overrides the compiler (default
# clang-14, else clang).  The library is compiled without OpenMP (clang's runtime is not
# libgomp): the parsers under test are single-threaded.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-.}" && pwd)
[ -f "$build/config.h" ] || { echo "build.sh: $build/config.h missing: configure first" >&2; exit 2; }
cc=${CLANG:-$(command -v clang-14 || command -v clang || true)}
[ -n "$cc" ] || { echo "build.sh: no clang (Debian: clang-14 libclang-rt-14-dev)" >&2; exit 2; }
flag() { sed -n "s/^$1 = //p" "$build/Makefile"; }
libs="$(flag BLIS_LIBS) $(flag FFTW3_LIBS) $(flag FFTW3F_LIBS) $(flag INIH_LIBS) $(flag MPI_LIBS) -lm"
cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
-DHAVE_CONFIG_H -I$build -I$top/src $(flag BLIS_CFLAGS) $(flag FFTW3_CFLAGS) $(flag FFTW3F_CFLAGS) $(flag INIH_CFLAGS) $(flag MPI_CFLAGS)"
out="$build/tests/fuzz"
mkdir -p "$out/obj"
objs=
for f in "$top"/src/core/*.c "$top"/src/kernels/*.c "$top"/src/model/*.c "$top"/src/tasks/*.c "$top"/src/config/*.c "$top"/src/report/*.c "$top"/src/experiment/*.c; do
    o="$out/obj/$(basename "$(dirname "$f")")_$(basename "$f" .c).o"
    if [ ! -f "$o" ] || [ "$f" -nt "$o" ]; then
        # shellcheck disable=SC2086
        "$cc" $cflags -fsanitize=fuzzer-no-link -w -c "$f" -o "$o"
    fi
    objs="$objs $o"
done
for t in npy json checkpoint ini; do
    # shellcheck disable=SC2086
    "$cc" $cflags -fsanitize=fuzzer "$here/fuzz_$t.c" $objs $libs -o "$out/fuzz_$t"
    echo "built $out/fuzz_$t"
done
