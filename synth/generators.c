/* SPDX-License-Identifier: BSD-3-Clause */
/* Built-in topology shapes.  Every regular shape is a product of dimensions,
 * each a ring, uni-ring, line, fully-connected group or switch; DragonFly and
 * the DGX-1 hybrid cube-mesh are wired explicitly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_DIMS 16

typedef struct {
    int ndims;
    char kind[MAX_DIMS]; /* r u l f s, or 'D' dragonfly, 'X' dgx1, 'T' fat tree, 'R' rails */
    int size[MAX_DIMS];
} shape_t;

static const struct {
    const char *name;
    const char *kinds; /* letters, one per size */
} named[] = {
    {"ring", "r"},     {"uniring", "u"},  {"fc", "f"},        {"switch", "s"},
    {"mesh2d", "ll"},  {"torus2d", "rr"}, {"mesh3d", "lll"},  {"torus3d", "rrr"},
    {"line", "l"},     {"dragonfly", "DD"}, {"fattree", "TT"},
    {"rails", "RR"},
};

static int parse_sizes(const char *spec, const char *p, int *size, int *n)
{
    *n = 0;
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 24)
            return tacos_error(TACOS_ERR_PARSE,
                               "topology '%s': sizes must be positive integers joined by 'x'", spec);
        if (*n == MAX_DIMS)
            return tacos_error(TACOS_ERR_PARSE, "topology '%s': more than %d dimensions", spec,
                               MAX_DIMS);
        size[(*n)++] = (int)v;
        if (*end == '\0')
            return TACOS_OK;
        if (*end != 'x' && *end != 'X')
            return tacos_error(TACOS_ERR_PARSE, "topology '%s': unexpected '%c' in sizes", spec,
                               *end);
        p = end + 1;
    }
}

static int parse_shape(const char *spec, shape_t *sh)
{
    memset(sh, 0, sizeof *sh);
    if (strcmp(spec, "dgx1") == 0) {
        sh->ndims = 1;
        sh->kind[0] = 'X';
        sh->size[0] = 8;
        return TACOS_OK;
    }
    const char *colon = strchr(spec, ':');
    if (!colon)
        return tacos_error(TACOS_ERR_PARSE,
                           "unknown topology '%s': expected <shape>:<sizes> such as mesh2d:8x8, "
                           "ring:8, rfs:2x4x16, or dgx1",
                           spec);
    size_t nlen = (size_t)(colon - spec);
    int sizes[MAX_DIMS], nsizes, rc = parse_sizes(spec, colon + 1, sizes, &nsizes);
    if (rc)
        return rc;
    if (nlen == strlen("hypercube") && strncmp(spec, "hypercube", nlen) == 0) {
        int n = sizes[0], k = 0;
        if (nsizes != 1 || n < 2 || (n & (n - 1)))
            return tacos_error(TACOS_ERR_PARSE,
                               "topology '%s': hypercube:N needs one size N = 2^k >= 2", spec);
        while ((1 << k) < n)
            k++;
        if (k > MAX_DIMS)
            return tacos_error(TACOS_ERR_PARSE, "topology '%s': more than %d dimensions", spec,
                               MAX_DIMS);
        sh->ndims = k;
        for (int i = 0; i < k; i++) {
            sh->kind[i] = 'l';
            sh->size[i] = 2;
        }
        return TACOS_OK;
    }
    const char *kinds = NULL;
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strlen(named[i].name) == nlen && strncmp(spec, named[i].name, nlen) == 0)
            kinds = named[i].kinds;
    if (!kinds) { /* a composition: one kind letter per dimension */
        for (size_t i = 0; i < nlen; i++)
            if (!strchr("rulfs", spec[i]))
                return tacos_error(TACOS_ERR_PARSE,
                                   "unknown topology '%s': not a built-in shape, and '%c' is not a "
                                   "dimension letter (r ring, u uni-ring, l line, f fully-connected, "
                                   "s switch)",
                                   spec, spec[i]);
        if (nlen == 0)
            return tacos_error(TACOS_ERR_PARSE, "topology '%s': missing shape name", spec);
        kinds = spec; /* first nlen letters */
    } else {
        nlen = strlen(kinds);
    }
    if ((size_t)nsizes != nlen)
        return tacos_error(TACOS_ERR_PARSE, "topology '%s': the shape has %zu dimensions, got %d sizes",
                           spec, nlen, nsizes);
    sh->ndims = nsizes;
    for (int i = 0; i < nsizes; i++) {
        sh->kind[i] = kinds[i];
        sh->size[i] = sizes[i];
    }
    return TACOS_OK;
}

/* A switch of n members unwound with `degree`; TACOS_DEGREE_AUTO: as
 * coll/tacos unwinds a host's (host: members - 1) or a network's. */
static int unwind_degree(int degree, int n, int host)
{
    return degree != TACOS_DEGREE_AUTO ? degree : host ? n - 1 : tacos_switch_auto_degree(n);
}

/* Wires one dimension of kind `kind` over the members m[0..n) (host: the
 * dimension inside a host). */
static int add_dim(tacos_topo_t *t, char kind, const int *m, int n, double lat, double bw, int degree,
                   int host)
{
    int rc = TACOS_OK;
    switch (kind) {
    case 'r':
    case 'u':
        for (int i = 0; i < n && n > 1 && !rc; i++) {
            int j = (i + 1) % n;
            if (n == 2 && i == 1 && kind == 'r')
                break; /* a 2-ring is one bidirectional pair */
            rc = tacos_topo_add_link(t, m[i], m[j], lat, bw);
            if (!rc && kind == 'r')
                rc = tacos_topo_add_link(t, m[j], m[i], lat, bw);
        }
        return rc;
    case 'l':
        for (int i = 0; i + 1 < n && !rc; i++) {
            rc = tacos_topo_add_link(t, m[i], m[i + 1], lat, bw);
            if (!rc)
                rc = tacos_topo_add_link(t, m[i + 1], m[i], lat, bw);
        }
        return rc;
    case 'f':
        for (int i = 0; i < n && !rc; i++)
            for (int j = 0; j < n && !rc; j++)
                if (i != j)
                    rc = tacos_topo_add_link(t, m[i], m[j], lat, bw);
        return rc;
    default: /* 's' (degree 0: a node of its own) */
        return n < 2    ? TACOS_OK
               : degree ? tacos_topo_add_switch(t, m, n, lat, bw, unwind_degree(degree, n, host))
                        : tacos_topo_add_switch_node(t, m, n, lat, bw);
    }
}

static int wire_dgx1(tacos_topo_t *t, double lat, double bw)
{
    /* NVLink pairs of a DGX-1 (V100) and how many links join each pair. */
    static const int pairs[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2},
                                   {1, 3, 1}, {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1},
                                   {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1},
                                   {6, 7, 2}};
    int rc = TACOS_OK;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0] && !rc; i++)
        rc = tacos_topo_add_both(t, pairs[i][0], pairs[i][1], lat, bw * pairs[i][2]);
    return rc;
}

static int wire_dragonfly(tacos_topo_t *t, int groups, int routers, const double *lat,
                          const double *bw)
{
    int *m = malloc((size_t)routers * sizeof *m);
    if (!m)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory building dragonfly");
    int rc = TACOS_OK;
    for (int g = 0; g < groups && !rc; g++) {
        for (int r = 0; r < routers; r++)
            m[r] = g * routers + r;
        rc = add_dim(t, 'f', m, routers, lat[0], bw[0], 1, 0);
    }
    free(m);
    /* Group g's k-th other group is served by its router k mod R. */
    for (int g = 0; g < groups && !rc; g++)
        for (int h = g + 1; h < groups && !rc; h++)
            rc = tacos_topo_add_both(t, g * routers + (h - 1) % routers, h * routers + g % routers,
                                     lat[1], bw[1]);
    return rc;
}

/* A switch tree's switches' degree (0: switches as nodes, where it is
 * not used; TACOS_DEGREE_AUTO: as coll/tacos lowers a tree it measures,
 * capped at groups - 1 by tacos_fabric_lower). */
static int tree_degree(int degree)
{
    return degree == TACOS_DEGREE_AUTO ? TACOS_AUTO_DEGREE : degree ? degree : 1;
}

/* hosts per leaf x leaves: a port of bw[0] per host on its leaf, an
 * uplink of bw[1] per leaf on one spine (lat: port to port on each), a
 * switch tree lowered with the degree (fabric.c). */
static int wire_fattree(tacos_topo_t *t, int hosts, int leaves, const double *lat,
                        const double *bw, int degree)
{
    if (leaves + (leaves > 1) > TACOS_MAX_SWITCHES)
        return tacos_error(TACOS_ERR_ARG, "fattree: at most %d leaves (one spine above them)",
                           TACOS_MAX_SWITCHES - 1);
    tacos_fabric_t *f;
    char name[32];
    int spine = -1, leaf, rc = tacos_fabric_new(t->npus, &f);
    if (!rc && leaves > 1)
        rc = tacos_fabric_add_switch(f, "spine", tree_degree(degree), &spine);
    for (int l = 0; l < leaves && !rc; l++) {
        snprintf(name, sizeof name, "leaf%d", l);
        if (!(rc = tacos_fabric_add_switch(f, name, tree_degree(degree), &leaf)) && leaves > 1)
            rc = tacos_fabric_add_port(f, leaf, spine, lat[1] / 2, bw[1]);
        for (int h = 0; h < hosts && !rc; h++)
            rc = tacos_fabric_add_port(f, l * hosts + h, leaf, lat[0] / 2, bw[0]);
    }
    if (!rc)
        rc = degree ? tacos_fabric_lower(f, t) : tacos_fabric_add_nodes(f, t);
    tacos_fabric_free(f);
    return rc;
}

/* ranks per host x hosts: the ranks of a host on a switch of bw[0] (its
 * NVSwitch, unwound with the degree); rank g of every host on rail switch
 * g, a port of bw[1] each (a switch tree per rail, lowered by fabric.c). */
static int wire_rails(tacos_topo_t *t, int per_host, int hosts, const double *lat,
                      const double *bw, int degree)
{
    if (hosts > 1 && per_host > TACOS_MAX_SWITCHES)
        return tacos_error(TACOS_ERR_ARG, "rails: at most %d ranks per host (one rail each)",
                           TACOS_MAX_SWITCHES);
    int *m = malloc((size_t)per_host * sizeof *m), rc = TACOS_OK, rail;
    if (!m)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory building %s", t->name);
    for (int h = 0; h < hosts && !rc && per_host > 1; h++) {
        for (int g = 0; g < per_host; g++)
            m[g] = h * per_host + g;
        rc = add_dim(t, 's', m, per_host, lat[0], bw[0], degree, 1);
    }
    free(m);
    tacos_fabric_t *f = NULL;
    char name[32];
    if (!rc && hosts > 1)
        rc = tacos_fabric_new(t->npus, &f);
    for (int g = 0; g < per_host && f && !rc; g++) {
        snprintf(name, sizeof name, "rail%d", g);
        rc = tacos_fabric_add_switch(f, name, tree_degree(degree), &rail);
        for (int h = 0; h < hosts && !rc; h++)
            rc = tacos_fabric_add_port(f, h * per_host + g, rail, lat[1] / 2, bw[1]);
    }
    if (f && !rc)
        rc = degree ? tacos_fabric_lower(f, t) : tacos_fabric_add_nodes(f, t);
    tacos_fabric_free(f);
    return rc;
}

static int wire_product(tacos_topo_t *t, const shape_t *sh, const double *lat, const double *bw,
                        int degree)
{
    int stride[MAX_DIMS], rc = TACOS_OK, maxn = 1, npus = t->npus; /* (switch nodes: after) */
    for (int j = 0; j < sh->ndims; j++) {
        stride[j] = j ? stride[j - 1] * sh->size[j - 1] : 1;
        if (sh->size[j] > maxn)
            maxn = sh->size[j];
    }
    int *m = malloc((size_t)maxn * sizeof *m);
    if (!m)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory building %s", t->name);
    for (int j = 0; j < sh->ndims && !rc; j++)
        for (int base = 0; base < npus && !rc; base++) {
            if ((base / stride[j]) % sh->size[j] != 0)
                continue; /* not the first NPU of its line along j */
            for (int i = 0; i < sh->size[j]; i++)
                m[i] = base + i * stride[j];
            rc = add_dim(t, sh->kind[j], m, sh->size[j], lat[j], bw[j], degree,
                         j == 0 && sh->ndims > 1);
        }
    free(m);
    return rc;
}

static int per_dim(const char *what, const char *spec, const double *v, int nv, int ndims,
                   double *out)
{
    if (nv != 1 && nv != ndims)
        return tacos_error(TACOS_ERR_ARG,
                           "topology '%s' has %d dimension%s: give 1 or %d %s values, got %d", spec,
                           ndims, ndims == 1 ? "" : "s", ndims, what, nv);
    for (int j = 0; j < ndims; j++)
        out[j] = v[nv == 1 ? 0 : j];
    return TACOS_OK;
}

/* degree 0: switches as nodes (tacos_topo_generate_network) */
static int generate(const char *spec, const double *bw_gbps, int nbw, const double *lat_us,
                    int nlat, int degree, tacos_topo_t **out)
{
    shape_t sh;
    double bw[MAX_DIMS], lat[MAX_DIMS];
    int rc = parse_shape(spec, &sh);
    if (!rc)
        rc = per_dim("bandwidth", spec, bw_gbps, nbw, sh.ndims, bw);
    if (!rc)
        rc = per_dim("latency", spec, lat_us, nlat, sh.ndims, lat);
    if (rc)
        return rc;
    long npus = 1;
    for (int j = 0; j < sh.ndims; j++) {
        npus *= sh.size[j];
        if (npus > 1 << 24)
            return tacos_error(TACOS_ERR_ARG, "topology '%s': more than %d NPUs", spec, 1 << 24);
    }
    tacos_topo_t *t;
    if ((rc = tacos_topo_create((int)npus, spec, &t)))
        return rc;
    if (sh.kind[0] == 'X')
        rc = wire_dgx1(t, lat[0], bw[0]);
    else if (sh.kind[0] == 'D')
        rc = wire_dragonfly(t, sh.size[0], sh.size[1], lat, bw);
    else if (sh.kind[0] == 'T')
        rc = wire_fattree(t, sh.size[0], sh.size[1], lat, bw, degree);
    else if (sh.kind[0] == 'R')
        rc = wire_rails(t, sh.size[0], sh.size[1], lat, bw, degree);
    else
        rc = wire_product(t, &sh, lat, bw, degree);
    if (!rc && !degree)
        t->nranks = (int)npus; /* (the switch nodes after them) */
    if (!rc && t->npus == npus && !strchr("XDTR", sh.kind[0])) { /* (no switch nodes) */
        t->ndims = sh.ndims;
        memcpy(t->dims, sh.size, sizeof sh.size[0] * (size_t)sh.ndims);
    }
    if (!rc)
        rc = tacos_topo_finalize(t);
    if (rc) {
        tacos_topo_free(t);
        return rc;
    }
    *out = t;
    return TACOS_OK;
}

int tacos_topo_generate(const char *spec, const double *bw_gbps, int nbw, const double *lat_us,
                        int nlat, int degree, tacos_topo_t **out)
{
    if (degree < 1 && degree != TACOS_DEGREE_AUTO)
        return tacos_error(TACOS_ERR_ARG, "switch unwind degree must be >= 1, got %d", degree);
    return generate(spec, bw_gbps, nbw, lat_us, nlat, degree, out);
}

int tacos_topo_generate_network(const char *spec, const double *bw_gbps, int nbw,
                                const double *lat_us, int nlat, tacos_topo_t **out)
{
    return generate(spec, bw_gbps, nbw, lat_us, nlat, 0, out);
}
