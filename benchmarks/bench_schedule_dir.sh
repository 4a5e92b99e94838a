#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What coll_tacos_schedule_dir saves a first call, offline: the component's
# first-call synthesis (tacos-synth -k auto) against reading the schedule it
# kept (tacos-synth --schedule-dir, the same files: read, checksum,
# validation), alternating in each round, one process per run; 64 MiB
# All-Reduce on fs:8xH (8 ranks per host at 100 GB/s 0.5 us, H hosts per
# rail switch at 25 GB/s 2 us, unwound with degree 1 as the component does).
#   sh benchmarks/bench_schedule_dir.sh [HOSTS...]   (default 8 32 64 128)
# ROUNDS (default 3): the median of each is printed.  HIER (default flat):
# --hierarchy; auto is coll_tacos_hierarchy 2's first call (a rank's part
# against flat, flat only below 512 ranks), whose file holds only the
# part's choice where the part is kept ("kept" says which: whole or part).
HIER=${HIER:-flat}
B=${TACOS_BUILD:-$(dirname "$0")/..}
SYNTH=$B/synth/tacos-synth
ROUNDS=${ROUNDS:-3}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
[ $# -gt 0 ] || set -- 8 32 64 128
field() { echo "$1" | sed "s/.*\"$2\":\([0-9.e+-]*\).*/\1/"; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "| ranks | k | kept | synthesis (-k auto) | its peak RSS | read | its peak RSS | file | synthesis / read |"
echo "|---|---|---|---|---|---|---|---|---|"
for h in "$@"; do
    : >"$D/synth" && : >"$D/read"
    for r in $(seq "$ROUNDS"); do
        rm -rf "$D/kept" && mkdir "$D/kept"
        for what in synth read; do
            out=$(/usr/bin/time -f "rss %M" -o "$D/rss" "$SYNTH" -t "fs:8x$h" --bw 100,25 \
                --lat 0.5,2 -c allreduce -s 64MiB -k auto --hierarchy "$HIER" \
                --schedule-dir "$D/kept" --no-validate --summary-json 2>"$D/err") ||
                { cat "$D/err" >&2; exit 1; }
            case "$out" in *'"read":true'*) [ $what = read ] ;; *) [ $what = synth ] ;; esac ||
                { echo "round $r: $what did not happen" >&2; exit 1; }
            echo "$(field "$out" synth_seconds) $(sed -n 's/rss //p' "$D/rss")" >>"$D/$what"
            k=$(field "$out" chunks_per_npu)
        done
    done
    s=$(cut -d' ' -f1 "$D/synth" | median) sr=$(cut -d' ' -f2 "$D/synth" | median)
    l=$(cut -d' ' -f1 "$D/read" | median) lr=$(cut -d' ' -f2 "$D/read" | median)
    bytes=$(wc -c <"$(ls "$D"/kept/*.sched)")
    kept=whole
    [ "$bytes" = 160 ] && kept=part
    printf '| %d | %s | %s | %.3f s | %d MiB | %.3f s | %d MiB | %d KiB | %.1f |\n' $((8 * h)) \
        "$k" "$kept" "$s" $((sr / 1024)) "$l" $((lr / 1024)) $(((bytes + 1023) / 1024)) \
        "$(echo "$s / $l" | bc -l)"
done
