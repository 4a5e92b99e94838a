#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# libtacos-pmpi under MPICH's mpiexec: mpi_coll_check (compiled against
# MPICH) at 1..8 ranks with the library preloaded and TACOS_MIN_BYTES /
# TACOS_ROOTED_MIN_BYTES 0; the verbose trace proves the library ran each
# collective.  Then what a PMPI library must get right: the application's
# own messages interleaved (MPI_ANY_SOURCE / MPI_ANY_TAG receives posted),
# communicator churn without leaks, communicators freed while cached,
# MPI_THREAD_MULTIPLE, parameters that differ between ranks, faults.
B=${TACOS_BUILD:-../..}
CHECK=${TACOS_MPICH_CHECK:-./mpi_coll_check_mpich}
LIB="$B/pmpi/.libs/libtacos-pmpi.so"
FIX=$(dirname "$0")/../fixtures
T=${TACOS_TMP:-./tmp}/mpich
command -v mpiexec.mpich >/dev/null && [ -f "$LIB" ] && [ -x "$CHECK" ] ||
    { echo "SKIP: MPICH (mpiexec.mpich, libtacos-pmpi.so) not built"; exit 77; }
mkdir -p "$T"
. "$(dirname "$0")/sweep.sh"
# each rank's output apart, then joined (mpiexec_apart.sh: why)
APART=$(dirname "$0")/mpiexec_apart.sh
PRELOAD=$(mpich_preload "$LIB")
echo "MPICH jobs preload $PRELOAD"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# mpich NP [mpiexec options and env VAR=value...] -- [check args]: runs and
# checks "0 failure(s)"
mpich() {
    np=$1
    shift
    opts=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts="$opts $1"; shift; done
    [ "$1" = "--" ] && shift
    t0=$(date +%s)
    timeout 300 env TACOS_VERBOSE=10 TACOS_MIN_BYTES=0 TACOS_ROOTED_MIN_BYTES=0 TACOS_GATHER_MIN_BYTES=0 \
        TACOS_ROOTED_NET_MIN_BYTES=0 \
        sh "$APART" -n "$np" env LD_PRELOAD="$PRELOAD" $opts "$CHECK" "$@" >"$T/out" 2>&1
    rc=$?
    echo "np=$np$opts $*: exit $rc, $(($(date +%s) - t0)) s, $(grep -c 'path=schedule' "$T/out") calls through schedules"
    grep -q "mpi_[a-z]*_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { fail "np=$np$opts $*: exit $rc"; tail -20 "$T/out" >&2; return 1; }
}

# ran WHAT COLL...: the trace shows each collective through a schedule
# (COLL: an extended regular expression of the event's collective)
ran() {
    what=$1
    shift
    for c in "$@"; do
        grep -Eq "event coll=$c mode=[a-z]* path=schedule" "$T/out" ||
            fail "$what: libtacos-pmpi never ran $c"
    done
}
RS='reduce_scatter(_block)?'
ran_all() { ran "$1" allreduce allgather bcast reduce "$RS" alltoall; }

# MPICH's own locality: the ranks of this machine on one node (Debian sid's
# MPICH 5.0.2 in a chroot gives every rank an MPI_COMM_TYPE_SHARED
# communicator of its own, with or without the library); where it does not,
# the checks of what runs on one node are skipped, saying so
one_node=1
timeout 60 sh "$APART" -n 2 ./mpi_hello_mpich 2>&1 | grep -q "mpi_hello: 2 rank(s) on this node" || {
    one_node=0
    echo "NOTE: MPICH puts the ranks of this machine on different nodes; the one-node checks are skipped"; }

# the full sweep at 2 ranks, --quick at 3, MPI_COMM_WORLD's checks at 4
# and 5 (--quick in the full sweep); at 1, 7 and 8 ranks the six
# collectives at 1 to 65537 elements, checked, with the application's own
# messages (--p2p below)
for np in 2 3 4 5; do
    if [ "$np" = 2 ]; then mpich "$np"; elif [ "$np" = 3 ]; then mpich 3 -- --quick; else mpich "$np" -- $W; fi
    ran_all "np=$np"
done
# a topology file of the world's size: the split communicators fall back to
# MPICH's own collectives, whose MPI_Reduce crashes in place at a root other
# than 0 (MPICH 4.0.2; README): mpi_coll_check avoids that case there
mpich 4 TACOS_TOPO_FILE="$FIX/mesh2x2.json" MPI_COLL_CHECK_AVOID_MPICH_BUGS=1 -- $W &&
    ran_all "mesh2x2"

# signature-equal but different (count, datatype) pairs, roots, packed types
for np in 2 3 5; do
    mpich "$np" -- --signatures && ran_all "signatures np=$np"
done

# the application's own point-to-point messages on the same communicator
# (WORLD and a dup), with MPI_ANY_SOURCE / MPI_ANY_TAG receives posted across
# the six collectives (or sends made before them)
for np in 1 3 7 8; do
    mpich "$np" -- --p2p && [ "$np" -gt 1 ] && ran_all "--p2p np=$np"
done
mpich 8 TACOS_TOPO_FILE="$FIX/rfs2x2x2.json" TACOS_CHUNKS=3 -- --p2p && ran_all "rfs2x2x2"
# messages of several chunks (packed by the sender)
mpich 4 TACOS_TOPO_FILE="$FIX/mesh2x2.json" TACOS_CHUNKS_PER_MESSAGE=8 \
    MPI_COLL_CHECK_AVOID_MPICH_BUGS=1 -- $W && ran_all "mesh2x2, 8 chunks a message" &&
    { grep -q "chunks a message" "$T/out" || fail "TACOS_CHUNKS_PER_MESSAGE=8: no message of several chunks"; }
# every size class next to a planned one takes its schedule
mpich 3 TACOS_REUSE_PERCENT=100 -- $W && ran_all "reuse" &&
    { grep -q "class's schedule" "$T/out" || fail "TACOS_REUSE_PERCENT=100: no schedule reused"; }

# schedules kept between jobs: the second job reads every schedule it uses
# (rank 0 rewrites a file it synthesizes: a new inode; a rank that cannot
# read one says so at level 1)
rm -rf "$T/kept"
for job in first second; do
    ls -i "$T/kept" 2>/dev/null | sort >"$T/kept.before"
    mpich 4 TACOS_TOPO_FILE="$FIX/mesh2x2.json" TACOS_SCHEDULE_DIR="$T/kept" \
        MPI_COLL_CHECK_AVOID_MPICH_BUGS=1 -- $W
done
[ "$(ls -i "$T/kept" | sort)" = "$(cat "$T/kept.before")" ] && grep -q 'schedule read from' "$T/out" ||
    fail "TACOS_SCHEDULE_DIR: the second job synthesized again"
! grep "TACOS_SCHEDULE_DIR: " "$T/out" >&2 || fail "TACOS_SCHEDULE_DIR: the second job could not read"
# in levels: 2 hosts x 4 ranks and 4 x 2, and 2 x 4 with the ranks placed
# round-robin (groups of ranks 0,2,4,6 and 1,3,5,7)
for f in switch2x4 switch4x2 switch2x4-roundrobin; do
    mpich 8 TACOS_TOPO_FILE="$FIX/$f.json" TACOS_HIERARCHY=1 -- --p2p && ran_all "$f in levels" &&
        { grep -qF " in levels (this rank's part) for " "$T/out" || fail "$f: no schedule in levels"; }
done
# the default (hierarchy 2): the part in levels kept where the model says
mpich 8 TACOS_TOPO_FILE="$FIX/switch4x2.json" -- --p2p && ran_all "switch4x2, hierarchy 2" &&
    { grep -qF " in levels (this rank's part) for " "$T/out" || fail "switch4x2: auto kept no part"; }

# communicator churn: no state left behind; communicators freed while
# cached; MPI_THREAD_MULTIPLE with a communicator per thread
mpich 2 -- --dup-storm
grep -q "MPI_Finalize: 0 communicator state(s) left" "$T/out" ||
    fail "dup storm: states left at MPI_Finalize: $(grep 'state(s) left' "$T/out")"
mpich 2 -- --freed-cached
mpich 2 -- --threads
grep -q "MPI_THREAD_MULTIPLE not provided" "$T/out" && fail "--threads: MPICH gave no MPI_THREAD_MULTIPLE"
# the large-count forms, served where they fit, mixed with the int forms in
# all three modes (the nonblocking and persistent ones must run the
# schedule the int forms run: MPICH's own there hung)
if mpich 2 MPIR_CVAR_ODD_EVEN_CLIQUES=1 -- --large-count; then
    ran "large count" allreduce reduce bcast gather scatter
    for c in allreduce allgather bcast reduce "$RS" alltoall gather scatter; do
        for m in nonblocking persistent; do
            grep -Eq "event coll=$c mode=$m path=schedule" "$T/out" ||
                fail "large count: $c never ran as a $m schedule"
        done
    done
fi
# bounded scratch across communicators; deterministic reductions
mpich 2 TACOS_SCRATCH_MAX_BYTES=16777216 -- --many-comms
mpich 3 TACOS_CHUNKS=4 -- --deterministic && # by default
    ran "deterministic" allreduce reduce "$RS"
mpich 3 TACOS_CHUNKS=4 TACOS_DETERMINISTIC=0 -- --arrival-order

# nonblocking and persistent collectives (mpi_nbc_check against MPICH):
# every result checked; the trace must show each collective run as a
# nonblocking schedule (MPICH's own MPI_Allgather_init gives wrong blocks:
# a fall-back cannot pass)
COLL_CHECK=$CHECK
CHECK=${TACOS_MPICH_NBC_CHECK:-./mpi_nbc_check_mpich}
for np in 1 2 3 4 5 7 8; do
    if [ "$np" = 2 ]; then mpich "$np"; else mpich "$np" -- --quick; fi
    grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "mpi_nbc_check np=$np: wrong results"
    for c in allreduce allgather bcast reduce "$RS" alltoall; do
        [ "$np" -gt 1 ] && ! grep -Eq "event coll=$c mode=nonblocking path=schedule" "$T/out" &&
            fail "mpi_nbc_check np=$np: libtacos-pmpi never ran $c nonblocking"
    done
done
# persistent requests on a communicator where nothing else ran: each
# MPI_X_init makes the communicator's state and plans its size (MPI orders
# persistent initializations like blocking collectives), so every start
# runs a schedule
mpich 3 -- --persistent-only &&
    for c in allreduce allgather bcast reduce "$RS" alltoall; do
        grep -Eq "event coll=$c mode=persistent path=schedule .* ranks=3 " "$T/out" ||
            fail "persistent requests only: no $c schedule"
    done
grep -q "mode=persistent path=fallback" "$T/out" && fail "persistent requests only: an MPI_X_init fell back"
# only nonblocking calls, on a communicator where nothing ran before
# (--nonblocking-only, as in test_mpi.sh): the first call starts the
# communicator's duplicates (MPI_Comm_idup) and the requests agree on
# settings and topology, so every call runs a schedule from its first, a
# late waiter's too; one rank alone, or ranks MPICH puts on nodes of their
# own: MPICH's own until the first blocking point (then --fallback: no
# in-place Ireduce_scatter, which MPICH's own gets wrong, README)
nbo=--nonblocking-only
[ "$one_node" = 1 ] || nbo="--nonblocking-only --fallback"
for np in 1 2 3 5 8; do
    mpich "$np" -- $nbo || continue
    want=$((np * (32 + 10 + 3 * np + 2 + 1)))
    [ "$np" = 1 ] && want=0
    [ "$one_node" = 1 ] || continue
    got=$(grep -c "event coll=.* mode=nonblocking path=schedule .* ranks=$np " "$T/out")
    [ "$got" = "$want" ] || fail "nonblocking only np=$np: $got nonblocking schedules, want $want"
done
# ... with the default thresholds: the calls below them go to MPICH's own
timeout 300 env TACOS_VERBOSE=10 sh "$APART" -n 4 env LD_PRELOAD="$PRELOAD" "$CHECK" \
    $nbo >"$T/out" 2>&1 || fail "nonblocking only, thresholds: exit $?"
grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "nonblocking only, thresholds: wrong results"
[ "$one_node" = 1 ] && ! grep -q "event coll=reduce mode=nonblocking path=fallback reason=rooted_min_bytes" "$T/out" &&
    fail "nonblocking only, thresholds: a Reduce below its threshold did not fall back"
[ "$one_node" = 1 ] && ! grep -q "event coll=allgather mode=nonblocking path=schedule" "$T/out" &&
    fail "nonblocking only, thresholds: no Allgather schedule"
# ... with the library disabled on two ranks (settings that differ): every
# request falls back, on every rank, to MPICH's own in the order the calls
# were made (--fallback: no request freed while active)
mpich 2 -- --nonblocking-only --fallback : -n 2 env LD_PRELOAD="$PRELOAD" TACOS_ENABLE=0 \
    "$CHECK" --nonblocking-only --fallback && [ "$one_node" = 1 ] && {
    grep -q "mode=nonblocking path=schedule" "$T/out" &&
        fail "nonblocking only, settings differ: a schedule ran"
    grep -q "event coll=allgather mode=nonblocking path=fallback reason=off_or_settings_differ" "$T/out" ||
        fail "nonblocking only, settings differ: no fall-back in the request"; }
# ... where rank 1's second synthesis fails, or rank 2's schedule differs:
# every rank falls back for that key's calls, and (--first-call) the size
# falls back from the next blocking call on
mpich 4 TACOS_FAULT=1:synth:2 -- $nbo && [ "$one_node" = 1 ] && {
    got=$(grep -c "event coll=.* mode=nonblocking path=fallback reason=schedule_not_everywhere" "$T/out")
    [ "$got" -gt 0 ] && [ $((got % 4)) = 0 ] ||
        fail "nonblocking only, synthesis fault: $got fall-backs, not every rank's"; }
# ... the same on GPU buffers (TACOS_STAGE=2): such calls run on host
# copies, and their requests fall back from inside MPICH's poll of them
# (once a hang: the fall-back took a lock its poller held)
mpich 4 TACOS_FAULT=1:synth:2 TACOS_STAGE=2 TACOS_STAGE_MIN_BYTES=0 -- $nbo &&
    [ "$one_node" = 1 ] && ! grep -q "path=fallback reason=schedule_not_everywhere" "$T/out" &&
    fail "nonblocking only, synthesis fault, TACOS_STAGE=2: no fall-back in the request"
for f in "1:synth:2|synthesis fault" "2:hash:2|schedules differ"; do
    mpich 4 TACOS_FAULT=${f%%|*} -- --first-call && [ "$one_node" = 1 ] || continue
    [ "$(grep -c "event coll=allreduce mode=nonblocking path=fallback reason=schedule_not_everywhere" "$T/out")" = 4 ] ||
        fail "first call, ${f#*|}: not every rank fell back"
    [ "$(grep -c "event coll=allreduce mode=nonblocking path=fallback reason=no_schedule" "$T/out")" = 4 ] ||
        fail "first call, ${f#*|}: the size did not fall back after the blocking call"
done
CHECK=$COLL_CHECK

# MPI_Gather and MPI_Scatter (mpi_more_check's rooted checks against MPICH):
# through the schedule where the communicator spans nodes, which MPICH's
# MPIR_CVAR_ODD_EVEN_CLIQUES emulates on one machine (even and odd ranks on
# two nodes: WORLD and its dup span them, the even/odd split does not);
# MPICH's own where it does not.  MPICH 4.0.2's own MPI_Scatter_init fails
# with "Invalid communicator" at 3 ranks and more (without libtacos-pmpi
# too), so MPICH's own runs them only on communicators of 2 ranks or less
# here: the split at 3 and 4 ranks, WORLD at 2 on one node.
CHECK=${TACOS_MPICH_MORE_CHECK:-./mpi_more_check_mpich}
for np in 2 3 4; do
    mpich "$np" MORE_ONLY=r MPIR_CVAR_ODD_EVEN_CLIQUES=1 -- --quick &&
        ran "rooted np=$np" gather scatter
    for c in gather scatter; do
        grep -q "event coll=$c mode=nonblocking path=schedule" "$T/out" ||
            fail "rooted np=$np: libtacos-pmpi never ran $c nonblocking"
    done
    [ "$one_node" = 1 ] && [ "$np" -gt 2 ] &&
        ! grep -q "event coll=gather mode=blocking path=fallback reason=one_node" "$T/out" &&
        fail "rooted np=$np: the one-node split not left to MPICH"
done
mpich 2 MORE_ONLY=r -- --quick
[ "$one_node" = 1 ] && grep -q "event coll=\(gather\|scatter\) .*path=schedule" "$T/out" &&
    fail "rooted on one node: schedules ran"
# the blocking collectives MPICH serves through the library's wrappers (its
# nonblocking forms, waited for so that they progress the library's
# operations): rooted, ordered, spreading, intercommunicator (all three
# modes there) and strided v-variants, blocking forms (MPICH 4.0.2's own
# nonblocking Alltoallw in place and neighbourhood collectives give wrong
# blocks, with or without the library)
mpich 3 MORE_ONLY=rosiv MORE_MODES=b -- --quick
CHECK=$COLL_CHECK

# GPU buffers without a GPU: TACOS_STAGE=1 stages host buffers through the
# memory layer (the executor's GPU path on host memory, MPI_Reduce_local
# for its reductions); TACOS_STAGE=2 takes every buffer for a GPU's, so the
# calls the staging cannot take (user-defined ops, derived datatypes, sizes
# not planned, falls-back to MPICH's own) run on host copies of their
# buffers: blocking, nonblocking and persistent (the whole program, every
# datatype and op)
mpich 3 TACOS_STAGE=1 && ran_all "staged" && { grep -q "stage=host" "$T/out" ||
    fail "TACOS_STAGE=1: no call staged through host"; }
# TACOS_STAGE=3: staged as 1, the ranks reading each other's staging from
# shared memory as CUDA IPC reads GPU memory (the IPC path without a GPU;
# more ranks and hosts in test_mpi.sh and testbed/)
mpich 2 TACOS_STAGE=3 TACOS_CUDA_IPC_MIN_BYTES=0 && ran_all "stage 3" && {
    grep -q "coll=allreduce .*path=schedule .* ranks=2 .*ipc=1" "$T/out" ||
        fail "TACOS_STAGE=3: no call through IPC"; }
# rank 1 cannot map what rank 0 exports (as GPUs without peer access): the
# communicators with both stage, one message says so (test_mpi.sh: more)
[ "$one_node" = 1 ] && mpich 2 TACOS_STAGE=3 TACOS_CUDA_IPC_MIN_BYTES=0 TACOS_FAULT=1:ipcmap:1 -- --quick && {
    grep -q "rank 1 cannot map GPU memory of rank 0, of its host.*no CUDA IPC on communicator" "$T/out" ||
        fail "TACOS_STAGE=3, rank 1 cannot map: no message"
    grep -q "ranks=2 .*ipc=1" "$T/out" && fail "TACOS_STAGE=3, rank 1 cannot map: IPC"; }
mpich 3 TACOS_STAGE=2 TACOS_STAGE_MIN_BYTES=0 && ran_all "stage 2" && {
    grep -q "stage=host_as_device" "$T/out" || fail "TACOS_STAGE=2: no call staged"
    grep -q "event coll=allreduce mode=blocking path=copies reason=user_op_gpu" "$T/out" ||
        fail "TACOS_STAGE=2: a user-defined op not through host copies"; }
mpich 3 TACOS_STAGE=2 TACOS_STAGE_MIN_BYTES=0 -- --signatures &&
    { grep -q "path=copies reason=noncontiguous_gpu_buffer" "$T/out" ||
          fail "TACOS_STAGE=2 --signatures: derived datatypes not through host copies"; }
mpich 3 TACOS_STAGE=2 -- $W &&
    { grep -q "path=copies reason=stage_min_bytes" "$T/out" ||
          fail "TACOS_STAGE=2, default TACOS_STAGE_MIN_BYTES: small calls not through host copies"; }
# nonblocking and persistent: staged (both ways); on host copies, with the
# library's own schedule on them (below TACOS_STAGE_MIN_BYTES, and sizes
# whose schedule the request agrees on: a fall-back there reads host
# memory) and with MPICH's own (small calls before the ranks agreed)
CHECK=${TACOS_MPICH_NBC_CHECK:-./mpi_nbc_check_mpich}
for stage in 1 2; do
    mpich 4 TACOS_STAGE=$stage TACOS_STAGE_MIN_BYTES=0 -- --quick || continue
    grep -q "mode=nonblocking path=schedule .* stage=host" "$T/out" ||
        fail "mpi_nbc_check TACOS_STAGE=$stage: no operation staged"
done
grep -q "mode=nonblocking path=copies reason=agreed_in_request" "$T/out" ||
    fail "mpi_nbc_check TACOS_STAGE=2: no nonblocking call agreed in its request on host copies"
[ "$one_node" = 1 ] && ! grep -q "mode=nonblocking path=fallback reason=not_planned" "$T/out" &&
    fail "mpi_nbc_check TACOS_STAGE=2: no nonblocking call on host copies to MPICH's own"
# persistent and nonblocking calls through IPC (TACOS_STAGE=3), agreed at
# their first start (nonblocking ones once a blocking collective tested the
# communicator)
if mpich 2 TACOS_STAGE=3 TACOS_CUDA_IPC_MIN_BYTES=0 -- --quick; then
    for kind in persistent nonblocking; do
        grep -q "mode=$kind path=schedule .* stage=shared_host_memory ipc=1" "$T/out" ||
            fail "mpi_nbc_check TACOS_STAGE=3: no $kind call through IPC"
    done
fi
if mpich 4 TACOS_STAGE=2 -- --quick; then
    for m in nonblocking persistent; do
        grep -q "mode=$m path=copies reason=stage_min_bytes" "$T/out" ||
            fail "mpi_nbc_check TACOS_STAGE=2: no $m call through host copies"
    done
fi
# MPI_Gather and MPI_Scatter (MPICH's own persistent ones left out: its
# MPI_Gather_init reads its buffers at the init call)
CHECK=${TACOS_MPICH_MORE_CHECK:-./mpi_more_check_mpich}
mpich 3 MORE_ONLY=r MORE_MODES=bn MPIR_CVAR_ODD_EVEN_CLIQUES=1 TACOS_STAGE=2 TACOS_STAGE_MIN_BYTES=0 \
    -- --quick && ran "rooted stage 2" gather scatter
CHECK=$COLL_CHECK

# default thresholds: small calls go to MPICH's own, and say why
timeout 300 env TACOS_VERBOSE=10 sh "$APART" -n 2 env LD_PRELOAD="$PRELOAD" "$CHECK" --quick \
    >"$T/out" 2>&1 || fail "default thresholds run"
rooted_min=rooted_min_bytes
[ "$one_node" = 1 ] || rooted_min=rooted_net_min_bytes # (MPICH's nodes)
for why in "coll=allreduce mode=blocking path=fallback reason=min_bytes" \
           "coll=bcast mode=blocking path=fallback reason=$rooted_min" \
           "coll=allreduce mode=blocking path=fallback reason=noncommutative_op"; do
    grep -qF "event $why" "$T/out" || fail "default thresholds: no '$why' in the trace"
done

# Bcast and Reduce of 256 KiB with the default thresholds: between nodes
# (MPIR_CVAR_ODD_EVEN_CLIQUES emulates two) through the schedule
# (TACOS_ROOTED_NET_MIN_BYTES, 128 KiB), on one node MPICH's own
# (TACOS_ROOTED_MIN_BYTES, 4 MiB)
OSU=$B/benchmarks/osu_coll_mpich
for c in bcast reduce; do
    [ -x "$OSU" ] || { fail "$OSU not built"; break; }
    for cliques in 1 0; do
        timeout 120 env TACOS_VERBOSE=10 sh "$APART" -n 2 env LD_PRELOAD="$PRELOAD" \
            MPIR_CVAR_ODD_EVEN_CLIQUES=$cliques "$OSU" $c --min 262144 --max 262144 >"$T/out" 2>&1 ||
            fail "osu_coll $c cliques=$cliques: exit $?"
        if [ $cliques = 1 ]; then
            grep -q "event coll=$c mode=blocking path=schedule reason=- bytes=262144 ranks=2 " "$T/out" ||
                fail "a 256 KiB $c between nodes ran no schedule"
        elif [ "$one_node" = 1 ]; then
            grep -q "path=fallback reason=rooted_min_bytes" "$T/out" ||
                fail "a 256 KiB $c on one node not left to MPICH"
        fi
    done
done

# a parameter different on two ranks of four: one message, MPICH's own
# collectives, right results, no hang
for pv in TACOS_ENABLE=0 TACOS_SEED=5 TACOS_CHUNKS_PER_MESSAGE=4 TACOS_TOPO_FILE=$FIX/mesh2x2.json; do
    p=${pv%%=*}
    timeout 120 env TACOS_MIN_BYTES=0 TACOS_ROOTED_MIN_BYTES=0 TACOS_GATHER_MIN_BYTES=0 sh "$APART" \
        -n 2 env LD_PRELOAD="$PRELOAD" "$CHECK" --p2p : \
        -n 2 env LD_PRELOAD="$PRELOAD" "$pv" "$CHECK" --p2p >"$T/out" 2>&1 ||
        fail "$pv on two ranks of four: exit $?"
    grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "$pv on two ranks: wrong results"
    [ "$(grep -c "communicator 0 have different $p;" "$T/out")" = 1 ] ||
        fail "$pv on two ranks: not one message naming $p"
done

# a fault injected on one rank: its call returns an error and says which;
# the job ends instead of hanging
for f in 2:send:1 2:send:4 2:alloc:1; do
    TACOS_FAULT=$f timeout 120 env TACOS_MIN_BYTES=0 sh "$APART" -n 4 \
        env LD_PRELOAD="$PRELOAD" "$CHECK" --fault >"$T/out" 2>&1
    rc=$?
    [ $rc = 124 ] && fail "fault $f: the job hung"
    grep -q "rank 2: MPI_Allreduce returned an error" "$T/out" || fail "fault $f: no error on rank 2 (exit $rc)"
    grep -q "coll:tacos: allreduce of .* on rank 2 of 4: " "$T/out" || fail "fault $f: no message"
done

[ "$fails" = 0 ] && echo "test_mpich: all passed" || echo "test_mpich: $fails failure(s)"
[ "$fails" = 0 ]
