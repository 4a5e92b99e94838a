/*
 * Module: the Open MPI side of a communicator's coll/tacos state (the core's
 * tacos_comm_t does the rest): the previous component's functions, the
 * core's callbacks over them and the PML, the PML transport for the
 * executor, Open MPI's datatype and op engines, and the module slots.
 * Every case the core does not serve goes to the previous component.
 */
#include "ompi_config.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/errhandler/errcode-internal.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "coll_tacos.h"

#define C (&mca_coll_tacos_component)
#define TRACE(level, ...) opal_output_verbose(level, C->output, "coll:tacos: " __VA_ARGS__)

/* The slots (at the end of the file). */
#define DT struct ompi_datatype_t
#define OP struct ompi_op_t *op
#define COMM struct ompi_communicator_t *comm
#define INFO struct ompi_info_t *info
#define REQ ompi_request_t **request
#define MOD mca_coll_base_module_t *module
static int tacos_barrier(COMM, MOD);
static int tacos_ibarrier(COMM, REQ, MOD);
static int tacos_barrier_init(COMM, INFO, REQ, MOD);
static int tacos_reduce_local(const void *inbuf, void *inoutbuf, int count, DT *dtype, OP, MOD);
/* the collectives served by the previous component or a textbook program */
#define PASSED_DECL(name, PARAMS)                                                            \
    static int tacos_##name(UNPAREN_D PARAMS, MOD);                                          \
    static int tacos_i##name(UNPAREN_D PARAMS, REQ, MOD);                                    \
    static int tacos_##name##_init(UNPAREN_D PARAMS, INFO, REQ, MOD);
#define UNPAREN_D(...) __VA_ARGS__
PASSED_DECL(gather, (const void *, int, DT *, void *, int, DT *, int, COMM))
PASSED_DECL(gatherv, (const void *, int, DT *, void *, const int *, const int *, DT *, int, COMM))
PASSED_DECL(scatter, (const void *, int, DT *, void *, int, DT *, int, COMM))
PASSED_DECL(scatterv, (const void *, const int *, const int *, DT *, void *, int, DT *, int, COMM))
PASSED_DECL(allgatherv, (const void *, int, DT *, void *, const int *, const int *, DT *, COMM))
PASSED_DECL(alltoallv, (const void *, const int *, const int *, DT *, void *, const int *,
                        const int *, DT *, COMM))
PASSED_DECL(alltoallw, (const void *, const int *, const int *, DT *const *, void *, const int *,
                        const int *, DT *const *, COMM))
PASSED_DECL(scan, (const void *, void *, int, DT *, OP, COMM))
PASSED_DECL(exscan, (const void *, void *, int, DT *, OP, COMM))
static int tacos_allreduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM, MOD);
static int tacos_allgather(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                           DT *rdtype, COMM, MOD);
static int tacos_bcast(void *buf, int count, DT *dtype, int root, COMM, MOD);
static int tacos_reduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, int root, COMM,
                        MOD);
static int tacos_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, DT *dtype, OP,
                                      COMM, MOD);
static int tacos_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, DT *dtype, OP,
                                COMM, MOD);
static int tacos_alltoall(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                          DT *rdtype, COMM, MOD);
static int tacos_ialltoall(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                           DT *rdtype, COMM, REQ, MOD);
static int tacos_alltoall_init(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                               DT *rdtype, COMM, INFO, REQ, MOD);
static int tacos_iallreduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM, REQ, MOD);
static int tacos_allreduce_init(const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM, INFO,
                                REQ, MOD);
static int tacos_iallgather(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                            DT *rdtype, COMM, REQ, MOD);
static int tacos_allgather_init(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                                DT *rdtype, COMM, INFO, REQ, MOD);
static int tacos_ibcast(void *buf, int count, DT *dtype, int root, COMM, REQ, MOD);
static int tacos_bcast_init(void *buf, int count, DT *dtype, int root, COMM, INFO, REQ, MOD);
static int tacos_ireduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, int root, COMM,
                         REQ, MOD);
static int tacos_reduce_init(const void *sbuf, void *rbuf, int count, DT *dtype, OP, int root,
                             COMM, INFO, REQ, MOD);
static int tacos_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, DT *dtype, OP,
                                       COMM, REQ, MOD);
static int tacos_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount, DT *dtype,
                                           OP, COMM, INFO, REQ, MOD);
static int tacos_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, DT *dtype, OP,
                                 COMM, REQ, MOD);
static int tacos_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts, DT *dtype,
                                     OP, COMM, INFO, REQ, MOD);

/* ---- module object -------------------------------------------------------- */

static void module_construct(mca_coll_tacos_module_t *m)
{
    memset((char *)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
}

#define RELEASE_PREV(name)                                                                   \
    if (m->prev_##name##_module)                                                             \
        OBJ_RELEASE(m->prev_##name##_module);

static void module_destruct(mca_coll_tacos_module_t *m)
{
    TACOS_SLOTS(RELEASE_PREV)
    tacos_comm_free(m->core);
}

OBJ_CLASS_INSTANCE(mca_coll_tacos_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/* The previous component's function for a slot, or NULL where none
 * provides it (then coll/tacos serves it with a textbook program: with
 * `--mca coll tacos` alone, nothing else is there). */
#define SAVE(name)                                                                           \
    do {                                                                                     \
        if (!comm->c_coll->coll_##name || !comm->c_coll->coll_##name##_module) {             \
            m->prev_##name = NULL, m->prev_##name##_module = NULL;                           \
            alone++;                                                                         \
            break;                                                                           \
        }                                                                                    \
        m->prev_##name = comm->c_coll->coll_##name;                                          \
        m->prev_##name##_module = comm->c_coll->coll_##name##_module;                        \
        OBJ_RETAIN(m->prev_##name##_module);                                                 \
    } while (0);

static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int alone = 0;
    TACOS_SLOTS(SAVE)
    if (alone)
        TRACE(5, "communicator %u: no previous component for %d of the slots: textbook programs "
                 "serve what no schedule does",
              ompi_comm_get_cid(comm), alone);
    return OMPI_SUCCESS;
}

/* ---- the core's callbacks --------------------------------------------------- */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int core_max_u64(void *ctx, uint64_t *v, int n)
{
    mca_coll_tacos_module_t *m = ctx;
    if (!m->prev_allreduce) /* the textbook program (the core is busy: no schedule) */
        return tacos_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                               m->comm, &m->super);
    return m->prev_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                             m->comm, m->prev_allreduce_module);
}

static int core_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    mca_coll_tacos_module_t *m = ctx;
    if (!m->prev_allgather)
        return tacos_allgather(mine, (int)bytes, &ompi_mpi_byte.dt, all, (int)bytes,
                               &ompi_mpi_byte.dt, m->comm, &m->super);
    return m->prev_allgather(mine, (int)bytes, &ompi_mpi_byte.dt, all, (int)bytes,
                             &ompi_mpi_byte.dt, m->comm, m->prev_allgather_module);
}

/* The measurements' messages; the tag is barrier's: coll/tacos serves no
 * barrier and every rank is inside the core's setup, so nothing else can
 * match it. */
static int core_exchange(void *ctx, const int *peers, int n, const void *sbuf, size_t sbytes,
                         void *rbuf, size_t rbytes, double *t_us)
{
    mca_coll_tacos_module_t *m = ctx;
    ompi_request_t *req[4];
    int rc = OMPI_SUCCESS, posted = 0, peer_of[4];
    if (n > 2)
        return OMPI_ERR_BAD_PARAM;
    double t0 = now_us();
    for (int i = 0; i < n && rc == OMPI_SUCCESS; i++) {
        if (rbytes && (rc = MCA_PML_CALL(irecv((char *)rbuf + (size_t)i * rbytes, (int)rbytes,
                                               &ompi_mpi_byte.dt, peers[i],
                                               MCA_COLL_BASE_TAG_BARRIER, m->comm,
                                               &req[posted]))) == OMPI_SUCCESS)
            peer_of[posted++] = i;
        if (sbytes && rc == OMPI_SUCCESS &&
            (rc = MCA_PML_CALL(isend(sbuf, (int)sbytes, &ompi_mpi_byte.dt, peers[i],
                                     MCA_COLL_BASE_TAG_BARRIER, MCA_PML_BASE_SEND_STANDARD,
                                     m->comm, &req[posted]))) == OMPI_SUCCESS)
            peer_of[posted++] = i;
    }
    for (int left = posted; left > 0 && rc == OMPI_SUCCESS; left--) {
        int idx = 0; /* a peer is done when both of its are */
        if ((rc = ompi_request_wait_any((size_t)posted, req, &idx, MPI_STATUS_IGNORE)) ==
            OMPI_SUCCESS)
            t_us[peer_of[idx]] = now_us() - t0;
    }
    return rc;
}

static void core_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level == 0)
        opal_output(0, "coll:tacos: %s", msg);
    else
        TRACE(level, "%s", msg);
}

mca_coll_base_module_t *mca_coll_tacos_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    /* cheap and the same on every rank; coll_tacos_enable is not checked
     * here but agreed at the first collective, so that a rank where it is
     * off still takes part in that agreement (and then only forwards) */
    if (C->priority <= 0 || OMPI_COMM_IS_INTER(comm))
        return NULL;
    mca_coll_tacos_module_t *m = OBJ_NEW(mca_coll_tacos_module_t);
    if (!m)
        return NULL;
    tacos_settings_t st = TACOS_SETTINGS_DEFAULT;
    st.enable = C->enable, st.min_bytes = C->min_bytes, st.rooted_min_bytes = C->rooted_min_bytes;
    st.chunks = C->chunks, st.seed = C->seed, st.trials = C->trials;
    st.unwind_degree = C->unwind_degree, st.probe = C->probe, st.calibrate = C->calibrate;
    st.measure = C->measure, st.cache_size = C->cache_size, st.topo_file = C->topo_file;
    st.nonblocking = C->nonblocking;
    st.deterministic = C->deterministic, st.verbose = C->verbose, st.dump_dir = C->dump_dir;
    st.param_prefix = "coll_tacos_", st.probe_hwloc_xml = C->probe_hwloc_xml;
    st.ucx_lib = C->ucx_lib, st.probe_gpu = C->probe_gpu, st.scratch_max = C->scratch_max;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    tacos_comm_ops_t ops = {.ctx = m,
                            .rank = ompi_comm_rank(comm),
                            .size = ompi_comm_size(comm),
                            .local_rank = lr ? atoi(lr) : 0,
                            .id = ompi_comm_get_cid(comm),
                            .max_u64 = core_max_u64,
                            .allgather = core_allgather,
                            .exchange = core_exchange,
                            .log = core_log};
    m->comm = comm;
    if (!(m->core = tacos_comm_new(&st, &ops))) {
        OBJ_RELEASE(m);
        return NULL;
    }
    *priority = C->priority;
    m->super.coll_module_enable = module_enable;
    m->super.coll_allreduce = tacos_allreduce;
    m->super.coll_allgather = tacos_allgather;
    m->super.coll_bcast = tacos_bcast;
    m->super.coll_reduce = tacos_reduce;
    m->super.coll_reduce_scatter = tacos_reduce_scatter;
    m->super.coll_reduce_scatter_block = tacos_reduce_scatter_block;
    m->super.coll_barrier = tacos_barrier;
    m->super.coll_ibarrier = tacos_ibarrier;
    m->super.coll_barrier_init = tacos_barrier_init;
    m->super.coll_reduce_local = tacos_reduce_local;
#define FILL(name)                                                                           \
    m->super.coll_##name = tacos_##name, m->super.coll_i##name = tacos_i##name,              \
    m->super.coll_##name##_init = tacos_##name##_init;
    FILL(gather) FILL(gatherv) FILL(scatter) FILL(scatterv) FILL(allgatherv) FILL(alltoallv)
    FILL(alltoallw) FILL(scan) FILL(exscan)
#undef FILL
    m->super.coll_alltoall = tacos_alltoall;
    m->super.coll_ialltoall = tacos_ialltoall;
    m->super.coll_alltoall_init = tacos_alltoall_init;
    m->super.coll_iallreduce = tacos_iallreduce;
    m->super.coll_iallgather = tacos_iallgather;
    m->super.coll_ibcast = tacos_ibcast;
    m->super.coll_ireduce = tacos_ireduce;
    m->super.coll_ireduce_scatter = tacos_ireduce_scatter;
    m->super.coll_ireduce_scatter_block = tacos_ireduce_scatter_block;
    m->super.coll_allreduce_init = tacos_allreduce_init;
    m->super.coll_allgather_init = tacos_allgather_init;
    m->super.coll_bcast_init = tacos_bcast_init;
    m->super.coll_reduce_init = tacos_reduce_init;
    m->super.coll_reduce_scatter_init = tacos_reduce_scatter_init;
    m->super.coll_reduce_scatter_block_init = tacos_reduce_scatter_block_init;
    return &m->super;
}

/* ---- transport over the PML ------------------------------------------------ */

/* One call: what the transport and the datatype callbacks need. */
typedef struct {
    struct ompi_communicator_t *comm;
    int tag;
    struct ompi_datatype_t *unit; /* MPI_BYTE, or the datatype reductions combine */
    ptrdiff_t shift;              /* the executor's unit i starts shift past element i */
    struct ompi_op_t *op;
    int error; /* the first MPI error of the transport (the executor's own
                * codes are TACOS_ERR_*: another space) */
} pml_ctx_t;

static int failed(pml_ctx_t *c, int rc)
{
    if (rc != OMPI_SUCCESS && !c->error)
        c->error = rc;
    return rc != OMPI_SUCCESS;
}

static int pml_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    pml_ctx_t *c = ctx;
    if (tacos_fault("send"))
        return failed(c, OMPI_ERR_OUT_OF_RESOURCE);
    return failed(c, MCA_PML_CALL(isend(buf, (int)bytes, &ompi_mpi_byte.dt, peer, c->tag,
                                        MCA_PML_BASE_SEND_STANDARD, c->comm,
                                        (ompi_request_t **)req)));
}

static int pml_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    pml_ctx_t *c = ctx;
    return failed(c, MCA_PML_CALL(irecv(buf, (int)bytes, &ompi_mpi_byte.dt, peer, c->tag,
                                        c->comm, (ompi_request_t **)req)));
}

/* Completed requests are freed; one that failed stays allocated after
 * Open MPI's wait (its status holds the error): take the error, free it. */
static int reap(pml_ctx_t *c, ompi_request_t **req, char *done)
{
    *done = 1;
    if (*req == &ompi_request_null.request)
        return 0;
    int rc = (*req)->req_status.MPI_ERROR;
    ompi_request_free(req);
    return failed(c, rc != OMPI_SUCCESS ? rc : OMPI_ERROR);
}

static int pml_wait_some(void *ctx, void **reqs, size_t n, char *done)
{
    pml_ctx_t *c = ctx;
    ompi_request_t **r = (ompi_request_t **)reqs;
    int outcount = 0, idx[64], rc = 0;
    if (n > 64) { /* wait for the first of many */
        int i = MPI_UNDEFINED;
        ompi_request_wait_any(n, r, &i, MPI_STATUS_IGNORE);
        return i == MPI_UNDEFINED ? failed(c, OMPI_ERROR) : reap(c, &r[i], &done[i]);
    }
    ompi_request_wait_some((int)n, r, &outcount, idx, MPI_STATUSES_IGNORE);
    if (outcount == MPI_UNDEFINED || outcount <= 0)
        return failed(c, OMPI_ERROR);
    for (int i = 0; i < outcount; i++)
        rc |= reap(c, &r[idx[i]], &done[idx[i]]);
    return rc;
}

static int pml_test_some(void *ctx, void **reqs, size_t n, char *done)
{
    pml_ctx_t *c = ctx;
    ompi_request_t **r = (ompi_request_t **)reqs;
    int outcount = 0, idx[64], rc = 0;
    size_t base = 0;
    for (; base < n; base += 64) { /* in slices of 64 */
        int m = (int)(n - base < 64 ? n - base : 64);
        ompi_request_test_some(m, r + base, &outcount, idx, MPI_STATUSES_IGNORE);
        for (int i = 0; outcount != MPI_UNDEFINED && i < outcount; i++)
            rc |= reap(c, &r[base + idx[i]], &done[base + idx[i]]);
    }
    return rc;
}

static void pml_abandon(void *ctx, void *req, int is_send)
{
    (void)ctx;
    ompi_request_t *r = req;
    if (!is_send) { /* it may target scratch: gone before returning */
        ompi_request_cancel(r);
        ompi_request_wait(&r, MPI_STATUS_IGNORE);
    }
    if (r != &ompi_request_null.request)
        ompi_request_free(&r); /* a send completes on its own */
}

static int op_reduce(void *ctx, const void *src, void *dst, size_t count)
{
    pml_ctx_t *c = ctx;
    ompi_op_reduce(c->op, (char *)src - c->shift, (char *)dst - c->shift, (int)count, c->unit);
    return OMPI_SUCCESS;
}

/* ---- the data as schedules see it ------------------------------------------ */

static size_t type_size(struct ompi_datatype_t *dtype)
{
    size_t size;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

/* Collectives that only move data: the signature's bytes (MPI_BYTE units). */
static const char *view_bytes(struct ompi_datatype_t *dtype, size_t count, tacos_view_t *v,
                              pml_ctx_t *x)
{
    x->unit = &ompi_mpi_byte.dt;
    return tacos_view_bytes(count, type_size(dtype), v);
}

/* Reductions: elements of the datatype (MPI wants the same datatype on
 * every rank there, and Open MPI's predefined ops take predefined types). */
static const char *view_elements(struct ompi_datatype_t *dtype, size_t count,
                                 struct ompi_op_t *op, tacos_view_t *v, pml_ctx_t *x)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    x->unit = dtype;
    x->shift = tlb;
    return tacos_view_elements(count, type_size(dtype), ext, tlb, text, ompi_op_is_commute(op), v);
}

/* d's data as one run of bytes (its first byte), or NULL. */
static char *dt_contiguous(void *ctx, const tacos_data_t *d)
{
    (void)ctx;
    struct ompi_datatype_t *dtype = (struct ompi_datatype_t *)d->type;
    ptrdiff_t tlb, text;
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    return ompi_datatype_is_contiguous_memory_layout(dtype, (int)d->count) ? (char *)d->buf + tlb
                                                                           : NULL;
}

/* Between a (buffer, count, datatype) and its units in work: Open MPI's
 * datatype engine (elements keep their layout; bytes are packed). */
static int dt_pack(void *ctx, const tacos_data_t *d, char *work)
{
    pml_ctx_t *x = ctx;
    struct ompi_datatype_t *dtype = (struct ompi_datatype_t *)d->type;
    if (x->unit != &ompi_mpi_byte.dt)
        return ompi_datatype_sndrcv(d->buf, (int)d->count, dtype, work, (int)d->count, dtype);
    return ompi_datatype_sndrcv(d->buf, (int)d->count, dtype, work,
                                (int)(d->count * type_size(dtype)), &ompi_mpi_packed.dt);
}

static int dt_unpack(void *ctx, const char *work, const tacos_data_t *d)
{
    pml_ctx_t *x = ctx;
    struct ompi_datatype_t *dtype = (struct ompi_datatype_t *)d->type;
    if (x->unit != &ompi_mpi_byte.dt)
        return ompi_datatype_sndrcv(work, (int)d->count, dtype, d->buf, (int)d->count, dtype);
    return ompi_datatype_sndrcv(work, (int)(d->count * type_size(dtype)), &ompi_mpi_packed.dt,
                                d->buf, (int)d->count, dtype);
}

static tacos_data_t data(const void *buf, size_t count, struct ompi_datatype_t *dtype)
{
    ptrdiff_t lb, ext;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    return (tacos_data_t){(void *)buf, count, dtype, ext};
}

/* ---- requests: nonblocking and persistent operations ----------------------------- */

/* Their messages carry a tag of their own per operation started (every
 * rank starts a communicator's operations in the same order), below every
 * range Open MPI's components use (libnbc's, the neighbourhood
 * collectives', UCC's; HCOLL's range ends far above it). */
#define TAG_BASE (-INT_MAX)
#define TAG_RANGE (1 << 20)

/* An ompi_coll_base_nbc_request_t: Open MPI's bindings of the nonblocking
 * and persistent collectives take one from every component (they record a
 * user-defined op or derived datatype in it, to hold them until the end). */
typedef struct mca_coll_tacos_request {
    ompi_coll_base_nbc_request_t super;
    pml_ctx_t x;         /* the transport's context */
    tacos_req_t *op;     /* the core's operation (freed at completion unless persistent) */
    mca_coll_tacos_module_t *module;
    struct ompi_datatype_t **held; /* the datatypes it uses, retained while it lives */
    int nheld;
    void *tmp; /* textbook programs: their working copy, freed with the request */
    struct ompi_op_t *reduce_op;
    int free_when_done; /* MPI_Request_free while active */
    struct mca_coll_tacos_request *prev, *next; /* in the active list */
} mca_coll_tacos_request_t;

static int request_free(ompi_request_t **req);
static int request_cancel(ompi_request_t *req, int complete);
static int request_start(size_t n, ompi_request_t **reqs);

static void request_construct(mca_coll_tacos_request_t *r)
{
    memset((char *)r + sizeof(r->super), 0, sizeof(*r) - sizeof(r->super));
    r->super.super.req_type = OMPI_REQUEST_COLL;
    r->super.super.req_free = request_free;
    r->super.super.req_cancel = request_cancel;
    r->super.super.req_start = request_start;
}

OBJ_CLASS_INSTANCE(mca_coll_tacos_request_t, ompi_coll_base_nbc_request_t, request_construct, NULL);

/* The operations in flight, progressed by whichever thread gets the lock. */
static mca_coll_tacos_request_t *active;
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static int progress_registered;

static void destroy(mca_coll_tacos_request_t *r)
{
    tacos_req_free(r->op);
    for (int i = 0; i < r->nheld; i++)
        OBJ_RELEASE(r->held[i]);
    free(r->held);
    free(r->tmp);
    if (r->reduce_op)
        OBJ_RELEASE(r->reduce_op);
    OBJ_RELEASE(r->super.super.req_mpi_object.comm);
    OMPI_REQUEST_FINI(&r->super.super);
    OBJ_RELEASE(r);
}

/* Under active_lock: the operation is over (rc: its status). */
static void finished(mca_coll_tacos_request_t *r, int rc)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        active = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
    r->super.super.req_status.MPI_ERROR = rc == OMPI_SUCCESS ? MPI_SUCCESS : ompi_errcode_get_mpi_code(rc);
    if (!r->super.super.req_persistent) { /* its scratch goes now */
        tacos_req_free(r->op);
        r->op = NULL;
    }
    int free_it = r->free_when_done;
    ompi_request_complete(&r->super.super, true);
    if (free_it)
        destroy(r);
}

int mca_coll_tacos_progress(void)
{
    int events = 0;
    if (!__atomic_load_n(&active, __ATOMIC_RELAXED) || pthread_mutex_trylock(&active_lock))
        return 0; /* nothing to do, or another thread does it */
    for (mca_coll_tacos_request_t *r = active, *next; r; r = next) {
        int done = 0, rc = tacos_req_progress(r->op, &done);
        next = r->next;
        if (done)
            finished(r, rc), events++;
    }
    pthread_mutex_unlock(&active_lock);
    return events;
}

/* Posts the operation's first messages under a tag of its own. */
static int start_one(mca_coll_tacos_request_t *r)
{
    r->x.tag = TAG_BASE + (int)(r->module->nonblocking_seq++ % TAG_RANGE);
    r->x.error = OMPI_SUCCESS;
    r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    r->super.super.req_status._cancelled = 0;
    int rc = tacos_req_start(r->op);
    if (rc != OMPI_SUCCESS)
        return rc;
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    pthread_mutex_lock(&active_lock);
    if (!progress_registered) {
        opal_progress_register(mca_coll_tacos_progress);
        progress_registered = 1;
    }
    r->prev = NULL;
    r->next = active;
    if (active)
        active->prev = r;
    active = r;
    pthread_mutex_unlock(&active_lock);
    return OMPI_SUCCESS;
}

static int request_start(size_t n, ompi_request_t **reqs)
{
    for (size_t i = 0; i < n; i++) {
        mca_coll_tacos_request_t *r = (mca_coll_tacos_request_t *)reqs[i];
        if (r->super.super.req_state == OMPI_REQUEST_ACTIVE && !REQUEST_COMPLETE(&r->super.super))
            return OMPI_ERR_REQUEST;
        int rc = start_one(r);
        if (rc != OMPI_SUCCESS)
            return rc;
    }
    return OMPI_SUCCESS;
}

/* A request freed while its operation runs is freed when it is over. */
static int request_free(ompi_request_t **req)
{
    mca_coll_tacos_request_t *r = (mca_coll_tacos_request_t *)*req;
    pthread_mutex_lock(&active_lock);
    if (r->super.super.req_state == OMPI_REQUEST_ACTIVE && !REQUEST_COMPLETE(&r->super.super))
        r->free_when_done = 1;
    else
        destroy(r);
    pthread_mutex_unlock(&active_lock);
    *req = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int request_cancel(ompi_request_t *req, int complete)
{
    (void)req, (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

/* A request for a call: its own copy of the transport's context, and *own
 * the call pointing at it (for the core's operation); NULL: no memory. */
static mca_coll_tacos_request_t *request_new(mca_coll_tacos_module_t *m, const tacos_call_t *call,
                                             tacos_call_t *own)
{
    mca_coll_tacos_request_t *r = OBJ_NEW(mca_coll_tacos_request_t);
    if (!r)
        return NULL;
    r->x = *(pml_ctx_t *)call->tp.ctx;
    r->module = m;
    *own = *call;
    own->tp.ctx = &r->x;
    own->error = &r->x.error;
    return r;
}

/* r, with the core's operation made, as an MPI request: the communicator,
 * held[0..nheld) (the array is the request's now) and the op retained
 * while it lives, tmp freed with it; nonblocking (started now) or
 * persistent. */
static int request_issue(mca_coll_tacos_request_t *r, struct ompi_datatype_t **held, int nheld,
                         void *tmp, int persistent, ompi_request_t **request)
{
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_mpi_object.comm = r->x.comm;
    OBJ_RETAIN(r->x.comm);
    r->held = held, r->nheld = nheld, r->tmp = tmp, r->reduce_op = r->x.op;
    for (int i = 0; i < nheld; i++)
        OBJ_RETAIN(held[i]);
    if (r->reduce_op)
        OBJ_RETAIN(r->reduce_op);
    int rc = persistent ? OMPI_SUCCESS : start_one(r);
    if (rc != OMPI_SUCCESS) {
        destroy(r);
        return rc;
    }
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

/* A request for a call of plan p, which uses datatypes t0 and t1 (or NULL). */
static int launch(mca_coll_tacos_module_t *m, const tacos_plan_t *p, const tacos_call_t *call,
                  const tacos_args_t *a, struct ompi_datatype_t *t0, struct ompi_datatype_t *t1,
                  int persistent, ompi_request_t **request)
{
    tacos_call_t own;
    struct ompi_datatype_t **held = malloc(2 * sizeof *held);
    mca_coll_tacos_request_t *r = held ? request_new(m, call, &own) : NULL;
    int nheld = 0, rc = r ? tacos_req_new(m->core, p, &own, a, &r->op) : OMPI_ERR_OUT_OF_RESOURCE;
    if (rc != OMPI_SUCCESS) {
        if (r)
            OBJ_RELEASE(r);
        free(held);
        return rc;
    }
    if (t0)
        held[nheld++] = t0;
    if (t1)
        held[nheld++] = t1;
    return request_issue(r, held, nheld, NULL, persistent, request);
}

/* ---- collectives ------------------------------------------------------------- */

/* How a slot was called: blocking, nonblocking (MPI_I...), persistent (..._init). */
typedef enum { BLOCKING, NONBLOCKING, PERSISTENT } call_mode_t;

static const char *mode_prefix[] = {"", "i", ""}, *mode_suffix[] = {"", "", "_init"};

/* A call's context and what the core needs of it. */
#define CALL(comm, name, op)                                                                 \
    pml_ctx_t x = {comm, MCA_COLL_BASE_TAG_##name, &ompi_mpi_byte.dt, 0, op, OMPI_SUCCESS};  \
    tacos_call_t call = {{&x, pml_isend, pml_irecv, pml_wait_some, pml_test_some,            \
                          pml_abandon, op_reduce},                                            \
                         {0, 0, 0, 0},                                                        \
                         dt_contiguous,                                                       \
                         dt_pack,                                                             \
                         dt_unpack,                                                           \
                         OMPI_ERR_OUT_OF_RESOURCE,                                            \
                         OMPI_ERROR,                                                          \
                         &x.error}

/* Whether a previous component has the slot in the call's mode. */
#define HAS_PREV(m, name)                                                                    \
    (mode == NONBLOCKING ? (m)->prev_i##name != NULL                                         \
     : mode == PERSISTENT ? (m)->prev_##name##_init != NULL                                  \
                          : (m)->prev_##name != NULL)

/* The previous component's function in the call's mode, or where there is
 * none (coll/tacos alone) the textbook program. */
#define FALLBACK(m, name, why, ...)                                                          \
    do {                                                                                     \
        TRACE(10, "%s" #name "%s: %s: %s", mode_prefix[mode], mode_suffix[mode],             \
              HAS_PREV(m, name) ? "fallback" : "textbook", why);                            \
        if (!HAS_PREV(m, name))                                                              \
            return textbook_##name(__VA_ARGS__, &(m)->super, mode, info, request);           \
        if (mode == NONBLOCKING)                                                             \
            return (m)->prev_i##name(__VA_ARGS__, request, (m)->prev_i##name##_module);      \
        if (mode == PERSISTENT)                                                              \
            return (m)->prev_##name##_init(__VA_ARGS__, info, request,                       \
                                           (m)->prev_##name##_init_module);                  \
        return (m)->prev_##name(__VA_ARGS__, (m)->prev_##name##_module);                     \
    } while (0)

/* Plans (tacos_comm_plan_call); returns an error or, where nothing is to
 * move, success; falls back; or goes on with p. */
#define PLAN(m, coll, root, why, p, name, ...)                                               \
    do {                                                                                     \
        if (!(why) && ompi_comm_size(comm) == 1)                                             \
            (why) = "one rank";                                                              \
        int plan_rc_ = tacos_comm_plan_call((m)->core, mode == BLOCKING, coll, root,         \
                                            call.v.bytes, &(why), &(p));                     \
        if (plan_rc_ != OMPI_SUCCESS || (!(p) && !(why)))                                    \
            return plan_rc_;                                                                 \
        if (!(p))                                                                            \
            FALLBACK(m, name, why, __VA_ARGS__);                                             \
    } while (0)

/* Runs plan p in the call's mode. */
#define RUN(m, p, a, t0, t1)                                                                 \
    (mode == BLOCKING ? tacos_run((m)->core, p, &call, a)                                    \
                      : launch(m, p, &call, a, t0, t1, mode == PERSISTENT, request))

#define MODE_ARGS call_mode_t mode, struct ompi_info_t *info, ompi_request_t **request

/* ---- textbook programs ------------------------------------------------------------
 * What coll/tacos serves where no schedule does and no previous component
 * exists (`--mca coll tacos` alone: Open MPI wants every slot filled), and
 * what it serves while setting up a communicator then: each collective as
 * a list of messages for the same executor (tacos_run_list), blocking,
 * nonblocking or persistent alike.  Linear or chained, correct for every
 * legal call (non-commutative ops keep rank order), not tuned. */

typedef struct {
    tacos_msg_t *msgs;
    int n, cap;
    tacos_copy_t copies[2];
    int ncopies;
    void *tmp;                     /* a working copy the call owns */
    struct ompi_datatype_t **held; /* the datatypes it uses (nonblocking: retained) */
    int nheld, capheld, nomem;
} list_t;

static int push(list_t *l, int peer, int send, int reduce, int after, tacos_data_t d,
                size_t units)
{
    if (l->n == l->cap) {
        tacos_msg_t *m = realloc(l->msgs, (size_t)(l->cap = 2 * l->cap + 8) * sizeof *m);
        if (!m)
            return l->nomem = 1, -1;
        l->msgs = m;
    }
    l->msgs[l->n] = (tacos_msg_t){peer, send, reduce, after, d, units};
    return l->n++;
}

static void hold(list_t *l, struct ompi_datatype_t *t)
{
    if (l->nheld == l->capheld) {
        struct ompi_datatype_t **h = realloc(l->held, (size_t)(l->capheld = 2 * l->capheld + 4) * sizeof *h);
        if (!h) {
            l->nomem = 1;
            return;
        }
        l->held = h;
    }
    l->held[l->nheld++] = t;
}

static void copy(list_t *l, tacos_data_t from, tacos_data_t to)
{
    l->copies[l->ncopies++] = (tacos_copy_t){from, to};
}

static size_t sig_bytes(size_t count, struct ompi_datatype_t *t) { return count * type_size(t); }

/* (buf + i blocks of count, count, t). */
static tacos_data_t block_of(const void *buf, size_t i, size_t count, struct ompi_datatype_t *t)
{
    tacos_data_t d = data(buf, count, t);
    d.buf = (char *)buf + (ptrdiff_t)(i * count) * d.extent;
    return d;
}

/* A working copy of (count, t): l->tmp, laid out as t wants. */
static tacos_data_t work_like(list_t *l, size_t count, struct ompi_datatype_t *t)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(t, &lb, &ext);
    ompi_datatype_get_true_extent(t, &tlb, &text);
    size_t pad = (size_t)(tlb < 0 ? -tlb : tlb);
    char *base = malloc(count * (size_t)(ext < 0 ? -ext : ext) + (size_t)text + 2 * pad + 16);
    l->nomem |= !base;
    l->tmp = base;
    return data(base ? base + pad : NULL, count, t);
}

/* The bytes [lo, hi) of buf copied into l->tmp: the input of an in-place
 * call that receives overwrite; *shift: tmp - (buf + lo)'s distance. */
static char *raw_copy(list_t *l, const char *buf, ptrdiff_t lo, ptrdiff_t hi)
{
    char *w = malloc((size_t)(hi > lo ? hi - lo : 0) + 1);
    l->nomem |= !w;
    l->tmp = w;
    if (w && hi > lo)
        copy(l, data(buf + lo, (size_t)(hi - lo), &ompi_mpi_byte.dt),
             data(w, (size_t)(hi - lo), &ompi_mpi_byte.dt));
    return w ? w - lo : NULL;
}

/* The span of bytes block i of (count[i], type[i]) at disp_bytes[i] covers. */
static void span_of(size_t count, ptrdiff_t disp_bytes, struct ompi_datatype_t *t, ptrdiff_t *lo,
                    ptrdiff_t *hi)
{
    ptrdiff_t lb, ext, tlb, text;
    if (!count)
        return;
    ompi_datatype_get_extent(t, &lb, &ext);
    ompi_datatype_get_true_extent(t, &tlb, &text);
    ptrdiff_t a = disp_bytes + tlb, b = disp_bytes + tlb + (ptrdiff_t)(count - 1) * ext + text;
    if (a < *lo)
        *lo = a;
    if (b > *hi)
        *hi = b;
}

/* Runs the list in the call's mode and frees what the call does not keep. */
static int run_list(mca_coll_tacos_module_t *m, list_t *l, tacos_call_t *call,
                    call_mode_t mode, ompi_request_t **request)
{
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (l->nomem)
        goto out;
    if (mode == BLOCKING) {
        rc = tacos_run_list(m->core, call, l->msgs, l->n, l->copies, l->ncopies);
        goto out;
    }
    tacos_call_t own;
    mca_coll_tacos_request_t *r = request_new(m, call, &own);
    if (!r)
        goto out;
    if ((rc = tacos_req_new_list(m->core, &own, l->msgs, l->n, l->copies, l->ncopies, &r->op))) {
        OBJ_RELEASE(r);
        goto out;
    }
    rc = request_issue(r, l->held, l->nheld, l->tmp, mode == PERSISTENT, request);
    l->held = NULL, l->tmp = NULL; /* the request's now */
out:
    free(l->msgs);
    free(l->held);
    free(l->tmp);
    return rc;
}

/* A call whose units are elements of dtype, combined with op. */
static void elements(tacos_call_t *call, pml_ctx_t *x, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    x->unit = dtype, x->shift = tlb, x->op = op;
    call->v = (tacos_view_t){0, (size_t)ext, 0, tlb};
}

#define BYTES(comm, name)                                                                    \
    CALL(comm, name, NULL);                                                                  \
    call.v.unit_ext = 1;                                                                     \
    list_t l = {0};                                                                          \
    int me = ompi_comm_rank(comm), n = ompi_comm_size(comm)

#define ELEMENTS(comm, name, dtype, op)                                                      \
    CALL(comm, name, op);                                                                    \
    elements(&call, &x, dtype, op);                                                          \
    list_t l = {0};                                                                          \
    int me = ompi_comm_rank(comm), n = ompi_comm_size(comm);                                 \
    hold(&l, dtype)

#define TB_ARGS mca_coll_base_module_t *module, MODE_ARGS
#define TB_M mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module; (void)info

/* Dissemination: in round k every rank tells rank + 2^k, after hearing
 * from rank - 2^(k-1). */
static int textbook_barrier(struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    BYTES(comm, BARRIER);
    char *bytes = l.tmp = calloc(64, 1);
    l.nomem |= !bytes;
    for (int k = 0, d = 1, heard = -1; d < n; k++, d *= 2) {
        push(&l, (me + d) % n, 1, 0, heard, data(bytes + 63, 1, &ompi_mpi_byte.dt), 1);
        heard = push(&l, (me - d + n) % n, 0, 0, -1, data(bytes + k, 1, &ompi_mpi_byte.dt), 1);
    }
    return run_list(m, &l, &call, mode, request);
}

/* The root sends to every rank. */
static int textbook_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    BYTES(comm, BCAST);
    hold(&l, dtype);
    size_t u = sig_bytes((size_t)count, dtype);
    for (int r = 0; r < n; r++)
        if (me == root ? r != root : r == root)
            push(&l, r, me == root, 0, -1, data(buf, (size_t)count, dtype), u);
    return run_list(m, &l, &call, mode, request);
}

/* Gather(v) (gather = 1: every rank sends its block to the root) and
 * Scatter(v) (the root sends each rank its block): `mine` is this rank's
 * block (sbuf for gather, rbuf for scatter; MPI_IN_PLACE at the root), the
 * root's blocks are counts[r] (or count) of type at displs[r] (or r x count)
 * extents into `all`. */
static int rooted_list(int gather, const void *mine, int mcount, struct ompi_datatype_t *mtype,
                       const void *all, const int *counts, const int *displs, int count,
                       struct ompi_datatype_t *type, int root, struct ompi_communicator_t *comm,
                       int tag, TB_ARGS)
{
    TB_M;
    BYTES(comm, GATHER);
    x.tag = tag;
    int in_place = mine == MPI_IN_PLACE;
    if (!in_place)
        hold(&l, mtype);
    tacos_data_t own = in_place ? (tacos_data_t){0} : data(mine, (size_t)mcount, mtype);
    if (me != root) {
        push(&l, root, gather, 0, -1, own, sig_bytes((size_t)mcount, mtype));
        return run_list(m, &l, &call, mode, request);
    }
    hold(&l, type);
    for (int r = 0; r < n; r++) {
        size_t c = counts ? (size_t)counts[r] : (size_t)count;
        tacos_data_t d = block_of(all, 0, c, type);
        d.buf = (char *)all + (ptrdiff_t)(displs ? (size_t)displs[r] : (size_t)r * c) * d.extent;
        if (r != root)
            push(&l, r, !gather, 0, -1, d, sig_bytes(c, type));
        else if (!in_place)
            copy(&l, gather ? own : d, gather ? d : own);
    }
    return run_list(m, &l, &call, mode, request);
}

static int textbook_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(1, sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype, root, comm,
                       MCA_COLL_BASE_TAG_GATHER, module, mode, info, request);
}

static int textbook_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *displs,
                            struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(1, sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype, root, comm,
                       MCA_COLL_BASE_TAG_GATHERV, module, mode, info, request);
}

static int textbook_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(0, rbuf, rcount, rdtype, sbuf, NULL, NULL, scount, sdtype, root, comm,
                       MCA_COLL_BASE_TAG_SCATTER, module, mode, info, request);
}

static int textbook_scatterv(const void *sbuf, const int *scounts, const int *displs,
                             struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(0, rbuf, rcount, rdtype, sbuf, scounts, displs, 0, sdtype, root, comm,
                       MCA_COLL_BASE_TAG_SCATTERV, module, mode, info, request);
}

/* Allgather(v): every rank sends its block to every other. */
static int allgather_list(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *displs, int rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          int tag, TB_ARGS)
{
    TB_M;
    BYTES(comm, ALLGATHER);
    x.tag = tag;
    int in_place = sbuf == MPI_IN_PLACE;
    hold(&l, rdtype);
    tacos_data_t mine = {0};
    for (int pass = 0; pass < 2; pass++) /* own block first: what the sends read */
        for (int r = 0; r < n; r++) {
            size_t c = rcounts ? (size_t)rcounts[r] : (size_t)rcount;
            tacos_data_t d = block_of(rbuf, 0, c, rdtype);
            d.buf = (char *)rbuf + (ptrdiff_t)(displs ? (size_t)displs[r] : (size_t)r * c) * d.extent;
            if (pass == 0 && r == me) {
                mine = in_place ? d : data(sbuf, (size_t)scount, sdtype);
                if (!in_place)
                    hold(&l, sdtype), copy(&l, mine, d);
            } else if (pass == 1 && r != me) {
                push(&l, r, 1, 0, -1, mine, sig_bytes(mine.count, (struct ompi_datatype_t *)mine.type));
                push(&l, r, 0, 0, -1, d, sig_bytes(c, rdtype));
            }
        }
    return run_list(m, &l, &call, mode, request);
}

static int textbook_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    return allgather_list(sbuf, scount, sdtype, rbuf, NULL, NULL, rcount, rdtype, comm,
                          MCA_COLL_BASE_TAG_ALLGATHER, module, mode, info, request);
}

static int textbook_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *displs,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               TB_ARGS)
{
    return allgather_list(sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype, comm,
                          MCA_COLL_BASE_TAG_ALLGATHERV, module, mode, info, request);
}

/* Alltoall(v, w): block j of every rank's input to rank j, in pairwise
 * order; with MPI_IN_PLACE the input is a copy of rbuf taken first.  Block
 * displacements in bytes (w) or in extents of the type. */
static int alltoall_list(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *const *stypes, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *const *rtypes, int w,
                         struct ompi_communicator_t *comm, int tag, TB_ARGS)
{
    TB_M;
    BYTES(comm, ALLTOALL);
    x.tag = tag;
    int in_place = sbuf == MPI_IN_PLACE, nt = w ? n : 1;
    ptrdiff_t lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
#define DISP(d, i, t) (w ? (ptrdiff_t)(d)[i] : (ptrdiff_t)(d)[i] * data(NULL, 0, t).extent)
    for (int i = 0; i < nt; i++) {
        hold(&l, rtypes[i]);
        if (!in_place)
            hold(&l, stypes[i]);
    }
    if (in_place) { /* the input: what rbuf holds now, as rbuf's layout */
        for (int i = 0; i < n; i++)
            span_of((size_t)rcounts[i], DISP(rdispls, i, rtypes[w ? i : 0]), rtypes[w ? i : 0],
                    &lo, &hi);
        sbuf = hi > lo ? raw_copy(&l, rbuf, lo, hi) : rbuf;
        scounts = rcounts, sdispls = rdispls, stypes = rtypes;
    }
    for (int s = 0; s < n; s++) {
        int to = (me + s) % n, from = (me - s + n) % n;
        struct ompi_datatype_t *st = stypes[w ? to : 0], *rt = rtypes[w ? from : 0];
        tacos_data_t out = data((const char *)sbuf + DISP(sdispls, to, st), (size_t)scounts[to], st);
        tacos_data_t in = data((char *)rbuf + DISP(rdispls, from, rt), (size_t)rcounts[from], rt);
        if (s == 0) {
            if (!in_place)
                copy(&l, out, in);
            continue;
        }
        push(&l, from, 0, 0, -1, in, sig_bytes(in.count, rt));
        push(&l, to, 1, 0, -1, out, sig_bytes(out.count, st));
    }
#undef DISP
    return run_list(m, &l, &call, mode, request);
}

/* Alltoall as Alltoallv with equal counts (the int arrays live for the call only:
 * run_list copies the messages) */
static int textbook_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, TB_ARGS)
{
    int n = ompi_comm_size(comm), *v = malloc(4 * (size_t)n * sizeof *v);
    if (!v)
        return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < n; i++)
        v[i] = scount, v[n + i] = i * scount, v[2 * n + i] = rcount, v[3 * n + i] = i * rcount;
    int rc = alltoall_list(sbuf, v, v + n, &sdtype, rbuf, v + 2 * n, v + 3 * n, &rdtype, 0, comm,
                           MCA_COLL_BASE_TAG_ALLTOALL, module, mode, info, request);
    free(v);
    return rc;
}

static int textbook_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                              struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *rdispls, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    return alltoall_list(sbuf, scounts, sdispls, &sdtype, rbuf, rcounts, rdispls, &rdtype, 0, comm,
                         MCA_COLL_BASE_TAG_ALLTOALLV, module, mode, info, request);
}

static int textbook_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                              struct ompi_datatype_t *const *sdtypes, void *rbuf,
                              const int *rcounts, const int *rdispls,
                              struct ompi_datatype_t *const *rdtypes,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    return alltoall_list(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, 1,
                         comm, MCA_COLL_BASE_TAG_ALLTOALLW, module, mode, info, request);
}

/* The chain 0 -> 1 -> ... -> n-1 combining into w (x_0 op ... op x_me at
 * rank me once its receive is combined); returns the index of this rank's
 * last message in it (-1 none). */
static int chain(list_t *l, int me, int n, tacos_data_t w, size_t units)
{
    int got = me > 0 ? push(l, me - 1, 0, 1, -1, w, units) : -1;
    return me < n - 1 ? push(l, me + 1, 1, 0, got, w, units) : got;
}

/* The chain into rbuf, then rank n-1 sends the result to every rank. */
static int textbook_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, ALLREDUCE, dtype, op);
    tacos_data_t w = data(rbuf, (size_t)count, dtype);
    if (sbuf != MPI_IN_PLACE)
        copy(&l, data(sbuf, (size_t)count, dtype), w);
    int last = chain(&l, me, n, w, (size_t)count);
    for (int r = 0; r < n - 1; r++)
        if (me == n - 1 || r == me)
            push(&l, me == n - 1 ? r : n - 1, me == n - 1, 0, last, w, (size_t)count);
    return run_list(m, &l, &call, mode, request);
}

/* The chain (into rbuf at the root, a copy elsewhere), then to the root. */
static int textbook_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, REDUCE, dtype, op);
    tacos_data_t w = me == root ? data(rbuf, (size_t)count, dtype) : work_like(&l, (size_t)count, dtype);
    if (sbuf != MPI_IN_PLACE || me != root)
        copy(&l, data(sbuf, (size_t)count, dtype), w);
    int last = chain(&l, me, n, w, (size_t)count);
    if (root != n - 1 && (me == root || me == n - 1))
        push(&l, me == root ? n - 1 : root, me == n - 1, 0, last, w, (size_t)count);
    return run_list(m, &l, &call, mode, request);
}

/* Rank j combines block j of every rank's input in rank order: rank n-1's
 * first, then src op that for n-2 ... 0 (messages to itself included). */
static int reduce_scatter_list(const void *sbuf, void *rbuf, const int *rcounts, int rcount,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, int tag, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, REDUCE_SCATTER, dtype, op);
    x.tag = tag;
    size_t total = 0, at = 0, mine = rcounts ? (size_t)rcounts[me] : (size_t)rcount;
    for (int r = 0; r < n; r++)
        total += rcounts ? (size_t)rcounts[r] : (size_t)rcount;
    tacos_data_t in = data(sbuf, total, dtype);
    if (sbuf == MPI_IN_PLACE) { /* rbuf holds the input, which the result overwrites */
        in = work_like(&l, total, dtype);
        copy(&l, data(rbuf, total, dtype), in);
    }
    for (int r = 0; r < n; r++) {
        size_t c = rcounts ? (size_t)rcounts[r] : (size_t)rcount;
        tacos_data_t b = in;
        b.buf = (char *)in.buf + (ptrdiff_t)at * in.extent, b.count = c;
        push(&l, r, 1, 0, -1, b, c);
        at += c;
    }
    tacos_data_t w = data(rbuf, mine, dtype);
    for (int r = n - 1, prev = -1; r >= 0; r--)
        prev = push(&l, r, 0, r < n - 1, prev, w, mine);
    return run_list(m, &l, &call, mode, request);
}

static int textbook_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, TB_ARGS)
{
    return reduce_scatter_list(sbuf, rbuf, rcounts, 0, dtype, op, comm,
                               MCA_COLL_BASE_TAG_REDUCE_SCATTER, module, mode, info, request);
}

static int textbook_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm, TB_ARGS)
{
    return reduce_scatter_list(sbuf, rbuf, NULL, rcount, dtype, op, comm,
                               MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK, module, mode, info, request);
}

/* Scan: the chain into rbuf. */
static int textbook_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, SCAN, dtype, op);
    tacos_data_t w = data(rbuf, (size_t)count, dtype);
    if (sbuf != MPI_IN_PLACE)
        copy(&l, data(sbuf, (size_t)count, dtype), w);
    chain(&l, me, n, w, (size_t)count);
    return run_list(m, &l, &call, mode, request);
}

/* Exscan: rank me-1's partial arrives twice, as the result (rbuf) and
 * combined into a copy of the input, which goes on to me+1 (twice). */
static int textbook_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, EXSCAN, dtype, op);
    size_t u = (size_t)count;
    tacos_data_t t = work_like(&l, u, dtype);
    copy(&l, data(sbuf == MPI_IN_PLACE ? rbuf : sbuf, u, dtype), t);
    int got = -1;
    if (me > 0) {
        push(&l, me - 1, 0, 0, -1, data(rbuf, u, dtype), u);
        got = me < n - 1 ? push(&l, me - 1, 0, 1, -1, t, u) : -1;
    }
    for (int twice = 0; me < n - 1 && twice < (me + 1 < n - 1 ? 2 : 1); twice++)
        push(&l, me + 1, 1, 0, got, t, u); /* rank n-1 only wants the result */
    return run_list(m, &l, &call, mode, request);
}

static int tacos_reduce_local(const void *inbuf, void *inoutbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              mca_coll_base_module_t *module)
{
    (void)module;
    ompi_op_reduce(op, (void *)inbuf, inoutbuf, count, dtype);
    return OMPI_SUCCESS;
}


static int allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(comm, ALLREDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLREDUCE, 0, why, p, allreduce, sbuf, rbuf, count, dtype, op, comm);
    tacos_data_t s = data(sbuf, count, dtype), r = data(rbuf, count, dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, 0, NULL, 0};
    return RUN(m, p, &a, dtype, NULL);
}

static int allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                     int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    CALL(comm, ALLGATHER, NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLGATHER, 0, why, p, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype,
         comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    int in_place = sbuf == MPI_IN_PLACE;
    tacos_data_t s = in_place ? (tacos_data_t){0} : data(sbuf, (size_t)scount, sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * (size_t)n, rdtype);
    tacos_args_t a = {in_place ? NULL : &s, &r, 0, NULL, 0};
    return RUN(m, p, &a, rdtype, in_place ? NULL : sdtype);
}

static int alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                    int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    size_t n = (size_t)ompi_comm_size(comm);
    CALL(comm, ALLTOALL, NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * n, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLTOALL, 0, why, p, alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype,
         comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    int in_place = sbuf == MPI_IN_PLACE;
    tacos_data_t s = in_place ? (tacos_data_t){0} : data(sbuf, (size_t)scount * n, sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * n, rdtype);
    tacos_args_t a = {in_place ? NULL : &s, &r, 0, NULL, 0};
    return RUN(m, p, &a, rdtype, in_place ? NULL : sdtype);
}

static int bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(comm, BCAST, NULL);
    const char *why = view_bytes(dtype, (size_t)count, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_BROADCAST, root, why, p, bcast, buf, count, dtype, root, comm);
    tacos_data_t d = data(buf, count, dtype);
    tacos_args_t a = {NULL, &d, root, NULL, 0};
    return RUN(m, p, &a, dtype, NULL);
}

static int reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                  struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                  mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(comm, REDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE, root, why, p, reduce, sbuf, rbuf, count, dtype, op, root, comm);
    tacos_data_t s = data(sbuf, count, dtype), r = data(rbuf, count, dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, root, NULL, 0};
    return RUN(m, p, &a, dtype, NULL);
}

static int reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                                MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    CALL(comm, REDUCE_SCATTER_BLOCK, op);
    const char *why = view_elements(dtype, (size_t)rcount * (size_t)n, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, why, p, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op,
         comm);
    tacos_data_t s = data(sbuf, (size_t)rcount * (size_t)n, dtype),
                 r = data(rbuf, (size_t)rcount * (size_t)n, dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, 0, NULL, (size_t)rcount};
    return RUN(m, p, &a, dtype, NULL);
}

static int reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                          MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    size_t total = 0;
    for (int r = 0; r < n; r++)
        total += (size_t)rcounts[r];
    CALL(comm, REDUCE_SCATTER, op);
    const char *why = view_elements(dtype, total, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, why, p, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    tacos_data_t s = data(sbuf, total, dtype), r = data(rbuf, total, dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, 0, rcounts, 0};
    return RUN(m, p, &a, dtype, NULL);
}

/* The collectives no schedule serves: the previous component's, or the
 * textbook program where there is none. */
#define PASSED "served by the previous component"

/* MPI_Barrier: a blocking collective is also where the keys nonblocking
 * calls found unplanned get planned. */
static int barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int rc = mode == BLOCKING ? tacos_comm_prepare(m->core) : OMPI_SUCCESS;
    if (rc != OMPI_SUCCESS)
        return rc;
    FALLBACK(m, barrier, PASSED, comm);
}

#define UNPAREN(...) __VA_ARGS__
/* name in three modes: PARAMS the collective's parameters, ARGS the names */
#define PASS_THROUGH(name, PARAMS, ARGS)                                                     \
    static int name(UNPAREN PARAMS, mca_coll_base_module_t *module, MODE_ARGS)               \
    {                                                                                        \
        mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;                      \
        FALLBACK(m, name, PASSED, UNPAREN ARGS);                                             \
    }                                                                                        \
    static int tacos_##name(UNPAREN PARAMS, MOD)                                             \
    {                                                                                        \
        return name(UNPAREN ARGS, module, BLOCKING, NULL, NULL);                             \
    }                                                                                        \
    static int tacos_i##name(UNPAREN PARAMS, REQ, MOD)                                       \
    {                                                                                        \
        return name(UNPAREN ARGS, module, NONBLOCKING, NULL, request);                       \
    }                                                                                        \
    static int tacos_##name##_init(UNPAREN PARAMS, INFO, REQ, MOD)                           \
    {                                                                                        \
        return name(UNPAREN ARGS, module, PERSISTENT, info, request);                        \
    }

PASS_THROUGH(gather, (const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                      DT *rdtype, int root, COMM),
             (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm))
PASS_THROUGH(gatherv, (const void *sbuf, int scount, DT *sdtype, void *rbuf, const int *rcounts,
                       const int *displs, DT *rdtype, int root, COMM),
             (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm))
PASS_THROUGH(scatter, (const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                       DT *rdtype, int root, COMM),
             (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm))
PASS_THROUGH(scatterv, (const void *sbuf, const int *scounts, const int *displs, DT *sdtype,
                        void *rbuf, int rcount, DT *rdtype, int root, COMM),
             (sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm))
PASS_THROUGH(allgatherv, (const void *sbuf, int scount, DT *sdtype, void *rbuf,
                          const int *rcounts, const int *displs, DT *rdtype, COMM),
             (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm))
PASS_THROUGH(alltoallv, (const void *sbuf, const int *scounts, const int *sdispls, DT *sdtype,
                         void *rbuf, const int *rcounts, const int *rdispls, DT *rdtype, COMM),
             (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm))
PASS_THROUGH(alltoallw, (const void *sbuf, const int *scounts, const int *sdispls,
                         DT *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
                         DT *const *rdtypes, COMM),
             (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm))
PASS_THROUGH(scan, (const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM),
             (sbuf, rbuf, count, dtype, op, comm))
PASS_THROUGH(exscan, (const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM),
             (sbuf, rbuf, count, dtype, op, comm))

/* ---- the slots: each collective in three modes ------------------------------------ */

#define B BLOCKING, NULL, NULL
#define NB NONBLOCKING, NULL, request
#define P PERSISTENT, info, request

static int tacos_allreduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM, MOD)
{ return allreduce(sbuf, rbuf, count, dtype, op, comm, module, B); }
static int tacos_iallreduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM, REQ, MOD)
{ return allreduce(sbuf, rbuf, count, dtype, op, comm, module, NB); }
static int tacos_allreduce_init(const void *sbuf, void *rbuf, int count, DT *dtype, OP, COMM, INFO,
                                REQ, MOD)
{ return allreduce(sbuf, rbuf, count, dtype, op, comm, module, P); }

static int tacos_allgather(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                             DT *rdtype, COMM, MOD)
{ return allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, B); }
static int tacos_iallgather(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                            DT *rdtype, COMM, REQ, MOD)
{ return allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, NB); }
static int tacos_allgather_init(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                                DT *rdtype, COMM, INFO, REQ, MOD)
{ return allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, P); }

static int tacos_alltoall(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                          DT *rdtype, COMM, MOD)
{ return alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, B); }
static int tacos_ialltoall(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                           DT *rdtype, COMM, REQ, MOD)
{ return alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, NB); }
static int tacos_alltoall_init(const void *sbuf, int scount, DT *sdtype, void *rbuf, int rcount,
                               DT *rdtype, COMM, INFO, REQ, MOD)
{ return alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, P); }

static int tacos_barrier(COMM, MOD) { return barrier(comm, module, B); }
static int tacos_ibarrier(COMM, REQ, MOD) { return barrier(comm, module, NB); }
static int tacos_barrier_init(COMM, INFO, REQ, MOD) { return barrier(comm, module, P); }

static int tacos_bcast(void *buf, int count, DT *dtype, int root, COMM, MOD)
{ return bcast(buf, count, dtype, root, comm, module, B); }
static int tacos_ibcast(void *buf, int count, DT *dtype, int root, COMM, REQ, MOD)
{ return bcast(buf, count, dtype, root, comm, module, NB); }
static int tacos_bcast_init(void *buf, int count, DT *dtype, int root, COMM, INFO, REQ, MOD)
{ return bcast(buf, count, dtype, root, comm, module, P); }

static int tacos_reduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, int root, COMM,
                          MOD)
{ return reduce(sbuf, rbuf, count, dtype, op, root, comm, module, B); }
static int tacos_ireduce(const void *sbuf, void *rbuf, int count, DT *dtype, OP, int root, COMM,
                         REQ, MOD)
{ return reduce(sbuf, rbuf, count, dtype, op, root, comm, module, NB); }
static int tacos_reduce_init(const void *sbuf, void *rbuf, int count, DT *dtype, OP, int root,
                             COMM, INFO, REQ, MOD)
{ return reduce(sbuf, rbuf, count, dtype, op, root, comm, module, P); }

static int tacos_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, DT *dtype, OP,
                                        COMM, MOD)
{ return reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module, B); }
static int tacos_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, DT *dtype, OP,
                                       COMM, REQ, MOD)
{ return reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module, NB); }
static int tacos_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount, DT *dtype,
                                           OP, COMM, INFO, REQ, MOD)
{ return reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module, P); }

static int tacos_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, DT *dtype, OP,
                                  COMM, MOD)
{ return reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module, B); }
static int tacos_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, DT *dtype, OP,
                                 COMM, REQ, MOD)
{ return reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module, NB); }
static int tacos_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts, DT *dtype,
                                     OP, COMM, INFO, REQ, MOD)
{ return reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module, P); }
