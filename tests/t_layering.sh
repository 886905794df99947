#!/bin/sh
# t_layering.sh -- the layering of src/ holds (TAP).
#
# src/ is cut into layers, each a folder; a file may include headers of its own folder or
# of a lower one, never of a higher one:
#     core (0) < kernels (1) < model (2) < tasks (3) < config (4) < report (5)
#       < experiment (6) < api (7) < cli (8)
# and src/ropelab.h, the installed header (it includes the C API, api/api.h), sits above
# the library layers.
# Checked here, from the `#include "..."` lines of every .c and .h under src/:
#   1. every quoted include resolves to a file, relative to the including file;
#   2. no file includes a header of a higher layer (file, line and both layers named);
#   3. no circle between units (a unit is x.c, x.h and its private x_impl.h), nor
#      between folders (the circle is printed);
#   4. only core/gemm includes <blis.h>, only core/fft <fftw3.h>, only core/mpi <mpi.h>;
#   5. library code (every layer but cli) never writes to stdout or exits; stderr only in
#      core/status.c (the one place that reports errors and failed assertions).
# ROPELAB_LAYERS_SRC overrides the tree checked (the test of this test uses it).
set -u
src=${ROPELAB_LAYERS_SRC:-${top_srcdir:-.}/src}
AWK=${AWK:-awk}

if [ ! -d "$src/core" ]; then
    echo "1..0 # SKIP no layered src/ at $src"
    exit 0
fi

files=$(cd "$src" && find . -name '*.[ch]' | sed 's|^\./||' | LC_ALL=C sort)

# One line per quoted include: FILE LINE TARGET (TARGET as written).
incs=$(cd "$src" && for f in $files; do
    $AWK -v f="$f" '/^[ \t]*#[ \t]*include[ \t]*"/ {
        s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s);
        if (s != "config.h") print f, FNR, s }' "$f"
done)

plan=5
[ -n "${ROPELAB_LAYERS_SRC:-}" ] || plan=9
echo "1..$plan"
fail=0

# ---- 1 and 2: resolution and direction ----
report=$(printf '%s\n' "$incs" | $AWK -v src="$src" '
function rank(p) {
    if (p ~ /^core\//) return 0; if (p ~ /^kernels\//) return 1;
    if (p ~ /^model\//) return 2; if (p ~ /^tasks\//) return 3;
    if (p ~ /^config\//) return 4; if (p ~ /^report\//) return 5;
    if (p ~ /^experiment\//) return 6; if (p ~ /^api\//) return 7;
    if (p ~ /^cli\//) return 8; return 9 }
function norm(dir, rel,    n, i, parts, out, k, m) {
    n = split((dir == "" ? "" : dir "/") rel, parts, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == "..") { if (k > 0) k--; else return "" ; continue }
        out[++k] = parts[i] }
    m = ""; for (i = 1; i <= k; i++) m = m (i > 1 ? "/" : "") out[i]; return m }
NF == 3 {
    f = $1; dir = f; if (dir ~ /\//) sub(/\/[^\/]*$/, "", dir); else dir = ""
    t = norm(dir, $3)
    if (t == "" || system("test -f \"" src "/" t "\"") != 0) {
        print "U src/" f ":" $2 ": #include \"" $3 "\" does not resolve to a file under src/"; next }
    if (rank(t) > rank(f) && !(rank(f) == 9))
        print "D src/" f ":" $2 ": includes \"" $3 "\" (layer " rank(t) ", above its own layer " rank(f) ")"
    else if (rank(t) == 9 && rank(f) < 9)
        print "D src/" f ":" $2 ": includes the umbrella header \"" $3 "\""
    print "E " f " " t
}')
bad=$(printf '%s\n' "$report" | grep '^U ' | cut -c3-)
if [ -z "$bad" ]; then echo "ok 1 - every quoted include under src/ resolves"
else echo "not ok 1 - includes that do not resolve"; printf '%s\n' "$bad" | sed 's/^/# /'; fail=1; fi
bad=$(printf '%s\n' "$report" | grep '^D ' | cut -c3-)
if [ -z "$bad" ]; then echo "ok 2 - no file includes a header of a higher layer (core < kernels < model < tasks < config < report < experiment < api < cli)"
else echo "not ok 2 - includes that point up"; printf '%s\n' "$bad" | sed 's/^/# /'; fail=1; fi

# ---- 3: circles between units and between folders ----
edges=$(printf '%s\n' "$report" | grep '^E ' | cut -c3-)
circles=$(printf '%s\n' "$edges" | $AWK '
function unit(p) { sub(/\.[ch]$/, "", p); sub(/_impl$/, "", p); return p }
function folder(p) { if (p ~ /\//) { sub(/\/.*$/, "", p); return p } return "." }
function dfs(g, v,    i, w) {
    color[g, v] = 1; stack[++sp] = v
    for (i = 1; i <= nadj[g, v]; i++) {
        w = adj[g, v, i]
        if (color[g, w] == 1) { cyc = ""; for (j = sp; j >= 1; j--) { cyc = stack[j] (cyc == "" ? "" : " -> ") cyc; if (stack[j] == w) break }
                                print g ": " cyc " -> " w }
        else if (color[g, w] == 0) dfs(g, w) }
    color[g, v] = 2; sp-- }
function add(g, a, b) { if (a == b || seen[g, a, b]++) return; adj[g, a, ++nadj[g, a]] = b; node[g, a] = 1; node[g, b] = 1 }
NF == 2 { add("unit", unit($1), unit($2)); add("folder", folder($1), folder($2)) }
END {
    for (k in node) { split(k, p, SUBSEP); if (color[p[1], p[2]] == 0) dfs(p[1], p[2]) } }' | LC_ALL=C sort -u)
if [ -z "$circles" ]; then echo "ok 3 - no circle between units (x.c, x.h, x_impl.h) or folders"
else echo "not ok 3 - include circles"; printf '%s\n' "$circles" | sed 's/^/# /'; fail=1; fi

# ---- 4: the one owner of each third-party numerical header ----
bad=$(cd "$src" && for f in $files; do
    $AWK -v f="$f" '/^[ \t]*#[ \t]*include[ \t]*<(blis|fftw3|mpi)\.h>/ {
        h = $0; sub(/^[^<]*</, "", h); sub(/>.*$/, "", h)
        own = (h == "blis.h") ? "core/gemm" : (h == "fftw3.h") ? "core/fft" : "core/mpi"
        g = f; sub(/\.[ch]$/, "", g)
        if (g != own) print "src/" f ":" FNR ": includes <" h "> (only " own ".c/.h may)" }' "$f"
done)
if [ -z "$bad" ]; then echo "ok 4 - only core/gemm includes <blis.h>, core/fft <fftw3.h>, core/mpi <mpi.h>"
else echo "not ok 4 - third-party headers outside their wrapper"; printf '%s\n' "$bad" | sed 's/^/# /'; fail=1; fi

# ---- 5: library code neither prints for the user nor exits ----
bad=$(cd "$src" && for f in $files; do
    case $f in cli/*|ropelab.h) continue ;; esac
    $AWK -v f="$f" '
        { line = $0; gsub(/"([^"\\]|\\.)*"/, "\"\"", line); sub(/\/\/.*$/, "", line) }
        line ~ /^[ \t]*\*/ || line ~ /^[ \t]*\/\*/ { next }
        line ~ /(^|[^_a-zA-Z])(exit|quick_exit)[ \t]*\(/ { print "src/" f ":" FNR ": calls exit" }
        line ~ /(^|[^_a-zA-Z.>])(printf|puts|putchar)[ \t]*\(/ || line ~ /(^|[^_a-zA-Z])stdout([^_a-zA-Z]|$)/ {
            print "src/" f ":" FNR ": writes to stdout" }
        line ~ /(^|[^_a-zA-Z])stderr([^_a-zA-Z]|$)/ && f != "core/status.c" {
            print "src/" f ":" FNR ": writes to stderr (report errors through core/status.h)" }' "$f"
done)
if [ -z "$bad" ]; then echo "ok 5 - library code (all but src/cli) never writes to stdout or exits; stderr only in core/status.c"
else echo "not ok 5 - library code that prints or exits"; printf '%s\n' "$bad" | sed 's/^/# /'; fail=1; fi

# ---- 6, 7: the check itself catches planted faults (on a copy of src/) ----
if [ -z "${ROPELAB_LAYERS_SRC:-}" ]; then
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/src" && (cd "$src" && tar cf - $files) | (cd "$tmp/src" && tar xf -)
    cp "$tmp/src/core/util.h" "$tmp/src/core/util.h.orig"
    cp "$tmp/src/tasks/task_seq.c" "$tmp/src/tasks/task_seq.c.orig"
    printf '#include "../config/cfg.h"\n' >> "$tmp/src/core/util.h"
    out=$(ROPELAB_LAYERS_SRC="$tmp/src" sh "$0" 2>&1)
    if printf '%s\n' "$out" | grep -q '^not ok 2' &&
       printf '%s\n' "$out" | grep -q 'src/core/util.h:.*layer 4, above its own layer 0'; then
        echo "ok 6 - a planted upward include (core/util.h -> config/cfg.h) fails, naming file and line"
    else echo "not ok 6 - a planted upward include was not caught"; printf '%s\n' "$out" | sed 's/^/# /'; fail=1; fi
    # a task generator that reaches up into the configuration (tasks sit below config)
    cp "$tmp/src/core/util.h.orig" "$tmp/src/core/util.h"
    printf '#include "../config/cfg.h"\n' >> "$tmp/src/tasks/task_seq.c"
    out=$(ROPELAB_LAYERS_SRC="$tmp/src" sh "$0" 2>&1)
    if printf '%s\n' "$out" | grep -q '^not ok 2' &&
       printf '%s\n' "$out" | grep -q 'src/tasks/task_seq.c:.*layer 4, above its own layer 3'; then
        echo "ok 7 - a task file that includes a configuration header (tasks/task_seq.c -> config/cfg.h) fails"
    else echo "not ok 7 - a task file including the configuration was not caught"; printf '%s\n' "$out" | sed 's/^/# /'; fail=1; fi
    cp "$tmp/src/tasks/task_seq.c.orig" "$tmp/src/tasks/task_seq.c"
    # a circle inside one layer: rope.h includes featmap.h, which includes attn_opts.h -> rope.h
    printf '#include "featmap.h"\n' >> "$tmp/src/kernels/rope.h"
    out=$(ROPELAB_LAYERS_SRC="$tmp/src" sh "$0" 2>&1)
    if printf '%s\n' "$out" | grep -q '^# unit: .*kernels/rope -> .*kernels/rope$\|^# unit: .*kernels/featmap -> .*kernels/featmap$\|^# unit: .*kernels/attn_opts -> .*kernels/attn_opts$'; then
        echo "ok 8 - a planted circle (kernels/rope.h -> featmap.h -> attn_opts.h -> rope.h) fails and is printed"
    else echo "not ok 8 - a planted circle was not caught"; printf '%s\n' "$out" | sed 's/^/# /'; fail=1; fi
    # the training loop reaching up into the C API (api sits above every library layer)
    cp "$tmp/src/experiment/train.c" "$tmp/src/experiment/train.c.orig"
    printf '#include "../api/api.h"\n' >> "$tmp/src/experiment/train.c"
    out=$(ROPELAB_LAYERS_SRC="$tmp/src" sh "$0" 2>&1)
    if printf '%s\n' "$out" | grep -q '^not ok 2' &&
       printf '%s\n' "$out" | grep -q 'src/experiment/train.c:.*layer 7, above its own layer 6'; then
        echo "ok 9 - a library file that includes the C API (experiment/train.c -> api/api.h) fails"
    else echo "not ok 9 - a library file including the C API was not caught"; printf '%s\n' "$out" | sed 's/^/# /'; fail=1; fi
    cp "$tmp/src/experiment/train.c.orig" "$tmp/src/experiment/train.c"
fi

exit $fail
