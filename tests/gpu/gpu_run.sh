#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# On a machine with a GPU and no MPI, from the repository root, with
# gpu-carry.tar.xz (made by tests/gpu/gpu_carry.sh) beside it: unpacks it once
# into $TMPDIR/gpu-carry, points the environment at the MPIs there and runs
#
#   check    tests/gpu/test_gpu.sh: mpi_gpu_check at 2, 3, 4 ranks on the one GPU,
#            staged (every threshold 0) and with the defaults, under Open MPI
#            and under MPICH with libtacos-pmpi preloaded (default)
#   bench    mpi_gpu_check --bench (Allreduce on device buffers against
#            staging by hand) at 2 and 4 ranks (BENCH_NPS) under Open MPI, with
#            CUDA IPC (the default) and without (BENCH_NO_IPC=0: not), and at 2
#            under MPICH (BENCH_MPICH=0: not)
#   mps      the bench to 4 MiB at 2 and 4 ranks without, then with CUDA MPS
#   memcheck compute-sanitizer --tool memcheck over mpi_gpu_check, 2 ranks,
#            staged (with CUDA IPC from 0 bytes), under Open MPI
#   env      nothing: prints the commands to source for running by hand
#
# test_gpu.sh's TACOS_GPU_NPS, TACOS_GPU_MPIS and TACOS_GPU_TIMEOUT (here 150 s
# by default) split a check over several calls of the device's 10 minutes.
# Logs go to $OUT (the device tool's output folder), else $TMPDIR/gpu-out.
#
#   sh tests/gpu/gpu_run.sh [check|bench|mps|memcheck|env]...
R=$(pwd)
S=$R/tests/gpu
[ -f "$S/test_gpu.sh" ] || { echo "gpu_run: run it from the repository root" >&2; exit 2; }
G=${TMPDIR:-/tmp}/gpu-carry
O=${OUT:-${TMPDIR:-/tmp}/gpu-out}
mkdir -p "$O"
# unpacked again when the file is newer than what was unpacked
if [ ! -f "$G/.unpacked" ] || [ "$R/gpu-carry.tar.xz" -nt "$G/.unpacked" ]; then
    [ -f "$R/gpu-carry.tar.xz" ] || { echo "gpu_run: no gpu-carry.tar.xz (tests/gpu/gpu_carry.sh makes it)" >&2; exit 2; }
    rm -rf "$G" && mkdir -p "$G" && tar -xJf "$R/gpu-carry.tar.xz" -C "$G" && touch "$G/.unpacked" || exit 1
fi
L=$G/root/usr/lib/x86_64-linux-gnu
export PATH="$G/root/usr/bin:$PATH"
export LD_LIBRARY_PATH="$L:$L/openmpi/lib:$L/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$G/root/usr" OMPI_COMPONENT_DIR="$L/openmpi/lib/openmpi3"
export PMIX_PREFIX="$L/pmix2" PMIX_MCA_mca_base_component_path="$L/pmix2/lib/pmix"
export OMPI_MCA_plm_rsh_agent=false OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export PMIX_MCA_pcompress_base_silence_warning=1 # (no zlib component: noise in every log)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export TACOS_BUILD="$G/b" TACOS_TMP="$O" TACOS_GPU_TIMEOUT="${TACOS_GPU_TIMEOUT:-150}"
B=$G/b
M="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca coll tacos,tuned,basic,inter,libnbc,self"
export OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:$OMPI_COMPONENT_DIR"
{ nvidia-smi -L; head -1 /etc/os-release; nproc; } 2>&1 | tee "$O/machine.txt"
# bench_job SECONDS LOG MPIRUN-ARGS...: mpi_gpu_check --bench under Open MPI, into $O/LOG.log
bench_job() {
    t=$1 log=$2
    shift 2
    timeout "$t" $M "$@" "$B/tests/gpu/mpi_gpu_check" --bench 2>&1 | tee "$O/$log.log"
}
rc=0
for part in "${@:-check}"; do
    t0=$(date +%s)
    case $part in
    check) (cd "$B/tests/gpu" && sh "$S/test_gpu.sh") >"$O/check.log" 2>&1
        r=$? # a skip (77) here is a failure too: this machine is meant to have the GPU
        cat "$O/check.log"
        [ $r = 0 ] || { echo "gpu_run: test_gpu.sh exit $r"; rc=1; } ;;
    bench)
        for np in ${BENCH_NPS:-2 4}; do
            bench_job 280 "bench_openmpi_$np" -np $np
            [ "${BENCH_NO_IPC:-1}" = 0 ] ||
                bench_job 280 "bench_openmpi_${np}_no_ipc" -np $np --mca coll_tacos_cuda_ipc_min_bytes -1
        done
        [ "${BENCH_MPICH:-1}" = 0 ] ||
            timeout 280 mpiexec.mpich -n 2 env LD_PRELOAD="$B/pmpi/.libs/libtacos-pmpi.so" \
                "$B/tests/gpu/mpi_gpu_check_mpich" --bench 2>&1 | tee "$O/bench_mpich_2.log" ;;
    mps) # the bench's sizes to BENCH_MAX_BYTES (4 MiB) without, then with CUDA MPS (the
        # ranks' work in one GPU context instead of time slices of one context each)
        export BENCH_MAX_BYTES="${BENCH_MAX_BYTES:-4194304}"
        for np in ${BENCH_NPS:-2 4}; do
            bench_job 150 "mps_off_$np" -np $np
        done
        nvidia-cuda-mps-control -d || { echo "gpu_run: cannot start CUDA MPS"; rc=1; continue; }
        for np in ${BENCH_NPS:-2 4}; do
            bench_job 150 "mps_on_$np" -np $np
        done
        echo quit | nvidia-cuda-mps-control ;;
    memcheck)
        CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
        timeout 550 $M -np 2 --mca coll_tacos_min_bytes 0 --mca coll_tacos_stage_min_bytes 0 \
            --mca coll_tacos_cuda_ipc_min_bytes 0 --mca coll_tacos_verbose 10 \
            "$CS" --tool memcheck --error-exitcode 9 "$B/tests/gpu/mpi_gpu_check" \
            >"$O/memcheck.log" 2>&1
        r=$?
        echo "memcheck: exit $r ($(grep -c "ERROR SUMMARY: 0 errors" "$O/memcheck.log") ranks with 0 errors;" \
            "$(grep -c 'staged through cuda' "$O/memcheck.log") calls staged, $(grep -c 'IPC)' "$O/memcheck.log") with IPC)"
        [ $r = 0 ] || rc=1 ;;
    env) echo "export PATH='$PATH' LD_LIBRARY_PATH='$LD_LIBRARY_PATH' OPAL_PREFIX='$OPAL_PREFIX'" \
        "OMPI_COMPONENT_DIR='$OMPI_COMPONENT_DIR' PMIX_PREFIX='$PMIX_PREFIX'" \
        "PMIX_MCA_mca_base_component_path='$PMIX_MCA_mca_base_component_path'" \
        "OMPI_MCA_mca_base_component_path='$OMPI_MCA_mca_base_component_path'" ;;
    *) echo "gpu_run: unknown part $part (check, bench, mps, memcheck, env)" >&2; exit 2 ;;
    esac
    echo "gpu_run: $part took $(($(date +%s) - t0)) s"
done
exit $rc
