/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Switch trees.  A switch is a node that is not a rank: ports join it to
 * ranks and to other switches, each port with its own rate and latency, so
 * a leaf's uplink can be slower than the sum of its ports.  Synthesis sees
 * only links between ranks, so a tree is lowered into them:
 * - rooted at its centre, each switch joins the groups below it (a rank on
 *   one of its ports; the ranks under a child switch), group g to groups
 *   g+1 .. g+d (d its degree) by rails: the r-th rank of one to the r-th of
 *   the other, as hosts join per local index;
 * - each such link's latency is the sum along its tree path, and its rate
 *   the max-min fair share of the ports on that path (progressive filling):
 *   with every lowered link busy at once, no port carries more than its
 *   rate in either direction.
 * A tree of one switch lowers to what tacos_topo_add_switch unwinds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    int a, b; /* a node and the switch it is on a port of (a < b) */
    double lat_us, bw_gbps;
} port_t;

struct tacos_fabric {
    int npus, nswitches; /* nodes: 0..npus-1 ranks, npus + i switch i */
    char **names;
    int *degree;
    size_t capsw;
    port_t *ports;
    size_t nports, capports;
};

int tacos_fabric_new(int npus, tacos_fabric_t **out)
{
    tacos_fabric_t *f = calloc(1, sizeof *f);
    if (!f)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for a switch tree");
    f->npus = npus;
    *out = f;
    return TACOS_OK;
}

void tacos_fabric_free(tacos_fabric_t *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->nswitches; i++)
        free(f->names[i]);
    free(f->names);
    free(f->degree);
    free(f->ports);
    free(f);
}

int tacos_fabric_switch(const tacos_fabric_t *f, const char *name)
{
    for (int i = 0; i < f->nswitches; i++)
        if (!strcmp(f->names[i], name))
            return f->npus + i;
    return -1;
}

int tacos_fabric_add_switch(tacos_fabric_t *f, const char *name, int degree, int *id)
{
    size_t digits = strspn(name, "0123456789");
    if (!name[0] || !name[digits])
        return tacos_error(TACOS_ERR_ARG, "switch name '%s': give a name that is neither empty "
                                          "nor a number", name);
    if (tacos_fabric_switch(f, name) >= 0)
        return tacos_error(TACOS_ERR_ARG, "switch '%s' is given twice", name);
    if (degree < 1)
        return tacos_error(TACOS_ERR_ARG, "switch '%s': degree must be >= 1, got %d", name, degree);
    if (f->nswitches >= TACOS_MAX_SWITCHES)
        return tacos_error(TACOS_ERR_ARG, "a topology has at most %d switches", TACOS_MAX_SWITCHES);
    size_t cap = f->capsw;
    char **names = tacos_grow(f->names, &cap, (size_t)f->nswitches, sizeof *names, 16);
    if (names)
        f->names = names;
    int *deg = names ? tacos_grow(f->degree, &f->capsw, (size_t)f->nswitches, sizeof *deg, 16)
                     : NULL;
    if (deg)
        f->degree = deg;
    char *copy = deg ? strdup(name) : NULL;
    if (!copy)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory adding switch '%s'", name);
    f->names[f->nswitches] = copy;
    f->degree[f->nswitches++] = degree;
    *id = f->npus + f->nswitches - 1;
    return TACOS_OK;
}

/* A node's name in messages. */
static void node_name(const tacos_fabric_t *f, int v, char *buf, size_t room)
{
    if (v < f->npus)
        snprintf(buf, room, "rank %d", v);
    else
        snprintf(buf, room, "switch '%s'", f->names[v - f->npus]);
}

int tacos_fabric_add_port(tacos_fabric_t *f, int node, int sw, double lat_us, double bw_gbps)
{
    int nodes = f->npus + f->nswitches;
    if (node < 0 || node >= nodes || sw < f->npus || sw >= nodes || node == sw)
        return tacos_error(TACOS_ERR_ARG, "a port joins a rank of 0..%d or a switch to another "
                                          "switch", f->npus - 1);
    if (!(lat_us >= 0) || !isfinite(lat_us) || !(bw_gbps > 0) || !isfinite(bw_gbps))
        return tacos_error(TACOS_ERR_ARG, "a port needs latency >= 0 us and bandwidth > 0 GB/s, "
                                          "got %g us, %g GB/s", lat_us, bw_gbps);
    if (f->nports >= TACOS_MAX_LINKS)
        return tacos_error(TACOS_ERR_ARG, "a topology has at most %d ports", TACOS_MAX_LINKS);
    port_t *p = tacos_grow(f->ports, &f->capports, f->nports, sizeof *p, 64);
    if (!p)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory adding a port");
    f->ports = p;
    f->ports[f->nports++] = (port_t){node < sw ? node : sw, node < sw ? sw : node, lat_us, bw_gbps};
    return TACOS_OK;
}

/* ---- checks ----------------------------------------------------------------------- */

static int find(int *up, int v)
{
    while (up[v] != v)
        v = up[v] = up[up[v]];
    return v;
}

/* Every switch has a port, a rank is on one switch at most, the ports form
 * a forest (no cycle, no pair joined twice). */
static int check(const tacos_fabric_t *f, int *up, int *on)
{
    int nodes = f->npus + f->nswitches;
    char a[96], b[96];
    for (int v = 0; v < nodes; v++)
        up[v] = v, on[v] = -1;
    for (size_t i = 0; i < f->nports; i++) {
        const port_t *p = &f->ports[i];
        if (p->a < f->npus && on[p->a] == p->b)
            return tacos_error(TACOS_ERR_TOPO, "rank %d is listed twice on switch '%s'", p->a,
                               f->names[p->b - f->npus]);
        if (p->a < f->npus && on[p->a] >= 0) {
            node_name(f, on[p->a], a, sizeof a);
            node_name(f, p->b, b, sizeof b);
            return tacos_error(TACOS_ERR_TOPO, "rank %d is on two switches (%s, %s)", p->a, a + 7,
                               b + 7);
        }
        on[p->a] = p->b, on[p->b] = p->a;
        int x = find(up, p->a), y = find(up, p->b);
        if (x == y) {
            node_name(f, p->a, a, sizeof a);
            node_name(f, p->b, b, sizeof b);
            return tacos_error(TACOS_ERR_TOPO,
                               "%s and %s close a cycle of switches (or are joined twice): give "
                               "parallel uplinks as one with their total rate",
                               a, b);
        }
        up[x] = y;
    }
    for (int s = f->npus; s < nodes; s++)
        if (on[s] < 0)
            return tacos_error(TACOS_ERR_TOPO, "switch '%s' has no links", f->names[s - f->npus]);
    return TACOS_OK;
}

/* ---- the tree, rooted at its centre --------------------------------------------------------- */

typedef struct {
    int nodes;
    size_t *off, *adj; /* per node, the ports it is on (CSR) */
    int *parent, *up_port, *depth, *order, norder;
    int **below, *nbelow; /* per node: the ranks under it, ascending */
} tree_t;

static int other(const port_t *p, int v) { return p->a == v ? p->b : p->a; }

/* Breadth-first from root over its component: order, parent, depth; the
 * largest depth of a rank. */
static int bfs(const tacos_fabric_t *f, tree_t *t, int root, int npus)
{
    int head = 0, far = 0;
    t->norder = 0;
    t->order[t->norder++] = root;
    t->parent[root] = -1, t->up_port[root] = -1, t->depth[root] = 0;
    while (head < t->norder) {
        int v = t->order[head++];
        if (v < npus && t->depth[v] > far)
            far = t->depth[v];
        for (size_t k = t->off[v]; k < t->off[v + 1]; k++) {
            int w = other(&f->ports[t->adj[k]], v);
            if (w == t->parent[v])
                continue;
            t->parent[w] = v, t->up_port[w] = (int)t->adj[k], t->depth[w] = t->depth[v] + 1;
            t->order[t->norder++] = w;
        }
    }
    return far;
}

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The ranks under each node of the component in t->order, ascending
 * (children before parents). */
static int collect_below(const tacos_fabric_t *f, tree_t *t)
{
    for (int i = t->norder - 1; i >= 0; i--) {
        int v = t->order[i], n = v < f->npus, m = 0;
        for (size_t k = t->off[v]; k < t->off[v + 1]; k++) {
            int w = other(&f->ports[t->adj[k]], v);
            if (t->parent[w] == v)
                n += t->nbelow[w];
        }
        int *r = malloc((size_t)(n ? n : 1) * sizeof *r);
        if (!r)
            return tacos_error(TACOS_ERR_NOMEM, "out of memory lowering a switch tree");
        if (v < f->npus)
            r[m++] = v;
        for (size_t k = t->off[v]; k < t->off[v + 1]; k++) {
            int w = other(&f->ports[t->adj[k]], v);
            if (t->parent[w] == v) {
                memcpy(r + m, t->below[w], (size_t)t->nbelow[w] * sizeof *r);
                m += t->nbelow[w];
            }
        }
        qsort(r, (size_t)m, sizeof *r, by_int);
        t->below[v] = r, t->nbelow[v] = m;
    }
    return TACOS_OK;
}

/* The component of `from`'s centre: the middle of a longest path between
 * two of its ranks (two sweeps; the switch nearer the first end where two
 * are in the middle).  -1: no rank in it. */
static int centre(const tacos_fabric_t *f, tree_t *t, int from)
{
    bfs(f, t, from, f->npus);
    int a = -1;
    for (int i = 0; i < t->norder; i++) /* the farthest rank (the first at that depth) */
        if (t->order[i] < f->npus && (a < 0 || t->depth[t->order[i]] > t->depth[a]))
            a = t->order[i];
    if (a < 0)
        return -1;
    bfs(f, t, a, f->npus);
    int b = a;
    for (int i = 0; i < t->norder; i++)
        if (t->order[i] < f->npus && t->depth[t->order[i]] > t->depth[b])
            b = t->order[i];
    int v = b;
    for (int up = t->depth[b] - t->depth[b] / 2; up > 0; up--) /* ceil(L/2) from b */
        v = t->parent[v];
    return v < f->npus ? (t->parent[v] >= 0 ? t->parent[v] : other(&f->ports[t->adj[t->off[v]]], v)) : v;
}

/* ---- lowering ----------------------------------------------------------------------- */

typedef struct {
    int src, dst;
    double lat_us, rate;
    size_t first, n; /* its directed ports: path[first .. first + n) */
} flow_t;

typedef struct {
    flow_t *flows;
    size_t nflows, capflows;
    int *path; /* directed port ids: 2 p (a to b) or 2 p + 1 (b to a) */
    size_t npath, cappath;
} flows_t;

/* The hops of every lowered link's path, all together: at most this many
 * (a deep tree of many ranks). */
#define MAX_HOPS ((size_t)16 * TACOS_MAX_LINKS)

static int push_hop(flows_t *fl, int hop)
{
    if (fl->npath >= MAX_HOPS)
        return tacos_error(TACOS_ERR_ARG, "the lowered links of a switch tree cross more than %zu "
                                          "ports in all (a deep tree of many ranks)", MAX_HOPS);
    int *p = tacos_grow(fl->path, &fl->cappath, fl->npath, sizeof *p, 256);
    if (!p)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory lowering a switch tree");
    fl->path = p;
    fl->path[fl->npath++] = hop;
    return TACOS_OK;
}

/* Directed port id of going from v over port p. */
static int hop(const tacos_fabric_t *f, int p, int v) { return 2 * p + (f->ports[p].a == v ? 0 : 1); }

/* The flow a -> b along the tree: up from a to their lowest common node,
 * then down to b (down: room for a path's hops). */
static int add_flow(const tacos_fabric_t *f, const tree_t *t, flows_t *fl, int *down, int a, int b)
{
    flow_t *x = tacos_grow(fl->flows, &fl->capflows, fl->nflows, sizeof *x, 64);
    if (!x)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory lowering a switch tree");
    fl->flows = x;
    size_t first = fl->npath;
    int u = a, w = b, rc = TACOS_OK, ndown = 0;
    double lat = 0;
    while (u != w && !rc) {
        if (t->depth[u] >= t->depth[w]) { /* up from u */
            lat += f->ports[t->up_port[u]].lat_us;
            rc = push_hop(fl, hop(f, t->up_port[u], u));
            u = t->parent[u];
        } else { /* down to w, from its parent: later */
            lat += f->ports[t->up_port[w]].lat_us;
            down[ndown++] = hop(f, t->up_port[w], t->parent[w]);
            w = t->parent[w];
        }
    }
    while (ndown > 0 && !rc)
        rc = push_hop(fl, down[--ndown]);
    if (rc)
        return rc;
    if (!isfinite(lat))
        return tacos_error(TACOS_ERR_ARG, "the path from rank %d to rank %d sums to an infinite "
                                          "latency", a, b);
    fl->flows[fl->nflows++] = (flow_t){a, b, lat, 0, first, fl->npath - first};
    return TACOS_OK;
}

/* Max-min fair rates by progressive filling: every flow not frozen grows at
 * the same pace until a directed port it crosses is full; its flows freeze
 * there. */
static int fill(const tacos_fabric_t *f, flows_t *fl)
{
    size_t nhops = 2 * f->nports;
    double *load = calloc(nhops ? nhops : 1, sizeof *load); /* of frozen flows */
    size_t *live = calloc(nhops ? nhops : 1, sizeof *live);  /* flows not frozen */
    char *frozen = calloc(fl->nflows ? fl->nflows : 1, 1);
    if (!load || !live || !frozen) {
        free(load), free(live), free(frozen);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory lowering a switch tree");
    }
    for (size_t i = 0; i < fl->nflows; i++)
        for (size_t k = 0; k < fl->flows[i].n; k++)
            live[fl->path[fl->flows[i].first + k]]++;
    for (size_t left = fl->nflows; left > 0;) {
        double level = INFINITY;
        for (size_t h = 0; h < nhops; h++)
            if (live[h]) {
                double l = (f->ports[h / 2].bw_gbps - load[h]) / (double)live[h];
                level = l < level ? l : level;
            }
        for (size_t i = 0; i < fl->nflows; i++) {
            flow_t *x = &fl->flows[i];
            int full = 0;
            for (size_t k = 0; k < x->n && !frozen[i] && !full; k++) {
                size_t h = (size_t)fl->path[x->first + k];
                full = (f->ports[h / 2].bw_gbps - load[h]) / (double)live[h] <=
                       level * (1 + 1e-12);
            }
            if (frozen[i] || !full)
                continue;
            frozen[i] = 1, x->rate = level, left--;
            for (size_t k = 0; k < x->n; k++) { /* (the ports' shares of the others hold) */
                size_t h = (size_t)fl->path[x->first + k];
                load[h] += level, live[h]--;
            }
        }
    }
    free(load), free(live), free(frozen);
    return TACOS_OK;
}

typedef struct {
    const int *ranks; /* ascending */
    int n;
} group_t;

static int by_first_rank(const void *a, const void *b)
{
    int x = ((const group_t *)a)->ranks[0], y = ((const group_t *)b)->ranks[0];
    return (x > y) - (x < y);
}

/* Each switch of the component under t joins its groups; refused before
 * anything is made where that makes more links than a topology may have
 * (`have` of them there already). */
static int join(const tacos_fabric_t *f, const tree_t *t, flows_t *fl, int *down, group_t *groups,
                size_t have)
{
    int rc = TACOS_OK;
    for (int i = 0; i < t->norder && !rc; i++) {
        int s = t->order[i], k = 0;
        if (s < f->npus)
            continue;
        for (size_t p = t->off[s]; p < t->off[s + 1]; p++) {
            int w = other(&f->ports[t->adj[p]], s);
            if (t->parent[w] == s && t->nbelow[w])
                groups[k++] = (group_t){t->below[w], t->nbelow[w]};
        }
        qsort(groups, (size_t)k, sizeof *groups, by_first_rank); /* (first ranks differ) */
        int d = f->degree[s - f->npus] < k - 1 ? f->degree[s - f->npus] : k - 1;
        size_t more = 0;
        for (int g = 0; g < k; g++)
            for (int j = 1; j <= d; j++)
                more += (size_t)(groups[g].n < groups[(g + j) % k].n ? groups[g].n
                                                                     : groups[(g + j) % k].n);
        if (have + fl->nflows + more > TACOS_MAX_LINKS)
            return tacos_error(TACOS_ERR_ARG,
                               "switch '%s' lowered with degree %d makes %zu links or more, more "
                               "than the %d a topology may have (lower unwind_degree)",
                               f->names[s - f->npus], d, have + fl->nflows + more,
                               TACOS_MAX_LINKS);
        for (int g = 0; g < k && !rc; g++)
            for (int j = 1; j <= d && !rc; j++) {
                const group_t *a = &groups[g], *b = &groups[(g + j) % k];
                for (int r = 0; r < a->n && r < b->n && !rc; r++)
                    rc = add_flow(f, t, fl, down, a->ranks[r], b->ranks[r]);
            }
    }
    return rc;
}

static void tree_free(tree_t *t)
{
    for (int v = 0; t->below && v < t->nodes; v++)
        free(t->below[v]);
    free(t->below), free(t->nbelow), free(t->off), free(t->adj);
    free(t->parent), free(t->up_port), free(t->depth), free(t->order);
}

static int tree_new(const tacos_fabric_t *f, tree_t *t)
{
    int n = t->nodes = f->npus + f->nswitches;
    size_t m = f->nports ? 2 * f->nports : 1;
    t->off = calloc((size_t)n + 1, sizeof *t->off), t->adj = malloc(m * sizeof *t->adj);
    t->parent = malloc((size_t)n * sizeof *t->parent);
    t->up_port = malloc((size_t)n * sizeof *t->up_port);
    t->depth = malloc((size_t)n * sizeof *t->depth), t->order = malloc((size_t)n * sizeof *t->order);
    t->below = calloc((size_t)n, sizeof *t->below), t->nbelow = calloc((size_t)n, sizeof *t->nbelow);
    if (!t->off || !t->adj || !t->parent || !t->up_port || !t->depth || !t->order || !t->below ||
        !t->nbelow)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory lowering a switch tree");
    for (size_t i = 0; i < f->nports; i++)
        t->off[f->ports[i].a + 1]++, t->off[f->ports[i].b + 1]++;
    for (int v = 0; v < n; v++)
        t->off[v + 1] += t->off[v];
    size_t *at = calloc((size_t)n, sizeof *at);
    if (!at)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory lowering a switch tree");
    for (size_t i = 0; i < f->nports; i++) {
        t->adj[t->off[f->ports[i].a] + at[f->ports[i].a]++] = i;
        t->adj[t->off[f->ports[i].b] + at[f->ports[i].b]++] = i;
    }
    free(at);
    for (int v = 0; v < n; v++)
        t->parent[v] = -2; /* not reached yet */
    return TACOS_OK;
}

/* Whether t has a link src -> dst (keys: its links' src << 32 | dst, sorted). */
static int linked(const uint64_t *keys, size_t n, int src, int dst)
{
    uint64_t k = (uint64_t)src << 32 | (uint64_t)dst;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] == k)
            return 1;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int tacos_fabric_add_nodes(const tacos_fabric_t *f, tacos_topo_t *topo)
{
    int base = topo->npus, rc = TACOS_OK;
    if (f->npus != topo->npus || (double)base + f->nswitches > TACOS_MAX_NPUS)
        return tacos_error(TACOS_ERR_ARG, "a switch tree of %d ranks and %d switches for a "
                           "topology of %d nodes", f->npus, f->nswitches, topo->npus);
    topo->npus += f->nswitches;
    for (size_t i = 0; i < f->nports && !rc; i++) {
        const port_t *p = &f->ports[i];
        int a = p->a < f->npus ? p->a : base + p->a - f->npus, b = base + p->b - f->npus;
        rc = tacos_topo_add_both(topo, a, b, p->lat_us, p->bw_gbps);
    }
    return rc;
}

int tacos_fabric_lower(const tacos_fabric_t *f, tacos_topo_t *topo)
{
    if (!f->nswitches)
        return TACOS_OK;
    int n = f->npus + f->nswitches, rc;
    tree_t t = {0};
    flows_t fl = {0};
    int *up = malloc((size_t)n * sizeof *up), *on = malloc((size_t)n * sizeof *on);
    int *down = malloc((size_t)n * sizeof *down);
    group_t *groups = malloc((size_t)n * sizeof *groups);
    uint64_t *keys = malloc((topo->nlinks ? topo->nlinks : 1) * sizeof *keys);
    if (!up || !on || !down || !groups || !keys)
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory lowering a switch tree");
    else if (f->npus != topo->npus)
        rc = tacos_error(TACOS_ERR_ARG, "a switch tree of %d ranks for a topology of %d", f->npus,
                         topo->npus);
    else if (!(rc = check(f, up, on)))
        rc = tree_new(f, &t);
    for (int s = f->npus; s < n && !rc; s++) { /* each component, from its first switch */
        if (t.parent[s] != -2)
            continue;
        int root = centre(f, &t, s);
        if (root < 0) {
            rc = tacos_error(TACOS_ERR_TOPO, "switch '%s' and the switches joined to it reach no "
                                             "rank", f->names[s - f->npus]);
            break;
        }
        bfs(f, &t, root, f->npus);
        if (!(rc = collect_below(f, &t)))
            rc = join(f, &t, &fl, down, groups, topo->nlinks);
        for (int i = 0; i < t.norder; i++)
            if (t.parent[t.order[i]] == -1)
                t.parent[t.order[i]] = -3; /* (the root: reached) */
    }
    for (size_t i = 0; i < topo->nlinks && !rc; i++)
        keys[i] = (uint64_t)topo->links[i].src << 32 | (uint64_t)topo->links[i].dst;
    if (!rc)
        qsort(keys, topo->nlinks, sizeof *keys, by_u64);
    size_t kept = 0; /* a pair linked already keeps its link, and takes no share */
    for (size_t i = 0; i < fl.nflows && !rc; i++)
        if (!linked(keys, topo->nlinks, fl.flows[i].src, fl.flows[i].dst))
            fl.flows[kept++] = fl.flows[i];
    fl.nflows = kept;
    if (!rc)
        rc = fill(f, &fl);
    for (size_t i = 0; i < fl.nflows && !rc; i++)
        rc = tacos_topo_add_link(topo, fl.flows[i].src, fl.flows[i].dst, fl.flows[i].lat_us,
                                 fl.flows[i].rate);
    tree_free(&t);
    free(fl.flows), free(fl.path);
    free(up), free(on), free(down), free(groups), free(keys);
    return rc;
}
