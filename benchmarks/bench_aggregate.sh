#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Aggregation (tacos-synth --chunks-per-message M) against a chunk per
# message and against the baselines Ring, RHD and DBT, All-Reduce with
# coll/tacos's first-call k (-k auto), flat, simulated on the shape with
# its switches as nodes (--switch-nodes; meshes and tori on their links),
# one process per run.  Both TACOS columns are the simulator's replay of
# the synthesized schedule (which models it exactly).
#   sh benchmarks/bench_aggregate.sh [SHAPE:BW:LAT ...]
# M (default 16), MSG_BYTES (tacos-synth --message-bytes for the
# aggregated runs; default 0, no limit, as the results before it existed;
# the component's default is 3840), SIZES (default "64KiB 1MiB 64MiB"), ARGS (more
# tacos-synth arguments for every run, e.g. ARGS="--unwind-degree auto
# --hierarchy levels --part all": what coll_tacos_hierarchy 1 runs, every
# rank's part joined).  Default shapes: 2D
# meshes and tori of 64 and 256 ranks at 100 GB/s, 0.5 us; fs:8x32 (8 ranks
# per host at 100 GB/s, 0.5 us; rails at 25 GB/s, 2 us); fattree:8x8 with
# 2:1 uplinks (hosts at 25 GB/s, 2 us).
B=${TACOS_BUILD:-$(dirname "$0")/..}
SYNTH=$B/synth/tacos-synth
. "$(dirname "$0")/common.sh"
M=${M:-16} MSG_BYTES=${MSG_BYTES:-0}
SIZES=${SIZES:-64KiB 1MiB 64MiB}
[ $# -gt 0 ] || set -- mesh2d:8x8:100:0.5 torus2d:8x8:100:0.5 mesh2d:16x16:100:0.5 \
    torus2d:16x16:100:0.5 fs:8x32:100,25:0.5,2 fattree:8x8:25,50:2,2
echo "| shape | ranks | size | one chunk per message: k, us | up to $M per message: k, most, us | one / aggregated | best baseline us | best baseline / aggregated |"
echo "|---|---|---|---|---|---|---|---|"
for arg in "$@"; do
    shape_arg "$arg"
    for size in $SIZES; do
        run() {
            # shellcheck disable=SC2086 # (ARGS: several words)
            "$SYNTH" -t "$shape" --bw "$bw" --lat "$lat" -c allreduce -s "$size" -k auto \
                --switch-nodes --summary-json $ARGS "$@" 2>/dev/null
        }
        one=$(run --chunks-per-message 1) || exit 1
        agg=$(run --chunks-per-message "$M" --message-bytes "$MSG_BYTES" --compare ring,rhd,dbt) || exit 1
        t1=$(field simulated_us "$one")
        tm=$(field simulated_us "$agg")
        best=""
        for b in ring rhd dbt; do
            v=$(field "$b" "$agg")
            [ -n "$v" ] && { [ -z "$best" ] || [ "$(echo "$v < $best" | bc -l)" = 1 ]; } && best=$v name=$b
        done
        printf '| %s | %s | %s | %s, %.1f | %s, %s, %.1f | %.2f | %.1f (%s) | %.2f |\n' "$shape" \
            "$(field npus "$one")" "$size" "$(field chunks_per_npu "$one")" "$t1" \
            "$(field chunks_per_npu "$agg")" "$(field chunks_per_message "$agg")" "$tm" \
            "$(echo "$t1 / $tm" | bc -l)" "$best" "$name" "$(echo "$best / $tm" | bc -l)"
    done
done
