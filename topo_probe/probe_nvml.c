/* SPDX-License-Identifier: BSD-3-Clause */
/* NVLink state through NVML, loaded with dlopen so that it is no build or
 * run-time dependency (Debian's hwloc has no NVML plugin).  Only the few
 * NVML entry points and types used here are declared. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "probe_internal.h"

typedef struct nvml_device *nvml_device_t;
typedef struct { /* nvmlPciInfo_t */
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_t;

#define NVML_MAX_LINKS 18
#define NVML_DEVICE_TYPE_GPU 0
#define NVML_DEVICE_TYPE_SWITCH 2

/* GB/s per link and direction, by NVLink version (1 = P100 ... 5 = B200). */
static double link_gbps(unsigned version)
{
    static const double by_version[] = {0, 20, 25, 25, 25, 50};
    return version >= 1 && version <= 5 ? by_version[version] : 25;
}

static int same_pci(const char *busid, const nvml_pci_t *p)
{
    unsigned d, b, s, f;
    return sscanf(busid, "%x:%x:%x.%x", &d, &b, &s, &f) == 4 && d == p->domain && b == p->bus &&
           s == p->device;
}

int tacos_probe_nvml(tacos_probe_record_t *r, char (*busids)[16], int ngpus)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return tacos_error(TACOS_ERR_IO, "NVML: %s", dlerror());
    int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
    int (*shutdown)(void) = (int (*)(void))dlsym(lib, "nvmlShutdown");
    int (*by_bus)(const char *, nvml_device_t *) =
        (int (*)(const char *, nvml_device_t *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    int (*state)(nvml_device_t, unsigned, int *) =
        (int (*)(nvml_device_t, unsigned, int *))dlsym(lib, "nvmlDeviceGetNvLinkState");
    int (*version)(nvml_device_t, unsigned, unsigned *) =
        (int (*)(nvml_device_t, unsigned, unsigned *))dlsym(lib, "nvmlDeviceGetNvLinkVersion");
    int (*remote)(nvml_device_t, unsigned, nvml_pci_t *) = (int (*)(
        nvml_device_t, unsigned, nvml_pci_t *))dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    int (*remote_type)(nvml_device_t, unsigned, int *) = (int (*)(
        nvml_device_t, unsigned, int *))dlsym(lib, "nvmlDeviceGetNvLinkRemoteDeviceType");
    int rc = TACOS_OK;
    nvml_device_t dev;
    if (!init || !shutdown || !by_bus || !state || !version || !remote) {
        rc = tacos_error(TACOS_ERR_IO, "NVML: libnvidia-ml.so.1 lacks the NvLink queries");
        goto out;
    }
    if (init()) {
        rc = tacos_error(TACOS_ERR_IO, "NVML: nvmlInit failed (no driver?)");
        goto out;
    }
    if (by_bus(r->gpu_busid, &dev)) {
        rc = tacos_error(TACOS_ERR_IO, "NVML does not know GPU %s", r->gpu_busid);
        shutdown();
        goto out;
    }
    for (unsigned l = 0; l < NVML_MAX_LINKS; l++) {
        int active = 0, type = -1;
        unsigned v = 0;
        nvml_pci_t peer;
        if (state(dev, l, &active) || !active || remote(dev, l, &peer))
            continue;
        if (version(dev, l, &v))
            v = 0;
        int h = -1;
        for (int j = 0; j < ngpus && h < 0; j++)
            if (same_pci(busids[j], &peer))
                h = j;
        if (h >= 0)
            r->nvlink_gbps[h] += (float)link_gbps(v);
        else if ((remote_type && !remote_type(dev, l, &type) && type == NVML_DEVICE_TYPE_SWITCH) ||
                 (type < 0 && (peer.pci_device_id & 0xffff) == 0x10de))
            r->nvswitch_gbps += (float)link_gbps(v); /* else a CPU (IBM NPU): not a peer */
    }
    shutdown();
out:
    dlclose(lib);
    return rc;
}
