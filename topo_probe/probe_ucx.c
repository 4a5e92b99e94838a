/* SPDX-License-Identifier: BSD-3-Clause */
/* Transport latency and bandwidth from UCT interface attributes.  libuct is
 * loaded with dlopen so that a machine without UCX at run time still gets
 * the default figures (and a message) instead of failing to load. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <uct/api/uct.h>

#include "probe_internal.h"

typedef struct {
    ucs_status_t (*query_components)(uct_component_h **, unsigned *);
    void (*release_components)(uct_component_h *);
    ucs_status_t (*component_query)(uct_component_h, uct_component_attr_t *);
    ucs_status_t (*md_config_read)(uct_component_h, const char *, const char *,
                                   uct_md_config_t **);
    void (*config_release)(void *);
    ucs_status_t (*md_open)(uct_component_h, const char *, const uct_md_config_t *, uct_md_h *);
    void (*md_close)(uct_md_h);
    ucs_status_t (*query_tl)(uct_md_h, uct_tl_resource_desc_t **, unsigned *);
    void (*release_tl)(uct_tl_resource_desc_t *);
    ucs_status_t (*iface_config_read)(uct_md_h, const char *, const char *, const char *,
                                      uct_iface_config_t **);
    ucs_status_t (*iface_open)(uct_md_h, uct_worker_h, const uct_iface_params_t *,
                               const uct_iface_config_t *, uct_iface_h *);
    ucs_status_t (*iface_query)(uct_iface_h, uct_iface_attr_t *);
    void (*iface_close)(uct_iface_h);
    ucs_status_t (*worker_create)(ucs_async_context_t *, ucs_thread_mode_t, uct_worker_h *);
    void (*worker_destroy)(uct_worker_h);
    ucs_status_t (*async_create)(ucs_async_mode_t, ucs_async_context_t **);
    void (*async_destroy)(ucs_async_context_t *);
} uct_api_t;

/* A function pointer from dlsym, copied bytewise (no aliasing cast). */
#define SYM(field, name)                                                                     \
    do {                                                                                     \
        void *p_ = dlsym(lib, name);                                                         \
        if (!p_)                                                                             \
            return tacos_error(TACOS_ERR_IO, "UCX: %s not found in libuct", name);           \
        memcpy(&u->field, &p_, sizeof p_);                                                   \
    } while (0)

static int load(void *lib, uct_api_t *u)
{
    SYM(query_components, "uct_query_components");
    SYM(release_components, "uct_release_component_list");
    SYM(component_query, "uct_component_query");
    SYM(md_config_read, "uct_md_config_read");
    SYM(config_release, "uct_config_release");
    SYM(md_open, "uct_md_open");
    SYM(md_close, "uct_md_close");
    SYM(query_tl, "uct_md_query_tl_resources");
    SYM(release_tl, "uct_release_tl_resource_list");
    SYM(iface_config_read, "uct_md_iface_config_read");
    SYM(iface_open, "uct_iface_open");
    SYM(iface_query, "uct_iface_query");
    SYM(iface_close, "uct_iface_close");
    SYM(worker_create, "uct_worker_create");
    SYM(worker_destroy, "uct_worker_destroy");
    SYM(async_create, "ucs_async_context_create");
    SYM(async_destroy, "ucs_async_context_destroy");
    return TACOS_OK;
}

/* Keeps the fastest transport per class (by the time of 1 MiB), loopback
 * and self excluded. */
static void consider(tacos_probe_record_t *r, const uct_tl_resource_desc_t *tl,
                     const uct_iface_attr_t *a)
{
    int cls = tl->dev_type == UCT_DEVICE_TYPE_SHM   ? TACOS_CLASS_SHM
              : tl->dev_type == UCT_DEVICE_TYPE_NET ? TACOS_CLASS_NET
                                                    : -1;
    if (cls < 0 || !strcmp(tl->dev_name, "lo"))
        return;
    double lat_us = (a->latency.c + a->latency.m) * 1e6,
           bw_gbps = (a->bandwidth.dedicated + a->bandwidth.shared) / 1e9;
    if (!(bw_gbps > 0) || !(lat_us >= 0))
        return;
    tacos_probe_link_class_t *c = &r->cls[cls];
    double t = lat_us + 1048576 / (bw_gbps * 1e3), best = c->lat_us + 1048576 / (c->bw_gbps * 1e3);
    if (c->src == TACOS_SRC_UCX && t >= best)
        return;
    c->lat_us = lat_us;
    c->bw_gbps = bw_gbps;
    c->src = TACOS_SRC_UCX;
    snprintf(c->transport, sizeof c->transport, "%s/%s", tl->tl_name, tl->dev_name);
}

static void probe_md(const uct_api_t *u, uct_component_h comp, const char *md_name,
                     uct_worker_h worker, tacos_probe_record_t *r)
{
    uct_md_config_t *mdc;
    uct_md_h md;
    uct_tl_resource_desc_t *tls;
    unsigned ntl;
    if (u->md_config_read(comp, NULL, NULL, &mdc) != UCS_OK)
        return;
    ucs_status_t st = u->md_open(comp, md_name, mdc, &md);
    u->config_release(mdc);
    if (st != UCS_OK)
        return;
    if (u->query_tl(md, &tls, &ntl) == UCS_OK) {
        for (unsigned i = 0; i < ntl; i++) {
            uct_iface_config_t *ic;
            uct_iface_h iface;
            uct_iface_attr_t attr;
            if (u->iface_config_read(md, tls[i].tl_name, NULL, NULL, &ic) != UCS_OK)
                continue;
            uct_iface_params_t p;
            memset(&p, 0, sizeof p);
            p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
            p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
            p.mode.device.tl_name = tls[i].tl_name;
            p.mode.device.dev_name = tls[i].dev_name;
            st = u->iface_open(md, worker, &p, ic, &iface);
            u->config_release(ic);
            if (st != UCS_OK)
                continue;
            if (u->iface_query(iface, &attr) == UCS_OK)
                consider(r, &tls[i], &attr);
            u->iface_close(iface);
        }
        u->release_tl(tls);
    }
    u->md_close(md);
}

int tacos_probe_ucx(tacos_probe_record_t *r, const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return tacos_error(TACOS_ERR_IO, "UCX unavailable (%s); using default link figures",
                           dlerror());
    uct_api_t u;
    memset(&u, 0, sizeof u);
    uct_component_h *comps = NULL;
    unsigned ncomps = 0;
    ucs_async_context_t *async = NULL;
    uct_worker_h worker = NULL;
    int rc = load(lib, &u);
    if (rc)
        goto out;
    if (u.async_create(UCS_ASYNC_MODE_POLL, &async) != UCS_OK ||
        u.worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK ||
        u.query_components(&comps, &ncomps) != UCS_OK) {
        rc = tacos_error(TACOS_ERR_IO, "UCX: cannot create a UCT worker; using default figures");
        goto out;
    }
    for (unsigned c = 0; c < ncomps; c++) {
        uct_component_attr_t ca;
        memset(&ca, 0, sizeof ca);
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (u.component_query(comps[c], &ca) != UCS_OK || ca.md_resource_count == 0)
            continue;
        uct_md_resource_desc_t mds[ca.md_resource_count];
        ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        ca.md_resources = mds;
        if (u.component_query(comps[c], &ca) != UCS_OK)
            continue;
        for (unsigned m = 0; m < ca.md_resource_count; m++)
            probe_md(&u, comps[c], mds[m].md_name, worker, r);
    }
out:
    if (comps)
        u.release_components(comps);
    if (worker)
        u.worker_destroy(worker);
    if (async)
        u.async_destroy(async);
    /* libuct stays loaded: UCX registers handlers and threads that do not
     * survive being unmapped */
    return rc;
}
