#!/bin/sh
# OSU-style latency of a collective through coll/tacos and through Open MPI's
# own selection (tuned), compared in the same job at 2 and 4 ranks
# (oversubscribed on small machines): osu_coll --ab times two duplicates of
# MPI_COMM_WORLD, one created with coll/tacos and one without it (the MPI_T
# variable coll_tacos_enable), in alternating blocks, ROUNDS times per size
# (default 5), and prints the median block of each and their ratio.
# Run from the build tree after `make`:
#   benchmarks/bench_coll.sh [allreduce|allgather|bcast|reduce|reduce_scatter_block] [MAXBYTES]
B=$(cd "$(dirname "$0")/.." && pwd)
COLL=${1:-allreduce}
MAX=${2:-67108864}
ROUNDS=${ROUNDS:-5}
DIR=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
export OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:$DIR"
for np in 2 4; do
    echo "$COLL, $np ranks (us per call: median of $ROUNDS alternating blocks, average over ranks)"
    printf "%10s %12s %12s %8s\n" bytes tacos_us tuned_us ratio
    mpirun --allow-run-as-root --oversubscribe -np "$np" --mca coll tacos,tuned,basic,inter,libnbc,self \
        "$B/benchmarks/osu_coll" "$COLL" --max "$MAX" --ab "$ROUNDS" | grep -v '^#' |
        awk '{ printf "%10d %12.2f %12.2f %8s\n", $1, $2, $3, $4 }'
    echo
done
