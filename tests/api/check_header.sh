#!/bin/sh
# include/omnigraph.h compiles on its own, warning-free, as C17 or as C++17: a user's first
# include, in either language, must not need anything before it.
# Usage: check_header.sh c|c++ COMPILER INCLUDE_DIR TU
# Exits 77 (ctest: skipped) when no compiler for the language was found.
set -eu
lang=$1
compiler=$2
inc=$3
tu=$4
if [ -z "$compiler" ]; then
    echo "no $lang compiler found; install g++ (scripts/deps.sh does)"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/og-header-XXXXXX")
trap 'set +x; if [ "${OG_KEEP_TMP:-0}" != 0 ]; then echo "OG_KEEP_TMP: kept $tmp"; else rm -rf "$tmp"; fi' EXIT

case $lang in
c)
    set -x
    "$compiler" -x c -std=c17 -Wall -Wextra -pedantic -Werror -Wstrict-prototypes \
        -I"$inc" -c "$tu" -o "$tmp/tu.o"
    set +x
    ;;
c++)
    set -x
    "$compiler" -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror \
        -I"$inc" -c "$tu" -o "$tmp/tu.o"
    set +x
    # The header's extern "C": the call must reference the C name, not a mangled one.
    if ! nm "$tmp/tu.o" | grep -q ' U og_version_number$'; then
        echo "the C++ object does not reference og_version_number by its C name:"
        nm "$tmp/tu.o"
        exit 1
    fi
    ;;
*)
    echo "usage: check_header.sh c|c++ COMPILER INCLUDE_DIR TU"
    exit 2
    ;;
esac
