/*
 * libtacos-pmpi: coll/tacos for MPICH (or any MPI with the profiling
 * interface), as a library that defines MPI_Allreduce, MPI_Allgather,
 * MPI_Bcast, MPI_Reduce, MPI_Reduce_scatter and MPI_Reduce_scatter_block
 * and calls the MPI library's PMPI_* for everything else.  Preloaded
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
#include <limits.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "tacos_comm.h"

/* Tags on the private duplicate: one per collective, one for measurements. */
enum {
    TAG_ALLREDUCE = 1, TAG_ALLGATHER, TAG_BCAST, TAG_REDUCE, TAG_REDUCE_SCATTER, TAG_MEASURE,
    TAG_COPY /* element copies: a message to self */
};

/* ---- parameters --------------------------------------------------------------- */

static tacos_settings_t settings = TACOS_SETTINGS_DEFAULT;

/* TACOS_<NAME> as an integer >= lo, or the default with a message. */
static void env_int(const char *name, int lo, int *v)
{
    const char *e = getenv(name);
    char *end;
    if (!e || !*e)
        return;
    long x = strtol(e, &end, 10);
    if (*end || x < lo || x > INT_MAX)
        fprintf(stderr, "coll:tacos: %s=%s is not an integer >= %d; using %d\n", name, e, lo, *v);
    else
        *v = (int)x;
}

static void read_settings(void)
{
    tacos_settings_t *s = &settings;
    int scratch_mib = (int)(s->scratch_max >> 20);
    env_int("TACOS_ENABLE", 0, &s->enable);
    env_int("TACOS_VERBOSE", 0, &s->verbose);
    env_int("TACOS_MIN_BYTES", 0, &s->min_bytes);
    env_int("TACOS_ROOTED_MIN_BYTES", 0, &s->rooted_min_bytes);
    env_int("TACOS_CHUNKS", 0, &s->chunks);
    env_int("TACOS_SEED", 0, &s->seed);
    env_int("TACOS_TRIALS", 1, &s->trials);
    env_int("TACOS_UNWIND_DEGREE", 0, &s->unwind_degree);
    env_int("TACOS_PROBE", 0, &s->probe);
    env_int("TACOS_PROBE_GPU", 0, &s->probe_gpu);
    env_int("TACOS_CALIBRATE", 0, &s->calibrate);
    env_int("TACOS_MEASURE", 0, &s->measure);
    env_int("TACOS_CACHE_SIZE", 1, &s->cache_size);
    env_int("TACOS_DETERMINISTIC", 0, &s->deterministic);
    env_int("TACOS_SCRATCH_MAX_MIB", 0, &scratch_mib);
    s->scratch_max = (size_t)scratch_mib << 20;
    s->topo_file = getenv("TACOS_TOPO_FILE");
    s->dump_dir = getenv("TACOS_DUMP_DIR");
    s->probe_hwloc_xml = getenv("TACOS_PROBE_HWLOC_XML");
    if (getenv("TACOS_UCX_LIB"))
        s->ucx_lib = getenv("TACOS_UCX_LIB");
    s->param_prefix = "TACOS_";
    s->previous = "the MPI library's own collectives";
}

static void say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int level, const char *fmt, ...)
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

typedef struct {
    MPI_Comm comm;      /* the private duplicate */
    tacos_comm_t *core; /* NULL: every call of this communicator falls back */
    void *space; /* per wait: statuses, the executor's requests in MPI's type, indices */
    size_t nspace;
} state_t;

static int keyval = MPI_KEYVAL_INVALID;
static int enable_keyval = MPI_KEYVAL_INVALID; /* the info key tacos_enable, until the state */
static int live_states;                    /* for the verbose summary at MPI_Finalize */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int finalizing; /* from MPI_Finalize on, every call goes to MPI */

/* A communicator whose state could not be allocated: it falls back. */
static state_t no_state;

static int delete_state(MPI_Comm comm, int key, void *attr, void *extra)
{
    (void)comm, (void)key, (void)extra;
    state_t *st = attr;
    if (st == &no_state)
        return MPI_SUCCESS;
    tacos_comm_free(st->core);
    if (st->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&st->comm);
    free(st->space);
    free(st);
    __atomic_sub_fetch(&live_states, 1, __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

static void init_once(void)
{
    read_settings();
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &keyval, NULL);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &enable_keyval, NULL);
}

/* the core's callbacks over the private duplicate */
static int core_max_u64(void *ctx, uint64_t *v, int n)
{
    return PMPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_MAX, ((state_t *)ctx)->comm);
}

static int core_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    return PMPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                          ((state_t *)ctx)->comm);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int core_exchange(void *ctx, const int *peers, int n, const void *sbuf, size_t sbytes,
                         void *rbuf, size_t rbytes, double *t_us)
{
    MPI_Comm comm = ((state_t *)ctx)->comm;
    MPI_Request req[4];
    int rc = MPI_SUCCESS, posted = 0, peer_of[4];
    if (n > 2)
        return MPI_ERR_ARG;
    double t0 = now_us();
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        if (rbytes && (rc = PMPI_Irecv((char *)rbuf + (size_t)i * rbytes, (int)rbytes, MPI_BYTE,
                                       peers[i], TAG_MEASURE, comm, &req[posted])) == MPI_SUCCESS)
            peer_of[posted++] = i;
        if (sbytes && rc == MPI_SUCCESS &&
            (rc = PMPI_Isend(sbuf, (int)sbytes, MPI_BYTE, peers[i], TAG_MEASURE, comm,
                             &req[posted])) == MPI_SUCCESS)
            peer_of[posted++] = i;
    }
    for (int left = posted; left > 0 && rc == MPI_SUCCESS; left--) {
        int idx = 0; /* a peer is done when both of its are */
        if ((rc = PMPI_Waitany(posted, req, &idx, MPI_STATUS_IGNORE)) == MPI_SUCCESS)
            t_us[peer_of[idx]] = now_us() - t0;
    }
    return rc;
}

static void core_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    say(level, "%s", msg);
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
    /* a split in rank order: the same group, but unlike a dup it runs none
     * of the application's attribute copy (and later delete) callbacks */
    if (!inter && n >= 2 && PMPI_Comm_split(comm, 0, me, &dup) == MPI_SUCCESS) {
        const char *lr = getenv("MPI_LOCALRANKID"); /* set by MPICH's hydra */
        tacos_comm_ops_t ops = {.ctx = st,
                                .rank = me,
                                .size = n,
                                .local_rank = lr ? atoi(lr) : 0,
                                .id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED),
                                .max_u64 = core_max_u64,
                                .allgather = core_allgather,
                                .exchange = core_exchange,
                                .log = core_log};
        /* errors come back here, then go to the application's handler */
        PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        tacos_settings_t set = settings;
        void *on;
        int found = 0;
        PMPI_Comm_get_attr(comm, enable_keyval, &on, &found);
        if (found) /* the info key tacos_enable (agreed at the first plan like the rest) */
            set.enable = on != NULL;
        if (st)
            st->core = tacos_comm_new(&set, &ops);
        ok = st && st->core;
        PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, dup);
        if (!ok && st) {
            tacos_comm_free(st->core);
            st->core = NULL;
        }
        if (!ok && me == 0)
            say(0, "out of memory for a communicator's state; it falls back");
    }
    if (!st) {
        if (dup != MPI_COMM_NULL)
            PMPI_Comm_free(&dup);
        st = &no_state;
    } else {
        st->comm = dup; /* MPI_COMM_NULL: intercommunicator or one rank */
        __atomic_add_fetch(&live_states, 1, __ATOMIC_RELAXED);
    }
    PMPI_Comm_set_attr(comm, keyval, st);
    return st;
}

/* The communicator's state, made at its first call; NULL: fall back. */
static state_t *state_of(MPI_Comm comm)
{
    pthread_once(&once, init_once);
    state_t *st = NULL;
    int found = 0;
    if (__atomic_load_n(&finalizing, __ATOMIC_RELAXED) || comm == MPI_COMM_NULL ||
        PMPI_Comm_get_attr(comm, keyval, &st, &found) != MPI_SUCCESS)
        return NULL;
    if (!found)
        st = make_state(comm);
    return st && st->core ? st : NULL;
}

/* ---- transport over PMPI_Isend / PMPI_Irecv --------------------------------------- */

/* One call: what the transport and the datatype callbacks need. */
typedef struct {
    state_t *st;
    int tag;
    MPI_Datatype unit; /* MPI_BYTE, or the datatype reductions combine */
    ptrdiff_t shift;   /* the executor's unit i starts shift past element i */
    MPI_Op op;
    int error; /* the first MPI error of the transport */
} call_ctx_t;

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
 * some may have completed); a failed one's error is taken from its status. */
static int some(call_ctx_t *c, void **reqs, size_t n, char *done, int block)
{
    state_t *st = c->st;
    if (n > st->nspace) {
        void *r = realloc(st->space, n * (sizeof(MPI_Status) + sizeof(MPI_Request) + sizeof(int)));
        if (!r)
            return failed(c, MPI_ERR_NO_MEM);
        st->space = r, st->nspace = n;
    }
    MPI_Status *status = st->space;
    MPI_Request *mreq = (MPI_Request *)(status + st->nspace);
    int *idx = (int *)(mreq + st->nspace), out = 0;
    for (size_t i = 0; i < n; i++)
        mreq[i] = to_req(reqs[i]);
    int rc = block ? PMPI_Waitsome((int)n, mreq, &out, idx, status)
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
        int inner_combiner;
        PMPI_Type_get_envelope(inner, &ni, &na, &nd, &inner_combiner);
        if (inner_combiner != MPI_COMBINER_NAMED)
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
    return PMPI_Sendrecv(src, count, dtype, me, TAG_COPY, dst, count, dtype, me, TAG_COPY,
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
    return (tacos_data_t){(void *)buf, count, dtype, ext};
}

/* ---- the collectives ------------------------------------------------------------------ */

/* A call's context and what the core needs of it. */
#define CALL(st, tag, op)                                                                    \
    call_ctx_t x = {st, tag, MPI_BYTE, 0, op, MPI_SUCCESS};                                 \
    tacos_call_t call = {{&x, pmpi_isend, pmpi_irecv, pmpi_wait_some, pmpi_test_some,        \
                          pmpi_abandon, reduce_local},                            \
                         {0, 0, 0, 0},                                                        \
                         dt_contiguous,                                                       \
                         dt_pack,                                                             \
                         dt_unpack,                                                           \
                         MPI_ERR_NO_MEM,                                                      \
                         MPI_ERR_INTERN,                                                      \
                         &x.error}

/* The state, or the MPI library's own collective. */
#define STATE(st, comm, name, ...)                                                           \
    state_t *st = state_of(comm);                                                            \
    if (!st)                                                                                 \
        return PMPI_##name(__VA_ARGS__);

/* An empty signature moves nothing on any rank: done, with no message.
 * Else plans; returns an error, falls back with the reason, or goes on. */
#define PLAN(st, coll, root, why, p, name, ...)                                              \
    do {                                                                                     \
        if (!(why) && call.v.bytes == 0)                                                     \
            return MPI_SUCCESS;                                                              \
        int plan_rc_ = tacos_comm_plan((st)->core, coll, root, call.v.bytes, &(why), &(p));  \
        if (plan_rc_ != MPI_SUCCESS)                                                         \
            return PMPI_Comm_call_errhandler(comm, plan_rc_), plan_rc_;                      \
        if (!(p)) {                                                                          \
            say(10, "MPI_%s: fallback: %s", #name, why);                                        \
            return PMPI_##name(__VA_ARGS__);                                                 \
        }                                                                                    \
    } while (0)

/* An error goes to the communicator's error handler, as MPI's would. */
static int done(MPI_Comm comm, int rc)
{
    if (rc != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                  MPI_Comm comm)
{
    STATE(st, comm, Allreduce, sbuf, rbuf, count, dtype, op, comm);
    CALL(st, TAG_ALLREDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLREDUCE, 0, why, p, Allreduce, sbuf, rbuf, count, dtype, op, comm);
    tacos_data_t s = data(sbuf, (size_t)count, &dtype), r = data(rbuf, (size_t)count, &dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, 0, NULL, 0};
    return done(comm, tacos_run(st->core, p, &call, &a));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm)
{
    STATE(st, comm, Allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    CALL(st, TAG_ALLGATHER, MPI_OP_NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLGATHER, 0, why, p, Allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype,
         comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    tacos_data_t s = sbuf == MPI_IN_PLACE ? (tacos_data_t){0} : data(sbuf, (size_t)scount, &sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * (size_t)n, &rdtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, 0, NULL, 0};
    return done(comm, tacos_run(st->core, p, &call, &a));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    STATE(st, comm, Bcast, buf, count, dtype, root, comm);
    CALL(st, TAG_BCAST, MPI_OP_NULL);
    const char *why = view_bytes(dtype, (size_t)count, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(st, TACOS_BROADCAST, root, why, p, Bcast, buf, count, dtype, root, comm);
    tacos_data_t d = data(buf, (size_t)count, &dtype);
    tacos_args_t a = {NULL, &d, root, NULL, 0};
    return done(comm, tacos_run(st->core, p, &call, &a));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
               MPI_Comm comm)
{
    STATE(st, comm, Reduce, sbuf, rbuf, count, dtype, op, root, comm);
    CALL(st, TAG_REDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE, root, why, p, Reduce, sbuf, rbuf, count, dtype, op, root, comm);
    tacos_data_t s = data(sbuf, (size_t)count, &dtype), r = data(rbuf, (size_t)count, &dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, root, NULL, 0};
    return done(comm, tacos_run(st->core, p, &call, &a));
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                             MPI_Op op, MPI_Comm comm)
{
    STATE(st, comm, Reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    size_t total = (size_t)rcount * (size_t)n;
    CALL(st, TAG_REDUCE_SCATTER, op);
    const char *why = view_elements(dtype, total, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE_SCATTER, 0, why, p, Reduce_scatter_block, sbuf, rbuf, rcount, dtype, op,
         comm);
    tacos_data_t s = data(sbuf, total, &dtype), r = data(rbuf, total, &dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, 0, NULL, (size_t)rcount};
    return done(comm, tacos_run(st->core, p, &call, &a));
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                       MPI_Op op, MPI_Comm comm)
{
    STATE(st, comm, Reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    size_t total = 0;
    for (int r = 0; r < n; r++)
        total += (size_t)rcounts[r];
    CALL(st, TAG_REDUCE_SCATTER, op);
    const char *why = view_elements(dtype, total, op, &call.v, &x);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE_SCATTER, 0, why, p, Reduce_scatter, sbuf, rbuf, rcounts, dtype, op,
         comm);
    tacos_data_t s = data(sbuf, total, &dtype), r = data(rbuf, total, &dtype);
    tacos_args_t a = {sbuf == MPI_IN_PLACE ? NULL : &s, &r, 0, rcounts, 0};
    return done(comm, tacos_run(st->core, p, &call, &a));
}

#if MPI_VERSION >= 4
/* The large-count forms: served by the int forms where the call fits them,
 * decided from the signature's size (equal on every rank, whatever
 * (count, datatype) each passes: one rank's MPI_Bcast_c may match another's
 * MPI_Bcast); larger calls go to MPI on every rank. */
static int fits(MPI_Count count, MPI_Datatype dtype)
{
    MPI_Count size = 0;
    PMPI_Type_size_c(dtype, &size);
    return count >= 0 && count <= INT_MAX && count * size <= INT_MAX;
}

int MPI_Allreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op,
                    MPI_Comm comm)
{
    return fits(count, dtype) ? MPI_Allreduce(sbuf, rbuf, (int)count, dtype, op, comm)
                              : PMPI_Allreduce_c(sbuf, rbuf, count, dtype, op, comm);
}

int MPI_Allgather_c(const void *sbuf, MPI_Count scount, MPI_Datatype sdtype, void *rbuf,
                    MPI_Count rcount, MPI_Datatype rdtype, MPI_Comm comm)
{
    int n;
    PMPI_Comm_size(comm, &n);
    return fits(rcount * n, rdtype) && (sbuf == MPI_IN_PLACE || fits(scount, sdtype))
               ? MPI_Allgather(sbuf, (int)scount, sdtype, rbuf, (int)rcount, rdtype, comm)
               : PMPI_Allgather_c(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}

int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    return fits(count, dtype) ? MPI_Bcast(buf, (int)count, dtype, root, comm)
                              : PMPI_Bcast_c(buf, count, dtype, root, comm);
}

int MPI_Reduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op,
                 int root, MPI_Comm comm)
{
    return fits(count, dtype) ? MPI_Reduce(sbuf, rbuf, (int)count, dtype, op, root, comm)
                              : PMPI_Reduce_c(sbuf, rbuf, count, dtype, op, root, comm);
}

int MPI_Reduce_scatter_block_c(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dtype,
                               MPI_Op op, MPI_Comm comm)
{
    int n;
    PMPI_Comm_size(comm, &n);
    return fits(rcount * n, dtype)
               ? MPI_Reduce_scatter_block(sbuf, rbuf, (int)rcount, dtype, op, comm)
               : PMPI_Reduce_scatter_block_c(sbuf, rbuf, rcount, dtype, op, comm);
}

/* rcounts are equal on every rank: so is the decision */
int MPI_Reduce_scatter_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                         MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    enum { MAX_RANKS = 1024 }; /* int counts on the stack (larger: MPI) */
    int n, counts[MAX_RANKS];
    MPI_Count total = 0;
    PMPI_Comm_size(comm, &n);
    for (int r = 0; r < n && r < MAX_RANKS; r++)
        total += rcounts[r] < 0 ? INT_MAX + 1LL : rcounts[r], counts[r] = (int)rcounts[r];
    if (n > MAX_RANKS || !fits(total, dtype))
        return PMPI_Reduce_scatter_c(sbuf, rbuf, rcounts, dtype, op, comm);
    return MPI_Reduce_scatter(sbuf, rbuf, counts, dtype, op, comm);
}
#endif

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
        say(0, "info key tacos_enable=%s is neither true nor false; ignored", v);
    else
        PMPI_Comm_set_attr(comm, enable_keyval, on ? (void *)1 : NULL);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc == MPI_SUCCESS)
        note_enable(*newcomm, info);
    return rc;
}

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
        int me;
        PMPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (me == 0)
            say(5, "MPI_Finalize: %d communicator state(s) left (communicators not freed)",
                __atomic_load_n(&live_states, __ATOMIC_RELAXED));
    }
    return PMPI_Finalize();
}
