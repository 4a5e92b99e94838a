#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The CUDA parts compile where the toolkit is (nvcc, cuda.h), also in a
# build configured without --with-cuda: the reduction kernels (one
# architecture), the CUDA memory component, the core's CUDA-only parts and
# the GPU test program, with the project's warnings as errors.  Skips (77)
# without the toolkit.
S=${TACOS_SRC:?}
CUDA=${CUDA_HOME:-/usr/local/cuda}
T=${TACOS_TMP:-./tmp}/cuda
[ -x "$CUDA/bin/nvcc" ] && [ -f "$CUDA/include/cuda.h" ] ||
    { echo "skip: no CUDA toolkit at $CUDA (nvcc, cuda.h)"; exit 77; }
mkdir -p "$T"
fails=0
"$CUDA/bin/nvcc" --fatbin -gencode arch=compute_80,code=sm_80 -o "$T/k.fatbin" \
    "$S/core/cuda_reduce.cu" || { echo "FAIL: nvcc cuda_reduce.cu" >&2; fails=1; }
# every kernel mem_cuda.c names is in the fatbin
for op in sum prod min max land lor lxor band bor bxor; do
    grep -q "tacos_${op}_int32" "$T/k.fatbin" || { echo "FAIL: no tacos_${op}_int32 kernel" >&2; fails=1; }
done
for k in tacos_sum_float16 tacos_max_bfloat16 tacos_minloc_double_int tacos_maxloc_2int; do
    grep -q "$k" "$T/k.fatbin" || { echo "FAIL: no $k kernel" >&2; fails=1; }
done
${CC:-cc} $WARN_CFLAGS -fPIC -I"$CUDA/include" -I"$S/core" -I"$S/synth" -DTACOS_WITH_CUDA \
    -c "$S/core/mem_cuda.c" -o "$T/mem_cuda.o" || { echo "FAIL: mem_cuda.c" >&2; fails=1; }
${CC:-cc} $WARN_CFLAGS $MPI_CFLAGS -I"$CUDA/include" -c "$S/tests/gpu/mpi_gpu_check.c" \
    -o "$T/mpi_gpu_check.o" || { echo "FAIL: mpi_gpu_check.c" >&2; fails=1; }
[ $fails = 0 ] && echo "CUDA kernels, memory component and GPU test compile"
[ $fails = 0 ]
