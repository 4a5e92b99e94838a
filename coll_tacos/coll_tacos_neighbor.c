/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The neighbourhood collectives as textbook programs: each rank sends a
 * block to each of its out-neighbours and receives one from each of its
 * in-neighbours, in the order its topology lists them (MPI_PROC_NULL ones
 * take no part).
 *
 * A Cartesian rank's neighbours are (source, dest) of each dimension in
 * turn.  Where both are one rank (a periodic dimension of 1 or 2 ranks),
 * MPI-4.1 (section 8.6) has the block sent towards the source arrive in the
 * receiver's block from its dest and the other way round; messages between
 * two ranks match in the order they are posted, so the receives of each
 * dimension's pair are posted dest first.  Graph topologies match the k-th
 * edge to a rank with the k-th edge from it: list order on both sides.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/topo/base/base.h"
#include "ompi/mca/topo/topo.h"

#include "coll_tacos_internal.h"

/* A rank's neighbours: in[0..nin) it receives from, out[0..nout) it sends to. */
typedef struct {
    int *in, *out, nin, nout, cart;
} neighbours_t;

static int neighbours(struct ompi_communicator_t *comm, neighbours_t *nb)
{
    int rc = mca_topo_base_neighbor_count(comm, &nb->nin, &nb->nout);
    if (rc != OMPI_SUCCESS)
        return rc;
    nb->in = malloc(((size_t)nb->nin + (size_t)nb->nout + 1) * sizeof *nb->in);
    if (!nb->in)
        return OMPI_ERR_OUT_OF_RESOURCE;
    nb->out = nb->in + nb->nin;
    nb->cart = OMPI_COMM_IS_CART(comm);
    mca_topo_base_module_t *topo = comm->c_topo;
    if (nb->cart) {
        mca_topo_base_comm_cart_t *cart = topo->mtc.cart;
        for (int d = 0; d < cart->ndims && rc == OMPI_SUCCESS; d++) {
            int src = MPI_PROC_NULL, dst = MPI_PROC_NULL;
            if (cart->dims[d] > 1)
                rc = topo->topo.cart.cart_shift(comm, d, 1, &src, &dst);
            else if (cart->periods[d])
                src = dst = ompi_comm_rank(comm);
            nb->in[2 * d] = nb->out[2 * d] = src;
            nb->in[2 * d + 1] = nb->out[2 * d + 1] = dst;
        }
    } else if (OMPI_COMM_IS_GRAPH(comm)) {
        rc = topo->topo.graph.graph_neighbors(comm, ompi_comm_rank(comm), nb->nin, nb->in);
        memcpy(nb->out, nb->in, (size_t)nb->nout * sizeof *nb->out);
    } else if (OMPI_COMM_IS_DIST_GRAPH(comm)) {
        memcpy(nb->in, topo->mtc.dist_graph->in, (size_t)nb->nin * sizeof *nb->in);
        memcpy(nb->out, topo->mtc.dist_graph->out, (size_t)nb->nout * sizeof *nb->out);
    } else {
        rc = OMPI_ERR_BAD_PARAM; /* MPI's bindings let no such call through */
    }
    if (rc != OMPI_SUCCESS)
        free(nb->in);
    return rc;
}

/* One side of a call: block k is counts[k] (or count) of types[k] (or
 * type) at bdispls[k] bytes, displs[k] extents or k blocks into buf, or
 * (whole) the buffer itself for every k. */
typedef struct {
    const void *buf;
    size_t count;
    CNTS counts;
    DSPS displs;
    BDSPS bdispls;
    struct ompi_datatype_t *type;
    struct ompi_datatype_t *const *types;
    int whole;
} side_t;

static tacos_data_t block(const side_t *s, int k)
{
    struct ompi_datatype_t *t = s->types ? s->types[k] : s->type;
    size_t count = s->counts ? CNT_AT(s->counts, k) : (size_t)s->count;
    tacos_data_t d = data(s->buf, count, t);
    ptrdiff_t at = s->whole     ? 0
                   : s->bdispls ? BDSP_AT(s->bdispls, k)
                   : s->displs  ? DSP_AT(s->displs, k) * d.extent
                                : (ptrdiff_t)k * (ptrdiff_t)count * d.extent;
    d.buf = (char *)s->buf + at;
    return d;
}

static int neighbor_list(const side_t *out, const side_t *in, struct ompi_communicator_t *comm,
                         int tag, TB_ARGS)
{
    TB_M;
    neighbours_t nb;
    int rc = neighbours(comm, &nb);
    if (rc != OMPI_SUCCESS)
        return rc;
    BYTES(comm, ALLTOALL);
    (void)me, (void)n, (void)inter;
    x.tag = tag;
    for (int k = 0; k < nb.nout + nb.nin; k++) {
        int send = k < nb.nout, i = send ? k : k - nb.nout;
        if (!send && nb.cart)
            i ^= 1; /* dest before source: see the top of the file */
        int peer = send ? nb.out[i] : nb.in[i];
        if (peer == MPI_PROC_NULL)
            continue;
        tacos_data_t d = block(send ? out : in, i);
        struct ompi_datatype_t *t = (struct ompi_datatype_t *)d.type;
        list_hold(&l, t);
        list_push(&l, peer, send, 0, -1, d, sig_bytes(d.count, t));
    }
    free(nb.in);
    return list_run(m, &l, &call, mode, request);
}

int coll_tacos_textbook_neighbor_allgather(const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                                           CNT rcount, DT *rdtype, COMM, TB_ARGS)
{
    side_t out = {.buf = sbuf, .count = scount, .type = sdtype, .whole = 1};
    side_t in = {.buf = rbuf, .count = rcount, .type = rdtype};
    return neighbor_list(&out, &in, comm, MCA_COLL_BASE_TAG_ALLGATHER, module, mode, info,
                         request);
}

int coll_tacos_textbook_neighbor_allgatherv(const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                                            CNTS rcounts, DSPS displs, DT *rdtype,
                                            COMM, TB_ARGS)
{
    side_t out = {.buf = sbuf, .count = scount, .type = sdtype, .whole = 1};
    side_t in = {.buf = rbuf, .counts = rcounts, .displs = displs, .type = rdtype};
    return neighbor_list(&out, &in, comm, MCA_COLL_BASE_TAG_ALLGATHERV, module, mode, info,
                         request);
}

int coll_tacos_textbook_neighbor_alltoall(const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                                          CNT rcount, DT *rdtype, COMM, TB_ARGS)
{
    side_t out = {.buf = sbuf, .count = scount, .type = sdtype};
    side_t in = {.buf = rbuf, .count = rcount, .type = rdtype};
    return neighbor_list(&out, &in, comm, MCA_COLL_BASE_TAG_ALLTOALL, module, mode, info,
                         request);
}

int coll_tacos_textbook_neighbor_alltoallv(const void *sbuf, CNTS scounts,
                                           DSPS sdispls, DT *sdtype, void *rbuf,
                                           CNTS rcounts, DSPS rdispls, DT *rdtype,
                                           COMM, TB_ARGS)
{
    side_t out = {.buf = sbuf, .counts = scounts, .displs = sdispls, .type = sdtype};
    side_t in = {.buf = rbuf, .counts = rcounts, .displs = rdispls, .type = rdtype};
    return neighbor_list(&out, &in, comm, MCA_COLL_BASE_TAG_ALLTOALLV, module, mode, info,
                         request);
}

int coll_tacos_textbook_neighbor_alltoallw(const void *sbuf, CNTS scounts,
                                           BDSPS sdispls, DT *const *sdtypes,
                                           void *rbuf, CNTS rcounts,
                                           BDSPS rdispls, DT *const *rdtypes, COMM,
                                           TB_ARGS)
{
    side_t out = {.buf = sbuf, .counts = scounts, .bdispls = sdispls, .types = sdtypes};
    side_t in = {.buf = rbuf, .counts = rcounts, .bdispls = rdispls, .types = rdtypes};
    return neighbor_list(&out, &in, comm, MCA_COLL_BASE_TAG_ALLTOALLW, module, mode, info,
                         request);
}
