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
    struct ompi_communicator_t *comm;
    tacos_comm_t *core; /* settings, topology, schedules, scratch: the MPI-neutral part */
} mca_coll_tacos_module_t;

OBJ_CLASS_DECLARATION(mca_coll_tacos_module_t);

mca_coll_base_module_t *mca_coll_tacos_comm_query(struct ompi_communicator_t *comm, int *priority);

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
