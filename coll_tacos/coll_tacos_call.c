/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A call over the PML: the executor's transport (Open MPI's PML), Open
 * MPI's datatype and op engines, and the requests of nonblocking and
 * persistent operations (ompi_coll_base_nbc_request_t, progressed by
 * opal_progress).
 */
#include "ompi_config.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "ompi/errhandler/errcode-internal.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/pml/pml.h"
#include "opal/datatype/opal_datatype_internal.h"
#include "ompi/datatype/ompi_datatype_internal.h"

#include "coll_tacos_internal.h"

/* ---- transport over the PML ------------------------------------------------ */

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

size_t coll_tacos_piece(struct ompi_communicator_t *comm, int peer)
{
    if (!C->net_piece)
        return 0;
    ompi_proc_t *proc = ompi_comm_peer_lookup(comm, peer);
    return OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags) ? 0 : C->net_piece;
}

static size_t pml_piece(void *ctx, int peer)
{
    return coll_tacos_piece(((pml_ctx_t *)ctx)->comm, peer);
}

/* Packed units: each element unpacked into its own layout (two of its
 * true extent), combined, and packed back. */
static int op_reduce_packed(pml_ctx_t *c, const char *src, char *dst, size_t count)
{
    ptrdiff_t tlb, text;
    int size = (int)type_size(c->unit), rc = OMPI_SUCCESS;
    struct ompi_datatype_t *packed = &ompi_mpi_packed.dt;
    ompi_datatype_get_true_extent(c->unit, &tlb, &text);
    char *two = malloc(2 * (size_t)text), *a = two - tlb, *b = two + text - tlb;
    if (!two)
        return OMPI_ERR_OUT_OF_RESOURCE;
    for (size_t i = 0; i < count && rc == OMPI_SUCCESS; i++, src += size, dst += size) {
        rc = ompi_datatype_sndrcv(src, size, packed, a, 1, c->unit);
        if (rc == OMPI_SUCCESS)
            rc = ompi_datatype_sndrcv(dst, size, packed, b, 1, c->unit);
        if (rc == OMPI_SUCCESS)
            ompi_op_reduce(c->op, a, b, 1, c->unit);
        if (rc == OMPI_SUCCESS)
            rc = ompi_datatype_sndrcv(b, 1, c->unit, dst, size, packed);
    }
    free(two);
    return rc;
}

static int op_reduce(void *ctx, const void *src, void *dst, size_t count)
{
    pml_ctx_t *c = ctx;
    if (c->packed_units)
        return op_reduce_packed(c, src, dst, count);
    ompi_op_reduce(c->op, (char *)src - c->shift, (char *)dst - c->shift, (int)count, c->unit);
    return OMPI_SUCCESS;
}

/* ---- Open MPI's datatype engine ------------------------------------------------- */

/* d's data as one run of bytes (its first byte), or NULL.  Elements (a
 * reduction's units, moved extent by extent) only where nothing lies
 * between them: Open MPI calls one element of a type resized past its data
 * contiguous, and its extent's padding would travel (and be written). */
static char *dt_contiguous(void *ctx, const tacos_data_t *d)
{
    pml_ctx_t *x = ctx;
    struct ompi_datatype_t *dtype = (struct ompi_datatype_t *)d->type;
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    if (x->unit != &ompi_mpi_byte.dt && text != ext)
        return NULL;
    return ompi_datatype_is_contiguous_memory_layout(dtype, (int)d->count) ? (char *)d->buf + tlb
                                                                           : NULL;
}

/* Between a (buffer, count, datatype) and its units in work: Open MPI's
 * datatype engine (elements keep their layout; bytes, and packed units,
 * are packed). */
static int dt_pack(void *ctx, const tacos_data_t *d, char *work)
{
    pml_ctx_t *x = ctx;
    struct ompi_datatype_t *dtype = (struct ompi_datatype_t *)d->type;
    if (x->unit != &ompi_mpi_byte.dt && !x->packed_units)
        return ompi_datatype_sndrcv(d->buf, (int)d->count, dtype, work, (int)d->count, dtype);
    return ompi_datatype_sndrcv(d->buf, (int)d->count, dtype, work,
                                (int)(d->count * type_size(dtype)), &ompi_mpi_packed.dt);
}

static int dt_unpack(void *ctx, const char *work, const tacos_data_t *d)
{
    pml_ctx_t *x = ctx;
    struct ompi_datatype_t *dtype = (struct ompi_datatype_t *)d->type;
    if (x->unit != &ompi_mpi_byte.dt && !x->packed_units)
        return ompi_datatype_sndrcv(work, (int)d->count, dtype, d->buf, (int)d->count, dtype);
    return ompi_datatype_sndrcv(work, (int)(d->count * type_size(dtype)), &ompi_mpi_packed.dt,
                                d->buf, (int)d->count, dtype);
}

/* ---- GPU buffers: the memory layer ------------------------------------------------ */

/* Open MPI's predefined op in the core's names, TACOS_RED_NOPS for others. */
static tacos_red_op_t red_op(struct ompi_op_t *op)
{
    static const tacos_red_op_t map[OMPI_OP_NUM_OF_TYPES] = {
        [OMPI_OP_NULL] = TACOS_RED_NOPS,  [OMPI_OP_MAX] = TACOS_RED_MAX,
        [OMPI_OP_MIN] = TACOS_RED_MIN,    [OMPI_OP_SUM] = TACOS_RED_SUM,
        [OMPI_OP_PROD] = TACOS_RED_PROD,  [OMPI_OP_LAND] = TACOS_RED_LAND,
        [OMPI_OP_BAND] = TACOS_RED_BAND,  [OMPI_OP_LOR] = TACOS_RED_LOR,
        [OMPI_OP_BOR] = TACOS_RED_BOR,    [OMPI_OP_LXOR] = TACOS_RED_LXOR,
        [OMPI_OP_BXOR] = TACOS_RED_BXOR,  [OMPI_OP_MAXLOC] = TACOS_RED_MAXLOC,
        [OMPI_OP_MINLOC] = TACOS_RED_MINLOC, [OMPI_OP_REPLACE] = TACOS_RED_NOPS};
    if (!ompi_op_is_intrinsic(op) || op->op_type < 0 || op->op_type >= OMPI_OP_NUM_OF_TYPES)
        return TACOS_RED_NOPS;
    return map[op->op_type];
}

/* A predefined datatype in the core's names (by its representation:
 * MPI_INT and MPI_INT32_T alike), TACOS_T_NTYPES for others. */
static tacos_red_type_t red_type(struct ompi_datatype_t *t)
{
    if (!ompi_datatype_is_predefined(t))
        return TACOS_T_NTYPES;
    switch (t->id) { /* the pairs MINLOC and MAXLOC take */
    case OMPI_DATATYPE_MPI_FLOAT_INT: return TACOS_T_FLOAT_INT;
    case OMPI_DATATYPE_MPI_DOUBLE_INT: return TACOS_T_DOUBLE_INT;
    case OMPI_DATATYPE_MPI_LONG_INT: return TACOS_T_LONG_INT;
    case OMPI_DATATYPE_MPI_2INT: return TACOS_T_2INT;
    case OMPI_DATATYPE_MPI_SHORT_INT: return TACOS_T_SHORT_INT;
    }
    switch (t->super.id) {
    case OPAL_DATATYPE_INT1: return TACOS_T_INT8;
    case OPAL_DATATYPE_UINT1: case OPAL_DATATYPE_BOOL: return TACOS_T_UINT8;
    case OPAL_DATATYPE_INT2: return TACOS_T_INT16;
    case OPAL_DATATYPE_UINT2: return TACOS_T_UINT16;
    case OPAL_DATATYPE_INT4: return TACOS_T_INT32;
    case OPAL_DATATYPE_UINT4: return TACOS_T_UINT32;
    case OPAL_DATATYPE_INT8: return TACOS_T_INT64;
    case OPAL_DATATYPE_UINT8: return TACOS_T_UINT64;
    case OPAL_DATATYPE_FLOAT2: return TACOS_T_FLOAT16;
    case OPAL_DATATYPE_FLOAT4: return TACOS_T_FLOAT;
    case OPAL_DATATYPE_FLOAT8: return TACOS_T_DOUBLE;
    case OPAL_DATATYPE_WCHAR: return sizeof(wchar_t) == 4 ? TACOS_T_INT32 : TACOS_T_NTYPES;
    case OPAL_DATATYPE_LONG: return sizeof(long) == 8 ? TACOS_T_INT64 : TACOS_T_INT32;
    case OPAL_DATATYPE_UNSIGNED_LONG: return sizeof(long) == 8 ? TACOS_T_UINT64 : TACOS_T_UINT32;
    }
    return TACOS_T_NTYPES;
}

/* Where GPU buffers come from: CUDA's, or host memory taken for a GPU's (tests). */
static const tacos_mc_t *device_mc(const mca_coll_tacos_module_t *m)
{
    return m->stage == 2 ? tacos_mc_host_as_device() : TACOS_PARAM(CUDA).b ? tacos_mc_cuda(NULL) : NULL;
}

void coll_tacos_on_device(mca_coll_tacos_module_t *m, pml_ctx_t *x, const void *const *bufs,
                          int n)
{
    x->mc = device_mc(m);
    x->device = tacos_mem_device(x->mc, bufs, n, MPI_IN_PLACE, &x->dev_buf);
}

const char *coll_tacos_memory(mca_coll_tacos_module_t *m, tacos_call_t *call, pml_ctx_t *x,
                              int contiguous)
{
    if (!x->device) {
        if (m->stage) { /* the same path on host memory, with Open MPI's op engine */
            tacos_mem_host(x, op_reduce, &x->mem);
            call->mem = &x->mem;
            call->mc = m->stage == 3 ? tacos_mc_host_shared() : tacos_mc_host();
        }
        return NULL;
    }
    const tacos_mc_t *mc = x->mc;
    x->red_op = TACOS_RED_SUM, x->red_type = TACOS_T_UINT8; /* data movement: no reductions */
    if (x->op)
        x->red_op = red_op(x->op), x->red_type = red_type(x->unit);
    const char *why = tacos_mem_why(mc, x->device, contiguous, x->op != NULL, x->red_op,
                                    x->red_type, call->v.bytes, m->stage_min_bytes,
                                    "below coll_tacos_stage_min_bytes");
    if (why)
        return why;
    call->mc = mc;
    if (!mc->bind) { /* host memory taken for a GPU's: its stream is the host's */
        tacos_mem_host(x, op_reduce, &x->mem);
        call->mem = &x->mem;
        return NULL;
    }
    if (!m->stream && mc->stream_new(x->dev_buf, &m->stream))
        return mc->why();
    mc->bind(m->stream, x->red_op, x->red_type, &x->mem);
    call->mem = &x->mem;
    return NULL;
}

/* mm's host copy from its device memory (to_host) or back, waited for; a
 * message when it fails. */
static int mirror_copy(const mirror_t *mm, int to_host)
{
    if (!tacos_mirror_copy(mm, to_host))
        return OMPI_SUCCESS;
    opal_output(0, "coll:tacos: staging a GPU buffer by hand: %s", mm->mc->why());
    return OMPI_ERROR;
}

int coll_tacos_mirror(mca_coll_tacos_module_t *m, mirror_t *mm, const void *buf, size_t count,
                      struct ompi_datatype_t *dtype, int later, void **host)
{
    const tacos_mc_t *mc = device_mc(m);
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    int rc = tacos_mirror_data(mm, mc, &m->stream, buf, count, ext, tlb, text, MPI_IN_PLACE,
                               later, host);
    if (rc == TACOS_ERR_ARG) {
        opal_output(0, "coll:tacos: a GPU buffer of a datatype with a negative extent is not "
                       "served");
        return OMPI_ERR_NOT_SUPPORTED;
    }
    if (rc == TACOS_ERR_NOMEM)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (rc) {
        opal_output(0, "coll:tacos: staging a GPU buffer by hand: %s", mc->why());
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

int coll_tacos_unmirror(mca_coll_tacos_module_t *m, mirror_t *mm, int out)
{
    (void)m;
    int rc = out && mm->host ? mirror_copy(mm, 0) : OMPI_SUCCESS;
    tacos_mirror_free(mm, 0);
    return rc;
}

/* ---- requests: nonblocking and persistent operations ----------------------------- */

/* Their messages carry a tag of their own per operation: a nonblocking
 * call's taken when it is made, a persistent one's when it is initialized
 * (every rank makes a communicator's calls in the same order, but may
 * start persistent ones in any order), each kind from a cyclic range of its
 * own, from the lowest tag the PML carries (-INT_MAX over ob1), below the
 * ranges Open MPI's components use (libnbc's, the neighbourhood
 * collectives', UCC's).  pml/ucx keeps 24 bits of a tag (the highest
 * marks Open MPI's own): below -(2^23 - 1) ours read as user tags there,
 * and an application's MPI_ANY_TAG receive took them. */
#define TAG_RANGE (1 << 20)

static int tag_base(void) { return mca_pml.pml_max_tag < INT_MAX ? -mca_pml.pml_max_tag : -INT_MAX; }

/* one tag past the two ranges */
int coll_tacos_setup_tag(void) { return tag_base() + 2 * TAG_RANGE; }

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
    void *stream; /* GPU buffers: a CUDA stream of its own */
    ompi_request_t *inner; /* by hand: the call on host copies, then copied back */
    mirror_t mm[2];
    int out[2], nmm, by_hand; /* by_hand: inner is its (a persistent one's is kept) */
    int free_when_done; /* MPI_Request_free while active */
    /* a nonblocking call of a plan not agreed yet: the request of its
     * textbook program (never started as an MPI request), whose operation
     * runs in op's place where some rank has not the schedule; it holds
     * that operation's context, datatypes and working copy */
    struct mca_coll_tacos_request *alt;
    struct mca_coll_tacos_request *prev, *next; /* in the active list */
} mca_coll_tacos_request_t;

static int request_free(ompi_request_t **req);
static int request_cancel(ompi_request_t *req, int complete);
static int request_start(size_t n, ompi_request_t **reqs);
static void activate(struct mca_coll_tacos_request *r);

static void request_construct(mca_coll_tacos_request_t *r)
{
    memset((char *)r + sizeof(r->super), 0, sizeof(*r) - sizeof(r->super));
    r->super.super.req_type = OMPI_REQUEST_COLL;
    r->super.super.req_free = request_free;
    r->super.super.req_cancel = request_cancel;
    r->super.super.req_start = request_start;
}

static void request_destruct(mca_coll_tacos_request_t *r)
{
    if (r->stream)
        tacos_mc_cuda(NULL)->stream_free(r->stream);
}

OBJ_CLASS_INSTANCE(mca_coll_tacos_request_t, ompi_coll_base_nbc_request_t, request_construct,
                   request_destruct);

/* The operations in flight, progressed by whichever thread gets the lock.
 * Progressing them calls into the PML, which may run opal_progress and
 * with it whatever is registered there (a communicator's CID agreement
 * starts a nonblocking Allreduce of this component's, or frees one), so
 * the lock is recursive, and the thread holding it in progress does not
 * progress them again from within. */
static mca_coll_tacos_request_t *active;
static pthread_mutex_t active_lock;
static pthread_once_t active_lock_once = PTHREAD_ONCE_INIT;
static __thread int progressing;
static int progress_registered;

static void active_lock_init(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&active_lock, &a);
    pthread_mutexattr_destroy(&a);
}

static void lock_active(void)
{
    pthread_once(&active_lock_once, active_lock_init);
    pthread_mutex_lock(&active_lock);
}

static void destroy(mca_coll_tacos_request_t *r)
{
    if (r->inner) /* persistent by hand: its call on the host copies, and them */
        ompi_request_free(&r->inner);
    for (int i = 0; r->by_hand && i < r->nmm; i++)
        coll_tacos_unmirror(r->module, &r->mm[i], 0);
    tacos_req_free(r->op); /* (and the alternative's: before its context goes) */
    if (r->alt)
        destroy(r->alt);
    for (int i = 0; i < r->nheld; i++)
        OBJ_RELEASE(r->held[i]);
    free(r->held);
    free(r->tmp);
    if (r->reduce_op)
        OBJ_RELEASE(r->reduce_op);
    if (r->super.super.req_mpi_object.comm) /* (a captured one holds none) */
        OBJ_RELEASE(r->super.super.req_mpi_object.comm);
    OMPI_REQUEST_FINI(&r->super.super);
    OBJ_RELEASE(r);
}

/* Under active_lock: r out of the active list (where it is). */
static void unlink_active(mca_coll_tacos_request_t *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else if (active == r)
        active = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

/* Under active_lock: the operation is over (rc: its status); returns
 * whether the request is to be destroyed (freed while active: by the
 * caller, once it let go of the lock, since destroying may free requests
 * of its own). */
static int finished(mca_coll_tacos_request_t *r, int rc)
{
    unlink_active(r);
    r->super.super.req_status.MPI_ERROR = rc == OMPI_SUCCESS ? MPI_SUCCESS : ompi_errcode_get_mpi_code(rc);
    if (rc != OMPI_SUCCESS) { /* kept: an abandoned send may still read it (as the core's scratch) */
        r->tmp = NULL;
        if (r->alt)
            r->alt->tmp = NULL;
    }
    if (!r->super.super.req_persistent) { /* its scratch goes now */
        tacos_req_free(r->op);
        r->op = NULL;
    }
    int free_it = r->free_when_done;
    ompi_request_complete(&r->super.super, true);
    return free_it;
}

/* A call on host copies that completed: the results back (not under
 * active_lock: freeing the call's request may take it). */
static int by_hand_finish(mca_coll_tacos_request_t *r)
{
    int persistent = r->super.super.req_persistent;
    int rc = r->inner->req_status.MPI_ERROR;
    if (!persistent) {
        ompi_request_free(&r->inner);
        r->inner = NULL;
    }
    for (int i = 0; i < r->nmm; i++) { /* persistent: the host copies stay for the next start */
        int back = rc == MPI_SUCCESS && r->out[i], out = OMPI_SUCCESS;
        if (!persistent)
            out = coll_tacos_unmirror(r->module, &r->mm[i], back);
        else if (back && r->mm[i].host)
            out = mirror_copy(&r->mm[i], 0);
        if (rc == MPI_SUCCESS && out != OMPI_SUCCESS)
            rc = OMPI_ERROR;
    }
    return rc;
}

/* A persistent call by hand starts: its buffers copied in, its call on them started. */
static int by_hand_start(mca_coll_tacos_request_t *r)
{
    for (int i = 0; i < r->nmm; i++)
        if (r->mm[i].host && mirror_copy(&r->mm[i], 1) != OMPI_SUCCESS)
            return OMPI_ERROR;
    int rc = OMPI_SUCCESS;
    if (r->inner->req_type == OMPI_REQUEST_NOOP) /* an MPI_PROC_NULL side: as MPI_Start does */
        r->inner->req_state = OMPI_REQUEST_ACTIVE;
    else if ((rc = r->inner->req_start(1, &r->inner)) != OMPI_SUCCESS)
        return rc;
    r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    activate(r);
    return OMPI_SUCCESS;
}

int mca_coll_tacos_progress(void)
{
    int events = 0;
    if (!__atomic_load_n(&active, __ATOMIC_RELAXED) || progressing)
        return 0; /* nothing to do, or this thread does it already */
    pthread_once(&active_lock_once, active_lock_init);
    if (pthread_mutex_trylock(&active_lock))
        return 0; /* another thread does it */
    progressing = 1;
    mca_coll_tacos_request_t *ready = NULL, *doomed = NULL; /* chained through next */
    for (mca_coll_tacos_request_t *r = active, *next; r; r = next) {
        next = r->next;
        if (r->by_hand) { /* finished below, without the lock */
            if (REQUEST_COMPLETE(r->inner))
                unlink_active(r), r->next = ready, ready = r;
            continue;
        }
        int done = 0, rc = tacos_req_progress(r->op, &done);
        if (done && finished(r, rc))
            r->next = doomed, doomed = r;
        events += done;
    }
    progressing = 0;
    pthread_mutex_unlock(&active_lock);
    for (mca_coll_tacos_request_t *r = ready, *next; r; r = next, events++) {
        next = r->next;
        r->next = NULL;
        int rc = by_hand_finish(r);
        lock_active();
        if (finished(r, rc))
            r->next = doomed, doomed = r;
        pthread_mutex_unlock(&active_lock);
    }
    for (mca_coll_tacos_request_t *r = doomed, *next; r; r = next) {
        next = r->next;
        destroy(r);
    }
    return events;
}

/* r in the active list, progressed by opal_progress. */
static void activate(mca_coll_tacos_request_t *r)
{
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    lock_active();
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
}

/* Posts the operation's first messages. */
static int start_one(mca_coll_tacos_request_t *r)
{
    r->x.error = OMPI_SUCCESS;
    r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    r->super.super.req_status._cancelled = 0;
    int rc = tacos_req_start(r->op);
    if (rc != OMPI_SUCCESS)
        return rc;
    activate(r);
    return OMPI_SUCCESS;
}

int coll_tacos_launch_by_hand(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                              ompi_request_t *inner, const mirror_t *mm, const int *out, int n,
                              struct ompi_datatype_t *t0, struct ompi_datatype_t *t1,
                              struct ompi_op_t *op, int persistent, ompi_request_t **request)
{
    mca_coll_tacos_request_t *r = OBJ_NEW(mca_coll_tacos_request_t);
    struct ompi_datatype_t **held = r ? malloc(2 * sizeof *held) : NULL;
    if (r && !held) {
        OBJ_RELEASE(r);
        r = NULL;
    }
    if (!r) { /* a nonblocking one finishes here: it is under way on the other ranks */
        int rc = persistent ? OMPI_ERR_OUT_OF_RESOURCE : ompi_request_wait(&inner, MPI_STATUS_IGNORE);
        if (persistent)
            ompi_request_free(&inner);
        for (int i = 0; i < n; i++)
            coll_tacos_unmirror(m, (mirror_t *)&mm[i], out[i] && rc == OMPI_SUCCESS);
        return rc != OMPI_SUCCESS ? rc : OMPI_ERR_OUT_OF_RESOURCE;
    }
    r->module = m, r->x.comm = comm, r->inner = inner, r->nmm = n, r->by_hand = 1;
    for (int i = 0; i < n; i++) /* copied on a stream of its own: any thread progresses it */
        r->mm[i] = mm[i], r->mm[i].stream = &r->stream, r->out[i] = out[i];
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_mpi_object.comm = comm;
    OBJ_RETAIN(comm);
    r->held = held, r->reduce_op = op;
    if (t0)
        held[r->nheld++] = t0;
    if (t1)
        held[r->nheld++] = t1;
    for (int i = 0; i < r->nheld; i++)
        OBJ_RETAIN(held[i]);
    if (op)
        OBJ_RETAIN(op);
    r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    if (!persistent)
        activate(r);
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

static int request_start(size_t n, ompi_request_t **reqs)
{
    for (size_t i = 0; i < n; i++) {
        mca_coll_tacos_request_t *r = (mca_coll_tacos_request_t *)reqs[i];
        if (r->super.super.req_state == OMPI_REQUEST_ACTIVE && !REQUEST_COMPLETE(&r->super.super))
            return OMPI_ERR_REQUEST;
        int rc = r->by_hand ? by_hand_start(r) : start_one(r);
        if (rc != OMPI_SUCCESS)
            return rc;
    }
    return OMPI_SUCCESS;
}

/* A request freed while its operation runs is freed when it is over. */
static int request_free(ompi_request_t **req)
{
    mca_coll_tacos_request_t *r = (mca_coll_tacos_request_t *)*req;
    lock_active();
    int later = r->super.super.req_state == OMPI_REQUEST_ACTIVE &&
                !REQUEST_COMPLETE(&r->super.super);
    if (later) /* destroyed when it is over */
        r->free_when_done = 1;
    pthread_mutex_unlock(&active_lock);
    if (!later) /* done, out of the active list: no one else touches it */
        destroy(r);
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
    if (call->mem) { /* its own stream: concurrent operations reduce differently */
        if (!call->mc->bind) { /* host memory */
            tacos_mem_host(&r->x, op_reduce, &r->x.mem);
        } else if (call->mc->stream_new(r->x.dev_buf, &r->stream)) {
            opal_output(0, "coll:tacos: a nonblocking call on GPU buffers: %s", call->mc->why());
            OBJ_RELEASE(r);
            return NULL;
        } else {
            call->mc->bind(r->stream, r->x.red_op, r->x.red_type, &r->x.mem);
        }
        own->mem = &r->x.mem;
    }
    return r;
}

/* The tag of the module's next operation, taken before anything can fail
 * on this rank: one that fails here must not shift the tags of the
 * operations after it (the other ranks took theirs). */
static int next_tag(mca_coll_tacos_module_t *m, int persistent)
{
    return tag_base() + (persistent ? TAG_RANGE + (int)(m->persistent_seq++ % TAG_RANGE)
                                    : (int)(m->nonblocking_seq++ % TAG_RANGE));
}

/* r, with the core's operation made, as an MPI request of that tag: the
 * communicator, held[0..nheld) (the array is the request's now) and the op
 * retained while it lives, tmp freed with it; nonblocking (started now) or
 * persistent. */
static void request_hold(mca_coll_tacos_request_t *r, struct ompi_datatype_t **held, int nheld,
                         void *tmp)
{
    r->held = held, r->nheld = nheld, r->tmp = tmp, r->reduce_op = r->x.op;
    for (int i = 0; i < nheld; i++)
        OBJ_RETAIN(held[i]);
    if (r->reduce_op)
        OBJ_RETAIN(r->reduce_op);
}

static int request_issue(mca_coll_tacos_request_t *r, int tag, struct ompi_datatype_t **held,
                         int nheld, void *tmp, int persistent, ompi_request_t **request)
{
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_mpi_object.comm = r->x.comm;
    OBJ_RETAIN(r->x.comm);
    request_hold(r, held, nheld, tmp);
    r->x.tag = tag;
    int rc = persistent ? OMPI_SUCCESS : start_one(r);
    if (rc != OMPI_SUCCESS) {
        destroy(r);
        return rc;
    }
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

void coll_tacos_drop_captured(mca_coll_tacos_module_t *m)
{
    if (m->captured)
        destroy(m->captured);
    m->captured = NULL;
}

int coll_tacos_launch(mca_coll_tacos_module_t *m, const tacos_plan_t *p, const tacos_call_t *call,
                      const tacos_args_t *a, struct ompi_datatype_t *t0,
                      struct ompi_datatype_t *t1, int persistent, ompi_request_t **request)
{
    tacos_call_t own;
    mca_coll_tacos_request_t *alt = p->agreed ? NULL : m->captured; /* (the PLAN macro's) */
    if (alt)
        m->captured = NULL;
    coll_tacos_drop_captured(m); /* (one a call that failed after PLAN left) */
    int tag = next_tag(m, persistent);
    struct ompi_datatype_t **held = malloc(2 * sizeof *held);
    mca_coll_tacos_request_t *r = held ? request_new(m, call, &own) : NULL;
    int nheld = 0, rc = r ? tacos_req_new(m->core, p, &own, a, persistent, &r->op) : OMPI_ERR_OUT_OF_RESOURCE;
    if (rc == OMPI_SUCCESS && !p->agreed && !alt)
        rc = OMPI_ERR_NOT_SUPPORTED; /* (a plan not agreed yet comes with its list) */
    if (rc != OMPI_SUCCESS) {
        if (r && r->op)
            tacos_req_free(r->op);
        if (r)
            OBJ_RELEASE(r);
        if (alt)
            destroy(alt);
        free(held);
        return rc;
    }
    if (alt) { /* the same tag: the ranks run one or the other */
        tacos_req_set_alt(r->op, alt->op);
        alt->op = NULL, alt->x.tag = tag;
        r->alt = alt;
    }
    if (t0)
        held[nheld++] = t0;
    if (t1)
        held[nheld++] = t1;
    return request_issue(r, tag, held, nheld, NULL, persistent, request);
}


int coll_tacos_launch_list(mca_coll_tacos_module_t *m, const tacos_call_t *call,
                           const tacos_msg_t *msgs, int nmsgs, const tacos_copy_t *copies,
                           int ncopies, struct ompi_datatype_t **held, int nheld, void *tmp,
                           int persistent, ompi_request_t **request)
{
    tacos_call_t own;
    int tag = m->capture ? 0 : next_tag(m, persistent); /* (captured: the schedule's, later) */
    mca_coll_tacos_request_t *r = request_new(m, call, &own);
    int rc = r ? tacos_req_new_list(m->core, &own, msgs, nmsgs, copies, ncopies, &r->op)
               : OMPI_ERR_OUT_OF_RESOURCE;
    if (rc != OMPI_SUCCESS) {
        if (r)
            OBJ_RELEASE(r);
        free(held);
        free(tmp);
        return rc;
    }
    if (m->capture) { /* kept for coll_tacos_launch: no MPI request, no tag yet */
        coll_tacos_drop_captured(m);
        request_hold(r, held, nheld, tmp);
        m->captured = r;
        return OMPI_SUCCESS;
    }
    return request_issue(r, tag, held, nheld, tmp, persistent, request);
}

void coll_tacos_call_init(tacos_call_t *call, pml_ctx_t *x)
{
    *call = (tacos_call_t){{x, pml_isend, pml_irecv, pml_wait_some, pml_test_some, pml_abandon,
                            op_reduce, pml_piece},
                           {0, 0, 0, 0},
                           dt_contiguous,
                           dt_pack,
                           dt_unpack,
                           OMPI_ERR_OUT_OF_RESOURCE,
                           OMPI_ERROR,
                           MPI_ERR_TRUNCATE,
                           &x->error,
                           NULL,
                           NULL};
}
