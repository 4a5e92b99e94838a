/*
 * Module: the Open MPI side of a communicator's coll/tacos state (the core's
 * tacos_comm_t does the rest): the previous component's functions, the
 * core's callbacks over them and the PML, the PML transport for the
 * executor, Open MPI's datatype and op engines, and the module slots.
 * Every case the core does not serve goes to the previous component.
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "coll_tacos.h"

#define C (&mca_coll_tacos_component)
#define TRACE(level, ...) opal_output_verbose(level, C->output, "coll:tacos: " __VA_ARGS__)

/* ---- module object -------------------------------------------------------- */

static void module_construct(mca_coll_tacos_module_t *m)
{
    memset((char *)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
}

static void module_destruct(mca_coll_tacos_module_t *m)
{
    mca_coll_base_module_t *prev[] = {m->prev_allreduce_module, m->prev_allgather_module,
                                      m->prev_bcast_module, m->prev_reduce_module,
                                      m->prev_reduce_scatter_module,
                                      m->prev_reduce_scatter_block_module};
    for (size_t i = 0; i < sizeof prev / sizeof prev[0]; i++)
        if (prev[i])
            OBJ_RELEASE(prev[i]);
    tacos_comm_free(m->core);
}

OBJ_CLASS_INSTANCE(mca_coll_tacos_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

#define SAVE(m, comm, name)                                                                  \
    do {                                                                                     \
        if (!(comm)->c_coll->coll_##name || !(comm)->c_coll->coll_##name##_module) {         \
            TRACE(1, "no previous component provides " #name "; declining");                 \
            return OMPI_ERROR;                                                               \
        }                                                                                    \
        (m)->prev_##name = (comm)->c_coll->coll_##name;                                      \
        (m)->prev_##name##_module = (comm)->c_coll->coll_##name##_module;                    \
        OBJ_RETAIN((m)->prev_##name##_module);                                               \
    } while (0)

static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    SAVE(m, comm, allreduce);
    SAVE(m, comm, allgather);
    SAVE(m, comm, bcast);
    SAVE(m, comm, reduce);
    SAVE(m, comm, reduce_scatter);
    SAVE(m, comm, reduce_scatter_block);
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
    m->super.coll_allreduce = mca_coll_tacos_allreduce;
    m->super.coll_allgather = mca_coll_tacos_allgather;
    m->super.coll_bcast = mca_coll_tacos_bcast;
    m->super.coll_reduce = mca_coll_tacos_reduce;
    m->super.coll_reduce_scatter = mca_coll_tacos_reduce_scatter;
    m->super.coll_reduce_scatter_block = mca_coll_tacos_reduce_scatter_block;
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
    mca_coll_tacos_module_t *module;
    int error; /* the first MPI error of the transport (the executor's own
                * codes are TACOS_ERR_*: another space) */
} pml_ctx_t;

static int failed(pml_ctx_t *c, int rc)
{
    if (rc != OMPI_SUCCESS && !c->error)
        c->error = rc;
    return rc != OMPI_SUCCESS;
}

static void *recv_space(void *ctx, size_t bytes)
{
    return tacos_comm_recv_scratch(((pml_ctx_t *)ctx)->module->core, bytes);
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

/* ---- collectives ------------------------------------------------------------- */

/* A call's context and what the core needs of it. */
#define CALL(m, comm, name, op)                                                              \
    pml_ctx_t x = {comm, MCA_COLL_BASE_TAG_##name, &ompi_mpi_byte.dt, 0, op, m, OMPI_SUCCESS}; \
    tacos_call_t call = {{&x, pml_isend, pml_irecv, pml_wait_some, pml_test_some,            \
                          pml_abandon, op_reduce, recv_space},                                \
                         {0, 0, 0, 0},                                                        \
                         dt_contiguous,                                                       \
                         dt_pack,                                                             \
                         dt_unpack,                                                           \
                         OMPI_ERR_OUT_OF_RESOURCE,                                            \
                         OMPI_ERROR,                                                          \
                         &x.error}

#define FALLBACK(m, name, why, ...)                                                          \
    do {                                                                                     \
        TRACE(10, #name ": fallback: %s", why);                                              \
        return (m)->prev_##name(__VA_ARGS__, (m)->prev_##name##_module);                     \
    } while (0)

/* An empty signature moves nothing on any rank (count 0, or a type of size
 * 0): done, with no message.  Else plans; returns an error, falls back, or
 * goes on with p. */
#define PLAN(m, coll, root, why, p, name, ...)                                               \
    do {                                                                                     \
        if (!(why) && call.v.bytes == 0)                                                     \
            return OMPI_SUCCESS;                                                             \
        int plan_rc_ = tacos_comm_plan((m)->core, coll, root, call.v.bytes, &(why), &(p));   \
        if (plan_rc_ != OMPI_SUCCESS)                                                        \
            return plan_rc_;                                                                 \
        if (!(p))                                                                            \
            FALLBACK(m, name, why, __VA_ARGS__);                                             \
    } while (0)

int mca_coll_tacos_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(m, comm, ALLREDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLREDUCE, 0, why, p, allreduce, sbuf, rbuf, count, dtype, op, comm);
    tacos_data_t s = data(sbuf, count, dtype), r = data(rbuf, count, dtype);
    return tacos_run_allreduce(m->core, p, &call, sbuf == MPI_IN_PLACE ? NULL : &s, &r);
}

int mca_coll_tacos_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    CALL(m, comm, ALLGATHER, NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLGATHER, 0, why, p, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype,
         comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    tacos_data_t s = sbuf == MPI_IN_PLACE ? (tacos_data_t){0} : data(sbuf, (size_t)scount, sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * (size_t)n, rdtype);
    return tacos_run_allgather(m->core, p, &call, sbuf == MPI_IN_PLACE ? NULL : &s, &r);
}

int mca_coll_tacos_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(m, comm, BCAST, NULL);
    const char *why = view_bytes(dtype, (size_t)count, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_BROADCAST, root, why, p, bcast, buf, count, dtype, root, comm);
    tacos_data_t d = data(buf, count, dtype);
    return tacos_run_bcast(m->core, p, &call, &d, root);
}

int mca_coll_tacos_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(m, comm, REDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE, root, why, p, reduce, sbuf, rbuf, count, dtype, op, root, comm);
    tacos_data_t s = data(sbuf, count, dtype), r = data(rbuf, count, dtype);
    return tacos_run_reduce(m->core, p, &call, sbuf == MPI_IN_PLACE ? NULL : &s, &r, root);
}

int mca_coll_tacos_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    CALL(m, comm, REDUCE_SCATTER_BLOCK, op);
    const char *why = view_elements(dtype, (size_t)rcount * (size_t)n, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, why, p, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op,
         comm);
    tacos_data_t s = data(sbuf, (size_t)rcount * (size_t)n, dtype),
                 r = data(rbuf, (size_t)rcount * (size_t)n, dtype);
    return tacos_run_reduce_scatter(m->core, p, &call, sbuf == MPI_IN_PLACE ? NULL : &s, &r,
                                    NULL, (size_t)rcount);
}

int mca_coll_tacos_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    size_t total = 0;
    for (int r = 0; r < n; r++)
        total += (size_t)rcounts[r];
    CALL(m, comm, REDUCE_SCATTER, op);
    const char *why = view_elements(dtype, total, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, why, p, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    tacos_data_t s = data(sbuf, total, dtype), r = data(rbuf, total, dtype);
    return tacos_run_reduce_scatter(m->core, p, &call, sbuf == MPI_IN_PLACE ? NULL : &s, &r,
                                    rcounts, 0);
}
