#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those that are missing.
#   scripts/deps.sh        what the build and the demo need (`make`, `make demo`)
#   scripts/deps.sh test   also what only the tests need (`make test`, `make fuzz`): clang,
#                          since `make test CC=clang` builds with it, and its libFuzzer runtime
#                          (`make fuzz-run`); clang-format, which the format check
#                          (test_format) runs; node and npm for the lancedb interop suite.
# Idempotent and quiet when everything is present (one dpkg query, no network).
set -euo pipefail
pkgs=(cmake ninja-build pkg-config gcc make
      libprotobuf-c-dev protobuf-c-compiler libroaring-dev libzstd-dev
      libjansson-dev libpcre2-dev libxxhash-dev libcmocka-dev libsqlite3-dev)
if [ "${1:-}" = test ]; then
    pkgs+=(g++ clang clang-format libclang-rt-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# The interop suite runs lancedb under node; this machine kind ships node, a bare Debian
# machine gets Debian's (node 18 is enough for lancedb 0.31).
if [ "${1:-}" = test ]; then
    command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
