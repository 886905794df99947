#!/bin/sh
# t_mpi_dp.sh -- train.data_parallel = true under `mpirun -np 2` (TAP), on loopback: the
# per-update loss of 50 updates (batch 8 in 2 micro-batches, so each rank takes 4 rows)
# follows the one-process run within 1e-5 relative and the final weights within 1e-4;
# two runs on 2 ranks are bitwise equal; only rank 0 writes (the run directory holds
# exactly a one-process run's files); an interrupted run resumed under MPI ends with the
# uninterrupted run's bits; 3 ranks (where the ring sum's order shows) follow the
# one-process loss too; a batch the ranks do not divide is refused before training,
# and train.data_parallel cannot be swept.  Skipped without MPI or mpirun.
: "${ROPELAB:=./src/ropelab}"
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
. "$(dirname "$0")/lib.sh"
mpi_setup

scratch t_mpi_dp

tiny_ini "$tmp/dp.ini" dp <<EOF
[experiment]
threads = 1
[train]
steps = 50
batch = 8
accumulate = 2
lr = 3e-3
log_every = 1
checkpoint_every = 25
data_parallel = true
[eval]
batches = 2
EOF

mkdir "$tmp/one" "$tmp/two" "$tmp/again" "$tmp/res"
(cd "$tmp/one" && "$ROPELAB" run ../dp.ini --out runs -q >out 2>err)
ok $? "one process (data_parallel has one rank): 50 updates"
(cd "$tmp/two" && mpi2 run ../dp.ini --out runs -q >out 2>err)
ok $? "mpirun -np 2 with data_parallel = true: 50 updates"
(cd "$tmp/again" && mpi2 run ../dp.ini --out runs -q >out 2>err)
ok $? "mpirun -np 2, the same run again"
a="$tmp/one/runs/dp" b="$tmp/two/runs/dp" c="$tmp/again/runs/dp"

# per-update loss: 50 records each, max relative difference
loss() { sed -n 's/.*"loss": \([^,]*\),.*/\1/p' "$1"; }
# loss_diff A B: the largest relative difference of the losses of two metrics.jsonl files,
# or "records N" when they do not hold 50 records each
loss_diff() {
    loss "$1" >"$tmp/la"; loss "$2" >"$tmp/lb"
    paste "$tmp/la" "$tmp/lb" | awk '{ r = ($1 - $2) / $1; if (r < 0) r = -r; if (r > m) m = r; k++ }
        END { if (k != 50) print "records " k; else printf "%.3g\n", m }'
}
# within TOL D: D is a number (not a message about the records) and at most TOL
within() { awk -v t="$1" -v d="$2" 'BEGIN { exit !(d ~ /^[0-9.e+-]+$/ && d + 0 <= t + 0) }'; }
d=$(loss_diff "$a/metrics.jsonl" "$b/metrics.jsonl")
echo "# per-update loss, max relative difference 2 ranks vs 1: $d"
within 1e-5 "$d"
ok $? "per-update loss within 1e-5 relative of the one-process run over 50 updates"

# the weights: the first tensors of the data, up to the first AdamW moment
header() { h=$(od -An -t u8 -N 8 "$1" | tr -d ' '); head -c $((h + 8)) "$1" | tail -c "$h"; }
weights() {
    h=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
    nb=$(header "$1" | tr '}' '\n' | grep '"optim\.m\.' | sed 's/.*"data_offsets": *\[\([0-9]*\).*/\1/' |
        sort -n | head -1)
    tail -c +$((h + 9)) "$1" | head -c "$nb" | od -An -v -t f4 | tr -s ' ' '\n' | grep -v '^$'
}
weights "$a/checkpoints/step-50.safetensors" >"$tmp/wa"
weights "$b/checkpoints/step-50.safetensors" >"$tmp/wb"
d=$(paste "$tmp/wa" "$tmp/wb" | awk '{ e = $1 - $2; if (e < 0) e = -e; if (e > m) m = e; k++ }
    END { if (k < 1000) print "weights " k; else printf "%.3g\n", m }')
echo "# final weights ($(wc -l <"$tmp/wa") floats), max absolute difference: $d"
within 1e-4 "$d"
ok $? "final weights within 1e-4 of the one-process run's"

cmp -s "$b/checkpoints/step-50.safetensors" "$c/checkpoints/step-50.safetensors" &&
    cmp -s "$b/checkpoints/step-25.safetensors" "$c/checkpoints/step-25.safetensors" &&
    [ "$(loss "$b/metrics.jsonl")" = "$(loss "$c/metrics.jsonl")" ]
ok $? "two runs on 2 ranks: checkpoints and losses bitwise equal"
[ "$(cd "$a" && find . | LC_ALL=C sort)" = "$(cd "$b" && find . | LC_ALL=C sort)" ] &&
    [ "$(wc -l <"$b/metrics.jsonl")" = 50 ] && [ "$(wc -l <"$b/eval.jsonl")" = 1 ]
ok $? "only rank 0 writes: the files of a one-process run, each record once"

# interrupted after 30 updates (checkpoint 25), resumed under MPI
(cd "$tmp/res" && mpi2 run ../dp.ini --out runs -q --stop-after 30 >out 2>err) &&
    (cd "$tmp/res" && mpi2 run ../dp.ini --out runs -q --resume >out 2>err)
ok $? "interrupted after 30 updates, resumed from the checkpoint of update 25"
tensors() { h=$(od -An -t u8 -N 8 "$1" | tr -d ' '); tail -c +$((h + 9)) "$1" | cksum; }
[ "$(tensors "$b/checkpoints/step-50.safetensors")" = "$(tensors "$tmp/res/runs/dp/checkpoints/step-50.safetensors")" ] &&
    [ "$(loss "$b/metrics.jsonl")" = "$(loss "$tmp/res/runs/dp/metrics.jsonl")" ]
ok $? "resumed: final weights, moments and every loss bitwise equal the uninterrupted 2-rank run's"

# 3 ranks: the ring sum's blocks then start at different ranks (2 ranks hide its order)
mkdir "$tmp/one3" "$tmp/three"
(cd "$tmp/one3" && "$ROPELAB" run ../dp.ini --out runs -q --set train.batch=24 >out 2>err) &&
    (cd "$tmp/three" && env "$mpienv" "$MPIRUN" -np 3 --oversubscribe --bind-to none "$ROPELAB" run ../dp.ini \
        --out runs -q --set train.batch=24 </dev/null >out 2>err)
ok $? "batch 24 on one process and on 3 ranks (4 rows per micro-batch)"
d=$(loss_diff "$tmp/one3/runs/dp/metrics.jsonl" "$tmp/three/runs/dp/metrics.jsonl")
echo "# 3 ranks: per-update loss, max relative difference: $d"
within 1e-5 "$d"
ok $? "3 ranks: per-update loss within 1e-5 relative of the one-process run"

(cd "$tmp/two" && mpi2 run ../dp.ini --out bad -q --set train.batch=6 >out 2>err)
r=$?
[ $r = 2 ] && [ "$(grep -c 'batch = 6 is not divisible by 2 ranks x accumulate = 2' "$tmp/two/err")" = 1 ] &&
    [ ! -e "$tmp/two/bad" ]
ok $? "batch 6 on 2 ranks x accumulate 2: exit 2 before training, the message once (got $r)"
"$ROPELAB" run "$tmp/dp.ini" --out "$tmp/bad" --set sweep.train.data_parallel=false,true >/dev/null 2>"$tmp/err"
r=$?
[ $r = 2 ] && grep -q 'train.data_parallel: cannot be swept' "$tmp/err"
ok $? "sweeping train.data_parallel is refused (exit $r)"

echo "1..$n"
exit $failed
