#!/bin/sh
# The release flavour carries no test machinery (docs/architecture.md, "Build flavours"):
#  1. libomnigraph.so exports only og_* names (the count is printed; anything else is listed),
#     and neither it, libomnigraph.a nor the release CLI holds a failpoint, allocation-failure
#     or test-hook symbol, or the name of a test-only environment variable;
#  2. a program embedding the release library passes every failpoint with OG_FAILPOINTS set to
#     make each of them exit, and OG_TEST_GATES_OFF set, and still succeeds;
#  3. that program writes nothing to stdout or stderr, on its error paths too (a missing graph,
#     a bad query, bad load data, a bad schema);
#  4. the release CLI ignores OG_FAILPOINTS, while the testing CLI (the control) obeys it.
# Usage: check_release.sh LIBOMNIGRAPH.so LIBOMNIGRAPH.a RELEASE_CLI TESTING_CLI EMBED_PROGRAM
#        SOURCE_DIR
set -eu
so=$1 ar=$2 cli=$3 tcli=$4 prog=$5 src=$6
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# 1. Symbols and strings.
dyn=$(nm -D --defined-only "$so" | awk 'NF >= 3 { sub(/@.*/, "", $NF); print $NF }' |
    grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u)
echo "$so exports $(printf '%s\n' "$dyn" | grep -c .) dynamic symbols"
other=$(printf '%s\n' "$dyn" | grep -v '^og_' || true)
[ -z "$other" ] || fail "exported names outside og_*: $(echo $other)"
test_syms='core_fp_|fp_from_env|core_alloc_fail_at|core_alloc_count|core_alloc_injected|write_gates_off|exec_load_set_|write_stream_set_|exec_mutate_set_partial_loads|lance_chain_set_writes|test_after_prepare|test_in_gates|test_before_arm|test_in_prepare|test_between_attempts'
for f in "$so" "$ar" "$cli"; do
    # Every symbol, local ones included (nm fails on a stripped file: then the dynamic table).
    syms=$(nm "$f" 2>/dev/null || nm -D "$f")
    found=$(printf '%s\n' "$syms" | awk '{ print $NF }' | grep -E "$test_syms" | sort -u || true)
    [ -z "$found" ] || fail "$f holds test symbols: $(echo $found)"
    for v in OG_FAILPOINTS OG_TEST_GATES_OFF; do
        if grep -aq "$v" "$f"; then fail "$f names $v"; fi
    done
done

# 2 and 3. The embedding program, every failpoint the sources name armed to exit.
names=$(grep -rhoE 'OG_FAILPOINT\("[^"]+"' "$src/src" | sed 's/^OG_FAILPOINT("//; s/"$//' | sort -u)
[ -n "$names" ] || fail "no OG_FAILPOINT(\"...\") found under $src/src"
spec=""
for n in $names; do spec="$spec$n=exit(3);"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/run"
rc=0
OG_FAILPOINTS=$spec OG_TEST_GATES_OFF=1 "$prog" "$tmp/run" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "the embedding program exited $rc with OG_FAILPOINTS=$spec"
[ ! -s "$tmp/out" ] || fail "the library wrote to stdout: $(head -c 400 "$tmp/out")"
[ ! -s "$tmp/err" ] || fail "the library wrote to stderr: $(head -c 400 "$tmp/err")"

# 4. The CLIs, with a failpoint on the path of init.
printf 'node Person { name: String @key }\n' >"$tmp/s.pg"
rc=0
OG_FAILPOINTS='init.pre_manifest=exit(3)' "$cli" init --schema "$tmp/s.pg" "$tmp/cli.omni" \
    >"$tmp/cli.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "the release CLI failed (exit $rc) with OG_FAILPOINTS set: $(cat "$tmp/cli.out")"
rc=0
OG_FAILPOINTS='init.pre_manifest=exit(3)' "$tcli" init --schema "$tmp/s.pg" "$tmp/tcli.omni" \
    >"$tmp/tcli.out" 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "the testing CLI did not stop at init.pre_manifest (exit $rc): the control is broken"
[ $status -eq 0 ] && echo "release flavour: no test symbols, OG_FAILPOINTS and OG_TEST_GATES_OFF ignored, silent"
exit $status
