/*
 * libtacos-pmpi's internals shared by its two files: tacos_pmpi.c (the
 * per-communicator state, the transport, the collectives) and requests.c
 * (nonblocking and persistent operations, their progress and the request
 * calls it intercepts).
 */
#ifndef TACOS_PMPI_H
#define TACOS_PMPI_H

#include <mpi.h>
#include <stddef.h>

#include "tacos_comm.h"

/* Room for one PMPI_Waitsome/Testsome: statuses, requests, indices. */
typedef struct {
    void *p;
    size_t n;
} space_t;

/* A communicator's state (an attribute of it). */
typedef struct {
    MPI_Comm comm;      /* the private duplicate */
    tacos_comm_t *core; /* NULL: every call of this communicator falls back */
    space_t space;      /* blocking calls' */
    unsigned started;   /* nonblocking and persistent operations started: their tags */
    int refs;           /* the attribute's, and one per operation */
    int spans_hosts;    /* some rank on another node (MPICH's locality; the same on every rank) */
} state_t;

/* One call: what the transport and the datatype callbacks need. */
typedef struct {
    state_t *st;
    int tag;
    MPI_Datatype unit; /* MPI_BYTE, or the datatype reductions combine */
    ptrdiff_t shift;   /* the executor's unit i starts shift past element i */
    MPI_Op op;
    int error;      /* the first MPI error of the transport */
    space_t *space; /* the state's (blocking calls) or the operation's */
} call_ctx_t;

void pmpi_say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pmpi_state_release(state_t *st);
/* Whether t is predefined (a named type: never freed, never duplicated). */
int pmpi_named(MPI_Datatype t);

/* Operations (requests.c).  A request for a call of plan p: nonblocking
 * (started now) or persistent (started by MPI_Start).  Holds st and
 * copies of the call's datatypes. */
int pmpi_launch(state_t *st, const tacos_plan_t *p, const tacos_call_t *call,
                const tacos_args_t *a, int persistent, MPI_Request *request);
/* Whether operations are in flight; progresses them all (never blocks). */
int pmpi_busy(void);
void pmpi_progress(void);
/* PMPI_Wait(some) on r, progressing the operations meanwhile. */
int pmpi_wait(MPI_Request *r, MPI_Status *s);
int pmpi_waitsome(int n, MPI_Request r[], int *out, int idx[], MPI_Status s[]);
/* MPI_Finalize: the signal communicator goes. */
void pmpi_requests_finalize(void);

#endif
