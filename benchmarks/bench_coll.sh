#!/bin/sh
# OSU-style latency of a collective with coll/tacos forced and with Open MPI's
# default selection (tuned), in the same run, at 2 and 4 ranks; prints both
# and tacos/tuned.  Run from the build tree after `make`:
#   benchmarks/bench_coll.sh [allreduce|allgather|bcast|reduce|reduce_scatter_block] [MAXBYTES]
B=$(cd "$(dirname "$0")/.." && pwd)
COLL=${1:-allreduce}
MAX=${2:-67108864}
DIR=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
export OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:$DIR"
OSU="$B/benchmarks/osu_coll"
run() {
    mpirun --allow-run-as-root --oversubscribe -np "$1" --mca coll "$2" "$OSU" "$COLL" --max "$MAX" |
        grep -v '^#'
}
for np in 2 4; do
    run "$np" tacos,tuned,basic,inter,libnbc,self >/tmp/bench_coll_tacos.$$
    run "$np" tuned,basic,inter,libnbc,self >/tmp/bench_coll_tuned.$$
    echo "$COLL, $np ranks (avg us per call over ranks)"
    printf "%10s %12s %12s %8s\n" bytes tacos_us tuned_us ratio
    paste /tmp/bench_coll_tacos.$$ /tmp/bench_coll_tuned.$$ |
        awk '{ printf "%10d %12.2f %12.2f %7.2fx\n", $1, $2, $6, $2 / $6 }'
    echo
done
rm -f /tmp/bench_coll_tacos.$$ /tmp/bench_coll_tuned.$$
