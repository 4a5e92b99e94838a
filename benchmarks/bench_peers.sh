#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# coll/tacos against the other collective components of Open MPI 5/6 on one
# host, all in one job per collective and rank count: osu_coll --ab times one
# duplicate of MPI_COMM_WORLD per component in alternating blocks, ROUNDS
# times per size, and prints the median block of each and its ratio to
# coll/tacos (above 1: the peer was slower).  Each duplicate is made as:
#   tacos  coll_tacos_enable=1 (MPI_T)
#   tuned  coll_tacos_enable=0, info key ompi_comm_coll_preference "tuned"
#   han    coll_tacos_enable=0, preference "han"
#   ucc    coll_tacos_enable=0, coll_ucc_enable=1 (MPI_T), preference "ucc"
#   acoll  coll_tacos_enable=0, preference "acoll"
#   xhc    coll_tacos_enable=0, preference "xhc"
# (osu_coll's prefer=: the preference puts the component first whatever its
# priority; coll_acoll_priority and coll_xhc_priority are read-only through
# MPI_T, so they cannot be raised per communicator).  Fixed for the whole job
# on the command line, where MPI_T cannot write them:
#   coll_acoll_priority 1, coll_acoll_comm_size_thresh 2: acoll is "not
#     available" at priority 0 and below 16 ranks by default; 1 keeps it under
#     basic and tuned wherever it is not preferred;
#   coll_xhc_allreduce_cico_max 67108864: with smsc/cma (no XPMEM, no map),
#     xhc's single-copy Allreduce (above 4 KiB by default) dies with SIGSEGV in
#     Open MPI 6.0.0rc2; copy-in-copy-out at every size avoids it.
# A peer is timed only for the collectives it implements (Open MPI 6.0: xhc
# Allreduce and Bcast; acoll and han no Reduce_scatter_block; xhc no
# Allgather); elsewhere its duplicate would run tuned.  Before timing, a
# 2-rank check per peer (coll_base_verbose) keeps only the peers that the
# framework enables on a duplicate of MPI_COMM_WORLD: han disqualifies itself
# on a communicator whose ranks are all on one host, and a component missing
# from ompi_info is dropped.
# Run from the build tree after `make` and `make -C benchmarks osu_coll`:
#   benchmarks/bench_peers.sh [allreduce|allgather|reduce_scatter_block|bcast]...
# Environment: TACOS_COMMIT (printed; default: git rev-parse of the tree), NPS (ranks, default "2 4 8", oversubscribed), MIN/MAX bytes
# (65536/67108864), FACTOR (4: each size 4 times the previous), ROUNDS (5),
# PEERS (default "tuned han ucc acoll xhc").
B=$(cd "$(dirname "$0")/.." && pwd)
COLLS=${*:-allreduce allgather reduce_scatter_block bcast}
NPS=${NPS:-2 4 8} MIN=${MIN:-65536} MAX=${MAX:-67108864} FACTOR=${FACTOR:-4} ROUNDS=${ROUNDS:-5}
PEERS=${PEERS:-tuned han ucc acoll xhc}
. "$B/benchmarks/common.sh" && use_built_component
OSU=$B/benchmarks/osu_coll
launch() {
    np=$1
    shift
    mpirun --oversubscribe -np "$np" --mca coll_acoll_priority 1 \
        --mca coll_acoll_comm_size_thresh 2 --mca coll_xhc_allreduce_cico_max 67108864 "$@"
}
variant() {
    case $1 in
    tacos) echo tacos:coll_tacos_enable=1 ;;
    ucc) echo ucc:coll_tacos_enable=0,coll_ucc_enable=1,prefer=ucc ;;
    *) echo "$1:coll_tacos_enable=0,prefer=$1" ;;
    esac
}
implements() { # implements PEER COLL (Open MPI 6.0's coll components)
    case $1:$2 in
    xhc:allgather | xhc:reduce_scatter_block | acoll:reduce_scatter_block | han:reduce_scatter_block) return 1 ;;
    esac
}
echo "# $(mpirun --version | head -1); UCC $(ompi_info --param coll ucc --level 9 --parsable 2>/dev/null |
    sed -n 's/.*coll_ucc_print_compiletime_version:value://p')"
echo "# tacos commit: ${TACOS_COMMIT:-$(git -C "$B" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
ok=""
for p in $PEERS; do
    if ! ompi_info | grep -q "MCA coll: $p "; then
        echo "# $p: not in this Open MPI; left out"
        continue
    fi
    out=$(launch 2 --mca coll_base_verbose 10 --mca coll_ucc_verbose 3 "$OSU" allreduce \
        --min 65536 --max 65536 --ab 1 --variant "$(variant "$p")" 2>&1)
    rc=$?
    if [ $rc != 0 ] || ! echo "$out" | grep -Eq "comm_select: selecting +$p, priority +[0-9]+, Enabled"; then
        why=$(echo "$out" | grep -E "coll:$p:comm_query.*disqualifying" | sed 's/^\[[^]]*\] //' | head -1)
        echo "# $p: not enabled on a duplicate of MPI_COMM_WORLD (exit $rc${why:+; $why}); left out"
        continue
    fi
    if [ "$p" = ucc ] && ! echo "$out" | grep -q "running ucc allreduce"; then
        echo "# ucc: enabled but its Allreduce did not run through UCC; left out"
        continue
    fi
    ok="$ok $p"
done
echo "# peers timed:$ok"
echo "# ratio = peer / tacos (median of $ROUNDS alternating blocks, us per call averaged over ranks)"
for coll in $COLLS; do
    for np in $NPS; do
        set --
        for p in tacos $ok; do
            implements "$p" "$coll" && set -- "$@" --variant "$(variant "$p")"
        done
        echo
        echo "## $coll, $np ranks"
        start=$(date +%s)
        launch "$np" "$OSU" "$coll" --min "$MIN" --max "$MAX" --factor "$FACTOR" --ab "$ROUNDS" \
            --baseline tacos "$@" 2>&1
        echo "# exit $?, $(($(date +%s) - start)) s"
    done
done
