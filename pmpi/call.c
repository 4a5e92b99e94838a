/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One call of libtacos-pmpi as the core sees it: the transport over
 * PMPI_Isend/PMPI_Irecv on the communicator's private duplicate (a call's,
 * or the measurements'), reductions through MPI_Reduce_local, and its data
 * (the view, one run of bytes or not, MPI_Pack/MPI_Unpack or element copies
 * to self).
 */
#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>

#include "tacos_pmpi.h"

/* ---- transport over PMPI_Isend / PMPI_Irecv --------------------------------------- */

static int failed(call_ctx_t *c, int rc)
{
    if (rc != MPI_SUCCESS && !c->error)
        c->error = rc;
    return rc != MPI_SUCCESS;
}

/* The executor keeps requests as void *; MPI_Request may be an integer. */
static MPI_Request to_req(void *r) { return (MPI_Request)(intptr_t)r; }
static void *from_req(MPI_Request r) { return (void *)(intptr_t)r; }

static int pmpi_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    call_ctx_t *c = ctx;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = tacos_fault("send") ? MPI_ERR_OTHER
                                 : PMPI_Isend(buf, (int)bytes, MPI_BYTE, peer, c->tag,
                                              c->st->comm, &r);
    *req = from_req(r);
    return failed(c, rc);
}

static int pmpi_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    call_ctx_t *c = ctx;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = PMPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, c->tag, c->st->comm, &r);
    *req = from_req(r);
    return failed(c, rc);
}

/* PMPI_Waitsome or PMPI_Testsome over the executor's requests: a request
 * MPI set to MPI_REQUEST_NULL is done (also where the call failed: then
 * some may have completed); a failed one's error is taken from its status.
 * While nonblocking operations are in flight, a wait progresses them. */
static int some(call_ctx_t *c, void **reqs, size_t n, char *done, int block)
{
    space_t *sp = c->space;
    if (n > sp->n) {
        void *r = realloc(sp->p, n * (sizeof(MPI_Status) + sizeof(MPI_Request) + sizeof(int)));
        if (!r)
            return failed(c, MPI_ERR_NO_MEM);
        sp->p = r, sp->n = n;
    }
    MPI_Status *status = sp->p;
    MPI_Request *mreq = (MPI_Request *)(status + sp->n);
    int *idx = (int *)(mreq + sp->n), out = 0, rc;
    for (size_t i = 0; i < n; i++)
        mreq[i] = to_req(reqs[i]);
    rc = block ? pmpi_waitsome((int)n, mreq, &out, idx, status)
               : PMPI_Testsome((int)n, mreq, &out, idx, status);
    if (rc == MPI_SUCCESS && block && out == MPI_UNDEFINED)
        rc = MPI_ERR_INTERN; /* nothing to wait for: the executor's bug */
    for (int i = 0; rc == MPI_ERR_IN_STATUS && i < out; i++)
        if (status[i].MPI_ERROR != MPI_SUCCESS && status[i].MPI_ERROR != MPI_ERR_PENDING)
            rc = status[i].MPI_ERROR;
    for (size_t i = 0; i < n; i++) {
        if (reqs[i] != from_req(MPI_REQUEST_NULL) && mreq[i] == MPI_REQUEST_NULL)
            done[i] = 1;
        reqs[i] = from_req(mreq[i]);
    }
    return failed(c, rc);
}

static int pmpi_wait_some(void *ctx, void **reqs, size_t n, char *done)
{
    return some(ctx, reqs, n, done, 1);
}

static int pmpi_test_some(void *ctx, void **reqs, size_t n, char *done)
{
    return some(ctx, reqs, n, done, 0);
}

static void pmpi_abandon(void *ctx, void *req, int is_send)
{
    (void)ctx;
    MPI_Request r = to_req(req);
    if (r == MPI_REQUEST_NULL)
        return;
    if (!is_send) { /* it may target scratch: gone before returning */
        PMPI_Cancel(&r);
        PMPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        PMPI_Request_free(&r); /* a send completes on its own */
    }
}

static int reduce_local(void *ctx, const void *src, void *dst, size_t count)
{
    call_ctx_t *c = ctx;
    return failed(c, PMPI_Reduce_local((const char *)src - c->shift, (char *)dst - c->shift,
                                       (int)count, c->unit, c->op));
}

tacos_transport_t pmpi_transport(call_ctx_t *x)
{
    return (tacos_transport_t){x, pmpi_isend, pmpi_irecv, pmpi_wait_some, pmpi_test_some,
                               pmpi_abandon, reduce_local, NULL};
}

/* ---- the data as schedules see it (see tacos_view_t) ------------------------------- */

static size_t type_size(MPI_Datatype dtype)
{
    MPI_Count size = 0;
    PMPI_Type_size_x(dtype, &size);
    return size > 0 ? (size_t)size : 0;
}

const char *pmpi_view_bytes(MPI_Datatype dtype, size_t count, tacos_view_t *v, call_ctx_t *x)
{
    x->unit = MPI_BYTE;
    return tacos_view_bytes(count, type_size(dtype), v);
}

const char *pmpi_view_elements(MPI_Datatype dtype, size_t count, MPI_Op op, tacos_view_t *v,
                               call_ctx_t *x)
{
    MPI_Aint lb, ext, tlb, text;
    int commute = 0;
    PMPI_Type_get_extent(dtype, &lb, &ext);
    PMPI_Type_get_true_extent(dtype, &tlb, &text);
    PMPI_Op_commutative(op, &commute);
    x->unit = dtype;
    x->shift = tlb;
    return tacos_view_elements(count, type_size(dtype), ext, tlb, text, commute, v);
}

int pmpi_named(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
    return combiner == MPI_COMBINER_NAMED;
}

/* Whether count elements of dtype are one run of bytes: predefined types
 * and contiguous, duplicated or resized ones built on them, whose data
 * fills their true extent, with no gap between elements. */
int pmpi_contiguous(MPI_Datatype dtype, size_t count)
{
    int ni, na, nd, combiner, ok;
    PMPI_Type_get_envelope(dtype, &ni, &na, &nd, &combiner);
    if (combiner == MPI_COMBINER_NAMED) {
        ok = 1;
    } else if ((combiner == MPI_COMBINER_DUP || combiner == MPI_COMBINER_CONTIGUOUS ||
                combiner == MPI_COMBINER_RESIZED) && ni <= 1 && na <= 2 && nd == 1) {
        int ints[1];
        MPI_Aint addrs[2];
        MPI_Datatype inner;
        PMPI_Type_get_contents(dtype, ni, na, nd, ints, addrs, &inner);
        ok = pmpi_contiguous(inner, 2); /* its elements are contiguous with each other */
        if (!pmpi_named(inner))
            PMPI_Type_free(&inner);
    } else {
        return 0;
    }
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_get_extent(dtype, &lb, &ext);
    PMPI_Type_get_true_extent(dtype, &tlb, &text);
    return ok && (size_t)text == type_size(dtype) && (count <= 1 || ext == text);
}

/* d's data as one run of bytes (its first byte), or NULL. */
static char *dt_contiguous(void *ctx, const tacos_data_t *d)
{
    (void)ctx;
    MPI_Datatype dtype = *(const MPI_Datatype *)d->type;
    MPI_Aint tlb, text;
    PMPI_Type_get_true_extent(dtype, &tlb, &text);
    return pmpi_contiguous(dtype, d->count) ? (char *)d->buf + tlb : NULL;
}

/* Elements copied in their layout: a message to self on the duplicate. */
static int copy_elements(call_ctx_t *x, const void *src, void *dst, int count,
                         MPI_Datatype dtype)
{
    int me;
    PMPI_Comm_rank(x->st->comm, &me);
    return PMPI_Sendrecv(src, count, dtype, me, x->tag, dst, count, dtype, me, x->tag,
                         x->st->comm, MPI_STATUS_IGNORE);
}

/* Between a (buffer, count, datatype) and its units in work: bytes packed
 * with MPI_Pack (MPICH's format: the signature's bytes in a row), elements
 * copied in their layout. */
static int dt_pack(void *ctx, const tacos_data_t *d, char *work)
{
    call_ctx_t *x = ctx;
    MPI_Datatype dtype = *(const MPI_Datatype *)d->type;
    int pos = 0, bytes = (int)(d->count * type_size(dtype)), rc;
    if (x->unit != MPI_BYTE)
        return copy_elements(x, d->buf, work, (int)d->count, dtype);
    rc = PMPI_Pack(d->buf, (int)d->count, dtype, work, bytes, &pos, x->st->comm);
    return rc == MPI_SUCCESS && pos != bytes ? MPI_ERR_INTERN : rc;
}

static int dt_unpack(void *ctx, const char *work, const tacos_data_t *d)
{
    call_ctx_t *x = ctx;
    MPI_Datatype dtype = *(const MPI_Datatype *)d->type;
    int pos = 0, bytes = (int)(d->count * type_size(dtype));
    if (x->unit != MPI_BYTE)
        return copy_elements(x, work, d->buf, (int)d->count, dtype);
    return PMPI_Unpack(work, bytes, &pos, d->buf, (int)d->count, dtype, x->st->comm);
}

tacos_data_t pmpi_data(const void *buf, size_t count, const MPI_Datatype *dtype)
{
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(*dtype, &lb, &ext);
    return (tacos_data_t){(void *)buf, count, dtype, ext, count * type_size(*dtype)};
}

tacos_call_t pmpi_call(call_ctx_t *x)
{
    return (tacos_call_t){.tp = pmpi_transport(x),
                          .contiguous = dt_contiguous,
                          .pack = dt_pack,
                          .unpack = dt_unpack,
                          .err_nomem = MPI_ERR_NO_MEM,
                          .err_internal = MPI_ERR_INTERN,
                          .err_truncate = MPI_ERR_TRUNCATE,
                          .error = &x->error};
}

int pmpi_done(MPI_Comm comm, int rc)
{
    if (rc != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}
