/* What a binding does with a call's GPU buffers: which they are, and host
 * copies of them for calls run on those (see mem.h). */
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
    int rc = *mm->stream ? 0 : mc->stream_new(mm->dev, mm->stream);
    if (!rc) {
        mc->bind(*mm->stream, TACOS_RED_SUM, TACOS_T_UINT8, &mem);
        if (!(rc = mm->bytes ? mem.copy(mem.ctx, dst, src, mm->bytes) : 0))
            rc = tacos_mem_wait(&mem);
    }
    return rc;
}

int tacos_mirror_new(tacos_mirror_t *mm, const tacos_mc_t *mc, void **stream, void *dev,
                     size_t bytes, int later)
{
    *mm = (tacos_mirror_t){NULL, dev, bytes, stream, mc};
    /* the stream first: pinned memory is allocated in its context */
    int rc = mc->stream_new && !*stream ? mc->stream_new(dev, stream) : 0;
    if (rc)
        return rc;
    if (!(mm->host = mc->host_alloc(bytes)))
        return TACOS_ERR_NOMEM;
    if (!later && (rc = tacos_mirror_copy(mm, 1))) {
        mc->host_free(mm->host);
        mm->host = NULL;
    }
    return rc;
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
