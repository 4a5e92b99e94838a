/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Correctness of MPI collectives under whatever coll component runs them
 * (the test script forces coll/tacos): every result element is compared
 * with a reference computed locally from the known inputs of every rank.
 * Sweeps counts, predefined types and ops, roots, MINLOC/MAXLOC pairs, MPI_IN_PLACE,
 * user ops (commutative runs, non-commutative falls back), a contiguous and a
 * vector derived type, on MPI_COMM_WORLD, a split and a dup.
 * --p2p, --dup-storm, --freed-cached and --threads: the six intercepted
 * collectives next to the application's own messages (ANY_SOURCE/ANY_TAG
 * receives posted across them), communicator churn, communicators freed
 * after use and MPI_THREAD_MULTIPLE (what a PMPI library must not disturb).
 * --quick: fewer datatypes and ops; --world: those on MPI_COMM_WORLD alone.
 * Exit status: number of failures (0 = all good).
 */
#include <dirent.h>
#include <float.h>
#include <malloc.h>
#include <limits.h>
#include <math.h>
#include "mpi_check.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

static _Atomic int failures; /* FAIL may run in the threads of --threads */
static int me_world;


enum { SINT, UINT, FLT };

typedef struct {
    MPI_Datatype t;
    const char *name;
    int kind;
    size_t size;
} type_t;

static const type_t types[] = {
    {MPI_SIGNED_CHAR, "signed char", SINT, 1},   {MPI_UNSIGNED_CHAR, "unsigned char", UINT, 1},
    {MPI_SHORT, "short", SINT, 2},               {MPI_UNSIGNED_SHORT, "unsigned short", UINT, 2},
    {MPI_INT, "int", SINT, 4},                   {MPI_UNSIGNED, "unsigned", UINT, 4},
    {MPI_LONG, "long", SINT, 8},                 {MPI_UNSIGNED_LONG, "unsigned long", UINT, 8},
    {MPI_LONG_LONG, "long long", SINT, 8},       {MPI_UNSIGNED_LONG_LONG, "ull", UINT, 8},
    {MPI_INT8_T, "int8", SINT, 1},               {MPI_UINT8_T, "uint8", UINT, 1},
    {MPI_INT16_T, "int16", SINT, 2},             {MPI_UINT16_T, "uint16", UINT, 2},
    {MPI_INT32_T, "int32", SINT, 4},             {MPI_UINT32_T, "uint32", UINT, 4},
    {MPI_INT64_T, "int64", SINT, 8},             {MPI_UINT64_T, "uint64", UINT, 8},
    {MPI_FLOAT, "float", FLT, 4},                {MPI_DOUBLE, "double", FLT, 8},
    {MPI_BYTE, "byte", UINT, 1},
};
#define NTYPES (int)(sizeof types / sizeof types[0])

typedef struct {
    MPI_Op op;
    const char *name;
} op_t;

static const op_t ops[] = {{MPI_SUM, "sum"},   {MPI_PROD, "prod"}, {MPI_MAX, "max"},
                           {MPI_MIN, "min"},   {MPI_LAND, "land"}, {MPI_LOR, "lor"},
                           {MPI_LXOR, "lxor"}, {MPI_BAND, "band"}, {MPI_BOR, "bor"},
                           {MPI_BXOR, "bxor"}};
#define NOPS (int)(sizeof ops / sizeof ops[0])

static int op_allowed(int o, const type_t *t)
{
    const char *n = ops[o].name;
    if (t->t == MPI_BYTE)
        return n[0] == 'b'; /* bitwise only */
    if (t->kind == FLT)
        return n[0] != 'b' && n[0] != 'l' ? 1 : 0;
    return 1;
}

/* Input of `rank` at element i for op o: small, so every result is exact
 * and no 8-bit sum or product overflows (Open MPI 4.1.4's op/avx saturates
 * 8-bit sums instead of wrapping). */
static long long input(int o, int rank, size_t i)
{
    const char *n = ops[o].name;
    if (!strcmp(n, "prod"))
        return (i % 3 == 0 && rank % 3 == 1) ? 2 : 1;
    if (n[0] == 'l')
        return (rank + i) % 3 == 0 ? 0 : 1;
    return (long long)((rank * 7 + i * 3) % 5) + 1 + (n[0] == 'b' ? (long long)(rank % 4) * 8 : 0);
}

static long long fold(int o, long long a, long long b)
{
    switch (o) {
    case 0: return a + b;
    case 1: return a * b;
    case 2: return a > b ? a : b;
    case 3: return a < b ? a : b;
    case 4: return (a && b) ? 1 : 0;
    case 5: return (a || b) ? 1 : 0;
    case 6: return (!a != !b) ? 1 : 0;
    case 7: return a & b;
    case 8: return a | b;
    default: return a ^ b;
    }
}

static void put(const type_t *t, void *buf, size_t i, long long v)
{
    char *p = (char *)buf + i * t->size;
    if (t->kind == FLT) {
        if (t->size == 4) {
            float f = (float)v;
            memcpy(p, &f, 4);
        } else {
            double d = (double)v;
            memcpy(p, &d, 8);
        }
        return;
    }
    uint64_t u = (uint64_t)v; /* little-endian truncation */
    memcpy(p, &u, t->size);
}

static long long get(const type_t *t, const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * t->size;
    if (t->kind == FLT) {
        if (t->size == 4) {
            float f;
            memcpy(&f, p, 4);
            return (long long)f;
        }
        double d;
        memcpy(&d, p, 8);
        return (long long)d;
    }
    uint64_t u = 0;
    memcpy(&u, p, t->size);
    if (t->kind == SINT && t->size < 8 && (u >> (8 * t->size - 1)) & 1)
        u |= ~(uint64_t)0 << (8 * t->size);
    return (long long)u;
}

/* The reduced value of element i over ranks [0, n). */
static long long expect(int o, int n, size_t i, const type_t *t)
{
    long long v = input(o, 0, i);
    for (int r = 1; r < n; r++)
        v = fold(o, v, input(o, r, i));
    long long back; /* wrap to the type the way the machine does */
    char tmp[8];
    put(t, tmp, 0, v);
    back = get(t, tmp, 0);
    return back;
}

static const size_t counts[] = {0, 1, 2, 3, 7, 13, 31, 100, 1021};
#define NCOUNTS (int)(sizeof counts / sizeof counts[0])

enum { ALLREDUCE, REDUCE, RS_BLOCK, RS, NCOLL_RED };

/* One reduction collective, checked on every element this rank receives. */
static void check_reduction(MPI_Comm comm, int coll, const type_t *t, int o, size_t count,
                            int in_place)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    size_t total = coll == RS_BLOCK || coll == RS ? count * (size_t)n : count;
    int *rcounts = malloc((size_t)n * sizeof *rcounts);
    size_t my_first = 0, my_len = total;
    if (coll == RS_BLOCK) {
        my_first = count * (size_t)me;
        my_len = count;
    } else if (coll == RS) { /* uneven: rank r gets (r+1)*count/n elements... summing to total */
        size_t at = 0;
        for (int r = 0; r < n; r++) {
            size_t a = total * (size_t)r * (r + 1) / ((size_t)n * (n + 1));
            size_t b = total * (size_t)(r + 1) * (r + 2) / ((size_t)n * (n + 1));
            rcounts[r] = (int)(b - a);
            if (r == me) {
                my_first = at;
                my_len = b - a;
            }
            at += b - a;
        }
    }
    char *s = malloc(total * t->size + 1), *d = malloc(total * t->size + 1);
    for (size_t i = 0; i < total; i++)
        put(t, s, i, input(o, me, i));
    memset(d, 0x5a, total * t->size + 1);
    int root = (int)((count + (size_t)o) % (size_t)n); /* every position, over the sweep */
    void *sb = s;
    if (in_place && (coll != REDUCE || me == root)) {
        memcpy(d, s, total * t->size);
        sb = MPI_IN_PLACE;
    }
    switch (coll) {
    case ALLREDUCE: MPI_Allreduce(sb, d, (int)count, t->t, ops[o].op, comm); break;
    case REDUCE: MPI_Reduce(sb, d, (int)count, t->t, ops[o].op, root, comm); break;
    case RS_BLOCK: MPI_Reduce_scatter_block(sb, d, (int)count, t->t, ops[o].op, comm); break;
    default: MPI_Reduce_scatter(sb, d, rcounts, t->t, ops[o].op, comm); break;
    }
    static const char *cname[] = {"allreduce", "reduce", "reduce_scatter_block", "reduce_scatter"};
    if (coll != REDUCE || me == root)
        for (size_t i = 0; i < my_len; i++) {
            long long want = expect(o, n, my_first + i, t), got = get(t, d, i);
            if (got != want) {
                FAIL("%s %s %s count %zu%s n=%d: element %zu = %lld, want %lld", cname[coll],
                     t->name, ops[o].name, count, in_place ? " in place" : "", n, my_first + i, got,
                     want);
                break;
            }
        }
    free(s);
    free(d);
    free(rcounts);
}

static void check_allgather_bcast(MPI_Comm comm, size_t count, int in_place)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    int *s = malloc((count + 1) * sizeof *s), *d = malloc((count * n + 1) * sizeof *d);
    for (size_t i = 0; i < count; i++)
        s[i] = me * 1000003 + (int)i;
    for (size_t i = 0; i < count * n; i++)
        d[i] = -1;
    if (in_place)
        memcpy(d + count * me, s, count * sizeof *s);
    MPI_Allgather(in_place ? MPI_IN_PLACE : s, (int)count, MPI_INT, d, (int)count, MPI_INT, comm);
    for (size_t i = 0; i < count * n; i++)
        if (d[i] != (int)(i / count) * 1000003 + (int)(i % count)) {
            FAIL("allgather count %zu%s n=%d: element %zu = %d", count, in_place ? " in place" : "",
                 n, i, d[i]);
            break;
        }
    /* Alltoall: element i of the block rank r sends to rank j is
     * r*1000003 + j*10007 + i */
    int *a = malloc((count * n + 1) * sizeof *a);
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < count; i++) {
            a[(size_t)j * count + i] = me * 1000003 + j * 10007 + (int)i;
            d[(size_t)j * count + i] = in_place ? a[(size_t)j * count + i] : -1;
        }
    MPI_Alltoall(in_place ? MPI_IN_PLACE : a, (int)count, MPI_INT, d, (int)count, MPI_INT, comm);
    for (size_t i = 0; i < count * n; i++)
        if (d[i] != (int)(i / count) * 1000003 + me * 10007 + (int)(i % count)) {
            FAIL("alltoall count %zu%s n=%d: element %zu = %d", count, in_place ? " in place" : "",
                 n, i, d[i]);
            break;
        }
    free(a);
    for (int root = 0; root < n; root++) {
        for (size_t i = 0; i < count; i++)
            s[i] = me == root ? (int)(i * 7 + 1) : -7;
        MPI_Bcast(s, (int)count, MPI_INT, root, comm);
        for (size_t i = 0; i < count; i++)
            if (s[i] != (int)(i * 7 + 1)) {
                FAIL("bcast count %zu root %d n=%d: element %zu = %d", count, root, n, i, s[i]);
                break;
            }
    }
    free(s);
    free(d);
}

/* MINLOC/MAXLOC on one pair type: value (r*5+k)%7 of rank r, index r. */
#define CHECK_PAIR(comm, n, me, vtype, mpitype, op, name, ismin)                             \
    do {                                                                                     \
        struct { vtype v; int i; } in_[37], out_[37];                                        \
        for (int k = 0; k < 37; k++) {                                                       \
            in_[k].v = (vtype)(((me) * 5 + k) % 7);                                          \
            in_[k].i = (me);                                                                 \
        }                                                                                    \
        MPI_Allreduce(in_, out_, 37, mpitype, op, comm);                                     \
        for (int k = 0; k < 37; k++) {                                                       \
            int best = ismin ? 99 : -1, at = -1;                                             \
            for (int r = 0; r < (n); r++) {                                                  \
                int v = (r * 5 + k) % 7;                                                     \
                if (ismin ? v < best : v > best) {                                           \
                    best = v;                                                                \
                    at = r;                                                                  \
                }                                                                            \
            }                                                                                \
            if ((int)out_[k].v != best || out_[k].i != at) {                                 \
                FAIL("%s k=%d: (%d,%d) want (%d,%d)", name, k, (int)out_[k].v, out_[k].i,    \
                     best, at);                                                              \
                break;                                                                       \
            }                                                                                \
        }                                                                                    \
    } while (0)

static void check_more_pairs(MPI_Comm comm)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    CHECK_PAIR(comm, n, me, float, MPI_FLOAT_INT, MPI_MAXLOC, "maxloc float_int", 0);
    CHECK_PAIR(comm, n, me, long, MPI_LONG_INT, MPI_MINLOC, "minloc long_int", 1);
    CHECK_PAIR(comm, n, me, short, MPI_SHORT_INT, MPI_MAXLOC, "maxloc short_int", 0);
    CHECK_PAIR(comm, n, me, long double, MPI_LONG_DOUBLE_INT, MPI_MINLOC, "minloc long_double_int",
               1);
}

/* long double and complex sums, and C bool logic: exact small values. */
static void check_more_types(MPI_Comm comm)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    enum { K = 53 };
    long double ld[K], ldr[K];
    float cf[2 * K], cfr[2 * K];
    _Bool b[K], br[K];
    for (int k = 0; k < K; k++) {
        ld[k] = me + k;
        cf[2 * k] = (float)(me + k);
        cf[2 * k + 1] = (float)(2 * me);
        b[k] = (me + k) % 3 != 0;
    }
    MPI_Allreduce(ld, ldr, K, MPI_LONG_DOUBLE, MPI_SUM, comm);
    MPI_Allreduce(cf, cfr, K, MPI_C_FLOAT_COMPLEX, MPI_SUM, comm);
    MPI_Allreduce(b, br, K, MPI_C_BOOL, MPI_LAND, comm);
    for (int k = 0; k < K; k++) {
        int all = 1;
        for (int r = 0; r < n; r++)
            all &= (r + k) % 3 != 0;
        if (ldr[k] != (long double)(n * k + n * (n - 1) / 2) ||
            cfr[2 * k] != (float)(n * k + n * (n - 1) / 2) || cfr[2 * k + 1] != (float)(n * (n - 1)) ||
            br[k] != all) {
            FAIL("long double / float complex / C bool element %d", k);
            break;
        }
    }
}

static void check_pairs(MPI_Comm comm)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    struct { double v; int i; } dv[37], dr[37];
    struct { int v; int i; } iv[37], ir[37];
    for (int k = 0; k < 37; k++) {
        dv[k].v = iv[k].v = (me * 5 + k) % 7;
        dv[k].i = iv[k].i = me;
    }
    MPI_Allreduce(dv, dr, 37, MPI_DOUBLE_INT, MPI_MINLOC, comm);
    MPI_Allreduce(iv, ir, 37, MPI_2INT, MPI_MAXLOC, comm);
    for (int k = 0; k < 37; k++) {
        int minv = 99, mini = -1, maxv = -1, maxi = -1;
        for (int r = 0; r < n; r++) {
            int v = (r * 5 + k) % 7;
            if (v < minv) { minv = v; mini = r; }
            if (v > maxv) { maxv = v; maxi = r; }
        }
        if (dr[k].v != minv || dr[k].i != mini)
            FAIL("minloc double_int k=%d: (%g,%d) want (%d,%d)", k, dr[k].v, dr[k].i, minv, mini);
        if (ir[k].v != maxv || ir[k].i != maxi)
            FAIL("maxloc 2int k=%d: (%d,%d) want (%d,%d)", k, ir[k].v, ir[k].i, maxv, maxi);
    }
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void user_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt; /* a op b = a: associative, not commutative; result = rank 0's */
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* Sums for the derived types: 3 ints per element; ints 0 and 2 of 3. */
static void sum_three(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < 3 * *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void sum_vec(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++) {
        ((int *)inout)[3 * i] += ((int *)in)[3 * i];
        ((int *)inout)[3 * i + 2] += ((int *)in)[3 * i + 2];
    }
}

static void check_user_and_derived(MPI_Comm comm)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    enum { N = 301 };
    int s[3 * N], d[3 * N];
    MPI_Op sum, first;
    MPI_Op_create(user_sum, 1, &sum);
    MPI_Op_create(user_first, 0, &first);
    for (int i = 0; i < 3 * N; i++)
        s[i] = me + i;
    MPI_Allreduce(s, d, N, MPI_INT, sum, comm);
    for (int i = 0; i < N; i++)
        if (d[i] != n * i + n * (n - 1) / 2) {
            FAIL("commutative user op: element %d = %d", i, d[i]);
            break;
        }
    MPI_Allreduce(s, d, N, MPI_INT, first, comm);
    for (int i = 0; i < N; i++)
        if (d[i] != i) {
            FAIL("non-commutative user op: element %d = %d, want rank 0's %d", i, d[i], i);
            break;
        }
    MPI_Datatype three, vec;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    MPI_Op op_three, op_vec;
    MPI_Op_create(sum_three, 1, &op_three);
    MPI_Op_create(sum_vec, 1, &op_vec);
    MPI_Allreduce(s, d, N, three, op_three, comm);
    for (int i = 0; i < 3 * N; i++)
        if (d[i] != n * i + n * (n - 1) / 2) {
            FAIL("contiguous derived type: element %d = %d", i, d[i]);
            break;
        }
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* ints 0 and 2 of every 3; 1 is a gap */
    MPI_Type_commit(&vec);
    for (int i = 0; i < 3 * N; i++)
        d[i] = -5;
    MPI_Datatype vec3;
    MPI_Type_create_resized(vec, 0, 3 * sizeof(int), &vec3);
    MPI_Type_commit(&vec3);
    MPI_Allreduce(s, d, N, vec3, op_vec, comm);
    for (int i = 0; i < 3 * N; i++) {
        int want = i % 3 == 1 ? -5 : n * i + n * (n - 1) / 2;
        if (d[i] != want) {
            FAIL("vector type: int %d = %d, want %d", i, d[i], want);
            break;
        }
    }
    MPI_Type_free(&three);
    MPI_Type_free(&vec);
    MPI_Type_free(&vec3);
    MPI_Op_free(&sum);
    MPI_Op_free(&first);
    MPI_Op_free(&op_three);
    MPI_Op_free(&op_vec);
}

/* ---- signature-matched (count, datatype) pairs ------------------------------
 * MPI requires equal type signatures across ranks, not equal (count,
 * datatype).  Each rank lays the same n4*4 values of a base type (int or
 * double) out in its own way: rep 0 plain (count 4*n4), 1 contiguous(4),
 * 2 vector(4,1,2) resized to 8 (gaps), 3 a struct of two pairs resized to 8
 * (gaps), 4 one contiguous(4*n4).  Gaps must stay untouched. */
enum { NREPS = 5, GAP = 0x5a };

static size_t rep_off(int rep, size_t j, size_t es)
{
    switch (rep) {
    case 2: return (j / 4) * 8 * es + (j % 4) * 2 * es;
    case 3: return (j / 4) * 8 * es + ((j % 4) / 2) * 4 * es + (j % 2) * es;
    default: return j * es;
    }
}

/* The rep's datatype and count for n4*4 values; *span = bytes of buffer. */
static MPI_Datatype rep_type(int rep, MPI_Datatype base, size_t es, size_t n4, int *count,
                             size_t *span)
{
    MPI_Datatype t = base, tmp;
    *count = rep == 0 ? (int)(4 * n4) : rep == 4 ? 1 : (int)n4;
    *span = (rep == 2 || rep == 3 ? 8 : 4) * es * n4 + 1;
    if (rep == 1 || rep == 4) {
        MPI_Type_contiguous(rep == 1 ? 4 : (int)(4 * n4), base, &t);
    } else if (rep == 2) {
        MPI_Type_vector(4, 1, 2, base, &tmp);
        MPI_Type_create_resized(tmp, 0, (MPI_Aint)(8 * es), &t);
        MPI_Type_free(&tmp);
    } else if (rep == 3) {
        int bl[2] = {2, 2};
        MPI_Aint disp[2] = {0, (MPI_Aint)(4 * es)};
        MPI_Datatype ts[2] = {base, base};
        MPI_Type_create_struct(2, bl, disp, ts, &tmp);
        MPI_Type_create_resized(tmp, 0, (MPI_Aint)(8 * es), &t);
        MPI_Type_free(&tmp);
    }
    if (t != base)
        MPI_Type_commit(&t);
    return t;
}

static void rep_free(MPI_Datatype t, MPI_Datatype base)
{
    if (t != base)
        MPI_Type_free(&t);
}

/* Value j of rank r: integers for int, non-integers for double (so a change
 * in the order of a floating-point sum would show as a tolerance, not as an
 * exact comparison). */
static double sig_value(int r, size_t j) { return (r + 1) * 0.1 + (double)(j % 977) * 1e-3 + 1.0 / (r + 3); }

static void sig_put(char *buf, int rep, size_t j, size_t es, int r)
{
    if (es == 4) {
        int v = r * 1000003 + (int)j;
        memcpy(buf + rep_off(rep, j, es), &v, 4);
    } else {
        double v = sig_value(r, j);
        memcpy(buf + rep_off(rep, j, es), &v, 8);
    }
}

static double sig_get(const char *buf, int rep, size_t j, size_t es)
{
    if (es == 4) {
        int v;
        memcpy(&v, buf + rep_off(rep, j, es), 4);
        return v;
    }
    double v;
    memcpy(&v, buf + rep_off(rep, j, es), 8);
    return v;
}

/* Bytes of buf that no value of the rep occupies are still GAP. */
static int gaps_intact(const char *buf, int rep, size_t nvals, size_t es, size_t span)
{
    char *mark = calloc(span, 1);
    int ok = 1;
    for (size_t j = 0; j < nvals; j++)
        memset(mark + rep_off(rep, j, es), 1, es);
    for (size_t b = 0; b + 1 < span && ok; b++)
        ok = mark[b] || (unsigned char)buf[b] == GAP;
    free(mark);
    return ok;
}

/* The n blocks of d, `block` bytes apart in representation rrep (the last
 * one spans `last`): value j of block r must be r*1000003 + add + j, and
 * the gaps between values untouched. */
static void check_sig_blocks(const char *what, int in_place, size_t n4, int srep, int rrep, int n,
                             const char *d, size_t block, size_t last, int add)
{
    size_t nv = 4 * n4;
    for (int r = 0; r < n; r++)
        for (size_t j = 0; j < nv; j++)
            if (sig_get(d + block * (size_t)r, rrep, j, 4) != r * 1000003 + add + (int)j) {
                FAIL("%s%s n4=%zu reps %d/%d n=%d: block %d value %zu = %g", what,
                     in_place ? " in place" : "", n4, srep, rrep, n, r, j,
                     sig_get(d + block * (size_t)r, rrep, j, 4));
                r = n;
                break;
            }
    for (int r = 0; r < n; r++)
        if (!gaps_intact(d + block * (size_t)r, rrep, nv, 4, r == n - 1 ? last : block + 1))
            FAIL("%s n4=%zu rep %d: a gap of block %d was written", what, n4, rrep, r);
}

static void check_sig_moves(MPI_Comm comm, size_t n4)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    size_t nv = 4 * n4;
    for (int root = 0; root < n; root++) { /* Bcast, the root at every position */
        int rep = (me + root) % NREPS, count;
        size_t span;
        MPI_Datatype t = rep_type(rep, MPI_INT, 4, n4, &count, &span);
        char *b = malloc(span);
        memset(b, GAP, span);
        for (size_t j = 0; me == root && j < nv; j++)
            sig_put(b, rep, j, 4, 7);
        MPI_Bcast(b, count, t, root, comm);
        for (size_t j = 0; j < nv; j++)
            if (sig_get(b, rep, j, 4) != 7 * 1000003 + (int)j) {
                FAIL("bcast n4=%zu root %d rep %d n=%d: value %zu = %g", n4, root, rep, n,
                     j, sig_get(b, rep, j, 4));
                break;
            }
        if (!gaps_intact(b, rep, nv, 4, span))
            FAIL("bcast n4=%zu root %d rep %d: a gap was written", n4, root, rep);
        free(b);
        rep_free(t, MPI_INT);
    }
    for (int in_place = 0; in_place <= 1; in_place++) { /* Allgather */
        int srep = (me + 1) % NREPS, rrep = (me + 2) % NREPS, scount, rcount;
        size_t sspan, rspan;
        MPI_Datatype st = rep_type(srep, MPI_INT, 4, n4, &scount, &sspan);
        MPI_Datatype rt = rep_type(rrep, MPI_INT, 4, n4, &rcount, &rspan);
        MPI_Aint lb, rext;
        MPI_Type_get_extent(rt, &lb, &rext);
        size_t block = (size_t)rcount * (size_t)rext, rall = block * (size_t)(n - 1) + rspan;
        char *s = malloc(sspan), *d = malloc(rall);
        memset(s, GAP, sspan);
        memset(d, GAP, rall);
        for (size_t j = 0; j < nv; j++) {
            sig_put(s, srep, j, 4, me);
            if (in_place)
                sig_put(d + block * (size_t)me, rrep, j, 4, me);
        }
        MPI_Allgather(in_place ? MPI_IN_PLACE : s, scount, st, d, rcount, rt, comm);
        check_sig_blocks("allgather", in_place, n4, srep, rrep, n, d, block, rspan, 0);
        free(s);
        free(d);
        rep_free(st, MPI_INT);
        rep_free(rt, MPI_INT);
    }
}

/* Alltoall with per-rank (count, datatype) pairs of equal signatures:
 * value j of the block rank r sends to rank q is r*1000003 + q*7919 + j. */
static void check_sig_alltoall(MPI_Comm comm, size_t n4)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    size_t nv = 4 * n4;
    for (int in_place = 0; in_place <= 1; in_place++) {
        int srep = (me + 3) % NREPS, rrep = (me + in_place) % NREPS, scount, rcount;
        size_t sspan, rspan;
        MPI_Datatype st = rep_type(srep, MPI_INT, 4, n4, &scount, &sspan);
        MPI_Datatype rt = rep_type(rrep, MPI_INT, 4, n4, &rcount, &rspan);
        MPI_Aint lb, sext, rext;
        MPI_Type_get_extent(st, &lb, &sext);
        MPI_Type_get_extent(rt, &lb, &rext);
        size_t sblock = (size_t)scount * (size_t)sext, rblock = (size_t)rcount * (size_t)rext;
        size_t sall = sblock * (size_t)(n - 1) + sspan, rall = rblock * (size_t)(n - 1) + rspan;
        char *s = malloc(sall), *d = malloc(rall);
        memset(s, GAP, sall);
        memset(d, GAP, rall);
        for (int q = 0; q < n; q++)
            for (size_t j = 0; j < nv; j++) {
                int v = me * 1000003 + q * 7919 + (int)j;
                char *at = in_place ? d + rblock * (size_t)q + rep_off(rrep, j, 4)
                                    : s + sblock * (size_t)q + rep_off(srep, j, 4);
                memcpy(at, &v, 4);
            }
        MPI_Alltoall(in_place ? MPI_IN_PLACE : s, scount, st, d, rcount, rt, comm);
        check_sig_blocks("alltoall", in_place, n4, srep, rrep, n, d, rblock, rspan, me * 7919);
        free(s);
        free(d);
        rep_free(st, MPI_INT);
        rep_free(rt, MPI_INT);
    }
}

enum { SIG_ALLREDUCE, SIG_REDUCE, SIG_RS_BLOCK, SIG_RS, SIG_NCOLL };

/* Sum of value j over ranks, in rank order. */
static double sig_sum(MPI_Datatype base, int n, size_t j)
{
    double s = 0;
    for (int r = 0; r < n; r++)
        s += base == MPI_INT ? (double)(r * 1000003 + (int)j) : sig_value(r, j);
    return s;
}

/* The layout of the reduction under way, for the user op to read. */
static int sig_rep;
static size_t sig_es;

/* A commutative sum over any of the reps' layouts (Open MPI's predefined
 * ops take predefined datatypes only). */
static void sig_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int rep = sig_rep;
    for (size_t j = 0; j < 4 * (size_t)*len; j++) {
        char *a = (char *)in + rep_off(rep, j, sig_es), *b = (char *)inout + rep_off(rep, j, sig_es);
        if (sig_es == 4) {
            int x, y;
            memcpy(&x, a, 4), memcpy(&y, b, 4), y += x, memcpy(b, &y, 4);
        } else {
            double x, y;
            memcpy(&x, a, 8), memcpy(&y, b, 8), y += x, memcpy(b, &y, 8);
        }
    }
}

/* Reductions on every root, one layout on every rank (MPI wants the same
 * datatype there): plain with MPI_SUM, or a derived one (contiguous, vector
 * with gaps, struct of pairs with gaps) with a user op. */
static void check_sig_reduction(MPI_Comm comm, int coll, MPI_Datatype base, size_t n4,
                                int in_place, int root)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    size_t es = base == MPI_INT ? 4 : 8, per = coll == SIG_RS_BLOCK || coll == SIG_RS ? n : 1;
    int rep = (int)(n4 + (size_t)root + (size_t)coll) % 4, count;
    size_t span;
#ifdef MPICH_VERSION
    /* Debian's MPICH 4.0.2 crashes (SIGSEGV) in its own MPI_Reduce with
     * MPI_IN_PLACE at a root other than 0 from about 1000 elements (any
     * datatype), with or without libtacos-pmpi (which hands it such calls
     * when a communicator falls back): not in place for derived types (the
     * drivers in place are the core's, tested under Open MPI too); and runs
     * where communicators fall back to MPICH's own collectives (topology
     * files of the world's size) set MPI_COLL_CHECK_AVOID_MPICH_BUGS: plain
     * types, Reduce not in place */
    int avoid = getenv("MPI_COLL_CHECK_AVOID_MPICH_BUGS") != NULL;
    if (avoid)
        rep = 0;
    if (coll == SIG_REDUCE && (rep || avoid))
        in_place = 0;
#endif
    MPI_Datatype t = rep_type(rep, base, es, n4 * per, &count, &span);
    MPI_Op op = MPI_SUM;
    if (rep) {
        sig_rep = rep;
        sig_es = es;
        MPI_Op_create(sig_op, 1, &op);
    }
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    int *rcounts = malloc((size_t)n * sizeof *rcounts), vpe = rep ? 4 : 1; /* values each */
    size_t first = 0, mine = (size_t)count; /* in elements of t */
    for (int r = 0, at = 0; r < n; r++) {
        size_t all = n4 * per * 4 / (size_t)vpe, nn = (size_t)n * (size_t)(n + 1);
        rcounts[r] = coll == SIG_RS_BLOCK ? (int)(all / (size_t)n)
                                          : (int)(all * (size_t)(r + 1) * (size_t)(r + 2) / nn -
                                                  all * (size_t)r * (size_t)(r + 1) / nn);
        if (r == me && (coll == SIG_RS_BLOCK || coll == SIG_RS))
            first = (size_t)at, mine = (size_t)rcounts[r];
        at += rcounts[r];
    }
    char *s = malloc(span), *d = malloc(span), *orig = malloc(span);
    memset(s, GAP, span);
    memset(d, GAP, span);
    for (size_t j = 0; j < 4 * n4 * per; j++)
        sig_put(s, rep, j, es, me);
    void *sb = s;
    if (in_place && (coll != SIG_REDUCE || me == root)) {
        memcpy(d, s, span);
        sb = MPI_IN_PLACE;
    }
    memcpy(orig, d, span);
    switch (coll) {
    case SIG_ALLREDUCE: MPI_Allreduce(sb, d, count, t, op, comm); break;
    case SIG_REDUCE: MPI_Reduce(sb, d, count, t, op, root, comm); break;
    case SIG_RS_BLOCK: MPI_Reduce_scatter_block(sb, d, rcounts[0], t, op, comm); break;
    default: MPI_Reduce_scatter(sb, d, rcounts, t, op, comm); break;
    }
    static const char *cname[] = {"allreduce", "reduce", "reduce_scatter_block",
                                  "reduce_scatter"};
    if (coll != SIG_REDUCE || me == root) {
        first *= (size_t)vpe, mine *= (size_t)vpe; /* in values */
        for (size_t j = 0; j < mine; j++) {
            double want = sig_sum(base, n, first + j), got = sig_get(d, rep, j, es);
            if (got != want && !(es == 8 && fabs(got - want) <= 1e-12 * fabs(want))) {
                FAIL("%s %s n4=%zu rep %d root %d%s n=%d: value %zu = %.17g, want %.17g",
                     cname[coll], es == 4 ? "int" : "double", n4, rep, root,
                     in_place ? " in place" : "", n, first + j, got, want);
                break;
            }
        }
        /* past the result: the caller's bytes, bit for bit */
        size_t past = mine ? rep_off(rep, mine - 1, es) + es : 0;
        if (!gaps_intact(d, rep, mine, es, past + 1) ||
            memcmp(d + past, orig + past, span - past))
            FAIL("%s n4=%zu rep %d%s n=%d: bytes outside the result changed", cname[coll], n4,
                 rep, in_place ? " in place" : "", n);
    } else if (memcmp(d, orig, span)) {
        FAIL("%s: rank %d is not the root but its receive buffer changed", cname[coll], me);
    }
    free(s);
    free(d);
    free(orig);
    free(rcounts);
    rep_free(t, base);
    if (rep)
        MPI_Op_free(&op);
}

/* Elements whose data lies before or after [0, extent) (a double at -8
 * or at +8 in an 8-byte extent), through a user op; and the padding of
 * MPI_DOUBLE_INT (bytes 12..15 of each 16) left as the caller had it. */
static ptrdiff_t shifted_at;

static void sum_shifted(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++) {
        double a, b;
        memcpy(&a, (char *)in + 8 * i + shifted_at, 8);
        memcpy(&b, (char *)inout + 8 * i + shifted_at, 8);
        b += a;
        memcpy((char *)inout + 8 * i + shifted_at, &b, 8);
    }
}

static void check_layouts(MPI_Comm comm)
{
    enum { N = 16384 };
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Op op;
    MPI_Op_create(sum_shifted, 1, &op);
    for (int at = -8; at <= 8; at += 16) {
        MPI_Datatype tmp, t;
        int one = 1;
        MPI_Aint disp = at;
        MPI_Datatype dbl = MPI_DOUBLE;
        MPI_Type_create_struct(1, &one, &disp, &dbl, &tmp);
        MPI_Type_create_resized(tmp, at < 0 ? at : 0, 8, &t);
        MPI_Type_commit(&t);
        shifted_at = at;
        for (int in_place = 0; in_place <= 1; in_place++) {
            char *sb = calloc(8 * N + 32, 1), *rb = calloc(8 * N + 32, 1);
            char *s = sb + 16, *d = rb + 16; /* element i's double at s + 8i + at */
            for (int i = 0; i < N; i++) {
                double v = me + i * 0.5;
                memcpy(s + 8 * i + at, &v, 8);
            }
            if (in_place)
                memcpy(rb, sb, 8 * N + 32);
            MPI_Allreduce(in_place ? MPI_IN_PLACE : s, d, N, t, op, comm);
            for (int i = 0; i < N; i++) {
                double got, want = n * (n - 1) / 2.0 + n * i * 0.5;
                memcpy(&got, d + 8 * i + at, 8);
                if (got != want) {
                    FAIL("allreduce of a double at %+d in an 8-byte extent%s n=%d: element %d = "
                         "%g, want %g",
                         at, in_place ? " in place" : "", n, i, got, want);
                    break;
                }
            }
            free(sb);
            free(rb);
        }
        MPI_Type_free(&tmp);
        MPI_Type_free(&t);
    }
    MPI_Op_free(&op);
    struct { double v; int i; } *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    memset(in, 0, N * sizeof *in);
    memset(out, GAP, N * sizeof *out);
    for (int k = 0; k < N; k++)
        in[k].v = (me * 5 + k) % 7, in[k].i = me;
    MPI_Allreduce(in, out, N, MPI_DOUBLE_INT, MPI_MINLOC, comm);
    for (int k = 0; k < N; k++)
        if (((unsigned char *)&out[k])[12] != GAP || ((unsigned char *)&out[k])[15] != GAP) {
            FAIL("minloc double_int n=%d: the padding of element %d was written", n, k);
            break;
        }
    free(in);
    free(out);
}

static void check_signatures(MPI_Comm comm)
{
    int n;
    MPI_Comm_size(comm, &n);
    static const size_t n4s[] = {0, 1, 3, 1000, 65537};
    for (size_t i = 0; i < sizeof n4s / sizeof n4s[0]; i++) {
        check_sig_moves(comm, n4s[i]);
        check_sig_alltoall(comm, n4s[i]);
        for (int coll = 0; coll < SIG_NCOLL; coll++)
            for (int root = 0; root < (coll == SIG_REDUCE ? n : 1); root++) {
                check_sig_reduction(comm, coll, MPI_DOUBLE, n4s[i], (int)(i + root) % 2, root);
                if (i % 2)
                    check_sig_reduction(comm, coll, MPI_INT, n4s[i], (int)(i + root + 1) % 2,
                                        root);
            }
    }
}

static void check_comm(MPI_Comm comm, int full)
{
    for (int coll = 0; coll < NCOLL_RED; coll++)
        for (int ti = 0; ti < NTYPES; ti++)
            for (int o = 0; o < NOPS; o++) {
                if (!op_allowed(o, &types[ti]) || (!full && (ti % 4 || o % 3)))
                    continue;
                for (int c = 0; c < NCOUNTS; c++)
                    check_reduction(comm, coll, &types[ti], o, counts[c], c % 2);
            }
    for (int c = 0; c < NCOUNTS; c++)
        check_allgather_bcast(comm, counts[c], c % 2);
    /* large: 1M elements */
    check_reduction(comm, ALLREDUCE, &types[4], 0, 1000003, 0);
    check_reduction(comm, RS_BLOCK, &types[19], 2, 1000003 / 8, 1);
    check_reduction(comm, REDUCE, &types[6], 0, 1000003, 0);
    check_allgather_bcast(comm, 1000003 / 8, 0);
    check_pairs(comm);
    check_more_pairs(comm);
    check_more_types(comm);
    check_user_and_derived(comm);
    check_signatures(comm);
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * 4;
}

/* Bytes the process has allocated with malloc (finer than the RSS). */
static long heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (long)(mi.uordblks + mi.hblkhd);
}

/* Open file descriptors (shared staging is memfds: coll_tacos_stage 3). */
static long open_fds(void)
{
    long n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

/* Thousands of calls and communicator dup/free cycles: memory must not grow
 * (after a warm-up that fills caches and the PML's free lists) by more than
 * 64 bytes a cycle, nor the open files. */
static void check_leaks(void)
{
    enum { COUNT = 40000, ROUNDS = 3000, WARM = 500 };
    static int s[COUNT], d[COUNT];
    long before = 0, rss = 0, fds = 0;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Allreduce(s, d, COUNT, MPI_INT, MPI_SUM, dup);
        MPI_Bcast(s, COUNT, MPI_INT, round % 2, dup);
        MPI_Comm_free(&dup);
        MPI_Allreduce(s, d, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (round == WARM)
            before = heap_bytes(), rss = rss_kib(), fds = open_fds();
    }
    if (open_fds() > fds + 4)
        FAIL("%ld open files after %d dup/allreduce/bcast/free cycles, %ld before",
             open_fds(), ROUNDS - WARM, fds);
    long grown = heap_bytes() - before;
    if (grown > 64L * (ROUNDS - WARM) || rss_kib() - rss > 2048)
        FAIL("memory grew by %ld bytes (%ld KiB RSS) over %d dup/allreduce/bcast/free cycles",
             grown, rss_kib() - rss, ROUNDS - WARM);
    if (me_world == 0)
        printf("leak check: heap %+ld bytes over %d cycles\n", grown, ROUNDS - WARM);
}

/* Many communicators with large buffers: the scratch they keep between
 * calls is bounded by coll_tacos_scratch_max_bytes for the whole process
 * (run with it at 16 MiB: 64 communicators x 2 MiB reduce-scatters would
 * keep about 240 MiB without it), also what nonblocking calls staged
 * (coll_tacos_stage) give back to their communicator's pool. */
static void check_many_comms(void)
{
    enum { NCOMM = 64, COUNT = 1 << 19 };
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm c[NCOMM];
    int *s = calloc((size_t)COUNT * (size_t)n, sizeof *s), *d = calloc(COUNT, sizeof *d);
    long before = rss_kib();
    for (int i = 0; i < NCOMM; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
        MPI_Reduce_scatter_block(s, d, COUNT, MPI_INT, MPI_SUM, c[i]);
        MPI_Allreduce(MPI_IN_PLACE, d, COUNT, MPI_INT, MPI_SUM, c[i]);
        MPI_Request r; /* (its size planned by the Allreduce; staged, its buffers go to a pool) */
        MPI_Iallreduce(MPI_IN_PLACE, d, COUNT, MPI_INT, MPI_SUM, c[i], &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    long grown = rss_kib() - before;
    if (grown > 64 * 1024)
        FAIL("%d communicators keep %ld KiB", NCOMM, grown);
    if (me_world == 0)
        printf("many communicators: %+ld KiB\n", grown);
    for (int i = 0; i < NCOMM; i++)
        MPI_Comm_free(&c[i]);
    free(s);
    free(d);
}

/* coll_tacos_enable written through MPI_T decides for communicators created
 * afterwards: 5 Allreduces on a dup made with it off (another component
 * serves them) and 5 on a dup made with it on; the trace must show 5. */
static void check_mpit_enable(void)
{
    enum { COUNT = 1 << 18 };
    static int s[COUNT], d[COUNT];
    int idx, count, provided, n;
    MPI_T_cvar_handle h;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (MPI_T_cvar_get_index("coll_tacos_enable", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS) {
        FAIL("coll_tacos_enable is not an MPI_T control variable");
        return;
    }
    for (int on = 0; on <= 1; on++) {
        MPI_Comm c;
        if (MPI_T_cvar_write(h, &on) != MPI_SUCCESS)
            FAIL("MPI_T_cvar_write(coll_tacos_enable, %d) failed", on);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        for (int i = 0; i < 5; i++) {
            for (int j = 0; j < COUNT; j++)
                s[j] = j % 1000 + me_world + i;
            MPI_Allreduce(s, d, COUNT, MPI_INT, MPI_SUM, c);
            for (int j = 0; j < COUNT; j++)
                if (d[j] != n * (j % 1000 + i) + n * (n - 1) / 2) {
                    FAIL("MPI_T check: element %d is %d", j, d[j]);
                    break;
                }
        }
        MPI_Comm_free(&c);
    }
    MPI_T_cvar_handle_free(&h);
    MPI_T_finalize();
}

/* Floating-point reductions: sums of values of very different magnitudes,
 * where the order of the additions shows in the result.  Allreduce,
 * Reduce, Reduce_scatter_block and Reduce_scatter of doubles and floats, in
 * place and not, blocking, nonblocking and persistent (one request started
 * DET_CALLS times), DET_CALLS calls each: every result within the error
 * bound of any order of the additions of the exact sum; with same_bits
 * (the default, coll_tacos_deterministic on) every call gives the bits of
 * the first blocking one.  Rank 0 prints a hash of the results
 * ("deterministic hash: ...") for comparing two jobs. */
enum { DET_COUNT = 65539, DET_CALLS = 20 };

static double det_in(int r, int i, int is_float)
{
    double big = is_float ? 1e7 : 1e16;
    return (r % 2 ? big : 1.0) * (1.0 + 1.0 / (3.0 + i + r)) * (r % 3 ? -1 : 1);
}

static uint64_t fnv(uint64_t h, const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* The exact sum of element i over n ranks and the most any order of the
 * additions may miss it by ((n + 1) roundings of the sum of magnitudes). */
static void det_exact(int n, int i, int is_float, double *exact, double *tol)
{
    long double sum = 0, mag = 0;
    for (int r = 0; r < n; r++) {
        double x = is_float ? (double)(float)det_in(r, i, 1) : det_in(r, i, 0);
        sum += x, mag += fabsl((long double)x);
    }
    *exact = (double)sum;
    *tol = (double)((long double)(n + 1) * (is_float ? FLT_EPSILON : DBL_EPSILON) * mag);
}

enum { DET_ALLREDUCE, DET_REDUCE, DET_RS_BLOCK, DET_RS, DET_NKINDS };

/* One call of kind: blocking (nb 0), nonblocking (1) or persistent (2:
 * *keep made at the first call, started at each). */
static void det_call(int kind, int nb, const void *sb, void *out, int total, int each,
                     const int *counts, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *keep)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (nb == 2 && *keep == MPI_REQUEST_NULL) {
        if (kind == DET_ALLREDUCE)
            INIT(Allreduce)(sb, out, total, t, MPI_SUM, c, MPI_INFO_NULL, keep);
        else if (kind == DET_REDUCE)
            INIT(Reduce)(sb, out, total, t, MPI_SUM, root, c, MPI_INFO_NULL, keep);
        else if (kind == DET_RS_BLOCK)
            INIT(Reduce_scatter_block)(sb, out, each, t, MPI_SUM, c, MPI_INFO_NULL, keep);
        else
            INIT(Reduce_scatter)(sb, out, counts, t, MPI_SUM, c, MPI_INFO_NULL, keep);
    }
    if (nb == 2)
        MPI_Start(keep), MPI_Wait(keep, MPI_STATUS_IGNORE);
    else if (kind == DET_ALLREDUCE && nb)
        MPI_Iallreduce(sb, out, total, t, MPI_SUM, c, &req);
    else if (kind == DET_ALLREDUCE)
        MPI_Allreduce(sb, out, total, t, MPI_SUM, c);
    else if (kind == DET_REDUCE && nb)
        MPI_Ireduce(sb, out, total, t, MPI_SUM, root, c, &req);
    else if (kind == DET_REDUCE)
        MPI_Reduce(sb, out, total, t, MPI_SUM, root, c);
    else if (kind == DET_RS_BLOCK && nb)
        MPI_Ireduce_scatter_block(sb, out, each, t, MPI_SUM, c, &req);
    else if (kind == DET_RS_BLOCK)
        MPI_Reduce_scatter_block(sb, out, each, t, MPI_SUM, c);
    else if (nb)
        MPI_Ireduce_scatter(sb, out, counts, t, MPI_SUM, c, &req);
    else
        MPI_Reduce_scatter(sb, out, counts, t, MPI_SUM, c);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static void check_deterministic(int same_bits)
{
    static const char *kind_name[] = {"allreduce", "reduce", "reduce_scatter_block",
                                      "reduce_scatter"};
    static const char *form[] = {"", " (nonblocking)", " (persistent)"};
    int n, me;
    MPI_Comm c = MPI_COMM_WORLD;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    int each = DET_COUNT / n, root = n - 1, *counts = malloc((size_t)n * sizeof *counts);
    for (int r = 0; r < n; r++)
        counts[r] = DET_COUNT / n + (r < DET_COUNT % n);
    size_t cap = (size_t)DET_COUNT * sizeof(double);
    char *in = malloc(cap), *out = malloc(cap), *first = malloc(cap);
    double *exact = malloc(DET_COUNT * sizeof *exact), *tol = malloc(DET_COUNT * sizeof *tol);
    uint64_t hash = 1469598103934665603ull;
    for (int kind = 0; kind < DET_NKINDS; kind++)
        for (int is_float = 0; is_float < 2; is_float++) {
            MPI_Datatype t = is_float ? MPI_FLOAT : MPI_DOUBLE;
            size_t size = is_float ? sizeof(float) : sizeof(double);
            int total = kind == DET_RS_BLOCK ? each * n : DET_COUNT;
            for (int i = 0; i < total; i++) {
                double x = det_in(me, i, is_float);
                if (is_float)
                    ((float *)in)[i] = (float)x;
                else
                    ((double *)in)[i] = x;
            }
            /* this rank's part of the result: [lo, lo + len) of the whole */
            int lo = 0, len = kind == DET_RS_BLOCK ? each : kind == DET_RS ? counts[me] : total;
            for (int r = 0; kind == DET_RS && r < me; r++)
                lo += counts[r];
            lo = kind == DET_RS_BLOCK ? me * each : lo;
            for (int i = 0; i < len; i++)
                det_exact(n, lo + i, is_float, &exact[i], &tol[i]);
            int has = kind != DET_REDUCE || me == root;
            for (int in_place = 0; in_place < 2; in_place++)
                for (int nb = 0; nb < 3; nb++) { /* blocking, nonblocking, persistent */
                    MPI_Request keep = MPI_REQUEST_NULL;
                    for (int call = 0; call < DET_CALLS; call++) {
                        int own = in_place && has; /* Reduce: in place at the root only */
                        if (own)
                            memcpy(out, in, (size_t)total * size);
                        else
                            memset(out, 0xff, cap); /* a call that writes nothing shows */
                        det_call(kind, nb, own ? MPI_IN_PLACE : in, out, total, each, counts,
                                 t, root, c, &keep);
                        if (!has)
                            continue;
                        if (!in_place && !nb && !call) {
                            memcpy(first, out, (size_t)len * size);
                            hash = fnv(hash, out, (size_t)len * size);
                        } else if (same_bits && memcmp(first, out, (size_t)len * size)) {
                            FAIL("%s of %s%s%s, call %d: other bits than the first blocking "
                                 "call's",
                                 kind_name[kind], is_float ? "float" : "double",
                                 in_place ? " in place" : "", form[nb], call);
                            break;
                        }
                        for (int i = 0; i < len; i++) {
                            double v = is_float ? ((const float *)out)[i]
                                                : ((const double *)out)[i];
                            if (!(fabs(v - exact[i]) <= tol[i])) {
                                FAIL("%s of %s%s%s, call %d: element %d is %.17g, off the "
                                     "exact sum by more than any order of additions gives",
                                     kind_name[kind], is_float ? "float" : "double",
                                     in_place ? " in place" : "", form[nb], call, lo + i, v);
                                call = DET_CALLS;
                                break;
                            }
                        }
                    }
                    if (keep != MPI_REQUEST_NULL)
                        MPI_Request_free(&keep);
                }
        }
    uint64_t *all = malloc((size_t)n * sizeof *all);
    MPI_Gather(&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, c);
    if (me == 0) {
        uint64_t h = 1469598103934665603ull;
        for (int r = 0; r < n; r++)
            h = fnv(h, &all[r], sizeof all[r]);
        printf("deterministic hash: %016llx\n", (unsigned long long)h);
    }
    free(all), free(counts), free(in), free(out), free(first), free(exact), free(tol);
}

/* With a fault injected into coll/tacos on one rank (TACOS_FAULT): that
 * rank's call returns an error (MPI_ERRORS_RETURN), says so and aborts the
 * job; the others are in the collective until the abort ends them. */
static void check_fault(void)
{
    enum { COUNT = 1 << 18 };
    static int s[COUNT], d[COUNT];
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    for (int i = 0; i < 3; i++) {
        int rc = MPI_Allreduce(s, d, COUNT, MPI_INT, MPI_SUM, c);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len;
            MPI_Error_string(rc, msg, &len);
            fprintf(stderr, "rank %d: MPI_Allreduce returned an error: %s\n", me_world, msg);
            sleep(1); /* the launcher forwards the line before the abort kills it */
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    MPI_Comm_free(&c);
}

/* ---- the application's traffic and communicators around the interception --
 * The six intercepted collectives with checked results, run next to the
 * application's own point-to-point messages, communicator churn and threads.
 * Rank r's element i is (r+1)*(i+1)+salt, so a sum over n ranks is
 * n(n+1)/2*(i+1) + n*salt (exact in int and in double at these sizes). */
static const int six_counts[] = {1, 7, 1000, 65537}; /* 65537 doubles: 512 KiB */
#define NSIX_COUNTS (int)(sizeof six_counts / sizeof six_counts[0])

enum { C_ALLREDUCE, C_ALLGATHER, C_BCAST, C_REDUCE, C_RS_BLOCK, C_RS, C_ALLTOALL, NSIX };
#define SIX_ALL ((1 << NSIX) - 1)
static const char *const six_name[] = {"allreduce", "allgather",            "bcast",
                                       "reduce",    "reduce_scatter_block", "reduce_scatter",
                                       "alltoall"};

static double six_in(int r, size_t i, int salt) { return (double)(r + 1) * (double)(i + 1) + salt; }

static double six_sum(int n, size_t i, int salt)
{
    return (double)n * (n + 1) / 2 * (double)(i + 1) + (double)n * salt;
}

static void val_put(MPI_Datatype t, void *b, size_t i, double v)
{
    if (t == MPI_INT)
        ((int *)b)[i] = (int)v;
    else
        ((double *)b)[i] = v;
}

static double val_get(MPI_Datatype t, const void *b, size_t i)
{
    return t == MPI_INT ? ((const int *)b)[i] : ((const double *)b)[i];
}

/* Collective c with count elements (per rank for allgather, in all for the
 * reduce-scatters) on comm, every element this rank receives checked.
 * Allgather and reduce_scatter move ints, the others doubles. */
static void run_one(MPI_Comm comm, int c, int count, int salt, const char *where)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Datatype t = c == C_ALLGATHER || c == C_RS ? MPI_INT : MPI_DOUBLE;
    int root = (count + salt) % n, block = (count + n - 1) / n, *rcounts = malloc(n * sizeof(int));
    size_t cnt = (size_t)count, blk = (size_t)block, nr = (size_t)n;
    int spread = c == C_ALLGATHER || c == C_ALLTOALL;
    size_t total = spread ? cnt * nr : c == C_RS_BLOCK ? blk * nr : cnt;
    size_t first = 0, len = spread ? total : c == C_RS_BLOCK ? blk : cnt;
    for (int r = 0, at = 0; r < n; r++) { /* reduce_scatter: rank r gets about (r+1)/n(n+1)/2 */
        size_t nn = (size_t)n * (size_t)(n + 1);
        rcounts[r] = (int)(total * (size_t)(r + 1) * (size_t)(r + 2) / nn -
                           total * (size_t)r * (size_t)(r + 1) / nn);
        if (r == me && c == C_RS)
            first = (size_t)at, len = (size_t)rcounts[r];
        at += rcounts[r];
    }
    if (c == C_RS_BLOCK)
        first = blk * (size_t)me;
    char *s = malloc(total * 8), *d = malloc(total * 8);
    for (size_t i = 0; i < total; i++) {
        val_put(t, s, i, c == C_BCAST && me != root ? -1 : six_in(me, i, salt));
        val_put(t, d, i, -1);
    }
    switch (c) {
    case C_ALLREDUCE: MPI_Allreduce(s, d, count, t, MPI_SUM, comm); break;
    case C_ALLGATHER: MPI_Allgather(s, count, t, d, count, t, comm); break;
    case C_BCAST: MPI_Bcast(s, count, t, root, comm); break;
    case C_REDUCE: MPI_Reduce(s, d, count, t, MPI_SUM, root, comm); break;
    case C_RS_BLOCK: MPI_Reduce_scatter_block(s, d, block, t, MPI_SUM, comm); break;
    case C_ALLTOALL: MPI_Alltoall(s, count, t, d, count, t, comm); break;
    default: MPI_Reduce_scatter(s, d, rcounts, t, MPI_SUM, comm); break;
    }
    if (c == C_REDUCE && me != root)
        len = 0;
    for (size_t j = 0; j < len; j++) {
        size_t g = first + j;
        double want = c == C_ALLTOALL ? six_in((int)(g / cnt), (size_t)me * cnt + g % cnt, salt)
                      : c == C_ALLGATHER ? six_in((int)(g / cnt), g % cnt, salt)
                      : c == C_BCAST   ? six_in(root, g, salt)
                                       : six_sum(n, g, salt);
        double got = val_get(t, c == C_BCAST ? s : d, j);
        if (got != want) {
            FAIL("%s: %s count %d salt %d n=%d: element %zu = %.17g, want %.17g", where, six_name[c],
                 count, salt, n, g, got, want);
            break;
        }
    }
    free(s);
    free(d);
    free(rcounts);
}

/* The collectives in the mask `which`, at every size of six_counts. */
static void run_six(MPI_Comm comm, int which, int salt, const char *where)
{
    for (int k = 0; k < NSIX_COUNTS; k++)
        for (int c = 0; c < NSIX; c++)
            if (which & 1 << c)
                run_one(comm, c, six_counts[k], salt + k, where);
}

/* --p2p: the application's messages on the communicator the collectives run
 * on.  Each rank sends P2P_PER messages to each neighbour, dir 0 to
 * (me+1)%n and dir 1 to (me+n-1)%n, tag 700+2*seq+dir, payload {source,
 * seq, dir, magic+round}; it receives them with MPI_ANY_SOURCE/MPI_ANY_TAG
 * into buffers larger than the payload (a stolen message would show). */
enum { P2P_PER = 2, P2P_MSGS = 2 * P2P_PER, P2P_LEN = 4, P2P_RLEN = 64, P2P_MAGIC = 0x7ac05 };

static void p2p_send(MPI_Comm comm, int round, int buf[][P2P_LEN], MPI_Request *req)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    for (int k = 0; k < P2P_MSGS; k++) {
        int seq = k / 2, dir = k % 2, to = dir ? (me + n - 1) % n : (me + 1) % n;
        buf[k][0] = me, buf[k][1] = seq, buf[k][2] = dir, buf[k][3] = P2P_MAGIC + round;
        MPI_Isend(buf[k], P2P_LEN, MPI_INT, to, 700 + 2 * seq + dir, comm, &req[k]);
    }
}

static void p2p_post(MPI_Comm comm, int buf[][P2P_RLEN], MPI_Request *req)
{
    for (int k = 0; k < P2P_MSGS; k++)
        MPI_Irecv(buf[k], P2P_RLEN, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &req[k]);
}

/* Receives first (posted before the collectives, sends after them) or
 * sends first (the receives posted after the collectives); then exactly
 * the messages sent arrived, each once, and nothing else is pending. */
static void p2p_round(MPI_Comm comm, int sends_first, int round, const char *where)
{
    int n, me, sbuf[P2P_MSGS][P2P_LEN], rbuf[P2P_MSGS][P2P_RLEN], seen[P2P_MSGS] = {0};
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Request req[2 * P2P_MSGS]; /* receives, then sends */
    MPI_Status st[2 * P2P_MSGS];
    memset(rbuf, 0xff, sizeof rbuf); /* -1: what a short message leaves */
    if (sends_first)
        p2p_send(comm, round, sbuf, req + P2P_MSGS);
    else
        p2p_post(comm, rbuf, req);
    /* MPICH 4.0's own MPI_Alltoall on one rank never returns while these
     * receives are posted (also without libtacos-pmpi): not asked of it */
    run_six(comm, n == 1 ? SIX_ALL & ~(1 << C_ALLTOALL) : SIX_ALL, round, where);
    if (sends_first)
        p2p_post(comm, rbuf, req);
    else
        p2p_send(comm, round, sbuf, req + P2P_MSGS);
    MPI_Waitall(2 * P2P_MSGS, req, st);
    for (int k = 0; k < P2P_MSGS; k++) {
        int got, *m = rbuf[k], seq = m[1], dir = m[2];
        MPI_Get_count(&st[k], MPI_INT, &got);
        int from = dir ? (me + 1) % n : (me + n - 1) % n; /* who sends dir to me */
        if (got != P2P_LEN || m[3] != P2P_MAGIC + round || seq < 0 || seq >= P2P_PER ||
            (dir & ~1) || m[0] != from || st[k].MPI_SOURCE != from ||
            st[k].MPI_TAG != 700 + 2 * seq + dir || seen[2 * seq + dir]++)
            FAIL("%s: receive %d got %d ints {%d,%d,%d,%#x} from %d tag %d (want from %d, "
                 "each of %d messages once)",
                 where, k, got, m[0], seq, dir, m[3], st[k].MPI_SOURCE, st[k].MPI_TAG, from,
                 P2P_MSGS);
    }
    MPI_Barrier(comm);
    int flag;
    MPI_Status extra;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &extra);
    if (flag)
        FAIL("%s: a message nobody sent is pending, from %d tag %d", where, extra.MPI_SOURCE,
             extra.MPI_TAG);
}

static void check_p2p(void)
{
    static const char *const where[] = {"p2p world, receives first", "p2p dup, receives first",
                                        "p2p world, sends first", "p2p dup, sends first"};
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int round = 0; round < 4; round++)
        p2p_round(round % 2 ? dup : MPI_COMM_WORLD, round / 2, round, where[round]);
    MPI_Comm_free(&dup);
}

/* --dup-storm: 300 communicators created, used once and freed (every 3rd
 * a split by parity), then 50 rounds of 8 at once (dups of world and of the
 * previous one) freed in reverse order. */
static void check_dup_storm(void)
{
    for (int it = 0; it < 300; it++) {
        MPI_Comm c;
        if (it % 3 == 2)
            MPI_Comm_split(MPI_COMM_WORLD, me_world % 2, me_world, &c);
        else
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
        run_one(c, C_ALLREDUCE, 65537, it, it % 3 == 2 ? "dup storm, split" : "dup storm, dup");
        MPI_Comm_free(&c);
    }
    for (int it = 0; it < 50; it++) {
        MPI_Comm c[8];
        for (int k = 0; k < 8; k++)
            MPI_Comm_dup(k % 2 ? c[k - 1] : MPI_COMM_WORLD, &c[k]);
        for (int k = 0; k < 8; k++)
            run_one(c[k], C_ALLREDUCE, six_counts[(it + k) % NSIX_COUNTS], it * 8 + k,
                    "dup storm, 8 at once");
        for (int k = 7; k >= 0; k--)
            MPI_Comm_free(&c[k]);
    }
}

/* --freed-cached: a communicator used with large counts (what it caches)
 * and freed; one freed right after creation; then a dup of the same size
 * and a split, which may get the freed one's handle or context, checked. */
static void check_freed_cached(void)
{
    for (int it = 0; it < 20; it++) {
        MPI_Comm a, b, s, unused;
        MPI_Comm_dup(MPI_COMM_WORLD, &a);
        for (int rep = 0; rep < 3; rep++)
            for (int c = 0; c < NSIX; c++) {
                run_one(a, c, 65537, it + rep, "freed-cached, before the free");
                run_one(a, c, 1000, it + rep, "freed-cached, before the free");
            }
        MPI_Comm_free(&a);
        if (it % 2) /* no collective on it */
            MPI_Comm_dup(MPI_COMM_WORLD, &unused);
        else
            MPI_Comm_split(MPI_COMM_WORLD, me_world % 2, me_world, &unused);
        MPI_Comm_free(&unused);
        MPI_Comm_dup(MPI_COMM_WORLD, &b);
        MPI_Comm_split(MPI_COMM_WORLD, me_world % 2, -me_world, &s);
        run_six(b, SIX_ALL, it, "freed-cached, new dup");
        run_six(s, SIX_ALL, it, "freed-cached, new split");
        MPI_Comm_free(&b);
        MPI_Comm_free(&s);
    }
}

/* --threads: 4 threads, each with its own dup of world (made before they
 * start, in the same order on every rank), 50 rounds each of allreduce,
 * allgather, bcast and reduce, sizes varying by round. */
typedef struct {
    MPI_Comm comm;
    int id;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    char where[32];
    snprintf(where, sizeof where, "threads, thread %d", a->id);
    for (int it = 0; it < 50; it++)
        for (int c = C_ALLREDUCE; c <= C_REDUCE; c++)
            run_one(a->comm, c, six_counts[(it + a->id + c) % NSIX_COUNTS], it, where);
    return NULL;
}

static void check_threads(void)
{
    enum { NTHREADS = 4 };
    pthread_t th[NTHREADS];
    thread_arg_t arg[NTHREADS];
    int started[NTHREADS];
    for (int k = 0; k < NTHREADS; k++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &arg[k].comm);
        arg[k].id = k;
    }
    for (int k = 0; k < NTHREADS; k++)
        if (!(started[k] = !pthread_create(&th[k], NULL, thread_main, &arg[k])))
            FAIL("pthread_create failed for thread %d", k);
    for (int k = 0; k < NTHREADS; k++)
        if (started[k])
            pthread_join(th[k], NULL);
    for (int k = 0; k < NTHREADS; k++)
        MPI_Comm_free(&arg[k].comm);
}

/* Every collective, type, op and count on world, a split and dup/free
 * cycles (full: the whole sweep on world). */
static void check_all(int full)
{
    check_comm(MPI_COMM_WORLD, full);
    MPI_Comm split, dup;
    MPI_Comm_split(MPI_COMM_WORLD, me_world % 2, -me_world, &split);
    check_comm(split, 0);
    for (int i = 0; i < 3; i++) { /* dup/free cycles */
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        check_comm(dup, 0);
        MPI_Comm_free(&dup);
    }
    MPI_Comm_free(&split);
}

#if MPI_VERSION >= 4
/* Completes q (persistent: starts it first) and counts the elements of
 * d[0..count) that differ from want(i); 0 or a failure named `what`. */
static void large_count_done(MPI_Request *q, int persistent, const char *what, const double *d,
                             int count, double (*want)(int, int, int), int n, int me)
{
    if (persistent)
        MPI_Start(q);
    MPI_Wait(q, MPI_STATUS_IGNORE);
    for (int i = 0; i < count; i++)
        if (d[i] != want(i, n, me)) {
            FAIL("%s: element %d is %g, not %g", what, i, d[i], want(i, n, me));
            break;
        }
}

/* What element i holds on rank `me` of n (want of large_count_done). */
static double summed(int i, int n, int me)
{
    return (void)me, n * (n + 1) / 2 * (double)(i % 1000 + 1);
}
static double indexed(int i, int n, int me) /* Bcast's; Allgather's and Alltoall's blocks */
{
    return (void)n, (void)me, i;
}
static double maxed(int i, int n, int me) /* at root n - 1 */
{
    return me == n - 1 ? n * (double)(i % 1000 + 1) : -1;
}
static double scattered(int i, int n, int me) /* rank k sends k 1000 + its element index */
{
    return 1000.0 * n * (n - 1) / 2 + n * (double)(me * 1000 + i);
}

/* The nonblocking and persistent large-count forms on even ranks, the int
 * forms on odd ones (the same signatures), each after a blocking call of
 * its size that planned a schedule: the int forms run it, so the _c forms
 * must too (MPICH's own MPI_Iallreduce_c there was a hang). */
static void check_large_count_modes(int n, int me)
{
    enum { COUNT = 100000, EACH = 1000 };
    double *s = malloc((size_t)COUNT * n * sizeof *s), *d = malloc((size_t)COUNT * n * sizeof *d);
    int *counts = malloc((size_t)n * sizeof *counts);
    MPI_Count *counts_c = malloc((size_t)n * sizeof *counts_c);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request q;
    int odd = me % 2;
    for (int p = 0; p < 2; p++) { /* nonblocking, then persistent */
        const char *mode = p ? "persistent" : "nonblocking";
        char what[96];
        /* Allreduce: planned by the blocking ones before */
        for (int i = 0; i < COUNT; i++)
            s[i] = (me + 1) * (double)(i % 1000 + 1), d[i] = -1;
        if (p && odd)
            MPI_Allreduce_init(s, d, COUNT, MPI_DOUBLE, MPI_SUM, w, MPI_INFO_NULL, &q);
        else if (p)
            MPI_Allreduce_init_c(s, d, COUNT, MPI_DOUBLE, MPI_SUM, w, MPI_INFO_NULL, &q);
        else if (odd)
            MPI_Iallreduce(s, d, COUNT, MPI_DOUBLE, MPI_SUM, w, &q);
        else
            MPI_Iallreduce_c(s, d, COUNT, MPI_DOUBLE, MPI_SUM, w, &q);
        snprintf(what, sizeof what, "%s MPI_Iallreduce_c with the int form", mode);
        large_count_done(&q, p, what, d, COUNT, summed, n, me);
        if (p)
            MPI_Request_free(&q);
        /* Bcast from rank 0 */
        for (int i = 0; i < COUNT; i++)
            d[i] = me == 0 ? i : -1;
        if (p && odd)
            MPI_Bcast_init(d, COUNT, MPI_DOUBLE, 0, w, MPI_INFO_NULL, &q);
        else if (p)
            MPI_Bcast_init_c(d, COUNT, MPI_DOUBLE, 0, w, MPI_INFO_NULL, &q);
        else if (odd)
            MPI_Ibcast(d, COUNT, MPI_DOUBLE, 0, w, &q);
        else
            MPI_Ibcast_c(d, COUNT, MPI_DOUBLE, 0, w, &q);
        snprintf(what, sizeof what, "%s MPI_Ibcast_c with the int form", mode);
        large_count_done(&q, p, what, d, COUNT, indexed, n, me);
        if (p)
            MPI_Request_free(&q);
        /* Reduce (max) at rank n - 1 */
        for (int i = 0; i < COUNT; i++)
            s[i] = (me + 1) * (double)(i % 1000 + 1), d[i] = -1;
        if (p && odd)
            MPI_Reduce_init(s, d, COUNT, MPI_DOUBLE, MPI_MAX, n - 1, w, MPI_INFO_NULL, &q);
        else if (p)
            MPI_Reduce_init_c(s, d, COUNT, MPI_DOUBLE, MPI_MAX, n - 1, w, MPI_INFO_NULL, &q);
        else if (odd)
            MPI_Ireduce(s, d, COUNT, MPI_DOUBLE, MPI_MAX, n - 1, w, &q);
        else
            MPI_Ireduce_c(s, d, COUNT, MPI_DOUBLE, MPI_MAX, n - 1, w, &q);
        snprintf(what, sizeof what, "%s MPI_Ireduce_c with the int form", mode);
        large_count_done(&q, p, what, d, COUNT, maxed, n, me);
        if (p)
            MPI_Request_free(&q);
        /* Allgather and Alltoall of EACH per rank and block, planned here:
         * every block rank me sends holds me * 1000 + i */
        for (int r = 0; r < n; r++)
            for (int i = 0; i < EACH; i++)
                s[r * EACH + i] = me * 1000.0 + i;
        for (int v = 0; v < 2; v++) {
            if (v)
                MPI_Alltoall(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w);
            else
                MPI_Allgather(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w);
            for (int i = 0; i < EACH * n; i++)
                d[i] = -1;
            if (v && p && odd)
                MPI_Alltoall_init(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, MPI_INFO_NULL, &q);
            else if (v && p)
                MPI_Alltoall_init_c(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, MPI_INFO_NULL,
                                    &q);
            else if (v && odd)
                MPI_Ialltoall(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, &q);
            else if (v)
                MPI_Ialltoall_c(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, &q);
            else if (p && odd)
                MPI_Allgather_init(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, MPI_INFO_NULL,
                                   &q);
            else if (p)
                MPI_Allgather_init_c(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, MPI_INFO_NULL,
                                     &q);
            else if (odd)
                MPI_Iallgather(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, &q);
            else
                MPI_Iallgather_c(s, EACH, MPI_DOUBLE, d, EACH, MPI_DOUBLE, w, &q);
            snprintf(what, sizeof what, "%s MPI_I%s_c with the int form", mode,
                     v ? "alltoall" : "allgather");
            large_count_done(&q, p, what, d, EACH * n, indexed, n, me);
            if (p)
                MPI_Request_free(&q);
        }
        /* Gather and Scatter at root 1 % n, COUNT / n per rank: the size the
         * blocking ones planned before */
        int each = COUNT / n, root = 1 % n;
        for (int v = 0; v < 2; v++) {
            for (int i = 0; i < each * n; i++)
                s[i] = v ? 1000.0 * (i / each) + i % each : me * 1000.0 + i, d[i] = -1;
            double *from = v && me != root ? NULL : s;
            if (v && p && odd)
                MPI_Scatter_init(from, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w,
                                 MPI_INFO_NULL, &q);
            else if (v && p)
                MPI_Scatter_init_c(from, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w,
                                   MPI_INFO_NULL, &q);
            else if (v && odd)
                MPI_Iscatter(from, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w, &q);
            else if (v)
                MPI_Iscatter_c(from, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w, &q);
            else if (p && odd)
                MPI_Gather_init(s, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w, MPI_INFO_NULL,
                                &q);
            else if (p)
                MPI_Gather_init_c(s, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w,
                                  MPI_INFO_NULL, &q);
            else if (odd)
                MPI_Igather(s, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w, &q);
            else
                MPI_Igather_c(s, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, w, &q);
            if (p)
                MPI_Start(&q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            if (p)
                MPI_Request_free(&q);
            /* Scatter: rank me's block me * 1000 + i; Gather at the root:
             * block r is r * 1000 + i */
            for (int i = 0; i < (v ? each : me == root ? each * n : 0); i++)
                if (d[i] != (v ? me * 1000.0 + i : 1000.0 * (i / each) + i % each)) {
                    FAIL("%s MPI_I%s_c with the int form: element %d is %g", mode,
                         v ? "scatter" : "gather", i, d[i]);
                    break;
                }
        }
        /* Reduce_scatter_block and Reduce_scatter (EACH per rank): the sum
         * of every rank's me * 1000 + i is n(n-1)/2 * 1000 + n i */
        for (int r = 0; r < n; r++)
            for (int i = 0; i < EACH; i++)
                s[r * EACH + i] = me * 1000.0 + r * EACH + i;
        for (int v = 0; v < 2; v++) {
            for (int r = 0; r < n; r++)
                counts[r] = EACH, counts_c[r] = EACH;
            if (v)
                MPI_Reduce_scatter(s, d, counts, MPI_DOUBLE, MPI_SUM, w);
            else
                MPI_Reduce_scatter_block(s, d, EACH, MPI_DOUBLE, MPI_SUM, w);
            for (int i = 0; i < EACH; i++)
                d[i] = -1;
            if (v && p && odd)
                MPI_Reduce_scatter_init(s, d, counts, MPI_DOUBLE, MPI_SUM, w, MPI_INFO_NULL, &q);
            else if (v && p)
                MPI_Reduce_scatter_init_c(s, d, counts_c, MPI_DOUBLE, MPI_SUM, w, MPI_INFO_NULL,
                                          &q);
            else if (v && odd)
                MPI_Ireduce_scatter(s, d, counts, MPI_DOUBLE, MPI_SUM, w, &q);
            else if (v)
                MPI_Ireduce_scatter_c(s, d, counts_c, MPI_DOUBLE, MPI_SUM, w, &q);
            else if (p && odd)
                MPI_Reduce_scatter_block_init(s, d, EACH, MPI_DOUBLE, MPI_SUM, w, MPI_INFO_NULL,
                                              &q);
            else if (p)
                MPI_Reduce_scatter_block_init_c(s, d, EACH, MPI_DOUBLE, MPI_SUM, w,
                                                MPI_INFO_NULL, &q);
            else if (odd)
                MPI_Ireduce_scatter_block(s, d, EACH, MPI_DOUBLE, MPI_SUM, w, &q);
            else
                MPI_Ireduce_scatter_block_c(s, d, EACH, MPI_DOUBLE, MPI_SUM, w, &q);
            /* the int counts change before the operation completes: the
             * call must have taken them when it was made */
            for (int r = 0; r < n; r++)
                counts[r] = counts_c[r] = -7;
            snprintf(what, sizeof what, "%s MPI_Ireduce_scatter%s_c with the int form", mode,
                     v ? "" : "_block");
            large_count_done(&q, p, what, d, EACH, scattered, n, me);
            if (p)
                MPI_Request_free(&q);
        }
    }
    /* beyond int (a type of no bytes: nothing moves), MPICH's own _c forms
     * on every rank, nonblocking and persistent */
    MPI_Datatype nothing;
    MPI_Type_contiguous(0, MPI_INT, &nothing);
    MPI_Type_commit(&nothing);
    MPI_Ibcast_c(d, (MPI_Count)INT_MAX + 10, nothing, 0, w, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Bcast_init_c(d, (MPI_Count)INT_MAX + 10, nothing, 0, w, MPI_INFO_NULL, &q);
    MPI_Start(&q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Request_free(&q);
    MPI_Type_free(&nothing);
    free(counts);
    free(counts_c);
    free(s);
    free(d);
}
#endif

#if MPI_VERSION >= 4
/* MPI_Allgatherv_c whose displacements on even ranks lie beyond an int
 * (one byte per rank, in reverse order past 2 GiB of a mapping never
 * touched there), with MPI_Allgatherv on odd ones: the same signature, so
 * every rank runs the same program (Open MPI: coll/tacos's schedule; MPICH
 * keeps its own). */
static void check_far_displacements(int n, int me)
{
#ifdef OMPI_MAJOR_VERSION
    MPI_Aint far = (MPI_Aint)INT_MAX + 7, displs_c[64];
    MPI_Count counts_c[64];
    int counts[64], displs[64];
    size_t len = me % 2 ? 64 : (size_t)far + 64;
    char one = (char)('a' + me), *all = n > 64 ? MAP_FAILED :
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    int mapped = all != MAP_FAILED, everywhere = 0;
    MPI_Allreduce(&mapped, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) {
        if (me_world == 0)
            printf("mpi_coll_check: no room for displacements beyond an int, skipped\n");
        if (mapped)
            munmap(all, len);
        return;
    }
    char *at = me % 2 ? all : all + far;
    for (int r = 0; r < n; r++) {
        counts[r] = 1, displs[r] = n - 1 - r;
        counts_c[r] = 1, displs_c[r] = far + n - 1 - r;
    }
    if (me % 2)
        MPI_Allgatherv(&one, 1, MPI_CHAR, all, counts, displs, MPI_CHAR, MPI_COMM_WORLD);
    else
        MPI_Allgatherv_c(&one, 1, MPI_CHAR, all, counts_c, displs_c, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        if (at[n - 1 - r] != (char)('a' + r)) {
            FAIL("MPI_Allgatherv_c beyond an int with MPI_Allgatherv: block %d is %d", r,
                 at[n - 1 - r]);
            break;
        }
    munmap(all, len);
#else
    (void)n, (void)me;
#endif
}
#endif

/* MPI-4's large-count forms (MPICH): MPI_Allreduce_c and MPI_Reduce_c of
 * 100000 doubles checked, and MPI_Bcast_c, MPI_Gather_c, MPI_Scatter_c,
 * MPI_Scan_c and MPI_Allgatherv_c on even ranks matching the int forms on
 * odd ones (the same signature); then the nonblocking and persistent forms
 * (check_large_count_modes). */
static void check_large_count(void)
{
#if MPI_VERSION >= 4
    enum { COUNT = 100000 };
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    double *s = malloc(COUNT * sizeof *s), *d = malloc(COUNT * sizeof *d);
    for (int i = 0; i < COUNT; i++)
        s[i] = (me + 1) * (double)(i % 1000 + 1);
    MPI_Allreduce_c(s, d, COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT; i++)
        if (d[i] != n * (n + 1) / 2 * (double)(i % 1000 + 1)) {
            FAIL("MPI_Allreduce_c: element %d is %g", i, d[i]);
            break;
        }
    MPI_Reduce_c(s, d, COUNT, MPI_DOUBLE, MPI_MAX, n - 1, MPI_COMM_WORLD);
    for (int i = 0; me == n - 1 && i < COUNT; i++)
        if (d[i] != n * (double)(i % 1000 + 1)) {
            FAIL("MPI_Reduce_c: element %d is %g", i, d[i]);
            break;
        }
    for (int i = 0; i < COUNT; i++)
        d[i] = me == 0 ? i : -1;
    if (me % 2)
        MPI_Bcast(d, COUNT, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else
        MPI_Bcast_c(d, COUNT, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT; i++)
        if (d[i] != i) {
            FAIL("MPI_Bcast_c with MPI_Bcast: element %d is %g", i, d[i]);
            break;
        }
    /* root 1's buffer of n blocks of COUNT / n, gathered then scattered back */
    int each = COUNT / n, root = 1 % n;
    for (int i = 0; i < each; i++)
        s[i] = me * (double)COUNT + i;
    if (me % 2)
        MPI_Gather(s, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, MPI_COMM_WORLD);
    else
        MPI_Gather_c(s, each, MPI_DOUBLE, d, each, MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; me == root && i < each * n; i++)
        if (d[i] != (i / each) * (double)COUNT + i % each) {
            FAIL("MPI_Gather_c with MPI_Gather: element %d is %g", i, d[i]);
            break;
        }
    for (int i = 0; i < each; i++)
        s[i] = -1;
    if (me % 2)
        MPI_Scatter(d, each, MPI_DOUBLE, s, each, MPI_DOUBLE, root, MPI_COMM_WORLD);
    else
        MPI_Scatter_c(d, each, MPI_DOUBLE, s, each, MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; i < each; i++)
        if (s[i] != me * (double)COUNT + i) {
            FAIL("MPI_Scatter_c with MPI_Scatter: element %d is %g", i, s[i]);
            break;
        }
    /* collectives the library does not serve, _c on even ranks and int on
     * odd ones: both its waited forms (with MPICH's blocking MPI_Scan_c on
     * some ranks and a nonblocking MPI_Iscan on others, a hang) */
    int one = me + 1, upto = -1, *all = malloc((size_t)n * sizeof *all);
    int *counts = malloc((size_t)n * sizeof *counts), *displs = malloc((size_t)n * sizeof *displs);
    MPI_Count counts_c[64];
    MPI_Aint displs_c[64];
    for (int r = 0; r < n; r++)
        counts[r] = 1, displs[r] = n - 1 - r;
    for (int r = 0; r < n && r < 64; r++)
        counts_c[r] = 1, displs_c[r] = n - 1 - r;
    if (me % 2)
        MPI_Scan(&one, &upto, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Scan_c(&one, &upto, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (upto != (me + 1) * (me + 2) / 2)
        FAIL("MPI_Scan_c with MPI_Scan: %d", upto);
    if (n <= 64) {
        if (me % 2)
            MPI_Allgatherv(&one, 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
        else
            MPI_Allgatherv_c(&one, 1, MPI_INT, all, counts_c, displs_c, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < n; r++)
            if (all[n - 1 - r] != r + 1) {
                FAIL("MPI_Allgatherv_c with MPI_Allgatherv: block %d is %d", r, all[n - 1 - r]);
                break;
            }
    }
    free(all);
    free(counts);
    free(displs);
    free(s);
    free(d);
    check_far_displacements(n, me);
    check_large_count_modes(n, me);
#else
    if (me_world == 0)
        printf("mpi_coll_check: no large-count forms before MPI 4, skipped\n");
#endif
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int threads = !strcmp(mode, "--threads"), provided = MPI_THREAD_SINGLE;
    if (threads)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me_world);
    if (!strcmp(mode, "--leaks"))
        check_leaks();
    else if (!strcmp(mode, "--mpit"))
        check_mpit_enable();
    else if (!strcmp(mode, "--many-comms"))
        check_many_comms();
    else if (!strcmp(mode, "--deterministic"))
        check_deterministic(1);
    else if (!strcmp(mode, "--arrival-order"))
        check_deterministic(0);
    else if (!strcmp(mode, "--fault"))
        check_fault();
    else if (!strcmp(mode, "--p2p"))
        check_p2p();
    else if (!strcmp(mode, "--dup-storm"))
        check_dup_storm();
    else if (!strcmp(mode, "--freed-cached"))
        check_freed_cached();
    else if (!strcmp(mode, "--large-count"))
        check_large_count();
    else if (threads && provided < MPI_THREAD_MULTIPLE) {
        if (me_world == 0)
            printf("mpi_coll_check: MPI_THREAD_MULTIPLE not provided, skipped\n");
    } else if (threads)
        check_threads();
    else if (!strcmp(mode, "--world")) /* the quick checks on MPI_COMM_WORLD alone */
        check_comm(MPI_COMM_WORLD, 0);
    else if (!strcmp(mode, "--signatures")) {
        check_signatures(MPI_COMM_WORLD);
        check_layouts(MPI_COMM_WORLD);
    }
    else
        check_all(strcmp(mode, "--quick") != 0);
    int mine = failures, total;
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me_world == 0)
        printf("mpi_coll_check: %d failure(s)\n", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
