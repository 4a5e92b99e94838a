/* SPDX-License-Identifier: BSD-3-Clause */
/* Growable arrays, and a binary min-heap of (k1, k2, id) in lexicographic
 * order built on one. */
#include <stdlib.h>

#include "internal.h"

static int less(const tacos_heap_item_t *a, const tacos_heap_item_t *b)
{
    if (a->k1 != b->k1)
        return a->k1 < b->k1;
    if (a->k2 != b->k2)
        return a->k2 < b->k2;
    return a->id < b->id;
}

int tacos_heap_push(tacos_heap_t *h, tacos_heap_item_t it)
{
    tacos_heap_item_t *v = tacos_grow(h->v, &h->cap, h->n, sizeof *v, 8);
    if (!v)
        return TACOS_ERR_NOMEM;
    h->v = v;
    size_t i = h->n++;
    for (; i && less(&it, &h->v[(i - 1) / 2]); i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = it;
    return TACOS_OK;
}

tacos_heap_item_t tacos_heap_pop(tacos_heap_t *h)
{
    tacos_heap_item_t top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && less(&h->v[c + 1], &h->v[c]))
            c++;
        if (!less(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}
