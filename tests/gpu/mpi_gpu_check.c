/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives on GPU (CUDA device) buffers, every result checked against a
 * reference computed on the host.  Built with ./configure --with-cuda; the
 * CUDA driver is loaded at run time, and without a driver or a device every
 * rank says why and the program exits 77 (automake's skip).  Several ranks
 * may share one GPU.
 *
 *   mpi_gpu_check            types x ops x counts, in place, roots, the
 *                            nonblocking form, a user-defined op (through
 *                            host copies, blocking and nonblocking, count 0),
 *                            a host send buffer with a device receive buffer,
 *                            in-place Alltoall, rank 0 on host buffers and
 *                            the others on device ones (above the IPC
 *                            threshold), 72 communicators' 4 MiB Allreduces
 *                            (more IPC mappings than are kept), nonblocking
 *                            and persistent 4 MiB calls in flight together,
 *                            device memory across communicator create/free
 *                            cycles
 *   mpi_gpu_check --bench    MPI_Allreduce (float sum) bandwidth on device
 *                            buffers, 16 KiB to 256 MiB (x2): the call itself
 *                            against staging by hand (copy to the host, the
 *                            call on host buffers, copy back), alternating,
 *                            and one device-to-device copy of the buffer on
 *                            rank 0 (the GPU's copy rate: what IPC moves at),
 *                            and MPI_Iallreduce + MPI_Wait (BENCH_PASSES:
 *                            passes, BENCH_MAX_BYTES: the largest size)
 */
#include <cuda.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5 /* 5.0 has MPI_*_init but says MPI 3.1 */
#include <mpi-ext.h>
#define INIT(name) MPIX_##name##_init /* Open MPI 4.1's persistent collectives */
#else
#define INIT(name) MPI_##name##_init
#endif

#define API(X)                                                                               \
    X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain)                  \
    X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)           \
    X(cuMemGetInfo) X(cuMemcpyDtoD) X(cuCtxSynchronize)
#define STR_(x) #x
#define STR(x) STR_(x)
static struct {
#define FIELD(f) __typeof__(f) *f;
    API(FIELD)
#undef FIELD
} cu;

static int me, n, failures;

static void fail(const char *what, size_t count, size_t at, double got, double want)
{
    if (failures++ < 10)
        printf("rank %d: %s count %zu: [%zu] = %g, want %g\n", me, what, count, at, got, want);
}

/* Why there is no GPU to test on, or NULL (then the primary context of
 * device local_rank % devices is current). */
static const char *open_gpu(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    int devices = 0;
    CUdevice dev;
    CUcontext ctx;
    if (!lib)
        return "no CUDA driver (libcuda.so.1)";
#define SYM(f)                                                                               \
    if (!(cu.f = (__typeof__(f) *)dlsym(lib, STR(f))))                                       \
        return "the CUDA driver lacks " STR(f);
    API(SYM)
#undef SYM
    if (cu.cuInit(0) || cu.cuDeviceGetCount(&devices) || devices < 1)
        return "no CUDA device";
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK"); /* Open MPI's, else MPICH's */
    if (!lr)
        lr = getenv("MPI_LOCALRANKID");
    if (cu.cuDeviceGet(&dev, (lr ? atoi(lr) : 0) % devices) ||
        cu.cuDevicePrimaryCtxRetain(&ctx, dev) || cu.cuCtxSetCurrent(ctx))
        return "cannot make a CUDA context";
    return NULL;
}

static void *dev_alloc(size_t bytes)
{
    CUdeviceptr p = 0;
    if (cu.cuMemAlloc(&p, bytes ? bytes : 1)) {
        printf("rank %d: cuMemAlloc of %zu bytes failed\n", me, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return (void *)p;
}

static void to_dev(void *d, const void *h, size_t bytes)
{
    if (bytes)
        cu.cuMemcpyHtoD((CUdeviceptr)d, h, bytes);
}

static void to_host(void *h, const void *d, size_t bytes)
{
    if (bytes)
        cu.cuMemcpyDtoH(h, (CUdeviceptr)d, bytes);
}

/* ---- types and ops ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    MPI_Datatype type;
    size_t bytes;
    int kind; /* 0 signed, 1 unsigned, 2 floating, 3 (value, int) pair */
} type_t;

typedef struct { float v; int i; } float_int;
typedef struct { int v; int i; } int_int;

static const type_t types[] = {
    {"MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, 1, 0}, {"MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, 1, 1},
    {"MPI_SHORT", MPI_SHORT, 2, 0},             {"MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, 2, 1},
    {"MPI_INT", MPI_INT, 4, 0},                 {"MPI_UINT32_T", MPI_UINT32_T, 4, 1},
    {"MPI_LONG", MPI_LONG, 8, 0},               {"MPI_UINT64_T", MPI_UINT64_T, 8, 1},
    {"MPI_FLOAT", MPI_FLOAT, 4, 2},             {"MPI_DOUBLE", MPI_DOUBLE, 8, 2},
    {"MPI_FLOAT_INT", MPI_FLOAT_INT, sizeof(float_int), 3},
    {"MPI_2INT", MPI_2INT, sizeof(int_int), 3}};

typedef struct {
    const char *name;
    MPI_Op op;
    int integer_only, pairs;
} op_t;

static const op_t ops[] = {{"SUM", MPI_SUM, 0, 0},   {"PROD", MPI_PROD, 0, 0},
                           {"MIN", MPI_MIN, 0, 0},   {"MAX", MPI_MAX, 0, 0},
                           {"LAND", MPI_LAND, 1, 0}, {"LOR", MPI_LOR, 1, 0},
                           {"LXOR", MPI_LXOR, 1, 0}, {"BAND", MPI_BAND, 1, 0},
                           {"BOR", MPI_BOR, 1, 0},   {"BXOR", MPI_BXOR, 1, 0},
                           {"MINLOC", MPI_MINLOC, 0, 1}, {"MAXLOC", MPI_MAXLOC, 0, 1}};

/* Rank r's element i: small values (exact in every type; PROD of 1s and 2s). */
static double value(int r, size_t i, const op_t *o)
{
    if (o->op == MPI_PROD)
        return (double)(1 + ((size_t)r + i) % 7 / 6);
    return (double)(((size_t)r * 7 + i * 3) % 11);
}

static void put(const type_t *t, void *buf, size_t i, double v, int index)
{
    char *p = (char *)buf + i * t->bytes;
    switch (t->kind * 100 + (int)t->bytes) {
    case 1: *(int8_t *)p = (int8_t)v; break;
    case 101: *(uint8_t *)p = (uint8_t)v; break;
    case 2: *(int16_t *)p = (int16_t)v; break;
    case 102: *(uint16_t *)p = (uint16_t)v; break;
    case 4: *(int32_t *)p = (int32_t)v; break;
    case 104: *(uint32_t *)p = (uint32_t)v; break;
    case 8: *(int64_t *)p = (int64_t)v; break;
    case 108: *(uint64_t *)p = (uint64_t)v; break;
    case 204: *(float *)p = (float)v; break;
    case 208: *(double *)p = v; break;
    default:
        if (t->type == MPI_FLOAT_INT)
            *(float_int *)p = (float_int){(float)v, index};
        else
            *(int_int *)p = (int_int){(int)v, index};
    }
}

/* An element's value (a pair's: the value) as put() wrote it. */
static double get(const type_t *t, const void *p)
{
    switch (t->kind * 100 + (int)t->bytes) {
    case 1: return *(const int8_t *)p;
    case 101: return *(const uint8_t *)p;
    case 2: return *(const int16_t *)p;
    case 102: return *(const uint16_t *)p;
    case 4: return *(const int32_t *)p;
    case 104: return *(const uint32_t *)p;
    case 8: return (double)*(const int64_t *)p;
    case 108: return (double)*(const uint64_t *)p;
    case 204: return *(const float *)p;
    case 208: return *(const double *)p;
    default:
        return t->type == MPI_FLOAT_INT ? ((const float_int *)p)->v : ((const int_int *)p)->v;
    }
}

/* The reduction over every rank of element i (pairs: the index in *index). */
static double reference(const op_t *o, size_t i, int *index)
{
    double acc = value(0, i, o);
    *index = 0;
    for (int r = 1; r < n; r++) {
        double v = value(r, i, o);
        if (o->op == MPI_SUM) acc += v;
        else if (o->op == MPI_PROD) acc *= v;
        else if (o->op == MPI_MIN) acc = v < acc ? v : acc;
        else if (o->op == MPI_MAX) acc = v > acc ? v : acc;
        else if (o->op == MPI_LAND) acc = acc && v;
        else if (o->op == MPI_LOR) acc = acc || v;
        else if (o->op == MPI_LXOR) acc = !acc != !v;
        else if (o->op == MPI_BAND) acc = (double)((long)acc & (long)v);
        else if (o->op == MPI_BOR) acc = (double)((long)acc | (long)v);
        else if (o->op == MPI_BXOR) acc = (double)((long)acc ^ (long)v);
        else if (o->op == MPI_MINLOC ? v < acc : v > acc) acc = v, *index = r;
    }
    return acc;
}

static int valid(const type_t *t, const op_t *o)
{
    return o->pairs ? t->kind == 3 : t->kind != 3 && !(o->integer_only && t->kind == 2);
}

/* Whether elem (a host copy) differs from the reduction's element i; *want
 * is the expected value. */
static int wrong(const type_t *t, const op_t *o, const void *elem, size_t i, double *want)
{
    int want_index;
    char tmp[16];
    *want = reference(o, i, &want_index);
    put(t, tmp, 0, *want, want_index); /* the expected value in the type's bytes */
    return memcmp(tmp, elem, t->bytes) != 0;
}

/* Allreduce (in place or not), Reduce at root, Reduce_scatter_block, and
 * Iallreduce of one type and op, count elements. */
static void check_reductions(const type_t *t, const op_t *o, size_t count, int root)
{
    size_t bytes = count * t->bytes, all = bytes * (size_t)n;
    char *h = malloc(all + 16), *out = malloc(all + 16), what[96];
    void *sd = dev_alloc(all), *rd = dev_alloc(all);
    double want;
    for (int form = 0; form < 4; form++) { /* 0 Allreduce, 1 in place, 2 Reduce, 3 Iallreduce */
        size_t c = count;
        for (size_t i = 0; i < c; i++)
            put(t, h, i, value(me, i, o), me);
        to_dev(sd, h, bytes);
        to_dev(rd, h, bytes);
        MPI_Request req;
        if (form == 0)
            MPI_Allreduce(sd, rd, (int)c, t->type, o->op, MPI_COMM_WORLD);
        else if (form == 1)
            MPI_Allreduce(MPI_IN_PLACE, rd, (int)c, t->type, o->op, MPI_COMM_WORLD);
        else if (form == 2)
            MPI_Reduce(sd, rd, (int)c, t->type, o->op, root, MPI_COMM_WORLD);
        else {
            MPI_Iallreduce(sd, rd, (int)c, t->type, o->op, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        if (form == 2 && me != root)
            continue;
        to_host(out, rd, bytes);
        snprintf(what, sizeof what, "%s %s %s", (const char *[]){"Allreduce", "Allreduce in place",
                                                                 "Reduce", "Iallreduce"}[form],
                 t->name, o->name);
        for (size_t i = 0; i < c; i++)
            if (wrong(t, o, out + i * t->bytes, i, &want)) {
                fail(what, c, i, get(t, out + i * t->bytes), want);
                break;
            }
    }
    /* Reduce_scatter_block: rank r gets block r of the reduction of n blocks */
    for (size_t i = 0; i < count * (size_t)n; i++)
        put(t, h, i, value(me, i, o), me);
    to_dev(sd, h, all);
    MPI_Reduce_scatter_block(sd, rd, (int)count, t->type, o->op, MPI_COMM_WORLD);
    to_host(out, rd, bytes);
    snprintf(what, sizeof what, "Reduce_scatter_block %s %s", t->name, o->name);
    for (size_t i = 0; i < count; i++)
        if (wrong(t, o, out + i * t->bytes, (size_t)me * count + i, &want)) {
            fail(what, count, i, get(t, out + i * t->bytes), want);
            break;
        }
    cu.cuMemFree((CUdeviceptr)sd);
    cu.cuMemFree((CUdeviceptr)rd);
    free(h);
    free(out);
}

/* Alltoall's result: block q of rank q's send buffer, part me. */
static void check_alltoall_out(const unsigned char *out, size_t count, const char *what)
{
    for (size_t i = 0; i < count * (size_t)n; i++) {
        size_t q = i / count, at = (size_t)me * count + i % count;
        unsigned char want = (unsigned char)((int)q * 31 + at * 7);
        if (out[i] != want) {
            fail(what, count, i, out[i], want);
            break;
        }
    }
}

/* Bcast, Allgather, Alltoall of count bytes. */
static void check_moves(size_t count, int root)
{
    size_t all = count * (size_t)n;
    unsigned char *h = malloc(all + 1), *out = malloc(all + 1);
    void *sd = dev_alloc(all), *rd = dev_alloc(all);
    for (size_t i = 0; i < all; i++)
        h[i] = (unsigned char)(me * 31 + i * 7);
    to_dev(sd, h, all);
    to_dev(rd, h, count);
    MPI_Bcast(rd, (int)count, MPI_BYTE, root, MPI_COMM_WORLD);
    to_host(out, rd, count);
    for (size_t i = 0; i < count; i++)
        if (out[i] != (unsigned char)(root * 31 + i * 7)) {
            fail("Bcast", count, i, out[i], (unsigned char)(root * 31 + i * 7));
            break;
        }
    MPI_Allgather(sd, (int)count, MPI_BYTE, rd, (int)count, MPI_BYTE, MPI_COMM_WORLD);
    to_host(out, rd, all);
    for (size_t i = 0; i < all; i++) {
        unsigned char want = (unsigned char)((int)(i / (count ? count : 1)) * 31 + (i % count) * 7);
        if (out[i] != want) {
            fail("Allgather", count, i, out[i], want);
            break;
        }
    }
    MPI_Alltoall(sd, (int)count, MPI_BYTE, rd, (int)count, MPI_BYTE, MPI_COMM_WORLD);
    to_host(out, rd, all);
    check_alltoall_out(out, count, "Alltoall");
    cu.cuMemFree((CUdeviceptr)sd);
    cu.cuMemFree((CUdeviceptr)rd);
    free(h);
    free(out);
}

static void user_max(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] = ((int *)in)[i] > ((int *)inout)[i] ? ((int *)in)[i] : ((int *)inout)[i];
}

/* Through host copies: a user-defined op (in place, blocking and
 * nonblocking, and count 0), and a host send buffer with a device receive
 * buffer (MPI_MAX: the same values). */
static void check_by_hand(void)
{
    enum { COUNT = 1000 };
    int h[COUNT], out[COUNT];
    void *d = dev_alloc(sizeof h);
    MPI_Op op;
    MPI_Op_create(user_max, 1, &op);
    for (int form = 0; form < 3; form++) {
        const char *what[] = {"Allreduce user-defined op", "Iallreduce user-defined op",
                              "Allreduce from a host buffer into a device one"};
        MPI_Request req;
        for (int i = 0; i < COUNT; i++)
            h[i] = (me * 7 + i * 3) % 11;
        to_dev(d, h, sizeof h);
        if (form == 0)
            MPI_Allreduce(MPI_IN_PLACE, d, COUNT, MPI_INT, op, MPI_COMM_WORLD);
        else if (form == 1) {
            MPI_Iallreduce(MPI_IN_PLACE, d, COUNT, MPI_INT, op, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Allreduce(h, d, COUNT, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        to_host(out, d, sizeof out);
        for (int i = 0; i < COUNT; i++) {
            int want = 0;
            for (int r = 0; r < n; r++)
                want = (r * 7 + i * 3) % 11 > want ? (r * 7 + i * 3) % 11 : want;
            if (out[i] != want) {
                fail(what[form], COUNT, (size_t)i, out[i], want);
                break;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, d, 0, MPI_INT, op, MPI_COMM_WORLD); /* nothing, no loop */
    MPI_Op_free(&op);
    cu.cuMemFree((CUdeviceptr)d);
}

/* Rank 0's buffers in host memory, the others' on the GPU, 4 MiB (above
 * every GPU threshold): the ranks must not read each other's staging
 * through CUDA IPC (rank 0 has none), so they agree not to: blocking
 * Allreduce and Bcast, and a nonblocking Allreduce (where earlier calls
 * found the ranks can map each other's memory, it votes: rank 0 says no). */
static void check_mixed_ranks(void)
{
    enum { COUNT = 1 << 20 };
    static const char *what[] = {"Allreduce, rank 0 on host memory", "Bcast, rank 0 on host memory",
                                 "Iallreduce, rank 0 on host memory"};
    int *h = malloc(COUNT * sizeof *h), *out = malloc(COUNT * sizeof *out);
    void *d = me ? dev_alloc(COUNT * sizeof *h) : NULL;
    for (int form = 0; form < 3; form++) {
        void *buf = me ? d : (void *)h;
        for (int i = 0; i < COUNT; i++)
            h[i] = (me + 1) * (i % 1000 + form);
        if (me)
            to_dev(d, h, COUNT * sizeof *h);
        if (form == 0) {
            MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        } else if (form == 1) {
            MPI_Bcast(buf, COUNT, MPI_INT, n - 1, MPI_COMM_WORLD);
        } else {
            MPI_Request r;
            MPI_Iallreduce(MPI_IN_PLACE, buf, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (me)
            to_host(out, d, COUNT * sizeof *out);
        else
            memcpy(out, h, COUNT * sizeof *out);
        for (int i = 0; i < COUNT; i++) {
            int want = form == 1 ? n * (i % 1000 + 1) : n * (n + 1) / 2 * (i % 1000 + form);
            if (out[i] != want) {
                fail(what[form], COUNT, (size_t)i, out[i], want);
                break;
            }
        }
    }
    if (d)
        cu.cuMemFree((CUdeviceptr)d);
    free(h);
    free(out);
}

/* Rank r's element j of pattern s, and what a sum over the ranks makes of it. */
static void fill_ints(int *h, size_t count, int r, int s)
{
    for (size_t j = 0; j < count; j++)
        h[j] = (r + 1) * (int)((j + (size_t)s) % 100);
}

static void check_ints(const void *d, int *h, size_t count, int ranks_sum, int s, const char *what)
{
    to_host(h, d, count * sizeof *h);
    for (size_t j = 0; j < count; j++)
        if (h[j] != ranks_sum * (int)((j + (size_t)s) % 100)) {
            fail(what, count, j, h[j], ranks_sum * (int)((j + (size_t)s) % 100));
            break;
        }
}

/* 72 communicators alive at once, each with a 4 MiB Allreduce on device
 * buffers, twice: through CUDA IPC each has staging of its own, so the
 * ranks map more allocations of each other than they keep (64), and must
 * unmap and map again, never one a call still reads. */
static void check_many_comms(void)
{
    enum { COMMS = 72, COUNT = 1 << 20 };
    MPI_Comm c[COMMS];
    int *h = malloc(COUNT * sizeof *h);
    int *d = dev_alloc(COUNT * sizeof *h);
    for (int i = 0; i < COMMS; i++)
        MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < COMMS; i++) {
            fill_ints(h, COUNT, me, i);
            to_dev(d, h, COUNT * sizeof *h);
            MPI_Allreduce(MPI_IN_PLACE, d, COUNT, MPI_INT, MPI_SUM, c[i]);
            check_ints(d, h, COUNT, n * (n + 1) / 2, i, "Allreduce on one of 72 communicators");
        }
    for (int i = 0; i < COMMS; i++)
        MPI_Comm_free(&c[i]);
    cu.cuMemFree((CUdeviceptr)d);
    free(h);
}

/* Nonblocking and persistent calls of 4 MiB (through CUDA IPC where the
 * ranks agree on it, else staged) in flight together: four Iallreduces on
 * buffers of their own, twice (the second round's staging comes from the
 * communicator's pool, which the peers mapped in the first), then a
 * persistent Allreduce and a persistent Bcast started together three
 * times, the inputs changed between starts. */
static void check_in_flight(void)
{
    enum { COUNT = 1 << 20, CALLS = 4 };
    const int sum = n * (n + 1) / 2;
    int *h = malloc(COUNT * sizeof *h), *d[CALLS], *out = dev_alloc(COUNT * sizeof *h);
    MPI_Request r[CALLS];
    MPI_Status st[CALLS]; /* (MPICH's MPI_STATUSES_IGNORE upsets GCC's bounds checks) */
    for (int k = 0; k < CALLS; k++)
        d[k] = dev_alloc(COUNT * sizeof *h);
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < CALLS; k++) {
            fill_ints(h, COUNT, me, k + round);
            to_dev(d[k], h, COUNT * sizeof *h);
            MPI_Iallreduce(MPI_IN_PLACE, d[k], COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[k]);
        }
        MPI_Waitall(CALLS, r, st);
        for (int k = 0; k < CALLS; k++)
            check_ints(d[k], h, COUNT, sum, k + round, "one of 4 Iallreduces in flight");
    }
    INIT(Allreduce)(d[0], out, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]);
    INIT(Bcast)(d[1], COUNT, MPI_INT, n - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]);
    for (int start = 0; start < 3; start++) {
        fill_ints(h, COUNT, me, start);
        to_dev(d[0], h, COUNT * sizeof *h);
        fill_ints(h, COUNT, me, 7 * start);
        to_dev(d[1], h, COUNT * sizeof *h);
        MPI_Startall(2, r);
        MPI_Waitall(2, r, st);
        check_ints(out, h, COUNT, sum, start, "persistent Allreduce");
        check_ints(d[1], h, COUNT, n, 7 * start, "persistent Bcast");
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    for (int k = 0; k < CALLS; k++)
        cu.cuMemFree((CUdeviceptr)d[k]);
    cu.cuMemFree((CUdeviceptr)out);
    free(h);
}

/* Alltoall in place: block q of rank me becomes block me of rank q. */
static void check_alltoall_in_place(size_t count)
{
    size_t all = count * (size_t)n;
    unsigned char *h = malloc(all + 1), *out = malloc(all + 1);
    void *d = dev_alloc(all);
    for (size_t i = 0; i < all; i++)
        h[i] = (unsigned char)(me * 31 + i * 7);
    to_dev(d, h, all);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, (int)count, MPI_BYTE, MPI_COMM_WORLD);
    to_host(out, d, all);
    check_alltoall_out(out, count, "Alltoall in place");
    cu.cuMemFree((CUdeviceptr)d);
    free(h);
    free(out);
}

/* Device memory after communicator create/use/free cycles (the calls that
 * take device work space: Reduce at the other ranks, Reduce-scatter): within
 * 4 MiB of before (CUDA's own allocations come in such steps). */
static void cycle(float *d, float *r)
{
    MPI_Comm c;
    MPI_Request req;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Allreduce(MPI_IN_PLACE, d, 1 << 18, MPI_FLOAT, MPI_SUM, c);
    MPI_Reduce(d, r, 1 << 18, MPI_FLOAT, MPI_SUM, 0, c);
    MPI_Reduce_scatter_block(d, r, (1 << 18) / n, MPI_FLOAT, MPI_SUM, c);
    MPI_Iallreduce(MPI_IN_PLACE, d, 1 << 18, MPI_FLOAT, MPI_SUM, c, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_free(&c);
}

static void check_leaks(void)
{
    size_t free0, free1, total;
    float *d = dev_alloc(1 << 20), *r = dev_alloc(1 << 20);
    cycle(d, r); /* the first: streams, kernels loaded */
    cu.cuMemGetInfo(&free0, &total);
    for (int i = 0; i < 20; i++)
        cycle(d, r);
    cu.cuMemGetInfo(&free1, &total);
    if (free1 + (4 << 20) < free0)
        fail("device memory after 20 communicator cycles (MiB lost)", 20, 0,
             (double)(free0 - free1) / (1 << 20), 0);
    cu.cuMemFree((CUdeviceptr)d);
    cu.cuMemFree((CUdeviceptr)r);
}

static void bench(int pass)
{
    if (me == 0 && pass)
        printf("# again\n");
    else if (me == 0)
        printf("# MPI_Allreduce, MPI_FLOAT sum, device buffers on %d ranks; alternating\n"
               "# %12s %14s %14s %8s %14s %14s\n", n, "bytes", "call us", "by hand us", "ratio",
               "D2D copy us", "Iallreduce us");
    const char *max = getenv("BENCH_MAX_BYTES");
    size_t last = max ? strtoull(max, NULL, 10) : (size_t)256 << 20;
    for (size_t bytes = 16 << 10; bytes <= last; bytes *= 2) {
        size_t count = bytes / sizeof(float);
        float *d = dev_alloc(bytes), *d2 = dev_alloc(bytes), *h = malloc(bytes);
        int iters = bytes <= (1 << 20) ? 20 : bytes <= (16 << 20) ? 6 : 3;
        double t_call = 0, t_hand = 0, t_copy = 0, t_nb = 0;
        memset(h, 0, bytes);
        to_dev(d, h, bytes);
        for (int it = -1; it < iters; it++) { /* -1: warm-up */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, d, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            double t2 = MPI_Wtime();
            to_host(h, d, bytes);
            MPI_Allreduce(MPI_IN_PLACE, h, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            to_dev(d, h, bytes);
            double t3 = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            if (me == 0) {
                double t4 = MPI_Wtime();
                cu.cuMemcpyDtoD((CUdeviceptr)d2, (CUdeviceptr)d, bytes);
                cu.cuCtxSynchronize();
                t_copy += it >= 0 ? MPI_Wtime() - t4 : 0;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Request req;
            double t5 = MPI_Wtime();
            MPI_Iallreduce(MPI_IN_PLACE, d, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (it >= 0)
                t_call += t1 - t0, t_hand += t3 - t2, t_nb += MPI_Wtime() - t5;
        }
        double v[4] = {t_call / iters * 1e6, t_hand / iters * 1e6, t_copy / iters * 1e6,
                       t_nb / iters * 1e6};
        MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (me == 0)
            printf("  %12zu %14.1f %14.1f %8.2f %14.1f %14.1f\n", bytes, v[0], v[1], v[0] / v[1],
                   v[2], v[3]);
        cu.cuMemFree((CUdeviceptr)d);
        cu.cuMemFree((CUdeviceptr)d2);
        free(h);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *why = open_gpu();
    int none = why != NULL;
    MPI_Allreduce(MPI_IN_PLACE, &none, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (none) {
        if (me == 0)
            printf("mpi_gpu_check: skipped: %s\n", why ? why : "no GPU on some rank");
        MPI_Finalize();
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--bench")) {
        const char *passes = getenv("BENCH_PASSES");
        for (int pass = 0; pass < (passes ? atoi(passes) : 1); pass++)
            bench(pass);
        MPI_Finalize();
        return 0;
    }
    const size_t counts[] = {0, 1, 7, 1000, 1 << 20};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++)
            for (size_t ci = 0; valid(&types[ti], &ops[oi]) && ci < 4; ci++)
                check_reductions(&types[ti], &ops[oi], counts[ci], (int)(ci + oi) % n);
    check_reductions(&types[8], &ops[0], counts[4], n - 1); /* 1M floats */
    for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
        check_moves(counts[ci], (int)ci % n);
    check_by_hand();
    check_alltoall_in_place(1000);
    check_mixed_ranks();
    check_many_comms();
    check_in_flight();
    check_leaks();
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("mpi_gpu_check: %d failure(s) on %d ranks\n", failures, n);
    MPI_Finalize();
    return failures != 0;
}
