#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Reductions combined in the schedule's fixed order (coll_tacos_deterministic
# 1, the default) against arrival order (0), in one job: osu_coll --ab times
# two duplicates of MPI_COMM_WORLD, one made with each setting (MPI_T, read
# when a communicator is created), in alternating blocks, ROUNDS times per
# size, and prints each one's median block and the ratio ordered/arrival.
#   benchmarks/bench_deterministic.sh [COLL...]        (one host, NPS ranks)
#   tests/testbed/testbed.sh run SHAPE -- sh benchmarks/bench_deterministic.sh [COLL...]
#                                                      (the emulated cluster)
# COLL: allreduce (default), reduce_scatter_block, reduce.  Environment:
# MIN/MAX bytes (65536/67108864), ROUNDS (5), NPS (4; one host only), CHUNKS
# (coll_tacos_chunks, 4: several contributions meet in each chunk).
B=$(cd "$(dirname "$0")/.." && pwd)
MIN=${MIN:-65536} MAX=${MAX:-67108864} ROUNDS=${ROUNDS:-5} CHUNKS=${CHUNKS:-4}
. "$B/benchmarks/common.sh" && use_built_component
# run NP COLL: one job (NP "cluster": the testbed's mpirun, every rank of it)
run() {
    if [ "$1" = cluster ]; then
        launch=$TESTBED_MPIRUN where="the emulated cluster"
    else
        launch="mpirun --allow-run-as-root --oversubscribe -np $1" where="$1 ranks on one host"
    fi
    echo "$2, $where, $CHUNKS chunks per rank (us per call: median of $ROUNDS alternating blocks)"
    printf "%10s %12s %12s %8s\n" bytes ordered_us arrival_us ratio
    $launch --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_min_bytes 0 \
        --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_rooted_net_min_bytes 0 \
        --mca coll_tacos_chunks "$CHUNKS" \
        "$B/benchmarks/osu_coll" "$2" --min "$MIN" --max "$MAX" --ab "$ROUNDS" \
        --variant ordered:coll_tacos_deterministic=1 \
        --variant arrival:coll_tacos_deterministic=0 --baseline arrival |
        awk '$1 ~ /^[0-9]+$/ { printf "%10d %12.2f %12.2f %8s\n", $1, $2, $3, $4 }'
    echo
}
NPS=${NPS:-4}
[ -n "${TESTBED_MPIRUN:-}" ] && NPS=cluster
for coll in ${*:-allreduce}; do
    for np in $NPS; do
        run "$np" "$coll"
    done
done
