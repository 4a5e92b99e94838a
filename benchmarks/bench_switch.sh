#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Hosts on one switch (tests/testbed/testbed.sh; root): the model the
# measurement makes of them against the one it made before, in one job.
# Inside the testbed, tacos-probe --all measures the network as the
# component does; then osu_coll --ab alternates:
#   tacos   coll/tacos with its own measurement (hosts found on one switch:
#           the switch unwound, a ring of hosts with degree 1);
#   mesh    coll/tacos with a topology file of every pair of hosts a link at
#           the measured rate and latency (what the measurement gave before:
#           a host may send H-1 times what its port carries);
#   file    coll/tacos with the testbed's true topology (the switch unwound
#           into a full mesh, each link a port's rate / (H-1));
#   tuned   Open MPI's tuned (the baseline: ratios are to it).
# Beside them: the time tacos-synth models on the measured and the mesh
# topology (-k auto).  One rank per host.
#
#   benchmarks/bench_switch.sh [SHAPE]          (default switch4)
# Environment: COLLS (default: allreduce allgather), MIN/MAX bytes
# (262144/4194304), ROUNDS (3).
B=$(cd "$(dirname "$0")/.." && pwd)
SHAPE=${1:-switch4}
COLLS=${COLLS:-allreduce allgather}
MIN=${MIN:-262144} MAX=${MAX:-4194304} ROUNDS=${ROUNDS:-3}
. "$B/benchmarks/common.sh" && use_built_component
export B COLLS MIN MAX ROUNDS

cat >"${TMPDIR:-/tmp}/bench_switch_job.sh" <<'EOF2'
sed 's/^/# /' "$TESTBED_DIR/shape.txt"
$TESTBED_MPIRUN "$B/topo_probe/tacos-probe" --all -o "$TESTBED_DIR/measured.json" \
    >"$TESTBED_DIR/probe" 2>&1
grep "network\|  h\|switch" "$TESTBED_DIR/probe" | sed 's/^/# /'
h=$(grep -c "^h[0-9]*: ranks" "$TESTBED_DIR/shape.txt")
set -- $(awk '/GB\/s \(measured\)/ { for (i = 1; i <= NF; i++) { if ($i == "us") l = $(i - 1); if ($i == "GB/s") b = $(i - 1) } print l, b; exit }' "$TESTBED_DIR/probe")
[ -n "${2:-}" ] || { echo "no measured pair"; cat "$TESTBED_DIR/probe"; exit 1; }
"$B/synth/tacos-synth" -t "fc:$h" --bw "$2" --lat "$1" --write-topology "$TESTBED_DIR/mesh.json" \
    -c allgather >/dev/null || exit 1
echo "# mesh: fc:$h at $1 us, $2 GB/s"
for coll in $COLLS; do
    case $coll in allreduce) c=allreduce ;; allgather) c=allgather ;; *) c=reduce-scatter ;; esac
    echo "## $coll"
    $TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self \
        "$B/benchmarks/osu_coll" "$coll" --min "$MIN" --max "$MAX" --ab "$ROUNDS" \
        --variant tacos --variant "mesh:coll_tacos_topo_file=$TESTBED_DIR/mesh.json" \
        --variant "file:coll_tacos_topo_file=$TESTBED_TOPO" --variant tuned:coll_tacos_enable=0 \
        --baseline tuned 2>&1 | grep -v setpgid
    for bytes in $(awk -v a="$MIN" -v b="$MAX" 'BEGIN { for (x = a; x <= b; x *= 2) print x }'); do
        m=$("$B/synth/tacos-synth" --topology "$TESTBED_DIR/measured.json" -c "$c" -s "${bytes}B" \
            -k auto --summary-json 2>/dev/null | sed 's/.*"collective_us":\([0-9.e+]*\).*/\1/')
        x=$("$B/synth/tacos-synth" --topology "$TESTBED_DIR/mesh.json" -c "$c" -s "${bytes}B" \
            -k auto --summary-json 2>/dev/null | sed 's/.*"collective_us":\([0-9.e+]*\).*/\1/')
        echo "# modelled at $bytes B: measured (switch) $m us, mesh $x us"
    done
done
EOF2
echo "# ===== $SHAPE, 1 rank per host ====="
bash "$B/tests/testbed/testbed.sh" run "$SHAPE" -- sh "${TMPDIR:-/tmp}/bench_switch_job.sh"
