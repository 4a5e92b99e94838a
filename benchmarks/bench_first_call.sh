#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What a communicator's first call costs in synthesis: `tacos-synth -k auto`
# (coll/tacos's policy: chunks per NPU as the model picks them, flat) on one
# core, this build against another (SYNTH_B, a tacos-synth built from the
# baseline commit), runs alternating A B A B ... REPS times each.  Prints
# the median seconds of each, B / A, the peak RSS of each, the k chosen,
# whether both gave the same schedule time and optimum, and the median
# seconds of each whole run (tacos-synth's summary: the throughput optimum
# it prints the share of, the lower bound where the schedule is whole).
#
#   SYNTH_B=/tmp/base/synth/tacos-synth benchmarks/bench_first_call.sh [CASE...]
# CASE: SHAPE:BW:LAT:COLL:SIZE (fs:8x128:100,25:0.5,2:allreduce:64MiB);
# default: the issue-60 rails at 64, 256, 512 and 1,024 ranks and the
# paper's three shapes at 1 GB.  Environment: REPS (default 3); ARGS_A and
# ARGS_B, more tacos-synth arguments for this build and the baseline (e.g.
# ARGS_A="--hierarchy auto --part 0" with SYNTH_B this build's tacos-synth:
# the default policy, coll_tacos_hierarchy 2, against flat).
B=$(cd "$(dirname "$0")/.." && pwd)
. "$B/benchmarks/common.sh"
need_baseline_synth
REPS=${REPS:-3}
[ $# -gt 0 ] || set -- fs:8x8:100,25:0.5,2:allreduce:64MiB fs:8x32:100,25:0.5,2:allreduce:64MiB \
    fs:8x64:100,25:0.5,2:allreduce:64MiB fs:8x128:100,25:0.5,2:allreduce:64MiB \
    rfs:2x4x16:200,100,50:0.5:allreduce:1GB ss:8x4:300,25:0.5:allreduce:1GB \
    dragonfly:4x5:400,200:0.5:allreduce:1GB
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "| case | k | this: s (median) | baseline: s | baseline / this | this: peak RSS MiB | baseline: peak RSS MiB | same time, optimum | this: whole run s | baseline: whole run s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for c in "$@"; do
    shape_arg "$c"
    coll=$(echo "$c" | cut -d: -f5)
    size=$(echo "$c" | cut -d: -f6)
    : >/tmp/bench_first_call.A
    : >/tmp/bench_first_call.B
    i=0
    while [ $i -lt "$REPS" ]; do
        for v in A B; do
            eval s=\$SYNTH_$v args=\$ARGS_$v
            # shellcheck disable=SC2086 # (ARGS_A, ARGS_B: several words)
            out=$(taskset -c 0 /usr/bin/time -f "rss %M %e" "$s" -t "$shape" --bw "$bw" \
                --lat "$lat" -c "$coll" -s "$size" -k auto --no-validate --summary-json $args 2>&1) || {
                echo "bench_first_call: $s failed on $c" >&2
                exit 1
            }
            # synthesis s, peak RSS KiB, whole run s, k, time/optimum us
            echo "$(field synth_seconds "$out") $(echo "$out" | sed -n 's/^rss //p') \
$(field chunks_per_npu "$out") $(field collective_us "$out")/$(field optimal_us "$out")" \
                >>/tmp/bench_first_call.$v
        done
        i=$((i + 1))
    done
    sa=$(cut -d' ' -f1 /tmp/bench_first_call.A | median)
    sb=$(cut -d' ' -f1 /tmp/bench_first_call.B | median)
    ra=$(cut -d' ' -f2 /tmp/bench_first_call.A | median)
    rb=$(cut -d' ' -f2 /tmp/bench_first_call.B | median)
    wa=$(cut -d' ' -f3 /tmp/bench_first_call.A | median)
    wb=$(cut -d' ' -f3 /tmp/bench_first_call.B | median)
    k=$(head -1 /tmp/bench_first_call.A | cut -d' ' -f4)
    same=no
    [ "$(cut -d' ' -f5 /tmp/bench_first_call.A | sort -u)" = \
        "$(cut -d' ' -f5 /tmp/bench_first_call.B | sort -u)" ] && same=yes
    printf '| %s %s %s | %s | %.3f | %.3f | %.2f | %d | %d | %s | %.2f | %.2f |\n' "$shape" \
        "$coll" "$size" "$k" "$sa" "$sb" "$(echo "$sb / $sa" | bc -l)" $((ra / 1024)) \
        $((rb / 1024)) "$same" "$wa" "$wb"
done
rm -f /tmp/bench_first_call.A /tmp/bench_first_call.B
