/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libtacos-pmpi: coll/tacos for MPICH (or any MPI with the profiling
 * interface), as a library that defines MPI_Allreduce, MPI_Allgather,
 * MPI_Alltoall, MPI_Bcast, MPI_Reduce, MPI_Reduce_scatter(_block),
 * MPI_Gather and MPI_Scatter (each also nonblocking and persistent) and
 * calls the MPI library's PMPI_* for everything else.  Preloaded
 * (LD_PRELOAD) or linked before -lmpi.
 *
 * Each communicator gets, at its first such call, a private duplicate
 * (its messages never match the application's) and the core's tacos_comm_t,
 * kept as an attribute: MPI_Comm_free (or MPI_Finalize) frees both through
 * the keyval's delete callback.  Schedules run over PMPI_Isend/Irecv on the
 * duplicate, reductions through MPI_Reduce_local (predefined and user ops),
 * non-contiguous data through MPI_Pack/MPI_Unpack or a copy on a private
 * MPI_COMM_SELF.  Parameters come from TACOS_* environment variables.
 *
 * Its internals shared by its files:
 * - params.c: the parameters (TACOS_<NAME>) and the library's messages;
 * - state.c: the per-communicator state, the core's callbacks, MPI_Barrier,
 *   the info key tacos_enable, MPI_Finalize;
 * - call.c: one call as the core sees it (the transport over
 *   PMPI_Isend/Irecv, the view and the datatype callbacks);
 * - drivers.c (drivers.h): the collectives served and their entry points,
 *   and the calls it waits for while progressing its operations;
 * - large_count.c: the MPI-4 large-count forms (MPI_X_c);
 * - requests.c: nonblocking and persistent operations, their progress and
 *   the request calls it intercepts;
 * - memory.c: GPU buffers.
 */
#ifndef TACOS_PMPI_H
#define TACOS_PMPI_H

#include <mpi.h>
#include <stddef.h>

#include "mem.h"
#include "tacos_comm.h"

/* Tags on the private duplicate: one per blocking collective, one for
 * measurements (nonblocking operations: requests.c).  A call's element
 * copies are messages to self under its tag. */
enum {
    TAG_ALLREDUCE = 1, TAG_ALLGATHER, TAG_BCAST, TAG_REDUCE, TAG_REDUCE_SCATTER, TAG_MEASURE,
    TAG_ALLTOALL, TAG_GATHER, TAG_SCATTER, TAG_SETUP
};

/* Room for one PMPI_Waitsome/Testsome: statuses, requests, indices. */
typedef struct {
    void *p;
    size_t n;
} space_t;

/* A communicator's state (an attribute of it). */
typedef struct {
    MPI_Comm comm;      /* the private duplicate */
    tacos_comm_t *core; /* NULL: every call of this communicator falls back */
    space_t space;      /* blocking calls' */
    void *measure;      /* the measurements' transport context (a call_ctx_t) */
    space_t measure_space;
    unsigned called;      /* nonblocking calls made: their tags */
    unsigned initialized; /* persistent calls made: their tags */
    int refs;           /* the attribute's, and one per operation */
    int spans_hosts;    /* some rank on another node (MPICH's locality; the same on every rank) */
    void *stream;       /* GPU buffers: the stream blocking calls stage through */
    /* The calls whose request falls back run MPICH's nonblocking form on a
     * duplicate of their own, in the order they were made (requests.c):
     * the operations that may still fall back, oldest first. */
    MPI_Comm fallback_comm;
    void *order_head, *order_tail;
    /* The exchange of settings and topology a nonblocking call starts
     * (TAG_SETUP; the core's setup.c). */
    void *setup;
    space_t setup_space;
    /* Made by a nonblocking call: its duplicates are under way (comm and
     * fallback_comm are MPI_COMM_NULL until pmpi_state_ready). */
    int pending;
    MPI_Comm made[2];
    MPI_Request dup_req[2];
} state_t;

/* A nonblocking call as MPICH's nonblocking form takes it, but for its
 * datatypes (the operation holds them with the call's data): what its
 * operation runs where its request falls back. */
typedef struct {
    tacos_coll_t coll;
    int block; /* Reduce_scatter_block */
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    const int *rcounts; /* nranks of them */
    int nranks;
    MPI_Op op;
    int root;
} pmpi_icall_t;

/* One call: what the transport and the datatype callbacks need. */
typedef struct {
    state_t *st;
    int tag;
    MPI_Datatype unit; /* MPI_BYTE, or the datatype reductions combine */
    ptrdiff_t shift;   /* the executor's unit i starts shift past element i */
    MPI_Op op;
    int error;      /* the first MPI error of the transport */
    space_t *space; /* the state's (blocking calls) or the operation's */
    /* GPU buffers (memory.c) */
    const tacos_mc_t *mc; /* where they come from (NULL: none looked for) */
    int device;           /* the call's buffers: 0 host, 1 host and GPU, 2 GPU */
    const void *dev_buf;  /* one of them (streams are made in its context) */
    tacos_red_op_t red_op;
    tacos_red_type_t red_type;
    tacos_mem_t mem; /* the stream the executor stages through */
} call_ctx_t;

/* Parameters (params.c): read once, before the first state is made. */
void pmpi_read_settings(void);
const tacos_settings_t *pmpi_settings(void);
void pmpi_say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A call's decision as an event (tacos_event) at level 10: name the MPI
 * name without MPI_ ("Iallreduce", "Allreduce_init_c"), mode its mode. */
void pmpi_event(const char *name, int mode, const char *path, const char *why);

/* The per-communicator state (state.c).  pmpi_state_of: comm's, made at
 * its first call: make 1 (a blocking call, or a persistent call's
 * initialization), 0 (a nonblocking call: only where every rank is on this
 * node), -1 a look-up; &pmpi_unmade where none is made; NULL: fall back. */
extern state_t pmpi_unmade;
state_t *pmpi_state_of(MPI_Comm comm, int make);
/* Whether st's duplicates are made (wait: until they are, progressing
 * the library's operations). */
int pmpi_state_ready(state_t *st, int wait);
void pmpi_state_release(state_t *st);
/* A nonblocking call on a communicator whose state is not made yet: *why
 * it falls back, and its key recorded for the next MPI_Barrier. */
void pmpi_want(MPI_Comm comm, tacos_coll_t coll, int root, size_t bytes, const char **why);
/* Why coll goes to MPICH's own on st whatever its size, or NULL. */
const char *pmpi_left_to_mpich(const state_t *st, tacos_coll_t coll);
/* The request r of the call that returned rc, waited for with pmpi_wait
 * (progressing this library's operations). */
int pmpi_waited(int rc, MPI_Request *r);
/* Once every rank of comm is in the same call (a nonblocking barrier,
 * waited for). */
int pmpi_arrived(MPI_Comm comm);

/* One call (call.c): the transport over x (a call's, or the
 * measurements'), and the core's call with x's transport and datatype
 * callbacks (its view and memory set by the caller). */
tacos_transport_t pmpi_transport(call_ctx_t *x);
tacos_call_t pmpi_call(call_ctx_t *x);
/* The view of count elements of dtype: its bytes, or its elements
 * (reductions, with op); the reason it cannot be had, or NULL. */
const char *pmpi_view_bytes(MPI_Datatype dtype, size_t count, tacos_view_t *v, call_ctx_t *x);
const char *pmpi_view_elements(MPI_Datatype dtype, size_t count, MPI_Op op, tacos_view_t *v,
                               call_ctx_t *x);
/* Whether count elements of dtype are one run of bytes. */
int pmpi_contiguous(MPI_Datatype dtype, size_t count);
/* Whether t is predefined (a named type: never freed, never duplicated). */
int pmpi_named(MPI_Datatype t);
/* (buf, count, *dtype) as the core takes it. */
tacos_data_t pmpi_data(const void *buf, size_t count, const MPI_Datatype *dtype);
/* rc, after an error went to comm's error handler, as MPI's would. */
int pmpi_done(MPI_Comm comm, int rc);

/* Operations (requests.c).  A request for a call of plan p: nonblocking
 * (started now) or persistent (started by MPI_Start).  Holds st and
 * copies of the call's datatypes. */
int pmpi_launch(state_t *st, const tacos_plan_t *p, const tacos_call_t *call,
                const tacos_args_t *a, int persistent, const pmpi_icall_t *ic,
                MPI_Request *request);
/* Whether operations are in flight; progresses them all (never blocks). */
int pmpi_busy(void);
void pmpi_progress(void);
/* PMPI_Wait(some) on r, progressing the operations meanwhile. */
int pmpi_wait(MPI_Request *r, MPI_Status *s);
int pmpi_waitsome(int n, MPI_Request r[], int *out, int idx[], MPI_Status s[]);
/* MPI_Finalize: the signal communicator goes. */
void pmpi_requests_finalize(void);
/* A nonblocking or persistent call run on host copies of GPU buffers:
 * inner (the call on them: MPICH's request, or this library's) becomes
 * *request, which copies mm[i] back where out[i] once inner completed
 * (persistent: copies in and starts inner at each MPI_Start). */
int pmpi_launch_by_hand(MPI_Request inner, const tacos_mirror_t *mm, const int *out, int n,
                        int persistent, MPI_Request *request);

/* GPU buffers (memory.c).  TACOS_CUDA, TACOS_STAGE, TACOS_STAGE_MIN_BYTES. */
void pmpi_memory_settings(int cuda, int stage, size_t stage_min_bytes);
/* x->device from the buffers that matter on this rank. */
void pmpi_on_device(call_ctx_t *x, const void *const *bufs, int n);
/* Why the executor cannot stage the call's GPU buffers (x->op and x->unit
 * set), or NULL; a rank's own decision: staged or by hand, it sends the
 * same messages. */
const char *pmpi_device_why(call_ctx_t *x, int contiguous, size_t bytes);
/* The call's memory (call->mem, call->mc) once it runs a schedule: the
 * stream in *stream (made there when missing) for GPU buffers, the host's
 * where TACOS_STAGE=1 stages host buffers; nothing otherwise. */
int pmpi_memory_bind(void **stream, tacos_call_t *call, call_ctx_t *x);
/* A host copy of (buf, count, dtype) where it is GPU memory (*host: where
 * the call reads and writes it; buf itself otherwise), copied in now
 * unless `later`; unmirror copies it back where `out`, and frees it. */
int pmpi_mirror(tacos_mirror_t *mm, void **stream, const void *buf, size_t count,
                MPI_Datatype dtype, int later, void **host);
int pmpi_mirror_copy(const tacos_mirror_t *mm, int to_host);
int pmpi_unmirror(tacos_mirror_t *mm, int out);
void **pmpi_hand_stream(void);
void pmpi_stream_free(void *stream);

#endif
