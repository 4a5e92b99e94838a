/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calls on GPU buffers that the executor cannot stage, or that no schedule
 * serves, run on host copies of their buffers: blocking, nonblocking
 * (copied back when the call completes) and persistent (copied in at each
 * start).
 */
#include "ompi_config.h"

#include <ctype.h>
#include <stdio.h>

#include "coll_tacos_driver.h"

/* The MPI name of collective `name` ("reduce" or "Reduce") in a mode:
 * MPI_Reduce, MPI_Ireduce, MPI_Reduce_init. */
static const char *mpi_name(char buf[64], const char *name, call_mode_t mode)
{
    snprintf(buf, 64, "MPI_%s%c%s%s", mode == NONBLOCKING ? "I" : "",
             mode == NONBLOCKING ? tolower((unsigned char)name[0]) : toupper((unsigned char)name[0]),
             name + 1, mode == PERSISTENT ? "_init" : "");
    return buf;
}

int coll_tacos_unserved(const char *name, call_mode_t mode, const char *why, const char *then)
{
    char buf[64];
    opal_output(0, "coll:tacos: %s on GPU buffers: %s; %s (Open MPI here is not CUDA-aware)",
                mpi_name(buf, name, mode), why, then);
    return OMPI_ERR_NOT_SUPPORTED;
}

/* A call on host copies of up to two buffers (each copied in, so that what
 * the call does not write stays as it was; copied back where out0, out1):
 * blocking; nonblocking, copied back when it completes; persistent, copied
 * in at each start and back at each completion.  The
 * call itself (call_expr, on h0 and h1) looks for no GPU buffers and, where
 * `then` is 2, falls back as the original call did without planning again. */
#define BY_HAND(name, opv, call_expr, b0, n0, t0, out0, b1, n1, t1, out1)                   \
    do {                                                                                     \
        mirror_t mm_[2] = {{0}};                                                             \
        int out_[2] = {(out0), (out1)};                                                      \
        void *h0 = NULL, *h1 = NULL;                                                         \
        ompi_request_t *inner_ = NULL;                                                       \
        char name_[64];                                                                      \
        char event_[TACOS_EVENT_MAX];                                                        \
        TRACE(10, "%s on GPU buffers through host copies: %s", mpi_name(name_, name, mode),  \
              why);                                                                          \
        if (TRACING(10))                                                                     \
            TRACE(10, "%s", tacos_event(event_, name, (tacos_mode_t)mode, "copies", why));   \
        int rc_ = coll_tacos_mirror(m, &mm_[0], b0, n0, t0, mode == PERSISTENT, &h0);        \
        if (rc_ == OMPI_SUCCESS)                                                             \
            rc_ = coll_tacos_mirror(m, &mm_[1], b1, n1, t1, mode == PERSISTENT, &h1);        \
        if (rc_ == OMPI_SUCCESS) {                                                           \
            m->by_hand = then, m->by_hand_why = why;                                         \
            rc_ = call_expr;                                                                 \
            m->by_hand = 0;                                                                  \
        }                                                                                    \
        if (rc_ == OMPI_SUCCESS && mode != BLOCKING)                                         \
            return coll_tacos_launch_by_hand(m, comm, inner_, mm_, out_, 2,                  \
                                             (b0) && (b0) != MPI_IN_PLACE ? (t0) : NULL,     \
                                             (b1) && (b1) != MPI_IN_PLACE ? (t1) : NULL,     \
                                             opv,                                            \
                                             mode == PERSISTENT, request);                   \
        int back0_ = coll_tacos_unmirror(m, &mm_[0], (out0) && rc_ == OMPI_SUCCESS);         \
        int back1_ = coll_tacos_unmirror(m, &mm_[1], (out1) && rc_ == OMPI_SUCCESS);         \
        return rc_ != OMPI_SUCCESS ? rc_ : back0_ != OMPI_SUCCESS ? back0_ : back1_;         \
    } while (0)

/* The call on host copies, in the original call's mode (its request in inner_). */
#define HOST(name, ...)                                                                      \
    coll_tacos_##name(__VA_ARGS__, &m->super, mode, info, mode == BLOCKING ? NULL : &inner_)

int coll_tacos_copies_allreduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT count, DT *dtype, OP,
                             COMM)
{
    BY_HAND("Allreduce", op, HOST(allreduce, h0, h1, count, dtype, op, comm), sbuf, count, dtype, 0,
            rbuf, count, dtype, 1);
}

int coll_tacos_copies_allgather(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                             CNT rcount, DT *rdtype, COMM)
{
    size_t n = peers(comm);
    BY_HAND("Allgather", NULL, HOST(allgather, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf,
            scount, sdtype, 0, rbuf, (size_t)rcount * n, rdtype, 1);
}

int coll_tacos_copies_alltoall(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                            CNT rcount, DT *rdtype, COMM)
{
    size_t n = peers(comm);
    BY_HAND("Alltoall", NULL, HOST(alltoall, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf,
            (size_t)scount * n, sdtype, 0, rbuf, (size_t)rcount * n, rdtype, 1);
}

int coll_tacos_copies_allgatherv(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                              CNTS rcounts, DSPS displs, DT *rdtype, COMM)
{
    size_t end = 0; /* the receive buffer's elements up to the last block's end */
    for (int r = 0; r < (int)peers(comm); r++) {
        if (DSP_AT(displs, r) < 0)
            return coll_tacos_unserved("Allgatherv", mode, "a negative displacement", "");
        if (CNT_AT(rcounts, r) && (size_t)DSP_AT(displs, r) + CNT_AT(rcounts, r) > end)
            end = (size_t)DSP_AT(displs, r) + CNT_AT(rcounts, r);
    }
    BY_HAND("Allgatherv", NULL,
            HOST(allgatherv, h0, scount, sdtype, h1, rcounts, displs, rdtype, comm), sbuf,
            scount, sdtype, 0, rbuf, end, rdtype, 1);
}

int coll_tacos_copies_bcast(BY_HAND_ARGS, void *buf, CNT count, DT *dtype, int root, COMM)
{
    int inter = OMPI_COMM_IS_INTER(comm), at_root = inter ? root == MPI_ROOT
                                                          : ompi_comm_rank(comm) == root;
    void *mine = inter && root == MPI_PROC_NULL ? NULL : buf; /* no data on that side */
    BY_HAND("Bcast", NULL, HOST(bcast, mine ? h0 : buf, count, dtype, root, comm), mine, count,
            dtype, !at_root, NULL, 0, dtype, 0);
}

int coll_tacos_copies_gather(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                          CNT rcount, DT *rdtype, int root, COMM)
{
    rooted_side_t s = side_of(comm, root);
    const void *in = s.sends ? sbuf : NULL;
    void *out = s.at_root ? rbuf : NULL;
    BY_HAND("Gather", NULL,
            HOST(gather, in ? h0 : sbuf, scount, sdtype, out ? h1 : rbuf, rcount, rdtype, root,
                 comm),
            in, scount, sdtype, 0, out, (size_t)rcount * peers(comm), rdtype, 1);
}

int coll_tacos_copies_scatter(BY_HAND_ARGS, const void *sbuf, CNT scount, DT *sdtype, void *rbuf,
                           CNT rcount, DT *rdtype, int root, COMM)
{
    rooted_side_t s = side_of(comm, root);
    const void *in = s.at_root ? sbuf : NULL;
    void *out = s.sends ? rbuf : NULL;
    BY_HAND("Scatter", NULL,
            HOST(scatter, in ? h0 : sbuf, scount, sdtype, out ? h1 : rbuf, rcount, rdtype, root,
                 comm),
            in, (size_t)scount * peers(comm), sdtype, 0, out, rcount, rdtype, 1);
}

int coll_tacos_copies_reduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT count, DT *dtype, OP,
                          int root, COMM)
{
    int inter = OMPI_COMM_IS_INTER(comm), at_root = inter ? root == MPI_ROOT
                                                          : ompi_comm_rank(comm) == root;
    const void *in = inter && (root == MPI_ROOT || root == MPI_PROC_NULL) ? NULL : sbuf;
    BY_HAND("Reduce", op, HOST(reduce, in ? h0 : sbuf, at_root ? h1 : rbuf, count, dtype, op, root, comm),
            in, count, dtype, 0, at_root ? rbuf : NULL, count, dtype, 1); /* rbuf: the root's */
}

int coll_tacos_copies_reduce_scatter_block(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNT rcount,
                                        DT *dtype, OP, COMM)
{
    size_t all = (size_t)rcount * (size_t)ompi_comm_size(comm); /* n x rcount, n the local group's size */
    BY_HAND("Reduce_scatter_block", op,
            HOST(reduce_scatter_block, h0, h1, rcount, dtype, op, comm), sbuf, all, dtype, 0,
            rbuf, sbuf == MPI_IN_PLACE ? all : (size_t)rcount, dtype, 1);
}

int coll_tacos_copies_reduce_scatter(BY_HAND_ARGS, const void *sbuf, void *rbuf, CNTS rcounts,
                                  DT *dtype, OP, COMM)
{
    size_t all = 0;
    if (OMPI_COMM_IS_INTER(comm) && m->stage != 2) /* the input's size: the other group's counts */
        return coll_tacos_unserved("Reduce_scatter", mode, "intercommunicator", "copy them to the host");
    if (OMPI_COMM_IS_INTER(comm)) { /* host memory taken for a GPU's (tests): as it is */
        m->by_hand = 1;
        int rc = coll_tacos_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, &m->super, mode, info,
                                request);
        m->by_hand = 0;
        return rc;
    }
    for (int r = 0; r < ompi_comm_size(comm); r++)
        all += CNT_AT(rcounts, r);
    BY_HAND("Reduce_scatter", op, HOST(reduce_scatter, h0, h1, rcounts, dtype, op, comm), sbuf, all,
            dtype, 0, rbuf,
            sbuf == MPI_IN_PLACE ? all : CNT_AT(rcounts, ompi_comm_rank(comm)), dtype, 1);
}
