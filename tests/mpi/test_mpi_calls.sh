#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# coll/tacos under real mpirun, the calls beyond test_mpi.sh's schedules:
# coll/tacos alone (its textbook programs for what no schedule serves),
# derived datatypes byte by byte (under valgrind too), v-variants through
# schedules, Gather/Scatter thresholds, the application's own messages and
# communicator churn, reductions that give the same bits, bad topology
# files, faults, schedule dumps.  Split from test_mpi.sh so that make -j2
# runs the two at once.
CHECK=${TACOS_MPI_CHECK:-./mpi_coll_check}
NBC=${TACOS_NBC_CHECK:-./mpi_nbc_check}
FIX=$(dirname "$0")/../fixtures
T=${TACOS_TMP:-./tmp}/mpi_calls
mkdir -p "$T"
. "$(dirname "$0")/ompi_env.sh"
# coll/tacos alone (`--mca coll tacos`): every slot filled, what no schedule
# serves runs as a textbook program; mpi_coll_check, mpi_nbc_check and
# mpi_more_check (Barrier, Gather(v), Scatter(v), Allgatherv, Alltoallv/w,
# Scan, Exscan, Reduce_local, non-commutative reductions; blocking,
# nonblocking, persistent; world, split, dup; every collective on an
# intercommunicator, its dup and merge; the neighbourhood collectives on a
# Cartesian grid, a graph and a distributed graph) at 1..8 ranks
MORE=${TACOS_MORE_CHECK:-./mpi_more_check}
# (mpi_coll_check at 5 and 6 ranks alone: with the textbook programs, below)
for np in 1 2 3 4 5 6 7 8; do
    for prog in "$CHECK --quick" "$NBC --quick" "$MORE --quick"; do
        [ "$np" -gt 4 ] && [ "$np" -lt 7 ] && [ "${prog#"$CHECK"}" != "$prog" ] && continue
        timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" --mca coll tacos \
            --mca coll_tacos_verbose 10 $prog >"$T/out" 2>&1
        rc=$?
        grep -q "_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
            { fail "coll tacos alone np=$np $prog: exit $rc"; tail -5 "$T/out" >&2; }
        [ "$np" -gt 1 ] && ! grep -q "path=textbook" "$T/out" &&
            fail "coll tacos alone np=$np $prog: no textbook program ran"
        if [ "$prog" = "$MORE --quick" ]; then
            for call in "neighbor_alltoallw mode=blocking" "neighbor_allgather mode=nonblocking" \
                "neighbor_alltoallv mode=persistent"; do
                grep -q "event coll=$call path=textbook" "$T/out" ||
                    fail "coll tacos alone np=$np: $call did not run as a textbook program"
            done
            [ "$np" -gt 1 ] && ! grep -q "coll=reduce_scatter mode=nonblocking path=textbook reason=intercommunicator" "$T/out" &&
                fail "coll tacos alone np=$np: no intercommunicator collective"
            [ "$np" -gt 1 ] && ! grep -q "coll=gatherv mode=blocking path=textbook reason=v_schedules_off" "$T/out" &&
                fail "coll tacos alone np=$np: gatherv not textbook by default"
        fi
    done
    echo "coll tacos alone np=$np: mpi_coll_check, mpi_nbc_check, mpi_more_check"
done
# derived datatypes through every collective, checked byte by byte (guard
# bytes, gaps and padding untouched; mpi_dtype_check): coll/tacos alone at
# 1..8 ranks (the textbook programs), then with every threshold 0 and the
# v-variants through schedules, staged too; at 3 ranks under valgrind with
# mpi_more_check, so a heap error fails here and not later in a user's job
DTYPE=${TACOS_DTYPE_CHECK:-./mpi_dtype_check}
dtype() { # what, then mpirun options and the program's
    what=$1
    shift
    timeout 300 mpirun --allow-run-as-root --oversubscribe --mca coll tacos "$@" >"$T/out" 2>&1
    rc=$?
    grep -q "_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { fail "$what: exit $rc"; grep -v "^\[" "$T/out" | head -5 >&2; }
}
for np in 1 2 3 4 5 7 8; do
    quick=--quick
    [ "$np" = 3 ] && quick=""
    dtype "derived datatypes, coll tacos alone np=$np" -np $np "$DTYPE" $quick
done
SCHED="$NO_MIN --mca coll_tacos_v_schedules 1"
dtype "derived datatypes through schedules np=3" -np 3 $SCHED --mca coll_tacos_verbose 10 "$DTYPE"
for c in alltoallv gatherv scatterv allgatherv allreduce 'reduce_scatter(_block)?'; do
    grep -Eq "event coll=$c mode=[a-z]* path=schedule .* ranks=3 " "$T/out" ||
        fail "derived datatypes through schedules: no $c schedule ran"
done
dtype "derived datatypes through schedules np=5" -np 5 $SCHED "$DTYPE" --quick
dtype "derived datatypes staged np=3" -np 3 $SCHED --mca coll_tacos_stage 1 \
    --mca coll_tacos_stage_min_bytes 0 --mca coll_tacos_verbose 10 "$DTYPE" --quick
grep -q "stage=host" "$T/out" || fail "derived datatypes staged: no call staged"
echo "derived datatypes: coll tacos alone at 1..8 ranks, through schedules, staged"
if command -v valgrind >/dev/null; then
    for prog in "$DTYPE" "$MORE"; do
        rm -f "$T"/vg.* # no scratch kept: each call's is allocated to its size
        dtype "$prog under valgrind" -np 3 --mca coll_tacos_scratch_max_bytes 0 \
            valgrind -q --log-file="$T/vg.%p" "$prog" --quick
        ! grep -h -A8 "Invalid read\|Invalid write\|Invalid free\|Mismatched free\|unaddressable" \
            "$T"/vg.* >&2 ||
            fail "$prog under valgrind, coll tacos alone: memory errors"
    done
    echo "mpi_dtype_check and mpi_more_check under valgrind, coll tacos alone np=3"
else
    echo "derived datatypes under valgrind: skipped (no valgrind)"
fi

# every collective through the textbook programs (thresholds out of reach):
# the signatures' layouts (data before and after the extent, padding, gaps)
# and the trees, doubling and chains of the reductions at every size; with
# data before the extent a copy through scratch once wrote before it (a
# crash in MPI_Finalize)
for np in 3 5; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np --mca coll tacos \
        --mca coll_tacos_min_bytes 2147483647 --mca coll_tacos_rooted_min_bytes 2147483647 --mca coll_tacos_gather_min_bytes 2147483647 \
        "$CHECK" --signatures >"$T/out" 2>&1 || fail "textbook programs np=$np --signatures: exit $?"
    grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "textbook programs np=$np --signatures: wrong results"
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np $((np + 1)) --mca coll tacos \
        --mca coll_tacos_min_bytes 2147483647 --mca coll_tacos_rooted_min_bytes 2147483647 --mca coll_tacos_gather_min_bytes 2147483647 \
        "$CHECK" --quick >"$T/out" 2>&1 || fail "textbook programs np=$((np + 1)) --quick: exit $?"
    grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "textbook programs np=$((np + 1)) --quick: wrong results"
    echo "every collective through the textbook programs np=$np, $((np + 1))"
done

# Allgatherv runs the Allgather schedule with blocks of its sizes (in rank
# order: in the receive buffer; elsewhere: through scratch); coll/tacos
# alone with coll_tacos_v_schedules on, blocking Alltoallv and Alltoallw run
# the All-to-All schedule with theirs (strided blocks and empty ones too:
# MORE_ONLY v)
for np in 3 5; do
    MORE_ONLY=sv timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np --mca coll tacos \
        --mca coll_tacos_min_bytes 0 --mca coll_tacos_v_schedules 1 --mca coll_tacos_verbose 10 \
        -x MORE_ONLY \
        "$MORE" >"$T/out" 2>&1 || fail "allgatherv schedules np=$np: exit $?"
    grep -q "mpi_more_check: 0 failure" "$T/out" || fail "allgatherv schedules np=$np: wrong results"
    for c in allgatherv alltoallv; do
        grep -q "event coll=$c mode=[a-z]* path=schedule .* ranks=$np " "$T/out" ||
            fail "allgatherv/alltoallv schedules np=$np: no $c schedule ran"
    done
    if grep "coll=alltoall[vw] mode=blocking path=textbook" "$T/out" | grep -v "reason=v_one_rank\|reason=v_in_place" >"$T/extra"; then
        fail "alltoallv/w np=$np: a textbook program besides the schedule"
        sort "$T/extra" | uniq -c | head -5 >&2 # why: once seen in CI, not reproduced in 19 runs
    fi
    grep -q "coll=alltoallv mode=blocking path=textbook reason=v_in_place" "$T/out" ||
        fail "alltoallv np=$np: in place did not go to the textbook program"
    echo "allgatherv, alltoallv and alltoallw through the schedule np=$np"
done
# Gather and Scatter run their schedules where coll/tacos is alone (every
# count, root, in place, mode and communicator of the rooted checks), also
# staged (stage=1) and on host copies of "GPU" buffers (stage=2); with
# coll_tacos_v_schedules on, blocking Gatherv and Scatterv theirs with blocks
# of their sizes
for run in "3 0" "5 0" "4 1" "4 2"; do
    set -- $run
    MORE_ONLY=rv timeout 300 mpirun --allow-run-as-root --oversubscribe -np $1 --mca coll tacos \
        $NO_MIN \
        --mca coll_tacos_stage $2 --mca coll_tacos_v_schedules 1 --mca coll_tacos_verbose 10 \
        -x MORE_ONLY \
        "$MORE" >"$T/out" 2>&1 || fail "gather/scatter schedules np=$1 stage=$2: exit $?"
    grep -q "mpi_more_check: 0 failure" "$T/out" ||
        fail "gather/scatter schedules np=$1 stage=$2: wrong results"
    vs="gatherv scatterv" # "GPU" buffers (stage=2): every rank goes to the textbook program
    [ $2 = 2 ] && vs= && { grep -q "coll=gatherv mode=blocking path=textbook reason=v_gpu_buffers" "$T/out" ||
        fail "gatherv np=$1 stage=2: not the textbook program"; }
    for c in gather scatter $vs; do
        grep -q "event coll=$c mode=[a-z]* path=schedule .* ranks=$1 " "$T/out" ||
            fail "gather/scatter schedules np=$1 stage=$2: no $c schedule ran"
        # a blocking call that ran its schedule runs nothing else
        [ $2 != 2 ] && grep "coll=$c mode=blocking path=textbook" "$T/out" | grep -qv "one_rank" &&
            fail "$c np=$1 stage=$2: a textbook program besides the schedule"
    done
    grep -q "coll=gatherv mode=nonblocking path=textbook reason=v_nonblocking" "$T/out" ||
        fail "igatherv np=$1: no textbook program"
    echo "gather(v) and scatter(v) through their schedules np=$1 stage=$2"
done

# ... and with the previous components there, the same collectives go to
# them (libnbc of Open MPI 4.1 pairs the blocks of a periodic Cartesian
# dimension of 2 ranks the pre-MPI-4.0 way: those checks are skipped)
MORE_SKIP_CART_PAIRS=1 timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    -x MORE_SKIP_CART_PAIRS "$MORE" --quick >"$T/out" 2>&1 || fail "mpi_more_check with tuned: exit $?"
grep -q "mpi_more_check: 0 failure" "$T/out" || fail "mpi_more_check with tuned: wrong results"
traced "mpi_more_check with tuned" \
    "coll=gatherv mode=blocking path=fallback reason=previous_component" \
    "coll=alltoallw mode=blocking path=fallback reason=previous_component" \
    "coll=gather mode=nonblocking path=fallback reason=previous_component" \
    "coll=scatter mode=persistent path=fallback reason=previous_component" \
    "coll=neighbor_alltoallv mode=nonblocking path=fallback reason=previous_component" \
    "coll=allreduce mode=nonblocking path=fallback reason=intercommunicator"

# a small selection: basic builds its allgather and
# allreduce from bcast and reduce, so setting up calls back into coll/tacos
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 \
    --mca coll tacos,basic,libnbc --mca coll_tacos_verbose 10 \
    $NO_MIN \
    "$CHECK" --quick >"$T/out" 2>&1 || { fail "coll tacos,basic,libnbc: exit $?"; tail -5 "$T/out" >&2; }
grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "coll tacos,basic,libnbc: wrong results"
grep -q "event coll=allreduce mode=[a-z]* path=schedule .* ranks=3 " "$T/out" ||
    fail "coll tacos,basic,libnbc: coll/tacos never ran"

# default thresholds: small calls go to the previous component, and say why
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    "$CHECK" --quick >"$T/out" 2>&1 || fail "default thresholds run"
grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "default thresholds: wrong results"
traced "default thresholds" "coll=allreduce mode=blocking path=fallback reason=min_bytes" \
    "coll=bcast mode=blocking path=fallback reason=rooted_min_bytes" \
    "coll=allreduce mode=blocking path=fallback reason=noncommutative_op" \
    "coll=allreduce mode=[a-z]* path=schedule reason=- bytes=4000012 ranks=2 "

# Gather and Scatter have a threshold of their own, apart from Bcast's and
# Reduce's (coll/tacos alone: the schedule from it, the textbook program below)
MORE_ONLY=r timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 --mca coll tacos \
    --mca coll_tacos_verbose 10 --mca coll_tacos_rooted_min_bytes 2147483647 \
    --mca coll_tacos_gather_min_bytes 12000 -x MORE_ONLY "$MORE" --quick >"$T/out" 2>&1 ||
    fail "gather_min_bytes: exit $?"
grep -q "mpi_more_check: 0 failure" "$T/out" || fail "gather_min_bytes: wrong results"
traced "gather_min_bytes" "coll=gather mode=[a-z]* path=schedule reason=- bytes=12000 ranks=3 " \
    "coll=scatter mode=[a-z]* path=schedule reason=- bytes=12000 ranks=3 " \
    "coll=gather mode=nonblocking path=textbook reason=gather_min_bytes" \
    "coll=scatter mode=persistent path=textbook reason=gather_min_bytes"

# no leaks across thousands of calls and dup/free cycles
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 $NO_MIN \
    "$CHECK" --leaks >"$T/out" 2>&1 || { fail "leak check"; tail -5 "$T/out" >&2; }
[ "$(grep -c 'coll=allreduce .*path=schedule' "$T/out")" -gt 10000 ] ||
    fail "leak check did not run through coll/tacos"
# the same with the staging shared (coll_tacos_stage 3): each dup's staging
# is a memfd its peers map; memory and open files must not grow either
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 $NO_MIN $IPC \
    "$CHECK" --leaks >"$T/out" 2>&1 || { fail "leak check, stage 3"; tail -5 "$T/out" >&2; }
[ "$(grep -c 'coll=allreduce .*path=schedule .* ipc=1' "$T/out")" -gt 10000 ] ||
    fail "leak check, stage 3: did not run through IPC"

# the application's own messages interleaved with collectives (ANY_SOURCE /
# ANY_TAG receives posted), communicator churn, communicators freed while
# cached, MPI_THREAD_MULTIPLE (the cases test_mpich.sh runs for the PMPI
# library)
for mode in --p2p --dup-storm --freed-cached --threads; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $NO_MIN \
        "$CHECK" $mode >"$T/out" 2>&1 || { fail "$mode: exit $?"; tail -5 "$T/out" >&2; }
    grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "$mode: wrong results"
    grep -q "coll=allreduce .*path=schedule" "$T/out" || fail "$mode: coll/tacos never ran"
done

# many communicators with large buffers keep at most
# coll_tacos_scratch_max_bytes of scratch between calls (the process total);
# staged (stage 1), also what their nonblocking calls give back to the
# communicators' pools (without the bound there: 374 MB)
for stage in 0 1; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_min_bytes 0 \
        --mca coll_tacos_scratch_max_bytes 16777216 --mca coll_tacos_stage $stage \
        "$CHECK" --many-comms >"$T/out" 2>&1 ||
        { fail "many communicators, stage $stage: exit $?"; tail -5 "$T/out" >&2; }
    grep -q "mpi_coll_check: 0 failure" "$T/out" ||
        fail "many communicators, stage $stage: scratch not bounded"
done

# Reductions give the same bits by default (coll_tacos_deterministic):
# Allreduce, Reduce, Reduce-scatter(-block) of non-exact float and double
# sums, in place and not, blocking, nonblocking and persistent, 20 times
# each, at 3-8 ranks and 4 chunks per rank (arrival order differs), and with
# the automatic chunk count; the same bits in two jobs, staged and through
# IPC (the hash of every result); coll/tacos alone (textbook programs) too;
# coll_tacos_deterministic 0 (arrival order) within the rounding bound of
# the exact sums.  The trace must show the path each job names.
det() { # what, 'trace text'..., --, mpirun options: the hash in $T/hash.$what
    what=$1
    shift
    wants=""
    while [ "$1" != "--" ]; do wants="$wants|$1"; shift; done
    shift
    timeout 300 mpirun --allow-run-as-root --oversubscribe --mca coll_tacos_verbose 10 "$@" \
        >"$T/out" 2>&1
    rc=$?
    grep -q "mpi_coll_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { fail "deterministic $what: exit $rc"; grep "^rank" "$T/out" | head -3 >&2; }
    sed -n 's/^deterministic hash: //p' "$T/out" >"$T/hash.$what"
    echo "${wants#|}" | tr '|' '\n' | while read -r want; do
        [ -z "$want" ] || grep -qF -- "$want" "$T/out" || echo "$want"
    done >"$T/missing"
    [ -s "$T/missing" ] && fail "deterministic $what: no '$(head -1 "$T/missing")' in the trace"
}
DET="--mca coll tacos,tuned,basic,inter,libnbc,self $NO_MIN"
for np in 3 4 5 7 8; do
    det "np$np" " k=4 stage=" "mode=nonblocking path=schedule" "mode=persistent path=schedule" -- \
        -np $np $DET --mca coll_tacos_chunks 4 "$CHECK" --deterministic
done
det again " k=4 stage=" -- -np 4 $DET --mca coll_tacos_chunks 4 "$CHECK" --deterministic
det staged "stage=host" -- -np 4 $DET --mca coll_tacos_chunks 4 \
    --mca coll_tacos_stage 1 --mca coll_tacos_stage_min_bytes 0 "$CHECK" --deterministic
det ipc "ipc=1" -- -np 4 $DET --mca coll_tacos_chunks 4 \
    --mca coll_tacos_stage 3 --mca coll_tacos_stage_min_bytes 0 \
    --mca coll_tacos_cuda_ipc_min_bytes 0 "$CHECK" --deterministic
for run in again staged ipc; do
    [ -s "$T/hash.np4" ] && cmp -s "$T/hash.np4" "$T/hash.$run" ||
        fail "deterministic: the $run job's bits differ from the first job's"
done
det auto "path=schedule" -- -np 6 $DET "$CHECK" --deterministic
det auto2 -- -np 6 $DET "$CHECK" --deterministic
cmp -s "$T/hash.auto" "$T/hash.auto2" || fail "deterministic, automatic chunks: two jobs differ"
det alone "path=textbook" -- -np 5 --mca coll tacos --mca coll_tacos_min_bytes 2147483647 \
    --mca coll_tacos_rooted_min_bytes 2147483647 "$CHECK" --deterministic
det arrival " k=4 stage=" -- -np 4 $DET --mca coll_tacos_chunks 4 \
    --mca coll_tacos_deterministic 0 "$CHECK" --arrival-order
echo "deterministic: the same bits at 3-8 ranks, in two jobs, staged, through IPC, alone"

# coll_tacos_enable through MPI_T: only the communicator made with it on
# runs tacos schedules (5 calls per rank)
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    "$CHECK" --mpit >"$T/out" 2>&1 || { fail "MPI_T enable: exit $?"; tail -5 "$T/out" >&2; }
grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "MPI_T enable: wrong results"
[ "$(grep -c 'coll=allreduce .*path=schedule reason=- bytes=1048576 ranks=2 ' "$T/out")" = 10 ] ||
    fail "MPI_T enable: $(grep -c 'coll=allreduce .*path=schedule reason=- bytes=1048576 ranks=2 ' "$T/out") tacos calls, want 10"

# bad topology files: a clear message, the previous component, right results
printf '{"npus": 4, "links": [' >"$T/broken.json"
for bad in "$T/missing.json:cannot open" "$T/broken.json:malformed JSON" \
           "$FIX/ring8.json:describes 8 NPUs, not 4"; do
    file=${bad%%:*} msg=${bad#*:}
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_topo_file "$file" \
        "$CHECK" $W >"$T/out" 2>&1
    rc=$?
    [ $rc = 0 ] && grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "bad topo_file $file: exit $rc"
    grep -qF "$msg" "$T/out" || fail "bad topo_file $file: no '$msg'"
done
# said once per communicator, by its rank 0, not by every rank: the 4-rank
# communicators (world, and its duplicates in the full sweep) all by world
# rank 0's process
said=$(grep -F "describes 8 NPUs, not 4" "$T/out" | sed -n 's/^\[[^]]*:\([0-9]*\)\].*/\1/p' |
    sort -u | wc -l)
[ "$said" = 1 ] || fail "bad topo_file: said by $said processes, want 1"

# ranks given different topology files (an MPMD job; MPI_T writes can do the
# same): one message, the previous component, right results, no hang
timeout 300 mpirun --allow-run-as-root --oversubscribe \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $NO_MIN \
    -np 1 -x OMPI_MCA_coll_tacos_topo_file="$FIX/mesh2x2.json" "$CHECK" --quick : \
    -np 3 "$CHECK" --quick >"$T/out" 2>&1 || fail "topo_file on one rank only: exit $?"
grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "topo_file on one rank only: wrong results"
[ "$(grep -c "communicator 0 have different coll_tacos_topo_file;" "$T/out")" = 1 ] ||
    fail "topo_file on one rank only: no message"

# every parameter that decides which messages a rank sends, different in
# one app context: one message (rank 0, world), the previous component,
# right results, no hang
for pv in enable=0 min_bytes=1000 rooted_min_bytes=1000 gather_min_bytes=1000 rooted_net_min_bytes=1000 \
    chunks=2 chunks_per_message=4 seed=5 trials=2 \
          unwind_degree=2 probe=0 calibrate=1 measure=0 cache_size=8 nonblocking=0 \
          net_piece_bytes=1000 v_schedules=1 cuda_ipc_min_bytes=1000 hierarchy=0 reuse_percent=50 \
          topo_file=$FIX/mesh2x2.json; do
    p=${pv%%=*}
    timeout 120 mpirun --allow-run-as-root --oversubscribe \
        --mca coll tacos,tuned,basic,inter,libnbc,self \
        $NO_MIN \
        -np 2 "$CHECK" --signatures : \
        -np 2 -x OMPI_MCA_coll_tacos_$pv "$CHECK" --signatures >"$T/out" 2>&1 ||
        fail "coll_tacos_$pv on two ranks of four: exit $?"
    grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "coll_tacos_$pv on two ranks: wrong results"
    [ "$(grep -c "communicator 0 have different coll_tacos_$p;" "$T/out")" = 1 ] ||
        fail "coll_tacos_$pv on two ranks: not one message naming it"
done

# ... also where it decides before any schedule is planned: coll/tacos alone,
# the v-variants first (their size exchange only where every rank has it on)
MORE_ONLY=v timeout 120 mpirun --allow-run-as-root --oversubscribe --mca coll tacos \
    $NO_MIN -x MORE_ONLY \
    -np 2 "$MORE" : -np 2 -x OMPI_MCA_coll_tacos_v_schedules=1 "$MORE" >"$T/out" 2>&1 ||
    fail "v_schedules on two ranks of four, coll tacos alone: exit $?"
grep -q "mpi_more_check: 0 failure" "$T/out" || fail "v_schedules on two ranks: wrong results"
[ "$(grep -c "communicator 0 have different coll_tacos_v_schedules;" "$T/out")" = 1 ] ||
    fail "v_schedules on two ranks, coll tacos alone: not one message naming it"

# signature-equal but different (count, datatype) on different ranks, roots
# everywhere, non-contiguous types packed, gaps and in-place tails intact;
# basic behind (tuned's own algorithms cut mixed counts differently)
for np in 2 3 4 5 7; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" \
        --mca coll tacos,basic,libnbc,self --mca coll_tacos_verbose 10 \
        $NO_MIN \
        "$CHECK" --signatures >"$T/out" 2>&1 || fail "signatures np=$np: exit $?"
    grep -q "mpi_coll_check: 0 failure" "$T/out" || { fail "signatures np=$np: wrong results"; grep "^rank" "$T/out" | head -5 >&2; }
    grep -q "event coll=allgather mode=[a-z]* path=schedule .* ranks=$np " "$T/out" ||
        fail "signatures np=$np: coll/tacos never ran"
done

# a fault injected on one rank (the first or a later message, the scratch
# allocation): that rank's call returns an error and says which; the job
# ends through the error handler instead of hanging
for f in 2:send:1 2:send:4 2:alloc:1; do
    TACOS_FAULT=$f timeout 120 mpirun --allow-run-as-root --oversubscribe -x TACOS_FAULT \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_min_bytes 0 \
        -np 4 "$CHECK" --fault >"$T/out" 2>&1
    rc=$?
    [ $rc = 124 ] && fail "fault $f: the job hung"
    grep -q "rank 2: MPI_Allreduce returned an error" "$T/out" || fail "fault $f: no error on rank 2 (exit $rc)"
    grep -q "coll:tacos: allreduce of .* on rank 2 of 4: " "$T/out" || fail "fault $f: no coll/tacos message"
done
# ... and with the failing rank under valgrind: nothing lands in or is read
# from freed memory
if command -v valgrind >/dev/null; then
    rm -f "$T"/vg.*
    TACOS_FAULT=2:send:4 timeout 300 mpirun --allow-run-as-root --oversubscribe -x TACOS_FAULT \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_min_bytes 0 \
        -np 2 "$CHECK" --fault : -np 1 valgrind -q --log-file="$T/vg.%p" "$CHECK" --fault : \
        -np 1 "$CHECK" --fault >"$T/out" 2>&1
    grep -q "rank 2: MPI_Allreduce returned an error" "$T/out" || fail "fault under valgrind: no error"
    ! grep -h "Invalid read\|Invalid write\|Invalid free" "$T"/vg.* >&2 || fail "fault under valgrind: memory errors"
else
    echo "fault injection under valgrind: skipped (no valgrind)"
fi

# a schedule dump reads back through tacos-synth; the directory is created
rm -rf "$T/dump"
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_dump_dir "$T/dump/new/dir" \
    "$CHECK" --quick >"$T/out" 2>&1 || fail "dump run"
n=0
for f in "$T"/dump/new/dir/*allreduce*.json; do
    "$B/synth/tacos-synth" --validate "$f" >/dev/null || fail "dumped $f does not validate"
    n=$((n + 1))
done
[ $n -gt 0 ] || fail "no schedule dumped"
ls "$T"/dump/new/dir/*topology.json >/dev/null 2>&1 || fail "no topology dumped"

[ "$fails" = 0 ] && echo "test_mpi_calls: all passed" || echo "test_mpi_calls: $fails failure(s)"
[ "$fails" = 0 ]
