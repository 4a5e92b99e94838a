/*
 * Module: per-communicator state, lazy topology and schedule synthesis with a
 * cross-rank agreement check, the PML transport for the executor, and the
 * collectives.  Every case it cannot serve goes to the previous component.
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
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

/* ---- scratch kept between calls -------------------------------------------- */

/* Bytes of scratch all communicators of the process keep between calls. */
static size_t scratch_kept;

/* A buffer of at least `bytes` in *buf (counted in scratch_kept). */
static int fault(const char *what);
static char *grow(char **buf, size_t *have, size_t bytes)
{
    if (bytes > *have || !*buf) {
        free(*buf);
        __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
        *buf = fault("alloc") ? NULL : malloc(bytes ? bytes : 1);
        *have = *buf ? bytes : 0;
        __atomic_add_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    }
    return *buf;
}

static void drop(char **buf, size_t *have)
{
    free(*buf);
    __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    *buf = NULL;
    *have = 0;
}

/* After a call: the communicator keeps its scratch (no page faults next
 * time) while the process's total stays within coll_tacos_scratch_max_bytes. */
static void release_scratch(mca_coll_tacos_module_t *m, int all)
{
    if (all || __atomic_load_n(&scratch_kept, __ATOMIC_RELAXED) > C->scratch_max) {
        drop(&m->scratch, &m->scratch_bytes);
        drop(&m->recv_scratch, &m->recv_scratch_bytes);
    }
}

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
    release_scratch(m, 1);
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

static int core_max_u64(void *ctx, uint64_t *v, int n)
{
    mca_coll_tacos_module_t *m = ctx;
    return m->prev_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                             m->comm, m->prev_allreduce_module);
}

static int core_probe(void *ctx, tacos_topo_t **out)
{
    return mca_coll_tacos_probed_topology(ctx, out);
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
    tacos_settings_t st = {C->enable,        C->min_bytes,  C->rooted_min_bytes,
                           C->chunks,        C->seed,       C->trials,
                           C->unwind_degree, C->probe,      C->calibrate,
                           C->measure,       C->cache_size, C->topo_file,
                           C->deterministic, C->verbose,    C->dump_dir,
                           "coll_tacos_"};
    tacos_comm_ops_t ops = {m,           ompi_comm_rank(comm), ompi_comm_size(comm),
                            ompi_comm_get_cid(comm), core_max_u64, core_probe,
                            core_log};
    m->comm = comm;
    if (!(m->core = tacos_comm_new(&st, &ops))) {
        OBJ_RELEASE(m);
        return NULL;
    }
    if (C->dump_dir && C->dump_dir[0])
        mca_coll_tacos_dump_dir();
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

typedef struct {
    struct ompi_communicator_t *comm;
    int tag;
    struct ompi_datatype_t *dtype; /* what reductions combine */
    ptrdiff_t shift;               /* the executor's unit i starts shift past element i */
    struct ompi_op_t *op;
    mca_coll_tacos_module_t *module;
    int error; /* the first MPI error of the transport (the executor's own
                * codes are TACOS_ERR_*: another space) */
} pml_ctx_t;

/* Test builds and tests: TACOS_FAULT=RANK:send:N makes the N-th message
 * posted by the process of that MPI_COMM_WORLD rank fail, RANK:alloc:N its
 * N-th scratch allocation. */
static int fault(const char *what)
{
    static int rank = -2, left;
    static char kind[8];
    if (rank == -2) {
        const char *e = getenv("TACOS_FAULT");
        if (!e || sscanf(e, "%d:%7[a-z]:%d", &rank, kind, &left) != 3 ||
            rank != ompi_comm_rank(&ompi_mpi_comm_world.comm))
            rank = -1;
    }
    return rank >= 0 && !strcmp(kind, what) && --left == 0;
}

static int failed(pml_ctx_t *c, int rc)
{
    if (rc != OMPI_SUCCESS && !c->error)
        c->error = rc;
    return rc != OMPI_SUCCESS;
}

static void *recv_space(void *ctx, size_t bytes)
{
    mca_coll_tacos_module_t *m = ((pml_ctx_t *)ctx)->module;
    return grow(&m->recv_scratch, &m->recv_scratch_bytes, bytes);
}

static int pml_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    pml_ctx_t *c = ctx;
    if (fault("send"))
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
    ompi_op_reduce(c->op, (char *)src - c->shift, (char *)dst - c->shift, (int)count, c->dtype);
    return OMPI_SUCCESS;
}

/* ---- the data as schedules see it ------------------------------------------ */

/* A rank's data as `units` elements of `unit`, `unit_ext` bytes apart:
 * - collectives that only move data: the type signature's bytes (unit
 *   MPI_BYTE), cut the same on every rank whatever (count, datatype) each
 *   passes;
 * - reductions: elements of the datatype (MPI wants the same datatype on
 *   every rank there, and Open MPI's predefined ops take predefined types).
 * `bytes`, the signature's size, is equal on every rank and makes every
 * decision.  Whether a rank works in its own buffer or in scratch (packed
 * by Open MPI's datatype engine) is its own affair: no message changes. */
typedef struct {
    struct ompi_datatype_t *unit;
    size_t units, unit_ext, bytes;
    ptrdiff_t shift; /* where element 0's data starts (true lb): the executor
                      * moves [shift + i*ext, shift + (i+1)*ext) for unit i */
} view_t;

static size_t type_size(struct ompi_datatype_t *dtype)
{
    size_t size;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

static const char *too_big(const view_t *v)
{
    return v->bytes > INT_MAX || v->units * v->unit_ext > INT_MAX
               ? "buffer larger than INT_MAX bytes"
               : NULL;
}

static const char *view_bytes(struct ompi_datatype_t *dtype, size_t count, view_t *v)
{
    size_t bytes = count * type_size(dtype);
    *v = (view_t){&ompi_mpi_byte.dt, bytes, 1, bytes, 0};
    return too_big(v);
}

static const char *view_elements(struct ompi_datatype_t *dtype, size_t count,
                                 struct ompi_op_t *op, view_t *v)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    if (!ompi_op_is_commute(op))
        return "non-commutative op";
    if (ext <= 0 || text > ext) /* the same datatype on every rank: the same answer */
        return "datatype whose elements overlap";
    *v = (view_t){dtype, count, (size_t)ext, count * type_size(dtype), tlb};
    return too_big(v);
}

/* buf itself as the units (unit 0's address), or NULL where it must be
 * packed: the signature's bytes in a row, or elements with nothing between
 * or around them (not pair types' padding: that is the caller's). */
static char *direct(const view_t *v, const void *buf, size_t count, struct ompi_datatype_t *dtype)
{
    ptrdiff_t tlb, text;
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    if (!count)
        return (char *)buf;
    if (v->unit == &ompi_mpi_byte.dt)
        return ompi_datatype_is_contiguous_memory_layout(dtype, (int)count) ? (char *)buf + tlb
                                                                            : NULL;
    return tlb == 0 && (size_t)text == v->unit_ext && type_size(dtype) == v->unit_ext &&
                   ompi_datatype_is_contiguous_memory_layout(dtype, (int)count)
               ? (char *)buf
               : NULL;
}

/* Scratch for the units, kept across calls (no page faults); unit 0 at the
 * returned address. */
static char *work_space(mca_coll_tacos_module_t *m, const view_t *v)
{
    char *w = grow(&m->scratch, &m->scratch_bytes, v->units * v->unit_ext);
    return w ? w - v->shift : NULL;
}

/* Between a (buffer, count, datatype) and its units in work. */
static int pack(const view_t *v, const void *buf, size_t count, struct ompi_datatype_t *dtype,
                char *work)
{
    if (v->unit != &ompi_mpi_byte.dt)
        return ompi_datatype_sndrcv(buf, (int)count, dtype, work, (int)count, dtype);
    return ompi_datatype_sndrcv(buf, (int)count, dtype, work, (int)(count * type_size(dtype)),
                                &ompi_mpi_packed.dt);
}

static int unpack(const view_t *v, const char *work, void *buf, size_t count,
                  struct ompi_datatype_t *dtype)
{
    if (v->unit != &ompi_mpi_byte.dt)
        return ompi_datatype_sndrcv(work, (int)count, dtype, buf, (int)count, dtype);
    return ompi_datatype_sndrcv(work, (int)(count * type_size(dtype)), &ompi_mpi_packed.dt, buf,
                                (int)count, dtype);
}

/* ---- running a program -------------------------------------------------------- */

/* Runs the plan p on the units in work, cut into blocks p->off (in units):
 * start + wait on the state cached with the program. */
static int run(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, tacos_coll_t coll,
               const tacos_plan_t *p, char *work, const view_t *v, struct ompi_op_t *op,
               int tag, const tacos_exec_opts_t *opts)
{
    int n = ompi_comm_size(comm);
    pml_ctx_t ctx = {comm, tag, v->unit, v->shift, op, m, OMPI_SUCCESS};
    tacos_transport_t tp = {&ctx,        pml_isend,   pml_irecv, pml_wait_some,
                            pml_test_some, pml_abandon, op_reduce, recv_space};
    TRACE(10, "%s %zu bytes on %d ranks: schedule k=%d, %zu ops", tacos_coll_name(coll), v->bytes,
          n, p->k, p->prog->nops);
    tacos_exec_opts_t o = opts ? *opts : (tacos_exec_opts_t){0};
    o.ordered = tacos_comm_settings(m->core)->deterministic;
    if (o.input)
        o.input = (const char *)o.input + v->shift;
    int rc = tacos_exec_start(p->exec, p->off, work + v->shift, v->unit_ext, &tp, &o);
    if (rc == TACOS_OK)
        rc = tacos_exec_wait(p->exec);
    if (rc == TACOS_OK)
        return OMPI_SUCCESS;
    if (ctx.error) { /* sends abandoned in flight may still read the scratch */
        __atomic_sub_fetch(&scratch_kept, m->scratch_bytes, __ATOMIC_RELAXED);
        m->scratch = NULL;
        m->scratch_bytes = 0;
    }
    const char *what = ctx.error ? "a message failed"
                       : rc == TACOS_ERR_NOMEM ? "out of memory for the executor"
                                               : "the schedule cannot progress (a coll/tacos bug)";
    int ret = ctx.error ? ctx.error : rc == TACOS_ERR_NOMEM ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_ERROR;
    opal_output(0, "coll:tacos: %s of %zu bytes on rank %d of %d: %s (%d); the other ranks may "
                   "wait for this one until the error handler ends the job",
                tacos_coll_name(coll), v->bytes, ompi_comm_rank(comm), n, what, ret);
    return ret;
}

/* Blocks of counts[r] units (or `each` when counts is NULL), into off[0..n]
 * (the cached plan's array: no allocation per call). */
static void sized_blocks(size_t *off, int n, const int *counts, size_t each)
{
    off[0] = 0;
    for (int r = 0; r < n; r++)
        off[r + 1] = off[r] + (counts ? (size_t)counts[r] : each);
}

static void even_blocks(size_t *off, int n, size_t units)
{
    for (int r = 0; r <= n; r++)
        off[r] = units * (size_t)r / (size_t)n;
}

#define FALLBACK(m, name, why, ...)                                                          \
    do {                                                                                     \
        TRACE(10, #name ": fallback: %s", why);                                              \
        return (m)->prev_##name(__VA_ARGS__, (m)->prev_##name##_module);                     \
    } while (0)

/* Plans; returns an error, falls back, or goes on with p. */
#define PLAN(m, coll, root, v, why, p, name, ...)                                            \
    do {                                                                                     \
        int plan_rc_ = tacos_comm_plan((m)->core, coll, root, (v).bytes, &(why), &(p));      \
        if (plan_rc_ != OMPI_SUCCESS)                                                        \
            return plan_rc_;                                                                 \
        if (!(p))                                                                            \
            FALLBACK(m, name, why, __VA_ARGS__);                                             \
    } while (0)

/* ---- collectives ------------------------------------------------------------- */

/* An empty signature moves nothing on any rank (count 0, or a type of size
 * 0): done, with no message. */
#define NOTHING_TO_DO(v)                                                                     \
    do {                                                                                     \
        if ((v).bytes == 0)                                                                  \
            return OMPI_SUCCESS;                                                             \
    } while (0)

int mca_coll_tacos_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    view_t v;
    const char *why = view_elements(dtype, (size_t)count, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    int n = ompi_comm_size(comm), rc;
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLREDUCE, 0, v, why, p, allreduce, sbuf, rbuf, count, dtype, op, comm);
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    char *out = direct(&v, rbuf, (size_t)count, dtype), *src = direct(&v, in, (size_t)count, dtype);
    even_blocks(p->off, n, v.units);
    if (out && src) { /* the input read in place; rbuf gets each chunk when first written */
        tacos_exec_opts_t opts = {.input = src};
        rc = run(m, comm, TACOS_ALLREDUCE, p, out, &v, op, MCA_COLL_BASE_TAG_ALLREDUCE,
                 src == out ? NULL : &opts);
    } else { /* through scratch */
        char *work = work_space(m, &v);
        rc = !work ? OMPI_ERR_OUT_OF_RESOURCE : pack(&v, in, (size_t)count, dtype, work);
        if (rc == OMPI_SUCCESS)
            rc = run(m, comm, TACOS_ALLREDUCE, p, work, &v, op,
                     MCA_COLL_BASE_TAG_ALLREDUCE, NULL);
        if (rc == OMPI_SUCCESS)
            rc = unpack(&v, work, rbuf, (size_t)count, dtype);
    }
    release_scratch(m, 0);
    return rc;
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} copy_args_t;

static void copy_block(void *arg)
{
    copy_args_t *c = arg;
    if (c->bytes)
        memcpy(c->dst, c->src, c->bytes);
}

int mca_coll_tacos_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    view_t v;
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLGATHER, 0, v, why, p, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    size_t block = v.bytes / (size_t)n;
    ptrdiff_t lb, rext;
    ompi_datatype_get_extent(rdtype, &lb, &rext);
    char *out = direct(&v, rbuf, (size_t)rcount * (size_t)n, rdtype);
    char *work = out ? out : work_space(m, &v);
    const char *own = sbuf == MPI_IN_PLACE ? NULL : direct(&v, sbuf, (size_t)scount, sdtype);
    sized_blocks(p->off, n, NULL, block);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    /* the own block: sent straight from sbuf and copied into place while
     * the first messages travel, or packed into place first */
    copy_args_t copy = {work + block * (size_t)me, own, block};
    tacos_exec_opts_t opts = {.own_src = own, .own_block = me, .overlap = copy_block,
                              .overlap_arg = &copy};
    if (sbuf != MPI_IN_PLACE && !own)
        rc = pack(&v, sbuf, (size_t)scount, sdtype, work + block * (size_t)me);
    else if (sbuf == MPI_IN_PLACE && !out)
        rc = pack(&v, (char *)rbuf + (ptrdiff_t)me * rcount * rext, (size_t)rcount, rdtype,
                  work + block * (size_t)me);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_ALLGATHER, p, work, &v, NULL, MCA_COLL_BASE_TAG_ALLGATHER,
                 own ? &opts : NULL);
    if (rc == OMPI_SUCCESS && !out)
        rc = unpack(&v, work, rbuf, (size_t)rcount * (size_t)n, rdtype);
    release_scratch(m, 0);
    return rc;
}

int mca_coll_tacos_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int me = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    view_t v;
    const char *why = view_bytes(dtype, (size_t)count, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const tacos_plan_t *p;
    PLAN(m, TACOS_BROADCAST, root, v, why, p, bcast, buf, count, dtype, root, comm);
    char *at = direct(&v, buf, (size_t)count, dtype), *work = at ? at : work_space(m, &v);
    even_blocks(p->off, ompi_comm_size(comm), v.units);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (!at && me == root)
        rc = pack(&v, buf, (size_t)count, dtype, work);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_BROADCAST, p, work, &v, NULL, MCA_COLL_BASE_TAG_BCAST,
                 NULL);
    if (rc == OMPI_SUCCESS && !at && me != root)
        rc = unpack(&v, work, buf, (size_t)count, dtype);
    release_scratch(m, 0);
    return rc;
}

int mca_coll_tacos_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int me = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    view_t v;
    const char *why = view_elements(dtype, (size_t)count, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE, root, v, why, p, reduce, sbuf, rbuf, count, dtype, op, root, comm);
    /* the root reduces in rbuf where it can, the others in scratch; the
     * input is read in place where it can */
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    char *src = direct(&v, in, (size_t)count, dtype);
    char *out = me == root ? direct(&v, rbuf, (size_t)count, dtype) : NULL;
    char *work = out && src ? out : work_space(m, &v);
    even_blocks(p->off, ompi_comm_size(comm), v.units);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    tacos_exec_opts_t opts = {.input = src, .keep = me == root ? TACOS_KEEP_ALL : TACOS_KEEP_NONE};
    if (!src) /* packed into the work buffer (else read in place, or already there) */
        rc = pack(&v, in, (size_t)count, dtype, work);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_REDUCE, p, work, &v, op, MCA_COLL_BASE_TAG_REDUCE,
                 src && src != work ? &opts : NULL);
    if (rc == OMPI_SUCCESS && me == root && work != out)
        rc = unpack(&v, work, rbuf, (size_t)count, dtype);
    release_scratch(m, 0);
    return rc;
}

/* Reduce-Scatter over blocks of counts[r] elements (or `each`): the schedule
 * runs in scratch holding the whole input, which it reads from the caller's
 * buffer in place where it can; only the result block is written to rbuf
 * (with MPI_IN_PLACE the rest of rbuf stays as the caller left it). */
static int reduce_scatter_blocks(mca_coll_tacos_module_t *m, const tacos_plan_t *p,
                                 const void *sbuf, void *rbuf,
                                 const int *counts, size_t each, const view_t *v,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, int tag)
{
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    char *src = direct(v, in, v->units, dtype), *work = work_space(m, v);
    const size_t *off = p->off;
    sized_blocks(p->off, n, counts, each);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    tacos_exec_opts_t opts = {.input = src, .keep = TACOS_KEEP_BLOCK, .keep_block = me};
    if (!src)
        rc = pack(v, in, v->units, dtype, work);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_REDUCE_SCATTER, p, work, v, op, tag, src ? &opts : NULL);
    size_t mine = off[me + 1] - off[me];
    if (rc == OMPI_SUCCESS && mine) {
        char *out = direct(v, rbuf, mine, dtype), *res = work + off[me] * v->unit_ext;
        if (out)
            memcpy(out, res, mine * v->unit_ext);
        else
            rc = unpack(v, res, rbuf, mine, dtype);
    }
    release_scratch(m, 0);
    return rc;
}

int mca_coll_tacos_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    view_t v;
    const char *why = view_elements(dtype, (size_t)rcount * (size_t)n, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, v, why, p, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
    return reduce_scatter_blocks(m, p, sbuf, rbuf, NULL,
                                 (size_t)rcount, &v, dtype, op, comm,
                                 MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK);
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
    view_t v;
    const char *why = view_elements(dtype, total, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, v, why, p, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    return reduce_scatter_blocks(m, p, sbuf, rbuf, rcounts, 0, &v,
                                 dtype, op, comm, MCA_COLL_BASE_TAG_REDUCE_SCATTER);
}
