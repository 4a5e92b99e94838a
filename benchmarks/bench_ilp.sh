#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# bench_ilp.sh: the greedy's gap to the optimum on small shapes (issue 13, part 3).
# For each shape, All-Gather of 1 GB with 1 and 2 chunks per NPU: the greedy
# (1 trial and 16 trials) against TACOS-ILP (tacos-synth --method ilp, which
# starts from the 1-trial greedy and searches the horizons below it).  "proven":
# no schedule whose transfers start on the ILP's time steps is faster than the
# ILP column (exact when all links take the same time); otherwise the solver hit
# the time limit and the column is the best found.
# COLL=alltoall: All-to-All of 1 MiB per rank (where latency counts), k = 1,
# on shapes small enough for the program, with pairwise exchange / ILP beside.
#
#   [COLL=alltoall] benchmarks/bench_ilp.sh [SECONDS]   (time limit per ILP run, default 60)
set -eu
SYNTH=${SYNTH:-$(dirname "$0")/../synth/tacos-synth}
SEC=${1:-60}
"$SYNTH" -t ring:2 --method ilp --ilp-seconds 1 >/dev/null 2>&1 ||
    { echo "bench_ilp.sh: $SYNTH has no ILP (configure found no CBC)" >&2; exit 77; }
field() { python3 -c "import sys,json; d=json.loads(sys.stdin.read()); print(d['$1'])"; }
COLL=${COLL:-allgather}
case $COLL in
allgather) SIZE=1GB KS="1 2" EXTRA= ;;
alltoall) SIZE=1MiB KS=1 EXTRA="--compare pairwise" ;;
*) echo "bench_ilp.sh: COLL is allgather or alltoall" >&2 && exit 2 ;;
esac
echo "| shape | k | greedy µs | greedy ×16 µs | ILP µs | proven | greedy ÷ ILP | ×16 ÷ ILP | optimal µs (cut) | ILP s |${EXTRA:+ pairwise ÷ ILP |}"
echo "|---|---|---|---|---|---|---|---|---|---|${EXTRA:+---|}"
shapes() {
    if [ "$COLL" = alltoall ]; then
        cat <<'EOF'
ring:4 -t ring:4
line:4 -t line:4
mesh2d:2x3 -t mesh2d:2x3
mesh2d:3x3 -t mesh2d:3x3
torus2d:3x3 -t torus2d:3x3
hypercube:8 -t hypercube:8
ring:8 -t ring:8
fc:8 -t fc:8
dgx1 -t dgx1
fs:2x4(100,25) -t fs:2x4 --bw 100,25
rfs:2x2x2(200,100,50) -t rfs:2x2x2 --bw 200,100,50 --lat 0.5,1,2
ss:4x2(300,25) -t ss:4x2 --bw 300,25
EOF
    else
        cat <<'EOF'
ring:8 -t ring:8
line:6 -t line:6
mesh2d:3x3 -t mesh2d:3x3
mesh2d:4x4 -t mesh2d:4x4
torus2d:4x4 -t torus2d:4x4
hypercube:16 -t hypercube:16
fc:8 -t fc:8
switch:8 -t switch:8 --unwind-degree 2
dgx1 -t dgx1
fs:2x4(100,25) -t fs:2x4 --bw 100,25
rfs:2x2x2(200,100,50) -t rfs:2x2x2 --bw 200,100,50
ss:4x2(300,25) -t ss:4x2 --bw 300,25
dragonfly:2x3(400,200) -t dragonfly:2x3 --bw 400,200
EOF
    fi
}
shapes | while read -r name args; do
    for k in $KS; do
        g1=$("$SYNTH" $args -c "$COLL" -s $SIZE -k $k --summary-json | field collective_us)
        g16=$("$SYNTH" $args -c "$COLL" -s $SIZE -k $k --trials 16 --summary-json | field collective_us)
        j=$("$SYNTH" $args -c "$COLL" -s $SIZE -k $k --method ilp --ilp-seconds "$SEC" $EXTRA --summary-json | tail -1)
        python3 -c "
import json
d = json.loads('''$j''')
i = d['collective_us']
extra = ' %.3f |' % (d['baselines']['pairwise'] / i) if 'baselines' in d else ''
print('| $name | $k | %.1f | %.1f | %.1f | %s | %.3f | %.3f | %.1f | %.1f |%s' % ($g1, $g16, i,
      'yes' if d['ilp_proven'] else 'no (limit)', $g1 / i, $g16 / i, d['optimal_us'], d['synth_seconds'], extra))"
    done
done
