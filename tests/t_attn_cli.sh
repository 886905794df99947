#!/bin/sh
# t_attn_cli.sh -- `ropelab attn` against an independent float64 NumPy evaluation of
# the kernels' math (tests/ref/attn_ref.py: quadratic forms, gradients by central differences)
# for every kernel and option; plus usage errors (exit 2).  The NumPy part is skipped
# when python3-numpy is not installed.
: "${ROPELAB:=./src/ropelab}" "${top_srcdir:=.}"
PY=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d /tmp/rl_attn_cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/lib.sh"

have_numpy=0
"$PY" -c 'import numpy' 2>/dev/null && have_numpy=1

check() { # options...
    n=$((n + 1))
    if [ $have_numpy = 0 ]; then echo "ok $n - attn $* # SKIP python3-numpy not installed"; return; fi
    rm -rf "$work/c"; mkdir -p "$work/c"
    if out=$("$PY" "$top_srcdir/tests/ref/attn_ref.py" check "$ROPELAB" "$work/c" $n -- "$@" 2>&1); then
        echo "ok $n - attn $* vs float64 NumPy reference"
    else
        echo "not ok $n - attn $* vs float64 NumPy reference"; failed=1
    fi
    printf '%s\n' "$out" | sed 's/^/# /'
}

for c in "" --causal; do
    check --attention softmax $c
    check --attention softmax --pe rope $c
    check --attention softmax --pe rope --rope-layout halves --rope-base 100 $c
    check --attention softmax --pe rope --rope-dims 2 --rope-scale 2 $c
    check --attention softmax --pe rope --rope-ntk 4 --rope-base 500 $c
    check --attention softmax --pe t5 --t5-buckets 8 --t5-max-distance 16 $c
    check --attention softmax --pe alibi $c
    for fm in elu1 softmax exp; do
        check --attention linear --feature-map $fm $c
        check --attention linear --feature-map $fm --pe rope $c
        check --attention linear --feature-map $fm --pe rope --rope-layout halves --rope-base 50 $c
        check --attention linear --feature-map $fm --pe rope --rope-place input $c
        check --attention linear --feature-map $fm --pe rope --rope-denominator rotated --eps 0.1 $c
        check --attention linear --feature-map $fm --pe t5 --t5-buckets 8 --t5-max-distance 16 $c
        check --attention linear --feature-map $fm --pe alibi $c
    done
done
for fm in elu1 softmax exp; do
    check --attention linear --feature-map $fm --pe alibi --causal --alibi-scan
done
# elu1 and exp run the decayed scan in blocks of 256 rows: three blocks, the last partial
# (the states entering each block, forward and reverse)
for fm in elu1 exp; do
    check --attention linear --feature-map $fm --pe alibi --causal --alibi-scan --ref-shape 2,600,4,3 --ref-sample 24
done
# Shen's map in a call of fewer than 16 heads runs in blocks of 256 rows too: its column
# maxima, and causal Z (the sum of u over the rows before a block) and the suffix of dZ
# after a block, non-causal Ztot and the column sums of dk, cross the blocks' edges; 16
# heads or more keep one piece per head
for c in "" --causal; do
    for pe in "" "--pe rope" "--pe rope --rope-place input" "--pe rope --rope-denominator rotated --eps 0.1"; do
        check --attention linear --feature-map softmax $pe $c --ref-shape 2,600,4,3 --ref-sample 24
    done
    check --attention linear --feature-map softmax --pe rope $c --ref-shape 16,40,4,3 --ref-sample 24
done
check --attention linear --feature-map softmax --pe rope --causal --forget --ref-shape 1,600,4,3 --ref-sample 24
# The FFT products: a call of fewer than 16 heads runs in (head, group of features)
# pieces, summed group by group (above: 4 groups of one feature; here 3 heads, 11 groups of
# 1 or 2 of 16 features); 16 heads or more keep one piece per head
for fm in elu1 softmax; do
    check --attention linear --feature-map $fm --pe t5 --t5-buckets 8 --t5-max-distance 16 --causal --ref-shape 3,40,16,3 --ref-sample 24
    check --attention linear --feature-map $fm --pe t5 --t5-buckets 8 --t5-max-distance 16 --causal --ref-shape 16,9,4,3 --ref-sample 24
    check --attention linear --feature-map $fm --pe alibi --ref-shape 16,9,4,3 --ref-sample 24
done
# YaRN (a base and L that put a ramp value strictly between 0 and 1) and xPos (a small
# gamma, so that the decay is strong over the short test sequence)
Y="--pe rope --rope-yarn 4 --rope-yarn-orig 1000 --rope-base 100"
Y8="--pe rope --rope-yarn 3 --rope-yarn-orig 700 --rope-base 30 --ref-shape 2,11,8,3"
check --attention softmax $Y
check --attention softmax --pe rope --rope-yarn 2 --rope-base 3 --causal  # L = N of the input
check --attention softmax $Y --rope-layout halves --causal
check --attention softmax $Y8 --rope-dims 6 --causal
check --attention softmax $Y8 --rope-dims 4 --rope-layout halves
check --attention softmax --pe rope --causal --xpos --xpos-scale-base 2 --ref-shape 2,11,8,3
check --attention softmax --pe rope --causal --xpos --xpos-scale-base 3 --rope-layout halves --rope-dims 6 --ref-shape 2,11,8,3
check --attention softmax $Y8 --causal --xpos --xpos-scale-base 3 --rope-dims 6
check --attention linear --feature-map elu1 $Y --rope-place input --causal
check --attention linear --feature-map elu1 $Y8 --rope-denominator rotated --eps 0.1 --rope-dims 4
for fm in elu1 softmax exp; do
    check --attention linear --feature-map $fm $Y --rope-layout halves --causal
    check --attention linear --feature-map $fm $Y8 --rope-dims 6
done

# the forget gate (causal only): log gates drawn by attn_ref.py (one of them exactly 0),
# with every attention-level PE (the biases add to the gate's), eq. 19 and its ablations
F="--causal --forget"
check --attention softmax $F
check --attention softmax --pe rope $F
check --attention softmax --pe rope --rope-layout halves --rope-base 100 $F
check --attention softmax --pe t5 --t5-buckets 8 --t5-max-distance 16 $F
check --attention softmax --pe alibi $F
for fm in elu1 softmax exp; do
    check --attention linear --feature-map $fm $F
    check --attention linear --feature-map $fm --pe rope $F
    check --attention linear --feature-map $fm --pe rope --rope-layout halves --rope-base 50 $F
    check --attention linear --feature-map $fm --pe rope --rope-place input $F
    check --attention linear --feature-map $fm --pe rope --rope-denominator rotated --eps 0.1 $F
    check --attention linear --feature-map $fm --pe t5 --t5-buckets 8 --t5-max-distance 16 $F
    check --attention linear --feature-map $fm --pe alibi $F
    check --attention linear --feature-map $fm --pe alibi --alibi-scan $F
done
# a sequence longer than the kernels' blocks of rows (the gate's sums carried across them)
check --attention softmax --pe rope $F --ref-shape 1,300,2,2 --ref-sample 24
check --attention linear --feature-map elu1 --pe rope $F --ref-shape 1,300,2,2 --ref-sample 24

# usage errors: exit status 2 with a one-line message
mkdir -p "$work/bad"
status_of() { "$ROPELAB" attn "$@" >/dev/null 2>"$work/err"; echo $?; }
[ "$(status_of --out "$work/o")" = 2 ]; ok $? "missing --in rejected (exit 2)"
[ "$(status_of --in "$work/bad" --out "$work/o")" = 2 ]; ok $? "missing q.npy rejected (exit 2): $(cat "$work/err")"
[ "$(status_of --in x --out y --pe nosuch)" = 2 ]; ok $? "bad --pe value rejected (exit 2)"
[ "$(status_of --in x --out y --rope-base)" = 2 ]; ok $? "missing option argument rejected (exit 2)"
[ "$(status_of --in x --out y --frobnicate 1)" = 2 ]; ok $? "unknown option rejected (exit 2)"
# an empty directory name: not the filesystem root (--in '' read /q.npy)
[ "$(status_of --in '' --out "$work/o")" = 2 ] && grep -q "^ropelab attn: --in: expected a directory, got ''" "$work/err"
ok $? "--in '' rejected (exit 2): $(cat "$work/err")"
[ "$(status_of --in "$work/bad" --out '')" = 2 ] && grep -q "^ropelab attn: --out: expected a directory, got ''" "$work/err"
ok $? "--out '' rejected (exit 2): $(cat "$work/err")"
if [ $have_numpy = 1 ]; then
    "$PY" - "$work/bad" <<'PYEOF'
import numpy as np, sys
d = sys.argv[1]
r = np.random.default_rng(0)
np.save(d + "/q.npy", r.standard_normal((2, 5, 3)).astype(np.float32))
np.save(d + "/k.npy", r.standard_normal((2, 5, 3)).astype(np.float32))
np.save(d + "/v.npy", r.standard_normal((2, 4, 3)).astype(np.float32))
PYEOF
    [ "$(status_of --in "$work/bad" --out "$work/o")" = 2 ]; ok $? "v.npy with the wrong N rejected (exit 2): $(cat "$work/err")"
    "$PY" -c "import numpy as np; np.save('$work/bad/v.npy', np.ones((2,5,3), np.float32))"
    [ "$(status_of --in "$work/bad" --out "$work/o" --pe rope)" = 2 ]; ok $? "odd d with RoPE rejected (exit 2): $(cat "$work/err")"
    [ "$(status_of --in "$work/bad" --out "$work/o" --pe t5)" = 2 ]; ok $? "--pe t5 without t5_bias.npy rejected (exit 2)"
    [ "$(status_of --in "$work/bad" --out "$work/o" --attention softmax --rope-place input --pe rope --rope-dims 2)" = 2 ]; ok $? "rope_place=input with softmax rejected (exit 2): $(cat "$work/err")"
    [ "$(status_of --in "$work/bad" --out "$work/o" --attention linear --rope-denominator rotated)" = 2 ]; ok $? "rotated denominator without rope rejected (exit 2)"
    [ "$(status_of --in "$work/bad" --out "$work/o" --pe rope --rope-dims 2 --rope-yarn 2 --rope-scale 2)" = 2 ]; ok $? "--rope-yarn with --rope-scale rejected (exit 2): $(cat "$work/err")"
    [ "$(status_of --in "$work/bad" --out "$work/o" --pe rope --rope-dims 2 --rope-yarn 0.5)" = 2 ]; ok $? "--rope-yarn < 1 rejected (exit 2): $(cat "$work/err")"
    [ "$(status_of --in "$work/bad" --out "$work/o" --pe rope --rope-dims 2 --xpos)" = 2 ]; ok $? "--xpos without --causal rejected (exit 2): $(cat "$work/err")"
    [ "$(status_of --in "$work/bad" --out "$work/o" --attention linear --pe rope --rope-dims 2 --causal --xpos)" = 2 ]; ok $? "--xpos with linear attention rejected (exit 2): $(cat "$work/err")"
    # the forget gate: causal only, logf.npy (H, N) present, finite and <= 0, and only with --forget
    [ "$(status_of --in "$work/bad" --out "$work/o" --forget)" = 2 ] && grep -q -- "--forget needs --causal" "$work/err"
    ok $? "--forget without --causal rejected (exit 2): $(cat "$work/err")"
    [ "$(status_of --in "$work/bad" --out "$work/o" --forget --causal)" = 2 ] && grep -q "logf.npy" "$work/err"
    ok $? "--forget without logf.npy rejected (exit 2): $(cat "$work/err")"
    "$PY" -c "import numpy as np; a = -np.ones((2,5), np.float32); a[1,3] = 0.25; np.save('$work/bad/logf.npy', a)"
    [ "$(status_of --in "$work/bad" --out "$work/o" --forget --causal)" = 2 ] && grep -q 'logf.npy\[1,3\] = 0.25' "$work/err"
    ok $? "a positive log gate rejected naming its index (exit 2): $(cat "$work/err")"
    "$PY" -c "import numpy as np; a = -np.ones((2,5), np.float32); a[0,4] = np.nan; np.save('$work/bad/logf.npy', a)"
    [ "$(status_of --in "$work/bad" --out "$work/o" --forget --causal)" = 2 ] && grep -q 'logf.npy\[0,4\] = nan' "$work/err"
    ok $? "a NaN log gate rejected naming its index (exit 2): $(cat "$work/err")"
    "$PY" -c "import numpy as np; np.save('$work/bad/logf.npy', -np.ones((2,4), np.float32))"
    [ "$(status_of --in "$work/bad" --out "$work/o" --forget --causal)" = 2 ] && grep -q 'logf.npy must be (H, N) = (2,5)' "$work/err"
    ok $? "logf.npy of the wrong shape rejected (exit 2): $(cat "$work/err")"
    "$PY" -c "import numpy as np; np.save('$work/bad/logf.npy', -np.ones((2,5), np.float32))"
    [ "$(status_of --in "$work/bad" --out "$work/o" --causal)" = 2 ] && grep -q "logf.npy given but --forget" "$work/err"
    ok $? "logf.npy without --forget rejected (exit 2): $(cat "$work/err")"
    rm -f "$work/bad/logf.npy"
    # float64 and big-endian float32 inputs are read and rounded to float32 (attn --help):
    # the output equals the little-endian float32 run's bit for bit
    mkdir -p "$work/f32" "$work/f64" "$work/be"
    "$PY" - "$work" <<'PYEOF'
import numpy as np, sys
w = sys.argv[1]
r = np.random.default_rng(1)
for n, s in (("q", (2, 7, 4)), ("k", (2, 7, 4)), ("v", (2, 7, 3))):
    x = r.standard_normal(s).astype(np.float32)
    np.save(w + "/f32/" + n + ".npy", x)
    np.save(w + "/f64/" + n + ".npy", x.astype(np.float64))
    np.save(w + "/be/" + n + ".npy", x.astype(">f4"))
PYEOF
    for kind in f64 be; do
        "$ROPELAB" attn --in "$work/$kind" --out "$work/o_$kind" --causal --threads 1 >/dev/null 2>&1 &&
            "$ROPELAB" attn --in "$work/f32" --out "$work/o_f32" --causal --threads 1 >/dev/null 2>&1 &&
            "$PY" -c "import numpy as np, sys; sys.exit(0 if np.array_equal(np.load('$work/o_$kind/out.npy'), np.load('$work/o_f32/out.npy')) else 1)"
        ok $? "$kind inputs give the float32 run's output bit for bit"
    done
fi
echo "1..$n"
exit $failed
