#!/bin/sh
# The documentation stays inside the repository and names only what exists:
#  1. no file of the repository points outside it (../shared, DESIGN.md): what a
#     reader needs is under docs/;
#  2. every repository path a document names (src/..., tests/..., docs/..., scripts/...,
#     bench/..., examples/..., include/..., .ci/...; globs allowed; a program by its source
#     without .c) exists, and so does every relative Markdown link;
#  3. every internal or public function or type a document names with a layer prefix (og_,
#     core_, store_, arrow_, lance_, lang_, graph_, write_, exec_) exists in the code;
#  4. every test a document cites (test_...) exists: a test case or helper defined or declared
#     under tests/, a test file (test_x.c, test_x.sh) or a ctest name (og_test, add_test). A word in a
#     comment does not count, so a renamed or deleted test cannot stay cited as proof.
# Documents: README.md, docs/*.md, and every README.md under tests/ and bench/.
# Usage: check_docs.sh REPO_ROOT
set -eu
[ $# -eq 1 ] || { echo "usage: check_docs.sh REPO_ROOT" >&2; exit 2; }
cd "$1"
status=0

# Made by a build or a run, not in the repository.
generated() {
    case $1 in
    tests/interop/node_modules*) return 0 ;;
    *) return 1 ;;
    esac
}

docs=$(
    ls README.md docs/*.md 2>/dev/null
    find tests bench -name node_modules -prune -o -name README.md -print 2>/dev/null
)
docs=$(printf '%s\n' "$docs" | sort -u)

# 1. nothing points outside the repository
outside=$(git ls-files 2>/dev/null | grep -v '^tests/conventions/check_docs.sh$' |
    while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done |
    xargs grep -nIE '\.\./shared|/work/shared|shared/(reference|spec)/|DESIGN\.md' 2>/dev/null || true)
if [ -z "$(git ls-files 2>/dev/null | head -1)" ]; then
    outside=$(grep -rnIE '\.\./shared|/work/shared|shared/(reference|spec)/|DESIGN\.md' \
        README.md docs src tests bench examples scripts include CMakeLists.txt Makefile .ci 2>/dev/null |
        grep -v '^tests/conventions/check_docs.sh:' || true)
fi
if [ -n "$outside" ]; then
    echo "files that point outside the repository (document it under docs/ instead):"
    printf '%s\n' "$outside" | sed 's/^/  /'
    status=1
fi

for d in $docs; do
    dir=$(dirname "$d")
    # 2a. repository paths
    for p in $(grep -oE '(^|[^A-Za-z0-9_./-])(src|tests|docs|scripts|bench|examples|include|\.ci)/[A-Za-z0-9_./*-]*' "$d" |
        sed -E 's/^[^a-z.]//; s/[.,:;)-]+$//' | sort -u); do
        case $p in *'<'* | */) p=${p%/} ;; esac
        generated "$p" && continue
        # shellcheck disable=SC2086
        set -- $p
        # a program is named by its source's path without .c (bench/bench_warm)
        [ -e "$1" ] || [ -e "$1.c" ] && continue
        echo "$d: names $p, which does not exist"
        status=1
    done
    # 2b. relative Markdown links
    for l in $(grep -oE '\]\([^)#:]+(#[^)]*)?\)' "$d" | sed -E 's/^\]\(//; s/\)$//; s/#.*//' | sort -u); do
        [ -n "$l" ] || continue
        [ -e "$dir/$l" ] && continue
        echo "$d: links to $l, which does not exist"
        status=1
    done
    # 3. prefixed identifiers
    for id in $(grep -oE '(^|[^A-Za-z0-9_])(og|core|store|arrow|lance|lang|graph|write|exec)_[a-z0-9_]*[a-z0-9]\b' "$d" |
        sed -E 's/^[^a-z]//' | sort -u); do
        grep -rqw -- "$id" src include tests bench examples CMakeLists.txt 2>/dev/null && continue
        echo "$d: names $id, which is nowhere in the code"
        status=1
    done
    # 4. cited tests
    for id in $(grep -oE '(^|[^A-Za-z0-9_])test_[a-z0-9_]*[a-z0-9]\b' "$d" | sed -E 's/^[^a-z]//' | sort -u); do
        grep -rqE "^[a-z].*[ *]$id\(" tests --include='*.c' --include='*.h' 2>/dev/null && continue
        [ -n "$(find tests \( -name "$id.c" -o -name "$id.sh" \) -print 2>/dev/null | head -n 1)" ] && continue
        grep -rqE "(og_test\(|add_test\(NAME )$id( |\$)" tests CMakeLists.txt 2>/dev/null && continue
        echo "$d: cites $id, which is no test, test file or ctest name"
        status=1
    done
done
[ $status -eq 0 ] && echo "documents: $(printf '%s\n' "$docs" | wc -l) checked; every path, link, name and test they use exists, none points outside the repository"
exit $status
