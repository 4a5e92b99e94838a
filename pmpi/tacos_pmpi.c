/*
 * libtacos-pmpi: coll/tacos for MPICH (or any MPI with the profiling
 * interface), as a library that defines MPI_Allreduce, MPI_Allgather,
 * MPI_Alltoall, MPI_Bcast, MPI_Reduce, MPI_Reduce_scatter(_block),
 * MPI_Gather and MPI_Scatter (each also nonblocking and persistent) and
 * calls the MPI library's PMPI_* for everything else.  Preloaded
 * (LD_PRELOAD) or linked before -lmpi.
 *
 * Each communicator gets, at its first such call, a private duplicate
 * (its messages never match the application's) and the core's tacos_comm_t,
 * kept as an attribute: MPI_Comm_free (or MPI_Finalize) frees both through
 * the keyval's delete callback.  Schedules run over PMPI_Isend/Irecv on the
 * duplicate, reductions through MPI_Reduce_local (predefined and user ops),
 * non-contiguous data through MPI_Pack/MPI_Unpack or a copy on a private
 * MPI_COMM_SELF.  Parameters come from TACOS_* environment variables.
 */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "params.h"

#include "tacos_pmpi.h"
#include "tacos_probe.h"

/* Tags on the private duplicate: one per blocking collective, one for
 * measurements (nonblocking operations: requests.c).  A call's element
 * copies are messages to self under its tag. */
enum {
    TAG_ALLREDUCE = 1, TAG_ALLGATHER, TAG_BCAST, TAG_REDUCE, TAG_REDUCE_SCATTER, TAG_MEASURE,
    TAG_ALLTOALL, TAG_GATHER, TAG_SCATTER
};

/* ---- parameters --------------------------------------------------------------- */

static tacos_settings_t settings; /* read_settings: from the parameter table */

static tacos_param_value_t values[TACOS_NPARAMS];

/* Every parameter of the core's table (params.h) the PMPI library reads,
 * from TACOS_<NAME>: a value that is not allowed keeps the default, with
 * one message (rank 0 of the world, or every process before MPI_Init). */
static void read_settings(void)
{
    int me = 0, up = 0;
    PMPI_Initialized(&up);
    if (up)
        PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    tacos_params_default(values);
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        char name[64] = "TACOS_", err[256];
        for (size_t k = 0; p->name[k] && k + 7 < sizeof name; k++)
            name[6 + k] = (char)toupper((unsigned char)p->name[k]), name[7 + k] = 0;
        const char *e = getenv(name);
        if (!(p->bindings & TACOS_PB_PMPI) || !e || (!*e && p->type != TACOS_PT_STRING))
            continue;
        if (tacos_param_parse(i, e, &values[i], err, sizeof err) && me == 0)
            fprintf(stderr, "coll:tacos: %s=%s is %s; using the default\n", name, e, err);
    }
    settings = tacos_settings_default();
    tacos_params_settings(values, &settings);
    for (int i = 0; i < TACOS_NPARAMS && me == 0 && settings.verbose >= 10; i++) {
        char v[256];
        tacos_param_format(i, &values[i], v, sizeof v);
        if (tacos_params[i].bindings & TACOS_PB_PMPI)
            fprintf(stderr, "coll:tacos: parameter %s = %s\n", tacos_params[i].name, v);
    }
    settings.param_prefix = "TACOS_";
    settings.previous = "the MPI library's own collectives";
    pmpi_memory_settings(values[TACOS_P_CUDA].b, values[TACOS_P_STAGE].i,
                         values[TACOS_P_STAGE_MIN_BYTES].z);
}

void pmpi_say(int level, const char *fmt, ...)
{
    if (level > settings.verbose)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "coll:tacos: %s\n", msg);
}

/* ---- per-communicator state ------------------------------------------------------ */

static int keyval = MPI_KEYVAL_INVALID;
static int unmade_keyval = MPI_KEYVAL_INVALID; /* keys wanted before the state was made */
static int enable_keyval = MPI_KEYVAL_INVALID; /* the info key tacos_enable, until the state */
static int live_states;                    /* for the verbose summary at MPI_Finalize */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int finalizing; /* from MPI_Finalize on, every call goes to MPI */

/* A communicator whose state could not be allocated: it falls back. */
static state_t no_state;

/* The state goes with its last holder: the communicator's attribute, or
 * an operation still running after MPI_Comm_free. */
void pmpi_state_release(state_t *st)
{
    if (st == &no_state || __atomic_sub_fetch(&st->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    tacos_comm_free(st->core);
    pmpi_stream_free(st->stream);
    if (st->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&st->comm);
    free(st->space.p);
    free(st->measure);
    free(st->measure_space.p);
    free(st);
    __atomic_sub_fetch(&live_states, 1, __ATOMIC_RELAXED);
}

static int delete_state(MPI_Comm comm, int key, void *attr, void *extra)
{
    (void)comm, (void)key, (void)extra;
    pmpi_state_release(attr);
    return MPI_SUCCESS;
}

/* Keys nonblocking calls wanted while their communicator had no state (an
 * attribute): its next MPI_Barrier makes the state and plans them. */
enum { MAX_UNMADE = 32 };
typedef struct {
    int n;
    struct {
        tacos_coll_t coll;
        int root;
        size_t bytes;
    } key[MAX_UNMADE];
} unmade_t;
static unmade_t no_keys; /* where a list could not be allocated */

static int delete_unmade(MPI_Comm comm, int key, void *attr, void *extra)
{
    (void)comm, (void)key, (void)extra;
    if (attr != &no_keys)
        free(attr);
    return MPI_SUCCESS;
}

static void init_once(void)
{
    read_settings();
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &keyval, NULL);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &enable_keyval, NULL);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_unmade, &unmade_keyval, NULL);
}

/* The core's callbacks over the private duplicate.  Its collectives are
 * nonblocking on every rank and waited for with pmpi_wait: a rank whose
 * operations of this library's are in flight must progress them while it
 * waits (a peer may wait for one of them before it joins, e.g. a rank in
 * MPI_Barrier, which may agree on CUDA IPC for a nonblocking call, while
 * another waits for that call first), and a blocking collective on some
 * ranks would not match a nonblocking one on others. */
static int waited(int rc, MPI_Request *r)
{
    return rc == MPI_SUCCESS ? pmpi_wait(r, MPI_STATUS_IGNORE) : rc;
}

/* Once a nonblocking barrier on comm is done (waited for, progressing this
 * library's operations), every rank of comm is in the same call: none
 * waits for an operation of this library's that this rank would have to
 * progress, so what follows may block in MPICH.  (On an intercommunicator
 * MPI promises only that the remote group has entered; MPICH's barrier
 * there starts with one over the local group, so both have.) */
static int arrived(MPI_Comm comm)
{
    MPI_Request r;
    return waited(PMPI_Ibarrier(comm, &r), &r);
}

static tacos_transport_t measure_transport(state_t *st);

static int own_allreduce(void *v, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    MPI_Request r;
    return waited(PMPI_Iallreduce(MPI_IN_PLACE, v, n, type, op, comm, &r), &r);
}

static int core_max_u64(void *ctx, uint64_t *v, int n)
{
    return own_allreduce(v, n, MPI_UINT64_T, MPI_MAX, ((state_t *)ctx)->comm);
}

static int core_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    MPI_Request r;
    return waited(PMPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                                  ((state_t *)ctx)->comm, &r),
                  &r);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The same, waiting as tacos_net_idle says (the network measurement), and
 * progressing the library's operations as pmpi_wait does (the steps of a
 * measurement start after one of these: a peer that waits for one of
 * those operations first then joins). */
static int core_max_u64_idle(void *ctx, uint64_t *v, int n)
{
    MPI_Request req;
    int done = 0, rc;
    double t0 = now_us();
    rc = PMPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_MAX, ((state_t *)ctx)->comm, &req);
    while (rc == MPI_SUCCESS && !done)
        if ((rc = PMPI_Test(&req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) {
            pmpi_progress();
            tacos_net_idle(now_us() - t0);
        }
    return rc;
}

static void core_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    pmpi_say(level, "%s", msg);
}

/* on_host[r] = 1 for each rank r of comm in node (its ranks on this node);
 * 0 when that cannot be said (out of memory). */
static int mark_node(MPI_Comm comm, MPI_Comm node, int on_node, char *on_host)
{
    MPI_Group g, gn;
    int *in = malloc(2 * (size_t)on_node * sizeof *in), ok = 0;
    if (!in || !on_host) {
        free(in);
        return 0;
    }
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS) {
        free(in);
        return 0;
    }
    if (PMPI_Comm_group(node, &gn) == MPI_SUCCESS) {
        for (int i = 0; i < on_node; i++)
            in[i] = i;
        if (PMPI_Group_translate_ranks(gn, on_node, in, g, in + on_node) == MPI_SUCCESS) {
            for (int i = 0; i < on_node; i++)
                if (in[on_node + i] != MPI_UNDEFINED)
                    on_host[in[on_node + i]] = 1;
            ok = 1;
        }
        PMPI_Group_free(&gn);
    }
    PMPI_Group_free(&g);
    free(in);
    return ok;
}

/* Every rank makes the state at its communicator's first call (a collective
 * call, so all of them), and they agree whether all succeeded. */
static state_t *make_state(MPI_Comm comm)
{
    static unsigned next_id; /* only names the communicator in messages and dumps */
    int n, me, inter, ok;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &n);
    PMPI_Comm_rank(comm, &me);
    state_t *st = calloc(1, sizeof *st);
    MPI_Comm dup = MPI_COMM_NULL;
    /* every rank here before the blocking collectives below (arrived) */
    if (!inter && n >= 2)
        arrived(comm); /* (an error: the same calls follow) */
    /* a split in rank order: the same group, but unlike a dup it runs none
     * of the application's attribute copy (and later delete) callbacks */
    if (!inter && n >= 2 && PMPI_Comm_split(comm, 0, me, &dup) == MPI_SUCCESS) {
        /* errors come back here (then go to the application's handler) */
        PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        const char *lr = getenv("MPI_LOCALRANKID"); /* set by MPICH's hydra */
        /* whether some rank is on another node: where its node's
         * communicator is smaller than this one (on every rank alike) */
        MPI_Comm node;
        int on_node = n;
        /* per rank: on this node (what CUDA IPC goes by; none where it is off) */
        int want_map = settings.cuda_ipc_min_bytes >= 0;
        char *on_host = want_map ? calloc((size_t)n, 1) : NULL;
        int marked = 0;
        if (PMPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
            MPI_SUCCESS) {
            PMPI_Comm_size(node, &on_node);
            marked = want_map && mark_node(dup, node, on_node, on_host);
            PMPI_Comm_free(&node);
        }
        if (!marked) {
            free(on_host);
            on_host = NULL;
        }
        int spans = on_node < n; /* the same on every rank, unless a split failed */
        PMPI_Allreduce(MPI_IN_PLACE, &spans, 1, MPI_INT, MPI_MAX, dup);
        tacos_comm_ops_t ops = {.ctx = st,
                                .rank = me,
                                .size = n,
                                .local_rank = lr ? atoi(lr) : 0,
                                .spans_hosts = spans,
                                .on_host = on_host,
                                .id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED),
                                .max_u64 = core_max_u64,
                                .max_u64_idle = core_max_u64_idle,
                                .allgather = core_allgather,
                                .log = core_log,
                                .measure = measure_transport(st)};
        tacos_settings_t set = settings;
        void *on;
        int found = 0;
        PMPI_Comm_get_attr(comm, enable_keyval, &on, &found);
        if (found) /* the info key tacos_enable (agreed at the first plan like the rest) */
            set.enable = on != NULL;
        /* (without on_host, a rank would decide on IPC alone) */
        if (st && st->measure && (on_host || !spans || !want_map))
            st->core = tacos_comm_new(&set, &ops);
        free(on_host);
        int failed = !(st && st->core); /* anywhere */
        PMPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, dup);
        ok = !failed;
        if (st)
            st->spans_hosts = spans;
        if (!ok && st) {
            tacos_comm_free(st->core);
            st->core = NULL;
        }
        if (!ok && me == 0)
            pmpi_say(0, "no state for a communicator (out of memory, or its ranks' hosts not known); it falls back");
    }
    if (!st) {
        if (dup != MPI_COMM_NULL)
            PMPI_Comm_free(&dup);
        st = &no_state;
    } else {
        st->comm = dup; /* MPI_COMM_NULL: intercommunicator or one rank */
        st->refs = 1;
        __atomic_add_fetch(&live_states, 1, __ATOMIC_RELAXED);
    }
    PMPI_Comm_set_attr(comm, keyval, st);
    return st;
}

/* A communicator whose state is not made yet, to a nonblocking call. */
static state_t unmade;

/* The communicator's state, made at its first call if `make`: only a
 * blocking call makes it (that takes collectives; a nonblocking call must
 * not wait for other ranks), so where none is made yet the others get
 * `unmade`.  NULL: fall back. */
static state_t *state_of(MPI_Comm comm, int make)
{
    pthread_once(&once, init_once);
    state_t *st = NULL;
    int found = 0;
    if (__atomic_load_n(&finalizing, __ATOMIC_RELAXED) || comm == MPI_COMM_NULL ||
        PMPI_Comm_get_attr(comm, keyval, &st, &found) != MPI_SUCCESS)
        return NULL;
    int inter = 0;
    if (!found && !make) /* intercommunicators never get a state: they fall back */
        return PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter ? &unmade : NULL;
    if (!found)
        st = make_state(comm);
    return st && st->core ? st : NULL;
}

/* ---- transport over PMPI_Isend / PMPI_Irecv --------------------------------------- */

static int failed(call_ctx_t *c, int rc)
{
    if (rc != MPI_SUCCESS && !c->error)
        c->error = rc;
    return rc != MPI_SUCCESS;
}

/* The executor keeps requests as void *; MPI_Request may be an integer. */
static MPI_Request to_req(void *r) { return (MPI_Request)(intptr_t)r; }
static void *from_req(MPI_Request r) { return (void *)(intptr_t)r; }

static int pmpi_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    call_ctx_t *c = ctx;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = tacos_fault("send") ? MPI_ERR_OTHER
                                 : PMPI_Isend(buf, (int)bytes, MPI_BYTE, peer, c->tag,
                                              c->st->comm, &r);
    *req = from_req(r);
    return failed(c, rc);
}

static int pmpi_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    call_ctx_t *c = ctx;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = PMPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, c->tag, c->st->comm, &r);
    *req = from_req(r);
    return failed(c, rc);
}

/* PMPI_Waitsome or PMPI_Testsome over the executor's requests: a request
 * MPI set to MPI_REQUEST_NULL is done (also where the call failed: then
 * some may have completed); a failed one's error is taken from its status.
 * While nonblocking operations are in flight, a wait progresses them. */
static int some(call_ctx_t *c, void **reqs, size_t n, char *done, int block)
{
    space_t *sp = c->space;
    if (n > sp->n) {
        void *r = realloc(sp->p, n * (sizeof(MPI_Status) + sizeof(MPI_Request) + sizeof(int)));
        if (!r)
            return failed(c, MPI_ERR_NO_MEM);
        sp->p = r, sp->n = n;
    }
    MPI_Status *status = sp->p;
    MPI_Request *mreq = (MPI_Request *)(status + sp->n);
    int *idx = (int *)(mreq + sp->n), out = 0, rc;
    for (size_t i = 0; i < n; i++)
        mreq[i] = to_req(reqs[i]);
    rc = block ? pmpi_waitsome((int)n, mreq, &out, idx, status)
               : PMPI_Testsome((int)n, mreq, &out, idx, status);
    if (rc == MPI_SUCCESS && block && out == MPI_UNDEFINED)
        rc = MPI_ERR_INTERN; /* nothing to wait for: the executor's bug */
    for (int i = 0; rc == MPI_ERR_IN_STATUS && i < out; i++)
        if (status[i].MPI_ERROR != MPI_SUCCESS && status[i].MPI_ERROR != MPI_ERR_PENDING)
            rc = status[i].MPI_ERROR;
    for (size_t i = 0; i < n; i++) {
        if (reqs[i] != from_req(MPI_REQUEST_NULL) && mreq[i] == MPI_REQUEST_NULL)
            done[i] = 1;
        reqs[i] = from_req(mreq[i]);
    }
    return failed(c, rc);
}

static int pmpi_wait_some(void *ctx, void **reqs, size_t n, char *done)
{
    return some(ctx, reqs, n, done, 1);
}

static int pmpi_test_some(void *ctx, void **reqs, size_t n, char *done)
{
    return some(ctx, reqs, n, done, 0);
}

static void pmpi_abandon(void *ctx, void *req, int is_send)
{
    (void)ctx;
    MPI_Request r = to_req(req);
    if (r == MPI_REQUEST_NULL)
        return;
    if (!is_send) { /* it may target scratch: gone before returning */
        PMPI_Cancel(&r);
        PMPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        PMPI_Request_free(&r); /* a send completes on its own */
    }
}

static int reduce_local(void *ctx, const void *src, void *dst, size_t count)
{
    call_ctx_t *c = ctx;
    return failed(c, PMPI_Reduce_local((const char *)src - c->shift, (char *)dst - c->shift,
                                       (int)count, c->unit, c->op));
}

/* The measurements' transport (tacos_comm_ops_t.measure): whole messages
 * on TAG_MEASURE of st's private duplicate; none where its context cannot
 * be made (st->measure NULL: then the state is not made). */
static tacos_transport_t measure_transport(state_t *st)
{
    call_ctx_t *x = st ? st->measure = calloc(1, sizeof *x) : NULL;
    if (!x)
        return (tacos_transport_t){0};
    *x = (call_ctx_t){.st = st, .tag = TAG_MEASURE, .unit = MPI_BYTE, .space = &st->measure_space};
    return (tacos_transport_t){x, pmpi_isend, pmpi_irecv, pmpi_wait_some, pmpi_test_some,
                               pmpi_abandon, reduce_local, NULL};
}

/* ---- the data as schedules see it (see tacos_view_t) ------------------------------- */

static size_t type_size(MPI_Datatype dtype)
{
    MPI_Count size = 0;
    PMPI_Type_size_x(dtype, &size);
    return size > 0 ? (size_t)size : 0;
}

static const char *view_bytes(MPI_Datatype dtype, size_t count, tacos_view_t *v, call_ctx_t *x)
{
    x->unit = MPI_BYTE;
    return tacos_view_bytes(count, type_size(dtype), v);
}

static const char *view_elements(MPI_Datatype dtype, size_t count, MPI_Op op, tacos_view_t *v,
                                 call_ctx_t *x)
{
    MPI_Aint lb, ext, tlb, text;
    int commute = 0;
    PMPI_Type_get_extent(dtype, &lb, &ext);
    PMPI_Type_get_true_extent(dtype, &tlb, &text);
    PMPI_Op_commutative(op, &commute);
    x->unit = dtype;
    x->shift = tlb;
    return tacos_view_elements(count, type_size(dtype), ext, tlb, text, commute, v);
}

int pmpi_named(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
    return combiner == MPI_COMBINER_NAMED;
}

/* Whether count elements of dtype are one run of bytes: predefined types
 * and contiguous, duplicated or resized ones built on them, whose data
 * fills their true extent, with no gap between elements. */
static int contiguous(MPI_Datatype dtype, size_t count)
{
    int ni, na, nd, combiner, ok;
    PMPI_Type_get_envelope(dtype, &ni, &na, &nd, &combiner);
    if (combiner == MPI_COMBINER_NAMED) {
        ok = 1;
    } else if ((combiner == MPI_COMBINER_DUP || combiner == MPI_COMBINER_CONTIGUOUS ||
                combiner == MPI_COMBINER_RESIZED) && ni <= 1 && na <= 2 && nd == 1) {
        int ints[1];
        MPI_Aint addrs[2];
        MPI_Datatype inner;
        PMPI_Type_get_contents(dtype, ni, na, nd, ints, addrs, &inner);
        ok = contiguous(inner, 2); /* its elements are contiguous with each other */
        if (!pmpi_named(inner))
            PMPI_Type_free(&inner);
    } else {
        return 0;
    }
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_get_extent(dtype, &lb, &ext);
    PMPI_Type_get_true_extent(dtype, &tlb, &text);
    return ok && (size_t)text == type_size(dtype) && (count <= 1 || ext == text);
}

/* d's data as one run of bytes (its first byte), or NULL. */
static char *dt_contiguous(void *ctx, const tacos_data_t *d)
{
    (void)ctx;
    MPI_Datatype dtype = *(const MPI_Datatype *)d->type;
    MPI_Aint tlb, text;
    PMPI_Type_get_true_extent(dtype, &tlb, &text);
    return contiguous(dtype, d->count) ? (char *)d->buf + tlb : NULL;
}

/* Elements copied in their layout: a message to self on the duplicate. */
static int copy_elements(call_ctx_t *x, const void *src, void *dst, int count,
                         MPI_Datatype dtype)
{
    int me;
    PMPI_Comm_rank(x->st->comm, &me);
    return PMPI_Sendrecv(src, count, dtype, me, x->tag, dst, count, dtype, me, x->tag,
                         x->st->comm, MPI_STATUS_IGNORE);
}

/* Between a (buffer, count, datatype) and its units in work: bytes packed
 * with MPI_Pack (MPICH's format: the signature's bytes in a row), elements
 * copied in their layout. */
static int dt_pack(void *ctx, const tacos_data_t *d, char *work)
{
    call_ctx_t *x = ctx;
    MPI_Datatype dtype = *(const MPI_Datatype *)d->type;
    int pos = 0, bytes = (int)(d->count * type_size(dtype)), rc;
    if (x->unit != MPI_BYTE)
        return copy_elements(x, d->buf, work, (int)d->count, dtype);
    rc = PMPI_Pack(d->buf, (int)d->count, dtype, work, bytes, &pos, x->st->comm);
    return rc == MPI_SUCCESS && pos != bytes ? MPI_ERR_INTERN : rc;
}

static int dt_unpack(void *ctx, const char *work, const tacos_data_t *d)
{
    call_ctx_t *x = ctx;
    MPI_Datatype dtype = *(const MPI_Datatype *)d->type;
    int pos = 0, bytes = (int)(d->count * type_size(dtype));
    if (x->unit != MPI_BYTE)
        return copy_elements(x, work, d->buf, (int)d->count, dtype);
    return PMPI_Unpack(work, bytes, &pos, d->buf, (int)d->count, dtype, x->st->comm);
}

static tacos_data_t data(const void *buf, size_t count, const MPI_Datatype *dtype)
{
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(*dtype, &lb, &ext);
    return (tacos_data_t){(void *)buf, count, dtype, ext, count * type_size(*dtype)};
}

/* ---- the collectives ------------------------------------------------------------------ */

/* How a collective was called: MPI_X, MPI_Ix, MPI_X_init. */
typedef enum { BLOCKING, NONBLOCKING, PERSISTENT } call_mode_t;

#define MODE_ARGS call_mode_t mode, MPI_Info info, MPI_Request *request

/* The call's name in its mode. */
#define NAME(name, iname) (mode == NONBLOCKING ? #iname : mode == PERSISTENT ? #name "_init" : #name)

/* fn_i (nonblocking) or fn_init (persistent) in the call's mode; a blocking
 * call is fn_i waited for, on every rank (see WAITED below). */
#define IN_MODE(fn_i, fn_init, ...)                                                          \
    (mode == NONBLOCKING  ? fn_i(__VA_ARGS__, request)                                       \
     : mode == PERSISTENT ? fn_init(__VA_ARGS__, info, request)                              \
                          : waited(fn_i(__VA_ARGS__, request), request))

/* The MPI library's own collective in the call's mode. */
#define FALLBACK(name, iname, ...) IN_MODE(PMPI_##iname, PMPI_##name##_init, __VA_ARGS__)

/* A nonblocking call on a communicator whose state is not made yet falls
 * back; its key, if it has one to move, is recorded for the
 * communicator's next MPI_Barrier. */
static void want(MPI_Comm comm, tacos_coll_t coll, int root, size_t bytes, const char **why)
{
    unmade_t *u;
    int found = 0;
    if (*why)
        return;
    if (!bytes) {
        *why = "nothing to move";
        return;
    }
    *why = "the communicator has no state yet (made by its first blocking collective or "
           "MPI_Barrier)";
    PMPI_Comm_get_attr(comm, unmade_keyval, &u, &found);
    if (!found) {
        if (!(u = calloc(1, sizeof *u)))
            u = &no_keys;
        PMPI_Comm_set_attr(comm, unmade_keyval, u);
    }
    if (u != &no_keys && u->n < MAX_UNMADE)
        u->key[u->n].coll = coll, u->key[u->n].root = root, u->key[u->n++].bytes = bytes;
}

/* The state (NULL: the MPI library's own collective, see PLAN). */
#define STATE(st, comm) state_t *st = state_of(comm, mode == BLOCKING)

/* A call's context and what the core needs of it. */
#define CALL(state, tag_, op_)                                                               \
    call_ctx_t x = {.st = state, .tag = tag_, .unit = MPI_BYTE, .op = op_,                   \
                    .space = (state) ? &(state)->space : NULL};                              \
    tacos_call_t call = {{&x, pmpi_isend, pmpi_irecv, pmpi_wait_some, pmpi_test_some,        \
                          pmpi_abandon, reduce_local, NULL},                                  \
                         {0, 0, 0, 0},                                                        \
                         dt_contiguous,                                                       \
                         dt_pack,                                                             \
                         dt_unpack,                                                           \
                         MPI_ERR_NO_MEM,                                                      \
                         MPI_ERR_INTERN,                                                      \
                         MPI_ERR_TRUNCATE,                                                    \
                         &x.error,                                                            \
                         NULL, /* set by RUN where the call is staged */                      \
                         NULL}

/* A call on host copies of GPU buffers, on this thread: 1 runs as planned,
 * 2 falls back as the original call did (without planning again). */
static _Thread_local struct {
    int then;
    const char *why;
} hand;

/* GPU buffers (bufs: the call's that matter on this rank; contiguous: all
 * of them one run of bytes) go through the schedule staged by the executor;
 * where it cannot take them (why_dev), or no schedule serves the call, the
 * call runs on host copies of its buffers (by_hand_<name>).  After the
 * view (x.unit, the size). */
#define DEVICE(contiguous, ...)                                                              \
    const void *bufs_[] = {__VA_ARGS__};                                                     \
    int then_ = hand.then; /* this call's own: collectives nested in it look again */        \
    hand.then = 0;                                                                           \
    if (!then_)                                                                              \
        pmpi_on_device(&x, bufs_, (int)(sizeof bufs_ / sizeof *bufs_));                      \
    const char *why_dev = pmpi_device_why(&x, contiguous, call.v.bytes)

/* The core's decision for the call (tacos_comm_decide; on a state not
 * made yet: want): returns an error or, where nothing is to move, success;
 * falls back with the reason (on host copies where the buffers are a
 * GPU's); or goes on with p.  Without a state: the MPI library's own. */
#define PLAN(st, which, at, why, p, name, iname, ...)                                        \
    do {                                                                                     \
        int plan_rc_ = MPI_SUCCESS;                                                          \
        if (then_ != 2 && !(st) && x.device)                                                 \
            return by_hand_##name(mode, info, request, "no state", 2, __VA_ARGS__);          \
        if (then_ != 2 && !(st))                                                             \
            return FALLBACK(name, iname, __VA_ARGS__);                                       \
        if (then_ != 2 && (st) == &unmade && !(x.device && why_dev))                         \
            want(comm, which, at, call.v.bytes, &(why));                                     \
        tacos_call_facts_t f_ = {.on_copies = then_, .copies_why = hand.why,                 \
                                 .device = x.device != 0, .why_dev = why_dev,                \
                                 .blocking = mode == BLOCKING, .coll = which, .root = at,    \
                                 .bytes = call.v.bytes};                                     \
        switch (tacos_comm_decide((st) && (st) != &unmade ? (st)->core : NULL, &f_, &(why),  \
                                  &(p), &plan_rc_)) {                                        \
        case TACOS_CALL_RUN:                                                                 \
            break;                                                                           \
        case TACOS_CALL_ERROR:                                                               \
            return PMPI_Comm_call_errhandler(comm, plan_rc_), plan_rc_;                      \
        case TACOS_CALL_DONE:                                                                \
            return MPI_SUCCESS;                                                              \
        case TACOS_CALL_COPIES:                                                              \
            return by_hand_##name(mode, info, request, why, 1, __VA_ARGS__);                \
        case TACOS_CALL_COPIES_FALL_BACK:                                                    \
            return by_hand_##name(mode, info, request, why, 2, __VA_ARGS__);                 \
        default:                                                                             \
            pmpi_say(10, "MPI_%s: fallback: %s", NAME(name, iname), why);                    \
            return FALLBACK(name, iname, __VA_ARGS__);                                       \
        }                                                                                    \
    } while (0)

/* Runs plan p in the call's mode (staged where its memory says so: a
 * blocking call on the state's stream, an operation on its own); an error
 * goes to the communicator's error handler, as MPI's would. */
#define RUN(st, p, a)                                                                        \
    done(comm, mode == BLOCKING                                                              \
                   ? run_blocking(st, p, &call, &x, a)                                       \
                   : pmpi_memory_bind(NULL, &call, &x) ? MPI_ERR_OTHER                       \
                   : pmpi_launch(st, p, &call, a, mode == PERSISTENT, request))

static int run_blocking(state_t *st, const tacos_plan_t *p, tacos_call_t *call, call_ctx_t *x,
                        const tacos_args_t *a)
{
    int rc = pmpi_memory_bind(&st->stream, call, x);
    return rc != MPI_SUCCESS ? rc : tacos_run(st->core, p, call, a);
}

static int done(MPI_Comm comm, int rc)
{
    if (rc != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* A reduction's view; nonblocking and persistent calls also need a
 * predefined op: PMPI gives no way to hold a user's op past an
 * MPI_Op_free that may come before the operation ends. */
static const char *view_reduction(MPI_Datatype dtype, size_t count, MPI_Op op, call_mode_t mode,
                                  tacos_view_t *v, call_ctx_t *x)
{
    static const MPI_Op predefined[] = {MPI_MAX, MPI_MIN,  MPI_SUM,  MPI_PROD,   MPI_LAND,
                                        MPI_BAND, MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR,
                                        MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP};
    const char *why = view_elements(dtype, count, op, v, x);
    int known = mode == BLOCKING;
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++)
        known |= op == predefined[i];
    return why ? why : known ? NULL : "a user-defined op (nonblocking and persistent calls)";
}

/* The calls on host copies of GPU buffers (defined below). */
#define BY_HAND_ARGS call_mode_t mode, MPI_Info info, MPI_Request *request, const char *why, int then
static int by_hand_Allreduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                             MPI_Datatype dtype, MPI_Op op, MPI_Comm comm);
static int by_hand_Allgather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                             void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm);
static int by_hand_Alltoall(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                            void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm);
static int by_hand_Bcast(BY_HAND_ARGS, void *buf, int count, MPI_Datatype dtype, int root,
                         MPI_Comm comm);
static int by_hand_Reduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                          MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm);
static int by_hand_Reduce_scatter_block(BY_HAND_ARGS, const void *sbuf, void *rbuf, int rcount,
                                        MPI_Datatype dtype, MPI_Op op, MPI_Comm comm);
static int by_hand_Reduce_scatter(BY_HAND_ARGS, const void *sbuf, void *rbuf,
                                  const int rcounts[], MPI_Datatype dtype, MPI_Op op,
                                  MPI_Comm comm);
static int by_hand_Gather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                          void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm);
static int by_hand_Scatter(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                           void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm);

/* Whether a buffer the call touches is one run of bytes (MPI_IN_PLACE: its
 * datatype is not to be read). */
static int one_run(const void *buf, size_t count, MPI_Datatype dtype)
{
    return buf == MPI_IN_PLACE || contiguous(dtype, count);
}

static int allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                     MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    CALL(st, TAG_ALLREDUCE, op);
    const char *why = view_reduction(dtype, (size_t)count, op, mode, &call.v, &x);
    DEVICE(contiguous(dtype, (size_t)count), sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLREDUCE, 0, why, p, Allreduce, Iallreduce, sbuf, rbuf, count, dtype, op,
         comm);
    tacos_data_t s = data(sbuf, (size_t)count, &dtype), r = data(rbuf, (size_t)count, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r};
    return RUN(st, p, &a);
}

static int allgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                     MPI_Datatype rdtype, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    CALL(st, TAG_ALLGATHER, MPI_OP_NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    DEVICE(one_run(sbuf, (size_t)scount, sdtype) && contiguous(rdtype, (size_t)rcount * (size_t)n),
           sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLGATHER, 0, why, p, Allgather, Iallgather, sbuf, scount, sdtype, rbuf, rcount,
         rdtype, comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    tacos_data_t s = sbuf == MPI_IN_PLACE ? (tacos_data_t){0} : data(sbuf, (size_t)scount, &sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * (size_t)n, &rdtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r};
    return RUN(st, p, &a);
}

static int alltoall(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                    MPI_Datatype rdtype, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    CALL(st, TAG_ALLTOALL, MPI_OP_NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    DEVICE(one_run(sbuf, (size_t)scount * (size_t)n, sdtype) &&
               contiguous(rdtype, (size_t)rcount * (size_t)n),
           sbuf, rbuf);
    if (x.device && !why_dev && sbuf == MPI_IN_PLACE) /* its input is packed on the host */
        why_dev = "MPI_IN_PLACE";
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLTOALL, 0, why, p, Alltoall, Ialltoall, sbuf, scount, sdtype, rbuf, rcount,
         rdtype, comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    tacos_data_t s = sbuf == MPI_IN_PLACE ? (tacos_data_t){0}
                                          : data(sbuf, (size_t)scount * (size_t)n, &sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * (size_t)n, &rdtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r};
    return RUN(st, p, &a);
}

static int bcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    CALL(st, TAG_BCAST, MPI_OP_NULL);
    const char *why = view_bytes(dtype, (size_t)count, &call.v, &x);
    DEVICE(contiguous(dtype, (size_t)count), buf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_BROADCAST, root, why, p, Bcast, Ibcast, buf, count, dtype, root, comm);
    tacos_data_t d = data(buf, (size_t)count, &dtype);
    tacos_args_t a = {.recv = &d, .root = root};
    return RUN(st, p, &a);
}

static int reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
                  MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    CALL(st, TAG_REDUCE, op);
    const char *why = view_reduction(dtype, (size_t)count, op, mode, &call.v, &x);
    DEVICE(contiguous(dtype, (size_t)count), sbuf, me == root ? rbuf : NULL); /* rbuf: the root's */
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE, root, why, p, Reduce, Ireduce, sbuf, rbuf, count, dtype, op, root, comm);
    tacos_data_t s = data(sbuf, (size_t)count, &dtype), r = data(rbuf, (size_t)count, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .root = root};
    return RUN(st, p, &a);
}

static int reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                                MPI_Op op, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    size_t total = (size_t)rcount * (size_t)n;
    CALL(st, TAG_REDUCE_SCATTER, op);
    const char *why = view_reduction(dtype, total, op, mode, &call.v, &x);
    DEVICE(contiguous(dtype, total), sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE_SCATTER, 0, why, p, Reduce_scatter_block, Ireduce_scatter_block, sbuf,
         rbuf, rcount, dtype, op, comm);
    tacos_data_t s = data(sbuf, total, &dtype), r = data(rbuf, total, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .each = (size_t)rcount};
    return RUN(st, p, &a);
}

static int reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                          MPI_Op op, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    size_t total = 0;
    for (int r = 0; r < n; r++)
        total += (size_t)rcounts[r];
    CALL(st, TAG_REDUCE_SCATTER, op);
    const char *why = view_reduction(dtype, total, op, mode, &call.v, &x);
    DEVICE(contiguous(dtype, total), sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE_SCATTER, 0, why, p, Reduce_scatter, Ireduce_scatter, sbuf, rbuf, rcounts,
         dtype, op, comm);
    tacos_data_t s = data(sbuf, total, &dtype), r = data(rbuf, total, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .counts = rcounts};
    return RUN(st, p, &a);
}

/* Why a collective goes to MPICH's own whatever its size, or NULL: Gather
 * and Scatter on one node (for the calls and for the sizes MPI_Barrier
 * plans alike). */
static const char *left_to_mpich(const state_t *st, tacos_coll_t coll)
{
    return !st->spans_hosts && (coll == TACOS_GATHER || coll == TACOS_SCATTER)
               ? "on one node: MPICH's own"
               : NULL;
}

/* MPI_Gather (gathers) and MPI_Scatter: block r routed between rank r and
 * the root by the synthesized schedule where the communicator spans nodes;
 * on one node MPICH's own (there the schedule is the root's direct
 * exchange over one shared-memory switch).  The root holds n blocks
 * (Gather's receive buffer, Scatter's send buffer), every other rank one
 * (MPI_IN_PLACE at the root).  The call's size is the root's n blocks on
 * every rank, read from the buffers that matter on this rank. */
static int rooted(int gathers, const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                  int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n, me;
    PMPI_Comm_size(comm, &n);
    PMPI_Comm_rank(comm, &me);
    const void *all_buf = gathers ? rbuf : sbuf, *own_buf = gathers ? sbuf : rbuf;
    size_t own_count = (size_t)(gathers ? scount : rcount);
    size_t all_count = (size_t)(gathers ? rcount : scount) * (size_t)n;
    MPI_Datatype all_type = gathers ? rdtype : sdtype, own_type = gathers ? sdtype : rdtype;
    int at_root = me == root, in_place = at_root && own_buf == MPI_IN_PLACE;
    CALL(st, gathers ? TAG_GATHER : TAG_SCATTER, MPI_OP_NULL);
    const char *why = at_root ? view_bytes(all_type, all_count, &call.v, &x)
                              : view_bytes(own_type, own_count * (size_t)n, &call.v, &x);
    if (!why && st && st != &unmade)
        why = left_to_mpich(st, gathers ? TACOS_GATHER : TACOS_SCATTER);
    DEVICE(one_run(own_buf, own_count, own_type) && (!at_root || contiguous(all_type, all_count)),
           own_buf, at_root ? all_buf : NULL);
    const tacos_plan_t *p;
    if (gathers)
        PLAN(st, TACOS_GATHER, root, why, p, Gather, Igather, sbuf, scount, sdtype, rbuf, rcount,
             rdtype, root, comm);
    else
        PLAN(st, TACOS_SCATTER, root, why, p, Scatter, Iscatter, sbuf, scount, sdtype, rbuf,
             rcount, rdtype, root, comm);
    tacos_data_t own = in_place ? (tacos_data_t){0} : data(own_buf, own_count, &own_type);
    tacos_data_t all = at_root ? data(all_buf, all_count, &all_type) : (tacos_data_t){0};
    const tacos_data_t *o = in_place ? NULL : &own, *l = at_root ? &all : NULL;
    tacos_args_t a = {.send = gathers ? o : l, .recv = gathers ? l : o, .root = root};
    return RUN(st, p, &a);
}

/* A call on GPU buffers that neither the executor's staging nor MPICH can
 * take: an error, not a device pointer handed to code that reads it as
 * host memory. */
static int unserved(MPI_Comm comm, const char *name, const char *why)
{
    pmpi_say(0, "MPI_%s on GPU buffers: %s; not served (MPICH here is not CUDA-aware)", name, why);
    return done(comm, MPI_ERR_UNSUPPORTED_OPERATION);
}

/* A call on host copies of up to two buffers (each copied in, so that what
 * the call does not write stays as it was; copied back where out0, out1):
 * blocking; nonblocking, copied back when it completes; persistent, copied
 * in at each start and back at each completion.  The call itself
 * (call_expr, on h0 and h1, its request in inner_) looks for no GPU
 * buffers and, where `then` is 2, falls back as the original call did. */
#define BY_HAND(label, call_expr, b0, n0, t0, out0, b1, n1, t1, out1)                       \
    do {                                                                                     \
        tacos_mirror_t mm_[2] = {{0}};                                                       \
        int out_[2] = {(out0), (out1)}, inter_ = 0;                                          \
        void *h0 = NULL, *h1 = NULL;                                                         \
        MPI_Request inner_ = MPI_REQUEST_NULL;                                               \
        const char *name_ = label;                                                           \
        if (comm != MPI_COMM_NULL)                                                           \
            PMPI_Comm_test_inter(comm, &inter_);                                             \
        if (inter_)                                                                          \
            return unserved(comm, name_, "an intercommunicator");                            \
        pmpi_say(10, "MPI_%s on GPU buffers through host copies: %s", name_, why);           \
        void **hs_ = pmpi_hand_stream();                                                     \
        int rc_ = pmpi_mirror(&mm_[0], hs_, b0, n0, t0, mode == PERSISTENT, &h0);            \
        if (rc_ == MPI_SUCCESS)                                                              \
            rc_ = pmpi_mirror(&mm_[1], hs_, b1, n1, t1, mode == PERSISTENT, &h1);            \
        if (rc_ != MPI_SUCCESS) {                                                            \
            pmpi_unmirror(&mm_[0], 0);                                                       \
            return done(comm, rc_);                                                          \
        }                                                                                    \
        hand.then = then, hand.why = why;                                                    \
        rc_ = call_expr;                                                                     \
        hand.then = 0;                                                                       \
        if (rc_ == MPI_SUCCESS && mode != BLOCKING)                                          \
            return done(comm, pmpi_launch_by_hand(inner_, mm_, out_, 2, mode == PERSISTENT,  \
                                                  request));                                 \
        int back0_ = pmpi_unmirror(&mm_[0], (out0) && rc_ == MPI_SUCCESS);                   \
        int back1_ = pmpi_unmirror(&mm_[1], (out1) && rc_ == MPI_SUCCESS);                   \
        if (rc_ != MPI_SUCCESS) /* the call's own error, handled there */                    \
            return rc_;                                                                      \
        return done(comm, back0_ != MPI_SUCCESS ? back0_ : back1_);                          \
    } while (0)

/* The call on host copies, in the original call's mode (its request in inner_). */
#define HOST(fn, ...) fn(__VA_ARGS__, mode, info, &inner_)

static int by_hand_Allreduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                             MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    BY_HAND(NAME(Allreduce, Iallreduce), HOST(allreduce, h0, h1, count, dtype, op, comm), sbuf, (size_t)count, dtype, 0, rbuf,
            (size_t)count, dtype, 1);
}

static size_t size_of(MPI_Comm comm)
{
    int n = 0;
    PMPI_Comm_size(comm, &n);
    return (size_t)n;
}

static int by_hand_Allgather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                             void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm)
{
    BY_HAND(NAME(Allgather, Iallgather), HOST(allgather, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf, (size_t)scount,
            sdtype, 0, rbuf, (size_t)rcount * size_of(comm), rdtype, 1);
}

static int by_hand_Alltoall(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                            void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm)
{
    BY_HAND(NAME(Alltoall, Ialltoall), HOST(alltoall, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf,
            (size_t)scount * size_of(comm), sdtype, 0, rbuf, (size_t)rcount * size_of(comm),
            rdtype, 1);
}

static int rank_of(MPI_Comm comm)
{
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    return me;
}

static int by_hand_Bcast(BY_HAND_ARGS, void *buf, int count, MPI_Datatype dtype, int root,
                         MPI_Comm comm)
{
    BY_HAND(NAME(Bcast, Ibcast), HOST(bcast, h0, count, dtype, root, comm), buf, (size_t)count, dtype,
            rank_of(comm) != root, NULL, 0, dtype, 0);
}

static int by_hand_Reduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                          MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm)
{
    int at_root = rank_of(comm) == root; /* rbuf: the root's */
    BY_HAND(NAME(Reduce, Ireduce), HOST(reduce, h0, at_root ? h1 : rbuf, count, dtype, op, root, comm), sbuf,
            (size_t)count, dtype, 0, at_root ? rbuf : NULL, (size_t)count, dtype, 1);
}

static int by_hand_Reduce_scatter_block(BY_HAND_ARGS, const void *sbuf, void *rbuf, int rcount,
                                        MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    size_t all = (size_t)rcount * size_of(comm);
    BY_HAND(NAME(Reduce_scatter_block, Ireduce_scatter_block), HOST(reduce_scatter_block, h0, h1, rcount, dtype, op, comm), sbuf, all, dtype, 0, rbuf,
            sbuf == MPI_IN_PLACE ? all : (size_t)rcount, dtype, 1);
}

static int by_hand_Reduce_scatter(BY_HAND_ARGS, const void *sbuf, void *rbuf,
                                  const int rcounts[], MPI_Datatype dtype, MPI_Op op,
                                  MPI_Comm comm)
{
    size_t all = 0, n = size_of(comm);
    for (size_t r = 0; r < n; r++)
        all += (size_t)rcounts[r];
    BY_HAND(NAME(Reduce_scatter, Ireduce_scatter), HOST(reduce_scatter, h0, h1, rcounts, dtype, op, comm), sbuf, all, dtype, 0, rbuf,
            sbuf == MPI_IN_PLACE ? all : (size_t)rcounts[rank_of(comm)], dtype, 1);
}

static int by_hand_Gather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                          void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    void *out = rank_of(comm) == root ? rbuf : NULL; /* rbuf: the root's */
    BY_HAND(NAME(Gather, Igather), HOST(rooted, 1, h0, scount, sdtype, out ? h1 : rbuf, rcount, rdtype, root, comm), sbuf,
            (size_t)scount, sdtype, 0, out, (size_t)rcount * size_of(comm), rdtype, 1);
}

static int by_hand_Scatter(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                           void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    const void *in = rank_of(comm) == root ? sbuf : NULL; /* sbuf: the root's */
    BY_HAND(NAME(Scatter, Iscatter), HOST(rooted, 0, in ? h0 : sbuf, scount, sdtype, h1, rcount, rdtype, root, comm), in,
            (size_t)scount * size_of(comm), sdtype, 0, rbuf, (size_t)rcount, rdtype, 1);
}

/* The entry points: each collective in its three modes (MPI_X, MPI_Ix,
 * MPI_X_init, each with `suffix`), calling fn(args..., mode, info, request). */
#define B BLOCKING, MPI_INFO_NULL, &(MPI_Request){MPI_REQUEST_NULL} /* (where it falls back) */
#define WITH_REQUEST(...) (__VA_ARGS__, MPI_Request *request)
#define WITH_INFO_REQUEST(...) (__VA_ARGS__, MPI_Info info, MPI_Request *request)
#define ENTRY_POINTS(name, iname, suffix, fn, params, ...)                                   \
    int MPI_##name##suffix params                                                            \
    {                                                                                        \
        return fn(__VA_ARGS__, B);                                                           \
    }                                                                                        \
    int MPI_##iname##suffix WITH_REQUEST params                                              \
    {                                                                                        \
        return fn(__VA_ARGS__, NONBLOCKING, MPI_INFO_NULL, request);                         \
    }                                                                                        \
    int MPI_##name##_init##suffix WITH_INFO_REQUEST params                                   \
    {                                                                                        \
        return fn(__VA_ARGS__, PERSISTENT, info, request);                                   \
    }
#define CBUF const void *sbuf
#define DT MPI_Datatype

ENTRY_POINTS(Allreduce, Iallreduce, , allreduce,
             (CBUF, void *rbuf, int count, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf, count,
             dtype, op, comm)
ENTRY_POINTS(Allgather, Iallgather, , allgather,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, MPI_Comm comm), sbuf,
             scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Alltoall, Ialltoall, , alltoall,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, MPI_Comm comm), sbuf,
             scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Bcast, Ibcast, , bcast, (void *buf, int count, DT dtype, int root, MPI_Comm comm), buf,
             count, dtype, root, comm)
ENTRY_POINTS(Reduce, Ireduce, , reduce,
             (CBUF, void *rbuf, int count, DT dtype, MPI_Op op, int root, MPI_Comm comm), sbuf,
             rbuf, count, dtype, op, root, comm)
ENTRY_POINTS(Gather, Igather, , rooted,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, int root,
              MPI_Comm comm),
             1, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Scatter, Iscatter, , rooted,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, int root,
              MPI_Comm comm),
             0, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Reduce_scatter_block, Ireduce_scatter_block, , reduce_scatter_block,
             (CBUF, void *rbuf, int rcount, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf,
             rcount, dtype, op, comm)
ENTRY_POINTS(Reduce_scatter, Ireduce_scatter, , reduce_scatter,
             (CBUF, void *rbuf, const int rcounts[], DT dtype, MPI_Op op, MPI_Comm comm), sbuf,
             rbuf, rcounts, dtype, op, comm)

#if MPI_VERSION >= 4
/* The large-count forms (MPI_X_c, MPI_Ix_c, MPI_X_init_c): served by the
 * int forms where the call fits them, decided from the signature's size
 * (equal on every rank, whatever (count, datatype) each passes: one rank's
 * MPI_Ibcast_c may match another's MPI_Ibcast, which a schedule may serve);
 * larger calls go to MPICH's own on every rank. */
static int fits_n(MPI_Count count, MPI_Count n, MPI_Datatype dtype) /* n blocks of count */
{
    MPI_Count size = 0;
    PMPI_Type_size_c(dtype, &size);
    /* no product formed before it is known to fit */
    return count >= 0 && n > 0 && count <= INT_MAX / n &&
           (size <= 0 || count * n <= INT_MAX / size);
}

static int fits(MPI_Count count, MPI_Datatype dtype)
{
    return fits_n(count, 1, dtype);
}

/* MPICH's own large-count form in the call's mode (as FALLBACK), never on
 * GPU buffers (b0, b1: those that matter on this rank): an error there,
 * as for intercommunicators. */
static int gpu_in_c(MPI_Comm comm, const char *name, const void *b0, const void *b1)
{
    call_ctx_t x = {.op = MPI_OP_NULL};
    const void *bufs[] = {b0, b1};
    pmpi_on_device(&x, bufs, 2);
    return x.device ? unserved(comm, name, "a count beyond int") : MPI_SUCCESS;
}
#define MPICH_C(name, iname, b0, b1, ...)                                                    \
    (gpu_in_c(comm,                                                                          \
              mode == NONBLOCKING  ? #iname "_c"                                             \
              : mode == PERSISTENT ? #name "_init_c"                                         \
                                   : #name "_c",                                             \
              b0, b1)                                                                        \
         ? MPI_ERR_UNSUPPORTED_OPERATION                                                     \
         : IN_MODE(PMPI_##iname##_c, PMPI_##name##_init_c, __VA_ARGS__))

static int allreduce_c(CBUF, void *rbuf, MPI_Count count, DT dtype, MPI_Op op, MPI_Comm comm,
                       MODE_ARGS)
{
    return fits(count, dtype)
               ? allreduce(sbuf, rbuf, (int)count, dtype, op, comm, mode, info, request)
               : MPICH_C(Allreduce, Iallreduce, sbuf, rbuf, sbuf, rbuf, count, dtype, op, comm);
}

static int allgather_c(CBUF, MPI_Count scount, DT sdtype, void *rbuf, MPI_Count rcount, DT rdtype,
                       MPI_Comm comm, MODE_ARGS)
{
    return fits_n(rcount, (MPI_Count)size_of(comm), rdtype) &&
                   (sbuf == MPI_IN_PLACE || fits(scount, sdtype))
               ? allgather(sbuf, (int)scount, sdtype, rbuf, (int)rcount, rdtype, comm, mode, info,
                           request)
               : MPICH_C(Allgather, Iallgather, sbuf, rbuf, sbuf, scount, sdtype, rbuf, rcount,
                         rdtype, comm);
}

static int alltoall_c(CBUF, MPI_Count scount, DT sdtype, void *rbuf, MPI_Count rcount, DT rdtype,
                      MPI_Comm comm, MODE_ARGS)
{
    MPI_Count n = (MPI_Count)size_of(comm);
    return fits_n(rcount, n, rdtype) && (sbuf == MPI_IN_PLACE || fits_n(scount, n, sdtype))
               ? alltoall(sbuf, (int)scount, sdtype, rbuf, (int)rcount, rdtype, comm, mode, info,
                          request)
               : MPICH_C(Alltoall, Ialltoall, sbuf, rbuf, sbuf, scount, sdtype, rbuf, rcount,
                         rdtype, comm);
}

static int bcast_c(void *buf, MPI_Count count, DT dtype, int root, MPI_Comm comm, MODE_ARGS)
{
    return fits(count, dtype)
               ? bcast(buf, (int)count, dtype, root, comm, mode, info, request)
               : MPICH_C(Bcast, Ibcast, buf, NULL, buf, count, dtype, root, comm);
}

/* Gather's and Scatter's: the root's whole buffer, read where it is
 * significant (the root's n blocks, another rank's one block n times);
 * intercommunicators go to MPI (their int forms fall back too). */
static int rooted_fits(int gathers, CBUF, MPI_Count scount, DT sdtype, const void *rbuf,
                       MPI_Count rcount, DT rdtype, int root, MPI_Comm comm)
{
    int inter;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return 0;
    MPI_Count n = (MPI_Count)size_of(comm);
    MPI_Count all = gathers ? rcount : scount, own = gathers ? scount : rcount;
    MPI_Datatype all_type = gathers ? rdtype : sdtype, own_type = gathers ? sdtype : rdtype;
    if (rank_of(comm) != root)
        return fits_n(own, n, own_type);
    return fits_n(all, n, all_type) &&
           ((gathers ? sbuf : rbuf) == MPI_IN_PLACE || fits(own, own_type));
}

static int rooted_c(int gathers, CBUF, MPI_Count scount, DT sdtype, void *rbuf, MPI_Count rcount,
                    DT rdtype, int root, MPI_Comm comm, MODE_ARGS)
{
    int me = rank_of(comm);
    if (rooted_fits(gathers, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm))
        return rooted(gathers, sbuf, (int)scount, sdtype, rbuf, (int)rcount, rdtype, root, comm,
                      mode, info, request);
    if (gathers)
        return MPICH_C(Gather, Igather, sbuf, me == root ? rbuf : NULL, sbuf, scount, sdtype, rbuf,
                       rcount, rdtype, root, comm);
    return MPICH_C(Scatter, Iscatter, me == root ? sbuf : NULL, rbuf, sbuf, scount, sdtype, rbuf,
                   rcount, rdtype, root, comm);
}

static int reduce_c(CBUF, void *rbuf, MPI_Count count, DT dtype, MPI_Op op, int root,
                    MPI_Comm comm, MODE_ARGS)
{
    return fits(count, dtype)
               ? reduce(sbuf, rbuf, (int)count, dtype, op, root, comm, mode, info, request)
               : MPICH_C(Reduce, Ireduce, sbuf, rank_of(comm) == root ? rbuf : NULL, sbuf, rbuf,
                         count, dtype, op, root, comm);
}

static int reduce_scatter_block_c(CBUF, void *rbuf, MPI_Count rcount, DT dtype, MPI_Op op,
                                  MPI_Comm comm, MODE_ARGS)
{
    return fits_n(rcount, (MPI_Count)size_of(comm), dtype)
               ? reduce_scatter_block(sbuf, rbuf, (int)rcount, dtype, op, comm, mode, info,
                                      request)
               : MPICH_C(Reduce_scatter_block, Ireduce_scatter_block, sbuf, rbuf, sbuf, rbuf,
                         rcount, dtype, op, comm);
}

/* rcounts are equal on every rank: so is the decision.  The int counts
 * are freed on return: the library's schedules take them when the call is
 * made (a persistent one's too), and so do MPICH 4.0.2's
 * MPI_Ireduce_scatter and MPI_Reduce_scatter_init (checked with the counts
 * freed before the wait, under valgrind; mpi_coll_check --large-count
 * overwrites them). */
static int reduce_scatter_c(CBUF, void *rbuf, const MPI_Count rcounts[], DT dtype, MPI_Op op,
                            MPI_Comm comm, MODE_ARGS)
{
    int n = (int)size_of(comm), *counts;
    MPI_Count total = 0;
    for (int r = 0; r < n; r++)
        total += rcounts[r] < 0 || rcounts[r] > INT_MAX ? INT_MAX + 1LL : rcounts[r];
    if (!fits(total, dtype))
        return MPICH_C(Reduce_scatter, Ireduce_scatter, sbuf, rbuf, sbuf, rbuf, rcounts, dtype, op,
                       comm);
    if (!(counts = malloc((size_t)n * sizeof *counts)))
        return done(comm, MPI_ERR_NO_MEM);
    for (int r = 0; r < n; r++)
        counts[r] = (int)rcounts[r];
    int rc = reduce_scatter(sbuf, rbuf, counts, dtype, op, comm, mode, info, request);
    free(counts);
    return rc;
}

#define CCOUNT MPI_Count
ENTRY_POINTS(Allreduce, Iallreduce, _c, allreduce_c,
             (CBUF, void *rbuf, CCOUNT count, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf,
             count, dtype, op, comm)
ENTRY_POINTS(Allgather, Iallgather, _c, allgather_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, MPI_Comm comm),
             sbuf, scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Alltoall, Ialltoall, _c, alltoall_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, MPI_Comm comm),
             sbuf, scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Bcast, Ibcast, _c, bcast_c,
             (void *buf, CCOUNT count, DT dtype, int root, MPI_Comm comm), buf, count, dtype, root,
             comm)
ENTRY_POINTS(Reduce, Ireduce, _c, reduce_c,
             (CBUF, void *rbuf, CCOUNT count, DT dtype, MPI_Op op, int root, MPI_Comm comm), sbuf,
             rbuf, count, dtype, op, root, comm)
ENTRY_POINTS(Gather, Igather, _c, rooted_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, int root,
              MPI_Comm comm),
             1, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Scatter, Iscatter, _c, rooted_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, int root,
              MPI_Comm comm),
             0, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Reduce_scatter_block, Ireduce_scatter_block, _c, reduce_scatter_block_c,
             (CBUF, void *rbuf, CCOUNT rcount, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf,
             rcount, dtype, op, comm)
ENTRY_POINTS(Reduce_scatter, Ireduce_scatter, _c, reduce_scatter_c,
             (CBUF, void *rbuf, const CCOUNT rcounts[], DT dtype, MPI_Op op, MPI_Comm comm), sbuf,
             rbuf, rcounts, dtype, op, comm)
#undef CCOUNT
#endif
#undef B
#undef WITH_REQUEST
#undef WITH_INFO_REQUEST
#undef ENTRY_POINTS
#undef CBUF
#undef DT

/* MPI_Barrier plans what nonblocking calls of the communicator wanted
 * (making its state first where one of them found none), and progresses
 * operations in flight while it waits. */
int MPI_Barrier(MPI_Comm comm)
{
    unmade_t *u;
    int marked = 0, rc;
    pthread_once(&once, init_once);
    if (comm != MPI_COMM_NULL)
        PMPI_Comm_get_attr(comm, unmade_keyval, &u, &marked);
    state_t *st = state_of(comm, marked);
    if (st == &unmade) /* none, and no nonblocking call wanted one */
        st = NULL;
    if (st && marked) {
        /* the keys are the same on every rank, unless one lacked the memory */
        int n[2] = {u->n, -u->n};
        own_allreduce(n, 2, MPI_INT, MPI_MIN, st->comm);
        for (int i = 0; n[0] == -n[1] && i < u->n; i++) {
            const char *why = left_to_mpich(st, u->key[i].coll);
            tacos_comm_plan_nonblocking(st->core, u->key[i].coll, u->key[i].root,
                                        u->key[i].bytes, &why);
        }
    }
    if (marked)
        PMPI_Comm_delete_attr(comm, unmade_keyval);
    if (st && (rc = tacos_comm_prepare(st->core)) != MPI_SUCCESS)
        return done(comm, rc);
    /* nonblocking on every rank (blocking and nonblocking barriers do not
     * match, and only some ranks may have operations of this library's to
     * progress while they wait), as are the allreduces above (own_allreduce,
     * the core's callbacks) */
    MPI_Request r; /* (an error went to the communicator's handler in MPICH's call) */
    return waited(PMPI_Ibarrier(comm, &r), &r);
}

/* The blocking collectives this library does not serve: MPICH's
 * nonblocking forms, waited for with pmpi_wait on every rank (blocking and
 * nonblocking collectives do not match), so that a rank in one progresses
 * this library's operations while it waits, as MPI's progress rule asks: a
 * peer may wait for one of them before it joins (MPICH's blocking forms
 * progress only MPICH's own, and the job hung).  The same for the calls
 * that fall back (FALLBACK) and MPI_Barrier.  WAITED_UNLESS: where
 * `blocking` (a condition every rank decides alike), MPICH's blocking form
 * once every rank has arrived (ARRIVED_FIRST). */
#define WAITED_UNLESS(blocking, name, iname, params, ...)                                    \
    int MPI_##name params                                                                    \
    {                                                                                        \
        MPI_Request r;                                                                       \
        int rc_;                                                                             \
        if (blocking) /* (the arguments may name a count rc) */                              \
            return (rc_ = arrived(comm)) != MPI_SUCCESS ? rc_ : PMPI_##name(__VA_ARGS__);    \
        return waited(PMPI_##iname(__VA_ARGS__, &r), &r);                                    \
    }
#define WAITED(name, iname, params, ...) WAITED_UNLESS(0, name, iname, params, __VA_ARGS__)
/* The blocking calls over a communicator that have no nonblocking form
 * (its constructors): MPICH's, once every rank of comm has arrived, so
 * that none waits there for this rank's operations (before, a rank in
 * MPI_Comm_split while a peer waited for its part of a collective hung). */
#define ARRIVED_FIRST(name, params, ...)                                                     \
    int MPI_##name params                                                                    \
    {                                                                                        \
        int rc_ = arrived(comm);                                                             \
        return rc_ != MPI_SUCCESS ? rc_ : PMPI_##name(__VA_ARGS__);                          \
    }
/* Alltoallw in place: MPICH's blocking form once every rank has arrived
 * (every rank passes MPI_IN_PLACE): MPICH 4.0.2's MPI_Ialltoallw in place
 * gives wrong blocks */
#define IN_PLACE (sbuf == MPI_IN_PLACE)
#define CBUF const void *sbuf
#define CINTS const int
WAITED(Allgatherv, Iallgatherv,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, CINTS rc[], CINTS d[], MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Gatherv, Igatherv,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, CINTS rc[], CINTS d[], MPI_Datatype rt, int root,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, root, comm)
WAITED(Scatterv, Iscatterv,
       (CBUF, CINTS sc[], CINTS d[], MPI_Datatype st, void *rbuf, int rc, MPI_Datatype rt, int root,
        MPI_Comm comm),
       sbuf, sc, d, st, rbuf, rc, rt, root, comm)
WAITED(Alltoallv, Ialltoallv,
       (CBUF, CINTS sc[], CINTS sd[], MPI_Datatype st, void *rbuf, CINTS rc[], CINTS rd[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED_UNLESS(IN_PLACE, Alltoallw, Ialltoallw,
              (CBUF, CINTS sc[], CINTS sd[], const MPI_Datatype st[], void *rbuf, CINTS rc[],
               CINTS rd[], const MPI_Datatype rt[], MPI_Comm comm),
              sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Scan, Iscan, (CBUF, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm), sbuf,
       rbuf, count, t, op, comm)
WAITED(Exscan, Iexscan, (CBUF, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm),
       sbuf, rbuf, count, t, op, comm)
WAITED(Neighbor_allgather, Ineighbor_allgather,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, int rc, MPI_Datatype rt, MPI_Comm comm), sbuf,
       sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_allgatherv, Ineighbor_allgatherv,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, CINTS rc[], CINTS d[], MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Neighbor_alltoall, Ineighbor_alltoall,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, int rc, MPI_Datatype rt, MPI_Comm comm), sbuf,
       sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_alltoallv, Ineighbor_alltoallv,
       (CBUF, CINTS sc[], CINTS sd[], MPI_Datatype st, void *rbuf, CINTS rc[], CINTS rd[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Neighbor_alltoallw, Ineighbor_alltoallw,
       (CBUF, CINTS sc[], const MPI_Aint sd[], const MPI_Datatype st[], void *rbuf, CINTS rc[],
        const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
#undef CBUF
#undef CINTS

#if MPI_VERSION >= 4
/* The large-count forms of the collectives not served (WAITED): they may
 * match the int forms on other ranks, so they are waited forms too. */
#define CBUF const void *sbuf
#define CCOUNTS const MPI_Count
#define CDISPLS const MPI_Aint
WAITED(Allgatherv_c, Iallgatherv_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, CCOUNTS rc[], CDISPLS d[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Gatherv_c, Igatherv_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, CCOUNTS rc[], CDISPLS d[],
        MPI_Datatype rt, int root, MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, root, comm)
WAITED(Scatterv_c, Iscatterv_c,
       (CBUF, CCOUNTS sc[], CDISPLS d[], MPI_Datatype st, void *rbuf, MPI_Count rc,
        MPI_Datatype rt, int root, MPI_Comm comm),
       sbuf, sc, d, st, rbuf, rc, rt, root, comm)
WAITED(Alltoallv_c, Ialltoallv_c,
       (CBUF, CCOUNTS sc[], CDISPLS sd[], MPI_Datatype st, void *rbuf, CCOUNTS rc[],
        CDISPLS rd[], MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED_UNLESS(IN_PLACE, Alltoallw_c, Ialltoallw_c,
              (CBUF, CCOUNTS sc[], CDISPLS sd[], const MPI_Datatype st[], void *rbuf, CCOUNTS rc[],
               CDISPLS rd[], const MPI_Datatype rt[], MPI_Comm comm),
              sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Scan_c, Iscan_c, (CBUF, void *rbuf, MPI_Count count, MPI_Datatype t, MPI_Op op,
                         MPI_Comm comm), sbuf, rbuf, count, t, op, comm)
WAITED(Exscan_c, Iexscan_c, (CBUF, void *rbuf, MPI_Count count, MPI_Datatype t, MPI_Op op,
                             MPI_Comm comm), sbuf, rbuf, count, t, op, comm)
WAITED(Neighbor_allgather_c, Ineighbor_allgather_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, MPI_Count rc, MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_allgatherv_c, Ineighbor_allgatherv_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, CCOUNTS rc[], CDISPLS d[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Neighbor_alltoall_c, Ineighbor_alltoall_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, MPI_Count rc, MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_alltoallv_c, Ineighbor_alltoallv_c,
       (CBUF, CCOUNTS sc[], CDISPLS sd[], MPI_Datatype st, void *rbuf, CCOUNTS rc[],
        CDISPLS rd[], MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Neighbor_alltoallw_c, Ineighbor_alltoallw_c,
       (CBUF, CCOUNTS sc[], CDISPLS sd[], const MPI_Datatype st[], void *rbuf, CCOUNTS rc[],
        CDISPLS rd[], const MPI_Datatype rt[], MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
#undef CBUF
#undef CCOUNTS
#undef CDISPLS
#endif
#undef IN_PLACE

/* The info key "tacos_enable" ("true" or "false"; MPI_Comm_dup_with_info,
 * MPI_Comm_set_info before the communicator's first collective) overrides
 * TACOS_ENABLE for that communicator: a switch that needs no environment,
 * e.g. to compare with MPICH's own collectives in one job.  MPICH keeps no
 * info key it does not know, so the library reads it on the way in. */
static void note_enable(MPI_Comm comm, MPI_Info info)
{
    char v[16];
    int flag = 0;
    pthread_once(&once, init_once);
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, "tacos_enable", sizeof v - 1, v, &flag) ||
        !flag)
        return;
    int on = !strcmp(v, "true") || !strcmp(v, "1");
    if (!on && strcmp(v, "false") && strcmp(v, "0"))
        pmpi_say(0, "info key tacos_enable=%s is neither true nor false; ignored", v);
    else
        PMPI_Comm_set_attr(comm, enable_keyval, on ? (void *)1 : NULL);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    MPI_Request r; /* waited for, as MPI_Comm_dup below */
    int rc = waited(PMPI_Comm_idup_with_info(comm, info, newcomm, &r), &r);
    if (rc == MPI_SUCCESS)
        note_enable(*newcomm, info);
    return rc;
}

/* MPICH's nonblocking form, waited for on every rank as WAITED says: a
 * rank in MPI_Comm_dup progresses this library's operations while it
 * waits (MPI_Comm_split and the other constructors have no nonblocking
 * form). */
WAITED(Comm_dup, Comm_idup, (MPI_Comm comm, MPI_Comm *newcomm), comm, newcomm)
#define CINTS const int
ARRIVED_FIRST(Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm), comm, color, key,
              newcomm)
ARRIVED_FIRST(Comm_split_type,
              (MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm), comm, type,
              key, info, newcomm)
ARRIVED_FIRST(Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm), comm, group,
              newcomm)
ARRIVED_FIRST(Intercomm_merge, (MPI_Comm comm, int high, MPI_Comm *newcomm), comm, high, newcomm)
ARRIVED_FIRST(Cart_create,
              (MPI_Comm comm, int ndims, CINTS dims[], CINTS periods[], int reorder,
               MPI_Comm *newcomm),
              comm, ndims, dims, periods, reorder, newcomm)
ARRIVED_FIRST(Cart_sub, (MPI_Comm comm, CINTS remain[], MPI_Comm *newcomm), comm, remain, newcomm)
ARRIVED_FIRST(Graph_create,
              (MPI_Comm comm, int nnodes, CINTS index[], CINTS edges[], int reorder,
               MPI_Comm *newcomm),
              comm, nnodes, index, edges, reorder, newcomm)
ARRIVED_FIRST(Dist_graph_create,
              (MPI_Comm comm, int n, CINTS sources[], CINTS degrees[], CINTS dests[],
               CINTS weights[], MPI_Info info, int reorder, MPI_Comm *newcomm),
              comm, n, sources, degrees, dests, weights, info, reorder, newcomm)
ARRIVED_FIRST(Dist_graph_create_adjacent,
              (MPI_Comm comm, int indegree, CINTS sources[], CINTS sourceweights[], int outdegree,
               CINTS dests[], CINTS destweights[], MPI_Info info, int reorder, MPI_Comm *newcomm),
              comm, indegree, sources, sourceweights, outdegree, dests, destweights, info, reorder,
              newcomm)
#undef CINTS

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    int rc = PMPI_Comm_set_info(comm, info);
    if (rc == MPI_SUCCESS)
        note_enable(comm, info);
    return rc;
}

/* States of MPI_COMM_WORLD and MPI_COMM_SELF go before MPI does (their
 * attributes may outlive the library's last chance to free a duplicate);
 * collectives called from then on (e.g. in attribute callbacks that
 * PMPI_Finalize runs) go to MPI. */
int MPI_Finalize(void)
{
    if (keyval != MPI_KEYVAL_INVALID) {
        PMPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
        PMPI_Comm_delete_attr(MPI_COMM_SELF, keyval);
        __atomic_store_n(&finalizing, 1, __ATOMIC_RELAXED);
        pmpi_requests_finalize();
        int me;
        PMPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (me == 0)
            pmpi_say(5, "MPI_Finalize: %d communicator state(s) left (communicators not freed)",
                __atomic_load_n(&live_states, __ATOMIC_RELAXED));
    }
    return PMPI_Finalize();
}
