/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The large-count forms of libtacos-pmpi (MPI-4: MPI_X_c, MPI_Ix_c,
 * MPI_X_init_c).  Those of the collectives it serves are served by the int
 * forms (drivers.c) where the call fits them, decided from the
 * signature's size (equal on every rank, whatever (count, datatype) each
 * passes: one rank's MPI_Ibcast_c may match another's MPI_Ibcast, which a
 * schedule may serve); larger calls go to MPICH's own on every rank.
 */
#include <limits.h>
#include <stdlib.h>

#include <mpi.h>

#include "drivers.h"
#include "tacos_pmpi.h"

#if MPI_VERSION >= 4
#define CBUF const void *sbuf
#define DT MPI_Datatype

static int fits_n(MPI_Count count, MPI_Count n, MPI_Datatype dtype) /* n blocks of count */
{
    MPI_Count size = 0;
    PMPI_Type_size_c(dtype, &size);
    /* no product formed before it is known to fit */
    return count >= 0 && n > 0 && count <= INT_MAX / n &&
           (size <= 0 || count * n <= INT_MAX / size);
}

static int fits(MPI_Count count, MPI_Datatype dtype)
{
    return fits_n(count, 1, dtype);
}

/* MPICH's own large-count form in the call's mode (as FALLBACK, drivers.c), never on
 * GPU buffers (b0, b1: those that matter on this rank): an error there,
 * as for intercommunicators. */
static int gpu_in_c(MPI_Comm comm, const char *name, const void *b0, const void *b1)
{
    call_ctx_t x = {.op = MPI_OP_NULL};
    const void *bufs[] = {b0, b1};
    pmpi_on_device(&x, bufs, 2);
    return x.device ? pmpi_unserved(comm, name, "a count beyond int") : MPI_SUCCESS;
}
#define MPICH_C(name, iname, b0, b1, ...)                                                    \
    (gpu_in_c(comm,                                                                          \
              mode == NONBLOCKING  ? #iname "_c"                                             \
              : mode == PERSISTENT ? #name "_init_c"                                         \
                                   : #name "_c",                                             \
              b0, b1)                                                                        \
         ? MPI_ERR_UNSUPPORTED_OPERATION                                                     \
         : IN_MODE(PMPI_##iname##_c, PMPI_##name##_init_c, __VA_ARGS__))

static int allreduce_c(CBUF, void *rbuf, MPI_Count count, DT dtype, MPI_Op op, MPI_Comm comm,
                       MODE_ARGS)
{
    return fits(count, dtype)
               ? pmpi_allreduce(sbuf, rbuf, (int)count, dtype, op, comm, mode, info, request)
               : MPICH_C(Allreduce, Iallreduce, sbuf, rbuf, sbuf, rbuf, count, dtype, op, comm);
}

static int allgather_c(CBUF, MPI_Count scount, DT sdtype, void *rbuf, MPI_Count rcount, DT rdtype,
                       MPI_Comm comm, MODE_ARGS)
{
    return fits_n(rcount, (MPI_Count)pmpi_size_of(comm), rdtype) &&
                   (sbuf == MPI_IN_PLACE || fits(scount, sdtype))
               ? pmpi_allgather(sbuf, (int)scount, sdtype, rbuf, (int)rcount, rdtype, comm, mode,
                                info, request)
               : MPICH_C(Allgather, Iallgather, sbuf, rbuf, sbuf, scount, sdtype, rbuf, rcount,
                         rdtype, comm);
}

static int alltoall_c(CBUF, MPI_Count scount, DT sdtype, void *rbuf, MPI_Count rcount, DT rdtype,
                      MPI_Comm comm, MODE_ARGS)
{
    MPI_Count n = (MPI_Count)pmpi_size_of(comm);
    return fits_n(rcount, n, rdtype) && (sbuf == MPI_IN_PLACE || fits_n(scount, n, sdtype))
               ? pmpi_alltoall(sbuf, (int)scount, sdtype, rbuf, (int)rcount, rdtype, comm, mode,
                               info, request)
               : MPICH_C(Alltoall, Ialltoall, sbuf, rbuf, sbuf, scount, sdtype, rbuf, rcount,
                         rdtype, comm);
}

static int bcast_c(void *buf, MPI_Count count, DT dtype, int root, MPI_Comm comm, MODE_ARGS)
{
    return fits(count, dtype)
               ? pmpi_bcast(buf, (int)count, dtype, root, comm, mode, info, request)
               : MPICH_C(Bcast, Ibcast, buf, NULL, buf, count, dtype, root, comm);
}

/* Gather's and Scatter's: the root's whole buffer, read where it is
 * significant (the root's n blocks, another rank's one block n times);
 * intercommunicators go to MPI (their int forms fall back too). */
static int rooted_fits(int gathers, CBUF, MPI_Count scount, DT sdtype, const void *rbuf,
                       MPI_Count rcount, DT rdtype, int root, MPI_Comm comm)
{
    int inter;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return 0;
    MPI_Count n = (MPI_Count)pmpi_size_of(comm);
    MPI_Count all = gathers ? rcount : scount, own = gathers ? scount : rcount;
    MPI_Datatype all_type = gathers ? rdtype : sdtype, own_type = gathers ? sdtype : rdtype;
    if (pmpi_rank_of(comm) != root)
        return fits_n(own, n, own_type);
    return fits_n(all, n, all_type) &&
           ((gathers ? sbuf : rbuf) == MPI_IN_PLACE || fits(own, own_type));
}

static int rooted_c(int gathers, CBUF, MPI_Count scount, DT sdtype, void *rbuf, MPI_Count rcount,
                    DT rdtype, int root, MPI_Comm comm, MODE_ARGS)
{
    int me = pmpi_rank_of(comm);
    if (rooted_fits(gathers, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm))
        return pmpi_rooted(gathers, sbuf, (int)scount, sdtype, rbuf, (int)rcount, rdtype, root,
                           comm, mode, info, request);
    if (gathers)
        return MPICH_C(Gather, Igather, sbuf, me == root ? rbuf : NULL, sbuf, scount, sdtype, rbuf,
                       rcount, rdtype, root, comm);
    return MPICH_C(Scatter, Iscatter, me == root ? sbuf : NULL, rbuf, sbuf, scount, sdtype, rbuf,
                   rcount, rdtype, root, comm);
}

static int reduce_c(CBUF, void *rbuf, MPI_Count count, DT dtype, MPI_Op op, int root,
                    MPI_Comm comm, MODE_ARGS)
{
    return fits(count, dtype)
               ? pmpi_reduce(sbuf, rbuf, (int)count, dtype, op, root, comm, mode, info, request)
               : MPICH_C(Reduce, Ireduce, sbuf, pmpi_rank_of(comm) == root ? rbuf : NULL, sbuf,
                         rbuf, count, dtype, op, root, comm);
}

static int reduce_scatter_block_c(CBUF, void *rbuf, MPI_Count rcount, DT dtype, MPI_Op op,
                                  MPI_Comm comm, MODE_ARGS)
{
    return fits_n(rcount, (MPI_Count)pmpi_size_of(comm), dtype)
               ? pmpi_reduce_scatter_block(sbuf, rbuf, (int)rcount, dtype, op, comm, mode, info,
                                           request)
               : MPICH_C(Reduce_scatter_block, Ireduce_scatter_block, sbuf, rbuf, sbuf, rbuf,
                         rcount, dtype, op, comm);
}

/* rcounts are equal on every rank: so is the decision.  The int counts
 * are freed on return: the library's schedules take them when the call is
 * made (a persistent one's too), and so do MPICH 4.0.2's
 * MPI_Ireduce_scatter and MPI_Reduce_scatter_init (checked with the counts
 * freed before the wait, under valgrind; mpi_coll_check --large-count
 * overwrites them). */
static int reduce_scatter_c(CBUF, void *rbuf, const MPI_Count rcounts[], DT dtype, MPI_Op op,
                            MPI_Comm comm, MODE_ARGS)
{
    int n = (int)pmpi_size_of(comm), *counts;
    MPI_Count total = 0;
    for (int r = 0; r < n; r++)
        total += rcounts[r] < 0 || rcounts[r] > INT_MAX ? INT_MAX + 1LL : rcounts[r];
    if (!fits(total, dtype))
        return MPICH_C(Reduce_scatter, Ireduce_scatter, sbuf, rbuf, sbuf, rbuf, rcounts, dtype, op,
                       comm);
    if (!(counts = malloc((size_t)n * sizeof *counts)))
        return pmpi_done(comm, MPI_ERR_NO_MEM);
    for (int r = 0; r < n; r++)
        counts[r] = (int)rcounts[r];
    int rc = pmpi_reduce_scatter(sbuf, rbuf, counts, dtype, op, comm, mode, info, request);
    free(counts);
    return rc;
}

/* The entry points of the forms served (ENTRY_POINTS, drivers.h). */
#define CCOUNT MPI_Count
ENTRY_POINTS(Allreduce, Iallreduce, _c, allreduce_c,
             (CBUF, void *rbuf, CCOUNT count, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf,
             count, dtype, op, comm)
ENTRY_POINTS(Allgather, Iallgather, _c, allgather_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, MPI_Comm comm),
             sbuf, scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Alltoall, Ialltoall, _c, alltoall_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, MPI_Comm comm),
             sbuf, scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Bcast, Ibcast, _c, bcast_c,
             (void *buf, CCOUNT count, DT dtype, int root, MPI_Comm comm), buf, count, dtype, root,
             comm)
ENTRY_POINTS(Reduce, Ireduce, _c, reduce_c,
             (CBUF, void *rbuf, CCOUNT count, DT dtype, MPI_Op op, int root, MPI_Comm comm), sbuf,
             rbuf, count, dtype, op, root, comm)
ENTRY_POINTS(Gather, Igather, _c, rooted_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, int root,
              MPI_Comm comm),
             1, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Scatter, Iscatter, _c, rooted_c,
             (CBUF, CCOUNT scount, DT sdtype, void *rbuf, CCOUNT rcount, DT rdtype, int root,
              MPI_Comm comm),
             0, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Reduce_scatter_block, Ireduce_scatter_block, _c, reduce_scatter_block_c,
             (CBUF, void *rbuf, CCOUNT rcount, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf,
             rcount, dtype, op, comm)
ENTRY_POINTS(Reduce_scatter, Ireduce_scatter, _c, reduce_scatter_c,
             (CBUF, void *rbuf, const CCOUNT rcounts[], DT dtype, MPI_Op op, MPI_Comm comm), sbuf,
             rbuf, rcounts, dtype, op, comm)
#undef CCOUNT

/* The large-count forms of the collectives not served (WAITED): they may
 * match the int forms on other ranks, so they are waited forms too. */
#define CCOUNTS const MPI_Count
#define CDISPLS const MPI_Aint
WAITED(Allgatherv_c, Iallgatherv_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, CCOUNTS rc[], CDISPLS d[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Gatherv_c, Igatherv_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, CCOUNTS rc[], CDISPLS d[],
        MPI_Datatype rt, int root, MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, root, comm)
WAITED(Scatterv_c, Iscatterv_c,
       (CBUF, CCOUNTS sc[], CDISPLS d[], MPI_Datatype st, void *rbuf, MPI_Count rc,
        MPI_Datatype rt, int root, MPI_Comm comm),
       sbuf, sc, d, st, rbuf, rc, rt, root, comm)
WAITED(Alltoallv_c, Ialltoallv_c,
       (CBUF, CCOUNTS sc[], CDISPLS sd[], MPI_Datatype st, void *rbuf, CCOUNTS rc[],
        CDISPLS rd[], MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED_UNLESS(IN_PLACE, Alltoallw_c, Ialltoallw_c,
              (CBUF, CCOUNTS sc[], CDISPLS sd[], const MPI_Datatype st[], void *rbuf, CCOUNTS rc[],
               CDISPLS rd[], const MPI_Datatype rt[], MPI_Comm comm),
              sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Scan_c, Iscan_c, (CBUF, void *rbuf, MPI_Count count, MPI_Datatype t, MPI_Op op,
                         MPI_Comm comm), sbuf, rbuf, count, t, op, comm)
WAITED(Exscan_c, Iexscan_c, (CBUF, void *rbuf, MPI_Count count, MPI_Datatype t, MPI_Op op,
                             MPI_Comm comm), sbuf, rbuf, count, t, op, comm)
WAITED(Neighbor_allgather_c, Ineighbor_allgather_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, MPI_Count rc, MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_allgatherv_c, Ineighbor_allgatherv_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, CCOUNTS rc[], CDISPLS d[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Neighbor_alltoall_c, Ineighbor_alltoall_c,
       (CBUF, MPI_Count sc, MPI_Datatype st, void *rbuf, MPI_Count rc, MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_alltoallv_c, Ineighbor_alltoallv_c,
       (CBUF, CCOUNTS sc[], CDISPLS sd[], MPI_Datatype st, void *rbuf, CCOUNTS rc[],
        CDISPLS rd[], MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Neighbor_alltoallw_c, Ineighbor_alltoallw_c,
       (CBUF, CCOUNTS sc[], CDISPLS sd[], const MPI_Datatype st[], void *rbuf, CCOUNTS rc[],
        CDISPLS rd[], const MPI_Datatype rt[], MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
#undef CCOUNTS
#undef CDISPLS
#undef CBUF
#undef DT
#endif
