#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Collectives on GPU buffers (mpi_gpu_check, built with ./configure
# --with-cuda) with ranks sharing the machine's GPU: the executor's staging
# path (min_bytes 0: every call through a schedule), the default thresholds
# (small calls through host copies), staging forced by hand on host memory
# never reaching the GPU path.  The same under MPICH with libtacos-pmpi
# preloaded where mpi_gpu_check_mpich is built.  Skips (77) without a CUDA
# build or a GPU.  TACOS_GPU_NPS: rank counts (default 2 3 4),
# TACOS_GPU_TIMEOUT: seconds per run (600), TACOS_GPU_MPIS: which MPIs
# ("openmpi mpich").  Each run's output stays in $T (TACOS_TMP/gpu).
B=${TACOS_BUILD:-../..}
NPS=${TACOS_GPU_NPS:-2 3 4}
MPIS=${TACOS_GPU_MPIS:-openmpi mpich}
TMO=${TACOS_GPU_TIMEOUT:-600}
T=${TACOS_TMP:-./tmp}/gpu
[ -x ./mpi_gpu_check ] || { echo "skip: built without --with-cuda (./configure --with-cuda)"; exit 77; }
mkdir -p "$T"
fails=0
# check MPI NP WHAT: the run's output in $T/out, exit status $rc
check() {
    if [ $rc = 77 ]; then # no GPU: a skip, unless an earlier run failed
        grep skipped "$T/out"
        [ $fails = 0 ] && exit 77
        exit 1
    fi
    grep -q "mpi_gpu_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { echo "FAIL: $1 np=$2 $3: exit $rc" >&2; tail -20 "$T/out" >&2; fails=$((fails + 1)); }
    case $3 in
    staged) grep -q "staged through cuda" "$T/out" ||
        { echo "FAIL: $1 np=$2: no call staged through cuda" >&2; fails=$((fails + 1)); }
        ! grep -q "IPC)" "$T/out" ||
        { echo "FAIL: $1 np=$2: IPC with cuda_ipc_min_bytes -1" >&2; fails=$((fails + 1)); } ;;
    ipc) grep "IPC)" "$T/out" | grep -q -v -e "(nonblocking)" -e "(persistent)" ||
        { echo "FAIL: $1 np=$2: no blocking call through CUDA IPC" >&2; fails=$((fails + 1)); }
        for form in nonblocking persistent; do
            grep -q "($form), staged through cuda (peers read it: IPC)" "$T/out" ||
                { echo "FAIL: $1 np=$2: no $form call through CUDA IPC" >&2; fails=$((fails + 1)); }
        done ;;
    *) grep -q "on GPU buffers through host copies" "$T/out" ||
        { echo "FAIL: $1 np=$2: no call through host copies" >&2; fails=$((fails + 1)); } ;;
    esac
    echo "$1 np=$2 $3: $(grep -c 'staged through cuda' "$T/out") calls staged ($(grep -c 'IPC)' "$T/out") with IPC:" \
        "$(grep -c '(nonblocking), .*IPC)' "$T/out") nonblocking, $(grep -c '(persistent), .*IPC)' "$T/out")" \
        "persistent), $(grep -c 'through host copies' "$T/out") through host copies"
    cp "$T/out" "$T/$(echo "$1" | tr -d ' ')-np$2-$3.log"
}
case " $MPIS " in
*" openmpi "*)
    OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:${OMPI_COMPONENT_DIR:?set it to the directory of Open MPI components}"
    export OMPI_MCA_mca_base_component_path ;;
*) NPS_OPENMPI= ;;
esac
for np in ${NPS_OPENMPI-$NPS}; do
    for how in staged ipc defaults; do
        opts=
        zero="--mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0 --mca coll_tacos_stage_min_bytes 0"
        [ $how = staged ] && opts="$zero --mca coll_tacos_cuda_ipc_min_bytes -1"
        # (with every communicator's staging kept, 72 communicators map more
        # allocations of each other than are kept mapped)
        [ $how = ipc ] && opts="$zero --mca coll_tacos_cuda_ipc_min_bytes 0 --mca coll_tacos_scratch_max_bytes 4294967296"
        timeout "$TMO" mpirun --allow-run-as-root --oversubscribe -np $np \
            --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
            $opts ./mpi_gpu_check >"$T/out" 2>&1
        rc=$?
        check "Open MPI" $np $how
    done
done
LIB="$B/pmpi/.libs/libtacos-pmpi.so"
case " $MPIS " in
*" mpich "*) ;;
*) [ $fails = 0 ]; exit ;;
esac
if [ -x ./mpi_gpu_check_mpich ] && [ -f "$LIB" ] && command -v mpiexec.mpich >/dev/null; then
    for np in $NPS; do
        for how in staged ipc defaults; do
            zero=
            [ $how != defaults ] && zero="TACOS_MIN_BYTES=0 TACOS_ROOTED_MIN_BYTES=0 TACOS_GATHER_MIN_BYTES=0 TACOS_STAGE_MIN_BYTES=0"
            [ $how = staged ] && zero="$zero TACOS_CUDA_IPC_MIN_BYTES=-1"
            [ $how = ipc ] && zero="$zero TACOS_CUDA_IPC_MIN_BYTES=0 TACOS_SCRATCH_MAX_BYTES=4294967296"
            # shellcheck disable=SC2086
            timeout "$TMO" env TACOS_VERBOSE=10 $zero mpiexec.mpich -n $np \
                env LD_PRELOAD="$LIB" ./mpi_gpu_check_mpich >"$T/out" 2>&1
            rc=$?
            check MPICH $np $how
        done
    done
else
    echo "MPICH: not run (mpi_gpu_check_mpich, libtacos-pmpi.so or mpiexec.mpich missing)"
fi
[ $fails = 0 ]
