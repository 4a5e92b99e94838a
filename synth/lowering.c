/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which of two lowerings of one network a size is synthesized on.  A
 * switch unwound with a small degree d gives each member d wide links and
 * a chunk about members / d hops to cross it; fully unwound, members - 1
 * narrow links and one hop.  Where a size's chunks are small, hops (each a
 * latency) cost more than narrow links; where they are large, the
 * reverse.  The mean time a chunk takes from NPU 0 to every other NPU over
 * shortest paths (each hop latency + bytes / bandwidth, stored and
 * forwarded) says which a chunk crosses sooner
 * (docs/synthesis.md#switches).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Mean shortest time (us) for one chunk of `bytes` from NPU 0 to the
 * others (Dijkstra). */
static int mean_reach_us(const tacos_topo_t *t, double bytes, double *out)
{
    int n = t->npus;
    double *d = malloc((size_t)n * sizeof *d), sum = 0;
    tacos_heap_t h = {0};
    int rc = d ? tacos_heap_push(&h, (tacos_heap_item_t){0, 0, 0}) : TACOS_ERR_NOMEM;
    for (int v = 0; v < n && d; v++)
        d[v] = v ? INFINITY : 0;
    while (!rc && h.n) {
        tacos_heap_item_t it = tacos_heap_pop(&h);
        if (it.k1 > d[it.id])
            continue;
        for (size_t k = t->out_off[it.id]; k < t->out_off[it.id + 1] && !rc; k++) {
            const tacos_link_t *l = &t->links[t->out_links[k]];
            double at = it.k1 + tacos_link_cost_us(l, bytes);
            if (at < d[l->dst]) {
                d[l->dst] = at;
                rc = tacos_heap_push(&h, (tacos_heap_item_t){at, 0, (size_t)l->dst});
            }
        }
    }
    for (int v = 1; v < n && !rc; v++)
        sum += d[v];
    *out = n > 1 ? sum / (n - 1) : 0;
    free(d);
    free(h.v);
    return rc ? tacos_error(TACOS_ERR_NOMEM, "out of memory timing a chunk's reach on %s",
                            t->name)
              : TACOS_OK;
}

int tacos_lowering_for(const tacos_topo_t *wide, const tacos_topo_t *full, uint64_t size_bytes,
                       const tacos_topo_t **out)
{
    double chunk = (double)size_bytes / wide->npus, w, f;
    int rc;
    *out = wide;
    if (!full)
        return TACOS_OK;
    if (full->npus != wide->npus)
        return tacos_error(TACOS_ERR_ARG, "lowerings of %d and %d NPUs", wide->npus,
                           full->npus);
    if ((rc = mean_reach_us(wide, chunk, &w)) || (rc = mean_reach_us(full, chunk, &f)))
        return rc;
    *out = f < w ? full : wide;
    return TACOS_OK;
}

int tacos_lowering_keep_full(const tacos_topo_t *wide, tacos_topo_t **full)
{
    static const char tail[] = ", switches fully unwound";
    tacos_topo_t *f = *full;
    if (f->nlinks <= wide->nlinks) { /* no switch unwound with fewer links */
        tacos_topo_free(f);
        *full = NULL;
        return TACOS_OK;
    }
    size_t n = strlen(f->name);
    char *name = realloc(f->name, n + sizeof tail);
    if (!name)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory naming %s", f->name);
    memcpy(name + n, tail, sizeof tail);
    f->name = name;
    return TACOS_OK;
}
