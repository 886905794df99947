#!/bin/sh
# t_experiment.sh -- `ropelab run` as an experiment and `ropelab report`, end to
# end on a tiny 2 x 2 sweep: point directories, the combined results.csv (rows and
# columns), summary.md, the printed table, plots with and without gnuplot, refusal to
# overwrite, an interrupted sweep resumed without redoing finished points (file times and
# metrics records) and with the numbers of an uninterrupted run, report regenerating
# byte-identical outputs, an impossible combination stopping everything, and the RoPE
# long-term-decay figure.
: "${ROPELAB:=./src/ropelab}"
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
. "$(dirname "$0")/lib.sh"
scratch t_experiment

tiny_ini "$tmp/tiny.ini" tiny <<EOF
[experiment]
threads = 1
[train]
steps = 6
batch = 4
log_every = 2
checkpoint_every = 2
[eval]
lengths = 8, 16
batches = 2
[sweep]
model.pe = learned, rope
model.attention = softmax, linear
EOF

# --- a whole sweep ---
"$ROPELAB" run "$tmp/tiny.ini" --out "$tmp/a" >"$tmp/out" 2>"$tmp/err"
ok $? "a 2 x 2 sweep runs"
d="$tmp/a/tiny"
all=1
for p in pe=learned,attention=softmax pe=learned,attention=linear pe=rope,attention=softmax pe=rope,attention=linear; do
    for f in config.ini metrics.jsonl results.csv checkpoints/step-6.safetensors; do
        [ -f "$d/$p/$f" ] || { all=0; echo "# missing $d/$p/$f"; }
    done
done
[ $all = 1 ]; ok $? "every point has config.ini, metrics.jsonl, results.csv, checkpoints"
grep -q '^pe = rope$' "$d/pe=rope,attention=linear/config.ini" && grep -q '^attention = linear$' "$d/pe=rope,attention=linear/config.ini" &&
    ! grep -q '^\[sweep\]' "$d/pe=rope,attention=linear/config.ini"
ok $? "a point's config.ini holds its values and no [sweep]"
grep -q '^\[sweep\]' "$d/config.ini" && grep -q '^model.pe = learned, rope$' "$d/config.ini"
ok $? "the experiment's config.ini keeps the [sweep] section"
[ "$(head -1 "$d/results.csv")" = "pe,attention,length,acc,exact,loss,ppl,ms_per_1k_tokens,den_le_eps,note,rope_extend,rope_factor,stride,acc_lo,acc_hi,exact_lo,exact_hi,loss_lo,loss_hi,ppl_lo,ppl_hi,targets,sequences,ref_loss,ref_acc" ]
ok $? "results.csv header: swept keys, length, acc, exact, loss, ppl, ms_per_1k_tokens, den_le_eps, note, ..., the 95 % intervals and their sizes, the baseline"
[ "$(wc -l <"$d/results.csv")" = 9 ]; ok $? "results.csv: 4 points x 2 lengths = 8 rows"
grep -q '^learned,linear,16,n/a,n/a,n/a,n/a,n/a,n/a,learned PE has max_len rows,none,1,0\(,n/a\)\{10\},[0-9.]*,[0-9.]*$' "$d/results.csv" &&
    grep -q '^rope,linear,16,[0-9.]*,[0-9.]*,' "$d/results.csv"
ok $? "results.csv: learned PE beyond max_len is n/a with the reason; rope has numbers"
# elu1 with an unrotated denominator: no denominator is <= eps; softmax rows leave it empty
grep -q '^rope,linear,16,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,0,,none,1,0,' "$d/results.csv" &&
    grep -q '^rope,softmax,16,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,,,none,1,0,' "$d/results.csv"
ok $? "results.csv: den_le_eps is 0 for elu1 linear attention, empty for softmax"
grep -A8 '^## copy: linear-attention denominators' "$d/summary.md" >"$tmp/den" &&
    [ "$(grep -c '^| \(learned\|rope\) | linear | ' "$tmp/den")" = 2 ] &&
    ! grep -q '| softmax |' "$tmp/den" && grep -q '^| rope | linear | 0 | 0 |$' "$tmp/den"
ok $? "summary.md: the denominator table has the linear-attention rows only"
grep -A10 '^## copy: exact match by evaluation length' "$d/summary.md" >"$tmp/exact" &&
    [ "$(grep -c '^| \(learned\|rope\) | \(softmax\|linear\) | ' "$tmp/exact")" = 4 ]
ok $? "summary.md: the exact-match table (per sequence) has every point"
[ "$(grep -c '^| \(learned\|rope\) | \(softmax\|linear\) |' "$d/summary.md")" = 22 ] &&
    grep -q '^| pe | attention | 8 | 16 |$' "$d/summary.md" && grep -q '^## copy: accuracy' "$d/summary.md" &&
    grep -q '^## Timing' "$d/summary.md" && grep -q 'train tok/s' "$d/summary.md"
ok $? "summary.md: accuracy, loss and timing tables with 4 rows each, lengths as columns"
# accuracy by order of the scored target: per point and combined, and its table at N = 8
[ "$(head -1 "$d/pe=rope,attention=linear/orders.csv")" = "pe,attention,length,order,acc,targets,rope_extend" ] &&
    [ "$(wc -l <"$d/pe=rope,attention=linear/orders.csv")" = 13 ] &&
    [ "$(head -1 "$d/orders.csv")" = "pe,attention,length,order,acc,targets,rope_extend" ] &&
    [ "$(wc -l <"$d/orders.csv")" = 33 ] && grep -q '^rope,linear,16,8,[0-9.]*,[0-9]*,none$' "$d/orders.csv" &&
    grep -A9 '^## copy: accuracy by order in the row at the training length 8' "$d/summary.md" >"$tmp/ord" &&
    grep -q '^| pe | attention | 1 | 2 | 3 | 4 |$' "$tmp/ord" &&
    [ "$(grep -c '^| \(learned\|rope\) | \(softmax\|linear\) | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* |$' "$tmp/ord")" = 4 ]
ok $? "orders.csv per point (4 + 8 orders; learned PE none at 16) and combined; summary.md's accuracy by order at the training length"
awk -F, 'NR > 1 && $3 == 8 { c += $5 * $6; n += $6 } END { printf "%.4f\n", c / n }' "$d/pe=rope,attention=linear/orders.csv" >"$tmp/oa"
awk -F, 'NR > 1 && $3 == 8 { printf "%.4f\n", $4 }' "$d/pe=rope,attention=linear/results.csv" >"$tmp/ra"
cmp -s "$tmp/oa" "$tmp/ra"; ok $? "orders.csv averages to results.csv's accuracy ($(cat "$tmp/oa") vs $(cat "$tmp/ra"))"
grep -q '^pe  *attention  *8  *16$' "$tmp/out" &&
    grep -q '^rope  *linear  *[0-9.]* \(± [0-9.]*\|\[[0-9.]*, [0-9.]*\]\)  *[0-9.]* \(± [0-9.]*\|\[[0-9.]*, [0-9.]*\]\)$' "$tmp/out" &&
    grep -q '^copy: accuracy by evaluation length (training length 8), ± half the 95 % interval$' "$tmp/out"
ok $? "the accuracy table is printed, each cell with half its 95 % interval"
grep -q '^\[1/4\] pe=learned,attention=softmax .*done' "$tmp/out"; ok $? "progress lines per point"
if [ -n "$("$ROPELAB" --version | grep '^gnuplot: /')" ] && [ -z "${ROPELAB_GNUPLOT+x}" ]; then
    [ -s "$d/plots/copy-acc.svg" ] && [ -s "$d/plots/copy-loss.svg" ] && [ -s "$d/plots/throughput.svg" ]
    ok $? "plots: copy-acc.svg, copy-loss.svg, throughput.svg"
else
    n=$((n + 1)); echo "ok $n - plots # SKIP no gnuplot"
fi

# --- report regenerates the same files ---
cp "$d/summary.md" "$tmp/summary.run"; cp "$d/results.csv" "$tmp/results.run"
rm "$d/summary.md" "$d/results.csv"
ROPELAB_GNUPLOT=none "$ROPELAB" report "$d" >"$tmp/rep" 2>&1
ok $? "ropelab report exits 0"
cmp -s "$d/summary.md" "$tmp/summary.run" && cmp -s "$d/results.csv" "$tmp/results.run"
ok $? "report regenerates summary.md and results.csv byte for byte"
# a run written before results.csv had den_le_eps, rope_extend, rope_factor and stride: the
# report takes the denominator counts from eval.jsonl and reads the rest as none, 1, 0 (the
# intervals, newer still, go first: the reference is the report without them)
for f in "$d"/*/results.csv; do
    cut -d, -f1-13 "$f" >"$f.old" && mv "$f.old" "$f"
done
ROPELAB_GNUPLOT=none "$ROPELAB" report "$d" >/dev/null 2>&1
cut -d, -f1-13 "$tmp/results.run" >"$tmp/x"; cut -d, -f1-13 "$d/results.csv" >"$tmp/y"
! grep -q ' ± ' "$d/summary.md" && cmp -s "$tmp/x" "$tmp/y" &&
    [ "$(head -1 "$d/results.csv")" = "$(head -1 "$tmp/results.run")" ]
ok $? "report of points without the interval columns: no intervals in summary.md, the other columns as they were"
cp "$d/summary.md" "$tmp/summary.run"; cp "$d/results.csv" "$tmp/results.run"
for f in "$d"/*/results.csv; do
    awk -F, -v OFS=, '{ print $1, $2, $3, $4, $5, $6, $7, $8, $10 }' "$f" >"$f.old"
    mv "$f.old" "$f"
done
lp="$d/pe=rope,attention=linear/results.csv"
head -1 "$lp" | grep -q '^pe,attention,length,acc,exact,loss,ppl,ms_per_1k_tokens,note$' &&
    ROPELAB_GNUPLOT=none "$ROPELAB" report "$d" >/dev/null 2>&1 &&
    cmp -s "$d/summary.md" "$tmp/summary.run" && cmp -s "$d/results.csv" "$tmp/results.run"
ok $? "report of points without den_le_eps and the evaluation columns: the same files"
grep -q 'plots skipped' "$tmp/rep" && grep -q '^rope  *linear' "$tmp/rep"
ok $? "without gnuplot: plots skipped (said so), the table still printed"
"$ROPELAB" report --help | grep -q '^Usage: ropelab report'; ok $? "report --help"
"$ROPELAB" report "$tmp/nothing" >/dev/null 2>"$tmp/err"; r=$?
[ $r = 1 ] && grep -q 'not a ropelab run directory' "$tmp/err"; ok $? "report of a non-run: exit 1"
# damaged results.csv: a field that is not a number, or no lines after the header
cp -r "$d" "$tmp/dmg"; q="$tmp/dmg/pe=rope,attention=linear/results.csv"
sed '2s/^\([^,]*,[^,]*,[^,]*\),[^,]*,/\1,abc,/' "$q" >"$q.x" && mv "$q.x" "$q"
"$ROPELAB" report "$tmp/dmg" >/dev/null 2>"$tmp/err"; r=$?
[ $r = 1 ] && grep -q "pe=rope,attention=linear/results.csv: a line with a field that is not a number: 'rope,linear,8,abc," "$tmp/err"
ok $? "report of a results.csv with 'abc' for a number: exit 1 naming file and line"
head -1 "$d/pe=rope,attention=linear/results.csv" >"$q"
"$ROPELAB" report "$tmp/dmg" >/dev/null 2>"$tmp/err"; r=$?
[ $r = 1 ] && grep -q "pe=rope,attention=linear/results.csv: no result lines" "$tmp/err"
ok $? "report of a results.csv with a header only: exit 1"

# --- no overwrite ---
"$ROPELAB" run "$tmp/tiny.ini" --out "$tmp/a" >/dev/null 2>"$tmp/err"; r=$?
[ $r = 1 ] && grep -q 'already holds a run' "$tmp/err"; ok $? "a second run into the same directory: exit 1"

# --- interrupted, then resumed ---
"$ROPELAB" run "$tmp/tiny.ini" --out "$tmp/b" --stop-after 9 >"$tmp/out" 2>&1
ok $? "--stop-after 9: interrupted after 9 updates, exit 0"
b="$tmp/b/tiny"; p1="$b/pe=learned,attention=softmax"; p2="$b/pe=learned,attention=linear"
[ -f "$p1/results.csv" ] && [ ! -f "$p2/results.csv" ] && [ -f "$p2/checkpoints/step-2.safetensors" ] &&
    [ -f "$p2/checkpoints/step-3.safetensors" ] &&
    [ ! -d "$b/pe=rope,attention=softmax" ] && [ ! -f "$b/summary.md" ] &&
    grep -q "^stopped after 9 updates (--stop-after) at update 3 of 6 of pe=learned,attention=linear, saved in $p2/checkpoints/step-3.safetensors; continue with: ropelab run .*--resume$" "$tmp/out"
ok $? "point 1 finished, point 2 stopped after update 3 with its checkpoint, said so, nothing else"
t1=$(stat -c '%y' "$p1/results.csv" "$p1/metrics.jsonl" "$p1/checkpoints/step-6.safetensors")
c1=$(cksum <"$p1/metrics.jsonl")
sleep 0.05
"$ROPELAB" run "$tmp/tiny.ini" --out "$tmp/b" --resume >"$tmp/out" 2>"$tmp/err"
ok $? "--resume completes the sweep"
[ "$t1" = "$(stat -c '%y' "$p1/results.csv" "$p1/metrics.jsonl" "$p1/checkpoints/step-6.safetensors")" ] &&
    [ "$c1" = "$(cksum <"$p1/metrics.jsonl")" ] && grep -q '^\[1/4\] .*skipped' "$tmp/out"
ok $? "the finished point is not redone (same file times and records)"
[ "$(sed 's/^{"step": \([0-9]*\),.*/\1/' "$p2/metrics.jsonl" | tr '\n' ' ')" = "2 4 6 " ] &&
    grep -q '^\[2/4\] .*done.*: 3 updates' "$tmp/out" &&
    [ "$(ls "$p2/checkpoints")" = "$(printf 'step-2.safetensors\nstep-4.safetensors\nstep-6.safetensors')" ]
ok $? "the interrupted point resumed from update 3: records 2, 4, 6 once each, the stop's checkpoint gone"
cut -d, -f1-6 "$d/results.csv" >"$tmp/x"; cut -d, -f1-6 "$b/results.csv" >"$tmp/y"
cmp -s "$tmp/x" "$tmp/y"; ok $? "resumed sweep: acc, loss, ppl equal the uninterrupted run's"
"$ROPELAB" run "$tmp/tiny.ini" --out "$tmp/b" --resume --set train.lr=0.5 >/dev/null 2>"$tmp/err"; r=$?
[ $r = 1 ] && grep -q 'configuration differs from the run.s (train.lr' "$tmp/err"
ok $? "--resume with a changed key: exit 1 naming the key"

# --- impossible combination: nothing runs ---
printf '[model]\nd_model = 12\nheads = 4\n[train]\nsteps = 2\n[sweep]\nmodel.pe = none, rope\n' >"$tmp/odd.ini"
"$ROPELAB" run "$tmp/odd.ini" --out "$tmp/c" >/dev/null 2>"$tmp/err"; r=$?
[ $r = 2 ] && grep -q "odd.ini:3: \[model\] heads: head dim d_model/heads = 3 is odd.*(sweep point pe=rope)" "$tmp/err" &&
    [ ! -e "$tmp/c" ] && [ "$(wc -l <"$tmp/err")" = 1 ]
ok $? "an impossible point: exit 2, file:line:key and the point, nothing written"

# --- a language-model sweep: per-position loss curve, combined and summarised ---
i=0; while [ $i -lt 400 ]; do echo "line $i of a small text: the quick brown fox jumps over the lazy dog"; i=$((i + 1)); done >"$tmp/text.txt"
tiny_ini "$tmp/lm.ini" lm "name = charlm" "path = $tmp/text.txt" "length = 16" <<EOF
[experiment]
threads = 1
[train]
steps = 4
batch = 4
[eval]
lengths = 16, 64
batches = 2
[sweep]
model.pe = rope, alibi
EOF
ROPELAB_GNUPLOT=none "$ROPELAB" run "$tmp/lm.ini" --out "$tmp/lm" >/dev/null 2>&1
ok $? "a charlm sweep runs"
l="$tmp/lm/lm"
# bins 0, 1, 2, 3, 4-5, 6-7, 8-10, 11-15 at length 16, and 16-22, 23-31, 32-44, 45-63
# more at 64 (two an octave), per point; combined with the swept pe
[ "$(head -1 "$l/pe=rope/positions.csv")" = "pe,attention,length,position_start,position_end,loss,targets,rope_extend,loss_lo,loss_hi" ] &&
    [ "$(wc -l <"$l/pe=rope/positions.csv")" = 21 ] &&
    [ "$(head -1 "$l/positions.csv")" = "pe,attention,length,position_start,position_end,loss,targets,rope_extend,loss_lo,loss_hi" ] &&
    [ "$(wc -l <"$l/positions.csv")" = 41 ] && grep -q '^alibi,softmax,64,45,64,[0-9.]*,[0-9]*,none,[0-9.]*,[0-9.]*$' "$l/positions.csv" &&
    grep -q '^rope,softmax,16,11,16,[0-9.]*,[0-9]*,none,' "$l/pe=rope/positions.csv"
ok $? "positions.csv: per point and combined, one line per position bin and length"
# the weighted mean of the bins of a length is that length's loss in results.csv
awk -F, 'NR > 1 && $3 == 64 { s += $6 * $7; n += $7 } END { printf "%.4f\n", s / n }' "$l/pe=rope/positions.csv" >"$tmp/pm"
awk -F, 'NR > 1 && $3 == 64 { printf "%.4f\n", $6 }' "$l/pe=rope/results.csv" >"$tmp/rm"
cmp -s "$tmp/pm" "$tmp/rm"; ok $? "positions.csv averages to results.csv's loss ($(cat "$tmp/pm") vs $(cat "$tmp/rm"))"
grep -A7 '^## charlm: loss by position at evaluation length 64' "$l/summary.md" | grep -q '^| pe | attention | 0–16 | 16–32 | 32–64 |$' &&
    [ "$(grep -A7 '^## charlm: loss by position' "$l/summary.md" | grep -c '^| \(rope\|alibi\) | softmax | [0-9]')" = 2 ]
ok $? "summary.md: loss by position range at the longest length, training length first"

# --- one process at a time in a run directory ---
tiny_ini "$tmp/long.ini" long <<EOF
[experiment]
threads = 1
[train]
steps = 1000000
EOF
"$ROPELAB" run "$tmp/long.ini" --out "$tmp/lk" -q >/dev/null 2>&1 &
first=$!
i=0
while [ ! -f "$tmp/lk/long/.lock" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
err=$("$ROPELAB" run "$tmp/long.ini" --out "$tmp/lk" --resume --stop-after 1 2>&1 >/dev/null); st=$?
case "$err" in *"is in use by another ropelab process"*) r=0 ;; *) r=1 ;; esac
[ $st = 1 ]; ok $(( $? | r )) "a second run in a directory in use stops before training: exit $st, $err"
kill $first; wait $first 2>/dev/null
"$ROPELAB" run "$tmp/long.ini" --out "$tmp/lk" --resume --stop-after 1 >/dev/null 2>&1
ok $? "once the first process is gone (killed), --resume takes the directory"

"$ROPELAB" run "$tmp/long.ini" --out "$tmp/lk" --resume --set sweep.model.pe=rope,alibi >/dev/null 2>"$tmp/err"; st=$?
[ $st = 1 ] && grep -q 'configuration differs from the run.s (' "$tmp/err" && [ ! -d "$tmp/lk/long/pe=rope" ]
ok $? "a single run resumed as a sweep is refused before anything is written: $(head -c 160 "$tmp/err")"
"$ROPELAB" run "$tmp/tiny.ini" --out "$tmp/b" --resume --set sweep.model.pe=learned,rope,alibi >/dev/null 2>"$tmp/err"; st=$?
[ $st = 1 ] && grep -q 'configuration differs from the run.s (sweep.model.pe' "$tmp/err"
ok $? "a sweep resumed with other values is refused, naming the key"

# --- RoPE long-term decay ---
ROPELAB_GNUPLOT=none "$ROPELAB" report --rope-decay --out "$tmp/decay" --dims 128 --base 10000,500000 --max-distance 300 >/dev/null
ok $? "report --rope-decay"
[ "$(head -1 "$tmp/decay/rope_decay.csv")" = "distance,base=10000,base=500000" ] &&
    [ "$(wc -l <"$tmp/decay/rope_decay.csv")" = 302 ] && grep -q '^0,32.500000,32.500000$' "$tmp/decay/rope_decay.csv"
ok $? "rope_decay.csv: a column per base, 301 distances, d/4 + 1/2 at distance 0"

echo "1..$n"
exit $failed
