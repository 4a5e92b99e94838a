/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives on top of the greedy: All-Gather and Broadcast directly;
 * Reduce-Scatter and Reduce by reversing them on the transposed topology;
 * All-Reduce as Reduce-Scatter then All-Gather.  Trials keep the fastest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ten.h"

static const char *const coll_names[] = {"allgather", "broadcast", "reduce-scatter", "reduce",
                                         "allreduce", "alltoall",  "gather",         "scatter"};

const char *tacos_coll_name(tacos_coll_t c) { return coll_names[c]; }

int tacos_coll_reduces(tacos_coll_t c)
{
    return c == TACOS_REDUCE_SCATTER || c == TACOS_REDUCE || c == TACOS_ALLREDUCE;
}

int tacos_coll_rooted(tacos_coll_t c)
{
    return c == TACOS_BROADCAST || c == TACOS_REDUCE || c == TACOS_GATHER || c == TACOS_SCATTER;
}

int tacos_coll_routed(tacos_coll_t c)
{
    return c == TACOS_ALLTOALL || c == TACOS_GATHER || c == TACOS_SCATTER;
}

void tacos_chunk_route(tacos_coll_t c, int npus, int chunks_per_npu, int root, int chunk,
                       int *from, int *to)
{
    int block = chunk / chunks_per_npu; /* All-to-All: (from * npus + to) */
    *from = c == TACOS_ALLTOALL ? block / npus : c == TACOS_SCATTER ? root : block;
    *to = c == TACOS_ALLTOALL ? block % npus : c == TACOS_GATHER ? root : block;
}

long long tacos_coll_nchunks(tacos_coll_t c, int npus, int chunks_per_npu)
{
    long long n = (long long)npus * chunks_per_npu;
    return c == TACOS_ALLTOALL ? n * npus : n;
}

int tacos_coll_parse(const char *name, tacos_coll_t *out)
{
    static const struct {
        const char *alias;
        tacos_coll_t coll;
    } aliases[] = {{"bcast", TACOS_BROADCAST}, {"reducescatter", TACOS_REDUCE_SCATTER},
                   {"reduce_scatter", TACOS_REDUCE_SCATTER}, {"all-to-all", TACOS_ALLTOALL}};
    for (int c = 0; c < TACOS_NCOLLS; c++)
        if (strcmp(name, coll_names[c]) == 0) {
            *out = (tacos_coll_t)c;
            return TACOS_OK;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].coll;
            return TACOS_OK;
        }
    return tacos_error(TACOS_ERR_ARG,
                       "unknown collective '%s' (allgather, broadcast, reduce-scatter, reduce, "
                       "allreduce, alltoall, gather, scatter)",
                       name);
}

uint64_t *tacos_coll_bitsets(tacos_coll_t coll, int npus, int nchunks, int chunks_per_npu,
                             int root, int post)
{
    size_t words = TACOS_WORDS(nchunks);
    uint64_t *b = calloc((size_t)npus * words, sizeof *b);
    if (!b)
        return NULL;
    if (tacos_coll_routed(coll)) { /* each chunk where it starts (and must end) */
        for (int c = 0; c < nchunks; c++) {
            int from, to;
            tacos_chunk_route(coll, npus, chunks_per_npu, root, c, &from, &to);
            tacos_bit_set(b + (size_t)from * words, (size_t)c);
            if (post)
                tacos_bit_set(b + (size_t)to * words, (size_t)c);
        }
        return b;
    }
    for (int v = 0; v < npus; v++) {
        uint64_t *row = b + (size_t)v * words;
        if (post || (coll == TACOS_BROADCAST && v == root))
            for (int c = 0; c < nchunks; c++)
                tacos_bit_set(row, (size_t)c);
        else if (coll == TACOS_ALLGATHER)
            for (int c = v * chunks_per_npu; c < (v + 1) * chunks_per_npu; c++)
                tacos_bit_set(row, (size_t)c);
    }
    return b;
}

/* What every phase passes on: the optional second method and whether it
 * proved each phase optimal; the time past which the phase is of no use
 * (it may stop there: TACOS_SLOWER) and tacos_auto_k's pass (or NULL). */
typedef struct {
    tacos_improve_fn improve;
    void *ctx;
    int proven;
    double give_up_us;
    tacos_auto_pass_t *pass;
} method_t;

int tacos_msg_chunks(const tacos_synth_opts_t *o, double chunk_bytes)
{
    int most = o->chunks_per_msg > 1 ? o->chunks_per_msg : 1;
    if (most > 1 && o->msg_bytes > 0 && chunk_bytes > 0) {
        double fit = floor((double)o->msg_bytes / chunk_bytes);
        most = fit < 1 ? 1 : fit < most ? (int)fit : most;
    }
    return most;
}

/* Best of `trials` greedy runs of a gather-like collective on `topo`, then
 * the second method if there is one. */
static int best_spread(const tacos_topo_t *topo, tacos_coll_t gather, const tacos_synth_opts_t *o,
                       uint64_t seed, method_t *m, tacos_sched_t **out)
{
    int n = topo->npus, nchunks = o->chunks_per_npu * n, rc = TACOS_OK;
    uint64_t *pre = tacos_coll_bitsets(gather, n, nchunks, o->chunks_per_npu, o->root, 0);
    uint64_t *post = tacos_coll_bitsets(gather, n, nchunks, o->chunks_per_npu, o->root, 1);
    tacos_sched_t *best = NULL, *cur = NULL;
    if (!pre || !post) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory for %d x %d chunk bitsets", n, nchunks);
        goto out;
    }
    for (int trial = 0; trial < o->trials; trial++) {
        uint64_t trial_seed = tacos_splitmix64(&seed);
        if ((rc = tacos_sched_alloc(gather, n, o->chunks_per_npu, o->root, o->size_bytes, NULL,
                                    &cur)))
            goto out;
        double chunk_bytes = (double)o->size_bytes / nchunks;
        rc = tacos_ten_spread(topo, nchunks, chunk_bytes, tacos_msg_chunks(o, chunk_bytes),
                              pre, post, trial_seed, m->give_up_us, cur, &cur->time_us);
        if (rc == TACOS_SLOWER) { /* a trial of no use (an earlier one may be) */
            tacos_sched_free(cur);
            cur = NULL;
            rc = TACOS_OK;
            continue;
        }
        if (rc)
            goto out;
        tacos_sched_keep_faster(&best, &cur);
    }
    if (!best) { /* every trial gave up */
        rc = TACOS_SLOWER;
        goto out;
    }
    if (m->improve) {
        int better = 0, proven = 0;
        if ((rc = tacos_sched_alloc(gather, n, o->chunks_per_npu, o->root, o->size_bytes, NULL,
                                    &cur)) ||
            (rc = m->improve(m->ctx, topo, nchunks, (double)o->size_bytes / nchunks, pre, post,
                             best->time_us, cur, &better, &proven)))
            goto out;
        m->proven &= proven;
        if (better) {
            tacos_sched_free(best);
            best = cur;
            cur = NULL;
        }
    }
    *out = best;
    best = NULL;
out:
    tacos_sched_free(cur);
    tacos_sched_free(best);
    free(pre);
    free(post);
    return rc;
}

static int start_order(tacos_xfer_t *v, size_t n);

/* to[0..n) = from[0..n) run backwards in time and direction from end_us
 * (what was sent last is received first), each NPU (and its chunks, k an
 * NPU) renamed to its mirror image in its block of `block` (1: none);
 * `reduce`: arrivals become reductions.  to may be from.  From transfers in
 * start order, in start order (else for tacos_sched_sort). */
static int backwards(const tacos_xfer_t *from, tacos_xfer_t *to, size_t n, double end_us, int k,
                     int block, int reduce)
{
    for (size_t i = 0; i < n; i++) {
        const tacos_xfer_t x = from[i];
        to[i] = (tacos_xfer_t){end_us - x.end_us, end_us - x.start_us,
                               tacos_mirror_npu(x.chunk / k, block) * k + x.chunk % k,
                               tacos_mirror_npu(x.dst, block), tacos_mirror_npu(x.src, block),
                               reduce};
    }
    for (size_t i = 0; i < n / 2; i++) { /* from the end back: the order they end */
        tacos_xfer_t x = to[i];
        to[i] = to[n - 1 - i];
        to[n - 1 - i] = x;
    }
    return start_order(to, n);
}

/* s run backwards in place. */
static int run_backwards(tacos_sched_t *s, int reduce)
{
    return backwards(s->xfers, s->xfers, s->nxfers, s->time_us, s->chunks_per_npu, 1, reduce);
}

/* Reduce-Scatter / Reduce: synthesize the gather on the transposed topology,
 * then run it backwards in time and direction, arrivals becoming reductions. */
static int reversed(const tacos_topo_t *topo, tacos_coll_t gather, const tacos_synth_opts_t *o,
                    uint64_t seed, method_t *m, tacos_sched_t **out)
{
    tacos_topo_t *tt;
    tacos_sched_t *s;
    int rc = tacos_topo_transpose(topo, &tt);
    if (rc)
        return rc;
    rc = best_spread(tt, gather, o, seed, m, &s);
    tacos_topo_free(tt);
    if (rc)
        return rc;
    if ((rc = run_backwards(s, 1))) {
        tacos_sched_free(s);
        return rc;
    }
    tacos_sched_sort(s); /* (in order already but where a pile overflowed) */
    *out = s;
    return TACOS_OK;
}

/* Of every chunk's transfers, those of one path: its earliest arrival at
 * its destination, traced back through earliest arrivals in time.  A
 * routed chunk is wanted at its destination only, so what else the second
 * method copied it to is dropped (forwarding never needs a copy; the
 * executor moves what it forwards).  s is sorted by start. */
static int keep_paths(tacos_sched_t *s)
{
    char *keep = calloc(s->nxfers + 1, 1);
    if (!keep)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory keeping %zu transfers", s->nxfers);
    for (int c = 0; c < s->nchunks; c++) {
        int from, at;
        tacos_chunk_route(s->coll, s->npus, s->chunks_per_npu, s->root, c, &from, &at);
        double by = INFINITY; /* the chunk must be at `at` by then */
        while (at != from) {
            size_t best = s->nxfers;
            for (size_t i = 0; i < s->nxfers; i++)
                if (s->xfers[i].chunk == c && s->xfers[i].dst == at &&
                    s->xfers[i].end_us <= by + TACOS_TIME_EPS(by) &&
                    (best == s->nxfers || s->xfers[i].end_us < s->xfers[best].end_us))
                    best = i;
            if (best == s->nxfers)
                break; /* not delivered: the validator says so */
            keep[best] = 1;
            at = s->xfers[best].src;
            by = s->xfers[best].start_us;
        }
    }
    size_t n = 0;
    s->time_us = 0;
    for (size_t i = 0; i < s->nxfers; i++)
        if (keep[i]) {
            s->xfers[n++] = s->xfers[i];
            if (s->xfers[i].end_us > s->time_us)
                s->time_us = s->xfers[i].end_us;
        }
    s->nxfers = n;
    free(keep);
    return TACOS_OK;
}

/* The second method on a routed collective, as on a spread: the program
 * with each chunk wanted where it starts and at its destination. */
static int route_improve(const tacos_topo_t *topo, const tacos_synth_opts_t *o, method_t *m,
                         tacos_sched_t **s)
{
    int n = topo->npus, nchunks = (*s)->nchunks, better = 0, proven = 0, rc;
    uint64_t *pre = tacos_coll_bitsets(o->coll, n, nchunks, o->chunks_per_npu, o->root, 0);
    uint64_t *post = tacos_coll_bitsets(o->coll, n, nchunks, o->chunks_per_npu, o->root, 1);
    tacos_sched_t *cur = NULL;
    if (!pre || !post) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory for %d x %d chunk bitsets", n, nchunks);
        goto out;
    }
    if ((rc = tacos_sched_alloc(o->coll, n, o->chunks_per_npu, o->root, o->size_bytes, NULL,
                                &cur)) ||
        (rc = m->improve(m->ctx, topo, nchunks, tacos_sched_chunk_bytes(*s), pre, post,
                         (*s)->time_us, cur, &better, &proven)))
        goto out;
    m->proven &= proven;
    if (better && !(rc = keep_paths(cur))) {
        tacos_sched_free(*s);
        *s = cur;
        cur = NULL;
    }
out:
    tacos_sched_free(cur);
    free(pre);
    free(post);
    return rc;
}

/* Gather and Scatter: routed directly, or as the other on the transposed
 * topology run backwards (what leaves the root first arrives there last),
 * whichever is faster.  Scatter's farthest-first packs the root's links
 * (gather on rfs:2x4x2 at 200/100/50 GB/s: 2.2x faster than routing to the
 * root), gather's nearest-first those into it (scatter on dgx1: 1.4x). */
static int rooted_route(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                        tacos_sched_t **out)
{
    tacos_topo_t *tt;
    tacos_sched_t *direct = NULL, *back = NULL;
    tacos_synth_opts_t other = *o;
    other.coll = o->coll == TACOS_GATHER ? TACOS_SCATTER : TACOS_GATHER;
    int rc = tacos_alltoall_synthesize(topo, o, &direct);
    if (!rc && !(rc = tacos_topo_transpose(topo, &tt))) {
        rc = tacos_alltoall_synthesize(tt, &other, &back);
        tacos_topo_free(tt);
    }
    if (!rc) {
        back->coll = o->coll;
        rc = run_backwards(back, 0);
    }
    if (!rc) {
        tacos_sched_keep_faster(&direct, &back);
        *out = direct;
        direct = NULL;
    }
    tacos_sched_free(direct);
    tacos_sched_free(back);
    return rc;
}

static int append(tacos_sched_t *dst, const tacos_sched_t *src, double shift_us)
{
    int rc = tacos_sched_reserve(dst, dst->nxfers + src->nxfers);
    if (rc)
        return rc;
    for (size_t i = 0; i < src->nxfers; i++) {
        tacos_xfer_t x = src->xfers[i];
        x.start_us += shift_us;
        x.end_us += shift_us;
        dst->xfers[dst->nxfers++] = x;
    }
    return TACOS_OK;
}

/* Puts v[0..n), given in the order they end (as a schedule in start order
 * run backwards comes from its end back), in start order: on links that
 * take equal times that is the same order, so they are dealt to a few piles
 * each in start order and merged (ties: the lower pile first).  What fits
 * no pile goes to the last, out of order: the caller's tacos_sched_sort
 * then sorts it all. */
#define START_PILES 8
static int start_order(tacos_xfer_t *v, size_t n)
{
    size_t at[START_PILES + 1] = {0}, end[START_PILES];
    tacos_xfer_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
    unsigned char *pile = malloc(n ? n : 1);
    double top[START_PILES];
    int piles = 0;
    if (!tmp || !pile) {
        free(tmp);
        free(pile);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory ordering %zu transfers", n);
    }
    for (size_t i = 0; i < n; i++) {
        int p = 0;
        while (p < piles && top[p] > v[i].start_us)
            p++;
        if (p == START_PILES)
            p = START_PILES - 1;
        piles += p == piles;
        pile[i] = (unsigned char)p;
        top[p] = v[i].start_us;
        at[p + 1]++;
    }
    for (int p = 0; p < piles; p++)
        end[p] = at[p + 1] += at[p];
    for (size_t i = 0; i < n; i++) /* by pile, each in start order */
        tmp[at[pile[i]]++] = v[i];
    for (int p = piles - 1; p >= 0; p--)
        at[p] = p ? end[p - 1] : 0;
    for (size_t o = 0; o < n; o++) {
        int b = -1;
        for (int p = 0; p < piles; p++)
            if (at[p] < end[p] && (b < 0 || tmp[at[p]].start_us < tmp[at[b]].start_us))
                b = p;
        v[o] = tmp[at[b]++];
    }
    free(tmp);
    free(pile);
    return TACOS_OK;
}

/* Appends to a Reduce-Scatter s (time T; in start order but where it is
 * a split, phase(), and then the caller's tacos_sched_sort sorts it all)
 * its All-Gather from T to 2T without synthesizing one.  s is an All-Gather
 * on the transposed topology run backwards; that All-Gather forwards, each
 * NPU (and its chunks) renamed to its mirror image in its block of `block`
 * (tacos_topo_mirror), is one on the topology itself, as long. */
static int append_mirrored(tacos_sched_t *s, int block)
{
    size_t n = s->nxfers;
    int rc = tacos_sched_reserve(s, 2 * n);
    if (rc)
        return rc;
    s->nxfers = 2 * n;
    s->time_us *= 2;
    return backwards(s->xfers, s->xfers + n, n, s->time_us, s->chunks_per_npu, block, 0);
}

int tacos_check_opts(const tacos_topo_t *topo, const tacos_synth_opts_t *o)
{
    if (!topo->in_off)
        return tacos_error(TACOS_ERR_ARG, "topology %s is not finalized", topo->name);
    if (topo->nranks && topo->nranks != topo->npus)
        return tacos_error(TACOS_ERR_ARG, "%s has switches as nodes (a network to simulate on): "
                           "synthesize on the shape's unwound topology", topo->name);
    if ((unsigned)o->coll >= TACOS_NCOLLS)
        return tacos_error(TACOS_ERR_ARG, "unknown collective %d", (int)o->coll);
    if (o->chunks_per_npu < 1)
        return tacos_error(TACOS_ERR_ARG, "chunks per NPU must be >= 1, got %d", o->chunks_per_npu);
    if (tacos_coll_nchunks(o->coll, topo->npus, o->chunks_per_npu) > 1 << 28)
        return tacos_error(TACOS_ERR_ARG, "%d chunks per NPU x %d NPUs is too many chunks",
                           o->chunks_per_npu, topo->npus);
    if (o->size_bytes < 1)
        return tacos_error(TACOS_ERR_ARG, "collective size must be at least 1 byte");
    if (o->trials < 1)
        return tacos_error(TACOS_ERR_ARG, "trials must be >= 1, got %d", o->trials);
    if (o->chunks_per_msg < 0 || o->chunks_per_msg > TACOS_MAX_CHUNKS_PER_MSG)
        return tacos_error(TACOS_ERR_ARG, "chunks per message must be 0..%d, got %d",
                           TACOS_MAX_CHUNKS_PER_MSG, o->chunks_per_msg);
    if (o->root < 0 || o->root >= topo->npus)
        return tacos_error(TACOS_ERR_ARG, "root %d is not an NPU of 0..%d", o->root, topo->npus - 1);
    /* every NPU exchanges with every other one; rooted collectives only need
     * paths from (or to) the root, which the greedy itself reports */
    if (!tacos_coll_rooted(o->coll))
        return tacos_topo_check_connected(topo);
    return TACOS_OK;
}

typedef int (*phase_fn)(const tacos_topo_t *topo, tacos_coll_t gather,
                        const tacos_synth_opts_t *o, uint64_t seed, method_t *m,
                        tacos_sched_t **out);

/* tacos_auto_k's pass: the time past which the k being synthesized is of
 * no use (clearly slower than the fastest so far, CLEARLY_SLOWER), and the
 * phases synthesized at k = 1 by the greedy alone, which every larger k
 * splits for a candidate of its own (phase()) instead of synthesizing them
 * again: they are the same schedules. */
#define CLEARLY_SLOWER 1.1
#define KEPT_PHASES 4 /* All-Reduce's two (one where mirrored), with and without aggregation */
struct tacos_auto_pass {
    double give_up_us;
    struct {
        phase_fn make;
        uint64_t seed;
        int per_msg;
        tacos_sched_t *s; /* sorted */
    } one[KEPT_PHASES];
};

static tacos_sched_t *kept_phase(const tacos_auto_pass_t *p, phase_fn make, uint64_t seed,
                                 int per_msg)
{
    for (int i = 0; p && i < KEPT_PHASES && p->one[i].s; i++)
        if (p->one[i].make == make && p->one[i].seed == seed && p->one[i].per_msg == per_msg)
            return p->one[i].s;
    return NULL;
}

/* Keeps a copy of a 1-chunk phase (nothing where the pass is full or out of
 * memory: a larger k then synthesizes it again). */
static void keep_phase(tacos_auto_pass_t *p, phase_fn make, uint64_t seed, int per_msg,
                       const tacos_sched_t *s)
{
    int i = 0;
    while (p && i < KEPT_PHASES && p->one[i].s)
        i++;
    if (!p || i == KEPT_PHASES || kept_phase(p, make, seed, per_msg))
        return;
    tacos_sched_t *copy = NULL;
    if (tacos_sched_alloc(s->coll, s->npus, 1, s->root, s->size_bytes, NULL, &copy) ||
        append(copy, s, 0)) {
        tacos_sched_free(copy);
        return;
    }
    tacos_sched_sort(copy);
    p->one[i].make = make, p->one[i].seed = seed, p->one[i].per_msg = per_msg, p->one[i].s = copy;
}

/* One phase (best_spread or reversed) with more chunks never hurting: for
 * k > 1 the phase's 1-chunk schedule split into k parts per chunk is a
 * candidate too, kept when faster (valid by construction: every part
 * follows its chunk's path in the same order; the tests validate every
 * synthesized schedule).  Per phase, so All-Reduce stays two phases and its
 * bounds hold.  The split comes first, and the greedy alone stops past it
 * (it would not be kept).  TACOS_SLOWER where both are past m->give_up_us. */
static int phase(phase_fn make, const tacos_topo_t *topo, tacos_coll_t gather,
                 const tacos_synth_opts_t *o, uint64_t seed, method_t *m, tacos_sched_t **out)
{
    if (o->chunks_per_npu == 1) {
        int rc = make(topo, gather, o, seed, m, out);
        if (!rc && !m->improve)
            keep_phase(m->pass, make, seed, o->chunks_per_msg, *out);
        return rc;
    }
    tacos_synth_opts_t one = *o;
    tacos_sched_t *s1 = kept_phase(m->pass, make, seed, o->chunks_per_msg), *made = NULL,
                  *split = NULL;
    one.chunks_per_npu = 1;
    method_t greedy = {NULL, NULL, 1, INFINITY, NULL}; /* the greedy's 1-chunk schedule */
    if (!s1 && !make(topo, gather, &one, seed, &greedy, &made)) {
        tacos_sched_sort(made);
        s1 = made;
    }
    if (s1 && tacos_sched_split(s1, topo, o->chunks_per_npu, &split))
        split = NULL;
    tacos_sched_free(made);
    method_t mk = *m; /* (a hair past the split: one that ends there is compared) */
    if (split && !m->improve && split->time_us * (1 + 1e-9) < mk.give_up_us)
        mk.give_up_us = split->time_us * (1 + 1e-9);
    int rc = make(topo, gather, o, seed, &mk, out);
    m->proven = mk.proven;
    if (split && (rc == TACOS_SLOWER ? split->time_us <= m->give_up_us
                                     : !rc && split->time_us < (*out)->time_us)) {
        if (!rc)
            tacos_sched_free(*out); /* tacos_synthesize sorts what it returns */
        *out = split;
        split = NULL;
        rc = TACOS_OK;
    }
    tacos_sched_free(split);
    return rc;
}

/* tacos_synthesize_improved, stopping where `pass` says (NULL: never). */
static int improved(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                    tacos_improve_fn improve, void *ctx, tacos_auto_pass_t *pass,
                    tacos_sched_t **out, int *proven)
{
    int rc = tacos_check_opts(topo, o);
    if (rc)
        return rc;
    uint64_t seed = o->seed;
    method_t m = {improve, ctx, 1, pass ? pass->give_up_us : INFINITY, pass};
    tacos_sched_t *s = NULL, *ag = NULL;
    int mirror; /* block size, 0: none */
    switch (o->coll) {
    case TACOS_ALLTOALL: /* routed, not spread: the greedy of its own */
    case TACOS_GATHER:
    case TACOS_SCATTER:
        rc = o->coll == TACOS_ALLTOALL ? tacos_alltoall_synthesize(topo, o, &s)
                                       : rooted_route(topo, o, &s);
        if (!rc && improve)
            rc = route_improve(topo, o, &m, &s);
        break;
    case TACOS_ALLGATHER:
    case TACOS_BROADCAST:
        rc = phase(best_spread, topo, o->coll, o, seed, &m, &s);
        break;
    case TACOS_REDUCE_SCATTER:
        rc = phase(reversed, topo, TACOS_ALLGATHER, o, seed, &m, &s);
        break;
    case TACOS_REDUCE:
        rc = phase(reversed, topo, TACOS_BROADCAST, o, seed, &m, &s);
        break;
    case TACOS_ALLREDUCE:
        if ((mirror = tacos_topo_mirror(topo))) {
            m.give_up_us /= 2; /* (the All-Gather as long) */
            rc = phase(reversed, topo, TACOS_ALLGATHER, o, seed, &m, &s);
            if (!rc)
                rc = append_mirrored(s, mirror);
            break;
        }
        rc = phase(reversed, topo, TACOS_ALLGATHER, o, seed, &m, &s);
        m.give_up_us -= rc ? 0 : s->time_us; /* the All-Gather follows */
        if (!rc)
            rc = phase(best_spread, topo, TACOS_ALLGATHER, o, seed ^ 0x5bd1e995u, &m, &ag);
        if (!rc)
            rc = append(s, ag, s->time_us);
        break;
    }
    tacos_sched_free(ag);
    if (!rc) {
        s->coll = o->coll;
        rc = tacos_topo_copy(topo, &s->topo);
    }
    if (rc) {
        tacos_sched_free(s);
        return rc;
    }
    tacos_sched_sort(s);
    *out = s;
    if (proven)
        *proven = improve && m.proven;
    return TACOS_OK;
}

int tacos_synthesize_improved(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                              tacos_improve_fn improve, void *ctx, tacos_sched_t **out,
                              int *proven)
{
    return improved(topo, o, improve, ctx, NULL, out, proven);
}

/* tacos_synthesize, stopping where `pass` says (NULL: never). */
static int flat(const tacos_topo_t *topo, const tacos_synth_opts_t *o, tacos_auto_pass_t *pass,
                tacos_sched_t **out)
{
    int rc = improved(topo, o, NULL, NULL, pass, out, NULL);
    if ((rc && rc != TACOS_SLOWER) || o->chunks_per_msg <= 1 ||
        (!rc && tacos_sched_most_per_message(*out) <= 1))
        return rc; /* (no message of several chunks: the same as with one) */
    /* a chunk per message as well, the faster kept: aggregating never hurts.
     * Where the aggregated one gave up it may have had no message of several
     * chunks, and then was this one (the greedy makes the same moves and
     * draws with a cap of one chunk per message): it gives up too.  As
     * before, a failure of this one leaves the first's outcome. */
    tacos_synth_opts_t one = *o;
    tacos_sched_t *other = NULL;
    one.chunks_per_msg = 1;
    if (improved(topo, &one, NULL, NULL, pass, &other, NULL))
        return rc;
    if (rc) /* (the aggregated one gave up) */
        *out = other, rc = TACOS_OK;
    else
        tacos_sched_keep_faster(out, &other);
    return rc;
}

int tacos_synthesize(const tacos_topo_t *topo, const tacos_synth_opts_t *o, tacos_sched_t **out)
{
    return flat(topo, o, NULL, out);
}

static int synthesize_with(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                           tacos_hier_t hier, tacos_auto_pass_t *pass, tacos_sched_t **out)
{
    tacos_sched_t *best = NULL, *levels = NULL;
    int rc = hier == TACOS_HIER_LEVELS ? TACOS_OK : flat(topo, o, pass, &best);
    if (rc == TACOS_SLOWER && hier != TACOS_HIER_FLAT)
        rc = TACOS_OK; /* the levels may still be of use */
    if (!rc && hier != TACOS_HIER_FLAT) {
        rc = tacos_synthesize_hier(topo, o, &levels);
        if (rc == TACOS_ERR_TOPO && hier == TACOS_HIER_AUTO)
            rc = TACOS_OK; /* no levels: flat it is */
        else if (!rc)
            tacos_sched_keep_faster(&best, &levels);
    }
    if (!rc && !best)
        rc = TACOS_SLOWER;
    if (rc)
        tacos_sched_free(best);
    else
        *out = best;
    return rc;
}

int tacos_synthesize_with(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                          tacos_hier_t hier, tacos_sched_t **out)
{
    return synthesize_with(topo, o, hier, NULL, out);
}

static int with(const tacos_topo_t *topo, const tacos_synth_opts_t *o, const void *hier,
                tacos_auto_pass_t *pass, tacos_sched_t **out)
{
    return synthesize_with(topo, o, *(const tacos_hier_t *)hier, pass, out);
}

int tacos_synthesize_auto(const tacos_topo_t *topo, const tacos_synth_opts_t *o, int max_k,
                          tacos_hier_t hier, tacos_sched_t **out)
{
    return o->chunks_per_npu > 0 ? tacos_synthesize_with(topo, o, hier, out)
                                 : tacos_auto_k(topo, o, max_k, with, &hier, out);
}

static int auto_k(const tacos_topo_t *topo, const tacos_synth_opts_t *o, int max_k,
                  tacos_synth_fn synth, const void *arg, double rival_us, tacos_sched_t **out);

int tacos_auto_k(const tacos_topo_t *topo, const tacos_synth_opts_t *o, int max_k,
                 tacos_synth_fn synth, const void *arg, tacos_sched_t **out)
{
    return auto_k(topo, o, max_k, synth, arg, INFINITY, out);
}

int tacos_synthesize_flat_against(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                                  int max_k, double rival_us, tacos_sched_t **out)
{
    tacos_hier_t flat = TACOS_HIER_FLAT;
    return auto_k(topo, o, max_k, with, &flat, rival_us, out);
}

static int auto_k(const tacos_topo_t *topo, const tacos_synth_opts_t *o, int max_k,
                  tacos_synth_fn synth, const void *arg, double rival_us, tacos_sched_t **out)
{
    tacos_sched_t *best = NULL;
    tacos_auto_pass_t pass = {INFINITY, {{0}}};
    int rc = TACOS_OK;
    *out = NULL;
    if (max_k < 1)
        return tacos_error(TACOS_ERR_ARG, "automatic chunks per NPU up to %d: want 1 or more",
                           max_k);
    for (int k = 1; k <= max_k; k *= 2) {
        if (k > TACOS_AUTO_TIES_K && best->chunks_per_npu != k / 2)
            break; /* past it, only while each k is the fastest so far */
        tacos_synth_opts_t ok = *o;
        ok.chunks_per_npu = k;
        tacos_sched_t *cand = NULL;
        /* of no use past the fastest so far clearly, or past it at all
         * beyond TACOS_AUTO_TIES_K (a hair more: one that ends right there
         * is compared as if synthesized in full) */
        double no_use = k > TACOS_AUTO_TIES_K ? 1 : CLEARLY_SLOWER;
        pass.give_up_us = (best ? no_use * best->time_us : CLEARLY_SLOWER * rival_us) * (1 + 1e-9);
        if ((rc = synth(topo, &ok, arg, &pass, &cand)) == TACOS_SLOWER) {
            rc = best                ? TACOS_OK
                 : isfinite(rival_us) ? TACOS_SLOWER
                                      : tacos_error(TACOS_ERR_INVALID, "internal: k = %d gave "
                                                    "up with none to compare", k);
            break; /* of no use: as below */
        }
        if (rc)
            break;
        if (!best || cand->time_us < best->time_us) {
            tacos_sched_free(best);
            best = cand;
            continue;
        }
        int clearly = cand->time_us > CLEARLY_SLOWER * best->time_us;
        tacos_sched_free(cand);
        if (clearly)
            break; /* larger k cost more and, on every shape measured, do not turn
                      faster again; a tie may (pairs4: k = 2 models 0.2% slower
                      than k = 1, k = 8 1.6x faster) */
    }
    for (int i = 0; i < KEPT_PHASES; i++)
        tacos_sched_free(pass.one[i].s);
    if (rc)
        tacos_sched_free(best);
    else
        *out = best;
    return rc;
}
