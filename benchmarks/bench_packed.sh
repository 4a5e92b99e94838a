#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Messages of several chunks (coll_tacos_chunks_per_message M) of any size
# (coll_tacos_message_bytes 0: packed) and held to CAP bytes (capped)
# against one chunk per message (1, the default) and tuned, in one job:
# osu_coll --ab times four duplicates of MPI_COMM_WORLD, one made with each setting
# (MPI_T, read when a communicator is created), in alternating blocks,
# ROUNDS times per size, and prints each one's median block and the ratios
# to one chunk per message.
#   benchmarks/bench_packed.sh [TOPOLOGY.json:RANKS ...]   (one host)
# Default: tests/fixtures/mesh2x2.json:4 and rfs2x2x2.json:8.  Environment:
# MIN/MAX bytes (4096/1048576), ROUNDS (9), CHUNKS (coll_tacos_chunks, 8:
# small chunks, several of which take a link at once), M (16), CAP
# (coll_tacos_message_bytes of capped: 3840, the default).
B=$(cd "$(dirname "$0")/.." && pwd)
MIN=${MIN:-4096} MAX=${MAX:-1048576} ROUNDS=${ROUNDS:-9} CHUNKS=${CHUNKS:-8} M=${M:-16} CAP=${CAP:-3840}
. "$B/benchmarks/common.sh" && use_built_component
[ $# -gt 0 ] || set -- "$B/tests/fixtures/mesh2x2.json:4" "$B/tests/fixtures/rfs2x2x2.json:8"
for arg in "$@"; do
    topo=${arg%:*} np=${arg##*:}
    echo "allreduce, $(basename "$topo"), $np ranks on one host, coll_tacos_chunks $CHUNKS" \
        "(us per call: median of $ROUNDS alternating blocks; ratios to one chunk a message)"
    printf "%10s %10s %10s %10s %10s %8s %8s %8s\n" bytes one_us packed_us capped_us tuned_us packed capped tuned
    mpirun --allow-run-as-root --oversubscribe -np "$np" \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_min_bytes 0 \
        --mca coll_tacos_chunks "$CHUNKS" --mca coll_tacos_topo_file "$topo" \
        "$B/benchmarks/osu_coll" allreduce --min "$MIN" --max "$MAX" --ab "$ROUNDS" \
        --variant one:coll_tacos_chunks_per_message=1 \
        --variant "packed:coll_tacos_chunks_per_message=$M,coll_tacos_message_bytes=0" \
        --variant "capped:coll_tacos_chunks_per_message=$M,coll_tacos_message_bytes=$CAP" \
        --variant tuned:coll_tacos_enable=0 --baseline one |
        awk '$1 ~ /^[0-9]+$/ { printf "%10d %10.1f %10.1f %10.1f %10.1f %8s %8s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
    echo
done
