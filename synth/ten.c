/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TACOS greedy: link-chunk matching over a time-expanded network, run as
 * an event simulation in continuous time so heterogeneous links work.
 *
 * At every event time (t = 0 and each time transfers land) each destination
 * looks at its free incoming links that may have something new to offer
 * (the link just freed, or its source just received a chunk the destination
 * needs), cheapest (earliest-arrival) first with ties in random order, and
 * puts on each a chunk that the source holds and the destination still
 * needs and is not already receiving.  Each link carries one message at a
 * time, so the result is congestion-free by construction.
 *
 * A message carries one chunk, or with per_msg > 1 (aggregation) up to
 * per_msg chunks the source holds at once, where the link's latency is
 * large against a chunk's bytes: as many as take no longer to send than
 * the latency, the latency paid once (a 16x16 mesh's 64 KiB All-Reduce
 * 205 -> 86 us at 100 GB/s, 0.5 us).  Where a chunk's bytes take longer,
 * nothing changes.
 *
 * Two refinements inside the ties the paper leaves to chance: among equally
 * cheap links, the one with the fewest chunks to offer goes first; and a
 * link draws two random candidate chunks and sends the one with fewer copies
 * so far, which keeps chunks spreading evenly (it lifts a 16x16 torus from
 * 97% to 98.5% of the bound at one trial).
 *
 * On hierarchical topologies a third: link costs fall into bands (a new band
 * where a cost exceeds 1.5x the next cheaper one), and the NPUs that links of
 * cheaper bands join form d's group below a link's band (a host, a fast ring,
 * an NVLink island).  A chunk some group member holds or receives reaches d
 * over those cheaper links anyway, so a link of a higher band draws up to
 * GROUP_TRIES more candidates for one the group lacks: each chunk crosses
 * the slow cut into a group about once instead of once per member (ss:8x4
 * 88.6% -> 95.7% of the throughput optimum, RFS 2x4x4 89.6% -> 95.5%).
 *
 * Cost per event is proportional to the links touched times the bitset width
 * (chunks / 64), never to NPUs squared; what each link could offer is kept
 * up to date (link_offer), not recounted.  Pending arrivals sit in one FIFO
 * per distinct link cost: start times never decrease, so each FIFO stays
 * sorted and the next event is the earliest FIFO head (a small heap of
 * classes).
 */
#include <stdlib.h>
#include <string.h>

#include "ten.h"

typedef struct {
    double *cost;      /* distinct link costs, ascending */
    size_t nclasses;
    size_t *cls;       /* class of each link */
    size_t *start;     /* ring buffer of class q: slots start[q] .. start[q+1] */
    size_t *head, *len;
    size_t *slot_link; /* link whose transfer occupies a slot */
    double *slot_end;
    size_t *heap;      /* non-empty classes, earliest head first */
    size_t nheap, pending;
} events_t;

static int class_before(const events_t *e, size_t a, size_t b)
{
    double x = e->slot_end[e->head[a]], y = e->slot_end[e->head[b]];
    return x < y || (x == y && a < b);
}

static void sift_down(events_t *e, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, tmp;
        if (c >= e->nheap)
            return;
        if (c + 1 < e->nheap && class_before(e, e->heap[c + 1], e->heap[c]))
            c++;
        if (!class_before(e, e->heap[c], e->heap[i]))
            return;
        tmp = e->heap[c];
        e->heap[c] = e->heap[i];
        e->heap[i] = tmp;
        i = c;
    }
}

static void events_push(events_t *e, size_t link, double end)
{
    size_t q = e->cls[link], cap = e->start[q + 1] - e->start[q];
    size_t slot = e->start[q] + (e->head[q] - e->start[q] + e->len[q]) % cap;
    e->slot_link[slot] = link;
    e->slot_end[slot] = end;
    e->pending++;
    if (e->len[q]++)
        return; /* the class head, hence its heap position, is unchanged */
    size_t i = e->nheap++;
    for (; i && class_before(e, q, e->heap[(i - 1) / 2]); i = (i - 1) / 2)
        e->heap[i] = e->heap[(i - 1) / 2];
    e->heap[i] = q;
}

/* End time of the earliest pending transfer (events must be pending). */
static double events_first(const events_t *e) { return e->slot_end[e->head[e->heap[0]]]; }

/* Removes the earliest pending transfer and returns its link. */
static size_t events_pop(events_t *e)
{
    size_t q = e->heap[0], link = e->slot_link[e->head[q]];
    e->head[q] = e->head[q] + 1 == e->start[q + 1] ? e->start[q] : e->head[q] + 1;
    e->pending--;
    if (!--e->len[q])
        e->heap[0] = e->heap[--e->nheap];
    sift_down(e, 0);
    return link;
}

/* Random draws for a chunk d's group lacks before settling for one it has. */
#define GROUP_TRIES 4
/* At most this many bytes of group bitsets (else no groups). */
#define GROUP_MAX_BYTES ((size_t)256 << 20)

typedef struct {
    const tacos_topo_t *topo;
    size_t words;
    uint64_t *have;     /* [npu][words]: chunks arrived */
    uint64_t *need;     /* [npu][words]: wanted, not arrived, not in flight */
    const uint64_t *post; /* [npu][words]: wanted in the end (so post & ~need is
                             what has arrived or is in flight) */
    size_t *need_count; /* popcount of need per NPU */
    size_t *copies;     /* per chunk: NPUs holding or receiving it */
    double *cost;       /* per link: one chunk's time */
    double *msg_cost;   /* [link][per_msg]: a message of 1 + j chunks */
    size_t *in_order;   /* in-links per destination, cheapest first */
    int per_msg;        /* most chunks one message carries */
    int32_t *carrying;  /* [link][per_msg]: chunks in flight on it */
    int *ncarrying;     /* per link: how many (0: free) */
    int *msg_cap;       /* per link: most chunks a message takes on it */
    /* Groups: for each band b >= 1 of link costs, the NPUs joined by links
     * of cheaper bands; gcomp[b][v] is v's group, ghas[b][group] the chunks
     * some member holds or receives. */
    int nbands;
    int *band;        /* per link */
    int *gcomp[8];
    uint64_t *ghas[8];
    char *link_dirty, *dst_dirty;
    int *dirty_dsts;
    size_t ndirty;
    size_t *cand;         /* scratch: one destination's free links */
    size_t *link_offer;   /* per link: chunks its source holds that its
                             destination needs (count_offer, kept up to date) */
    events_t ev;
    tacos_rng_t rng;
} ten_t;

static void mark_link(ten_t *s, size_t l)
{
    int d = s->topo->links[l].dst;
    s->link_dirty[l] = 1;
    if (!s->dst_dirty[d]) {
        s->dst_dirty[d] = 1;
        s->dirty_dsts[s->ndirty++] = d;
    }
}

/* Number of chunks src could send to dst now. */
static size_t count_offer(const ten_t *s, int src, int dst)
{
    const uint64_t *h = s->have + (size_t)src * s->words, *n = s->need + (size_t)dst * s->words;
    size_t count = 0;
    for (size_t w = 0; w < s->words; w++)
        count += (size_t)tacos_popcount64(h[w] & n[w]);
    return count;
}

/* The r-th set bit of have[src] & need[dst]. */
static size_t nth_offer(const ten_t *s, int src, int dst, size_t r)
{
    const uint64_t *h = s->have + (size_t)src * s->words, *n = s->need + (size_t)dst * s->words;
    for (size_t w = 0;; w++) {
        uint64_t x = h[w] & n[w];
        size_t pc = (size_t)tacos_popcount64(x);
        if (r < pc) {
            while (r--)
                x &= x - 1;
            return w * 64 + (size_t)tacos_ctz64(x);
        }
        r -= pc;
    }
}

/* How many other in-neighbours of d could also send chunk c. */
static size_t other_holders(const ten_t *s, int d, int src, size_t c)
{
    const tacos_topo_t *topo = s->topo;
    size_t n = 0;
    for (size_t k = topo->in_off[d]; k < topo->in_off[d + 1]; k++) {
        int u = topo->links[topo->in_links[k]].src;
        n += u != src && (tacos_bit_get(s->have + (size_t)u * s->words, c) ||
                          (tacos_bit_get(s->post + (size_t)u * s->words, c) &&
                           !tacos_bit_get(s->need + (size_t)u * s->words, c)));
    }
    return n;
}

/* Orders the candidate links [a, b) of equal cost: random, then fewest
 * chunks to offer first (insertion sort keeps the random order of ties). */
static void order_run(ten_t *s, size_t a, size_t b)
{
    for (size_t i = b - 1; i > a; i--) {
        size_t j = a + (size_t)tacos_rng_below(&s->rng, i - a + 1), tmp = s->cand[i];
        s->cand[i] = s->cand[j];
        s->cand[j] = tmp;
    }
    for (size_t i = a + 1; i < b; i++) {
        size_t l = s->cand[i], o = s->link_offer[l], j = i;
        for (; j > a && s->link_offer[s->cand[j - 1]] > o; j--)
            s->cand[j] = s->cand[j - 1];
        s->cand[j] = l;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) and keeps each value once; returns how many there are. */
static size_t distinct(double *v, size_t n)
{
    size_t k = 0;
    qsort(v, n, sizeof *v, cmp_double);
    for (size_t i = 0; i < n; i++)
        if (!k || v[i] != v[k - 1])
            v[k++] = v[i];
    return k;
}

/* Index of cost c in the ascending distinct costs v[0..k). */
static size_t find_cost(const double *v, size_t k, double c)
{
    size_t lo = 0, hi = k - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int uf_find(int *p, int x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

/* Bands of link costs (a new band where a cost exceeds 1.5x the previous
 * distinct cost, at most 8) and, per band, the groups of NPUs that links of
 * cheaper bands join. */
static int groups_init(ten_t *s)
{
    const tacos_topo_t *topo = s->topo;
    int n = topo->npus;
    size_t m = topo->nlinks ? topo->nlinks : 1, k = 0;
    double *cost = malloc(m * sizeof *cost); /* distinct one-chunk costs */
    int *cband = malloc(m * sizeof *cband);
    s->band = malloc(m * sizeof *s->band);
    if (!cost || !cband || !s->band) {
        free(cost);
        free(cband);
        return TACOS_ERR_NOMEM;
    }
    memcpy(cost, s->cost, topo->nlinks * sizeof *cost);
    k = distinct(cost, topo->nlinks);
    int b = 0;
    for (size_t q = 0; q < k; q++) {
        if (q && cost[q] > 1.5 * cost[q - 1] && b < 7)
            b++;
        cband[q] = b;
    }
    if ((size_t)b * (size_t)n * s->words * sizeof(uint64_t) > GROUP_MAX_BYTES)
        for (size_t q = 0; q < k; q++)
            cband[q] = b = 0; /* too large to track: one band, the plain greedy */
    s->nbands = b + 1;
    for (size_t l = 0; l < topo->nlinks; l++)
        s->band[l] = cband[find_cost(cost, k, s->cost[l])];
    free(cost);
    free(cband);
    for (b = 1; b < s->nbands; b++) {
        int *p = malloc((size_t)n * sizeof *p);
        s->gcomp[b] = p;
        s->ghas[b] = calloc((size_t)n * s->words, sizeof **s->ghas);
        if (!p || !s->ghas[b])
            return TACOS_ERR_NOMEM;
        for (int v = 0; v < n; v++)
            p[v] = v;
        for (size_t l = 0; l < topo->nlinks; l++)
            if (s->band[l] < b) {
                int x = uf_find(p, topo->links[l].src), y = uf_find(p, topo->links[l].dst);
                if (x != y)
                    p[x > y ? x : y] = x < y ? x : y;
            }
        for (int v = 0; v < n; v++)
            p[v] = uf_find(p, v);
    }
    return TACOS_OK;
}

/* Chunk c is held by or on its way to NPU v. */
static void groups_add(ten_t *s, int v, size_t c)
{
    for (int b = 1; b < s->nbands; b++)
        tacos_bit_set(s->ghas[b] + (size_t)s->gcomp[b][v] * s->words, c);
}

/* Whether chunk c is in d's group below link l's band. */
static int in_group(const ten_t *s, size_t l, int d, size_t c)
{
    int b = s->band[l];
    return b > 0 && tacos_bit_get(s->ghas[b] + (size_t)s->gcomp[b][d] * s->words, c);
}

/* One of the `offer` chunks src holds and d still needs, for link l. */
static size_t pick_chunk(ten_t *s, size_t l, int src, int d, size_t offer)
{
    size_t c = nth_offer(s, src, d, (size_t)tacos_rng_below(&s->rng, offer));
    size_t c2 = nth_offer(s, src, d, (size_t)tacos_rng_below(&s->rng, offer));
    if (s->band[l] > 0) { /* prefer chunks d's group does not have yet */
        int g1 = in_group(s, l, d, c), g2 = in_group(s, l, d, c2);
        for (int r = 0; g1 && g2 && r < GROUP_TRIES; r++) {
            size_t c3 = nth_offer(s, src, d, (size_t)tacos_rng_below(&s->rng, offer));
            if (!in_group(s, l, d, c3))
                c = c2 = c3, g1 = g2 = 0;
        }
        if (g1 && !g2)
            c = c2;
        else if (g2 && !g1)
            c2 = c;
    }
    size_t a1 = other_holders(s, d, src, c), a2 = other_holders(s, d, src, c2);
    return a2 < a1 || (a2 == a1 && s->copies[c2] < s->copies[c]) ? c2 : c;
}

/* Matching for one destination at time t. */
static void match_destination(ten_t *s, int d, double t, tacos_sched_t *out)
{
    const tacos_topo_t *topo = s->topo;
    size_t ncand = 0;
    for (size_t k = topo->in_off[d]; k < topo->in_off[d + 1]; k++) {
        size_t l = s->in_order[k];
        if (s->link_dirty[l]) {
            s->link_dirty[l] = 0;
            if (!s->ncarrying[l])
                s->cand[ncand++] = l;
        }
    }
    if (!s->need_count[d])
        return;
    for (size_t a = 0, b; a < ncand; a = b) {
        for (b = a + 1; b < ncand && s->cost[s->cand[b]] == s->cost[s->cand[a]]; b++)
            ;
        order_run(s, a, b);
    }
    for (size_t i = 0; i < ncand && s->need_count[d]; i++) {
        size_t l = s->cand[i];
        int src = topo->links[l].src;
        size_t offer = s->link_offer[l];
        if (!offer)
            continue; /* stays idle until its source gets something new */
        size_t m = offer < (size_t)s->msg_cap[l] ? offer : (size_t)s->msg_cap[l];
        for (size_t j = 0; j < m; j++, offer--) {
            size_t c = pick_chunk(s, l, src, d, offer);
            s->copies[c]++;
            tacos_bit_clear(s->need + (size_t)d * s->words, c);
            for (size_t k = topo->in_off[d]; k < topo->in_off[d + 1]; k++) {
                size_t in = topo->in_links[k];
                s->link_offer[in] -= tacos_bit_get(s->have + (size_t)topo->links[in].src * s->words, c);
            }
            if (s->nbands > 1)
                groups_add(s, d, c);
            s->need_count[d]--;
            s->carrying[l * (size_t)s->per_msg + j] = (int32_t)c;
        }
        s->ncarrying[l] = (int)m;
        double end = t + s->msg_cost[l * (size_t)s->per_msg + m - 1];
        for (size_t j = 0; j < m; j++)
            out->xfers[out->nxfers++] =
                (tacos_xfer_t){t, end, s->carrying[l * (size_t)s->per_msg + j], src, d, 0};
        events_push(&s->ev, l * (size_t)s->per_msg + m - 1, end);
    }
}


/* Cost classes: distinct link costs, and a ring buffer per class as large as
 * its number of links (a link has at most one transfer pending). */
static int events_init(events_t *e, const double *cost, size_t nlinks)
{
    size_t m = nlinks ? nlinks : 1;
    e->cost = malloc(m * sizeof *e->cost);
    e->cls = malloc(m * sizeof *e->cls);
    e->start = calloc(m + 1, sizeof *e->start);
    e->head = malloc(m * sizeof *e->head);
    e->len = calloc(m, sizeof *e->len);
    e->slot_link = malloc(m * sizeof *e->slot_link);
    e->slot_end = malloc(m * sizeof *e->slot_end);
    e->heap = malloc(m * sizeof *e->heap);
    if (!e->cost || !e->cls || !e->start || !e->head || !e->len || !e->slot_link ||
        !e->slot_end || !e->heap)
        return TACOS_ERR_NOMEM;
    memcpy(e->cost, cost, nlinks * sizeof *cost);
    size_t k = e->nclasses = distinct(e->cost, nlinks);
    for (size_t l = 0; l < nlinks; l++) {
        e->cls[l] = find_cost(e->cost, k, cost[l]);
        e->start[e->cls[l] + 1]++;
    }
    for (size_t q = 0; q < k; q++) {
        e->start[q + 1] += e->start[q];
        e->head[q] = e->start[q];
    }
    return TACOS_OK;
}

static void events_free(events_t *e)
{
    free(e->cost);
    free(e->cls);
    free(e->start);
    free(e->head);
    free(e->len);
    free(e->slot_link);
    free(e->slot_end);
    free(e->heap);
}

static void ten_free(ten_t *s)
{
    free(s->have);
    free(s->need);
    free(s->need_count);
    free(s->copies);
    free(s->cost);
    free(s->in_order);
    free(s->carrying);
    free(s->ncarrying);
    free(s->msg_cap);
    free(s->msg_cost);
    free(s->band);
    for (int b = 1; b < 8; b++) {
        free(s->gcomp[b]);
        free(s->ghas[b]);
    }
    free(s->link_dirty);
    free(s->dst_dirty);
    free(s->dirty_dsts);
    free(s->cand);
    free(s->link_offer);
    events_free(&s->ev);
}

/* Insertion sort by (cost, link index): in-degrees are small, and this keeps
 * the order independent of the C library's qsort. */
static void sort_in_links(size_t *v, size_t n, const double *cost)
{
    for (size_t i = 1; i < n; i++) {
        size_t x = v[i], j = i;
        for (; j > 0 && (cost[v[j - 1]] > cost[x] || (cost[v[j - 1]] == cost[x] && v[j - 1] > x));
             j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Lands every transfer ending at the next event time; returns that time. */
static double land_next(ten_t *s, size_t *remaining)
{
    const tacos_topo_t *topo = s->topo;
    double t = events_first(&s->ev), horizon = t + TACOS_TIME_EPS(t);
    while (s->ev.pending && events_first(&s->ev) <= horizon) {
        if (events_first(&s->ev) > t)
            t = events_first(&s->ev);
        size_t l = events_pop(&s->ev) / (size_t)s->per_msg;
        int dst = topo->links[l].dst;
        mark_link(s, l);
        for (int j = 0; j < s->ncarrying[l]; j++) {
            size_t c = (size_t)s->carrying[l * (size_t)s->per_msg + (size_t)j];
            tacos_bit_set(s->have + (size_t)dst * s->words, c);
            (*remaining)--;
            for (size_t k = topo->out_off[dst]; k < topo->out_off[dst + 1]; k++) {
                size_t o = topo->out_links[k];
                int x = topo->links[o].dst;
                if (tacos_bit_get(s->need + (size_t)x * s->words, c)) {
                    s->link_offer[o]++;
                    if (!s->ncarrying[o])
                        mark_link(s, o);
                }
            }
        }
        s->ncarrying[l] = 0;
    }
    return t;
}

int tacos_ten_spread(const tacos_topo_t *topo, int nchunks, double chunk_bytes, int per_msg,
                     const uint64_t *pre, const uint64_t *post, uint64_t seed, double give_up_us,
                     tacos_sched_t *out, double *time_us)
{
    ten_t s = {0};
    size_t n = (size_t)topo->npus, m = topo->nlinks ? topo->nlinks : 1;
    s.topo = topo;
    s.words = TACOS_WORDS(nchunks);
    s.have = malloc(n * s.words * sizeof *s.have);
    s.need = malloc(n * s.words * sizeof *s.need);
    s.post = post;
    s.need_count = calloc(n, sizeof *s.need_count);
    s.copies = calloc((size_t)nchunks, sizeof *s.copies);
    s.cost = malloc(m * sizeof *s.cost);
    s.in_order = malloc(m * sizeof *s.in_order);
    s.ncarrying = calloc(m, sizeof *s.ncarrying);
    s.msg_cap = malloc(m * sizeof *s.msg_cap);
    s.link_dirty = calloc(m, 1);
    s.dst_dirty = calloc(n, 1);
    s.dirty_dsts = malloc(n * sizeof *s.dirty_dsts);
    s.cand = malloc(m * sizeof *s.cand);
    s.link_offer = malloc(m * sizeof *s.link_offer);
    int rc = TACOS_OK;
    if (!s.have || !s.need || !s.need_count || !s.copies || !s.cost || !s.in_order ||
        !s.ncarrying || !s.msg_cap || !s.link_dirty || !s.dst_dirty || !s.dirty_dsts || !s.cand ||
        !s.link_offer)
        goto nomem;
    int most = per_msg > 1 ? per_msg : 1;
    s.per_msg = 1; /* then the largest cap any link has */
    for (size_t l = 0; l < topo->nlinks; l++) {
        s.cost[l] = tacos_link_cost_us(&topo->links[l], chunk_bytes);
        /* as many chunks as take no longer than the latency to send: a
         * message's bytes cost at most what it saves (longer ones hold the
         * link while chunks that are ready wait behind them) */
        double cap = topo->links[l].lat_us / (s.cost[l] - topo->links[l].lat_us);
        s.msg_cap[l] = cap >= most ? most : cap >= 1 ? (int)cap : 1;
        s.per_msg = s.msg_cap[l] > s.per_msg ? s.msg_cap[l] : s.per_msg;
    }
    size_t mm = m * (size_t)s.per_msg; /* (link, chunks in its message) */
    s.carrying = malloc(mm * sizeof *s.carrying);
    s.msg_cost = malloc(mm * sizeof *s.msg_cost);
    if (!s.carrying || !s.msg_cost)
        goto nomem;
    for (size_t l = 0; l < topo->nlinks; l++)
        for (int j = 0; j < s.per_msg; j++)
            s.msg_cost[l * (size_t)s.per_msg + (size_t)j] =
                tacos_link_cost_us(&topo->links[l], (j + 1) * chunk_bytes);
    if (events_init(&s.ev, s.msg_cost, topo->nlinks * (size_t)s.per_msg) || groups_init(&s))
        goto nomem;
    tacos_rng_seed(&s.rng, seed);
    memcpy(s.have, pre, n * s.words * sizeof *s.have);
    size_t remaining = 0;
    for (size_t v = 0; v < n; v++) {
        for (size_t w = 0; w < s.words; w++) {
            uint64_t x = post[v * s.words + w] & ~pre[v * s.words + w];
            s.need[v * s.words + w] = x;
            s.need_count[v] += (size_t)tacos_popcount64(x);
            for (uint64_t h = pre[v * s.words + w]; h; h &= h - 1) {
                size_t c = w * 64 + (size_t)tacos_ctz64(h);
                s.copies[c]++;
                if (s.nbands > 1)
                    groups_add(&s, (int)v, c);
            }
        }
        remaining += s.need_count[v];
    }
    if ((rc = tacos_sched_reserve(out, out->nxfers + remaining)))
        goto out;
    memcpy(s.in_order, topo->in_links, topo->nlinks * sizeof *s.in_order);
    for (size_t v = 0; v < n; v++)
        sort_in_links(s.in_order + topo->in_off[v], topo->in_off[v + 1] - topo->in_off[v], s.cost);
    for (size_t l = 0; l < topo->nlinks; l++) {
        s.link_offer[l] = count_offer(&s, topo->links[l].src, topo->links[l].dst);
        mark_link(&s, l);
    }

    double t = 0;
    while (remaining) {
        for (size_t i = 0; i < s.ndirty; i++) {
            s.dst_dirty[s.dirty_dsts[i]] = 0;
            match_destination(&s, s.dirty_dsts[i], t, out);
        }
        s.ndirty = 0;
        if (!s.ev.pending) {
            size_t v = 0;
            while (!s.need_count[v])
                v++;
            rc = tacos_error(TACOS_ERR_TOPO,
                             "topology %s: NPU %zu can never receive some chunks it needs: no "
                             "path from the NPUs holding them",
                             topo->name, v);
            goto out;
        }
        if ((t = land_next(&s, &remaining)) > give_up_us) {
            rc = TACOS_SLOWER;
            goto out;
        }
    }
    *time_us = t;
    goto out;
nomem:
    rc = tacos_error(TACOS_ERR_NOMEM, "out of memory synthesizing on %s (%zu NPUs, %d chunks)",
                     topo->name, n, nchunks);
out:
    ten_free(&s);
    return rc;
}
