/* SPDX-License-Identifier: BSD-3-Clause */
/* A growable array's growth step, header-only (shared by libtacos-synth and
 * libtacos-probe without an exported symbol); not installed. */
#ifndef TACOS_GROW_H
#define TACOS_GROW_H

#include <stdlib.h>

/* Room for one more element in a growable array v of *cap slots, n used
 * (doubling, from `first` slots): returns the array, moved or not, or NULL
 * when out of memory (v is then left as it was). */
static inline void *tacos_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return v;
    size_t c = *cap ? 2 * *cap : first;
    void *p = realloc(v, c * elem);
    if (p)
        *cap = c;
    return p;
}

#endif
