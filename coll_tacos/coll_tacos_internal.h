/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the component's files share; nothing here is exported (the
 * component exports only mca_coll_tacos_component):
 *   coll_tacos_module.c    the module: the previous component's functions,
 *                          the core's callbacks, the slots filled
 *   coll_tacos_driver.h    the files that serve collectives, by family
 *                          (reductions, movement, vvariants, passed) and
 *                          the GPU host copies (copies)
 *   coll_tacos_call.c      a call over the PML: the executor's transport,
 *                          Open MPI's datatype and op engines, requests
 *   coll_tacos_textbook.c  the textbook programs: what no schedule serves
 *                          where no previous component exists, on intra-
 *                          and intercommunicators
 *   coll_tacos_neighbor.c  the neighbourhood collectives' programs
 */
#ifndef COLL_TACOS_INTERNAL_H
#define COLL_TACOS_INTERNAL_H

#include "ompi_config.h"

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "coll_tacos.h"

#define C (&mca_coll_tacos_component)
#define TRACE(level, ...) opal_output_verbose(level, C->output, "coll:tacos: " __VA_ARGS__)
/* Whether TRACE(level, ...) prints (the stream's verbosity is the
 * parameter's): what only the trace needs is made only then. */
#define TRACING(level) (TACOS_PARAM(VERBOSE).i >= (level))

/* Shorthands for the slots' parameters. */
#define DT struct ompi_datatype_t
#define OP struct ompi_op_t *op
#define COMM struct ompi_communicator_t *comm
#define INFO struct ompi_info_t *info
#define REQ ompi_request_t **request
#define MOD mca_coll_base_module_t *module
#define UNPAREN(...) __VA_ARGS__

/* How a slot was called: blocking, nonblocking (MPI_I...), persistent (..._init). */
typedef enum {
    BLOCKING = TACOS_BLOCKING,
    NONBLOCKING = TACOS_NONBLOCKING,
    PERSISTENT = TACOS_PERSISTENT
} call_mode_t;
#define MODE_ARGS call_mode_t mode, struct ompi_info_t *info, ompi_request_t **request

/* One call: what the transport and the datatype callbacks need. */
typedef struct {
    struct ompi_communicator_t *comm;
    int tag;
    struct ompi_datatype_t *unit; /* MPI_BYTE, or the datatype reductions combine */
    ptrdiff_t shift;              /* the executor's unit i starts shift past element i */
    /* Textbook reductions on a unit whose elements overlap or run backwards
     * (extent <= 0 or below the true extent): the units are its elements
     * packed (its size each), combined one at a time in their own layout */
    int packed_units;
    struct ompi_op_t *op;
    int error; /* the first MPI error of the transport (the executor's own
                * codes are TACOS_ERR_*: another space) */
    /* GPU buffers (coll_tacos_memory) */
    int device;             /* buffers of the call in device memory: 1 some, 2 all */
    const void *dev_buf;    /* one of them (its CUDA context is the streams') */
    const tacos_mc_t *mc;   /* their memory component */
    tacos_mem_t mem;        /* the call's stream, when the executor stages */
    tacos_red_op_t red_op;  /* what its reductions are, for a stream of its own */
    tacos_red_type_t red_type;
} pml_ctx_t;

/* The largest message to peer of comm (its remote group on an
 * intercommunicator): coll_tacos_net_piece_bytes where peer is on another
 * host, else 0 (no limit).  Locality is Open MPI's, the same seen from
 * either end. */
size_t coll_tacos_piece(struct ompi_communicator_t *comm, int peer);

/* The core's allgather callback on module ctx: the previous component's,
 * or the textbook program's (coll_tacos_module.c). */
int coll_tacos_core_allgather(void *ctx, const void *mine, void *all, size_t bytes);

/* call over x: the PML transport, Open MPI's datatype engine, a view of nothing yet. */
void coll_tacos_call_init(tacos_call_t *call, pml_ctx_t *x);

/* The tag of the core's setup exchange inside a request (ops.setup). */
int coll_tacos_setup_tag(void);

/* A call's context (x, on comm with the collective's tag) and what the core needs of it. */
#define CALL(comm_, name, op_)                                                               \
    pml_ctx_t x = {.comm = comm_, .tag = MCA_COLL_BASE_TAG_##name,                           \
                   .unit = &ompi_mpi_byte.dt, .op = op_};                                    \
    tacos_call_t call;                                                                       \
    coll_tacos_call_init(&call, &x)

static inline size_t type_size(struct ompi_datatype_t *dtype)
{
    size_t size;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

static inline tacos_data_t data(const void *buf, size_t count, struct ompi_datatype_t *dtype)
{
    ptrdiff_t lb, ext;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    return (tacos_data_t){(void *)buf, count, dtype, ext, count * type_size(dtype)};
}

/* The bytes count elements of dtype cover: [buf + *lo, buf + *hi), empty
 * for none; any true lower bound, any sign of extent. */
static inline void footprint(size_t count, struct ompi_datatype_t *dtype, ptrdiff_t *lo,
                             ptrdiff_t *hi)
{
    ptrdiff_t lb, ext, tlb, text, run;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    run = count ? (ptrdiff_t)(count - 1) * ext : 0;
    *lo = count ? tlb + (run < 0 ? run : 0) : 0;
    *hi = count ? tlb + text + (run > 0 ? run : 0) : 0;
}

/* ---- GPU buffers ---------------------------------------------------------------- */

/* Whether bufs[0..n) (the call's significant buffers; NULL and
 * MPI_IN_PLACE skipped) are in device memory (coll_tacos_cuda, a CUDA
 * build, a driver and a device): x->device 0 none, 1 some, 2 all, and
 * x->dev_buf one of them. */
void coll_tacos_on_device(mca_coll_tacos_module_t *m, pml_ctx_t *x, const void *const *bufs,
                          int n);

/* The call's memory once its view is set: with device buffers (x->device),
 * the CUDA stream the executor stages through (call->mem), or why the
 * executor cannot take them (the caller then stages the whole call by
 * hand); with host buffers, the host stream where coll_tacos_stage forces
 * staging.  contiguous: every buffer the call touches is one run of bytes. */
const char *coll_tacos_memory(mca_coll_tacos_module_t *m, tacos_call_t *call, pml_ctx_t *x,
                              int contiguous);

/* A host copy of (buf, count, dtype) for a call staged by hand: *host is
 * where the call reads and writes it (copied in now unless `later`: a
 * persistent call copies in at each start); unmirror copies it back where
 * `out`, and frees it. */
typedef tacos_mirror_t mirror_t;
int coll_tacos_mirror(mca_coll_tacos_module_t *m, mirror_t *mm, const void *buf, size_t count,
                      struct ompi_datatype_t *dtype, int later, void **host);
int coll_tacos_unmirror(mca_coll_tacos_module_t *m, mirror_t *mm, int out);

/* A nonblocking or persistent call run on host copies: inner (the call on
 * them) becomes *request, which copies mm[i] back where out[i] once inner
 * completed (persistent: copies in and starts inner at each MPI_Start); it
 * holds the call's datatypes and op while it lives (the previous
 * component's request may not). */
int coll_tacos_launch_by_hand(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                              ompi_request_t *inner, const mirror_t *mm, const int *out, int n,
                              struct ompi_datatype_t *t0, struct ompi_datatype_t *t1,
                              struct ompi_op_t *op, int persistent, ompi_request_t **request);

/* A request for a call of plan p, which uses datatypes t0 and t1 (or NULL). */
/* Frees a textbook program made for a CAPTURE that no launch took. */
void coll_tacos_drop_captured(mca_coll_tacos_module_t *m);
int coll_tacos_launch(mca_coll_tacos_module_t *m, const tacos_plan_t *p, const tacos_call_t *call,
                      const tacos_args_t *a, struct ompi_datatype_t *t0,
                      struct ompi_datatype_t *t1, int persistent, ompi_request_t **request);

/* A request for a list of messages (tacos_req_new_list): held[0..nheld)
 * (the array is the request's now, retained while it lives) and tmp (freed
 * with it); nonblocking (started now) or persistent. */
int coll_tacos_launch_list(mca_coll_tacos_module_t *m, const tacos_call_t *call,
                           const tacos_msg_t *msgs, int nmsgs, const tacos_copy_t *copies,
                           int ncopies, struct ompi_datatype_t **held, int nheld, void *tmp,
                           int persistent, ompi_request_t **request);

/* ---- textbook programs (coll_tacos_textbook.c, coll_tacos_neighbor.c) --------------- */

/* A list of messages for the executor, being built. */
typedef struct {
    tacos_msg_t *msgs;
    int n, cap;
    tacos_copy_t copies[2];
    int ncopies;
    void *tmp;                     /* a working copy the call owns */
    struct ompi_datatype_t **held; /* the datatypes it uses (nonblocking: retained) */
    int nheld, capheld, nomem;
} list_t;

/* Appends a message; returns its index (-1: no memory, noted in l). */
int list_push(list_t *l, int peer, int send, int reduce, int after, tacos_data_t d,
              size_t units);
/* Notes a datatype the list uses. */
void list_hold(list_t *l, struct ompi_datatype_t *t);
/* Runs the list in the call's mode and frees what the call does not keep. */
int list_run(mca_coll_tacos_module_t *m, list_t *l, tacos_call_t *call, call_mode_t mode,
             ompi_request_t **request);

#define TB_ARGS mca_coll_base_module_t *module, MODE_ARGS
#define TB_M mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module; (void)info

/* me, n: this rank and its group's size; np: the ranks messages go to
 * (on an intercommunicator the remote group's, else n). */
#define RANKS(comm)                                                                          \
    int me = ompi_comm_rank(comm), n = ompi_comm_size(comm);                                 \
    int inter = OMPI_COMM_IS_INTER(comm), np = inter ? ompi_comm_remote_size(comm) : n;      \
    (void)np

#define BYTES(comm, name)                                                                    \
    CALL(comm, name, NULL);                                                                  \
    call.v.unit_ext = 1;                                                                     \
    list_t l = {0};                                                                          \
    RANKS(comm)

/* The bytes of count elements of t. */
static inline size_t sig_bytes(size_t count, struct ompi_datatype_t *t) { return count * type_size(t); }

#define TEXTBOOK(name, PARAMS) int coll_tacos_textbook_##name(UNPAREN PARAMS, TB_ARGS);
#define TEXTBOOK_PROGRAMS(X)                                                                 \
    X(barrier, (COMM))                                                                       \
    X(bcast, (void *buf, CNT count, DT *dtype, int root, COMM))                              \
    X(gather, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype, \
               int root, COMM))                                                              \
    X(gatherv, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts,    \
                DSPS displs, DT *rdtype, int root, COMM))                              \
    X(scatter, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,            \
                DT *rdtype, int root, COMM))                                                 \
    X(scatterv, (const void *sbuf, CNTS scounts, DSPS displs, DT *sdtype,        \
                 void *rbuf, CNT rcount, DT *rdtype, int root, COMM))                        \
    X(allgather, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,          \
                  DT *rdtype, COMM))                                                         \
    X(allgatherv, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts, \
                   DSPS displs, DT *rdtype, COMM))                                     \
    X(alltoall, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,           \
                 DT *rdtype, COMM))                                                          \
    X(alltoallv, (const void *sbuf, CNTS scounts, DSPS sdispls, DT *sdtype,      \
                  void *rbuf, CNTS rcounts, DSPS rdispls, DT *rdtype, COMM))     \
    X(alltoallw, (const void *sbuf, CNTS scounts, DSPS sdispls,                  \
                  DT *const *sdtypes, void *rbuf, CNTS rcounts, DSPS rdispls,    \
                  DT *const *rdtypes, COMM))                                                 \
    X(allreduce, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM))             \
    X(reduce, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM))      \
    X(reduce_scatter, (const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP,      \
                       COMM))                                                                \
    X(reduce_scatter_block, (const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP, COMM)) \
    X(scan, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM))                  \
    X(exscan, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM))                \
    X(neighbor_allgather, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf,             \
                           CNT rcount, DT *rdtype, COMM))                                    \
    X(neighbor_allgatherv, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf,            \
                            CNTS rcounts, DSPS displs, DT *rdtype, COMM))        \
    X(neighbor_alltoall, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,  \
                          DT *rdtype, COMM))                                                 \
    X(neighbor_alltoallv, (const void *sbuf, CNTS scounts, DSPS sdispls,         \
                           DT *sdtype, void *rbuf, CNTS rcounts, DSPS rdispls,   \
                           DT *rdtype, COMM))                                                \
    X(neighbor_alltoallw, (const void *sbuf, CNTS scounts, BDSPS sdispls,    \
                           DT *const *sdtypes, void *rbuf, CNTS rcounts,               \
                           BDSPS rdispls, DT *const *rdtypes, COMM))
TEXTBOOK_PROGRAMS(TEXTBOOK)
#undef TEXTBOOK

#endif
