# Sourced by the bench scripts that compare with Kuzu: installs Kuzu 0.11.3 (pinned in
# bench/graph_peer/package-lock.json) with `npm ci` into $build/bench/graph_peer, once per
# build directory (a stamp records what was installed), never into the source tree.
# Needs $root and $build; sets $peer.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    { echo "bench: node and npm are needed for the Kuzu peer" >&2; exit 1; }
peer="$build/bench/graph_peer"
mkdir -p "$peer"
want=$( { sha256sum "$root/bench/graph_peer/package.json" "$root/bench/graph_peer/package-lock.json";
          node -v; uname -m; } | sha256sum | cut -d' ' -f1)
if [ ! -f "$peer/node_modules/.omnigraph-stamp" ] || [ "$(cat "$peer/node_modules/.omnigraph-stamp")" != "$want" ]; then
    echo "bench: installing kuzu 0.11.3 into $peer (npm ci) ..." >&2
    cp "$root/bench/graph_peer/package.json" "$root/bench/graph_peer/package-lock.json" "$peer/"
    (cd "$peer" && npm ci --no-audit --no-fund --loglevel=error >"$peer/npm-ci.log" 2>&1) ||
        { tail -n 20 "$peer/npm-ci.log" >&2; echo "bench: npm ci failed" >&2; exit 1; }
    echo "$want" >"$peer/node_modules/.omnigraph-stamp"
fi
