/*
 * Executor.  Receives are posted as early as their order allows: each peer's
 * messages go out and are received in their per-link sequence order, so
 * MPI's in-order matching pairs them right.  A copy receive lands directly in
 * the buffer once the ops it depends on (earlier sends of that chunk) are
 * done; a reduce receive lands in scratch space and is combined once its
 * dependencies are done.  A send goes out once the receives it depends on
 * are done.  No barrier per step.
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

enum { OP_WAITING, OP_POSTED, OP_RECEIVED, OP_DONE };

typedef struct {
    const tacos_prog_t *p;
    const tacos_transport_t *tp;
    const tacos_exec_opts_t *opts;
    const size_t *block_off;
    int k;
    char *buf;
    size_t elem;
    char *state;
    size_t *first, *len;
    char **scratch;      /* reduce receives */
    int *next_send_seq;  /* per peer */
    int *next_recv_seq;
    void **reqs;
    size_t *req_op;
    char *req_done;
    size_t nreqs, ndone;
    char *in_buf; /* per chunk, with opts->input: the buffer holds it */
    long *direct; /* per chunk, with opts->input: the reduce receive landing in the buffer */
} exec_t;

/* Where a send of op i reads its data. */
static const void *send_source(const exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    const tacos_exec_opts_t *o = e->opts;
    if (o && o->own_src && op->chunk / e->k == o->own_block)
        return (const char *)o->own_src + (e->first[i] - e->block_off[o->own_block]) * e->elem;
    if (o && o->input && !e->in_buf[op->chunk])
        return (const char *)o->input + e->first[i] * e->elem;
    return e->buf + e->first[i] * e->elem;
}

static int deps_done(const exec_t *e, size_t i)
{
    const tacos_op_t *op = &e->p->ops[i];
    for (size_t d = 0; d < op->ndeps; d++)
        if (e->state[e->p->dep[op->deps + d]] != OP_DONE)
            return 0;
    return 1;
}

static void finish(exec_t *e, size_t i)
{
    e->state[i] = OP_DONE;
    e->ndone++;
}

/* Posts what may go now; returns a transport error or 0. */
static int post_ready(exec_t *e, int *progress)
{
    for (size_t i = 0; i < e->p->nops; i++) {
        const tacos_op_t *op = &e->p->ops[i];
        int send = op->kind == TACOS_OP_SEND;
        int *next = send ? &e->next_send_seq[op->peer] : &e->next_recv_seq[op->peer];
        if (e->state[i] == OP_RECEIVED && deps_done(e, i)) { /* combine a reduction */
            char *dst = e->buf + e->first[i] * e->elem;
            const char *in = e->in_buf ? (const char *)e->opts->input + e->first[i] * e->elem : NULL;
            int rc;
            if (e->in_buf && e->direct[op->chunk] == (long)i) { /* it landed in the buffer */
                rc = e->tp->reduce(e->tp->ctx, in, dst, e->len[i]);
                e->in_buf[op->chunk] = 1;
            } else if (e->in_buf && !e->in_buf[op->chunk]) {
                if (e->direct[op->chunk] >= 0)
                    continue; /* the first arrival, straight in the buffer, is still due */
                e->in_buf[op->chunk] = 1; /* first write: combine with the input */
                if (e->tp->reduce3) {
                    rc = e->tp->reduce3(e->tp->ctx, in, e->scratch[i], dst, e->len[i]);
                } else {
                    memcpy(dst, in, e->len[i] * e->elem);
                    rc = e->tp->reduce(e->tp->ctx, e->scratch[i], dst, e->len[i]);
                }
            } else {
                rc = e->tp->reduce(e->tp->ctx, e->scratch[i], dst, e->len[i]);
            }
            if (rc)
                return rc;
            finish(e, i);
            *progress = 1;
            continue;
        }
        if (e->state[i] != OP_WAITING || op->seq != *next)
            continue;
        int needs_deps = send || !op->reduce; /* a reduce receive can land early */
        if (needs_deps && !deps_done(e, i))
            continue;
        (*next)++;
        *progress = 1;
        if (!e->len[i]) { /* empty chunk: nothing travels, on either side */
            finish(e, i);
            continue;
        }
        int direct = e->in_buf && e->direct[op->chunk] == (long)i;
        void *at = op->reduce && !send && !direct ? e->scratch[i] : e->buf + e->first[i] * e->elem;
        if (send)
            at = (void *)send_source(e, i);
        else if (!op->reduce && e->in_buf)
            e->in_buf[op->chunk] = 1; /* the copy overwrites the whole chunk */
        int rc = send ? e->tp->isend(e->tp->ctx, at, e->len[i] * e->elem, op->peer,
                                     &e->reqs[e->nreqs])
                      : e->tp->irecv(e->tp->ctx, at, e->len[i] * e->elem, op->peer,
                                     &e->reqs[e->nreqs]);
        if (rc)
            return rc;
        e->req_op[e->nreqs++] = i;
        e->state[i] = OP_POSTED;
    }
    return 0;
}

int tacos_exec_run(const tacos_prog_t *p, int npus, int k, const size_t *block_off, void *buf,
                   size_t elem_bytes, const tacos_transport_t *tp, const tacos_exec_opts_t *opts)
{
    size_t n = p->nops ? p->nops : 1, scratch_bytes = 0;
    int overlapped = !opts || !opts->overlap;
    exec_t e = {p, tp, opts, block_off, k, buf, elem_bytes, calloc(n, 1), malloc(n * sizeof(size_t)),
                malloc(n * sizeof(size_t)), calloc(n, sizeof(char *)),
                calloc((size_t)npus, sizeof(int)), calloc((size_t)npus, sizeof(int)),
                malloc(n * sizeof(void *)), malloc(n * sizeof(size_t)), calloc(n, 1), 0, 0,
                opts && opts->input ? calloc((size_t)npus * (size_t)k, 1) : NULL,
                opts && opts->input ? malloc((size_t)npus * (size_t)k * sizeof(long)) : NULL};
    char *scratch = NULL;
    int rc = 0;
    if (!e.state || !e.first || !e.len || !e.scratch || !e.next_send_seq || !e.next_recv_seq ||
        !e.reqs || !e.req_op || !e.req_done || (opts && opts->input && (!e.in_buf || !e.direct))) {
        rc = TACOS_ERR_NOMEM;
        goto out;
    }
    /* with an input, a chunk's first receive, when it is a reduction, lands
     * straight in the (still unwritten) buffer and combines with the input */
    for (int c = 0; e.direct && c < npus * k; c++)
        e.direct[c] = -2; /* -2: no receive seen yet, -1: none direct */
    for (size_t i = 0; i < p->nops; i++) {
        const tacos_op_t *op = &p->ops[i];
        tacos_exec_chunk(block_off, k, op->chunk, &e.first[i], &e.len[i]);
        if (op->kind != TACOS_OP_RECV)
            continue;
        if (e.direct && e.direct[op->chunk] == -2)
            e.direct[op->chunk] = op->reduce ? (long)i : -1;
        if (op->reduce && !(e.direct && e.direct[op->chunk] == (long)i))
            scratch_bytes += e.len[i] * elem_bytes;
    }
    if (scratch_bytes && !(scratch = tp->scratch(tp->ctx, scratch_bytes))) {
        rc = TACOS_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0, at = 0; i < p->nops; i++)
        if (p->ops[i].kind == TACOS_OP_RECV && p->ops[i].reduce &&
            !(e.direct && e.direct[p->ops[i].chunk] == (long)i)) {
            e.scratch[i] = scratch + at;
            at += e.len[i] * elem_bytes;
        }
    while (e.ndone < p->nops) {
        int progress = 0;
        if ((rc = post_ready(&e, &progress)))
            goto out;
        if (progress)
            continue;
        if (!overlapped) { /* local work while the first messages travel */
            opts->overlap(opts->overlap_arg);
            overlapped = 1;
        }
        if (!e.nreqs) { /* nothing in flight and nothing can go: a schedule bug */
            rc = TACOS_ERR_INVALID;
            goto out;
        }
        memset(e.req_done, 0, e.nreqs);
        if ((rc = tp->wait_some(tp->ctx, e.reqs, e.nreqs, e.req_done)))
            goto out;
        size_t kept = 0;
        for (size_t r = 0; r < e.nreqs; r++) {
            size_t i = e.req_op[r];
            if (!e.req_done[r]) {
                e.reqs[kept] = e.reqs[r];
                e.req_op[kept++] = i;
            } else if (p->ops[i].kind == TACOS_OP_RECV && p->ops[i].reduce) {
                e.state[i] = OP_RECEIVED;
            } else {
                finish(&e, i);
            }
        }
        e.nreqs = kept;
    }
    for (int c = 0; e.in_buf && c < npus * k; c++) /* chunks nothing wrote */
        if (!e.in_buf[c]) {
            size_t first, len;
            tacos_exec_chunk(block_off, k, c, &first, &len);
            memcpy((char *)buf + first * elem_bytes,
                   (const char *)opts->input + first * elem_bytes, len * elem_bytes);
        }
out:
    /* on an error, let what is in flight finish before the buffers go away */
    while (rc && e.nreqs && e.req_done) {
        memset(e.req_done, 0, e.nreqs);
        if (tp->wait_some(tp->ctx, e.reqs, e.nreqs, e.req_done))
            break;
        size_t kept = 0;
        for (size_t r = 0; r < e.nreqs; r++)
            if (!e.req_done[r])
                e.reqs[kept++] = e.reqs[r];
        e.nreqs = kept;
    }
    if (!overlapped && !rc)
        opts->overlap(opts->overlap_arg);
    free(e.state);
    free(e.first);
    free(e.len);
    free(e.scratch);
    free(e.next_send_seq);
    free(e.next_recv_seq);
    free(e.reqs);
    free(e.req_op);
    free(e.req_done);
    free(e.in_buf);
    free(e.direct);
    return rc;
}
