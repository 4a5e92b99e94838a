/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Running a call: the collectives' drivers every binding shares (which
 * buffer the schedule runs in, block layouts, what is packed and when), the
 * scratch a communicator keeps across calls, and fault injection for tests.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "ipc.h"

/* ---- fault injection ----------------------------------------------------------- */

static int fault_rank = -1, fault_left;
static char fault_kind[8];

static void fault_init(void)
{
    const char *e = getenv("TACOS_FAULT"), *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r)
        r = getenv("PMI_RANK");
    if (!e || !r || sscanf(e, "%d:%7[a-z]:%d", &fault_rank, fault_kind, &fault_left) != 3 ||
        fault_rank != atoi(r))
        fault_rank = -1;
}

int tacos_fault(const char *what)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fault_init);
    return fault_rank >= 0 && !strcmp(fault_kind, what) &&
           __atomic_sub_fetch(&fault_left, 1, __ATOMIC_RELAXED) == 0;
}
/* ---- scratch ------------------------------------------------------------------- */

/* Bytes of scratch all communicators of the process keep between calls. */
static size_t scratch_kept;

/* A buffer of at least `bytes` in *buf; `counted`: in scratch_kept (a
 * communicator's, kept between calls; an operation's own is not). */
static char *grow(char **buf, size_t *have, size_t bytes, int counted)
{
    if (bytes > *have || !*buf) {
        free(*buf);
        if (counted)
            __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
        *buf = tacos_fault("alloc") ? NULL : malloc(bytes ? bytes : 1);
        *have = *buf ? bytes : 0;
        if (counted)
            __atomic_add_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    }
    return *buf;
}

static void drop(char **buf, size_t *have, int free_it)
{
    if (free_it)
        free(*buf);
    __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    *buf = NULL;
    *have = 0;
}

/* A memory component's buffer, freed (free_it 0: set aside, an abandoned
 * send or copy may still use it). */
static void mc_drop(tacos_mc_buf_t *b, int free_it)
{
    if (b->p && free_it)
        (b->device ? b->mc->dev_free : b->mc->host_free)(b->p);
    if (b->counted)
        __atomic_sub_fetch(&scratch_kept, b->bytes, __ATOMIC_RELAXED);
    *b = (tacos_mc_buf_t){0};
}

/* A memory component's buffer of at least `bytes` (device: its own memory,
 * else pinned host memory: tacos_mc_buf_t); counted: in the process's
 * scratch total. */
static char *mc_grow(tacos_mc_buf_t *b, const tacos_mc_t *mc, int device, size_t bytes,
                     int counted)
{
    if (b->p && b->bytes >= bytes && b->mc == mc && b->device == device)
        return b->p;
    mc_drop(b, 1);
    void *p = tacos_fault("alloc") ? NULL : device ? mc->dev_alloc(bytes) : mc->host_alloc(bytes);
    *b = (tacos_mc_buf_t){p, p ? bytes : 0, mc, device, counted};
    if (counted)
        __atomic_add_fetch(&scratch_kept, b->bytes, __ATOMIC_RELAXED);
    return p;
}

/* An operation's empty buffer b, from the communicator's pool: the first
 * of this kind that holds `bytes` (none: b stays empty). */
static void pool_take(tacos_comm_t *c, tacos_mc_buf_t *b, const tacos_mc_t *mc, int device,
                      size_t bytes)
{
    pthread_mutex_lock(&c->pool_lock);
    for (int i = 0; i < c->npool; i++) {
        tacos_mc_buf_t *p = &c->pool[i];
        if (p->mc == mc && p->device == device && p->bytes >= bytes) {
            __atomic_sub_fetch(&scratch_kept, p->bytes, __ATOMIC_RELAXED);
            *b = *p, b->counted = 0;
            memmove(p, p + 1, (size_t)(--c->npool - i) * sizeof *p);
            break;
        }
    }
    pthread_mutex_unlock(&c->pool_lock);
}

/* The oldest of the pool freed. */
static void pool_evict(tacos_comm_t *c)
{
    mc_drop(&c->pool[0], 1);
    memmove(c->pool, c->pool + 1, (size_t)--c->npool * sizeof *c->pool);
}

/* An operation that ended gives its buffer b back (b empty after): kept in
 * the pool, counted with the communicators' scratch; the oldest go where
 * the pool is full or the process keeps more than scratch_max. */
static void pool_give(tacos_comm_t *c, tacos_mc_buf_t *b)
{
    if (!b->p)
        return;
    pthread_mutex_lock(&c->pool_lock);
    if (c->npool == TACOS_POOL_BUFS)
        pool_evict(c);
    b->counted = 1;
    __atomic_add_fetch(&scratch_kept, b->bytes, __ATOMIC_RELAXED);
    c->pool[c->npool++] = *b;
    while (c->npool && __atomic_load_n(&scratch_kept, __ATOMIC_RELAXED) > c->s.scratch_max)
        pool_evict(c);
    pthread_mutex_unlock(&c->pool_lock);
    *b = (tacos_mc_buf_t){0};
}

void tacos_comm_drop_scratch(tacos_comm_t *c)
{
    drop(&c->work, &c->work_bytes, 1);
    drop(&c->recv, &c->recv_bytes, 1);
    mc_drop(&c->stage, 1);
    mc_drop(&c->ipc_stage, 1);
    mc_drop(&c->dwork, 1);
    pthread_mutex_lock(&c->pool_lock);
    while (c->npool)
        pool_evict(c);
    pthread_mutex_unlock(&c->pool_lock);
}

/* ---- views ------------------------------------------------------------------------ */

/* Messages and packing take int counts of bytes. */
static const char *too_big(const tacos_view_t *v)
{
    return v->bytes > INT_MAX || v->units * v->unit_ext > INT_MAX
               ? "buffer larger than INT_MAX bytes"
               : NULL;
}

const char *tacos_view_bytes(size_t count, size_t size, tacos_view_t *v)
{
    *v = (tacos_view_t){count * size, 1, count * size, 0};
    return count && size > SIZE_MAX / count ? "buffer larger than INT_MAX bytes" : too_big(v);
}

const char *tacos_view_elements(size_t count, size_t size, ptrdiff_t ext, ptrdiff_t tlb,
                                ptrdiff_t text, int commutative, tacos_view_t *v)
{
    *v = (tacos_view_t){0, 0, 0, tlb};
    if (!commutative)
        return "non-commutative op";
    if (ext <= 0 || text > ext) /* the same datatype on every rank: the same answer */
        return "datatype whose elements overlap";
    *v = (tacos_view_t){count, (size_t)ext, count * size, tlb};
    return count && (size_t)ext > SIZE_MAX / count ? "buffer larger than INT_MAX bytes"
                                                    : too_big(v);
}

/* ---- one call of a plan --------------------------------------------------------- */

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    const tacos_mem_t *mem; /* the call's, or NULL: memcpy */
    int rc;
} copy_args_t;

/* A block of a routed collective on this rank: its data, where it is
 * during the call (in place, or in scratch: packed at the start, unpacked
 * at the end) and its bytes. */
typedef struct {
    tacos_data_t d;
    char *at;
    size_t bytes;
    int in_scratch;
} routed_block_t;

/* A call of a plan: blocking (the plan's executor state and block offsets,
 * the communicator's scratch) or an operation of its own (nonblocking,
 * persistent: its own state and scratch, and a reference to the program). */
struct tacos_req {
    tacos_comm_t *c;
    tacos_call_t call;
    tacos_coll_t coll;
    int root, own, persistent, k;
    tacos_prog_t *prog;
    int *prog_refs; /* own: the reference it holds */
    tacos_exec_t *exec;
    size_t *off;
    const int *counts;        /* Allgatherv's blocks */
    const ptrdiff_t *displs;  /* (NULL: in rank order) */
    void *own_counts, *own_displs; /* a request's copies of them */
    tacos_data_t send, recv;
    int in_place, no_recv; /* no send buffer (MPI_IN_PLACE, or none); no receive buffer */
    char *work, *space; /* own scratch: the units, arriving reductions */
    size_t work_bytes, space_bytes;
    tacos_mc_buf_t stage, dwork; /* own, with call.mem: staging, work space */
    const tacos_mc_t *ipc;       /* peers read staging through CUDA IPC */
    tacos_mc_buf_t ipc_stage;    /* own, with ipc: the staging they read */
    /* own: agreeing on IPC without blocking (ipc.c); a persistent call's
     * answer, kept (0 not asked yet, 1 yes, -1 no) */
    tacos_ipc_vote_t vote;
    int ipc_answer;
    /* own, nonblocking, of a plan not agreed yet: the same rounds agree
     * whether every rank has the schedule (exec NULL: this rank has not);
     * where one has not, alt (the same call as a list) runs instead */
    int plan_vote, on_alt;
    int fell_back; /* no alt: the binding runs the previous component's (tacos_req_fell_back) */
    uint64_t hash; /* the schedule's (plan_vote) */
    int deferred;  /* planned once the setup's exchange is in (setup.c) */
    tacos_req_t *alt;
    /* the call in flight */
    char *buf;  /* where the schedule runs (unit 0) */
    int unpack; /* the result goes from buf to recv at the end */
    tacos_exec_opts_t opts;
    copy_args_t copy;
    tacos_span_t *spans; /* routed collectives, lists: where each chunk is */
    /* a list of messages (tacos_req_new_list): chunk i is message i */
    tacos_msg_t *msgs;
    tacos_copy_t *copies;
    int nmsgs, ncopies;
    int *share;    /* per message: the first message of the same data */
    char *unpacks; /* per message: the last receive of its data (unpacks it from scratch) */
    /* routed collectives: the blocks this rank sends from (in) and receives
     * into (out), given (the v-variants: sizes, every block's bytes) or
     * equal parts of send and recv */
    const size_t *sizes;
    const tacos_data_t *in_given, *out_given;
    routed_block_t *blocks;
};

static void *comm_space(void *arg, size_t bytes)
{
    tacos_comm_t *c = ((tacos_req_t *)arg)->c;
    return grow(&c->recv, &c->recv_bytes, bytes, 1);
}

static void *own_space(void *arg, size_t bytes)
{
    tacos_req_t *r = arg;
    return grow(&r->space, &r->space_bytes, bytes, 0);
}

/* ---- buffers operations of their own share ----------------------------------- */

/* A memory component's buffer of `bytes` for r: a blocking call's is the
 * communicator's (comm), an operation's its own (own), from the pool where
 * it has none yet. */
static char *mc_space(tacos_req_t *r, tacos_mc_buf_t *own, tacos_mc_buf_t *comm, int device,
                      size_t bytes)
{
    if (!r->own)
        return mc_grow(comm, r->call.mc, device, bytes, 1);
    if (!own->p)
        pool_take(r->c, own, r->call.mc, device, bytes);
    return mc_grow(own, r->call.mc, device, bytes, 0);
}

/* With call.mem: the executor's staging space (pinned host memory). */
static void *stage_space(void *arg, size_t bytes)
{
    tacos_req_t *r = arg;
    return mc_space(r, &r->stage, &r->c->stage, 0, bytes);
}

/* With ipc: staging space the peers of this host read (device memory). */
static void *ipc_stage_space(void *arg, size_t bytes)
{
    tacos_req_t *r = arg;
    return mc_space(r, &r->ipc_stage, &r->c->ipc_stage, 2, bytes);
}

/* Scratch of `bytes`: the operation's own or the communicator's (with
 * call.mem, the memory component's: where the buffers are). */
static char *scratch(tacos_req_t *r, size_t bytes)
{
    if (r->call.mem)
        return mc_space(r, &r->dwork, &r->c->dwork, 1, bytes);
    return r->own ? grow(&r->work, &r->work_bytes, bytes, 0)
                  : grow(&r->c->work, &r->c->work_bytes, bytes, 1);
}

/* Scratch for the units; unit 0 at the returned address. */
static char *work_space(tacos_req_t *r)
{
    const tacos_view_t *v = &r->call.v;
    char *w = scratch(r, v->units * v->unit_ext);
    return w ? w - v->shift : NULL;
}

/* After a blocking call: the communicator keeps its scratch (no page
 * faults next time) while the process's total stays within scratch_max. */
static int finish(tacos_comm_t *c, int rc)
{
    if (__atomic_load_n(&scratch_kept, __ATOMIC_RELAXED) > c->s.scratch_max)
        tacos_comm_drop_scratch(c);
    return rc;
}

/* A call that failed: sends abandoned in flight may still read the work
 * buffer and the executor's scratch (a message of several chunks packed
 * there), which are set aside (never freed); one message for the error. */
static int failed(tacos_req_t *r, int rc)
{
    tacos_comm_t *c = r->c;
    const tacos_call_t *call = &r->call;
    int error = *call->error;
    if (r->own) {
        r->work = NULL, r->work_bytes = 0;
        r->space = NULL, r->space_bytes = 0;
    } else {
        drop(&c->work, &c->work_bytes, 0);
        drop(&c->recv, &c->recv_bytes, 0);
    }
    mc_drop(r->own ? &r->stage : &c->stage, 0);
    mc_drop(r->own ? &r->ipc_stage : &c->ipc_stage, 0);
    mc_drop(r->own ? &r->dwork : &c->dwork, 0);
    const char *what = error                   ? "a message failed"
                       : rc == TACOS_ERR_NOMEM ? "out of memory for the executor"
                       : rc == TACOS_ERR_IO && call->mc && call->mc->why ? call->mc->why()
                                               : "the schedule cannot progress (a coll/tacos bug)";
    int ret = error ? error : rc == TACOS_ERR_NOMEM ? call->err_nomem : call->err_internal;
    char call_name[64]; /* a schedule's collective, or a list (textbook program) */
    if (r->msgs)
        snprintf(call_name, sizeof call_name, "a program of %d messages", r->nmsgs);
    else
        snprintf(call_name, sizeof call_name, "%s of %zu bytes", tacos_coll_name(r->coll),
                 call->v.bytes);
    tacos_comm_say(c, 0, "%s on rank %d of %d: %s (%d); the other ranks may wait for this one "
                         "until the error handler ends the job",
                   call_name, c->ops.rank, c->ops.size, what, ret);
    return ret;
}

/* Blocks of counts[r] x scale units (or `each` when counts is NULL), into off[0..n]. */
static void sized_blocks(size_t *off, int n, const int *counts, size_t scale, size_t each)
{
    off[0] = 0;
    for (int r = 0; r < n; r++)
        off[r + 1] = off[r] + (counts ? (size_t)counts[r] * scale : each);
}

static void even_blocks(size_t *off, int n, size_t units)
{
    for (int r = 0; r <= n; r++)
        off[r] = units * (size_t)r / (size_t)n;
}

/* The call's blocks, in units. */
static void layout(tacos_req_t *r, const tacos_args_t *a)
{
    int n = r->c->ops.size;
    if (r->coll == TACOS_ALLGATHER)
        sized_blocks(r->off, n, a->counts, a->count_units, r->call.v.bytes / (size_t)n);
    else if (r->coll == TACOS_REDUCE_SCATTER)
        sized_blocks(r->off, n, a->counts, 1, a->each);
    else
        even_blocks(r->off, n, r->call.v.units);
}

static void setup(tacos_req_t *r, tacos_comm_t *c, const tacos_plan_t *p,
                  const tacos_call_t *call, const tacos_args_t *a)
{
    *r = (tacos_req_t){.c = c, .call = *call, .coll = p->coll, .root = a->root, .k = p->k,
                       .prog = p->prog, .exec = p->exec, .off = p->off,
                       .in_place = !a->send, .no_recv = !a->recv, .counts = a->counts,
                       .displs = a->displs, .sizes = a->sizes, .in_given = a->in,
                       .out_given = a->out};
    if (a->recv)
        r->recv = *a->recv;
    if (a->send)
        r->send = *a->send;
}

/* d's units in place (unit 0's address), or NULL where it goes through
 * scratch: its data is one run of bytes and, for elements, they are packed
 * tightly (no lower bound, no padding: the signature's size is the units'
 * extent; always so for bytes). */
static char *direct(const tacos_call_t *call, const tacos_data_t *d)
{
    const tacos_view_t *v = &call->v;
    if (!d->count)
        return d->buf;
    if (v->shift != 0 || v->units * v->unit_ext != v->bytes)
        return NULL;
    return call->contiguous(call->tp.ctx, d);
}

#define PACK(call, d, work) (call)->pack((call)->tp.ctx, d, work)
#define UNPACK(call, work, d) (call)->unpack((call)->tp.ctx, work, d)

static void copy_block(void *arg)
{
    copy_args_t *a = arg;
    if (a->bytes && a->mem)
        a->rc = a->mem->copy(a->mem->ctx, a->dst, a->src, a->bytes);
    else if (a->bytes)
        memcpy(a->dst, a->src, a->bytes);
}

/* The routed collectives.  All-to-All: chunk ((i*n + j)*k + p) is part p
 * of block i*n + j, from rank i's send buffer to rank j.  Gather and
 * Scatter: chunk (q*k + p) is part p of block q, rank q's, between it and
 * the root (the root's buffers hold n blocks, the other ranks' one).  This
 * rank sends its own blocks from its input (in place where one is a run of
 * bytes, else packed into scratch: also All-to-All's MPI_IN_PLACE, since
 * receives overwrite rbuf), receives its own into its output (in place, or
 * scratch unpacked at the end), and keeps what it forwards in scratch; its
 * block to itself is copied while the first messages travel.  Blocks are
 * equal (the signature's bytes / n) or, for the v-variants, of the sizes
 * every rank was given. */
static void route_of(const tacos_req_t *r, int c, int *from, int *to)
{
    tacos_chunk_route(r->coll, r->c->ops.size, r->k, r->root, c, from, to);
}

/* The bytes of the block from `from` to `to` (chunk c's: c / k). */
static size_t block_bytes(const tacos_req_t *r, int from, int to)
{
    int n = r->c->ops.size;
    int b = r->coll == TACOS_ALLTOALL ? from * n + to : r->coll == TACOS_GATHER ? from : to;
    return r->sizes ? r->sizes[b] : r->call.v.bytes / (size_t)n;
}

/* d as nb equal blocks. */
static void equal_parts(routed_block_t *b, const tacos_data_t *d, int nb)
{
    size_t each = d->count / (size_t)nb;
    for (int j = 0; j < nb; j++)
        b[j].d = tacos_data_part(d, each * (size_t)j, each);
}

static int place_routed(tacos_req_t *r)
{
    const tacos_call_t *call = &r->call;
    const tacos_prog_t *p = r->prog;
    int me = r->c->ops.rank, n = r->c->ops.size, k = r->k, from, to;
    int a2a = r->coll == TACOS_ALLTOALL, root = me == r->root;
    /* n blocks or one: the input (sent from) and the output (received into) */
    int nin = a2a || r->coll == TACOS_SCATTER ? n : 1;
    int nout = a2a || r->coll == TACOS_GATHER ? n : 1;
    int has_in = r->sizes ? r->in_given != NULL
                          : a2a || (r->coll == TACOS_SCATTER ? root : !(root && r->in_place));
    int has_out = r->sizes ? r->out_given != NULL
                           : a2a || (r->coll == TACOS_GATHER ? root : !(root && r->no_recv));
    size_t fwd = 0, need = 0;
    if (!r->spans && !(r->spans = malloc((size_t)tacos_coll_nchunks(r->coll, n, k) * sizeof *r->spans)))
        return call->err_nomem;
    if (!r->blocks && !(r->blocks = calloc((size_t)(nin + nout), sizeof *r->blocks)))
        return call->err_nomem;
    routed_block_t *in = r->blocks, *out = r->blocks + nin;
    for (int j = 0; j < nin && has_in; j++) {
        if (r->sizes)
            in[j].d = r->in_given[j];
        else if (!j)
            equal_parts(in, r->in_place ? &r->recv : &r->send, nin);
        in[j].bytes = block_bytes(r, me, nin > 1 ? j : r->root);
        in[j].at = r->in_place && !r->sizes ? NULL : direct(call, &in[j].d);
        if ((in[j].in_scratch = !in[j].at))
            in[j].at = (char *)(uintptr_t)need, need += in[j].bytes;
    }
    for (int i = 0; i < nout && has_out; i++) {
        if (r->sizes)
            out[i].d = r->out_given[i];
        else if (!i)
            equal_parts(out, &r->recv, nout);
        out[i].bytes = block_bytes(r, nout > 1 ? i : r->root, me);
        if (!has_in && (nout > 1 ? i : r->root) == me) { /* in place: nothing writes it */
            out[i].in_scratch = 0;
            continue;
        }
        out[i].at = direct(call, &out[i].d);
        if ((out[i].in_scratch = !out[i].at))
            out[i].at = (char *)(uintptr_t)need, need += out[i].bytes, r->unpack = 1;
    }
    for (size_t i = 0; i < p->nops; i++) { /* what passes through: its scratch offset */
        int c = p->ops[i].chunk, part = c % k;
        route_of(r, c, &from, &to);
        size_t bytes = block_bytes(r, from, to), first = bytes * (size_t)part / (size_t)k;
        r->spans[c].units = bytes * (size_t)(part + 1) / (size_t)k - first;
        if (from == me || to == me) /* past its block's start, set below */
            r->spans[c].at = (char *)(uintptr_t)first;
        else if (p->ops[i].kind == TACOS_OP_RECV) /* each chunk arrives here once */
            r->spans[c].at = (char *)(uintptr_t)(need + fwd), fwd += r->spans[c].units;
    }
    char *w = scratch(r, need + fwd + 1);
    if (!w)
        return call->err_nomem;
    int rc = 0;
    for (int j = 0; j < nin && has_in; j++)
        if (in[j].in_scratch) {
            in[j].at = w + (uintptr_t)in[j].at;
            if (!rc && in[j].bytes)
                rc = PACK(call, &in[j].d, in[j].at);
        }
    for (int i = 0; i < nout && has_out; i++)
        if (out[i].in_scratch)
            out[i].at = w + (uintptr_t)out[i].at;
    for (size_t i = 0; i < p->nops; i++) {
        int c = p->ops[i].chunk;
        route_of(r, c, &from, &to);
        if (p->ops[i].kind == TACOS_OP_SEND && from != me)
            continue; /* a forwarded chunk's span was set by its receive */
        char *base = from == me ? in[nin > 1 ? to : 0].at : to == me ? out[nout > 1 ? from : 0].at : w;
        r->spans[c].at = base + (uintptr_t)r->spans[c].at;
    }
    /* the own block: All-to-All's, and the root's unless in place */
    if (has_in && has_out) {
        const routed_block_t *mi = &in[nin > 1 ? me : 0], *mo = &out[nout > 1 ? me : 0];
        r->copy = (copy_args_t){mo->at, mi->at, mi->bytes, call->mem, 0};
    } else {
        r->copy = (copy_args_t){0};
    }
    r->opts.overlap = copy_block, r->opts.overlap_arg = &r->copy;
    r->opts.spans = r->spans;
    return rc;
}

/* A routed collective's output blocks that went through scratch. */
static int unpack_routed(tacos_req_t *r)
{
    int n = r->c->ops.size, nout = r->coll == TACOS_SCATTER ? 1 : n;
    int nin = r->coll == TACOS_GATHER ? 1 : n;
    for (int i = 0; i < nout; i++) {
        const routed_block_t *b = &r->blocks[nin + i];
        int rc = b->in_scratch && b->bytes ? UNPACK(&r->call, b->at, &b->d) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* Allgather(v): rank q's block of recv. */
static tacos_data_t recv_block(const tacos_req_t *r, int q)
{
    size_t at = 0, count;
    if (!r->counts)
        count = r->recv.count / (size_t)r->c->ops.size, at = (size_t)q * count;
    else if (r->displs)
        count = (size_t)r->counts[q], at = (size_t)r->displs[q];
    else {
        for (int i = 0; i < q; i++)
            at += (size_t)r->counts[i];
        count = (size_t)r->counts[q];
    }
    return tacos_data_part(&r->recv, at, count);
}

/* Where each collective's schedule runs: in the caller's buffer where it
 * can (reading the input in place), else in scratch (packed at the start,
 * unpacked at the end). */
static int place(tacos_req_t *r, char **at)
{
    const tacos_call_t *call = &r->call;
    int me = r->c->ops.rank, root = r->root;
    const tacos_data_t *send = r->in_place ? NULL : &r->send, *recv = &r->recv;
    const tacos_data_t *in = send ? send : recv;
    tacos_exec_opts_t *o = &r->opts;
    char *work = NULL, *src = NULL, *out = NULL;
    switch (r->coll) {
    case TACOS_ALLREDUCE: /* rbuf gets each chunk when first written */
        out = direct(call, recv), src = direct(call, in);
        if (out && src) {
            o->input = src == out ? NULL : src;
            return *at = out, 0;
        }
        if (!(*at = work_space(r)))
            return call->err_nomem;
        r->unpack = 1;
        return PACK(call, in, *at);
    case TACOS_ALLGATHER: { /* the own block: sent straight from sbuf and
                             * copied into place while the first messages
                             * travel, or packed into place first */
        char *block = NULL;
        const char *own = send ? direct(call, send) : NULL;
        out = r->displs ? NULL : direct(call, recv);
        if (!(work = *at = out ? out : work_space(r)))
            return call->err_nomem;
        block = work + r->off[me];
        r->unpack = !out;
        r->copy = (copy_args_t){block, own, r->off[me + 1] - r->off[me], call->mem, 0};
        if (own) {
            o->own_src = own, o->own_block = me;
            o->overlap = copy_block, o->overlap_arg = &r->copy;
        }
        tacos_data_t mine = recv_block(r, me);
        if (send && !own)
            return PACK(call, send, block);
        return !send && !out ? PACK(call, &mine, block) : 0;
    }
    case TACOS_ALLTOALL:
    case TACOS_GATHER:
    case TACOS_SCATTER:
        return *at = NULL, place_routed(r);
    case TACOS_BROADCAST:
        out = direct(call, recv);
        if (!(*at = out ? out : work_space(r)))
            return call->err_nomem;
        r->unpack = !out && me != root;
        return !out && me == root ? PACK(call, recv, *at) : 0;
    case TACOS_REDUCE: /* the root reduces in rbuf where it can, the others in scratch */
        src = direct(call, in), out = me == root ? direct(call, recv) : NULL;
        if (!(work = *at = out && src ? out : work_space(r)))
            return call->err_nomem;
        r->unpack = me == root && work != out;
        if (src && src != work)
            o->input = src, o->keep = me == root ? TACOS_KEEP_ALL : TACOS_KEEP_NONE;
        return src ? 0 : PACK(call, in, work);
    default: /* Reduce_scatter: in scratch holding the whole input; only the
              * result block goes to rbuf (with MPI_IN_PLACE the rest of it
              * stays as it was) */
        src = direct(call, in);
        if (!(work = *at = work_space(r)))
            return call->err_nomem;
        r->unpack = 1;
        if (src)
            o->input = src, o->keep = TACOS_KEEP_BLOCK, o->keep_block = me;
        return src ? 0 : PACK(call, in, work);
    }
}

/* A list's copy: packed straight into `to` where it is one run of bytes
 * (its units), else through scratch of exactly what pack writes: the
 * signature's bytes (the bytes view: `from` and `to` may be any two
 * datatypes of one signature), or the units (elements of one datatype on
 * both sides, unit 0 at the scratch's start whatever its true lower
 * bound). */
static int copy_data(tacos_req_t *r, const tacos_copy_t *cp)
{
    const tacos_call_t *call = &r->call;
    const tacos_view_t *v = &call->v;
    int bytes_view = v->unit_ext == 1 && v->shift == 0;
    char *to = call->contiguous(call->tp.ctx, &cp->to), *w;
    if (cp->from.bytes != cp->to.bytes)
        return call->err_truncate;
    if (!bytes_view && (cp->from.type != cp->to.type || cp->from.count != cp->to.count))
        return call->err_internal;
    if (to)
        return call->pack(call->tp.ctx, &cp->from, to - v->shift);
    size_t bytes = bytes_view ? cp->from.bytes : cp->from.count * v->unit_ext;
    if (!bytes)
        return 0;
    if (!(w = scratch(r, bytes)))
        return call->err_nomem;
    int rc = call->pack(call->tp.ctx, &cp->from, w - v->shift);
    return rc ? rc : call->unpack(call->tp.ctx, w - v->shift, &cp->to);
}

/* The end of a call that succeeded: the result into the caller's buffer. */
static int complete(tacos_req_t *r)
{
    const tacos_call_t *call = &r->call;
    int me = r->c->ops.rank;
    if (r->copy.rc)
        return failed(r, r->copy.rc); /* the overlap's copy could not start */
    if (!r->unpack)
        return 0;
    for (int i = 0; r->msgs && i < r->nmsgs; i++) { /* data received into scratch, once */
        const tacos_msg_t *m = &r->msgs[i];
        if (!r->unpacks[i] || !m->units || call->contiguous(call->tp.ctx, &m->data))
            continue;
        int rc = UNPACK(call, r->spans[i].at - call->v.shift, &m->data);
        if (rc)
            return rc;
    }
    for (int i = 0; r->msgs && i < r->ncopies; i++)
        if (r->copies[i].at_end) {
            int rc = copy_data(r, &r->copies[i]);
            if (rc)
                return rc;
        }
    if (r->msgs)
        return 0;
    if (tacos_coll_routed(r->coll))
        return unpack_routed(r);
    if (r->coll == TACOS_ALLGATHER && r->displs) { /* Allgatherv: block by block */
        for (int q = 0; q < r->c->ops.size; q++) {
            tacos_data_t d = recv_block(r, q);
            int rc = d.count ? UNPACK(call, r->buf + r->off[q], &d) : 0;
            if (rc)
                return rc;
        }
        return 0;
    }
    if (r->coll != TACOS_REDUCE_SCATTER)
        return UNPACK(call, r->buf, &r->recv);
    size_t first = r->off[me], mine = r->off[me + 1] - first;
    tacos_data_t result = tacos_data_part(&r->recv, 0, mine);
    if (!mine)
        return 0;
    char *out = direct(call, &result), *res = r->buf + first * call->v.unit_ext;
    if (!out)
        return UNPACK(call, res, &result);
    if (call->mem) {
        int rc = call->mem->copy(call->mem->ctx, out, res, mine * call->v.unit_ext);
        return rc || (rc = tacos_mem_wait(call->mem)) ? failed(r, rc) : 0;
    }
    memcpy(out, res, mine * call->v.unit_ext);
    return 0;
}

/* A list: the copies, then each message's data in place or in scratch
 * (sends packed now; receives unpacked by complete()). */
static int place_list(tacos_req_t *r)
{
    const tacos_call_t *call = &r->call;
    size_t need = 0, ext = call->v.unit_ext;
    int rc = 0;
    for (int i = 0; i < r->ncopies && !rc; i++)
        if (!r->copies[i].at_end)
            rc = copy_data(r, &r->copies[i]);
    for (int i = 0; i < r->nmsgs; i++) { /* messages of the same data share its place */
        const tacos_msg_t *m = &r->msgs[i];
        int lead = r->share[i] == i;
        r->spans[i].units = m->units;
        r->spans[i].at = lead && m->units ? call->contiguous(call->tp.ctx, &m->data) : NULL;
        if (lead && m->units && !r->spans[i].at)
            need += m->units * ext;
    }
    char *w = need ? scratch(r, need) : NULL;
    if (need && !w)
        return call->err_nomem;
    for (int i = 0; i < r->nmsgs && !rc; i++) { /* scratch: packed (what sends and
                                                  * reductions start from) */
        const tacos_msg_t *m = &r->msgs[i];
        if (r->share[i] < i) {
            r->spans[i].at = r->spans[r->share[i]].at;
            continue;
        }
        if (!m->units || r->spans[i].at)
            continue;
        r->spans[i].at = w; /* element 0's data at the start, whatever its lower bound */
        w += m->units * ext;
        rc = call->pack(call->tp.ctx, &m->data, r->spans[i].at - call->v.shift);
    }
    r->opts.spans = r->spans;
    r->unpack = 1;
    return rc;
}

/* The MPI collective r serves, as events name it (Alltoallv and Alltoallw: alltoallv). */
static const char *mpi_coll(const tacos_req_t *r)
{
    static const char *const mpi[][2] = {
        [TACOS_ALLGATHER] = {"allgather", "allgatherv"}, [TACOS_BROADCAST] = {"bcast", "bcast"},
        [TACOS_REDUCE_SCATTER] = {"reduce_scatter_block", "reduce_scatter"},
        [TACOS_REDUCE] = {"reduce", "reduce"}, [TACOS_ALLREDUCE] = {"allreduce", "allreduce"},
        [TACOS_ALLTOALL] = {"alltoall", "alltoallv"}, [TACOS_GATHER] = {"gather", "gatherv"},
        [TACOS_SCATTER] = {"scatter", "scatterv"}};
    int v = r->sizes || (r->coll == TACOS_ALLGATHER && r->counts) ||
            (r->coll == TACOS_REDUCE_SCATTER && r->counts);
    return mpi[r->coll][v];
}

/* The trace of a call that runs a schedule: the prose, and the event. */
static void say_schedule(const tacos_req_t *r)
{
    const char *suffix = r->sizes && r->coll == TACOS_ALLTOALL                  ? "v/w"
                         : (r->coll == TACOS_ALLGATHER && r->counts) || r->sizes ? "v"
                                                                                  : "";
    tacos_comm_say(r->c, 10, "%s%s %zu bytes on %d ranks: schedule k=%d, %zu ops%s%s%s%s",
                   tacos_coll_name(r->coll), suffix, r->call.v.bytes, r->c->ops.size, r->k,
                   r->prog->nops, r->persistent ? " (persistent)" : r->own ? " (nonblocking)" : "",
                   r->call.mem ? ", staged through " : "", r->call.mem ? r->call.mc->name : "",
                   r->ipc ? " (peers read it: IPC)" : "");
    const char *coll = mpi_coll(r);
    char event[TACOS_EVENT_MAX], stage[32] = "-";
    for (size_t i = 0; r->call.mem && r->call.mc->name[i] && i + 1 < sizeof stage; i++)
        stage[i] = r->call.mc->name[i] == ' ' ? '_' : r->call.mc->name[i], stage[i + 1] = 0;
    tacos_event(event, coll, r->persistent ? TACOS_PERSISTENT : r->own ? TACOS_NONBLOCKING
                                                                          : TACOS_BLOCKING,
                "schedule", NULL);
    tacos_comm_say(r->c, 10, "%s bytes=%zu ranks=%d k=%d stage=%s ipc=%d", event,
                   r->call.v.bytes, r->c->ops.size, r->k, stage, r->ipc != NULL);
}

static int start_exec(tacos_req_t *r)
{
    const tacos_view_t *v = &r->call.v;
    if (r->own) /* (a blocking call's came from tacos_ipc_agree) */
        r->ipc = r->ipc_answer > 0 ? r->call.mc : NULL;
    r->opts = (tacos_exec_opts_t){.ordered = r->c->s.deterministic,
                                  .scratch = r->call.mem ? stage_space
                                             : r->own    ? own_space
                                                         : comm_space,
                                  .scratch_arg = r, .mem = r->call.mem, .ipc = r->ipc,
                                  .ipc_peers = r->c->on_host, .ipc_scratch = ipc_stage_space};
    r->unpack = 0;
    r->copy.rc = 0;
    int rc = r->msgs ? place_list(r) : place(r, &r->buf);
    if (rc)
        return rc;
    if (!r->msgs && r->c->s.verbose >= 10) /* (the level its lines print at) */
        say_schedule(r);
    if (r->opts.input)
        r->opts.input = (const char *)r->opts.input + v->shift;
    rc = tacos_exec_start(r->exec, r->off, r->buf ? r->buf + v->shift : NULL, v->unit_ext,
                          &r->call.tp, &r->opts);
    return rc ? failed(r, rc) : 0;
}

/* A persistent call's first start agrees on IPC first (ipc.c; later
 * starts keep the answer).  Blocking calls (tacos_ipc_agree) and lists
 * (tacos_run_list) are not own: they start at once. */
int tacos_req_start(tacos_req_t *r)
{
    if (r->deferred) /* (its progress plans it) */
        return 0;
    if (!r->own || (r->ipc_answer && !r->plan_vote))
        return start_exec(r);
    int rc = tacos_ipc_vote_start(&r->vote, r->c, &r->call, !r->ipc_answer, r->plan_vote,
                                  r->exec ? &r->hash : NULL);
    return rc ? failed(r, rc) : 0;
}

/* Every rank runs the list instead (why: the vote said some rank has not
 * the schedule, or the setup's exchange said no schedule runs). */
static int start_alt(tacos_req_t *r, const char *why)
{
    const char *path = r->alt ? "textbook" : "fallback";
    if (r->c->s.verbose >= 10) {
        char event[TACOS_EVENT_MAX];
        tacos_comm_say(r->c, 10, "i%s: %s: %s", mpi_coll(r), path, why);
        tacos_comm_say(r->c, 10, "%s",
                       tacos_event(event, mpi_coll(r), TACOS_NONBLOCKING, path, why));
    }
    if (!r->alt) { /* (the binding takes it from here) */
        r->fell_back = 1;
        return 0;
    }
    r->on_alt = 1;
    return tacos_req_start(r->alt);
}

/* A deferred call once the exchange is in: its plan, then the vote as for
 * any plan not agreed yet; or its list. */
static int plan_deferred(tacos_req_t *r)
{
    tacos_plan_t p;
    const char *why = NULL;
    r->deferred = 0;
    if (!tacos_setup_take(r->c, r->coll, r->root, r->call.v.bytes, &p, &why))
        return start_alt(r, why);
    r->prog = p.prog, r->prog_refs = p.prog_refs, r->k = p.k, r->hash = p.hash;
    if (r->prog && tacos_exec_new(r->prog, r->c->ops.size, r->k, &r->exec))
        r->exec = NULL; /* this rank votes no */
    return tacos_req_start(r);
}

int tacos_req_progress(tacos_req_t *r, int *done)
{
    int rc, ready;
    *done = 0;
    if (r->deferred) { /* (the setup says what failed) */
        rc = tacos_setup_progress(r->c, &ready);
        if (!rc && ready)
            rc = plan_deferred(r);
        if (rc || r->deferred || r->fell_back) {
            *done = rc != 0 || r->fell_back;
            return rc;
        }
    }
    if (r->on_alt)
        return tacos_req_progress(r->alt, done);
    if (r->vote.phase) { /* the schedule starts once the ranks agreed on IPC */
        int answer = r->ipc_answer;
        if ((rc = tacos_ipc_vote_progress(&r->vote, r->c, &r->call, &answer))) {
            *done = 1;
            return failed(r, rc);
        }
        if (r->vote.phase)
            return 0;
        if (!r->ipc_answer) /* (asked) */
            r->ipc_answer = answer;
        if ((rc = r->vote.plan_no
                      ? start_alt(r, "a rank lacked the schedule (agreed in the request)")
                      : start_exec(r))) {
            *done = 1;
            return rc;
        }
        if (r->fell_back)
            return *done = 1, 0;
        if (r->on_alt)
            return tacos_req_progress(r->alt, done);
    }
    rc = tacos_exec_progress(r->exec, done);
    if (rc) {
        *done = 1;
        return failed(r, rc);
    }
    return *done ? complete(r) : 0;
}

int tacos_run(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
              const tacos_args_t *a)
{
    tacos_req_t r;
    setup(&r, c, p, call, a);
    layout(&r, a);
    int rc = tacos_ipc_agree(c, call, &r.ipc);
    if (rc) {
        tacos_comm_say(c, 0, "%s on rank %d of %d: agreeing on CUDA IPC failed (%d)",
                       tacos_coll_name(r.coll), c->ops.rank, c->ops.size, rc);
        return rc;
    }
    tacos_comm_run_begin(c, p);
    rc = tacos_req_start(&r);
    if (!rc && (rc = tacos_exec_wait(r.exec)))
        rc = failed(&r, rc);
    if (!rc)
        rc = complete(&r);
    tacos_comm_run_end(c);
    free(r.spans);
    free(r.blocks);
    return finish(c, rc);
}

int tacos_req_new(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
                  const tacos_args_t *a, int persistent, tacos_req_t **out)
{
    int n = c->ops.size;
    *out = NULL;
    if (a->sizes) /* blocks of their own sizes: blocking calls only */
        return call->err_internal;
    /* before anything can fail: it may ask for a check every rank must run */
    tacos_ipc_vote_t vote = {0};
    /* (not before the settings are agreed: it reads them, and may ask the
     * next blocking point for collectives) */
    int ask = !p->deferred && tacos_ipc_eligible(c, call, persistent, &vote);
    tacos_req_t *r = malloc(sizeof *r);
    if (!r)
        return call->err_nomem;
    setup(r, c, p, call, a);
    r->own = 1, r->persistent = persistent;
    r->exec = NULL;
    r->vote = vote;
    r->ipc_answer = ask ? 0 : -1;
    r->plan_vote = !p->agreed, r->hash = p->hash, r->deferred = p->deferred;
    r->off = malloc(((size_t)n + 1) * sizeof *r->off);
    /* Allgatherv's counts and displs, copied: a persistent request outlives the call */
    int copy = p->coll == TACOS_ALLGATHER && a->counts;
    int *counts = copy ? malloc((size_t)n * sizeof *counts) : NULL;
    ptrdiff_t *displs = copy && a->displs ? malloc((size_t)n * sizeof *displs) : NULL;
    int no_exec = p->prog && tacos_exec_new(p->prog, n, p->k, &r->exec);
    if (no_exec) /* a plan not agreed yet goes on without it: this rank votes no */
        r->exec = NULL;
    if (!r->off || (copy && !counts) || (copy && a->displs && !displs) || (no_exec && p->agreed)) {
        tacos_exec_free(r->exec);
        free(r->off);
        free(counts);
        free(displs);
        free(r);
        return call->err_nomem;
    }
    if (counts)
        r->counts = memcpy(counts, a->counts, (size_t)n * sizeof *counts);
    if (displs)
        r->displs = memcpy(displs, a->displs, (size_t)n * sizeof *displs);
    r->own_counts = counts, r->own_displs = displs;
    r->prog_refs = p->prog_refs;
    if (r->prog_refs)
        __atomic_add_fetch(r->prog_refs, 1, __ATOMIC_RELAXED);
    layout(r, a);
    *out = r;
    return 0;
}

void tacos_req_set_alt(tacos_req_t *r, tacos_req_t *alt) { r->alt = alt; }

int tacos_req_fell_back(const tacos_req_t *r) { return r->fell_back; }

int tacos_req_decided(const tacos_req_t *r)
{
    return r->fell_back || (!r->deferred && !r->vote.phase && (r->exec || r->on_alt));
}

void tacos_req_free(tacos_req_t *r)
{
    if (!r)
        return;
    tacos_ipc_vote_free(&r->vote, &r->call);
    tacos_req_free(r->alt);
    tacos_exec_free(r->exec);
    tacos_prog_release(r->prog, r->prog_refs);
    free(r->off);
    free(r->own_counts);
    free(r->own_displs);
    free(r->work);
    free(r->space);
    pool_give(r->c, &r->stage); /* (those of a call that failed were set aside) */
    pool_give(r->c, &r->ipc_stage);
    pool_give(r->c, &r->dwork);
    free(r->spans);
    free(r->blocks);
    free(r->msgs);
    free(r->copies);
    free(r->share);
    free(r->unpacks);
    free(r);
}

/* ---- lists ------------------------------------------------------------------------ */

/* Message i is chunk i; seq numbers each peer's messages per direction. */
static int list_program(int rank, const tacos_msg_t *msgs, int n, int npeers, tacos_prog_t **out)
{
    tacos_prog_t *p = calloc(1, sizeof *p);
    int *seq = NULL;
    if (!p || !(p->ops = calloc((size_t)n + 1, sizeof *p->ops)) ||
        !(p->dep = calloc((size_t)n + 1, sizeof *p->dep)) ||
        !(seq = calloc(2 * (size_t)npeers + 1, sizeof *seq))) {
        tacos_prog_free(p);
        free(seq);
        return TACOS_ERR_NOMEM;
    }
    p->rank = rank;
    for (int i = 0; i < n; i++) {
        const tacos_msg_t *m = &msgs[i];
        tacos_op_t *op = &p->ops[p->nops++];
        *op = (tacos_op_t){m->send ? TACOS_OP_SEND : TACOS_OP_RECV, !m->send && m->reduce, i,
                           m->peer, seq[2 * m->peer + m->send]++, (double)i, 0, (size_t)i, 0};
        if (m->after >= 0 && m->after < i)
            op->ndeps = 1, p->dep[i] = (size_t)m->after;
    }
    free(seq);
    *out = p;
    return TACOS_OK;
}

/* The ranks a list's messages go to: the communicator's, or more (an
 * intercommunicator's remote group). */
static int list_peers(const tacos_comm_t *c, const tacos_msg_t *msgs, int n)
{
    int peers = c->ops.size;
    for (int i = 0; i < n; i++)
        if (msgs[i].peer + 1 > peers)
            peers = msgs[i].peer + 1;
    return peers;
}

int tacos_req_new_list(tacos_comm_t *c, const tacos_call_t *call, const tacos_msg_t *msgs,
                       int nmsgs, const tacos_copy_t *copies, int ncopies, tacos_req_t **out)
{
    tacos_req_t *r = calloc(1, sizeof *r);
    int npeers = list_peers(c, msgs, nmsgs);
    *out = NULL;
    if (!r)
        return call->err_nomem;
    *r = (tacos_req_t){.c = c, .call = *call, .own = 1, .k = 1, .nmsgs = nmsgs,
                       .ncopies = ncopies, .ipc_answer = -1};
    /* the transport's pieces are a setting: only once the ranks agreed on
     * the settings (a list may run before, e.g. the agreement itself where
     * no previous component exists, or after they differed) */
    if (c->agreed <= 0)
        r->call.tp.piece = NULL;
    r->call.mem = NULL, r->call.mc = NULL; /* lists touch host memory only */
    r->msgs = malloc(((size_t)nmsgs + 1) * sizeof *r->msgs);
    r->copies = malloc(((size_t)ncopies + 1) * sizeof *r->copies);
    r->spans = malloc(((size_t)nmsgs + 1) * sizeof *r->spans);
    r->share = malloc(((size_t)nmsgs + 1) * sizeof *r->share);
    r->unpacks = calloc((size_t)nmsgs + 1, 1);
    r->prog_refs = malloc(sizeof *r->prog_refs);
    if (!r->msgs || !r->copies || !r->spans || !r->share || !r->unpacks || !r->prog_refs ||
        list_program(c->ops.rank, msgs, nmsgs, npeers, &r->prog) ||
        tacos_exec_new(r->prog, npeers, 1, &r->exec)) {
        if (r->prog_refs)
            *r->prog_refs = 1;
        tacos_req_free(r);
        return call->err_nomem;
    }
    *r->prog_refs = 1;
    memcpy(r->msgs, msgs, (size_t)nmsgs * sizeof *msgs);
    memcpy(r->copies, copies, (size_t)ncopies * sizeof *copies);
    for (int i = 0; i < nmsgs; i++) { /* the same data: one place, unpacked once */
        int j = 0;
        while (j < i && !(msgs[j].data.buf == msgs[i].data.buf &&
                          msgs[j].data.count == msgs[i].data.count &&
                          msgs[j].data.type == msgs[i].data.type))
            j++;
        r->share[i] = j;
    }
    char *seen = calloc((size_t)nmsgs + 1, 1); /* per first message: a later receive */
    if (!seen) {
        tacos_req_free(r);
        return call->err_nomem;
    }
    for (int i = nmsgs; i-- > 0;)
        if (!msgs[i].send && !seen[r->share[i]])
            seen[r->share[i]] = 1, r->unpacks[i] = 1;
    free(seen);
    *out = r;
    return 0;
}

int tacos_run_list(tacos_comm_t *c, const tacos_call_t *call, const tacos_msg_t *msgs, int nmsgs,
                   const tacos_copy_t *copies, int ncopies)
{
    tacos_req_t *r;
    int rc = tacos_req_new_list(c, call, msgs, nmsgs, copies, ncopies, &r);
    if (rc)
        return rc;
    r->own = 0; /* the communicator's scratch */
    if (!(rc = tacos_req_start(r)) && (rc = tacos_exec_wait(r->exec)))
        rc = failed(r, rc);
    if (!rc)
        rc = complete(r);
    tacos_req_free(r);
    return finish(c, rc);
}
