/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the files that serve collectives share (private to the component):
 * the per-call decision's macros over the core's tacos_comm_decide (PLAN,
 * DEVICE, RUN, FALLBACK), the three slots of a collective (SLOTS), each
 * family's drivers and the GPU host copies they fall to.
 *   coll_tacos_reductions.c  Allreduce, Reduce, Reduce_scatter(_block), reduce_local
 *   coll_tacos_movement.c    Allgather(v), Alltoall, Bcast, Gather, Scatter
 *   coll_tacos_vvariants.c   Gatherv, Scatterv, Alltoallv, Alltoallw
 *   coll_tacos_passed.c      Barrier, Scan, Exscan, the neighbourhood collectives
 *   coll_tacos_copies.c      calls on host copies of GPU buffers
 * Each family file fills its slots of a module (coll_tacos_fill_<family>).
 */
#ifndef COLL_TACOS_DRIVER_H
#define COLL_TACOS_DRIVER_H

#include "coll_tacos_internal.h"

/* Whether a previous component has the slot in the call's mode. */
#define HAS_PREV(m, name)                                                                    \
    (mode == NONBLOCKING ? (m)->prev_i##name != NULL                                         \
     : mode == PERSISTENT ? (m)->prev_##name##_init != NULL                                  \
                          : (m)->prev_##name != NULL)

/* Why a call goes to the previous component that a schedule could serve. */
#define PASSED "served by the previous component"

/* The previous component's function in the call's mode, or where there is
 * none (coll/tacos alone) the textbook program. */
#define FALLBACK(m, name, why, ...)                                                          \
    do {                                                                                     \
        const char *path_ = HAS_PREV(m, name) ? "fallback" : "textbook";                     \
        char event_[TACOS_EVENT_MAX];                                                        \
        TRACE(10, "%s" #name "%s: %s: %s", mode == NONBLOCKING ? "i" : "",                   \
              mode == PERSISTENT ? "_init" : "", path_, why);                                \
        if (TRACING(10))                                                                     \
            TRACE(10, "%s", tacos_event(event_, #name, (tacos_mode_t)mode, path_, why));     \
        if (!HAS_PREV(m, name))                                                              \
            return coll_tacos_textbook_##name(__VA_ARGS__, &(m)->super, mode, info, request);           \
        if (mode == NONBLOCKING)                                                             \
            return (m)->prev_i##name(__VA_ARGS__, request, (m)->prev_i##name##_module);      \
        if (mode == PERSISTENT)                                                              \
            return (m)->prev_##name##_init(__VA_ARGS__, info, request,                       \
                                           (m)->prev_##name##_init_module);                  \
        return (m)->prev_##name(__VA_ARGS__, (m)->prev_##name##_module);                     \
    } while (0)

/* A nonblocking call of a plan the ranks have not agreed on yet (the
 * first of its size: it agrees in its request): its textbook program,
 * made into m->captured for coll_tacos_launch, runs where some rank has
 * not the schedule. */
#define CAPTURE(m, name, ...)                                                                \
    do {                                                                                     \
        (m)->capture = 1;                                                                    \
        int rc_c_ = coll_tacos_textbook_##name(__VA_ARGS__, &(m)->super, mode, info, request); \
        (m)->capture = 0;                                                                    \
        if (rc_c_ != OMPI_SUCCESS) {                                                         \
            coll_tacos_drop_captured(m);                                                     \
            return rc_c_;                                                                    \
        }                                                                                    \
    } while (0)

/* The core's decision for the call (tacos_comm_decide): returns an error
 * or, where nothing is to move, success; falls back; runs on host copies of
 * GPU buffers; or goes on with p. */
#define PLAN(m, which, at, why, p, name, ...)                                                \
    do {                                                                                     \
        tacos_call_facts_t f_ = {.on_copies = by_hand_, .copies_why = (m)->by_hand_why,      \
                                 .device = x.device != 0, .why_dev = why_dev,                \
                                 .inter = OMPI_COMM_IS_INTER(comm),                          \
                                 .size = ompi_comm_size(comm), .mode = (tacos_mode_t)mode,   \
                                 .coll = which, .root = at, .bytes = call.v.bytes};          \
        int rc_;                                                                             \
        switch (tacos_comm_decide((m)->core, &f_, &(why), &(p), &rc_)) {                     \
        case TACOS_CALL_RUN:                                                                 \
            if (!(p)->agreed)                                                                \
                CAPTURE(m, name, __VA_ARGS__);                                               \
            break;                                                                           \
        case TACOS_CALL_DONE:                                                                \
        case TACOS_CALL_ERROR:                                                               \
            return rc_;                                                                      \
        case TACOS_CALL_COPIES:                                                              \
            return coll_tacos_copies_##name(m, mode, info, request, why, 1, __VA_ARGS__);        \
        case TACOS_CALL_COPIES_FALL_BACK:                                                    \
            return coll_tacos_copies_##name(m, mode, info, request, why, 2, __VA_ARGS__);        \
        default:                                                                             \
            FALLBACK(m, name, why, __VA_ARGS__);                                             \
        }                                                                                    \
    } while (0)

/* GPU buffers (bufs: the call's that matter on this rank; contiguous: all
 * of them one run of bytes) go through the schedule staged by the executor
 * (call.mem); where it cannot take them (why_dev), or no schedule serves the
 * call, the call runs on host copies of its buffers (coll_tacos_copies_<name>). */
#define DEVICE(contiguous, ...)                                                              \
    const void *bufs_[] = {__VA_ARGS__};                                                     \
    int by_hand_ = m->by_hand; /* this call's own: collectives nested in it look again */    \
    m->by_hand = 0;                                                                          \
    if (!by_hand_) /* a call on host copies looks no further */                              \
        coll_tacos_on_device(m, &x, bufs_, (int)(sizeof bufs_ / sizeof *bufs_));             \
    const char *why_dev = coll_tacos_memory(m, &call, &x, contiguous)

static inline int contiguous(const void *buf, size_t count, struct ompi_datatype_t *dtype)
{
    return buf == MPI_IN_PLACE || ompi_datatype_is_contiguous_memory_layout(dtype, (int)count);
}


/* Runs plan p in the call's mode. */
#define RUN(m, p, a, t0, t1)                                                                 \
    (mode == BLOCKING ? tacos_run((m)->core, p, &call, a)                                    \
                      : coll_tacos_launch(m, p, &call, a, t0, t1, mode == PERSISTENT, request))

/* The ranks a rank's buffers hold blocks for: on an intercommunicator the remote group's. */
static inline size_t peers(struct ompi_communicator_t *comm)
{
    return (size_t)(OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm));
}

/* Gather and Scatter: which side of the call this rank is on. */
typedef struct {
    int at_root; /* the root (MPI_ROOT on an intercommunicator) */
    int sends;   /* holds a block to send (Gather) or receive (Scatter): not the root's side */
} rooted_side_t;

static inline rooted_side_t side_of(struct ompi_communicator_t *comm, int root)
{
    if (OMPI_COMM_IS_INTER(comm))
        return (rooted_side_t){root == MPI_ROOT, root != MPI_ROOT && root != MPI_PROC_NULL};
    return (rooted_side_t){ompi_comm_rank(comm) == root, 1};
}

/* Collectives that only move data: the signature's bytes (MPI_BYTE units). */
static inline const char *view_bytes(struct ompi_datatype_t *dtype, size_t count,
                                     tacos_view_t *v, pml_ctx_t *x)
{
    x->unit = &ompi_mpi_byte.dt;
    return tacos_view_bytes(count, type_size(dtype), v);
}

/* Reductions: elements of the datatype (MPI wants the same datatype on
 * every rank there, and Open MPI's predefined ops take predefined types). */
static inline const char *view_elements(struct ompi_datatype_t *dtype, size_t count,
                                        struct ompi_op_t *op, tacos_view_t *v, pml_ctx_t *x)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    x->unit = dtype;
    x->shift = tlb;
    return tacos_view_elements(count, type_size(dtype), ext, tlb, text, ompi_op_is_commute(op), v);
}

/* The three slots of collective `name`: PARAMS its parameters, ARGS their names. */
#define SLOTS(name, PARAMS, ARGS)                                                            \
    static int tacos_##name(UNPAREN PARAMS, MOD)                                             \
    {                                                                                        \
        return coll_tacos_##name(UNPAREN ARGS, module, BLOCKING, NULL, NULL);                       \
    }                                                                                        \
    static int tacos_i##name(UNPAREN PARAMS, REQ, MOD)                                       \
    {                                                                                        \
        return coll_tacos_##name(UNPAREN ARGS, module, NONBLOCKING, NULL, request);                 \
    }                                                                                        \
    static int tacos_##name##_init(UNPAREN PARAMS, INFO, REQ, MOD)                           \
    {                                                                                        \
        return coll_tacos_##name(UNPAREN ARGS, module, PERSISTENT, info, request);                  \
    }

/* A call no schedule serves on GPU buffers (SIG: the buffers that matter on
 * this rank): an error, since the previous component (or the textbook
 * program) would read them as host memory; x.device says whether any is. */
#define NOT_ON_DEVICE(name, SIG)                                                             \
    const void *bufs_[] = {UNPAREN SIG};                                                     \
    pml_ctx_t x = {.device = 0};                                                             \
    coll_tacos_on_device(m, &x, bufs_, (int)(sizeof bufs_ / sizeof *bufs_));                 \
    if (x.device && !OPAL_CUDA_SUPPORT && m->stage != 2)                                     \
        return coll_tacos_unserved(#name, mode, "not served on GPU buffers", "copy them to the host")

/* name in three modes: PARAMS the collective's parameters, ARGS the
 * names, SIG the buffers that matter on this rank */
#define PASS_THROUGH(name, PARAMS, ARGS, SIG)                                                \
    static int coll_tacos_##name(UNPAREN PARAMS, MOD, MODE_ARGS)                              \
    {                                                                                        \
        mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;                      \
        NOT_ON_DEVICE(name, SIG);                                                            \
        FALLBACK(m, name, HAS_PREV(m, name) ? PASSED : "no previous component", UNPAREN ARGS); \
    }                                                                                        \
    SLOTS(name, PARAMS, ARGS)

/* The slots of collective `name` in the module s: blocking, nonblocking, persistent. */
#define FILL(s, name)                                                                        \
    (s)->coll_##name = tacos_##name, (s)->coll_i##name = tacos_i##name,                      \
    (s)->coll_##name##_init = tacos_##name##_init;

void coll_tacos_fill_reductions(mca_coll_base_module_t *s);
void coll_tacos_fill_movement(mca_coll_base_module_t *s);
void coll_tacos_fill_vvariants(mca_coll_base_module_t *s);
void coll_tacos_fill_passed(mca_coll_base_module_t *s);

/* The drivers of the collectives schedules serve, in the call's mode. */
int coll_tacos_allreduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, MOD,
                         MODE_ARGS);
int coll_tacos_reduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM,
                      MOD, MODE_ARGS);
int coll_tacos_reduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP,
                                    COMM, MOD, MODE_ARGS);
int coll_tacos_reduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP, COMM,
                              MOD, MODE_ARGS);
int coll_tacos_allgather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                         DT *rdtype, COMM, MOD, MODE_ARGS);
int coll_tacos_allgatherv(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts,
                          DSPS displs, DT *rdtype, COMM, MOD, MODE_ARGS);
int coll_tacos_alltoall(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                        DT *rdtype, COMM, MOD, MODE_ARGS);
int coll_tacos_bcast(void *buf, CNT count, DT *dtype, int root, COMM, MOD, MODE_ARGS);
int coll_tacos_gather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                      DT *rdtype, int root, COMM, MOD, MODE_ARGS);
int coll_tacos_scatter(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                       DT *rdtype, int root, COMM, MOD, MODE_ARGS);

/* The same on host copies of the call's GPU buffers (coll_tacos_copies.c):
 * then 1 plans it again, 2 falls back as the original call did (why). */
#define BY_HAND_ARGS                                                                         \
    mca_coll_tacos_module_t *m, call_mode_t mode, INFO, REQ, const char *why, int then

int coll_tacos_copies_allreduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM);
int coll_tacos_copies_allgather(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype, COMM);
int coll_tacos_copies_alltoall(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype, COMM);
int coll_tacos_copies_allgatherv(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts, DSPS displs, DT *rdtype, COMM);
int coll_tacos_copies_bcast(BY_HAND_ARGS, void *buf, CNT count, DT *dtype, int root, COMM);
int coll_tacos_copies_gather(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype, int root, COMM);
int coll_tacos_copies_scatter(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype, int root, COMM);
int coll_tacos_copies_reduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM);
int coll_tacos_copies_reduce_scatter_block(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP, COMM);
int coll_tacos_copies_reduce_scatter(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP, COMM);

/* A call on GPU buffers that neither the executor's staging nor the
 * previous component can take: an error (with a message), not a device
 * pointer handed to code that reads it as host memory. */
int coll_tacos_unserved(const char *name, call_mode_t mode, const char *why, const char *then);

#endif
