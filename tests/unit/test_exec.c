/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The executor alone: every rank of a synthesized schedule runs
 * tacos_exec_run in its own thread over an in-process transport.  Messages
 * between two ranks match in posting order as in MPI, and a send's data is
 * read only when its receive matches (as a rendezvous protocol does), so an
 * executor that reuses a buffer too early, posts out of order or mismatches
 * sizes gives wrong results here.  Results are checked element by element
 * against sums computed directly; transport errors are injected to check
 * that they come back from every rank without a hang.
 *
 * Staged runs give the executor a memory layer whose copies and reductions
 * run late (one per poll of a mark), over staging space filled with garbage
 * at every call (and, with CUDA IPC's part between the threads, right after
 * each rank's call: a rank reading another's staging after that one
 * returned, past the fence, reads garbage): an executor that posts a staged
 * send before its copy completed, or reads a buffer before a landing
 * completed, gives wrong results.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "exec.h"

enum { ERR_SEND = 55, ERR_WAIT = 56 };

typedef struct msg {
    struct msg *next;
    void *buf;
    size_t bytes;
    int done, recv, abandoned; /* an abandoned receive is never written */
} msg_t;

typedef struct {
    int n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    msg_t **send_head, **send_tail, **recv_head, **recv_tail; /* per pair src * n + dst */
    msg_t **all;                                             /* every message, freed at the end */
    size_t nall, cap;
    int fail_at, nsent, failed, mismatches;
    int sends; /* sends posted (pieces each) */
    size_t piece; /* the transport's limit between ranks of different parity */
    int oversize; /* messages above it */
} world_t;

/* Memory work queued on a stream, run late. */
typedef struct {
    int reduce;
    void *dst;
    const void *src;
    size_t n;
} work_t;

typedef struct {
    work_t *q;
    size_t issued, ran, cap;
} slow_mem_t;

typedef struct {
    world_t *w;
    int rank;
    char *scratch;
    size_t scratch_bytes;
    int stage; /* opts->mem: slow; 2 with IPC's part, 3 that between ranks of one parity */
    slow_mem_t slow;
    char *ipc_space; /* stage >= 2: the staging peers read */
    size_t ipc_bytes;
    char *on_host; /* stage 3: per peer, of this rank's parity (its "host") */
} rank_t;

static void append(msg_t **head, msg_t **tail, msg_t *m)
{
    if (*tail)
        (*tail)->next = m;
    else
        *head = m;
    *tail = m;
}

static msg_t *pop(msg_t **head, msg_t **tail)
{
    msg_t *m = *head;
    *head = m->next;
    if (!*head)
        *tail = NULL;
    return m;
}

/* Pairs the oldest send and receive of src -> dst while both exist. */
static void match(world_t *w, size_t pair)
{
    while (w->send_head[pair] && w->recv_head[pair]) {
        msg_t *s = pop(&w->send_head[pair], &w->send_tail[pair]);
        msg_t *r = pop(&w->recv_head[pair], &w->recv_tail[pair]);
        if (s->bytes != r->bytes)
            w->mismatches++;
        if (!r->abandoned)
            memcpy(r->buf, s->buf, s->bytes < r->bytes ? s->bytes : r->bytes);
        s->done = r->done = 1;
    }
    pthread_cond_broadcast(&w->cv);
}

static size_t limit(const world_t *w, int a, int b)
{
    return (a + b) % 2 ? w->piece : 0;
}

static int post(rank_t *me, void *buf, size_t bytes, int src, int dst, int send, void **req)
{
    world_t *w = me->w;
    pthread_mutex_lock(&w->mu);
    if (limit(w, src, dst) && bytes > limit(w, src, dst))
        w->oversize++;
    w->sends += send;
    if (send && w->fail_at >= 0 && w->nsent++ == w->fail_at) {
        w->failed = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        return ERR_SEND;
    }
    msg_t *m = calloc(1, sizeof *m);
    if (w->nall == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->all = realloc(w->all, w->cap * sizeof *w->all);
    }
    w->all[w->nall++] = m;
    m->buf = buf;
    m->bytes = bytes;
    m->recv = !send;
    size_t pair = (size_t)src * (size_t)w->n + (size_t)dst;
    if (send)
        append(&w->send_head[pair], &w->send_tail[pair], m);
    else
        append(&w->recv_head[pair], &w->recv_tail[pair], m);
    match(w, pair);
    pthread_mutex_unlock(&w->mu);
    *req = m;
    return 0;
}

static int t_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    rank_t *me = ctx;
    return post(me, (void *)buf, bytes, me->rank, peer, 1, req);
}

static int t_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    rank_t *me = ctx;
    return post(me, buf, bytes, peer, me->rank, 0, req);
}

static int t_wait_some(void *ctx, void **reqs, size_t n, char *done)
{
    world_t *w = ((rank_t *)ctx)->w;
    int rc = 0, any = 0;
    pthread_mutex_lock(&w->mu);
    while (!any && !rc) {
        for (size_t i = 0; i < n; i++)
            if (((msg_t *)reqs[i])->done)
                done[i] = 1, any = 1;
        if (!any && w->failed)
            rc = ERR_WAIT;
        else if (!any)
            pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static int t_test_some(void *ctx, void **reqs, size_t n, char *done)
{
    world_t *w = ((rank_t *)ctx)->w;
    int any = 0;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < n; i++)
        if (((msg_t *)reqs[i])->done)
            done[i] = 1, any = 1;
    int failed = w->failed;
    pthread_mutex_unlock(&w->mu);
    if (!any)
        sched_yield();
    return !any && failed ? ERR_WAIT : 0;
}

static void t_abandon(void *ctx, void *req, int is_send)
{
    (void)is_send;
    world_t *w = ((rank_t *)ctx)->w;
    pthread_mutex_lock(&w->mu);
    ((msg_t *)req)->abandoned = 1;
    pthread_mutex_unlock(&w->mu);
}

static size_t t_piece(void *ctx, int peer)
{
    rank_t *me = ctx;
    return limit(me->w, me->rank, peer);
}

static int t_reduce(void *ctx, const void *src, void *dst, size_t count)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        ((int64_t *)dst)[i] += ((const int64_t *)src)[i];
    return 0;
}

static void *grow_space(const rank_t *me, char **space, size_t *have, size_t bytes)
{
    if (bytes > *have) {
        free(*space);
        *space = malloc(bytes);
        *have = bytes;
    }
    if (me->stage) /* staging space: nothing in it may be read before it is written */
        memset(*space, 0x5a, bytes);
    return *space;
}

static void *t_scratch(void *ctx, size_t bytes)
{
    rank_t *me = ctx;
    return grow_space(me, &me->scratch, &me->scratch_bytes, bytes);
}

static void *t_ipc_scratch(void *ctx, size_t bytes)
{
    rank_t *me = ctx;
    return grow_space(me, &me->ipc_space, &me->ipc_bytes, bytes);
}

/* ---- a memory layer whose work runs late ------------------------------------ */

static int queue_work(rank_t *me, int reduce, void *dst, const void *src, size_t n)
{
    slow_mem_t *m = &me->slow;
    if (m->issued == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->q = realloc(m->q, m->cap * sizeof *m->q);
    }
    m->q[m->issued++] = (work_t){reduce, dst, src, n};
    return 0;
}

static int s_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    return queue_work(ctx, 0, dst, src, bytes);
}

static int s_reduce(void *ctx, const void *src, void *dst, size_t count)
{
    return queue_work(ctx, 1, dst, src, count);
}

/* Marks: the number of works before it, plus one (never NULL while any waits). */
static int s_mark(void *ctx, void **mark)
{
    slow_mem_t *m = &((rank_t *)ctx)->slow;
    *mark = m->ran == m->issued ? NULL : (void *)(uintptr_t)(m->issued + 1);
    return 0;
}

/* Each test runs one work in order. */
static int s_test(void *ctx, void *mark, int *done)
{
    rank_t *me = ctx;
    slow_mem_t *m = &me->slow;
    if (m->ran < m->issued) {
        work_t *wk = &m->q[m->ran++];
        if (wk->reduce)
            t_reduce(me, wk->src, wk->dst, wk->n);
        else
            memcpy(wk->dst, wk->src, wk->n);
    }
    *done = m->ran + 1 >= (size_t)(uintptr_t)mark;
    return 0;
}

static void s_forget(void *ctx, void *mark)
{
    (void)ctx, (void)mark;
}

/* ---- CUDA IPC's part, between threads ------------------------------------------ */

/* A description is the address itself and the exporting rank; the
 * imports not yet released are counted (every one must be, once a call
 * ends).  Only staging from ipc_scratch is exported, and only ranks of one
 * "host" (stage 3) import each other's. */
static int pins;
static __thread const rank_t *self; /* the rank this thread runs */

static int f_export(const void *p, tacos_ipc_desc_t *d)
{
    const char *at = p;
    CHECK(self->ipc_space && at >= self->ipc_space && at < self->ipc_space + self->ipc_bytes,
          "rank %d exported memory that is not its IPC staging", self->rank);
    *d = (tacos_ipc_desc_t){.offset = (unsigned long long)(uintptr_t)p, .pid = self->rank};
    return 0;
}

static int f_import(const tacos_ipc_desc_t *d, const void **p)
{
    CHECK(!self->on_host || self->on_host[d->pid], "rank %d imported rank %lld's staging: another host",
          self->rank, d->pid);
    __atomic_add_fetch(&pins, 1, __ATOMIC_RELAXED);
    *p = (const void *)(uintptr_t)d->offset;
    return 0;
}

static void f_release(const tacos_ipc_desc_t *d)
{
    (void)d;
    __atomic_sub_fetch(&pins, 1, __ATOMIC_RELAXED);
}

static const tacos_mc_t ipc_mc = {.name = "threads", .ipc_export = f_export,
                                  .ipc_import = f_import, .ipc_release = f_release};

/* After a call: its staging space reused at once (what a rank reading it
 * late, without the fence, would then read). */
static void reuse_scratch(rank_t *me)
{
    if (me->stage >= 2 && me->scratch)
        memset(me->scratch, 0x5a, me->scratch_bytes);
    if (me->stage >= 2 && me->ipc_space)
        memset(me->ipc_space, 0x5a, me->ipc_bytes);
}

/* ---- one collective call on every rank ------------------------------------ */

typedef struct {
    const tacos_sched_t *s;
    tacos_prog_t *prog;
    rank_t rt;
    const size_t *off;
    int in_place;
    int64_t *in, *buf, *own; /* own: All-Gather's own block, sent from here */
    /* routed collectives (All-to-All, Gather, Scatter): in and buf hold n
     * blocks each, block t of in goes to rank t and block f of buf comes
     * from rank f; chunks passing through lie in fwd; spans[c]: chunk c */
    int64_t *fwd;
    tacos_span_t *spans;
    tacos_mem_t mem;         /* staged runs: rt's slow memory */
    int rc, calls;           /* calls: 2 runs the same state twice (k = 3) */
    pthread_barrier_t *barrier;
} job_t;

/* The buffer as the caller hands it over: garbage where results go, the
 * input where the collective reads it in place. */
static int routed(tacos_coll_t c)
{
    return c == TACOS_ALLTOALL || c == TACOS_GATHER || c == TACOS_SCATTER;
}

/* Whether a routed collective moves a block from rank f to rank t. */
static int has_block(const tacos_sched_t *s, int f, int t)
{
    return s->coll == TACOS_ALLTOALL || (s->coll == TACOS_GATHER ? t : f) == s->root;
}

static void reset_buffers(job_t *j)
{
    const tacos_sched_t *s = j->s;
    int r = j->rt.rank;
    size_t total = j->off[s->npus];
    for (size_t i = 0; i < total; i++)
        j->buf[i] = -1;
    if (j->spans && has_block(s, r, r)) /* the own block: the caller's copy */
        memcpy(j->buf + j->off[r], j->in + j->off[r], (j->off[r + 1] - j->off[r]) * sizeof(int64_t));
    else if (j->spans)
        return;
    else if (j->in_place && s->coll == TACOS_ALLGATHER)
        memcpy(j->buf + j->off[r], j->own, (j->off[r + 1] - j->off[r]) * sizeof(int64_t));
    else if (j->in_place || (s->coll == TACOS_BROADCAST && r == s->root))
        memcpy(j->buf, j->in, total * sizeof(int64_t));
}

static int64_t value(int r, size_t i)
{
    return (int64_t)(r + 1) * 1000003 + (int64_t)i * 7 - 5000;
}

static void copy_own(void *arg)
{
    job_t *j = arg;
    int me = j->rt.rank;
    size_t bytes = (j->off[me + 1] - j->off[me]) * sizeof(int64_t);
    if (j->rt.stage) /* through the memory layer: the call ends once it ran */
        j->mem.copy(j->mem.ctx, j->buf + j->off[me], j->own, bytes);
    else
        memcpy(j->buf + j->off[me], j->own, bytes);
}

/* The options a caller gives for this rank's call; k = 2, 3 and 4 unstaged
 * or staged with IPC: reductions combined in program order (k = 1, and 4
 * otherwise: arrival order). */
static const tacos_exec_opts_t *rank_opts(job_t *j, tacos_exec_opts_t *o)
{
    const tacos_sched_t *s = j->s;
    int me = j->rt.rank, k = s->chunks_per_npu;
    *o = (tacos_exec_opts_t){.ordered = k >= 2 && !(k == 4 && j->rt.stage % 2),
                             .scratch = t_scratch,
                             .scratch_arg = &j->rt, .mem = j->rt.stage ? &j->mem : NULL,
                             .ipc = j->rt.stage >= 2 ? &ipc_mc : NULL,
                             .ipc_peers = j->rt.on_host, .ipc_scratch = t_ipc_scratch,
                             .spans = j->spans};
    if (j->spans)
        return o;
    if (s->coll == TACOS_ALLGATHER && !j->in_place) {
        o->own_src = j->own;
        o->own_block = me;
        o->overlap = copy_own;
        o->overlap_arg = j;
    } else if (s->coll != TACOS_ALLGATHER && s->coll != TACOS_BROADCAST && !j->in_place) {
        o->input = j->in;
        o->keep = s->coll == TACOS_REDUCE_SCATTER            ? TACOS_KEEP_BLOCK
                  : s->coll == TACOS_REDUCE && me != s->root ? TACOS_KEEP_NONE
                                                             : TACOS_KEEP_ALL;
        o->keep_block = me;
    }
    return o;
}

static void *run_rank(void *arg)
{
    job_t *j = arg;
    const tacos_sched_t *s = j->s;
    int me = j->rt.rank;
    tacos_transport_t tp = {&j->rt,      t_isend,   t_irecv,  t_wait_some,
                            t_test_some, t_abandon, t_reduce, t_piece};
    tacos_exec_opts_t o;
    const tacos_exec_opts_t *opts = rank_opts(j, &o);
    self = &j->rt;
    if (s->chunks_per_npu < 3) {
        j->rc = tacos_exec_run(j->prog, s->npus, s->chunks_per_npu, j->off, j->buf,
                               sizeof(int64_t), &tp, opts);
        reuse_scratch(&j->rt);
        return NULL;
    }
    /* k = 3, 4: the nonblocking form, a state made once and used twice (the
     * first call with the other in-place setting where there is one) */
    tacos_exec_t *x = NULL;
    int done = 0, rc = tacos_exec_new(j->prog, s->npus, s->chunks_per_npu, &x);
    int toggle = s->coll != TACOS_BROADCAST && !routed(s->coll) && j->calls == 2;
    for (int call = 0; call < j->calls; call++) {
        if (call) { /* every rank takes both barriers, whatever happened */
            pthread_barrier_wait(j->barrier);
            reset_buffers(j);
            pthread_barrier_wait(j->barrier);
        } else if (toggle) {
            j->in_place = !j->in_place;
            reset_buffers(j);
            opts = rank_opts(j, &o);
        }
        if (rc)
            continue;
        rc = tacos_exec_start(x, j->off, j->buf, sizeof(int64_t), &tp, opts);
        if (!rc && j->prog->nops) /* a state with a call in flight is not started again */
            CHECK(tacos_exec_start(x, j->off, j->buf, sizeof(int64_t), &tp, opts) ==
                      TACOS_ERR_INVALID,
                  "rank %d: a second start during a call was accepted", me);
        for (done = 0; !rc && !done;)
            rc = tacos_exec_progress(x, &done);
        if (!rc) /* after the end: done again, nothing touched */
            CHECK(tacos_exec_progress(x, &done) == 0 && done, "rank %d: progress after done",
                  me);
        reuse_scratch(&j->rt);
        if (call == 0 && toggle) {
            j->in_place = !j->in_place;
            opts = rank_opts(j, &o);
        }
    }
    j->rc = rc;
    tacos_exec_free(x);
    return NULL;
}

/* Blocks: even split of `count` (All-Reduce, Reduce, Broadcast), `count`
 * each (All-Gather, the routed collectives) or uneven sizes (Reduce-Scatter). */
static size_t *blocks(tacos_coll_t coll, int n, size_t count)
{
    size_t *off = malloc(((size_t)n + 1) * sizeof *off);
    off[0] = 0;
    for (int r = 0; r < n; r++)
        off[r + 1] = coll == TACOS_ALLGATHER || routed(coll) ? off[r] + count
                     : coll == TACOS_REDUCE_SCATTER ? off[r] + count * (size_t)(r + 1) / (size_t)n
                                                    : count * (size_t)(r + 1) / (size_t)n;
    return off;
}

/* A routed collective's chunks on rank j: its blocks' parts in in and buf,
 * what passes through in fwd (n x n blocks of count). */
static void place_chunks(job_t *j, size_t count)
{
    const tacos_sched_t *s = j->s;
    int n = s->npus, k = s->chunks_per_npu, me = j->rt.rank, f, t;
    long long nchunks = tacos_coll_nchunks(s->coll, n, k);
    j->fwd = malloc(((size_t)n * (size_t)n * count + 1) * sizeof *j->fwd);
    j->spans = malloc((size_t)nchunks * sizeof *j->spans);
    for (int c = 0; c < nchunks; c++) {
        tacos_chunk_route(s->coll, n, k, s->root, c, &f, &t);
        size_t first = count * (size_t)(c % k) / (size_t)k;
        j->spans[c].units = count * (size_t)(c % k + 1) / (size_t)k - first;
        j->spans[c].at = (char *)(f == me   ? j->in + (size_t)t * count + first
                                  : t == me ? j->buf + (size_t)f * count + first
                                            : j->fwd + ((size_t)f * (size_t)n + (size_t)t) * count + first);
    }
}

/* 1: each rank's program from its own part of the levels
 * (tacos_synthesize_hier_rank), not from the schedule run_and_check gets */
static int by_rank_levels;

static int program_of(const tacos_sched_t *s, int rank, tacos_prog_t **prog)
{
    if (!by_rank_levels)
        return tacos_sched_program(s, rank, prog);
    tacos_synth_opts_t o = {s->coll, s->root, s->chunks_per_npu, s->size_bytes, 1, 1, 0, 0};
    tacos_sched_t *part = NULL;
    int rc = tacos_synthesize_hier_rank(s->topo, &o, rank, &part);
    if (!rc) {
        CHECK(part->levels == 2, "rank %d's part: levels %d", rank, part->levels);
        rc = tacos_sched_program(part, rank, prog);
    }
    tacos_sched_free(part);
    return rc;
}

/* Runs the schedule on every rank and checks what each rank must hold.
 * fail_at >= 0: the fail_at-th send fails; every rank must return an error.
 * piece: the transport's largest message between ranks of different
 * parity (0 none); stage: through a slow memory layer. */
static int last_sends; /* the sends of run_and_check's last run */

static void run_and_check(const tacos_sched_t *s, size_t count, int in_place, int fail_at,
                          size_t piece, int stage, const char *what)
{
    int n = s->npus;
    size_t *off = blocks(s->coll, n, count), total = off[n];
    world_t w = {.n = n, .fail_at = fail_at, .piece = piece};
    size_t pairs = (size_t)n * (size_t)n;
    w.send_head = calloc(pairs, sizeof(msg_t *));
    w.send_tail = calloc(pairs, sizeof(msg_t *));
    w.recv_head = calloc(pairs, sizeof(msg_t *));
    w.recv_tail = calloc(pairs, sizeof(msg_t *));
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)n);
    job_t *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    int64_t *sum = calloc(total + 1, sizeof *sum);
    for (int r = 0; r < n; r++) {
        job_t *j = &jobs[r];
        *j = (job_t){.s = s, .rt = {&w, r, NULL, 0, stage, {0}, NULL, 0, NULL}, .off = off,
                     .in_place = in_place, .calls = fail_at >= 0 ? 1 : 2, .barrier = &barrier,
                     .mem = {&j->rt, s_copy, s_reduce, s_mark, s_test, s_forget}};
        CHECK_OK(program_of(s, r, &j->prog));
        if (stage == 3) { /* two "hosts": the ranks of each parity */
            j->rt.on_host = malloc((size_t)n);
            for (int p = 0; p < n; p++)
                j->rt.on_host[p] = p % 2 == r % 2;
        }
        j->in = malloc((total + 1) * sizeof(int64_t));
        j->buf = malloc((total + 1) * sizeof(int64_t));
        j->own = malloc((off[r + 1] - off[r] + 1) * sizeof(int64_t));
        for (size_t i = 0; i < total; i++)
            j->in[i] = value(r, i);
        for (size_t i = off[r]; i < off[r + 1]; i++)
            j->own[i - off[r]] = value(r, i);
        if (routed(s->coll))
            place_chunks(j, count);
        reset_buffers(j);
        for (size_t i = 0; i < total; i++)
            sum[i] += value(r, i);
    }
    for (int r = 0; r < n; r++)
        pthread_create(&th[r], NULL, run_rank, &jobs[r]);
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    CHECK(!w.mismatches, "%s: %d messages with different send and receive sizes", what,
          w.mismatches);
    CHECK(!w.oversize, "%s: %d messages above the transport's piece of %zu bytes", what,
          w.oversize, piece);
    int failed = 0;
    for (int r = 0; r < n; r++) {
        job_t *j = &jobs[r];
        if (fail_at >= 0) { /* the failing rank says so; the others finish or see it */
            failed += j->rc == ERR_SEND;
            CHECK(j->rc == ERR_SEND || j->rc == ERR_WAIT || !j->rc,
                  "%s: rank %d returned %d after an injected failure", what, r, j->rc);
            continue;
        }
        CHECK(j->rc == 0, "%s: rank %d returned %d", what, r, j->rc);
        size_t lo = 0, hi = total, bad = 0, at = 0;
        int64_t want_at = 0, got_at = 0;
        if (s->coll == TACOS_REDUCE_SCATTER)
            lo = off[r], hi = off[r + 1];
        if (s->coll == TACOS_REDUCE && r != s->root)
            hi = 0;
        for (size_t i = lo; i < hi; i++) {
            int f = (int)(i / (count ? count : 1)); /* routed: the block's sender */
            int64_t want = j->spans ? has_block(s, f, r) ? value(f, off[r] + i % count) : -1
                           : s->coll == TACOS_BROADCAST ? value(s->root, i)
                           : s->coll == TACOS_ALLGATHER
                               ? value((int)(i / (count ? count : 1)), i)
                               : sum[i];
            if (j->buf[i] != want && !bad++)
                at = i, want_at = want, got_at = j->buf[i];
        }
        CHECK(!bad, "%s: rank %d: %zu wrong elements, first [%zu] = %lld, want %lld", what, r,
              bad, at, (long long)got_at, (long long)want_at);
        if (!in_place && s->coll != TACOS_ALLGATHER && s->coll != TACOS_BROADCAST)
            for (size_t i = 0; i < total; i++)
                if (j->in[i] != value(r, i)) {
                    CHECK(0, "%s: rank %d: the input changed at [%zu]", what, r, i);
                    break;
                }
    }
    CHECK(fail_at < 0 || failed == 1, "%s: %d ranks saw the injected send failure", what, failed);
    CHECK(fail_at >= 0 || !pins, "%s: %d imported blocks never released", what, pins);
    pins = 0; /* a failed call keeps its own: its memory work may still read them */
    size_t live = 0; /* a receive neither done nor abandoned could land in freed memory */
    for (size_t i = 0; i < w.nall; i++)
        live += w.all[i]->recv && !w.all[i]->done && !w.all[i]->abandoned;
    CHECK(!live, "%s: %zu receives left in flight after the return", what, live);
    last_sends = w.sends;
    for (int r = 0; r < n; r++) {
        tacos_prog_free(jobs[r].prog);
        free(jobs[r].in);
        free(jobs[r].buf);
        free(jobs[r].own);
        free(jobs[r].rt.scratch);
        free(jobs[r].rt.ipc_space);
        free(jobs[r].rt.on_host);
        free(jobs[r].fwd);
        free(jobs[r].spans);
        free(jobs[r].rt.slow.q);
    }
    for (size_t i = 0; i < w.nall; i++)
        free(w.all[i]);
    free(w.all);
    free(w.send_head);
    free(w.send_tail);
    free(w.recv_head);
    free(w.recv_tail);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    pthread_barrier_destroy(&barrier);
    free(jobs);
    free(th);
    free(sum);
    free(off);
}

static int aggregated; /* schedules run with messages of several chunks */

/* The messages of s (none empty at count 1000). */
static int messages(const tacos_sched_t *s)
{
    int n = 0;
    for (size_t i = 0; i < s->nxfers; i++)
        n += !(i && tacos_same_message(&s->xfers[i], &s->xfers[i - 1]));
    return n;
}

/* k = 4: small chunks, up to 8 in one message (the executor packs them) */
static tacos_sched_t *synth(const tacos_topo_t *t, tacos_coll_t coll, int root, int k)
{
    tacos_synth_opts_t o = {coll, root, k, k == 4 ? 1 << 12 : 1 << 20, 1, 1, k == 4 ? 8 : 0, 0};
    tacos_sched_t *s = NULL;
    CHECK_OK(tacos_synthesize(t, &o, &s));
    aggregated += s && tacos_sched_most_per_message(s) > 1;
    return s;
}

int main(void)
{
    const char *shapes[] = {"ring:2", "uniring:3", "mesh2d:2x2", "ring:5", "switch:4",
                            "rfs:2x2x2", "fc:7"};
    const size_t counts[] = {0, 1, 2, 7, 13, 1000};
    const tacos_coll_t colls[] = {TACOS_ALLREDUCE, TACOS_REDUCE_SCATTER, TACOS_ALLGATHER,
                                  TACOS_BROADCAST, TACOS_REDUCE, TACOS_ALLTOALL,
                                  TACOS_GATHER, TACOS_SCATTER};
    int runs = 0;
    for (size_t t = 0; t < sizeof shapes / sizeof *shapes; t++) {
        tacos_topo_t *topo = NULL;
        double bw = 25, lat = 0.5;
        CHECK_OK(tacos_topo_generate(shapes[t], &bw, 1, &lat, 1, 1, &topo));
        if (!topo)
            continue;
        for (size_t c = 0; c < sizeof colls / sizeof *colls; c++)
            for (int k = 1; k <= 4; k++) {
                int rooted = colls[c] == TACOS_BROADCAST || colls[c] == TACOS_REDUCE ||
                             colls[c] == TACOS_GATHER || colls[c] == TACOS_SCATTER;
                int root = rooted ? (k + (int)t) % topo->npus : 0;
                /* k = 2, 3: messages between ranks of different parity in
                 * pieces of 20 or 40 bytes (not whole elements); k = 4
                 * aggregated (synth), in pieces of 60 bytes but unstaged at
                 * count 1000 */
                tacos_sched_t *s = synth(topo, colls[c], root, k);
                for (int stage = 0; s && stage <= 3; stage++) {
                    const char *staged = stage == 3   ? " staged, IPC within 2 hosts"
                                         : stage == 2 ? " staged, IPC"
                                         : stage      ? " staged"
                                                      : "";
                    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
                        for (int in_place = 0;
                             in_place <= !(colls[c] == TACOS_BROADCAST || routed(colls[c]));
                             in_place++) {
                            size_t piece = k < 4                        ? (size_t)(k - 1) * 20
                                           : stage || counts[i] < 1000 ? 60
                                                                       : 0;
                            char what[160];
                            snprintf(what, sizeof what, "%s %s root %d k=%d count %zu%s%s%s",
                                     shapes[t], tacos_coll_name(colls[c]), root, k, counts[i],
                                     in_place ? " in place" : "", piece ? " in pieces" : "",
                                     staged);
                            run_and_check(s, counts[i], in_place, -1, piece, stage, what);
                            runs++;
                            /* (k >= 3: two calls) a message of several chunks is one send */
                            CHECK(k < 3 || piece || stage || last_sends == 2 * messages(s),
                                  "%s: %d sends for %d messages (%zu transfers), 2 calls", what,
                                  last_sends, messages(s), s->nxfers);
                        }
                    /* a failed send, first or midway: an error, no hang
                     * (a message carries up to `most` transfers) */
                    for (int step = 0; step < 2; step++) {
                        int f = step ? (int)s->nxfers / 2 / tacos_sched_most_per_message(s) : 0;
                        char what[160];
                        snprintf(what, sizeof what, "%s %s k=%d, send %d fails%s", shapes[t],
                                 tacos_coll_name(colls[c]), k, f, staged);
                        run_and_check(s, 1000, 0, f, k < 4 ? (size_t)(k - 1) * 20 : 60, stage,
                                      what);
                    }
                }
                tacos_sched_free(s);
            }
        tacos_topo_free(topo);
    }
    CHECK(runs > 2000, "only %d runs", runs);

    /* hierarchical schedules (tacos_synthesize_hier): groups of 3 joined in
     * rails, groups forwarding on a ring; copies and reductions mixed */
    const char *leveled[] = {"fs:3x2", "rs:3x2", "sf:2x3", FIXTURES "/levels3x3.json"};
    const tacos_coll_t hier_colls[] = {TACOS_ALLREDUCE, TACOS_REDUCE_SCATTER, TACOS_ALLGATHER};
    for (size_t t = 0; t < sizeof leveled / sizeof *leveled; t++) {
        tacos_topo_t *topo = NULL;
        double bw[2] = {100, 25}, lat[2] = {0.5, 2};
        CHECK_OK(leveled[t][0] == '/' ? tacos_topo_read_file(leveled[t], &topo)
                                      : tacos_topo_generate(leveled[t], bw, 2, lat, 2, 1, &topo));
        for (size_t c = 0; topo && c < sizeof hier_colls / sizeof *hier_colls; c++)
            for (int k = 1; k <= 2; k++) {
                tacos_synth_opts_t o = {hier_colls[c], 0, k, 1 << 20, 1, 1, 0, 0};
                tacos_sched_t *s = NULL;
                CHECK_OK(tacos_synthesize_hier(topo, &o, &s));
                for (size_t i = 0; s && i < sizeof counts / sizeof *counts; i++)
                    for (int in_place = 0; in_place <= 1; in_place++) {
                        char what[160];
                        snprintf(what, sizeof what, "%s levels %s k=%d count %zu%s", leveled[t],
                                 tacos_coll_name(hier_colls[c]), k, counts[i],
                                 in_place ? " in place" : "");
                        run_and_check(s, counts[i], in_place, -1, (size_t)(k - 1) * 20, 0, what);
                    }
                if (s)
                    run_and_check(s, 1000, 0, (int)s->nxfers / 2, 0, 0, "levels, a send fails");
                /* each rank's program from its part alone (as the MPI libraries
                 * build it with coll_tacos_hierarchy 1) */
                by_rank_levels = 1;
                for (size_t i = 0; s && i < sizeof counts / sizeof *counts; i++) {
                    char what[160];
                    snprintf(what, sizeof what, "%s levels by rank %s k=%d count %zu", leveled[t],
                             tacos_coll_name(hier_colls[c]), k, counts[i]);
                    run_and_check(s, counts[i], i % 2, -1, 0, 0, what);
                }
                if (s)
                    run_and_check(s, 1000, 0, 3, 0, 0, "levels by rank, a send fails");
                by_rank_levels = 0;
                tacos_sched_free(s);
            }
        tacos_topo_free(topo);
    }

    /* a program that can never make progress is refused, not waited on */
    tacos_op_t op = {TACOS_OP_SEND, 0, 0, 1, 0, 0, 1, 0, 0};
    size_t self = 0, off[3] = {0, 4, 8};
    tacos_prog_t stuck = {0, 1, &op, &self};
    int64_t buf[8] = {0};
    world_t w = {.n = 2};
    rank_t me = {&w, 0, NULL, 0, 0, {0}, NULL, 0, NULL};
    tacos_transport_t tp = {&me, t_isend, t_irecv, t_wait_some, t_test_some, t_abandon, t_reduce,
                            NULL};
    CHECK(tacos_exec_run(&stuck, 2, 1, off, buf, sizeof *buf, &tp, NULL) == TACOS_ERR_INVALID,
          "a send waiting for itself was not refused");
    CHECK(aggregated > 0, "no schedule ran with messages of several chunks");
    return check_report("test_exec");
}
