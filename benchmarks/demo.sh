#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The quick start's demo: MPI_Allreduce of 1-16 MiB at 4 ranks on this
# machine, through coll/tacos and through tuned in the same job (osu_coll
# --ab: alternating blocks), with the trace line that shows coll/tacos ran.
# Run from the build tree after `make`: benchmarks/demo.sh [RANKS]
B=$(cd "$(dirname "$0")/.." && pwd)
NP=${1:-4}
. "$B/benchmarks/common.sh" && use_built_component
mpirun --allow-run-as-root --oversubscribe -np "$NP" --mca coll tacos,tuned,basic,inter,libnbc,self \
    --mca coll_tacos_verbose 10 "$B/benchmarks/osu_coll" allreduce --min 1048576 --max 16777216 \
    --ab 3 2>&1 | awk '/coll:tacos: allreduce .* schedule k=/ { if (!seen++) print; next }
                       /coll:tacos:/ { next } { print }'
