#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tacos-synth from the command line: summaries, files, determinism, and clear
# errors with the documented exit codes for bad flags and bad files; and
# tacos-probe's bad flags.
S=${TACOS_SYNTH:-../../synth/tacos-synth}
T=${TACOS_TMP:-./tmp}/cli
FIX=$(dirname "$0")/../fixtures
mkdir -p "$T"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect CODE 'stderr substring' args...
expect() {
    code=$1 needle=$2
    shift 2
    "$S" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" = "$code" ] || fail "$(basename "$S") $*: exit $rc, want $code ($(cat "$T/err"))"
    grep -qF -- "$needle" "$T/err" "$T/out" || fail "$(basename "$S") $*: no '$needle' in output: $(cat "$T/err")"
}

expect 0 "usage: tacos-synth" --help
expect 0 "efficiency 100.0%" --topology mesh2d:4x4 --bw 50 --lat 0.5 --collective allgather --size 16MiB
expect 0 '"collective_us":' --topology mesh2d:8x8 --collective allreduce --size 64MiB --chunks-per-npu 4 --seed 1 --trials 2 --summary-json
for key in npus chunks synth_seconds collective_us lower_bound_us transfers; do
    grep -q "\"$key\":" "$T/out" || fail "summary-json lacks $key"
done
[ "$(wc -l <"$T/out")" = 1 ] || fail "summary-json is not one line"
expect 0 "lower bound" -t rfs:2x4x2 --bw 200,100,50 --lat 0.5 -c reduce-scatter --chunk-size 64KiB -k 2
expect 0 "program of rank 2" -t ring:4 -c allreduce --program 2
expect 0 "14 NPUs" -t "$FIX/mesh4x4_failed.json" -c broadcast --root 3
expect 0 "14 NPUs" -t mesh2d:4x4 --failed-npus 5,6 -c allreduce
expect 1 "not connected" -t mesh2d:4x4 --failed-npus 0,5,10,15 -c allreduce  # the diagonal cuts it

# schedule files: write, read back and validate, same seed => same bytes
expect 0 "transfers" -t torus2d:4x4 -c allreduce -k 2 --seed 9 -o "$T/a.json" --write-topology "$T/topo.json"
expect 0 "transfers" -t torus2d:4x4 -c allreduce -k 2 --seed 9 -o "$T/b.json"
cmp -s "$T/a.json" "$T/b.json" || fail "same seed gave different schedule files"
expect 0 "valid schedule" --validate "$T/a.json"
expect 0 "16 NPUs" -t "$T/topo.json" -c allgather
sed 's/\[0,/[99,/' "$T/a.json" >"$T/bad.json"
expect 1 "invalid schedule" --validate "$T/bad.json"
head -c 300 "$T/a.json" >"$T/trunc.json"
expect 1 "malformed JSON" --validate "$T/trunc.json"
expect 1 "cannot open" --validate "$T/missing.json"

# simulation, baselines and pictures
expect 0 "ring " -t mesh2d:4x4 -c allreduce --size 16MiB -k 2 --compare ring,direct,rhd,dbt --heatmap "$T/heat.svg" --utilization "$T/util.svg"
grep -q "^ideal " "$T/out" || fail "--compare prints no ideal row"
for f in heat heat-ring heat-direct heat-rhd heat-dbt util; do
    grep -q "</svg>" "$T/$f.svg" || fail "$f.svg missing or not an SVG"
done
expect 0 "(rhd allgather needs a power-of-two" -t ring:6 -c allgather --compare ring,rhd
expect 0 '"baselines":{"ring":' -t torus2d:4x4 -c allreduce --compare ring,direct --summary-json
for key in simulated_us ideal_us direct; do
    grep -q "\"$key\":" "$T/out" || fail "summary-json with --compare lacks $key"
done
expect 0 "simulated" --simulate "$T/a.json" --compare ring
expect 1 "unknown baseline 'tree'" -t ring:4 -c allreduce --compare ring,tree
# coll/han's two levels: groups of the shape's first size, or han:L
expect 0 "han " -t fs:4x4 -c allreduce --compare han,han:2
grep -q "^han  *[0-9]" "$T/out" || fail "--compare han prints no time for han"
grep -q "^han:2  *[0-9]" "$T/out" || fail "--compare han:2 prints no time for han:2"
expect 0 "han:L" -t ring:4 -c allreduce --compare han
expect 0 "han:L" -t dragonfly:4x5 -c allreduce --compare han
expect 0 "dividing" -t fs:4x4 -c allreduce --compare han:3
expect 0 "dividing" -t fs:4x4 -c allreduce --compare "han: 4"
# switches as nodes: simulates without --compare, says so; no ideal bound;
# built-in shapes only
expect 0 "(switches as nodes)" -t fs:4x4 --bw 100,25 -c allreduce --switch-nodes
expect 0 "ideal         n/a" -t fs:4x4 --bw 100,25 -c allreduce --compare ring,han --switch-nodes
grep -q "^ring  *[0-9.]*  *- " "$T/out" || fail "--switch-nodes: ring's row shows an ideal share"
expect 0 '"switch_nodes":true,"ideal_us":null' -t fs:4x4 -c allreduce --switch-nodes --compare ring --summary-json
expect 0 "has no switch" -t torus2d:3x3 -c allreduce --switch-nodes
expect 2 "--switch-nodes takes a built-in shape" -t fs:4x4 --switch-nodes --failed-npus 3
expect 0 "" -t fs:4x4 --write-topology "$T/fs.json"
expect 2 "--switch-nodes takes a built-in shape" -t "$T/fs.json" --switch-nodes
expect 1 "cannot open" -t ring:4 --heatmap /nonexistent/dir/h.svg
expect 2 "at most 8 baselines" -t ring:4 --compare a,b,c,d,e,f,g,h,i

# bad flags and values
# aggregation: messages of several chunks, no bounds claimed for them; the
# schedule written validates and simulates (its messages kept)
expect 0 "messages      up to 7 chunks each" -t mesh2d:8x8 -c allreduce -s 64KiB --chunks-per-message 8 --message-bytes 0 --compare rhd -o "$T/agg.json"
grep -q "bounds        n/a" "$T/out" || fail "--chunks-per-message: bounds not marked n/a"
grep -q "^lower bound" "$T/out" && fail "--chunks-per-message: a lower bound printed for messages of several chunks"
expect 0 "messages      up to 7 chunks each" --simulate "$T/agg.json"
expect 0 '"lower_bound_us":null,"efficiency":null,"optimal_us":null,"optimal_efficiency":null,"transfers":' -t mesh2d:8x8 -c allreduce -s 64KiB --chunks-per-message 8 --message-bytes 0 --summary-json
grep -q '"chunks_per_message":7,' "$T/out" || fail "--chunks-per-message 8 --summary-json: no chunks_per_message 7"
expect 0 '"chunks_per_message":1,' -t mesh2d:8x8 -c allreduce -s 64MiB --chunks-per-message 8 --summary-json
grep -q '"lower_bound_us":[0-9]' "$T/out" || fail "--chunks-per-message 8 at 64 MiB: no bound"
expect 2 "--chunks-per-message takes --method greedy" -t ring:4 --chunks-per-message 2 --method ilp
expect 2 "--chunks-per-message '0': expected an integer 1..64" -t ring:4 --chunks-per-message 0
# messages held to --message-bytes (default 3840): chunks of 1 KiB three to
# a message at most, two with 2 KiB
expect 0 '"chunks_per_message":3,' -t mesh2d:8x8 -c allreduce -s 64KiB --chunks-per-message 8 --summary-json
expect 0 '"chunks_per_message":2,' -t mesh2d:8x8 -c allreduce -s 64KiB --chunks-per-message 8 --message-bytes 2KiB --summary-json
expect 2 "--message-bytes 'x': expected 0 or a whole number of bytes" -t ring:4 --message-bytes x
expect 2 "--chunks-per-message '65': expected an integer 1..64" -t ring:4 --chunks-per-message 65
expect 2 "unknown option '--bogus'" --bogus
expect 2 "missing --topology" --size 1MiB
expect 2 "option '--size' needs a value" -t ring:4 --size
expect 2 "--size '0'" -t ring:4 --size 0
expect 2 "--size '-5MiB'" -t ring:4 --size -5MiB
expect 2 "--size '12XB'" -t ring:4 --size 12XB
expect 2 "--chunks-per-npu '0'" -t ring:4 -k 0
expect 2 "--trials 'x'" -t ring:4 --trials x
expect 2 "unknown collective 'gossip'" -t ring:4 -c gossip
expect 0 "pairwise" -t ring:4 -c alltoall -k 2 --compare direct,pairwise,bruck
expect 0 "alltoall: direct, pairwise, bruck" -t ring:4 -c alltoall --compare ring
expect 2 "--bw '50,,1'" -t ring:4 --bw 50,,1
expect 2 "give --size or --chunk-size" -t ring:4 --size 1MiB --chunk-size 1KiB
expect 2 "unexpected argument 'extra'" -t ring:4 extra
expect 1 "unknown topology 'blob:3'" -t blob:3
expect 1 "give 1 or 3 bandwidth values" -t rfs:2x2x2 --bw 1,2
expect 1 "root 9 is not an NPU" -t ring:4 -c broadcast --root 9
expect 1 "not connected" -t line:5 --failed-npus 2 -c allgather
expect 1 "cannot open" -t "$T/nope.json"
printf '{"npus": 2, "links": [' >"$T/broken.json"
expect 1 "broken.json: malformed JSON" -t "$T/broken.json"

# -k auto: the component's first-call policy, checked against the fixed k:
# the fastest of 1, 2, 4, 8 up to the first more than a tenth slower than
# the best before it, then 16 and 32 while each is the fastest so far
# (2D switch 8x4 at 1 GB: 32).  A k found clearly slower stops part-way
# (fs:8x8: k = 2's All-Gather; mesh2d:8x8 aggregated: its phases with and
# without aggregation), and larger k split the phases kept from k = 1.
for shape in "ring:8 -c allreduce -s 64MiB" "mesh2d:4x4 -c allgather -s 1MiB" \
    "fs:8x8 --bw 100,25 --lat 0.5,2 -c allreduce -s 64MiB" \
    "mesh2d:8x8 -c allreduce -s 1MiB --chunks-per-message 8" \
    "dgx1 --lat 5 -c allreduce -s 16MiB" \
    "rfs:2x4x2 --bw 200,100,50 -c reduce-scatter -s 4MiB" "fs:2x4 --bw 100,25 --lat 0.5,2 -c broadcast -s 16MiB" \
    "ss:8x4 --bw 300,25 -c allreduce -s 1GB" "rfs:2x4x2 --bw 200,100,50 -c allreduce -s 1GB"; do
    want=$(for k in 1 2 4 8 16 32; do
        # shellcheck disable=SC2086
        "$S" -t $shape -k $k --summary-json | sed 's/.*"collective_us":\([0-9.e+]*\).*/\1/'
    done | awk '{ if (NR > 4 && k != NR - 1) exit
                  if (best == "" || $1 < best) { best = $1; k = NR }
                  else if ($1 > 1.1 * best) exit }
                END { printf "%d %s", 2 ^ (k - 1), best }')
    # shellcheck disable=SC2086
    got=$("$S" -t $shape -k auto --summary-json |
        sed 's/.*"chunks_per_npu":\([0-9]*\),.*"collective_us":\([0-9.e+]*\).*/\1 \2/')
    [ "$got" = "$want" ] || fail "-t $shape -k auto: chose k and time '$got', want '$want'"
    case "$shape" in ss:8x4*) [ "${got%% *}" = 32 ] || fail "-t $shape -k auto: k ${got%% *}, want 32" ;; esac
done
expect 2 "expected an integer >= 1 or auto" -t ring:4 -k some
expect 2 "--chunks-per-npu auto takes --size and --method greedy" -t ring:4 -k auto --chunk-size 1KiB
expect 2 "--chunks-per-npu auto takes --size and --method greedy" -t ring:4 -k auto --method ilp
# --hierarchy: levels where the shape has them (an error elsewhere), auto the
# faster of the two (flat on fs:8x8 with rails at degree 1, levels at 8)
expect 0 ", in levels)" -t fs:2x4 --bw 100,25 -c allreduce --hierarchy levels
expect 0 '"hierarchy":"levels"' -t fs:2x4 --bw 100,25 -c allgather --hierarchy levels --summary-json
expect 1 "ring:8 has no two levels of equal groups" -t ring:8 --hierarchy levels
expect 1 "no hierarchical broadcast" -t fs:2x4 -c broadcast --hierarchy levels
expect 0 '"hierarchy":"flat"' -t fs:8x8 --bw 100,25 --lat 0.5,2 -c allreduce -s 64MiB \
    --hierarchy auto --summary-json
expect 0 '"hierarchy":"levels"' -t fs:8x8 --bw 100,25 --lat 0.5,2 --unwind-degree 8 -c allreduce \
    -s 64MiB -k auto --hierarchy auto --summary-json
# --unwind-degree auto: the component's unwinding (fs:8x16's rails of 16
# hosts: the next 8, as --unwind-degree 8); a bad degree is named
expect 0 "(128 NPUs, 1920 links)" -t fs:8x16 --unwind-degree auto -c allreduce -s 1MiB
# ... and, as the component does, small sizes on the switches fully
# unwound (tacos_lowering_for); --write-topology writes the one taken
expect 0 "fs:8x16, switches fully unwound (128 NPUs, 2816 links)" -t fs:8x16 \
    --unwind-degree auto -c allreduce -s 64KiB --write-topology "$T/full.json"
grep -q '"name":[[:space:]]*"fs:8x16, switches fully unwound"' "$T/full.json" ||
    fail "--write-topology: not the fully unwound topology: $(head -c 300 "$T/full.json")"
expect 0 "fs:8x16, switches fully unwound (127 NPUs" -t fs:8x16 --unwind-degree auto \
    -c allgather -s 64KiB --failed-npus 5
expect 0 "fs:8x16 (128 NPUs, 1920 links)" -t fs:8x16 --unwind-degree wide -c allreduce -s 64KiB
# (none where every switch fully unwound would have more links than a
# topology may: 4,096 ranks of 16 per host)
expect 0 "fs:16x256 (4096 NPUs, 94208 links)" -t fs:16x256 --unwind-degree auto -c allreduce \
    -s 64KiB -k 1 --hierarchy levels --part 0
expect 2 "--unwind-degree 'x': expected an integer >= 1, auto or wide" -t switch:4 --unwind-degree x
expect 0 "transfers     28 (to and from the one rank)" -t fs:2x4 --bw 100,25 -c allreduce \
    --hierarchy levels --part 5 --program 5
expect 2 "--part takes --hierarchy levels or auto" -t fs:2x4 --part 1
# a part's throughput optimum is its whole topology's (flat's); no lower
# bound for its k
flat=$("$S" -t fs:2x4 --bw 100,25 -c allreduce | sed -n 's/^optimal *\([0-9.]*\) us.*/\1/p')
part=$("$S" -t fs:2x4 --bw 100,25 -c allreduce --hierarchy levels --part 5 |
    sed -n 's/^optimal *\([0-9.]*\) us.*/\1/p')
[ -n "$flat" ] && [ "$flat" = "$part" ] || fail "--part 5: optimum '$part', flat's '$flat'"
expect 0 '"lower_bound_us":null' -t fs:2x4 --bw 100,25 -c allreduce --hierarchy levels --part 5 \
    --summary-json
# --part with auto: coll/tacos's default policy for one rank (the part
# against flat below 512 ranks: flat on fs:8x8 with degree 1; the part at 512)
expect 0 '"hierarchy":"flat"' -t fs:8x8 --bw 100,25 --lat 0.5,2 -c allreduce -s 64MiB \
    -k auto --hierarchy auto --part 3 --summary-json
expect 0 '"part":true' -t fs:8x64 --bw 100,25 --lat 0.5,2 -c allreduce -s 64MiB -k auto \
    --hierarchy auto --part 3 --summary-json
expect 2 "--part takes --hierarchy levels" -t fs:2x4 --hierarchy levels --part 1 -o "$T/x.json"
expect 1 "rank 8 is not an NPU" -t fs:2x4 --hierarchy levels --part 8
# every rank's part joined: a whole schedule, validated, simulated, written
expect 0 "simulated" -t fs:4x4 --bw 100,25 -c allreduce --hierarchy levels --part all \
    --compare ring -o "$T/parts.json"
expect 0 "valid schedule" --validate "$T/parts.json"
expect 2 "--part all takes --hierarchy levels" -t fs:2x4 --part all
expect 2 "expected a rank >= 0 or all" -t fs:2x4 --hierarchy levels --part some
expect 2 "expected flat, levels or auto" -t fs:2x4 --hierarchy tree
expect 2 "--hierarchy levels or auto takes --method greedy" -t fs:2x4 --hierarchy levels --method ilp

# --schedule-dir: kept by the first run, read by the second (the same
# schedule), other options another file; a damaged file said and replaced
rm -rf "$T/kept" && mkdir -p "$T/kept"
expect 0 "kept in $T/kept/tacos-" -t fs:2x4 -c allreduce -k auto --schedule-dir "$T/kept" -o "$T/k1.json"
expect 0 "read          " -t fs:2x4 -c allreduce -k auto --schedule-dir "$T/kept" -o "$T/k2.json"
cmp -s "$T/k1.json" "$T/k2.json" || fail "--schedule-dir: the schedule read differs from the one kept"
expect 0 "kept in" -t fs:2x4 -c allreduce -k auto --seed 3 --schedule-dir "$T/kept"
[ "$(ls "$T/kept" | wc -l)" = 2 ] || fail "--schedule-dir: $(ls "$T/kept" | wc -l) files, want 2"
for f in "$T"/kept/*; do printf 'XXXXXXXX' | dd of="$f" bs=1 seek=200 conv=notrunc 2>/dev/null; done
expect 0 "checksum mismatch (the file is damaged); synthesizing it again" -t fs:2x4 -c allreduce \
    -k auto --schedule-dir "$T/kept"
expect 0 "read          " -t fs:2x4 -c allreduce -k auto --schedule-dir "$T/kept"
expect 2 "not with --part or --method ilp" -t fs:2x4 --hierarchy levels --part 1 \
    --schedule-dir "$T/kept"
expect 2 "not with --validate" --validate "$T/k1.json" --schedule-dir "$T/kept"
# with --hierarchy auto what coll/tacos keeps by default: a flat schedule
# where its policy keeps flat, the choice (k, time) where it keeps each
# rank's part, from which rank 0's part is made again; with levels (its
# hierarchy 1) the choice
rm -rf "$T/auto"
expect 0 "kept in $T/auto/tacos-" -t fs:8x8 --bw 100,25 --lat 0.5,2 -c allreduce -s 64MiB -k auto \
    --hierarchy auto --schedule-dir "$T/auto"
expect 0 "the part's choice kept: coll/tacos (coll_tacos_hierarchy 2) synthesizes each rank's part" \
    -t fs:8x64 --bw 100,25 --lat 0.5,2 -c allreduce -s 64MiB -k auto --hierarchy auto \
    --schedule-dir "$T/auto"
expect 0 "the part's choice, rank 0's part made at its k" -t fs:8x64 --bw 100,25 --lat 0.5,2 \
    -c allreduce -s 64MiB -k auto --hierarchy auto --schedule-dir "$T/auto"
[ "$(ls "$T/auto" | wc -l)" = 2 ] || fail "--schedule-dir, auto: $(ls "$T/auto" | wc -l) files, want 2"
expect 0 "the part's choice kept: coll/tacos (coll_tacos_hierarchy 1)" -t fs:2x4 -c allreduce \
    -k auto --hierarchy levels --schedule-dir "$T/auto"
expect 0 "the part's choice, rank 0's part made at its k" -t fs:2x4 -c allreduce -k auto \
    --hierarchy levels --schedule-dir "$T/auto"
[ "$(ls "$T/auto" | wc -l)" = 3 ] || fail "--schedule-dir, levels: $(ls "$T/auto" | wc -l) files, want 3"
expect 1 "take a whole schedule" -t fs:8x64 --bw 100,25 --lat 0.5,2 -c allreduce -s 64MiB -k auto \
    --hierarchy auto --schedule-dir "$T/auto" -o "$T/auto.json"
rm -rf "$T/newdir"
expect 0 "kept in $T/newdir/tacos-" -t fs:2x4 --schedule-dir "$T/newdir"
expect 1 "cannot create" -t fs:2x4 --schedule-dir "$T/no/such/parent"

# tacos-probe's bad usage (exit 2, what is wrong named)
S=${TACOS_PROBE:-../../topo_probe/tacos-probe}
for n in 0 65 x; do
    expect 2 "--infer-hosts needs an integer from 1 to 64" --all --infer-hosts $n
done
expect 2 "--piece needs 0 or an integer >= 1024" --all --piece 5

[ "$fails" = 0 ] && echo "test_cli: all passed" || echo "test_cli: $fails failure(s)"
[ "$fails" = 0 ]
