/* SPDX-License-Identifier: BSD-3-Clause */
/* Topology JSON files, read and written with cJSON (format in README). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_VALUES 16

/* A number field: absent -> *out = dflt (if has_dflt), else an error. */
static int get_number(const cJSON *obj, const char *field, const char *where, const char *ctx,
                      int has_dflt, double dflt, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!v) {
        if (has_dflt) {
            *out = dflt;
            return TACOS_OK;
        }
        return tacos_error(TACOS_ERR_PARSE, "%s: %s: missing field '%s'", where, ctx, field);
    }
    if (!cJSON_IsNumber(v))
        return tacos_error(TACOS_ERR_PARSE, "%s: %s: field '%s' must be a number", where, ctx, field);
    *out = v->valuedouble;
    return TACOS_OK;
}

static int get_int(const cJSON *obj, const char *field, const char *where, const char *ctx,
                   int has_dflt, int dflt, int *out)
{
    double d = 0;
    int rc = get_number(obj, field, where, ctx, has_dflt, dflt, &d);
    if (rc)
        return rc;
    if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != floor(d))
        return tacos_error(TACOS_ERR_PARSE, "%s: %s: field '%s' must be an integer, got %g", where,
                           ctx, field, d);
    *out = (int)d;
    return TACOS_OK;
}

/* An array of integers (NPU lists). Caller frees *out. */
static int get_int_array(const cJSON *arr, const char *where, const char *ctx, int **out, int *n)
{
    if (!cJSON_IsArray(arr))
        return tacos_error(TACOS_ERR_PARSE, "%s: %s must be an array of integers", where, ctx);
    int len = cJSON_GetArraySize(arr), i = 0;
    int *v = malloc((size_t)(len ? len : 1) * sizeof *v);
    if (!v)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading %s", where);
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsNumber(e) || !(fabs(e->valuedouble) < 2147483647.0) ||
            e->valuedouble != floor(e->valuedouble)) {
            free(v);
            return tacos_error(TACOS_ERR_PARSE, "%s: %s[%d] must be an integer", where, ctx, i);
        }
        v[i++] = e->valueint;
    }
    *out = v;
    *n = len;
    return TACOS_OK;
}

/* "bw_gbps": 50 or [200, 100, 50] for a generator. */
static int get_values(const cJSON *obj, const char *field, double dflt, const char *where,
                      double *v, int *n)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, field);
    *n = 1;
    v[0] = dflt;
    if (!f)
        return TACOS_OK;
    if (cJSON_IsNumber(f)) {
        v[0] = f->valuedouble;
        return TACOS_OK;
    }
    int len = cJSON_IsArray(f) ? cJSON_GetArraySize(f) : 0;
    if (len < 1 || len > MAX_VALUES)
        return tacos_error(TACOS_ERR_PARSE,
                           "%s: field '%s' must be a number or an array of 1..%d numbers", where,
                           field, MAX_VALUES);
    *n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f)
    {
        if (!cJSON_IsNumber(e))
            return tacos_error(TACOS_ERR_PARSE, "%s: field '%s'[%d] must be a number", where, field,
                               *n);
        v[(*n)++] = e->valuedouble;
    }
    return TACOS_OK;
}

static int read_links(tacos_topo_t *t, const cJSON *links, double lat0, double bw0,
                      const char *where)
{
    if (!cJSON_IsArray(links))
        return tacos_error(TACOS_ERR_PARSE, "%s: field 'links' must be an array", where);
    int i = 0, rc = TACOS_OK;
    const cJSON *l;
    cJSON_ArrayForEach(l, links)
    {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "links[%d]", i++);
        int src, dst;
        double lat, bw;
        if (!cJSON_IsObject(l))
            return tacos_error(TACOS_ERR_PARSE, "%s: %s must be an object", where, ctx);
        if ((rc = get_int(l, "src", where, ctx, 0, 0, &src)) ||
            (rc = get_int(l, "dst", where, ctx, 0, 0, &dst)) ||
            (rc = get_number(l, "lat_us", where, ctx, lat0 >= 0, lat0, &lat)) ||
            (rc = get_number(l, "bw_gbps", where, ctx, bw0 > 0, bw0, &bw)))
            return rc;
        const cJSON *bidir = cJSON_GetObjectItemCaseSensitive(l, "bidirectional");
        if (bidir && !cJSON_IsBool(bidir))
            return tacos_error(TACOS_ERR_PARSE, "%s: %s: 'bidirectional' must be true or false",
                               where, ctx);
        rc = tacos_topo_add_link(t, src, dst, lat, bw);
        if (!rc && cJSON_IsTrue(bidir))
            rc = tacos_topo_add_link(t, dst, src, lat, bw);
        if (rc)
            return tacos_error(rc, "%s: %s: %s", where, ctx, tacos_last_error());
    }
    return TACOS_OK;
}

/* A named switch's ports: its ranks ("npus") and child switches
 * ("switches", by name), each at the switch's rate, half its latency. */
static int read_ports(tacos_fabric_t *f, int npus, const cJSON *s, int id, double lat, double bw,
                      const char *where, const char *ctx)
{
    int *m = NULL, n = 0, rc = TACOS_OK;
    char mctx[80];
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(s, "npus");
    const cJSON *kids = cJSON_GetObjectItemCaseSensitive(s, "switches");
    if (!members && !kids)
        return tacos_error(TACOS_ERR_PARSE, "%s: %s: a named switch needs 'npus' or 'switches'",
                           where, ctx);
    snprintf(mctx, sizeof mctx, "%s.npus", ctx);
    if (members && (rc = get_int_array(members, where, mctx, &m, &n)))
        return rc;
    for (int i = 0; members && i < n && !rc; i++) {
        if (m[i] < 0 || m[i] >= npus)
            rc = tacos_error(TACOS_ERR_PARSE, "%s: %s[%d]: rank %d is not one of 0..%d", where,
                             mctx, i, m[i], npus - 1);
        else if ((rc = tacos_fabric_add_port(f, m[i], id, lat / 2, bw)))
            rc = tacos_error(rc, "%s: %s[%d]: %s", where, mctx, i, tacos_last_error());
    }
    if (members)
        free(m);
    if (rc)
        return rc;
    if (kids && !cJSON_IsArray(kids))
        return tacos_error(TACOS_ERR_PARSE, "%s: %s.switches must be an array of names", where,
                           ctx);
    int i = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, kids)
    {
        int child = cJSON_IsString(k) ? tacos_fabric_switch(f, k->valuestring) : -1;
        if (child < 0)
            return tacos_error(TACOS_ERR_PARSE, "%s: %s.switches[%d] must name a switch given "
                               "in 'switches'", where, ctx, i);
        if (child == id)
            return tacos_error(TACOS_ERR_PARSE, "%s: %s.switches[%d]: a switch under itself",
                               where, ctx, i);
        if ((rc = tacos_fabric_add_port(f, child, id, lat / 2, bw)))
            return tacos_error(rc, "%s: %s.switches[%d]: %s", where, ctx, i, tacos_last_error());
        i++;
    }
    return TACOS_OK;
}

/* "switches": unnamed ones are unwound into a clique of links; named ones
 * are nodes of a switch tree, lowered into links once all are read. */
static int read_switches(tacos_topo_t *t, const cJSON *sws, double lat0, double bw0, int degree0,
                         const char *where)
{
    if (!cJSON_IsArray(sws))
        return tacos_error(TACOS_ERR_PARSE, "%s: field 'switches' must be an array", where);
    tacos_fabric_t *f = NULL;
    int rc = tacos_fabric_new(t->npus, &f);
    for (int pass = 0; pass < 2 && !rc; pass++) { /* the names first: children may come later */
        int i = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, sws)
        {
            char ctx[64];
            snprintf(ctx, sizeof ctx, "switches[%d]", i++);
            double lat, bw;
            int degree, *m, n;
            if (!cJSON_IsObject(s)) {
                rc = tacos_error(TACOS_ERR_PARSE, "%s: %s must be an object", where, ctx);
                break;
            }
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
            if ((rc = get_number(s, "lat_us", where, ctx, lat0 >= 0, lat0, &lat)) ||
                (rc = get_number(s, "bw_gbps", where, ctx, bw0 > 0, bw0, &bw)) ||
                (rc = get_int(s, "unwind_degree", where, ctx, 1, degree0, &degree)))
                break;
            if (name && !cJSON_IsString(name)) {
                rc = tacos_error(TACOS_ERR_PARSE, "%s: %s: 'name' must be a string", where, ctx);
                break;
            }
            if (name && pass == 0) {
                int id;
                if ((rc = tacos_fabric_add_switch(f, name->valuestring, degree, &id)))
                    rc = tacos_error(rc, "%s: %s: %s", where, ctx, tacos_last_error());
            } else if (name) {
                rc = read_ports(f, t->npus, s, tacos_fabric_switch(f, name->valuestring), lat, bw,
                                where, ctx);
            } else if (pass == 1) {
                char mctx[80];
                snprintf(mctx, sizeof mctx, "%s.npus", ctx);
                const cJSON *members = cJSON_GetObjectItemCaseSensitive(s, "npus");
                if (!members) {
                    rc = tacos_error(TACOS_ERR_PARSE, "%s: %s: missing field 'npus'", where, ctx);
                    break;
                }
                if ((rc = get_int_array(members, where, mctx, &m, &n)))
                    break;
                rc = tacos_topo_add_switch(t, m, n, lat, bw, degree);
                free(m);
                if (rc)
                    rc = tacos_error(rc, "%s: %s: %s", where, ctx, tacos_last_error());
            }
            if (rc)
                break;
        }
    }
    if (!rc && (rc = tacos_fabric_lower(f, t)))
        rc = tacos_error(rc, "%s: switches: %s", where, tacos_last_error());
    tacos_fabric_free(f);
    return rc;
}

int tacos_topo_from_cjson(const cJSON *root, const char *where, int expect_npus,
                          tacos_topo_t **out)
{
    if (!cJSON_IsObject(root))
        return tacos_error(TACOS_ERR_PARSE, "%s: a topology must be a JSON object", where);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (fmt && !(cJSON_IsString(fmt) && strcmp(fmt->valuestring, "tacos-topology") == 0))
        return tacos_error(TACOS_ERR_PARSE, "%s: field 'format' must be \"tacos-topology\"", where);
    int degree, rc;
    if ((rc = get_int(root, "unwind_degree", where, "topology", 1, 1, &degree)))
        return rc;
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(root, "generator");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    tacos_topo_t *t = NULL;
    if (gen) {
        double bw[MAX_VALUES], lat[MAX_VALUES];
        int nbw, nlat;
        if (!cJSON_IsString(gen))
            return tacos_error(TACOS_ERR_PARSE, "%s: field 'generator' must be a string", where);
        if ((rc = get_values(root, "bw_gbps", 50, where, bw, &nbw)) ||
            (rc = get_values(root, "lat_us", 0.5, where, lat, &nlat)))
            return rc;
        if ((rc = tacos_topo_generate(gen->valuestring, bw, nbw, lat, nlat, degree, &t)))
            return tacos_error(rc, "%s: field 'generator': %s", where, tacos_last_error());
    } else {
        int npus;
        double lat0 = -1, bw0 = -1;
        if ((rc = get_int(root, "npus", where, "topology", 0, 0, &npus)) ||
            (rc = get_number(root, "lat_us", where, "topology", 1, -1, &lat0)) ||
            (rc = get_number(root, "bw_gbps", where, "topology", 1, -1, &bw0)))
            return rc;
        if (expect_npus && npus != expect_npus)
            return tacos_error(TACOS_ERR_TOPO, "%s describes %d NPUs, not %d", where, npus,
                               expect_npus);
        if ((rc = tacos_topo_create(npus, NULL, &t)))
            return tacos_error(rc, "%s: field 'npus': %s", where, tacos_last_error());
        const cJSON *links = cJSON_GetObjectItemCaseSensitive(root, "links");
        const cJSON *sws = cJSON_GetObjectItemCaseSensitive(root, "switches");
        if (!links && !sws)
            rc = tacos_error(TACOS_ERR_PARSE,
                             "%s: a topology needs 'generator', or 'npus' with 'links' and/or "
                             "'switches'",
                             where);
        if (!rc && links)
            rc = read_links(t, links, lat0, bw0, where);
        if (!rc && sws)
            rc = read_switches(t, sws, lat0, bw0, degree, where);
        if (!rc && (rc = tacos_topo_finalize(t)))
            rc = tacos_error(rc, "%s: %s", where, tacos_last_error());
    }
    const cJSON *failed = cJSON_GetObjectItemCaseSensitive(root, "failed_npus");
    if (!rc && failed) {
        int *f, nf;
        if (!(rc = get_int_array(failed, where, "field 'failed_npus'", &f, &nf))) {
            if ((rc = tacos_topo_remove_npus(t, f, nf)))
                rc = tacos_error(rc, "%s: field 'failed_npus': %s", where, tacos_last_error());
            free(f);
        }
    }
    if (!rc && name) {
        char *copy = cJSON_IsString(name) ? strdup(name->valuestring) : NULL;
        if (!copy)
            rc = tacos_error(TACOS_ERR_PARSE, "%s: field 'name' must be a string", where);
        else {
            free(t->name);
            t->name = copy;
        }
    }
    if (!rc && expect_npus && t->npus != expect_npus)
        rc = tacos_error(TACOS_ERR_TOPO, "%s describes %d NPUs, not %d", where, t->npus,
                         expect_npus);
    if (rc) {
        tacos_topo_free(t);
        return rc;
    }
    *out = t;
    return TACOS_OK;
}

int tacos_json_parse(const char *text, const char *where, cJSON **out)
{
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        return tacos_error(TACOS_ERR_PARSE, "%s: malformed JSON near offset %ld", where,
                           at ? (long)(at - text) : 0L);
    }
    *out = root;
    return TACOS_OK;
}

int tacos_json_read_file(const char *path, cJSON **out)
{
    char *text;
    int rc = tacos_read_text(path, &text);
    if (rc)
        return rc;
    rc = tacos_json_parse(text, path, out);
    free(text);
    return rc;
}

int tacos_topo_from_json(const char *text, const char *where, tacos_topo_t **out)
{
    cJSON *root = NULL;
    int rc = tacos_json_parse(text, where, &root);
    if (rc)
        return rc;
    rc = tacos_topo_from_cjson(root, where, 0, out);
    cJSON_Delete(root);
    return rc;
}

/* Reads a whole file into a NUL-terminated buffer. */
int tacos_read_text(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tacos_error(TACOS_ERR_IO, "%s: cannot open for reading", path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        char *b = realloc(buf, cap * 2);
        if (!b) {
            free(buf);
            buf = NULL;
        } else {
            buf = b;
            cap *= 2;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf)
        return tacos_error(TACOS_ERR_NOMEM, "%s: out of memory reading", path);
    if (err) {
        free(buf);
        return tacos_error(TACOS_ERR_IO, "%s: read error", path);
    }
    buf[len] = '\0';
    *out = buf;
    return TACOS_OK;
}

int tacos_topo_read_file_npus(const char *path, int npus, tacos_topo_t **out)
{
    cJSON *root = NULL;
    int rc = tacos_json_read_file(path, &root);
    if (rc)
        return rc;
    rc = tacos_topo_from_cjson(root, path, npus, out);
    cJSON_Delete(root);
    return rc;
}

int tacos_topo_read_file(const char *path, tacos_topo_t **out)
{
    return tacos_topo_read_file_npus(path, 0, out);
}

cJSON *tacos_topo_to_cjson(const tacos_topo_t *t)
{
    cJSON *root = cJSON_CreateObject(), *links;
    if (!root || !cJSON_AddStringToObject(root, "format", "tacos-topology") ||
        !cJSON_AddNumberToObject(root, "version", 1) ||
        !cJSON_AddStringToObject(root, "name", t->name) ||
        !cJSON_AddNumberToObject(root, "npus", t->npus) ||
        !(links = cJSON_AddArrayToObject(root, "links")))
        goto fail;
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto fail;
        cJSON_AddItemToArray(links, o);
        if (!cJSON_AddNumberToObject(o, "src", l->src) || !cJSON_AddNumberToObject(o, "dst", l->dst) ||
            !cJSON_AddNumberToObject(o, "lat_us", l->lat_us) ||
            !cJSON_AddNumberToObject(o, "bw_gbps", l->bw_gbps))
            goto fail;
    }
    return root;
fail:
    cJSON_Delete(root);
    return NULL;
}

int tacos_topo_to_json(const tacos_topo_t *t, char **out)
{
    cJSON *root = tacos_topo_to_cjson(t);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory writing topology %s as JSON", t->name);
    *out = text;
    return TACOS_OK;
}

int tacos_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return tacos_error(TACOS_ERR_IO, "%s: cannot open for writing", path);
    int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF;
    bad |= fclose(f) != 0;
    return bad ? tacos_error(TACOS_ERR_IO, "%s: write failed", path) : TACOS_OK;
}

int tacos_topo_write_file(const tacos_topo_t *t, const char *path)
{
    char *text = NULL;
    int rc = tacos_topo_to_json(t, &text);
    if (rc)
        return rc;
    rc = tacos_write_text(path, text);
    cJSON_free(text);
    return rc;
}
