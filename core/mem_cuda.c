/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA memory component (mem.h), over the driver API loaded at run time
 * (dlopen libcuda.so.1: no CUDA symbol in the build's libraries, so the
 * same build runs where there is no GPU).  Streams are CUDA streams, marks
 * CUDA events, reductions the kernels of cuda_reduce.cu (a fatbin built by
 * nvcc, loaded into the context of the first stream).  One context per
 * process is served (the first stream's: the context of the buffer it was
 * made for); every driver call runs with it pushed, since nonblocking
 * operations progress on whichever thread calls MPI.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem.h"
#include "tacos_synth.h"

extern const unsigned char tacos_cuda_fatbin[]; /* cuda_reduce.cu, built by nvcc */

#define API(X)                                                                               \
    X(cuInit) X(cuDeviceGetCount) X(cuPointerGetAttributes) X(cuPointerGetAttribute)         \
    X(cuCtxGetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuStreamCreate) X(cuStreamDestroy) X(cuMemcpyAsync)                 \
    X(cuEventCreate) X(cuEventRecord) X(cuEventQuery) X(cuEventDestroy) X(cuMemAllocHost)    \
    X(cuMemFreeHost) X(cuMemAlloc) X(cuMemFree) X(cuMemGetAddressRange) X(cuModuleLoadData)  \
    X(cuModuleGetFunction) X(cuLaunchKernel) X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle)      \
    X(cuIpcCloseMemHandle) X(cuGetErrorString)
#define STR_(x) #x
#define STR(x) STR_(x) /* the versioned name cuda.h maps a call to */

static struct {
#define FIELD(f) __typeof__(f) *f;
    API(FIELD)
#undef FIELD
} cu;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *unavailable; /* why the component is not there, or NULL */
static char last_error[160];
static CUmodule module;   /* the kernels, in the context of the first stream */
static CUcontext module_ctx;

static const char *type_names[TACOS_T_NTYPES] = {
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
    "bfloat16", "float", "double", "float_int", "double_int", "long_int", "2int", "short_int"};
static const size_t type_bytes[TACOS_T_NTYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8,
                                                  8, 16, 16, 8, 8};
static const char *op_names[TACOS_RED_NOPS] = {"sum",  "prod", "min", "max", "land", "lor",
                                               "lxor", "band", "bor", "bxor", "minloc", "maxloc"};

static int failed(const char *what, CUresult r);
#define CU(call, what) ((r_ = (call)) == CUDA_SUCCESS ? 0 : failed(what, r_))

/* Runs the driver calls that follow in the served context (and back). */
static int enter(void)
{
    CUresult r_;
    return CU(cu.cuCtxPushCurrent(module_ctx), "cuCtxPushCurrent");
}

static void leave(void)
{
    CUcontext popped;
    cu.cuCtxPopCurrent(&popped);
}

static int failed(const char *what, CUresult r)
{
    const char *s = NULL;
    if (cu.cuGetErrorString)
        cu.cuGetErrorString(r, &s);
    snprintf(last_error, sizeof last_error, "CUDA %s failed: %s (%d)", what, s ? s : "?", (int)r);
    return TACOS_ERR_IO;
}

static void load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int n = 0;
    if (!lib) {
        unavailable = "the CUDA driver (libcuda.so.1) is not installed";
        return;
    }
#define SYM(f)                                                                               \
    if (!(cu.f = (__typeof__(f) *)dlsym(lib, STR(f)))) {                                     \
        unavailable = "the CUDA driver lacks " STR(f);                                       \
        return;                                                                              \
    }
    API(SYM)
#undef SYM
    if (cu.cuInit(0) != CUDA_SUCCESS || cu.cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1)
        unavailable = "no CUDA device (cuInit or cuDeviceGetCount failed, or 0 devices)";
}

static tacos_mem_kind_t cuda_query(const void *p)
{
    unsigned type = 0, managed = 0;
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *out[2] = {&type, &managed};
    if (!p || cu.cuPointerGetAttributes(2, attrs, out, (CUdeviceptr)p) != CUDA_SUCCESS ||
        type != CU_MEMORYTYPE_DEVICE)
        return TACOS_MEM_HOST; /* unknown to CUDA, or registered host memory */
    return managed ? TACOS_MEM_MANAGED : TACOS_MEM_DEVICE;
}

/* A call's stream: the CUDA stream and the kernel its reductions run. */
typedef struct {
    CUstream s;
    CUfunction fn;
    size_t elem;
    tacos_red_op_t op;
    tacos_red_type_t type;
} stream_t;

/* The context of the memory at p (else the thread's current one); the
 * first one seen is served, with the kernels loaded there. */
static int serve(const void *p)
{
    CUresult r_;
    CUcontext ctx = NULL;
    if (cu.cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)p) ||
        !ctx) /* managed memory may name none */
        cu.cuCtxGetCurrent(&ctx);
    if (!ctx) {
        snprintf(last_error, sizeof last_error, "no CUDA context for a GPU buffer");
        return TACOS_ERR_IO;
    }
    pthread_mutex_lock(&lock);
    int rc = 0;
    if (!module_ctx) {
        if (!(rc = CU(cu.cuCtxPushCurrent(ctx), "cuCtxPushCurrent"))) {
            if (!(rc = CU(cu.cuModuleLoadData(&module, tacos_cuda_fatbin), "cuModuleLoadData")))
                module_ctx = ctx;
            leave();
        }
    }
    pthread_mutex_unlock(&lock);
    if (!rc && ctx != module_ctx) {
        snprintf(last_error, sizeof last_error,
                 "GPU buffers of a second CUDA context in one process are not served");
        rc = TACOS_ERR_IO;
    }
    return rc;
}

static int cuda_stream_new(const void *p, void **out)
{
    CUresult r_;
    stream_t *st = calloc(1, sizeof *st);
    int rc = st ? serve(p) : TACOS_ERR_NOMEM;
    *out = NULL;
    if (!rc && !(rc = enter())) {
        /* a blocking stream: its work waits for what the application
         * queued on the legacy default stream before the call (a
         * cudaMemcpy from pageable memory returns before its copy lands) */
        rc = CU(cu.cuStreamCreate(&st->s, CU_STREAM_DEFAULT), "cuStreamCreate");
        leave();
    }
    if (rc) {
        free(st);
        return rc;
    }
    *out = st;
    return 0;
}

static void cuda_stream_free(void *stream)
{
    stream_t *st = stream;
    if (st && !enter()) {
        cu.cuStreamDestroy(st->s);
        leave();
    }
    free(st);
}

static int cuda_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    CUresult r_;
    int rc = enter();
    if (rc)
        return rc;
    rc = CU(cu.cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, ((stream_t *)ctx)->s),
            "cuMemcpyAsync");
    leave();
    return rc;
}

static int cuda_reduce(void *ctx, const void *src, void *dst, size_t count)
{
    stream_t *st = ctx;
    CUresult r_;
    char name[48];
    int rc = enter();
    if (rc)
        return rc;
    snprintf(name, sizeof name, "tacos_%s_%s", op_names[st->op], type_names[st->type]);
    if (st->fn || !(rc = CU(cu.cuModuleGetFunction(&st->fn, module, name), name))) {
        size_t threads = 256, blocks = (count + threads - 1) / threads;
        void *args[] = {&dst, (void *)&src, &count};
        rc = CU(cu.cuLaunchKernel(st->fn, (unsigned)(blocks < 4096 ? blocks : 4096), 1, 1,
                                  (unsigned)threads, 1, 1, 0, st->s, args, NULL),
                "cuLaunchKernel");
    }
    leave();
    return rc;
}

static int cuda_mark(void *ctx, void **mark)
{
    CUresult r_;
    CUevent ev = NULL;
    int rc = enter();
    *mark = NULL;
    if (rc)
        return rc;
    if (!(rc = CU(cu.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate")) &&
        (rc = CU(cu.cuEventRecord(ev, ((stream_t *)ctx)->s), "cuEventRecord")))
        cu.cuEventDestroy(ev);
    leave();
    *mark = rc ? NULL : ev;
    return rc;
}

static int cuda_test(void *ctx, void *mark, int *done)
{
    (void)ctx;
    *done = 0;
    if (enter()) { /* released, as after any failed test */
        cu.cuEventDestroy(mark);
        return TACOS_ERR_IO;
    }
    CUresult r = cu.cuEventQuery(mark);
    *done = r == CUDA_SUCCESS;
    if (r != CUDA_ERROR_NOT_READY)
        cu.cuEventDestroy(mark); /* done, or failed: released either way */
    leave();
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY ? 0 : failed("stream work", r);
}

static void cuda_forget(void *ctx, void *mark)
{
    (void)ctx;
    if (!enter()) { /* CUDA destroys a recorded event once it completes */
        cu.cuEventDestroy(mark);
        leave();
    }
}

static int cuda_reduces(tacos_red_op_t op, tacos_red_type_t type)
{
    int integer = type <= TACOS_T_UINT64, floating = type >= TACOS_T_FLOAT16 &&
                                                   type <= TACOS_T_DOUBLE;
    int pair = type >= TACOS_T_FLOAT_INT && type < TACOS_T_NTYPES;
    if (op <= TACOS_RED_MAX)
        return integer || floating;
    if (op <= TACOS_RED_BXOR)
        return integer;
    return op < TACOS_RED_NOPS && pair;
}

static void cuda_bind(void *stream, tacos_red_op_t op, tacos_red_type_t type, tacos_mem_t *out)
{
    stream_t *st = stream;
    if (st->op != op || st->type != type || !st->elem)
        st->fn = NULL; /* looked up at the first reduction */
    st->op = op, st->type = type, st->elem = type < TACOS_T_NTYPES ? type_bytes[type] : 0;
    *out = (tacos_mem_t){st, cuda_copy, cuda_reduce, cuda_mark, cuda_test, cuda_forget};
}

/* Pinned host memory and device memory are slow to get and give back
 * (cuMemAllocHost pins page by page: ~0.1 ms for 64 KiB, ~0.3 s for 1 GiB;
 * cuMemFree waits for the device), and calls would do it often: buffers
 * copied by hand, and staging space and work space dropped after each call
 * beyond coll_tacos_scratch_max_bytes (a staged call's staging is its
 * traffic, 2-4 times its buffer).  Blocks freed are kept, per kind up to
 * POOL_MAX bytes in POOL_SLOTS blocks (the smallest given back to make
 * room), and given to the next request they fit (the smallest that does).
 * A pinned block's size is in its first 64 bytes; a device block's is
 * CUDA's (cuMemGetAddressRange).  A block is freed only once the streams
 * that used it are done (a call ends when its stream is). */
#define POOL_MAX ((size_t)1 << 30)
#define POOL_SLOTS 8
#define HEADER 64
typedef struct {
    char *p[POOL_SLOTS];
    size_t bytes[POOL_SLOTS];
    size_t held;
} pool_t;
static pool_t host_pool, dev_pool;

/* A kept block of at least `bytes`, or NULL. */
static char *pool_take(pool_t *pl, size_t bytes)
{
    char *p = NULL;
    int best = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < POOL_SLOTS; i++)
        if (pl->p[i] && pl->bytes[i] >= bytes && (best < 0 || pl->bytes[i] < pl->bytes[best]))
            best = i;
    if (best >= 0) {
        p = pl->p[best];
        pl->p[best] = NULL;
        pl->held -= pl->bytes[best];
    }
    pthread_mutex_unlock(&lock);
    return p;
}

/* Keeps block p of `bytes`, making room by giving back the smallest kept
 * blocks (into out[], *nout of them, for the caller to free); a block
 * larger than POOL_MAX is not kept: it is out[0]. */
static void pool_keep(pool_t *pl, char *p, size_t bytes, char *out[POOL_SLOTS + 1], int *nout)
{
    *nout = 0;
    if (bytes > POOL_MAX) {
        out[(*nout)++] = p;
        return;
    }
    pthread_mutex_lock(&lock);
    for (;;) {
        int free_slot = -1, smallest = -1;
        for (int i = 0; i < POOL_SLOTS; i++)
            if (!pl->p[i])
                free_slot = i;
            else if (smallest < 0 || pl->bytes[i] < pl->bytes[smallest])
                smallest = i;
        if (free_slot >= 0 && pl->held + bytes <= POOL_MAX) {
            pl->p[free_slot] = p, pl->bytes[free_slot] = bytes;
            pl->held += bytes;
            break;
        }
        out[(*nout)++] = pl->p[smallest];
        pl->held -= pl->bytes[smallest];
        pl->p[smallest] = NULL;
    }
    pthread_mutex_unlock(&lock);
}

static void *cuda_host_alloc(size_t bytes)
{
    char *block = pool_take(&host_pool, bytes);
    CUresult r_;
    if (!block && !enter()) {
        if (CU(cu.cuMemAllocHost((void **)&block, bytes + HEADER), "cuMemAllocHost"))
            block = NULL;
        else
            *(size_t *)block = bytes;
        leave();
    }
    return block ? block + HEADER : NULL;
}

static void cuda_host_free(void *p)
{
    char *out[POOL_SLOTS + 1];
    int n = 0;
    if (p)
        pool_keep(&host_pool, (char *)p - HEADER, *(size_t *)((char *)p - HEADER), out, &n);
    if (n && !enter()) {
        while (n)
            cu.cuMemFreeHost(out[--n]);
        leave();
    }
}

static void *cuda_dev_alloc(size_t bytes)
{
    CUdeviceptr p = (CUdeviceptr)pool_take(&dev_pool, bytes);
    CUresult r_;
    if (!p && !enter()) {
        if (CU(cu.cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc"))
            p = 0;
        leave();
    }
    return (void *)p;
}

static void cuda_dev_free(void *p)
{
    CUdeviceptr base = 0;
    size_t bytes = 0;
    char *out[POOL_SLOTS + 1];
    int n = 0;
    if (!p || enter())
        return;
    if (cu.cuMemGetAddressRange(&base, &bytes, (CUdeviceptr)p) == CUDA_SUCCESS)
        pool_keep(&dev_pool, p, bytes, out, &n);
    else
        out[n++] = p;
    while (n)
        cu.cuMemFree((CUdeviceptr)out[--n]);
    leave();
}

/* CUDA IPC.  A process exports the blocks of its staging space (dev_alloc:
 * cuMemAlloc, which IPC can share); a handle per allocation, the last few
 * kept.  The blocks other processes exported are mapped once and kept
 * (tacos_ipc_maps_t: IPC_KEPT unpinned and IPC_MAP_BYTES at most).  A call
 * pins what it imports until its memory work is done (ipc_release).  A
 * call that fails leaves its pins: what it started on the GPU may still
 * read them. */
#define IPC_KEPT 64 /* mappings kept once nothing pins them (each call in flight
                     * pins one per peer it reads from: as many as that) */
#define IPC_MAP_BYTES ((size_t)4 << 30)
static struct {
    CUdeviceptr base;
    unsigned long long id;
    CUipcMemHandle h;
} exported[4];

static int cuda_ipc_export(const void *p, tacos_ipc_desc_t *d)
{
    CUresult r_;
    CUdeviceptr base = 0;
    size_t bytes = 0;
    unsigned long long id = 0;
    int rc = enter();
    if (rc)
        return rc;
    if (!(rc = CU(cu.cuMemGetAddressRange(&base, &bytes, (CUdeviceptr)p), "cuMemGetAddressRange")) &&
        !(rc = CU(cu.cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base),
                  "cuPointerGetAttribute(BUFFER_ID)"))) {
        pthread_mutex_lock(&lock);
        int i = 0;
        while (i < 4 && !(exported[i].base == base && exported[i].id == id))
            i++;
        if (i == 4) { /* a new allocation: the oldest entry makes room */
            memmove(&exported[1], &exported[0], 3 * sizeof exported[0]);
            i = 0;
            exported[0].base = base, exported[0].id = id;
            if ((rc = CU(cu.cuIpcGetMemHandle(&exported[0].h, base), "cuIpcGetMemHandle")))
                exported[0].base = 0;
        }
        if (!rc)
            memcpy(d->handle, &exported[i].h, sizeof d->handle);
        pthread_mutex_unlock(&lock);
    }
    leave();
    d->buffer_id = id, d->offset = (unsigned long long)((CUdeviceptr)p - base);
    d->pid = (long long)getpid();
    return rc;
}

/* Maps what d describes (tacos_ipc_maps_t's open; with the lock held). */
static int ipc_open(const tacos_ipc_desc_t *d, uintptr_t *base, size_t *bytes)
{
    CUresult r_;
    CUipcMemHandle h;
    CUdeviceptr p = 0, any;
    memcpy(&h, d->handle, sizeof h);
    int rc = CU(cu.cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                "cuIpcOpenMemHandle (another rank's GPU memory)");
    if (!rc)
        cu.cuMemGetAddressRange(&any, bytes, p);
    *base = (uintptr_t)p;
    return rc;
}

static void ipc_close(uintptr_t base, size_t bytes)
{
    (void)bytes;
    cu.cuIpcCloseMemHandle((CUdeviceptr)base);
}

static tacos_ipc_maps_t mapped = {.kept = IPC_KEPT,
                                  .max_bytes = IPC_MAP_BYTES, .open = ipc_open,
                                  .close = ipc_close};

static int cuda_ipc_import(const tacos_ipc_desc_t *d, const void **p)
{
    tacos_ipc_map_t *m;
    int rc = enter();
    *p = NULL;
    if (rc)
        return rc;
    pthread_mutex_lock(&lock);
    if ((rc = tacos_ipc_maps_pin(&mapped, d, &m)) == TACOS_ERR_NOMEM) {
        snprintf(last_error, sizeof last_error,
                 "out of memory for mappings of other ranks' GPU allocations");
        rc = TACOS_ERR_IO;
    }
    if (!rc)
        *p = (const void *)(m->base + d->offset);
    pthread_mutex_unlock(&lock);
    leave();
    return rc;
}

static void cuda_ipc_release(const tacos_ipc_desc_t *d)
{
    pthread_mutex_lock(&lock);
    tacos_ipc_maps_unpin(&mapped, d);
    pthread_mutex_unlock(&lock);
}

static const char *cuda_why(void)
{
    return last_error;
}

static const tacos_mc_t cuda_mc = {.name = "cuda",
                                   .query = cuda_query,
                                   .stream_new = cuda_stream_new,
                                   .stream_free = cuda_stream_free,
                                   .bind = cuda_bind,
                                   .reduces = cuda_reduces,
                                   .host_alloc = cuda_host_alloc,
                                   .host_free = cuda_host_free,
                                   .dev_alloc = cuda_dev_alloc,
                                   .dev_free = cuda_dev_free,
                                   .ipc_export = cuda_ipc_export,
                                   .ipc_import = cuda_ipc_import,
                                   .ipc_release = cuda_ipc_release,
                                   .why = cuda_why};

const tacos_mc_t *tacos_mc_cuda(const char **why)
{
    pthread_once(&once, load);
    if (why)
        *why = unavailable;
    return unavailable ? NULL : &cuda_mc;
}
