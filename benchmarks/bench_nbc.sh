#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Nonblocking and persistent MPI_Allreduce through coll/tacos, each table
# from one job whose variants run in alternating blocks (osu_coll --ab,
# median of ROUNDS blocks, average over ranks):
# 1. latency: MPI_Iallreduce + MPI_Wait and MPI_Start + MPI_Wait of a
#    persistent request, against the blocking tacos call and the MPI's own
#    (Open MPI: tuned);
# 2. overlap % (as osu_iallreduce), tacos against the MPI's own nonblocking
#    collectives (Open MPI: libnbc), with no MPI call during the computation
#    and with 10 MPI_Test calls spread over it;
# 3. the cost of making (and freeing) a persistent request;
# 4. the first nonblocking call of a size and the one after it (us each),
#    against the MPI's own nonblocking collectives;
# 5. the same on a communicator where nothing ran before;
# 6. on such a communicator, making a persistent request against the first
#    blocking call (both plan the size) and the MPI's own.
# MPI=mpich: libtacos-pmpi preloaded under mpiexec.mpich, switched by the
# communicator info key tacos_enable; the baseline is MPICH's own.
# Run from the build tree after `make`:
#   [MPI=mpich] benchmarks/bench_nbc.sh [MAXBYTES]   (NPS="2 4", MIN, ROUNDS)
# On the emulated cluster, tests/testbed/testbed.sh runs it with TESTBED_MPIRUN.
B=$(cd "$(dirname "$0")/.." && pwd)
MAX=${1:-4194304}
MIN=${MIN:-65536}
ROUNDS=${ROUNDS:-5}
if [ "${MPI:-openmpi}" = mpich ]; then
    own=mpich nbc=mpich
    launch() {
        np=$1
        shift
        ${TESTBED_MPIEXEC:-mpiexec.mpich -n $np} env LD_PRELOAD="$B/pmpi/.libs/libtacos-pmpi.so" \
            TACOS_MIN_BYTES=0 "$B/benchmarks/osu_coll_mpich" allreduce \
            --min "$MIN" --max "$MAX" --ab "$ROUNDS" "$@"
    }
else
    own=tuned nbc=libnbc
    . "$B/benchmarks/common.sh" && use_built_component
    launch() {
        np=$1
        shift
        ${TESTBED_MPIRUN:-mpirun --allow-run-as-root --oversubscribe -np $np} \
            --mca coll tacos,tuned,basic,inter,libnbc,self "$B/benchmarks/osu_coll" allreduce \
            --min "$MIN" --max "$MAX" --ab "$ROUNDS" "$@"
    }
fi
[ -n "${TESTBED_MPIRUN:-}" ] && NPS=testbed
for np in ${NPS:-2 4}; do
    echo "== $np ranks"
    launch "$np" --variant nonblocking:mode=nonblocking --variant persistent:mode=persistent \
        --variant blocking --variant $own:coll_tacos_enable=0 --baseline blocking
    for probes in 0 10; do
        launch "$np" --mode overlap --probes "$probes" --variant tacos \
            --variant $nbc:coll_tacos_enable=0 --baseline $nbc |
            sed "s/^# allreduce overlap,/# allreduce overlap ($probes MPI_Test calls during the computation),/"
    done
    launch "$np" --mode init --variant tacos --variant $nbc:coll_tacos_enable=0 --baseline $nbc
    # a size's first nonblocking call and the one right after it, on a new
    # communicator where a blocking call planned another size (Open MPI:
    # coll/tacos synthesizes the size and the ranks agree in the request)
    launch "$np" --mode first --variant first --variant second:mode=second \
        --variant $nbc-first:coll_tacos_enable=0,mode=first \
        --variant $nbc-second:coll_tacos_enable=0,mode=second --baseline $nbc-first
    # the same where nothing ran on the communicator before (Open MPI: the
    # request also exchanges the settings and probe records); the baseline's
    # communicator had a blocking call (with coll/tacos disabled, a fresh
    # one's first nonblocking calls of 64 KiB or more run its textbook program)
    launch "$np" --mode fresh-first --variant first --variant second:mode=fresh-second \
        --variant $nbc-first:coll_tacos_enable=0,mode=first \
        --variant $nbc-second:coll_tacos_enable=0,mode=second --baseline $nbc-first
    launch "$np" --mode init-new --variant init --variant blocking:mode=blocking-new \
        --variant $nbc-init:coll_tacos_enable=0 --variant $own:coll_tacos_enable=0,mode=blocking-new \
        --baseline blocking
    echo
done
