#!/usr/bin/env bash
# `make demo`: what works so far, on an embedded local directory.
set -euo pipefail
build=${1:-build}
og="$build/omnigraph"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/omnigraph-demo-XXXXXX")
trap 'rm -rf "$dir"' EXIT
step() { printf '\n== %s\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

echo "== $("$og" version)"
step "the durable object store on this machine" "$og" selfcheck --rounds 32 "$dir/store"
step "check a schema" "$og" schema check "$root/examples/social.pg"
step "type-check and lint queries against it" \
    "$og" lint --schema "$root/examples/social.pg" "$root/examples/social.gq"
# A schema change that needs no data rewrite, planned step by step.
sed 's/size: U32?/size: U32?\n    founded: Date?/' "$root/examples/social.pg" > "$dir/social-v2.pg"
step "plan a schema change" "$og" schema plan --from "$root/examples/social.pg" --to "$dir/social-v2.pg"
