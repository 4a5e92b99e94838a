/*
 * Congestion-aware simulator: runs a schedule's transfers as messages over a
 * physical network at link granularity.  A transfer whose endpoints are not
 * neighbours is routed over a shortest path (dimension order on generated
 * meshes and tori, lowest-numbered next hop otherwise) and stored and
 * forwarded per hop, paying latency + bytes/bandwidth on each.  Each link
 * serves one message at a time.  A message leaves its source once the
 * transfers that brought its chunk there have landed.  Links serve waiting
 * messages first come first served (ties: schedule order), or strictly by
 * schedule order among the waiting ones, which is how an executor replays a
 * synthesized schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    double k1, k2;
    size_t id;
} hitem_t;

typedef struct {
    hitem_t *v;
    size_t n, cap;
} hheap_t;

static int hless(const hitem_t *a, const hitem_t *b)
{
    if (a->k1 != b->k1)
        return a->k1 < b->k1;
    if (a->k2 != b->k2)
        return a->k2 < b->k2;
    return a->id < b->id;
}

static int hpush(hheap_t *h, hitem_t it)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 8;
        hitem_t *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return TACOS_ERR_NOMEM;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    for (; i && hless(&it, &h->v[(i - 1) / 2]); i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = it;
    return TACOS_OK;
}

static hitem_t hpop(hheap_t *h)
{
    hitem_t top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && hless(&h->v[c + 1], &h->v[c]))
            c++;
        if (!hless(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* ---- routing ------------------------------------------------------------ */

typedef struct {
    const tacos_topo_t *net;
    int **dist; /* hop distance to each destination, computed on first use */
    int *queue;
} router_t;

/* Dimension a link moves along in a generated shape (lower goes first). */
static int link_dim(const tacos_topo_t *t, int a, int b)
{
    for (int j = 0, stride = 1; j < t->ndims; stride *= t->dims[j], j++)
        if ((a / stride) % t->dims[j] != (b / stride) % t->dims[j])
            return j;
    return 0;
}

static int route(router_t *r, int src, int dst, size_t *hops, size_t *nhops)
{
    const tacos_topo_t *t = r->net;
    if (!r->dist[dst]) {
        int *d = malloc((size_t)t->npus * sizeof *d);
        if (!d)
            return TACOS_ERR_NOMEM;
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
    const int *d = r->dist[dst];
    if (d[src] < 0)
        return tacos_error(TACOS_ERR_TOPO, "network %s has no path from NPU %d to NPU %d", t->name,
                           src, dst);
    *nhops = 0;
    for (int v = src; v != dst;) {
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
        hops[(*nhops)++] = best;
        v = t->links[best].dst;
    }
    return TACOS_OK;
}

/* ---- messages ----------------------------------------------------------- */

typedef struct {
    size_t hop0, nhops, hop; /* hops in the shared array */
    size_t dep0, ndeps;      /* dependents in the shared array */
    size_t pending;          /* transfers still to land before it may leave */
    double bytes, key;
} msg_t;

/* qsort has no context argument in C11: sort keys carry what they need. */
typedef struct {
    int32_t dst, chunk;
    double end_us;
    size_t xfer;
} arrival_t;

static int arrival_cmp(const void *a, const void *b)
{
    const arrival_t *x = a, *y = b;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->chunk != y->chunk)
        return x->chunk < y->chunk ? -1 : 1;
    if (x->end_us != y->end_us)
        return x->end_us < y->end_us ? -1 : 1;
    return (x->xfer > y->xfer) - (x->xfer < y->xfer);
}

void tacos_sim_free(tacos_sim_t *r)
{
    if (!r)
        return;
    free(r->link_busy_us);
    free(r->link_bytes);
    free(r->busy_start_us);
    free(r->busy_end_us);
    free(r);
}

/* Dependencies: transfer x waits for every transfer that delivered its chunk
 * to its source by x's start (the arrivals sorted by (dst, chunk, end)).
 * Stored reversed, as the dependents of each transfer. */
static int build_deps(const tacos_sched_t *s, msg_t *m, size_t **dependents)
{
    size_t n = s->nxfers;
    arrival_t *arr = malloc((n ? n : 1) * sizeof *arr);
    size_t *count = calloc(n + 1, sizeof *count), *pos = NULL;
    int rc = TACOS_OK;
    if (!arr || !count)
        goto nomem;
    for (size_t i = 0; i < n; i++)
        arr[i] = (arrival_t){s->xfers[i].dst, s->xfers[i].chunk, s->xfers[i].end_us, i};
    qsort(arr, n, sizeof *arr, arrival_cmp);
    /* first pass counts, second fills */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const tacos_xfer_t *x = &s->xfers[i];
            arrival_t key = {x->src, x->chunk, -INFINITY, 0};
            size_t lo = 0, hi = n;
            while (lo < hi) { /* first arrival of (src, chunk) */
                size_t mid = (lo + hi) / 2;
                if (arrival_cmp(&arr[mid], &key) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (; lo < n && arr[lo].dst == x->src && arr[lo].chunk == x->chunk &&
                   arr[lo].end_us <= x->start_us + TACOS_TIME_EPS(x->start_us);
                 lo++) {
                if (pass == 0) {
                    count[arr[lo].xfer + 1]++;
                    m[i].pending++;
                } else {
                    (*dependents)[pos[arr[lo].xfer]++] = i;
                }
            }
        }
        if (pass == 0) {
            for (size_t i = 0; i < n; i++) {
                count[i + 1] += count[i];
                m[i].dep0 = count[i];
                m[i].ndeps = count[i + 1] - count[i];
            }
            *dependents = malloc((count[n] ? count[n] : 1) * sizeof **dependents);
            pos = malloc((n ? n : 1) * sizeof *pos);
            if (!*dependents || !pos)
                goto nomem;
            for (size_t i = 0; i < n; i++)
                pos[i] = count[i];
        }
    }
    goto out;
nomem:
    rc = tacos_error(TACOS_ERR_NOMEM, "out of memory simulating %zu transfers", n);
out:
    free(arr);
    free(count);
    free(pos);
    return rc;
}

typedef struct {
    const tacos_sched_t *s;
    const tacos_topo_t *net;
    int order;
    msg_t *m;
    size_t *hops, *dependents;
    hheap_t *waiting; /* per link */
    char *busy;
    hheap_t events;   /* (end time, link, message) */
    tacos_sim_t *r;
    size_t *touched;
    size_t ntouched;
    char *is_touched;
} simstate_t;

static int enqueue(simstate_t *st, size_t msg, double t)
{
    msg_t *m = &st->m[msg];
    size_t l = st->hops[m->hop0 + m->hop];
    hitem_t it = st->order ? (hitem_t){m->key, 0, msg} : (hitem_t){t, m->key, msg};
    if (!st->is_touched[l]) {
        st->is_touched[l] = 1;
        st->touched[st->ntouched++] = l;
    }
    return hpush(&st->waiting[l], it) ? TACOS_ERR_NOMEM : TACOS_OK;
}

static int start_link(simstate_t *st, size_t l, double t)
{
    if (st->busy[l] || !st->waiting[l].n)
        return TACOS_OK;
    size_t msg = hpop(&st->waiting[l]).id;
    const tacos_link_t *lk = &st->net->links[l];
    double end = t + tacos_link_cost_us(lk, st->m[msg].bytes);
    tacos_sim_t *r = st->r;
    st->busy[l] = 1;
    r->link_busy_us[l] += end - t;
    r->link_bytes[l] += st->m[msg].bytes;
    r->busy_start_us[r->nbusy] = t;
    r->busy_end_us[r->nbusy++] = end;
    return hpush(&st->events, (hitem_t){end, (double)l, msg}) ? TACOS_ERR_NOMEM : TACOS_OK;
}

static int run(simstate_t *st)
{
    size_t n = st->s->nxfers;
    int rc = TACOS_OK;
    for (size_t i = 0; i < n && !rc; i++)
        if (!st->m[i].pending)
            rc = enqueue(st, i, 0);
    double t = 0;
    for (;;) {
        for (size_t k = 0; k < st->ntouched && !rc; k++) {
            st->is_touched[st->touched[k]] = 0;
            rc = start_link(st, st->touched[k], t);
        }
        st->ntouched = 0;
        if (rc || !st->events.n)
            return rc;
        /* land everything that ends now, then start links */
        t = st->events.v[0].k1;
        double horizon = t + TACOS_TIME_EPS(t);
        while (st->events.n && st->events.v[0].k1 <= horizon && !rc) {
            hitem_t ev = hpop(&st->events);
            size_t l = (size_t)ev.k2;
            msg_t *m = &st->m[ev.id];
            st->busy[l] = 0;
            if (!st->is_touched[l]) {
                st->is_touched[l] = 1;
                st->touched[st->ntouched++] = l;
            }
            if (++m->hop < m->nhops) {
                rc = enqueue(st, ev.id, t);
                continue;
            }
            if (ev.k1 > st->r->time_us)
                st->r->time_us = ev.k1;
            for (size_t d = 0; d < m->ndeps && !rc; d++) {
                size_t j = st->dependents[m->dep0 + d];
                if (!--st->m[j].pending)
                    rc = enqueue(st, j, t);
            }
        }
    }
}

int tacos_simulate(const tacos_sched_t *s, const tacos_topo_t *net, int schedule_order,
                   tacos_sim_t **out)
{
    if (!net->in_off || net->npus != s->npus)
        return tacos_error(TACOS_ERR_ARG,
                           "simulate: network %s has %d NPUs, the schedule %d (or is not "
                           "finalized)",
                           net->name, net->npus, s->npus);
    size_t n = s->nxfers, m = net->nlinks ? net->nlinks : 1, nhops_total = 0;
    simstate_t st = {s, net, schedule_order, NULL, NULL, NULL, NULL, NULL, {0}, NULL, NULL, 0, NULL};
    router_t router = {net, calloc((size_t)net->npus, sizeof(int *)),
                       malloc((size_t)net->npus * sizeof(int))};
    size_t *path = malloc((size_t)net->npus * sizeof *path);
    tacos_sim_t *r = calloc(1, sizeof *r);
    st.m = calloc(n ? n : 1, sizeof *st.m);
    st.waiting = calloc(m, sizeof *st.waiting);
    st.busy = calloc(m, 1);
    st.touched = malloc(m * sizeof *st.touched);
    st.is_touched = calloc(m, 1);
    int rc = TACOS_OK;
    if (!router.dist || !router.queue || !path || !r || !st.m || !st.waiting || !st.busy ||
        !st.touched || !st.is_touched)
        goto nomem;
    /* routes: one hop on a link, a shortest path otherwise */
    double chunk = tacos_sched_chunk_bytes(s);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        nhops_total = 0;
        for (size_t i = 0; i < n && !rc; i++) {
            const tacos_xfer_t *x = &s->xfers[i];
            long l = tacos_topo_find_link(net, x->src, x->dst);
            size_t nh = 1;
            if (l >= 0)
                path[0] = (size_t)l;
            else if ((rc = route(&router, x->src, x->dst, path, &nh)))
                break;
            if (pass) {
                memcpy(st.hops + nhops_total, path, nh * sizeof *path);
                st.m[i] = (msg_t){nhops_total, nh, 0, 0, 0, 0, chunk, x->start_us};
            }
            nhops_total += nh;
        }
        if (!pass && !rc && !(st.hops = malloc((nhops_total ? nhops_total : 1) * sizeof *st.hops)))
            goto nomem;
    }
    if (rc)
        goto out;
    r->nlinks = net->nlinks;
    r->link_busy_us = calloc(m, sizeof *r->link_busy_us);
    r->link_bytes = calloc(m, sizeof *r->link_bytes);
    r->busy_start_us = malloc((nhops_total ? nhops_total : 1) * sizeof *r->busy_start_us);
    r->busy_end_us = malloc((nhops_total ? nhops_total : 1) * sizeof *r->busy_end_us);
    st.r = r;
    if (!r->link_busy_us || !r->link_bytes || !r->busy_start_us || !r->busy_end_us)
        goto nomem;
    if ((rc = build_deps(s, st.m, &st.dependents)) || (rc = run(&st)))
        goto out;
    *out = r;
    r = NULL;
    goto out;
nomem:
    rc = tacos_error(TACOS_ERR_NOMEM, "out of memory simulating %zu transfers on %s", n, net->name);
out:
    for (int v = 0; router.dist && v < net->npus; v++)
        free(router.dist[v]);
    free(router.dist);
    free(router.queue);
    free(path);
    tacos_sim_free(r);
    for (size_t l = 0; st.waiting && l < m; l++)
        free(st.waiting[l].v);
    free(st.waiting);
    free(st.m);
    free(st.hops);
    free(st.dependents);
    free(st.busy);
    free(st.events.v);
    free(st.touched);
    free(st.is_touched);
    return rc;
}

int tacos_sim_utilization(const tacos_sim_t *r, int nbins, double *out)
{
    if (nbins < 1)
        return tacos_error(TACOS_ERR_ARG, "utilization needs at least one bin");
    for (int b = 0; b < nbins; b++)
        out[b] = 0;
    if (r->time_us <= 0 || !r->nlinks)
        return TACOS_OK;
    double w = r->time_us / nbins;
    for (size_t i = 0; i < r->nbusy; i++) {
        double a = r->busy_start_us[i], e = r->busy_end_us[i];
        for (int b = (int)(a / w); b < nbins && b * w < e; b++) {
            double lo = fmax(a, b * w), hi = fmin(e, (b + 1) * w);
            if (hi > lo)
                out[b] += hi - lo;
        }
    }
    for (int b = 0; b < nbins; b++)
        out[b] /= w * (double)r->nlinks;
    return TACOS_OK;
}
