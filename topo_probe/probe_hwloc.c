/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank's record from hwloc (this machine or a saved XML), then NVML and
 * UCX for what hwloc does not know. */
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe_internal.h"

void tacos_probe_opts_init(tacos_probe_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->use_nvml = 1;
}

/* A GPU: a 3D controller (0x0302) or other display controller (0x0380, as
 * AMD Instinct shows), an NVIDIA VGA controller, or another VGA controller
 * that a driver backs with a GPU/compute OS device; not a server's on-board
 * VGA (Matrox, ASPEED, ATI ES1000). */
static int is_gpu(hwloc_obj_t p)
{
    unsigned cls = p->attr->pcidev.class_id, vendor = p->attr->pcidev.vendor_id;
    if (cls == 0x0302 || cls == 0x0380 || (cls == 0x0300 && vendor == 0x10de))
        return 1;
    for (hwloc_obj_t c = cls == 0x0300 ? p->io_first_child : NULL; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE &&
            (c->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC ||
             (c->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU && c->name &&
              strncmp(c->name, "card", 4) && strncmp(c->name, "renderD", 7))))
            return 1;
    return 0;
}

/* The host's GPUs in PCI bus order. */
typedef struct {
    hwloc_obj_t pci[TACOS_PROBE_MAX_GPUS];
    char busid[TACOS_PROBE_MAX_GPUS][16];
    int n;
} gpus_t;

static int by_busid(const void *a, const void *b)
{
    const struct hwloc_pcidev_attr_s *x = &(*(const hwloc_obj_t *)a)->attr->pcidev,
                                     *y = &(*(const hwloc_obj_t *)b)->attr->pcidev;
    unsigned long kx = (unsigned long)x->domain << 24 | (unsigned long)x->bus << 16 |
                       (unsigned long)x->dev << 8 | x->func,
                  ky = (unsigned long)y->domain << 24 | (unsigned long)y->bus << 16 |
                       (unsigned long)y->dev << 8 | y->func;
    return (kx > ky) - (kx < ky);
}

static void find_gpus(hwloc_topology_t topo, gpus_t *g)
{
    g->n = 0;
    for (hwloc_obj_t p = NULL; (p = hwloc_get_next_pcidev(topo, p)) != NULL;)
        if (is_gpu(p) && g->n < TACOS_PROBE_MAX_GPUS)
            g->pci[g->n++] = p;
    qsort(g->pci, (size_t)g->n, sizeof g->pci[0], by_busid);
    for (int i = 0; i < g->n; i++) {
        const struct hwloc_pcidev_attr_s *a = &g->pci[i]->attr->pcidev;
        snprintf(g->busid[i], sizeof g->busid[i], "%04x:%02x:%02x.%01x", a->domain, a->bus,
                 a->dev, a->func);
    }
}

/* Index of the GPU whose PCI device is obj or obj's parent, else -1. */
static int gpu_of(const gpus_t *g, hwloc_obj_t obj)
{
    if (obj && obj->type == HWLOC_OBJ_OS_DEVICE)
        obj = obj->parent;
    for (int i = 0; i < g->n; i++)
        if (g->pci[i] == obj)
            return i;
    return -1;
}

static int has_uuid(hwloc_obj_t pci, const char *uuid)
{
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
        const char *v = hwloc_obj_get_info_by_name(c, "NVIDIAUUID");
        if (v && !strncmp(v, uuid, strlen(uuid)))
            return 1;
    }
    return 0;
}

/* The GPU this process uses: the local_rank-th (mod count) of the visible
 * ones; CUDA_VISIBLE_DEVICES entries are indices or GPU-UUID prefixes. */
static int pick_gpu(const gpus_t *g, const tacos_probe_opts_t *o)
{
    const char *env = o->cuda_visible_devices ? o->cuda_visible_devices
                                               : getenv("CUDA_VISIBLE_DEVICES");
    int visible[TACOS_PROBE_MAX_GPUS], nvis = 0;
    if (!env) {
        for (int i = 0; i < g->n; i++)
            visible[nvis++] = i;
    } else {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", env);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && nvis < g->n;
             tok = strtok_r(NULL, ",", &save)) {
            char *end;
            long v = strtol(tok, &end, 10);
            if (*tok && !*end) {
                if (v < 0 || v >= g->n)
                    break; /* CUDA stops at the first invalid entry */
                visible[nvis++] = (int)v;
                continue;
            }
            int found = -1;
            for (int i = 0; i < g->n && found < 0; i++)
                if (has_uuid(g->pci[i], tok))
                    found = i;
            if (found < 0)
                break;
            visible[nvis++] = found;
        }
    }
    return o->local_rank >= 0 && nvis > 0 ? visible[o->local_rank % nvis] : -1;
}

/* NVLink bandwidth of GPU `gpu` from hwloc's NVLinkBandwidth matrix (MB/s):
 * GPU peers point to point, NVSwitches (PCI subtype "NVSwitch") as a fabric. */
static int nvlink_from_hwloc(hwloc_topology_t topo, const gpus_t *g, tacos_probe_record_t *r)
{
    struct hwloc_distances_s *d[4];
    unsigned nd = 4;
    if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nd, d, 0) || nd == 0)
        return 0;
    int found = 0;
    for (unsigned m = 0; m < nd && m < 4; m++) {
        for (unsigned i = 0; i < d[m]->nbobjs; i++) {
            if (gpu_of(g, d[m]->objs[i]) != r->gpu)
                continue;
            for (unsigned j = 0; j < d[m]->nbobjs; j++) {
                hwloc_obj_t peer = d[m]->objs[j];
                double gbps = (double)d[m]->values[(size_t)i * d[m]->nbobjs + j] / 1000.0;
                int h = gpu_of(g, peer);
                if (gbps <= 0 || h == r->gpu)
                    continue;
                if (h >= 0)
                    r->nvlink_gbps[h] += (float)gbps;
                else if (peer->type == HWLOC_OBJ_PCI_DEVICE && peer->subtype &&
                         !strcmp(peer->subtype, "NVSwitch"))
                    r->nvswitch_gbps += (float)gbps;
                found = 1;
            }
            break;
        }
    }
    for (unsigned m = 0; m < nd && m < 4; m++)
        hwloc_distances_release(topo, d[m]);
    return found;
}

/* The NICs whose locality meets the binding, OpenFabrics devices first. */
static void find_nics(hwloc_topology_t topo, hwloc_const_bitmap_t set, tacos_probe_record_t *r)
{
    const hwloc_obj_osdev_type_t order[] = {HWLOC_OBJ_OSDEV_OPENFABRICS,
                                            HWLOC_OBJ_OSDEV_NETWORK};
    for (int k = 0; k < 2; k++)
        for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(topo, o)) != NULL;) {
            if (o->attr->osdev.type != order[k] || r->nnics >= TACOS_PROBE_MAX_NICS)
                continue;
            hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo, o);
            if (near && near->cpuset && !hwloc_bitmap_intersects(near->cpuset, set))
                continue;
            snprintf(r->nics[r->nnics++], sizeof r->nics[0], "%s", o->name ? o->name : "?");
        }
}

/* The single object of `type` whose cpuset contains the binding, or -1. */
static int bound_within(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_bitmap_t set)
{
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type(topo, type, o)) != NULL;)
        if (o->cpuset && hwloc_bitmap_isincluded(set, o->cpuset))
            return (int)o->logical_index;
    return -1;
}

static int probe_hwloc(const tacos_probe_opts_t *o, tacos_probe_record_t *r)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t set = NULL;
    int rc = TACOS_OK;
    const char *what = o->hwloc_xml ? o->hwloc_xml : "this machine";
    if (hwloc_topology_init(&topo))
        return tacos_error(TACOS_ERR_NOMEM, "hwloc: cannot initialize a topology");
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (o->hwloc_xml && access(o->hwloc_xml, R_OK)) {
        rc = tacos_error(TACOS_ERR_IO, "hwloc XML %s: %s", o->hwloc_xml, strerror(errno));
        goto out;
    }
    if (o->hwloc_xml && hwloc_topology_set_xml(topo, o->hwloc_xml)) {
        rc = tacos_error(TACOS_ERR_PARSE, "hwloc XML %s: not an hwloc XML export, or corrupt (%s)",
                         o->hwloc_xml, strerror(errno));
        goto out;
    }
    if (hwloc_topology_load(topo)) {
        rc = tacos_error(TACOS_ERR_PARSE, "hwloc cannot load %s: %s%s", what, strerror(errno),
                         o->hwloc_xml ? " (not an hwloc XML export, or corrupt)" : "");
        goto out;
    }
    hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(topo);
    if (!(set = hwloc_bitmap_alloc())) {
        rc = tacos_error(TACOS_ERR_NOMEM, "hwloc: out of memory");
        goto out;
    }
    if (o->cpuset) {
        if (hwloc_bitmap_list_sscanf(set, o->cpuset) < 0) {
            rc = tacos_error(TACOS_ERR_ARG, "cpuset '%s': not a PU list such as 0-5,12",
                             o->cpuset);
            goto out;
        }
        hwloc_bitmap_and(set, set, all);
        if (hwloc_bitmap_iszero(set)) {
            rc = tacos_error(TACOS_ERR_ARG, "cpuset '%s': no PU of %s in it", o->cpuset, what);
            goto out;
        }
    } else if (o->nslices > 0) { /* PUs [from, to) in logical (topology) order */
        int w = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU),
            from = (int)((long)o->slice * w / o->nslices),
            to = (int)((long)(o->slice + 1) * w / o->nslices);
        if (to == from) /* more ranks than PUs: share one */
            to = from + 1;
        for (int i = from; i < to; i++)
            hwloc_bitmap_set(set, hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i)->os_index);
    } else if (o->hwloc_xml || hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) ||
               hwloc_bitmap_iszero(set)) {
        hwloc_bitmap_copy(set, all);
    }
    r->package = bound_within(topo, HWLOC_OBJ_PACKAGE, set);
    r->host_packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    r->numa = bound_within(topo, HWLOC_OBJ_NUMANODE, set);
    r->ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
    if (r->ncores <= 0)
        r->ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU);

    gpus_t g;
    find_gpus(topo, &g);
    r->host_gpus = g.n;
    r->gpu = pick_gpu(&g, o);
    if (r->gpu >= 0) {
        snprintf(r->gpu_busid, sizeof r->gpu_busid, "%s", g.busid[r->gpu]);
        hwloc_obj_t at = hwloc_get_non_io_ancestor_obj(topo, g.pci[r->gpu]);
        r->gpu_package = at && at->cpuset ? bound_within(topo, HWLOC_OBJ_PACKAGE, at->cpuset) : -1;
        if (!o->hwloc_xml && o->use_nvml && tacos_probe_nvml(r, g.busid, g.n) == TACOS_OK)
            r->nvlink_src = TACOS_SRC_NVML;
        else if (nvlink_from_hwloc(topo, &g, r))
            r->nvlink_src = TACOS_SRC_HWLOC;
        float total = r->nvswitch_gbps;
        for (int j = 0; j < g.n; j++)
            total += r->nvlink_gbps[j];
        if (total > 0) {
            tacos_probe_link_class_t *c = &r->cls[TACOS_CLASS_NVLINK];
            c->bw_gbps = total;
            c->src = r->nvlink_src;
            snprintf(c->transport, sizeof c->transport, "%s",
                     r->nvswitch_gbps > 0 ? "nvswitch" : "nvlink");
        }
    }
    find_nics(topo, set, r);
    r->machine_src = TACOS_SRC_HWLOC;
out:
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    return rc;
}

int tacos_probe_local(const tacos_probe_opts_t *o, tacos_probe_record_t *r)
{
    char first[512] = "";
    tacos_probe_record_default(r, o->hostname);
    int rc = probe_hwloc(o, r);
    if (rc) {
        snprintf(first, sizeof first, "%s", tacos_last_error());
        tacos_probe_record_default(r, o->hostname); /* nothing half-probed */
    }
    const char *lib = o->ucx_lib ? o->ucx_lib : "libuct.so.0";
    int urc = lib[0] ? tacos_probe_ucx(r, lib) : TACOS_OK;
    if (rc)
        return tacos_error(rc, "%s", first);
    return urc;
}

int tacos_probe_host(const tacos_probe_opts_t *o, int nranks, tacos_probe_record_t *recs)
{
    int rc = TACOS_OK;
    for (int i = 0; i < nranks; i++) {
        tacos_probe_opts_t one = *o;
        one.cpuset = NULL;
        one.slice = i;
        one.nslices = nranks;
        one.local_rank = o->local_rank < 0 ? -1 : i;
        one.ucx_lib = i ? "" : o->ucx_lib;
        int r = tacos_probe_local(&one, &recs[i]);
        if (i) { /* the transports are the host's */
            recs[i].cls[TACOS_CLASS_SHM] = recs[0].cls[TACOS_CLASS_SHM];
            recs[i].cls[TACOS_CLASS_NET] = recs[0].cls[TACOS_CLASS_NET];
        }
        if (r && !rc)
            rc = r;
    }
    return rc;
}
