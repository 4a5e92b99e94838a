/*
 * Module: the Open MPI side of a communicator's coll/tacos state (the core's
 * tacos_comm_t does the rest): the previous component's functions, the
 * core's callbacks over them and the PML, the PML transport for the
 * executor, Open MPI's datatype and op engines, and the module slots.
 * Every case the core does not serve goes to the previous component.
 */
#include "ompi_config.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/errhandler/errcode-internal.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "coll_tacos_internal.h"
#include "tacos_probe.h"

/* The slots (at the end of the file). */
static int tacos_barrier(COMM, MOD);
static int tacos_ibarrier(COMM, REQ, MOD);
static int tacos_barrier_init(COMM, INFO, REQ, MOD);
static int tacos_reduce_local(const void *inbuf, void *inoutbuf, CNT count, DT *dtype, OP, MOD);
/* the collectives served by the previous component or a textbook program */
#define PASSED_DECL(name, PARAMS)                                                            \
    static int tacos_##name(UNPAREN_D PARAMS, MOD);                                          \
    static int tacos_i##name(UNPAREN_D PARAMS, REQ, MOD);                                    \
    static int tacos_##name##_init(UNPAREN_D PARAMS, INFO, REQ, MOD);
#define UNPAREN_D(...) __VA_ARGS__
PASSED_DECL(gather, (const void *, CNT, DT *, void *, CNT, DT *, int, COMM))
PASSED_DECL(gatherv, (const void *, CNT, DT *, void *, CNTS, DSPS, DT *, int, COMM))
PASSED_DECL(scatter, (const void *, CNT, DT *, void *, CNT, DT *, int, COMM))
PASSED_DECL(scatterv, (const void *, CNTS, DSPS, DT *, void *, CNT, DT *, int, COMM))
PASSED_DECL(allgatherv, (const void *, CNT, DT *, void *, CNTS, DSPS, DT *, COMM))
PASSED_DECL(alltoallv, (const void *, CNTS, DSPS, DT *, void *, CNTS, DSPS, DT *, COMM))
PASSED_DECL(alltoallw, (const void *, CNTS, DSPS, DT *const *, void *, CNTS, DSPS, DT *const *,
                        COMM))
PASSED_DECL(scan, (const void *, void *, CNT, DT *, OP, COMM))
PASSED_DECL(exscan, (const void *, void *, CNT, DT *, OP, COMM))
PASSED_DECL(neighbor_allgather, (const void *, CNT, DT *, void *, CNT, DT *, COMM))
PASSED_DECL(neighbor_allgatherv, (const void *, CNT, DT *, void *, CNTS, DSPS, DT *, COMM))
PASSED_DECL(neighbor_alltoall, (const void *, CNT, DT *, void *, CNT, DT *, COMM))
PASSED_DECL(neighbor_alltoallv, (const void *, CNTS, DSPS, DT *, void *, CNTS, DSPS, DT *, COMM))
PASSED_DECL(neighbor_alltoallw, (const void *, CNTS, BDSPS, DT *const *, void *, CNTS, BDSPS,
                                 DT *const *, COMM))
static int tacos_allreduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, MOD);
static int tacos_allgather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                           DT *rdtype, COMM, MOD);
static int tacos_bcast(void *buf, CNT count, DT *dtype, int root, COMM, MOD);
static int tacos_reduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM,
                        MOD);
static int tacos_reduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP,
                                      COMM, MOD);
static int tacos_reduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP,
                                COMM, MOD);
static int tacos_alltoall(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                          DT *rdtype, COMM, MOD);
static int tacos_ialltoall(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                           DT *rdtype, COMM, REQ, MOD);
static int tacos_alltoall_init(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                               DT *rdtype, COMM, INFO, REQ, MOD);
static int tacos_iallreduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, REQ, MOD);
static int tacos_allreduce_init(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, INFO,
                                REQ, MOD);
static int tacos_iallgather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                            DT *rdtype, COMM, REQ, MOD);
static int tacos_allgather_init(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                                DT *rdtype, COMM, INFO, REQ, MOD);
static int tacos_ibcast(void *buf, CNT count, DT *dtype, int root, COMM, REQ, MOD);
static int tacos_bcast_init(void *buf, CNT count, DT *dtype, int root, COMM, INFO, REQ, MOD);
static int tacos_ireduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM,
                         REQ, MOD);
static int tacos_reduce_init(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root,
                             COMM, INFO, REQ, MOD);
static int tacos_ireduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP,
                                       COMM, REQ, MOD);
static int tacos_reduce_scatter_block_init(const void *sbuf, void *rbuf, CNT rcount, DT *dtype,
                                           OP, COMM, INFO, REQ, MOD);
static int tacos_ireduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP,
                                 COMM, REQ, MOD);
static int tacos_reduce_scatter_init(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype,
                                     OP, COMM, INFO, REQ, MOD);

/* ---- module object -------------------------------------------------------- */

static void module_construct(mca_coll_tacos_module_t *m)
{
    memset((char *)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
}

#define RELEASE_PREV(name)                                                                   \
    if (m->prev_##name##_module)                                                             \
        OBJ_RELEASE(m->prev_##name##_module);

static void module_destruct(mca_coll_tacos_module_t *m)
{
    TACOS_SLOTS(RELEASE_PREV)
    tacos_comm_free(m->core); /* its staging and device work space too */
    free(m->measure);
    if (m->stream)
        tacos_mc_cuda(NULL)->stream_free(m->stream);
}

OBJ_CLASS_INSTANCE(mca_coll_tacos_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

#if TACOS_INSTALLS
/* MPIX_Comm_agree without fault tolerance, where no other component gives
 * one (coll/tacos alone): the allreduce of the contributions, as Open MPI's
 * own agreement without ULFM; the failed group stays as it is. */
static int tacos_agree(void *contrib, size_t n, DT *dtype, OP, struct ompi_group_t **failed,
                       bool update, COMM, MOD)
{
    (void)failed, (void)update, (void)module;
    return comm->c_coll->coll_allreduce(MPI_IN_PLACE, contrib, n, dtype, op, comm,
                                        comm->c_coll->coll_allreduce_module);
}

static int tacos_iagree(void *contrib, size_t n, DT *dtype, OP, struct ompi_group_t **failed,
                        bool update, COMM, REQ, MOD)
{
    (void)failed, (void)update, (void)module;
    return comm->c_coll->coll_iallreduce(MPI_IN_PLACE, contrib, n, dtype, op, comm, request,
                                         comm->c_coll->coll_iallreduce_module);
}
#endif

/* The previous component's function for a slot, or NULL where none
 * provides it (then coll/tacos serves it with a textbook program: with
 * `--mca coll tacos` alone, nothing else is there). */
#define SAVE(name)                                                                           \
    do {                                                                                     \
        if (!comm->c_coll->coll_##name || !comm->c_coll->coll_##name##_module) {             \
            m->prev_##name = NULL, m->prev_##name##_module = NULL;                           \
            alone++;                                                                         \
            break;                                                                           \
        }                                                                                    \
        m->prev_##name = comm->c_coll->coll_##name;                                          \
        m->prev_##name##_module = comm->c_coll->coll_##name##_module;                        \
        OBJ_RETAIN(m->prev_##name##_module);                                                 \
    } while (0);

static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int alone = 0;
    TACOS_SLOTS(SAVE)
    if (alone)
        TRACE(5, "communicator %u: no previous component for %d of the slots: textbook programs "
                 "serve what no schedule does",
              tacos_comm_id(comm), alone);
#if TACOS_INSTALLS /* Open MPI 6: the module installs its functions itself */
#define INSTALL(name) MCA_COLL_INSTALL_API(comm, name, m->super.coll_##name, &m->super, "tacos");
    MCA_COLL_SAVE_API(comm, reduce_local, m->prev_reduce_local, m->prev_reduce_local_module,
                      "tacos");
    TACOS_SLOTS(INSTALL) INSTALL(reduce_local)
    if (!comm->c_coll->coll_agree) /* alone: Open MPI 6 wants one on every communicator */
        MCA_COLL_INSTALL_API(comm, agree, tacos_agree, &m->super, "tacos");
    if (!comm->c_coll->coll_iagree)
        MCA_COLL_INSTALL_API(comm, iagree, tacos_iagree, &m->super, "tacos");
#endif
    return OMPI_SUCCESS;
}

#if TACOS_INSTALLS
/* Open MPI 6: the previous component's functions back where ours are
 * (the communicator is freed, or a later component disabled us). */
static int module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
#define RESTORE(name)                                                                        \
    if (comm->c_coll->coll_##name##_module == &m->super)                                     \
        MCA_COLL_INSTALL_API(comm, name, m->prev_##name, m->prev_##name##_module, "tacos");
    TACOS_SLOTS(RESTORE) RESTORE(reduce_local)
    if (comm->c_coll->coll_agree_module == &m->super)
        MCA_COLL_INSTALL_API(comm, agree, NULL, NULL, "tacos");
    if (comm->c_coll->coll_iagree_module == &m->super)
        MCA_COLL_INSTALL_API(comm, iagree, NULL, NULL, "tacos");
    return OMPI_SUCCESS;
}
#endif

/* ---- the core's callbacks --------------------------------------------------- */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int core_max_u64(void *ctx, uint64_t *v, int n)
{
    mca_coll_tacos_module_t *m = ctx;
    if (!m->prev_allreduce) /* the textbook program (the core is busy: no schedule) */
        return tacos_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                               m->comm, &m->super);
    return m->prev_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                             m->comm, m->prev_allreduce_module);
}

/* The same, waiting as tacos_net_idle says (the network measurement),
 * through the previous component's nonblocking allreduce where there is
 * one. */
static int core_max_u64_idle(void *ctx, uint64_t *v, int n)
{
    mca_coll_tacos_module_t *m = ctx;
    ompi_request_t *req;
    int done = 0, rc;
    double t0 = now_us();
    if (!m->prev_iallreduce)
        return core_max_u64(ctx, v, n);
    rc = m->prev_iallreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                            m->comm, &req, m->prev_iallreduce_module);
    while (rc == OMPI_SUCCESS && !done)
        if ((rc = ompi_request_test(&req, &done, MPI_STATUS_IGNORE)) == OMPI_SUCCESS && !done)
            tacos_net_idle(now_us() - t0);
    return rc;
}

static int core_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    mca_coll_tacos_module_t *m = ctx;
    if (!m->prev_allgather)
        return tacos_allgather(mine, (int)bytes, &ompi_mpi_byte.dt, all, (int)bytes,
                               &ompi_mpi_byte.dt, m->comm, &m->super);
    return m->prev_allgather(mine, (int)bytes, &ompi_mpi_byte.dt, all, (int)bytes,
                             &ompi_mpi_byte.dt, m->comm, m->prev_allgather_module);
}

static void core_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level == 0)
        opal_output(0, "coll:tacos: %s", msg);
    else
        TRACE(level, "%s", msg);
}

mca_coll_base_module_t *mca_coll_tacos_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    /* cheap and the same on every rank; coll_tacos_enable is not checked
     * here but agreed at the first collective, so that a rank where it is
     * off still takes part in that agreement (and then only forwards) */
    if (TACOS_PARAM(PRIORITY).i <= 0)
        return NULL;
    mca_coll_tacos_module_t *m = OBJ_NEW(mca_coll_tacos_module_t);
    if (!m)
        return NULL;
    tacos_settings_t st = tacos_settings_default();
    tacos_params_settings(C->values, &st);
    st.net_piece = (long)C->net_piece, st.param_prefix = "coll_tacos_";
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    /* locality is symmetric: either every rank has a peer on another node
     * or none has */
    m->spans_hosts = !OMPI_COMM_IS_INTER(comm) && ompi_group_have_remote_peers(comm->c_local_group);
    int n = ompi_comm_size(comm);
    int map = m->spans_hosts && st.cuda_ipc_min_bytes >= 0; /* (what IPC goes by: tacos_comm.h) */
    char *on_host = map ? malloc((size_t)n) : NULL;
    if (map && !on_host) { /* out of memory, as in tacos_comm_new */
        OBJ_RELEASE(m);
        return NULL;
    }
    for (int i = 0; on_host && i < n; i++) { /* no process entry made: one not made is remote,
                                             * as for ompi_group_have_remote_peers */
        ompi_proc_t *proc = ompi_group_get_proc_ptr_raw(comm->c_local_group, i);
        on_host[i] = !ompi_proc_is_sentinel(proc) && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
    }
    tacos_comm_ops_t ops = {.ctx = m,
                            .rank = ompi_comm_rank(comm),
                            .size = n,
                            .local_rank = lr ? atoi(lr) : 0,
                            .spans_hosts = m->spans_hosts,
                            .on_host = on_host,
                            .id = tacos_comm_id(comm),
                            .max_u64 = core_max_u64,
                            .max_u64_idle = core_max_u64_idle,
                            .allgather = core_allgather,
                            .log = core_log};
    /* the measurements' messages: the pieces schedules send; the tag is
     * barrier's: coll/tacos serves no barrier and every rank is inside the
     * core's setup, so nothing else can match it */
    pml_ctx_t *mx = m->measure = calloc(1, sizeof *mx);
    if (!mx) {
        OBJ_RELEASE(m);
        free(on_host);
        return NULL;
    }
    *mx = (pml_ctx_t){.comm = comm, .tag = MCA_COLL_BASE_TAG_BARRIER, .unit = &ompi_mpi_byte.dt};
    tacos_call_t measure;
    coll_tacos_call_init(&measure, mx);
    ops.measure = measure.tp;
    m->comm = comm;
    m->stage = TACOS_PARAM(STAGE).i, m->stage_min_bytes = TACOS_PARAM(STAGE_MIN_BYTES).z;
    m->core = tacos_comm_new(&st, &ops);
    free(on_host);
    if (!m->core) {
        OBJ_RELEASE(m);
        return NULL;
    }
    *priority = TACOS_PARAM(PRIORITY).i;
    m->super.coll_module_enable = module_enable;
#if TACOS_INSTALLS
    m->super.coll_module_disable = module_disable;
#endif
    m->super.coll_allreduce = tacos_allreduce;
    m->super.coll_allgather = tacos_allgather;
    m->super.coll_bcast = tacos_bcast;
    m->super.coll_reduce = tacos_reduce;
    m->super.coll_reduce_scatter = tacos_reduce_scatter;
    m->super.coll_reduce_scatter_block = tacos_reduce_scatter_block;
    m->super.coll_barrier = tacos_barrier;
    m->super.coll_ibarrier = tacos_ibarrier;
    m->super.coll_barrier_init = tacos_barrier_init;
    m->super.coll_reduce_local = tacos_reduce_local;
#define FILL(name)                                                                           \
    m->super.coll_##name = tacos_##name, m->super.coll_i##name = tacos_i##name,              \
    m->super.coll_##name##_init = tacos_##name##_init;
    FILL(gather) FILL(gatherv) FILL(scatter) FILL(scatterv) FILL(allgatherv) FILL(alltoallv)
    FILL(alltoallw) FILL(scan) FILL(exscan) FILL(neighbor_allgather) FILL(neighbor_allgatherv)
    FILL(neighbor_alltoall) FILL(neighbor_alltoallv) FILL(neighbor_alltoallw)
#undef FILL
    m->super.coll_alltoall = tacos_alltoall;
    m->super.coll_ialltoall = tacos_ialltoall;
    m->super.coll_alltoall_init = tacos_alltoall_init;
    m->super.coll_iallreduce = tacos_iallreduce;
    m->super.coll_iallgather = tacos_iallgather;
    m->super.coll_ibcast = tacos_ibcast;
    m->super.coll_ireduce = tacos_ireduce;
    m->super.coll_ireduce_scatter = tacos_ireduce_scatter;
    m->super.coll_ireduce_scatter_block = tacos_ireduce_scatter_block;
    m->super.coll_allreduce_init = tacos_allreduce_init;
    m->super.coll_allgather_init = tacos_allgather_init;
    m->super.coll_bcast_init = tacos_bcast_init;
    m->super.coll_reduce_init = tacos_reduce_init;
    m->super.coll_reduce_scatter_init = tacos_reduce_scatter_init;
    m->super.coll_reduce_scatter_block_init = tacos_reduce_scatter_block_init;
    return &m->super;
}

/* ---- collectives ------------------------------------------------------------- */

static const char *mode_prefix[] = {"", "i", ""}, *mode_suffix[] = {"", "", "_init"};

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
        TRACE(10, "%s" #name "%s: %s: %s", mode_prefix[mode], mode_suffix[mode],             \
              HAS_PREV(m, name) ? "fallback" : "textbook", why);                            \
        if (!HAS_PREV(m, name))                                                              \
            return coll_tacos_textbook_##name(__VA_ARGS__, &(m)->super, mode, info, request);           \
        if (mode == NONBLOCKING)                                                             \
            return (m)->prev_i##name(__VA_ARGS__, request, (m)->prev_i##name##_module);      \
        if (mode == PERSISTENT)                                                              \
            return (m)->prev_##name##_init(__VA_ARGS__, info, request,                       \
                                           (m)->prev_##name##_init_module);                  \
        return (m)->prev_##name(__VA_ARGS__, (m)->prev_##name##_module);                     \
    } while (0)

/* The core's decision for the call (tacos_comm_decide): returns an error
 * or, where nothing is to move, success; falls back; runs on host copies of
 * GPU buffers; or goes on with p. */
#define PLAN(m, which, at, why, p, name, ...)                                                \
    do {                                                                                     \
        tacos_call_facts_t f_ = {.on_copies = by_hand_, .copies_why = (m)->by_hand_why,      \
                                 .device = x.device != 0, .why_dev = why_dev,                \
                                 .inter = OMPI_COMM_IS_INTER(comm),                          \
                                 .size = ompi_comm_size(comm), .blocking = mode == BLOCKING, \
                                 .coll = which, .root = at, .bytes = call.v.bytes};          \
        int rc_;                                                                             \
        switch (tacos_comm_decide((m)->core, &f_, &(why), &(p), &rc_)) {                     \
        case TACOS_CALL_RUN:                                                                 \
            break;                                                                           \
        case TACOS_CALL_DONE:                                                                \
        case TACOS_CALL_ERROR:                                                               \
            return rc_;                                                                      \
        case TACOS_CALL_COPIES:                                                              \
            return by_hand_##name(m, mode, info, request, why, 1, __VA_ARGS__);              \
        case TACOS_CALL_COPIES_FALL_BACK:                                                    \
            return by_hand_##name(m, mode, info, request, why, 2, __VA_ARGS__);              \
        default:                                                                             \
            FALLBACK(m, name, why, __VA_ARGS__);                                             \
        }                                                                                    \
    } while (0)

/* GPU buffers (bufs: the call's that matter on this rank; contiguous: all
 * of them one run of bytes) go through the schedule staged by the executor
 * (call.mem); where it cannot take them (why_dev), or no schedule serves the
 * call, the call runs on host copies of its buffers (by_hand_<name>). */
#define DEVICE(contiguous, ...)                                                              \
    const void *bufs_[] = {__VA_ARGS__};                                                     \
    int by_hand_ = m->by_hand; /* this call's own: collectives nested in it look again */    \
    m->by_hand = 0;                                                                          \
    if (!by_hand_) /* a call on host copies looks no further */                              \
        coll_tacos_on_device(m, &x, bufs_, (int)(sizeof bufs_ / sizeof *bufs_));             \
    const char *why_dev = coll_tacos_memory(m, &call, &x, contiguous)

static int contiguous(const void *buf, size_t count, struct ompi_datatype_t *dtype)
{
    return buf == MPI_IN_PLACE || ompi_datatype_is_contiguous_memory_layout(dtype, (int)count);
}

/* The MPI name of collective `name` ("reduce" or "Reduce") in a mode:
 * MPI_Reduce, MPI_Ireduce, MPI_Reduce_init. */
static const char *mpi_name(char buf[64], const char *name, call_mode_t mode)
{
    snprintf(buf, 64, "MPI_%s%c%s%s", mode == NONBLOCKING ? "I" : "",
             mode == NONBLOCKING ? tolower((unsigned char)name[0]) : toupper((unsigned char)name[0]),
             name + 1, mode == PERSISTENT ? "_init" : "");
    return buf;
}

/* A call on GPU buffers that neither the executor's staging nor the
 * previous component can take: an error, not a device pointer handed to
 * code that reads it as host memory. */
static int unserved(const char *name, call_mode_t mode, const char *why, const char *then)
{
    char buf[64];
    opal_output(0, "coll:tacos: %s on GPU buffers: %s; %s (Open MPI here is not CUDA-aware)",
                mpi_name(buf, name, mode), why, then);
    return OMPI_ERR_NOT_SUPPORTED;
}

/* A call on host copies of up to two buffers (each copied in, so that what
 * the call does not write stays as it was; copied back where out0, out1):
 * blocking; nonblocking, copied back when it completes; persistent, copied
 * in at each start and back at each completion.  The
 * call itself (call_expr, on h0 and h1) looks for no GPU buffers and, where
 * `then` is 2, falls back as the original call did without planning again. */
#define BY_HAND(name, opv, call_expr, b0, n0, t0, out0, b1, n1, t1, out1)                   \
    do {                                                                                     \
        mirror_t mm_[2] = {{0}};                                                             \
        int out_[2] = {(out0), (out1)};                                                      \
        void *h0 = NULL, *h1 = NULL;                                                         \
        ompi_request_t *inner_ = NULL;                                                       \
        char name_[64];                                                                      \
        TRACE(10, "%s on GPU buffers through host copies: %s", mpi_name(name_, name, mode),  \
              why);                                                                          \
        int rc_ = coll_tacos_mirror(m, &mm_[0], b0, n0, t0, mode == PERSISTENT, &h0);        \
        if (rc_ == OMPI_SUCCESS)                                                             \
            rc_ = coll_tacos_mirror(m, &mm_[1], b1, n1, t1, mode == PERSISTENT, &h1);        \
        if (rc_ == OMPI_SUCCESS) {                                                           \
            m->by_hand = then, m->by_hand_why = why;                                         \
            rc_ = call_expr;                                                                 \
            m->by_hand = 0;                                                                  \
        }                                                                                    \
        if (rc_ == OMPI_SUCCESS && mode != BLOCKING)                                         \
            return coll_tacos_launch_by_hand(m, comm, inner_, mm_, out_, 2,                  \
                                             (b0) && (b0) != MPI_IN_PLACE ? (t0) : NULL,     \
                                             (b1) && (b1) != MPI_IN_PLACE ? (t1) : NULL,     \
                                             opv,                                            \
                                             mode == PERSISTENT, request);                   \
        int back0_ = coll_tacos_unmirror(m, &mm_[0], (out0) && rc_ == OMPI_SUCCESS);         \
        int back1_ = coll_tacos_unmirror(m, &mm_[1], (out1) && rc_ == OMPI_SUCCESS);         \
        return rc_ != OMPI_SUCCESS ? rc_ : back0_ != OMPI_SUCCESS ? back0_ : back1_;         \
    } while (0)

/* The call on host copies, in the original call's mode (its request in inner_). */
#define HOST(name, ...) name(__VA_ARGS__, &m->super, mode, info, mode == BLOCKING ? NULL : &inner_)

/* Runs plan p in the call's mode. */
#define RUN(m, p, a, t0, t1)                                                                 \
    (mode == BLOCKING ? tacos_run((m)->core, p, &call, a)                                    \
                      : coll_tacos_launch(m, p, &call, a, t0, t1, mode == PERSISTENT, request))

static int allreduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, MOD,
                     MODE_ARGS);
static int allgather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                     DT *rdtype, COMM, MOD, MODE_ARGS);
static int alltoall(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                    DT *rdtype, COMM, MOD, MODE_ARGS);
static int allgatherv(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts,
                      DSPS displs, DT *rdtype, COMM, MOD, MODE_ARGS);
static int bcast(void *buf, CNT count, DT *dtype, int root, COMM, MOD, MODE_ARGS);
static int gather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype,
                  int root, COMM, MOD, MODE_ARGS);
static int scatter(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype,
                   int root, COMM, MOD, MODE_ARGS);
static int reduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM, MOD,
                  MODE_ARGS);
static int reduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP, COMM,
                                MOD, MODE_ARGS);
static int reduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP, COMM,
                          MOD, MODE_ARGS);

/* The ranks a rank's buffers hold blocks for: on an intercommunicator the remote group's. */
static size_t peers(struct ompi_communicator_t *comm)
{
    return (size_t)(OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm));
}

#define BY_HAND_ARGS                                                                         \
    mca_coll_tacos_module_t *m, call_mode_t mode, INFO, REQ, const char *why, int then

static int by_hand_allreduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT count, DT *dtype, OP,
                             COMM)
{
    BY_HAND("Allreduce", op, HOST(allreduce, h0, h1, count, dtype, op, comm), sbuf, count, dtype, 0,
            rbuf, count, dtype, 1);
}

static int by_hand_allgather(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                             CNT rcount, DT *rdtype, COMM)
{
    size_t n = peers(comm);
    BY_HAND("Allgather", NULL, HOST(allgather, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf,
            scount, sdtype, 0, rbuf, (size_t)rcount * n, rdtype, 1);
}

static int by_hand_alltoall(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                            CNT rcount, DT *rdtype, COMM)
{
    size_t n = peers(comm);
    BY_HAND("Alltoall", NULL, HOST(alltoall, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf,
            (size_t)scount * n, sdtype, 0, rbuf, (size_t)rcount * n, rdtype, 1);
}

static int by_hand_allgatherv(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                              CNTS rcounts, DSPS displs, DT *rdtype, COMM)
{
    size_t end = 0; /* the receive buffer's elements up to the last block's end */
    for (int r = 0; r < (int)peers(comm); r++) {
        if (DSP_AT(displs, r) < 0)
            return unserved("Allgatherv", mode, "a negative displacement", "");
        if (CNT_AT(rcounts, r) && (size_t)DSP_AT(displs, r) + CNT_AT(rcounts, r) > end)
            end = (size_t)DSP_AT(displs, r) + CNT_AT(rcounts, r);
    }
    BY_HAND("Allgatherv", NULL,
            HOST(allgatherv, h0, scount, sdtype, h1, rcounts, displs, rdtype, comm), sbuf,
            scount, sdtype, 0, rbuf, end, rdtype, 1);
}

static int by_hand_bcast(BY_HAND_ARGS, void *buf, CNT count, DT *dtype, int root, COMM)
{
    int inter = OMPI_COMM_IS_INTER(comm), at_root = inter ? root == MPI_ROOT
                                                          : ompi_comm_rank(comm) == root;
    void *mine = inter && root == MPI_PROC_NULL ? NULL : buf; /* no data on that side */
    BY_HAND("Bcast", NULL, HOST(bcast, mine ? h0 : buf, count, dtype, root, comm), mine, count,
            dtype, !at_root, NULL, 0, dtype, 0);
}

/* Gather and Scatter: which side of the call this rank is on. */
typedef struct {
    int at_root; /* the root (MPI_ROOT on an intercommunicator) */
    int sends;   /* holds a block to send (Gather) or receive (Scatter): not the root's side */
} rooted_side_t;

static rooted_side_t side_of(struct ompi_communicator_t *comm, int root)
{
    if (OMPI_COMM_IS_INTER(comm))
        return (rooted_side_t){root == MPI_ROOT, root != MPI_ROOT && root != MPI_PROC_NULL};
    return (rooted_side_t){ompi_comm_rank(comm) == root, 1};
}

static int by_hand_gather(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                          CNT rcount, DT *rdtype, int root, COMM)
{
    rooted_side_t s = side_of(comm, root);
    const void *in = s.sends ? sbuf : NULL;
    void *out = s.at_root ? rbuf : NULL;
    BY_HAND("Gather", NULL,
            HOST(gather, in ? h0 : sbuf, scount, sdtype, out ? h1 : rbuf, rcount, rdtype, root,
                 comm),
            in, scount, sdtype, 0, out, (size_t)rcount * peers(comm), rdtype, 1);
}

static int by_hand_scatter(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                           CNT rcount, DT *rdtype, int root, COMM)
{
    rooted_side_t s = side_of(comm, root);
    const void *in = s.at_root ? sbuf : NULL;
    void *out = s.sends ? rbuf : NULL;
    BY_HAND("Scatter", NULL,
            HOST(scatter, in ? h0 : sbuf, scount, sdtype, out ? h1 : rbuf, rcount, rdtype, root,
                 comm),
            in, (size_t)scount * peers(comm), sdtype, 0, out, rcount, rdtype, 1);
}

static int by_hand_reduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT count, DT *dtype, OP,
                          int root, COMM)
{
    int inter = OMPI_COMM_IS_INTER(comm), at_root = inter ? root == MPI_ROOT
                                                          : ompi_comm_rank(comm) == root;
    const void *in = inter && (root == MPI_ROOT || root == MPI_PROC_NULL) ? NULL : sbuf;
    BY_HAND("Reduce", op, HOST(reduce, in ? h0 : sbuf, at_root ? h1 : rbuf, count, dtype, op, root, comm),
            in, count, dtype, 0, at_root ? rbuf : NULL, count, dtype, 1); /* rbuf: the root's */
}

static int by_hand_reduce_scatter_block(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT rcount,
                                        DT *dtype, OP, COMM)
{
    size_t all = (size_t)rcount * (size_t)ompi_comm_size(comm); /* n x rcount, n the local group's size */
    BY_HAND("Reduce_scatter_block", op,
            HOST(reduce_scatter_block, h0, h1, rcount, dtype, op, comm), sbuf, all, dtype, 0,
            rbuf, sbuf == MPI_IN_PLACE ? all : (size_t)rcount, dtype, 1);
}

static int by_hand_reduce_scatter(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNTS rcounts,
                                  DT *dtype, OP, COMM)
{
    size_t all = 0;
    if (OMPI_COMM_IS_INTER(comm) && m->stage != 2) /* the input's size: the other group's counts */
        return unserved("Reduce_scatter", mode, "intercommunicator", "copy them to the host");
    if (OMPI_COMM_IS_INTER(comm)) { /* host memory taken for a GPU's (tests): as it is */
        m->by_hand = 1;
        int rc = reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, &m->super, mode, info,
                                request);
        m->by_hand = 0;
        return rc;
    }
    for (int r = 0; r < ompi_comm_size(comm); r++)
        all += CNT_AT(rcounts, r);
    BY_HAND("Reduce_scatter", op, HOST(reduce_scatter, h0, h1, rcounts, dtype, op, comm), sbuf, all,
            dtype, 0, rbuf,
            sbuf == MPI_IN_PLACE ? all : CNT_AT(rcounts, ompi_comm_rank(comm)), dtype, 1);
}

/* Collectives that only move data: the signature's bytes (MPI_BYTE units). */
static const char *view_bytes(struct ompi_datatype_t *dtype, size_t count, tacos_view_t *v,
                              pml_ctx_t *x)
{
    x->unit = &ompi_mpi_byte.dt;
    return tacos_view_bytes(count, type_size(dtype), v);
}

/* Reductions: elements of the datatype (MPI wants the same datatype on
 * every rank there, and Open MPI's predefined ops take predefined types). */
static const char *view_elements(struct ompi_datatype_t *dtype, size_t count,
                                 struct ompi_op_t *op, tacos_view_t *v, pml_ctx_t *x)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    x->unit = dtype;
    x->shift = tlb;
    return tacos_view_elements(count, type_size(dtype), ext, tlb, text, ompi_op_is_commute(op), v);
}

static int tacos_reduce_local(const void *inbuf, void *inoutbuf, CNT count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              mca_coll_base_module_t *module)
{
    (void)module;
    ompi_op_reduce(op, (void *)inbuf, inoutbuf, count, dtype);
    return OMPI_SUCCESS;
}


static int allreduce(const void *sbuf, void *rbuf, CNT count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(comm, ALLREDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    DEVICE(contiguous(sbuf, (size_t)count, dtype) && contiguous(rbuf, (size_t)count, dtype), sbuf,
           rbuf);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLREDUCE, 0, why, p, allreduce, sbuf, rbuf, count, dtype, op, comm);
    tacos_data_t s = data(sbuf, count, dtype), r = data(rbuf, count, dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r};
    return RUN(m, p, &a, dtype, NULL);
}

static int allgather(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
                     CNT rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    CALL(comm, ALLGATHER, NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    DEVICE(contiguous(sbuf, (size_t)scount, sdtype) &&
               contiguous(rbuf, (size_t)rcount * (size_t)n, rdtype),
           sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLGATHER, 0, why, p, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype,
         comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    int in_place = sbuf == MPI_IN_PLACE;
    tacos_data_t s = in_place ? (tacos_data_t){0} : data(sbuf, (size_t)scount, sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * (size_t)n, rdtype);
    tacos_args_t a = {.send = in_place ? NULL : &s, .recv = &r};
    return RUN(m, p, &a, rdtype, in_place ? NULL : sdtype);
}

static int alltoall(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
                    CNT rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    size_t n = (size_t)ompi_comm_size(comm);
    CALL(comm, ALLTOALL, NULL);
    const char *why = view_bytes(rdtype, (size_t)rcount * n, &call.v, &x);
    DEVICE(contiguous(sbuf, (size_t)scount * n, sdtype) &&
               contiguous(rbuf, (size_t)rcount * n, rdtype),
           sbuf, rbuf);
    if (x.device && !why_dev && sbuf == MPI_IN_PLACE) /* its input is packed on the host */
        why_dev = "MPI_IN_PLACE";
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLTOALL, 0, why, p, alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype,
         comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    int in_place = sbuf == MPI_IN_PLACE;
    tacos_data_t s = in_place ? (tacos_data_t){0} : data(sbuf, (size_t)scount * n, sdtype);
    tacos_data_t r = data(rbuf, (size_t)rcount * n, rdtype);
    tacos_args_t a = {.send = in_place ? NULL : &s, .recv = &r};
    return RUN(m, p, &a, rdtype, in_place ? NULL : sdtype);
}

/* Allgatherv: the Allgather schedule with blocks of the given sizes; the
 * result goes through scratch unless the blocks lie in rank order. */
static int allgatherv(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
                      CNTS rcounts, DSPS displs, struct ompi_datatype_t *rdtype,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm), in_order = 1;
    size_t total = 0;
    for (int r = 0; r < n && !OMPI_COMM_IS_INTER(comm); r++) {
        in_order &= DSP_AT(displs, r) >= 0 && (size_t)DSP_AT(displs, r) == total;
        total += CNT_AT(rcounts, r);
    }
    CALL(comm, ALLGATHERV, NULL);
    const char *why = view_bytes(rdtype, total, &call.v, &x);
    if (!why && !CNTS_FIT(rcounts, n, type_size(rdtype)))
        why = "a block of more than 2 GiB";
    DEVICE(in_order && contiguous(sbuf, (size_t)scount, sdtype) && contiguous(rbuf, total, rdtype),
           sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(m, TACOS_ALLGATHER, 0, why, p, allgatherv, sbuf, scount, sdtype, rbuf, rcounts, displs,
         rdtype, comm);
    if (!in_order && !DSPS_FIT(displs, n)) {
        opal_output(0, "coll:tacos: MPI_Allgatherv_c with displacements beyond an int on "
                       "rank %d, while the others run a schedule (coll_tacos_v_schedules)",
                    ompi_comm_rank(comm));
        return OMPI_ERR_NOT_SUPPORTED;
    }
    int in_place = sbuf == MPI_IN_PLACE, *tmp_c, *tmp_d, rc = OMPI_ERR_OUT_OF_RESOURCE;
    const int *counts = CNTS_INTS(rcounts, n, &tmp_c), *dis = DSPS_INTS(displs, n, &tmp_d);
    tacos_data_t s = in_place ? (tacos_data_t){0} : data(sbuf, (size_t)scount, sdtype);
    tacos_data_t r = data(rbuf, total, rdtype);
    tacos_args_t a = {.send = in_place ? NULL : &s, .recv = &r, .counts = counts,
                      .displs = in_order ? NULL : dis, .count_units = type_size(rdtype)};
    if (counts && dis)
        rc = RUN(m, p, &a, rdtype, in_place ? NULL : sdtype);
    free(tmp_c);
    free(tmp_d);
    return rc;
}

static int bcast(void *buf, CNT count, struct ompi_datatype_t *dtype, int root,
                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(comm, BCAST, NULL);
    const char *why = view_bytes(dtype, (size_t)count, &call.v, &x);
    DEVICE(contiguous(buf, (size_t)count, dtype),
           OMPI_COMM_IS_INTER(comm) && root == MPI_PROC_NULL ? NULL : buf);
    const tacos_plan_t *p;
    PLAN(m, TACOS_BROADCAST, root, why, p, bcast, buf, count, dtype, root, comm);
    tacos_data_t d = data(buf, count, dtype);
    tacos_args_t a = {.recv = &d, .root = root};
    return RUN(m, p, &a, dtype, NULL);
}

/* MPI_Gather (gathers) and MPI_Scatter: block r routed between rank r and
 * the root by a synthesized schedule where coll/tacos is the only
 * component or the communicator spans hosts; on one host, where a previous
 * component exists, that one (on a shared-memory switch the schedule is
 * its direct exchange: 0.85-1.14x of tuned's time at 4 ranks, 64 KiB to
 * 4 MiB).  Between hosts tuned's Gather takes one rank's block after the
 * other (linear with synchronisation), and the schedule, whose blocks
 * arrive over all the root's links at once, took 0.24-0.62 of its time
 * from 512 KiB on three shapes of the emulated cluster, 0.77-1.08 on two
 * hosts (README).  The root's side holds n blocks (Gather's receive
 * buffer, Scatter's send buffer), the other side one (MPI_IN_PLACE at the
 * root).  The call's size is the root's n blocks on every rank (MPI makes
 * the signatures agree), read from the buffers that matter on this rank;
 * no other count or datatype is read (an intercommunicator's
 * MPI_PROC_NULL side has none: a size of 0). */
static int rooted(int gathers, const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                  void *rbuf, CNT rcount, struct ompi_datatype_t *rdtype, int root,
                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    size_t n = peers(comm);
    rooted_side_t side = side_of(comm, root);
    const void *all_buf = gathers ? rbuf : sbuf, *own_buf = gathers ? sbuf : rbuf;
    size_t all_count = (size_t)(gathers ? rcount : scount) * n;
    size_t own_count = (size_t)(gathers ? scount : rcount);
    struct ompi_datatype_t *all_type = gathers ? rdtype : sdtype, *own_type = gathers ? sdtype : rdtype;
    int in_place = side.at_root && own_buf == MPI_IN_PLACE;
    CALL(comm, GATHER, NULL);
    if (!gathers)
        x.tag = MCA_COLL_BASE_TAG_SCATTER;
    const char *why = side.at_root ? view_bytes(all_type, all_count, &call.v, &x)
                      : side.sends ? view_bytes(own_type, own_count * n, &call.v, &x)
                                   : view_bytes(&ompi_mpi_byte.dt, 0, &call.v, &x);
    DEVICE((!side.sends || contiguous(own_buf, own_count, own_type)) &&
               (!side.at_root || contiguous(all_buf, all_count, all_type)),
           (gathers ? side.sends : side.at_root) ? sbuf : NULL,
           (gathers ? side.at_root : side.sends) ? rbuf : NULL);
    if (!why && !m->spans_hosts && (gathers ? HAS_PREV(m, gather) : HAS_PREV(m, scatter)))
        why = PASSED;
    const tacos_plan_t *p;
    if (gathers)
        PLAN(m, TACOS_GATHER, root, why, p, gather, sbuf, scount, sdtype, rbuf, rcount, rdtype,
             root, comm);
    else
        PLAN(m, TACOS_SCATTER, root, why, p, scatter, sbuf, scount, sdtype, rbuf, rcount, rdtype,
             root, comm);
    tacos_data_t own = in_place ? (tacos_data_t){0} : data(own_buf, own_count, own_type);
    tacos_data_t all = side.at_root ? data(all_buf, all_count, all_type) : (tacos_data_t){0};
    const tacos_data_t *o = in_place ? NULL : &own, *l = side.at_root ? &all : NULL;
    tacos_args_t a = {.send = gathers ? o : l, .recv = gathers ? l : o, .root = root};
    return RUN(m, p, &a, a.send ? sdtype : NULL, a.recv ? rdtype : NULL);
}

static int gather(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
                  CNT rcount, struct ompi_datatype_t *rdtype, int root,
                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    return rooted(1, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, mode, info,
                  request);
}

static int scatter(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
                   CNT rcount, struct ompi_datatype_t *rdtype, int root,
                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    return rooted(0, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, mode, info,
                  request);
}

static int reduce(const void *sbuf, void *rbuf, CNT count, struct ompi_datatype_t *dtype,
                  struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                  mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    CALL(comm, REDUCE, op);
    const char *why = view_elements(dtype, (size_t)count, op, &call.v, &x);
    int inter = OMPI_COMM_IS_INTER(comm), at_root = inter ? root == MPI_ROOT
                                                          : ompi_comm_rank(comm) == root;
    int sends = !inter || (root != MPI_ROOT && root != MPI_PROC_NULL);
    DEVICE(contiguous(sbuf, (size_t)count, dtype) && contiguous(rbuf, (size_t)count, dtype),
           sends ? sbuf : NULL, at_root ? rbuf : NULL); /* what matters on this rank */
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE, root, why, p, reduce, sbuf, rbuf, count, dtype, op, root, comm);
    tacos_data_t s = data(sbuf, count, dtype), r = data(rbuf, count, dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .root = root};
    return RUN(m, p, &a, dtype, NULL);
}

static int reduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                                MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    CALL(comm, REDUCE_SCATTER_BLOCK, op);
    const char *why = view_elements(dtype, (size_t)rcount * (size_t)n, op, &call.v, &x);
    DEVICE(contiguous(sbuf, (size_t)rcount * (size_t)n, dtype) &&
               contiguous(rbuf, (size_t)rcount * (size_t)n, dtype),
           sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, why, p, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op,
         comm);
    tacos_data_t s = data(sbuf, (size_t)rcount * (size_t)n, dtype),
                 r = data(rbuf, (size_t)rcount * (size_t)n, dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .each = (size_t)rcount};
    return RUN(m, p, &a, dtype, NULL);
}

static int reduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                          MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    size_t total = 0;
    for (int r = 0; r < n; r++)
        total += CNT_AT(rcounts, r);
    CALL(comm, REDUCE_SCATTER, op);
    const char *why = view_elements(dtype, total, op, &call.v, &x);
    if (!why && !CNTS_FIT(rcounts, n, type_size(dtype)))
        why = "a block of more than 2 GiB";
    DEVICE(contiguous(sbuf, total, dtype) && contiguous(rbuf, total, dtype), sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(m, TACOS_REDUCE_SCATTER, 0, why, p, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    int *tmp, rc = OMPI_ERR_OUT_OF_RESOURCE;
    const int *counts = CNTS_INTS(rcounts, n, &tmp);
    tacos_data_t s = data(sbuf, total, dtype), r = data(rbuf, total, dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .counts = counts};
    if (counts)
        rc = RUN(m, p, &a, dtype, NULL);
    free(tmp);
    return rc;
}

/* The collectives no schedule serves: the previous component's, or the
 * textbook program where there is none. */

/* MPI_Barrier: a blocking collective is also where the keys nonblocking
 * calls found unplanned get planned. */
static int barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int rc = mode == BLOCKING && !OMPI_COMM_IS_INTER(comm) ? tacos_comm_prepare(m->core)
                                                          : OMPI_SUCCESS;
    if (rc != OMPI_SUCCESS)
        return rc;
    FALLBACK(m, barrier, HAS_PREV(m, barrier) ? PASSED : "no previous component", comm);
}

/* The three slots of collective `name`: PARAMS its parameters, ARGS their names. */
#define SLOTS(name, PARAMS, ARGS)                                                            \
    static int tacos_##name(UNPAREN PARAMS, MOD)                                             \
    {                                                                                        \
        return name(UNPAREN ARGS, module, BLOCKING, NULL, NULL);                             \
    }                                                                                        \
    static int tacos_i##name(UNPAREN PARAMS, REQ, MOD)                                       \
    {                                                                                        \
        return name(UNPAREN ARGS, module, NONBLOCKING, NULL, request);                       \
    }                                                                                        \
    static int tacos_##name##_init(UNPAREN PARAMS, INFO, REQ, MOD)                           \
    {                                                                                        \
        return name(UNPAREN ARGS, module, PERSISTENT, info, request);                        \
    }

/* A call no schedule serves on GPU buffers (SIG: the buffers that matter on
 * this rank): an error, since the previous component (or the textbook
 * program) would read them as host memory; x.device says whether any is. */
#define NOT_ON_DEVICE(name, SIG)                                                             \
    const void *bufs_[] = {UNPAREN SIG};                                                     \
    pml_ctx_t x = {.device = 0};                                                             \
    coll_tacos_on_device(m, &x, bufs_, (int)(sizeof bufs_ / sizeof *bufs_));                 \
    if (x.device && !OPAL_CUDA_SUPPORT && m->stage != 2)                                     \
        return unserved(#name, mode, "not served on GPU buffers", "copy them to the host")

/* name in three modes: PARAMS the collective's parameters, ARGS the
 * names, SIG the buffers that matter on this rank */
#define PASS_THROUGH(name, PARAMS, ARGS, SIG)                                                \
    static int name(UNPAREN PARAMS, mca_coll_base_module_t *module, MODE_ARGS)               \
    {                                                                                        \
        mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;                      \
        NOT_ON_DEVICE(name, SIG);                                                            \
        FALLBACK(m, name, HAS_PREV(m, name) ? PASSED : "no previous component", UNPAREN ARGS); \
    }                                                                                        \
    SLOTS(name, PARAMS, ARGS)

/* ---- the v-variants through the routed schedules ----------------------------------- */

/* Gatherv, Scatterv, Alltoallv and Alltoallw where coll/tacos is the only
 * component and coll_tacos_v_schedules is on (blocking, on an
 * intracommunicator: not_routed; with a previous component they are its, as
 * Gather and Scatter are on one host; off, the textbook program's: the exchange below
 * costs more than the schedule saves wherever the network routes).  The
 * ranks first allgather
 * whether each can take a schedule (not on GPU buffers) and its largest
 * buffer: the size the call plans as Gather, Scatter or All-to-All of
 * (thresholds, size class: the root's whole buffer, All-to-All's largest
 * send buffer).  A schedule may forward a block through ranks that do not
 * know its size, so the ranks need every rank's `mine` (the bytes of its
 * nmine blocks, to the root or to each rank): Gatherv's and Scatterv's
 * come with that first allgather, All-to-All's rows with a second one
 * where a schedule runs.  The schedule, synthesized for equal blocks, runs
 * with these.  Returns the call's status: where no schedule serves it, 0
 * with *why set (nothing ran); where every block is empty, 0 with *why
 * NULL (nothing to move: done). */
static int routed_v(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, int tag,
                    tacos_coll_t coll, int root, const size_t *mine, int nmine, size_t largest,
                    const tacos_data_t *in, const tacos_data_t *out, int can, const char **why)
{
    size_t n = (size_t)ompi_comm_size(comm), rec = nmine == 1 ? 3 : 2, cannot = 0, most = 0;
    size_t *all = malloc(n * (rec + (size_t)nmine) * sizeof *all), *sizes = all + n * rec;
    if (!all)
        return OMPI_ERR_OUT_OF_RESOURCE;
    size_t first[3] = {!can, largest, mine[0]};
    int rc = core_allgather(m, first, all, rec * sizeof *all);
    for (size_t r = 0; r < n; r++) {
        cannot |= all[r * rec];
        most = all[r * rec + 1] > most ? all[r * rec + 1] : most;
        if (rec == 3)
            sizes[r] = all[r * rec + 2];
    }
    pml_ctx_t x = {.comm = comm, .tag = tag, .unit = &ompi_mpi_byte.dt};
    tacos_call_t call;
    coll_tacos_call_init(&call, &x);
    const tacos_plan_t *p = NULL;
    const char *cannot_why = cannot ? "no previous component; GPU buffers on a rank"
                                    : view_bytes(&ompi_mpi_byte.dt, most, &call.v, &x);
    *why = cannot_why;
    if (rc == OMPI_SUCCESS)
        rc = tacos_comm_plan_call(m->core, 1, coll, root, most, why, &p);
    if (rc == OMPI_SUCCESS && p && rec == 2) {
        rc = core_allgather(m, mine, sizes, (size_t)nmine * sizeof *sizes);
        /* that allgather may have planned a size of its own and evicted the
         * cache entry p points to: plan again (every rank alike) */
        *why = cannot_why, p = NULL;
        if (rc == OMPI_SUCCESS)
            rc = tacos_comm_plan_call(m->core, 1, coll, root, most, why, &p);
    }
    if (rc == OMPI_SUCCESS && p) {
        tacos_args_t a = {.root = root, .sizes = sizes, .in = in, .out = out};
        rc = tacos_run(m->core, p, &call, &a);
    }
    if (p)
        *why = NULL; /* it ran (or failed) */
    free(all);
    return rc;
}

/* Why a v-variant does not go through routed_v, or NULL; *rc: the status
 * of the settings' agreement (the first time, a collective). */
static const char *not_routed(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                              call_mode_t mode, int has_prev, int *rc)
{
    const char *why = NULL;
    *rc = OMPI_SUCCESS;
    if (has_prev || mode != BLOCKING || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) == 1)
        return has_prev                   ? PASSED
               : mode != BLOCKING         ? "no previous component; nonblocking"
               : OMPI_COMM_IS_INTER(comm) ? "no previous component; intercommunicator"
                                          : "no previous component; one rank";
    *rc = tacos_comm_v_schedules(m->core, &why);
    return why; /* the core's: the last such reason stays valid until the next call */
}

/* The blocks of `counts` x dtype at `displs` extents into buf (or, with a
 * datatype per block, types, at displs bytes); their bytes in bytes[]
 * (unless NULL) and in all. */
static size_t blocks_of(tacos_data_t *b, int n, const void *buf, CNTS counts,
                        DSPS displs, DT *dtype, DT *const *types, size_t *bytes)
{
    size_t all = 0;
    for (int i = 0; i < n; i++) {
        DT *t = types ? types[i] : dtype;
        size_t one = CNT_AT(counts, i) * type_size(t);
        b[i] = data(buf, CNT_AT(counts, i), t);
        b[i].buf = (char *)buf + (types ? DSP_AT(displs, i) : DSP_AT(displs, i) * b[i].extent);
        if (bytes)
            bytes[i] = one;
        all += one;
    }
    return all;
}

/* Gatherv (coll TACOS_GATHER) and Scatterv: the root's side is n blocks
 * (counts, displs, ltype at lbuf), the other side's one (this rank's:
 * ocount x otype at obuf, MPI_IN_PLACE at the root). */
static int rooted_v(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, int tag,
                    tacos_coll_t coll, int root, const void *lbuf, CNTS counts,
                    DSPS displs, DT *ltype, const void *obuf, CNT ocount, DT *otype,
                    int device, const char **why)
{
    int n = ompi_comm_size(comm), at_root = ompi_comm_rank(comm) == root;
    int in_place = at_root && obuf == MPI_IN_PLACE;
    tacos_data_t one = in_place ? (tacos_data_t){0} : data(obuf, (size_t)ocount, otype);
    tacos_data_t *list = at_root ? malloc((size_t)n * sizeof *list) : NULL;
    if (at_root && !list)
        return OMPI_ERR_OUT_OF_RESOURCE;
    size_t bytes = in_place ? CNT_AT(counts, root) * type_size(ltype)
                            : (size_t)ocount * type_size(otype);
    size_t largest = list ? blocks_of(list, n, lbuf, counts, displs, ltype, NULL, NULL) : bytes;
    const tacos_data_t *side = in_place ? NULL : &one;
    int gather = coll == TACOS_GATHER;
    int rc = routed_v(m, comm, tag, coll, root, &bytes, 1, largest, gather ? side : list,
                      gather ? list : side, !device, why);
    free(list);
    return rc;
}

/* Alltoallv and Alltoallw (types: a datatype per block, displacements in
 * bytes); MPI_IN_PLACE goes to the textbook program (on every rank: MPI
 * wants it on all or none). */
static int alltoall_v(mca_coll_tacos_module_t *m, int tag, const void *sbuf, CNTS scounts,
                      DSPS sdispls, DT *sdtype, DT *const *stypes, void *rbuf,
                      CNTS rcounts, DSPS rdispls, DT *rdtype, DT *const *rtypes,
                      COMM, int device, const char **why)
{
    int n = ompi_comm_size(comm);
    if (sbuf == MPI_IN_PLACE)
        return *why = "no previous component; MPI_IN_PLACE", OMPI_SUCCESS;
    tacos_data_t *b = malloc(2 * (size_t)n * sizeof *b);
    size_t *bytes = malloc((size_t)n * sizeof *bytes);
    if (!b || !bytes) {
        free(b);
        free(bytes);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    size_t largest = blocks_of(b, n, sbuf, scounts, sdispls, sdtype, stypes, bytes);
    blocks_of(b + n, n, rbuf, rcounts, rdispls, rdtype, rtypes, NULL);
    int rc = routed_v(m, comm, tag, TACOS_ALLTOALL, 0, bytes, n, largest, b, b + n, !device,
                      why);
    free(b);
    free(bytes);
    return rc;
}

/* A v-variant in three modes: through a schedule where `routed` (a call
 * setting why where none serves it) runs one, else the previous component
 * or the textbook program (PARAMS, ARGS, SIG as for PASS_THROUGH). */
#define V_VARIANT(name, PARAMS, ARGS, SIG, routed)                                           \
    static int name(UNPAREN PARAMS, mca_coll_base_module_t *module, MODE_ARGS)               \
    {                                                                                        \
        mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;                      \
        NOT_ON_DEVICE(name, SIG);                                                            \
        int rc_;                                                                             \
        const char *why = not_routed(m, comm, mode, HAS_PREV(m, name), &rc_);                \
        if (rc_ != OMPI_SUCCESS)                                                             \
            return rc_;                                                                      \
        if (!why) {                                                                          \
            int rc = routed;                                                                 \
            if (rc != OMPI_SUCCESS || !why)                                                  \
                return rc;                                                                   \
        }                                                                                    \
        FALLBACK(m, name, why, UNPAREN ARGS);                                                \
    }                                                                                        \
    SLOTS(name, PARAMS, ARGS)

V_VARIANT(gatherv, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts,
                    DSPS displs, DT *rdtype, int root, COMM),
          (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm),
          (sbuf, OMPI_COMM_IS_INTER(comm) || ompi_comm_rank(comm) == root ? rbuf : NULL),
          rooted_v(m, comm, MCA_COLL_BASE_TAG_GATHERV, TACOS_GATHER, root, rbuf, rcounts, displs,
                   rdtype, sbuf, scount, sdtype, x.device, &why))
V_VARIANT(scatterv, (const void *sbuf, CNTS scounts, DSPS displs, DT *sdtype,
                     void *rbuf, CNT rcount, DT *rdtype, int root, COMM),
          (sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm),
          (OMPI_COMM_IS_INTER(comm) || ompi_comm_rank(comm) == root ? sbuf : NULL, rbuf),
          rooted_v(m, comm, MCA_COLL_BASE_TAG_SCATTERV, TACOS_SCATTER, root, sbuf, scounts,
                   displs, sdtype, rbuf, rcount, rdtype, x.device, &why))
V_VARIANT(alltoallv, (const void *sbuf, CNTS scounts, DSPS sdispls, DT *sdtype,
                      void *rbuf, CNTS rcounts, DSPS rdispls, DT *rdtype, COMM),
          (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm), (sbuf, rbuf),
          alltoall_v(m, MCA_COLL_BASE_TAG_ALLTOALLV, sbuf, scounts, sdispls, sdtype, NULL, rbuf,
                     rcounts, rdispls, rdtype, NULL, comm, x.device, &why))
V_VARIANT(alltoallw, (const void *sbuf, CNTS scounts, DSPS sdispls,
                      DT *const *sdtypes, void *rbuf, CNTS rcounts, DSPS rdispls,
                      DT *const *rdtypes, COMM),
          (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm), (sbuf, rbuf),
          alltoall_v(m, MCA_COLL_BASE_TAG_ALLTOALLW, sbuf, scounts, sdispls, NULL, sdtypes, rbuf,
                     rcounts, rdispls, NULL, rdtypes, comm, x.device, &why))

PASS_THROUGH(scan, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM),
             (sbuf, rbuf, count, dtype, op, comm),
             (sbuf, rbuf))
PASS_THROUGH(exscan, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM),
             (sbuf, rbuf, count, dtype, op, comm),
             (sbuf, rbuf))
PASS_THROUGH(neighbor_allgather, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                                  CNT rcount, DT *rdtype, COMM),
             (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm),
             (sbuf, rbuf))
PASS_THROUGH(neighbor_allgatherv, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                                   CNTS rcounts, DSPS displs, DT *rdtype, COMM),
             (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm),
             (sbuf, rbuf))
PASS_THROUGH(neighbor_alltoall, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                                 CNT rcount, DT *rdtype, COMM),
             (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm),
             (sbuf, rbuf))
PASS_THROUGH(neighbor_alltoallv, (const void *sbuf, CNTS scounts, DSPS sdispls,
                                  DT *sdtype, void *rbuf, CNTS rcounts,
                                  DSPS rdispls, DT *rdtype, COMM),
             (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm),
             (sbuf, rbuf))
PASS_THROUGH(neighbor_alltoallw, (const void *sbuf, CNTS scounts, BDSPS sdispls,
                                  DT *const *sdtypes, void *rbuf, CNTS rcounts,
                                  BDSPS rdispls, DT *const *rdtypes, COMM),
             (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm),
             (sbuf, rbuf))

/* ---- the slots: each collective in three modes ------------------------------------ */

#define B BLOCKING, NULL, NULL
#define NB NONBLOCKING, NULL, request
#define P PERSISTENT, info, request

static int tacos_allreduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, MOD)
{ return allreduce(sbuf, rbuf, count, dtype, op, comm, module, B); }
static int tacos_iallreduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, REQ, MOD)
{ return allreduce(sbuf, rbuf, count, dtype, op, comm, module, NB); }
static int tacos_allreduce_init(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM, INFO,
                                REQ, MOD)
{ return allreduce(sbuf, rbuf, count, dtype, op, comm, module, P); }

static int tacos_allgather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                             DT *rdtype, COMM, MOD)
{ return allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, B); }
static int tacos_iallgather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                            DT *rdtype, COMM, REQ, MOD)
{ return allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, NB); }
static int tacos_allgather_init(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                                DT *rdtype, COMM, INFO, REQ, MOD)
{ return allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, P); }

static int tacos_alltoall(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                          DT *rdtype, COMM, MOD)
{ return alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, B); }
static int tacos_ialltoall(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                           DT *rdtype, COMM, REQ, MOD)
{ return alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, NB); }
static int tacos_alltoall_init(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                               DT *rdtype, COMM, INFO, REQ, MOD)
{ return alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module, P); }

static int tacos_barrier(COMM, MOD) { return barrier(comm, module, B); }
static int tacos_ibarrier(COMM, REQ, MOD) { return barrier(comm, module, NB); }
static int tacos_barrier_init(COMM, INFO, REQ, MOD) { return barrier(comm, module, P); }

static int tacos_allgatherv(const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                            CNTS rcounts, DSPS displs, DT *rdtype, COMM, MOD)
{ return allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, module, B); }
static int tacos_iallgatherv(const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                             CNTS rcounts, DSPS displs, DT *rdtype, COMM, REQ, MOD)
{ return allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, module, NB); }
static int tacos_allgatherv_init(const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                                 CNTS rcounts, DSPS displs, DT *rdtype, COMM, INFO,
                                 REQ, MOD)
{ return allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, module, P); }

static int tacos_bcast(void *buf, CNT count, DT *dtype, int root, COMM, MOD)
{ return bcast(buf, count, dtype, root, comm, module, B); }
static int tacos_ibcast(void *buf, CNT count, DT *dtype, int root, COMM, REQ, MOD)
{ return bcast(buf, count, dtype, root, comm, module, NB); }
static int tacos_bcast_init(void *buf, CNT count, DT *dtype, int root, COMM, INFO, REQ, MOD)
{ return bcast(buf, count, dtype, root, comm, module, P); }

static int tacos_gather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                        DT *rdtype, int root, COMM, MOD)
{ return gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, B); }
static int tacos_igather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                         DT *rdtype, int root, COMM, REQ, MOD)
{ return gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, NB); }
static int tacos_gather_init(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                             DT *rdtype, int root, COMM, INFO, REQ, MOD)
{ return gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, P); }

static int tacos_scatter(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                         DT *rdtype, int root, COMM, MOD)
{ return scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, B); }
static int tacos_iscatter(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                          DT *rdtype, int root, COMM, REQ, MOD)
{ return scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, NB); }
static int tacos_scatter_init(const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount,
                              DT *rdtype, int root, COMM, INFO, REQ, MOD)
{ return scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, P); }

static int tacos_reduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM,
                          MOD)
{ return reduce(sbuf, rbuf, count, dtype, op, root, comm, module, B); }
static int tacos_ireduce(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM,
                         REQ, MOD)
{ return reduce(sbuf, rbuf, count, dtype, op, root, comm, module, NB); }
static int tacos_reduce_init(const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root,
                             COMM, INFO, REQ, MOD)
{ return reduce(sbuf, rbuf, count, dtype, op, root, comm, module, P); }

static int tacos_reduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP,
                                        COMM, MOD)
{ return reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module, B); }
static int tacos_ireduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP,
                                       COMM, REQ, MOD)
{ return reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module, NB); }
static int tacos_reduce_scatter_block_init(const void *sbuf, void *rbuf, CNT rcount, DT *dtype,
                                           OP, COMM, INFO, REQ, MOD)
{ return reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module, P); }

static int tacos_reduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP,
                                  COMM, MOD)
{ return reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module, B); }
static int tacos_ireduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP,
                                 COMM, REQ, MOD)
{ return reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module, NB); }
static int tacos_reduce_scatter_init(const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype,
                                     OP, COMM, INFO, REQ, MOD)
{ return reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module, P); }

