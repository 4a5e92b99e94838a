/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Textbook collective algorithms as schedules on their logical peers: Ring
 * (bidirectional, two rings with half the data each), Direct, Recursive
 * Halving-Doubling, Double Binary Tree, and two levels through one leader
 * per group in the manner of Open MPI's coll/han (unsegmented).  Transfers are laid out in logical
 * steps (step s occupies [s, s+1); several chunks on one pair in one step
 * share the step back to back), on a fully connected logical topology with
 * negligible link cost, so the validator can check them; the simulator then
 * runs them on a physical network.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    int step, chunk, src, dst, reduce;
    size_t seq;
} raw_t;

typedef struct {
    raw_t *v;
    size_t n, cap;
    int failed;
    int group; /* han: ranks per group */
} builder_t;

static void add(builder_t *b, int step, int chunk, int src, int dst, int reduce)
{
    raw_t *v = tacos_grow(b->v, &b->cap, b->n, sizeof *v, 256);
    if (!v) {
        b->failed = 1;
        return;
    }
    b->v = v;
    b->v[b->n] = (raw_t){step, chunk, src, dst, reduce, b->n};
    b->n++;
}

static int raw_cmp(const void *a, const void *b)
{
    const raw_t *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* ---- the algorithms ------------------------------------------------------ */

/* Ring: chunk 2b+dir is block b on ring dir (0: to r+1, 1: to r-1). */
static int ring(builder_t *b, tacos_coll_t coll, int n, int *k)
{
    *k = 2;
    int rs = coll != TACOS_ALLGATHER, ag = coll != TACOS_REDUCE_SCATTER, step0 = 0;
    for (int dir = 0; dir < 2; dir++) {
        int sgn = dir ? -1 : 1;
        for (int s = 0; rs && s < n - 1; s++)
            for (int r = 0; r < n; r++) {
                int blk = ((r - sgn * (s + 1)) % n + n) % n;
                add(b, s, 2 * blk + dir, r, ((r + sgn) % n + n) % n, 1);
            }
        step0 = rs ? n - 1 : 0;
        for (int s = 0; ag && s < n - 1; s++)
            for (int r = 0; r < n; r++) {
                int blk = ((r - sgn * s) % n + n) % n;
                add(b, step0 + s, 2 * blk + dir, r, ((r + sgn) % n + n) % n, 0);
            }
    }
    return TACOS_OK;
}

/* All-to-All, chunk (r, j) = r*n + j: direct (every message at once) or
 * pairwise exchange (step s: r sends to r+s). */
static int exchange(builder_t *b, int n, int pairwise)
{
    for (int s = 1; s < n; s++)
        for (int r = 0; r < n; r++)
            add(b, pairwise ? s - 1 : 0, r * n + (r + s) % n, r, (r + s) % n, 0);
    return TACOS_OK;
}

static int pairwise(builder_t *b, tacos_coll_t coll, int n, int *k)
{
    *k = 1;
    if (coll != TACOS_ALLTOALL)
        return tacos_error(TACOS_ERR_ARG, "pairwise implements alltoall only, not %s",
                           tacos_coll_name(coll));
    return exchange(b, n, 1);
}

/* Bruck: chunk (i, j) travels (j - i) mod n in powers of two, the smallest
 * first; in step q every rank sends what has bit q of that distance set to
 * rank + 2^q, as one message. */
static int bruck(builder_t *b, tacos_coll_t coll, int n, int *k)
{
    *k = 1;
    if (coll != TACOS_ALLTOALL)
        return tacos_error(TACOS_ERR_ARG, "bruck implements alltoall only, not %s",
                           tacos_coll_name(coll));
    for (int q = 0; (1 << q) < n; q++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int d = ((j - i) % n + n) % n, at = (i + (d & ((1 << q) - 1))) % n;
                if (d >> q & 1)
                    add(b, q, i * n + j, at, (at + (1 << q)) % n, 0);
            }
    return TACOS_OK;
}

static int direct(builder_t *b, tacos_coll_t coll, int n, int *k)
{
    *k = 1;
    if (coll == TACOS_ALLTOALL)
        return exchange(b, n, 0);
    if (coll == TACOS_GATHER || coll == TACOS_SCATTER) { /* root 0 and each other NPU */
        for (int j = 1; j < n; j++)
            add(b, 0, j, coll == TACOS_GATHER ? j : 0, coll == TACOS_GATHER ? 0 : j, 0);
        return TACOS_OK;
    }
    int rs = coll != TACOS_ALLGATHER, ag = coll != TACOS_REDUCE_SCATTER;
    for (int r = 0; r < n; r++)
        for (int j = 0; j < n; j++)
            if (j != r) {
                if (rs)
                    add(b, 0, j, r, j, 1);
                if (ag)
                    add(b, rs, r, r, j, 0);
            }
    return TACOS_OK;
}

/* Sends blocks [lo, hi) of p blocks over n chunks (block of chunk c = c*p/n). */
static void send_blocks(builder_t *b, int step, int src, int dst, int lo, int hi, int p, int n,
                        int reduce)
{
    for (int c = 0; c < n; c++) {
        int blk = (int)((long)c * p / n);
        if (blk >= lo && blk < hi)
            add(b, step, c, src, dst, reduce);
    }
}

static int rhd(builder_t *b, tacos_coll_t coll, int n, int *k)
{
    *k = 1;
    int p = 1, step = 0;
    while (2 * p <= n)
        p *= 2;
    int extra = n - p, rs = coll != TACOS_ALLGATHER, ag = coll != TACOS_REDUCE_SCATTER;
    if (extra && coll != TACOS_ALLREDUCE)
        return tacos_error(TACOS_ERR_ARG,
                           "rhd %s needs a power-of-two NPU count, got %d (allreduce folds)",
                           tacos_coll_name(coll), n);
    if (extra) { /* fold the extra ranks onto the first ones */
        for (int r = p; r < n; r++)
            send_blocks(b, step, r, r - p, 0, p, p, n, 1);
        step++;
    }
    for (int d = p / 2; rs && d >= 1; d /= 2, step++) /* recursive halving */
        for (int r = 0; r < p; r++) {
            int partner = r ^ d, lo = partner & ~(d - 1);
            send_blocks(b, step, r, partner, lo, lo + d, p, n, 1);
        }
    for (int d = 1; ag && d < p; d *= 2, step++) /* recursive doubling */
        for (int r = 0; r < p; r++) {
            int lo = r & ~(d - 1);
            send_blocks(b, step, r, r ^ d, lo, lo + d, p, n, 0);
        }
    if (extra)
        for (int r = p; r < n; r++)
            send_blocks(b, step, r - p, r, 0, p, p, n, 0);
    return TACOS_OK;
}

/* In-order binary tree over positions [lo, hi): parent and height. */
static int build_tree(int lo, int hi, int parent, int *par, int *height)
{
    if (lo >= hi)
        return -1;
    int mid = lo + (hi - lo) / 2;
    par[mid] = parent;
    int hl = build_tree(lo, mid, mid, par, height), hr = build_tree(mid + 1, hi, mid, par, height);
    height[mid] = 1 + (hl > hr ? hl : hr);
    return height[mid];
}

static int dbt(builder_t *b, tacos_coll_t coll, int n, int *k)
{
    *k = 2;
    if (coll != TACOS_ALLREDUCE)
        return tacos_error(TACOS_ERR_ARG, "dbt implements allreduce only, not %s",
                           tacos_coll_name(coll));
    int *par = malloc((size_t)n * sizeof *par), *height = malloc((size_t)n * sizeof *height);
    int *depth = malloc((size_t)n * sizeof *depth);
    if (!par || !height || !depth) {
        free(par);
        free(height);
        free(depth);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory building trees");
    }
    int root_h = build_tree(0, n, -1, par, height);
    for (int v = 0; v < n; v++) {
        depth[v] = 0;
        for (int u = v; par[u] >= 0; u = par[u])
            depth[v]++;
    }
    /* tree t maps position v to rank (v + t) mod n: leaves of one are inner
     * nodes of the other; tree t pipelines chunks t*n .. t*n+n-1 */
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < n; i++)
            for (int v = 0; v < n; v++) {
                if (par[v] < 0)
                    continue;
                int rank = (v + t) % n, up = (par[v] + t) % n, c = t * n + i;
                add(b, i + height[v], c, rank, up, 1);
                add(b, i + root_h + depth[v] - 1, c, up, rank, 0);
            }
    free(par);
    free(height);
    free(depth);
    return TACOS_OK;
}

/* han:L, two levels through leaders in the manner of Open MPI's coll/han
 * (whose All-Reduce also pipelines segments through the levels, which this
 * does not; coll/han has no Reduce-Scatter): groups of L consecutive
 * ranks, the first of each its leader.  All-Reduce: every member sends its
 * whole vector to its leader, which reduces them; the leaders all-reduce
 * on a ring (a block per leader: Reduce-Scatter, then All-Gather); each
 * leader sends the result to its members.  All-Gather: the members' blocks
 * to the leader, the groups' blocks around the leaders' ring, to the
 * members what they lack.  Reduce-Scatter: the vectors to the leader, a
 * ring Reduce-Scatter of the groups' blocks, each member's own chunk
 * back. */
static int han(builder_t *b, tacos_coll_t coll, int n, int *k)
{
    int L = b->group, G = n / L, step = 0;
    *k = 1;
    int rs = coll != TACOS_ALLGATHER, ag = coll != TACOS_REDUCE_SCATTER;
    for (int m = 0; m < n; m++) /* up: to the leader */
        if (m % L)
            send_blocks(b, step, m, m - m % L, rs ? 0 : m, rs ? n : m + 1, n, n, rs);
    step++;
    for (int s = 0; rs && s < G - 1; s++, step++) /* the leaders' ring */
        for (int g = 0; g < G; g++) {
            int blk = ((g - s - 1) % G + G) % G;
            send_blocks(b, step, g * L, (g + 1) % G * L, blk, blk + 1, G, n, 1);
        }
    for (int s = 0; ag && s < G - 1; s++, step++)
        for (int g = 0; g < G; g++) {
            int blk = ((g - s) % G + G) % G;
            send_blocks(b, step, g * L, (g + 1) % G * L, blk, blk + 1, G, n, 0);
        }
    for (int m = 0; m < n; m++) /* down: from the leader */
        if (m % L) {
            if (coll == TACOS_REDUCE_SCATTER)
                add(b, step, m, m - m % L, m, 0);
            else
                for (int c = 0; c < n; c++)
                    if (rs || c != m)
                        add(b, step, c, m - m % L, m, 0);
        }
    return TACOS_OK;
}

int tacos_baseline(const char *name, tacos_coll_t coll, int npus, uint64_t size_bytes,
                   tacos_sched_t **out)
{
    static const struct {
        const char *name;
        int (*build)(builder_t *, tacos_coll_t, int, int *);
    } algos[] = {{"ring", ring}, {"direct", direct}, {"rhd", rhd},
                 {"dbt", dbt},   {"pairwise", pairwise}, {"bruck", bruck},
                 {"han", han}}; /* (han last) */
    int idx = -1, HAN = (int)(sizeof algos / sizeof algos[0]) - 1;
    long group = 0;
    for (int i = 0; i < (int)(sizeof algos / sizeof algos[0]); i++)
        if (strcmp(name, algos[i].name) == 0)
            idx = i;
    if (strncmp(name, "han:", 4) == 0) {
        size_t digits = strspn(name + 4, "0123456789");
        idx = HAN;
        group = digits && digits < 9 && !name[4 + digits] ? atol(name + 4) : 0;
        if (group < 1 || group > npus || npus % group)
            return tacos_error(TACOS_ERR_ARG,
                               "baseline %s: want han:L, L ranks per group dividing the %d NPUs",
                               name, npus);
    } else if (idx == HAN) {
        return tacos_error(TACOS_ERR_ARG, "baseline han: say the ranks per group (han:L)");
    }
    if (idx < 0)
        return tacos_error(TACOS_ERR_ARG, "unknown baseline '%s' (ring, direct, rhd, dbt, pairwise, "
                                          "bruck, han:L)",
                           name);
    if (coll == TACOS_BROADCAST || coll == TACOS_REDUCE ||
        (tacos_coll_routed(coll) && idx == HAN) ||
        (coll == TACOS_ALLTOALL && (idx == 0 || idx == 2)) ||
        ((coll == TACOS_GATHER || coll == TACOS_SCATTER) && idx != 1))
        return tacos_error(TACOS_ERR_ARG, "baseline %s: %s is not implemented (allreduce, "
                                          "allgather, reduce-scatter; alltoall: direct, "
                                          "pairwise, bruck; gather, scatter: direct, root 0)",
                           name, tacos_coll_name(coll));
    if (npus < 1 || size_bytes < 1)
        return tacos_error(TACOS_ERR_ARG, "baseline %s: needs >= 1 NPU and >= 1 byte", name);
    builder_t b = {.group = (int)group};
    int k = 1, rc = npus > 1 ? algos[idx].build(&b, coll, npus, &k) : TACOS_OK;
    if (!rc && b.failed)
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory building %s", name);
    if (rc) {
        free(b.v);
        return rc;
    }
    /* logical topology: every pair, negligible cost */
    tacos_topo_t *logical;
    tacos_sched_t *s = NULL;
    double bw = 1e12, lat = 0;
    char spec[32];
    snprintf(spec, sizeof spec, "fc:%d", npus);
    rc = tacos_topo_generate(spec, &bw, 1, &lat, 1, 1, &logical);
    if (!rc) {
        free(logical->name);
        logical->name = strdup(name);
        rc = logical->name ? tacos_sched_alloc(coll, npus, k, 0, size_bytes, logical, &s)
                           : tacos_error(TACOS_ERR_NOMEM, "out of memory");
        tacos_topo_free(logical);
    }
    if (!rc)
        rc = tacos_sched_reserve(s, b.n);
    if (!rc) {
        /* chunks one pair carries in one step share the step back to back */
        if (b.n)
            qsort(b.v, b.n, sizeof *b.v, raw_cmp);
        for (size_t i = 0, j; i < b.n; i = j) {
            for (j = i + 1; j < b.n && b.v[j].step == b.v[i].step && b.v[j].src == b.v[i].src &&
                            b.v[j].dst == b.v[i].dst;
                 j++)
                ;
            for (size_t q = i; q < j; q++) {
                double w = 1.0 / (double)(j - i);
                s->xfers[s->nxfers++] = (tacos_xfer_t){b.v[q].step + w * (double)(q - i),
                                                       b.v[q].step + w * (double)(q - i + 1),
                                                       b.v[q].chunk, b.v[q].src, b.v[q].dst,
                                                       b.v[q].reduce};
            }
        }
        tacos_sched_sort(s);
        s->steps = 1;
    }
    free(b.v);
    if (rc) {
        tacos_sched_free(s);
        return rc;
    }
    *out = s;
    return TACOS_OK;
}
