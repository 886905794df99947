#!/bin/sh
# t_cli.sh -- the ropelab command line: help, version, usage errors exit 2.
: "${ROPELAB:=./src/ropelab}"
. "$(dirname "$0")/lib.sh"
expect_status() { # want cmd...
    want=$1; shift
    out=$("$ROPELAB" "$@" 2>&1); got=$?
    [ "$got" = "$want" ]; ok $? "ropelab $* exits $want (got $got)"
    [ "$got" = "$want" ] || echo "$out" | sed 's/^/# /'
}
expect_status 0 --help
expect_status 0 --version
expect_status 2
expect_status 2 nosuchcmd
expect_status 2 --nosuchoption
expect_status 2 eval
for c in run attn bench report eval; do
    expect_status 0 "$c" --help
    "$ROPELAB" "$c" --help | grep -q "Usage: ropelab $c"; ok $? "ropelab $c --help prints its usage"
done
"$ROPELAB" --help | grep -q 'attn'; ok $? "--help lists the attn command"
"$ROPELAB" --version | grep -q 'BLIS kernels'; ok $? "--version reports the BLIS kernel set"
"$ROPELAB" --version | grep -q '^attention tile products: '; ok $? "--version says what runs the attention tile products"
# BLIS_ARCH_TYPE: BLIS 0.9 reads a number only and runs whatever set it names; ropelab
# turns a name into its number and ignores, with a warning, a set this CPU cannot run
# (knl: Xeon Phi's AVX-512 PF/ER) or that the build lacks (a64fx), instead of SIGILL/abort
by_name=$(BLIS_ARCH_TYPE=generic "$ROPELAB" --version | sed -n 's/^BLIS kernels: \([a-z0-9]*\).*/\1/p')
[ "$by_name" = generic ]; ok $? "BLIS_ARCH_TYPE=generic (a name) selects the generic set (got '$by_name')"
for v in knl a64fx bogus ""; do
    out=$(BLIS_ARCH_TYPE=$v "$ROPELAB" bench --attention softmax --pe none --causal --n 256 --reps 1 \
        --heads 1 --threads 1 2>&1); st=$?
    case "$out" in *"BLIS_ARCH_TYPE=$v ignored"*"BLIS chooses"*"GFLOP/s (1024^3)"*) r=0 ;; *) r=1 ;; esac
    [ $st = 0 ]; ok $(( $? | r )) "BLIS_ARCH_TYPE='$v': a warning, BLIS's own set, products run (exit $st)"
done
BLIS_ARCH_TYPE=knl "$ROPELAB" --version | grep -q '^BLIS settings: BLIS_ARCH_TYPE=knl ignored'
ok $? "--version says which BLIS setting was ignored"
out=$(ROPELAB_BLIS_SUP=maybe "$ROPELAB" --version)
case "$out" in *"ROPELAB_BLIS_SUP=maybe ignored"*"packed otherwise"*) r=0 ;; *) r=1 ;; esac
ok $r "an unknown ROPELAB_BLIS_SUP is reported and the paths go by shape"
err=$("$ROPELAB" nosuchcmd 2>&1 >/dev/null)
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; ok $? "unknown command: one-line error ($err)"
# getopt_long everywhere: --opt=value and --opt value, a suggestion for a misspelt command
err=$("$ROPELAB" rnu 2>&1 >/dev/null)
case "$err" in *"did you mean 'run'?"*) r=0 ;; *) r=1 ;; esac; ok $r "misspelt command: $err"
err=$("$ROPELAB" reprot 2>&1 >/dev/null)
case "$err" in *"did you mean 'report'?"*) r=0 ;; *) r=1 ;; esac; ok $r "misspelt command: $err"
scratch t_cli
# the kernel benchmark end to end with two threads: every kernel x PE x causality, each
# point measured in a child process (it used to hang at the first point whenever the
# parent had run a multi-threaded BLIS product before forking)
out=$(timeout 300 "$ROPELAB" bench --n 128,256 --reps 1 --heads 2 --threads 2 --out "$tmp/b" 2>&1); st=$?
[ $st = 0 ]; ok $? "ropelab bench, every kernel on 2 threads, finishes (exit $st)"
cfgs=$(printf '%s\n' "$out" | grep -c 'slope log t')
rows=$(tail -n +2 "$tmp/b/bench_attn.csv" 2>/dev/null | wc -l)
bad=$(tail -n +2 "$tmp/b/bench_attn.csv" 2>/dev/null | awk -F, '!($7 == 2 && $8 > 0 && $10 >= $8 && $12 > 0)' | wc -l)
[ "$cfgs" -ge 16 ] && [ "$rows" = $((2 * cfgs)) ] && [ "$bad" = 0 ]
ok $? "bench_attn.csv: two timed rows for each of the $cfgs kernels ($rows rows, $bad implausible)"
# the same usage error through both spellings proves the value reached the option
for c in "attn --in $tmp --out $tmp/o --pe=nope" "attn --in $tmp --out $tmp/o --pe nope"; do
    err=$("$ROPELAB" $c 2>&1 >/dev/null)
    case "$err" in *"--pe: expected one of none, rope, t5, alibi, got 'nope'"*) r=0 ;; *) r=1 ;; esac; ok $r "ropelab $c: $err"
done
for c in "bench --train --decode" "bench --decode --train"; do
    err=$("$ROPELAB" $c 2>&1 >/dev/null); st=$?
    case "$err" in *"--train and --decode exclude each other"*) r=0 ;; *) r=1 ;; esac
    [ $st = 2 ]; ok $(( $? | r )) "ropelab $c: exit $st, $err"
done
for c in "run x.ini --threads=0" "run x.ini --threads 0" "bench --train --steps=0" "bench --train --steps 0" \
    "bench --reps=99" "bench --reps 99" "report --rope-decay --dims=3 --out $tmp" "report --rope-decay --dims 3 --out=$tmp"; do
    err=$("$ROPELAB" $c 2>&1 >/dev/null); st=$?
    case "$err" in *"expected an"*) r=0 ;; *) r=1 ;; esac
    [ $st = 2 ]; ok $((r | $?)) "ropelab $c: exit 2, $err"
done
# bench: a head dimension RoPE cannot rotate is a usage error before anything is timed (it
# used to time nothing, print "failed" and exit 0); budgets must be positive numbers
for c in "--pe rope --d 3" "--pe all --d 5"; do
    err=$("$ROPELAB" bench --attention softmax --causal --n 16 --reps 1 $c 2>&1 >"$tmp/bo"); st=$?
    case "$err" in *"softmax+rope: pe=rope needs an even head dimension, got d="*) r=0 ;; *) r=1 ;; esac
    [ $st = 2 ] && [ ! -s "$tmp/bo" ]; ok $((r | $?)) "ropelab bench $c: exit 2, $err"
done
for c in "--budget-s -1" "--budget-s nan" "--mem-gb 0" "--mem-gb -2"; do
    err=$("$ROPELAB" bench --attention softmax --pe none --causal --n 16 --reps 1 $c 2>&1 >/dev/null); st=$?
    case "$err" in *"expected a number > 0"*) r=0 ;; *) r=1 ;; esac
    [ $st = 2 ]; ok $((r | $?)) "ropelab bench $c: exit 2, $err"
done
# report --rope-decay --base: an empty item is an error, not skipped
for b in 10,,20 10,; do
    err=$("$ROPELAB" report --rope-decay --out "$tmp/rd" --base $b 2>&1 >/dev/null); st=$?
    case "$err" in *"--base: expected a number > 1, got '' in '$b'"*) r=0 ;; *) r=1 ;; esac
    [ $st = 2 ] && [ ! -e "$tmp/rd" ]; ok $((r | $?)) "ropelab report --rope-decay --base $b: exit 2, $err"
done
err=$("$ROPELAB" run x.ini --out 2>&1 >/dev/null)
case "$err" in *"option '--out' needs an argument"*) r=0 ;; *) r=1 ;; esac; ok $r "missing value: $err"
err=$("$ROPELAB" attn --frob=1 2>&1 >/dev/null)
case "$err" in *"unknown option '--frob=1'"*) r=0 ;; *) r=1 ;; esac; ok $r "unknown option: $err"
# one option parser (cli/opts.h) for every command: the same message shapes and hints
while IFS='|' read -r args want; do
    err=$("$ROPELAB" $args 2>&1 >/dev/null); st=$?
    case "$err" in *"$want"*) r=0 ;; *) r=1 ;; esac
    [ $st = 2 ]; ok $((r | $?)) "ropelab $args: exit 2, $err"
done <<'EOF_CASES'
attn --in x --out y --rope-bse 2|unknown option '--rope-bse' (did you mean '--rope-base'?)
attn --in x --out y --pe=rpoe|--pe: expected one of none, rope, t5, alibi, got 'rpoe' (did you mean 'rope'?)
attn --in x --out y --causal=1|option '--causal' takes no argument
attn --in x --out y --rope-d 4|option '--rope-d' is ambiguous: --rope-dims, --rope-denominator
attn --in x --out y --eps|option '--eps' needs an argument
bench --decode --steps=2x|--steps: expected an integer in [1, 100000], got '2x'
bench --train --n 256,8|--n: expected an integer in [16, 65536], got '8' in '256,8'
bench --pe all --attention quadratic|--attention: expected one of softmax, linear, all, got 'quadratic'
eval --rope-factor|option '--rope-factor' needs an argument
generate ck --prompt a --seed -1|--seed: expected a non-negative integer, got '-1'
run a.ini b.ini|one EXPERIMENT.ini|NAME expected, got 'a.ini' and 'b.ini'
report a b|one RUN_DIR expected, got 'a' and 'b'
EOF_CASES
# the help shows each choice's names and their help lines from the same tables
"$ROPELAB" attn --help | grep -q -- '--feature-map elu1|softmax|exp' &&
    "$ROPELAB" attn --help | grep -q '^ *rotated: ' &&
    "$ROPELAB" generate --help | grep -q -- '\[--mode recurrent|full\]' &&
    "$ROPELAB" eval --help | grep -q -- '--rope-extend none|pi|ntk|yarn\[,...\]' &&
    "$ROPELAB" bench --help | grep -q -- '--decode'
ok $? "--help lists the choices of the tables (feature maps, denominators, decode modes, rope_extend)"
printf '[experiment]\nname = c\n[model]\nd_model = 16\nheads = 2\nlayers = 1\n[task]\nname = copy\nlength = 8\n[train]\nsteps = 2\nbatch = 2\n[eval]\nlengths = 8\nbatches = 1\n' >"$tmp/c.ini"
ROPELAB_GNUPLOT=none "$ROPELAB" run -q --out="$tmp/runs" --set=train.steps=3 --threads=1 "$tmp/c.ini" >/dev/null 2>&1 &&
    grep -q '^steps = 3$' "$tmp/runs/c/config.ini" && grep -q '^threads = 1$' "$tmp/runs/c/config.ini"
ok $? "run with --out=DIR --set=KEY=V --threads=N before the file"
# bench --train --regions: under the row, the cell's regions by name, then the time outside
# them; the regions' ms per update add up to at most the update's
out=$("$ROPELAB" bench --train --regions --attention linear --n 16 --steps 1 --warmup 0 --threads 1 2>&1)
echo "$out" | awk '/^linear/ { row = 1 } row && /^  region +ms\/upd/ { head = 1 }
    head && $1 == "forward_rows" { f = 1 } head && $1 == "backward_rows" { b = 1 }
    head && /^  linear: forward sums/ { s = 1 } head && /^  \(outside the regions\)/ { out = $4 }
    END { exit !(f && b && s && out != "" && out + 0 >= 0) }'
r=$?
ok $r "bench --train --regions lists the step's regions and the time outside them"
[ $r = 0 ] || echo "$out" | sed 's/^/# /'
echo "1..$n"
exit $failed
