/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule JSON files:
 *   {"format": "tacos-schedule", "version": 1, "collective": "allreduce",
 *    "npus": 4, "chunks_per_npu": 1, "root": 0, "size_bytes": 1048576,
 *    "time_us": 12.5, "steps": true (step-based baselines only), "topology": {...},
 *    "transfers": [[chunk, src, dst, start_us, end_us, reduce], ...]}
 * The header and topology go through cJSON; the transfer rows are printed one
 * per line (a schedule can hold millions).  Reading parses with cJSON and
 * validates before returning.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int tacos_sched_write_file(const tacos_sched_t *s, const char *path)
{
    cJSON *head = cJSON_CreateObject(), *topo = tacos_topo_to_cjson(s->topo);
    char *head_text = NULL;
    int ok = head && topo && cJSON_AddStringToObject(head, "format", "tacos-schedule") &&
             cJSON_AddNumberToObject(head, "version", 1) &&
             cJSON_AddStringToObject(head, "collective", tacos_coll_name(s->coll)) &&
             cJSON_AddNumberToObject(head, "npus", s->npus) &&
             cJSON_AddNumberToObject(head, "chunks_per_npu", s->chunks_per_npu) &&
             cJSON_AddNumberToObject(head, "root", s->root) &&
             cJSON_AddNumberToObject(head, "size_bytes", (double)s->size_bytes) &&
             cJSON_AddNumberToObject(head, "time_us", s->time_us) &&
             (!s->steps || cJSON_AddTrueToObject(head, "steps"));
    if (ok) {
        cJSON_AddItemToObject(head, "topology", topo);
        topo = NULL;
        ok = (head_text = cJSON_PrintUnformatted(head)) != NULL;
    }
    cJSON_Delete(head);
    cJSON_Delete(topo);
    if (!ok)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory writing schedule %s", path);
    FILE *f = fopen(path, "wb");
    if (!f) {
        cJSON_free(head_text);
        return tacos_error(TACOS_ERR_IO, "%s: cannot open for writing", path);
    }
    /* the header object minus its closing brace, then the transfers */
    int bad = fprintf(f, "%.*s,\n\"transfers\":[", (int)strlen(head_text) - 1, head_text) < 0;
    cJSON_free(head_text);
    for (size_t i = 0; i < s->nxfers && !bad; i++) {
        const tacos_xfer_t *x = &s->xfers[i];
        bad = fprintf(f, "%s\n[%d,%d,%d,%.17g,%.17g,%d]", i ? "," : "", x->chunk, x->src, x->dst,
                      x->start_us, x->end_us, x->reduce) < 0;
    }
    bad |= fprintf(f, "]}\n") < 0;
    bad |= fclose(f) != 0;
    return bad ? tacos_error(TACOS_ERR_IO, "%s: write failed", path) : TACOS_OK;
}

static int field_int(const cJSON *root, const char *name, const char *where, int required,
                     long long *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!v && !required)
        return TACOS_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > 9007199254740992.0) /* 2^53: exact in a double, fits long long */
        return tacos_error(TACOS_ERR_PARSE,
                           "%s: field '%s' must be an integer from 0 to 2^53, not %.17g", where,
                           name, cJSON_IsNumber(v) ? v->valuedouble : 0.0);
    *out = (long long)v->valuedouble;
    return TACOS_OK;
}

static int read_transfers(const cJSON *arr, const char *where, tacos_sched_t *s)
{
    if (!cJSON_IsArray(arr))
        return tacos_error(TACOS_ERR_PARSE, "%s: field 'transfers' must be an array", where);
    int rc = tacos_sched_reserve(s, (size_t)cJSON_GetArraySize(arr));
    if (rc)
        return rc;
    const cJSON *row;
    cJSON_ArrayForEach(row, arr)
    {
        double v[6];
        int n = 0;
        const cJSON *e;
        if (cJSON_IsArray(row))
            cJSON_ArrayForEach(e, row)
            {
                if (n == 6 || !cJSON_IsNumber(e))
                    break;
                v[n++] = e->valuedouble;
            }
        int ints_ok = n == 6;
        for (int i = 0; i < 3 && ints_ok; i++)
            ints_ok = v[i] == floor(v[i]) && fabs(v[i]) < 1e9;
        if (!ints_ok || cJSON_GetArraySize(row) != 6 || (v[5] != 0 && v[5] != 1))
            return tacos_error(TACOS_ERR_PARSE,
                               "%s: transfers[%zu] must be [chunk, src, dst, start_us, end_us, "
                               "reduce 0|1]",
                               where, s->nxfers);
        s->xfers[s->nxfers++] =
            (tacos_xfer_t){v[3], v[4], (int32_t)v[0], (int32_t)v[1], (int32_t)v[2], (int32_t)v[5]};
    }
    return TACOS_OK;
}

static int from_cjson(const cJSON *root, const char *where, tacos_sched_t **out)
{
    if (!cJSON_IsObject(root))
        return tacos_error(TACOS_ERR_PARSE, "%s: a schedule must be a JSON object", where);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *coll = cJSON_GetObjectItemCaseSensitive(root, "collective");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tacos-schedule") != 0)
        return tacos_error(TACOS_ERR_PARSE, "%s: field 'format' must be \"tacos-schedule\"", where);
    long long npus = 0, k = 0, root_rank = 0, size = 0;
    tacos_coll_t c;
    int rc;
    if (!cJSON_IsString(coll))
        return tacos_error(TACOS_ERR_PARSE, "%s: field 'collective' must be a string", where);
    if ((rc = tacos_coll_parse(coll->valuestring, &c)))
        return tacos_error(rc, "%s: field 'collective': %s", where, tacos_last_error());
    if ((rc = field_int(root, "npus", where, 1, &npus)) ||
        (rc = field_int(root, "chunks_per_npu", where, 1, &k)) ||
        (rc = field_int(root, "root", where, 0, &root_rank)) ||
        (rc = field_int(root, "size_bytes", where, 1, &size)))
        return rc;
    if (npus < 1 || npus > TACOS_MAX_NPUS || k < 1 || k > 1 << 28 ||
        tacos_coll_nchunks(c, (int)npus, (int)k) > 1 << 28 || size < 1 || root_rank >= npus)
        return tacos_error(TACOS_ERR_PARSE,
                           "%s: npus must be 1..%d, chunks_per_npu and size_bytes >= 1, the chunks "
                           "(npus x chunks_per_npu, x npus for alltoall) <= 2^28 and root < npus",
                           where, TACOS_MAX_NPUS);
    const cJSON *topo = cJSON_GetObjectItemCaseSensitive(root, "topology");
    if (!topo)
        return tacos_error(TACOS_ERR_PARSE, "%s: missing field 'topology'", where);
    tacos_topo_t *t;
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s: field 'topology'", where);
    if ((rc = tacos_topo_from_cjson(topo, ctx, (int)npus, &t)))
        return rc;
    tacos_sched_t *s;
    rc = tacos_sched_alloc(c, (int)npus, (int)k, (int)root_rank, (uint64_t)size, NULL, &s);
    if (rc) {
        tacos_topo_free(t);
        return rc;
    }
    s->topo = t;
    s->steps = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "steps"));
    if (!(rc = read_transfers(cJSON_GetObjectItemCaseSensitive(root, "transfers"), where, s))) {
        tacos_sched_sort(s);
        if ((rc = tacos_sched_validate(s)))
            rc = tacos_error(rc, "%s: invalid schedule: %s", where, tacos_last_error());
    }
    if (rc) {
        tacos_sched_free(s);
        return rc;
    }
    *out = s;
    return TACOS_OK;
}

int tacos_sched_from_json(const char *text, const char *where, tacos_sched_t **out)
{
    cJSON *root = NULL;
    int rc = tacos_json_parse(text, where, &root);
    if (rc)
        return rc;
    rc = from_cjson(root, where, out);
    cJSON_Delete(root);
    return rc;
}

int tacos_sched_read_file(const char *path, tacos_sched_t **out)
{
    cJSON *root = NULL;
    int rc = tacos_json_read_file(path, &root);
    if (rc)
        return rc;
    rc = from_cjson(root, path, out);
    cJSON_Delete(root);
    return rc;
}
