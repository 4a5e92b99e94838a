#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# TACOS with coll/tacos's first-call policy (-k auto; --hierarchy HIER,
# default flat; coll_tacos_hierarchy's default is HIER=auto) against Ring, RHD, DBT,
# Direct and two levels through leaders as coll/han (han), All-Reduce,
# simulated on the shape with its switches as nodes (tacos-synth
# --switch-nodes), one process per row.  TACOS synthesizes on every switch
# unwound with degree DEGREE (default 1; DEGREE=auto as the component
# unwinds: a host's switch with its members - 1, a network's with 1 up to 8
# hosts and 8 beyond, a switch tree's 8, and small sizes with every switch
# fully unwound; DEGREE=wide those degrees at every size).
#   sh benchmarks/bench_baselines.sh [SHAPE:BW:LAT ...]
# SIZES (default "1MiB 64MiB 1GiB"); BASELINES (default
# ring,rhd,dbt,direct,han; Direct's All-Reduce does not fit in memory at
# 1,024 ranks: its N^3 dependencies), a column "n/a" for one left out.
# Default shapes: fs:8x8 and fs:8x32
# (8 ranks per host at 100 GB/s, 0.5 us; rails at 25 GB/s, 2 us),
# rails:8x8 (the same with a switch per host), fattree:8x8 with 2:1 and 4:1
# uplinks (hosts at 25 GB/s, 2 us).
B=${TACOS_BUILD:-$(dirname "$0")/..}
SYNTH=$B/synth/tacos-synth
. "$(dirname "$0")/common.sh"
DEGREE=${DEGREE:-1}
HIER=${HIER:-flat}
BASELINES=${BASELINES:-ring,rhd,dbt,direct,han}
SIZES=${SIZES:-1MiB 64MiB 1GiB}
[ $# -gt 0 ] || set -- fs:8x8:100,25:0.5,2 fs:8x32:100,25:0.5,2 rails:8x8:100,25:0.5,2 \
    fattree:8x8:25,100:2,2 fattree:8x8:25,50:2,2
echo "| shape | bw GB/s | ranks | size | synthesis s | k | hierarchy | TACOS us | ring | rhd | dbt | direct | han | best baseline / TACOS |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for arg in "$@"; do
    shape_arg "$arg"
    for size in $SIZES; do
        out=$("$SYNTH" -t "$shape" --bw "$bw" --lat "$lat" --unwind-degree "$DEGREE" \
            -c allreduce -s "$size" -k auto --hierarchy "$HIER" --switch-nodes \
            --compare "$BASELINES" --summary-json) || exit 1
        hier=$(echo "$out" | sed -n 's/.*"hierarchy":"\([a-z]*\)".*/\1/p')
        t=$(field simulated_us "$out")
        row="| $shape | $bw | $(field npus "$out") | $size | $(printf %.3f "$(field synth_seconds "$out")") | $(field chunks_per_npu "$out") | $hier | $(printf %.1f "$t") |"
        best=""
        for b in ring rhd dbt direct han; do
            v=$(field "$b" "$out")
            [ -n "$v" ] || { row="$row n/a |"; continue; } # (not defined here)
            row="$row $(printf %.1f "$v") |"
            best=$(echo "$v $best" | awk '{print ($2 == "" || $1 < $2) ? $1 : $2}')
        done
        echo "$row $(echo "$best $t" | awk '{printf "%.2f", $1 / $2}') |"
    done
done
