/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The textbook programs: what coll/tacos serves where no schedule does and
 * no previous component exists (`--mca coll tacos` alone: Open MPI wants
 * every slot filled), and what it serves while setting up a communicator
 * then: each collective as a list of messages for the same executor
 * (tacos_run_list), blocking, nonblocking or persistent alike.  Linear or
 * chained (Allreduce and Reduce with a commutative op: recursive doubling,
 * binomial trees), correct for every legal call (non-commutative ops keep
 * rank order), not tuned.  Intercommunicators too: there every message
 * goes to the remote group.
 */
#include "ompi_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_tacos_internal.h"

int list_push(list_t *l, int peer, int send, int reduce, int after, tacos_data_t d,
              size_t units)
{
    if (l->n == l->cap) {
        tacos_msg_t *m = realloc(l->msgs, (size_t)(l->cap = 2 * l->cap + 8) * sizeof *m);
        if (!m)
            return l->nomem = 1, -1;
        l->msgs = m;
    }
    l->msgs[l->n] = (tacos_msg_t){peer, send, reduce, after, d, units};
    return l->n++;
}

void list_hold(list_t *l, struct ompi_datatype_t *t)
{
    if (l->nheld == l->capheld) {
        struct ompi_datatype_t **h = realloc(l->held, (size_t)(l->capheld = 2 * l->capheld + 4) * sizeof *h);
        if (!h) {
            l->nomem = 1;
            return;
        }
        l->held = h;
    }
    l->held[l->nheld++] = t;
}

/* A copy before the first message (at_end: after the last). */
static void copy_when(list_t *l, tacos_data_t from, tacos_data_t to, int at_end)
{
    l->copies[l->ncopies++] = (tacos_copy_t){from, to, at_end};
}

static void copy(list_t *l, tacos_data_t from, tacos_data_t to) { copy_when(l, from, to, 0); }

/* (buf + i blocks of count, count, t). */
static tacos_data_t block_of(const void *buf, size_t i, size_t count, struct ompi_datatype_t *t)
{
    tacos_data_t d = data(buf, count, t);
    d.buf = (char *)buf + (ptrdiff_t)(i * count) * d.extent;
    return d;
}

/* A working copy of (count, t): l->tmp, laid out as t wants. */
static tacos_data_t work_like(list_t *l, size_t count, struct ompi_datatype_t *t)
{
    ptrdiff_t lo, hi;
    footprint(count, t, &lo, &hi);
    char *base = malloc((size_t)(hi - lo) + 1);
    l->nomem |= !base;
    l->tmp = base;
    return data(base ? base - lo : NULL, count, t);
}

/* The bytes [lo, hi) of buf copied into l->tmp: the input of an in-place
 * call that receives overwrite; *shift: tmp - (buf + lo)'s distance. */
static char *raw_copy(list_t *l, const char *buf, ptrdiff_t lo, ptrdiff_t hi)
{
    char *w = malloc((size_t)(hi > lo ? hi - lo : 0) + 1);
    l->nomem |= !w;
    l->tmp = w;
    if (w && hi > lo)
        copy(l, data(buf + lo, (size_t)(hi - lo), &ompi_mpi_byte.dt),
             data(w, (size_t)(hi - lo), &ompi_mpi_byte.dt));
    return w ? w - lo : NULL;
}

/* *lo and *hi widened to the bytes (count, t) at disp_bytes covers. */
static void span_of(size_t count, ptrdiff_t disp_bytes, struct ompi_datatype_t *t, ptrdiff_t *lo,
                    ptrdiff_t *hi)
{
    ptrdiff_t a, b;
    if (!count)
        return;
    footprint(count, t, &a, &b);
    a += disp_bytes, b += disp_bytes;
    if (a < *lo)
        *lo = a;
    if (b > *hi)
        *hi = b;
}

int list_run(mca_coll_tacos_module_t *m, list_t *l, tacos_call_t *call, call_mode_t mode,
             ompi_request_t **request)
{
    int rc = OMPI_ERR_OUT_OF_RESOURCE, ran = 0;
    if (!l->nomem && mode == BLOCKING)
        rc = tacos_run_list(m->core, call, l->msgs, l->n, l->copies, l->ncopies), ran = 1;
    else if (!l->nomem) {
        rc = coll_tacos_launch_list(m, call, l->msgs, l->n, l->copies, l->ncopies, l->held,
                                    l->nheld, l->tmp, mode == PERSISTENT, request);
        l->held = NULL, l->tmp = NULL; /* the request's now, or freed */
    }
    free(l->msgs);
    free(l->held);
    if (rc == OMPI_SUCCESS || !ran) /* else kept: an abandoned send may still read it */
        free(l->tmp);
    return rc;
}

/* A call whose units are elements of dtype, combined with op: in work
 * space each unit keeps its layout, an extent each, or where elements
 * overlap or run backwards (an extent below the true extent, or <= 0)
 * each is packed (x->packed_units: its size each, combined one at a time;
 * slow, but no more memory than the data). */
static void elements(tacos_call_t *call, pml_ctx_t *x, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    x->unit = dtype, x->shift = tlb, x->op = op;
    x->packed_units = text > 0 && (ext <= 0 || text > ext);
    if (x->packed_units)
        call->v = (tacos_view_t){0, type_size(dtype), 0, 0};
    else
        call->v = (tacos_view_t){0, (size_t)ext, 0, tlb};
}

#define ELEMENTS(comm, name, dtype, op)                                                      \
    CALL(comm, name, op);                                                                    \
    elements(&call, &x, dtype, op);                                                          \
    list_t l = {0};                                                                          \
    RANKS(comm);                                                                             \
    list_hold(&l, dtype)


/* Dissemination: in round k every rank tells rank + 2^k, after hearing
 * from rank - 2^(k-1).  Intercommunicator: every rank tells every remote
 * rank and leaves once it heard from all of them (MPI asks no more). */
int coll_tacos_textbook_barrier(struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    BYTES(comm, BARRIER);
    char *bytes = l.tmp = calloc(64, 1);
    l.nomem |= !bytes;
    for (int r = 0; inter && r < np; r++) {
        list_push(&l, r, 1, 0, -1, data(bytes + 63, 1, &ompi_mpi_byte.dt), 1);
        list_push(&l, r, 0, 0, -1, data(bytes + r % 63, 1, &ompi_mpi_byte.dt), 1);
    }
    for (int k = 0, d = 1, heard = -1; !inter && d < n; k++, d *= 2) {
        list_push(&l, (me + d) % n, 1, 0, heard, data(bytes + 63, 1, &ompi_mpi_byte.dt), 1);
        heard = list_push(&l, (me - d + n) % n, 0, 0, -1, data(bytes + k, 1, &ompi_mpi_byte.dt), 1);
    }
    return list_run(m, &l, &call, mode, request);
}

/* Whether this rank is the root: root, or MPI_ROOT on an intercommunicator
 * (there MPI_PROC_NULL names the root's group's other ranks, which take no
 * part, and the remote group names the root by its rank). */
#define AM_ROOT (inter ? root == MPI_ROOT : me == root)
#define TAKES_PART (!inter || root != MPI_PROC_NULL)

/* The root sends to every rank (every remote rank).  A binomial tree was
 * no faster here (one host, 4 and 8 ranks, osu_coll bcast: 1.2-1.5x slower
 * at 4 ranks from 4 KiB, even at 8): the root's sends leave at once. */
int coll_tacos_textbook_bcast(void *buf, CNT count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    BYTES(comm, BCAST);
    list_hold(&l, dtype);
    size_t u = sig_bytes((size_t)count, dtype);
    tacos_data_t d = data(buf, (size_t)count, dtype);
    for (int r = 0; r < np && TAKES_PART; r++)
        if (AM_ROOT ? inter || r != root : r == root)
            list_push(&l, r, AM_ROOT, 0, -1, d, u);
    return list_run(m, &l, &call, mode, request);
}

/* Gather(v) (gather = 1: every rank sends its block to the root) and
 * Scatter(v) (the root sends each rank its block): `mine` is this rank's
 * block (sbuf for gather, rbuf for scatter; MPI_IN_PLACE at the root), the
 * root's blocks are counts[r] (or count) of type at displs[r] (or r x count)
 * extents into `all`, one per rank (per remote rank). */
static int rooted_list(int gather, const void *mine, int mcount, struct ompi_datatype_t *mtype,
                       const void *all, CNTS counts, DSPS displs, CNT count,
                       struct ompi_datatype_t *type, int root, struct ompi_communicator_t *comm,
                       int tag, TB_ARGS)
{
    TB_M;
    BYTES(comm, GATHER);
    x.tag = tag;
    /* the own block: not at an intercommunicator's root, nor where it is in place */
    int has_own = inter ? !AM_ROOT && TAKES_PART : mine != MPI_IN_PLACE;
    if (has_own)
        list_hold(&l, mtype);
    tacos_data_t own = has_own ? data(mine, (size_t)mcount, mtype) : (tacos_data_t){0};
    if (!AM_ROOT) {
        if (TAKES_PART)
            list_push(&l, root, gather, 0, -1, own, sig_bytes((size_t)mcount, mtype));
        return list_run(m, &l, &call, mode, request);
    }
    list_hold(&l, type);
    for (int r = 0; r < np; r++) {
        size_t c = counts ? CNT_AT(counts, r) : (size_t)count;
        tacos_data_t d = block_of(all, 0, c, type);
        d.buf = (char *)all + (ptrdiff_t)(displs ? (size_t)DSP_AT(displs, r) : (size_t)r * c) * d.extent;
        if (inter || r != root)
            list_push(&l, r, !gather, 0, -1, d, sig_bytes(c, type));
        else if (has_own)
            copy(&l, gather ? own : d, gather ? d : own);
    }
    return list_run(m, &l, &call, mode, request);
}

int coll_tacos_textbook_gather(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, CNT rcount, struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(1, sbuf, scount, sdtype, rbuf, NO_CNTS, NO_DSPS, rcount, rdtype, root, comm,
                       MCA_COLL_BASE_TAG_GATHER, module, mode, info, request);
}

int coll_tacos_textbook_gatherv(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, CNTS rcounts, DSPS displs,
                            struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(1, sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype, root, comm,
                       MCA_COLL_BASE_TAG_GATHERV, module, mode, info, request);
}

int coll_tacos_textbook_scatter(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, CNT rcount, struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(0, rbuf, rcount, rdtype, sbuf, NO_CNTS, NO_DSPS, scount, sdtype, root, comm,
                       MCA_COLL_BASE_TAG_SCATTER, module, mode, info, request);
}

int coll_tacos_textbook_scatterv(const void *sbuf, CNTS scounts, DSPS displs,
                             struct ompi_datatype_t *sdtype, void *rbuf, CNT rcount,
                             struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, TB_ARGS)
{
    return rooted_list(0, rbuf, rcount, rdtype, sbuf, scounts, displs, 0, sdtype, root, comm,
                       MCA_COLL_BASE_TAG_SCATTERV, module, mode, info, request);
}

/* Allgather(v): every rank sends its block to every other (every remote
 * rank; its blocks are theirs). */
static int allgather_list(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, CNTS rcounts, DSPS displs, CNT rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          int tag, TB_ARGS)
{
    TB_M;
    BYTES(comm, ALLGATHER);
    x.tag = tag;
    int in_place = sbuf == MPI_IN_PLACE;
    list_hold(&l, rdtype);
    tacos_data_t mine = {0};
    if (inter)
        mine = data(sbuf, (size_t)scount, sdtype), list_hold(&l, sdtype);
    for (int pass = 0; pass < 2; pass++) /* own block first: what the sends read */
        for (int r = 0; r < np; r++) {
            size_t c = rcounts ? CNT_AT(rcounts, r) : (size_t)rcount;
            tacos_data_t d = block_of(rbuf, 0, c, rdtype);
            d.buf = (char *)rbuf + (ptrdiff_t)(displs ? (size_t)DSP_AT(displs, r) : (size_t)r * c) * d.extent;
            if (pass == 0 && r == me && !inter) {
                mine = in_place ? d : data(sbuf, (size_t)scount, sdtype);
                if (!in_place)
                    list_hold(&l, sdtype), copy(&l, mine, d);
            } else if (pass == 1 && (inter || r != me)) {
                list_push(&l, r, 1, 0, -1, mine, sig_bytes(mine.count, (struct ompi_datatype_t *)mine.type));
                list_push(&l, r, 0, 0, -1, d, sig_bytes(c, rdtype));
            }
        }
    return list_run(m, &l, &call, mode, request);
}

int coll_tacos_textbook_allgather(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, CNT rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    return allgather_list(sbuf, scount, sdtype, rbuf, NO_CNTS, NO_DSPS, rcount, rdtype, comm,
                          MCA_COLL_BASE_TAG_ALLGATHER, module, mode, info, request);
}

int coll_tacos_textbook_allgatherv(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, CNTS rcounts, DSPS displs,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               TB_ARGS)
{
    return allgather_list(sbuf, scount, sdtype, rbuf, rcounts, displs, 0, rdtype, comm,
                          MCA_COLL_BASE_TAG_ALLGATHERV, module, mode, info, request);
}

/* Alltoall(v, w): block j of every rank's input to rank j (remote rank j),
 * in pairwise order; with MPI_IN_PLACE the input is a copy of rbuf taken
 * first.  Block displacements in bytes (w) or in extents of the type. */
static int alltoall_list(const void *sbuf, CNTS scounts, DSPS sdispls,
                         struct ompi_datatype_t *const *stypes, void *rbuf, CNTS rcounts,
                         DSPS rdispls, struct ompi_datatype_t *const *rtypes, int w,
                         struct ompi_communicator_t *comm, int tag, TB_ARGS)
{
    TB_M;
    BYTES(comm, ALLTOALL);
    x.tag = tag;
    int in_place = sbuf == MPI_IN_PLACE, nt = w ? np : 1;
    ptrdiff_t lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
#define DISP(d, i, t) (w ? DSP_AT(d, i) : DSP_AT(d, i) * data(NULL, 0, t).extent)
    for (int i = 0; i < nt; i++) {
        list_hold(&l, rtypes[i]);
        if (!in_place)
            list_hold(&l, stypes[i]);
    }
    if (in_place) { /* the input: what rbuf holds now, as rbuf's layout */
        for (int i = 0; i < n; i++)
            span_of(CNT_AT(rcounts, i), DISP(rdispls, i, rtypes[w ? i : 0]), rtypes[w ? i : 0],
                    &lo, &hi);
        sbuf = hi > lo ? raw_copy(&l, rbuf, lo, hi) : rbuf;
        scounts = rcounts, sdispls = rdispls, stypes = rtypes;
    }
    for (int s = 0; s < np; s++) {
        int to = (me + s) % np, from = inter ? to : (me - s + n) % n;
        struct ompi_datatype_t *st = stypes[w ? to : 0], *rt = rtypes[w ? from : 0];
        tacos_data_t out = data((const char *)sbuf + DISP(sdispls, to, st), CNT_AT(scounts, to), st);
        tacos_data_t in = data((char *)rbuf + DISP(rdispls, from, rt), CNT_AT(rcounts, from), rt);
        if (s == 0 && !inter) {
            if (!in_place)
                copy(&l, out, in);
            continue;
        }
        list_push(&l, from, 0, 0, -1, in, sig_bytes(in.count, rt));
        list_push(&l, to, 1, 0, -1, out, sig_bytes(out.count, st));
    }
#undef DISP
    return list_run(m, &l, &call, mode, request);
}

/* Alltoall as Alltoallv with equal counts (the int arrays live for the call only:
 * run_list copies the messages) */
int coll_tacos_textbook_alltoall(const void *sbuf, CNT scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, CNT rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, TB_ARGS)
{
    int n = OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
    int *v = malloc(4 * (size_t)n * sizeof *v);
    if (!v)
        return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < n; i++)
        v[i] = scount, v[n + i] = i * scount, v[2 * n + i] = rcount, v[3 * n + i] = i * rcount;
    int rc = alltoall_list(sbuf, CNTS_OF(v), DSPS_OF(v + n), &sdtype, rbuf, CNTS_OF(v + 2 * n), DSPS_OF(v + 3 * n), &rdtype, 0, comm,
                           MCA_COLL_BASE_TAG_ALLTOALL, module, mode, info, request);
    free(v);
    return rc;
}

int coll_tacos_textbook_alltoallv(const void *sbuf, CNTS scounts, DSPS sdispls,
                              struct ompi_datatype_t *sdtype, void *rbuf, CNTS rcounts,
                              DSPS rdispls, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    return alltoall_list(sbuf, scounts, sdispls, &sdtype, rbuf, rcounts, rdispls, &rdtype, 0, comm,
                         MCA_COLL_BASE_TAG_ALLTOALLV, module, mode, info, request);
}

int coll_tacos_textbook_alltoallw(const void *sbuf, CNTS scounts, DSPS sdispls,
                              struct ompi_datatype_t *const *sdtypes, void *rbuf,
                              CNTS rcounts, DSPS rdispls,
                              struct ompi_datatype_t *const *rdtypes,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    return alltoall_list(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, 1,
                         comm, MCA_COLL_BASE_TAG_ALLTOALLW, module, mode, info, request);
}

/* The chain 0 -> 1 -> ... -> n-1 combining into w (x_0 op ... op x_me at
 * rank me once its receive is combined); returns the index of this rank's
 * last message in it (-1 none). */
static int chain(list_t *l, int me, int n, tacos_data_t w, size_t units)
{
    int got = me > 0 ? list_push(l, me - 1, 0, 1, -1, w, units) : -1;
    return me < n - 1 ? list_push(l, me + 1, 1, 0, got, w, units) : got;
}

/* Receives of every rank's (remote rank's) `units` into w, combined in
 * rank order: rank np-1's first, then src op that for np-2 ... 0. */
static void combine_all(list_t *l, int np, tacos_data_t w, size_t units)
{
    for (int r = np - 1, prev = -1; r >= 0; r--)
        prev = list_push(l, r, 0, r < np - 1, prev, w, units);
}

/* Recursive doubling into w (a commutative op: partners combine the same
 * two values, so every rank ends with the same bits): with p the largest
 * power of two <= n and e = n - p, ranks 2i < 2e first hand their input to
 * 2i+1 and get the result back at the end; the other p ranks (new numbers
 * 0..p-1) exchange with new rank ^ 2^k in round k, each combining what
 * arrives once its own send of the round completed (the receive lands
 * aside at once, so no round waits for a partner's combine). */
static void doubling(list_t *l, int me, int n, tacos_data_t w, size_t units)
{
    int p = 1, last;
    while (2 * p <= n)
        p *= 2;
    int extra = n - p, spare = me < 2 * extra && me % 2 == 0;
    if (spare) { /* hand over, get the result */
        last = list_push(l, me + 1, 1, 0, -1, w, units);
        list_push(l, me + 1, 0, 0, last, w, units);
        return;
    }
    last = me < 2 * extra ? list_push(l, me - 1, 0, 1, -1, w, units) : -1;
    int nr = me < 2 * extra ? me / 2 : me - extra;
    for (int mask = 1; mask < p; mask *= 2) {
        int pr = nr ^ mask, peer = pr < extra ? 2 * pr + 1 : pr + extra;
        int sent = list_push(l, peer, 1, 0, last, w, units);
        last = list_push(l, peer, 0, 1, sent, w, units);
    }
    if (me < 2 * extra)
        list_push(l, me - 1, 1, 0, last, w, units);
}

/* Up to this many bytes a binomial tree beats the chain (Reduce: one
 * host, 4 and 8 ranks on 2 cores, osu_coll reduce: 1.2-2.8x faster from 512
 * B to 2 MiB and 5-8x below, as many messages as the chain but log2 n
 * deep; at 4 MiB 1.2-1.3x slower at 8 ranks, the root combining log2 n
 * whole inputs). */
#define BINOMIAL_MAX_BYTES ((size_t)2 << 20)

/* Whether the reduction takes the binomial tree (the same on every rank). */
static int binomial_fits(struct ompi_op_t *op, CNT count, struct ompi_datatype_t *dtype)
{
    return ompi_op_is_commute(op) && (size_t)count * type_size(dtype) <= BINOMIAL_MAX_BYTES;
}

/* A binomial tree into w at the root (a commutative op): with ranks
 * numbered from the root, rank v combines what v + 1, v + 2, v + 4, ...
 * (below n, up to its lowest set bit) send it, one after the other, then
 * sends the whole to v - its lowest set bit; returns the index of this
 * rank's last message (-1 none). */
static int binomial(list_t *l, int me, int n, int root, tacos_data_t w, size_t units)
{
    int v = (me - root + n) % n, last = -1, mask = 1;
    for (; mask < n && !(v & mask); mask *= 2)
        if (v + mask < n)
            last = list_push(l, (v + mask + root) % n, 0, 1, last, w, units);
    return v ? list_push(l, (v - mask + root) % n, 1, 0, last, w, units) : last;
}

/* Up to this many bytes the doubling beats the chain (one host, 4 and 8
 * ranks on 2 cores, osu_coll allreduce: 8-256 B 1.2-1.6x faster at 8
 * ranks, about even at 4; from 512 B, where Open MPI's shared memory stops
 * sending inline, its n log2 n messages cost more than the chain's 2(n-1):
 * 1.3-1.6x slower).  The same on every rank: MPI wants equal counts and
 * datatypes here. */
#define DOUBLING_MAX_BYTES 256

/* Predefined commutative ops up to DOUBLING_MAX_BYTES: recursive doubling
 * (log2 n rounds; a user's op declared commutative may not give the same
 * bits both ways round, and the doubling's partners combine in opposite
 * orders); commutative ops up to BINOMIAL_MAX_BYTES: the binomial tree into
 * rank 0, which sends the result to every rank; the others: the chain into rbuf (rank
 * order), then rank n-1 sends the result to every rank.
 * Intercommunicator: every rank sends its input to every remote rank and
 * combines theirs. */
int coll_tacos_textbook_allreduce(const void *sbuf, void *rbuf, CNT count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, ALLREDUCE, dtype, op);
    tacos_data_t w = data(rbuf, (size_t)count, dtype);
    if (inter) {
        for (int r = 0; r < np; r++)
            list_push(&l, r, 1, 0, -1, data(sbuf, (size_t)count, dtype), (size_t)count);
        combine_all(&l, np, w, (size_t)count);
        return list_run(m, &l, &call, mode, request);
    }
    if (sbuf != MPI_IN_PLACE)
        copy(&l, data(sbuf, (size_t)count, dtype), w);
    if (ompi_op_is_intrinsic(op) && ompi_op_is_commute(op) &&
        (size_t)count * type_size(dtype) <= DOUBLING_MAX_BYTES) {
        doubling(&l, me, n, w, (size_t)count);
        return list_run(m, &l, &call, mode, request);
    }
    int tree = binomial_fits(op, count, dtype);
    int top = tree ? 0 : n - 1; /* where the result is, then sent to every rank */
    int last = tree ? binomial(&l, me, n, 0, w, (size_t)count) : chain(&l, me, n, w, (size_t)count);
    for (int r = 0; r < n; r++)
        if (r != top && (me == top || r == me))
            list_push(&l, me == top ? r : top, me == top, 0, last, w, (size_t)count);
    return list_run(m, &l, &call, mode, request);
}

/* Commutative ops up to BINOMIAL_MAX_BYTES: a binomial tree (log2 n
 * rounds); the others: the chain (into rbuf at the root, a copy
 * elsewhere), then to the root.  Intercommunicator: the remote ranks send
 * their input to the root, which combines them. */
int coll_tacos_textbook_reduce(const void *sbuf, void *rbuf, CNT count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, REDUCE, dtype, op);
    if (inter) {
        if (AM_ROOT)
            combine_all(&l, np, data(rbuf, (size_t)count, dtype), (size_t)count);
        else if (TAKES_PART)
            list_push(&l, root, 1, 0, -1, data(sbuf, (size_t)count, dtype), (size_t)count);
        return list_run(m, &l, &call, mode, request);
    }
    tacos_data_t w = me == root ? data(rbuf, (size_t)count, dtype) : work_like(&l, (size_t)count, dtype);
    if (sbuf != MPI_IN_PLACE || me != root)
        copy(&l, data(sbuf, (size_t)count, dtype), w);
    if (binomial_fits(op, count, dtype)) {
        binomial(&l, me, n, root, w, (size_t)count);
        return list_run(m, &l, &call, mode, request);
    }
    int last = chain(&l, me, n, w, (size_t)count);
    if (root != n - 1 && (me == root || me == n - 1))
        list_push(&l, me == root ? n - 1 : root, me == n - 1, 0, last, w, (size_t)count);
    return list_run(m, &l, &call, mode, request);
}

/* Rank j combines block j of every rank's input in rank order (messages
 * to itself included).  Intercommunicator: block j of the remote group's
 * inputs; with equal blocks each remote rank sends rank j its block j,
 * with uneven ones (which only rank j's group knows) its whole input, and
 * rank j combines the whole and keeps its block. */
static int reduce_scatter_list(const void *sbuf, void *rbuf, CNTS rcounts, CNT rcount,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, int tag, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, REDUCE_SCATTER, dtype, op);
    x.tag = tag;
    size_t total = 0, at = 0, mine = rcounts ? CNT_AT(rcounts, me) : (size_t)rcount;
    for (int r = 0; r < n; r++)
        total += rcounts ? CNT_AT(rcounts, r) : (size_t)rcount;
    if (inter && !rcounts) { /* the remote blocks: total / np each */
        size_t b = total / (size_t)np;
        for (int r = 0; r < np; r++)
            list_push(&l, r, 1, 0, -1, block_of(sbuf, (size_t)r, b, dtype), b);
        combine_all(&l, np, data(rbuf, mine, dtype), mine);
        return list_run(m, &l, &call, mode, request);
    }
    if (inter) {
        for (int r = 0; r < np; r++)
            list_push(&l, r, 1, 0, -1, data(sbuf, total, dtype), total);
        tacos_data_t whole = work_like(&l, total, dtype);
        combine_all(&l, np, whole, total);
        for (int r = 0; r < me; r++)
            at += CNT_AT(rcounts, r);
        whole = tacos_data_part(&whole, at, mine);
        copy_when(&l, whole, data(rbuf, mine, dtype), 1);
        return list_run(m, &l, &call, mode, request);
    }
    tacos_data_t in = data(sbuf, total, dtype);
    if (sbuf == MPI_IN_PLACE) { /* rbuf holds the input, which the result overwrites */
        in = work_like(&l, total, dtype);
        copy(&l, data(rbuf, total, dtype), in);
    }
    for (int r = 0; r < n; r++) {
        size_t c = rcounts ? CNT_AT(rcounts, r) : (size_t)rcount;
        list_push(&l, r, 1, 0, -1, tacos_data_part(&in, at, c), c);
        at += c;
    }
    combine_all(&l, n, data(rbuf, mine, dtype), mine);
    return list_run(m, &l, &call, mode, request);
}

int coll_tacos_textbook_reduce_scatter(const void *sbuf, void *rbuf, CNTS rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, TB_ARGS)
{
    return reduce_scatter_list(sbuf, rbuf, rcounts, 0, dtype, op, comm,
                               MCA_COLL_BASE_TAG_REDUCE_SCATTER, module, mode, info, request);
}

int coll_tacos_textbook_reduce_scatter_block(const void *sbuf, void *rbuf, CNT rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm, TB_ARGS)
{
    return reduce_scatter_list(sbuf, rbuf, NO_CNTS, rcount, dtype, op, comm,
                               MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK, module, mode, info, request);
}

/* Scan: the chain into rbuf. */
int coll_tacos_textbook_scan(const void *sbuf, void *rbuf, CNT count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, SCAN, dtype, op);
    tacos_data_t w = data(rbuf, (size_t)count, dtype);
    if (sbuf != MPI_IN_PLACE)
        copy(&l, data(sbuf, (size_t)count, dtype), w);
    chain(&l, me, n, w, (size_t)count);
    return list_run(m, &l, &call, mode, request);
}

/* Exscan: rank me-1's partial arrives twice, as the result (rbuf) and
 * combined into a copy of the input, which goes on to me+1 (twice). */
int coll_tacos_textbook_exscan(const void *sbuf, void *rbuf, CNT count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm, TB_ARGS)
{
    TB_M;
    ELEMENTS(comm, EXSCAN, dtype, op);
    size_t u = (size_t)count;
    tacos_data_t t = work_like(&l, u, dtype);
    copy(&l, data(sbuf == MPI_IN_PLACE ? rbuf : sbuf, u, dtype), t);
    int got = -1;
    if (me > 0) {
        list_push(&l, me - 1, 0, 0, -1, data(rbuf, u, dtype), u);
        got = me < n - 1 ? list_push(&l, me - 1, 0, 1, -1, t, u) : -1;
    }
    for (int twice = 0; me < n - 1 && twice < (me + 1 < n - 1 ? 2 : 1); twice++)
        list_push(&l, me + 1, 1, 0, got, t, u); /* rank n-1 only wants the result */
    return list_run(m, &l, &call, mode, request);
}

