/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reductions schedules serve: Allreduce, Reduce, Reduce_scatter_block,
 * Reduce_scatter (elements of the call's datatype, combined with Open MPI's
 * op engine), and reduce_local.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "coll_tacos_driver.h"

int coll_tacos_allreduce(const void *sbuf, void *rbuf, CNT count, struct ompi_datatype_t *dtype,
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

int coll_tacos_reduce(const void *sbuf, void *rbuf, CNT count, struct ompi_datatype_t *dtype,
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

int coll_tacos_reduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount,
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

int coll_tacos_reduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts,
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

static int tacos_reduce_local(const void *inbuf, void *inoutbuf, CNT count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              mca_coll_base_module_t *module)
{
    (void)module;
    ompi_op_reduce(op, (void *)inbuf, inoutbuf, count, dtype);
    return OMPI_SUCCESS;
}

SLOTS(allreduce, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, COMM),
      (sbuf, rbuf, count, dtype, op, comm))
SLOTS(reduce, (const void *sbuf, void *rbuf, CNT count, DT *dtype, OP, int root, COMM),
      (sbuf, rbuf, count, dtype, op, root, comm))
SLOTS(reduce_scatter_block, (const void *sbuf, void *rbuf, CNT rcount, DT *dtype, OP, COMM),
      (sbuf, rbuf, rcount, dtype, op, comm))
SLOTS(reduce_scatter, (const void *sbuf, void *rbuf, CNTS rcounts, DT *dtype, OP, COMM),
      (sbuf, rbuf, rcounts, dtype, op, comm))

void coll_tacos_fill_reductions(mca_coll_base_module_t *s)
{
    FILL(s, allreduce) FILL(s, reduce) FILL(s, reduce_scatter_block) FILL(s, reduce_scatter)
    s->coll_reduce_local = tacos_reduce_local;
}
