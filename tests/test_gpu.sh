#!/bin/sh
# Collectives on GPU buffers (mpi_gpu_check, built with ./configure
# --with-cuda) with ranks sharing the machine's GPU: the executor's staging
# path (min_bytes 0: every call through a schedule), the default thresholds
# (small calls through host copies), staging forced by hand on host memory
# never reaching the GPU path.  Skips (77) without a CUDA build or a GPU.
B=${TACOS_BUILD:-..}
T=${TACOS_TMP:-./tmp}/gpu
[ -x ./mpi_gpu_check ] || { echo "skip: built without --with-cuda (./configure --with-cuda)"; exit 77; }
mkdir -p "$T"
OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:${OMPI_COMPONENT_DIR:?}"
export OMPI_MCA_mca_base_component_path
fails=0
for np in 2 3 4; do
    for opts in "--mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0 --mca coll_tacos_stage_min_bytes 0" ""; do
        timeout 600 mpirun --allow-run-as-root --oversubscribe -np $np \
            --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
            $opts ./mpi_gpu_check >"$T/out" 2>&1
        rc=$?
        if [ $rc = 77 ]; then grep skipped "$T/out"; exit 77; fi
        grep -q "mpi_gpu_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
            { echo "FAIL: np=$np $opts: exit $rc" >&2; tail -20 "$T/out" >&2; fails=$((fails + 1)); }
        [ -n "$opts" ] && { grep -q "staged through cuda" "$T/out" ||
            { echo "FAIL: np=$np: no call staged through cuda" >&2; fails=$((fails + 1)); }; }
        [ -z "$opts" ] && { grep -q "on GPU buffers through host copies" "$T/out" ||
            { echo "FAIL: np=$np: no call through host copies" >&2; fails=$((fails + 1)); }; }
        echo "np=$np $opts: $(grep -c 'staged through cuda' "$T/out") calls staged, $(grep -c 'through host copies' "$T/out") through host copies"
    done
done
[ $fails = 0 ]
