#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those that are missing: among them gcc
# and clang, since `make test CC=clang` (and .ci/run, which runs it) builds with clang, and
# clang-format, which the suite's format check (test_format) runs.
# Idempotent and quiet when everything is present (one dpkg query, no network).
set -euo pipefail
pkgs=(cmake ninja-build pkg-config gcc g++ clang clang-format make
      libprotobuf-c-dev protobuf-c-compiler libroaring-dev libzstd-dev
      libjansson-dev libpcre2-dev libxxhash-dev libcmocka-dev libsqlite3-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# The interop suite runs lancedb under node; this machine kind ships node, a bare Debian
# machine gets Debian's (node 18 is enough for lancedb 0.31).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
