/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lower bound on a collective's time over a topology.
 *
 * Ingress: NPU d must receive m chunks; a link of cost c delivers at most
 * floor(T / c) of them by time T, so T >= the m-th smallest value of the
 * multiset { j * c_l : l enters d, j >= 1 }.  On uniform links this is
 * ceil(m / in-degree) * link time; in general it is at least bytes / ingress
 * bandwidth.  Latency: some chunk must travel from a holder to the farthest
 * NPU needing it, paying a full link time per hop (shortest path).
 * The bound is the larger of the two.  Reductions use the transposed
 * topology; All-Reduce adds the Reduce-Scatter and All-Gather bounds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    tacos_heap_t heap;
    double *cost;  /* per in-link of one NPU, then distinct costs */
    size_t *mult;  /* links sharing each distinct cost */
    size_t *steps; /* multiples taken so far per distinct cost */
} scratch_t;

/* m-th smallest of { j * cost[i] : j >= 1 }, equal costs merged. */
static double ingress_time(scratch_t *w, size_t k, size_t m)
{
    if (!m)
        return 0;
    if (!k)
        return INFINITY; /* nothing can arrive */
    qsort(w->cost, k, sizeof *w->cost, cmp_double);
    size_t groups = 0;
    for (size_t i = 0; i < k; i++) {
        if (!i || w->cost[i] != w->cost[groups - 1]) {
            w->cost[groups] = w->cost[i];
            w->mult[groups++] = 0;
        }
        w->mult[groups - 1]++;
    }
    w->heap.n = 0;
    for (size_t g = 0; g < groups; g++) {
        w->steps[g] = 1;
        if (tacos_heap_push(&w->heap, (tacos_heap_item_t){w->cost[g], 0, g}))
            return -1;
    }
    for (size_t got = 0;;) {
        tacos_heap_item_t it = tacos_heap_pop(&w->heap);
        got += w->mult[it.id];
        if (got >= m)
            return it.k1;
        if (tacos_heap_push(&w->heap, (tacos_heap_item_t){(double)++w->steps[it.id] * w->cost[it.id], 0, it.id}))
            return -1;
    }
}

/* Longest shortest path (link time per hop) from any NPU holding a chunk to
 * an NPU needing it, by Dijkstra from each holder (from NPU 0 alone where
 * all hold one and t is transitive: every NPU's farthest is as far).  Link
 * costs (lcost) must depend on the links' latency and bandwidth only. */
static double latency_diameter(const tacos_topo_t *t, const double *lcost, const char *source,
                               double *dist, tacos_heap_t *h)
{
    double worst = 0;
    int holders = t->npus;
    if (!memchr(source, 0, (size_t)t->npus) && tacos_topo_transitive(t))
        holders = 1;
    for (int s = 0; s < holders; s++) {
        if (!source[s])
            continue;
        for (int v = 0; v < t->npus; v++)
            dist[v] = INFINITY;
        dist[s] = 0;
        h->n = 0;
        if (tacos_heap_push(h, (tacos_heap_item_t){0, 0, (size_t)s}))
            return -1;
        while (h->n) {
            tacos_heap_item_t it = tacos_heap_pop(h);
            if (it.k1 > dist[it.id])
                continue;
            for (size_t k = t->out_off[it.id]; k < t->out_off[it.id + 1]; k++) {
                size_t l = t->out_links[k];
                int w = t->links[l].dst;
                if (it.k1 + lcost[l] < dist[w]) {
                    dist[w] = it.k1 + lcost[l];
                    if (tacos_heap_push(h, (tacos_heap_item_t){dist[w], 0, (size_t)w}))
                        return -1;
                }
            }
        }
        for (int v = 0; v < t->npus; v++)
            if (dist[v] > worst)
                worst = dist[v];
    }
    return worst;
}

/* Bound for a gather-like collective (All-Gather, Broadcast) on t. */
static int gather_bound(const tacos_topo_t *t, tacos_coll_t gather, int root, int k,
                        double chunk_bytes, double *out)
{
    size_t n = (size_t)t->npus, m = t->nlinks ? t->nlinks : 1;
    scratch_t w = {{0}, malloc(m * sizeof(double)),
                   malloc(m * sizeof(size_t)), malloc(m * sizeof(size_t))};
    double *lcost = malloc(m * sizeof *lcost), *dist = malloc(n * sizeof *dist);
    char *source = malloc(n);
    int rc = TACOS_OK;
    if (!w.cost || !w.mult || !w.steps || !lcost || !dist || !source)
        goto nomem;
    for (size_t l = 0; l < t->nlinks; l++)
        lcost[l] = tacos_link_cost_us(&t->links[l], chunk_bytes);
    double bound = 0;
    size_t total = (size_t)k * n;
    for (size_t d = 0; d < n; d++) {
        /* chunks d must receive: all but its own (All-Gather) or all but at the root */
        size_t need = gather == TACOS_ALLGATHER ? total - (size_t)k : ((int)d == root ? 0 : total);
        size_t deg = 0;
        for (size_t i = t->in_off[d]; i < t->in_off[d + 1]; i++)
            w.cost[deg++] = lcost[t->in_links[i]];
        double ti = ingress_time(&w, deg, need);
        if (ti < 0)
            goto nomem;
        if (ti > bound)
            bound = ti;
        source[d] = gather == TACOS_ALLGATHER || (int)d == root;
    }
    double lat = latency_diameter(t, lcost, source, dist, &w.heap);
    if (lat < 0)
        goto nomem;
    *out = lat > bound ? lat : bound;
    goto out;
nomem:
    rc = tacos_error(TACOS_ERR_NOMEM, "out of memory computing the lower bound on %s", t->name);
out:
    free(w.heap.v);
    free(w.cost);
    free(w.mult);
    free(w.steps);
    free(lcost);
    free(dist);
    free(source);
    return rc;
}

int tacos_lower_bound(const tacos_topo_t *topo, tacos_coll_t coll, int root, int chunks_per_npu,
                      uint64_t size_bytes, double *out_us)
{
    if (!topo->in_off || chunks_per_npu < 1 || size_bytes < 1 || root < 0 || root >= topo->npus)
        return tacos_error(TACOS_ERR_ARG, "lower bound: needs a finalized topology, chunks per "
                                          "NPU >= 1, size >= 1 and a valid root");
    double chunk = (double)size_bytes / ((double)chunks_per_npu * topo->npus), fwd = 0, rev = 0;
    int rc = TACOS_OK;
    if (coll == TACOS_ALLTOALL)
        return tacos_alltoall_bound(topo, size_bytes, chunk, out_us);
    if (coll == TACOS_GATHER || coll == TACOS_SCATTER)
        return tacos_rooted_route_bound(topo, coll, root, size_bytes, chunk, out_us);
    tacos_coll_t gather = coll == TACOS_BROADCAST || coll == TACOS_REDUCE ? TACOS_BROADCAST
                                                                           : TACOS_ALLGATHER;
    if (coll == TACOS_ALLGATHER || coll == TACOS_BROADCAST || coll == TACOS_ALLREDUCE)
        rc = gather_bound(topo, gather, root, chunks_per_npu, chunk, &fwd);
    if (!rc && coll != TACOS_ALLGATHER && coll != TACOS_BROADCAST) {
        tacos_topo_t *tt;
        if (!(rc = tacos_topo_transpose(topo, &tt))) {
            rc = gather_bound(tt, gather, root, chunks_per_npu, chunk, &rev);
            tacos_topo_free(tt);
        }
    }
    if (!rc)
        *out_us = fwd + rev;
    return rc;
}

int tacos_ideal_bound(const tacos_topo_t *t, tacos_coll_t coll, uint64_t size_bytes,
                      double *out_us)
{
    if (!t->in_off)
        return tacos_error(TACOS_ERR_ARG, "ideal bound: topology %s is not finalized", t->name);
    size_t n = (size_t)t->npus, m = t->nlinks ? t->nlinks : 1;
    if (n == 1) {
        *out_us = 0;
        return TACOS_OK;
    }
    int egress = coll == TACOS_REDUCE_SCATTER || coll == TACOS_REDUCE || coll == TACOS_SCATTER;
    /* every NPU's ingress (egress) carries its share; Gather's and Scatter's
     * only the root's, which may be any: the fastest */
    int any_root = coll == TACOS_GATHER || coll == TACOS_SCATTER;
    double minbw = any_root ? 0 : INFINITY;
    for (size_t v = 0; v < n; v++) {
        double bw = 0;
        const size_t *off = egress ? t->out_off : t->in_off, *adj = egress ? t->out_links : t->in_links;
        for (size_t k = off[v]; k < off[v + 1]; k++)
            bw += t->links[adj[k]].bw_gbps;
        if (any_root ? bw > minbw : bw < minbw)
            minbw = bw;
    }
    double share = coll == TACOS_ALLREDUCE ? 2.0 * (double)(n - 1) / (double)n
                   : coll == TACOS_BROADCAST || coll == TACOS_REDUCE ? 1.0
                                                                      : (double)(n - 1) / (double)n;
    double *lat = malloc(m * sizeof *lat), *dist = malloc(n * sizeof *dist);
    char *source = malloc(n);
    tacos_heap_t h = {0};
    int rc = TACOS_OK;
    if (!lat || !dist || !source) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory computing the ideal bound on %s", t->name);
    } else {
        for (size_t l = 0; l < t->nlinks; l++)
            lat[l] = t->links[l].lat_us;
        memset(source, 1, n);
        double diameter = latency_diameter(t, lat, source, dist, &h);
        if (diameter < 0)
            rc = tacos_error(TACOS_ERR_NOMEM, "out of memory computing the ideal bound on %s",
                             t->name);
        else
            *out_us = (double)size_bytes * share / (minbw * 1e3) + diameter;
    }
    free(lat);
    free(dist);
    free(source);
    free(h.v);
    return rc;
}

double tacos_latency_share(const tacos_topo_t *topo, int chunks_per_npu, uint64_t size_bytes)
{
    double chunk = (double)size_bytes / ((double)topo->npus * chunks_per_npu), share = 0;
    for (size_t i = 0; i < topo->nlinks; i++) {
        const tacos_link_t *l = &topo->links[i];
        double s = l->lat_us / tacos_link_cost_us(l, chunk);
        share = s > share ? s : share;
    }
    return share;
}
