/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule validator.  Each (NPU, chunk) carries the set of ranks whose
 * contribution it holds: All-Gather/Broadcast data starts complete at its
 * holders, reductions start with each rank holding only itself.  Sweeping
 * each chunk's transfers in time order, a send needs a non-empty set at its
 * start, a copy replaces the receiver's set, a reduction requires disjoint
 * sets (no contribution twice) and unites them; at the end every NPU that
 * must hold the chunk holds the complete set.  Links are checked for
 * existence, duration and overlap; transfers on one link with the same start
 * and end are one message, which takes the link's time for all their bytes.
 * The earliest violation is reported.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    double t_us;
    size_t xfer;
    char msg[400];
} violation_t;

static void found(violation_t *v, double t, size_t xfer, const char *fmt, ...) TACOS_PRINTF(4, 5);

static void found(violation_t *v, double t, size_t xfer, const char *fmt, ...)
{
    if (v->msg[0] && (v->t_us < t || (v->t_us == t && v->xfer <= xfer)))
        return; /* an earlier one is already known */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
    v->t_us = t;
    v->xfer = xfer;
}

/* Per-transfer checks and link exclusivity (transfers are in start order). */
/* Sets *malformed when a transfer is out of range or out of order: the chunk
 * sweeps cannot run then. */
static int check_links(const tacos_sched_t *s, violation_t *v, int *malformed)
{
    const tacos_topo_t *t = s->topo;
    double *busy_until = calloc(t->nlinks ? t->nlinks : 1, sizeof *busy_until);
    size_t *last = calloc(t->nlinks ? t->nlinks : 1, sizeof *last);
    size_t *in_msg = calloc(t->nlinks ? t->nlinks : 1, sizeof *in_msg);
    if (!busy_until || !last || !in_msg) {
        free(busy_until);
        free(last);
        free(in_msg);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory validating");
    }
    double chunk = tacos_sched_chunk_bytes(s);
    for (size_t i = 0; i < s->nxfers; i++) {
        const tacos_xfer_t *x = &s->xfers[i];
        if (x->chunk < 0 || x->chunk >= s->nchunks || x->src < 0 || x->src >= s->npus ||
            x->dst < 0 || x->dst >= s->npus) {
            found(v, x->start_us, i, "transfer %zu: chunk %d %d->%d out of range (%d chunks, %d NPUs)",
                  i, x->chunk, x->src, x->dst, s->nchunks, s->npus);
            *malformed = 1;
            continue;
        }
        if (x->reduce != 0 && (x->reduce != 1 || !tacos_coll_reduces(s->coll))) {
            found(v, x->start_us, i, "transfer %zu: reduce %d (%s reduces nothing: 0; else 0 or 1)",
                  i, x->reduce, tacos_coll_name(s->coll));
            *malformed = 1;
            continue;
        }
        if (!isfinite(x->start_us) || !isfinite(x->end_us) || x->start_us < 0) {
            found(v, 0, i, "transfer %zu: times [%g, %g] us are not finite and >= 0", i, x->start_us,
                  x->end_us);
            *malformed = 1;
            continue;
        }
        if (i && x->start_us < s->xfers[i - 1].start_us) {
            found(v, x->start_us, i, "transfer %zu: not in start-time order", i);
            *malformed = 1;
            continue;
        }
        long l = tacos_topo_find_link(t, x->src, x->dst);
        if (l < 0) {
            found(v, x->start_us, i, "transfer %zu: chunk %d at t=%.6g us: no link %d->%d", i,
                  x->chunk, x->start_us, x->src, x->dst);
            continue;
        }
        int joins = in_msg[l] && tacos_same_message(x, &s->xfers[last[l]]);
        in_msg[l] = joins ? in_msg[l] + 1 : 1;
        double cost = tacos_link_cost_us(&t->links[l], (double)in_msg[l] * chunk);
        if (x->end_us - x->start_us < cost - TACOS_TIME_EPS(cost) - TACOS_TIME_EPS(x->end_us))
            found(v, x->start_us, i,
                  "transfer %zu: chunk %d on link %d->%d takes %.6g us, less than the link time "
                  "%.6g us of its message's %zu chunk%s",
                  i, x->chunk, x->src, x->dst, x->end_us - x->start_us, cost, in_msg[l],
                  in_msg[l] == 1 ? "" : "s");
        if (!joins && x->start_us < busy_until[l] - TACOS_TIME_EPS(busy_until[l]))
            found(v, x->start_us, i,
                  "transfer %zu: link %d->%d carries chunk %d from t=%.6g us while transfer %zu "
                  "(chunk %d) occupies it until %.6g us",
                  i, x->src, x->dst, x->chunk, x->start_us, last[l], s->xfers[last[l]].chunk,
                  busy_until[l]);
        if (x->end_us > busy_until[l]) {
            busy_until[l] = x->end_us;
            last[l] = i;
        }
    }
    free(busy_until);
    free(last);
    free(in_msg);
    return TACOS_OK;
}

typedef struct {
    double t_us;
    size_t xfer;
    int arrival;
} event_t;

static int event_cmp(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    if (x->t_us != y->t_us)
        return x->t_us < y->t_us ? -1 : 1;
    if (x->arrival != y->arrival)
        return x->arrival ? -1 : 1;
    return (x->xfer > y->xfer) - (x->xfer < y->xfer);
}

/* A routed collective's chunk: where it starts (end 0) or must end (1). */
static int route_end(const tacos_sched_t *s, int chunk, int end)
{
    int from, to;
    tacos_chunk_route(s->coll, s->npus, s->chunks_per_npu, s->root, chunk, &from, &to);
    return end ? to : from;
}

static int initially_complete(const tacos_sched_t *s, int rank, int chunk)
{
    if (tacos_coll_routed(s->coll))
        return route_end(s, chunk, 0) == rank;
    if (s->coll == TACOS_ALLGATHER)
        return chunk / s->chunks_per_npu == rank;
    return s->coll == TACOS_BROADCAST && rank == s->root;
}

static int must_hold(const tacos_sched_t *s, int rank, int chunk)
{
    switch (s->coll) {
    case TACOS_REDUCE_SCATTER:
        return chunk / s->chunks_per_npu == rank;
    case TACOS_REDUCE:
        return rank == s->root;
    case TACOS_ALLTOALL:
    case TACOS_GATHER:
    case TACOS_SCATTER:
        return route_end(s, chunk, 1) == rank;
    default:
        return 1;
    }
}

/* Per chunk, a contribution set for each NPU its transfers touch (slot[npu],
 * -1 elsewhere): memory grows with the schedule, not with npus^2 per chunk;
 * an NPU no transfer touches keeps its initial state. */
typedef struct {
    int *slot;       /* per NPU */
    int *touched;    /* the NPUs with a slot, in slot order */
    uint64_t *set;   /* per slot, `words` words */
    uint64_t *carried; /* per transfer in flight */
    event_t *ev;
    size_t words;
} sweep_t;

static void init_row(const tacos_sched_t *s, int c, int r, uint64_t *row, size_t words)
{
    memset(row, 0, words * sizeof *row);
    int reduction = tacos_coll_reduces(s->coll);
    if (reduction)
        tacos_bit_set(row, (size_t)r);
    else if (initially_complete(s, r, c))
        for (int q = 0; q < s->npus; q++)
            tacos_bit_set(row, (size_t)q);
}

static uint64_t *row_of(const tacos_sched_t *s, int c, sweep_t *w, int r, int *nslots)
{
    if (w->slot[r] < 0) {
        w->slot[r] = *nslots;
        w->touched[(*nslots)++] = r;
        init_row(s, c, r, w->set + (size_t)w->slot[r] * w->words, w->words);
    }
    return w->set + (size_t)w->slot[r] * w->words;
}

/* Whether NPU r ends the chunk complete; NULL row: untouched. */
static int complete(const tacos_sched_t *s, int c, int r, const uint64_t *row)
{
    if (!row)
        return s->npus == 1 || initially_complete(s, r, c);
    size_t full = (size_t)s->npus / 64, rest = (size_t)s->npus % 64;
    for (size_t k = 0; k < full; k++) /* a word at a time: N^3 bit tests for All-Reduce */
        if (row[k] != ~0ull)
            return 0;
    return !rest || (row[full] | ~((1ull << rest) - 1)) == ~0ull;
}

/* Sweeps one chunk's transfers (indices xs[0..n)) in time order. */
static void check_chunk(const tacos_sched_t *s, int c, const size_t *xs, size_t n, sweep_t *w,
                        violation_t *v)
{
    int reduction = tacos_coll_reduces(s->coll),
        nslots = 0;
    size_t words = w->words;
    for (size_t i = 0; i < n; i++) {
        const tacos_xfer_t *x = &s->xfers[xs[i]];
        row_of(s, c, w, x->src, &nslots);
        row_of(s, c, w, x->dst, &nslots);
        /* an arrival within the tolerance of a departure comes first */
        w->ev[2 * i] = (event_t){x->start_us, i, 0};
        w->ev[2 * i + 1] = (event_t){x->end_us - TACOS_TIME_EPS(x->end_us), i, 1};
    }
    qsort(w->ev, 2 * n, sizeof *w->ev, event_cmp);
    for (size_t e = 0; e < 2 * n; e++) {
        size_t i = w->ev[e].xfer, xi = xs[i];
        const tacos_xfer_t *x = &s->xfers[xi];
        uint64_t *src = row_of(s, c, w, x->src, &nslots), *dst = row_of(s, c, w, x->dst, &nslots);
        uint64_t *car = w->carried + i * words;
        if (!w->ev[e].arrival) {
            int empty = 1;
            for (size_t k = 0; k < words; k++) {
                car[k] = src[k];
                empty &= !src[k];
            }
            if (empty) {
                found(v, x->start_us, xi,
                      "transfer %zu: NPU %d sends chunk %d to %d at t=%.6g us but does not hold it",
                      xi, x->src, c, x->dst, x->start_us);
                goto out;
            }
            continue;
        }
        for (size_t k = 0; k < words; k++) {
            if (x->reduce && (dst[k] & car[k])) {
                found(v, x->end_us, xi,
                      "transfer %zu: chunk %d reduced into NPU %d at t=%.6g us counts the "
                      "contribution of rank %d twice",
                      xi, c, x->dst, x->end_us, (int)(k * 64 + (size_t)tacos_ctz64(dst[k] & car[k])));
                goto out;
            }
            dst[k] = x->reduce ? dst[k] | car[k] : car[k];
        }
    }
    /* the touched NPUs, then the first untouched one that must hold the chunk */
    for (int r = 0; r < s->npus; r++) {
        const uint64_t *row = w->slot[r] >= 0 ? w->set + (size_t)w->slot[r] * words : NULL;
        if (!must_hold(s, r, c) || complete(s, c, r, row))
            continue;
        if (reduction && row)
            for (int q = 0; q < s->npus; q++)
                if (!tacos_bit_get(row, (size_t)q)) {
                    found(v, s->time_us, s->nxfers,
                          "postcondition: NPU %d ends with chunk %d lacking the contribution of "
                          "rank %d",
                          r, c, q);
                    goto out;
                }
        found(v, s->time_us, s->nxfers,
              reduction ? "postcondition: NPU %d ends with chunk %d lacking contributions"
                        : "postcondition: NPU %d never receives chunk %d",
              r, c);
        goto out;
    }
out:
    for (int i = 0; i < nslots; i++)
        w->slot[w->touched[i]] = -1;
}

int tacos_sched_validate(const tacos_sched_t *s)
{
    violation_t v = {0};
    if (!s->topo || s->topo->npus != s->npus || s->npus < 1 || s->chunks_per_npu < 1 ||
        s->nchunks != tacos_coll_nchunks(s->coll, s->npus, s->chunks_per_npu) || s->root < 0 || s->root >= s->npus)
        return tacos_error(TACOS_ERR_INVALID,
                           "schedule header: %d NPUs, %d chunks per NPU, root %d do not fit its "
                           "topology",
                           s->npus, s->chunks_per_npu, s->root);
    int malformed = 0, rc = check_links(s, &v, &malformed);
    if (rc)
        return rc;
    if (malformed)
        return tacos_error(TACOS_ERR_INVALID, "%s", v.msg);
    size_t nc = (size_t)s->nchunks, maxn = 0;
    sweep_t w = {.words = TACOS_WORDS(s->npus)};
    size_t *off = calloc(nc + 1, sizeof *off), *idx = malloc((s->nxfers + 1) * sizeof *idx);
    w.slot = malloc((size_t)s->npus * sizeof *w.slot);
    if (!off || !idx || !w.slot)
        goto nomem;
    for (int r = 0; r < s->npus; r++)
        w.slot[r] = -1;
    for (size_t i = 0; i < s->nxfers; i++)
        off[s->xfers[i].chunk + 1]++;
    for (size_t c = 0; c < nc; c++) {
        if (off[c + 1] > maxn)
            maxn = off[c + 1];
        off[c + 1] += off[c];
    }
    for (size_t i = 0; i < s->nxfers; i++)
        idx[off[s->xfers[i].chunk]++] = i;
    for (size_t c = nc; c > 0; c--)
        off[c] = off[c - 1];
    off[0] = 0;
    w.ev = malloc((2 * maxn + 1) * sizeof *w.ev);
    w.touched = malloc((2 * maxn + 1) * sizeof *w.touched);
    w.set = malloc((2 * maxn + 1) * w.words * sizeof *w.set);
    w.carried = malloc((maxn + 1) * w.words * sizeof *w.carried);
    if (!w.ev || !w.touched || !w.set || !w.carried)
        goto nomem;
    for (size_t c = 0; c < nc; c++)
        check_chunk(s, (int)c, idx + off[c], off[c + 1] - off[c], &w, &v);
    rc = v.msg[0] ? tacos_error(TACOS_ERR_INVALID, "%s", v.msg) : TACOS_OK;
    goto out;
nomem:
    rc = tacos_error(TACOS_ERR_NOMEM, "out of memory validating a schedule of %zu transfers",
                     s->nxfers);
out:
    free(off);
    free(idx);
    free(w.slot);
    free(w.touched);
    free(w.set);
    free(w.ev);
    free(w.carried);
    return rc;
}
