#!/bin/sh
# t_refuse.sh -- inputs refused early with a message naming the cause: `run --out ''`, a
# directory, /dev/null, a non-INI file, an INI file with several errors (all reported),
# sizes that cannot fit in memory (refused before training, in well under a second),
# `attn` inputs that are not finite; and a diverged run flagged in results.csv,
# summary.md and a warning line.
: "${ROPELAB:=./src/ropelab}"
ROPELAB_GNUPLOT=none; export ROPELAB_GNUPLOT
OMP_NUM_THREADS=1; export OMP_NUM_THREADS
. "$(dirname "$0")/lib.sh"
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
scratch t_refuse
cd "$tmp" || exit 99

# expect STATUS PATTERN args...: `ropelab args` exits STATUS, stderr matches PATTERN
expect() {
    want=$1; pat=$2; shift 2
    "$ROPELAB" "$@" >out 2>err; got=$?
    if [ "$got" = "$want" ] && grep -q -- "$pat" err; then r=0; else r=1; fi
    ok $r "ropelab $*: exit $want, '$pat'"
    [ $r = 0 ] || sed 's/^/# /' err
}

printf '[train]\nsteps = 2\n' >ok.ini
expect 2 "out: expected a directory, got ''" run ok.ini --out ''
[ ! -e /ok ]; ok $? "--out '' wrote nothing at the filesystem root"
mkdir adir
expect 2 "adir: is a directory, not an experiment INI file" run adir
expect 2 "/dev/null: not a regular file" run /dev/null
: >empty.ini
expect 2 "empty.ini: no \[section\] in the file" run empty.ini
printf 'just some text\nnot an ini file\n' >notes.txt
expect 2 "notes.txt:1: malformed line" run notes.txt
printf '\000\001binary' >bin.ini
expect 2 "bin.ini: holds NUL bytes" run bin.ini
printf '[model]\nhead = 4\n[train]\nsteps = x\nlr = -1\n' >three.ini
"$ROPELAB" run three.ini >out 2>err
[ $? = 2 ] && grep -q "three.ini:2: \[model\] unknown key 'head'" err &&
    grep -q "three.ini:4: \[train\] steps" err && grep -q "three.ini:5: \[train\] lr" err
ok $? "an INI file with three errors reports all three"
printf '[task]\npath =;j\n' >semi.ini
expect 2 "';j' would not read back" run semi.ini

# sizes: refused before training, quickly, saying what is needed and what the machine has
printf '[task]\nname = copy\nlength = 1000000000\n' >len.ini
t0=$(date +%s%N)
expect 2 "len.ini: the run needs about .* GiB of memory .* but this machine has .* GiB available" run len.ini --out runs
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] && [ ! -e runs ]; ok $? "... in $ms ms, before any training (no run directory)"
printf '[task]\nname = copy\n[eval]\nlengths = 64, 100000000\n' >evl.ini
expect 2 "evaluation at length 100000000" run evl.ini --out runs
printf '[task]\nname = copy\n[train]\nbatch = 1073741824\n' >batch.ini
expect 2 "training batch 1073741824 x" run batch.ini --out runs
# an --out that config.ini could not hold on one INI line: refused before training (it used
# to train, then fail to read its own config.ini back, as report, eval and --resume did)
long=dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd
expect 2 "the line 'out = ...' would be 2.. characters in config.ini" run ok.ini --out "lo/$long/$long/$long"
[ ! -e lo ]; ok $? "... and nothing written"

# a diverged run: flagged, not silent
tiny_ini lr.ini lr <<END_INI
[train]
steps = 30
batch = 4
lr = 10
clip = 0
[eval]
lengths = 8, 16
batches = 2
END_INI
"$ROPELAB" run lr.ini --out runs -q >out 2>err
grep -q '^warning: lr diverged' out && grep -q ',diverged\(,\|$\)' runs/lr/results.csv &&
    grep -q '^## Diverged' runs/lr/summary.md
ok $? "lr = 10, clip = 0: 'diverged' in results.csv, summary.md and a warning line"
"$ROPELAB" eval runs/lr --out ev-lr -q >/dev/null 2>err && grep -q ',diverged\(,\|$\)' ev-lr/results.csv &&
    grep -q '^## Diverged' ev-lr/summary.md
ok $? "ropelab eval of that run flags it too"
sed -i 's/^lr = 10/lr = 3e-3/; s/^clip = 0//; s/^name = lr/name = fine/' lr.ini
"$ROPELAB" run lr.ini --out runs -q >out 2>err
! grep -q diverged out runs/fine/results.csv runs/fine/summary.md
ok $? "a healthy run is not flagged"

# gnuplot failing: a warning naming each plot, never a 0-byte SVG left as a plot
cat >fullgp <<'END_GP'
#!/bin/sh
# as gnuplot on a full disk: every output file created empty, exit status 0
for f in $(sed -n "s/^set output '\(.*\)'$/\1/p" "$1"); do : >"$f"; done
exit 0
END_GP
printf '#!/bin/sh\necho broken >&2\nexit 1\n' >failgp
chmod +x fullgp failgp
ROPELAB_GNUPLOT="$tmp/fullgp" "$ROPELAB" report runs/fine >out 2>err
grep -q "warning: plot runs/fine/plots/copy-acc.svg not made" out &&
    grep -q "warning: plot runs/fine/plots/copy-loss.svg not made" out &&
    [ -z "$(find runs/fine/plots -name '*.svg')" ]
ok $? "a gnuplot that leaves empty SVGs (full disk): each plot named in a warning, no SVG left"
ROPELAB_GNUPLOT="$tmp/failgp" "$ROPELAB" report runs/fine >out 2>err
grep -q "warning: plot runs/fine/plots/throughput.svg not made (.*failed (status 1" out &&
    [ -z "$(find runs/fine/plots -name '*.svg')" ]
ok $? "a gnuplot that fails: each plot named in a warning with its exit status"

# attn: non-finite inputs refused naming the array and the index
PY=${PYTHON:-python3}
if "$PY" -c 'import struct' 2>/dev/null; then
    mk() { # mk DIR: q, k, v of shape (1, 3, 2) with q[0,1,1] = $2
        mkdir -p "$1"
        "$PY" - "$1" "$2" <<'PYEOF'
import struct, sys
d, bad = sys.argv[1], float(sys.argv[2])
def save(name, vals, shape):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (shape,)
    hdr += ' ' * (63 - (10 + len(hdr)) % 64) + '\n'
    with open(d + '/' + name, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode())
        f.write(struct.pack('<%df' % len(vals), *vals))
q = [0.1 * i for i in range(6)]
q[3] = bad
save('q.npy', q, (1, 3, 2)); save('k.npy', [0.2] * 6, (1, 3, 2)); save('v.npy', [0.3] * 6, (1, 3, 2))
PYEOF
    }
    mk good 0.5
    "$ROPELAB" attn --in good --out o >out 2>err
    ok $? "attn on finite inputs works (the fixture writer is right)"
    for v in nan inf -inf 1e30; do
        mk "bad$v" "$v"
        expect 2 "q.npy\[0,1,1\] = .*: inputs must be finite" attn --in "bad$v" --out o
    done
else
    skip "attn refuses non-finite inputs" "no python3 to write the fixtures"
fi
echo "1..$n"
exit $failed
