#!/usr/bin/env bash
# Run one libFuzzer target from build-fuzz/ for a while on its corpus; new crashes land in
# fuzz-out/NAME/ (copy them into the target's regression corpus once fixed).
# usage: scripts/fuzz.sh NAME SECONDS CORPUS_DIR
set -euo pipefail
name=$1 secs=${2:-60} corpus=${3:?corpus dir}
mkdir -p "fuzz-out/$name" "fuzz-out/$name/work"
cp -rn "$corpus"/. "fuzz-out/$name/work/" 2>/dev/null || true
"build-fuzz/tests/$name" -max_total_time="$secs" -artifact_prefix="fuzz-out/$name/" \
  "fuzz-out/$name/work"
