#!/bin/sh
# t_kill.sh -- exact resume under SIGKILL: a small sweep (2 points x 20 updates, a
# checkpoint every 2 updates, an evaluation every 5) is killed with SIGKILL at random
# moments -- during updates, checkpoint writes, evaluations, the results files and the
# report -- up to four times per trial, and continued with --resume until it finishes.
# Every file of the run (checkpoints, metrics.jsonl, eval.jsonl, results.csv, config.ini,
# the plot data) must equal an uninterrupted run's byte for byte, timing fields aside
# (tokens_per_s and ms_* in the .jsonl files, ms_per_1k_tokens in the .csv files;
# plots/throughput.dat and summary.md, which hold timings, are not compared), and no
# temporary file may be left: 10 of 10 trials.
: "${ROPELAB:=./src/ropelab}"
ROPELAB_GNUPLOT=none; export ROPELAB_GNUPLOT
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
. "$(dirname "$0")/lib.sh"
scratch t_kill

tiny_ini "$tmp/k.ini" k <<END_INI
[experiment]
threads = 1
[train]
steps = 20
batch = 4
log_every = 1
checkpoint_every = 2
checkpoint_initial = true
[eval]
lengths = 8, 16
batches = 2
every = 5
[sweep]
model.pe = rope, alibi
END_INI

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# normalise DIR OUT: the list of compared files, then each file with its timing fields
# removed (binary files by checksum)
normalise() {
    (cd "$1" && find . -type f ! -name summary.md ! -name throughput.dat | LC_ALL=C sort) >"$2.list"
    cp "$2.list" "$2"
    while read -r f; do
        echo "== $f" >>"$2"
        case "$f" in
        *.jsonl) sed -E 's/, "(tokens_per_s|ms_[a-z0-9_]*)": [^,}]*//g' "$1/$f" >>"$2" ;;
        *.csv) awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ms_per_1k_tokens") c = i }
                        { if (c) $c = ""; print }' OFS=, "$1/$f" >>"$2" ;;
        *) cksum <"$1/$f" >>"$2" ;;
        esac
    done <"$2.list"
}

# rl DIR ARGS...: ropelab run in DIR with --out runs (config.ini records out: the same
# relative path in every run)
rl() { (mkdir -p "$1" && cd "$1" && shift && exec "$ROPELAB" run ../k.ini --out runs -q "$@"); }
case "$ROPELAB" in /*) ;; *) ROPELAB="$(pwd)/$ROPELAB" ;; esac

t0=$(now_ms)
rl "$tmp/ref" >/dev/null 2>"$tmp/err"
ok $? "the uninterrupted run finishes"
ms=$(($(now_ms) - t0))
[ "$ms" -ge 20 ] || ms=20
normalise "$tmp/ref/runs/k" "$tmp/ref.norm"
[ "$(grep -c 'safetensors$' "$tmp/ref.norm.list")" = 22 ]
ok $? "the reference run holds 2 x 11 checkpoints (it took $ms ms)"

# four random delays in [0, 1.2 x the run's time), seeded by the trial
delays() { awk -v s="$1" -v ms="$ms" 'BEGIN { srand(s); for (i = 0; i < 4; i++) printf "%.3f\n", rand() * 1.2 * ms / 1000 }'; }

good=0; kills=0
for trial in 1 2 3 4 5 6 7 8 9 10; do
    d="$tmp/t$trial"
    flag=
    for delay in $(delays "$trial"); do
        mkdir -p "$d"
        # one subshell that becomes ropelab: $! is the process SIGKILL must reach
        (cd "$d" && exec "$ROPELAB" run ../k.ini --out runs -q $flag) >/dev/null 2>"$tmp/err.$trial" &
        pid=$!
        sleep "$delay"
        kill -KILL $pid 2>/dev/null && kills=$((kills + 1))
        wait $pid 2>/dev/null
        flag=--resume
    done
    rl "$d" --resume >"$tmp/out.$trial" 2>"$tmp/err.$trial"
    rc=$?
    normalise "$d/runs/k" "$tmp/t$trial.norm"
    if [ $rc = 0 ] && cmp -s "$tmp/ref.norm" "$tmp/t$trial.norm"; then
        good=$((good + 1))
    else
        echo "# trial $trial (delays $(delays "$trial" | tr '\n' ' ')): exit $rc"
        sed 's/^/#   /' "$tmp/err.$trial" | head -5
        diff "$tmp/ref.norm" "$tmp/t$trial.norm" | head -10 | sed 's/^/#   /'
    fi
done
[ $good = 10 ]
ok $? "after random SIGKILLs ($kills in all) and --resume, every file equals the uninterrupted run's in $good of 10 trials"

# the temporary files of writes killed half-way are removed on resume
d="$tmp/t1/runs/k/pe=rope"
echo partial >"$d/checkpoints/step-30.safetensors.tmp.12345"
echo partial >"$d/results.csv.tmp"
rm -f "$d/results.csv"
(cd "$tmp/t1" && "$ROPELAB" run ../k.ini --out runs --resume) >"$tmp/out" 2>"$tmp/err"
[ $? = 0 ] && ! ls "$d/checkpoints" | grep -q tmp && [ ! -f "$d/results.csv.tmp" ] &&
    grep -q 'removed 2 temporary files' "$tmp/out"
ok $? "resume removes the temporary files of interrupted writes, saying so"

# a damaged latest checkpoint: resume names it and passes over it to the newest intact one
d="$tmp/dmg/runs/k/pe=rope"
rl "$tmp/dmg" --stop-after 15 >/dev/null 2>&1 # its checkpoint of update 15 is the latest
size=$(wc -c <"$d/checkpoints/step-15.safetensors")
printf '\001' | dd of="$d/checkpoints/step-15.safetensors" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
rl "$tmp/dmg" --resume >"$tmp/out" 2>"$tmp/err"
rc=$?
grep -q 'step-15.safetensors: tensor .* checksum mismatch' "$tmp/out" &&
    grep -q 'trying .*step-14.safetensors' "$tmp/out"
ok $? "a corrupt latest checkpoint is named and passed over for the previous one"
[ $rc = 0 ] || sed 's/^/# /' "$tmp/err"
normalise "$tmp/dmg/runs/k" "$tmp/dmg.norm"
[ $rc = 0 ] && cmp -s "$tmp/ref.norm" "$tmp/dmg.norm"
ok $? "... and the run still ends equal to the uninterrupted one"
echo "1..$n"
exit $failed
