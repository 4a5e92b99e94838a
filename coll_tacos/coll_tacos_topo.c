/*
 * The communicator's topology when no topology file is given: every rank's
 * probe record (probed once per process), exchanged with one allgather,
 * optionally calibrated with ping-pongs; when the ranks span several hosts,
 * the links between hosts measured (libtacos-probe's tacos_net_measure over
 * the PML, cached per job); merged by libtacos-probe.  Any problem falls
 * back to the default model (hosts only), with a message.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/util/os_dirpath.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"

#include "coll_tacos.h"
#include "tacos_probe.h"

#define C (&mca_coll_tacos_component)
#define TRACE(level, ...) opal_output_verbose(level, C->output, "coll:tacos: " __VA_ARGS__)

/* This process's record, probed once, at the first topology any thread
 * builds. */
static tacos_probe_record_t the_record;

static void probe_once(void)
{
    if (!C->probe) {
        tacos_probe_record_default(&the_record, NULL);
        return;
    }
    tacos_probe_opts_t o;
    tacos_probe_opts_init(&o);
    o.hwloc_xml = C->probe_hwloc_xml && C->probe_hwloc_xml[0] ? C->probe_hwloc_xml : NULL;
    o.ucx_lib = C->ucx_lib ? C->ucx_lib : "";
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    o.local_rank = C->probe_gpu ? (lr ? atoi(lr) : 0) : -1;
    if (tacos_probe_local(&o, &the_record))
        opal_output(0, "coll:tacos: probe: %s; the default model's figures stand in for what "
                       "it could not learn",
                    tacos_last_error());
}

static const tacos_probe_record_t *local_record(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, probe_once);
    return &the_record;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Microseconds per one-way trip of `bytes` between ranks a and b (measured
 * on a; 0 elsewhere).  The tag is barrier's: coll/tacos serves no barrier
 * and every rank is inside this setup, so nothing else can match it. */
static double pingpong(struct ompi_communicator_t *comm, int a, int b, char *buf, size_t bytes)
{
    const int iters = 8, me = ompi_comm_rank(comm), tag = MCA_COLL_BASE_TAG_BARRIER;
    if (me != a && me != b)
        return 0;
    double t0 = 0;
    for (int i = -1; i < iters; i++) { /* i = -1: warm-up */
        if (i == 0)
            t0 = now_us();
        for (int leg = 0; leg < 2; leg++) {
            int rc = (me == a) == (leg == 0)
                         ? MCA_PML_CALL(send(buf, (int)bytes, &ompi_mpi_byte.dt, me == a ? b : a,
                                             tag, MCA_PML_BASE_SEND_STANDARD, comm))
                         : MCA_PML_CALL(recv(buf, (int)bytes, &ompi_mpi_byte.dt, me == a ? b : a,
                                             tag, comm, MPI_STATUS_IGNORE));
            if (rc != OMPI_SUCCESS)
                return -1;
        }
    }
    return me == a ? (now_us() - t0) / (2.0 * iters) : 0;
}

/* Calibration: ping-pongs of 8 B and 1 MiB over one pair per link class
 * (two ranks of one host; rank 0 and a rank on another host) replace the
 * probed α/β of that class in every record. */
static int calibrate(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                     tacos_probe_record_t *recs)
{
    const size_t big = 1 << 20;
    int n = ompi_comm_size(comm), pair[2][2] = {{-1, -1}, {-1, -1}};
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int cls = recs[i].host_id == recs[j].host_id ? 0 : 1;
            if (pair[cls][0] < 0)
                pair[cls][0] = i, pair[cls][1] = j;
        }
    /* every rank learns first whether any lacks the buffer: a partner must
     * not wait for ping-pongs that never come */
    char *buf = calloc(1, big);
    double v[5] = {0, 0, 0, 0, 0}, r[5], lacking = !buf;
    int failed = m->prev_allreduce(MPI_IN_PLACE, &lacking, 1, &ompi_mpi_double.dt,
                                   &ompi_mpi_op_max.op, comm, m->prev_allreduce_module);
    if (failed != OMPI_SUCCESS || lacking > 0) {
        free(buf);
        return failed != OMPI_SUCCESS ? failed : OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int cls = 0; cls < 2 && !failed; cls++) {
        if (pair[cls][0] < 0)
            continue;
        double small_us = pingpong(comm, pair[cls][0], pair[cls][1], buf, 8);
        double big_us = pingpong(comm, pair[cls][0], pair[cls][1], buf, big);
        failed = small_us < 0 || big_us < 0;
        if (ompi_comm_rank(comm) == pair[cls][0] && big_us > small_us) {
            v[2 * cls] = small_us;
            v[2 * cls + 1] = (double)(big - 8) / ((big_us - small_us) * 1e3); /* GB/s */
        }
    }
    free(buf);
    v[4] = failed; /* a failed ping-pong: every rank keeps the probed figures */
    int rc = m->prev_allreduce(v, r, 5, &ompi_mpi_double.dt, &ompi_mpi_op_max.op, comm,
                               m->prev_allreduce_module);
    if (rc != OMPI_SUCCESS || r[4] > 0)
        return rc != OMPI_SUCCESS ? rc : OMPI_ERROR;
    const int classes[2] = {TACOS_CLASS_SHM, TACOS_CLASS_NET};
    for (int cls = 0; cls < 2; cls++) {
        if (!(r[2 * cls + 1] > 0))
            continue;
        for (int i = 0; i < n; i++) {
            tacos_probe_link_class_t *c = &recs[i].cls[classes[cls]];
            c->lat_us = r[2 * cls];
            c->bw_gbps = r[2 * cls + 1];
            c->src = TACOS_SRC_CALIBRATION;
        }
    }
    return OMPI_SUCCESS;
}

/* ---- the network between hosts ---------------------------------------------- */

typedef struct {
    mca_coll_tacos_module_t *m;
    struct ompi_communicator_t *comm;
    char *sbuf, *rbuf; /* TACOS_NET_MAX_BYTES, and twice that */
} net_ctx_t;

/* Sends and receives `bytes` with each peer at once; the tag is barrier's,
 * as for the ping-pongs above. */
static int net_exchange(void *ctx, const int *peers, int n, size_t bytes, double *t_us)
{
    net_ctx_t *x = ctx;
    ompi_request_t *req[4];
    int rc = OMPI_SUCCESS, posted = 0;
    if (n > 2 || bytes > TACOS_NET_MAX_BYTES)
        return OMPI_ERR_BAD_PARAM;
    double t0 = now_us();
    for (int i = 0; i < n && rc == OMPI_SUCCESS; i++) {
        rc = MCA_PML_CALL(irecv(x->rbuf + (size_t)i * bytes, (int)bytes, &ompi_mpi_byte.dt,
                                peers[i], MCA_COLL_BASE_TAG_BARRIER, x->comm, &req[posted]));
        posted += rc == OMPI_SUCCESS;
        if (rc == OMPI_SUCCESS)
            rc = MCA_PML_CALL(isend(x->sbuf, (int)bytes, &ompi_mpi_byte.dt, peers[i],
                                    MCA_COLL_BASE_TAG_BARRIER, MCA_PML_BASE_SEND_STANDARD, x->comm,
                                    &req[posted]));
        posted += rc == OMPI_SUCCESS;
    }
    if (rc != OMPI_SUCCESS)
        return rc;
    for (int left = posted; left > 0; left--) { /* a peer is done when both of its are */
        int idx = 0;
        if ((rc = ompi_request_wait_any((size_t)posted, req, &idx, MPI_STATUS_IGNORE)))
            return rc;
        t_us[idx / 2] = now_us() - t0;
    }
    return OMPI_SUCCESS;
}

static int net_max(void *ctx, double *v, int n)
{
    net_ctx_t *x = ctx;
    return x->m->prev_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_double.dt, &ompi_mpi_op_max.op,
                                x->comm, x->m->prev_allreduce_module);
}

/* Measurements kept for the job, keyed by the communicator's hosts in the
 * order of their first rank. */
typedef struct net_cache {
    struct net_cache *next;
    int nhosts;
    uint64_t *host_ids;
    tacos_net_t net;
} net_cache_t;
static net_cache_t *net_cache;
static pthread_mutex_t net_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Copies src's figures into dst (both allocated for the same hosts). */
static void copy_net(tacos_net_t *dst, const tacos_net_t *src)
{
    size_t hh = (size_t)src->nhosts * (size_t)src->nhosts;
    memcpy(dst->lat_us, src->lat_us, hh * sizeof *dst->lat_us);
    memcpy(dst->bw_gbps, src->bw_gbps, hh * sizeof *dst->bw_gbps);
    memcpy(dst->t_us, src->t_us, 3 * hh * sizeof *dst->t_us);
    memcpy(dst->routed, src->routed, hh);
    memcpy(dst->s2_bytes, src->s2_bytes, hh * sizeof *dst->s2_bytes);
    dst->ntests = src->ntests;
    dst->note = src->note;
}

static void host_ids(const tacos_probe_record_t *recs, int n, const int *host, uint64_t *ids)
{
    for (int i = n - 1; i >= 0; i--)
        ids[host[i]] = recs[i].host_id;
}

/* A copy of the cached measurement of these hosts into *net (allocated),
 * or 0 when there is none. */
static int cache_find(const uint64_t *ids, int h, tacos_net_t *net)
{
    int found = 0;
    pthread_mutex_lock(&net_cache_lock);
    for (net_cache_t *e = net_cache; e && !found; e = e->next)
        if (e->nhosts == h && !memcmp(e->host_ids, ids, (size_t)h * sizeof *ids) &&
            tacos_net_alloc(net, h) == TACOS_OK) {
            copy_net(net, &e->net);
            found = 1;
        }
    pthread_mutex_unlock(&net_cache_lock);
    return found;
}

static void cache_add(const uint64_t *ids, int h, const tacos_net_t *net)
{
    net_cache_t *e = calloc(1, sizeof *e);
    if (!e || !(e->host_ids = malloc((size_t)h * sizeof *ids)) || tacos_net_alloc(&e->net, h)) {
        if (e)
            free(e->host_ids);
        free(e);
        return; /* not cached: measured again next time */
    }
    memcpy(e->host_ids, ids, (size_t)h * sizeof *ids);
    e->nhosts = h;
    copy_net(&e->net, net);
    pthread_mutex_lock(&net_cache_lock);
    e->next = net_cache;
    net_cache = e;
    pthread_mutex_unlock(&net_cache_lock);
}

/* Rank 0's cached copy on every rank (the others' copies may come from
 * other communicators' measurements): a max with zeros elsewhere. */
static int share_rank0(net_ctx_t *x, tacos_net_t *net)
{
    int h = net->nhosts, rank0 = ompi_comm_rank(x->comm) == 0;
    size_t hh = (size_t)h * (size_t)h, len = 3 * hh + 1;
    double *v = calloc(len, sizeof *v);
    if (!v)
        return OMPI_ERR_OUT_OF_RESOURCE;
    for (size_t i = 0; rank0 && i < hh; i++) {
        v[i] = net->lat_us[i];
        v[hh + i] = net->bw_gbps[i];
        v[2 * hh + i] = net->routed[i];
    }
    v[3 * hh] = rank0 ? net->ntests : 0;
    int rc = net_max(x, v, (int)len);
    for (size_t i = 0; rc == OMPI_SUCCESS && i < hh; i++) {
        net->lat_us[i] = v[i];
        net->bw_gbps[i] = v[hh + i];
        net->routed[i] = (unsigned char)v[2 * hh + i];
    }
    net->ntests = (int)v[3 * hh];
    free(v);
    return rc;
}

/* The measured network between the communicator's hosts, from the job's
 * cache when every rank has it (coll_tacos_measure 1), else measured now.
 * Returns OMPI_SUCCESS with *net filled, or an error (message printed). */
static int measure_network(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                           const tacos_probe_record_t *recs, int n, tacos_net_t *net, int *cached)
{
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local);
    uint64_t *ids = malloc((size_t)n * sizeof *ids);
    /* untouched unless measured (calloc: zero pages mapped on first use) */
    net_ctx_t x = {m, comm, calloc(1, TACOS_NET_MAX_BYTES), malloc(2 * TACOS_NET_MAX_BYTES)};
    int rc, h = 0, ok = host && local && ids && x.sbuf && x.rbuf;
    *cached = 0;
    if (ok) {
        h = tacos_probe_hosts(recs, n, host, local);
        host_ids(recs, n, host, ids);
        *cached = tacos_comm_settings(m->core)->measure == 1 && cache_find(ids, h, net);
    }
    /* every rank learns whether any lacks memory or the cached figures */
    double v[2] = {!ok, !*cached};
    if ((rc = net_max(&x, v, 2)) != OMPI_SUCCESS || v[0] > 0) {
        if (rc == OMPI_SUCCESS)
            opal_output(0, "coll:tacos: out of memory measuring the network (rank %d)",
                        ompi_comm_rank(comm));
        rc = rc == OMPI_SUCCESS ? OMPI_ERR_OUT_OF_RESOURCE : rc;
        goto out;
    }
    if (v[1] == 0) {
        rc = share_rank0(&x, net);
        goto out;
    }
    if (*cached)
        tacos_net_free(net);
    *cached = 0;
    tacos_net_comm_t c = {&x, net_exchange, net_max};
    if (tacos_net_measure(recs, n, ompi_comm_rank(comm), &c, net)) {
        opal_output(0, "coll:tacos: measuring the network between %d hosts: %s", h,
                    tacos_last_error());
        rc = OMPI_ERROR;
        goto out;
    }
    cache_add(ids, h, net);
    rc = OMPI_SUCCESS;
out:
    if (rc != OMPI_SUCCESS && *cached)
        tacos_net_free(net);
    free(host);
    free(local);
    free(ids);
    free(x.sbuf);
    free(x.rbuf);
    return rc;
}

static int spans_hosts(const tacos_probe_record_t *recs, int n)
{
    for (int i = 1; i < n; i++)
        if (recs[i].host_id != recs[0].host_id)
            return 1;
    return 0;
}

/* Each pair of hosts as measured, for the verbose summary (rank 0). */
static void trace_network(const tacos_probe_record_t *recs, int n, const tacos_net_t *net,
                          int cached)
{
    char *text = NULL, *save = NULL;
    TRACE(5, "network between %d hosts %s: %d rounds, %d concurrent tests, %.1f ms%s%s",
          net->nhosts, cached ? "from this job's earlier measurement" : "measured",
          tacos_net_rounds(net->nhosts), net->ntests, net->measure_us / 1e3,
          net->note ? "; " : "", net->note ? net->note : "");
    if (tacos_net_describe(recs, n, net, &text) == TACOS_OK)
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            TRACE(5, "  %s", l);
    free(text);
}

static void dump_records(struct ompi_communicator_t *comm, const tacos_probe_record_t *recs, int n)
{
    char path[4096];
    mca_coll_tacos_dump_dir();
    snprintf(path, sizeof path, "%s/tacos-comm%u-probe.json", C->dump_dir,
             ompi_comm_get_cid(comm));
    FILE *f = fopen(path, "w");
    int ok = f != NULL && fputs("[\n", f) >= 0;
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
        opal_output(0, "coll:tacos: dump: cannot write %s", path);
}

int mca_coll_tacos_probed_topology(mca_coll_tacos_module_t *m, tacos_topo_t **out)
{
    struct ompi_communicator_t *comm = m->comm;
    int n = ompi_comm_size(comm), rc;
    tacos_probe_record_t *recs = malloc((size_t)n * sizeof *recs);
    if (!recs)
        return OMPI_ERR_OUT_OF_RESOURCE;
    rc = m->prev_allgather(local_record(), (int)sizeof *recs, &ompi_mpi_byte.dt, recs,
                           (int)sizeof *recs, &ompi_mpi_byte.dt, comm, m->prev_allgather_module);
    if (rc != OMPI_SUCCESS) {
        free(recs);
        return rc;
    }
    int usable = tacos_probe_check(recs, n) == TACOS_OK, crc;
    if (!usable)
        opal_output(0, "coll:tacos: %s; using the default model", tacos_last_error());
    if (usable && tacos_comm_settings(m->core)->calibrate && (crc = calibrate(m, comm, recs)) != OMPI_SUCCESS)
        opal_output(0, "coll:tacos: calibration failed (%d); using the probed figures", crc);
    /* decided from inputs identical on every rank: the records, the parameter */
    tacos_net_t net = {0};
    int have_net = 0, cached = 0;
    if (usable && tacos_comm_settings(m->core)->measure > 0 && spans_hosts(recs, n)) {
        have_net = measure_network(m, comm, recs, n, &net, &cached) == OMPI_SUCCESS;
        if (!have_net && ompi_comm_rank(comm) == 0)
            opal_output(0, "coll:tacos: using the probed network figures instead");
    }
    if (tacos_probe_merge_net(recs, n, tacos_comm_settings(m->core)->unwind_degree, !usable || !tacos_comm_settings(m->core)->probe,
                              have_net ? &net : NULL, out)) {
        opal_output(0, "coll:tacos: merging the probe records: %s", tacos_last_error());
        rc = OMPI_ERROR;
    }
    if (rc == OMPI_SUCCESS && ompi_comm_rank(comm) == 0) {
        char summary[512];
        tacos_probe_summary(recs, n, summary, sizeof summary);
        TRACE(5, "topology %s: %s; %zu links", (*out)->name, summary, (*out)->nlinks);
        if (have_net)
            trace_network(recs, n, &net, cached);
        if (C->dump_dir && C->dump_dir[0])
            dump_records(comm, recs, n);
    }
    tacos_net_free(&net);
    free(recs);
    return rc;
}
