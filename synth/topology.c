/* SPDX-License-Identifier: BSD-3-Clause */
/* Topology model: NPUs and directed links with latency and bandwidth,
 * stored as a link array plus CSR adjacency (memory grows with links). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int tacos_topo_create(int npus, const char *name, tacos_topo_t **out)
{
    if (npus < 1 || npus > TACOS_MAX_NPUS)
        return tacos_error(TACOS_ERR_ARG, "a topology has 1 to %d NPUs, not %d", TACOS_MAX_NPUS,
                           npus);
    tacos_topo_t *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name ? name : "custom"))) {
        free(t);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory creating a topology");
    }
    t->npus = npus;
    *out = t;
    return TACOS_OK;
}

static void drop_adjacency(tacos_topo_t *t)
{
    free(t->in_off);
    free(t->in_links);
    free(t->out_off);
    free(t->out_links);
    t->in_off = t->in_links = t->out_off = t->out_links = NULL;
}

void tacos_topo_free(tacos_topo_t *t)
{
    if (!t)
        return;
    drop_adjacency(t);
    tacos_topo_free(t->full);
    free(t->links);
    free(t->name);
    free(t);
}

int tacos_topo_add_link(tacos_topo_t *t, int src, int dst, double lat_us, double bw_gbps)
{
    if (src < 0 || src >= t->npus || dst < 0 || dst >= t->npus || src == dst)
        return tacos_error(TACOS_ERR_ARG, "link %d->%d: endpoints must be distinct NPUs in 0..%d",
                           src, dst, t->npus - 1);
    if (!(lat_us >= 0) || !isfinite(lat_us))
        return tacos_error(TACOS_ERR_ARG, "link %d->%d: latency must be >= 0 us, got %g", src, dst,
                           lat_us);
    if (!(bw_gbps > 0) || !isfinite(bw_gbps))
        return tacos_error(TACOS_ERR_ARG, "link %d->%d: bandwidth must be > 0 GB/s, got %g", src,
                           dst, bw_gbps);
    if (t->nlinks >= TACOS_MAX_LINKS)
        return tacos_error(TACOS_ERR_ARG, "a topology has at most %d links", TACOS_MAX_LINKS);
    tacos_link_t *links = tacos_grow(t->links, &t->cap, t->nlinks, sizeof *links, 64);
    if (!links)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory adding link %d->%d", src, dst);
    t->links = links;
    t->links[t->nlinks++] = (tacos_link_t){src, dst, lat_us, bw_gbps};
    drop_adjacency(t);
    return TACOS_OK;
}

int tacos_topo_add_switch(tacos_topo_t *t, const int *npus, int n, double lat_us, double bw_gbps,
                          int degree)
{
    if (degree < 1)
        return tacos_error(TACOS_ERR_ARG, "switch unwind degree must be >= 1, got %d", degree);
    if (degree > n - 1)
        degree = n - 1;
    if ((double)n * degree + (double)t->nlinks > TACOS_MAX_LINKS)
        return tacos_error(TACOS_ERR_ARG,
                           "a switch of %d NPUs unwound with degree %d makes %.0f links, more "
                           "than the %d a topology may have (lower unwind_degree)",
                           n, degree, (double)n * degree, TACOS_MAX_LINKS);
    for (int i = 0; i < n; i++)
        for (int j = 1; j <= degree; j++) {
            int rc = tacos_topo_add_link(t, npus[i], npus[(i + j) % n], lat_us, bw_gbps / degree);
            if (rc)
                return rc;
        }
    return TACOS_OK;
}

int tacos_switch_auto_degree(int members)
{
    return members > TACOS_AUTO_DEGREE ? TACOS_AUTO_DEGREE : 1;
}

int tacos_topo_add_both(tacos_topo_t *t, int a, int b, double lat_us, double bw_gbps)
{
    int rc = tacos_topo_add_link(t, a, b, lat_us, bw_gbps);
    return rc ? rc : tacos_topo_add_link(t, b, a, lat_us, bw_gbps);
}

int tacos_topo_add_switch_node(tacos_topo_t *t, const int *m, int n, double lat_us,
                               double bw_gbps)
{
    if (t->npus >= TACOS_MAX_NPUS)
        return tacos_error(TACOS_ERR_ARG, "a network has at most %d nodes", TACOS_MAX_NPUS);
    int sw = t->npus++, rc = TACOS_OK;
    for (int i = 0; i < n && !rc; i++)
        rc = tacos_topo_add_both(t, m[i], sw, lat_us / 2, bw_gbps);
    return rc;
}

/* Stable counting sort of the link indices `from` by the endpoint that
 * `off` counts (dst when by_dst, else src) into `to`; cur: npus slots. */
static void place_links(const tacos_topo_t *t, const size_t *from, const size_t *off,
                        size_t *cur, size_t *to, int by_dst)
{
    memcpy(cur, off, (size_t)t->npus * sizeof *cur);
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[from ? from[i] : i];
        to[cur[by_dst ? l->dst : l->src]++] = from ? from[i] : i;
    }
}

int tacos_topo_finalize(tacos_topo_t *t)
{
    drop_adjacency(t);
    size_t n = (size_t)t->npus, m = t->nlinks;
    t->in_off = calloc(n + 1, sizeof *t->in_off);
    t->out_off = calloc(n + 1, sizeof *t->out_off);
    t->in_links = malloc((m ? m : 1) * sizeof *t->in_links);
    t->out_links = malloc((m ? m : 1) * sizeof *t->out_links);
    size_t *cur = malloc(n * sizeof *cur);
    if (!t->in_off || !t->out_off || !t->in_links || !t->out_links || !cur) {
        free(cur);
        drop_adjacency(t);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory building adjacency of %zu links", m);
    }
    for (size_t i = 0; i < m; i++) {
        t->in_off[t->links[i].dst + 1]++;
        t->out_off[t->links[i].src + 1]++;
    }
    for (size_t v = 0; v < n; v++) {
        t->in_off[v + 1] += t->in_off[v];
        t->out_off[v + 1] += t->out_off[v];
    }
    /* By destination, then stably by source: out_links sorted by (src, dst);
     * stably by destination again: in_links sorted by (dst, src). */
    place_links(t, NULL, t->in_off, cur, t->in_links, 1);
    place_links(t, t->in_links, t->out_off, cur, t->out_links, 0);
    place_links(t, t->out_links, t->in_off, cur, t->in_links, 1);
    free(cur);
    for (size_t i = 1; i < m; i++) {
        const tacos_link_t *a = &t->links[t->out_links[i - 1]], *b = &t->links[t->out_links[i]];
        if (a->src == b->src && a->dst == b->dst) {
            int s = a->src, d = a->dst;
            drop_adjacency(t);
            return tacos_error(TACOS_ERR_ARG,
                               "two links %d->%d: describe a wider link with one larger bandwidth",
                               s, d);
        }
    }
    return TACOS_OK;
}

long tacos_topo_find_link(const tacos_topo_t *t, int src, int dst)
{
    if (src < 0 || src >= t->npus || !t->out_off)
        return -1;
    size_t lo = t->out_off[src], hi = t->out_off[src + 1];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int d = t->links[t->out_links[mid]].dst;
        if (d == dst)
            return (long)t->out_links[mid];
        if (d < dst)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static size_t *dup_indices(const size_t *v, size_t n)
{
    size_t *d = malloc((n ? n : 1) * sizeof *d);
    if (d)
        memcpy(d, v, n * sizeof *d);
    return d;
}

/* A finalized copy of t, every link reversed when transpose (the adjacency
 * copied, in and out swapped, where t has it: no sorting again). */
static int copy_topo(const tacos_topo_t *t, int transpose, tacos_topo_t **out)
{
    tacos_topo_t *c;
    size_t m = t->nlinks, n = (size_t)t->npus + 1;
    int rc = tacos_topo_create(t->npus, t->name, &c);
    if (rc)
        return rc;
    c->ndims = t->ndims;
    c->nranks = t->nranks;
    memcpy(c->dims, t->dims, sizeof t->dims);
    if (!(c->links = malloc((m ? m : 1) * sizeof *c->links))) {
        tacos_topo_free(c);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory copying %zu links", m);
    }
    c->cap = m ? m : 1;
    c->nlinks = m;
    for (size_t i = 0; i < m; i++) {
        c->links[i] = t->links[i];
        if (transpose) {
            c->links[i].src = t->links[i].dst;
            c->links[i].dst = t->links[i].src;
        }
    }
    if (!t->out_off)
        rc = tacos_topo_finalize(c);
    else if (!(c->out_off = dup_indices(transpose ? t->in_off : t->out_off, n)) ||
             !(c->in_off = dup_indices(transpose ? t->out_off : t->in_off, n)) ||
             !(c->out_links = dup_indices(transpose ? t->in_links : t->out_links, m)) ||
             !(c->in_links = dup_indices(transpose ? t->out_links : t->in_links, m)))
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory copying %zu links", m);
    if (rc) {
        tacos_topo_free(c);
        return rc;
    }
    *out = c;
    return TACOS_OK;
}

int tacos_topo_copy(const tacos_topo_t *t, tacos_topo_t **out)
{
    return copy_topo(t, 0, out);
}

int tacos_topo_transpose(const tacos_topo_t *t, tacos_topo_t **out)
{
    return copy_topo(t, 1, out);
}

/* Whether t has a link src->dst of l's latency and bandwidth. */
static int has_like(const tacos_topo_t *t, int src, int dst, const tacos_link_t *l)
{
    long r = tacos_topo_find_link(t, src, dst);
    return r >= 0 && t->links[r].lat_us == l->lat_us && t->links[r].bw_gbps == l->bw_gbps;
}

/* Whether NPU i -> tacos_mirror_npu(i, b) takes every link a->b to a link
 * map(b)->map(a) of the same cost. */
static int maps_transpose(const tacos_topo_t *t, int b)
{
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        if (!has_like(t, tacos_mirror_npu(l->dst, b), tacos_mirror_npu(l->src, b), l))
            return 0;
    }
    return 1;
}

int tacos_topo_mirror(const tacos_topo_t *t)
{
    for (int b = 1; b <= t->npus; b++)
        if (t->npus % b == 0 && maps_transpose(t, b))
            return b;
    return 0;
}

/* NPU v moved one step along dimension j (cyclically) of t's shape. */
static int shift(const tacos_topo_t *t, int v, int j)
{
    int stride = 1;
    for (int i = 0; i < j; i++)
        stride *= t->dims[i];
    int x = v / stride % t->dims[j];
    return v + ((x + 1) % t->dims[j] - x) * stride;
}

int tacos_topo_transitive(const tacos_topo_t *t)
{
    if (t->ndims < 1 || t->ndims > 16 || !t->out_off)
        return 0;
    long npus = 1;
    for (int j = 0; j < t->ndims; j++)
        if (t->dims[j] < 1 || (npus *= t->dims[j]) > t->npus)
            return 0;
    if (npus != t->npus)
        return 0;
    /* a shift is a bijection of the NPUs, and a finalized topology has one
     * link per pair: each link having its image is the link set mapped
     * onto itself */
    for (int j = 0; j < t->ndims; j++)
        for (size_t i = 0; i < t->nlinks; i++) {
            const tacos_link_t *l = &t->links[i];
            if (!has_like(t, shift(t, l->src, j), shift(t, l->dst, j), l))
                return 0;
        }
    return 1;
}

int tacos_topo_remove_npus(tacos_topo_t *t, const int *failed, int nfailed)
{
    tacos_topo_free(t->full); /* (of the NPUs before) */
    t->full = NULL;
    int *newid = malloc((size_t)t->npus * sizeof *newid);
    if (!newid)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory removing NPUs");
    for (int i = 0; i < t->npus; i++)
        newid[i] = 0;
    for (int i = 0; i < nfailed; i++) {
        if (failed[i] < 0 || failed[i] >= t->npus || newid[failed[i]]) {
            int bad = failed[i];
            free(newid);
            return tacos_error(TACOS_ERR_ARG, "failed NPU %d: not an NPU of 0..%d or listed twice",
                               bad, t->npus - 1);
        }
        newid[failed[i]] = -1;
    }
    if (nfailed >= t->npus) {
        free(newid);
        return tacos_error(TACOS_ERR_ARG, "cannot remove all %d NPUs", t->npus);
    }
    int next = 0;
    for (int i = 0; i < t->npus; i++)
        newid[i] = newid[i] < 0 ? -1 : next++;
    size_t kept = 0;
    for (size_t i = 0; i < t->nlinks; i++) {
        tacos_link_t l = t->links[i];
        if (newid[l.src] < 0 || newid[l.dst] < 0)
            continue;
        l.src = newid[l.src];
        l.dst = newid[l.dst];
        t->links[kept++] = l;
    }
    free(newid);
    t->nlinks = kept;
    t->npus = next;
    t->ndims = 0; /* no longer a regular shape */
    return tacos_topo_finalize(t);
}

/* Count of NPUs reachable from `from` following out-links (or in-links). */
static int reach_count(const tacos_topo_t *t, int from, int reverse, int *queue, char *seen)
{
    memset(seen, 0, (size_t)t->npus);
    int head = 0, tail = 0;
    queue[tail++] = from;
    seen[from] = 1;
    const size_t *off = reverse ? t->in_off : t->out_off;
    const size_t *adj = reverse ? t->in_links : t->out_links;
    while (head < tail) {
        int v = queue[head++];
        for (size_t k = off[v]; k < off[v + 1]; k++) {
            const tacos_link_t *l = &t->links[adj[k]];
            int w = reverse ? l->src : l->dst;
            if (!seen[w]) {
                seen[w] = 1;
                queue[tail++] = w;
            }
        }
    }
    return tail;
}

int tacos_topo_check_connected(const tacos_topo_t *t)
{
    if (!t->in_off)
        return tacos_error(TACOS_ERR_ARG, "topology %s is not finalized", t->name);
    int *queue = malloc((size_t)t->npus * sizeof *queue);
    char *seen = malloc((size_t)t->npus);
    int rc = TACOS_OK;
    if (!queue || !seen) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory checking connectivity");
        goto out;
    }
    for (int reverse = 0; reverse < 2 && !rc; reverse++)
        if (reach_count(t, 0, reverse, queue, seen) != t->npus) {
            int v = 0;
            while (seen[v])
                v++;
            rc = tacos_error(TACOS_ERR_TOPO,
                             "topology %s is not connected: NPU %d cannot %s NPU 0 over its links",
                             t->name, v, reverse ? "send to" : "receive from");
        }
out:
    free(queue);
    free(seen);
    return rc;
}
