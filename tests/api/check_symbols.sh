#!/bin/sh
# libomnigraph.so exports the public API and nothing else: every dynamic symbol it defines is
# an og_* function that include/omnigraph.h marks OG_EXTERN, and every such function is there
# (an implementation file that forgot the header would have its function hidden).
# Usage: check_symbols.sh LIBOMNIGRAPH.so OMNIGRAPH.h
set -eu
lib=$1
hdr=$2

exported=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $NF); print $NF }' | sort -u)
# The linker's own markers may appear in a shared object's dynamic table; they are not ours.
exported=$(printf '%s\n' "$exported" | grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' || true)
declared=$(grep -o 'OG_EXTERN[^(]*(' "$hdr" | grep -o 'og_[A-Za-z0-9_]*($' | tr -d '(' | sort -u)

status=0
foreign=$(printf '%s\n' "$exported" | grep -v '^og_' || true)
if [ -n "$foreign" ]; then
    echo "$lib exports $(printf '%s\n' "$foreign" | wc -l) symbols outside the og_ API:"
    printf '%s\n' "$foreign" | head -50 | sed 's/^/  /'
    status=1
fi
if [ -z "$declared" ]; then
    echo "no OG_EXTERN function found in $hdr"
    status=1
fi
missing=$(printf '%s\n' "$declared" | grep -vxF "$exported" || true)
if [ -n "$missing" ]; then
    echo "declared OG_EXTERN in $hdr but not exported by $lib:"
    printf '%s\n' "$missing" | sed 's/^/  /'
    status=1
fi
extra=$(printf '%s\n' "$exported" | grep '^og_' | grep -vxF "$declared" || true)
if [ -n "$extra" ]; then
    echo "exported by $lib but not declared OG_EXTERN in $hdr:"
    printf '%s\n' "$extra" | sed 's/^/  /'
    status=1
fi
[ $status -eq 0 ] && echo "$lib exports $(printf '%s\n' "$exported" | wc -l) symbols, all og_* API"
exit $status
