/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The k-chunk schedule obtained from a 1-chunk one by splitting every chunk
 * into k parts sent back to back along the same paths, each as soon as its
 * link is free and the sender holds that part (what the sender had received
 * of the chunk before the original transfer started); a message of m chunks
 * becomes k messages, each of the m chunks' part j.  It is never slower
 * than the 1-chunk schedule by more than the extra latency per message, so
 * offering it to the synthesizer as a candidate makes more chunks never
 * hurt.
 */
#include <stdlib.h>

#include "internal.h"

/* Arrivals into (npu, chunk): sorted by that key, then by original end. */
typedef struct {
    size_t key, xfer;
    double end;
} arrival_t;

/* v[0..n) from `in` sorted by key (0 .. keys-1), then by end, stably: counted
 * into place by key, then each key's few arrivals (an NPU receives a chunk
 * once or a few times) by insertion.  What a stable qsort by (key, end)
 * gives, in linear time.  Returns where each key's arrivals end in v
 * (malloc'd, keys + 1 entries: key k's are [k ? ends[k - 1] : 0, ends[k])),
 * or NULL out of memory. */
static size_t *sort_arrivals(const arrival_t *in, size_t n, size_t keys, arrival_t *v)
{
    size_t *at = calloc(keys + 1, sizeof *at);
    if (!at)
        return NULL;
    for (size_t i = 0; i < n; i++)
        at[in[i].key + 1]++;
    for (size_t k = 0; k < keys; k++)
        at[k + 1] += at[k];
    for (size_t i = 0; i < n; i++)
        v[at[in[i].key]++] = in[i];
    for (size_t i = 1; i < n; i++) {
        arrival_t a = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1].key == a.key && v[j - 1].end > a.end; j--)
            v[j] = v[j - 1];
        v[j] = a;
    }
    return at;
}

int tacos_sched_split(const tacos_sched_t *one, const tacos_topo_t *t, int k, tacos_sched_t **out)
{
    size_t n = one->nxfers, kk = (size_t)k;
    tacos_sched_t *s = NULL;
    arrival_t *in = malloc((n + 1) * sizeof *in), *arr = malloc((n + 1) * sizeof *arr);
    size_t *link = malloc((n + 1) * sizeof *link), *done = NULL, *ends = NULL;
    /* end[i*k + j]: when part j of transfer i arrives; ready[a*k + j]: the
     * latest part-j arrival among arrivals 0..a of a's (npu, chunk) group */
    double *end = malloc((n * kk + 1) * sizeof *end), *ready = malloc((n * kk + 1) * sizeof *ready);
    double *free_at = calloc(t->nlinks + 1, sizeof *free_at);
    double *part_ready = malloc((kk + 1) * sizeof *part_ready); /* per part: its message's */
    int rc = tacos_sched_alloc(one->coll, one->npus, one->chunks_per_npu * k, one->root,
                               one->size_bytes, NULL, &s);
    if (!rc && (!in || !arr || !link || !end || !ready || !free_at || !part_ready ||
                !(done = calloc(n + 1, sizeof *done))))
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory splitting a schedule");
    if (!rc)
        rc = tacos_sched_reserve(s, n * kk);
    for (size_t i = 0; !rc && i < n; i++) {
        const tacos_xfer_t *x = &one->xfers[i];
        long l = tacos_topo_find_link(t, x->src, x->dst);
        if (l < 0)
            rc = tacos_error(TACOS_ERR_INVALID, "split: transfer %zu is on no link", i);
        else if (x->chunk < 0 || x->chunk >= one->nchunks)
            rc = tacos_error(TACOS_ERR_INVALID, "split: transfer %zu moves chunk %d of %d", i,
                             x->chunk, one->nchunks);
        link[i] = (size_t)l;
        in[i] = (arrival_t){(size_t)x->dst * (size_t)one->nchunks + (size_t)x->chunk, i,
                            x->end_us};
        for (size_t j = 0; j < kk; j++) /* (read before set only for a transfer that */
            end[i * kk + j] = x->end_us; /* takes no time, within the tolerance) */
    }
    if (!rc && !(ends = sort_arrivals(in, n, (size_t)one->npus * (size_t)one->nchunks, arr)))
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory splitting a schedule");
    free(in);
    in = NULL;
    /* done[g]: how many of group g's first arrivals have `ready` filled; a
     * group is named by the index of its first arrival */
    double part = (double)one->size_bytes / ((double)one->nchunks * kk);
    /* the transfers in start order (one's order): each part after the link
     * frees and after that part reached the sender by every transfer of the
     * chunk into the sender that ended before the original one started
     * (those were handled before: they started earlier) */
    for (size_t i = 0, next; !rc && i < n; i = next) {
        /* a message's transfers (side by side in start order) go together:
         * part j of each of its chunks, as one message */
        for (next = i + 1; next < n && tacos_same_message(&one->xfers[next], &one->xfers[i]);)
            next++;
        for (size_t j = 0; j < kk; j++)
            part_ready[j] = 0;
        for (size_t y = i; y < next; y++) {
            const tacos_xfer_t *x = &one->xfers[y];
            size_t want = (size_t)x->src * (size_t)one->nchunks + (size_t)x->chunk;
            size_t lo = want ? ends[want - 1] : 0; /* the group's first arrival */
            size_t last = lo; /* one past the arrivals that ended before x started */
            double limit = x->start_us + TACOS_TIME_EPS(x->start_us);
            while (last < n && arr[last].key == want && arr[last].end <= limit)
                last++;
            for (size_t a = lo + done[lo]; a < last; a++) { /* extend the group's running max */
                for (size_t j = 0; j < kk; j++) {
                    double e = end[arr[a].xfer * kk + j];
                    ready[a * kk + j] =
                        a > lo && ready[(a - 1) * kk + j] > e ? ready[(a - 1) * kk + j] : e;
                }
                done[lo]++;
            }
            for (size_t j = 0; last > lo && j < kk; j++)
                if (ready[(last - 1) * kk + j] > part_ready[j])
                    part_ready[j] = ready[(last - 1) * kk + j];
        }
        double cost = tacos_link_cost_us(&t->links[link[i]], part * (double)(next - i));
        for (size_t j = 0; j < kk; j++) {
            double at = free_at[link[i]] > part_ready[j] ? free_at[link[i]] : part_ready[j];
            free_at[link[i]] = at + cost;
            for (size_t y = i; y < next; y++) {
                const tacos_xfer_t *x = &one->xfers[y];
                end[y * kk + j] = at + cost;
                s->xfers[s->nxfers++] =
                    (tacos_xfer_t){at, at + cost, (int32_t)((size_t)x->chunk * kk + j), x->src,
                                   x->dst, x->reduce};
            }
        }
    }
    free(arr);
    free(ends);
    free(link);
    free(end);
    free(ready);
    free(free_at);
    free(part_ready);
    free(done);
    if (rc) {
        tacos_sched_free(s);
        return rc;
    }
    /* unsorted: the caller sorts it if it keeps it; time_us already right */
    s->time_us = 0;
    for (size_t i = 0; i < s->nxfers; i++)
        if (s->xfers[i].end_us > s->time_us)
            s->time_us = s->xfers[i].end_us;
    *out = s;
    return TACOS_OK;
}
