/* SPDX-License-Identifier: BSD-3-Clause */
/* The Open MPI coll component "tacos": collectives through schedules
 * synthesized for the communicator's topology. */
#ifndef MCA_COLL_TACOS_H
#define MCA_COLL_TACOS_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/coll/coll.h"

#include "coll_tacos_compat.h"

#include "params.h"
#include "tacos_comm.h"
#include "tacos_synth.h"

BEGIN_C_DECLS

typedef struct {
    tacos_coll_component_t super;
    int output;            /* opal_output stream */
    /* every parameter of the core's table (params.h): TACOS_PARAM(NAME) */
    tacos_param_value_t values[TACOS_NPARAMS];
    size_t net_piece;      /* net_piece_bytes as resolved once the PML is selected */
} mca_coll_tacos_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_tacos_component_t mca_coll_tacos_component;

/* A parameter's value: TACOS_PARAM(MIN_BYTES).i */
#define TACOS_PARAM(name) (mca_coll_tacos_component.values[TACOS_P_##name])

/* The previous component's function for a slot, and its module. */
#define TACOS_PREV(name)                                                                     \
    __typeof__(((mca_coll_base_comm_coll_t *)0)->coll_##name) prev_##name;                   \
    mca_coll_base_module_t *prev_##name##_module

/* Every slot coll/tacos fills: blocking, nonblocking, persistent (and
 * reduce_local, which needs no previous one). */
#define TACOS_SLOTS(X)                                                                       \
    X(allreduce) X(allgather) X(bcast) X(reduce) X(reduce_scatter) X(reduce_scatter_block)  \
    X(iallreduce) X(iallgather) X(ibcast) X(ireduce) X(ireduce_scatter)                      \
    X(ireduce_scatter_block) X(allreduce_init) X(allgather_init) X(bcast_init)               \
    X(reduce_init) X(reduce_scatter_init) X(reduce_scatter_block_init)                       \
    X(alltoall) X(ialltoall) X(alltoall_init) TACOS_PASSED(X, barrier) TACOS_PASSED(X, gather)  \
    TACOS_PASSED(X, gatherv) TACOS_PASSED(X, scatter) TACOS_PASSED(X, scatterv)              \
    TACOS_PASSED(X, allgatherv) TACOS_PASSED(X, alltoallv) TACOS_PASSED(X, alltoallw)        \
    TACOS_PASSED(X, scan) TACOS_PASSED(X, exscan) TACOS_PASSED(X, neighbor_allgather)          \
    TACOS_PASSED(X, neighbor_allgatherv) TACOS_PASSED(X, neighbor_alltoall)                  \
    TACOS_PASSED(X, neighbor_alltoallv) TACOS_PASSED(X, neighbor_alltoallw)
#define TACOS_PASSED(X, name) X(name) X(i##name) X(name##_init)

#define TACOS_PREV_FIELD(name) TACOS_PREV(name);

typedef struct {
    mca_coll_base_module_t super;
    /* the previous component's functions, used for fallback and setup */
    TACOS_SLOTS(TACOS_PREV_FIELD)
#if TACOS_INSTALLS
    TACOS_PREV(reduce_local); /* Open MPI 6: put back when disabled */
#endif
    struct ompi_communicator_t *comm;
    tacos_comm_t *core; /* settings, topology, schedules, scratch: the MPI-neutral part */
    void *measure;      /* the measurements' transport context (a pml_ctx_t) */
    void *setup;        /* the in-request setup's transport context (a pml_ctx_t) */
    unsigned nonblocking_seq; /* nonblocking calls made: their tags */
    unsigned persistent_seq;  /* persistent calls made: their tags */
    void *stream;             /* blocking calls on GPU buffers: a stream of the CUDA component */
    int stage;                /* coll_tacos_stage when it was created */
    size_t stage_min_bytes;   /* coll_tacos_stage_min_bytes when it was created */
    int by_hand;              /* in a call on host copies: 1 plan it, 2 it falls back (why) */
    const char *by_hand_why;
    /* a nonblocking call of a plan not agreed yet: while capture, its
     * textbook program is made into captured (coll_tacos_launch_list), the
     * list that runs where the ranks do not all have the schedule */
    int capture;
    struct mca_coll_tacos_request *captured;
    bool spans_hosts;         /* some rank on another node (the same on every rank) */
} mca_coll_tacos_module_t;

OBJ_CLASS_DECLARATION(mca_coll_tacos_module_t);

mca_coll_base_module_t *mca_coll_tacos_comm_query(struct ompi_communicator_t *comm, int *priority);

/* Progress of nonblocking and persistent operations (opal_progress). */
int mca_coll_tacos_progress(void);

END_C_DECLS

#endif
