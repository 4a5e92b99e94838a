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

/* The previous component's function for a slot.  The blocking ones are
 * required (fall-backs and the core's own collectives); where nothing
 * provides a nonblocking or persistent one, coll/tacos leaves it empty. */
#define SAVE(m, comm, name, required)                                                        \
    do {                                                                                     \
        if (!(comm)->c_coll->coll_##name || !(comm)->c_coll->coll_##name##_module) {         \
            TRACE(1, "no previous component provides " #name "%s", required ? "; declining" : ""); \
            if (required)                                                                    \
                return OMPI_ERROR;                                                           \
            (m)->super.coll_##name = NULL;                                                   \
            break;                                                                           \
        }                                                                                    \
        (m)->prev_##name = (comm)->c_coll->coll_##name;                                      \
        (m)->prev_##name##_module = (comm)->c_coll->coll_##name##_module;                    \
        OBJ_RETAIN((m)->prev_##name##_module);                                               \
    } while (0)

#define SAVE_OPTIONAL(name) SAVE(m, comm, i##name, 0); SAVE(m, comm, name##_init, 0);

static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    SAVE(m, comm, allreduce, 1);
    SAVE(m, comm, allgather, 1);
    SAVE(m, comm, bcast, 1);
    SAVE(m, comm, reduce, 1);
    SAVE(m, comm, reduce_scatter, 1);
    SAVE(m, comm, reduce_scatter_block, 1);
    SAVE(m, comm, barrier, 1);
    SAVE(m, comm, alltoall, 1);
    SAVE_OPTIONAL(alltoall)
    SAVE_OPTIONAL(allreduce)
    SAVE_OPTIONAL(allgather)
    SAVE_OPTIONAL(bcast)
    SAVE_OPTIONAL(reduce)
    SAVE_OPTIONAL(reduce_scatter)
    SAVE_OPTIONAL(reduce_scatter_block)
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
    return m->prev_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                             m->comm, m->prev_allreduce_module);
}

static int core_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    mca_coll_tacos_module_t *m = ctx;
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
    if (C->priority <= 0 || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2)
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

typedef struct mca_coll_tacos_request {
    ompi_request_t super;
    pml_ctx_t x;         /* the transport's context */
    tacos_req_t *op;     /* the core's operation (freed at completion unless persistent) */
    mca_coll_tacos_module_t *module;
    struct ompi_datatype_t *types[2]; /* held while the request lives */
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
    r->super.req_type = OMPI_REQUEST_COLL;
    r->super.req_free = request_free;
    r->super.req_cancel = request_cancel;
    r->super.req_start = request_start;
}

OBJ_CLASS_INSTANCE(mca_coll_tacos_request_t, ompi_request_t, request_construct, NULL);

/* The operations in flight, progressed by whichever thread gets the lock. */
static mca_coll_tacos_request_t *active;
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static int progress_registered;

static void destroy(mca_coll_tacos_request_t *r)
{
    tacos_req_free(r->op);
    for (int i = 0; i < 2; i++)
        if (r->types[i])
            OBJ_RELEASE(r->types[i]);
    if (r->reduce_op)
        OBJ_RELEASE(r->reduce_op);
    OBJ_RELEASE(r->super.req_mpi_object.comm);
    OMPI_REQUEST_FINI(&r->super);
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
    r->super.req_status.MPI_ERROR = rc == OMPI_SUCCESS ? MPI_SUCCESS : ompi_errcode_get_mpi_code(rc);
    if (!r->super.req_persistent) { /* its scratch goes now */
        tacos_req_free(r->op);
        r->op = NULL;
    }
    int free_it = r->free_when_done;
    ompi_request_complete(&r->super, true);
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
    r->super.req_status.MPI_ERROR = MPI_SUCCESS;
    r->super.req_status._cancelled = 0;
    int rc = tacos_req_start(r->op);
    if (rc != OMPI_SUCCESS)
        return rc;
    r->super.req_complete = REQUEST_PENDING;
    r->super.req_state = OMPI_REQUEST_ACTIVE;
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
        if (r->super.req_state == OMPI_REQUEST_ACTIVE && !REQUEST_COMPLETE(&r->super))
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
    if (r->super.req_state == OMPI_REQUEST_ACTIVE && !REQUEST_COMPLETE(&r->super))
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

/* A request for a call of plan p: nonblocking (started now) or persistent. */
static int launch(mca_coll_tacos_module_t *m, const tacos_plan_t *p, const tacos_call_t *call,
                  const tacos_args_t *a, struct ompi_datatype_t *t0, struct ompi_datatype_t *t1,
                  int persistent, ompi_request_t **request)
{
    mca_coll_tacos_request_t *r = OBJ_NEW(mca_coll_tacos_request_t);
    if (!r)
        return OMPI_ERR_OUT_OF_RESOURCE;
    pml_ctx_t *x = call->tp.ctx;
    r->x = *x;
    r->module = m;
    tacos_call_t own = *call;
    own.tp.ctx = &r->x;
    own.error = &r->x.error;
    int rc = tacos_req_new(m->core, p, &own, a, &r->op);
    if (rc != OMPI_SUCCESS) {
        OBJ_RELEASE(r);
        return rc;
    }
    OMPI_REQUEST_INIT(&r->super, persistent);
    r->super.req_mpi_object.comm = x->comm;
    OBJ_RETAIN(x->comm);
    r->types[0] = t0, r->types[1] = t1, r->reduce_op = x->op;
    for (int i = 0; i < 2; i++)
        if (r->types[i])
            OBJ_RETAIN(r->types[i]);
    if (r->reduce_op)
        OBJ_RETAIN(r->reduce_op);
    if (!persistent && (rc = start_one(r)) != OMPI_SUCCESS) {
        destroy(r);
        return rc;
    }
    *request = &r->super;
    return OMPI_SUCCESS;
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

/* The previous component's function in the call's mode. */
#define FALLBACK(m, name, why, ...)                                                          \
    do {                                                                                     \
        TRACE(10, "%s" #name "%s: fallback: %s", mode_prefix[mode], mode_suffix[mode], why); \
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

/* MPI_Barrier: coll/tacos serves none, but a blocking collective is where
 * the keys nonblocking calls found unplanned get planned. */
static int tacos_barrier(COMM, MOD)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int rc = tacos_comm_prepare(m->core);
    return rc != OMPI_SUCCESS ? rc : m->prev_barrier(comm, m->prev_barrier_module);
}

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
