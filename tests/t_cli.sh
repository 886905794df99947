#!/bin/sh
# t_cli.sh -- the ropelab command line (SPEC 5): help, version, usage errors exit 2.
: "${ROPELAB:=./src/ropelab}"
n=0; failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
expect_status() { # want cmd...
    want=$1; shift
    out=$("$ROPELAB" "$@" 2>&1); got=$?
    [ "$got" = "$want" ]; ok $? "ropelab $* exits $want (got $got)"
    [ "$got" = "$want" ] || echo "$out" | sed 's/^/# /'
}
expect_status 0 --help
expect_status 0 --version
expect_status 2
expect_status 2 nosuchcmd
expect_status 2 --nosuchoption
expect_status 2 eval
for c in run attn bench report eval; do
    expect_status 0 "$c" --help
    "$ROPELAB" "$c" --help | grep -q "Usage: ropelab $c"; ok $? "ropelab $c --help prints its usage"
done
"$ROPELAB" --help | grep -q 'attn'; ok $? "--help lists the attn command"
"$ROPELAB" --version | grep -q 'BLIS kernels'; ok $? "--version reports the BLIS kernel set"
err=$("$ROPELAB" nosuchcmd 2>&1 >/dev/null)
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; ok $? "unknown command: one-line error ($err)"
echo "1..$n"
exit $failed
