/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion-aware simulator: runs a schedule's transfers as messages over a
 * physical network at link granularity.  A transfer whose endpoints are not
 * neighbours is routed over a shortest path (dimension order on generated
 * meshes and tori, lowest-numbered next hop otherwise) and stored and
 * forwarded at each rank, paying latency + bytes/bandwidth per hop; a
 * switch node (tacos_topo_generate_network) passes it on as its head
 * arrives (start_link).  Each link serves one message at a time.  A message
 * leaves its source once the transfers that brought its chunk there have
 * landed.  Links serve waiting
 * messages first come first served (ties: schedule order), or strictly by
 * schedule order among the waiting ones, which is how an executor replays a
 * synthesized schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- messages ----------------------------------------------------------- */

typedef struct {
    int src, dst;
    size_t hop0, nhops, hop; /* hops in the shared array */
    size_t dep0, ndeps;      /* dependents in the shared array */
    size_t pending;          /* messages still to land before it may leave */
    double bytes, key;
    double data_at;          /* when its last byte reached the node it is at */
} msg_t;

typedef struct {
    double k1, k2;
    int32_t a, b;
    size_t xfer;
} sortkey_t;

static int sortkey_cmp(const void *p, const void *q)
{
    const sortkey_t *x = p, *y = q;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    if (x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2)
        return x->k2 < y->k2 ? -1 : 1;
    return (x->xfer > y->xfer) - (x->xfer < y->xfer);
}

typedef struct {
    size_t from, to;
} edge_t;

static int edge_cmp(const void *p, const void *q)
{
    const edge_t *x = p, *y = q;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

typedef struct {
    edge_t *v;
    size_t n, cap;
} edges_t;

static int edge_add(edges_t *e, size_t from, size_t to)
{
    if (from == to)
        return TACOS_OK;
    edge_t *v = tacos_grow(e->v, &e->cap, e->n, sizeof *v, 1024);
    if (!v)
        return TACOS_ERR_NOMEM;
    e->v = v;
    e->v[e->n++] = (edge_t){from, to};
    return TACOS_OK;
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

/* Messages: the transfers on one link with the same start and end (a message of
 * several chunks, e.g. tacos_synth_opts_t.chunks_per_msg), or for step-based
 * schedules one per (step, src, dst), each carrying all its chunks; numbered
 * in the order of their first transfer.  Sets msg_of[transfer]. */
static size_t group_messages(const tacos_sched_t *s, sortkey_t *k, size_t *msg_of, msg_t *m)
{
    size_t n = s->nxfers, nm = 0;
    double chunk = tacos_sched_chunk_bytes(s);
    for (size_t i = 0; i < n; i++) { /* by (src, dst, step or start and end, index) */
        const tacos_xfer_t *x = &s->xfers[i];
        k[i] = s->steps ? (sortkey_t){floor(x->start_us), 0, x->src, x->dst, i}
                        : (sortkey_t){x->start_us, x->end_us, x->src, x->dst, i};
    }
    qsort(k, n, sizeof *k, sortkey_cmp);
    for (size_t i = 0; i < n; i++) { /* msg_of: the first transfer of its message */
        int same = i && k[i].a == k[i - 1].a && k[i].b == k[i - 1].b && k[i].k1 == k[i - 1].k1 &&
                   k[i].k2 == k[i - 1].k2;
        msg_of[k[i].xfer] = same ? msg_of[k[i - 1].xfer] : k[i].xfer;
    }
    for (size_t i = 0; i < n; i++) { /* then its message's number */
        const tacos_xfer_t *x = &s->xfers[i];
        if (msg_of[i] == i) {
            m[nm] = (msg_t){x->src, x->dst, 0, 0, 0, 0, 0, 0, 0, x->start_us, 0};
            msg_of[i] = nm++;
        } else {
            msg_of[i] = msg_of[msg_of[i]];
        }
        m[msg_of[i]].bytes += chunk;
    }
    return nm;
}

/* Dependencies between messages: a transfer waits for every transfer that
 * delivered its chunk to its source by its start; with schedule order, also
 * for the previous transfer between the same pair.  Stored as dependents. */
static int build_deps(const tacos_sched_t *s, int schedule_order, sortkey_t *k,
                      const size_t *msg_of, msg_t *m, size_t nm, size_t **dependents)
{
    size_t n = s->nxfers;
    edges_t e = {0};
    int rc = TACOS_OK;
    for (size_t i = 0; i < n; i++) /* arrivals by (dst, chunk, end) */
        k[i] = (sortkey_t){s->xfers[i].end_us, 0, s->xfers[i].dst, s->xfers[i].chunk, i};
    qsort(k, n, sizeof *k, sortkey_cmp);
    for (size_t i = 0; i < n && !rc; i++) {
        const tacos_xfer_t *x = &s->xfers[i];
        sortkey_t key = {-INFINITY, 0, x->src, x->chunk, 0};
        size_t lo = 0, hi = n;
        while (lo < hi) { /* first arrival of (src, chunk) */
            size_t mid = (lo + hi) / 2;
            if (sortkey_cmp(&k[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < n && k[lo].a == x->src && k[lo].b == x->chunk &&
               k[lo].k1 <= x->start_us + TACOS_TIME_EPS(x->start_us) && !rc;
             lo++)
            rc = edge_add(&e, msg_of[k[lo].xfer], msg_of[i]);
    }
    if (schedule_order && !rc) {
        for (size_t i = 0; i < n; i++) /* transfers by (src, dst, start) */
            k[i] = (sortkey_t){s->xfers[i].start_us, 0, s->xfers[i].src, s->xfers[i].dst, i};
        qsort(k, n, sizeof *k, sortkey_cmp);
        for (size_t i = 1; i < n && !rc; i++)
            if (k[i].a == k[i - 1].a && k[i].b == k[i - 1].b)
                rc = edge_add(&e, msg_of[k[i - 1].xfer], msg_of[k[i].xfer]);
    }
    if (rc) {
        free(e.v);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory simulating %zu transfers", n);
    }
    if (e.n)
        qsort(e.v, e.n, sizeof *e.v, edge_cmp);
    size_t u = 0;
    for (size_t i = 0; i < e.n; i++)
        if (!u || edge_cmp(&e.v[i], &e.v[u - 1]) != 0)
            e.v[u++] = e.v[i];
    *dependents = malloc((u ? u : 1) * sizeof **dependents);
    if (!*dependents) {
        free(e.v);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory simulating %zu transfers", n);
    }
    for (size_t i = 0, j = 0; i < nm; i++) {
        m[i].dep0 = j;
        for (; j < u && e.v[j].from == i; j++) {
            (*dependents)[j] = e.v[j].to;
            m[e.v[j].to].pending++;
        }
        m[i].ndeps = j - m[i].dep0;
    }
    free(e.v);
    return TACOS_OK;
}

typedef struct {
    const tacos_topo_t *net;
    int nranks; /* the schedule's NPUs; nodes from here on are switches */
    msg_t *m;
    size_t nm;
    size_t *hops, *dependents;
    tacos_heap_t *waiting; /* per link */
    char *busy;
    tacos_heap_t events;   /* (time, link freed or -1, message moved on or SIZE_MAX) */
    tacos_sim_t *r;
    size_t *touched;
    size_t ntouched;
    char *is_touched;
} simstate_t;

static void touch(simstate_t *st, size_t l)
{
    if (!st->is_touched[l]) {
        st->is_touched[l] = 1;
        st->touched[st->ntouched++] = l;
    }
}

static int enqueue(simstate_t *st, size_t msg, double t)
{
    msg_t *m = &st->m[msg];
    size_t l = st->hops[m->hop0 + m->hop];
    touch(st, l);
    return tacos_heap_push(&st->waiting[l], (tacos_heap_item_t){t, m->key, msg}) ? TACOS_ERR_NOMEM : TACOS_OK;
}

/* Starts the next message waiting for link l at t.  Its last byte reaches
 * the far end at `done` (no sooner than latency after it reached this end:
 * data_at).  A link between ranks is busy until then.  A switch's port
 * (a link to or from a switch node) is busy for the time it takes to send
 * the bytes at its own rate, not for its latency, nor for a slower
 * link's feeding it (packets of several messages share a faster port), and
 * a switch passes a message on once its head has arrived (cut through); a
 * rank once all of it has (store and forward). */
static int start_link(simstate_t *st, size_t l, double t)
{
    if (st->busy[l] || !st->waiting[l].n)
        return TACOS_OK;
    size_t msg = tacos_heap_pop(&st->waiting[l]).id;
    msg_t *m = &st->m[msg];
    const tacos_link_t *k = &st->net->links[l];
    double send = m->bytes / (k->bw_gbps * 1e3), done = t + k->lat_us + send;
    if (m->hop && m->data_at + k->lat_us > done)
        done = m->data_at + k->lat_us;
    int port = k->src >= st->nranks || k->dst >= st->nranks;
    double free_at = port ? t + send : done;
    double moves_at = k->dst >= st->nranks ? t + k->lat_us : done;
    tacos_sim_t *r = st->r;
    st->busy[l] = 1;
    m->data_at = done;
    r->link_busy_us[l] += free_at - t;
    r->link_bytes[l] += m->bytes;
    r->busy_start_us[r->nbusy] = t;
    r->busy_end_us[r->nbusy++] = free_at;
    if (free_at == moves_at) /* one event does both (between ranks) */
        return tacos_heap_push(&st->events, (tacos_heap_item_t){free_at, (double)l, msg})
                   ? TACOS_ERR_NOMEM
                   : TACOS_OK;
    return tacos_heap_push(&st->events, (tacos_heap_item_t){free_at, (double)l, SIZE_MAX}) ||
                   tacos_heap_push(&st->events, (tacos_heap_item_t){moves_at, -1, msg})
               ? TACOS_ERR_NOMEM
               : TACOS_OK;
}

static int run(simstate_t *st)
{
    int rc = TACOS_OK;
    for (size_t i = 0; i < st->nm && !rc; i++)
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
            return rc ? tacos_error(TACOS_ERR_NOMEM, "out of memory simulating") : TACOS_OK;
        /* land everything that ends now, then start the links it touched */
        t = st->events.v[0].k1;
        double horizon = t + TACOS_TIME_EPS(t);
        while (st->events.n && st->events.v[0].k1 <= horizon && !rc) {
            tacos_heap_item_t ev = tacos_heap_pop(&st->events);
            if (ev.k2 >= 0) { /* a link freed */
                st->busy[(size_t)ev.k2] = 0;
                touch(st, (size_t)ev.k2);
            }
            if (ev.id == SIZE_MAX)
                continue;
            msg_t *m = &st->m[ev.id];
            if (++m->hop < m->nhops) {
                rc = enqueue(st, ev.id, t);
                continue;
            }
            if (m->data_at > st->r->time_us)
                st->r->time_us = m->data_at;
            for (size_t d = 0; d < m->ndeps && !rc; d++) {
                size_t j = st->dependents[m->dep0 + d];
                if (!--st->m[j].pending)
                    rc = enqueue(st, j, t);
            }
        }
    }
}

/* Routes every message: one hop over a link, a shortest path otherwise. */
static int route_all(simstate_t *st)
{
    const tacos_topo_t *net = st->net;
    tacos_router_t router;
    size_t *path = malloc((size_t)net->npus * sizeof *path), total = 0;
    int rc = !tacos_router_init(&router, net) && path ? TACOS_OK : TACOS_ERR_NOMEM;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        total = 0;
        for (size_t i = 0; i < st->nm && !rc; i++) {
            msg_t *m = &st->m[i];
            long l = tacos_topo_find_link(net, m->src, m->dst);
            size_t nh = 1;
            path[0] = (size_t)l;
            if (l < 0 && (rc = tacos_route(&router, m->src, m->dst, path, &nh)))
                break;
            if (pass) {
                memcpy(st->hops + total, path, nh * sizeof *path);
                m->hop0 = total;
                m->nhops = nh;
            }
            total += nh;
        }
        if (!pass && !rc && !(st->hops = malloc((total ? total : 1) * sizeof *st->hops)))
            rc = TACOS_ERR_NOMEM;
    }
    tacos_router_free(&router);
    free(path);
    if (rc == TACOS_ERR_NOMEM)
        return tacos_error(rc, "out of memory routing on %s", net->name);
    if (!rc) { /* one busy interval per hop */
        st->r->busy_start_us = malloc((total ? total : 1) * sizeof(double));
        st->r->busy_end_us = malloc((total ? total : 1) * sizeof(double));
        if (!st->r->busy_start_us || !st->r->busy_end_us)
            rc = tacos_error(TACOS_ERR_NOMEM, "out of memory simulating on %s", net->name);
    }
    return rc;
}

int tacos_simulate(const tacos_sched_t *s, const tacos_topo_t *net, int schedule_order,
                   tacos_sim_t **out)
{
    int ranks = net->nranks ? net->nranks : net->npus;
    if (!net->in_off || ranks != s->npus)
        return tacos_error(TACOS_ERR_ARG,
                           "simulate: network %s has %d ranks, the schedule %d NPUs (or is not "
                           "finalized)",
                           net->name, ranks, s->npus);
    size_t n = s->nxfers, m = net->nlinks ? net->nlinks : 1;
    simstate_t st = {0};
    st.net = net;
    st.nranks = ranks;
    st.r = calloc(1, sizeof *st.r);
    sortkey_t *keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *msg_of = malloc((n ? n : 1) * sizeof *msg_of);
    st.m = calloc(n ? n : 1, sizeof *st.m);
    st.waiting = calloc(m, sizeof *st.waiting);
    st.busy = calloc(m, 1);
    st.touched = malloc(m * sizeof *st.touched);
    st.is_touched = calloc(m, 1);
    int rc = TACOS_OK;
    if (!st.r || !keys || !msg_of || !st.m || !st.waiting || !st.busy || !st.touched ||
        !st.is_touched ||
        !(st.r->link_busy_us = calloc(m, sizeof(double))) ||
        !(st.r->link_bytes = calloc(m, sizeof(double)))) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory simulating %zu transfers on %s", n,
                         net->name);
        goto out;
    }
    st.r->nlinks = net->nlinks;
    st.nm = group_messages(s, keys, msg_of, st.m);
    if ((rc = route_all(&st)) ||
        (rc = build_deps(s, schedule_order, keys, msg_of, st.m, st.nm, &st.dependents)) ||
        (rc = run(&st)))
        goto out;
    *out = st.r;
    st.r = NULL;
out:
    tacos_sim_free(st.r);
    for (size_t l = 0; st.waiting && l < m; l++)
        free(st.waiting[l].v);
    free(st.waiting);
    free(keys);
    free(msg_of);
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
