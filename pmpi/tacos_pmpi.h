/*
 * libtacos-pmpi's internals shared by its two files: tacos_pmpi.c (the
 * per-communicator state, the transport, the collectives) and requests.c
 * (nonblocking and persistent operations, their progress and the request
 * calls it intercepts).
 */
#ifndef TACOS_PMPI_H
#define TACOS_PMPI_H

#include <mpi.h>
#include <stddef.h>

#include "mem.h"
#include "tacos_comm.h"

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
} state_t;

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

void pmpi_say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pmpi_state_release(state_t *st);
/* Whether t is predefined (a named type: never freed, never duplicated). */
int pmpi_named(MPI_Datatype t);

/* Operations (requests.c).  A request for a call of plan p: nonblocking
 * (started now) or persistent (started by MPI_Start).  Holds st and
 * copies of the call's datatypes. */
int pmpi_launch(state_t *st, const tacos_plan_t *p, const tacos_call_t *call,
                const tacos_args_t *a, int persistent, MPI_Request *request);
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
