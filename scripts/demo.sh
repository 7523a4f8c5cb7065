#!/usr/bin/env bash
# `make demo`: the first five minutes with omnigraph. Creates a graph from examples/demo.pg in
# BUILD/demo.omni (recreated on every run, kept afterwards to play with), loads
# examples/demo.jsonl as one commit, asks three questions (examples/demo.gq), makes one
# change, and asks the first question again at the commit before the change.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" # commands print with paths relative to the repository
og="$build/omnigraph"
graph="$build/demo.omni"
queries=examples/demo.gq
if [ ! -x "$og" ]; then
    echo "demo: $og is missing; run 'make demo' (or 'make' first)" >&2
    exit 1
fi
rm -rf "$graph"

n=0
# A numbered section header, the command as typed, then its output.
step() {
    n=$((n + 1))
    printf '\n== %d. %s\n' "$n" "$1"
    shift
    printf '$'
    for a in "$@"; do
        case $a in
        *[\ \{\"\']*) printf " '%s'" "$a" ;;
        *) printf ' %s' "$a" ;;
        esac
    done
    printf '\n'
    "$@"
}

echo "== $("$og" version): the five-minute demo"

step "create a graph from a schema (people, companies, cities, projects)" \
    "$og" init --schema examples/demo.pg "$graph"

step "load 262 nodes and 1,138 edges from JSONL: one graph commit" \
    "$og" load --data examples/demo.jsonl --mode overwrite --store "$graph" >"$build/demo-load.txt"
cat "$build/demo-load.txt"
# The commit the load made: where the time-travel question goes back to.
before=$(sed -n 's/.*(commit \([0-9A-Z]*\)).*/\1/p' "$build/demo-load.txt")
rm -f "$build/demo-load.txt"

step "a key lookup: who is ada?" \
    "$og" query --store "$graph" --file "$queries" --name person --params '{"handle":"ada"}'

step "a two-hop traversal: people ada's friends know, whom ada does not know yet" \
    "$og" query --store "$graph" --file "$queries" --name friends_of_friends --params '{"handle":"ada"}'

step "an aggregate: the five biggest employers" \
    "$og" query --store "$graph" --file "$queries" --name biggest_employers

step "a change: ada is promoted to manager (one more graph commit)" \
    "$og" mutate --store "$graph" --file "$queries" --name promote \
    --params '{"handle":"ada","role":"manager"}'

step "the same question now" \
    "$og" query --store "$graph" --file "$queries" --name person --params '{"handle":"ada"}'

step "the history: every commit, newest first" \
    "$og" commit list --store "$graph"

step "time travel: the same question at the commit before the change" \
    "$og" query --store "$graph" --file "$queries" --name person --params '{"handle":"ada"}' \
    --at "$before"

printf '\nThe graph stays in %s. Try, for example:\n' "$graph"
printf "  %s query --store %s -e 'query q() { match { \$c: City } return { \$c.name, \$c.population } order { \$c.population desc } limit 3 }'\n" "$og" "$graph"
printf '  %s query --store %s --file %s --name biggest_employers --json\n' "$og" "$graph" "$queries"
