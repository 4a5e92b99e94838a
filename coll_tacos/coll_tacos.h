/* The Open MPI coll component "tacos": collectives through schedules
 * synthesized for the communicator's topology. */
#ifndef MCA_COLL_TACOS_H
#define MCA_COLL_TACOS_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/coll/coll.h"

#include "exec.h"
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
    size_t scratch_max;    /* scratch kept between calls, whole process */
    bool deterministic;    /* combine reductions in program order */
} mca_coll_tacos_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_tacos_component_t mca_coll_tacos_component;

/* A synthesized program, cached per communicator and key, with what every
 * call of it needs (made when the ranks agree on it, so a call allocates
 * nothing but scratch). */
typedef struct {
    tacos_coll_t coll;
    int root, k, size_class;
    tacos_prog_t *prog;  /* NULL: this key falls back (reason logged once) */
    tacos_exec_t *exec;  /* the executor's state */
    size_t *off;         /* block offsets, npus + 1 */
} mca_coll_tacos_entry_t;


/* The parameters that decide which messages a rank sends, captured when the
 * communicator is created and agreed by every rank at its first collective
 * (MPMD app contexts, per-node files and MPI_T writes can make them differ). */
typedef struct {
    int enable, min_bytes, rooted_min_bytes, chunks, seed, trials, unwind_degree;
    int probe, calibrate, measure, cache_size;
    int deterministic; /* local: combine order only, no message changes */
    char *topo_file; /* NULL: probe */
} mca_coll_tacos_settings_t;

typedef struct {
    mca_coll_base_module_t super;
    /* the previous component's functions, used for fallback and setup */
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
    mca_coll_base_module_allgather_fn_t prev_allgather;
    mca_coll_base_module_t *prev_allgather_module;
    mca_coll_base_module_bcast_fn_t prev_bcast;
    mca_coll_base_module_t *prev_bcast_module;
    mca_coll_base_module_reduce_fn_t prev_reduce;
    mca_coll_base_module_t *prev_reduce_module;
    mca_coll_base_module_reduce_scatter_fn_t prev_reduce_scatter;
    mca_coll_base_module_t *prev_reduce_scatter_module;
    mca_coll_base_module_reduce_scatter_block_fn_t prev_reduce_scatter_block;
    mca_coll_base_module_t *prev_reduce_scatter_block_module;
    mca_coll_tacos_settings_t cfg;
    int agreed;         /* 0 not yet, 1 settings equal and enabled, -1 fall back */
    tacos_topo_t *topo; /* built at the first collective that runs a schedule */
    int topo_state;     /* 0 not yet, 1 ready, -1 unusable (fall back) */
    mca_coll_tacos_entry_t *cache; /* cfg.cache_size entries */
    int ncache, next_evict;        /* full: replace the oldest entry */
    /* set while setting up (topology, agreement): the previous component may
     * build its collectives from others (basic: allgather = gather + bcast)
     * and call back into ours, which must then fall back */
    int in_setup;
    char *scratch; /* work buffer reused across calls */
    size_t scratch_bytes;
    char *recv_scratch; /* the executor's space for arriving reductions */
    size_t recv_scratch_bytes;
} mca_coll_tacos_module_t;

OBJ_CLASS_DECLARATION(mca_coll_tacos_module_t);

mca_coll_base_module_t *mca_coll_tacos_comm_query(struct ompi_communicator_t *comm, int *priority);

/* The communicator's topology from every rank's probe record (or the
 * default model) and, across hosts, measured links; built with the previous
 * component's collectives. */
int mca_coll_tacos_probed_topology(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                                   tacos_topo_t **out);

/* Creates coll_tacos_dump_dir if missing (message once if it cannot). */
void mca_coll_tacos_dump_dir(void);

int mca_coll_tacos_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_tacos_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_tacos_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_tacos_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module);
int mca_coll_tacos_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_tacos_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module);

END_C_DECLS

#endif
