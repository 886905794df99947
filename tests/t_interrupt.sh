#!/bin/sh
# t_interrupt.sh -- clean stops: a small sweep (2 points x 24 updates, no scheduled
# checkpoint but the last, a record every update) is stopped by SIGINT, SIGTERM or
# --stop-after at random updates (or in its final evaluation), with 1 and 2 threads, and continued with --resume until
# it finishes.  Each stop must leave a checkpoint of the last completed update (the last
# record of metrics.jsonl, no update lost) and say so in one line with the command that
# continues; the finished run must equal an uninterrupted one with the same thread count,
# file by file (timing fields aside, as in t_kill.sh), hold each metrics record exactly
# once and no checkpoint the schedule did not ask for.  Two signals in a row end the
# process at once, and the run still finishes equal after --resume.
: "${ROPELAB:=./src/ropelab}"
ROPELAB_GNUPLOT=none; export ROPELAB_GNUPLOT
OMP_DYNAMIC=false; export OMP_DYNAMIC
. "$(dirname "$0")/lib.sh"
scratch t_interrupt
case "$ROPELAB" in /*) ;; *) ROPELAB="$(pwd)/$ROPELAB" ;; esac

tiny_ini "$tmp/k.ini" k <<END_INI
[train]
steps = 24
batch = 32
log_every = 1
[eval]
lengths = 8, 16
batches = 24
[sweep]
model.pe = rope, alibi
END_INI

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# normalise DIR OUT: the compared files, each with its timing fields removed (binary
# files by checksum); summary.md and the plot data's throughput hold timings
normalise() {
    (cd "$1" && find . -type f ! -name summary.md ! -name throughput.dat ! -name .lock | LC_ALL=C sort) >"$2.list"
    cp "$2.list" "$2"
    while read -r f; do
        echo "== $f" >>"$2"
        case "$f" in
        *.jsonl) sed -E 's/, "(tokens_per_s|ms_[a-z0-9_]*|threads)": [^,}]*//g' "$1/$f" >>"$2" ;;
        *.csv) awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ms_per_1k_tokens") c = i }
                        { if (c) $c = ""; print }' OFS=, "$1/$f" >>"$2" ;;
        *) cksum <"$1/$f" >>"$2" ;;
        esac
    done <"$2.list"
}

# the run in DIR with T threads and more arguments, in the background: $! is ropelab
start() { d=$1 t=$2; shift 2; mkdir -p "$d"; (cd "$d" && exec "$ROPELAB" run ../k.ini --out runs -q --threads "$t" "$@") >"$d/out" 2>"$d/err" & }

for t in 1 2; do
    t0=$(now_ms)
    start "$tmp/ref$t" $t; wait $!
    ok $? "the uninterrupted run with $t thread(s) finishes"
    ms=$(($(now_ms) - t0))
    normalise "$tmp/ref$t/runs/k" "$tmp/ref$t.norm"
    [ "$(grep -c 'safetensors$' "$tmp/ref$t.norm.list")" = 2 ]
    ok $? "its checkpoints: the last update's of each point (it took $ms ms)"
    eval "ms$t=$ms"
done

# check_stop DIR SIG RC: a stop by SIG (INT, TERM, or "after" for --stop-after) said where
# its checkpoint is; that checkpoint is the last update recorded in the point's metrics
check_stop() {
    line=$(grep '^\(interrupted\|stopped\)' "$1/out")
    case "$2" in
    after) [ "$3" = 0 ] || return 1 ;;
    INT) [ "$3" = 130 ] || return 1 ;;
    TERM) [ "$3" = 143 ] || return 1 ;;
    esac
    echo "$line" | grep -q 'continue with: ropelab run .* --resume' || return 1
    ck=$(echo "$line" | sed -n 's/.* saved in \([^;]*\);.*/\1/p')
    evl=$(echo "$line" | sed -n 's/.* in the final evaluation of \([^ ,]*\), whose training is complete (\(.*\));.*/\2/p')
    case "$line" in
    *"before the first update"* | *"before pe="*) return 0 ;;
    *"in the final evaluation"*) finals=$((finals + 1)); [ -f "$1/$evl" ] || [ -f "$evl" ] ; return ;;
    esac
    [ -n "$ck" ] || return 1
    k=$(echo "$ck" | sed 's/.*step-\([0-9]*\)\.safetensors$/\1/')
    p=$(echo "$ck" | sed 's|.*runs/k/\(pe=[a-z]*\)/checkpoints/.*|\1|')
    last=$(tail -1 "$1/runs/k/$p/metrics.jsonl" | sed 's/^{"step": \([0-9]*\),.*/\1/')
    [ -f "$1/$ck" ] && [ "$k" = "$last" ] && mids=$((mids + 1))
}

# wait_for DIR U: until update U of the run (1-24 the first point, 25-48 the second, above:
# the second's last, its evaluation running) is recorded -- and at least one more update
# than when it started (a resumed run's records are there before it installed its signal
# handlers) -- or the run ends
records() { cat "$1"/runs/k/pe=*/metrics.jsonl 2>/dev/null | wc -l; }
wait_for() {
    u=$2 i=0 r0=$(records "$1")
    [ "$u" -gt 48 ] && u=48
    [ "$u" -gt "$r0" ] || u=$((r0 + 1))
    while [ "$(records "$1")" -lt "$u" ] && [ $i -lt 3000 ] && kill -0 $pid 2>/dev/null; do
        sleep 0.005; i=$((i + 1))
    done
}

good=0 said=0 stops=0 mids=0 finals=0
for trial in 1 2 3 4 5 6 7 8 9 10; do
    t=$((trial % 3 == 0 ? 2 : 1)) d="$tmp/t$trial" flag=
    for round in 1 2 3; do
        set -- $(awk -v s="$trial$round" 'BEGIN { srand(s); printf "%d %d %d\n", 1 + rand() * 52, rand() * 3, 1 + rand() * 60 }')
        case $2 in 0) sig=INT ;; 1) sig=TERM ;; *) sig=after ;; esac
        if [ $sig = after ]; then
            start "$d" $t --stop-after "$3" $flag; wait $!; rc=$?
        else
            start "$d" $t $flag; pid=$!
            wait_for "$d" "$1"; kill -$sig $pid 2>/dev/null; wait $pid; rc=$?
        fi
        flag=--resume
        if [ $rc = 0 ] && ! grep -q '^stopped' "$d/out"; then break; fi # finished first
        stops=$((stops + 1))
        if check_stop "$d" $sig $rc; then said=$((said + 1)); else
            echo "# trial $trial round $round: SIG$sig at update $1: exit $rc"; sed 's/^/#   /' "$d/out" "$d/err" | head -5
        fi
    done
    start "$d" $t --resume; wait $!; rc=$?
    normalise "$d/runs/k" "$d.norm"
    steps=$(for p in rope alibi; do sed 's/^{"step": \([0-9]*\),.*/\1/' "$d/runs/k/pe=$p/metrics.jsonl"; done | tr '\n' ' ')
    want=$(for p in rope alibi; do seq 1 24; done | tr '\n' ' ')
    if [ $rc = 0 ] && cmp -s "$tmp/ref$t.norm" "$d.norm" && [ "$steps" = "$want" ]; then
        good=$((good + 1))
    else
        echo "# trial $trial ($t threads): exit $rc"
        sed 's/^/#   /' "$d/err" | head -5
        diff "$tmp/ref$t.norm" "$d.norm" | head -10 | sed 's/^/#   /'
    fi
done
# how many rounds stop before their run ends depends on the machine's load (a slow run
# is stopped more often): ask for some of each kind, and that every stop said where
[ $stops -ge 5 ] && [ $mids -ge 1 ] && [ $finals -ge 1 ] && [ $said = $stops ]
ok $? "each of $stops stops ($mids mid-training, $finals in the final evaluation) said where its checkpoint is; it holds the last recorded update"
[ $good = 10 ]
ok $? "resumed to the end, every file equals the uninterrupted run's and every record is there once: $good of 10 trials (3 with 2 threads)"

# two signals in a row (of two kinds: two pending SIGINTs would be one): the second ends
# the process at once, by its default action (no checkpoint, no line)
d="$tmp/twice"
start "$d" 1; pid=$!
for i in $(seq 1 500); do # until the first point has trained 5 updates
    [ "$(cat "$d/runs/k/pe=rope/metrics.jsonl" 2>/dev/null | wc -l)" -ge 5 ] && break
    sleep 0.01
done
kill -INT $pid; kill -TERM $pid; wait $pid; rc=$?
{ [ $rc = 130 ] || [ $rc = 143 ]; } && ! grep -q '^interrupted' "$d/out"
ok $? "SIGINT, then SIGTERM before the update ends: the run ends at once (exit $rc, no stop line)"
start "$d" 1 --resume; wait $!; rc=$?
normalise "$d/runs/k" "$d.norm"
[ $rc = 0 ] && cmp -s "$tmp/ref1.norm" "$d.norm"
ok $? "... and --resume still ends equal to the uninterrupted run"
# SIGKILL cannot be caught: the safety checkpoints (every checkpoint_minutes of training,
# here 30 ms) keep the work of a killed run, and are gone when it finishes; one point of
# 300 updates, killed after 20 of them
one="--set model.pe=rope --set train.steps=300"
start "$tmp/ref-one" 1 $one; wait $!
normalise "$tmp/ref-one/runs/k" "$tmp/ref-one.norm"
d="$tmp/kill"
start "$d" 1 $one --set train.checkpoint_minutes=0.0005; pid=$!
i=0
# after 20 updates and the first safety checkpoint (30 ms of training: on a fast machine
# more than 20 updates, and killing at 20 then found none)
while { [ "$(cat "$d/runs/k/metrics.jsonl" 2>/dev/null | wc -l)" -lt 20 ] ||
    ! ls "$d/runs/k/checkpoints" 2>/dev/null | grep -q '^step-[0-9]*\.safetensors$'; } &&
    [ $i -lt 3000 ]; do
    sleep 0.005; i=$((i + 1))
done
kill -KILL $pid; { wait $pid; } 2>/dev/null
ck=$(ls "$d/runs/k/checkpoints" | sed -n 's/^step-\([0-9]*\)\.safetensors$/\1/p')
[ -n "$ck" ] && [ "$(echo "$ck" | wc -l)" = 1 ] && [ "$ck" -gt 0 ] && [ "$ck" -lt 300 ]
ok $? "killed at update $(wc -l <"$d/runs/k/metrics.jsonl") with checkpoint_minutes = 0.0005: its newest safety checkpoint alone is kept (update $ck)"
start "$d" 1 $one --resume; wait $!; rc=$?
normalise "$d/runs/k" "$d.norm"
[ $rc = 0 ] && cmp -s "$tmp/ref-one.norm" "$d.norm" && [ "$(ls "$d/runs/k/checkpoints")" = step-300.safetensors ]
ok $? "... resumed from it (checkpoint_minutes may change), it ends equal to the uninterrupted run"
echo "1..$n"
exit $failed
