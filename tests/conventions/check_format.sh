#!/bin/sh
# Every C source and header we write follows .clang-format (generated protobuf code in
# src/lance/proto/ excepted): clang-format --dry-run reports no change. `make format`
# rewrites the files in place. The result depends on clang-format's major version: this is
# Debian's (scripts/deps.sh installs it), and the check names the version it ran with.
# Usage: check_format.sh REPO_ROOT
set -eu
[ $# -eq 1 ] || { echo "usage: check_format.sh REPO_ROOT" >&2; exit 2; }
cd "$1"
command -v clang-format >/dev/null 2>&1 || {
    echo "clang-format is not installed (scripts/deps.sh installs it)"; exit 1; }
files=$(git ls-files '*.c' '*.h' 2>/dev/null | grep -v '^src/lance/proto/' || true)
[ -n "$files" ] || files=$(find src include tests bench examples -name '*.[ch]' \
                           -not -path 'src/lance/proto/*' | sort)
out=$(printf '%s\n' $files | xargs clang-format --dry-run 2>&1 | grep 'warning:' || true)
if [ -n "$out" ]; then
    printf '%s\n' "$out" | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
    echo "$(printf '%s\n' "$out" | wc -l) places in $(printf '%s\n' "$out" | cut -d: -f1 | sort -u | wc -l) files differ from .clang-format ($(clang-format --version)); run 'make format'"
    exit 1
fi
echo "$(printf '%s\n' $files | wc -l) files formatted ($(clang-format --version))"
