#!/bin/sh
# t_eval.sh -- `ropelab eval` end to end on a tiny charlm sweep (RoPE and ALiBi, with
# rope_extend and sliding windows in the run itself): the numbers of the run's own
# results.csv repeated from its run directory and from one checkpoint, both option
# spellings, the default output directories, the per-method tables, --set limited to
# shape-keeping keys (not the forget gate, which adds tensors), a run with the forget gate
# evaluated again, and clear errors (missing or corrupt checkpoint, data that moved,
# learned PE beyond its rows, init_from of another shape before anything trains).
: "${ROPELAB:=./src/ropelab}"
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
ROPELAB_GNUPLOT=none; export ROPELAB_GNUPLOT
. "$(dirname "$0")/lib.sh"
scratch t_eval
cd "$tmp" || exit 99

i=0; while [ $i -lt 300 ]; do echo "line $i of a small text: the quick brown fox jumps over the lazy dog"; i=$((i + 1)); done >text.txt
tiny_ini lm.ini lm "name = charlm" "path = $tmp/text.txt" "length = 16" <<EOF
[experiment]
threads = 1
[train]
steps = 6
batch = 4
[eval]
lengths = 16, 64
batches = 2
stride = 8
rope_extend = none, pi, ntk, yarn
[sweep]
model.pe = rope, alibi
EOF
"$ROPELAB" run lm.ini --out runs -q >/dev/null 2>err; ok $? "a charlm sweep with stride 8 and rope_extend none, pi, ntk, yarn runs"
d=runs/lm
[ "$(grep -c '^rope,' $d/results.csv)" = 8 ] && [ "$(grep -c '^alibi,' $d/results.csv)" = 2 ] &&
    grep -q '^rope,softmax,64,.*,pi,4,8,' $d/results.csv && grep -q '^rope,softmax,16,.*,ntk,1,8,' $d/results.csv &&
    grep -q '^rope,softmax,64,.*,yarn,4,8,' $d/results.csv
ok $? "results.csv: RoPE rows per method and length with factor auto = M/N, ALiBi once, stride 8"
grep -A10 '^## charlm: perplexity by evaluation length$' $d/summary.md >tbl &&
    grep -q '^| pe | attention | rope_extend | 16 | 64 |$' tbl &&
    [ "$(grep -c '^| rope | softmax | \(none\|pi\|ntk\|yarn\) | [0-9.]* ± [0-9.]* | [0-9.]* ± [0-9.]* |$' tbl)" = 4 ] &&
    grep -q '^| alibi | softmax | none | ' tbl && [ "$(grep -c '^| alibi |' tbl)" = 1 ] &&
    ! grep -q 'rope_extend = ' $d/summary.md &&
    grep -q '^Best per length (the lowest perplexity): softmax — 16: [a-z]*/[a-z]* [0-9.]*, 64: [a-z]*/[a-z]* [0-9.]*\.$' $d/summary.md
ok $? "summary.md: one table, a row per RoPE method and ALiBi's once (none); the best per length"
# the ppl figure's legend: the encodings in order (alibi before rope), RoPE's methods in
# theirs, then the training length and the baseline; each method dashed its own way
awk "/set output 'charlm-ppl.svg'/ { on = 1; next } /set output/ { on = 0 } on" $d/plots/plots.gp | grep '^plot NaN with' >fig
[ "$(grep -o 'title "[^"]*"' fig | sed -n 1,6p | tr '\n' '|')" = 'title "alibi none"|title "rope none"|title "rope pi"|title "rope ntk"|title "rope yarn"|title "training length 16"|' ] &&
    grep -q 'title "unigram model [0-9.]*' fig
r1=$?
grep -q 'NaN with linespoints lc rgb .#1f77b4. dt 2 .* title "rope pi"' fig &&
    grep -q 'NaN with linespoints lc rgb .#1f77b4. dt 4 .* title "rope yarn"' fig &&
    grep -q 'NaN with linespoints lc rgb .#ff7f0e. dt 1 .* title "alibi none"' fig
ok $(( r1 + $? )) "the ppl-vs-length plot: one line per point and method in the legend's order, rope blue, alibi orange, a dash per method"

# --- eval of the run repeats its numbers (all but the timing column) ---
"$ROPELAB" eval $d >out 2>err; ok $? "ropelab eval RUN_DIR exits 0"
[ -f $d/eval/results.csv ] && [ -f $d/eval/summary.md ] && [ -f $d/eval/pe=rope/results.csv ] &&
    [ -f $d/eval/config.ini ] && grep -q '^pe=rope evaluated: .*step-6.safetensors (update 6 of 6)' out
ok $? "default output: RUN_DIR/eval with config.ini, results.csv, summary.md, the points"
nots() { awk -F, -v OFS=, '{ $8 = ""; print }' "$1"; }
nots $d/results.csv >a; nots $d/eval/results.csv >b
cmp -s a b; ok $? "the evaluation's results.csv equals the run's (but ms_per_1k_tokens)"
grep -q '^pe  *attention  *rope_extend  *16  *64$' out && grep -q '^rope  *softmax  *yarn  ' out &&
    grep -q '^alibi  *softmax  *none  ' out
ok $? "the table is printed, a row per method"
"$ROPELAB" eval $d -q --lengths=16,64 --stride 8 --rope-extend=none,pi,ntk,yarn >/dev/null 2>err &&
    [ -d $d/eval-2 ] && nots $d/eval-2/results.csv >c && cmp -s a c
ok $? "--opt=value and --opt value; a second evaluation goes to RUN_DIR/eval-2"
"$ROPELAB" eval $d -q --threads 2 --out $tmp/ev-t2 >/dev/null 2>err && nots $tmp/ev-t2/results.csv >c &&
    cmp -s a c && grep -q '^threads = 2$' $tmp/ev-t2/config.ini
ok $? "--threads 2: the same numbers (the run trained with 1 thread)"
# --out naming a training run (the run itself, or one of its points) would overwrite its
# config.ini and results.csv: refused, the run left as it was
cp $d/results.csv a; cp $d/config.ini b; cp $d/pe=rope/results.csv c
for o in $d $d/pe=rope; do
    "$ROPELAB" eval $d -q --lengths 16 --out $o >/dev/null 2>err; r=$?
    [ $r != 0 ] && grep -q "^ropelab: $o holds a training run" err &&
        cmp -s a $d/results.csv && cmp -s b $d/config.ini && cmp -s c $d/pe=rope/results.csv
    ok $? "eval --out $o (a training run): refused (exit $r), the run unchanged"
done

# --- one checkpoint ---
ck="$d/pe=rope/checkpoints/step-6.safetensors"
"$ROPELAB" eval "$ck" -q --rope-extend pi --lengths 64 >/dev/null 2>err; ok $? "ropelab eval CHECKPOINT"
grep '^rope,softmax,64,.*,pi,4,8,' $d/results.csv | cut -d, -f1-7 >a
grep '^rope,softmax,64' eval-lm/results.csv | cut -d, -f1-7 >b
[ -s a ] && cmp -s a b; ok $? "./eval-lm: the checkpoint's config from its metadata, the run's pi row at 64"
"$ROPELAB" eval "$ck" -q --stride 0 --rope-extend none --lengths 64 --out sl >/dev/null &&
    [ "$(cut -d, -f6 sl/results.csv | tail -1)" != "$(grep '^rope,softmax,64,.*,none,1,8,' $d/results.csv | cut -d, -f6)" ]
ok $? "--stride 0 (non-overlapping) gives another loss than the run's stride 8"

# --- --set ---
"$ROPELAB" eval $d -q --out x --set model.rope_base=500 >/dev/null 2>err; ok $? "--set model.rope_base (keeps the shapes)"
grep -q '^rope_base = 500$' x/pe=rope/config.ini; ok $? "the evaluated configuration is written"
"$ROPELAB" eval $d -q --out x --set model.d_model=32 >/dev/null 2>err; r=$?
[ $r = 2 ] && grep -q "model.d_model=32: \[model\] d_model changes the trained tensors (tensor 'embed.weight'" err
ok $? "--set model.d_model: exit 2 naming the key and the tensor"
# the forget gate adds tensors (blocks.{i}.attn.wf): --set may not switch it on or off
"$ROPELAB" eval $d -q --out x --set model.forget_gate=true >/dev/null 2>err; r=$?
[ $r = 2 ] && grep -q "model.forget_gate=true: \[model\] forget_gate changes the trained tensors" err
ok $? "--set model.forget_gate=true on a run without the gate: exit 2 naming the key"
"$ROPELAB" run lm.ini --out runs -q --set experiment.name=fg --set model.forget_gate=true \
    --set model.forget_bias=1 >/dev/null 2>err
ok $? "a charlm sweep (rope, alibi) with the forget gate runs"
nots runs/fg/results.csv >a
"$ROPELAB" eval runs/fg -q --out fg-ev >/dev/null 2>err && nots fg-ev/results.csv >b && cmp -s a b
ok $? "eval of the gated run repeats its results.csv (but ms_per_1k_tokens)"
"$ROPELAB" eval runs/fg -q --out x --set model.forget_gate=false >/dev/null 2>err; r=$?
[ $r = 2 ] && grep -q "model.forget_gate=false: \[model\] forget_gate changes the trained tensors (no tensor 'blocks.0.attn.wf.weight')" err
ok $? "--set model.forget_gate=false on a gated run: exit 2 naming the key and the tensor"
"$ROPELAB" eval $d -q --out x --set train.steps=9 >/dev/null 2>err; r=$?
[ $r = 2 ] && grep -q "train.steps=9: \[train\] steps cannot change in an evaluation" err
ok $? "--set train.steps: exit 2 naming the key"
"$ROPELAB" eval $d -q --out x --set model.rope_bse=5 >/dev/null 2>err; r=$?
[ $r = 2 ] && grep -q "unknown key 'rope_bse' (did you mean 'rope_base'?)" err; ok $? "a misspelt key"

# --- errors ---
cp -r $d bad
head -c 3000 "$ck" >"bad/pe=rope/checkpoints/step-6.safetensors"
"$ROPELAB" eval bad -q --out y >/dev/null 2>err; r=$?
[ $r = 1 ] && grep -q 'step-6.safetensors: header length .* beyond the end of the file' err
ok $? "a corrupt checkpoint: exit 1 naming the file"
rm bad/pe=rope/checkpoints/*
"$ROPELAB" eval bad -q --out y >/dev/null 2>err; r=$?
[ $r = 1 ] && grep -q 'pe=rope/checkpoints: no checkpoint' err; ok $? "no checkpoint: exit 1"
"$ROPELAB" eval "$tmp/none.safetensors" >/dev/null 2>err; [ $? = 1 ] && grep -q 'none.safetensors: No such file' err
ok $? "a missing checkpoint file: exit 1"
mv text.txt moved.txt
"$ROPELAB" eval $d -q --out y >/dev/null 2>err; r=$?
[ $r = 1 ] && grep -q "\[task\] path: the data file '$tmp/text.txt' is not there.*--set task.path=FILE" err
ok $? "data that moved: exit 1 saying how to give its place"
"$ROPELAB" eval $d -q --out y --set task.path="$tmp/moved.txt" >/dev/null 2>err; ok $? "--set task.path: the moved data"
mv moved.txt text.txt
"$ROPELAB" run lm.ini --out runs -q --set experiment.name=ln --set model.pe=learned --set eval.stride=0 >/dev/null 2>&1 &&
    "$ROPELAB" eval runs/ln -q --lengths 16,32 >out 2>&1 && grep -q '^learned,softmax,32,n/a,.*,learned PE has max_len rows,none,1,0,' runs/ln/eval/results.csv &&
    grep -q 'n/a (learned PE has max_len rows)' out
ok $? "learned PE beyond its rows: n/a with the reason"

# --- an interrupted run: its finished points are evaluated, the others skipped ---
"$ROPELAB" run lm.ini --out runs -q --set experiment.name=half --stop-after 8 >/dev/null 2>&1
"$ROPELAB" eval runs/half --out hv >out 2>&1; r=$?
[ $r = 0 ] && grep -q 'pe=alibi: not finished in the run (no results.csv): skipped' out &&
    [ -f hv/pe=rope/results.csv ] && [ ! -e hv/pe=alibi/results.csv ] &&
    grep -A4 '^## Not finished' hv/summary.md | grep -q 'pe=alibi'
ok $? "an interrupted run: the finished point evaluated, the other skipped and listed"
if command -v gnuplot >/dev/null 2>&1; then
    env -u ROPELAB_GNUPLOT "$ROPELAB" eval runs/half --out hvp >out 2>&1 && ! grep -q 'warning' out &&
        [ -s hvp/plots/charlm-ppl.svg ] && [ -s hvp/plots/charlm-position.svg ] && [ ! -e hvp/plots/charlm-loss.svg ] &&
        grep -q 'charlm-position.svg` (loss by position)\.$' hvp/summary.md
    ok $? "an evaluation's plots: no training plots, the others made without warnings"
fi
"$ROPELAB" run lm.ini --out runs -q --set experiment.name=none0 --stop-after 3 >/dev/null 2>&1
"$ROPELAB" eval runs/none0 --out hv0 >/dev/null 2>err; r=$?
[ $r = 1 ] && grep -q 'no point of the run has finished' err; ok $? "no finished point: exit 1"

# --- init_from before anything trains ---
"$ROPELAB" run lm.ini --out runs -q --set experiment.name=ft --set "train.init_from=$ck" --set model.d_model=32 >/dev/null 2>err; r=$?
[ $r = 1 ] && grep -q "\[train\] init_from: .*tensor 'embed.weight' has shape \[256, 16\], the model expects \[256, 32\]" err &&
    [ ! -e runs/ft/pe=rope/metrics.jsonl ]
ok $? "init_from of another shape: exit 1 naming the tensor, nothing trained"
"$ROPELAB" run lm.ini --out runs -q --set experiment.name=ft --set "train.init_from=$ck" --set model.pe=rope \
    --set task.length=32 --set model.rope_scale=2 --set eval.rope_extend=none >/dev/null 2>err
ok $? "fine-tuning at 2N with rope_scale = 2 from the step-6 checkpoint"
"$ROPELAB" run lm.ini --out runs -q --set experiment.name=ft2 --set model.rope_scale=2 --set model.pe=rope >/dev/null 2>err; r=$?
[ $r = 2 ] && grep -q '\[eval\] rope_extend: the model is trained with rope_scale = 2' err
ok $? "a point trained with rope_scale refuses rope_extend != none before training"

echo "1..$n"
exit $failed
