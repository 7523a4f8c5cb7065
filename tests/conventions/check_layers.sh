#!/bin/sh
# Include direction: a file under src/<layer>/ includes headers only of the layers it may use
# (docs/architecture.md, "Layers"), and include/omnigraph.h includes no internal header. The
# order, lowest first: core, store, arrow, lance, lang, graph, write, exec, api, cli; store and
# arrow do not know each other, lang knows only core, and cli knows only the public header.
# An include is attributed by its first path component ("write/write.h", <write/write.h>,
# "../write/write.h"); a bare name ("cli.h") must sit beside the file that includes it.
# Lance's protobuf messages stay inside src/lance: no other file names a Lance__ type, reads a
# manifest's message (->pb) or includes a lance/proto/ header; the layers above read a
# snapshot through the accessors of lance/dataset.h and lance/manifest.h.
#
# Usage: check_layers.sh REPO_ROOT     check the tree
#        check_layers.sh --self-test   check that planted violations are caught
set -eu

LAYERS="core store arrow lance lang graph write exec api cli"

# The layers each layer may include (itself too), as sources.cmake links them.
allowed() {
    case $1 in
    core) echo "core" ;;
    store) echo "core store" ;;
    arrow) echo "core arrow" ;;
    lance) echo "core store arrow lance" ;;
    lang) echo "core lang" ;;
    graph) echo "core store arrow lance lang graph" ;;
    write) echo "core store arrow lance lang graph write" ;;
    exec) echo "core store arrow lance lang graph write exec" ;;
    api) echo "core store arrow lance lang graph write exec api" ;;
    cli) echo "cli" ;;
    *) return 1 ;;
    esac
}

# Prints one line per violation; returns the number of violations (capped at 255).
check_tree() {
    root=$1
    [ -d "$root/src" ] || { echo "check_layers: no src/ under $root"; return 255; }
    rules=""
    for l in $LAYERS; do rules="$rules $l=$(allowed "$l" | tr ' ' ',')"; done
    files=$(cd "$root" && find src include -type f \( -name '*.c' -o -name '*.h' \) | sort)
    [ -n "$files" ] || { echo "check_layers: no C files under $root/src"; return 255; }
    # shellcheck disable=SC2086
    (cd "$root" && awk -v rules="$rules" -v layers="$LAYERS" '
        BEGIN {
            n = split(rules, r, " ")
            for (i = 1; i <= n; i++) {
                split(r[i], kv, "=")
                ok[kv[1]] = "," kv[2] ","
            }
            nl = split(layers, ls, " ")
            for (i = 1; i <= nl; i++) known[ls[i]] = 1
            bad = 0
        }
        FNR == 1 {
            split(FILENAME, parts, "/")
            dir = FILENAME
            sub(/\/[^\/]*$/, "", dir)
            layer = parts[1] == "include" ? "public" : parts[2]
        }
        layer != "lance" && (/Lance__/ || /->pb([^A-Za-z0-9_]|$)/ || /lance\/proto\//) {
            printf "%s:%d: reads Lance protobuf outside src/lance (use the accessors of lance/dataset.h, lance/manifest.h)\n", FILENAME, FNR
            bad++
            next
        }
        /^[ \t]*#[ \t]*include[ \t]*["<]/ {
            line = $0
            sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
            quoted = substr(line, 1, 1) == "\""
            target = substr(line, 2)
            sub(/[">].*$/, "", target)
            t = target
            while (substr(t, 1, 3) == "../") t = substr(t, 4)
            if (t ~ /\//) {
                first = t
                sub(/\/.*$/, "", first)
                if (!(first in known)) next        # a system header such as <sys/stat.h>
                to = first
            } else {
                if (!quoted || target == "omnigraph.h") next
                if (system("test -f \"" dir "/" target "\"") == 0) next
                printf "%s:%d: includes \"%s\", which is not beside it (name its layer: \"layer/%s\")\n", FILENAME, FNR, target, target
                bad++
                next
            }
            if (layer == "public") {
                printf "%s:%d: the public header includes the internal header %s\n", FILENAME, FNR, target
                bad++
            } else if (!(layer in ok)) {
                printf "%s:%d: src/%s/ is not a known layer (add it to check_layers.sh and docs/architecture.md)\n", FILENAME, FNR, layer
                bad++
            } else if (index(ok[layer], "," to ",") == 0) {
                allowed_list = ok[layer]
                gsub(/^,|,$/, "", allowed_list)
                gsub(/,/, " ", allowed_list)
                printf "%s:%d: %s includes %s: %s may use only %s\n", FILENAME, FNR, layer, target, layer, allowed_list
                bad++
            }
        }
        END { exit bad > 255 ? 255 : bad }
    ' $files) || return $?
    return 0
}

self_test() {
    base=${TMPDIR:-/tmp}
    tmp=$(mktemp -d "$base/og-layers-XXXXXX")
    trap 'if [ "${OG_KEEP_TMP:-0}" != 0 ]; then echo "OG_KEEP_TMP: kept $tmp"; else rm -rf "$tmp"; fi' EXIT
    mkdir -p "$tmp/src/core" "$tmp/src/lance" "$tmp/src/lang" "$tmp/src/store" "$tmp/src/cli" \
        "$tmp/src/exec" "$tmp/include"
    printf '#include "omnigraph.h"\n#include <stdio.h>\n#include "core/error.h"\n' >"$tmp/src/core/ok.c"
    printf '#include "exec.h"\n#include "write/write.h"\n#include "graph/graph.h"\n' >"$tmp/src/exec/ok.c"
    : >"$tmp/src/exec/exec.h"
    printf '#include "cli.h"\n#include "omnigraph.h"\n' >"$tmp/src/cli/ok.c"
    : >"$tmp/src/cli/cli.h"
    # planted: one per rule
    printf '#include "lance/dataset.h"\n#include "write/write.h"\n' >"$tmp/src/lance/bad.c"
    printf '  #  include <lance/dataset.h>\n' >"$tmp/src/lang/bad.h"
    printf '#include "../graph/graph.h"\n' >"$tmp/src/store/bad.c"
    printf '#include "core/error.h"\n' >"$tmp/src/cli/bad.c"
    printf '#include "write.h"\n' >"$tmp/src/lance/bad2.c"
    printf '#include "core/error.h"\n' >"$tmp/include/omnigraph.h"
    printf 'static const Lance__Table__Manifest *m;\n' >"$tmp/src/exec/bad.c"
    printf 'int v(lance_dataset *ds)\n{\n    return ds->m->pb->version;\n}\n' >"$tmp/src/exec/bad2.c"
    out=$(check_tree "$tmp") && rc=0 || rc=$?
    printf '%s\n' "$out"
    want="src/cli/bad.c:1 src/lance/bad.c:2 src/lance/bad2.c:1 src/lang/bad.h:1 src/store/bad.c:1 include/omnigraph.h:1 src/exec/bad.c:1 src/exec/bad2.c:3"
    status=0
    for w in $want; do
        printf '%s\n' "$out" | grep -q "^$w:" || { echo "self-test: $w was not reported"; status=1; }
    done
    [ "$rc" -eq 8 ] || { echo "self-test: $rc violations reported, 8 planted"; status=1; }
    [ $status -eq 0 ] && echo "self-test: all 8 planted violations reported, nothing else"
    return $status
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
    exit $?
fi
[ $# -eq 1 ] || { echo "usage: check_layers.sh REPO_ROOT | --self-test" >&2; exit 2; }
out=$(check_tree "$1") && rc=0 || rc=$?
if [ "$rc" -ne 0 ]; then
    printf '%s\n' "$out"
    echo "$rc violation(s) of the layer rules (docs/architecture.md, Layers)"
    exit 1
fi
echo "include direction: every file under src/ includes only the layers below it; Lance protobuf stays in src/lance"
