#!/bin/sh
# t_api_symbols.sh -- the installed shared library exports the C API and nothing else (TAP).
#
# The API's functions are the names declared in src/api/api.h (rl_version, rl_api_*);
# `nm -D --defined-only` on the built libropelab.so lists what it exports.  The two lists
# must be equal: a missing name breaks callers, an extra one becomes an interface by
# accident (the library links every layer, whose functions stay internal).
: "${top_srcdir:=.}" "${top_builddir:=.}"
so=$top_builddir/src/.libs/libropelab.so
hdr=$top_srcdir/src/api/api.h
echo "1..4"
if [ ! -f "$so" ]; then
    for i in 1 2 3 4; do echo "ok $i # SKIP no shared library (configured with --disable-shared?)"; done
    exit 0
fi
if ! command -v nm >/dev/null 2>&1; then
    for i in 1 2 3 4; do echo "ok $i # SKIP nm not found"; done
    exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# declarations: an identifier rl_... directly followed by '(' (functions, not macros or types)
sed 's|/\*.*\*/||' "$hdr" | grep -o '\brl_[a-z0-9_]*[ ]*(' | sed 's/[ (]*$//' | LC_ALL=C sort -u >"$tmp/api"
nm -D --defined-only "$so" | awk 'NF >= 3 && $2 ~ /^[TDBRVWGS]$/ { print $3 }' | sed 's/@.*//' |
    LC_ALL=C sort -u >"$tmp/exported"
n=$(wc -l <"$tmp/api")
if [ "$n" -ge 20 ]; then echo "ok 1 - api.h declares $n functions"
else echo "not ok 1 - api.h declares $n functions (expected at least 20)"; fail=1; fi
missing=$(LC_ALL=C comm -23 "$tmp/api" "$tmp/exported")
if [ -z "$missing" ]; then echo "ok 2 - every function of api.h is exported"
else echo "not ok 2 - functions of api.h that libropelab.so does not export"; printf '# %s\n' $missing; fail=1; fi
extra=$(LC_ALL=C comm -13 "$tmp/api" "$tmp/exported")
if [ -z "$extra" ]; then echo "ok 3 - libropelab.so exports nothing but the API ($(wc -l <"$tmp/exported") symbols)"
else echo "not ok 3 - symbols exported beyond api.h"; printf '%s\n' "$extra" | head -20 | sed 's/^/# /'; fail=1; fi
# the internal functions are in the library, only hidden
if grep -qx 'rl_attn_forward' "$tmp/exported"; then
    echo "not ok 4 - the kernels' rl_attn_forward is exported"; fail=1
elif nm "$so" 2>/dev/null | grep -q ' t rl_attn_forward$'; then
    echo "ok 4 - the kernels' rl_attn_forward is inside the library, a local symbol"
else # a stripped library: the dynamic table alone shows that it is not exported
    echo "ok 4 - the kernels' rl_attn_forward is not exported (no local symbol table to look in)"
fi
exit $fail
