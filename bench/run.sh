#!/usr/bin/env bash
# Runs every benchmark in bench/ against the build in $1 and prints their tables.
set -euo pipefail
build=${1:-build}
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/og-bench-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$build/bench/bench_store" "$dir/store" "${BENCH_N:-300}"
if [ -x "$build/bench/bench_lang" ]; then "$build/bench/bench_lang"; fi
if [ -x "$build/bench/bench_commits" ]; then
    "$build/bench/bench_commits" "$dir/commits" --depth "${BENCH_DEPTH:-1000}"
fi
if [ -x "$build/bench/bench_merge" ]; then
    mkdir -p "$dir/merge"
    "$build/bench/bench_merge" "$dir/merge"
fi
