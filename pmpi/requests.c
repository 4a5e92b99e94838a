/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking and persistent collectives of libtacos-pmpi: operations of
 * the core (tacos_req_t), the requests the application holds for them, and
 * their progress.
 *
 * The requests are MPICH's own, so that every MPI call that takes a
 * request takes them:
 * - a nonblocking call returns a generalized request made with
 *   MPIX_Grequest_start (MPICH's extension with a poll function, which
 *   MPICH's MPI_Wait*, MPI_Test* call): it completes through whatever
 *   path waits on it, the Fortran bindings' included.  Built against the
 *   MPI standard ABI (MPI_ABI: one build for MPICH's and Open MPI's
 *   libmpi_abi.so.1), it is looked up at run time; where the library lacks
 *   it (Open MPI), a standard generalized request, which only the calls
 *   intercepted below progress;
 * - a persistent call returns a persistent receive of 0 bytes on a private
 *   duplicate of MPI_COMM_SELF, a tag per request (PMPI_Recv_init), that
 *   the library completes with a message to self when the schedule is done;
 *   MPI_Start(all) and MPI_Request_free are intercepted to start and free
 *   the schedule with it.
 *
 * Progress: every operation in flight advances in pmpi_progress, called by
 * the poll function and by the calls the library intercepts: MPI_Wait*,
 * MPI_Test*, MPI_Request_get_status, the blocking point-to-point calls that
 * may wait for a peer (below), every blocking collective (drivers.c) and
 * the communicator constructors, which wait for every rank to arrive first
 * (while operations are in flight, their waits are loops of tests and
 * progress).  The limit (README): a blocking call it does not intercept
 * (MPI_Comm_create_group, MPI_Intercomm_create, one-sided synchronisation,
 * file I/O, ...) does not progress them, so a rank blocked there while
 * another rank waits for its part of a schedule can hang.
 */
#include <pthread.h>
#include <stdint.h>
#ifdef MPI_ABI
#include <dlfcn.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "tacos_pmpi.h"

/* Operations' tags on the private duplicate: from 64 up (the blocking
 * collectives' are below), one per operation, cyclic: a nonblocking call's
 * taken when it is made, from the lower half of the range, a persistent
 * one's when it is initialized, from the upper half (every rank makes a
 * communicator's calls in the same order, but may start persistent ones in
 * any order). */
enum { FIRST_TAG = 64, MAX_TAGS = 1 << 20 };

typedef struct op {
    call_ctx_t x;
    space_t space;
    tacos_req_t *req;
    MPI_Datatype types[2]; /* the call's (send, recv), duplicated where derived */
    tacos_data_t data[2];  /* the call's buffers, with these types */
    MPI_Request handle;    /* what the application holds */
    int persistent, signal_tag;
    int status;         /* the last run's: MPI_SUCCESS or its error */
    int active;         /* in flight */
    int free_when_done; /* the application freed the request while in flight */
    void *stream;       /* GPU buffers: its own stream (staged, or its host copies') */
    /* by hand: the call on host copies of GPU buffers (this library's
     * request or MPICH's), and the copies (copied back where out[i]) */
    int by_hand;
    MPI_Request inner;
    tacos_mirror_t mm[2];
    int out[2];
    struct op *prev, *next; /* in flight (in_flight, or by_hand_flight) */
    struct op *later;       /* persistent ones, all */
    /* A nonblocking call whose request may fall back (a plan not agreed
     * yet): the call as MPICH takes it (its counts held; types: above), in its
     * state's order until it ran a schedule or its fallback started */
    pmpi_icall_t ic;
    int *ic_counts;
    int ordered, fell_back;
    struct op *order_next;
} op_t;

static op_t *in_flight, *persistent_ops;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Fall-backs started under `lock` (order_settle), for progress_by_hand to
 * take into by_hand_flight: hand_lock may be held by this very thread
 * (MPICH polls this library's requests from inside PMPI_Test).  Its lock
 * is held across no other call. */
static op_t *handed;
static pthread_mutex_t handed_lock = PTHREAD_MUTEX_INITIALIZER;
/* Operations by hand in flight: tested outside `lock` (testing a request
 * of this library's progresses, and its errors are looked up, under it). */
static op_t *by_hand_flight;
static pthread_mutex_t hand_lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm signal_comm = MPI_COMM_NULL; /* persistent requests' receives */
static int tags, signal_tags;                /* tags an operation may take; signals made */
#ifdef MPI_ABI
/* MPICH's MPIX_Grequest_start (the ABI's mpi.h declares no MPIX_ function),
 * or NULL: looked up with the tag range */
static int (*mpix_grequest_start)(MPI_Grequest_query_function *, MPI_Grequest_free_function *,
                                  MPI_Grequest_cancel_function *, int (*)(void *, MPI_Status *),
                                  int (*)(int, void **, double, MPI_Status *), void *,
                                  MPI_Request *);
#endif

int pmpi_busy(void)
{
    return __atomic_load_n(&in_flight, __ATOMIC_ACQUIRE) != NULL ||
           __atomic_load_n(&by_hand_flight, __ATOMIC_ACQUIRE) != NULL ||
           __atomic_load_n(&handed, __ATOMIC_ACQUIRE) != NULL;
}

/* Derived datatypes are duplicated: the application may free its own
 * before the operation ends. */
static int hold_type(MPI_Datatype t, MPI_Datatype *held)
{
    *held = t;
    return pmpi_named(t) ? MPI_SUCCESS : PMPI_Type_dup(t, held);
}

/* What the operation holds but its request: scratch, types, the state. */
static void release(op_t *o)
{
    tacos_req_free(o->req);
    o->req = NULL;
    if (o->inner != MPI_REQUEST_NULL) /* the call on the host copies (persistent:
                                       * maybe this library's, freed outside `lock`) */
        (o->persistent ? MPI_Request_free : PMPI_Request_free)(&o->inner);
    for (int i = 0; i < 2; i++)
        pmpi_unmirror(&o->mm[i], 0);
    for (int i = 0; i < 2; i++) {
        if (o->types[i] != MPI_DATATYPE_NULL && !pmpi_named(o->types[i]))
            PMPI_Type_free(&o->types[i]);
        o->types[i] = MPI_DATATYPE_NULL;
    }
    free(o->ic_counts);
    o->ic_counts = NULL;
    if (o->x.st)
        pmpi_state_release(o->x.st);
    o->x.st = NULL;
}

static void destroy(op_t *o)
{
    release(o);
    pmpi_stream_free(o->stream);
    free(o->space.p);
    free(o);
}

/* Under the list's lock. */
static void unlink_from(op_t **head, op_t *o)
{
    if (o->prev)
        o->prev->next = o->next;
    else
        __atomic_store_n(head, o->next, __ATOMIC_RELEASE);
    if (o->next)
        o->next->prev = o->prev;
    o->prev = o->next = NULL;
}

static void link_into(op_t **head, pthread_mutex_t *m, op_t *o)
{
    pthread_mutex_lock(m);
    o->prev = NULL;
    o->next = *head;
    if (*head)
        (*head)->prev = o;
    __atomic_store_n(head, o, __ATOMIC_RELEASE);
    pthread_mutex_unlock(m);
}

/* A call by hand is over (rc: the call on the host copies): its results
 * back to the GPU buffers (a persistent one keeps its copies). */
static int by_hand_finish(op_t *o, int rc)
{
    for (int i = 0; i < 2; i++) {
        int back = rc == MPI_SUCCESS && o->out[i];
        int out = o->persistent ? back ? pmpi_mirror_copy(&o->mm[i], 0) : MPI_SUCCESS
                                : pmpi_unmirror(&o->mm[i], back);
        if (rc == MPI_SUCCESS)
            rc = out;
    }
    return rc;
}

/* The run is over (status rc): the application's request completes.
 * Called without the lock (MPICH may call the free function inside). */
static void complete(op_t *o, int rc)
{
    if (o->by_hand)
        rc = by_hand_finish(o, rc);
    pthread_mutex_lock(&lock);
    o->status = rc;
    o->active = 0;
    int free_it = o->free_when_done, tag = o->signal_tag;
    MPI_Request h = o->handle;
    state_t *st = NULL;
    if (!o->persistent) { /* scratch goes now; the request's query still reads the status */
        st = o->x.st, o->x.st = NULL; /* (its duplicates' attribute callbacks: not under the lock) */
        release(o);
    }
    pthread_mutex_unlock(&lock);
    if (st)
        pmpi_state_release(st);
    if (o->persistent) {
        MPI_Request s;
        if (PMPI_Isend(NULL, 0, MPI_BYTE, 0, tag, signal_comm, &s) == MPI_SUCCESS)
            PMPI_Request_free(&s);
        if (free_it) /* freed by the application while active: its receive ends here */
            PMPI_Wait(&h, MPI_STATUS_IGNORE), PMPI_Request_free(&h);
    } else {
        PMPI_Grequest_complete(h);
    }
    if (free_it)
        destroy(o);
}

static int run_errors(int one, int n, const MPI_Request *r, const int *idx, MPI_Status *s,
                      int rc);

/* complete() for each operation of a list (chained through next) taken
 * out of the lists in flight. */
static void complete_all(op_t *done)
{
    for (op_t *o = done, *next; o; o = next) {
        next = o->next;
        o->next = NULL;
        complete(o, o->status);
    }
}

/* The calls by hand whose call on the host copies completed. */
static void progress_by_hand(void)
{
    if ((!__atomic_load_n(&by_hand_flight, __ATOMIC_ACQUIRE) &&
         !__atomic_load_n(&handed, __ATOMIC_ACQUIRE)) ||
        pthread_mutex_trylock(&hand_lock))
        return;
    pthread_mutex_lock(&handed_lock);
    for (op_t *o = handed, *next; o; o = next) {
        next = o->next;
        if ((o->next = by_hand_flight))
            by_hand_flight->prev = o;
        o->prev = NULL;
        by_hand_flight = o;
    }
    __atomic_store_n(&handed, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&handed_lock);
    op_t *done = NULL;
    for (op_t *o = by_hand_flight, *next; o; o = next) {
        next = o->next;
        MPI_Request h = o->inner;
        MPI_Status s;
        int flag = 0, rc = PMPI_Test(&o->inner, &flag, &s);
        if (!flag) /* still running (its copies in use): an error only once it is over */
            continue;
        unlink_from(&by_hand_flight, o);
        o->status = run_errors(1, 1, &h, NULL, &s, rc); /* a persistent call of this library's */
        o->next = done, done = o;
    }
    pthread_mutex_unlock(&hand_lock);
    complete_all(done);
}

/* MPICH's nonblocking form of o's call on its state's fallback duplicate,
 * with the datatypes o holds (send, recv: those that matter on this rank). */
static int start_fallback(op_t *o)
{
    const pmpi_icall_t *c = &o->ic;
    MPI_Comm comm = o->x.st->fallback_comm;
    MPI_Request *r = &o->inner;
    MPI_Datatype stype = o->types[0], rtype = o->types[1];
    switch (c->coll) {
    case TACOS_ALLREDUCE:
        return PMPI_Iallreduce(c->sbuf, c->rbuf, c->rcount, rtype, c->op, comm, r);
    case TACOS_ALLGATHER:
        return PMPI_Iallgather(c->sbuf, c->scount, stype, c->rbuf, c->rcount, rtype, comm, r);
    case TACOS_ALLTOALL:
        return PMPI_Ialltoall(c->sbuf, c->scount, stype, c->rbuf, c->rcount, rtype, comm, r);
    case TACOS_BROADCAST:
        return PMPI_Ibcast(c->rbuf, c->rcount, rtype, c->root, comm, r);
    case TACOS_REDUCE:
        return PMPI_Ireduce(c->sbuf, c->rbuf, c->rcount, rtype, c->op, c->root, comm, r);
    case TACOS_REDUCE_SCATTER:
        return c->block ? PMPI_Ireduce_scatter_block(c->sbuf, c->rbuf, c->rcount, rtype, c->op,
                                                     comm, r)
                        : PMPI_Ireduce_scatter(c->sbuf, c->rbuf, o->ic_counts, rtype, c->op,
                                               comm, r);
    case TACOS_GATHER:
        return PMPI_Igather(c->sbuf, c->scount, stype, c->rbuf, c->rcount, rtype, c->root,
                            comm, r);
    case TACOS_SCATTER:
        return PMPI_Iscatter(c->sbuf, c->scount, stype, c->rbuf, c->rcount, rtype,
                             c->root, comm, r);
    default:
        return MPI_ERR_INTERN;
    }
}

/* Under the lock: o (ordered) runs no fallback (decided otherwise, done or
 * failed), or waits to (fell_back); the fallbacks at the head of its
 * state's order start, in the order their calls were made, which is the
 * same on every rank (every rank decides alike for each call), while the
 * decisions come in any order.  Those started go on as calls by hand do. */
static void order_settle(op_t *o)
{
    state_t *st = o->x.st;
    if (!o->fell_back) { /* out of the order */
        op_t **at = (op_t **)&st->order_head, *prev = NULL;
        while (*at != o)
            prev = *at, at = &(*at)->order_next;
        *at = o->order_next;
        if (st->order_tail == o)
            st->order_tail = prev;
        o->ordered = 0;
    }
    op_t *h;
    while ((h = st->order_head) && h->fell_back) {
        st->order_head = h->order_next;
        if (!st->order_head)
            st->order_tail = NULL;
        h->ordered = 0;
        h->fell_back = 0;
        int rc = start_fallback(h);
        if (rc != MPI_SUCCESS) { /* the other ranks' next fall-backs would meet the wrong call */
            pmpi_say(0, "starting MPICH's own collective for a request that fell back failed "
                        "(%d); the ranks' fall-backs would be out of step: aborting", rc);
            PMPI_Abort(MPI_COMM_WORLD, rc);
        }
        pthread_mutex_lock(&handed_lock);
        h->prev = NULL, h->next = handed;
        __atomic_store_n(&handed, h, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&handed_lock);
    }
}

void pmpi_progress(void)
{
    progress_by_hand();
    if (!__atomic_load_n(&in_flight, __ATOMIC_ACQUIRE) || pthread_mutex_trylock(&lock))
        return; /* nothing to do, or another thread does it */
    op_t *done = NULL;
    for (op_t *o = in_flight, *next; o; o = next) {
        next = o->next;
        if (!pmpi_state_ready(o->x.st, 0)) /* (its first messages wait for its duplicates) */
            continue;
        int finished = 0, rc = tacos_req_progress(o->req, &finished);
        if (finished) {
            unlink_from(&in_flight, o);
            o->status = rc;
            int fell_back = o->fell_back = !rc && tacos_req_fell_back(o->req);
            if (o->ordered)
                order_settle(o);
            if (!fell_back) /* (one that fell back completes as calls by hand do) */
                o->next = done, done = o;
        } else if (o->ordered && tacos_req_decided(o->req)) { /* (runs its schedule) */
            order_settle(o);
        }
    }
    pthread_mutex_unlock(&lock);
    complete_all(done);
}

/* Posts the operation's first messages. */
static int start(op_t *o)
{
    int rc = MPI_SUCCESS;
    o->status = MPI_SUCCESS;
    if (o->by_hand) { /* persistent: its copies in, its call on them started */
        for (int i = 0; i < 2 && rc == MPI_SUCCESS; i++)
            rc = pmpi_mirror_copy(&o->mm[i], 1);
        if (rc != MPI_SUCCESS || (rc = MPI_Start(&o->inner)) != MPI_SUCCESS ||
            (rc = PMPI_Start(&o->handle)) != MPI_SUCCESS)
            return rc;
        o->active = 1;
        link_into(&by_hand_flight, &hand_lock, o);
        return MPI_SUCCESS;
    }
    o->x.error = MPI_SUCCESS;
    rc = o->persistent ? PMPI_Start(&o->handle) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        return rc;
    o->active = 1;
    if ((rc = tacos_req_start(o->req)) != MPI_SUCCESS) {
        pthread_mutex_lock(&lock);
        if (o->ordered) /* (the fallbacks after it may start) */
            order_settle(o);
        pthread_mutex_unlock(&lock);
        complete(o, rc); /* the request completes with the error */
        return rc;
    }
    link_into(&in_flight, &lock, o);
    return MPI_SUCCESS;
}

/* ---- the generalized request of a nonblocking call ------------------------- */

static int greq_query(void *extra, MPI_Status *s)
{
    op_t *o = extra;
    PMPI_Status_set_elements(s, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(s, 0);
    s->MPI_SOURCE = MPI_UNDEFINED;
    s->MPI_TAG = MPI_UNDEFINED;
    return o->status;
}

/* MPICH calls it when the request is freed, which may be before the
 * operation ends (MPI_Request_free): then it is destroyed at the end. */
static int greq_free(void *extra)
{
    op_t *o = extra;
    pthread_mutex_lock(&lock);
    int now = !o->active;
    o->free_when_done = 1;
    pthread_mutex_unlock(&lock);
    if (now)
        destroy(o);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete_)
{
    (void)extra;
    return complete_ ? MPI_SUCCESS : MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

static int greq_poll(void *extra, MPI_Status *s)
{
    (void)extra, (void)s;
    pmpi_progress();
    return MPI_SUCCESS;
}

/* MPICH's MPI_Waitall may wait for several of them at once. */
static int greq_wait(int n, void **extra, double timeout, MPI_Status *s)
{
    (void)timeout, (void)s;
    for (int i = 0; i < n; i++)
        while (__atomic_load_n(&((op_t *)extra[i])->active, __ATOMIC_ACQUIRE))
            pmpi_progress();
    return MPI_SUCCESS;
}

/* ---- making operations ---------------------------------------------------------- */

/* Under the lock: the tag range, the signal communicator. */
static int setup(int persistent)
{
    if (!tags) {
        int *ub, found = 0;
        PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
        tags = found && *ub - FIRST_TAG < MAX_TAGS ? *ub - FIRST_TAG : MAX_TAGS;
#ifdef MPI_ABI
        void *self = dlopen(NULL, RTLD_NOW);
        if (self)
            mpix_grequest_start =
                (__typeof__(mpix_grequest_start))dlsym(self, "MPIX_Grequest_start");
#endif
    }
    if (persistent && signal_comm == MPI_COMM_NULL)
        return PMPI_Comm_dup(MPI_COMM_SELF, &signal_comm);
    return MPI_SUCCESS;
}

static op_t *op_new(void)
{
    op_t *o = calloc(1, sizeof *o);
    if (o) {
        o->handle = o->inner = MPI_REQUEST_NULL;
        o->types[0] = o->types[1] = MPI_DATATYPE_NULL;
    }
    return o;
}

/* A nonblocking call's request: polled where MPI can. */
static int grequest_start(op_t *o)
{
#ifdef MPI_ABI
    if (!mpix_grequest_start)
        return PMPI_Grequest_start(greq_query, greq_free, greq_cancel, o, &o->handle);
    return mpix_grequest_start(greq_query, greq_free, greq_cancel, greq_poll, greq_wait, o,
                               &o->handle);
#else
    return MPIX_Grequest_start(greq_query, greq_free, greq_cancel, greq_poll, greq_wait, o,
                               &o->handle);
#endif
}

/* o's request for the application: a persistent receive of its own
 * (persistent), else a generalized request. */
static int issue(op_t *o)
{
    pthread_mutex_lock(&lock);
    int rc = setup(o->persistent);
    if (rc == MPI_SUCCESS && o->persistent) {
        o->signal_tag = signal_tags++ % MAX_TAGS;
        rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, 0, o->signal_tag, signal_comm, &o->handle);
        if (rc == MPI_SUCCESS)
            o->later = persistent_ops, persistent_ops = o;
    }
    pthread_mutex_unlock(&lock);
    if (rc == MPI_SUCCESS && !o->persistent)
        rc = grequest_start(o);
    return rc;
}

/* The operation's stream: its own (concurrent operations reduce
 * differently), where the call is staged. */
static int own_memory(op_t *o, const tacos_call_t *call, tacos_call_t *own)
{
    if (!call->mem)
        return MPI_SUCCESS;
    own->mem = &o->x.mem;
    if (!call->mc->bind) { /* host memory */
        tacos_mem_host(&o->x, call->tp.reduce, &o->x.mem);
        return MPI_SUCCESS;
    }
    if (call->mc->stream_new(o->x.dev_buf, &o->stream)) {
        pmpi_say(0, "a nonblocking call on GPU buffers: %s", call->mc->why());
        return MPI_ERR_OTHER;
    }
    call->mc->bind(o->stream, o->x.red_op, o->x.red_type, &o->x.mem);
    return MPI_SUCCESS;
}

/* o may fall back: ic and its counts held, o last in st's order. */
static int order(op_t *o, state_t *st, const pmpi_icall_t *ic)
{
    o->ic = *ic;
    if (ic->rcounts) {
        size_t n = (size_t)ic->nranks;
        if (!(o->ic_counts = malloc(n * sizeof *o->ic_counts)))
            return MPI_ERR_NO_MEM;
        memcpy(o->ic_counts, ic->rcounts, n * sizeof *o->ic_counts);
    }
    pthread_mutex_lock(&lock);
    o->ordered = 1;
    if (st->order_tail)
        ((op_t *)st->order_tail)->order_next = o;
    else
        st->order_head = o;
    st->order_tail = o;
    pthread_mutex_unlock(&lock);
    return MPI_SUCCESS;
}

int pmpi_launch(state_t *st, const tacos_plan_t *p, const tacos_call_t *call,
                const tacos_args_t *a, int persistent, const pmpi_icall_t *ic,
                MPI_Request *request)
{
    /* the operation's number, taken before anything can fail on this rank:
     * one that fails here must not shift the tags of those after it */
    unsigned seq = persistent ? st->initialized++ : st->called++;
    op_t *o = op_new();
    if (!o)
        return MPI_ERR_NO_MEM;
    o->x = *(const call_ctx_t *)call->tp.ctx;
    o->x.space = &o->space;
    o->x.st = NULL; /* holds no reference yet */
    o->persistent = persistent;
    tacos_args_t own_args = *a;
    const tacos_data_t *d[2] = {a->send, a->recv};
    int rc = MPI_SUCCESS;
    for (int i = 0; i < 2; i++) {
        if (!d[i])
            continue;
        o->data[i] = *d[i];
        if (d[i]->type && rc == MPI_SUCCESS) {
            rc = hold_type(*(const MPI_Datatype *)d[i]->type, &o->types[i]);
            o->data[i].type = &o->types[i];
        }
    }
    own_args.send = a->send ? &o->data[0] : NULL;
    own_args.recv = a->recv ? &o->data[1] : NULL;
    if (o->x.unit != MPI_BYTE) /* reductions combine elements of the call's datatype */
        o->x.unit = o->types[1];
    tacos_call_t own = *call;
    own.tp.ctx = &o->x;
    own.error = &o->x.error;
    if (rc == MPI_SUCCESS)
        rc = own_memory(o, call, &own);
    if (rc == MPI_SUCCESS)
        rc = tacos_req_new(st->core, p, &own, &own_args, o->persistent, &o->req);
    if (rc != MPI_SUCCESS) {
        destroy(o);
        return rc;
    }
    __atomic_add_fetch(&st->refs, 1, __ATOMIC_RELAXED);
    o->x.st = st;
    if ((rc = issue(o)) != MPI_SUCCESS) {
        destroy(o);
        return rc;
    }
    unsigned half = (unsigned)tags / 2; /* known once issued */
    o->x.tag = FIRST_TAG + (int)(persistent ? half + seq % half : seq % half);
    *request = o->handle;
    if (!persistent && (p->deferred || !p->agreed) && (rc = order(o, st, ic)) != MPI_SUCCESS) {
        PMPI_Grequest_complete(o->handle); /* (not started: freed with its request) */
        PMPI_Request_free(request);
        return rc;
    }
    if (!persistent && (rc = start(o)) != MPI_SUCCESS) {
        PMPI_Request_free(request); /* completed with the error: freed */
        return rc;
    }
    return MPI_SUCCESS;
}

int pmpi_launch_by_hand(MPI_Request inner, const tacos_mirror_t *mm, const int *out, int n,
                        int persistent, MPI_Request *request)
{
    op_t *o = op_new();
    int rc = o ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    if (o) {
        o->persistent = persistent, o->by_hand = 1, o->inner = inner;
        for (int i = 0; i < n; i++) /* copied on its own stream: any thread progresses it */
            o->mm[i] = mm[i], o->mm[i].stream = &o->stream, o->out[i] = out[i];
        rc = issue(o);
    }
    if (rc != MPI_SUCCESS) { /* a nonblocking call finishes here: it is under way elsewhere */
        tacos_mirror_t back[2] = {{0}};
        for (int i = 0; i < n; i++)
            back[i] = mm[i];
        int done = persistent ? MPI_Request_free(&inner) : pmpi_wait(&inner, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++)
            pmpi_unmirror(&back[i], !persistent && done == MPI_SUCCESS && out[i]);
        if (o) { /* its copies were given back above */
            memset(o->mm, 0, sizeof o->mm);
            o->inner = MPI_REQUEST_NULL;
            destroy(o);
        }
        return rc;
    }
    *request = o->handle;
    if (!persistent) {
        o->active = 1;
        link_into(&by_hand_flight, &hand_lock, o);
    }
    return MPI_SUCCESS;
}

/* The persistent operation whose request h is, or NULL. */
static op_t *persistent_op(MPI_Request h)
{
    if (!__atomic_load_n(&persistent_ops, __ATOMIC_RELAXED) || h == MPI_REQUEST_NULL)
        return NULL;
    pthread_mutex_lock(&lock);
    op_t *o = persistent_ops;
    while (o && o->handle != h)
        o = o->later;
    pthread_mutex_unlock(&lock);
    return o;
}

/* The error of the persistent operation behind h, MPI_SUCCESS if none. */
static int op_error(MPI_Request h)
{
    op_t *o = persistent_op(h);
    return o ? o->status : MPI_SUCCESS;
}

/* Requests among r[i] (i in idx[0..n), or 0..n when idx is NULL) whose
 * persistent operation failed: their status says so, and the call (its
 * error where it completes one request, else MPI_ERR_IN_STATUS, the other
 * statuses then saying MPI_SUCCESS unless MPI set them already). */
static int run_errors(int one, int n, const MPI_Request *r, const int *idx, MPI_Status *s, int rc)
{
    int in_status = !one && rc == MPI_ERR_IN_STATUS, failed = 0;
    if ((rc != MPI_SUCCESS && !in_status) || !__atomic_load_n(&persistent_ops, __ATOMIC_RELAXED))
        return rc;
    /* s follows idx where there is one */
    MPI_Status *st = s != MPI_STATUS_IGNORE && s != MPI_STATUSES_IGNORE ? s : NULL;
    for (int j = 0; j < n; j++) {
        int i = idx ? idx[j] : j, e = i >= 0 ? op_error(r[i]) : MPI_SUCCESS;
        if (e == MPI_SUCCESS)
            continue;
        if (st)
            st[j].MPI_ERROR = e;
        rc = one ? e : MPI_ERR_IN_STATUS;
        failed = 1;
    }
    for (int j = 0; failed && st && !in_status && j < n; j++) { /* rare: looked up again */
        int i = idx ? idx[j] : j;
        if (i < 0 || op_error(r[i]) == MPI_SUCCESS) /* MPI left it alone: it succeeded */
            st[j].MPI_ERROR = MPI_SUCCESS;
    }
    return rc;
}

/* ---- the request calls ------------------------------------------------------------ */

int MPI_Start(MPI_Request *r)
{
    op_t *o = persistent_op(*r);
    if (!o)
        return PMPI_Start(r);
    return o->active ? MPI_ERR_REQUEST : start(o);
}

int MPI_Startall(int n, MPI_Request r[])
{
    if (!__atomic_load_n(&persistent_ops, __ATOMIC_RELAXED))
        return PMPI_Startall(n, r);
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = MPI_Start(&r[i]);
    return rc;
}

int MPI_Request_free(MPI_Request *r)
{
    op_t *o = persistent_op(*r);
    if (!o)
        return PMPI_Request_free(r);
    pthread_mutex_lock(&lock);
    op_t **at = &persistent_ops;
    while (*at != o)
        at = &(*at)->later;
    *at = o->later;
    int now = !o->active;
    o->free_when_done = 1; /* in flight: at its end */
    pthread_mutex_unlock(&lock);
    *r = MPI_REQUEST_NULL;
    if (!now)
        return MPI_SUCCESS;
    /* its receive completes first (an active one freed, then matched by
     * the signal, corrupted MPICH 4.0.2's request counts) */
    PMPI_Wait(&o->handle, MPI_STATUS_IGNORE);
    int rc = PMPI_Request_free(&o->handle);
    destroy(o);
    return rc;
}

int pmpi_wait(MPI_Request *r, MPI_Status *s)
{
    int flag = 0, rc;
    if (!pmpi_busy())
        return PMPI_Wait(r, s);
    while ((rc = PMPI_Test(r, &flag, s)) == MPI_SUCCESS && !flag)
        pmpi_progress();
    return rc;
}

int MPI_Wait(MPI_Request *r, MPI_Status *s)
{
    MPI_Request h = *r;
    return run_errors(1, 1, &h, NULL, s, pmpi_wait(r, s));
}

int MPI_Test(MPI_Request *r, int *flag, MPI_Status *s)
{
    MPI_Request h = *r;
    pmpi_progress();
    int rc = PMPI_Test(r, flag, s);
    return *flag ? run_errors(1, 1, &h, NULL, s, rc) : rc;
}

/* MPI_Waitall as a loop of PMPI_Test on each request not done yet, and
 * progress: MPICH 4.0.2's own persistent collectives' requests fail its
 * MPI_Testall, and its MPI_Testsome reports them complete again at every
 * call (its MPI_Test and MPI_Waitall serve them). */
static int wait_all_testing(int n, MPI_Request r[], MPI_Status s[])
{
    int rc = MPI_SUCCESS, left = n;
    char *done = calloc((size_t)n + 1, 1); /* 1 completed, 2 failed */
    if (!done)
        return MPI_ERR_NO_MEM;
    while (left) {
        for (int i = 0; i < n; i++) {
            int flag = 0, e;
            if (done[i])
                continue;
            MPI_Status *st = s == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &s[i];
            if ((e = PMPI_Test(&r[i], &flag, st)) != MPI_SUCCESS) {
                rc = s == MPI_STATUSES_IGNORE ? e : MPI_ERR_IN_STATUS;
                if (st != MPI_STATUS_IGNORE)
                    st->MPI_ERROR = e;
                flag = 2;
            }
            if (flag)
                done[i] = (char)flag, left--;
        }
        if (left)
            pmpi_progress();
    }
    for (int i = 0; rc == MPI_ERR_IN_STATUS && i < n; i++) /* as MPI_Waitall says it */
        if (done[i] == 1)
            s[i].MPI_ERROR = MPI_SUCCESS;
    free(done);
    return rc;
}

int MPI_Waitall(int n, MPI_Request r[], MPI_Status s[])
{
    int rc = pmpi_busy() ? wait_all_testing(n, r, s) : PMPI_Waitall(n, r, s);
    return run_errors(0, n, r, NULL, s, rc);
}

int MPI_Testall(int n, MPI_Request r[], int *flag, MPI_Status s[])
{
    pmpi_progress();
    int rc = PMPI_Testall(n, r, flag, s);
    return *flag ? run_errors(0, n, r, NULL, s, rc) : rc;
}

int MPI_Waitany(int n, MPI_Request r[], int *idx, MPI_Status *s)
{
    int flag = 0, rc;
    if (!pmpi_busy())
        rc = PMPI_Waitany(n, r, idx, s);
    else
        while ((rc = PMPI_Testany(n, r, idx, &flag, s)) == MPI_SUCCESS && !flag)
            pmpi_progress();
    return *idx != MPI_UNDEFINED ? run_errors(1, 1, r, idx, s, rc) : rc;
}

int MPI_Testany(int n, MPI_Request r[], int *idx, int *flag, MPI_Status *s)
{
    pmpi_progress();
    int rc = PMPI_Testany(n, r, idx, flag, s);
    return *flag && *idx != MPI_UNDEFINED ? run_errors(1, 1, r, idx, s, rc) : rc;
}

int pmpi_waitsome(int n, MPI_Request r[], int *out, int idx[], MPI_Status s[])
{
    int rc;
    if (!pmpi_busy())
        return PMPI_Waitsome(n, r, out, idx, s);
    while ((rc = PMPI_Testsome(n, r, out, idx, s)) == MPI_SUCCESS && *out == 0)
        pmpi_progress();
    return rc;
}

int MPI_Waitsome(int n, MPI_Request r[], int *out, int idx[], MPI_Status s[])
{
    int rc = pmpi_waitsome(n, r, out, idx, s);
    return *out != MPI_UNDEFINED ? run_errors(0, *out, r, idx, s, rc) : rc;
}

int MPI_Testsome(int n, MPI_Request r[], int *out, int idx[], MPI_Status s[])
{
    pmpi_progress();
    int rc = PMPI_Testsome(n, r, out, idx, s);
    return *out != MPI_UNDEFINED ? run_errors(0, *out, r, idx, s, rc) : rc;
}

int MPI_Request_get_status(MPI_Request r, int *flag, MPI_Status *s)
{
    pmpi_progress();
    return PMPI_Request_get_status(r, flag, s);
}

/* A completed receive's status (rc: its wait's) where the source was
 * MPI_PROC_NULL: what MPI defines (source MPI_PROC_NULL, tag MPI_ANY_TAG,
 * nothing received); MPICH 4.0.2's nonblocking receive says source 0, tag 0. */
static int from_proc_null(int rc, int source, MPI_Status *s)
{
    if (rc == MPI_SUCCESS && source == MPI_PROC_NULL && s != MPI_STATUS_IGNORE) {
        s->MPI_SOURCE = MPI_PROC_NULL;
        s->MPI_TAG = MPI_ANY_TAG;
        PMPI_Status_set_elements(s, MPI_BYTE, 0);
    }
    return rc;
}

/* Blocking point-to-point calls progress the operations while they wait:
 * a rank in MPI_Recv may hold up another rank's MPI_Wait on a collective
 * (a legal program: MPI's progress rule).  Those that may wait for a peer
 * (a receive, or a send that waits for the receive: large, synchronous)
 * are MPICH's nonblocking form waited for with pmpi_wait while operations
 * are in flight (MPI_Rsend's receive is posted, MPI_Bsend's data buffered,
 * MPI_Mrecv's message matched: none waits for a peer to reach it).
 * SENT: the status ignored; RECEIVED: the call's last argument, s. */
#define SENT(name, iname, params, ...)                                                       \
    int MPI_##name params                                                                    \
    {                                                                                        \
        MPI_Request r;                                                                       \
        if (!pmpi_busy())                                                                    \
            return PMPI_##name(__VA_ARGS__);                                                 \
        int rc = PMPI_##iname(__VA_ARGS__, &r);                                              \
        return rc == MPI_SUCCESS ? pmpi_wait(&r, MPI_STATUS_IGNORE) : rc;                    \
    }
#define RECEIVED(name, iname, params, ...)                                                   \
    int MPI_##name params                                                                    \
    {                                                                                        \
        MPI_Request r;                                                                       \
        if (!pmpi_busy())                                                                    \
            return PMPI_##name(__VA_ARGS__, s);                                              \
        int rc = PMPI_##iname(__VA_ARGS__, &r);                                              \
        return rc == MPI_SUCCESS ? from_proc_null(pmpi_wait(&r, s), source, s) : rc;         \
    }
#define CBUF const void *buf
#define DT MPI_Datatype
SENT(Send, Isend, (CBUF, int count, DT type, int dest, int tag, MPI_Comm comm), buf, count, type,
     dest, tag, comm)
SENT(Ssend, Issend, (CBUF, int count, DT type, int dest, int tag, MPI_Comm comm), buf, count,
     type, dest, tag, comm)
RECEIVED(Recv, Irecv,
         (void *buf, int count, DT type, int source, int tag, MPI_Comm comm, MPI_Status *s), buf,
         count, type, source, tag, comm)

/* A receive (r[0], posted by `recv`) and a send (r[1], by `send`), both
 * waited for, the receive's status in s (the caller's `source`, `s`; it
 * declares r and rc).  Where the send fails the receive is cancelled: it
 * must not write the buffer after the call returned.  Not MPICH 4.0.2's
 * own MPI_Isendrecv(_replace): with MPI_PROC_NULL on both sides it crashed,
 * with MPI_ANY_SOURCE its status said source 0, tag 0, and _replace with a
 * derived datatype received the wrong elements. */
#define EXCHANGED(recv, send)                                                                \
    MPI_Request r[2];                                                                        \
    int rc = recv;                                                                           \
    if (rc == MPI_SUCCESS && ((rc = send) != MPI_SUCCESS ||                                  \
                              (rc = pmpi_wait(&r[1], MPI_STATUS_IGNORE)) != MPI_SUCCESS))    \
        PMPI_Cancel(&r[0]), PMPI_Wait(&r[0], MPI_STATUS_IGNORE);                             \
    else if (rc == MPI_SUCCESS)                                                              \
        rc = from_proc_null(pmpi_wait(&r[0], s), source, s)

#define SENDRECV(suffix, count_t)                                                            \
    int MPI_Sendrecv##suffix(const void *sbuf, count_t scount, DT stype, int dest, int stag,    \
                             void *rbuf, count_t rcount, DT rtype, int source, int rtag,     \
                             MPI_Comm comm, MPI_Status *s)                                   \
    {                                                                                        \
        if (!pmpi_busy())                                                                    \
            return PMPI_Sendrecv##suffix(sbuf, scount, stype, dest, stag, rbuf, rcount,      \
                                         rtype, source, rtag, comm, s);                      \
        EXCHANGED(PMPI_Irecv##suffix(rbuf, rcount, rtype, source, rtag, comm, &r[0]),        \
                  PMPI_Isend##suffix(sbuf, scount, stype, dest, stag, comm, &r[1]));         \
        return rc;                                                                           \
    }
SENDRECV(, int)

#if MPI_VERSION >= 4
SENT(Send_c, Isend_c, (CBUF, MPI_Count count, DT type, int dest, int tag, MPI_Comm comm), buf,
     count, type, dest, tag, comm)
SENT(Ssend_c, Issend_c, (CBUF, MPI_Count count, DT type, int dest, int tag, MPI_Comm comm), buf,
     count, type, dest, tag, comm)
RECEIVED(Recv_c, Irecv_c,
         (void *buf, MPI_Count count, DT type, int source, int tag, MPI_Comm comm, MPI_Status *s),
         buf, count, type, source, tag, comm)

SENDRECV(_c, MPI_Count)

/* The buffer's contents packed, sent from there, while the receive goes
 * to the buffer (a packed message matches the typed receive). */
static int replaced(void *buf, MPI_Count count, DT type, int dest, int stag, int source, int rtag,
                    MPI_Comm comm, MPI_Status *s)
{
    MPI_Count size = 0, at = 0;
    int pack_rc = PMPI_Pack_size_c(count, type, comm, &size); /* (errors: handled there) */
    if (pack_rc != MPI_SUCCESS)
        return pack_rc;
    void *packed = malloc(size ? (size_t)size : 1);
    if (!packed)
        return PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
    if ((pack_rc = PMPI_Pack_c(buf, count, type, packed, size, &at, comm)) != MPI_SUCCESS) {
        free(packed);
        return pack_rc;
    }
    EXCHANGED(PMPI_Irecv_c(buf, count, type, source, rtag, comm, &r[0]),
              PMPI_Isend_c(packed, at, MPI_PACKED, dest, stag, comm, &r[1]));
    free(packed);
    return rc;
}

#define SENDRECV_REPLACE(suffix, count_t)                                                    \
    int MPI_Sendrecv_replace##suffix(void *buf, count_t count, DT type, int dest, int stag,  \
                                     int source, int rtag, MPI_Comm comm, MPI_Status *s)     \
    {                                                                                        \
        if (!pmpi_busy())                                                                    \
            return PMPI_Sendrecv_replace##suffix(buf, count, type, dest, stag, source, rtag, \
                                                 comm, s);                                   \
        return replaced(buf, count, type, dest, stag, source, rtag, comm, s);                \
    }
SENDRECV_REPLACE(, int)
SENDRECV_REPLACE(_c, MPI_Count)
#endif
#undef CBUF
#undef DT
#undef SENT
#undef RECEIVED
#undef EXCHANGED
#undef SENDRECV
#undef SENDRECV_REPLACE

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *s)
{
    int flag = 0, rc;
    if (!pmpi_busy())
        return PMPI_Probe(source, tag, comm, s);
    while ((rc = PMPI_Iprobe(source, tag, comm, &flag, s)) == MPI_SUCCESS && !flag)
        pmpi_progress();
    return rc;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *s)
{
    int flag = 0, rc;
    if (!pmpi_busy())
        return PMPI_Mprobe(source, tag, comm, message, s);
    while ((rc = PMPI_Improbe(source, tag, comm, &flag, message, s)) == MPI_SUCCESS && !flag)
        pmpi_progress();
    return rc;
}

void pmpi_requests_finalize(void)
{
    if (signal_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&signal_comm);
}
