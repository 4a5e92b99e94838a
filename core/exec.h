/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI-neutral executor: runs one rank's program (tacos_prog_t) on a buffer,
 * through a small transport table the caller provides.
 */
#ifndef TACOS_EXEC_H
#define TACOS_EXEC_H

#include <stddef.h>

#include "mem.h"
#include "tacos_synth.h"

typedef struct {
    void *ctx;
    /* Post a nonblocking send / receive of `bytes` to / from `peer`; the
     * request handle goes to *req.  Messages between two ranks must match in
     * the order they were posted (MPI's non-overtaking rule). */
    int (*isend)(void *ctx, const void *buf, size_t bytes, int peer, void **req);
    int (*irecv)(void *ctx, void *buf, size_t bytes, int peer, void **req);
    /* Wait until at least one of reqs[0..n) completes; set done[i] = 1 for
     * the completed ones (and forget them), also when one of them failed
     * (the error is returned). */
    int (*wait_some)(void *ctx, void **reqs, size_t n, char *done);
    /* The same without blocking: done may stay all 0 (nonblocking use). */
    int (*test_some)(void *ctx, void **reqs, size_t n, char *done);
    /* After an error: give up a request still in flight without blocking on
     * peers (a receive is cancelled, a send left to finish on its own; its
     * buffer must stay allocated). */
    void (*abandon)(void *ctx, void *req, int is_send);
    /* dst[i] = dst[i] op src[i] for `count` elements (MPI_Reduce_local and
     * ompi_op_reduce compute src op dst: the same for the commutative ops
     * the core serves). */
    int (*reduce)(void *ctx, const void *src, void *dst, size_t count);
    /* Optional (NULL: whole messages): the largest message to or from
     * `peer`, 0 for no limit.  A longer one travels as consecutive pieces of
     * that size (the last shorter), each a message of its own: both ranks of
     * a pair must give the same limit.  E.g. a TCP transport's eager limit
     * between hosts, so that no piece waits for a clear-to-send queued
     * behind the bulk data going the other way. */
    size_t (*piece)(void *ctx, int peer);
} tacos_transport_t;

/* Optional inputs that save copies:
 * - input: the rank's data in the buffer's layout, while the buffer itself
 *   starts uninitialized.  A chunk is read from input until the buffer holds
 *   it; it is copied into the buffer only when a reduction first lands in it,
 *   and chunks nothing wrote are copied at the end.
 * - keep (with input): the part of the buffer the caller reads afterwards;
 *   chunks nothing wrote are copied from the input only there.
 * - own_src: sends of block own_block read from here (All-Gather's own
 *   block), and overlap runs once right after the first messages are posted,
 *   e.g. to copy that block into place meanwhile.
 * - ordered: see the field. */
typedef enum { TACOS_KEEP_ALL, TACOS_KEEP_BLOCK, TACOS_KEEP_NONE } tacos_keep_t;

/* A chunk's data anywhere: `units` units of elem_bytes at `at`. */
typedef struct {
    char *at;
    size_t units;
} tacos_span_t;

typedef struct {
    const void *input;
    tacos_keep_t keep;
    int keep_block; /* with TACOS_KEEP_BLOCK */
    const void *own_src;
    int own_block;
    void (*overlap)(void *arg);
    void *overlap_arg;
    /* combine a chunk's arriving reductions in the program's order, not in
     * arrival order: floating-point results identical from run to run */
    int ordered;
    /* Space for arriving reductions and for the messages of several chunks
     * (a send packed there, a receive arriving there), at least `bytes`,
     * owned by the caller (a communicator's reused across calls: fresh
     * memory costs page faults every call; one per operation in flight);
     * required where the program reduces into scratch or joins ops. */
    void *(*scratch)(void *arg, size_t bytes);
    void *scratch_arg;
    /* Chunk c's data is spans[c] instead of a part of a block of the
     * buffer (block_off and buf unused; no input, own_src, keep): programs
     * whose chunks live in several buffers (All-to-All: the send buffer,
     * the receive buffer, scratch for what a rank forwards) or are not
     * parts of blocks (the textbook programs). */
    const tacos_span_t *spans;
    /* Buffers in memory the transport cannot reach (a GPU's): every message
     * is staged through host memory from scratch (then pinned host memory,
     * one byte per byte of every message the call sends or receives), and
     * every local copy and reduction goes through mem, asynchronously.  A
     * send's chunk is copied out once its dependencies are done and posted
     * once the copy completed (so the next chunk's copy overlaps this one's
     * message); a receive is posted at once and lands in the buffer (a copy,
     * or a reduction reading the staged data) once its dependencies are
     * done (a message of several chunks: staged side by side, posted once
     * every chunk's copy completed, each chunk landing on its own; with
     * ipc one description covers them).  The call ends once everything
     * started on mem completed, also
     * what the caller started there (e.g. its overlap).  NULL: the
     * transport and tp->reduce take the buffers as they are. */
    const tacos_mem_t *mem;
    /* With mem, every rank's too, agreed (ranks of one host with their
     * GPUs in reach): the peers of this rank's host (ipc_peers[peer] != 0;
     * NULL: every peer) read the staged data where it is.  A send to one
     * stages its chunk in device memory of mc (ipc_scratch, same arg as
     * scratch) and sends its description (mc->ipc_export); a receive from
     * one maps the described block (mc->ipc_import) and lands from there.
     * Messages to and from other peers are staged as without ipc.  At the
     * end each rank tells the peers it received such descriptions from that
     * it has read their data (an empty message) and waits for the same word
     * from those it sent them to: only then may staging space be used
     * again.  ipc_peers has an entry per peer of the program (npus) and
     * must be symmetric (peer a's entry for b is b's for a), as a host is. */
    const tacos_mc_t *ipc;
    const char *ipc_peers;
    void *(*ipc_scratch)(void *arg, size_t bytes);
} tacos_exec_opts_t;

/*
 * The buffer holds `count` elements of `elem_bytes` each, cut into the
 * schedule's chunks: block r is elements [block_off[r], block_off[r+1])
 * and chunk c = r*k + j is its j-th of k near-equal parts (or, with
 * opts->spans, chunk c is spans[c]; the program's largest chunk number
 * sets how many there are).
 * Runs every op of `prog` with data dependencies and per-peer message order
 * respected; returns the first transport error.  On an error, what is still
 * in flight is abandoned (never waited for: the peers may be waiting for
 * this rank), so sends may still read the buffer, its sources and the
 * scratch after the return: the caller must not free or reuse them.
 *
 * The state lives on the heap, allocated once per program (tacos_exec_new;
 * a caller can make it where every rank agrees, e.g. with the program it
 * caches) and reused by each call; only the room for requests grows, at a
 * start that posts more pieces (transport piece) than any before:
 *   tacos_exec_start  posts what can go at once (the only step that may need
 *                     scratch from the transport);
 *   tacos_exec_progress  handles what completed, never blocking (transport
 *                     test_some); *done = 1 at the end;
 *   tacos_exec_wait   the same, blocking (wait_some) until the end.
 * The buffers, block_off, the transport and opts must stay valid until the
 * end; afterwards progress/wait only say done (or the error again), and a
 * new start is refused while a call runs.  One state serves one call at a
 * time: concurrent calls of one program need states of their own.
 * tacos_exec_run = new + start + wait + free.
 */
typedef struct tacos_exec tacos_exec_t;

int tacos_exec_new(const tacos_prog_t *prog, int npus, int chunks_per_npu, tacos_exec_t **out);
void tacos_exec_free(tacos_exec_t *x);
int tacos_exec_start(tacos_exec_t *x, const size_t *block_off, void *buf, size_t elem_bytes,
                     const tacos_transport_t *tp, const tacos_exec_opts_t *opts);
int tacos_exec_progress(tacos_exec_t *x, int *done);
int tacos_exec_wait(tacos_exec_t *x);
int tacos_exec_run(const tacos_prog_t *prog, int npus, int chunks_per_npu,
                   const size_t *block_off, void *buf, size_t elem_bytes,
                   const tacos_transport_t *tp, const tacos_exec_opts_t *opts);

/* Element range of chunk c: [*first, *first + *len). */
void tacos_exec_chunk(const size_t *block_off, int chunks_per_npu, int c, size_t *first,
                      size_t *len);

#endif
