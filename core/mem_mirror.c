/* SPDX-License-Identifier: BSD-3-Clause */
/* What a binding does with a call's GPU buffers: which they are, and host
 * copies of them for calls run on those (see mem.h). */
#include <pthread.h>
#include <string.h>

#include "mem.h"
#include "tacos_synth.h"

int tacos_mem_device(const tacos_mc_t *mc, const void *const *bufs, int n, const void *in_place,
                     const void **dev)
{
    int some = 0, all = 1;
    for (int i = 0; mc && i < n; i++) {
        if (!bufs[i] || bufs[i] == in_place)
            continue;
        int on = mc->query(bufs[i]) != TACOS_MEM_HOST;
        if (on && !some)
            *dev = bufs[i];
        some |= on, all &= on;
    }
    return !some ? 0 : all ? 2 : 1;
}

const char *tacos_mem_why(const tacos_mc_t *mc, int device, int contiguous, int reduces,
                          tacos_red_op_t op, tacos_red_type_t type, size_t bytes,
                          size_t min_bytes, const char *below_min)
{
    if (device == 1) /* kernels cannot read or write pageable host memory */
        return "host and GPU buffers in one call";
    if (!contiguous)
        return "GPU buffer with a non-contiguous datatype";
    if (reduces && op == TACOS_RED_NOPS)
        return "user-defined op on GPU buffers";
    if (reduces && (type == TACOS_T_NTYPES || (mc->reduces && !mc->reduces(op, type))))
        return "no GPU reduction for this op and datatype";
    return bytes < min_bytes ? below_min : NULL;
}

/* *stream, made in the context of p's memory where missing: under a lock,
 * since a stream a process shares may be wanted by several threads. */
static int stream_of(const tacos_mc_t *mc, const void *p, void **stream)
{
    static pthread_mutex_t made = PTHREAD_MUTEX_INITIALIZER;
    if (!mc->stream_new)
        return 0;
    pthread_mutex_lock(&made);
    int rc = *stream ? 0 : mc->stream_new(p, stream);
    pthread_mutex_unlock(&made);
    return rc;
}

int tacos_mirror_copy(const tacos_mirror_t *mm, int to_host)
{
    const tacos_mc_t *mc = mm->mc;
    void *dst = to_host ? mm->host : mm->dev;
    const void *src = to_host ? mm->dev : mm->host;
    tacos_mem_t mem;
    if (!mc->bind) { /* host memory taken for a device's */
        memcpy(dst, src, mm->bytes);
        return 0;
    }
    int rc = stream_of(mc, mm->dev, mm->stream);
    if (!rc) {
        mc->bind(*mm->stream, TACOS_RED_SUM, TACOS_T_UINT8, &mem);
        if (!(rc = mm->bytes ? mem.copy(mem.ctx, dst, src, mm->bytes) : 0))
            rc = tacos_mem_wait(&mem);
    }
    return rc;
}

int tacos_mirror_data(tacos_mirror_t *mm, const tacos_mc_t *mc, void **stream, const void *buf,
                      size_t count, ptrdiff_t ext, ptrdiff_t tlb, ptrdiff_t text,
                      const void *in_place, int later, void **host)
{
    *mm = (tacos_mirror_t){0};
    *host = (void *)buf;
    if (!mc || !buf || buf == in_place || !count || mc->query(buf) == TACOS_MEM_HOST)
        return 0; /* nothing to copy */
    if (ext < 0)
        return TACOS_ERR_ARG;
    char *dev = (char *)buf + tlb;
    *mm = (tacos_mirror_t){NULL, dev, (count - 1) * (size_t)ext + (size_t)text, stream, mc};
    /* the stream first: pinned memory is allocated in its context */
    int rc = stream_of(mc, dev, stream);
    if (rc)
        return rc;
    if (!(mm->host = mc->host_alloc(mm->bytes)))
        return TACOS_ERR_NOMEM;
    /* copied in (every buffer: what the call does not write stays) */
    if (!later && (rc = tacos_mirror_copy(mm, 1))) {
        mc->host_free(mm->host);
        mm->host = NULL;
        return rc;
    }
    *host = mm->host - tlb;
    return 0;
}

int tacos_mirror_free(tacos_mirror_t *mm, int out)
{
    if (!mm->host)
        return 0;
    int rc = out ? tacos_mirror_copy(mm, 0) : 0;
    mm->mc->host_free(mm->host);
    mm->host = NULL;
    return rc;
}
