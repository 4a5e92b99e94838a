/* The Open MPI coll component "tacos": collectives through schedules
 * synthesized for the communicator's topology. */
#ifndef MCA_COLL_TACOS_H
#define MCA_COLL_TACOS_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/coll/coll.h"

#include "tacos_comm.h"
#include "tacos_synth.h"

BEGIN_C_DECLS

typedef struct {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    bool enable;
    int verbose;
    int output; /* opal_output stream */
    char *topo_file;
    int unwind_degree;
    int chunks; /* per rank; 0 = automatic */
    int min_bytes;
    int rooted_min_bytes; /* Bcast and Reduce */
    int rooted_net_min_bytes; /* ... on communicators that span hosts */
    int gather_min_bytes; /* Gather and Scatter */
    int seed;
    int trials;
    char *dump_dir;
    bool probe;            /* hwloc/UCX probe; false: the default model */
    char *probe_hwloc_xml; /* a saved machine instead of this one */
    bool probe_gpu;        /* model each rank's GPU (NVLink) */
    char *ucx_lib;         /* libuct to dlopen; empty: no UCX */
    bool calibrate;        /* ping-pongs replace the probed α/β */
    int measure;           /* links between hosts: 0 off, 1 measured + job cache, 2 always */
    int cache_size;        /* programs kept per communicator */
    bool nonblocking;      /* MPI_I* and _init calls through schedules */
    bool v_schedules;      /* alone: Gatherv, Scatterv, Alltoallv/w through schedules */
    int net_piece_bytes;   /* largest message to another host: -1 auto, 0 no limit */
    int cuda_ipc_min_bytes; /* GPU buffers on one host: IPC from this size, -1 never */
    size_t net_piece;      /* what it is resolved to once the PML is selected */
    size_t scratch_max;    /* scratch kept between calls, whole process */
    bool deterministic;    /* combine reductions in program order */
    bool cuda;             /* look for GPU buffers (CUDA driver loaded at the first call) */
    int stage;             /* testing: 1 stage host buffers as GPU ones are, 2 take them for GPU ones */
    size_t stage_min_bytes; /* GPU buffers: smaller calls through host copies */
} mca_coll_tacos_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_tacos_component_t mca_coll_tacos_component;

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
    struct ompi_communicator_t *comm;
    tacos_comm_t *core; /* settings, topology, schedules, scratch: the MPI-neutral part */
    unsigned nonblocking_seq; /* nonblocking calls made: their tags */
    unsigned persistent_seq;  /* persistent calls made: their tags */
    void *stream;             /* blocking calls on GPU buffers: a stream of the CUDA component */
    int stage;                /* coll_tacos_stage when it was created */
    size_t stage_min_bytes;   /* coll_tacos_stage_min_bytes when it was created */
    int by_hand;              /* in a call on host copies: 1 plan it, 2 it falls back (why) */
    const char *by_hand_why;
    bool spans_hosts;         /* some rank on another node (the same on every rank) */
} mca_coll_tacos_module_t;

OBJ_CLASS_DECLARATION(mca_coll_tacos_module_t);

mca_coll_base_module_t *mca_coll_tacos_comm_query(struct ompi_communicator_t *comm, int *priority);

/* Progress of nonblocking and persistent operations (opal_progress). */
int mca_coll_tacos_progress(void);

END_C_DECLS

#endif
