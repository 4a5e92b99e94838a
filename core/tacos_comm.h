/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI-neutral core of coll/tacos: one communicator's state (settings,
 * topology, schedule cache with the executor's state) and the decisions that
 * must be identical on every rank, reaching MPI only through the callbacks a
 * binding provides (the Open MPI component in coll_tacos/, a PMPI library).
 *
 * Status codes: the core returns 0, or the nonzero status a callback
 * returned, untouched (the binding's space, e.g. an MPI error).  Whatever
 * else goes wrong inside the core (no memory, a bad topology file, ranks
 * that disagree) is a fall-back agreed by every rank: a NULL plan with a
 * reason, never a status.
 */
#ifndef TACOS_COMM_H
#define TACOS_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "mem.h"
#include "tacos_synth.h"

/* The settings that decide which messages a rank sends (compared across
 * ranks at the first plan), and the local ones.  The defaults, which every
 * binding uses, are the parameter table's (params.h: tacos_settings_default). */
typedef struct {
    int enable, min_bytes, rooted_min_bytes, gather_min_bytes, chunks, seed, trials, unwind_degree;
    int chunks_per_message; /* the most chunks one message carries */
    int message_bytes;      /* ... and the most bytes such a message carries (0: any) */
    int hierarchy; /* tacos_hier_t: flat, levels, auto */
    int reuse_percent; /* a neighbouring size class's schedule reused below this latency share */
    int rooted_net_min_bytes; /* rooted_min_bytes where the communicator spans hosts */
    int probe, calibrate, measure, cache_size;
    int infer_hosts; /* over more hosts than this, the switch tree is inferred */
    int nonblocking; /* 0: nonblocking and persistent calls fall back */
    int v_schedules; /* 1: bindings may run the v-variants through schedules
                      * (tacos_args_t.sizes; tacos_comm_v_schedules) */
    long net_piece;  /* the largest message between hosts (transport piece), 0 none */
    int cuda_ipc_min_bytes; /* blocking calls on one host from this size agree on CUDA IPC; -1 never */
    char *topo_file; /* NULL: the probe */
    char *fabric_file; /* NULL: the switches between hosts measured, not read */
    /* local: no message depends on them */
    int deterministic;
    int verbose;          /* >= 5: rank 0's schedule lines also give the optimal time */
    const char *dump_dir; /* NULL or empty: no dumps */
    const char *schedule_dir; /* NULL or empty: schedules not kept between jobs */
    const char *previous; /* what serves a call coll/tacos does not: "the previous component" */
    const char *param_prefix; /* how the binding names parameters: "coll_tacos_", or
                               * "TACOS_" (names then in upper case) */
    /* the probe of this process (the first communicator's, once) */
    const char *probe_hwloc_xml; /* NULL or empty: this machine */
    const char *ucx_lib;         /* NULL or empty: no UCX */
    int probe_gpu;
    size_t scratch_max; /* scratch all communicators of the process keep between calls */
} tacos_settings_t;

/* IPC between the ranks of a host: in builds --with-cuda from 1 MiB; in
 * builds without CUDA never (no agreement), unless set (the shared host
 * memory of tests: mem.h) */
#define TACOS_IPC_MIN_BYTES_CUDA 1048576 /* the docs' default says both */
#ifdef TACOS_WITH_CUDA
#define TACOS_IPC_MIN_BYTES_DEFAULT TACOS_IPC_MIN_BYTES_CUDA
#else
#define TACOS_IPC_MIN_BYTES_DEFAULT (-1)
#endif

typedef struct {
    void *ctx;
    int rank, size;
    int local_rank; /* among the ranks of its host (which GPU it uses) */
    int spans_hosts; /* some rank on another host (the binding's locality: the same on every rank) */
    /* Optional, read by tacos_comm_new only: per rank, nonzero where it is
     * on this rank's host (NULL where spans_hosts: not known, and calls
     * that span hosts do without CUDA IPC).  Only IPC reads it: ignored,
     * and need not be made, where the settings' cuda_ipc_min_bytes < 0 */
    const char *on_host;
    unsigned id;    /* names the communicator in messages and dump files */
    /* v[0..n) = its maximum over the ranks, in place (a collective). */
    int (*max_u64)(void *ctx, uint64_t *v, int n);
    /* Optional: the same, waiting as tacos_net_idle says (the network
     * measurement's; NULL: max_u64). */
    int (*max_u64_idle)(void *ctx, uint64_t *v, int n);
    /* all[r*bytes .. (r+1)*bytes) = rank r's mine (a collective). */
    int (*allgather)(void *ctx, const void *mine, void *all, size_t bytes);
    /* The measurements' messages (calibration, the network between hosts):
     * the transport they go through, on a tag of their own that nothing
     * else on the communicator uses while every rank is inside the core's
     * setup.  Only isend, irecv, test_some, abandon and piece are used;
     * tp.ctx must live as long as the communicator. */
    tacos_transport_t measure;
    /* Nonzero: the binding gives each nonblocking call that runs a plan not
     * agreed yet (tacos_plan_t.agreed 0) a list to run instead where the
     * ranks do not all have it (tacos_req_set_alt), or runs the previous
     * component's where its request falls back (tacos_req_fell_back), so
     * that the first nonblocking call of a size synthesizes it; 0: such a
     * call falls back until a blocking call plans its size. */
    int agree_in_request;
    /* With agree_in_request: the transport of the exchange of settings and
     * probe records that a nonblocking call starts on a communicator whose
     * ranks have not agreed on them yet (setup.c), on a tag nothing else
     * uses; tp.ctx must live as long as the communicator. */
    tacos_transport_t setup;
    const int *setup_error; /* the first error setup's messages met (the binding's status) */
    /* A message: level 0 always (errors, once where every rank says the same:
     * the core prints those on rank 0 only), higher ones by verbosity. */
    void (*log)(void *ctx, int level, const char *msg);
} tacos_comm_ops_t;

/* A synthesized program with what every call of it needs (made while the
 * ranks agree on it, so a call allocates nothing but scratch). */
typedef struct {
    tacos_coll_t coll;
    int root, k, size_class;
    tacos_prog_t *prog; /* NULL: this key falls back */
    tacos_exec_t *exec; /* the executor's state for blocking calls */
    size_t *off;        /* their block offsets, size + 1 */
    int *prog_refs;     /* prog's holders: the cache, operations of their own */
    /* 1: the ranks agreed on it (a blocking call or persistent initialization
     * made it, or agreed on it since); 0: a nonblocking call made it, and
     * each call of it agrees in its request whether every rank has it
     * (prog NULL: this rank has not) until the next blocking call agrees */
    int agreed;
    uint64_t hash; /* the schedule's, with agreed 0 */
    /* 1: a nonblocking call made before the ranks agreed on settings and
     * topology: only the key; its request plans it once the exchange it
     * waits for is in (setup.c), and agrees on it as with agreed 0 */
    int deferred;
    int read; /* 1: its schedule was read from coll_tacos_schedule_dir */
    int fully_unwound; /* 1: synthesized on the topology's full lowering */
} tacos_plan_t;

typedef struct tacos_comm tacos_comm_t;

/* NULL when out of memory.  The settings are copied (topo_file too; the
 * other strings must outlive the communicator). */
tacos_comm_t *tacos_comm_new(const tacos_settings_t *s, const tacos_comm_ops_t *ops);
void tacos_comm_free(tacos_comm_t *c);
const tacos_settings_t *tacos_comm_settings(const tacos_comm_t *c);

/* Frees the networks kept for the job (measured or inferred between hosts;
 * coll_tacos_measure 1) once no communicator is being set up any more. */
void tacos_comm_forget_networks(void);

/* The plan for a call of `bytes` bytes of type signature (equal on every
 * rank) in *plan, or NULL with *why.  Every reason is decided from inputs
 * equal on every rank; the first call agrees on the settings, the first of
 * a key synthesizes and agrees on the schedule.  While the core runs its
 * own collectives (the callbacks), a call that comes back into the binding
 * gets a NULL plan ("called ... during coll/tacos setup"). */
int tacos_comm_plan(tacos_comm_t *c, tacos_coll_t coll, int root, size_t bytes, const char **why,
                    const tacos_plan_t **plan);

/* Nonblocking calls, never waiting for other ranks (MPI wants their
 * initiation local): the plan where it is made; where the settings and
 * topology are agreed and ops.agree_in_request, a key not planned yet is
 * synthesized here and cached not agreed (agreed 0: its calls agree in
 * their request, tacos_req_set_alt); else it is recorded (by every rank
 * alike: the same calls in the same order) and planned by the next blocking
 * call of the communicator (tacos_comm_plan, or tacos_comm_prepare from a
 * collective the core does not serve, e.g. MPI_Barrier, which also agrees
 * on the plans not agreed yet).  NULL with *why: fall back. */
const tacos_plan_t *tacos_comm_plan_nonblocking(tacos_comm_t *c, tacos_coll_t coll, int root,
                                                size_t bytes, const char **why);
int tacos_comm_prepare(tacos_comm_t *c);

/* Whether the v-variants may run through schedules: *why NULL where the
 * settings are agreed on every rank (the first call agrees on them: a
 * collective), coll/tacos is on and v_schedules is on, else why not.  0 or
 * the binding's status. */
int tacos_comm_v_schedules(tacos_comm_t *c, const char **why);

/* How a collective was called. */
typedef enum { TACOS_BLOCKING, TACOS_NONBLOCKING, TACOS_PERSISTENT } tacos_mode_t;

/* What a binding calls for each call: the plan in *plan; else NULL with
 * *why (fall back), or NULL with *why NULL: an empty signature moves
 * nothing on any rank, so a blocking call is done (a nonblocking or
 * persistent one must make a request: it falls back, "nothing to move").
 * Blocking calls plan (tacos_comm_plan), and so does a persistent call's
 * initialization (MPI_X_init: nonlocal, called by every rank in the same
 * order as the blocking collectives, so it may agree with the others);
 * nonblocking calls never wait (tacos_comm_plan_nonblocking). */
int tacos_comm_plan_call(tacos_comm_t *c, tacos_mode_t mode, tacos_coll_t coll, int root,
                         size_t bytes, const char **why, const tacos_plan_t **plan);

/* What a binding knows of a call before it plans (tacos_comm_decide). */
typedef struct {
    int on_copies;          /* the call runs on host copies of GPU buffers: 0 no, 1 of a
                             * call that plans, 2 of one that falls back (copies_why) */
    const char *copies_why;
    int device;             /* some of its buffers are a GPU's */
    const char *why_dev;    /* why the executor cannot stage them (NULL: it can) */
    int inter;              /* on an intercommunicator */
    int size;               /* ranks: 1 falls back ("one rank"); 0 where the binding
                             * runs one-rank communicators through schedules too */
    tacos_mode_t mode;
    tacos_coll_t coll;
    int root;
    size_t bytes;           /* the type signature's (call.v.bytes) */
} tacos_call_facts_t;

/* A call's decision in the stable form tests and tools read
 * (docs/troubleshooting.md, "Events"), printed by the bindings at verbose
 * level 10 beside the prose:
 *   event coll=NAME mode=blocking|nonblocking|persistent path=PATH reason=KEY
 * NAME the collective in lower case (the binding's: "allreduce",
 * "allgatherv"), PATH fallback (the previous component), textbook (coll/tacos's
 * own list of messages), copies (host copies of GPU buffers); KEY the
 * reason's (tacos_reason_key).  A call that runs a schedule says
 *   event coll=NAME mode=MODE path=schedule reason=- bytes=B ranks=N k=K stage=S ipc=0|1
 * (the core, at each start; S the memory component staging it, "-" none). */
#define TACOS_EVENT_MAX 192
const char *tacos_event(char buf[TACOS_EVENT_MAX], const char *coll, tacos_mode_t mode,
                        const char *path, const char *why);
/* A reason's key: a word that stays when the reason's prose changes
 * ("min_bytes" for "below coll_tacos_min_bytes", "not_planned", ...); "-"
 * for none, "other" for a reason without one.  buf: room for keys made
 * from a parameter's name. */
const char *tacos_reason_key(const char *why, char buf[64]);

/* What the binding does with the call. */
typedef enum {
    TACOS_CALL_RUN,               /* run *plan */
    TACOS_CALL_FALL_BACK,         /* to the previous component, with *why */
    TACOS_CALL_COPIES,            /* on host copies of its GPU buffers, planned there (*why) */
    TACOS_CALL_COPIES_FALL_BACK,  /* on host copies, falling back there with *why */
    TACOS_CALL_DONE,              /* nothing to move: success */
    TACOS_CALL_ERROR              /* *rc, the binding's status */
} tacos_call_action_t;

/* The per-call decision both bindings make, over plain values: *why comes
 * in as the binding's own reason (a view that cannot be cut, NULL) and
 * leaves as the reason to fall back; with c NULL (no state to plan with)
 * nothing is planned.  Every input that changes which messages are sent is
 * equal on every rank. */
tacos_call_action_t tacos_comm_decide(tacos_comm_t *c, const tacos_call_facts_t *f,
                                      const char **why, const tacos_plan_t **plan, int *rc);


/* ---- a call: the drivers every binding shares (coll.c) --------------------- */

/* A rank's data as schedules see it: `units` units `unit_ext` bytes apart,
 * unit i's data at shift + i*unit_ext past unit 0's address:
 * - collectives that only move data: the type signature's bytes, cut the
 *   same on every rank whatever (count, datatype) each passes;
 * - reductions: elements of the datatype (the same on every rank).
 * `bytes`, the signature's size, is equal on every rank and makes every
 * decision; whether a rank works in its own buffer or in scratch (packed)
 * is its own affair: no message changes. */
typedef struct {
    size_t units, unit_ext, bytes;
    ptrdiff_t shift; /* where element 0's data starts (the true lower bound) */
} tacos_view_t;

/* The view of `count` elements of a datatype of `size` bytes of signature:
 * as bytes (collectives that only move data), or as elements of extent
 * `ext` whose data starts at true lower bound `tlb` and spans `text`
 * (reductions; `commutative`: the op's).  NULL, or why it cannot be served
 * (the same on every rank). */
const char *tacos_view_bytes(size_t count, size_t size, tacos_view_t *v);
const char *tacos_view_elements(size_t count, size_t size, ptrdiff_t ext, ptrdiff_t tlb,
                                ptrdiff_t text, int commutative, tacos_view_t *v);

/* One of the caller's (buffer, count, datatype); extent: the datatype's;
 * bytes: its type signature's (count x the datatype's size: what pack
 * writes in the bytes view, whatever the extent). */
typedef struct {
    void *buf;
    size_t count;
    const void *type;
    ptrdiff_t extent;
    size_t bytes;
} tacos_data_t;

/* Elements [first, first + count) of d. */
static inline tacos_data_t tacos_data_part(const tacos_data_t *d, size_t first, size_t count)
{
    tacos_data_t p = *d;
    p.buf = (char *)d->buf + (ptrdiff_t)first * d->extent;
    p.count = count;
    p.bytes = d->count ? d->bytes / d->count * count : 0;
    return p;
}

/* What the binding gives a call: its transport (tp.ctx is passed to every
 * callback here), the view, and how its datatypes move. */
typedef struct {
    tacos_transport_t tp;
    tacos_view_t v;
    /* Where d's data is one run of bytes: the address of its first byte
     * (buf + the true lower bound), else NULL: then, and where the view's
     * elements are not tightly packed, it goes through scratch, packed and
     * unpacked by the two below */
    char *(*contiguous)(void *ctx, const tacos_data_t *d);
    int (*pack)(void *ctx, const tacos_data_t *d, char *work);
    int (*unpack)(void *ctx, const char *work, const tacos_data_t *d);
    /* the binding's status for out of memory, for an executor that cannot
     * progress (a bug) and for a copy between two signatures of different
     * sizes (an erroneous program); a failed message returns *error, the
     * first error the transport met (the binding's status, 0 none) */
    int err_nomem, err_internal, err_truncate;
    const int *error;
    /* Buffers in memory the transport cannot reach (a GPU's, or staging
     * forced on host memory): the call's stream (exec.h: opts->mem) and the
     * component whose memory stages the messages and holds work space.  The
     * binding sets them only where every buffer the call touches is one run
     * of bytes (contiguous) and mem reduces the call's op and type.  NULL:
     * host memory. */
    const tacos_mem_t *mem;
    const tacos_mc_t *mc;
} tacos_call_t;

/* A call's buffers: send NULL means MPI_IN_PLACE; recv is Bcast's buffer.
 * Gather and Scatter: the buffers that matter on this rank (n blocks at the
 * root, one elsewhere), NULL where none does or MPI_IN_PLACE stands in.
 * Allgather's recv holds every rank's block (count = n x the per-rank
 * count; Allgatherv: counts[r] elements of count_units units each, in rank
 * order, or with displs at displs[r] extents into recv's buffer, then
 * through scratch); Reduce_scatter's recv is the result buffer with count =
 * the whole input (counts[r], or `each` when counts is NULL, elements per
 * block).  Blocking calls read counts and displs while they run; requests
 * copy them. */
typedef struct {
    const tacos_data_t *send, *recv;
    int root;
    const int *counts;
    size_t each;
    const ptrdiff_t *displs;
    size_t count_units;
    /* Routed collectives with blocks of their own sizes (Gatherv, Scatterv,
     * Alltoallv/w; blocking calls only; send and recv unused): sizes[b] =
     * the signature bytes of block b, every rank's (b = q between rank q
     * and the root, i*n + j from rank i to rank j), the same on every rank;
     * in = this rank's blocks to send (n at Scatter's root and for
     * All-to-All, else one; NULL: none, e.g. MPI_IN_PLACE at Gather's root),
     * out = those it receives (n at Gather's root and for All-to-All). */
    const size_t *sizes;
    const tacos_data_t *in, *out;
} tacos_args_t;

/* A blocking call of plan p (from tacos_comm_plan, every rank the same) on
 * the caller's buffers.  Returns 0 or the binding's status (a message
 * printed on this rank). */
int tacos_run(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
              const tacos_args_t *a);

/* A nonblocking or persistent call: an operation with its own executor
 * state and scratch (released by tacos_req_free), holding the program.
 * The call's transport context must stay valid as long as the operation.
 *   tacos_req_start     packs the input and posts the first messages;
 *   tacos_req_progress  never blocks; *done = 1 at the end, when the result
 *                       is in the caller's buffers (or on an error, which
 *                       it returns after a message);
 *   start again after done (persistent), or free.
 * One staged on every rank may read the staging of the ranks of its host
 * through CUDA IPC, asked without blocking (ipc.c): a persistent one
 * (persistent != 0) at its first start, a nonblocking one at its start
 * where a blocking collective has tested the communicator. */
typedef struct tacos_req tacos_req_t;
int tacos_req_new(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
                  const tacos_args_t *a, int persistent, tacos_req_t **out);
int tacos_req_start(tacos_req_t *r);
int tacos_req_progress(tacos_req_t *r, int *done);
void tacos_req_free(tacos_req_t *r);
/* A nonblocking r of a plan not agreed yet (tacos_plan_t.agreed 0): alt,
 * the same call as a list on the same transport and tag
 * (tacos_req_new_list), is what runs where the ranks find, at the start,
 * that one of them has not the schedule.  r owns it. */
void tacos_req_set_alt(tacos_req_t *r, tacos_req_t *alt);
/* Without an alt, such a request ends there instead, having moved nothing
 * (done, success): then this says 1, on every rank alike, and the binding
 * runs the call with the previous component, in the same order on every
 * rank (tacos_req_new order). */
int tacos_req_fell_back(const tacos_req_t *r);
/* Whether a started r knows what it runs (its schedule, its alt, or the
 * fall-back): the same outcome on every rank, learned at different times. */
int tacos_req_decided(const tacos_req_t *r);

/* ---- textbook programs: a list of messages ------------------------------------- */

/* One message of a rank's textbook program (a collective the schedules do
 * not serve, or any collective where no previous component exists): to or
 * from `peer`, `units` units (the call's view: bytes, or elements of the
 * reduction's datatype) of `data`, posted once message `after` (an earlier
 * index, -1 none) is done; `reduce`: a receive combined into data (src op
 * data, in that order: non-commutative ops keep rank order where the
 * program does).  Copies run at the start (at_end: once every message is
 * done): copy[i].from's signature into copy[i].to (with elements, of one
 * datatype and count on both sides).  Data not one run of bytes goes
 * through scratch, packed before the first message and unpacked at the
 * end. */
typedef struct {
    int peer, send, reduce, after;
    tacos_data_t data;
    size_t units;
} tacos_msg_t;

typedef struct {
    tacos_data_t from, to;
    int at_end; /* after the last message instead of before the first */
} tacos_copy_t;

/* An operation of the list (copied) on the communicator's transport, run
 * like any other: tacos_req_start / progress / free, or tacos_run_list
 * (blocking: new + start + wait + free).  The call's view gives the unit
 * (call->v.unit_ext bytes, element 0's data call->v.shift past a buffer). */
int tacos_req_new_list(tacos_comm_t *c, const tacos_call_t *call, const tacos_msg_t *msgs,
                       int nmsgs, const tacos_copy_t *copies, int ncopies, tacos_req_t **out);
int tacos_run_list(tacos_comm_t *c, const tacos_call_t *call, const tacos_msg_t *msgs, int nmsgs,
                   const tacos_copy_t *copies, int ncopies);

/* Test builds and tests: TACOS_FAULT=RANK:send:N makes the N-th message
 * posted by the process of that MPI_COMM_WORLD rank fail (the binding asks
 * tacos_fault("send") before each), RANK:alloc:N its N-th scratch
 * allocation, RANK:synth:N its N-th synthesis of a size (as a synthesis
 * that fails on one rank only), RANK:hash:N the hash of its N-th schedule
 * made (as a schedule that differs on one rank), RANK:ipcmap:N its N-th and every later mapping of another
 * rank's staging by the shared host memory component (coll_tacos_stage=3;
 * as GPUs without peer access), RANK:ipcexp:N its N-th and every later
 * export of its own (as CUDA IPC under MIG).  The rank comes from the launcher's environment
 * (OMPI_COMM_WORLD_RANK, PMI_RANK). */
int tacos_fault(const char *what);

#endif
