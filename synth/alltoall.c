/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All-to-All: chunk (i, j) starts at NPU i and must reach NPU j only, so
 * unlike All-Gather nothing is spread: chunks are routed.  Gather and
 * Scatter are the same routing with one column or one row of those demands
 * (block r from NPU r to the root, or from the root to NPU r).  The greedy
 * is the TEN matching with per-destination demands:
 *
 * - dist[v][j] is the shortest time from v to j for one chunk (link time
 *   α + chunk/β per hop);
 * - at each event time, every free link v->d takes, among the chunks
 *   waiting at v, one for which the link is on a shortest path to its
 *   destination (dist[d][j] + link time = dist[v][j]): the nearest first
 *   (what is almost there leaves the queues) and, in a second run, the
 *   farthest first (the chunk with the longest way to go), the faster kept.
 *   Neither wins everywhere: for All-to-All at 1 MiB farthest-first took
 *   line:4 from 28.7 to 23.0 us, mesh2d:2x3 from 20.0 to 16.0, torus2d:3x3
 *   from 14.2 to 11.3 (nearest-first was up to 12% faster on heterogeneous
 *   shapes); for Scatter nearest-first alone was up to 1.7x slower on five
 *   shapes of bench_alltoall.sh, farthest-first alone 1.1x slower than
 *   direct on fs:8x8 with fully unwound switches;
 * - a link with no such chunk takes a detour chunk when that still brings
 *   it closer and lands it no later than the free-time of its best shortest
 *   path link would: links never idle while they can help, and a detour
 *   never delays a chunk against the path it would otherwise wait for;
 * - a chunk that arrives at an NPU other than its destination waits there
 *   to be forwarded (one copy per chunk: what is forwarded is moved);
 * - a third run per seed fixes every chunk's path first (balanced_paths:
 *   equally short ways share the load) and each link sends its chunks
 *   farthest first: with one seed the ties above sent neighbours' far
 *   blocks on a ring of 4 the same way, 3 link times where this takes the
 *   optimum, 2;
 * - one more run sends every chunk along the simulator's route for it
 *   (route.c), each link first come first served: with one chunk per
 *   rank direct exchange's schedule, kept where the greedy's is slower
 *   (2D switch 8x4 fully unwound at 1 MiB: 4 %; Gather on ring4 with 2
 *   ranks per host: 17 %).
 *
 * The bound is the cut bound: bytes that must cross a set's edge / the
 * bandwidth across it, over singletons, breadth-first prefixes and the
 * groups joined by fast links (a lower bound: not every cut is tried);
 * and the load bound: each byte crosses at least its pair's fewest hops.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Shortest times to every NPU from every NPU: d[v * n + j] (INFINITY when
 * j is unreachable from v), by Dijkstra on the transposed links from j. */
static int all_dist(const tacos_topo_t *t, const double *lcost, double *d)
{
    int n = t->npus;
    tacos_heap_t h = {0};
    for (int j = 0; j < n; j++) {
        for (int v = 0; v < n; v++)
            d[(size_t)v * n + j] = INFINITY;
        d[(size_t)j * n + j] = 0;
        h.n = 0;
        if (tacos_heap_push(&h, (tacos_heap_item_t){0, 0, (size_t)j}))
            goto nomem;
        while (h.n) {
            tacos_heap_item_t it = tacos_heap_pop(&h);
            if (it.k1 > d[it.id * n + j])
                continue;
            for (size_t k = t->in_off[it.id]; k < t->in_off[it.id + 1]; k++) {
                size_t l = t->in_links[k];
                size_t u = (size_t)t->links[l].src;
                if (it.k1 + lcost[l] < d[u * n + j]) {
                    d[u * n + j] = it.k1 + lcost[l];
                    if (tacos_heap_push(&h, (tacos_heap_item_t){d[u * n + j], 0, u}))
                        goto nomem;
                }
            }
        }
    }
    free(h.v);
    return TACOS_OK;
nomem:
    free(h.v);
    return tacos_error(TACOS_ERR_NOMEM, "out of memory for shortest paths on %s", t->name);
}

typedef struct {
    const tacos_topo_t *t;
    tacos_coll_t coll;
    int n, k, root;
    int farthest; /* which waiting chunk a link takes first: the farthest, else the nearest */
    const size_t *next; /* not NULL: every chunk on the simulator's route, first come first */
    const size_t *path; /* not NULL: chunk c's links from path[at[c]] on, farthest first */
    size_t *at;
    const double *lcost, *dist;
    double *free_at;  /* per link */
    int **wait;       /* per NPU: chunks waiting there to move on */
    size_t *nwait, *capwait;
} route_t;

/* Where chunk c must end. */
static int dest_of(const route_t *r, int c)
{
    int from, to;
    tacos_chunk_route(r->coll, r->n, r->k, r->root, c, &from, &to);
    return to;
}

static int near(double a, double b) { return fabs(a - b) <= TACOS_TIME_EPS(a > b ? a : b); }

/* When chunk c at v would land at its destination over its best shortest
 * path link, as the links stand at time t. */
static double best_path(const route_t *r, int v, int j, double t)
{
    double best = INFINITY;
    const tacos_topo_t *T = r->t;
    for (size_t k = T->out_off[v]; k < T->out_off[v + 1]; k++) {
        size_t l = T->out_links[k];
        int d = T->links[l].dst;
        double via = r->lcost[l] + r->dist[(size_t)d * r->n + j];
        if (!near(via, r->dist[(size_t)v * r->n + j]))
            continue;
        double land = (r->free_at[l] > t ? r->free_at[l] : t) + via;
        if (land < best)
            best = land;
    }
    return best;
}

/* The chunk free link l (v->d) takes at time t: its index in wait[v], or -1. */
static long pick(const route_t *r, size_t l, double t)
{
    int v = r->t->links[l].src, d = r->t->links[l].dst, n = r->n;
    long best = -1;
    double best_left = 0;
    if (r->next) { /* along the routes: the first there for l */
        for (size_t i = 0; i < r->nwait[v]; i++)
            if (r->next[(size_t)v * n + dest_of(r, r->wait[v][i])] == l)
                return (long)i;
        return -1;
    }
    /* on a shortest path (its own, if chosen): the nearest or the farthest */
    for (size_t i = 0; i < r->nwait[v]; i++) {
        int c = r->wait[v][i], j = dest_of(r, c);
        double left = r->dist[(size_t)v * n + j];
        int on = r->path ? r->path[r->at[c]] == l
                         : near(r->lcost[l] + r->dist[(size_t)d * n + j], left);
        if (on &&
            (best < 0 || (r->farthest ? left > best_left : left < best_left)))
            best = (long)i, best_left = left;
    }
    if (best >= 0 || r->path)
        return best;
    for (size_t i = 0; i < r->nwait[v]; i++) { /* a detour that costs nothing */
        int j = dest_of(r, r->wait[v][i]);
        double there = r->dist[(size_t)d * n + j];
        if (there < r->dist[(size_t)v * n + j] && !near(there, r->dist[(size_t)v * n + j]) &&
            t + r->lcost[l] + there <= best_path(r, v, j, t) + TACOS_TIME_EPS(t))
            return (long)i;
    }
    return -1;
}

typedef struct {
    double dist;
    uint64_t tie; /* equally far: the smaller first */
    int c;
} far_t;

static int farther_first(const void *a, const void *b)
{
    const far_t *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? 1 : -1;
    return (x->tie > y->tie) - (x->tie < y->tie);
}

/* Chunk paths balanced (below): per chunk, what its best path from u to j
 * has on its busiest link (best[u]) and the path's first link (via[u]),
 * over the shortest paths; seen[u] == stamp once known for this chunk. */
typedef struct {
    const double *load;
    double *best;
    size_t *via;
    int *seen, stamp;
} busy_t;

static double least_busy(const route_t *r, busy_t *b, int u, int j)
{
    const tacos_topo_t *T = r->t;
    int n = r->n;
    if (u == j)
        return 0;
    if (b->seen[u] == b->stamp)
        return b->best[u];
    b->seen[u] = b->stamp;
    b->best[u] = INFINITY;
    for (size_t e = T->out_off[u]; e < T->out_off[u + 1]; e++) {
        size_t l = T->out_links[e];
        int d = T->links[l].dst;
        if (!near(r->lcost[l] + r->dist[(size_t)d * n + j], r->dist[(size_t)u * n + j]))
            continue;
        double m = fmax(b->load[l] + r->lcost[l], least_busy(r, b, d, j));
        if (m < b->best[u] && (b->best[u] == INFINITY || !near(m, b->best[u])))
            b->best[u] = m, b->via[u] = l;
    }
    return b->best[u];
}

/* Every chunk's path, chosen before a run so that equally short ways share
 * the load: the farthest chunks first (equally far ones by index, or in an
 * order drawn from `rng`), each takes, of its shortest paths, the one
 * whose busiest link (in link time, the chunks given to it so far and this
 * one) is least busy.  Chunk c's links: (*path)[at[c] ..]. */
static int balanced_paths(const route_t *r, tacos_rng_t *rng, int nchunks, size_t **path,
                          size_t *at)
{
    const tacos_topo_t *T = r->t;
    int n = r->n, rc = TACOS_OK;
    size_t cap = 0, used = 0;
    far_t *chunk = malloc(((size_t)nchunks + 1) * sizeof *chunk);
    double *load = calloc(T->nlinks + 1, sizeof *load);
    busy_t b = {load, malloc((size_t)n * sizeof *b.best), malloc((size_t)n * sizeof *b.via),
                calloc((size_t)n, sizeof *b.seen), 0};
    *path = NULL;
    if (!chunk || !load || !b.best || !b.via || !b.seen) {
        rc = TACOS_ERR_NOMEM;
        goto out;
    }
    for (int i = 0; i < nchunks; i++) { /* farthest first, then by index */
        int from, to;
        tacos_chunk_route(r->coll, n, r->k, r->root, i, &from, &to);
        chunk[i] = (far_t){r->dist[(size_t)from * n + to], rng ? tacos_rng_next(rng) : (uint64_t)i, i};
    }
    qsort(chunk, (size_t)nchunks, sizeof *chunk, farther_first);
    for (int i = 0; i < nchunks && !rc; i++) {
        int c = chunk[i].c, v, j;
        tacos_chunk_route(r->coll, n, r->k, r->root, c, &v, &j);
        b.stamp++;
        at[c] = used;
        for (; v != j && least_busy(r, &b, v, j) < INFINITY; v = T->links[b.via[v]].dst) {
            size_t *g = tacos_grow(*path, &cap, used, sizeof **path, 64);
            if (!g) {
                rc = TACOS_ERR_NOMEM;
                break;
            }
            *path = g;
            g[used++] = b.via[v];
            load[b.via[v]] += r->lcost[b.via[v]];
        }
    }
out:
    free(chunk);
    free(load);
    free(b.best);
    free(b.via);
    free(b.seen);
    return rc;
}

static int push_wait(route_t *r, int v, int c)
{
    int *w = tacos_grow(r->wait[v], &r->capwait[v], r->nwait[v], sizeof *w, 16);
    if (!w)
        return TACOS_ERR_NOMEM;
    r->wait[v] = w;
    w[r->nwait[v]++] = c;
    return TACOS_OK;
}

/* One greedy run into `out` (empty, allocated for the collective). */
static int route_once(route_t *r, uint64_t seed, tacos_sched_t *out)
{
    const tacos_topo_t *t = r->t;
    int n = r->n, rc = TACOS_OK;
    size_t total = 0, landed = 0;
    size_t *order = malloc((t->nlinks + 1) * sizeof *order);
    tacos_heap_t ev = {0}; /* arrivals: (time, transfer) */
    tacos_rng_t rng;
    tacos_rng_seed(&rng, seed);
    if (!order)
        return TACOS_ERR_NOMEM;
    for (size_t l = 0; l < t->nlinks; l++)
        r->free_at[l] = 0, order[l] = l;
    for (int v = 0; v < n; v++)
        r->nwait[v] = 0;
    for (int c = 0; c < out->nchunks && !rc; c++) {
        int from, to;
        tacos_chunk_route(r->coll, n, r->k, r->root, c, &from, &to);
        if (from != to) {
            rc = push_wait(r, from, c);
            total++;
        }
    }
    for (int v = 0; v < n && !r->next; v++) {
        for (size_t i = r->nwait[v]; i > 1 && !rc; i--) { /* ties at random */
            size_t x = (size_t)tacos_rng_below(&rng, i);
            int c = r->wait[v][i - 1];
            r->wait[v][i - 1] = r->wait[v][x], r->wait[v][x] = c;
        }
    }
    double now = 0;
    while (!rc && landed < total) {
        for (size_t i = t->nlinks; i > 1; i--) { /* links in random order */
            size_t x = (size_t)tacos_rng_below(&rng, i), y = order[i - 1];
            order[i - 1] = order[x], order[x] = y;
        }
        for (size_t i = 0; i < t->nlinks && !rc; i++) {
            size_t l = order[i];
            int v = t->links[l].src;
            if (r->free_at[l] > now + TACOS_TIME_EPS(now) || !r->nwait[v])
                continue;
            long w = pick(r, l, now);
            if (w < 0)
                continue;
            int c = r->wait[v][w];
            if (r->path)
                r->at[c]++;
            if (r->next) /* in the order they came */
                memmove(&r->wait[v][w], &r->wait[v][w + 1],
                        (r->nwait[v] - (size_t)w - 1) * sizeof *r->wait[v]);
            else
                r->wait[v][w] = r->wait[v][r->nwait[v] - 1];
            r->nwait[v]--;
            double end = now + r->lcost[l];
            r->free_at[l] = end;
            if ((rc = tacos_sched_reserve(out, out->nxfers + 1)))
                break;
            out->xfers[out->nxfers] = (tacos_xfer_t){now, end, c, v, t->links[l].dst, 0};
            if (tacos_heap_push(&ev, (tacos_heap_item_t){end, (double)out->nxfers, out->nxfers}))
                rc = TACOS_ERR_NOMEM;
            out->nxfers++;
        }
        if (rc)
            break;
        if (!ev.n) { /* nothing moves and chunks are left: unreachable */
            rc = tacos_error(TACOS_ERR_TOPO, "%s on %s: some NPU cannot reach another",
                             tacos_coll_name(r->coll), t->name);
            break;
        }
        double first = ev.v[0].k1;
        while (ev.n && near(ev.v[0].k1, first) && !rc) { /* what lands now (the latest of
                                                          * those: nothing leaves before it lands) */
            const tacos_xfer_t *x = &out->xfers[tacos_heap_pop(&ev).id];
            now = x->end_us > now ? x->end_us : now;
            if (dest_of(r, x->chunk) == x->dst)
                landed++;
            else
                rc = push_wait(r, x->dst, x->chunk);
        }
    }
    out->time_us = 0;
    for (size_t i = 0; i < out->nxfers; i++)
        if (out->xfers[i].end_us > out->time_us)
            out->time_us = out->xfers[i].end_us;
    free(order);
    free(ev.v);
    return rc == TACOS_ERR_NOMEM
               ? tacos_error(rc, "out of memory routing %s on %s", tacos_coll_name(r->coll), t->name)
               : rc;
}

int tacos_alltoall_synthesize(const tacos_topo_t *t, const tacos_synth_opts_t *o,
                              tacos_sched_t **out)
{
    int n = t->npus, rc = TACOS_OK;
    size_t nn = (size_t)n * (size_t)n;
    double chunk = (double)o->size_bytes / ((double)n * o->chunks_per_npu);
    route_t r = {.t = t, .coll = o->coll, .n = n, .k = o->chunks_per_npu, .root = o->root};
    double *lcost = malloc((t->nlinks + 1) * sizeof *lcost), *dist = malloc(nn * sizeof *dist);
    size_t *next = malloc(nn * sizeof *next);
    r.free_at = malloc((t->nlinks + 1) * sizeof *r.free_at);
    r.wait = calloc((size_t)n, sizeof *r.wait);
    r.nwait = calloc((size_t)n, sizeof *r.nwait);
    r.capwait = calloc((size_t)n, sizeof *r.capwait);
    tacos_sched_t *best = NULL, *cur = NULL;
    uint64_t seed = o->seed;
    if (!lcost || !dist || !next || !r.free_at || !r.wait || !r.nwait || !r.capwait) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory routing %s on %s",
                         tacos_coll_name(o->coll), t->name);
        goto out;
    }
    for (size_t l = 0; l < t->nlinks; l++)
        lcost[l] = tacos_link_cost_us(&t->links[l], chunk);
    r.lcost = lcost, r.dist = dist;
    if ((rc = all_dist(t, lcost, dist)))
        goto out;
    /* per seed: farthest first, nearest first, and each chunk along a path
     * chosen to balance the load (the first seed's equally far chunks by
     * index, the others' in random order), the fastest kept */
    for (int trial = 0; trial < o->trials; trial++) {
        uint64_t s = tacos_splitmix64(&seed);
        for (r.farthest = 1; r.farthest >= 0; r.farthest--) {
            if ((rc = tacos_sched_alloc(o->coll, n, o->chunks_per_npu, o->root, o->size_bytes,
                                        NULL, &cur)) ||
                (rc = route_once(&r, s, cur)))
                goto out;
            tacos_sched_keep_faster(&best, &cur);
        }
        tacos_rng_t ties;
        tacos_rng_seed(&ties, s);
        size_t *path = NULL, *at = malloc(((size_t)best->nchunks + 1) * sizeof *at);
        rc = at ? balanced_paths(&r, trial ? &ties : NULL, best->nchunks, &path, at)
                : TACOS_ERR_NOMEM;
        if (rc == TACOS_ERR_NOMEM)
            rc = tacos_error(rc, "out of memory balancing paths of %s on %s",
                             tacos_coll_name(o->coll), t->name);
        if (!rc) {
            r.path = path, r.at = at, r.farthest = 1;
            if (!(rc = tacos_sched_alloc(o->coll, n, o->chunks_per_npu, o->root, o->size_bytes,
                                         NULL, &cur)) &&
                !(rc = route_once(&r, s, cur)))
                tacos_sched_keep_faster(&best, &cur);
            r.path = NULL, r.at = NULL;
        }
        free(path);
        free(at);
        if (rc)
            goto out;
    }
    /* and every chunk along the simulator's route, first come first served:
     * direct exchange's schedule, so that the greedy never loses to it (on
     * the 2D switch 8x4 fully unwound at 1 MiB it was 4 % slower) */
    r.next = next;
    if ((rc = tacos_route_first_hops(t, next)) ||
        (rc = tacos_sched_alloc(o->coll, n, o->chunks_per_npu, o->root, o->size_bytes, NULL,
                                &cur)) ||
        (rc = route_once(&r, 0, cur)))
        goto out;
    tacos_sched_keep_faster(&best, &cur);
    *out = best;
    best = NULL;
out:
    tacos_sched_free(cur);
    tacos_sched_free(best);
    for (int v = 0; r.wait && v < n; v++)
        free(r.wait[v]);
    free(r.wait);
    free(r.nwait);
    free(r.capwait);
    free(r.free_at);
    free(lcost);
    free(dist);
    free(next);
    return rc;
}

/* ---- the cut bound ----------------------------------------------------------- */

/* Union-find root of v. */
static int find(int *up, int v)
{
    while (up[v] != v)
        v = up[v] = up[up[v]];
    return v;
}

/* For each link bandwidth b, each group of NPUs joined by links of at
 * least b (the hosts of a cluster, the boards of a machine): the largest
 * cut(in) with in[v] = 1 inside the group. */
static double over_groups(const tacos_topo_t *t, int *up, char *in,
                          double (*cut)(const tacos_topo_t *, const char *, const void *),
                          const void *arg)
{
    int n = t->npus;
    double best = 0;
    for (size_t lb = 0; lb < t->nlinks; lb++) {
        double b = t->links[lb].bw_gbps;
        int seen = 0;
        for (size_t l = 0; l < lb && !seen; l++)
            seen = t->links[l].bw_gbps == b;
        if (seen)
            continue;
        for (int v = 0; v < n; v++)
            up[v] = v;
        for (size_t l = 0; l < t->nlinks; l++)
            if (t->links[l].bw_gbps >= b)
                up[find(up, t->links[l].src)] = find(up, t->links[l].dst);
        for (int g = 0; g < n; g++) {
            if (find(up, g) != g)
                continue;
            for (int v = 0; v < n; v++)
                in[v] = find(up, v) == g;
            best = fmax(best, cut(t, in, arg));
        }
    }
    return best;
}

/* The time to move what must leave (and enter) the set `in` (in[v] = 1),
 * over the links crossing its edge. */
static double cut_time(const tacos_topo_t *t, const char *in, double block_bytes)
{
    double out_bw = 0, in_bw = 0;
    size_t inside = 0, n = (size_t)t->npus;
    for (size_t v = 0; v < n; v++)
        inside += (size_t)in[v];
    if (!inside || inside == n)
        return 0;
    for (size_t l = 0; l < t->nlinks; l++) {
        int a = in[t->links[l].src], b = in[t->links[l].dst];
        if (a && !b)
            out_bw += t->links[l].bw_gbps;
        else if (!a && b)
            in_bw += t->links[l].bw_gbps;
    }
    double bytes = (double)inside * (double)(n - inside) * block_bytes;
    double bw = out_bw < in_bw ? out_bw : in_bw;
    return bw > 0 ? bytes / (bw * 1e3) : INFINITY;
}

static double all_cut(const tacos_topo_t *t, const char *in, const void *block)
{
    return cut_time(t, in, *(const double *)block);
}

/* What the bounds work with: each link's time for one chunk (lcost), the
 * shortest times between NPUs (dist, all_dist), room for union-find or a
 * breadth-first order (up) and a set of NPUs (in). */
typedef struct {
    double *lcost, *dist;
    int *up;
    char *in;
} bound_space_t;

static int bound_space(const tacos_topo_t *t, double chunk_bytes, const char *what,
                       bound_space_t *b)
{
    size_t n = (size_t)t->npus;
    *b = (bound_space_t){malloc((t->nlinks + 1) * sizeof *b->lcost),
                         malloc(n * n * sizeof *b->dist), malloc(n * sizeof *b->up), malloc(n)};
    if (!b->lcost || !b->dist || !b->up || !b->in)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for the %s bound on %s", what, t->name);
    for (size_t l = 0; l < t->nlinks; l++)
        b->lcost[l] = tacos_link_cost_us(&t->links[l], chunk_bytes);
    return all_dist(t, b->lcost, b->dist);
}

static void bound_space_free(bound_space_t *b)
{
    free(b->lcost);
    free(b->dist);
    free(b->up);
    free(b->in);
}

/* The load bound over link classes: every byte must cross at least its
 * pair's fewest links of a set S (the links of one bandwidth, those of at
 * most that bandwidth: all of them for the largest), so S carries block x
 * the sum of those by time T only if T x S's bandwidth holds it.  Pairs:
 * every pair (root < 0), else each NPU and the root (to it, or from it:
 * scatter).  On fs:8x8 with its switches modelled as rings this is the
 * ring links' load, 1.75x what counting the fewest hops over all links
 * gave.  Any S gives a valid bound: with more than MAX_CLASSES distinct
 * bandwidths (measured ones all differ) only MAX_CLASSES of them, spread
 * over the range and the largest among them, are tried (each costs two
 * shortest-path passes over every pair). */
#define MAX_CLASSES 8

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The bound for S = the links of bandwidth bw (at_most: of at most bw). */
static int set_load_bound(const tacos_topo_t *t, int root, int scatter, double block, double bw,
                          int at_most, bound_space_t *b, double *best)
{
    size_t n = (size_t)t->npus;
    double set_bw = 0, hops = 0;
    for (size_t l = 0; l < t->nlinks; l++) {
        int in = at_most ? t->links[l].bw_gbps <= bw : t->links[l].bw_gbps == bw;
        b->lcost[l] = in;
        set_bw += in ? t->links[l].bw_gbps : 0;
    }
    int rc = all_dist(t, b->lcost, b->dist);
    if (rc)
        return rc;
    for (size_t v = 0; v < n; v++)
        for (size_t j = 0; j < n; j++)
            if (root < 0 || (scatter ? v == (size_t)root : j == (size_t)root))
                hops += b->dist[v * n + j];
    if (set_bw > 0 && hops * block / (set_bw * 1e3) > *best)
        *best = hops * block / (set_bw * 1e3);
    return TACOS_OK;
}

static int class_load_bound(const tacos_topo_t *t, int root, int scatter, double block,
                            bound_space_t *b, double *best)
{
    size_t nb = 0;
    double *bws = malloc((t->nlinks + 1) * sizeof *bws);
    if (!bws)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for the load bound on %s", t->name);
    for (size_t l = 0; l < t->nlinks; l++)
        bws[l] = t->links[l].bw_gbps;
    qsort(bws, t->nlinks, sizeof *bws, by_value);
    for (size_t l = 0; l < t->nlinks; l++) /* distinct, ascending */
        if (!nb || bws[l] != bws[nb - 1])
            bws[nb++] = bws[l];
    size_t tried = nb < MAX_CLASSES ? nb : MAX_CLASSES;
    int rc = TACOS_OK;
    for (size_t c = 1; c <= tried && !rc; c++) {
        size_t i = nb - 1 - (tried - c) * (nb - 1) / (tried > 1 ? tried - 1 : 1);
        rc = set_load_bound(t, root, scatter, block, bws[i], 0, b, best);
        if (!rc && i > 0) /* of at most the smallest: the same set */
            rc = set_load_bound(t, root, scatter, block, bws[i], 1, b, best);
    }
    free(bws);
    return rc;
}

int tacos_alltoall_bound(const tacos_topo_t *t, uint64_t size_bytes, double chunk_bytes,
                         double *out_us)
{
    int n = t->npus;
    size_t nn = (size_t)n * (size_t)n;
    double block = (double)size_bytes / n, best = 0;
    bound_space_t b;
    int rc = bound_space(t, chunk_bytes, "all-to-all", &b);
    double *dist = b.dist;
    int *up = b.up;
    char *in = b.in;
    if (rc)
        goto out;
    for (size_t i = 0; i < nn; i++) /* the latency diameter */
        if (dist[i] > best)
            best = dist[i];
    if ((rc = class_load_bound(t, -1, 0, block, &b, &best)))
        goto out;
    for (int v = 0; v < n; v++) { /* each NPU */
        memset(in, 0, (size_t)n);
        in[v] = 1;
        double c = cut_time(t, in, block);
        if (c > best)
            best = c;
    }
    /* each prefix of a breadth-first order from each NPU (arcs of a ring,
     * slabs of a torus), from NPU 0 only where that would be slow */
    int *bfs = up, roots = (double)n * n * (double)(t->nlinks + 1) > 1e8 ? 1 : n;
    for (int s = 0; s < roots; s++) {
        memset(in, 0, (size_t)n);
        int head = 0, tail = 0;
        bfs[tail++] = s, in[s] = 2;
        while (head < tail) {
            int v = bfs[head++];
            for (size_t k = t->out_off[v]; k < t->out_off[v + 1]; k++) {
                int d = t->links[t->out_links[k]].dst;
                if (!in[d])
                    in[d] = 2, bfs[tail++] = d;
            }
        }
        memset(in, 0, (size_t)n);
        for (int i = 0; i + 1 < tail; i++) {
            in[bfs[i]] = 1;
            double c = cut_time(t, in, block);
            if (c > best)
                best = c;
        }
    }
    best = fmax(best, over_groups(t, up, in, all_cut, &block));
    *out_us = best;
out:
    bound_space_free(&b);
    return rc;
}

/* The time to move what Gather or Scatter must move across the edge of
 * the set `in`: the blocks of the NPUs on the side without the root, over
 * the links from the root's side to the other (Scatter) or back (Gather). */
static double rooted_cut_time(const tacos_topo_t *t, const char *in, int root, int scatter,
                              double block)
{
    size_t inside = 0, n = (size_t)t->npus;
    double bw = 0;
    for (size_t v = 0; v < n; v++)
        inside += (size_t)in[v];
    size_t away = in[root] ? n - inside : inside; /* NPUs not on the root's side */
    if (!away)
        return 0;
    for (size_t l = 0; l < t->nlinks; l++) {
        int from_root_side = in[t->links[l].src] == in[root], to_root_side = in[t->links[l].dst] == in[root];
        if (scatter ? from_root_side && !to_root_side : !from_root_side && to_root_side)
            bw += t->links[l].bw_gbps;
    }
    return bw > 0 ? (double)away * block / (bw * 1e3) : INFINITY;
}

typedef struct {
    int root, scatter;
    double block;
} rooted_cut_t;

static double rooted_cut(const tacos_topo_t *t, const char *in, const void *arg)
{
    const rooted_cut_t *r = arg;
    return rooted_cut_time(t, in, r->root, r->scatter, r->block);
}

int tacos_rooted_route_bound(const tacos_topo_t *t, tacos_coll_t coll, int root,
                             uint64_t size_bytes, double chunk_bytes, double *out_us)
{
    int n = t->npus, scatter = coll == TACOS_SCATTER;
    double block = (double)size_bytes / n, best = 0;
    bound_space_t b;
    int rc = bound_space(t, chunk_bytes, tacos_coll_name(coll), &b);
    const double *dist = b.dist;
    char *in = b.in;
    if (rc)
        goto out;
    for (int v = 0; v < n; v++) { /* the farthest NPU, and each NPU alone */
        best = fmax(best, scatter ? dist[(size_t)root * n + v] : dist[(size_t)v * n + root]);
        memset(in, 0, (size_t)n);
        in[v] = 1;
        best = fmax(best, rooted_cut_time(t, in, root, scatter, block));
    }
    rooted_cut_t edge = {root, scatter, block};
    best = fmax(best, over_groups(t, b.up, in, rooted_cut, &edge));
    rc = class_load_bound(t, root, scatter, block, &b, &best);
    *out_us = best;
out:
    bound_space_free(&b);
    return rc;
}
