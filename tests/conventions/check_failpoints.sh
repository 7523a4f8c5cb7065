#!/bin/sh
# The failpoint table is complete: every OG_FAILPOINT("name") in src/ has a row in the table of
# docs/conventions.md ("## Failpoints"), every row names a failpoint that exists, and every
# name a test arms (core_fp_set("name", ...), OG_FAILPOINTS='name=...') exists, since arming a
# name nothing evaluates silently tests nothing. Names starting with "test." exercise the
# mechanism itself (tests/unit/test_core.c) and are exempt. Comments are not code: the example
# in a comment does not count as a failpoint.
# Usage: check_failpoints.sh REPO_ROOT
set -eu
[ $# -eq 1 ] || { echo "usage: check_failpoints.sh REPO_ROOT" >&2; exit 2; }
cd "$1"
doc=docs/conventions.md
[ -f "$doc" ] || { echo "$doc is missing"; exit 1; }

# C files with /* */ and // comments removed (string literals holding comment markers are
# not expected around failpoints).
strip_comments() {
    awk '
        {
            out = ""; s = $0
            while (length(s) > 0) {
                if (inc) {
                    e = index(s, "*/")
                    if (!e) { s = ""; break }
                    s = substr(s, e + 2); inc = 0
                } else {
                    b = index(s, "/*"); l = index(s, "//")
                    if (l && (!b || l < b)) { out = out substr(s, 1, l - 1); s = ""; break }
                    if (!b) { out = out s; s = ""; break }
                    out = out substr(s, 1, b - 1); s = substr(s, b + 2); inc = 1
                }
            }
            print out
        }' "$@"
}

used=$(find src -name '*.[ch]' | sort | while read -r f; do strip_comments "$f"; done |
    grep -o 'OG_FAILPOINT("[^"]*")' | sed 's/^OG_FAILPOINT("//; s/")$//' | sort -u)
documented=$(awk '/^## /{ on = ($0 == "## Failpoints") } on && /^\| *`[^`]*` *\|/' "$doc" |
    sed 's/^| *`\([^`]*\)`.*/\1/' | sort -u)
armed=$(find tests -name '*.c' | sort | while read -r f; do strip_comments "$f"; done |
    { grep -oE "core_fp_set\\(\"[^\"]+\"|OG_FAILPOINTS='[^=']+=" || true; } |
    sed "s/^core_fp_set(\"//; s/\"\$//; s/^OG_FAILPOINTS='//; s/=\$//" | grep -v '^test\.' |
    sort -u)

status=0
[ -n "$used" ] || { echo "no OG_FAILPOINT(\"...\") found under src/"; status=1; }
[ -n "$documented" ] || { echo "no failpoint table found under '## Failpoints' in $doc"; status=1; }
undocumented=$(printf '%s\n' "$used" | grep -vxF "$documented" || true)
if [ -n "$undocumented" ]; then
    echo "failpoints used in src/ but missing from the table in $doc:"
    for n in $undocumented; do echo "  $n ($(grep -rln "OG_FAILPOINT(\"$n\")" src | tr '\n' ' '))"; done
    status=1
fi
stale=$(printf '%s\n' "$documented" | grep -vxF "$used" || true)
if [ -n "$stale" ]; then
    echo "failpoints in the table of $doc that no code evaluates:"
    printf '%s\n' "$stale" | sed 's/^/  /'
    status=1
fi
if [ -n "$armed" ]; then
    dead=$(printf '%s\n' "$armed" | grep -vxF "$used" || true)
    if [ -n "$dead" ]; then
        echo "failpoints armed by tests that no code evaluates:"
        printf '%s\n' "$dead" | sed 's/^/  /'
        status=1
    fi
fi
[ $status -eq 0 ] &&
    echo "failpoints: $(printf '%s\n' "$used" | wc -l) used in src/, all in $doc, and every one tests arm exists"
exit $status
