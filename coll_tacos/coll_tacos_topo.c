/*
 * The communicator's topology when no topology file is given: every rank's
 * probe record (probed once per process), exchanged with one allgather,
 * optionally calibrated with ping-pongs, merged by libtacos-probe.  Any
 * problem falls back to the default model (hosts only), with a message.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    char *buf = calloc(1, big);
    double v[4] = {0, 0, 0, 0}, r[4];
    int failed = !buf;
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
    int rc = m->prev_allreduce(v, r, 4, &ompi_mpi_double.dt, &ompi_mpi_op_max.op, comm,
                               m->prev_allreduce_module);
    if (rc != OMPI_SUCCESS || failed)
        return failed ? OMPI_ERROR : rc;
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

static void dump_records(struct ompi_communicator_t *comm, const tacos_probe_record_t *recs, int n)
{
    char path[4096];
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

int mca_coll_tacos_probed_topology(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                                   tacos_topo_t **out)
{
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
    if (usable && C->calibrate && (crc = calibrate(m, comm, recs)) != OMPI_SUCCESS)
        opal_output(0, "coll:tacos: calibration failed (%d); using the probed figures", crc);
    if (tacos_probe_merge(recs, n, C->unwind_degree, !usable || !C->probe, out)) {
        opal_output(0, "coll:tacos: merging the probe records: %s", tacos_last_error());
        rc = OMPI_ERROR;
    }
    if (rc == OMPI_SUCCESS && ompi_comm_rank(comm) == 0) {
        char summary[512];
        tacos_probe_summary(recs, n, summary, sizeof summary);
        TRACE(5, "topology %s: %s; %zu links", (*out)->name, summary, (*out)->nlinks);
        if (C->dump_dir && C->dump_dir[0])
            dump_records(comm, recs, n);
    }
    free(recs);
    return rc;
}
