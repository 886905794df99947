#!/bin/sh
# bench_load.sh -- training time under load and with more threads than cores (not part of
# make check: it takes about two minutes and its numbers depend on the machine).
#
#   tests/bench_load.sh [ROPELAB] [REPEATS]
#
# The same small training (copy task, d_model 64, 2 layers, length 64, batch 16, 200
# updates) runs
#   - with 1 and 2 threads while another process keeps one core busy (a shell loop), and
#   - with 1, 2, 4 and 8 threads with nothing else started by this script,
# REPEATS times each (default 3), alternating; it prints the median and the range of the
# wall time, and the CPU time (user + system) of the median run.  ropelab's defaults apply
# (threads bound to cores and short spin-waits unless OMP_PROC_BIND / OMP_PLACES /
# OMP_WAIT_POLICY / GOMP_SPINCOUNT are set; more threads than cores lowered to the cores;
# the thread count adapted to the load during training unless OMP_DYNAMIC=false); set them
# to compare.
ROPELAB=${1:-./src/ropelab}
REPEATS=${2:-3}
ROPELAB_GNUPLOT=none; export ROPELAB_GNUPLOT
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_load.XXXXXX") || exit 1
busy=
trap 'rm -rf "$tmp"; [ -n "$busy" ] && kill $busy 2>/dev/null' EXIT
cat >"$tmp/b.ini" <<END_INI
[experiment]
name = b
[model]
d_model = 64
heads = 4
layers = 2
[task]
name = copy
length = 64
[train]
steps = 200
batch = 16
checkpoint_every = 0
log_every = 200
[eval]
lengths = 64
batches = 1
END_INI

# one TIMING line: wall seconds and CPU seconds of one run
one() {
    rm -rf "$tmp/runs"
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$ROPELAB" run "$tmp/b.ini" --out "$tmp/runs" -q \
        --threads "$1" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
    awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$tmp/time"
}

# series LABEL THREADS...: REPEATS alternating rounds, then one line per thread count
series() {
    label=$1; shift
    for t in "$@"; do : >"$tmp/t$t"; done
    r=0
    while [ $r -lt "$REPEATS" ]; do
        for t in "$@"; do one "$t" >>"$tmp/t$t"; done
        r=$((r + 1))
    done
    for t in "$@"; do
        sort -n "$tmp/t$t" | awk -v l="$label" -v t="$t" '
            { w[NR] = $1; c[NR] = $2 }
            END { m = int((NR + 1) / 2); printf "%-28s threads %d: wall %6.2f s (%.2f .. %.2f), cpu %6.2f s\n", l, t, w[m], w[1], w[NR], c[m] }'
    done
}

echo "# $(nproc) cores available; $(uname -m); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# OMP_PROC_BIND=${OMP_PROC_BIND-unset} OMP_WAIT_POLICY=${OMP_WAIT_POLICY-unset} GOMP_SPINCOUNT=${GOMP_SPINCOUNT-unset} OMP_DYNAMIC=${OMP_DYNAMIC-unset}"
sh -c 'while :; do :; done' &
busy=$!
sleep 0.5
series "one core kept busy" 1 2
kill $busy 2>/dev/null
wait $busy 2>/dev/null
busy=
sleep 0.5
series "no load started here" 1 2 4 8
