#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# OSU-style latency of a collective through coll/tacos and through the MPI
# library's own selection, compared in the same job at 2 and 4 ranks
# (oversubscribed on small machines): osu_coll --ab times two duplicates of
# MPI_COMM_WORLD, one created with coll/tacos and one without it, in
# alternating blocks, ROUNDS times per size (default 5), and prints the
# median block of each and their ratio.
# - Open MPI (default): the component, switched per communicator through the
#   MPI_T variable coll_tacos_enable; the baseline is tuned.
# - MPI=mpich: libtacos-pmpi preloaded under mpiexec.mpich, switched through
#   the communicator info key tacos_enable; the baseline is MPICH's own.
# Run from the build tree after `make`:
#   [MPI=mpich] benchmarks/bench_coll.sh [allreduce|allgather|allgatherv|bcast|reduce|reduce_scatter_block|alltoall] [MAXBYTES]
B=$(cd "$(dirname "$0")/.." && pwd)
COLL=${1:-allreduce}
MAX=${2:-67108864}
MIN=${MIN:-8}
ROUNDS=${ROUNDS:-5}
if [ "${MPI:-openmpi}" = mpich ]; then
    base=mpich
    launch() {
        np=$1
        shift
        mpiexec.mpich -n "$np" env LD_PRELOAD="$B/pmpi/.libs/libtacos-pmpi.so" \
            "$B/benchmarks/osu_coll_mpich" "$@"
    }
else
    base=tuned
    . "$B/benchmarks/common.sh" && use_built_component
    launch() {
        np=$1
        shift
        mpirun --allow-run-as-root --oversubscribe -np "$np" \
            --mca coll tacos,tuned,basic,inter,libnbc,self "$B/benchmarks/osu_coll" "$@"
    }
fi
for np in ${NPS:-2 4}; do
    echo "$COLL, $np ranks (us per call: median of $ROUNDS alternating blocks, average over ranks)"
    printf "%10s %12s %12s %8s\n" bytes tacos_us "${base}_us" ratio
    launch "$np" "$COLL" --min "$MIN" --max "$MAX" --ab "$ROUNDS" | grep -v '^#' |
        awk '{ printf "%10d %12.2f %12.2f %8s\n", $1, $2, $3, $4 }'
    echo
done
