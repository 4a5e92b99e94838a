#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# coll/tacos against Open MPI's tuned and han on an emulated cluster
# (tests/testbed/testbed.sh; root). For each shape, one testbed and, per collective:
#  job 1: osu_coll --ab with three duplicates of MPI_COMM_WORLD timed in
#         alternating blocks: coll/tacos with its probed + measured topology,
#         coll/tacos with the true topology file the testbed wrote, and tuned
#         (where the testbed wrote a topology.conf, a fourth: coll/tacos with
#         it as coll_tacos_fabric_file);
#  job 2: han alone (coll_han_priority 40, coll/tacos not loaded: with han as
#         the component before coll/tacos, han's allgather hangs creating its
#         sub-communicators during coll/tacos's set-up on this testbed), timed
#         without alternation; its ratio is to job 1's tuned (separate jobs:
#         noisier than the alternating columns).
# Beside them: the time tacos-synth models for the true topology (-k auto,
# the chunks per rank the component picks; allgatherv: the Allgather of its
# total with equal blocks).
#
#   benchmarks/bench_testbed.sh [-r RANKS] [SHAPE...]     (default: two pairs4 ring4 star3)
# Environment: COLLS (default: allreduce allgather reduce_scatter_block bcast
# reduce; also alltoall, gather, scatter), MIN/MAX bytes (65536/16777216), ROUNDS (3); CHUNKS=1 adds a job
# timing coll/tacos's automatic chunk count against 1, 2, 4, 8, 16 and 32
# chunks per rank (coll_tacos_chunks through MPI_T), ratios to the automatic
# one; CHUNKS=only runs that job alone.
# HIER=1 adds a job timing coll/tacos in levels (coll_tacos_hierarchy 1),
# flat (0) and as the model picks (2) against tuned, ratios to tuned;
# HIER=only runs that job alone.
B=$(cd "$(dirname "$0")/.." && pwd)
RANKS=1
[ "${1:-}" = "-r" ] && { RANKS=$2; shift 2; }
SHAPES=${*:-two pairs4 ring4 star3}
COLLS=${COLLS:-allreduce allgather reduce_scatter_block bcast reduce}
MIN=${MIN:-65536} MAX=${MAX:-16777216} ROUNDS=${ROUNDS:-3}
. "$B/benchmarks/common.sh" && use_built_component
export B COLLS MIN MAX ROUNDS CHUNKS HIER

cat >"${TMPDIR:-/tmp}/bench_testbed_job.sh" <<'EOF'
sed 's/^/# /' "$TESTBED_DIR/shape.txt"
# what the component measures of this shape
$TESTBED_MPIRUN "$B/topo_probe/tacos-probe" --all -o "$TESTBED_DIR/measured.json" 2>&1 |
    grep "network\|  h" | sed 's/^/# /'
main_job() {
    # (with the shape's topology.conf also coll/tacos reading it: fabric)
    $TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self \
        "$B/benchmarks/osu_coll" "$coll" --min "$MIN" --max "$MAX" --ab "$ROUNDS" \
        --variant tacos --variant "file:coll_tacos_topo_file=$TESTBED_TOPO" \
        ${TESTBED_FABRIC:+--variant "fabric:coll_tacos_fabric_file=$TESTBED_FABRIC"} \
        --variant tuned:coll_tacos_enable=0 >"$TESTBED_DIR/a" 2>&1
    timeout 900 $TESTBED_MPIRUN --mca coll han,tuned,basic,inter,libnbc,self --mca coll_han_priority 40 \
        "$B/benchmarks/osu_coll" "$coll" --min "$MIN" --max "$MAX" >"$TESTBED_DIR/b" 2>&1
    printf "| bytes | tacos µs | tacos+file µs | tacos+fabric µs | tuned µs | han µs | tacos/tuned | tacos/file | fabric/file | han/tuned | modelled µs |\n"
    printf "|---|---|---|---|---|---|---|---|---|---|---|\n"
    grep -v '^#' "$TESTBED_DIR/a" | while read -r bytes tacos file c3 c4 rest; do
        case $bytes in '' | *[!0-9]*) continue ;; esac # a line that is not a row (a warning)
        if [ -n "${TESTBED_FABRIC:-}" ]; then fabric=$c3 tuned=$c4; else fabric=- tuned=$c3; fi
        han=$(awk -v b="$bytes" '$1 == b { print $2 }' "$TESTBED_DIR/b")
        best=$("$B/synth/tacos-synth" --topology "$TESTBED_TOPO" -c "$c" -s "${bytes}B" -k auto \
            --summary-json 2>/dev/null | sed 's/.*"collective_us":\([0-9.e+]*\).*/\1/')
        awk -v B="$bytes" -v a="$tacos" -v f="$file" -v x="$fabric" -v t="$tuned" -v h="$han" -v m="$best" \
            'BEGIN { xs = x == "-" ? "-" : sprintf("%.0f", x); xr = x == "-" ? "-" : sprintf("%.2fx", x / f)
                     printf "| %d Ki | %.0f | %.0f | %s | %.0f | %.0f | %.2fx | %.2fx | %s | %.2fx | %.0f |\n",
                     B / 1024, a, f, xs, t, h, a / t, a / f, xr, h / t, m }'
    done
    grep -q "^#" "$TESTBED_DIR/a" || { echo "job 1 failed:"; tail -5 "$TESTBED_DIR/a"; }
}
for coll in $COLLS; do
    case $coll in allreduce) c=allreduce ;; allgather | allgatherv) c=allgather ;; bcast) c=broadcast ;;
        reduce | alltoall | gather | scatter) c=$coll ;; *) c=reduce-scatter ;; esac
    echo "## $coll"
    if [ "${HIER:-0}" != 0 ]; then
        echo "### $coll: in levels, flat, as the model picks, and tuned (ratio = variant / tuned)"
        $TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self \
            "$B/benchmarks/osu_coll" "$coll" --min "$MIN" --max "$MAX" --ab "$ROUNDS" \
            --variant levels:coll_tacos_hierarchy=1 --variant flat:coll_tacos_hierarchy=0 \
            --variant auto:coll_tacos_hierarchy=2 --variant tuned:coll_tacos_enable=0 \
            --baseline tuned 2>&1 |
            grep -v setpgid
        [ "$HIER" = only ] && continue
    fi
    [ "${CHUNKS:-0}" = only ] || main_job
    case "${CHUNKS:-0}" in 1 | only) ;; *) continue ;; esac
    echo "### $coll: automatic chunk count against fixed ones (ratio = k / auto)"
    for bytes in $MIN $MAX; do
        echo "# the model's k (tacos-synth -k auto, true topology) at $bytes bytes: $("$B/synth/tacos-synth" \
            --topology "$TESTBED_TOPO" -c "$c" -s "${bytes}B" -k auto --summary-json |
            sed 's/.*"chunks_per_npu":\([0-9]*\).*/\1/')"
    done
    $TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self \
        "$B/benchmarks/osu_coll" "$coll" --min "$MIN" --max "$MAX" --ab "$ROUNDS" \
        --variant auto --variant k1:coll_tacos_chunks=1 --variant k2:coll_tacos_chunks=2 \
        --variant k4:coll_tacos_chunks=4 --variant k8:coll_tacos_chunks=8 \
        --variant k16:coll_tacos_chunks=16 --variant k32:coll_tacos_chunks=32 --baseline auto 2>&1 |
        grep -v setpgid
done
EOF
# MPI=mpich: libtacos-pmpi under MPICH's hydra (TESTBED_MPIEXEC; one rank per
# host is what the testbed emulates faithfully there): per collective, two
# A/B jobs against MPICH's own collectives (the info key tacos_enable): with
# the measured topology, and with the true topology file (TACOS_TOPO_FILE).
if [ "${MPI:-openmpi}" = mpich ]; then
    cat >"${TMPDIR:-/tmp}/bench_testbed_job.sh" <<'EOF'
sed 's/^/# /' "$TESTBED_DIR/shape.txt"
run() { $TESTBED_MPIEXEC -env LD_PRELOAD "$B/pmpi/.libs/libtacos-pmpi.so" "$@"; }
for coll in $COLLS; do
    echo "## $coll (MPICH)"
    run "$B/benchmarks/osu_coll_mpich" "$coll" --min "$MIN" --max "$MAX" --ab "$ROUNDS" \
        >"$TESTBED_DIR/a" 2>&1
    run -env TACOS_TOPO_FILE "$TESTBED_TOPO" "$B/benchmarks/osu_coll_mpich" "$coll" \
        --min "$MIN" --max "$MAX" --ab "$ROUNDS" >"$TESTBED_DIR/b" 2>&1
    printf "| bytes | tacos µs | MPICH µs | tacos/MPICH | tacos+file µs | MPICH µs | file/MPICH |\n"
    printf "|---|---|---|---|---|---|---|\n"
    grep -v '^#' "$TESTBED_DIR/a" | while read -r bytes tacos mpich r; do
        set -- $(awk -v b="$bytes" '$1 == b { print $2, $3 }' "$TESTBED_DIR/b")
        awk -v B="$bytes" -v a="$tacos" -v m="$mpich" -v f="$1" -v m2="$2" \
            'BEGIN { printf "| %d Ki | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx |\n",
                     B / 1024, a, m, a / m, f, m2, f / m2 }'
    done
    grep -q "^#" "$TESTBED_DIR/a" || { echo "job failed:"; tail -5 "$TESTBED_DIR/a"; }
done
EOF
fi
for shape in $SHAPES; do
    echo "# ===== $shape, $RANKS rank(s) per host ====="
    bash "$B/tests/testbed/testbed.sh" run "$shape" -r "$RANKS" -- sh "${TMPDIR:-/tmp}/bench_testbed_job.sh"
done
