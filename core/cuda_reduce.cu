/* SPDX-License-Identifier: BSD-3-Clause */
// Device reductions: dst[i] = dst[i] op src[i], one kernel per op x type,
// named tacos_<op>_<type> (the names mem_cuda.c looks up).  Built by nvcc
// into a fatbin that mem_cuda.c loads with the driver (no CUDA runtime).
// Half and bfloat16 compute in float.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

struct float_int { float v; int i; };
struct double_int { double v; int i; };
struct long_int { long v; int i; };
struct int_int { int v; int i; };
struct short_int { short v; int i; };

template <typename T> struct num { // arithmetic as T itself
    __device__ static T get(T x) { return x; }
    __device__ static T put(T x) { return x; }
};
template <> struct num<__half> {
    __device__ static float get(__half x) { return __half2float(x); }
    __device__ static __half put(float x) { return __float2half(x); }
};
template <> struct num<__nv_bfloat16> {
    __device__ static float get(__nv_bfloat16 x) { return __bfloat162float(x); }
    __device__ static __nv_bfloat16 put(float x) { return __float2bfloat16(x); }
};

#define ARITH(name, expr)                                                                    \
    struct name {                                                                            \
        template <typename T> __device__ static T f(T a, T b)                               \
        {                                                                                    \
            auto x = num<T>::get(a), y = num<T>::get(b);                                     \
            return num<T>::put(expr);                                                        \
        }                                                                                    \
    };
ARITH(op_sum, x + y)
ARITH(op_prod, x * y)
ARITH(op_min, y < x ? y : x)
ARITH(op_max, y > x ? y : x)
ARITH(op_land, (x && y))
ARITH(op_lor, (x || y))
ARITH(op_lxor, (!x != !y))
ARITH(op_band, x & y)
ARITH(op_bor, x | y)
ARITH(op_bxor, x ^ y)

// MPI's MINLOC / MAXLOC: the better value, the smaller index on a tie
struct op_minloc {
    template <typename P> __device__ static P f(P a, P b)
    {
        return b.v < a.v || (b.v == a.v && b.i < a.i) ? b : a;
    }
};
struct op_maxloc {
    template <typename P> __device__ static P f(P a, P b)
    {
        return b.v > a.v || (b.v == a.v && b.i < a.i) ? b : a;
    }
};

template <typename Op, typename T>
__device__ void reduce(T *__restrict__ dst, const T *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = Op::f(dst[i], src[i]);
}

#define KERNEL(op, tname, T)                                                                 \
    extern "C" __global__ void tacos_##op##_##tname(T *dst, const T *src, size_t n)          \
    {                                                                                        \
        reduce<op_##op>(dst, src, n);                                                        \
    }

#define INTEGER(op)                                                                          \
    KERNEL(op, int8, int8_t) KERNEL(op, uint8, uint8_t) KERNEL(op, int16, int16_t)           \
    KERNEL(op, uint16, uint16_t) KERNEL(op, int32, int32_t) KERNEL(op, uint32, uint32_t)     \
    KERNEL(op, int64, int64_t) KERNEL(op, uint64, uint64_t)
#define FLOATING(op)                                                                         \
    KERNEL(op, float16, __half) KERNEL(op, bfloat16, __nv_bfloat16) KERNEL(op, float, float) \
    KERNEL(op, double, double)
#define PAIRS(op)                                                                            \
    KERNEL(op, float_int, float_int) KERNEL(op, double_int, double_int)                      \
    KERNEL(op, long_int, long_int) KERNEL(op, 2int, int_int) KERNEL(op, short_int, short_int)

INTEGER(sum) INTEGER(prod) INTEGER(min) INTEGER(max)
FLOATING(sum) FLOATING(prod) FLOATING(min) FLOATING(max)
INTEGER(land) INTEGER(lor) INTEGER(lxor)
INTEGER(band) INTEGER(bor) INTEGER(bxor)
PAIRS(minloc) PAIRS(maxloc)
