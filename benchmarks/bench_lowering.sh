#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Which lowering of the network's switches serves a size: TACOS with
# coll/tacos's first-call policy (-k auto --hierarchy auto), All-Reduce,
# synthesized on the switches unwound with the component's automatic
# degrees at every size (--unwind-degree wide: a host's switch members - 1,
# a network's a ring up to 8 hosts and 8 beyond, a switch tree's min(groups
# - 1, 8)) and fully unwound (every member linked to every other at
# 1/(members - 1) of its port: --unwind-degree 65536, capped per switch).
# --unwind-degree auto takes one of the two per size, as the component
# does (tacos_lowering_for): "auto takes".  Each lowering is timed by the
# model it was synthesized on ("model") and simulated with every switch a
# node (--switch-nodes, "switches"); RHD and Ring are simulated on the
# switch nodes too.  "switches pick": the lowering faster there; "auto /
# best": auto's time on the switches over the faster of RHD and Ring
# (below 1: TACOS faster).
#   sh benchmarks/bench_lowering.sh [SHAPE:BW:LAT ...]
# SIZES (default 64KiB 256KiB 1MiB 4MiB 16MiB 64MiB).  Default shapes: as
# bench_baselines.sh's, and fs:8x64 (512 ranks).
B=${TACOS_BUILD:-$(dirname "$0")/..}
SYNTH=$B/synth/tacos-synth
. "$(dirname "$0")/common.sh"
SIZES=${SIZES:-64KiB 256KiB 1MiB 4MiB 16MiB 64MiB}
[ $# -gt 0 ] || set -- fs:8x8:100,25:0.5,2 fs:8x32:100,25:0.5,2 fs:8x64:100,25:0.5,2 \
    rails:8x8:100,25:0.5,2 fattree:8x8:25,100:2,2 fattree:8x8:25,50:2,2
# run DEGREE: the JSON summary of one synthesis and simulation
run() {
    "$SYNTH" -t "$shape" --bw "$bw" --lat "$lat" --unwind-degree "$1" -c allreduce -s "$size" \
        -k auto --hierarchy auto --switch-nodes --compare rhd,ring --summary-json
}
us() { printf %.1f "$(field "$1" "$2")"; }
echo "| shape | ranks | size | wide: model us | wide: switches us | full: model us | full: switches us | RHD us | Ring us | auto takes | switches pick | auto / best of RHD, Ring |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for arg in "$@"; do
    shape_arg "$arg"
    for size in $SIZES; do
        a=$(run auto) || exit 1
        if echo "$a" | grep -q 'switches fully unwound'; then
            took=full f=$a
            w=$(run wide) || exit 1
        else
            took=wide w=$a
            f=$(run 65536) || exit 1
        fi
        ws=$(us simulated_us "$w") fs=$(us simulated_us "$f")
        pick=$(echo "$ws $fs" | awk '{print $1 < $2 ? "wide" : $2 < $1 ? "full" : "tie"}')
        [ "$(field links "$w")" = "$(field links "$f")" ] && took=same pick=same
        rhd=$(us rhd "$a") ring=$(us ring "$a")
        best=$(echo "$rhd $ring $(us simulated_us "$a")" | awk '{b = $1 < $2 ? $1 : $2; printf "%.2f", $3 / b}')
        echo "| $shape | $(field npus "$a") | $size | $(us collective_us "$w") | $ws | $(us collective_us "$f") | $fs | $rhd | $ring | $took | $pick | $best |"
    done
done
