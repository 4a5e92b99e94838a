#!/bin/sh
# OSU-style latency of a collective with coll/tacos forced and with Open MPI's
# default selection (tuned), at 2 and 4 ranks (oversubscribed on small
# machines).  The two alternate REPS times (default 3) and each size reports
# the median of its runs, which tames this machine's run-to-run noise.
# Run from the build tree after `make`:
#   benchmarks/bench_coll.sh [allreduce|allgather|bcast|reduce|reduce_scatter_block] [MAXBYTES]
B=$(cd "$(dirname "$0")/.." && pwd)
COLL=${1:-allreduce}
MAX=${2:-67108864}
REPS=${REPS:-3}
DIR=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
export OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:$DIR"
TMP=$(mktemp -d)
run() {
    mpirun --allow-run-as-root --oversubscribe -np "$1" --mca coll "$2" \
        "$B/benchmarks/osu_coll" "$COLL" --max "$MAX" | grep -v '^#'
}
median() { # columns: bytes avg (one file per rep) -> bytes median_avg
    cat "$@" | awk '{ v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
        END { for (i = 0; i < n; i++) { k = split(v[order[i]], a, " ");
              for (x = 1; x <= k; x++) for (y = x + 1; y <= k; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
              print order[i], a[int((k + 1) / 2)] } }'
}
for np in 2 4; do
    for rep in $(seq "$REPS"); do
        run "$np" tacos,tuned,basic,inter,libnbc,self >"$TMP/tacos.$rep"
        run "$np" tuned,basic,inter,libnbc,self >"$TMP/tuned.$rep"
    done
    median "$TMP"/tacos.* >"$TMP/tacos"
    median "$TMP"/tuned.* >"$TMP/tuned"
    echo "$COLL, $np ranks (us per call, median of $REPS runs of the average over ranks)"
    printf "%10s %12s %12s %8s\n" bytes tacos_us tuned_us ratio
    paste "$TMP/tacos" "$TMP/tuned" | awk '{ printf "%10d %12.2f %12.2f %7.2fx\n", $1, $2, $4, $2 / $4 }'
    echo
done
rm -rf "$TMP"
