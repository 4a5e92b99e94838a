/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memory layer: what the core does with bytes of memory the transport
 * cannot reach (a GPU's), after UCC's memory components.
 *
 * - A memory component (tacos_mc_t) knows one kind of memory: what kind a
 *   pointer is, streams of asynchronous copies and reductions, pinned host
 *   memory and device memory.  Two exist: host (always) and CUDA (built with
 *   --with-cuda; the driver is loaded at run time, so the same build runs
 *   where there is none).
 * - The executor sees a stream bound to one call (tacos_mem_t): copy, reduce
 *   with the call's op and type, and marks to wait on (see exec.h:
 *   opts->mem).
 */
#ifndef TACOS_MEM_H
#define TACOS_MEM_H

#include <stddef.h>
#include <stdint.h>

typedef enum { TACOS_MEM_HOST, TACOS_MEM_DEVICE, TACOS_MEM_MANAGED } tacos_mem_kind_t;

/* Reductions a component computes itself, in the core's names (a binding
 * maps its MPI's predefined ops and datatypes onto them). */
typedef enum {
    TACOS_RED_SUM, TACOS_RED_PROD, TACOS_RED_MIN, TACOS_RED_MAX, TACOS_RED_LAND,
    TACOS_RED_LOR, TACOS_RED_LXOR, TACOS_RED_BAND, TACOS_RED_BOR, TACOS_RED_BXOR,
    TACOS_RED_MINLOC, TACOS_RED_MAXLOC, TACOS_RED_NOPS
} tacos_red_op_t;

/* Element types: integers by width and sign, floating point, and the
 * (value, int index) pairs MINLOC and MAXLOC take (C layout: the index
 * after the value, padded to the pair's alignment). */
typedef enum {
    TACOS_T_INT8, TACOS_T_UINT8, TACOS_T_INT16, TACOS_T_UINT16, TACOS_T_INT32, TACOS_T_UINT32,
    TACOS_T_INT64, TACOS_T_UINT64, TACOS_T_FLOAT16, TACOS_T_BFLOAT16, TACOS_T_FLOAT,
    TACOS_T_DOUBLE, TACOS_T_FLOAT_INT, TACOS_T_DOUBLE_INT, TACOS_T_LONG_INT, TACOS_T_2INT,
    TACOS_T_SHORT_INT, TACOS_T_NTYPES
} tacos_red_type_t;

/* A stream bound to one call, as the executor uses it.  Work started on it
 * runs in the order it was started. */
typedef struct {
    void *ctx;
    /* start copying bytes (either side host or device) */
    int (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
    /* start dst[i] = dst[i] op src[i], count elements of the call's type
     * (src may be pinned host memory) */
    int (*reduce)(void *ctx, const void *src, void *dst, size_t count);
    /* a mark after the work started so far in *mark (NULL: all done) */
    int (*mark)(void *ctx, void **mark);
    /* *done = 1 once the work before mark completed; never blocks.  The
     * mark is released when it says done, and when it fails */
    int (*test)(void *ctx, void *mark, int *done);
    /* releases a mark without waiting (after an error) */
    void (*forget)(void *ctx, void *mark);
} tacos_mem_t;

/* Where a block of device memory lies, for another process of the host
 * to read it (CUDA IPC): the handle of its allocation, which allocation
 * (process-wide unique) of which process, and the block's offset in it. */
typedef struct {
    unsigned char handle[64];
    unsigned long long buffer_id, offset;
    long long pid;
} tacos_ipc_desc_t;

/* A memory component.  Its functions (and its streams') return 0 or
 * TACOS_ERR_IO after saying what failed in why() (the last error), or
 * TACOS_ERR_NOMEM. */
typedef struct tacos_mc {
    const char *name;
    /* The kind of memory at p, never failing: host for what it does not know. */
    tacos_mem_kind_t (*query)(const void *p);
    /* Streams: one per call in flight (a communicator's, an operation's),
     * in the context of the memory at p (every use of the stream, from any
     * thread, runs there). */
    int (*stream_new)(const void *p, void **stream);
    void (*stream_free)(void *stream);
    /* Binds stream to a call: reductions of op over type. */
    void (*bind)(void *stream, tacos_red_op_t op, tacos_red_type_t type, tacos_mem_t *out);
    /* Whether it reduces op over type (else a call falls back). */
    int (*reduces)(tacos_red_op_t op, tacos_red_type_t type);
    /* Pinned host memory (what messages are staged through), and the
     * component's own memory (work space of a call on its buffers); in the
     * context of the streams. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    void *(*dev_alloc)(size_t bytes);
    void (*dev_free)(void *p);
    /* Optional (NULL: none): CUDA IPC.  ipc_export describes device memory
     * at p (from dev_alloc) for another process; ipc_import maps a block
     * another process of the host described (kept mapped for the next
     * calls) and gives its address here, pinned until ipc_release of the
     * same description, once nothing started on a stream reads it. */
    int (*ipc_export)(const void *p, tacos_ipc_desc_t *d);
    int (*ipc_import)(const tacos_ipc_desc_t *d, const void **p);
    void (*ipc_release)(const tacos_ipc_desc_t *d);
    const char *(*why)(void);
} tacos_mc_t;

/* The mappings of other processes' device memory an IPC component keeps
 * (mem_cuda.c, mem_shared.c; mem_ipc.c).  A mapping is found by the
 * description's handle and (process, allocation id), so an allocation
 * freed and another made at its address is mapped anew.  Each import pins
 * it until its release; among the unpinned, the least recently used are
 * closed to keep `kept` mappings and `max_bytes` at most (an allocation
 * its process freed stays allocated while mapped here).  The component
 * holds its lock around the calls. */
typedef struct {
    unsigned char handle[sizeof ((tacos_ipc_desc_t *)0)->handle];
    long long pid;
    unsigned long long id, used;
    uintptr_t base; /* 0: a free slot */
    size_t bytes;
    int pins;
} tacos_ipc_map_t;

typedef struct {
    tacos_ipc_map_t *maps; /* cap slots, grown where all are pinned (start: NULL, 0) */
    int cap, kept, n;
    size_t max_bytes, bytes;
    unsigned long long clock;
    /* maps what d describes at *base, *bytes long (nonzero: the
     * component's error, its why() set) */
    int (*open)(const tacos_ipc_desc_t *d, uintptr_t *base, size_t *bytes);
    void (*close)(uintptr_t base, size_t bytes); /* unpinned: nothing reads it */
} tacos_ipc_maps_t;

/* The mapping of what d describes, opened where there is none, pinned;
 * TACOS_ERR_NOMEM where all slots are pinned and no more can be
 * allocated, or open's error. */
int tacos_ipc_maps_pin(tacos_ipc_maps_t *t, const tacos_ipc_desc_t *d, tacos_ipc_map_t **m);
/* Unpins the mapping of d (from tacos_ipc_maps_pin). */
void tacos_ipc_maps_unpin(tacos_ipc_maps_t *t, const tacos_ipc_desc_t *d);

/* Waits until the work started on m so far completed (spinning on a mark). */
int tacos_mem_wait(const tacos_mem_t *m);

/* The CUDA component: NULL with *why where it is not built, the driver is
 * missing or has no device (loaded once, the first time asked). */
const tacos_mc_t *tacos_mc_cuda(const char **why);

/* The host component: allocations only (malloc); its streams are made by
 * tacos_mem_host.  The same taking every pointer for a device's (tests:
 * what a binding does with GPU buffers, without a GPU). */
const tacos_mc_t *tacos_mc_host(void);
const tacos_mc_t *tacos_mc_host_as_device(void);
/* For tests: the host component whose device memory (staging) the other
 * processes of the host map as CUDA IPC maps a GPU's (mem_shared.c), so
 * that the IPC path runs without a GPU. */
const tacos_mc_t *tacos_mc_host_shared(void);

/* A stream on host memory (what the executor's staging does with a CPU
 * buffer: copies with memcpy, reductions with reduce(rctx, ...): the
 * binding's op engine; marks always done). */
void tacos_mem_host(void *rctx, int (*reduce)(void *, const void *, void *, size_t),
                    tacos_mem_t *out);

/* Why the executor cannot stage a call whose buffers are `device`
 * (tacos_mem_device's 1 or 2) in mc's memory, or NULL: contiguous, every
 * buffer one run of bytes; reduces, whether the call combines elements of
 * op and type (TACOS_RED_NOPS, TACOS_T_NTYPES: none of the core's); calls
 * below min_bytes are refused with `below_min`. */
const char *tacos_mem_why(const tacos_mc_t *mc, int device, int contiguous, int reduces,
                          tacos_red_op_t op, tacos_red_type_t type, size_t bytes,
                          size_t min_bytes, const char *below_min);

/* Which of a call's buffers (NULL and MPI_IN_PLACE, given as `in_place`,
 * skipped) are in mc's device memory: 0 none, 1 some, 2 all; *dev: the
 * first that is (streams are made in its context).  mc NULL: 0. */
int tacos_mem_device(const tacos_mc_t *mc, const void *const *bufs, int n, const void *in_place,
                     const void **dev);

/* A host copy of a span of a call's GPU memory, for a call run on host
 * copies ("by hand": a call the staged schedule cannot take).  The span is
 * copied in when made (unless `later`: a persistent call copies in at each
 * start), so that what the call does not write stays as it was. */
typedef struct {
    char *host, *dev; /* the span's first byte */
    size_t bytes;
    void **stream;    /* where the stream of its copies is kept (made there when missing) */
    const tacos_mc_t *mc;
} tacos_mirror_t;

/* A host copy of `count` elements of extent ext whose data starts tlb
 * bytes past buf and spans text bytes, where they are in mc's device
 * memory; *host: where the call reads and writes them (buf itself where
 * there is nothing to copy: mc NULL, buf NULL or in_place, no elements,
 * host memory).  0, TACOS_ERR_ARG (a negative extent), TACOS_ERR_NOMEM, or
 * TACOS_ERR_IO (mc->why() says what failed). */
int tacos_mirror_data(tacos_mirror_t *mm, const tacos_mc_t *mc, void **stream, const void *buf,
                      size_t count, ptrdiff_t ext, ptrdiff_t tlb, ptrdiff_t text,
                      const void *in_place, int later, void **host);
/* Copies the span to the host copy (to_host) or back, waited for. */
int tacos_mirror_copy(const tacos_mirror_t *mm, int to_host);
/* Copies the span back where `out`, then frees the host copy (a mirror
 * never made: nothing). */
int tacos_mirror_free(tacos_mirror_t *mm, int out);

#endif
