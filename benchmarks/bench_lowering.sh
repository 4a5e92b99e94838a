#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Which lowering of the network's switches serves a size best: TACOS with
# coll/tacos's first-call policy (-k auto --hierarchy auto) synthesized on
# the switches unwound as the component unwinds them (--unwind-degree auto)
# and on the switches fully unwound (every member linked to every other at
# 1/(members - 1) of its port: --unwind-degree 65536, capped per switch),
# All-Reduce.  Each is timed twice: by the model it was synthesized on
# (collective_us) and simulated on the shape with its switches as nodes
# (--switch-nodes); RHD and Ring are simulated on the switch nodes too.
# "model picks" and "switches pick" name the faster lowering by each
# timing: where they agree, the model could choose the lowering.
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
faster() { echo "$1 $2" | awk '{print $1 < $2 ? "auto" : $2 < $1 ? "full" : "tie"}'; }
echo "| shape | ranks | size | auto: model us | auto: switches us | full: model us | full: switches us | RHD us | Ring us | model picks | switches pick | picked / best of RHD, Ring |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for arg in "$@"; do
    shape_arg "$arg"
    for size in $SIZES; do
        a=$(run auto) && f=$(run 65536) || exit 1
        am=$(us collective_us "$a") as=$(us simulated_us "$a")
        fm=$(us collective_us "$f") fs=$(us simulated_us "$f")
        rhd=$(us rhd "$a") ring=$(us ring "$a")
        pick=$(faster "$am" "$fm")
        t=$as
        [ "$pick" = full ] && t=$fs
        best=$(echo "$rhd $ring $t" | awk '{b = $1 < $2 ? $1 : $2; printf "%.2f", $3 / b}')
        echo "| $shape | $(field npus "$a") | $size | $am | $as | $fm | $fs | $rhd | $ring | $pick | $(faster "$as" "$fs") | $best |"
    done
done
