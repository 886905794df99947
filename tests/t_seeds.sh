#!/bin/sh
# t_seeds.sh -- a tiny experiment with three seeds end to end (6 updates per point): a
# sweep over train.seed gives one directory and one results.csv row per point and length
# (a seed column after the other swept keys), summary.md and the printed table show each
# (PE, attention) once with mean ± std (3) and the significance marks, the accuracy plot
# data has the standard deviation, and `ropelab report` writes the same files again.
: "${ROPELAB:=./src/ropelab}"
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
ROPELAB_GNUPLOT=none; export ROPELAB_GNUPLOT
. "$(dirname "$0")/lib.sh"
scratch t_seeds

tiny_ini "$tmp/seeds.ini" seeds <<EOF2
[experiment]
threads = 1
[model]
attention = softmax
[train]
steps = 6
batch = 4
log_every = 3
[eval]
lengths = 8, 16
batches = 2
[sweep]
model.pe = alibi, rope
train.seed = 1, 2, 3
EOF2

"$ROPELAB" run "$tmp/seeds.ini" --out "$tmp/a" >"$tmp/out" 2>"$tmp/err"
ok $? "a sweep over train.seed = 1, 2, 3 runs"
d="$tmp/a/seeds"
all=1
for pe in alibi rope; do for s in 1 2 3; do
    [ -f "$d/pe=$pe,seed=$s/results.csv" ] || { all=0; echo "# missing $d/pe=$pe,seed=$s/results.csv"; }
    grep -q "^seed = $s\$" "$d/pe=$pe,seed=$s/config.ini" || all=0
done; done
[ $all = 1 ]; ok $? "one directory per PE and seed (pe=rope,seed=2), its config.ini holding its seed"
[ "$(head -1 "$d/results.csv")" = "pe,seed,attention,length,acc,exact,loss,ppl,ms_per_1k_tokens,den_le_eps,note,rope_extend,rope_factor,stride,acc_lo,acc_hi,exact_lo,exact_hi,loss_lo,loss_hi,ppl_lo,ppl_hi,targets,sequences,ref_loss,ref_acc" ] &&
    [ "$(wc -l <"$d/results.csv")" = 13 ] && grep -q '^rope,2,softmax,16,[0-9.]*,' "$d/results.csv"
ok $? "results.csv: a seed column, one row per point and length (2 x 3 x 2 = 12)"
[ "$(grep -c '^| \(alibi\|rope\) | softmax | [0-9.]* ± [0-9.]* (3) ' "$d/summary.md")" = 12 ] &&
    grep -q '^| pe | attention | 8 | 16 |$' "$d/summary.md" &&
    grep -q '^## copy: accuracy, 95 % intervals over the seeds$' "$d/summary.md" &&
    grep -q '^## copy: loss, 95 % intervals over the seeds$' "$d/summary.md" &&
    grep -q '^## copy: accuracy by order in the row at the training length 8$' "$d/summary.md"
ok $? "summary.md: each PE once per table (accuracy, loss, exact match, accuracy by order: mean ± std (3); accuracy and loss: mean ± 95 % interval (3))"
grep -q '^| \(alibi\|rope\) | softmax | [0-9.]* ± [0-9.]* (3) \* |' "$d/summary.md" &&
    grep -q '≤ std + best std' "$d/summary.md" &&
    grep -q '^## copy: accuracy compared with the best of each attention kind$' "$d/summary.md"
ok $? "summary.md: a best row marked, the rule stated, the comparison table"
grep -q 'mean ± std (number of seeds)$' "$tmp/out" && grep -q '^rope   softmax .*(3)' "$tmp/out" &&
    grep -q '^\* highest accuracy of its attention kind' "$tmp/out"
ok $? "the printed table: mean ± std (3), marks and their legend"
[ "$(awk 'NF == 4 && $1 != "#"' "$d/plots/copy-acc.dat" | wc -l)" = 4 ] && grep -q 'yerrorbars' "$d/plots/plots.gp"
ok $? "plot data: length, mean, std per PE; error bars in the script"
cp "$d/summary.md" "$tmp/summary.run"; cp "$d/results.csv" "$tmp/results.run"
rm "$d/summary.md" "$d/results.csv"
"$ROPELAB" report "$d" >"$tmp/rep" 2>&1 && cmp -s "$d/summary.md" "$tmp/summary.run" &&
    cmp -s "$d/results.csv" "$tmp/results.run" && grep -q '^rope   softmax .*(3)' "$tmp/rep"
ok $? "ropelab report: the same summary.md, results.csv and printed table"
echo "1..$n"
exit $failed
