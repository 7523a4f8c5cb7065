#!/usr/bin/env bash
# Run every libFuzzer target of a fuzz build for SECONDS each, on a scratch copy of its seed
# corpus (the repository's corpus is never written). A crash, leak or sanitizer report stops
# the run with the failing input saved in fuzz-out/NAME/ (fix it, then copy the input into
# the target's corpus so it stays a regression case). `make fuzz-run` calls this.
# usage: scripts/fuzz_all.sh BUILD_DIR SECONDS
set -euo pipefail
build=${1:?build dir} secs=${2:-15}
list="$build/fuzz-targets.txt"
[ -s "$list" ] || { echo "fuzz_all: $list is missing: configure $build with -DOG_FUZZ=ON" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 t0=$SECONDS
while read -r name corpus; do
    [ -n "$name" ] || continue
    mkdir -p "fuzz-out/$name" "$work/$name"
    for c in $corpus; do cp -R "$c"/. "$work/$name/"; done
    start=$SECONDS
    if ! "$build/tests/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=0 -artifact_prefix="fuzz-out/$name/" "$work/$name" \
            >"$work/$name.log" 2>&1; then
        tail -n 60 "$work/$name.log" >&2
        echo "fuzz_all: $name failed; its input is in fuzz-out/$name/" >&2
        exit 1
    fi
    runs=$(grep -o 'Done [0-9]* runs' "$work/$name.log" | tail -n 1 || true)
    echo "fuzz_all: $name: ${runs:-done} in $((SECONDS - start)) s"
    n=$((n + 1))
done <"$list"
echo "fuzz_all: $n targets, $((SECONDS - t0)) s"
