#!/bin/sh
# The shape rules of include/omnigraph.h (its top comment) that a reader of the header can
# check, so a new call cannot quietly bring back a shape the API dropped:
#  1. no public og_* struct but an options struct holds a list: no pointer to a pointer, no
#     pointer to an og_ or other struct, no n_* count (a list is read through X_count() and an
#     accessor, so its items may grow); options structs may point at arrays the caller owns;
#  2. every ..._INIT macro has its function: OG_X_OPTIONS_INIT and og_x_options_init(), and
#     every og_x_options struct has both;
#  3. no og_graph_branch_* name: a branch is named by the options' `branch` member, not by a
#     twin of a call.
# Usage: check_conventions.sh OMNIGRAPH.h
#        check_conventions.sh --self-test   (plants one violation per rule; each must be found)
set -eu

check() {
    hdr=$1
    status=0

    # 1. Members of every public struct, one per line as "struct<TAB>member declaration".
    lists=$(awk '
        /^typedef struct og_[a-z0-9_]* \{/ { name = $3; inside = 1; depth = 1; next }
        inside {
            line = $0
            sub(/\/\*.*\*\//, "", line)         # a comment on the line
            if (line ~ /^[ \t]*\*/) next         # the middle of a comment
            sub(/\/\*.*/, "", line)              # a comment that goes on
            if (line ~ /\}/) { inside = 0; next }
            if (line ~ /^[ \t]*$/) next
            print name "\t" line
        }' "$hdr" | grep -v '^og_[a-z0-9_]*_options	' |
        grep -E '\*[ \t]*(const[ \t]*)?\*|(struct|og_[a-z0-9_]+)[ \t]*\*|[ \t,]n_[a-z0-9_]+[ \t]*[;,]' || true)
    if [ -n "$lists" ]; then
        echo "public structs that hold a list or its count (give it X_count() and an accessor):"
        printf '%s\n' "$lists" | sed 's/^/  /'
        status=1
    fi

    # 2. _INIT macros, options structs and _init functions, paired by name.
    macros=$(grep -oE '^#define OG_[A-Z0-9_]+_INIT\b' "$hdr" | sed 's/^#define //' | sort -u)
    structs=$(grep -oE '^typedef struct og_[a-z0-9_]+_options\b' "$hdr" | sed 's/^typedef struct //' |
        sort -u)
    fns=$(grep -o 'OG_EXTERN[^(]*(' "$hdr" | grep -oE 'og_[a-z0-9_]+_init\($' | tr -d '(' | sort -u)
    for m in $macros; do
        f=$(printf '%s\n' "$m" | tr 'A-Z' 'a-z')
        if ! printf '%s\n' "$fns" | grep -qxF "$f"; then
            echo "$m has no function $f()"
            status=1
        fi
    done
    for s in $structs; do
        m=$(printf '%s_INIT\n' "$s" | tr 'a-z' 'A-Z')
        if ! printf '%s\n' "$macros" | grep -qxF "$m"; then
            echo "$s has no $m macro"
            status=1
        fi
        if ! printf '%s\n' "$fns" | grep -qxF "${s}_init"; then
            echo "$s has no function ${s}_init()"
            status=1
        fi
    done

    # 3. branch twins
    twins=$(grep -n 'og_graph_branch_' "$hdr" || true)
    if [ -n "$twins" ]; then
        echo "og_graph_branch_* names (name the branch in the options' branch member instead):"
        printf '%s\n' "$twins" | sed 's/^/  /'
        status=1
    fi
    return $status
}

self_test() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/og-conv-XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    cat >"$tmp/ok.h" <<'EOF'
#define OG_A_OPTIONS_VERSION 1
typedef struct og_a_options {
    int version;
    const char *const *columns; /* an options struct may point at the caller's array */
    size_t n_columns;
} og_a_options;
#define OG_A_OPTIONS_INIT { OG_A_OPTIONS_VERSION, NULL, 0 }
OG_EXTERN int og_a_options_init(og_a_options *opts, int version);
typedef struct og_a_result {
    const char *name; /* strings are fine */
    size_t tables;
} og_a_result;
OG_EXTERN size_t og_a_result_item_count(const og_a_result *r);
EOF
    fails=0
    if ! check "$tmp/ok.h" >"$tmp/out"; then
        echo "self-test: a header that keeps the rules was refused:"
        cat "$tmp/out"
        fails=1
    fi
    # one planted violation each: the text to append, and the words the report must have
    plant() {
        cp "$tmp/ok.h" "$tmp/bad.h"
        printf '%s\n' "$1" >>"$tmp/bad.h"
        if check "$tmp/bad.h" >"$tmp/out"; then
            echo "self-test: not found: $3"
            fails=1
        elif ! grep -qF "$2" "$tmp/out"; then
            echo "self-test: $3: the report does not name $2:"
            cat "$tmp/out"
            fails=1
        fi
    }
    plant 'typedef struct og_b_result {
    size_t n_items;
    const og_b_item *items;
} og_b_result;' 'og_b_result	    const og_b_item *items;' "a raw array in a result struct"
    plant 'typedef struct og_c_result {
    size_t n_items; /* a count */
} og_c_result;' 'og_c_result	    size_t n_items;' "a list's count in a result struct"
    plant 'typedef struct og_d_result {
    char **names;
} og_d_result;' 'og_d_result	    char **names;' "a pointer to pointers in a result struct"
    plant '#define OG_E_OPTIONS_INIT { 1 }' 'OG_E_OPTIONS_INIT has no function og_e_options_init()' \
        "an _INIT macro without its function"
    plant 'typedef struct og_f_options {
    int version;
} og_f_options;' 'og_f_options has no OG_F_OPTIONS_INIT macro' "an options struct without its macro"
    plant 'OG_EXTERN int og_graph_branch_snapshot(og_snapshot_info **out, og_graph *g);' \
        'og_graph_branch_snapshot' "an og_graph_branch_ twin"
    [ $fails -eq 0 ] && echo "self-test: every planted violation was found"
    return $fails
}

case ${1:-} in
--self-test) self_test ;;
'') echo "usage: check_conventions.sh OMNIGRAPH.h | --self-test" >&2; exit 2 ;;
*)
    if check "$1"; then echo "$1 keeps the shape rules"; else exit 1; fi
    ;;
esac
