/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All ranks' records -> one synth topology.  Every class of link proposes
 * candidate links; where two classes join the same pair (NVLink and shared
 * memory between two GPU ranks), the faster one for 1 MiB is kept, since a
 * topology has at most one link per ordered pair.
 *
 *  - shared memory: a switch per host joining its ranks, unwound; a link
 *    between ranks bound to different packages pays the cross-package
 *    penalty;
 *  - NVLink: point-to-point links between the ranks' GPUs with their
 *    bandwidth, or a switch joining the GPUs on an NVSwitch fabric;
 *  - network: a switch per local index joining that rank of every host;
 *    the ranks of a host that share a NIC share its bandwidth.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "probe_internal.h"

typedef struct {
    int src, dst;
    double lat_us, bw_gbps;
} cand_t;

typedef struct {
    cand_t *v;
    size_t n, cap;
    int degree; /* the unwind_degree parameter, 0 = automatic */
} cands_t;

static int push(cands_t *c, int s, int d, double lat_us, double bw_gbps)
{
    cand_t *v = tacos_grow(c->v, &c->cap, c->n, sizeof *v, 64);
    if (!v)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory merging probe records");
    c->v = v;
    c->v[c->n++] = (cand_t){s, d, lat_us, bw_gbps};
    return TACOS_OK;
}

static double cost_1mib(const cand_t *c) { return c->lat_us + 1048576 / (c->bw_gbps * 1e3); }

static int by_pair_then_cost(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->src != y->src)
        return x->src - y->src;
    if (x->dst != y->dst)
        return x->dst - y->dst;
    double cx = cost_1mib(x), cy = cost_1mib(y);
    return (cx > cy) - (cx < cy);
}

/* The degree a switch of k members is unwound with: the unwind_degree
 * parameter where set, else auto_degree; at most k - 1. */
static int switch_degree(const cands_t *c, int auto_degree, int k)
{
    int degree = c->degree > 0 ? c->degree : auto_degree;
    return degree < k - 1 ? degree : k - 1;
}

/* A switch joining members[0..k) unwound with `degree` (capped at k-1):
 * member i links to i+1..i+degree; a link gets the smaller port bandwidth of
 * its ends divided by the degree and the larger latency. */
static int unwind(cands_t *c, const tacos_probe_record_t *recs, const int *members, int k,
                  int auto_degree, int cls, const float *port_gbps, int xpkg)
{
    int degree = switch_degree(c, auto_degree, k);
    for (int i = 0; i < k; i++)
        for (int j = 1; j <= degree; j++) {
            int s = members[i], d = members[(i + j) % k], rc;
            const tacos_probe_link_class_t *a = &recs[s].cls[cls], *b = &recs[d].cls[cls];
            double lat = a->lat_us > b->lat_us ? a->lat_us : b->lat_us,
                   bw = port_gbps[s] < port_gbps[d] ? port_gbps[s] : port_gbps[d];
            if (xpkg && recs[s].package >= 0 && recs[d].package >= 0 &&
                recs[s].package != recs[d].package) {
                lat += TACOS_XPKG_EXTRA_LAT_US;
                bw *= TACOS_XPKG_BW_SHARE;
            }
            if (bw > 0 && (rc = push(c, s, d, lat, bw / degree)))
                return rc;
        }
    return TACOS_OK;
}

int tacos_probe_hosts(const tacos_probe_record_t *recs, int n, int *host, int *local)
{
    int nhosts = 0;
    for (int i = 0; i < n; i++) {
        host[i] = -1;
        local[i] = 0;
        for (int j = 0; j < i; j++)
            if (recs[j].host_id == recs[i].host_id) {
                host[i] = host[j];
                local[i]++;
            }
        if (host[i] < 0)
            host[i] = nhosts++;
    }
    return nhosts;
}

static int intra_host(cands_t *c, const tacos_probe_record_t *recs, int n, const int *host,
                      int h, int *members, float *port)
{
    int k = 0, rc;
    for (int i = 0; i < n; i++)
        if (host[i] == h) {
            members[k++] = i;
            port[i] = (float)recs[i].cls[TACOS_CLASS_SHM].bw_gbps;
        }
    if ((rc = unwind(c, recs, members, k, k - 1, TACOS_CLASS_SHM, port, 1)))
        return rc;
    /* NVLink point to point between the ranks' GPUs */
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            const tacos_probe_record_t *s = &recs[members[a]], *d = &recs[members[b]];
            if (s->gpu < 0 || d->gpu < 0 || s->gpu == d->gpu || d->gpu >= TACOS_PROBE_MAX_GPUS ||
                !(s->nvlink_gbps[d->gpu] > 0))
                continue;
            double lat = s->cls[TACOS_CLASS_NVLINK].lat_us;
            if ((rc = push(c, members[a], members[b], lat, s->nvlink_gbps[d->gpu])))
                return rc;
        }
    /* an NVSwitch fabric joining the GPU ranks on it (one rank per GPU) */
    int nsw = 0;
    for (int a = 0; a < k; a++) {
        const tacos_probe_record_t *r = &recs[members[a]];
        int dup = 0;
        for (int b = 0; b < nsw; b++)
            dup |= recs[members[b]].gpu == r->gpu;
        if (r->gpu >= 0 && r->nvswitch_gbps > 0 && !dup) {
            port[members[a]] = r->nvswitch_gbps;
            members[nsw++] = members[a];
        }
    }
    return nsw > 1 ? unwind(c, recs, members, nsw, nsw - 1, TACOS_CLASS_NVLINK, port, 0) : 0;
}

/* Ranks with local index l on every host, joined by a network switch
 * unwound as tacos_switch_auto_degree says for that many hosts; each gets
 * its NIC's bandwidth divided by the ranks of its host on the same NIC. */
static int inter_host(cands_t *c, const tacos_probe_record_t *recs, int n, const int *host,
                      const int *local, int l, int *members, float *port)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (local[i] != l)
            continue;
        int share = 0;
        for (int j = 0; j < n; j++)
            share += host[j] == host[i] && !strcmp(recs[j].nics[0], recs[i].nics[0]);
        port[i] = (float)(recs[i].cls[TACOS_CLASS_NET].bw_gbps / share);
        members[k++] = i;
    }
    return k > 1 ? unwind(c, recs, members, k, tacos_switch_auto_degree(k), TACOS_CLASS_NET, port, 0)
                 : 0;
}

/* The measured links between hosts: ranks of equal local index
 * (0..maxlocal) joined wherever their hosts have a link, the link shared by
 * those pairs.  Hosts on one switch (net->switched): the ranks of each
 * local index joined as that switch unwound (rank i of them to the next
 * `degree`, as inter_host does), each link the pair's measured rate shared
 * by the degree and by the ranks of the busier host, so no port carries
 * more than it did measured alone (each rank of a host has `degree` links
 * out and in). */
static int measured(cands_t *c, const tacos_net_t *net, int n, const int *host, const int *local,
                    int maxlocal, int *members)
{
    int h = net->nhosts, rc = TACOS_OK, *count = calloc((size_t)h, sizeof *count);
    if (!count)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory merging probe records");
    for (int i = 0; i < n; i++)
        count[host[i]]++;
    for (int l = 0; l < maxlocal && !rc; l++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (local[i] == l)
                members[k++] = i;
        int degree = net->switched ? switch_degree(c, tacos_switch_auto_degree(k), k) : k - 1;
        for (int i = 0; i < k && !rc; i++)
            for (int j = 1; j <= degree && !rc; j++) {
                int s = members[i], d = members[(i + j) % k], a = host[s], b = host[d];
                size_t ab = (size_t)a * (size_t)h + (size_t)b;
                int fewer = count[a] < count[b] ? count[a] : count[b];
                double share = !net->switched ? fewer : (double)(count[a] + count[b] - fewer) * degree;
                if (net->bw_gbps[ab] > 0)
                    rc = push(c, s, d, net->lat_us[ab], net->bw_gbps[ab] / share);
            }
    }
    free(count);
    return rc;
}

int tacos_probe_merge(const tacos_probe_record_t *recs, int n, int unwind_degree,
                      int defaults_only, tacos_topo_t **out)
{
    return tacos_probe_merge_net(recs, n, unwind_degree, defaults_only, NULL, out);
}

int tacos_probe_merge_net(const tacos_probe_record_t *given, int n, int unwind_degree,
                          int defaults_only, const tacos_net_t *net, tacos_topo_t **out)
{
    if (n < 1)
        return tacos_error(TACOS_ERR_ARG, "merge: no records");
    if (unwind_degree < 0)
        return tacos_error(TACOS_ERR_ARG, "merge: unwind degree must be >= 0, got %d",
                           unwind_degree);
    if (!defaults_only && tacos_probe_check(given, n))
        return TACOS_ERR_PARSE;
    cands_t c = {NULL, 0, 0, unwind_degree};
    tacos_probe_record_t *dflt = NULL;
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local),
        *members = malloc((size_t)n * sizeof *members);
    float *port = calloc((size_t)n, sizeof *port);
    tacos_topo_t *t = NULL;
    int rc = TACOS_OK;
    if (!host || !local || !members || !port)
        goto nomem;
    const tacos_probe_record_t *recs = given;
    if (defaults_only) { /* the same hosts, nothing else */
        if (!(dflt = malloc((size_t)n * sizeof *dflt)))
            goto nomem;
        for (int i = 0; i < n; i++) {
            tacos_probe_record_default(&dflt[i], "");
            dflt[i].host_id = given[i].host_id;
            memcpy(dflt[i].host, given[i].host, sizeof dflt[i].host);
        }
        recs = dflt;
    }
    int nhosts = tacos_probe_hosts(recs, n, host, local), maxlocal = 0;
    for (int i = 0; i < n; i++)
        maxlocal = local[i] + 1 > maxlocal ? local[i] + 1 : maxlocal;
    for (int h = 0; h < nhosts && !rc; h++)
        rc = intra_host(&c, recs, n, host, h, members, port);
    if (net && net->nhosts != nhosts) {
        rc = tacos_error(TACOS_ERR_ARG, "merge: %d measured hosts, the records have %d",
                         net->nhosts, nhosts);
        goto out;
    }
    if (net && nhosts > 1)
        rc = measured(&c, net, n, host, local, maxlocal, members);
    for (int l = 0; l < maxlocal && nhosts > 1 && !net && !rc; l++)
        rc = inter_host(&c, recs, n, host, local, l, members, port);
    if (rc)
        goto out;
    if (c.n)
        qsort(c.v, c.n, sizeof *c.v, by_pair_then_cost);
    char name[64];
    const char *kind = defaults_only ? "default" : net && nhosts > 1 ? "measured" : "probed";
    snprintf(name, sizeof name, "%s:%dhost%s", kind, nhosts, nhosts == 1 ? "" : "s");
    if ((rc = tacos_topo_create(n, name, &t)))
        goto out;
    for (size_t i = 0; i < c.n && !rc; i++)
        if (i == 0 || c.v[i].src != c.v[i - 1].src || c.v[i].dst != c.v[i - 1].dst)
            rc = tacos_topo_add_link(t, c.v[i].src, c.v[i].dst, c.v[i].lat_us, c.v[i].bw_gbps);
    if (!rc)
        rc = tacos_topo_finalize(t);
    if (!rc) {
        *out = t;
        t = NULL;
    }
    goto out;
nomem:
    rc = tacos_error(TACOS_ERR_NOMEM, "out of memory merging %d probe records", n);
out:
    tacos_topo_free(t);
    free(c.v);
    free(dflt);
    free(host);
    free(local);
    free(members);
    free(port);
    return rc;
}
