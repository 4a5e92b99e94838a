/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network between hosts where a fabric file (Slurm's topology.conf,
 * fabric_conf.c) gives the switch tree: the tree is the file's, only the
 * rate and latency of each level are measured, in a few rounds of disjoint
 * exchanges whatever the number of hosts:
 *
 * 1. Ports: in every leaf its hosts in pairs ((0,1), (2,3), ... in host
 *    order), all leaves at once: 8-byte exchanges, S1, then a size for
 *    about SECOND_US at the rate S1 showed, twice, the sooner kept
 *    (once where that size is S1: S1's exchange was the first).  A
 *    leaf's port rate is the median of its pairs'; a leaf with one host
 *    of the communicator takes the median of every pair (where no leaf
 *    has two, the hosts pair in host order across leaves).
 * 2. Uplinks, one level of the tree at a time from the leaves up: under
 *    every switch its children in pairs, the hosts of one matched with the
 *    other's in host order, every matched pair of every switch of the
 *    level exchanging at once, each a size that takes about SECOND_US at
 *    its ports' rate.  What crossed is at most either uplink's rate: where
 *    it is clearly below what the levels under them carry (UP_LIMITED),
 *    both uplinks have at least that rate, and the larger of such bounds
 *    is taken; a child measured unlimited with every one of its hosts
 *    crossing carries what the levels under it do, and one of which only
 *    some crossed (paired with a smaller child) at least what crossed.
 *    An odd child out pairs with the first in one more round; then, under
 *    a switch of three children or more, the largest child whose hosts
 *    never all crossed exchanges with all its siblings' hosts at once, in
 *    one more round (so a leaf of 6 that met only a leaf of 2 fills its
 *    uplink, where its siblings' take that much).
 *
 * Every rank computes the same from the same times: each round's are
 * combined with the callers' max over every rank.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_internal.h"

#define SMALL_BYTES 8
#define SMALL_REPS 5
#define SECOND_US 10000.0
/* An uplink pair's exchanges carried below this share of what the levels
 * under them carry: the uplinks limited them. */
#define UP_LIMITED 0.8
/* The ports' second size runs twice, the sooner kept: on the emulated
 * 16-host tree (8 pairs at once on 2 cores) one run put a leaf's ports at
 * 0.86 of their rate. */
#define PORT_REPS 2
#if PORT_REPS < 2
#error "the ports' S1 exchange stands for one of PORT_REPS, which must leave one to run"
#endif

double tacos_fabric_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

size_t tacos_fabric_sized(double bytes)
{
    if (!(bytes < TACOS_NET_MAX_BYTES))
        return TACOS_NET_MAX_BYTES;
    size_t b = (size_t)bytes & ~(size_t)4095;
    return b > TACOS_NET_S1_BYTES ? b : TACOS_NET_S1_BYTES;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tacos_fabric_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void tacos_fabric_net_free(tacos_fabric_net_t *f)
{
    if (!f)
        return;
    free(f->leaf);
    free(f->used);
    free(f->port_gbps);
    free(f->port_lat_us);
    free(f->up_gbps);
    free(f->up_lat_us);
    memset(f, 0, sizeof *f);
}

/* f's arrays for h hosts and ns switches, zeroed; TACOS_ERR_NOMEM (f
 * freed) where memory is short. */
static int net_alloc(tacos_fabric_net_t *f, int h, int ns)
{
    size_t hs = h > 0 ? (size_t)h : 1, nss = ns > 0 ? (size_t)ns : 1;
    memset(f, 0, sizeof *f);
    f->nhosts = h, f->nswitches = ns;
    f->leaf = calloc(hs, sizeof *f->leaf);
    f->used = calloc(nss, 1);
    f->port_gbps = calloc(nss, sizeof *f->port_gbps);
    f->port_lat_us = calloc(nss, sizeof *f->port_lat_us);
    f->up_gbps = calloc(nss, sizeof *f->up_gbps);
    f->up_lat_us = calloc(nss, sizeof *f->up_lat_us);
    if (f->leaf && f->used && f->port_gbps && f->port_lat_us && f->up_gbps && f->up_lat_us)
        return TACOS_OK;
    tacos_fabric_net_free(f);
    return TACOS_ERR_NOMEM;
}

int tacos_fabric_net_copy(tacos_fabric_net_t *dst, const tacos_fabric_net_t *src)
{
    if (net_alloc(dst, src->nhosts, src->nswitches))
        return tacos_error(TACOS_ERR_NOMEM, "out of memory copying a fabric");
    size_t h = (size_t)src->nhosts, ns = (size_t)src->nswitches;
    memcpy(dst->leaf, src->leaf, h * sizeof *dst->leaf);
    memcpy(dst->used, src->used, ns);
    memcpy(dst->port_gbps, src->port_gbps, ns * sizeof *dst->port_gbps);
    memcpy(dst->port_lat_us, src->port_lat_us, ns * sizeof *dst->port_lat_us);
    memcpy(dst->up_gbps, src->up_gbps, ns * sizeof *dst->up_gbps);
    memcpy(dst->up_lat_us, src->up_lat_us, ns * sizeof *dst->up_lat_us);
    dst->rounds = src->rounds;
    dst->measure_us = src->measure_us;
    return TACOS_OK;
}

/* ---- rounds ---------------------------------------------------------------- */

typedef struct {
    const tacos_net_comm_t *c;
    const int *leader; /* [host]: its first rank */
    int mine;          /* this rank's host where it leads it, else -1 */
    int rounds;
} meter_t;

/* Hosts a[i] and b[i] (i < np, disjoint) exchange at once: 8 bytes
 * (the soonest of SMALL_REPS), then, after every rank is through those,
 * bytes[i] (the soonest of reps: noise only adds time).  t8[i], t[i]: the pair's times, both ends' mean, on every
 * rank (an error on every rank where an exchange failed on one). */
static int round_of(meter_t *m, int np, const int *a, const int *b, const size_t *bytes, int reps,
                    double *t8, double *t)
{
    double *v = calloc(4 * (size_t)(np ? np : 1), sizeof *v), sync = 0;
    int i = 0, side = 0, failed = 0, rc;
    if ((rc = tacos_net_agree_memory(m->c, !v, "measuring the fabric"))) {
        free(v);
        return rc;
    }
    while (i < np && m->mine != a[i] && m->mine != b[i])
        i++;
    if (i < np)
        side = m->mine == b[i];
    int peer = i < np ? (side ? a[i] : b[i]) : -1;
    const size_t small = SMALL_BYTES;
    if (peer >= 0)
        failed = tacos_net_exchange(m->c, m->leader, &peer, 1, &small, SMALL_REPS,
                                    &v[4 * i + side]) != TACOS_OK;
    if ((rc = m->c->max(m->c->ctx, &sync, 1) ? TACOS_ERR_IO : 0)) {
        free(v);
        return tacos_error(rc, "the caller's allreduce failed");
    }
    if (peer >= 0 && !failed)
        failed = tacos_net_exchange(m->c, m->leader, &peer, 1, &bytes[i], reps,
                                    &v[4 * i + 2 + side]) != TACOS_OK;
    if ((rc = tacos_net_agree_max(m->c, v, 4 * np, failed))) {
        free(v);
        return rc;
    }
    for (int k = 0; k < np; k++) {
        t8[k] = (v[4 * k] + v[4 * k + 1]) / 2;
        t[k] = (v[4 * k + 2] + v[4 * k + 3]) / 2;
    }
    free(v);
    m->rounds++;
    return TACOS_OK;
}

/* bytes per microsecond of an exchange of `bytes` in t us of which t8 latency. */
double tacos_fabric_rate(size_t bytes, double t8, double t)
{
    return t > t8 ? (double)bytes / (t - t8) : (double)bytes / t;
}

/* ---- the tree under the communicator's hosts ---------------------------------- */

typedef struct {
    const tacos_fabric_conf_t *conf;
    int h;
    int *host_of; /* [k]: hosts under switches, grouped: under[s] .. under[s] + count[s] */
    int *first, *count; /* [switch] */
    int *depth;         /* [switch]; -1 unused */
    int maxdepth;
} tree_t;

static void tree_free(tree_t *t)
{
    free(t->host_of);
    free(t->first);
    free(t->count);
    free(t->depth);
}

/* Whether host x is under switch s. */
static int under(const tree_t *t, const tacos_fabric_net_t *f, int x, int s)
{
    for (int v = f->leaf[x]; v >= 0; v = t->conf->switches[v].parent)
        if (v == s)
            return 1;
    return 0;
}

static int tree_make(tree_t *t, const tacos_fabric_conf_t *conf, tacos_fabric_net_t *f)
{
    int ns = conf->nswitches, h = f->nhosts;
    memset(t, 0, sizeof *t);
    t->conf = conf, t->h = h;
    t->first = calloc((size_t)ns, sizeof *t->first);
    t->count = calloc((size_t)ns, sizeof *t->count);
    t->depth = malloc((size_t)ns * sizeof *t->depth);
    if (!t->first || !t->count || !t->depth)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for a fabric of %d switches", ns);
    size_t total = 0;
    for (int s = 0; s < ns; s++) {
        int d = 0;
        for (int v = conf->switches[s].parent; v >= 0; v = conf->switches[v].parent)
            d++;
        t->depth[s] = d;
        for (int x = 0; x < h; x++)
            t->count[s] += under(t, f, x, s);
        f->used[s] = t->count[s] > 0;
        if (!f->used[s])
            t->depth[s] = -1;
        else if (d > t->maxdepth)
            t->maxdepth = d;
        t->first[s] = (int)total;
        total += (size_t)t->count[s];
    }
    if (!(t->host_of = malloc((total ? total : 1) * sizeof *t->host_of)))
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for a fabric of %d switches", ns);
    for (int s = 0; s < ns; s++)
        for (int x = 0, k = t->first[s]; x < h; x++)
            if (under(t, f, x, s))
                t->host_of[k++] = x;
    return TACOS_OK;
}

/* Bytes per microsecond the levels under switch s carry for its hosts in
 * set[] (flags by host): the ports of those on s, and what each child
 * carries up to its uplink. */
static double carries(const tree_t *t, const tacos_fabric_net_t *f, int s, const char *set,
                      const double *port, const double *up)
{
    double sum = 0;
    for (int k = 0; k < t->count[s]; k++) {
        int x = t->host_of[t->first[s] + k];
        if (set[x] && f->leaf[x] == s)
            sum += port[s];
    }
    const tacos_fabric_switch_t *sw = &t->conf->switches[s];
    for (int i = 0; i < sw->nchildren; i++) {
        int u = sw->children[i];
        if (t->depth[u] < 0)
            continue;
        double below = carries(t, f, u, set, port, up);
        sum += below < up[u] ? below : up[u];
    }
    return sum;
}

/* ---- the measurement --------------------------------------------------------------- */

/* Step 1: the ports' rates (bytes/us) and latencies. */
static int measure_ports(meter_t *m, const tree_t *t, tacos_fabric_net_t *f, double *port,
                         double *port_lat)
{
    int h = f->nhosts, np = 0, ns = t->conf->nswitches, rc;
    int *a = malloc((size_t)h * sizeof *a), *b = malloc((size_t)h * sizeof *b);
    size_t *bytes = malloc((size_t)h * sizeof *bytes);
    double *t8 = malloc((size_t)h * sizeof *t8), *tt = malloc((size_t)h * sizeof *tt);
    double *r = malloc((size_t)h * sizeof *r), *l = malloc((size_t)h * sizeof *l);
    if (!a || !b || !bytes || !t8 || !tt || !r || !l) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory measuring %d hosts", h);
        goto out;
    }
    for (int s = 0; s < ns; s++)
        for (int k = 0; f->used[s] && k + 1 < t->count[s]; k += 2) {
            int x = t->host_of[t->first[s] + k], y = t->host_of[t->first[s] + k + 1];
            if (f->leaf[x] == s && f->leaf[y] == s)
                a[np] = x, b[np++] = y;
        }
    for (int x = 0; np == 0 && x + 1 < h; x += 2) /* no leaf with two: across leaves */
        a[np] = x, b[np++] = x + 1;
    for (int i = 0; i < np; i++)
        bytes[i] = TACOS_NET_S1_BYTES;
    if ((rc = round_of(m, np, a, b, bytes, 1, t8, tt)))
        goto out;
    /* the size that takes about SECOND_US; where that is S1 for every pair
     * (slow ports), the S1 exchange was the first of its PORT_REPS */
    int s1_done = 1;
    for (int i = 0; i < np; i++) {
        bytes[i] =
            tacos_fabric_sized(tacos_fabric_rate(TACOS_NET_S1_BYTES, t8[i], tt[i]) * SECOND_US);
        s1_done &= bytes[i] == TACOS_NET_S1_BYTES;
        l[i] = tt[i]; /* (l: the S1 times until the latencies) */
    }
    double *t8b = r; /* (the second round's 8-byte times: r until the rates) */
    if ((rc = round_of(m, np, a, b, bytes, PORT_REPS - s1_done, t8b, tt)))
        goto out;
    for (int i = 0; i < np; i++) {
        tt[i] = bytes[i] == TACOS_NET_S1_BYTES ? fmin(tt[i], l[i]) : tt[i];
        t8[i] = fmin(t8[i], t8b[i]);
        l[i] = t8[i] / 2; /* two ports */
    }
    for (int i = 0; i < np; i++)
        tt[i] = tacos_fabric_rate(bytes[i], t8[i], tt[i]);
    double all_rate = 0, all_lat = 0;
    if (np) {
        memcpy(r, tt, (size_t)np * sizeof *r);
        all_rate = tacos_fabric_median(r, np);
        memcpy(r, l, (size_t)np * sizeof *r);
        all_lat = tacos_fabric_median(r, np);
    }
    for (int s = 0; s < ns; s++) { /* (r and the 8-byte times as scratch) */
        int k = 0;
        for (int i = 0; i < np; i++)
            if (f->leaf[a[i]] == s && f->leaf[b[i]] == s)
                r[k] = tt[i], t8[k++] = l[i];
        port[s] = k ? tacos_fabric_median(r, k) : all_rate;
        port_lat[s] = k ? tacos_fabric_median(t8, k) : all_lat;
    }
out:
    free(a);
    free(b);
    free(bytes);
    free(t8);
    free(tt);
    free(r);
    free(l);
    return rc;
}

/* The latency of host x's path up to (not through) switch top: its port
 * and the uplinks below top. */
static double lat_up_to(const tacos_fabric_conf_t *conf, const tacos_fabric_net_t *f, int x,
                        int top, const double *port_lat, const double *up_lat)
{
    double l = port_lat[f->leaf[x]];
    for (int v = f->leaf[x]; v >= 0 && conf->switches[v].parent != top; v = conf->switches[v].parent)
        l += up_lat[v];
    return l;
}

/* Flows between the hosts of children x and y: matched in host order. */
static int add_pair(const tree_t *t, int x, int y, int *a, int *b, int *pc, int nf)
{
    int n = t->count[x] < t->count[y] ? t->count[x] : t->count[y];
    for (int k = 0; k < n; k++, nf++) {
        a[nf] = t->host_of[t->first[x] + k], b[nf] = t->host_of[t->first[y] + k];
        pc[2 * nf] = x, pc[2 * nf + 1] = y;
    }
    return nf;
}

/* Flows from the hosts of child x to those of its siblings kids[0..k)
 * (x among them) taken in turn, as many as both have: partner -1. */
static int add_spread(const tree_t *t, int x, const int *kids, int k, int *a, int *b, int *pc,
                      int nf)
{
    for (int j = 0, at = 0; j < k; j++)
        for (int q = 0; kids[j] != x && q < t->count[kids[j]] && at < t->count[x]; q++, nf++) {
            a[nf] = t->host_of[t->first[x] + at++], b[nf] = t->host_of[t->first[kids[j]] + q];
            pc[2 * nf] = x, pc[2 * nf + 1] = -1;
        }
    return nf;
}

/* The children of switch p still in use, in kids[]; how many. */
static int children(const tree_t *t, int p, int *kids)
{
    const tacos_fabric_switch_t *sw = &t->conf->switches[p];
    int k = 0;
    for (int i = 0; i < sw->nchildren; i++)
        if (t->depth[sw->children[i]] >= 0)
            kids[k++] = sw->children[i];
    return k;
}

/* Step 2 at one depth d: the uplinks of its switches (children of those
 * at d - 1).  lo[s]: the largest rate s's uplink was found limited at;
 * free_[s]: found unlimited with all its hosts crossing; floor_[s]: the
 * most that crossed where it was found unlimited with only some of them;
 * lat_sum, lat_n: its latency's samples.  Up to three rounds: the children
 * in pairs, then an odd one out with the first; then, under a switch of
 * three children or more, the largest of those whose hosts never all
 * crossed (paired with smaller ones) with every sibling at once. */
static int measure_level(meter_t *m, const tree_t *t, tacos_fabric_net_t *f, int d,
                         const double *port, const double *up, const double *up_lat,
                         double *lo, char *free_, double *floor_, double *lat_sum, int *lat_n)
{
    const tacos_fabric_conf_t *conf = t->conf;
    int h = f->nhosts, ns = conf->nswitches, rc = TACOS_OK;
    int *a = malloc((size_t)h * sizeof *a), *b = malloc((size_t)h * sizeof *b);
    int *pc = malloc(2 * (size_t)h * sizeof *pc); /* per flow: its two children */
    int *kids = malloc((size_t)ns * sizeof *kids);
    size_t *bytes = malloc((size_t)h * sizeof *bytes);
    double *t8 = malloc((size_t)h * sizeof *t8), *tt = malloc((size_t)h * sizeof *tt);
    char *set = calloc((size_t)h, 1), *whole = calloc((size_t)ns, 1); /* all hosts crossed */
    if (!a || !b || !pc || !kids || !bytes || !t8 || !tt || !set || !whole) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory measuring %d hosts", h);
        goto out;
    }
    for (int pass = 0; pass < 3 && !rc; pass++) {
        int nf = 0;
        for (int p = 0; p < ns; p++) {
            if (t->depth[p] != d - 1)
                continue;
            int k = children(t, p, kids), x = -1;
            for (int j = 0; pass == 0 && j + 1 < k; j += 2)
                nf = add_pair(t, kids[j], kids[j + 1], a, b, pc, nf);
            if (pass == 1 && k % 2 && k >= 3)
                nf = add_pair(t, kids[k - 1], kids[0], a, b, pc, nf);
            for (int j = 0; pass == 2 && k >= 3 && j < k; j++)
                if (!whole[kids[j]] && (x < 0 || t->count[kids[j]] > t->count[x]))
                    x = kids[j];
            if (x >= 0)
                nf = add_spread(t, x, kids, k, a, b, pc, nf);
        }
        if (!nf)
            continue;
        for (int i = 0; i < nf; i++)
            bytes[i] =
                tacos_fabric_sized(fmin(port[f->leaf[a[i]]], port[f->leaf[b[i]]]) * SECOND_US);
        if ((rc = round_of(m, nf, a, b, bytes, 1, t8, tt)))
            break;
        /* per pair of children (its flows are consecutive; y -1: x with
         * its siblings): what crossed against what the levels under them
         * carry */
        for (int i = 0; i < nf;) {
            int x = pc[2 * i], y = pc[2 * i + 1], p = conf->switches[x].parent, k = i;
            double crossed = 0;
            memset(set, 0, (size_t)h);
            for (; k < nf && pc[2 * k] == x && pc[2 * k + 1] == y; k++) {
                crossed += tacos_fabric_rate(bytes[k], t8[k], tt[k]);
                set[a[k]] = set[b[k]] = 1;
                if (y < 0)
                    continue;
                /* the path's latency less what the levels under x and y
                 * take: their two uplinks */
                double l = (t8[k] - lat_up_to(conf, f, a[k], p, f->port_lat_us, up_lat) -
                            lat_up_to(conf, f, b[k], p, f->port_lat_us, up_lat)) / 2;
                lat_sum[x] += l > 0 ? l : 0, lat_n[x]++;
                lat_sum[y] += l > 0 ? l : 0, lat_n[y]++;
            }
            double under_x = carries(t, f, x, set, port, up), under_y = 0;
            int nk = y >= 0 ? 1 : children(t, p, kids);
            for (int j = 0; j < nk; j++)
                under_y += y >= 0 ? carries(t, f, y, set, port, up)
                           : kids[j] != x ? carries(t, f, kids[j], set, port, up) : 0;
            int limited = crossed < UP_LIMITED * fmin(under_x, under_y);
            /* limited: both have at least that rate (x, with its
             * siblings); unlimited: all a child carries where each of its
             * hosts crossed and what crossed was near all they carry,
             * else at least what crossed (a leaf of 6 paired with one of 2
             * sent 2 flows, siblings of fewer or slower ports carried less
             * than it does: its uplink may carry no more) */
            for (int side = 0; side < 2; side++) {
                int v = side ? y : x, all = v >= 0 && k - i == t->count[v];
                if (v < 0)
                    continue;
                whole[v] |= all;
                if (limited)
                    lo[v] = fmax(lo[v], crossed);
                else if (all && crossed >= UP_LIMITED * (side ? under_y : under_x))
                    free_[v] = 1;
                else
                    floor_[v] = fmax(floor_[v], crossed);
            }
            i = k;
        }
    }
out:
    free(a);
    free(b);
    free(pc);
    free(kids);
    free(bytes);
    free(t8);
    free(tt);
    free(set);
    free(whole);
    return rc;
}

int tacos_fabric_net_measure(const tacos_fabric_conf_t *conf, const tacos_probe_record_t *recs,
                             int n, int me, const tacos_net_comm_t *c, tacos_fabric_net_t *f)
{
    double t0 = tacos_fabric_now_us();
    int ns = conf->nswitches, rc = TACOS_OK;
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local);
    int *leader = malloc((size_t)n * sizeof *leader);
    tree_t t = {0};
    memset(f, 0, sizeof *f);
    double *port = NULL, *up = NULL, *lo = NULL, *floor_ = NULL, *lat_sum = NULL;
    int *lat_n = NULL;
    char *free_ = NULL;
    int h = 0, nomem = !host || !local || !leader;
    if (!nomem) {
        h = tacos_probe_hosts(recs, n, host, local);
        for (int i = n - 1; i >= 0; i--)
            leader[host[i]] = i;
        nomem = net_alloc(f, h, ns) != TACOS_OK;
        port = calloc((size_t)ns, sizeof *port), up = calloc((size_t)ns, sizeof *up);
        lo = calloc((size_t)ns, sizeof *lo), lat_sum = calloc((size_t)ns, sizeof *lat_sum);
        lat_n = calloc((size_t)ns, sizeof *lat_n), free_ = calloc((size_t)ns, 1);
        floor_ = calloc((size_t)ns, sizeof *floor_);
        nomem = nomem || !port || !up || !lo || !floor_ || !lat_sum || !lat_n || !free_;
    }
    /* every host on a leaf of the file, all under one root: the same on
     * every rank (the same records, the same file) */
    for (int x = 0, root = -1; x < h && !rc && !nomem; x++) {
        const char *name = recs[leader[x]].host;
        if ((f->leaf[x] = tacos_fabric_conf_leaf_of(conf, name)) < 0) {
            rc = tacos_error(TACOS_ERR_INVALID, "host %s is not a node of the fabric file", name);
            break;
        }
        int r = f->leaf[x];
        while (conf->switches[r].parent >= 0)
            r = conf->switches[r].parent;
        if (root >= 0 && r != root)
            rc = tacos_error(TACOS_ERR_INVALID, "hosts %s and %s are under different trees of "
                                                "the fabric file (switches %s and %s)",
                             recs[leader[0]].host, name, conf->switches[root].name,
                             conf->switches[r].name);
        root = r;
    }
    if (!rc && !nomem && tree_make(&t, conf, f))
        nomem = 1;
    /* a rank short of memory tells the others before any exchange (what
     * else fails above fails alike on every rank; every rank agrees,
     * whatever failed here) */
    int short_somewhere = tacos_net_agree_memory(c, nomem, "measuring the fabric");
    rc = rc ? rc : short_somewhere;
    if (rc)
        goto out;
    int mine = leader[host[me]] == me ? host[me] : -1;
    meter_t m = {c, leader, mine, 0};
    if ((rc = measure_ports(&m, &t, f, port, f->port_lat_us)))
        goto out;
    /* uplinks from the leaves' level up: up[] of the levels below known */
    for (int s = 0; s < ns; s++)
        up[s] = INFINITY;
    for (int d = t.maxdepth; d >= 1 && !rc; d--) {
        if ((rc = measure_level(&m, &t, f, d, port, up, f->up_lat_us, lo, free_, floor_,
                                lat_sum, lat_n)))
            break;
        for (int s = 0; s < ns; s++) {
            if (t.depth[s] != d)
                continue;
            char *all = calloc((size_t)h, 1);
            if (!all) {
                rc = tacos_error(TACOS_ERR_NOMEM, "out of memory for a fabric");
                break;
            }
            for (int k = 0; k < t.count[s]; k++)
                all[t.host_of[t.first[s] + k]] = 1;
            double full = carries(&t, f, s, all, port, up);
            free(all);
            /* limited somewhere: the largest bound found; never measured
             * (an only child) or unlimited: what it carries.  That decides
             * the levels above (a bound from below there, even one found
             * with all siblings at once, could make the level above look
             * unlimited and be modelled faster than it is).  What the model
             * gets where it was unlimited with only some of its hosts
             * crossing, or not near all they carry, is what crossed (it
             * may carry no more), or more where limited */
            up[s] = lo[s] > 0 && !free_[s] && !(floor_[s] > 0) ? lo[s] : full;
            double bound = fmax(lo[s], floor_[s]);
            f->up_gbps[s] = (!free_[s] && bound > 0 ? bound : up[s]) / 1e3;
            f->up_lat_us[s] = lat_n[s] ? lat_sum[s] / lat_n[s] : 0;
        }
    }
    if (rc)
        goto out;
    for (int s = 0; s < ns; s++) /* (uplinks set level by level; the root's 0) */
        f->port_gbps[s] = port[s] / 1e3; /* bytes/us = MB/s */
    f->rounds = m.rounds;
    f->measure_us = tacos_fabric_now_us() - t0;
out:
    if (rc)
        tacos_fabric_net_free(f);
    tree_free(&t);
    free(host);
    free(local);
    free(leader);
    free(port);
    free(up);
    free(lo);
    free(floor_);
    free(lat_sum);
    free(lat_n);
    free(free_);
    return rc;
}

int tacos_fabric_net_describe(const tacos_fabric_conf_t *conf, const tacos_fabric_net_t *f,
                              char **out)
{
    size_t room = 160 * (size_t)(conf->nswitches + 1), at = 0;
    char *text = malloc(room);
    if (!text)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory describing a fabric");
    text[0] = 0;
    for (int s = 0; s < conf->nswitches; s++) {
        if (!f->used[s])
            continue;
        int hosts = 0;
        for (int x = 0; x < f->nhosts; x++)
            hosts += f->leaf[x] == s;
        at += (size_t)snprintf(text + at, room - at, "%s:", conf->switches[s].name);
        if (hosts)
            at += (size_t)snprintf(text + at, room - at, " %d host%s, port %.4g GB/s %.3g us,",
                                   hosts, hosts == 1 ? "" : "s", f->port_gbps[s],
                                   f->port_lat_us[s]);
        if (conf->switches[s].parent >= 0)
            at += (size_t)snprintf(text + at, room - at, " uplink to %s %.4g GB/s %.3g us",
                                   conf->switches[conf->switches[s].parent].name, f->up_gbps[s],
                                   f->up_lat_us[s]);
        else
            at += (size_t)snprintf(text + at, room - at, " the root");
        at += (size_t)snprintf(text + at, room - at, "\n");
    }
    *out = text;
    return TACOS_OK;
}

/* Switch s of the file in copy l of the tree: its name there. */
static void copy_name(const tacos_fabric_conf_t *conf, int s, int l, int copies, char *buf,
                      size_t room)
{
    if (copies == 1)
        snprintf(buf, room, "%s", conf->switches[s].name);
    else
        snprintf(buf, room, "%s#%d", conf->switches[s].name, l);
}

int tacos_probe_merge_fabric(const tacos_probe_record_t *recs, int n, int unwind_degree,
                             int defaults_only, const tacos_fabric_conf_t *conf,
                             const tacos_fabric_net_t *f, tacos_topo_t **out)
{
    int ns = conf->nswitches, h = f->nhosts, rc;
    tacos_net_t none; /* every pair of hosts unlinked: the ranks of each host only */
    tacos_topo_t *t = NULL;
    tacos_fabric_t *fab = NULL;
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local);
    int *ranks = calloc((size_t)(h ? h : 1), sizeof *ranks), *id = malloc((size_t)ns * sizeof *id);
    char *in_copy = malloc((size_t)ns);
    if (!host || !local || !ranks || !id || !in_copy) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory merging a fabric");
        goto out;
    }
    if ((rc = tacos_net_alloc(&none, h)))
        goto out;
    rc = tacos_probe_merge_net(recs, n, unwind_degree, defaults_only, &none, &t);
    tacos_net_free(&none);
    if (rc || (rc = tacos_fabric_new(n, &fab)))
        goto out;
    if (tacos_probe_hosts(recs, n, host, local) != h) {
        rc = tacos_error(TACOS_ERR_ARG, "merge: the fabric was measured for other hosts");
        goto out;
    }
    int copies = 0;
    for (int r = 0; r < n; r++) {
        ranks[host[r]]++;
        copies = local[r] + 1 > copies ? local[r] + 1 : copies;
    }
    for (int l = 0; l < copies && !rc; l++) {
        /* the switches of copy l: those above a host with a rank l */
        for (int s = 0; s < ns; s++)
            in_copy[s] = 0, id[s] = -1;
        for (int x = 0; x < h; x++)
            for (int v = ranks[x] > l ? f->leaf[x] : -1; v >= 0 && !in_copy[v];
                 v = conf->switches[v].parent)
                in_copy[v] = 1;
        for (int s = 0; s < ns && !rc; s++) {
            if (!in_copy[s])
                continue;
            char name[TACOS_PROBE_NAME + 16];
            copy_name(conf, s, l, copies, name, sizeof name);
            /* (the lowering joins a group to at most all the others, as it
             * counts them with the tree rooted at its centre) */
            int degree = unwind_degree > 0 ? unwind_degree : TACOS_FABRIC_AUTO_DEGREE;
            rc = tacos_fabric_add_switch(fab, name, degree, &id[s]);
        }
        for (int r = 0; r < n && !rc; r++)
            if (local[r] == l) {
                int s = f->leaf[host[r]];
                rc = tacos_fabric_add_port(fab, r, id[s], f->port_lat_us[s],
                                           f->port_gbps[s] / ranks[host[r]]);
            }
        for (int s = 0; s < ns && !rc; s++) {
            int p = conf->switches[s].parent;
            if (id[s] >= 0 && p >= 0 && id[p] >= 0)
                rc = tacos_fabric_add_port(fab, id[s], id[p], f->up_lat_us[s],
                                           f->up_gbps[s] / copies);
        }
    }
    char name[64], *named = NULL;
    snprintf(name, sizeof name, "fabric:%dhost%s", h, h == 1 ? "" : "s");
    if (!rc && !(named = strdup(name)))
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory merging a fabric");
    if (!rc && !(rc = tacos_fabric_lower(fab, t)) && !(rc = tacos_topo_finalize(t))) {
        free(t->name);
        t->name = named, named = NULL;
        *out = t;
        t = NULL;
    }
    free(named);
out:
    tacos_topo_free(t);
    tacos_fabric_free(fab);
    free(host);
    free(local);
    free(ranks);
    free(id);
    free(in_copy);
    return rc;
}
