/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Module: the Open MPI side of a communicator's coll/tacos state (the core's
 * tacos_comm_t does the rest): the previous component's functions, saved
 * (and on Open MPI 6 put back) around ours, the core's callbacks over them
 * and the PML, and the module's slots, which the collectives' files fill
 * (coll_tacos_driver.h).
 */
#include "ompi_config.h"

#include <string.h>
#include <time.h>

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "coll_tacos_driver.h"
#include "tacos_probe.h"

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
    coll_tacos_drop_captured(m); /* (one a call that failed after PLAN left) */
    tacos_comm_free(m->core); /* its staging and device work space too */
    free(m->measure);
    free(m->setup);
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
        return m->super.coll_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_uint64_t.dt,
                                       &ompi_mpi_op_max.op, m->comm, &m->super);
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

int coll_tacos_core_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    mca_coll_tacos_module_t *m = ctx;
    if (!m->prev_allgather)
        return m->super.coll_allgather(mine, (int)bytes, &ompi_mpi_byte.dt, all, (int)bytes,
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
                            .allgather = coll_tacos_core_allgather,
                            .agree_in_request = 1, /* (coll_tacos_launch) */
                            .log = core_log};
    /* the measurements' messages: the pieces schedules send; the tag is
     * barrier's: coll/tacos serves no barrier and every rank is inside the
     * core's setup, so nothing else can match it */
    pml_ctx_t *mx = m->measure = calloc(1, sizeof *mx);
    pml_ctx_t *sx = m->setup = calloc(1, sizeof *sx);
    if (!mx || !sx) {
        OBJ_RELEASE(m);
        free(on_host);
        return NULL;
    }
    *mx = (pml_ctx_t){.comm = comm, .tag = MCA_COLL_BASE_TAG_BARRIER, .unit = &ompi_mpi_byte.dt};
    tacos_call_t measure;
    coll_tacos_call_init(&measure, mx);
    ops.measure = measure.tp;
    /* a nonblocking call's exchange of settings and probe records (the
     * core's setup.c): a tag of its own, outside every operation's */
    *sx = (pml_ctx_t){.comm = comm, .tag = coll_tacos_setup_tag(), .unit = &ompi_mpi_byte.dt};
    tacos_call_t setup;
    coll_tacos_call_init(&setup, sx);
    ops.setup = setup.tp;
    ops.setup_error = setup.error;
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
    coll_tacos_fill_reductions(&m->super);
    coll_tacos_fill_movement(&m->super);
    coll_tacos_fill_vvariants(&m->super);
    coll_tacos_fill_passed(&m->super);
    return &m->super;
}
