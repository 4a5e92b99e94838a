#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The MPI test programs against whichever Open MPI series this tree was
# built with (.ci/run runs it in Debian 13 and sid root filesystems for
# Open MPI 5.0 and 6.0; on 4.1 test_mpi.sh and test_mpi_calls.sh cover all
# of it and more):
# ompi_info lists the component and its parameters; mpi_coll_check and
# mpi_nbc_check at 1..8 ranks with tacos first in the coll list, every
# threshold 0, and the trace showing that schedules ran; those and
# mpi_more_check and mpi_dtype_check with `--mca coll tacos` alone
# (textbook programs for what no schedule serves, the series' own way of
# installing a module's functions).  Every program makes and frees
# communicators: on Open MPI 6 each free runs the module's disable, which
# puts the previous component's functions back (tuned's, in the first
# runs) before that component's own disable.  (tacos below tuned, by
# priority, is not run: tuned then serves the blocking calls and
# mpi_coll_check finds Open MPI's own wrong Bcast results, 4.1 and 5.0.)
# (mpi_more_check and mpi_dtype_check fail on Open MPI 5.0.7's own libnbc
# without coll/tacos loaded: MPI_ERR_TRUNCATE in a nonblocking
# neighbourhood collective, MPI_ERR_INTERN in MPI_Alltoallv_init; so they
# run here where coll/tacos serves every call.)
T=${TACOS_TMP:-./tmp}/series
rm -rf "$T" && mkdir -p "$T"
. "$(dirname "$0")/ompi_env.sh"
echo "$(mpirun --version 2>&1 | head -1)"

ompi_info --param coll tacos --level 9 >"$T/info" 2>&1
grep -q 'MCA coll tacos: parameter "coll_tacos_priority"' "$T/info" ||
    { fail "ompi_info does not list coll_tacos_priority"; head -20 "$T/info" >&2; }

# mpi NP COLLS PROGRAM [args]: runs, checks "0 failure(s)" and exit 0
mpi() {
    np=$1 colls=$2
    shift 2
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" --mca coll "$colls" \
        --mca coll_tacos_verbose 10 $NO_MIN "$@" >"$T/out" 2>&1
    rc=$?
    grep -q "_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { fail "np=$np coll $colls $*: exit $rc"; cp "$T/out" "$T/fail$fails.out"
          grep -a -m5 "rank [0-9]*:\|MPI_ERR\|Segmentation\|signal" "$T/out" >&2; return 1; }
}

ALL=tacos,tuned,basic,inter,libnbc,self
for np in $(sweep "1 2 3 4 5 7 8" "1 2 3 5 8"); do
    q=""
    [ "$np" -gt 4 ] && q=--quick
    mpi "$np" $ALL ./mpi_coll_check $q
    if [ "$np" -gt 1 ]; then
        for c in allreduce allgather bcast reduce 'reduce_scatter(_block)?' alltoall; do
            grep -Eq "event coll=$c mode=[a-z]* path=schedule" "$T/out" ||
                fail "np=$np: coll/tacos never ran $c"
        done
    fi
    mpi "$np" $ALL ./mpi_nbc_check $q
    [ "$np" -gt 1 ] && ! grep -q "mode=nonblocking path=schedule" "$T/out" &&
        fail "np=$np: no nonblocking call through a schedule"
    echo "np=$np: mpi_coll_check, mpi_nbc_check"
done

# the large-count forms (Open MPI 6: MPI-4), mixed with the int forms on the
# other ranks; MPI_Allgatherv_c's displacements beyond an int run the
# schedule on every rank
mpi 3 $ALL ./mpi_coll_check --large-count
if ! grep -q "no large-count forms\|displacements beyond an int, skipped" "$T/out"; then
    grep -q "event coll=allgatherv mode=blocking path=schedule .* ranks=3 " "$T/out" ||
        fail "large-count forms: MPI_Allgatherv_c did not run the schedule"
fi
echo "large-count forms: $(grep -c "path=schedule" "$T/out") calls through schedules"

# alone: every slot is coll/tacos's, the rest textbook programs
for np in 1 2 3 4 7; do
    for prog in ./mpi_coll_check ./mpi_nbc_check ./mpi_more_check ./mpi_dtype_check; do
        mpi "$np" tacos "$prog" --quick || continue
        [ "$np" -gt 1 ] && ! grep -q "path=textbook" "$T/out" &&
            fail "coll tacos alone np=$np $prog: no textbook program ran"
    done
    echo "coll tacos alone np=$np: the four programs"
done

# communicators made and freed by the thousand (--dup-storm), with a
# component installed over coll/tacos's functions (han, priority 100) and
# under them (tuned): on Open MPI 6 each free disables han, which puts
# coll/tacos's functions back, then coll/tacos, which puts tuned's back;
# every call after that is checked, and on MPI_COMM_WORLD, which none of
# them frees
for colls in tacos,han,tuned,basic,inter,libnbc,self tacos; do
    mpi 3 "$colls" --mca coll_han_priority 100 ./mpi_coll_check --dup-storm &&
        mpi 3 "$colls" --mca coll_han_priority 100 ./mpi_coll_check --quick
    echo "made and freed communicators: coll $colls"
done

# libtacos-pmpi against this series' MPICH: mpi_coll_check and
# mpi_nbc_check (built against MPICH) at 2..4 ranks, thresholds 0, the
# trace showing schedules
LIB="$B/pmpi/.libs/libtacos-pmpi.so"
PRELOAD=$(mpich_preload "$LIB")
if command -v mpiexec.mpich >/dev/null && [ -f "$LIB" ] && [ -x ./mpi_coll_check_mpich ]; then
    echo "$(mpichversion 2>/dev/null | head -1); MPICH jobs preload $PRELOAD"
    for np in 2 3 4; do
        for prog in ./mpi_coll_check_mpich ./mpi_nbc_check_mpich; do
            timeout 300 env TACOS_VERBOSE=10 TACOS_MIN_BYTES=0 TACOS_ROOTED_MIN_BYTES=0 \
                TACOS_GATHER_MIN_BYTES=0 MPI_COLL_CHECK_AVOID_MPICH_BUGS=1 \
                sh "$(dirname "$0")/mpiexec_apart.sh" -n "$np" env LD_PRELOAD="$PRELOAD" \
                "$prog" --quick >"$T/out" 2>&1
            rc=$?
            grep -q "_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
                { fail "MPICH np=$np $prog: exit $rc"; cp "$T/out" "$T/fail$fails.out"; tail -5 "$T/out" >&2; }
            grep -q "path=schedule" "$T/out" || fail "MPICH np=$np $prog: no schedule ran"
        done
        echo "MPICH np=$np: mpi_coll_check, mpi_nbc_check through libtacos-pmpi"
    done
else
    echo "MPICH: libtacos-pmpi not built, not checked"
fi

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
