/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hierarchical synthesis: the topology seen as G groups (hosts) of L members
 * each, and L rails (the l-th member of every group).  All-Gather is a rail
 * All-Gather then a group All-Gather; Reduce-Scatter a group Reduce-Scatter
 * then a rail Reduce-Scatter; All-Reduce a group Reduce-Scatter, a rail
 * All-Reduce on 1/L of the data and a group All-Gather.  Each level is
 * synthesized by the greedy on its own small topology (once where the
 * groups, or the rails, have the same links), and the levels are joined into
 * one schedule on the whole topology: every transfer in level order starts
 * when its link is free and its sender holds the chunk, so a rail starts on
 * a chunk as soon as the group has reduced it.
 *
 * Chunks: the global chunk c (k per NPU) belongs to NPU c / k.  In a group
 * level (k * G chunks per member) member l's chunk j = q*k + r is the global
 * chunk r of the NPU at position l of group q; in a rail level (k per
 * member) rail member q's chunk r is the global chunk r of that NPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
    int groups, size; /* G groups of L members */
    int *member;      /* member[g * L + l]: NPU id, ascending in a group */
} levels_t;

static int find(int *parent, int v)
{
    while (parent[v] != v)
        v = parent[v] = parent[parent[v]];
    return v;
}

/* Groups: a product shape's first dimension, else the components joined by
 * links faster than the slowest.  0 when the topology has no two levels of
 * equal groups. */
static int find_levels(const tacos_topo_t *t, levels_t *lv)
{
    int n = t->npus, *parent = malloc(n * sizeof *parent), *first = malloc(n * sizeof *first);
    int *count = calloc(n, sizeof *count), found = 0;
    lv->member = malloc(n * sizeof *lv->member);
    if (!parent || !first || !count || !lv->member) {
        found = -1;
        goto out;
    }
    double slowest = 0;
    for (size_t i = 0; i < t->nlinks; i++)
        if (!i || t->links[i].bw_gbps < slowest)
            slowest = t->links[i].bw_gbps;
    for (int v = 0; v < n; v++)
        parent[v] = t->ndims >= 2 ? v - v % t->dims[0] : v;
    for (size_t i = 0; t->ndims < 2 && i < t->nlinks; i++)
        if (t->links[i].bw_gbps > slowest)
            parent[find(parent, t->links[i].src)] = find(parent, t->links[i].dst);
    int groups = 0;
    for (int v = 0; v < n; v++) { /* groups numbered by their smallest NPU */
        int r = find(parent, v);
        if (!count[r]++)
            first[r] = groups++;
    }
    int size = n / groups;
    if (groups < 2 || size < 2 || groups * size != n)
        goto out;
    for (int v = 0; v < n; v++)
        if (count[find(parent, v)] != size)
            goto out;
    memset(count, 0, n * sizeof *count);
    for (int v = 0; v < n; v++) {
        int g = first[find(parent, v)];
        lv->member[g * size + count[g]++] = v;
    }
    lv->groups = groups;
    lv->size = size;
    found = 1;
out:
    free(parent);
    free(first);
    free(count);
    return found;
}

static int by_index(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The links among npus[0..n) (pos[v]: v's index there, or -1), renumbered,
 * in t's order; t finalized.  TACOS_ERR_TOPO when they do not join them all. */
static int sub_topo(const tacos_topo_t *t, const int *npus, int n, int *pos, tacos_topo_t **out)
{
    tacos_topo_t *s = NULL;
    size_t m = 0, cap = 0, *idx = NULL;
    int rc = tacos_topo_create(n, "level", &s);
    for (int i = 0; !rc && i < n; i++)
        pos[npus[i]] = i;
    for (int i = 0; !rc && i < n; i++)
        for (size_t j = t->out_off[npus[i]]; !rc && j < t->out_off[npus[i] + 1]; j++) {
            if (pos[t->links[t->out_links[j]].dst] < 0)
                continue;
            size_t *g = tacos_grow(idx, &cap, m, sizeof *idx, 64);
            if (!g)
                rc = tacos_error(TACOS_ERR_NOMEM, "out of memory selecting a level's links");
            else
                (idx = g)[m++] = t->out_links[j];
        }
    if (!rc)
        qsort(idx, m, sizeof *idx, by_index);
    for (size_t i = 0; !rc && i < m; i++) {
        const tacos_link_t *l = &t->links[idx[i]];
        rc = tacos_topo_add_link(s, pos[l->src], pos[l->dst], l->lat_us, l->bw_gbps);
    }
    free(idx);
    for (int i = 0; i < n; i++)
        pos[npus[i]] = -1;
    if (!rc && !(rc = tacos_topo_finalize(s)))
        rc = tacos_topo_check_connected(s);
    if (rc) {
        tacos_topo_free(s);
        return rc == TACOS_ERR_NOMEM ? rc : TACOS_ERR_TOPO;
    }
    *out = s;
    return TACOS_OK;
}

static int same_links(const tacos_topo_t *a, const tacos_topo_t *b)
{
    return a->nlinks == b->nlinks && !memcmp(a->links, b->links, a->nlinks * sizeof *a->links);
}

typedef struct {
    const tacos_topo_t *topo;
    const tacos_synth_opts_t *o;
    const levels_t *lv;
    int *pos;
    tacos_xfer_t *x; /* level order in reduce (4 * level + 2 * rail + reduces) */
    size_t n;
    int rank;        /* -1: every rank's transfers; else only this rank's */
    double offset;   /* where the next level starts (one after the other) */
    double estimate; /* the first group's and rail's levels one after the other */
    /* one rank: per add_level call, its first level, kind and length;
     * rail_at[0] and [1], per chunk of a rail: when the first rail takes it
     * at the rank's group in its first level and in its last (the earliest
     * start there or end there of a transfer of it) */
    int calls, call_level[3], call_rails[3];
    double call_len[3], *rail_at[2];
} compose_t;

/* The first rail's level s: when it takes each chunk at the rank's group,
 * the earlier of a transfer's start there and its end there, in its first
 * level (its Reduce-Scatter where it is an All-Reduce) and its last (its
 * All-Gather).  Every rank synthesizes the first rail, so the two ends of a
 * group link (one group) see the same times. */
static int note_rail(compose_t *c, const tacos_sched_t *s, tacos_coll_t coll, int group)
{
    size_t cells = (size_t)c->o->chunks_per_npu * (size_t)c->lv->groups;
    for (int w = 0; w < 2; w++) {
        free(c->rail_at[w]); /* (one rail level per plan: once) */
        if (!(c->rail_at[w] = malloc((cells + 1) * sizeof *c->rail_at[w])))
            return tacos_error(TACOS_ERR_NOMEM, "out of memory composing levels");
        for (size_t i = 0; i < cells; i++)
            c->rail_at[w][i] = INFINITY;
    }
    for (size_t i = 0; i < s->nxfers; i++) {
        const tacos_xfer_t *y = &s->xfers[i];
        for (int w = 0; w < 2; w++) {
            if (coll == TACOS_ALLREDUCE && w == !!y->reduce)
                continue; /* Reduce-Scatter first, All-Gather last */
            double *at = &c->rail_at[w][y->chunk];
            if (y->src == group && y->start_us < *at)
                *at = y->start_us;
            if (y->dst == group && y->end_us < *at)
                *at = y->end_us;
        }
    }
    return TACOS_OK;
}

static int by_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One rank's part: each group level's transfers in the order the adjacent
 * rail level takes their chunks at the group, as the whole composition's
 * level order has them; a chunk's own transfers keep their order.  A group
 * level's transfer moves from `start` to start + shift + rank * length,
 * rank being where its chunk's rail time falls among the group's k * G
 * (at most k * G distinct), shift the room earlier group levels took
 * ((k * G - 1) lengths each, the same on every rank): so levels stay one
 * after the other, and both ends of a link agree. */
static int order_part(compose_t *c)
{
    const levels_t *lv = c->lv;
    size_t k = (size_t)c->o->chunks_per_npu, cells = k * (size_t)lv->groups;
    size_t distinct[2] = {0, 0};
    int *group = malloc(c->topo->npus * sizeof *group), rc = TACOS_OK;
    double *sorted[2] = {malloc((cells + 1) * sizeof(double)), malloc((cells + 1) * sizeof(double))};
    double shift[3] = {0, 0, 0};
    if (!group || !sorted[0] || !sorted[1]) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory composing levels");
        goto out;
    }
    for (int v = 0; v < lv->groups * lv->size; v++)
        group[lv->member[v]] = v / lv->size;
    for (int w = 0; w < 2; w++) {
        memcpy(sorted[w], c->rail_at[w], cells * sizeof(double));
        qsort(sorted[w], cells, sizeof(double), by_time);
        for (size_t i = 0; i < cells; i++)
            if (!distinct[w] || sorted[w][i] != sorted[w][distinct[w] - 1])
                sorted[w][distinct[w]++] = sorted[w][i];
    }
    for (int i = 1; i < c->calls; i++)
        shift[i] = shift[i - 1] + (c->call_rails[i - 1] ? 0 : (double)(cells - 1) * c->call_len[i - 1]);
    for (size_t i = 0; i < c->n; i++) {
        tacos_xfer_t *x = &c->x[i];
        int call = 0;
        while (call + 1 < c->calls && c->call_level[call + 1] <= x->reduce / 4)
            call++;
        x->start_us += shift[call];
        x->end_us += shift[call];
        if (c->call_rails[call])
            continue;
        /* a group level before the rails follows their first level, one
         * after them their last; group member `owner`'s chunk r is rail
         * `owner`'s chunk r */
        int w = call > 0;
        double t = c->rail_at[w][(size_t)group[x->chunk / (int)k] * k + (size_t)x->chunk % k];
        size_t lo = 0, hi = distinct[w];
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (sorted[w][mid] < t)
                lo = mid + 1;
            else
                hi = mid;
        }
        x->start_us += (double)lo * c->call_len[call];
        x->end_us += (double)lo * c->call_len[call];
    }
out:
    free(group);
    free(sorted[0]);
    free(sorted[1]);
    return rc;
}

/* One level's collective on each of its sets (every group, or every rail),
 * synthesized once per distinct set of links, appended to c->x with the
 * set's NPU and chunk numbers (one rank: only its own set's transfers that
 * touch it).  Every set is checked for its own links. */
static int add_level(compose_t *c, int level, tacos_coll_t coll, int rails)
{
    const levels_t *lv = c->lv;
    int sets = rails ? lv->size : lv->groups, n = rails ? lv->groups : lv->size;
    int k = c->o->chunks_per_npu, per = rails ? k : k * lv->groups, mine = -1;
    int *npus = malloc(n * sizeof *npus), rc = TACOS_OK;
    double longest = 0;
    tacos_topo_t *kept = NULL;
    tacos_sched_t *s = NULL;
    if (!npus)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory composing levels");
    int mine_group = -1;
    for (int v = 0; c->rank >= 0 && v < lv->groups * lv->size; v++)
        if (lv->member[v] == c->rank) { /* the rank's set: its group, or its rail */
            mine = rails ? v % lv->size : v / lv->size;
            mine_group = v / lv->size;
        }
    for (int set = 0; set < sets && !rc; set++) {
        for (int j = 0; j < n; j++)
            npus[j] = rails ? lv->member[j * lv->size + set] : lv->member[set * lv->size + j];
        tacos_topo_t *sub = NULL;
        if ((rc = sub_topo(c->topo, npus, n, c->pos, &sub)))
            break; /* every set is checked, so every rank refuses alike */
        if (c->rank >= 0 && set && set != mine) { /* one rank: the first set (for the */
            tacos_topo_free(sub);                /* shared estimate) and its own */
            continue;
        }
        if (!kept || !same_links(kept, sub)) {
            tacos_synth_opts_t o = *c->o;
            if (c->rank < 0) /* the whole composition is retimed transfer by transfer */
                o.chunks_per_msg = 1;
            o.coll = coll;
            o.chunks_per_npu = per;
            o.size_bytes = c->o->size_bytes / (rails ? lv->size : 1);
            if (!o.size_bytes)
                o.size_bytes = 1;
            tacos_sched_free(s);
            s = NULL;
            tacos_topo_free(kept);
            kept = sub;
            if ((rc = tacos_synthesize(sub, &o, &s)))
                break;
        } else {
            tacos_topo_free(sub);
        }
        tacos_xfer_t *x = realloc(c->x, (c->n + s->nxfers + 1) * sizeof *x);
        if (!x) {
            rc = tacos_error(TACOS_ERR_NOMEM, "out of memory composing levels");
            break;
        }
        c->x = x;
        longest = s->time_us > longest ? s->time_us : longest;
        if (!set)
            c->estimate += s->time_us;
        if (c->rank >= 0 && rails && !set && (rc = note_rail(c, s, coll, mine_group)))
            break;
        for (size_t i = 0; i < s->nxfers && (c->rank < 0 || set == mine); i++) {
            const tacos_xfer_t *y = &s->xfers[i];
            if (c->rank >= 0 && npus[y->src] != c->rank && npus[y->dst] != c->rank)
                continue;
            int owner = y->chunk / per, r = y->chunk % per; /* member `owner`'s chunk r */
            int npu = rails ? lv->member[owner * lv->size + set]
                            : lv->member[(r / k) * lv->size + owner];
            /* reduce: 4 * level + 2 * rail + reduces (the rail All-Reduce's
             * All-Gather is a level of its own) */
            int lvl = level + (coll == TACOS_ALLREDUCE && !y->reduce);
            x[c->n++] = (tacos_xfer_t){c->offset + y->start_us, c->offset + y->end_us,
                                       npu * k + r % k, npus[y->src], npus[y->dst],
                                       4 * lvl + 2 * rails + !!y->reduce};
        }
    }
    if (c->rank >= 0 && c->calls < 3) { /* (three levels at most: compose's plans) */
        c->call_level[c->calls] = level;
        c->call_rails[c->calls] = rails;
        c->call_len[c->calls++] = longest;
    }
    c->offset += longest;
    tacos_topo_free(kept);
    tacos_sched_free(s);
    free(npus);
    return rc;
}

/* Level order: level by level; a rail level in its own start order, a group
 * level chunk by chunk in the order the adjacent rail level takes them (a
 * group's Reduce-Scatter completes first the chunks its rail sends first;
 * its All-Gather spreads first those the rail delivered first).  Every
 * chunk's transfers within a level keep their start order. */
typedef struct {
    int level, chunk;
    double rail_us, start_us;
    size_t i;
} order_t;

static int by_order(const void *a, const void *b)
{
    const order_t *x = a, *y = b;
    if (x->level != y->level)
        return x->level - y->level;
    if (x->rail_us != y->rail_us)
        return (x->rail_us > y->rail_us) - (x->rail_us < y->rail_us);
    if (x->chunk != y->chunk)
        return x->chunk - y->chunk;
    if (x->start_us != y->start_us)
        return (x->start_us > y->start_us) - (x->start_us < y->start_us);
    return (x->i > y->i) - (x->i < y->i); /* total: the same order with any qsort */
}

static int level_order(compose_t *c, int nchunks)
{
    const levels_t *lv = c->lv;
    size_t n = c->n, G = (size_t)lv->groups, cells = (size_t)nchunks * G;
    int *group = malloc(c->topo->npus * sizeof *group), first = -1, last = -1, rc = TACOS_OK;
    double *at = malloc((2 * cells + 1) * sizeof *at); /* first rail level, last */
    order_t *o = malloc((n + 1) * sizeof *o);
    tacos_xfer_t *x = malloc((n + 1) * sizeof *x);
    if (!group || !at || !o || !x) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory composing levels");
        goto out;
    }
    for (int v = 0; v < lv->groups * lv->size; v++)
        group[lv->member[v]] = v / lv->size;
    for (size_t i = 0; i < 2 * cells; i++)
        at[i] = INFINITY;
    for (size_t i = 0; i < n; i++)
        if (c->x[i].reduce & 2) {
            int level = c->x[i].reduce / 4;
            first = first < 0 || level < first ? level : first;
            last = level > last ? level : last;
        }
    for (size_t i = 0; i < n; i++) { /* when the rail levels take each (chunk, group) */
        const tacos_xfer_t *y = &c->x[i];
        int level = y->reduce / 4;
        if (!(y->reduce & 2) || (level != first && level != last))
            continue;
        for (int end = 0; end < 2; end++) {
            double t = end ? y->end_us : y->start_us;
            size_t cell = (size_t)y->chunk * G + group[end ? y->dst : y->src];
            if (level == first && t < at[cell])
                at[cell] = t;
            if (level == last && t < at[cells + cell])
                at[cells + cell] = t;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const tacos_xfer_t *y = &c->x[i];
        int level = y->reduce / 4;
        size_t cell = (size_t)y->chunk * G + group[y->src];
        double rail = y->reduce & 2 ? y->start_us : level < first ? at[cell] : at[cells + cell];
        o[i] = (order_t){level, y->chunk, rail, y->start_us, i};
    }
    qsort(o, n, sizeof *o, by_order);
    for (size_t i = 0; i < n; i++)
        x[i] = c->x[o[i].i];
    free(c->x);
    c->x = x;
    x = NULL;
out:
    free(group);
    free(at);
    free(o);
    free(x);
    return rc;
}

/* A transfer's chunk at its sender (send) or receiver (arrival), for the
 * dependencies: a send waits for every earlier arrival of its chunk there. */
typedef struct {
    uint64_t key; /* npu * nchunks + chunk */
    size_t xfer;  /* index in level order */
    int arrival;
} end_t;

static int by_key_order(const void *a, const void *b)
{
    const end_t *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->xfer > y->xfer) - (x->xfer < y->xfer);
}

typedef struct {
    compose_t *c;
    tacos_heap_t *ready;  /* per link: ready transfers by level order */
    char *busy;           /* per link */
    size_t *next, *succ;  /* per link: its next rail transfer; per transfer: the next on its link */
    tacos_heap_t events;  /* (end, transfer) */
    double chunk;
    size_t started;
} list_t;

/* Link l, if idle, starts at time t its first ready transfer; a rail link
 * only the next of its level's order (taking a later one that is ready
 * can delay the one the rail's pipeline waits for by a whole transfer). */
static int start(list_t *q, size_t l, double t)
{
    if (q->busy[l] || !q->ready[l].n)
        return TACOS_OK;
    size_t i = q->ready[l].v[0].id;
    tacos_xfer_t *x = &q->c->x[i];
    if (x->reduce & 2) {
        if (i != q->next[l])
            return TACOS_OK;
        q->next[l] = q->succ[i];
    }
    tacos_heap_pop(&q->ready[l]);
    q->busy[l] = 1;
    q->started++;
    x->start_us = t;
    x->end_us = t + tacos_link_cost_us(&q->c->topo->links[l], q->chunk);
    return tacos_heap_push(&q->events, (tacos_heap_item_t){x->end_us, 0, i});
}

static int ready(list_t *q, size_t i, size_t l, double t)
{
    int rc = tacos_heap_push(&q->ready[l], (tacos_heap_item_t){(double)i, 0, i});
    return rc ? rc : start(q, l, t);
}

/* The levels' transfers as a list schedule: a transfer is ready when every
 * arrival of its chunk at its sender earlier in level order has ended; a
 * link that frees starts its ready transfer earliest in level order. */
static int retime(compose_t *c, tacos_sched_t *s)
{
    size_t n = c->n, nl = c->topo->nlinks;
    end_t *e = malloc((2 * n + 1) * sizeof *e);
    size_t *link = malloc((n + 1) * sizeof *link), *pending = calloc(n + 1, sizeof *pending);
    size_t *after = malloc((n + 1) * sizeof *after); /* arrival's first later entry */
    list_t q = {c, calloc(nl + 1, sizeof *q.ready), calloc(nl + 1, 1),
                malloc((nl + 1) * sizeof *q.next), malloc((n + 1) * sizeof *q.succ), {0}, 0, 0};
    int rc = TACOS_OK;
    if (!e || !link || !pending || !after || !q.ready || !q.busy || !q.next || !q.succ ||
        (rc = tacos_sched_reserve(s, n)) || (rc = level_order(c, s->nchunks))) {
        rc = rc ? rc : tacos_error(TACOS_ERR_NOMEM, "out of memory composing levels");
        goto out;
    }
    q.chunk = tacos_sched_chunk_bytes(s);
    for (size_t l = 0; l < nl; l++)
        q.next[l] = n;
    for (size_t i = n; i-- > 0 && !rc;) {
        const tacos_xfer_t *x = &c->x[i];
        long l = tacos_topo_find_link(c->topo, x->src, x->dst);
        if (l < 0) {
            rc = tacos_error(TACOS_ERR_INVALID, "composing levels: no link %d->%d", x->src, x->dst);
            break;
        }
        link[i] = (size_t)l;
        q.succ[i] = q.next[link[i]];
        q.next[link[i]] = i;
        e[2 * i] = (end_t){(uint64_t)x->src * s->nchunks + x->chunk, i, 0};
        e[2 * i + 1] = (end_t){(uint64_t)x->dst * s->nchunks + x->chunk, i, 1};
    }
    if (rc)
        goto out;
    qsort(e, 2 * n, sizeof *e, by_key_order);
    for (size_t i = 0, arrived = 0; i < 2 * n; i++) {
        if (i && e[i].key != e[i - 1].key)
            arrived = 0;
        if (e[i].arrival) {
            after[e[i].xfer] = i + 1;
            arrived++;
        } else {
            pending[e[i].xfer] = arrived;
        }
    }
    for (size_t i = 0; i < n && !rc; i++)
        if (!pending[i])
            rc = ready(&q, i, link[i], 0);
    while (q.events.n && !rc) {
        tacos_heap_item_t ev = tacos_heap_pop(&q.events);
        size_t done = ev.id, key = after[done] - 1;
        q.busy[link[done]] = 0;
        for (size_t j = after[done]; j < 2 * n && e[j].key == e[key].key && !rc; j++)
            if (!e[j].arrival && !--pending[e[j].xfer])
                rc = ready(&q, e[j].xfer, link[e[j].xfer], ev.k1);
        if (!rc)
            rc = start(&q, link[done], ev.k1);
    }
    for (size_t i = 0; i < n && !rc; i++) {
        tacos_xfer_t x = c->x[i];
        x.reduce &= 1;
        s->xfers[s->nxfers++] = x;
    }
    if (!rc && q.started != n)
        rc = tacos_error(TACOS_ERR_INVALID, "composing levels: %zu of %zu transfers never ready",
                         n - q.started, n);
out:
    for (size_t l = 0; q.ready && l < nl; l++)
        free(q.ready[l].v);
    free(q.ready);
    free(q.busy);
    free(q.next);
    free(q.succ);
    free(q.events.v);
    free(e);
    free(link);
    free(pending);
    free(after);
    return rc;
}

/* rank < 0: the whole schedule, list-scheduled; else the transfers of
 * `rank` with the levels one after the other. */
static int compose(const tacos_topo_t *topo, const tacos_synth_opts_t *o, int rank,
                   tacos_sched_t **out)
{
    static const struct {
        tacos_coll_t coll;
        int nlevels;
        tacos_coll_t level[3];
        int rails[3];
    } plans[] = {
        {TACOS_ALLGATHER, 2, {TACOS_ALLGATHER, TACOS_ALLGATHER}, {1, 0}},
        {TACOS_REDUCE_SCATTER, 2, {TACOS_REDUCE_SCATTER, TACOS_REDUCE_SCATTER}, {0, 1}},
        {TACOS_ALLREDUCE, 3, {TACOS_REDUCE_SCATTER, TACOS_ALLREDUCE, TACOS_ALLGATHER}, {0, 1, 0}},
    };
    levels_t lv = {0};
    compose_t c = {.topo = topo, .o = o, .lv = &lv, .rank = rank};
    tacos_sched_t *s = NULL;
    int p = 0, rc = TACOS_OK;
    while (p < 3 && plans[p].coll != o->coll)
        p++;
    if ((rc = tacos_check_opts(topo, o)))
        return rc;
    if (p == 3)
        return tacos_error(TACOS_ERR_TOPO, "no hierarchical %s (All-Gather, Reduce-Scatter and "
                           "All-Reduce only)", tacos_coll_name(o->coll));
    int found = find_levels(topo, &lv);
    if (found <= 0) {
        rc = found ? tacos_error(TACOS_ERR_NOMEM, "out of memory finding levels")
                   : tacos_error(TACOS_ERR_TOPO, "%s has no two levels of equal groups",
                                 topo->name);
        goto out;
    }
    if (!(c.pos = malloc(topo->npus * sizeof *c.pos))) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory composing levels");
        goto out;
    }
    memset(c.pos, 0xff, topo->npus * sizeof *c.pos);
    for (int i = 0, level = 0; i < plans[p].nlevels && !rc; i++) {
        /* the rail All-Reduce is two levels: its Reduce-Scatter and All-Gather */
        rc = add_level(&c, level, plans[p].level[i], plans[p].rails[i]);
        level += plans[p].level[i] == TACOS_ALLREDUCE ? 2 : 1;
    }
    if (rc == TACOS_ERR_TOPO)
        rc = tacos_error(TACOS_ERR_TOPO, "%s: a group or rail of %d x %d is not connected by "
                         "its own links", topo->name, lv.groups, lv.size);
    if (!rc && rank >= 0 && c.rail_at[0])
        rc = order_part(&c);
    if (!rc)
        rc = tacos_sched_alloc(o->coll, topo->npus, o->chunks_per_npu, o->root, o->size_bytes, topo,
                               &s);
    if (!rc && rank >= 0 && !(rc = tacos_sched_reserve(s, c.n)))
        for (size_t i = 0; i < c.n; i++) {
            s->xfers[s->nxfers] = c.x[i];
            s->xfers[s->nxfers++].reduce &= 1;
        }
    if (!rc && (rank >= 0 || !(rc = retime(&c, s)))) {
        tacos_sched_sort(s);
        if (rank >= 0)
            s->time_us = c.estimate;
        s->levels = rank >= 0 ? 2 : 1;
        *out = s;
        s = NULL;
    }
out:
    tacos_sched_free(s);
    free(lv.member);
    free(c.pos);
    free(c.x);
    free(c.rail_at[0]);
    free(c.rail_at[1]);
    return rc;
}

int tacos_synthesize_hier(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                          tacos_sched_t **out)
{
    return compose(topo, o, -1, out);
}

static int one_rank(const tacos_topo_t *topo, const tacos_synth_opts_t *o, const void *rank,
                    tacos_auto_pass_t *pass, tacos_sched_t **out)
{
    (void)pass; /* (synthesized in full: its estimate decides k) */
    return compose(topo, o, *(const int *)rank, out);
}

int tacos_synthesize_hier_rank(const tacos_topo_t *topo, const tacos_synth_opts_t *o, int rank,
                               tacos_sched_t **out)
{
    if (rank < 0 || rank >= topo->npus)
        return tacos_error(TACOS_ERR_ARG, "rank %d is not an NPU of 0..%d", rank, topo->npus - 1);
    if (o->chunks_per_npu < 0)
        return tacos_error(TACOS_ERR_ARG, "chunks per NPU must be >= 0, got %d", o->chunks_per_npu);
    return o->chunks_per_npu ? compose(topo, o, rank, out)
                             : tacos_auto_k(topo, o, TACOS_AUTO_MAX_K, one_rank, &rank, out);
}

int tacos_synthesize_kept_part(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                               const tacos_sched_t *choice, int rank, tacos_sched_t **out)
{
    tacos_synth_opts_t at_k = *o;
    tacos_sched_t *part = NULL;
    *out = NULL;
    if (choice->levels != 2 || choice->nxfers)
        return tacos_error(TACOS_ERR_ARG, "not a part's choice (levels %d, %zu transfers)",
                           choice->levels, choice->nxfers);
    at_k.chunks_per_npu = choice->chunks_per_npu;
    int rc = tacos_synthesize_hier_rank(topo, &at_k, rank, &part);
    if (!rc && part->time_us != choice->time_us) {
        rc = tacos_error(TACOS_ERR_PARSE, "rank %d's %s part at k = %d models %.17g us, the kept "
                         "choice %.17g us (kept by another build?)", rank,
                         tacos_coll_name(o->coll), at_k.chunks_per_npu, part->time_us,
                         choice->time_us);
        tacos_sched_free(part);
        part = NULL;
    }
    *out = part;
    return rc;
}

int tacos_synthesize_for_rank(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                              tacos_hier_t hier, int rank, tacos_sched_t **out)
{
    tacos_sched_t *part = NULL, *flat = NULL;
    *out = NULL;
    int rc = hier == TACOS_HIER_FLAT ? TACOS_ERR_TOPO
                                     : tacos_synthesize_hier_rank(topo, o, rank, &part);
    if (rc != TACOS_ERR_TOPO &&
        (rc || hier == TACOS_HIER_LEVELS || topo->npus >= TACOS_AUTO_FLAT_NPUS)) {
        *out = part; /* (no levels: flat, below) */
        return rc;
    }
    /* flat's k = 1 against the part: one clearly slower stops there, as a
     * larger k does against a smaller (docs/synthesis.md says why) */
    rc = o->chunks_per_npu > 0 || !part
             ? tacos_synthesize_auto(topo, o, TACOS_AUTO_MAX_K, TACOS_HIER_FLAT, &flat)
             : tacos_synthesize_flat_against(topo, o, TACOS_AUTO_MAX_K, part->time_us, &flat);
    if (rc == TACOS_SLOWER && part) {
        *out = part;
        return TACOS_OK;
    }
    if (rc) {
        tacos_sched_free(part);
        return rc;
    }
    if (part)
        tacos_sched_keep_faster(&flat, &part);
    *out = flat;
    return TACOS_OK;
}

typedef struct {
    tacos_xfer_t x;
    int receiver; /* from the receiver's part (else the sender's) */
} seen_t;

static int by_transfer(const void *a, const void *b)
{
    const seen_t *p = a, *q = b;
    const tacos_xfer_t *x = &p->x, *y = &q->x;
    if (x->src != y->src || x->dst != y->dst)
        return x->src != y->src ? (x->src > y->src) - (x->src < y->src)
                                : (x->dst > y->dst) - (x->dst < y->dst);
    if (x->chunk != y->chunk || x->reduce != y->reduce)
        return x->chunk != y->chunk ? (x->chunk > y->chunk) - (x->chunk < y->chunk)
                                    : (x->reduce > y->reduce) - (x->reduce < y->reduce);
    if (x->start_us != y->start_us)
        return (x->start_us > y->start_us) - (x->start_us < y->start_us);
    return p->receiver - q->receiver;
}

int tacos_synthesize_hier_parts(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                                tacos_sched_t **out)
{
    tacos_sched_t *part = NULL, *s = NULL;
    tacos_synth_opts_t at_k = *o;
    seen_t *seen = NULL;
    size_t n = 0, cap = 0;
    int rc = tacos_synthesize_hier_rank(topo, o, 0, &part); /* (k as every rank picks it) */
    if (!rc) {
        at_k.chunks_per_npu = part->chunks_per_npu;
        rc = tacos_sched_alloc(o->coll, topo->npus, at_k.chunks_per_npu, o->root, o->size_bytes,
                               topo, &s);
    }
    for (int r = 0; r < topo->npus && !rc; r++) { /* every transfer, seen by both ends */
        if (r && (rc = compose(topo, &at_k, r, &part)))
            break;
        if (n + part->nxfers > cap) {
            size_t want = n + part->nxfers > 2 * cap ? n + part->nxfers : 2 * cap;
            seen_t *v = realloc(seen, want * sizeof *v);
            if (v)
                seen = v, cap = want;
            else
                rc = tacos_error(TACOS_ERR_NOMEM, "out of memory joining parts");
        }
        for (size_t i = 0; i < part->nxfers && !rc; i++)
            if (part->xfers[i].src == r || part->xfers[i].dst == r)
                seen[n++] = (seen_t){part->xfers[i], part->xfers[i].dst == r};
            else
                rc = tacos_error(TACOS_ERR_INVALID, "internal: rank %d's part holds %d->%d", r,
                                 part->xfers[i].src, part->xfers[i].dst);
        tacos_sched_free(part);
        part = NULL;
    }
    tacos_sched_free(part);
    if (!rc && n)
        qsort(seen, n, sizeof *seen, by_transfer);
    if (!rc)
        rc = tacos_sched_reserve(s, n / 2);
    /* both ends' views side by side: the same level synthesis at the same
     * offset gives both the same times, bit for bit */
    for (size_t i = 0; i < n && !rc; i += 2) {
        const tacos_xfer_t *a = &seen[i].x, *b = i + 1 < n ? &seen[i + 1].x : NULL;
        if (!b || seen[i].receiver || !seen[i + 1].receiver || a->src != b->src ||
            a->dst != b->dst || a->chunk != b->chunk || a->reduce != b->reduce)
            rc = tacos_error(TACOS_ERR_INVALID,
                             "internal: joining the ranks' parts: transfer %d->%d of chunk %d "
                             "is in one end's part only", a->src, a->dst, a->chunk);
        else if (a->start_us != b->start_us)
            rc = tacos_error(TACOS_ERR_TOPO,
                             "joining the ranks' parts: ranks %d and %d see chunk %d's transfer "
                             "between them at different times (their levels fall at other "
                             "times: groups or rails unlike each other)",
                             a->src, a->dst, a->chunk);
        else
            s->xfers[s->nxfers++] = *a;
    }
    free(seen);
    /* The parts' times are their levels' one after the other, and chunk
     * times from each level's share of the bytes (which rounding can make a
     * little short): each transfer in start order starts again once its
     * link is free and its chunk has reached its sender, lasting its link's
     * time for the chunk (split.c, in one part). */
    tacos_sched_t *joined = NULL;
    if (!rc) {
        tacos_sched_sort(s);
        rc = tacos_sched_split(s, topo, 1, &joined);
    }
    tacos_sched_free(s);
    if (!rc && (rc = tacos_topo_copy(topo, &joined->topo)))
        tacos_sched_free(joined);
    if (rc)
        return rc;
    tacos_sched_sort(joined);
    joined->levels = 1;
    *out = joined;
    return TACOS_OK;
}
