/* SPDX-License-Identifier: BSD-3-Clause */
/* The probe record: defaults, version check, JSON and the summary line. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe_internal.h"

const char *tacos_probe_src_name(int src)
{
    static const char *names[] = {"default", "hwloc", "NVML", "UCX", "calibration"};
    return src >= 0 && src <= TACOS_SRC_CALIBRATION ? names[src] : "?";
}

const char *tacos_probe_class_name(int cls)
{
    static const char *names[] = {"shm", "net", "nvlink"};
    return cls >= 0 && cls < TACOS_NCLASSES ? names[cls] : "?";
}

uint64_t tacos_probe_host_hash(const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

void tacos_probe_record_default(tacos_probe_record_t *r, const char *hostname)
{
    memset(r, 0, sizeof *r);
    r->version = TACOS_PROBE_VERSION;
    r->bytes = sizeof *r;
    if (hostname)
        snprintf(r->host, sizeof r->host, "%s", hostname);
    else
        gethostname(r->host, sizeof r->host - 1);
    r->host_id = tacos_probe_host_hash(r->host);
    r->package = r->numa = r->ncores = r->gpu = r->gpu_package = -1;
    r->cls[TACOS_CLASS_SHM] = (tacos_probe_link_class_t){TACOS_DEFAULT_SHM_LAT_US,
                                                         TACOS_DEFAULT_SHM_BW_GBPS,
                                                         TACOS_SRC_DEFAULT, ""};
    r->cls[TACOS_CLASS_NET] = (tacos_probe_link_class_t){TACOS_DEFAULT_NET_LAT_US,
                                                         TACOS_DEFAULT_NET_BW_GBPS,
                                                         TACOS_SRC_DEFAULT, ""};
    r->cls[TACOS_CLASS_NVLINK] = (tacos_probe_link_class_t){TACOS_DEFAULT_NVLINK_LAT_US, 0,
                                                            TACOS_SRC_DEFAULT, ""};
}

int tacos_probe_check(const tacos_probe_record_t *recs, int n)
{
    for (int i = 0; i < n; i++)
        if (recs[i].version != TACOS_PROBE_VERSION || recs[i].bytes != sizeof recs[i])
            return tacos_error(TACOS_ERR_PARSE,
                               "probe record of rank %d has version %u (%u bytes) but this build "
                               "reads version %d (%zu bytes): mixed coll/tacos installations",
                               i, recs[i].version, recs[i].bytes, TACOS_PROBE_VERSION,
                               sizeof recs[i]);
    return TACOS_OK;
}

int tacos_probe_record_to_json(const tacos_probe_record_t *r, char **out)
{
    cJSON *o = cJSON_CreateObject(), *gpu = NULL, *cls = NULL, *nics = NULL, *row = NULL;
    if (!o)
        goto nomem;
    cJSON_AddNumberToObject(o, "version", r->version);
    cJSON_AddStringToObject(o, "host", r->host);
    cJSON_AddStringToObject(o, "machine_source", tacos_probe_src_name(r->machine_src));
    cJSON_AddNumberToObject(o, "package", r->package);
    cJSON_AddNumberToObject(o, "numa", r->numa);
    cJSON_AddNumberToObject(o, "cores", r->ncores);
    cJSON_AddNumberToObject(o, "host_packages", r->host_packages);
    if (!(gpu = cJSON_AddObjectToObject(o, "gpu")))
        goto nomem;
    cJSON_AddNumberToObject(gpu, "index", r->gpu);
    cJSON_AddNumberToObject(gpu, "host_gpus", r->host_gpus);
    cJSON_AddStringToObject(gpu, "pci_busid", r->gpu_busid);
    cJSON_AddNumberToObject(gpu, "package", r->gpu_package);
    if (!(row = cJSON_AddArrayToObject(gpu, "nvlink_gbps")))
        goto nomem;
    for (int j = 0; j < r->host_gpus && j < TACOS_PROBE_MAX_GPUS; j++)
        cJSON_AddItemToArray(row, cJSON_CreateNumber(r->nvlink_gbps[j]));
    cJSON_AddNumberToObject(gpu, "nvswitch_gbps", r->nvswitch_gbps);
    cJSON_AddStringToObject(gpu, "nvlink_source", tacos_probe_src_name(r->nvlink_src));
    if (!(nics = cJSON_AddArrayToObject(o, "nics")))
        goto nomem;
    for (int i = 0; i < r->nnics; i++)
        cJSON_AddItemToArray(nics, cJSON_CreateString(r->nics[i]));
    if (!(cls = cJSON_AddObjectToObject(o, "link_classes")))
        goto nomem;
    for (int c = 0; c < TACOS_NCLASSES; c++) {
        cJSON *k = cJSON_AddObjectToObject(cls, tacos_probe_class_name(c));
        if (!k)
            goto nomem;
        cJSON_AddNumberToObject(k, "lat_us", r->cls[c].lat_us);
        cJSON_AddNumberToObject(k, "bw_gbps", r->cls[c].bw_gbps);
        cJSON_AddStringToObject(k, "source", tacos_probe_src_name(r->cls[c].src));
        cJSON_AddStringToObject(k, "transport", r->cls[c].transport);
    }
    *out = cJSON_Print(o);
    cJSON_Delete(o);
    if (!*out)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory printing a probe record");
    return TACOS_OK;
nomem:
    cJSON_Delete(o);
    return tacos_error(TACOS_ERR_NOMEM, "out of memory building a probe record's JSON");
}

void tacos_probe_summary(const tacos_probe_record_t *recs, int n, char *buf, size_t len)
{
    int hosts = 0, minper = n, maxper = 0, gpus = 0;
    for (int i = 0; i < n; i++) {
        int first = 1, per = 0;
        for (int j = 0; j < n; j++) {
            first &= !(j < i && recs[j].host_id == recs[i].host_id);
            per += recs[j].host_id == recs[i].host_id;
        }
        gpus += recs[i].gpu >= 0;
        if (!first)
            continue;
        hosts++;
        minper = per < minper ? per : minper;
        maxper = per > maxper ? per : maxper;
    }
    size_t at = (size_t)snprintf(buf, len, "%d rank(s) on %d host(s), %d-%d per host, %d with a GPU;",
                                 n, hosts, minper, maxper, gpus);
    const tacos_probe_record_t *r = &recs[0];
    for (int c = 0; c < TACOS_NCLASSES && at < len; c++)
        if (c != TACOS_CLASS_NVLINK || gpus)
            at += (size_t)snprintf(buf + at, len - at, " %s %.3g us %.4g GB/s (%s%s%s)",
                               tacos_probe_class_name(c), r->cls[c].lat_us, r->cls[c].bw_gbps,
                               tacos_probe_src_name(r->cls[c].src),
                               r->cls[c].transport[0] ? " " : "", r->cls[c].transport);
}
