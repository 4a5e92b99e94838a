#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Flat against hierarchical synthesis (tacos-synth --hierarchy), offline, one
# process per row: synthesis seconds and share of the throughput-optimal
# bound, 64 MiB All-Reduce on fs:8xH (8 ranks per host fully connected at
# 100 GB/s 0.5 us; H hosts per rail switch at 25 GB/s 2 us).
#   sh benchmarks/bench_hier.sh [HOSTS...]   (default 8 32 64 128)
# DEGREE (default 8): the rail switches' unwinding degree; K (default 1).
# PARTS=1 adds what coll_tacos_hierarchy 1 runs: every rank's part joined
# (--part all), replayed by the simulator as the executor runs it, its share
# of the throughput optimum (the synthesis column: all ranks' parts, one
# after the other).
B=${TACOS_BUILD:-$(dirname "$0")/..}
SYNTH=$B/synth/tacos-synth
DEGREE=${DEGREE:-8}
K=${K:-1}
[ $# -gt 0 ] || set -- 8 32 64 128
PARTS=${PARTS:-0}
if [ "$PARTS" = 1 ]; then
    echo "| ranks | shape | flat: synthesis | flat: share | levels: synthesis | levels: share | parts: all ranks' synthesis | parts executed: share |"
    echo "|---|---|---|---|---|---|---|---|"
else
    echo "| ranks | shape | flat: synthesis | flat: share | levels: synthesis | levels: share |"
    echo "|---|---|---|---|---|---|"
fi
for h in "$@"; do
    row="| $((8 * h)) | fs:8x$h d=$DEGREE k=$K |"
    if [ "$PARTS" = 1 ]; then
        out=$("$SYNTH" -t "fs:8x$h" --bw 100,25 --lat 0.5,2 --unwind-degree "$DEGREE" \
            -c allreduce -s 64MiB -k "$K" --hierarchy levels --part all --compare rhd \
            --summary-json) || exit 1
        s=$(echo "$out" | sed 's/.*"synth_seconds":\([0-9.e+-]*\).*/\1/')
        o=$(echo "$out" | sed 's/.*"optimal_us":\([0-9.e+-]*\).*/\1/')
        t=$(echo "$out" | sed 's/.*"simulated_us":\([0-9.e+-]*\).*/\1/')
        parts="$(printf '%.3f s | %.1f %%' "$s" "$(echo "100 * $o / $t" | bc -l)") |"
    fi
    for hier in flat levels; do
        out=$("$SYNTH" -t "fs:8x$h" --bw 100,25 --lat 0.5,2 --unwind-degree "$DEGREE" \
            -c allreduce -s 64MiB -k "$K" --hierarchy "$hier" --no-validate --summary-json) ||
            exit 1
        s=$(echo "$out" | sed 's/.*"synth_seconds":\([0-9.e+-]*\).*/\1/')
        e=$(echo "$out" | sed 's/.*"optimal_efficiency":\([0-9.e+-]*\).*/\1/')
        row="$row $(printf '%.3f s | %.1f %%' "$s" "$(echo "$e * 100" | bc -l)") |"
    done
    [ "$PARTS" = 1 ] && row="$row $parts"
    echo "$row"
done
