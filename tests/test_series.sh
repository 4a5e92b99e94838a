#!/bin/sh
# The MPI test programs against whichever Open MPI series this tree was
# built with (.ci/run runs it in Debian 13 and sid root filesystems for
# Open MPI 5.0 and 6.0; on 4.1 test_mpi.sh covers all of it and more):
# ompi_info lists the component and its parameters; mpi_coll_check and
# mpi_nbc_check at 1..8 ranks with tacos first in the coll list, every
# threshold 0, and the trace showing that schedules ran; those and
# mpi_more_check and mpi_dtype_check with `--mca coll tacos` alone
# (textbook programs for what no schedule serves, the series' own way of
# installing a module's functions); tacos below tuned, communicators made
# and freed while another component serves what tacos passes on.
# (mpi_more_check and mpi_dtype_check fail on Open MPI 5.0.7's own libnbc
# without coll/tacos loaded: MPI_ERR_TRUNCATE in a nonblocking
# neighbourhood collective, MPI_ERR_INTERN in MPI_Alltoallv_init; so they
# run here where coll/tacos serves every call.)
B=${TACOS_BUILD:-..}
T=${TACOS_TMP:-./tmp}/series
rm -rf "$T" && mkdir -p "$T"
OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:${OMPI_COMPONENT_DIR:?}"
export OMPI_MCA_mca_base_component_path
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
NO_MIN="--mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0"
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
for np in 1 2 3 4 5 7 8; do
    q=""
    [ "$np" -gt 4 ] && q=--quick
    mpi "$np" $ALL ./mpi_coll_check $q
    if [ "$np" -gt 1 ]; then
        for c in allreduce allgather broadcast reduce reduce-scatter alltoall; do
            grep -q "coll:tacos: $c [0-9]* bytes on .*schedule k=" "$T/out" ||
                fail "np=$np: coll/tacos never ran $c"
        done
    fi
    mpi "$np" $ALL ./mpi_nbc_check $q
    [ "$np" -gt 1 ] && ! grep -q "(nonblocking)" "$T/out" &&
        fail "np=$np: no nonblocking call through a schedule"
    echo "np=$np: mpi_coll_check, mpi_nbc_check"
done

# alone: every slot is coll/tacos's, the rest textbook programs
for np in 1 2 3 4 7; do
    for prog in ./mpi_coll_check ./mpi_nbc_check ./mpi_more_check ./mpi_dtype_check; do
        mpi "$np" tacos "$prog" --quick || continue
        [ "$np" -gt 1 ] && ! grep -q ": textbook:" "$T/out" &&
            fail "coll tacos alone np=$np $prog: no textbook program ran"
    done
    echo "coll tacos alone np=$np: the four programs"
done

# tacos below tuned (priority 10 < tuned's 30): tuned serves what it has,
# tacos what tuned lacks; communicators made and freed all through
for np in 3 4; do
    mpi "$np" $ALL --mca coll_tacos_priority 10 ./mpi_coll_check --quick
    mpi "$np" $ALL --mca coll_tacos_priority 10 ./mpi_nbc_check --quick
    echo "np=$np: tacos below tuned"
done

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
