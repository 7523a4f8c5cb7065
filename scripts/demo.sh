#!/usr/bin/env bash
# `make demo`: what works so far, on an embedded local directory.
set -euo pipefail
build=${1:-build}
og="$build/omnigraph"
dir=$(mktemp -d "${TMPDIR:-/tmp}/omnigraph-demo-XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "== $("$og" version)"
echo "== store self-check in $dir"
"$og" selfcheck --rounds 32 "$dir"
