#!/bin/sh
# t_mpi_sweep.sh -- `mpirun -np 2 ropelab run` shares a sweep's points over the ranks (TAP):
# on loopback, a 4-point sweep equals the one-process run (every checkpoint and config.ini
# byte for byte; metrics, evaluations and results.csv less their timing fields); both
# ranks trained points; an interrupted run leaves no combined files and --resume finishes
# it with the uninterrupted run's weights; a configuration error is printed once; a rank
# whose training diverges ends the whole job within seconds with its message and no
# combined files.  Skipped when ropelab is built without MPI or mpirun is missing.
: "${ROPELAB:=./src/ropelab}"
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
. "$(dirname "$0")/lib.sh"
mpi_setup

scratch t_mpi_sweep

tiny_ini "$tmp/tiny.ini" tiny <<EOF
[experiment]
threads = 1
[train]
steps = 12
batch = 4
log_every = 2
checkpoint_every = 4
[eval]
lengths = 8, 16
batches = 2
[sweep]
model.pe = learned, rope
model.attention = softmax, linear
EOF

# the same relative --out in two directories, so config.ini (out = runs) agrees
mkdir "$tmp/one" "$tmp/two" "$tmp/res"
(cd "$tmp/one" && "$ROPELAB" run ../tiny.ini --out runs >out 2>err)
ok $? "one process: the 4-point sweep runs"
(cd "$tmp/two" && mpi2 run ../tiny.ini --out runs >out 2>err)
ok $? "mpirun -np 2: the 4-point sweep runs"
grep -q 'done in .*\[rank 0\]$' "$tmp/two/out" && grep -q 'done in .*\[rank 1\]$' "$tmp/two/out"
ok $? "both ranks trained points"

# timing fields out: metrics.jsonl's tokens_per_s and ms_*, ms_per_1k_tokens anywhere
untimed() {
    case $1 in
    *.jsonl) sed -e 's/"tokens_per_s": [^,}]*//' -e 's/"ms_[a-z0-9_]*": [^,}]*//g' "$1" ;;
    *.csv) awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ms_per_1k_tokens") c = i }
                    { s = ""; for (i = 1; i <= NF; i++) if (i != c) s = s $i ","; print s }' "$1" ;;
    esac
}
a="$tmp/one/runs/tiny" b="$tmp/two/runs/tiny"
files=$(cd "$a" && find . -path ./plots -prune -o -type f -print | LC_ALL=C sort)
[ "$files" = "$(cd "$b" && find . -path ./plots -prune -o -type f -print | LC_ALL=C sort)" ]
ok $? "the same files in both runs"
bad=""
for f in $files; do
    case $f in
    *.safetensors | */config.ini | ./config.ini) cmp -s "$a/$f" "$b/$f" || bad="$bad $f" ;;
    *.jsonl | *.csv) [ "$(untimed "$a/$f")" = "$(untimed "$b/$f")" ] || bad="$bad $f" ;;
    esac
done
[ -z "$bad" ]; ok $? "checkpoints and config.ini byte for byte, metrics/eval/results.csv less timing equal"
[ -n "$bad" ] && echo "# differ:$bad"
nck=$(echo "$files" | grep -c 'safetensors$')
[ "$nck" = 12 ]; ok $? "12 checkpoints compared (4 points x 3)"
[ -s "$b/summary.md" ] && [ "$(wc -l <"$b/results.csv")" = 9 ]
ok $? "rank 0 wrote the combined summary.md and results.csv (8 rows)"

# --- interrupted (each rank stops after 18 of its updates), then resumed ---
(cd "$tmp/res" && mpi2 run ../tiny.ini --out runs --stop-after 18 >out 2>err)
r=$?
[ $r = 0 ] && grep -q 'stopped after 18 updates' "$tmp/res/out" && [ ! -e "$tmp/res/runs/tiny/results.csv" ] &&
    [ ! -e "$tmp/res/runs/tiny/summary.md" ]
ok $? "--stop-after 18 under MPI: stopped, no combined results.csv or summary.md"
(cd "$tmp/res" && mpi2 run ../tiny.ini --out runs --resume >out 2>err)
ok $? "--resume under MPI completes the sweep"
grep -q 'finished before: skipped' "$tmp/res/out" && grep -q '(resumed)' "$tmp/res/out"
ok $? "finished points skipped, interrupted ones resumed"
# tensor bytes (the header holds the generator state, compared by t_train)
tensors() { h=$(od -An -t u8 -N 8 "$1" | tr -d ' '); tail -c +$((h + 9)) "$1" | cksum; }
bad=""
for f in $(echo "$files" | grep 'step-12.safetensors$'); do
    [ "$(tensors "$a/$f")" = "$(tensors "$tmp/res/runs/tiny/$f")" ] || bad="$bad $f"
done
[ -z "$bad" ]; ok $? "resumed points: final weights and moments equal the one-process run's"
[ "$(untimed "$a/results.csv")" = "$(untimed "$tmp/res/runs/tiny/results.csv")" ]
ok $? "resumed run: the combined results.csv less timing equals the one-process run's"

# --- a configuration error: printed once, exit status 2 ---
(cd "$tmp/two" && mpi2 run ../tiny.ini --out bad --set model.heads=3 >out 2>err)
r=$?
[ $r != 0 ] && [ "$(grep -c 'ropelab: .*heads' "$tmp/two/err")" = 1 ]
ok $? "a configuration error under MPI: non-zero exit, the message printed once"

# --- more ranks x threads than cores: a warning (one update per rank is enough) ---
nc=$(getconf _NPROCESSORS_ONLN)
(cd "$tmp/two" && mpi2 run ../tiny.ini --out warn -q --threads "$nc" --stop-after 1 >out 2>err)
r=$?
[ $r = 0 ] && [ "$(grep -c "warning: 2 ranks x $nc threads on this node exceed its $nc cores" "$tmp/two/err")" = 1 ]
ok $? "2 ranks x $nc threads on $nc cores: one warning"

# --- a rank that fails ends the job ---
tiny_ini "$tmp/fail.ini" fail <<EOF
[experiment]
threads = 1
[train]
steps = 1000000
batch = 4
[sweep]
train.lr = 0.001, 1e30
EOF
t0=$(date +%s)
(cd "$tmp/two" && timeout 120 env "$mpienv" "$MPIRUN" -np 2 --oversubscribe --bind-to none "$ROPELAB" run ../fail.ini \
    --out runs -q </dev/null >fout 2>ferr)
r=$?
dt=$(($(date +%s) - t0))
[ $r != 0 ] && [ $r != 124 ] && [ $dt -le 30 ]
ok $? "a diverging rank ends the job (exit $r after ${dt}s; the other rank had 10^6 updates to go)"
grep -q 'ropelab: rank 1 of 2: .*diverged.*(sweep point lr=1e30)' "$tmp/two/ferr"
ok $? "its message names the rank, the failure and the point"
[ ! -e "$tmp/two/runs/fail/results.csv" ] && [ ! -e "$tmp/two/runs/fail/summary.md" ]
ok $? "no combined results.csv or summary.md"

echo "1..$n"
exit $failed
