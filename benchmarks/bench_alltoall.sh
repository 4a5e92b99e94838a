#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# All-to-All by synthesis against the textbook baselines, simulated
# (tacos-synth --compare): per shape and size, TACOS (best of k = 1, 2, 4, 8
# chunks per rank and 4 seeds, as simulated with the executor's order),
# direct, pairwise exchange and Bruck, and the bound (cut and hop-load).
# Prints a markdown table; ratios are baseline / TACOS (> 1: TACOS faster);
# pairwise / bound: the most any schedule could gain on pairwise exchange.
# COLL=gather or COLL=scatter: the same for those (root 0), against direct
# (the root and each rank: Open MPI's linear algorithms) only.
#
#   [COLL=alltoall|gather|scatter] benchmarks/bench_alltoall.sh [SIZE...]
#                                                  (default: 1MiB 64MiB)
B=$(cd "$(dirname "$0")/.." && pwd)
S="$B/synth/tacos-synth"
SIZES=${*:-1MiB 64MiB}
COLL=${COLL:-alltoall}
case $COLL in
alltoall) BASES=direct,pairwise,bruck ;;
gather | scatter) BASES=direct ;;
*) echo "COLL: alltoall, gather or scatter" >&2 && exit 2 ;;
esac
T=${TMPDIR:-/tmp}/bench_alltoall.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
# shape and its tacos-synth arguments (heterogeneous: two or more link speeds).
# A switch unwound with degree 1 is a ring of its members (what suits
# bandwidth-bound reductions), with degree members - 1 every port reaches
# every other at once (a non-blocking switch, what an All-to-All uses):
# the 2D switch and fs:8x8 are here both ways.
cat >"$T/shapes" <<SHAPES
ring:8|-t ring:8
torus2d:4x4|-t torus2d:4x4
hypercube:16|-t hypercube:16
fc:8|-t fc:8
switch:8 (degree 7)|-t switch:8 --unwind-degree 7
RFS 2x4x2 (het.)|-t rfs:2x4x2 --bw 200,100,50 --lat 0.5,1,2
2D switch 8x4 (het.)|-t ss:8x4 --bw 200,50 --lat 0.5,2 --unwind-degree 3
2D switch 8x4 (het., degree 7)|-t ss:8x4 --bw 200,50 --lat 0.5,2 --unwind-degree 7
DragonFly 4x5 (het.)|-t dragonfly:4x5
DGX-1 (het.)|-t dgx1
fs:8x8 (het.)|-t fs:8x8 --bw 100,25 --lat 0.5,2
fs:8x8 (het., degree 7)|-t fs:8x8 --bw 100,25 --lat 0.5,2 --unwind-degree 7
testbed pairs4, 2 ranks/host (het.)|--topology $B/benchmarks/topologies/testbed_pairs4_r2.json
testbed ring4, 2 ranks/host (het.)|--topology $B/benchmarks/topologies/testbed_ring4_r2.json
testbed star3, 2 ranks/host (het.)|--topology $B/benchmarks/topologies/testbed_star3_r2.json
SHAPES
if [ "$COLL" = alltoall ]; then
    echo "| shape | size | TACOS µs (k) | bound µs | TACOS / bound | direct | pairwise | Bruck | pairwise / bound |"
    echo "|---|---|---|---|---|---|---|---|---|"
else
    echo "| shape | size | TACOS µs (k) | bound µs | TACOS / bound | direct |"
    echo "|---|---|---|---|---|---|"
fi
while IFS='|' read -r name args; do
    for size in $SIZES; do
        best= bk= line=
        for k in 1 2 4 8; do
            # shellcheck disable=SC2086
            out=$("$S" $args -c "$COLL" -s "$size" -k $k --trials 4 \
                --compare $BASES --summary-json 2>/dev/null | tail -1)
            us=$(echo "$out" | sed 's/.*"simulated_us":\([0-9.e+]*\).*/\1/')
            if [ -n "$us" ] && { [ -z "$best" ] || awk -v a="$us" -v b="$best" 'BEGIN{exit !(a<b)}'; }; then
                best=$us bk=$k line=$out
            fi
        done
        [ -n "$line" ] || { echo "| $name | $size | failed | | | | | | |"; continue; }
        echo "$line" | awk -v name="$name" -v size="$size" -v k="$bk" -v all="$COLL" '{
            match($0, /"optimal_us":[0-9.e+]*/); opt = substr($0, RSTART + 13, RLENGTH - 13)
            match($0, /"simulated_us":[0-9.e+]*/); t = substr($0, RSTART + 15, RLENGTH - 15)
            match($0, /"direct":[0-9.e+]*/); d = substr($0, RSTART + 9, RLENGTH - 9)
            match($0, /"pairwise":[0-9.e+]*/); p = substr($0, RSTART + 11, RLENGTH - 11)
            match($0, /"bruck":[0-9.e+]*/); b = substr($0, RSTART + 8, RLENGTH - 8)
            printf "| %s | %s | %.1f (%s) | %.1f | %.2f | %.2fx", name, size, t, k, opt, t / opt, d / t
            if (all == "alltoall")
                printf " | %.2fx | %.2fx | %.2f", p / t, b / t, p / opt
            print " |" }'
    done
done <"$T/shapes"
