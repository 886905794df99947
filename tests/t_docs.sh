#!/bin/sh
# t_docs.sh -- the documentation stands on its own (TAP).
#   1. every relative link in README.md and docs/*.md points at a file of the source tree;
#   2. every file under docs/ (pages and images) is in the release tarball: some
#      Makefile.am or local.mk names it in a distributed variable;
#   3. nothing in README.md, docs/ or src/ cites a file that is not in the repository
#      (the project's own specification and machine notes live outside it: the pages
#      state the behaviour and the machine themselves).
set -u
top=${top_srcdir:-.}
echo "1..3"
fail=0

bad=$(cd "$top" && for f in README.md docs/*.md; do
    dir=$(dirname "$f")
    grep -o '](\([^)#:]*\)\(#[^)]*\)\?)' "$f" | sed 's/^](//; s/)$//; s/#.*$//' | while read -r t; do
        [ -n "$t" ] || continue
        [ -e "$dir/$t" ] || echo "$f: link to '$t' (no such file)"
    done
done)
if [ -z "$bad" ]; then echo "ok 1 - every relative link in README.md and docs/ resolves"
else echo "not ok 1 - links that do not resolve"; printf '%s\n' "$bad" | sed 's/^/# /'; fail=1; fi

mks=$(cd "$top" && find . -name local.mk -o -name Makefile.am | grep -v '^\./_')
bad=$(cd "$top" && for f in $(find docs -type f \( -name '*.md' -o -name '*.svg' -o -name '*.png' \) | LC_ALL=C sort); do
    grep -q "$f" $mks || echo "$f is in no Makefile.am or local.mk"
done)
if [ -z "$bad" ]; then echo "ok 2 - every page and image under docs/ is distributed"
else echo "not ok 2 - documentation left out of the tarball"; printf '%s\n' "$bad" | sed 's/^/# /'; fail=1; fi

bad=$(cd "$top" && grep -n 'MACHINE\.md\|SPEC\.md\|SPEC §\|shared/device' README.md docs/*.md $(find src -name '*.[ch]') 2>/dev/null)
if [ -z "$bad" ]; then echo "ok 3 - README, docs and sources cite no file outside the repository"
else echo "not ok 3 - citations of files outside the repository"; printf '%s\n' "$bad" | sed 's/^/# /'; fail=1; fi
exit $fail
