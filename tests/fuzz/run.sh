#!/bin/sh
# run.sh -- run every libFuzzer target of tests/fuzz/ for SECONDS each (default 10), from
# a scratch copy of the committed seed corpus (corpus/<target>/), with ASan + UBSan.
#
#   tests/fuzz/run.sh [SECONDS] [BUILDDIR]
#
# Builds the targets first (build.sh) if they are missing.  Prints each target's
# executions; exits 1 if any target crashed, leaked, tripped a sanitizer or a check (the
# crashing input is kept in BUILDDIR/tests/fuzz/crashes/).  Longer runs: see README.md
# ("Fuzzing").
secs=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${2:-.}" && pwd)
out="$build/tests/fuzz"
for t in npy json checkpoint ini; do
    [ -x "$out/fuzz_$t" ] || { sh "$here/build.sh" "$build" || exit 1; break; }
done
status=0
mkdir -p "$out/crashes"
for t in npy json checkpoint ini; do
    work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_$t.XXXXXX") || exit 1
    cp "$here/corpus/$t/"* "$work/"
    "$out/fuzz_$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/crashes/$t-" "$work" >"$out/fuzz_$t.log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz_$t.log")
    if [ $rc = 0 ]; then
        echo "fuzz_$t: ${execs:-?} executions in ${secs} s, no crash"
    else
        echo "fuzz_$t: FAILED (exit $rc after ${execs:-?} executions; $out/fuzz_$t.log):"
        grep -E 'ERROR|SUMMARY|Test unit written' "$out/fuzz_$t.log" | head -5
        status=1
    fi
    rm -rf "$work"
done
exit $status
