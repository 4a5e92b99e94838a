/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory layer's host stream: copies with memcpy, reductions with the
 * binding's op engine, nothing asynchronous (see mem.h). */
#include <stdlib.h>
#include <string.h>

#include "mem.h"

static int host_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy(dst, src, bytes);
    return 0;
}

static int host_mark(void *ctx, void **mark)
{
    (void)ctx;
    *mark = NULL;
    return 0;
}

static int host_test(void *ctx, void *mark, int *done)
{
    (void)ctx, (void)mark;
    *done = 1;
    return 0;
}

static void host_forget(void *ctx, void *mark)
{
    (void)ctx, (void)mark;
}

int tacos_mem_wait(const tacos_mem_t *m)
{
    void *mark = NULL;
    int done = 0, rc = m->mark(m->ctx, &mark);
    while (!rc && mark && !done)
        rc = m->test(m->ctx, mark, &done);
    return rc;
}

void tacos_mem_host(void *rctx, int (*reduce)(void *, const void *, void *, size_t),
                    tacos_mem_t *out)
{
    *out = (tacos_mem_t){rctx, host_copy, reduce, host_mark, host_test, host_forget};
}

#ifndef TACOS_WITH_CUDA
const tacos_mc_t *tacos_mc_cuda(const char **why)
{
    if (why)
        *why = "coll/tacos was built without CUDA (./configure --with-cuda)";
    return NULL;
}
#endif

static tacos_mem_kind_t host_query(const void *p)
{
    (void)p;
    return TACOS_MEM_HOST;
}

static const tacos_mc_t host_mc = {.name = "host", .query = host_query, .host_alloc = malloc,
                                   .host_free = free, .dev_alloc = malloc, .dev_free = free};

const tacos_mc_t *tacos_mc_host(void)
{
    return &host_mc;
}

/* For tests: every buffer taken for a device's (host memory underneath), so
 * that what a binding does with GPU buffers runs without a GPU. */
static tacos_mem_kind_t as_device_query(const void *p)
{
    return p ? TACOS_MEM_DEVICE : TACOS_MEM_HOST;
}

static const tacos_mc_t as_device_mc = {.name = "host as device", .query = as_device_query,
                                        .host_alloc = malloc, .host_free = free,
                                        .dev_alloc = malloc, .dev_free = free};

const tacos_mc_t *tacos_mc_host_as_device(void)
{
    return &as_device_mc;
}
