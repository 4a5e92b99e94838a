/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mappings of other processes' device memory an IPC component keeps
 * (mem.h: tacos_ipc_maps_t), shared by the CUDA component and the test
 * component on shared host memory.
 */
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "tacos_synth.h"

static int find(const tacos_ipc_maps_t *t, const tacos_ipc_desc_t *d)
{
    for (int i = 0; i < t->cap; i++) {
        const tacos_ipc_map_t *m = &t->maps[i];
        if (m->base && m->pid == d->pid && m->id == d->buffer_id &&
            !memcmp(m->handle, d->handle, sizeof m->handle))
            return i;
    }
    return -1;
}

/* A free slot (free_ok), else the least recently used mapping nothing
 * pins; -1 none. */
static int slot(const tacos_ipc_maps_t *t, int free_ok)
{
    int s = -1;
    for (int i = 0; i < t->cap; i++)
        if (!t->maps[i].base && free_ok)
            return i;
        else if (t->maps[i].base && !t->maps[i].pins &&
                 (s < 0 || t->maps[i].used < t->maps[s].used))
            s = i;
    return s;
}

static void unmap(tacos_ipc_maps_t *t, int i)
{
    t->close(t->maps[i].base, t->maps[i].bytes);
    t->bytes -= t->maps[i].bytes;
    t->maps[i].base = 0, t->maps[i].bytes = 0;
    t->n--;
}

/* Twice the slots (64 at first): every one in use is pinned. */
static int grow(tacos_ipc_maps_t *t)
{
    int cap = t->cap ? 2 * t->cap : 64;
    tacos_ipc_map_t *maps = realloc(t->maps, (size_t)cap * sizeof *maps);
    if (!maps)
        return -1;
    memset(maps + t->cap, 0, (size_t)(cap - t->cap) * sizeof *maps);
    t->maps = maps, t->cap = cap;
    return 0;
}

int tacos_ipc_maps_pin(tacos_ipc_maps_t *t, const tacos_ipc_desc_t *d, tacos_ipc_map_t **m)
{
    int i = find(t, d), rc;
    *m = NULL;
    if (i < 0) {
        if ((i = slot(t, 1)) < 0) { /* every slot pinned: the first of new ones */
            i = t->cap;
            if (grow(t))
                return TACOS_ERR_NOMEM;
        }
        if (t->maps[i].base)
            unmap(t, i);
        if ((rc = t->open(d, &t->maps[i].base, &t->maps[i].bytes))) {
            t->maps[i].base = 0, t->maps[i].bytes = 0;
            return rc;
        }
        memcpy(t->maps[i].handle, d->handle, sizeof t->maps[i].handle);
        t->maps[i].pid = d->pid, t->maps[i].id = d->buffer_id;
        t->bytes += t->maps[i].bytes;
        t->n++;
    }
    t->maps[i].used = ++t->clock;
    t->maps[i].pins++;
    for (int j; (t->bytes > t->max_bytes || t->n > t->kept) && (j = slot(t, 0)) >= 0;)
        unmap(t, j);
    *m = &t->maps[i];
    return 0;
}

void tacos_ipc_maps_unpin(tacos_ipc_maps_t *t, const tacos_ipc_desc_t *d)
{
    int i = find(t, d);
    if (i >= 0 && t->maps[i].pins > 0)
        t->maps[i].pins--;
}
