#!/bin/sh
# Issue 33 item 8: `branch create` and `branch list` through the CLI at 1,000 and 10,000
# branches. Grows one graph per size with bench_branches (public API), then times RUNS fresh
# `omnigraph branch create` processes (distinct names) and RUNS `branch list` ones, printing
# medians of CPU (user + system, wait4) and wall time from bench_spawn. BEFORE=/path/to/an
# older omnigraph binary is timed on the same graphs too. Wall figures are for people only.
#
#   bench/run_branches.sh [BUILD (build)]   env: DIR (a fresh mktemp dir; /dev/shm keeps
#   fsync out of the figures), SIZES ("1000 10000"), RUNS (9), BEFORE
set -eu
build=${1:-build}
og="$build/omnigraph"
spawn="$build/bench/bench_spawn"
grow="$build/bench/bench_branches"
dir=${DIR:-$(mktemp -d)}
runs=${RUNS:-9}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
for n in ${SIZES:-1000 10000}; do
    g="$dir/g$n"
    "$grow" "$g" "$n" "$n" | tail -2
    for bin in ${BEFORE:-} "$og"; do
        tag=$(basename "$bin")
        cpu=""; wall=""
        i=0
        while [ "$i" -lt "$runs" ]; do
            out=$("$spawn" 1 "$bin" branch create "run-$tag-$$-$i" "$g")
            cpu="$cpu $(echo "$out" | field cpu_ms_p50)"
            wall="$wall $(echo "$out" | field wall_ms_p50)"
            i=$((i + 1))
        done
        c=$(echo "$cpu" | tr ' ' '\n' | sed '/^$/d' | median)
        w=$(echo "$wall" | tr ' ' '\n' | sed '/^$/d' | median)
        l=$("$spawn" "$runs" "$bin" branch list "$g")
        printf '%6s branches  %-22s create: cpu %s ms, wall %s ms   list: cpu %s ms, wall %s ms\n' \
            "$n" "$tag" "$c" "$w" "$(echo "$l" | field cpu_ms_p50)" "$(echo "$l" | field wall_ms_p50)"
    done
done
