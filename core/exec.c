/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Executor.  Each peer's messages are posted in their per-link sequence
 * order (one queue per peer and direction), so MPI's in-order matching pairs
 * them right.  A copy receive lands directly in the buffer once the ops it
 * depends on (earlier sends of that chunk) are done; a reduce receive (and
 * any receive of a message of several ops, below) is posted at once, lands
 * in scratch space and is combined (or copied) once its dependencies are
 * done.  A send goes out once the receives it depends on
 * are done.  No barrier per step.
 *
 * Work is driven by events, linear in ops and dependencies per call: every
 * op counts its unfinished dependencies; finishing an op releases the ops
 * that wait for it (posting the head of a queue, or combining an arrived
 * reduction).
 *
 * With a memory layer (opts->mem: buffers the transport cannot reach),
 * every message goes through staging space.  A send is STAGING while its
 * copy out runs (it waits on a mark, polled with the transport), then
 * STAGED: ready to post in its queue's order.  A receive posts at once and,
 * once it arrived and its dependencies are done, lands: its copy or
 * reduction into the buffer is started and the op is done, since whatever
 * reads the buffer later is memory work behind it on the same stream (a
 * copy out, a landing) or waits for the end, which waits for the stream.
 *
 * With CUDA IPC as well (opts->ipc), a message is the description of the
 * sender's staged chunk (in its device memory) and a receive lands from
 * the sender's memory, mapped here; the end adds a fence (fence()) so no
 * rank reuses staging another may still read.
 *
 * A message may carry several ops (tacos_op_t.joined: consecutive ops of
 * one queue).  It is posted once every op of it may go, by its first op
 * (its head), which holds its requests: a send packs its ops' data into
 * scratch space (with mem, their staging space is contiguous already), a
 * receive arrives in scratch (or staging) space and each of its ops lands
 * from its part as a reduction's receive does, once its dependencies are
 * done.
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

void tacos_exec_chunk(const size_t *block_off, int k, int c, size_t *first, size_t *len)
{
    int r = c / k, j = c % k;
    size_t n = block_off[r + 1] - block_off[r];
    size_t a = n * (size_t)j / (size_t)k, b = n * (size_t)(j + 1) / (size_t)k;
    *first = block_off[r] + a;
    *len = b - a;
}

enum { OP_WAITING, OP_STAGING, OP_STAGED, OP_POSTED, OP_RECEIVED, OP_DONE };

typedef struct {
    const tacos_prog_t *p;
    const tacos_transport_t *tp;
    const tacos_exec_opts_t *opts;
    const tacos_mem_t *mem; /* opts->mem */
    const size_t *block_off;
    int k;
    char *buf;
    size_t elem;
    /* per op */
    char *state;
    size_t *first, *len;
    char **at; /* where its data is in the buffer (or the chunk's span) */
    char **scratch;  /* ops aside(): reduce receives that do not land in the buffer, and
                      * the ops of a message of several */
    size_t *pending; /* unfinished ops it waits for */
    size_t *user_off, *users; /* ops waiting for op i: users[user_off[i] .. user_off[i+1]) */
    /* queue q = 2 * peer + (send): its ops in message order */
    size_t *queue_off, *queue, *queue_head;
    /* per op: the head of its message (its first op); per head only: its
     * ops, queue[msg_at .. msg_at + nmsg) */
    size_t *head, *msg_at, *nmsg;
    size_t *left; /* per head: its pieces in flight (transport piece) */
    /* in flight: one request per piece */
    void **reqs;
    size_t *req_op;
    char *req_done;
    size_t nreqs, nslots; /* nslots: what one call posts at most */
    size_t *finished; /* ops done whose waiters are not yet released */
    size_t nfinished, ndone;
    char *in_buf; /* per chunk, with opts->input: the buffer holds it */
    long *direct; /* per chunk, with opts->input: the reduce receive landing in the buffer */
    long *after;  /* per op: the reduce receive it combines after, or -1 */
    /* with mem */
    char **staged;  /* per op: its message's staging space */
    void **mark;    /* per op: the mark its copy out ends at */
    size_t *local;  /* the sends whose copy out runs */
    size_t nlocal;
    /* with opts->ipc */
    const tacos_mc_t *ipc;
    tacos_ipc_desc_t *desc; /* per head: its message */
    tacos_ipc_desc_t staging; /* the staging space's description, at its start */
    char *staging_at;
} exec_t;

/* Points e's arrays into base (or, with base NULL, only measures them);
 * returns the bytes they take. */
static size_t lay_out(exec_t *e, char *base, size_t nops, int npus, int nchunks)
{
    size_t at = 0, nq = 2 * (size_t)npus, nusers = 0;
    for (size_t i = 0; i < nops; i++)
        nusers += e->p->ops[i].ndeps + 1; /* + the direct receive of its chunk */
#define PLACE(field, count)                                                                  \
    do {                                                                                     \
        e->field = base ? (void *)(base + at) : NULL;                                        \
        at += ((count) * sizeof *e->field + 15) / 16 * 16;                                   \
    } while (0)
    PLACE(state, nops);
    PLACE(first, nops);
    PLACE(len, nops);
    PLACE(at, nops);
    PLACE(scratch, nops);
    PLACE(pending, nops);
    PLACE(user_off, nops + 1);
    PLACE(users, nusers);
    PLACE(queue_off, nq + 1);
    PLACE(queue, nops);
    PLACE(queue_head, nq);
    PLACE(head, nops);
    PLACE(msg_at, nops);
    PLACE(nmsg, nops);
    PLACE(left, nops);
    PLACE(finished, nops);
    PLACE(after, nops);
    PLACE(in_buf, (size_t)nchunks); /* used with an input only */
    PLACE(direct, (size_t)nchunks);
    PLACE(staged, nops);
    PLACE(mark, nops);
    PLACE(local, nops);
#undef PLACE
    return at;
}

/* Dependency counts and the reverse edges (who waits for whom). */
static void link_users(exec_t *e)
{
    const tacos_prog_t *p = e->p;
    size_t n = p->nops;
    memset(e->user_off, 0, (n + 1) * sizeof *e->user_off);
    for (size_t i = 0; i < n; i++) {
        long d = e->after[i];
        e->pending[i] = p->ops[i].ndeps + (d >= 0);
        for (size_t j = 0; j < p->ops[i].ndeps; j++)
            e->user_off[p->dep[p->ops[i].deps + j]]++;
        if (d >= 0)
            e->user_off[d]++;
    }
    for (size_t i = 1; i <= n; i++) /* running sums: user_off[i] = end of i's range */
        e->user_off[i] += e->user_off[i - 1];
    for (size_t i = n; i-- > 0;) { /* filling from the ends leaves the starts */
        long d = e->after[i];
        for (size_t j = 0; j < p->ops[i].ndeps; j++)
            e->users[--e->user_off[p->dep[p->ops[i].deps + j]]] = i;
        if (d >= 0)
            e->users[--e->user_off[d]] = i;
    }
}

static size_t queue_of(const tacos_op_t *op)
{
    return 2 * (size_t)op->peer + (op->kind == TACOS_OP_SEND);
}

/* Queues in message order (seq numbers each direction's ops 0, 1, ...),
 * and the messages in them: a joined op is in its predecessor's.  Once per
 * program (tacos_exec_new): each call only rewinds queue_head. */
static void build_queues(exec_t *e, int npus)
{
    const tacos_prog_t *p = e->p;
    size_t nq = 2 * (size_t)npus;
    for (size_t i = 0; i < p->nops; i++)
        e->queue_off[queue_of(&p->ops[i]) + 1]++;
    for (size_t q = 1; q <= nq; q++)
        e->queue_off[q] += e->queue_off[q - 1];
    for (size_t i = 0; i < p->nops; i++)
        e->queue[e->queue_off[queue_of(&p->ops[i])] + (size_t)p->ops[i].seq] = i;
    for (size_t q = 0; q < nq; q++)
        for (size_t at = e->queue_off[q], h = 0; at < e->queue_off[q + 1]; at++) {
            size_t i = e->queue[at];
            if (at == e->queue_off[q] || !p->ops[i].joined)
                h = i, e->msg_at[i] = at, e->nmsg[i] = 0;
            e->head[i] = h;
            e->nmsg[h]++;
        }
}

/* Op j of the message whose head is h. */
static size_t msg_op(const exec_t *e, size_t h, size_t j)
{
    return e->queue[e->msg_at[h] + j];
}

/* Does op i travel with others? */
static int in_group(const exec_t *e, size_t i)
{
    return e->nmsg[e->head[i]] > 1;
}

static void finish(exec_t *e, size_t i)
{
    e->state[i] = OP_DONE;
    e->ndone++;
    e->finished[e->nfinished++] = i;
}

/* Where a send of op i reads its data. */
static const void *send_source(const exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    const tacos_exec_opts_t *o = e->opts;
    if (o && o->own_src && op->chunk / e->k == o->own_block)
        return (const char *)o->own_src + (e->first[i] - e->block_off[o->own_block]) * e->elem;
    if (o && o->input && !e->in_buf[op->chunk])
        return (const char *)o->input + e->first[i] * e->elem;
    return e->at[i];
}

/* Whether op i's peer reads (or this rank reads) its data through IPC:
 * with ipc, a peer of this rank's host (opts->ipc_peers). */
static int by_ipc(const exec_t *e, size_t i)
{
    return e->ipc && (!e->opts->ipc_peers || e->opts->ipc_peers[e->p->ops[i].peer]);
}

/* The data of the message whose head is h. */
static size_t data_bytes(const exec_t *e, size_t h)
{
    size_t bytes = 0;
    for (size_t j = 0; j < e->nmsg[h]; j++)
        bytes += e->len[msg_op(e, h, j)] * e->elem;
    return bytes;
}

/* What the message whose head is h carries: its data, or with ipc its
 * description. */
static size_t message_bytes(const exec_t *e, size_t h)
{
    size_t bytes = data_bytes(e, h);
    return by_ipc(e, h) && bytes ? sizeof *e->desc : bytes;
}

/* How many messages the message of head i travels as (0: none), each of
 * *piece bytes but the last. */
static size_t pieces(const exec_t *e, size_t i, size_t *piece)
{
    size_t bytes = message_bytes(e, i);
    size_t most = e->tp->piece ? e->tp->piece(e->tp->ctx, e->p->ops[i].peer) : 0;
    *piece = most && most < bytes ? most : bytes;
    return bytes ? (bytes + *piece - 1) / *piece : 0;
}

/* Posts the message of head i, as pieces where the transport limits its
 * size (or finishes its ops at once when it is empty). */
static int post(exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    size_t piece, n = pieces(e, i, &piece), bytes = message_bytes(e, i), m = e->nmsg[i];
    if (!n) { /* nothing travels, on either side */
        for (size_t j = 0; j < m; j++)
            finish(e, msg_op(e, i, j));
        return 0;
    }
    const char *from = NULL;
    char *to = NULL;
    int ipc = by_ipc(e, i);
    if (ipc && op->kind == TACOS_OP_SEND) { /* where in the staging space */
        e->desc[i] = e->staging;
        e->desc[i].offset += (unsigned long long)(e->staged[i] - e->staging_at);
        from = (const char *)&e->desc[i];
    } else if (ipc) {
        to = (char *)&e->desc[i];
    } else if (e->mem) {
        if (op->kind == TACOS_OP_SEND)
            from = e->staged[i];
        else
            to = e->staged[i];
    } else if (m > 1 && op->kind == TACOS_OP_SEND) { /* packed */
        char *at = e->scratch[i];
        for (size_t j = 0; j < m; j++) {
            size_t o = msg_op(e, i, j), len = e->len[o] * e->elem;
            if (len)
                memcpy(at, send_source(e, o), len);
            at += len;
        }
        from = e->scratch[i];
    } else if (m > 1) { /* each op lands from its part */
        to = e->scratch[i];
    } else if (op->kind == TACOS_OP_SEND) {
        from = send_source(e, i);
    } else {
        int direct = e->direct && e->direct[op->chunk] == (long)i;
        to = op->reduce && !direct ? e->scratch[i] : e->at[i];
        if (!op->reduce && e->in_buf)
            e->in_buf[op->chunk] = 1; /* the copy overwrites the whole chunk */
    }
    for (size_t j = 0; j < m; j++)
        e->state[msg_op(e, i, j)] = OP_POSTED;
    e->left[i] = 0;
    for (size_t at = 0; at < bytes; at += piece) {
        size_t len = bytes - at < piece ? bytes - at : piece;
        void **req = &e->reqs[e->nreqs];
        int rc = from ? e->tp->isend(e->tp->ctx, from + at, len, op->peer, req)
                      : e->tp->irecv(e->tp->ctx, to + at, len, op->peer, req);
        if (rc)
            return rc; /* the pieces posted are abandoned with the rest */
        e->req_op[e->nreqs++] = i;
        e->left[i]++;
    }
    return 0;
}

/* May op i go: a receive that lands aside (a reduction's, any staged one,
 * any of a message of several) at once, a staged send once its copy
 * completed, anything else once its dependencies are done. */
static int may_go(const exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    if (op->kind == TACOS_OP_SEND)
        return e->mem ? e->state[i] == OP_STAGED : e->pending[i] == 0;
    return !e->pending[i] || op->reduce || e->mem || in_group(e, i);
}

/* Posts queue q's messages from its head while every op of them may go. */
static int advance(exec_t *e, size_t q)
{
    while (e->queue_off[q] + e->queue_head[q] < e->queue_off[q + 1]) {
        size_t i = e->queue[e->queue_off[q] + e->queue_head[q]];
        for (size_t j = 0; j < e->nmsg[i]; j++)
            if (!may_go(e, msg_op(e, i, j)))
                return 0;
        e->queue_head[q] += e->nmsg[i];
        int rc = post(e, i);
        if (rc)
            return rc;
    }
    return 0;
}

/* Lands an arrived receive that waited aside (a reduction's, or one of a
 * message of several) in the buffer. */
static int combine(exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    char *dst = e->at[i];
    int rc = 0, direct = e->direct && e->direct[op->chunk] == (long)i;
    if (in_group(e, i) && (!op->reduce || direct) && e->len[i]) /* what arrived, into place */
        memcpy(dst, e->scratch[i], e->len[i] * e->elem);
    if (direct && e->len[i]) { /* the buffer holds what arrived */
        rc = e->tp->reduce(e->tp->ctx, (const char *)e->opts->input + e->first[i] * e->elem, dst,
                           e->len[i]);
    } else if (op->reduce && e->len[i]) {
        rc = e->tp->reduce(e->tp->ctx, e->scratch[i], dst, e->len[i]);
    }
    if (e->in_buf && (!op->reduce || direct))
        e->in_buf[op->chunk] = 1;
    if (!rc)
        finish(e, i);
    return rc;
}

/* ---- memory work (opts->mem) ---- */

/* Send i's copy out has completed: it may go in its queue's order. */
static int staged(exec_t *e, size_t i)
{
    e->state[i] = OP_STAGED;
    return advance(e, queue_of(&e->p->ops[i]));
}

/* A send whose dependencies are done: its chunk into staging space, and a
 * mark to wait for. */
static int stage_out(exec_t *e, size_t i)
{
    size_t bytes = e->len[i] * e->elem;
    void *mark = NULL;
    int rc = bytes ? e->mem->copy(e->mem->ctx, e->staged[i], send_source(e, i), bytes) : 0;
    if (rc || (rc = e->mem->mark(e->mem->ctx, &mark)))
        return rc;
    e->state[i] = OP_STAGING;
    if (!mark)
        return staged(e, i);
    e->mark[i] = mark;
    e->local[e->nlocal++] = i;
    return 0;
}

/* An arrived receive whose dependencies are done: into the buffer, copied
 * (the direct receive of a reduction then combines the input into it), or
 * combined from staging space. */
static int land(exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    const tacos_mem_t *m = e->mem;
    int direct = e->direct && e->direct[op->chunk] == (long)i, rc = 0;
    if ((!op->reduce || direct) && e->len[i])
        rc = m->copy(m->ctx, e->at[i], e->staged[i], e->len[i] * e->elem);
    if (!rc && op->reduce && e->len[i])
        rc = m->reduce(m->ctx,
                       direct ? (const char *)e->opts->input + e->first[i] * e->elem
                              : e->staged[i],
                       e->at[i], e->len[i]);
    if (e->in_buf && (!op->reduce || direct))
        e->in_buf[op->chunk] = 1;
    if (!rc)
        finish(e, i);
    return rc;
}

/* Handles the copies out that completed. */
static int poll_local(exec_t *e)
{
    size_t kept = 0;
    int rc = 0;
    for (size_t l = 0; l < e->nlocal; l++) {
        size_t i = e->local[l];
        int done = 0;
        if (!rc && (rc = e->mem->test(e->mem->ctx, e->mark[i], &done)))
            continue; /* its mark released by the failed test */
        if (!done)
            e->local[kept++] = i; /* its mark still held */
        else
            rc = staged(e, i);
    }
    e->nlocal = kept;
    return rc;
}

/* Releases the waiters of every finished op, transitively. */
static int release(exec_t *e)
{
    while (e->nfinished) {
        size_t i = e->finished[--e->nfinished];
        for (size_t u = e->user_off[i]; u < e->user_off[i + 1]; u++) {
            size_t w = e->users[u];
            if (--e->pending[w])
                continue;
            int rc = e->state[w] == OP_RECEIVED  ? e->mem ? land(e, w) : combine(e, w)
                     : e->state[w] != OP_WAITING ? 0
                     : e->mem                    ? stage_out(e, w) /* only sends wait */
                                                 : advance(e, queue_of(&e->p->ops[w]));
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The message of receive head i arrived (rc: an error seen already): each
 * op lands, or waits aside for its dependencies; a copy into the buffer
 * is done.  With ipc the message described the sender's staged data: each
 * op's part of it, mapped here. */
static int arrived(exec_t *e, size_t i, int rc)
{
    const void *there = NULL;
    if (!rc && by_ipc(e, i))
        rc = e->ipc->ipc_import(&e->desc[i], &there);
    for (size_t j = 0, at = 0; j < e->nmsg[i]; j++) {
        size_t o = msg_op(e, i, j);
        if (there)
            e->staged[o] = (char *)there + at;
        at += e->len[o] * e->elem;
        if (!e->p->ops[o].reduce && !e->mem && !in_group(e, o)) {
            finish(e, o); /* landed in the buffer */
            continue;
        }
        e->state[o] = OP_RECEIVED;
        if (!rc && !e->pending[o])
            rc = e->mem ? land(e, o) : combine(e, o);
    }
    return rc;
}

/* Waits for at least one message (or, not blocking, looks for any) and
 * handles what completed; while memory work runs, it polls both. */
static int complete_some(exec_t *e, int block)
{
    int local = e->nlocal != 0; /* then never blocking: what it finishes is not released yet */
    int rc = local ? poll_local(e) : 0;
    if (rc || !e->nreqs)
        return rc ? rc : release(e);
    memset(e->req_done, 0, e->nreqs);
    /* what completed is handled (and forgotten) also when one failed */
    rc = block && !local ? e->tp->wait_some(e->tp->ctx, e->reqs, e->nreqs, e->req_done)
                             : e->tp->test_some(e->tp->ctx, e->reqs, e->nreqs, e->req_done);
    size_t kept = 0;
    for (size_t r = 0; r < e->nreqs; r++) { /* in flight stays; the rest is handled */
        size_t i = e->req_op[r];
        const tacos_op_t *op = &e->p->ops[i];
        if (!e->req_done[r]) {
            e->reqs[kept] = e->reqs[r];
            e->req_op[kept++] = i;
        } else if (--e->left[i]) {
            continue; /* more pieces of it in flight */
        } else if (op->kind == TACOS_OP_RECV) {
            rc = arrived(e, i, rc);
        } else {
            for (size_t j = 0; j < e->nmsg[i]; j++)
                finish(e, msg_op(e, i, j));
        }
    }
    e->nreqs = kept;
    return rc ? rc : release(e);
}

/* Does op i need scratch space of its own: a reduce receive that does not
 * land in the buffer, or any op of a message of several (a send packs
 * there, a receive arrives there)? */
static int aside(const exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    return in_group(e, i) ||
           (op->kind == TACOS_OP_RECV && op->reduce &&
            !(e->direct && e->direct[op->chunk] == (long)i));
}

/* Scratch space for the ops aside(), a message's ops side by side (its
 * head's space holds the whole message). */
static int give_scratch(exec_t *e)
{
    const tacos_prog_t *p = e->p;
    char *space = NULL;
    size_t bytes = 0;
    for (size_t i = 0; i < p->nops; i++)
        bytes += aside(e, i) ? e->len[i] * e->elem : 0;
    if (bytes && !(e->opts && e->opts->scratch &&
                   (space = e->opts->scratch(e->opts->scratch_arg, bytes))))
        return TACOS_ERR_NOMEM;
    for (size_t x = 0; x < p->nops; x++) { /* in queue order: a message's ops together */
        size_t i = e->queue[x];
        if (aside(e, i))
            e->scratch[i] = space, space += e->len[i] * e->elem;
    }
    return 0;
}

/* With mem: every message's staging space, in pinned memory (scratch); with
 * ipc, a send to a peer of this host stages in device memory (ipc_scratch),
 * described once (each such send's message its offset in it), and a receive
 * from one reads the sender's. */
static size_t staged_bytes(const exec_t *e, size_t i)
{
    return by_ipc(e, i) && e->p->ops[i].kind == TACOS_OP_RECV ? 0 : e->len[i] * e->elem;
}

static int give_staging(exec_t *e)
{
    size_t bytes[2] = {0, 0}; /* pinned, device */
    char *space[2] = {NULL, NULL};
    void *(*get[2])(void *, size_t) = {e->opts->scratch, e->opts->ipc_scratch};
    for (size_t i = 0; i < e->p->nops; i++)
        bytes[by_ipc(e, i)] += staged_bytes(e, i);
    for (int s = 0; s < 2; s++)
        if (bytes[s] && !(get[s] && (space[s] = get[s](e->opts->scratch_arg, bytes[s]))))
            return TACOS_ERR_NOMEM;
    int rc = space[1] ? e->ipc->ipc_export(space[1], &e->staging) : 0;
    e->staging_at = space[1];
    /* in queue order: a message's ops side by side (an IPC receive's: set
     * when it arrives) */
    for (size_t x = 0; x < e->p->nops; x++) {
        size_t i = e->queue[x];
        int s = by_ipc(e, i);
        e->staged[i] = space[s];
        space[s] += staged_bytes(e, i);
    }
    return rc;
}

/* Sets up chunk ranges, the direct receives, the order of combinations
 * and scratch space.  A reduce receive other than a chunk's direct one
 * combines after it; in order (opts->ordered), every reduce receive of a
 * chunk combines after the one before it in the program. */
static int prepare(exec_t *e, int nchunks, long *last)
{
    const tacos_prog_t *p = e->p;
    int ordered = e->opts && e->opts->ordered;
    for (int c = 0; c < nchunks; c++)
        last[c] = -1;
    for (int c = 0; e->direct && c < nchunks; c++)
        e->direct[c] = -2; /* -2: no receive seen yet, -1: none direct */
    e->nslots = 0;
    for (size_t i = 0; i < p->nops; i++) {
        const tacos_op_t *op = &p->ops[i];
        const tacos_span_t *span = e->opts && e->opts->spans ? &e->opts->spans[op->chunk] : NULL;
        if (span) {
            e->first[i] = 0, e->len[i] = span->units, e->at[i] = span->at;
        } else {
            tacos_exec_chunk(e->block_off, e->k, op->chunk, &e->first[i], &e->len[i]);
            e->at[i] = e->buf + e->first[i] * e->elem;
        }
        e->after[i] = -1;
        if (op->kind != TACOS_OP_RECV)
            continue;
        if (e->direct && e->direct[op->chunk] == -2)
            e->direct[op->chunk] = op->reduce ? (long)i : -1;
        if (op->reduce) {
            long d = e->direct ? e->direct[op->chunk] : -1;
            e->after[i] = ordered ? last[op->chunk] : d >= 0 && d != (long)i ? d : -1;
            last[op->chunk] = (long)i;
        }
    }
    for (size_t i = 0; i < p->nops; i++) {
        size_t piece;
        e->nslots += e->head[i] == i ? pieces(e, i, &piece) : 0;
    }
    return e->mem ? give_staging(e) : give_scratch(e);
}

enum { IDLE, RUNNING, DONE, FAILED };

struct tacos_exec {
    exec_t e;
    int npus, nchunks;
    char *arrays; /* every array, one allocation */
    char *in_buf; /* the arrays used with an input */
    long *direct, *last;
    char *slots; /* the requests in flight: room for cap pieces */
    size_t cap;
    int phase, rc; /* rc: the failed call's first error */
    int ending;     /* the last copies started; with mem, waiting for end_mark */
    void *end_mark;
    /* with ipc */
    tacos_ipc_desc_t *desc;
    size_t ndesc;
    void **fence; /* the end's messages in flight: 2 per peer at most */
    int *fence_peer; /* and their peers, negative for sends (-1 - peer) */
    char *fence_done;
    char *peer_role; /* per peer: 1 this rank sent to it, 2 received from it */
    size_t nfence;
    int fencing; /* its messages posted */
};

int tacos_exec_new(const tacos_prog_t *p, int npus, int k, tacos_exec_t **out)
{
    tacos_exec_t *x = calloc(1, sizeof *x);
    if (!x)
        return TACOS_ERR_NOMEM;
    x->npus = npus;
    x->nchunks = npus * k;
    for (size_t i = 0; i < p->nops; i++) /* programs of more chunks (All-to-All, spans) */
        if (p->ops[i].chunk >= x->nchunks)
            x->nchunks = p->ops[i].chunk + 1;
    x->e = (exec_t){.p = p, .k = k};
    size_t bytes = lay_out(&x->e, NULL, p->nops, npus, x->nchunks);
    char *arrays = calloc(1, bytes + (size_t)x->nchunks * sizeof(long) + 1);
    if (!arrays) {
        free(x);
        return TACOS_ERR_NOMEM;
    }
    lay_out(&x->e, arrays, p->nops, npus, x->nchunks);
    build_queues(&x->e, npus);
    x->arrays = arrays;
    x->in_buf = x->e.in_buf;
    x->direct = x->e.direct;
    x->last = (long *)(arrays + bytes);
    *out = x;
    return TACOS_OK;
}

void tacos_exec_free(tacos_exec_t *x)
{
    if (!x)
        return;
    free(x->arrays);
    free(x->slots);
    free(x->desc);
    free(x->fence);
    free(x);
}

/* Room for the requests of every piece a call posts (grown to the largest
 * call: the number of pieces depends on the chunks' sizes). */
static int make_room(tacos_exec_t *x)
{
    exec_t *e = &x->e;
    size_t n = e->nslots ? e->nslots : 1, one = sizeof(void *) + sizeof(size_t) + 1;
    if (n > x->cap) {
        char *slots = realloc(x->slots, n * one);
        if (!slots)
            return TACOS_ERR_NOMEM;
        x->slots = slots, x->cap = n;
    }
    e->reqs = (void **)x->slots;
    e->req_op = (size_t *)(x->slots + x->cap * sizeof(void *));
    e->req_done = x->slots + x->cap * (sizeof(void *) + sizeof(size_t));
    return 0;
}

/* Room for the descriptions of messages and the end's messages. */
static int ipc_room(tacos_exec_t *x)
{
    size_t nops = x->e.p->nops, n = 2 * (size_t)x->npus;
    if (x->ndesc < nops) {
        tacos_ipc_desc_t *d = realloc(x->desc, nops * sizeof *d);
        if (!d)
            return TACOS_ERR_NOMEM;
        x->desc = d, x->ndesc = nops;
    }
    if (!x->fence && !(x->fence = malloc(n * (sizeof(void *) + sizeof(int) + 2))))
        return TACOS_ERR_NOMEM;
    x->fence_peer = (int *)(x->fence + n);
    x->fence_done = (char *)(x->fence_peer + n);
    x->peer_role = x->fence_done + n;
    x->e.desc = x->desc;
    return 0;
}

/* After an error: what is in flight is abandoned (see exec.h). */
static int fail(tacos_exec_t *x, int rc)
{
    exec_t *e = &x->e;
    for (size_t r = 0; r < e->nreqs; r++)
        e->tp->abandon(e->tp->ctx, e->reqs[r], e->p->ops[e->req_op[r]].kind == TACOS_OP_SEND);
    e->nreqs = 0;
    for (size_t l = 0; l < e->nlocal; l++) /* memory work left to finish on its own */
        e->mem->forget(e->mem->ctx, e->mark[e->local[l]]);
    if (x->end_mark)
        e->mem->forget(e->mem->ctx, x->end_mark);
    for (size_t f = 0; f < x->nfence; f++)
        e->tp->abandon(e->tp->ctx, x->fence[f], x->fence_peer[f] < 0);
    if (e->ipc) /* abandoned sends may still read the descriptions: set aside */
        x->desc = NULL, x->ndesc = 0;
    e->nlocal = 0, x->end_mark = NULL, x->nfence = 0;
    x->phase = FAILED;
    return x->rc = rc;
}

int tacos_exec_start(tacos_exec_t *x, const size_t *block_off, void *buf, size_t elem_bytes,
                     const tacos_transport_t *tp, const tacos_exec_opts_t *opts)
{
    exec_t *e = &x->e;
    int input = opts && opts->input, rc = 0;
    if (x->phase == RUNNING) /* its requests are in flight: not to be lost */
        return TACOS_ERR_INVALID;
    x->phase = RUNNING;
    e->tp = tp;
    e->opts = opts;
    e->block_off = block_off;
    e->buf = buf;
    e->elem = elem_bytes;
    e->mem = opts ? opts->mem : NULL;
    e->ipc = e->mem ? opts->ipc : NULL;
    e->nreqs = e->nfinished = e->ndone = e->nlocal = 0;
    x->ending = 0, x->end_mark = NULL, x->nfence = 0, x->fencing = 0;
    if (e->ipc && (rc = ipc_room(x)))
        return fail(x, rc);
    e->in_buf = input ? x->in_buf : NULL;
    e->direct = input ? x->direct : NULL;
    x->rc = 0;
    memset(e->state, OP_WAITING, e->p->nops);
    if (input)
        memset(e->in_buf, 0, (size_t)x->nchunks);
    memset(e->queue_head, 0, 2 * (size_t)x->npus * sizeof *e->queue_head);
    if ((rc = prepare(e, x->nchunks, x->last)) || (rc = make_room(x)))
        return fail(x, rc);
    link_users(e);
    for (size_t i = 0; e->mem && i < e->p->nops && !rc; i++) /* copies out that may start */
        if (e->p->ops[i].kind == TACOS_OP_SEND && !e->pending[i])
            rc = stage_out(e, i);
    for (size_t q = 0; q < 2 * (size_t)x->npus && !rc; q++)
        rc = advance(e, q);
    if (!rc)
        rc = release(e);
    if (rc)
        return fail(x, rc);
    if (opts && opts->overlap) /* local work while the first messages travel */
        opts->overlap(opts->overlap_arg);
    return 0;
}

/* With ipc, once this rank's memory work is done (it read what it
 * received, and lets go of the mappings): an empty message to each rank it
 * received from, and one awaited from each it sent to (exec.h:
 * opts->ipc).  *done = 1 when they completed. */
static int fence(tacos_exec_t *x, int block, int *done)
{
    exec_t *e = &x->e;
    static char word;
    int rc = 0;
    if (!x->fencing) {
        x->fencing = 1;
        memset(x->peer_role, 0, (size_t)x->npus);
        for (size_t i = 0; i < e->p->nops; i++) {
            const tacos_op_t *op = &e->p->ops[i];
            if (e->head[i] != i || !message_bytes(e, i) || !by_ipc(e, i))
                continue; /* nothing travelled, on either side, or not through IPC */
            x->peer_role[op->peer] |= op->kind == TACOS_OP_SEND ? 1 : 2;
            if (op->kind == TACOS_OP_RECV)
                e->ipc->ipc_release(&e->desc[i]);
        }
        for (int peer = 0; peer < x->npus && !rc; peer++) {
            void **req = &x->fence[x->nfence];
            if ((x->peer_role[peer] & 2) && !(rc = e->tp->isend(e->tp->ctx, &word, 0, peer, req)))
                x->fence_peer[x->nfence++] = -1 - peer;
            req = &x->fence[x->nfence];
            if (!rc && (x->peer_role[peer] & 1) &&
                !(rc = e->tp->irecv(e->tp->ctx, &word, 0, peer, req)))
                x->fence_peer[x->nfence++] = peer;
        }
    }
    if (!rc && x->nfence) {
        memset(x->fence_done, 0, x->nfence);
        rc = (block ? e->tp->wait_some : e->tp->test_some)(e->tp->ctx, x->fence, x->nfence,
                                                           x->fence_done);
        size_t kept = 0;
        for (size_t f = 0; f < x->nfence; f++)
            if (!x->fence_done[f])
                x->fence[kept] = x->fence[f], x->fence_peer[kept++] = x->fence_peer[f];
        x->nfence = kept;
    }
    *done = !rc && !x->nfence;
    return rc;
}

/* Copies the chunks the caller reads that nothing wrote from the input. */
static int copy_unwritten(tacos_exec_t *x)
{
    exec_t *e = &x->e;
    const tacos_exec_opts_t *o = e->opts;
    int lo = 0, hi = x->nchunks, rc = 0;
    if (!e->in_buf)
        return 0;
    if (o->keep == TACOS_KEEP_BLOCK)
        lo = o->keep_block * e->k, hi = lo + e->k;
    else if (o->keep == TACOS_KEEP_NONE)
        hi = 0;
    for (int c = lo; c < hi && !rc; c++)
        if (!e->in_buf[c]) {
            size_t first, len;
            tacos_exec_chunk(e->block_off, e->k, c, &first, &len);
            char *to = e->buf + first * e->elem;
            const char *from = (const char *)o->input + first * e->elem;
            if (!len)
                continue;
            if (e->mem)
                rc = e->mem->copy(e->mem->ctx, to, from, len * e->elem);
            else
                memcpy(to, from, len * e->elem);
        }
    return rc;
}

/* The end: the last copies, and with mem everything started there done;
 * *done = 1 then. */
static int end(tacos_exec_t *x, int block, int *done)
{
    const tacos_mem_t *m = x->e.mem;
    int rc = 0, ready = 1;
    if (!x->ending) {
        x->ending = 1;
        if (!(rc = copy_unwritten(x)) && m)
            rc = m->mark(m->ctx, &x->end_mark);
    }
    if (!rc && x->end_mark && ((rc = m->test(m->ctx, x->end_mark, &ready)) || ready))
        x->end_mark = NULL; /* released, done or failed */
    if (!rc && ready && x->e.ipc)
        return fence(x, block, done);
    *done = !rc && ready;
    return rc;
}

/* One step: blocking, until something completes; else whatever has.  A
 * finished call stays done (its buffers are the caller's again), a failed
 * one failed, one never started is an error. */
static int step(tacos_exec_t *x, int block, int *done)
{
    exec_t *e = &x->e;
    *done = x->phase == DONE;
    if (x->phase != RUNNING)
        return x->phase == FAILED ? x->rc : x->phase == IDLE ? TACOS_ERR_INVALID : 0;
    int rc = 0;
    if (e->ndone < e->p->nops)
        rc = e->nreqs || e->nlocal ? complete_some(e, block)
                                   : TACOS_ERR_INVALID; /* nothing in flight, nothing can go: a bug */
    if (!rc && e->ndone == e->p->nops && !(rc = end(x, block, done)) && *done)
        x->phase = DONE;
    return rc ? fail(x, rc) : 0;
}

int tacos_exec_progress(tacos_exec_t *x, int *done)
{
    return step(x, 0, done);
}

int tacos_exec_wait(tacos_exec_t *x)
{
    int done = 0, rc = 0;
    while (!rc && !done)
        rc = step(x, 1, &done);
    return rc;
}

int tacos_exec_run(const tacos_prog_t *p, int npus, int k, const size_t *block_off, void *buf,
                   size_t elem_bytes, const tacos_transport_t *tp, const tacos_exec_opts_t *opts)
{
    tacos_exec_t *x;
    int rc = tacos_exec_new(p, npus, k, &x);
    if (!rc && !(rc = tacos_exec_start(x, block_off, buf, elem_bytes, tp, opts)))
        rc = tacos_exec_wait(x);
    tacos_exec_free(x);
    return rc;
}
