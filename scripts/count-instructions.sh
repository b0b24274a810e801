#!/bin/sh
# count-instructions.sh: instructions per measured call of every `tumble-bench count`
# case (tests/bench/bench_count.c), counted by callgrind: independent of the load.
#
#   scripts/count-instructions.sh [build/tumble-bench]
#
# Prints one JSON line per case: {"case":..., "calls":N, "instructions_per_call":X}.
set -eu
bench=${1:-build/tumble-bench}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$dir/cg.out" \
    "$bench" count >"$dir/json" 2>"$dir/log" || { cat "$dir/log" >&2; exit 1; }
for f in "$dir"/cg.out.*; do
    name=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
    [ -n "$name" ] || continue
    total=$(sed -n 's/^totals: //p' "$f" | awk '{print $1}')
    calls=$(grep "\"case\":\"$name\"" "$dir/json" | sed 's/.*"calls":\([0-9]*\).*/\1/')
    extra=$(grep "\"case\":\"$name\"" "$dir/json" | sed 's/.*"median_us":[0-9.]*//; s/}$//')
    awk -v n="$name" -v t="${total:-0}" -v c="$calls" -v x="$extra" \
        'BEGIN { printf "{\"case\":\"%s\",\"calls\":%d,\"instructions_per_call\":%.0f%s}\n", n, c, t / c, x }'
done
