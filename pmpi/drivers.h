/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libtacos-pmpi's collectives as their entry points call them: the drivers
 * of drivers.c (each in a mode: blocking, nonblocking, persistent), what
 * the large-count forms (large_count.c) call them with, and the macros
 * both files' entry points are made of.
 */
#ifndef TACOS_PMPI_DRIVERS_H
#define TACOS_PMPI_DRIVERS_H

#include "tacos_pmpi.h"

/* How a collective was called: MPI_X, MPI_Ix, MPI_X_init. */
typedef enum {
    BLOCKING = TACOS_BLOCKING,
    NONBLOCKING = TACOS_NONBLOCKING,
    PERSISTENT = TACOS_PERSISTENT
} call_mode_t;

#define MODE_ARGS call_mode_t mode, MPI_Info info, MPI_Request *request

/* fn_i (nonblocking) or fn_init (persistent) in the call's mode; a blocking
 * call is fn_i waited for, on every rank (see WAITED below). */
#define IN_MODE(fn_i, fn_init, ...)                                                          \
    (mode == NONBLOCKING  ? fn_i(__VA_ARGS__, request)                                       \
     : mode == PERSISTENT ? fn_init(__VA_ARGS__, info, request)                              \
                          : pmpi_waited(fn_i(__VA_ARGS__, request), request))

/* The collectives served (drivers.c), in the call's mode: MPI_Gather
 * (gathers) and MPI_Scatter are pmpi_rooted's. */
int pmpi_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                   MPI_Comm comm, MODE_ARGS);
int pmpi_allgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                   MPI_Datatype rdtype, MPI_Comm comm, MODE_ARGS);
int pmpi_alltoall(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm, MODE_ARGS);
int pmpi_bcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, MODE_ARGS);
int pmpi_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
                MPI_Comm comm, MODE_ARGS);
int pmpi_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                              MPI_Op op, MPI_Comm comm, MODE_ARGS);
int pmpi_reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                        MPI_Op op, MPI_Comm comm, MODE_ARGS);
int pmpi_rooted(int gathers, const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm, MODE_ARGS);
/* A call on GPU buffers not served (why): an error, to comm's handler. */
int pmpi_unserved(MPI_Comm comm, const char *name, const char *why);
/* comm's size and this rank in it. */
size_t pmpi_size_of(MPI_Comm comm);
int pmpi_rank_of(MPI_Comm comm);

/* The entry points: each collective in its three modes (MPI_X, MPI_Ix,
 * MPI_X_init, each with `suffix`), calling fn(args..., mode, info, request). */
#define B BLOCKING, MPI_INFO_NULL, &(MPI_Request){MPI_REQUEST_NULL} /* (where it falls back) */
#define WITH_REQUEST(...) (__VA_ARGS__, MPI_Request *request)
#define WITH_INFO_REQUEST(...) (__VA_ARGS__, MPI_Info info, MPI_Request *request)
#define ENTRY_POINTS(name, iname, suffix, fn, params, ...)                                   \
    int MPI_##name##suffix params                                                            \
    {                                                                                        \
        return fn(__VA_ARGS__, B);                                                           \
    }                                                                                        \
    int MPI_##iname##suffix WITH_REQUEST params                                              \
    {                                                                                        \
        return fn(__VA_ARGS__, NONBLOCKING, MPI_INFO_NULL, request);                         \
    }                                                                                        \
    int MPI_##name##_init##suffix WITH_INFO_REQUEST params                                   \
    {                                                                                        \
        return fn(__VA_ARGS__, PERSISTENT, info, request);                                   \
    }

/* The blocking collectives this library does not serve: MPICH's
 * nonblocking forms, waited for with pmpi_wait on every rank (blocking and
 * nonblocking collectives do not match), so that a rank in one progresses
 * this library's operations while it waits, as MPI's progress rule asks: a
 * peer may wait for one of them before it joins (MPICH's blocking forms
 * progress only MPICH's own, and the job hung).  The same for the calls
 * that fall back (FALLBACK) and MPI_Barrier.  WAITED_UNLESS: where
 * `blocking` (a condition every rank decides alike), MPICH's blocking form
 * once every rank has arrived (ARRIVED_FIRST). */
#define WAITED_UNLESS(blocking, name, iname, params, ...)                                    \
    int MPI_##name params                                                                    \
    {                                                                                        \
        MPI_Request r;                                                                       \
        int rc_;                                                                             \
        if (blocking) /* (the arguments may name a count rc) */                              \
            return (rc_ = pmpi_arrived(comm)) != MPI_SUCCESS ? rc_                           \
                                                             : PMPI_##name(__VA_ARGS__);     \
        return pmpi_waited(PMPI_##iname(__VA_ARGS__, &r), &r);                               \
    }
#define WAITED(name, iname, params, ...) WAITED_UNLESS(0, name, iname, params, __VA_ARGS__)
/* Alltoallw in place: MPICH's blocking form once every rank has arrived
 * (every rank passes MPI_IN_PLACE): MPICH 4.0.2's MPI_Ialltoallw in place
 * gives wrong blocks */
#define IN_PLACE (sbuf == MPI_IN_PLACE)

#endif
