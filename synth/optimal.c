/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The throughput-optimal bound (the cut bound that ForestColl, Zhao et al.
 * 2024, shows spanning-tree packings reach) by max-flow:
 *
 *   All-Gather of m bytes per NPU: T* = max over sets S of NPUs (S lacking
 *   what is held outside it) of  m |V \ S| / B(S),  B(S) = bandwidth into S.
 *
 * T is enough iff for every NPU v, the max-flow from a source feeding every
 * NPU m bytes, over links of capacity T x bandwidth, into v is >= N m (a cut
 * below that is a set S around v with m|S| + T B(S) < N m).  Found exactly
 * by Dinkelbach's iteration: start from the best per-NPU ingress ratio;
 * while some v has a cut below N m, move T to the largest ratio among those
 * cuts' sets (each a real S, so T never passes T*); when none has, T = T*.
 * Reduce-Scatter: the same on the transposed links.  Broadcast of B bytes
 * from r: B / min over v of max-flow(r -> v) (Edmonds); Reduce: transposed.
 *
 * On a vertex-transitive shape (tacos_topo_transitive: a generated product
 * of rings, fully-connected groups and unwound switches, its links the
 * same in every place) every NPU's max-flow is NPU 0's, and one max-flow
 * per step stands for N (at 4,096 NPUs, seconds instead of a quarter of an
 * hour).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    int to;
    double cap;
} arc_t;

/* A flow network in CSR form: arcs come in pairs (a, a ^ 1). */
typedef struct {
    int n;
    size_t narcs;
    arc_t *arc;
    size_t *first, *next; /* adjacency lists */
    double *base;         /* capacities to restore */
    int *level, *queue;
    size_t *it;
} net_t;

static void add_arc(net_t *g, int u, int v, double cap)
{
    size_t a = g->narcs;
    g->arc[a] = (arc_t){v, cap};
    g->arc[a + 1] = (arc_t){u, 0};
    g->next[a] = g->first[u], g->first[u] = a;
    g->next[a + 1] = g->first[v], g->first[v] = a + 1;
    g->narcs += 2;
}

static int bfs(net_t *g, int s, int t, double eps)
{
    for (int i = 0; i < g->n; i++)
        g->level[i] = -1;
    int head = 0, tail = 0;
    g->level[s] = 0;
    g->queue[tail++] = s;
    while (head < tail) {
        int u = g->queue[head++];
        for (size_t a = g->first[u]; a != SIZE_MAX; a = g->next[a])
            if (g->arc[a].cap > eps && g->level[g->arc[a].to] < 0) {
                g->level[g->arc[a].to] = g->level[u] + 1;
                g->queue[tail++] = g->arc[a].to;
            }
    }
    return g->level[t] >= 0;
}

static double push(net_t *g, int u, int t, double f, double eps)
{
    if (u == t)
        return f;
    for (size_t *a = &g->it[u]; *a != SIZE_MAX; *a = g->next[*a]) {
        arc_t *e = &g->arc[*a];
        if (e->cap > eps && g->level[e->to] == g->level[u] + 1) {
            double d = push(g, e->to, t, f < e->cap ? f : e->cap, eps);
            if (d > 0) {
                e->cap -= d;
                g->arc[*a ^ 1].cap += d;
                return d;
            }
        }
    }
    return 0;
}

/* Dinic's max-flow from s to t on the current capacities. */
static double maxflow(net_t *g, int s, int t, double eps)
{
    double flow = 0;
    while (bfs(g, s, t, eps)) {
        memcpy(g->it, g->first, (size_t)g->n * sizeof *g->it);
        double f;
        while ((f = push(g, s, t, INFINITY, eps)) > 0)
            flow += f;
    }
    return flow;
}

static void net_free(net_t *g)
{
    free(g->arc);
    free(g->first);
    free(g->next);
    free(g->base);
    free(g->level);
    free(g->queue);
    free(g->it);
}

/* The NPUs' links (transposed: reversed) and, with `source`, an extra node
 * N feeding every NPU. */
static int net_build(net_t *g, const tacos_topo_t *t, int transposed, int source)
{
    int n = t->npus + (source ? 1 : 0);
    size_t arcs = 2 * (t->nlinks + (source ? (size_t)t->npus : 0));
    *g = (net_t){n, 0, malloc((arcs + 1) * sizeof(arc_t)), malloc((size_t)n * sizeof(size_t)),
                 malloc((arcs + 1) * sizeof(size_t)), malloc((arcs + 1) * sizeof(double)),
                 malloc((size_t)n * sizeof(int)), malloc((size_t)n * sizeof(int)),
                 malloc((size_t)n * sizeof(size_t))};
    if (!g->arc || !g->first || !g->next || !g->base || !g->level || !g->queue || !g->it) {
        net_free(g);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for the optimal bound on %s",
                           t->name);
    }
    for (int i = 0; i < n; i++)
        g->first[i] = SIZE_MAX;
    for (size_t l = 0; l < t->nlinks; l++) {
        const tacos_link_t *k = &t->links[l];
        add_arc(g, transposed ? k->dst : k->src, transposed ? k->src : k->dst,
                k->bw_gbps * 1e3); /* bytes per us */
    }
    for (int v = 0; source && v < t->npus; v++)
        add_arc(g, t->npus, v, 0);
    return TACOS_OK;
}

/* Capacities for time T: links T x bandwidth, the source's arcs m. */
static void set_caps(net_t *g, size_t nlinks, double T, double m)
{
    for (size_t a = 0; a < g->narcs; a += 2) {
        g->arc[a].cap = a / 2 < nlinks ? T * g->base[a] : m;
        g->arc[a + 1].cap = 0;
    }
}

/* T* of All-Gather (m bytes per NPU) on g (built with a source), checking
 * the first `sinks` NPUs (all of them, or NPU 0 where t is transitive). */
static double allgather_time(net_t *g, int npus, int sinks, size_t nlinks, double m)
{
    for (size_t a = 0; a < g->narcs; a += 2)
        g->base[a] = g->arc[a].cap;
    char *side = malloc((size_t)g->n);
    if (!side)
        return -1;
    double T = 0;
    for (int iter = 0; iter < 1000; iter++) {
        double next = T;
        for (int v = 0; v < sinks; v++) {
            set_caps(g, nlinks, T, m);
            double need = (double)npus * m, eps = need * 1e-12;
            if (maxflow(g, npus, v, eps) >= need * (1 - 1e-9))
                continue;
            /* S: what the residual network cannot reach from the source */
            memset(side, 0, (size_t)g->n);
            for (int i = 0; i < g->n; i++)
                side[i] = g->level[i] >= 0;
            double inflow = 0;
            int inside = 0;
            for (int u = 0; u < npus; u++) {
                inside += !side[u];
                for (size_t a = g->first[u]; a != SIZE_MAX; a = g->next[a])
                    if (!(a & 1) && a / 2 < nlinks && side[u] && !side[g->arc[a].to])
                        inflow += g->base[a];
            }
            double ratio = inflow > 0 ? m * (npus - inside) / inflow : INFINITY;
            if (ratio > next)
                next = ratio;
        }
        if (!(next > T * (1 + 1e-12)))
            break;
        T = next;
    }
    free(side);
    return T;
}

/* B / min over v != root of max-flow(root -> v), bandwidths as capacities. */
static double broadcast_time(net_t *g, size_t nlinks, int npus, int root, double bytes)
{
    for (size_t a = 0; a < g->narcs; a += 2)
        g->base[a] = g->arc[a].cap;
    double worst = INFINITY;
    for (int v = 0; v < npus; v++) {
        if (v == root)
            continue;
        set_caps(g, nlinks, 1, 0);
        double f = maxflow(g, root, v, 1e-12);
        if (f < worst)
            worst = f;
    }
    return npus < 2 ? 0 : worst > 0 ? bytes / worst : INFINITY;
}

/* One phase: All-Gather or Broadcast on the links (transposed: their
 * reductions), at least the latency-aware lower bound of k = 1. */
static int phase(const tacos_topo_t *t, tacos_coll_t gather, int transposed, int root,
                 uint64_t size, double *out)
{
    net_t g;
    int source = gather == TACOS_ALLGATHER, rc = net_build(&g, t, transposed, source);
    if (rc)
        return rc;
    int sinks = source && tacos_topo_transitive(t) ? 1 : t->npus;
    double T = source ? allgather_time(&g, t->npus, sinks, t->nlinks, (double)size / t->npus)
                      : broadcast_time(&g, t->nlinks, t->npus, root, (double)size);
    net_free(&g);
    if (T < 0)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for the optimal bound on %s", t->name);
    if (isinf(T))
        return tacos_error(TACOS_ERR_TOPO, "optimal bound: %s is not connected", t->name);
    /* the latency term: the lower bound of a message of 1 byte, i.e. the
     * latency diameter, which no chunk count goes below */
    double lower;
    tacos_coll_t coll = transposed ? (source ? TACOS_REDUCE_SCATTER : TACOS_REDUCE) : gather;
    if ((rc = tacos_lower_bound(t, coll, root, 1, 1, &lower)))
        return rc;
    *out = T > lower ? T : lower;
    return TACOS_OK;
}

int tacos_optimal_bound(const tacos_topo_t *t, tacos_coll_t coll, int root, uint64_t size_bytes,
                        double *out_us)
{
    if (!t->in_off || size_bytes < 1 || root < 0 || root >= t->npus)
        return tacos_error(TACOS_ERR_ARG, "optimal bound: needs a finalized topology, size >= 1 "
                                          "and a valid root");
    double fwd = 0, rev = 0;
    if (coll == TACOS_ALLTOALL) /* the cut bound over candidate cuts, latency α per hop */
        return tacos_alltoall_bound(t, size_bytes, 0, out_us);
    if (coll == TACOS_GATHER || coll == TACOS_SCATTER) /* the root's cut, latency α per hop */
        return tacos_rooted_route_bound(t, coll, root, size_bytes, 0, out_us);
    int rc = TACOS_OK, rooted = coll == TACOS_BROADCAST || coll == TACOS_REDUCE;
    tacos_coll_t gather = rooted ? TACOS_BROADCAST : TACOS_ALLGATHER;
    if (coll == TACOS_ALLGATHER || coll == TACOS_BROADCAST || coll == TACOS_ALLREDUCE)
        rc = phase(t, gather, 0, root, size_bytes, &fwd);
    if (!rc && (coll == TACOS_REDUCE_SCATTER || coll == TACOS_REDUCE || coll == TACOS_ALLREDUCE))
        rc = phase(t, gather, 1, root, size_bytes, &rev);
    if (!rc)
        *out_us = fwd + rev;
    return rc;
}
