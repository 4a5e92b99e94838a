#!/bin/sh
# libtacos-pmpi under MPICH's mpiexec: mpi_coll_check (compiled against
# MPICH) at 1..8 ranks with the library preloaded and TACOS_MIN_BYTES /
# TACOS_ROOTED_MIN_BYTES 0; the verbose trace proves the library ran each
# collective.  Then what a PMPI library must get right: the application's
# own messages interleaved (MPI_ANY_SOURCE / MPI_ANY_TAG receives posted),
# communicator churn without leaks, communicators freed while cached,
# MPI_THREAD_MULTIPLE, parameters that differ between ranks, faults.
B=${TACOS_BUILD:-..}
CHECK=${TACOS_MPICH_CHECK:-./mpi_coll_check_mpich}
LIB="$B/pmpi/.libs/libtacos-pmpi.so"
FIX=$(dirname "$0")/fixtures
T=${TACOS_TMP:-./tmp}/mpich
command -v mpiexec.mpich >/dev/null && [ -f "$LIB" ] && [ -x "$CHECK" ] ||
    { echo "SKIP: MPICH (mpiexec.mpich, libtacos-pmpi.so) not built"; exit 77; }
mkdir -p "$T"
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
    timeout 300 env TACOS_VERBOSE=10 TACOS_MIN_BYTES=0 TACOS_ROOTED_MIN_BYTES=0 \
        mpiexec.mpich -n "$np" env LD_PRELOAD="$LIB" $opts "$CHECK" "$@" >"$T/out" 2>&1
    rc=$?
    grep -q "mpi_coll_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { fail "np=$np$opts $*: exit $rc"; tail -20 "$T/out" >&2; return 1; }
}

ran_all() {
    for c in allreduce allgather broadcast reduce reduce-scatter; do
        grep -q "coll:tacos: $c [0-9]* bytes on .*schedule k=" "$T/out" ||
            fail "$1: libtacos-pmpi never ran $c"
    done
}

# (the full sweep at 1 and 2 ranks, --quick above: MPICH's ranks spin while
# they wait, and on 2 cores 4 of them take 20 times as long as Open MPI's)
for np in 1 2 3 4 5 7 8; do
    if [ "$np" -le 2 ]; then mpich "$np"; else mpich "$np" -- --quick; fi
    [ "$np" -gt 1 ] && ran_all "np=$np"
    echo "np=$np: $(grep -c 'schedule k=' "$T/out") calls through tacos schedules, $(grep -c 'fallback:' "$T/out") fallbacks"
done
# topology files of the world's size: the split communicators fall back to
# MPICH's own collectives, whose reductions crash on some derived datatypes
# with user ops (MPICH 4.0.2): those run with predefined types and ops here
mpich 4 TACOS_TOPO_FILE="$FIX/mesh2x2.json" MPI_COLL_CHECK_PLAIN_REDUCTIONS=1 -- --quick &&
    ran_all "mesh2x2"
mpich 8 TACOS_TOPO_FILE="$FIX/rfs2x2x2.json" TACOS_CHUNKS=3 MPI_COLL_CHECK_PLAIN_REDUCTIONS=1 \
    -- --quick && ran_all "rfs2x2x2"

# signature-equal but different (count, datatype) pairs, roots, packed types
for np in 2 3 5; do
    mpich "$np" -- --signatures && ran_all "signatures np=$np"
done

# the application's own point-to-point messages on the same communicator,
# with MPI_ANY_SOURCE / MPI_ANY_TAG receives posted across collectives
for np in 1 2 3 5; do mpich "$np" -- --p2p; done
grep -q "allreduce [0-9]* bytes on 5 ranks: schedule" "$T/out" || fail "--p2p: the library never ran"

# communicator churn: no state left behind, nothing leaks
mpich 3 -- --dup-storm
grep -q "MPI_Finalize: 0 communicator state(s) left" "$T/out" ||
    fail "dup storm: states left at MPI_Finalize: $(grep 'state(s) left' "$T/out")"
mpich 3 -- --freed-cached
mpich 4 -- --threads
grep -q "MPI_THREAD_MULTIPLE not provided" "$T/out" && fail "--threads: MPICH gave no MPI_THREAD_MULTIPLE"
mpich 3 -- --leaks

# bounded scratch across communicators
mpich 3 TACOS_SCRATCH_MAX_MIB=16 -- --many-comms
# deterministic reductions
for np in 4 5; do mpich "$np" TACOS_CHUNKS=4 TACOS_DETERMINISTIC=1 -- --deterministic; done

# default thresholds: small calls go to MPICH's own, and say why
timeout 300 env TACOS_VERBOSE=10 mpiexec.mpich -n 2 env LD_PRELOAD="$LIB" "$CHECK" --quick \
    >"$T/out" 2>&1 || fail "default thresholds run"
for why in "MPI_Allreduce: fallback: below TACOS_MIN_BYTES" \
           "MPI_Bcast: fallback: below TACOS_ROOTED_MIN_BYTES" \
           "MPI_Allreduce: fallback: non-commutative op"; do
    grep -qF "$why" "$T/out" || fail "default thresholds: no '$why' in the trace"
done

# a parameter different on two ranks of four: one message, MPICH's own
# collectives, right results, no hang
for pv in TACOS_ENABLE=0 TACOS_CHUNKS=2 TACOS_SEED=5 TACOS_TOPO_FILE=$FIX/mesh2x2.json; do
    p=${pv%%=*}
    timeout 120 env TACOS_MIN_BYTES=0 TACOS_ROOTED_MIN_BYTES=0 mpiexec.mpich \
        -n 2 env LD_PRELOAD="$LIB" "$CHECK" --signatures : \
        -n 2 env LD_PRELOAD="$LIB" "$pv" "$CHECK" --signatures >"$T/out" 2>&1 ||
        fail "$pv on two ranks of four: exit $?"
    grep -q "mpi_coll_check: 0 failure" "$T/out" || fail "$pv on two ranks: wrong results"
    [ "$(grep -c "communicator 0 have different $p;" "$T/out")" = 1 ] ||
        fail "$pv on two ranks: not one message naming $p"
done

# a fault injected on one rank: its call returns an error and says which;
# the job ends instead of hanging
for f in 2:send:1 2:send:4 2:alloc:1; do
    TACOS_FAULT=$f timeout 120 env TACOS_MIN_BYTES=0 mpiexec.mpich -n 4 \
        env LD_PRELOAD="$LIB" "$CHECK" --fault >"$T/out" 2>&1
    rc=$?
    [ $rc = 124 ] && fail "fault $f: the job hung"
    grep -q "rank 2: MPI_Allreduce returned an error" "$T/out" || fail "fault $f: no error on rank 2 (exit $rc)"
    grep -q "coll:tacos: allreduce of .* on rank 2 of 4: " "$T/out" || fail "fault $f: no message"
done

[ "$fails" = 0 ] && echo "test_mpich: all passed" || echo "test_mpich: $fails failure(s)"
[ "$fails" = 0 ]
