/* SPDX-License-Identifier: BSD-3-Clause */
/* The greedy TEN link-chunk matching engine (internal). */
#ifndef TACOS_TEN_H
#define TACOS_TEN_H

#include "internal.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* Moves chunks over `topo` (finalized) until every NPU holds its `post`
 * chunks, starting from `pre` (both [npus][TACOS_WORDS(nchunks)] bitsets).
 * Appends copy transfers to `out` in start order; *time_us is the finish.
 * A link carries up to per_msg chunks in one message (its transfers share
 * start and end; it takes the link's time for their bytes together).
 * Once its time passes give_up_us it stops: TACOS_SLOWER, `out` partial. */
int tacos_ten_spread(const tacos_topo_t *topo, int nchunks, double chunk_bytes, int per_msg,
                     const uint64_t *pre, const uint64_t *post, uint64_t seed,
                     double give_up_us, tacos_sched_t *out, double *time_us);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
