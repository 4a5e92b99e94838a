/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives no schedule serves: Barrier (where nonblocking calls'
 * sizes get planned), Scan, Exscan and the neighbourhood collectives go to
 * the previous component, or the textbook program where there is none.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "coll_tacos_driver.h"

/* MPI_Barrier: a blocking collective is also where the keys nonblocking
 * calls found unplanned get planned. */
static int coll_tacos_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                              MODE_ARGS)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int rc = mode == BLOCKING && !OMPI_COMM_IS_INTER(comm) ? tacos_comm_prepare(m->core)
                                                          : OMPI_SUCCESS;
    if (rc != OMPI_SUCCESS)
        return rc;
    FALLBACK(m, barrier, HAS_PREV(m, barrier) ? PASSED : "no previous component", comm);
}

SLOTS(barrier, (COMM), (comm))

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

void coll_tacos_fill_passed(mca_coll_base_module_t *s)
{
    FILL(s, barrier) FILL(s, scan) FILL(s, exscan) FILL(s, neighbor_allgather)
    FILL(s, neighbor_allgatherv) FILL(s, neighbor_alltoall) FILL(s, neighbor_alltoallv)
    FILL(s, neighbor_alltoallw)
}
