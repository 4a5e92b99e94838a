/* SPDX-License-Identifier: BSD-3-Clause */
/* Schedule IR: transfers, and each rank's program derived from them. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int tacos_sched_alloc(tacos_coll_t coll, int npus, int chunks_per_npu, int root,
                      uint64_t size_bytes, const tacos_topo_t *topo, tacos_sched_t **out)
{
    tacos_sched_t *s = calloc(1, sizeof *s);
    if (!s)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory allocating a schedule");
    *s = (tacos_sched_t){coll, npus, chunks_per_npu,
                         (int)tacos_coll_nchunks(coll, npus, chunks_per_npu), root, size_bytes,
                         0, 0, NULL, NULL, 0, 0};
    if (topo) {
        int rc = tacos_topo_copy(topo, &s->topo);
        if (rc) {
            free(s);
            return rc;
        }
    }
    *out = s;
    return TACOS_OK;
}

int tacos_sched_reserve(tacos_sched_t *s, size_t n)
{
    tacos_xfer_t *x = realloc(s->xfers, (n ? n : 1) * sizeof *x);
    if (!x)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for %zu transfers", n);
    s->xfers = x;
    return TACOS_OK;
}

void tacos_sched_free(tacos_sched_t *s)
{
    if (!s)
        return;
    free(s->xfers);
    tacos_topo_free(s->topo);
    free(s);
}

void tacos_sched_keep_faster(tacos_sched_t **best, tacos_sched_t **cand)
{
    if (!*best || (*cand)->time_us < (*best)->time_us) {
        tacos_sched_free(*best);
        *best = *cand;
    } else {
        tacos_sched_free(*cand);
    }
    *cand = NULL;
}

double tacos_sched_chunk_bytes(const tacos_sched_t *s)
{
    return (double)s->size_bytes / ((double)s->npus * s->chunks_per_npu);
}

/* A schedule's order: by start, then source, destination and chunk (total
 * on a valid schedule: one link carries one chunk once at a time). */
static int xfer_before(const tacos_xfer_t *x, const tacos_xfer_t *y)
{
    return x->start_us != y->start_us ? x->start_us < y->start_us
           : x->src != y->src         ? x->src < y->src
           : x->dst != y->dst         ? x->dst < y->dst
                                      : x->chunk < y->chunk;
}

static int xfer_cmp(const void *a, const void *b)
{
    return xfer_before(a, b) ? -1 : xfer_before(b, a);
}

/* By link, start and end: a message's transfers side by side. */
static int msg_cmp(const void *a, const void *b)
{
    const tacos_xfer_t *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->start_us != y->start_us)
        return x->start_us < y->start_us ? -1 : 1;
    return (x->end_us > y->end_us) - (x->end_us < y->end_us);
}

int tacos_sched_most_per_message(const tacos_sched_t *s)
{
    tacos_xfer_t *v = malloc((s->nxfers ? s->nxfers : 1) * sizeof *v);
    if (!v)
        return -1;
    memcpy(v, s->xfers, s->nxfers * sizeof *v);
    qsort(v, s->nxfers, sizeof *v, msg_cmp);
    int most = s->nxfers > 0, run = 1;
    for (size_t i = 1; i < s->nxfers; i++) {
        run = tacos_same_message(&v[i], &v[i - 1]) ? run + 1 : 1;
        most = run > most ? run : most;
    }
    free(v);
    return most;
}

/* A stable merge sort by xfer_before: runs of SORT_RUN by insertion, then
 * merged pairwise between v and tmp.  The order is total on a valid
 * schedule, so this is what qsort by xfer_cmp gives, in a fraction of its
 * time: the comparison inlined, 32-byte moves. */
#define SORT_RUN 16
static void sort_xfers(tacos_xfer_t *v, tacos_xfer_t *tmp, size_t n)
{
    for (size_t lo = 0; lo < n; lo += SORT_RUN)
        for (size_t i = lo + 1; i < n && i < lo + SORT_RUN; i++) {
            tacos_xfer_t x = v[i];
            size_t j = i;
            for (; j > lo && xfer_before(&x, &v[j - 1]); j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
    tacos_xfer_t *from = v, *to = tmp;
    for (size_t width = SORT_RUN; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n, a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                to[o++] = xfer_before(&from[b], &from[a]) ? from[b++] : from[a++];
            while (a < mid)
                to[o++] = from[a++];
            while (b < hi)
                to[o++] = from[b++];
        }
        tacos_xfer_t *t = from;
        from = to, to = t;
    }
    if (from != v)
        memcpy(v, from, n * sizeof *v);
}

void tacos_sched_sort(tacos_sched_t *s)
{
    /* The greedy emits transfers in start order, which is all the IR needs;
     * only reversed or loaded schedules are sorted. */
    size_t i = 1;
    while (i < s->nxfers && s->xfers[i - 1].start_us <= s->xfers[i].start_us)
        i++;
    tacos_xfer_t *tmp = i < s->nxfers ? malloc(s->nxfers * sizeof *tmp) : NULL;
    if (tmp)
        sort_xfers(s->xfers, tmp, s->nxfers);
    else if (i < s->nxfers) /* (out of memory for the merge: in place) */
        qsort(s->xfers, s->nxfers, sizeof *s->xfers, xfer_cmp);
    free(tmp);
    s->time_us = 0;
    for (size_t i = 0; i < s->nxfers; i++)
        if (s->xfers[i].end_us > s->time_us)
            s->time_us = s->xfers[i].end_us;
}

/* ---- programs ----------------------------------------------------------- */

static int op_cmp(const void *a, const void *b)
{
    const tacos_op_t *x = a, *y = b;
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind == TACOS_OP_RECV ? -1 : 1;
    if (x->chunk != y->chunk)
        return x->chunk < y->chunk ? -1 : 1;
    return (x->peer > y->peer) - (x->peer < y->peer);
}

void tacos_prog_free(tacos_prog_t *p)
{
    if (!p)
        return;
    free(p->ops);
    free(p->dep);
    free(p);
}

/* Dependencies of op i on the earlier ops of its chunk, walking back along
 * prev[] (the previous op of the same chunk).  See tacos_op_t. */
static size_t collect_deps(const tacos_prog_t *p, const long *prev, size_t i, size_t *dep)
{
    const tacos_op_t *op = &p->ops[i];
    size_t n = 0;
    for (long j = prev[i]; j >= 0; j = prev[j]) {
        const tacos_op_t *e = &p->ops[j];
        int e_copy_recv = e->kind == TACOS_OP_RECV && !e->reduce;
        if (op->kind == TACOS_OP_SEND) {
            if (e->kind == TACOS_OP_RECV)
                dep[n++] = (size_t)j;
            if (e_copy_recv)
                break; /* it already waited for everything before it */
        } else {
            if (e->kind == TACOS_OP_SEND || !op->reduce || e_copy_recv)
                dep[n++] = (size_t)j;
            if (e->kind == TACOS_OP_RECV && (!op->reduce || e_copy_recv))
                break;
        }
    }
    return n;
}

int tacos_sched_program(const tacos_sched_t *s, int rank, tacos_prog_t **out)
{
    if (rank < 0 || rank >= s->npus)
        return tacos_error(TACOS_ERR_ARG, "rank %d is not in 0..%d", rank, s->npus - 1);
    tacos_prog_t *p = calloc(1, sizeof *p);
    int *sent = calloc((size_t)s->npus, sizeof *sent), *recvd = calloc((size_t)s->npus, sizeof *recvd);
    long *last = malloc((size_t)s->nchunks * sizeof *last), *prev = NULL;
    size_t n = 0;
    int rc = TACOS_OK;
    if (!p || !sent || !recvd || !last)
        goto nomem;
    for (size_t i = 0; i < s->nxfers; i++)
        n += (s->xfers[i].src == rank) + (s->xfers[i].dst == rank);
    p->rank = rank;
    p->ops = malloc((n ? n : 1) * sizeof *p->ops);
    prev = malloc((n ? n : 1) * sizeof *prev);
    if (!p->ops || !prev)
        goto nomem;
    /* Transfers are in start order, which is each link's order: seq; a
     * message's transfers side by side (joined: the same test as the
     * schedule hash the ranks agree on) */
    for (size_t i = 0; i < s->nxfers; i++) {
        const tacos_xfer_t *x = &s->xfers[i];
        int joined = i && tacos_same_message(x, x - 1);
        if (x->src == rank)
            p->ops[p->nops++] = (tacos_op_t){TACOS_OP_SEND, x->reduce, x->chunk, x->dst,
                                             sent[x->dst]++, x->start_us, 0, 0, joined};
        if (x->dst == rank)
            p->ops[p->nops++] = (tacos_op_t){TACOS_OP_RECV, x->reduce, x->chunk, x->src,
                                             recvd[x->src]++, x->end_us, 0, 0, joined};
    }
    qsort(p->ops, p->nops, sizeof *p->ops, op_cmp);
    for (int c = 0; c < s->nchunks; c++)
        last[c] = -1;
    size_t ndep = 0;
    for (size_t i = 0; i < p->nops; i++) {
        prev[i] = last[p->ops[i].chunk];
        last[p->ops[i].chunk] = (long)i;
        for (long j = prev[i]; j >= 0; j = prev[j])
            ndep++; /* upper bound */
    }
    p->dep = malloc((ndep ? ndep : 1) * sizeof *p->dep);
    if (!p->dep)
        goto nomem;
    ndep = 0;
    for (size_t i = 0; i < p->nops; i++) {
        p->ops[i].deps = ndep;
        p->ops[i].ndeps = collect_deps(p, prev, i, p->dep + ndep);
        ndep += p->ops[i].ndeps;
    }
    *out = p;
    p = NULL;
    goto out;
nomem:
    rc = tacos_error(TACOS_ERR_NOMEM, "out of memory building the program of rank %d", rank);
out:
    tacos_prog_free(p);
    free(sent);
    free(recvd);
    free(last);
    free(prev);
    return rc;
}
