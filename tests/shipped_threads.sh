#!/bin/sh
# shipped_threads.sh -- every shipped experiment gives the same numbers at 1 and at 16
# threads (TAP; run by .ci/run, not by `make check`, for its ~4 minutes on 2 cores).
#
# Usage: tests/shipped_threads.sh [ROPELAB [THREADS]]   (default ./src/ropelab, 16)
#
# Each experiments/*.ini runs 3 updates and one evaluation batch per length, with the
# sweep it ships (the fine-tuning ones last, from the 1-thread passkey run's RoPE softmax
# checkpoint), once on 1 thread and once on THREADS threads -- past the cores too:
# ROPELAB_OVERSUBSCRIBE=1 keeps the count, OMP_DYNAMIC=false keeps the load governor
# off.  The two run directories must hold the same files with the same contents, apart
# from what states the time or the thread count: every checkpoint's tensors (parameters
# and AdamW moments; the header names the run's directory and thread count) byte for byte,
# the metrics and evaluation records and the result tables without their timing fields,
# config.ini without `out` and `threads`.  t_threads.c checks the same on every attention
# kind x encoding family inside `make check`; this covers the ablations the shipped files
# sweep (where RoPE goes, the denominators, Shen's and the exp feature maps, xPos, the
# context-extension rules, the tasks' own heads and lengths).
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
ROPELAB=${1:-./src/ropelab}
T=${2:-16}
. "$top_srcdir/tests/lib.sh"
scratch shipped_threads
case "$ROPELAB" in /*) ;; *) ROPELAB="$(pwd)/$ROPELAB" ;; esac
ROPELAB_OVERSUBSCRIBE=1 OMP_DYNAMIC=false OMP_WAIT_POLICY=passive ROPELAB_GNUPLOT=none
export ROPELAB_OVERSUBSCRIBE OMP_DYNAMIC OMP_WAIT_POLICY ROPELAB_GNUPLOT

# tensors FILE: the bytes after a safetensors file's header (8-byte length, then JSON)
tensors() {
    h=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
    tail -c +$((h + 9)) "$1" | cksum
}

# normalise DIR OUT: the compared files, each without what states the time or the threads
normalise() {
    (cd "$1" && find . -type f ! -name summary.md ! -path './*plots/*' ! -path './plots/*' \
        ! -name .lock | LC_ALL=C sort) >"$2"
    while read -r f; do
        echo "== $f"
        case "$f" in
        *.safetensors) tensors "$1/$f" ;;
        *.jsonl) sed -E 's/, "(tokens_per_s|ms_[a-z0-9_]*|threads)": [^,}]*//g' "$1/$f" ;;
        *.csv) awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ms_per_1k_tokens") c = i }
                        { if (c) $c = ""; print }' OFS=, "$1/$f" ;;
        *config.ini) grep -v '^\(out\|threads\) = ' "$1/$f" ;;
        *) cksum <"$1/$f" ;;
        esac
    done <"$2" >"$2.norm"
}

base=$(ls "$top_srcdir"/experiments/*.ini | grep -v '_finetune_')
tune=$(ls "$top_srcdir"/experiments/*.ini | grep '_finetune_')
init="$tmp/passkey-rope-softmax.safetensors"
for ini in $base $tune; do
    name=$(basename "$ini" .ini)
    set -- --set train.steps=3 --set eval.batches=1
    case "$name" in *_finetune_*) set -- "$@" --set "train.init_from=$init" ;; esac
    st=0
    for t in 1 "$T"; do
        "$ROPELAB" run "$ini" --out "$tmp/$t" --threads "$t" -q "$@" >"$tmp/out" 2>&1 ||
            { st=1; sed 's/^/#   /' "$tmp/out" | tail -5; }
        [ $st = 0 ] && normalise "$tmp/$t/$name" "$tmp/$t.list"
    done
    ck3="$tmp/1/passkey/pe=rope,attention=softmax/checkpoints/step-3.safetensors"
    [ "$name" = passkey ] && cp "$ck3" "$init"
    ck=$(grep -c 'safetensors$' "$tmp/1.list" 2>/dev/null)
    [ $st = 0 ] && [ "$ck" -gt 0 ] && cmp -s "$tmp/1.list.norm" "$tmp/$T.list.norm" ||
        { st=1; diff "$tmp/1.list.norm" "$tmp/$T.list.norm" 2>&1 | head -6 | sed 's/^/#   /'; }
    ok $st "$name: 1 and $T threads, the same $ck checkpoints' tensors and the same results"
    rm -rf "$tmp/1" "$tmp/$T"
done
echo "1..$n"
exit $failed
