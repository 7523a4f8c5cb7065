#!/usr/bin/env bash
# Installs the pinned node packages of the interop suite (package-lock.json) into
# tests/interop/node_modules with `npm ci`, only when node_modules is missing or the lock, the
# package.json or the node version changed since the last install (a stamp file records them).
# Quiet when nothing needs doing. Exits non-zero with a message when node/npm are missing or the
# install fails, so the interop tests fail loudly instead of passing without lancedb.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

die() { echo "interop setup: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 ||
    die "node is not installed; the interop suite needs Node.js >= 18 and npm (lancedb runs in node)"
command -v npm >/dev/null 2>&1 ||
    die "npm is not installed; the interop suite needs npm to install @lancedb/lancedb from package-lock.json"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || die "node $(node -v) is too old; @lancedb/lancedb 0.31.0 needs node >= 18"
[ -f package-lock.json ] || die "package-lock.json is missing in $here"

stamp=node_modules/.omnigraph-stamp
want=$( { sha256sum package.json package-lock.json; node -v; uname -m; } | sha256sum | cut -d' ' -f1)

up_to_date() { [ -d node_modules ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }

# Several build directories may run the suite at once: one install at a time.
# (The lock and the install log live outside the source tree.)
key=$(printf '%s' "$here" | sha256sum | cut -c1-16)
tmp=${TMPDIR:-/tmp}
exec 9>"$tmp/omnigraph-interop-$key.lock"
flock 9

if ! up_to_date; then
    echo "interop setup: installing pinned node packages (npm ci) ..." >&2
    start=$(date +%s)
    log="$tmp/omnigraph-interop-$key-npm-ci.log"
    if ! npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
        tail -n 20 "$log" >&2 || true
        die "npm ci failed (is the npm registry reachable?); full log in $log"
    fi
    echo "interop setup: installed in $(( $(date +%s) - start )) s" >&2
    rm -f "$log"
    echo "$want" >"$stamp"
fi

# The packages must load and be the pinned versions (the native module is an optional
# dependency, so a platform without a prebuilt binary shows up here).
node -e '
const want = { "@lancedb/lancedb": "0.31.0", "apache-arrow": "18.1.0" };
for (const [name, version] of Object.entries(want)) {
  const file = require("path").join("node_modules", name, "package.json");
  const got = JSON.parse(require("fs").readFileSync(file, "utf8")).version;
  if (got !== version) { console.error(`interop setup: ${name} is ${got}, want ${version}`); process.exit(1); }
}
try { require("@lancedb/lancedb"); } catch (e) {
  console.error("interop setup: @lancedb/lancedb does not load on this platform: " + e.message); process.exit(1);
}' || die "the installed node packages are not usable; delete $here/node_modules and retry"
