#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The schedules of this build against another's (SYNTH_B, a tacos-synth
# built from the baseline commit): the same collective on every shape below
# at 1 MiB and 64 MiB, k = 1, 3 and auto, 1 and 8 chunks per message,
# validated by each build.  Prints each case whose chunk count or modelled
# time differs, then how many differ and this / baseline's geometric mean,
# least and most.  No wall-clock: synthesis is deterministic.
#
#   SYNTH_B=/tmp/base/synth/tacos-synth benchmarks/compare_schedules.sh [COLL]
# COLL: default allreduce.
B=$(cd "$(dirname "$0")/.." && pwd)
. "$B/benchmarks/common.sh"
need_baseline_synth
coll=${1:-allreduce}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for shape in "ring:5" "uniring:7" "switch:6" "fc:4" "line:5" "mesh2d:3x4" "torus2d:4x4" \
    "hypercube:8" "dragonfly:4x5" "dgx1" "fs:4x8 --bw 100,25 --lat 0.5,2" \
    "rfs:2x4x4 --bw 200,100,50" "fattree:4x4 --bw 50,25" "rails:4x4 --bw 100,25" \
    "switch:7 --unwind-degree 3" "ss:3x5"; do
    for size in 1MiB 64MiB; do
        for k in 1 3 auto; do
            for m in 1 8; do
                for s in "$SYNTH_A" "$SYNTH_B"; do
                    # shellcheck disable=SC2086 # the shape's options split on purpose
                    j=$("$s" -t $shape -c "$coll" -s $size -k $k --chunks-per-message $m \
                        --summary-json 2>&1) || {
                        echo "compare_schedules: $s failed on $shape $size k=$k m=$m: $j" >&2
                        exit 1
                    }
                    printf '%s %s ' "$(field chunks_per_npu "$j")" "$(field collective_us "$j")"
                done >"$out.case"
                read -r ka ta kb tb <"$out.case"
                echo "$ta $tb" >>"$out"
                [ "$ka $ta" = "$kb $tb" ] ||
                    echo "$shape $size k=$k m=$m: this k=$ka $ta us, baseline k=$kb $tb us"
            done
        done
    done
done
rm -f "$out.case"
awk '{ n++; if ($1 != $2) { d++; r = $1 / $2; g += log(r);
         if (!lo || r < lo) lo = r; if (r > hi) hi = r; s += r > 1; f += r < 1 } }
     END { if (d) printf "%d of %d differ: this / baseline geometric mean %.3f, %.3f-%.3f; slower %d, faster %d\n", d, n, exp(g / d), lo, hi, s, f;
           else printf "all %d the same\n", n }' "$out"
