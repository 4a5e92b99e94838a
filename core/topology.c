/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The communicator's topology when no topology file is given: every rank's
 * probe record (probed once per process), exchanged with one allgather,
 * optionally calibrated with ping-pongs; when the ranks span several hosts,
 * the links between hosts measured (libtacos-probe's tacos_net_measure over
 * the binding's exchange) or their switch tree inferred or read from a
 * fabric file, the measured or inferred network kept for the job; merged by
 * libtacos-probe.  Any
 * problem falls back to the default model (hosts only), with a message.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "records.h"

/* ---- this process's record ---------------------------------------------------- */

/* Probed once, at the first topology any thread builds, with that
 * communicator's settings (the probe settings are the process's). */
static tacos_probe_record_t the_record;
static const tacos_comm_t *first_comm;

static void probe_once(void)
{
    const tacos_comm_t *c = first_comm;
    if (!c->s.probe) {
        tacos_probe_record_default(&the_record, NULL);
        return;
    }
    tacos_probe_opts_t o;
    tacos_probe_opts_init(&o);
    o.hwloc_xml = c->s.probe_hwloc_xml && c->s.probe_hwloc_xml[0] ? c->s.probe_hwloc_xml : NULL;
    o.ucx_lib = c->s.ucx_lib ? c->s.ucx_lib : "";
    o.local_rank = c->s.probe_gpu ? c->ops.local_rank : -1;
    if (tacos_probe_local(&o, &the_record))
        tacos_comm_say(c, 0, "probe: %s; the default model's figures stand in for what it could "
                             "not learn",
                       tacos_last_error());
}

const tacos_probe_record_t *tacos_comm_local_record(const tacos_comm_t *c)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (!first_comm)
        first_comm = c;
    pthread_mutex_unlock(&lock);
    pthread_once(&once, probe_once);
    return &the_record;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

_Static_assert(sizeof(double) == sizeof(uint64_t), "doubles compared as their bits");

int tacos_comm_max_nonneg(tacos_comm_t *c, double *v, int n)
{
    /* in place, nothing allocated: a rank never skips the collective */
    return c->ops.max_u64(c->ops.ctx, (uint64_t *)(void *)v, n);
}
/* ---- calibration ----------------------------------------------------------------- */

/* The measurements' messages: sbytes[i] from sbuf to each of peers[0..n)
 * (n <= 2) and rbytes[i] from it into rbuf + rbytes[0] + ... + rbytes[i-1],
 * all at once, in the transport's pieces (0 bytes: that direction is not
 * posted).  t_us[i] = microseconds until the last piece from peers[i]
 * arrived (until the last send completed where nothing comes in: a send
 * may complete into the kernel's socket buffer long before its data
 * arrives).  Returns once everything completed, waiting as tacos_net_idle
 * says; blocking, inside a collective of the core.  After an error what is
 * still in flight is abandoned and *abandoned set: the transport may still
 * read sbuf and write rbuf, which the caller must then never free. */
static int exchange(tacos_comm_t *c, const int *peers, int n, const void *sbuf,
                    const size_t *sbytes, void *rbuf, const size_t *rbytes, double *t_us,
                    int *abandoned)
{
    const tacos_transport_t *tp = &c->ops.measure;
    size_t piece[2], most = 0;
    if (n > 2)
        return TACOS_ERR_ARG;
    for (int i = 0; i < n; i++) {
        size_t p = tp->piece ? tp->piece(tp->ctx, peers[i]) : 0;
        piece[i] = p ? p : sbytes[i] > rbytes[i] ? sbytes[i] : rbytes[i];
        if (piece[i])
            most += (sbytes[i] + piece[i] - 1) / piece[i] + (rbytes[i] + piece[i] - 1) / piece[i];
    }
    void **req = calloc(most + 1, sizeof *req);
    int *what = malloc((most + 1) * sizeof *what); /* 2 * peer index, + 1 for a send */
    char *done = calloc(most + 1, 1);
    int rc = !req || !what || !done ? TACOS_ERR_NOMEM : 0;
    size_t posted = 0;
    char *to = rbuf;
    double t0 = now_us();
    for (int i = 0; i < n && !rc; to += rbytes[i++]) {
        for (size_t at = 0; at < rbytes[i] && !rc; at += piece[i], posted++) {
            size_t len = rbytes[i] - at < piece[i] ? rbytes[i] - at : piece[i];
            rc = tp->irecv(tp->ctx, to + at, len, peers[i], &req[posted]);
            what[posted] = 2 * i;
        }
        for (size_t at = 0; at < sbytes[i] && !rc; at += piece[i], posted++) {
            size_t len = sbytes[i] - at < piece[i] ? sbytes[i] - at : piece[i];
            rc = tp->isend(tp->ctx, (const char *)sbuf + at, len, peers[i], &req[posted]);
            what[posted] = 2 * i + 1;
        }
    }
    if (rc && posted) /* the one that failed was not posted */
        posted--;
    size_t left = posted;
    /* a nap after every second test that completed nothing: a test may
     * look at the requests before it progresses them, so what that
     * progress completed shows on the next one (after a nap, it would be
     * timed a nap late) */
    for (int quiet = 0; left > 0 && !rc;) {
        rc = tp->test_some(tp->ctx, req, left, done);
        double now = now_us() - t0;
        size_t kept = 0;
        for (size_t k = 0; k < left; k++) {
            int peer = what[k] / 2;
            if (!done[k]) {
                req[kept] = req[k], what[kept++] = what[k];
                continue;
            }
            done[k] = 0;
            if (what[k] % 2 == 0 || !rbytes[peer])
                t_us[peer] = now;
        }
        quiet = kept < left ? 0 : quiet + 1;
        if (quiet % 2 == 0 && kept == left)
            tacos_net_idle(now);
        left = kept;
    }
    for (size_t k = 0; k < left; k++) /* after an error */
        tp->abandon(tp->ctx, req[k], what[k] % 2);
    *abandoned |= left > 0;
    free(req);
    free(what);
    free(done);
    return rc;
}

/* Microseconds per one-way trip of `bytes` between ranks a and b (measured
 * on a; 0 elsewhere), -1 after an error (exchange: *abandoned). */
static double pingpong(tacos_comm_t *c, int a, int b, char *buf, size_t bytes, int *abandoned)
{
    const int iters = 8, me = c->ops.rank;
    if (me != a && me != b)
        return 0;
    int peer = me == a ? b : a;
    double t0 = 0, t;
    for (int i = -1; i < iters; i++) { /* i = -1: warm-up */
        if (i == 0)
            t0 = now_us();
        for (int leg = 0; leg < 2; leg++) {
            int sends = (me == a) == (leg == 0);
            size_t out = sends ? bytes : 0, in = sends ? 0 : bytes;
            if (exchange(c, &peer, 1, buf, &out, buf, &in, &t, abandoned))
                return -1;
        }
    }
    return me == a ? (now_us() - t0) / (2.0 * iters) : 0;
}

/* Ping-pongs of 8 B and 1 MiB over one pair per link class (two ranks of
 * one host; rank 0 and a rank on another host) replace the probed α/β of
 * that class in every record. */
static int calibrate(tacos_comm_t *c, tacos_probe_record_t *recs)
{
    const size_t big = 1 << 20;
    int n = c->ops.size, pair[2][2] = {{-1, -1}, {-1, -1}};
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int cls = recs[i].host_id == recs[j].host_id ? 0 : 1;
            if (pair[cls][0] < 0)
                pair[cls][0] = i, pair[cls][1] = j;
        }
    /* every rank learns first whether any lacks the buffer: a partner must
     * not wait for ping-pongs that never come */
    char *buf = calloc(1, big);
    double v[5] = {0, 0, 0, 0, 0}, lacking = !buf;
    int abandoned = 0, failed = tacos_comm_max_nonneg(c, &lacking, 1);
    if (failed || lacking > 0) {
        free(buf);
        return failed ? failed : TACOS_ERR_NOMEM;
    }
    for (int cls = 0; cls < 2 && !failed; cls++) {
        if (pair[cls][0] < 0)
            continue;
        double small_us = pingpong(c, pair[cls][0], pair[cls][1], buf, 8, &abandoned);
        double big_us = pingpong(c, pair[cls][0], pair[cls][1], buf, big, &abandoned);
        failed = small_us < 0 || big_us < 0;
        if (c->ops.rank == pair[cls][0] && big_us > small_us) {
            v[2 * cls] = small_us;
            v[2 * cls + 1] = (double)(big - 8) / ((big_us - small_us) * 1e3); /* GB/s */
        }
    }
    if (!abandoned) /* (else the transport may still touch it: kept) */
        free(buf);
    v[4] = failed; /* a failed ping-pong: every rank keeps the probed figures */
    int rc = tacos_comm_max_nonneg(c, v, 5);
    if (rc || v[4] > 0)
        return rc ? rc : TACOS_ERR_ARG;
    const int classes[2] = {TACOS_CLASS_SHM, TACOS_CLASS_NET};
    for (int cls = 0; cls < 2; cls++) {
        if (!(v[2 * cls + 1] > 0))
            continue;
        for (int i = 0; i < n; i++) {
            tacos_probe_link_class_t *l = &recs[i].cls[classes[cls]];
            l->lat_us = v[2 * cls];
            l->bw_gbps = v[2 * cls + 1];
            l->src = TACOS_SRC_CALIBRATION;
        }
    }
    return 0;
}

/* ---- the network between hosts ---------------------------------------------- */

typedef struct {
    tacos_comm_t *c;
    char *sbuf, *rbuf; /* TACOS_NET_MAX_BYTES, and twice that */
    int abandoned;     /* an exchange failed with messages in flight: both kept */
} net_ctx_t;

static int net_exchange(void *ctx, const int *peers, int n, const size_t *bytes, double *t_us)
{
    net_ctx_t *x = ctx;
    if (n > 2)
        return TACOS_ERR_ARG;
    for (int i = 0; i < n; i++)
        if (bytes[i] > TACOS_NET_MAX_BYTES)
            return TACOS_ERR_ARG;
    return exchange(x->c, peers, n, x->sbuf, bytes, x->rbuf, bytes, t_us, &x->abandoned);
}

/* The exchange's buffers (calloc: zero pages mapped on first use). */
static net_ctx_t net_ctx_new(tacos_comm_t *c)
{
    return (net_ctx_t){c, calloc(1, TACOS_NET_MAX_BYTES), malloc(2 * TACOS_NET_MAX_BYTES), 0};
}

static void net_ctx_free(net_ctx_t *x)
{
    if (!x->abandoned) {
        free(x->sbuf);
        free(x->rbuf);
    }
}

static int net_max(void *ctx, double *v, int n)
{
    tacos_comm_t *c = ((net_ctx_t *)ctx)->c;
    if (!c->ops.max_u64_idle)
        return tacos_comm_max_nonneg(c, v, n);
    return c->ops.max_u64_idle(c->ops.ctx, (uint64_t *)(void *)v, n); /* as max_nonneg */
}

/* Copies src's figures into dst (both allocated for the same hosts). */
static void copy_net(tacos_net_t *dst, const tacos_net_t *src)
{
    size_t hh = (size_t)src->nhosts * (size_t)src->nhosts;
    memcpy(dst->lat_us, src->lat_us, hh * sizeof *dst->lat_us);
    memcpy(dst->bw_gbps, src->bw_gbps, hh * sizeof *dst->bw_gbps);
    memcpy(dst->t_us, src->t_us, 3 * hh * sizeof *dst->t_us);
    memcpy(dst->routed, src->routed, hh);
    memcpy(dst->s2_bytes, src->s2_bytes, hh * sizeof *dst->s2_bytes);
    memcpy(dst->port_slow, src->port_slow, 2 * (size_t)src->nhosts * sizeof *dst->port_slow);
    dst->switched = src->switched;
    dst->ntests = src->ntests;
    dst->test_steps = src->test_steps;
    dst->measure_us = src->measure_us;
    memcpy(dst->phase_us, src->phase_us, sizeof dst->phase_us);
    dst->note = src->note;
}

/* The hosts' key: their ids in the order of their first rank (*ids,
 * malloc'd); returns how many, -1 where memory is short. */
static int host_key(const tacos_probe_record_t *recs, int n, uint64_t **ids)
{
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local);
    int h = -1;
    *ids = malloc((size_t)n * sizeof **ids);
    if (host && local && *ids) {
        h = tacos_probe_hosts(recs, n, host, local);
        for (int i = n - 1; i >= 0; i--)
            (*ids)[host[i]] = recs[i].host_id;
    }
    free(host);
    free(local);
    return h;
}

/* Frees a tree read or inferred: its text, its switches, its rates. */
static void drop_tree(char **text, tacos_fabric_conf_t **conf, tacos_fabric_net_t *f)
{
    if (text) {
        free(*text);
        *text = NULL;
    }
    tacos_fabric_conf_free(*conf);
    *conf = NULL;
    tacos_fabric_net_free(f);
}

/* What the job keeps between communicators for a set of hosts (their
 * host_key): the pairs' measurement, the switch tree inferred (its
 * topology.conf text and its rates), or a fabric file's rates (keyed by
 * the file's hash too).  A later communicator over the same hosts uses it
 * only where every rank keeps the same. */
typedef struct kept {
    struct kept *next;
    int is_tree, nhosts;
    uint64_t *host_ids, file; /* file: the fabric file's hash, 0 inferred */
    tacos_net_t net;          /* !is_tree */
    char *text;               /* is_tree, inferred */
    tacos_fabric_net_t f;     /* is_tree */
} kept_t;
static kept_t *kept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void kept_free(kept_t *e)
{
    if (!e)
        return;
    free(e->host_ids);
    tacos_net_free(&e->net);
    free(e->text);
    tacos_fabric_net_free(&e->f);
    free(e);
}

/* The link to the entry kept of this kind (and file) for these hosts, or
 * to the list's end (kept_lock held). */
static kept_t **kept_slot(int is_tree, uint64_t file, const uint64_t *ids, int h)
{
    kept_t **s = &kept;
    while (*s && ((*s)->is_tree != is_tree || (*s)->file != file || (*s)->nhosts != h ||
                  memcmp((*s)->host_ids, ids, (size_t)h * sizeof *ids)))
        s = &(*s)->next;
    return s;
}

/* A new entry for these hosts, its payload for the caller to fill; NULL
 * where memory is short (then nothing is kept: measured again next time). */
static kept_t *kept_new(int is_tree, uint64_t file, const uint64_t *ids, int h)
{
    kept_t *e = calloc(1, sizeof *e);
    if (e && (e->host_ids = malloc((size_t)h * sizeof *ids))) {
        memcpy(e->host_ids, ids, (size_t)h * sizeof *ids);
        e->is_tree = is_tree;
        e->file = file;
        e->nhosts = h;
        return e;
    }
    free(e);
    return NULL;
}

/* Keeps e in place of what was kept of its kind for its hosts (that may
 * differ from other ranks', which measured again without it). */
static void keep(kept_t *e)
{
    pthread_mutex_lock(&kept_lock);
    kept_t **s = kept_slot(e->is_tree, e->file, e->host_ids, e->nhosts), *old = *s;
    e->next = old ? old->next : NULL;
    *s = e;
    pthread_mutex_unlock(&kept_lock);
    kept_free(old);
}

void tacos_comm_forget_networks(void)
{
    pthread_mutex_lock(&kept_lock);
    while (kept) {
        kept_t *e = kept;
        kept = e->next;
        kept_free(e);
    }
    pthread_mutex_unlock(&kept_lock);
}

/* A copy of the measurement kept for these hosts into *net (allocated),
 * or 0 when there is none. */
static int find_net(const uint64_t *ids, int h, tacos_net_t *net)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *e = *kept_slot(0, 0, ids, h);
    int found = e && tacos_net_alloc(net, h) == TACOS_OK;
    if (found)
        copy_net(net, &e->net);
    pthread_mutex_unlock(&kept_lock);
    return found;
}

static void keep_net(const uint64_t *ids, int h, const tacos_net_t *net)
{
    kept_t *e = kept_new(0, 0, ids, h);
    if (e && tacos_net_alloc(&e->net, h) == TACOS_OK) {
        copy_net(&e->net, net);
        keep(e);
    } else
        kept_free(e);
}

/* A tree's hash, never 0: its text's (conf->hash) and its rates. */
static uint64_t tree_hash(const tacos_fabric_conf_t *conf, const tacos_fabric_net_t *f)
{
    uint64_t h = conf->hash;
    const double *rates[] = {f->port_gbps, f->port_lat_us, f->up_gbps, f->up_lat_us};
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < f->nswitches; i++) {
            uint64_t w;
            memcpy(&w, &rates[r][i], sizeof w);
            h = tacos_comm_hash_words(h, &w, 1);
        }
    return h | 1;
}

/* The tree kept for these hosts: inferred (file 0), *text (malloc'd) and
 * *conf read from it; or the rates of the fabric file whose hash is `file`
 * (*conf, read by the caller, left alone; text NULL); *f a copy of its
 * rates.  Returns its hash, or 0 (nothing set) where there is none or
 * memory is short. */
static uint64_t find_tree(uint64_t file, const uint64_t *ids, int h, char **text,
                          tacos_fabric_conf_t **conf, tacos_fabric_net_t *f)
{
    int found = 0;
    pthread_mutex_lock(&kept_lock);
    kept_t *e = *kept_slot(1, file, ids, h);
    if (e && (file || (*text = strdup(e->text))) && tacos_fabric_net_copy(f, &e->f) == TACOS_OK)
        found = 1;
    pthread_mutex_unlock(&kept_lock);
    if (found && (file || tacos_fabric_conf_read_string(*text, "the kept switch tree", conf) ==
                              TACOS_OK))
        return tree_hash(*conf, f);
    if (file)
        tacos_fabric_net_free(f);
    else
        drop_tree(text, conf, f);
    return 0;
}

static void keep_tree(uint64_t file, const uint64_t *ids, int h, const char *text,
                      const tacos_fabric_net_t *f)
{
    kept_t *e = kept_new(1, file, ids, h);
    if (e && (file || (e->text = strdup(text))) && tacos_fabric_net_copy(&e->f, f) == TACOS_OK)
        keep(e);
    else
        kept_free(e);
}

/* Rank 0's cached copy on every rank (the others' copies may come from
 * other communicators' measurements): a max with zeros elsewhere. */
static int share_rank0(tacos_comm_t *c, tacos_net_t *net)
{
    int h = net->nhosts, rank0 = c->ops.rank == 0;
    size_t hh = (size_t)h * (size_t)h, len = 3 * hh + 3;
    double *v = calloc(len, sizeof *v);
    if (!v)
        return TACOS_ERR_NOMEM;
    for (size_t i = 0; rank0 && i < hh; i++) {
        v[i] = net->lat_us[i];
        v[hh + i] = net->bw_gbps[i];
        v[2 * hh + i] = net->routed[i];
    }
    v[3 * hh] = rank0 ? net->ntests : 0;
    v[3 * hh + 1] = rank0 ? net->test_steps : 0;
    v[3 * hh + 2] = rank0 ? net->switched : 0;
    int rc = tacos_comm_max_nonneg(c, v, (int)len);
    for (size_t i = 0; !rc && i < hh; i++) {
        net->lat_us[i] = v[i];
        net->bw_gbps[i] = v[hh + i];
        net->routed[i] = (unsigned char)v[2 * hh + i];
    }
    net->ntests = (int)v[3 * hh];
    net->test_steps = (int)v[3 * hh + 1];
    net->switched = (int)v[3 * hh + 2];
    free(v);
    return rc;
}

/* The measured network between the communicator's h hosts (ids: their
 * host_key), kept from earlier in the job where every rank has it (measure
 * 1), else measured now.  Returns 0 with *net filled, or an error (message
 * printed). */
static int measure_network(tacos_comm_t *c, const tacos_probe_record_t *recs, const uint64_t *ids,
                           int h, tacos_net_t *net, int *cached)
{
    int rc;
    net_ctx_t x = net_ctx_new(c);
    int ok = h > 0 && x.sbuf && x.rbuf;
    *cached = ok && c->s.measure == 1 && find_net(ids, h, net);
    /* every rank learns whether any lacks memory or the cached figures */
    double v[2] = {!ok, !*cached};
    if ((rc = tacos_comm_max_nonneg(c, v, 2)) || v[0] > 0) {
        if (!rc)
            tacos_comm_say(c, 0, "out of memory measuring the network (rank %d)", c->ops.rank);
        rc = rc ? rc : TACOS_ERR_NOMEM;
        goto out;
    }
    if (v[1] == 0) {
        rc = share_rank0(c, net);
        goto out;
    }
    if (*cached)
        tacos_net_free(net);
    *cached = 0;
    tacos_net_comm_t nc = {&x, net_exchange, net_max};
    if ((rc = tacos_net_measure(recs, c->ops.size, c->ops.rank, &nc, net))) {
        tacos_comm_say(c, 0, "measuring the network between %d hosts: %s", h, tacos_last_error());
        goto out;
    }
    if (c->s.measure == 1)
        keep_net(ids, h, net);
out:
    if (rc && *cached)
        tacos_net_free(net);
    net_ctx_free(&x);
    return rc;
}

int tacos_comm_spans_hosts(const tacos_probe_record_t *recs, int n)
{
    for (int i = 1; i < n; i++)
        if (recs[i].host_id != recs[0].host_id)
            return 1;
    return 0;
}

/* Whether the records are on more than `most` hosts (at most
 * TACOS_FABRIC_INFER_MAX_HOSTS: tacos_comm_new clamps infer_hosts).  No
 * allocation: a rank short of memory must decide as the others. */
static int more_hosts_than(const tacos_probe_record_t *recs, int n, int most)
{
    uint64_t seen[TACOS_FABRIC_INFER_MAX_HOSTS + 1];
    int k = 0;
    most = most < TACOS_FABRIC_INFER_MAX_HOSTS ? most : TACOS_FABRIC_INFER_MAX_HOSTS;
    for (int i = 0; i < n && k <= most; i++) {
        int j = 0;
        while (j < k && seen[j] != recs[i].host_id)
            j++;
        if (j == k)
            seen[k++] = recs[i].host_id;
    }
    return k > most;
}

/* Each pair of hosts as measured, for the verbose summary (rank 0). */
static void say_network(const tacos_comm_t *c, const tacos_probe_record_t *recs,
                        const tacos_net_t *net, int cached)
{
    char *text = NULL, *save = NULL;
    tacos_comm_say(c, 5,
                   "network between %d hosts %s: %d rounds, %d concurrent tests in %d steps, "
                   "%.1f ms%s%s",
                   net->nhosts, cached ? "from this job's earlier measurement" : "measured",
                   tacos_net_rounds(net->nhosts), net->ntests, net->test_steps,
                   net->measure_us / 1e3,
                   net->note ? "; " : "", net->note ? net->note : "");
    if (tacos_net_describe(recs, c->ops.size, net, &text) == TACOS_OK)
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            tacos_comm_say(c, 5, "  %s", l);
    free(text);
}

static void dump_records(const tacos_comm_t *c, const tacos_probe_record_t *recs)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tacos-comm%u-probe.json", c->s.dump_dir, c->ops.id);
    FILE *f = fopen(path, "w");
    int n = c->ops.size, ok = f != NULL && fputs("[\n", f) >= 0;
    for (int i = 0; i < n && ok; i++) {
        char *json = NULL;
        ok = tacos_probe_record_to_json(&recs[i], &json) == TACOS_OK &&
             fprintf(f, "%s%s\n", json, i + 1 < n ? "," : "") >= 0;
        free(json);
    }
    ok = ok && fputs("]\n", f) >= 0;
    if (f && fclose(f))
        ok = 0;
    if (!ok)
        tacos_comm_say(c, 0, "dump: cannot write %s", path);
}

/* Whether the records can be merged as they are (else the default model). */
static int usable(const tacos_comm_t *c, const tacos_probe_record_t *recs)
{
    if (tacos_probe_check(recs, c->ops.size) == TACOS_OK)
        return 1;
    /* the same records on every rank: rank 0 says it */
    tacos_comm_say(c, c->ops.rank ? 1 : 0, "%s; using the default model", tacos_last_error());
    return 0;
}

/* The records merged with the links between hosts at this unwind degree:
 * the fabric's tree (conf and f), else the measured network (net, or
 * NULL: the probed figures). */
static int merge_at(const tacos_comm_t *c, tacos_probe_record_t *recs, int ok,
                    const tacos_net_t *net, const tacos_fabric_conf_t *conf,
                    const tacos_fabric_net_t *f, int degree, tacos_topo_t **out)
{
    int n = c->ops.size, plain = !ok || !c->s.probe;
    return conf ? tacos_probe_merge_fabric(recs, n, degree, plain, conf, f, out)
                : tacos_probe_merge_net(recs, n, degree, plain, net, out);
}

/* With coll_tacos_unwind_degree 0 across hosts, t's full lowering (t->full):
 * the same records merged with every switch fully unwound (within a host
 * every switch already is).  None where that merge fails, e.g. too many
 * links (the same on every rank but for memory, which the topology's vote
 * catches). */
static void keep_full(const tacos_comm_t *c, tacos_probe_record_t *recs, int ok,
                      const tacos_net_t *net, const tacos_fabric_conf_t *conf,
                      const tacos_fabric_net_t *f, tacos_topo_t *t)
{
    tacos_topo_t *full = NULL;
    if (c->s.unwind_degree || !tacos_comm_spans_hosts(recs, c->ops.size))
        return;
    if (!merge_at(c, recs, ok, net, conf, f, TACOS_DEGREE_FULL, &full) &&
        tacos_lowering_keep_full(t, &full) == TACOS_OK)
        t->full = full, full = NULL;
    else if (c->ops.rank == 0)
        tacos_comm_say(c, 5, "no lowering with every switch fully unwound: %s",
                       tacos_last_error());
    tacos_topo_free(full);
}

/* What verbose output says of t's full lowering, in note[96]. */
static const char *full_note(const tacos_topo_t *t, char *note)
{
    snprintf(note, 96, t->full ? "; small sizes with switches fully unwound, %zu links" : "",
             t->full ? t->full->nlinks : 0);
    return note;
}

/* The records merged (net: the links between hosts measured, or NULL);
 * rank 0 summarizes them. */
static int merge(const tacos_comm_t *c, tacos_probe_record_t *recs, int ok,
                 const tacos_net_t *net, tacos_topo_t **out)
{
    int n = c->ops.size, rc;
    if ((rc = merge_at(c, recs, ok, net, NULL, NULL, c->s.unwind_degree, out)))
        tacos_comm_say(c, c->ops.rank && rc != TACOS_ERR_NOMEM ? 1 : 0,
                       "merging the probe records: %s%s", tacos_last_error(),
                       rc == TACOS_ERR_NOMEM ? " (this rank)" : ""); /* else the same everywhere */
    else
        keep_full(c, recs, ok, net, NULL, NULL, *out);
    if (!rc && c->ops.rank == 0) {
        char summary[512], note[96];
        tacos_probe_summary(recs, n, summary, sizeof summary);
        tacos_comm_say(c, 5, "topology %s: %s; %zu links%s", (*out)->name, summary,
                       (*out)->nlinks, full_note(*out, note));
    }
    return rc;
}

/* The fabric file's switch tree with each level's rate measured (0, *conf
 * and *f set) where every rank read the same file and it lists every host;
 * else nonzero after one message: the caller measures as without it.
 * With no file (path NULL): the tree inferred (*text: as topology.conf).
 * With coll_tacos_measure 1, the rates (and the inferred tree) kept from
 * earlier in the job for the same h hosts (ids) and file, where every rank
 * keeps the same (*cached set). */
static int fabric_network(tacos_comm_t *c, const tacos_probe_record_t *recs, const char *path,
                          const uint64_t *ids, int h, tacos_fabric_conf_t **conf, char **text,
                          tacos_fabric_net_t *f, int *cached)
{
    char p[64], why[256];
    int rc, ok = !path || tacos_fabric_conf_read_file(path, conf) == TACOS_OK;
    snprintf(why, sizeof why, "%s", ok ? "" : tacos_last_error());
    /* the tree and rates kept, inferred or a file's (file: its hash) */
    uint64_t file = ok && path ? (*conf)->hash | 1 : 0, hit = 0; /* (never 0: inferred) */
    if (ok && c->s.measure == 1 && h > 0)
        hit = find_tree(file, ids, h, text, conf, f);
    net_ctx_t x = net_ctx_new(c);
    uint64_t v[6] = {!(ok && x.sbuf && x.rbuf), !hit, file, ~file, hit, ~hit};
    *cached = 0;
    if (path)
        tacos_comm_param(c, "fabric_file", p);
    else
        snprintf(p, sizeof p, "inferring the switch tree between hosts");
    if ((rc = c->ops.max_u64(c->ops.ctx, v, 6)))
        goto out;
    if (v[0] || (path && v[2] != ~v[3])) { /* (one hash everywhere: max of h and of ~h agree) */
        if (c->ops.rank == 0)
            tacos_comm_say(c, 0, "%s: %s; measuring the network instead", p,
                           !ok     ? why
                           : !path ? "out of memory on a rank"
                           : v[0]  ? "not read on every rank (or out of memory there)"
                                   : "not the same file on every rank");
        rc = TACOS_ERR_INVALID;
        goto out;
    }
    if (!v[1] && v[4] == ~v[5]) { /* every rank keeps the same tree and rates */
        *cached = 1;
        goto out;
    }
    if (hit && path) /* not on every rank, or not the same: measured again */
        tacos_fabric_net_free(f);
    else if (hit)
        drop_tree(text, conf, f);
    tacos_net_comm_t nc = {&x, net_exchange, net_max};
    rc = path ? tacos_fabric_net_measure(*conf, recs, c->ops.size, c->ops.rank, &nc, f)
              : tacos_fabric_infer(recs, c->ops.size, c->ops.rank, &nc, conf, text, f);
    if (rc && c->ops.rank == 0)
        tacos_comm_say(c, 0, "%s: %s; measuring the network instead", p, tacos_last_error());
    if (!rc && h > 0 && c->s.measure == 1)
        keep_tree(file, ids, h, path ? NULL : *text, f);
out:
    if (rc)
        drop_tree(text, conf, f);
    net_ctx_free(&x);
    return rc;
}

/* The records merged with the fabric's tree between hosts; rank 0 says
 * what was measured (text: the tree inferred, else from the file). */
static int merge_fabric(const tacos_comm_t *c, tacos_probe_record_t *recs,
                        const tacos_fabric_conf_t *conf, const char *text,
                        const tacos_fabric_net_t *f, int cached, tacos_topo_t **out)
{
    int rc = merge_at(c, recs, 1, NULL, conf, f, c->s.unwind_degree, out);
    if (rc) {
        tacos_comm_say(c, 0, "merging the fabric: %s", tacos_last_error());
        return rc;
    }
    keep_full(c, recs, 1, NULL, conf, f, *out);
    char *lines = NULL, *save = NULL;
    if (c->ops.rank == 0) {
        char from[1024], note[96];
        snprintf(from, sizeof from, "%s%s%s",
                 !text ? "from " : cached ? "from this job's earlier inference" : "inferred",
                 text ? "" : c->s.fabric_file,
                 !text && cached ? ", rates from this job's earlier measurement" : "");
        tacos_comm_say(c, 5,
                       cached ? "network between %d hosts %s (%d rounds, %.1f ms then)"
                              : "network between %d hosts %s: %d rounds, %.1f ms",
                       f->nhosts, from, f->rounds, f->measure_us / 1e3);
        for (char *l = text ? strtok_r((char *)text, "\n", &save) : NULL; l;
             l = strtok_r(NULL, "\n", &save))
            tacos_comm_say(c, 5, "  %s", l);
        if (tacos_fabric_net_describe(conf, f, &lines) == TACOS_OK)
            for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                tacos_comm_say(c, 5, "  %s", l);
        tacos_comm_say(c, 5, "topology %s; %zu links%s", (*out)->name, (*out)->nlinks,
                       full_note(*out, note));
    }
    free(lines);
    return 0;
}

int tacos_comm_records_topology(const tacos_comm_t *c, tacos_probe_record_t *recs,
                                tacos_topo_t **out)
{
    return merge(c, recs, usable(c, recs), NULL, out);
}

int tacos_comm_probed_topology(tacos_comm_t *c, tacos_topo_t **out)
{
    const tacos_settings_t *s = &c->s;
    int n = c->ops.size, rc;
    tacos_probe_record_t *recs = malloc((size_t)n * sizeof *recs);
    const tacos_probe_record_t *mine = tacos_comm_local_record(c);
    /* every rank learns first whether any lacks the records' space: one
     * that returned here alone would leave the others in the allgather */
    uint64_t lacking = !recs;
    if ((rc = c->ops.max_u64(c->ops.ctx, &lacking, 1)) || lacking) {
        free(recs);
        return rc ? rc : TACOS_ERR_NOMEM;
    }
    if ((rc = c->ops.allgather(c->ops.ctx, mine, recs, sizeof *recs))) {
        free(recs);
        return rc;
    }
    int ok = usable(c, recs), crc;
    if (ok && s->calibrate && (crc = calibrate(c, recs)))
        tacos_comm_say(c, 0, "calibration failed (%d); using the probed figures", crc);
    /* decided from inputs identical on every rank: the records, the settings */
    tacos_net_t net = {0};
    tacos_fabric_conf_t *conf = NULL;
    tacos_fabric_net_t fabric = {0};
    int spans = tacos_comm_spans_hosts(recs, n), have_fabric = 0, have_net = 0, cached = 0;
    char *inferred = NULL;
    uint64_t *ids = NULL; /* (h < 0 where memory is short: nothing kept or found) */
    int h = ok && spans ? host_key(recs, n, &ids) : 0;
    if (ok && spans && s->fabric_file)
        have_fabric = fabric_network(c, recs, s->fabric_file, ids, h, &conf, NULL, &fabric,
                                     &cached) == 0;
    if (ok && spans && !have_fabric && s->measure > 0 &&
        more_hosts_than(recs, n, s->infer_hosts))
        have_fabric =
            fabric_network(c, recs, NULL, ids, h, &conf, &inferred, &fabric, &cached) == 0;
    if (ok && spans && !have_fabric && s->measure > 0) {
        have_net = measure_network(c, recs, ids, h, &net, &cached) == 0;
        if (!have_net && c->ops.rank == 0)
            tacos_comm_say(c, 0, "using the probed network figures instead");
    }
    rc = have_fabric ? merge_fabric(c, recs, conf, inferred, &fabric, cached, out)
                     : merge(c, recs, ok, have_net ? &net : NULL, out);
    if (!rc && c->ops.rank == 0) {
        if (have_net)
            say_network(c, recs, &net, cached);
        if (s->dump_dir && s->dump_dir[0])
            dump_records(c, recs);
    }
    tacos_fabric_net_free(&fabric);
    tacos_fabric_conf_free(conf);
    free(inferred);
    tacos_net_free(&net);
    free(ids);
    free(recs);
    return rc;
}
