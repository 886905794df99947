# lib.sh -- what the shell tests share; each sources it first:
#     . "$(dirname "$0")/lib.sh"
#   ok STATUS TEXT     one TAP line ("ok N - TEXT" when STATUS is 0); a failure sets failed=1
#   scratch NAME       tmp = a fresh directory under $TMPDIR, removed when the test exits
#   mpi_setup          skips the test (exit 0 with a TAP plan of 0) unless ropelab has MPI
#                      built in and mpirun is found; sets the environment Open MPI needs in a
#                      container; mpi2 ARGS... then runs `ropelab ARGS` on two ranks
#   tiny_ini FILE NAME [TASK-LINE...] <<EOF ... EOF
#                      writes the small experiment the run tests share to FILE: [experiment]
#                      name = NAME; [model] d_model = 16, heads = 2, layers = 1; [task] the
#                      TASK-LINEs (one key = value each; default: name = copy, length = 8);
#                      then the here-document, the test's own sections ([train], [eval],
#                      [sweep], or [experiment] / [model] opened again for more keys: a
#                      section may be reopened, a key given twice is an error)
# The test ends with: echo "1..$n"; exit $failed
n=0; failed=0
# experiment files written under $tmp name data by absolute paths (relative ones would be
# read against the file's own directory)
[ -n "$top_srcdir" ] && top_srcdir=$(cd "$top_srcdir" && pwd)
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }

scratch() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 99
    trap 'rm -rf "$tmp"' EXIT
}

mpi_setup() {
    if ! "$ROPELAB" --version | grep -q '^MPI: built in'; then
        echo "1..0 # SKIP ropelab built without MPI"; exit 0
    fi
    MPIRUN=${MPIRUN:-$(command -v mpirun)}
    if [ -z "$MPIRUN" ]; then echo "1..0 # SKIP mpirun not found (Debian: openmpi-bin)"; exit 0; fi
    # Open MPI refuses root without these; single-copy (CMA) transfers need ptrace rights
    # that containers often deny; two ranks may exceed a CI machine's cores
    OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_btl_vader_single_copy_mechanism=none
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_btl_vader_single_copy_mechanism
    # a sanitizer build: Open MPI's runtime leaks at exit (its plugins are unloaded by then,
    # so LeakSanitizer cannot even name them); leak checking stays on for one-process runs
    mpienv="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}
mpi2() { env "$mpienv" "$MPIRUN" -np 2 --oversubscribe --bind-to none "$ROPELAB" "$@" </dev/null; }

tiny_ini() {
    printf '[experiment]\nname = %s\n[model]\nd_model = 16\nheads = 2\nlayers = 1\n[task]\n' "$2" >"$1" || return
    tiny_ini_file=$1; shift 2
    [ $# -gt 0 ] || set -- 'name = copy' 'length = 8'
    printf '%s\n' "$@" >>"$tiny_ini_file" && cat >>"$tiny_ini_file"
}
