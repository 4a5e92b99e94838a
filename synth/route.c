/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fewest-hop routes, as the simulator sends a message between NPUs that are
 * not neighbours (dimension order on generated meshes and tori, the first
 * such link otherwise), and the first hop of every route, along which the
 * All-to-All router builds direct exchange's schedule as a candidate.
 */
#include <stdlib.h>

#include "internal.h"

int tacos_router_init(tacos_router_t *r, const tacos_topo_t *t)
{
    r->net = t;
    r->dist = calloc((size_t)t->npus, sizeof *r->dist);
    r->queue = malloc((size_t)t->npus * sizeof *r->queue);
    if (r->dist && r->queue)
        return TACOS_OK;
    tacos_router_free(r);
    return TACOS_ERR_NOMEM;
}

void tacos_router_free(tacos_router_t *r)
{
    for (int v = 0; r->dist && v < r->net->npus; v++)
        free(r->dist[v]);
    free(r->dist);
    free(r->queue);
    r->dist = NULL, r->queue = NULL;
}

/* Dimension a link moves along in a generated shape (lower goes first). */
static int link_dim(const tacos_topo_t *t, int a, int b)
{
    for (int j = 0, stride = 1; j < t->ndims; stride *= t->dims[j], j++)
        if ((a / stride) % t->dims[j] != (b / stride) % t->dims[j])
            return j;
    return 0;
}

/* Hop distances to dst from every NPU (-1: no path), NULL out of memory. */
static const int *hops_to(tacos_router_t *r, int dst)
{
    const tacos_topo_t *t = r->net;
    if (!r->dist[dst]) {
        int *d = malloc((size_t)t->npus * sizeof *d);
        if (!d)
            return NULL;
        for (int v = 0; v < t->npus; v++)
            d[v] = -1;
        int head = 0, tail = 0;
        d[dst] = 0;
        r->queue[tail++] = dst;
        while (head < tail) { /* BFS backwards over in-links */
            int v = r->queue[head++];
            for (size_t k = t->in_off[v]; k < t->in_off[v + 1]; k++) {
                int u = t->links[t->in_links[k]].src;
                if (d[u] < 0) {
                    d[u] = d[v] + 1;
                    r->queue[tail++] = u;
                }
            }
        }
        r->dist[dst] = d;
    }
    return r->dist[dst];
}

/* The link v leaves on towards the NPU of hop distances d (d[v] > 0): one
 * step closer, the lowest dimension first. */
static size_t next_hop(const tacos_topo_t *t, const int *d, int v)
{
    size_t best = SIZE_MAX;
    int best_dim = 0;
    for (size_t k = t->out_off[v]; k < t->out_off[v + 1]; k++) {
        size_t l = t->out_links[k];
        int w = t->links[l].dst, dim = link_dim(t, v, w);
        if (d[w] == d[v] - 1 && (best == SIZE_MAX || dim < best_dim)) {
            best = l;
            best_dim = dim;
        }
    }
    return best;
}

int tacos_route(tacos_router_t *r, int src, int dst, size_t *hops, size_t *nhops)
{
    const tacos_topo_t *t = r->net;
    const int *d = hops_to(r, dst);
    if (!d)
        return TACOS_ERR_NOMEM;
    if (d[src] < 0)
        return tacos_error(TACOS_ERR_TOPO, "network %s has no path from NPU %d to NPU %d", t->name,
                           src, dst);
    *nhops = 0;
    for (int v = src; v != dst; v = t->links[hops[*nhops - 1]].dst)
        hops[(*nhops)++] = next_hop(t, d, v);
    return TACOS_OK;
}

int tacos_route_first_hops(const tacos_topo_t *t, size_t *next)
{
    int n = t->npus, rc = TACOS_OK;
    tacos_router_t r;
    if (tacos_router_init(&r, t))
        return tacos_error(TACOS_ERR_NOMEM, "out of memory routing on %s", t->name);
    for (int j = 0; j < n && !rc; j++) {
        const int *d = hops_to(&r, j);
        for (int v = 0; v < n && d; v++) /* neighbours: the link, as d[v] = 1 */
            next[(size_t)v * n + j] = d[v] > 0 ? next_hop(t, d, v) : SIZE_MAX;
        if (!d)
            rc = tacos_error(TACOS_ERR_NOMEM, "out of memory routing on %s", t->name);
        free(r.dist[j]); /* each destination once */
        r.dist[j] = NULL;
    }
    tacos_router_free(&r);
    return rc;
}
