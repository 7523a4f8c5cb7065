#!/bin/sh
# An installed omnigraph is usable with nothing but pkg-config and a C compiler: install into
# a scratch prefix, build examples/embed.c from the installed header and omnigraph.pc, once
# against libomnigraph.so (pkg-config --cflags --libs) and once against libomnigraph.a (the
# .pc's private dependencies, pkg-config --static), and run both.
# Usage: check_install.sh CMAKE BUILD_DIR SOURCE_DIR LIBDIR CC [FLAGS...]
#   LIBDIR is CMAKE_INSTALL_LIBDIR; FLAGS are what a program linking this build of the library
#   needs too (the sanitizers of a sanitizer build).
# OG_KEEP_TMP=1 keeps the scratch directory.
set -eu
cmake=$1
build=$2
src=$3
libdir=$4
cc=$5
shift 5

tmp=$(mktemp -d "${TMPDIR:-/tmp}/og-install-XXXXXX")
trap 'if [ "${OG_KEEP_TMP:-0}" != 0 ]; then echo "OG_KEEP_TMP: kept $tmp"; else rm -rf "$tmp"; fi' EXIT
prefix=$tmp/prefix

fail() {
    echo "FAIL: $*"
    exit 1
}

# Run a step with its output in $tmp/NAME.log, shown when it fails.
step() {
    name=$1
    shift
    echo "+ $*"
    "$@" >"$tmp/$name.log" 2>&1 || {
        cat "$tmp/$name.log"
        fail "$name"
    }
}

step install "$cmake" --install "$build" --prefix "$prefix"

PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export PKG_CONFIG_PATH
[ -f "$PKG_CONFIG_PATH/omnigraph.pc" ] || fail "no omnigraph.pc in $PKG_CONFIG_PATH"
pc_libdir=$(pkg-config --variable=libdir omnigraph)
pc_includedir=$(pkg-config --variable=includedir omnigraph)
[ -f "$pc_includedir/omnigraph.h" ] || fail "omnigraph.pc: no omnigraph.h in includedir $pc_includedir"
[ -e "$pc_libdir/libomnigraph.so" ] || fail "omnigraph.pc: no libomnigraph.so in libdir $pc_libdir"
[ -e "$pc_libdir/libomnigraph.a" ] || fail "omnigraph.pc: no libomnigraph.a in libdir $pc_libdir"

# Against the shared library, exactly as examples/embed.c says to build it (the word
# splitting of pkg-config's output is intended).
cflags=$(pkg-config --cflags omnigraph)
libs=$(pkg-config --libs omnigraph)
step cc_shared "$cc" "$@" "$src/examples/embed.c" $cflags $libs -o "$tmp/embed"
soname=libomnigraph.so.${OG_SOVERSION:?the soname number CMakeLists.txt sets}
LD_LIBRARY_PATH=$pc_libdir ldd "$tmp/embed" | grep -qF "$soname => $pc_libdir/" ||
    fail "embed does not load $soname from $pc_libdir: $(ldd "$tmp/embed")"
step run_shared env LD_LIBRARY_PATH="$pc_libdir" "$tmp/embed" "$tmp/graph-shared"

# Against the static library: the archive for -lomnigraph, everything the .pc lists as
# private (Requires.private, Libs.private) as the system provides it.
static_libs=$(pkg-config --static --libs omnigraph |
    sed 's/\(^\| \)-lomnigraph\( \|$\)/\1-Wl,-Bstatic -lomnigraph -Wl,-Bdynamic\2/')
step cc_static "$cc" "$@" "$src/examples/embed.c" $cflags $static_libs -o "$tmp/embed-static"
if readelf -d "$tmp/embed-static" | grep -q 'NEEDED.*libomnigraph'; then
    fail "embed-static links libomnigraph.so"
fi
step run_static "$tmp/embed-static" "$tmp/graph-static"

echo "installed under $prefix; embed built and ran against libomnigraph.so and libomnigraph.a"
