/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives that only move data, served by schedules: Allgather,
 * Allgatherv, Alltoall, Bcast, Gather and Scatter (the signature's bytes).
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "coll_tacos_driver.h"

int coll_tacos_allgather(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
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

int coll_tacos_alltoall(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
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
int coll_tacos_allgatherv(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
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
    int in_place = sbuf == MPI_IN_PLACE, *tmp_c, rc = OMPI_ERR_OUT_OF_RESOURCE;
    const int *counts = CNTS_INTS(rcounts, n, &tmp_c);
    ptrdiff_t *dis = in_order ? NULL : malloc((size_t)n * sizeof *dis);
    for (int r = 0; dis && r < n; r++)
        dis[r] = DSP_AT(displs, r);
    tacos_data_t s = in_place ? (tacos_data_t){0} : data(sbuf, (size_t)scount, sdtype);
    tacos_data_t r = data(rbuf, total, rdtype);
    tacos_args_t a = {.send = in_place ? NULL : &s, .recv = &r, .counts = counts,
                      .displs = dis, .count_units = type_size(rdtype)};
    if (counts && (in_order || dis))
        rc = RUN(m, p, &a, rdtype, in_place ? NULL : sdtype);
    free(tmp_c);
    free(dis);
    return rc;
}

int coll_tacos_bcast(void *buf, CNT count, struct ompi_datatype_t *dtype, int root,
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

int coll_tacos_gather(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
                  CNT rcount, struct ompi_datatype_t *rdtype, int root,
                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    return rooted(1, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, mode, info,
                  request);
}

int coll_tacos_scatter(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype, void *rbuf,
                   CNT rcount, struct ompi_datatype_t *rdtype, int root,
                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module, MODE_ARGS)
{
    return rooted(0, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm, module, mode, info,
                  request);
}

SLOTS(allgather, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype, COMM),
      (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm))
SLOTS(allgatherv, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts, DSPS displs,
                   DT *rdtype, COMM),
      (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm))
SLOTS(alltoall, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype, COMM),
      (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm))
SLOTS(bcast, (void *buf, CNT count, DT *dtype, int root, COMM), (buf, count, dtype, root, comm))
SLOTS(gather, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype,
               int root, COMM),
      (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm))
SLOTS(scatter, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNT rcount, DT *rdtype,
                int root, COMM),
      (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm))

void coll_tacos_fill_movement(mca_coll_base_module_t *s)
{
    FILL(s, allgather) FILL(s, allgatherv) FILL(s, alltoall) FILL(s, bcast) FILL(s, gather)
    FILL(s, scatter)
}
