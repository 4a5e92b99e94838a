/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives coll/tacos serves with textbook programs where no other
 * component is selected (`mpirun --mca coll tacos`): Barrier, Gather(v),
 * Scatter(v), Allgatherv, Alltoallv, Alltoallw, Scan, Exscan,
 * Reduce_local, and the reductions with a non-commutative op, each
 * blocking, nonblocking and persistent (started twice), every result
 * checked against values computed here; on MPI_COMM_WORLD, a split and a
 * dup.  Then every collective on an intercommunicator (even and odd world
 * ranks: groups of different sizes at odd n), its dup and its merge, and
 * the neighbourhood collectives on a Cartesian grid (a periodic and a
 * non-periodic dimension: MPI_PROC_NULL neighbours, and with 1 or 2 ranks
 * in the periodic one MPI-4.1's pairing of the two directions), a
 * symmetric graph with repeated edges and a self loop, and a distributed
 * graph.  Prints "mpi_more_check: 0 failure(s)" on success.  For
 * debugging: MORE_TRACE=1 prints each call's line before it runs,
 * MORE_ONLY=rosinv runs only the rooted (r), ordered (o), spreading (s),
 * intercommunicator (i), neighbourhood (n) or strided v-variant (v) checks
 * named.
 * MORE_MODES=bnp runs only the blocking (b), nonblocking (n) or persistent
 * (p) forms named (MPICH 4.0.2's own MPI_Gather_init reads the send buffer
 * and copies the root's block at the init call instead of at MPI_Start, so
 * a library that fills host copies at each start cannot give it the data).
 * MORE_SKIP_CART_PAIRS=1 skips the nonblocking and persistent Cartesian
 * checks with 1 or 2 ranks in the periodic dimension, which Open MPI 4.1's
 * libnbc pairs the pre-MPI-4.0 way (open-mpi/ompi#14416).
 */
#include "mpi_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, me_world;


enum { BLOCKING, NONBLOCKING, PERSISTENT, NMODES };
static const char *mode_name[] = {"blocking", "nonblocking", "persistent"};

/* Runs the call in mode: the blocking one, or the request it makes,
 * completed (persistent: started and completed twice, `again` refilling
 * the inputs between). */
#define RUN(mode, blocking, nonblocking, persistent, again)                                  \
    do {                                                                                     \
        MPI_Request req_;                                                                    \
        if (getenv("MORE_TRACE"))                                                            \
            fprintf(stderr, "rank %d line %d mode %d\n", me_world, __LINE__, mode);          \
        if ((mode) == BLOCKING) {                                                            \
            blocking;                                                                        \
        } else if ((mode) == NONBLOCKING) {                                                  \
            nonblocking;                                                                     \
            MPI_Wait(&req_, MPI_STATUS_IGNORE);                                              \
        } else {                                                                             \
            persistent;                                                                      \
            for (int twice_ = 0; twice_ < 2; twice_++) {                                     \
                if (twice_)                                                                  \
                    again;                                                                   \
                MPI_Start(&req_);                                                            \
                MPI_Wait(&req_, MPI_STATUS_IGNORE);                                          \
            }                                                                                \
            MPI_Request_free(&req_);                                                         \
        }                                                                                    \
    } while (0)

/* Element i of the block rank r sends to rank q. */
static int val(int r, int q, int i) { return r * 1000003 + q * 7919 + i; }

/* Affine maps t -> a t + b (mod 10007) composed: associative, not commutative. */
typedef struct {
    int a, b;
} affine_t;

static affine_t compose(affine_t x, affine_t y)
{
    return (affine_t){(int)((long)x.a * y.a % 10007), (int)(((long)x.a * y.b + x.b) % 10007)};
}

static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    affine_t *x = in, *y = inout;
    for (int i = 0; i < *len; i++)
        y[i] = compose(x[i], y[i]);
}

static affine_t affine_of(int r, int i) { return (affine_t){(r * 31 + i) % 97 + 2, r * 7 + i}; }

static void check_rooted(MPI_Comm comm, int mode, int count)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    size_t big = ((size_t)count + 2) * (size_t)n + 1; /* the v-variants: up to count + 2 each */
    int *s = malloc(big * sizeof *s), *d = malloc(big * sizeof *d);
    int *counts = malloc(n * sizeof *counts), *displs = malloc(n * sizeof *displs), total = 0;
    for (int r = 0; r < n; r++) /* v-variants: rank r has count + r % 3 elements, placed backwards */
        counts[r] = count + r % 3, total += counts[r];
    for (int r = 0, at = total; r < n; r++)
        displs[r] = at -= counts[r];
    for (int root = 0; root < n; root++) {
        for (int in_place = 0; in_place <= 1; in_place++) {
            /* Gather */
            for (int i = 0; i < count; i++)
                s[i] = val(me, root, i);
            for (int i = 0; i < count * n; i++)
                d[i] = me == root && in_place && i / (count ? count : 1) == me ? val(me, root, i % count) : -1;
            const void *sb = in_place && me == root ? MPI_IN_PLACE : s;
            RUN(mode, MPI_Gather(sb, count, MPI_INT, d, count, MPI_INT, root, comm),
                MPI_Igather(sb, count, MPI_INT, d, count, MPI_INT, root, comm, &req_),
                INIT(Gather)(sb, count, MPI_INT, d, count, MPI_INT, root, comm, MPI_INFO_NULL, &req_), (void)0);
            for (int i = 0; me == root && i < count * n; i++)
                if (d[i] != val(i / count, root, i % count)) {
                    FAIL("%s gather count %d root %d%s n=%d: [%d] = %d", mode_name[mode], count, root,
                         in_place ? " in place" : "", n, i, d[i]);
                    break;
                }
            /* Gatherv */
            for (int i = 0; i < counts[me]; i++)
                s[i] = val(me, root, i);
            for (int i = 0; i < total; i++)
                d[i] = -1;
            if (me == root && in_place)
                for (int i = 0; i < counts[me]; i++)
                    d[displs[me] + i] = val(me, root, i);
            RUN(mode, MPI_Gatherv(sb, counts[me], MPI_INT, d, counts, displs, MPI_INT, root, comm),
                MPI_Igatherv(sb, counts[me], MPI_INT, d, counts, displs, MPI_INT, root, comm, &req_),
                INIT(Gatherv)(sb, counts[me], MPI_INT, d, counts, displs, MPI_INT, root, comm,
                                 MPI_INFO_NULL, &req_), (void)0);
            for (int r = 0; me == root && r < n; r++)
                for (int i = 0; i < counts[r]; i++)
                    if (d[displs[r] + i] != val(r, root, i)) {
                        FAIL("%s gatherv count %d root %d n=%d: block %d [%d] = %d", mode_name[mode],
                             count, root, n, r, i, d[displs[r] + i]);
                        r = n;
                        break;
                    }
            /* Scatter */
            for (int i = 0; i < count * n; i++)
                s[i] = me == root ? val(root, i / count, i % count) : -1;
            for (int i = 0; i < count; i++)
                d[i] = -1;
            void *rb = in_place && me == root ? MPI_IN_PLACE : d;
            RUN(mode, MPI_Scatter(s, count, MPI_INT, rb, count, MPI_INT, root, comm),
                MPI_Iscatter(s, count, MPI_INT, rb, count, MPI_INT, root, comm, &req_),
                INIT(Scatter)(s, count, MPI_INT, rb, count, MPI_INT, root, comm, MPI_INFO_NULL, &req_), (void)0);
            for (int i = 0; rb != MPI_IN_PLACE && i < count; i++)
                if (d[i] != val(root, me, i)) {
                    FAIL("%s scatter count %d root %d n=%d: [%d] = %d", mode_name[mode], count, root, n, i, d[i]);
                    break;
                }
            /* Scatterv */
            for (int r = 0; me == root && r < n; r++)
                for (int i = 0; i < counts[r]; i++)
                    s[displs[r] + i] = val(root, r, i);
            for (int i = 0; i < counts[me]; i++)
                d[i] = -1;
            RUN(mode, MPI_Scatterv(s, counts, displs, MPI_INT, rb, counts[me], MPI_INT, root, comm),
                MPI_Iscatterv(s, counts, displs, MPI_INT, rb, counts[me], MPI_INT, root, comm, &req_),
                INIT(Scatterv)(s, counts, displs, MPI_INT, rb, counts[me], MPI_INT, root, comm,
                                  MPI_INFO_NULL, &req_), (void)0);
            for (int i = 0; rb != MPI_IN_PLACE && i < counts[me]; i++)
                if (d[i] != val(root, me, i)) {
                    FAIL("%s scatterv count %d root %d n=%d: [%d] = %d", mode_name[mode], count, root, n, i, d[i]);
                    break;
                }
        }
    }
    free(s);
    free(d);
    free(counts);
    free(displs);
}

static void check_spread(MPI_Comm comm, int mode, int count)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    size_t big = (2 * (size_t)count + 4) * (size_t)n + 1;
    int *s = malloc(big * sizeof *s), *d = malloc(big * sizeof *d);
    int *sc = malloc(4 * n * sizeof *sc), *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
    for (int in_place = 0; in_place <= 1; in_place++) {
        /* Allgatherv: rank r has count + r % 3 elements, placed backwards, then in
         * rank order (where the schedule can use the receive buffer as it is) */
        for (int order = 0; order < 2; order++) {
            int total = 0;
            for (int r = 0; r < n; r++)
                rc[r] = count + r % 3, total += rc[r];
            for (int r = 0, at = total, fwd = 0; r < n; fwd += rc[r], r++)
                rd[r] = order ? fwd : (at -= rc[r]);
            for (int i = 0; i < rc[me]; i++)
                s[i] = val(me, 0, i);
            for (int i = 0; i < total; i++)
                d[i] = -1;
            if (in_place)
                memcpy(d + rd[me], s, (size_t)rc[me] * sizeof *s);
            const void *sb = in_place ? MPI_IN_PLACE : s;
            RUN(mode, MPI_Allgatherv(sb, rc[me], MPI_INT, d, rc, rd, MPI_INT, comm),
                MPI_Iallgatherv(sb, rc[me], MPI_INT, d, rc, rd, MPI_INT, comm, &req_),
                INIT(Allgatherv)(sb, rc[me], MPI_INT, d, rc, rd, MPI_INT, comm, MPI_INFO_NULL, &req_), (void)0);
            for (int r = 0; r < n; r++)
                for (int i = 0; i < rc[r]; i++)
                    if (d[rd[r] + i] != val(r, 0, i)) {
                        FAIL("%s allgatherv count %d%s%s n=%d: block %d [%d] = %d", mode_name[mode], count,
                             in_place ? " in place" : "", order ? " in order" : "", n, r, i, d[rd[r] + i]);
                        r = n;
                        break;
                    }
        }
        /* Alltoallv: rank r sends count + (r + q) % 3 elements to rank q;
         * blocks placed backwards */
        int stotal = 0, rtotal = 0;
        for (int q = 0; q < n; q++)
            sc[q] = count + (me + q) % 3, rc[q] = count + (q + me) % 3, stotal += sc[q], rtotal += rc[q];
        for (int q = 0, a = stotal, b = rtotal; q < n; q++)
            sd[q] = a -= sc[q], rd[q] = b -= rc[q];
        for (int q = 0; q < n; q++)
            for (int i = 0; i < sc[q]; i++)
                s[sd[q] + i] = val(me, q, i);
        for (int i = 0; i < rtotal; i++)
            d[i] = -1;
#define REFILL_V                                                                             \
    for (int q = 0; in_place && q < n; q++) /* the same counts and displacements both ways */ \
        for (int i = 0; i < rc[q]; i++)                                                      \
            d[rd[q] + i] = val(me, q, i)
        REFILL_V;
        const void *sb = in_place ? MPI_IN_PLACE : s;
        RUN(mode, MPI_Alltoallv(sb, sc, sd, MPI_INT, d, rc, rd, MPI_INT, comm),
            MPI_Ialltoallv(sb, sc, sd, MPI_INT, d, rc, rd, MPI_INT, comm, &req_),
            INIT(Alltoallv)(sb, sc, sd, MPI_INT, d, rc, rd, MPI_INT, comm, MPI_INFO_NULL, &req_),
            REFILL_V);
        for (int q = 0; q < n; q++)
            for (int i = 0; i < rc[q]; i++)
                if (d[rd[q] + i] != val(q, me, i)) {
                    FAIL("%s alltoallv count %d%s n=%d: from %d [%d] = %d", mode_name[mode], count,
                         in_place ? " in place" : "", n, q, i, d[rd[q] + i]);
                    q = n;
                    break;
                }
        /* Alltoallw: byte displacements, MPI_INT or a contiguous pair of
         * ints by block (the same signature on both sides) */
        MPI_Datatype pair, *st = malloc(2 * n * sizeof *st), *rt = st + n;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        int *scw = malloc(4 * n * sizeof *scw), *sdw = scw + n, *rcw = scw + 2 * n, *rdw = scw + 3 * n;
        for (int q = 0; q < n; q++) {
            int ints = 2 * count + (me + q) % 2 * 2; /* even: a whole number of pairs */
            st[q] = (me + q) % 2 ? pair : MPI_INT, scw[q] = st[q] == pair ? ints / 2 : ints;
            rt[q] = (q * 3 + me) % 2 ? pair : MPI_INT, rcw[q] = rt[q] == pair ? ints / 2 : ints;
            sdw[q] = q * (int)sizeof(int) * (2 * count + 2);
            rdw[q] = (n - 1 - q) * (int)sizeof(int) * (2 * count + 2);
        }
        for (int q = 0; q < n; q++)
            for (int i = 0; i < 2 * count + (me + q) % 2 * 2; i++)
                s[sdw[q] / 4 + i] = val(me, q, i);
        for (size_t i = 0; i < big; i++)
            d[i] = -1;
        const void *sbw = s;
#define REFILL_W                                                                             \
    for (int q = 0; in_place && q < n; q++) /* the receive side's layout: the input there */ \
        for (int i = 0; i < 2 * count + (me + q) % 2 * 2; i++)                               \
            d[rdw[q] / 4 + i] = val(me, q, i)
        REFILL_W;
        if (in_place)
            sbw = MPI_IN_PLACE;
        RUN(mode, MPI_Alltoallw(sbw, scw, sdw, st, d, rcw, rdw, rt, comm),
            MPI_Ialltoallw(sbw, scw, sdw, st, d, rcw, rdw, rt, comm, &req_),
            INIT(Alltoallw)(sbw, scw, sdw, st, d, rcw, rdw, rt, comm, MPI_INFO_NULL, &req_),
            REFILL_W);
        for (int q = 0; q < n; q++)
            for (int i = 0; i < 2 * count + (q + me) % 2 * 2; i++)
                if (d[rdw[q] / 4 + i] != val(q, me, i)) {
                    FAIL("%s alltoallw count %d%s n=%d: from %d [%d] = %d", mode_name[mode], count,
                         in_place ? " in place" : "", n, q, i, d[rdw[q] / 4 + i]);
                    q = n;
                    break;
                }
        MPI_Type_free(&pair);
        free(st);
        free(scw);
    }
    free(s);
    free(d);
    free(sc);
}

/* The v-variants with a strided datatype (every other int) on the side
 * that holds n blocks and MPI_INT on the other (equal signatures, one side
 * packed and unpacked block by block; Alltoallv both ways round), empty
 * blocks (every fourth rank),
 * blocking, at two roots, Gather(v) also in place (Gather: equal blocks).  Values outside the
 * blocks must stay as they were. */
static void check_v_strided(MPI_Comm comm, int count)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Datatype every2;
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &every2);
    MPI_Type_commit(&every2);
    int *cnt = malloc(4 * (size_t)n * sizeof *cnt), *dsp = cnt + n, *cnt2 = cnt + 2 * n,
        *dsp2 = cnt + 3 * n, total = 0;
    for (int r = 0; r < n; r++)
        cnt[r] = r % 4 == 1 ? 0 : count + r, total += cnt[r];
    for (int r = 0, at = total; r < n; r++)
        dsp[r] = at -= cnt[r];
    size_t big = 2 * (size_t)total + 2 * (size_t)(count + n) * (size_t)n + 8;
    int *s = malloc(big * sizeof *s), *d = malloc(big * sizeof *d);
    for (int root = 0; root < n; root += n > 1 ? n - 1 : 1)
        for (int in_place = 0; in_place <= 1; in_place++) {
            /* Gatherv: the root receives every other int */
            for (size_t i = 0; i < big; i++)
                d[i] = -1;
            for (int i = 0; i < cnt[me] || i < count; i++)
                s[i] = val(me, root, i);
            if (me == root && in_place)
                for (int i = 0; i < cnt[me]; i++)
                    d[2 * (dsp[me] + i)] = val(me, root, i);
            MPI_Gatherv(me == root && in_place ? MPI_IN_PLACE : s, cnt[me], MPI_INT, d, cnt, dsp,
                        every2, root, comm);
            for (int r = 0; me == root && r < n; r++)
                for (int i = 0; i < cnt[r]; i++)
                    if (d[2 * (dsp[r] + i)] != val(r, root, i) || d[2 * (dsp[r] + i) + 1] != -1) {
                        FAIL("strided gatherv count %d root %d%s n=%d: block %d [%d] = %d", count,
                             root, in_place ? " in place" : "", n, r, i, d[2 * (dsp[r] + i)]);
                        r = n;
                        break;
                    }
            /* Gather: the same with equal blocks */
            for (size_t i = 0; i < big; i++)
                d[i] = -1;
            if (me == root && in_place)
                for (int i = 0; i < count; i++)
                    d[2 * (me * count + i)] = val(me, root, i);
            MPI_Gather(me == root && in_place ? MPI_IN_PLACE : s, count, MPI_INT, d, count, every2,
                       root, comm);
            for (int i = 0; me == root && i < count * n; i++)
                if (d[2 * i] != val(i / count, root, i % count) || d[2 * i + 1] != -1) {
                    FAIL("strided gather count %d root %d%s n=%d: [%d] = %d", count, root,
                         in_place ? " in place" : "", n, i, d[2 * i]);
                    break;
                }
            /* Scatterv: the root sends every other int */
            for (int r = 0; r < n; r++)
                for (int i = 0; i < cnt[r]; i++)
                    s[2 * (dsp[r] + i)] = val(root, r, i), s[2 * (dsp[r] + i) + 1] = -7;
            for (int i = 0; i < cnt[me] + 1; i++)
                d[i] = -1;
            MPI_Scatterv(s, cnt, dsp, every2, me == root && in_place ? MPI_IN_PLACE : d, cnt[me],
                         MPI_INT, root, comm);
            for (int i = 0; !(me == root && in_place) && i <= cnt[me]; i++)
                if (d[i] != (i < cnt[me] ? val(root, me, i) : -1)) {
                    FAIL("strided scatterv count %d root %d n=%d: [%d] = %d", count, root, n, i,
                         d[i]);
                    break;
                }
        }
    /* Alltoallv: every other int on the send side, MPI_INT on the receive side */
    int stotal = 0, rtotal = 0;
    for (int q = 0; q < n; q++) {
        cnt[q] = (me + q) % 4 == 1 ? 0 : count + (me + q) % 3, stotal += cnt[q];
        cnt2[q] = (q + me) % 4 == 1 ? 0 : count + (q + me) % 3, rtotal += cnt2[q];
    }
    for (int q = 0, a = stotal, b = rtotal; q < n; q++)
        dsp[q] = a -= cnt[q], dsp2[q] = b -= cnt2[q];
    for (int q = 0; q < n; q++)
        for (int i = 0; i < cnt[q]; i++)
            s[2 * (dsp[q] + i)] = val(me, q, i), s[2 * (dsp[q] + i) + 1] = -7;
    for (int i = 0; i <= rtotal; i++)
        d[i] = -1;
    MPI_Alltoallv(s, cnt, dsp, every2, d, cnt2, dsp2, MPI_INT, comm);
    for (int q = 0; q < n; q++)
        for (int i = 0; i < cnt2[q]; i++)
            if (d[dsp2[q] + i] != val(q, me, i)) {
                FAIL("strided alltoallv count %d n=%d: from %d [%d] = %d", count, n, q, i,
                     d[dsp2[q] + i]);
                q = n;
                break;
            }
    if (d[rtotal] != -1)
        FAIL("strided alltoallv count %d n=%d: wrote past the blocks", count, n);
    /* ... and every other int on the receive side (unpacked from scratch) */
    for (int q = 0; q < n; q++)
        for (int i = 0; i < cnt[q]; i++)
            s[dsp[q] + i] = val(me, q, i);
    for (int i = 0; i <= 2 * rtotal; i++)
        d[i] = -1;
    MPI_Alltoallv(s, cnt, dsp, MPI_INT, d, cnt2, dsp2, every2, comm);
    for (int q = 0; q < n; q++)
        for (int i = 0; i < cnt2[q]; i++)
            if (d[2 * (dsp2[q] + i)] != val(q, me, i) || d[2 * (dsp2[q] + i) + 1] != -1) {
                FAIL("alltoallv into every other int count %d n=%d: from %d [%d] = %d", count, n,
                     q, i, d[2 * (dsp2[q] + i)]);
                q = n;
                break;
            }
    MPI_Type_free(&every2);
    free(cnt);
    free(s);
    free(d);
}

/* One double resized to a 64-byte extent, reduced with a commutative user
 * op (Allreduce, Reduce at the first and the last rank): the value right,
 * the extent's other 56 bytes as the caller left them. */
static void sum_double(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((double *)inout)[8 * i] += ((double *)in)[8 * i];
}

static void check_padded(MPI_Comm comm)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Datatype padded;
    MPI_Type_create_resized(MPI_DOUBLE, 0, 64, &padded);
    MPI_Type_commit(&padded);
    MPI_Op op;
    MPI_Op_create(sum_double, 1, &op);
    for (int which = 0; which < 3; which++) {
        int root = which == 1 ? 0 : n - 1;
        double s[8] = {me + 1.0}, d[8];
        memset(d, 0x5a, sizeof d);
        unsigned char pad[56];
        memset(pad, 0x5a, sizeof pad);
        if (which == 0)
            MPI_Allreduce(s, d, 1, padded, op, comm);
        else
            MPI_Reduce(s, d, 1, padded, op, root, comm);
        if ((which == 0 || me == root) && (d[0] != n * (n + 1) / 2.0 || memcmp(d + 1, pad, 56)))
            FAIL("%s of one padded double n=%d: %g, padding %s", which ? "reduce" : "allreduce",
                 n, d[0], memcmp(d + 1, pad, 56) ? "written" : "intact");
    }
    MPI_Op_free(&op);
    MPI_Type_free(&padded);
}

/* Scan, Exscan, Allreduce, Reduce with the non-commutative affine op. */
static void check_ordered(MPI_Comm comm, int mode, int count, MPI_Datatype affine, MPI_Op op)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    affine_t *s = malloc(((size_t)count + 1) * sizeof *s), *d = malloc(((size_t)count + 1) * sizeof *d);
    for (int kind = 0; kind < 4; kind++)
        for (int in_place = 0; in_place <= 1; in_place++) {
            int root = (count + kind) % n;
            for (int i = 0; i < count; i++)
                s[i] = affine_of(me, i), d[i] = in_place ? s[i] : (affine_t){-1, -1};
            const void *sb = in_place && (kind != 3 || me == root) ? MPI_IN_PLACE : s;
            if (kind == 0)
                RUN(mode, MPI_Scan(sb, d, count, affine, op, comm),
                    MPI_Iscan(sb, d, count, affine, op, comm, &req_),
                    INIT(Scan)(sb, d, count, affine, op, comm, MPI_INFO_NULL, &req_),
                    memcpy(d, s, (size_t)count * sizeof *d));
            else if (kind == 1)
                RUN(mode, MPI_Exscan(sb, d, count, affine, op, comm),
                    MPI_Iexscan(sb, d, count, affine, op, comm, &req_),
                    INIT(Exscan)(sb, d, count, affine, op, comm, MPI_INFO_NULL, &req_),
                    memcpy(d, s, (size_t)count * sizeof *d));
            else if (kind == 2)
                RUN(mode, MPI_Allreduce(sb, d, count, affine, op, comm),
                    MPI_Iallreduce(sb, d, count, affine, op, comm, &req_),
                    INIT(Allreduce)(sb, d, count, affine, op, comm, MPI_INFO_NULL, &req_),
                    memcpy(d, s, (size_t)count * sizeof *d));
            else
                RUN(mode, MPI_Reduce(sb, d, count, affine, op, root, comm),
                    MPI_Ireduce(sb, d, count, affine, op, root, comm, &req_),
                    INIT(Reduce)(sb, d, count, affine, op, root, comm, MPI_INFO_NULL, &req_),
                    memcpy(d, s, (size_t)count * sizeof *d));
            int upto = kind == 0 ? me : kind == 1 ? me - 1 : n - 1;
            if ((kind == 1 && me == 0) || (kind == 3 && me != root))
                continue;
            for (int i = 0; i < count; i++) {
                affine_t want = affine_of(0, i);
                for (int r = 1; r <= upto; r++)
                    want = compose(want, affine_of(r, i));
                if (d[i].a != want.a || d[i].b != want.b) {
                    static const char *names[] = {"scan", "exscan", "allreduce", "reduce"};
                    FAIL("%s %s (non-commutative) count %d%s n=%d: [%d] = (%d,%d), want (%d,%d)",
                         mode_name[mode], names[kind], count, in_place ? " in place" : "", n, i,
                         d[i].a, d[i].b, want.a, want.b);
                    break;
                }
            }
        }
    free(s);
    free(d);
}

/* Barrier in each mode, with the application's messages around it (it
 * completes on every rank; no deadlock, no message taken for its own). */
static void check_barrier(MPI_Comm comm, int mode)
{
    int n, me, token = -1;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    for (int round = 0; round < 3; round++) {
        MPI_Request r;
        if (me == n - 1 && n > 1)
            MPI_Irecv(&token, 1, MPI_INT, 0, 99, comm, &r);
        if (me == 0 && n > 1)
            MPI_Send(&round, 1, MPI_INT, n - 1, 99, comm);
        RUN(mode, MPI_Barrier(comm), MPI_Ibarrier(comm, &req_),
            INIT(Barrier)(comm, MPI_INFO_NULL, &req_), (void)0);
        if (me == n - 1 && n > 1) {
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            if (token != round)
                FAIL("%s barrier round %d: token %d", mode_name[mode], round, token);
        }
    }
}

/* ---- intercommunicators ----------------------------------------------------------- */

/* Element i of what rank r of group g sends to rank (or block) q. */
static int gval(int g, int r, int q, int i) { return val(r + 100 * g, q, i); }

/* d[0..len) against x_0 op ... op x_{rn-1} of the remote group's
 * affine_of(q + 100 * rg, first + i). */
static void check_remote_affine(const char *what, int mode, int count, const affine_t *d,
                                int len, int first, int rg, int rn)
{
    for (int i = 0; i < len; i++) {
        affine_t want = affine_of(100 * rg, first + i);
        for (int q = 1; q < rn; q++)
            want = compose(want, affine_of(q + 100 * rg, first + i));
        if (d[i].a != want.a || d[i].b != want.b) {
            FAIL("%s inter %s count %d: [%d] = (%d,%d), want (%d,%d)", mode_name[mode], what,
                 count, i, d[i].a, d[i].b, want.a, want.b);
            return;
        }
    }
}

/* The collectives of an intercommunicator whose groups are g = 0 and 1
 * (this rank's: g), rooted ones from each side, every result checked. */
static void check_inter(MPI_Comm inter, int g, int mode, int count, MPI_Datatype affine, MPI_Op op)
{
    int n, rn, me;
    MPI_Comm_size(inter, &n);
    MPI_Comm_remote_size(inter, &rn);
    MPI_Comm_rank(inter, &me);
    int most = n > rn ? n : rn, big = (count + 3) * most * most + 8;
    int *s = malloc(big * sizeof *s), *d = malloc(big * sizeof *d);
    int *sc = malloc(4 * most * sizeof *sc), *sd = sc + most, *rc = sc + 2 * most, *rd = sc + 3 * most;
    affine_t *as = malloc(big * sizeof *as), *ad = malloc(big * sizeof *ad);
    RUN(mode, MPI_Barrier(inter), MPI_Ibarrier(inter, &req_),
        INIT(Barrier)(inter, MPI_INFO_NULL, &req_), (void)0);
    for (int rg = 0; rg < 2; rg++) { /* the root's group */
        int mine = g == rg, root = mine ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int from = 1 - rg; /* the group that is not the root's */
        /* Bcast from rank 0 of group rg */
        for (int i = 0; i < count; i++)
            s[i] = root == MPI_ROOT ? gval(rg, 0, 0, i) : -1;
        RUN(mode, MPI_Bcast(s, count, MPI_INT, root, inter),
            MPI_Ibcast(s, count, MPI_INT, root, inter, &req_),
            INIT(Bcast)(s, count, MPI_INT, root, inter, MPI_INFO_NULL, &req_), (void)0);
        for (int i = 0; !mine && i < count; i++)
            if (s[i] != gval(rg, 0, 0, i)) {
                FAIL("%s inter bcast count %d from group %d: [%d] = %d", mode_name[mode], count, rg, i, s[i]);
                break;
            }
        /* Gather and Gatherv: remote rank q gives count (+ q % 3) */
        for (int v = 0; v < 2; v++) {
            int total = 0;
            for (int q = 0; q < rn; q++)
                rc[q] = count + (v ? q % 3 : 0), total += rc[q];
            for (int q = 0, at = total; q < rn; q++)
                rd[q] = v ? (at -= rc[q]) : q * count;
            int mc = count + (v ? me % 3 : 0);
            for (int i = 0; i < mc; i++)
                s[i] = gval(g, me, 0, i);
            for (int i = 0; i < big; i++)
                d[i] = -1;
            if (v)
                RUN(mode, MPI_Gatherv(s, mc, MPI_INT, d, rc, rd, MPI_INT, root, inter),
                    MPI_Igatherv(s, mc, MPI_INT, d, rc, rd, MPI_INT, root, inter, &req_),
                    INIT(Gatherv)(s, mc, MPI_INT, d, rc, rd, MPI_INT, root, inter, MPI_INFO_NULL, &req_),
                    (void)0);
            else
                RUN(mode, MPI_Gather(s, count, MPI_INT, d, count, MPI_INT, root, inter),
                    MPI_Igather(s, count, MPI_INT, d, count, MPI_INT, root, inter, &req_),
                    INIT(Gather)(s, count, MPI_INT, d, count, MPI_INT, root, inter, MPI_INFO_NULL, &req_),
                    (void)0);
            for (int q = 0; root == MPI_ROOT && q < rn; q++)
                for (int i = 0; i < rc[q]; i++)
                    if (d[rd[q] + i] != gval(from, q, 0, i)) {
                        FAIL("%s inter gather%s count %d: block %d [%d] = %d", mode_name[mode],
                             v ? "v" : "", count, q, i, d[rd[q] + i]);
                        q = rn;
                        break;
                    }
            /* Scatter(v): the same blocks the other way */
            for (int q = 0; q < rn; q++)
                for (int i = 0; i < rc[q]; i++)
                    s[rd[q] + i] = root == MPI_ROOT ? gval(rg, 0, q, i) : -1;
            for (int i = 0; i < mc; i++)
                d[i] = -1;
            if (v)
                RUN(mode, MPI_Scatterv(s, rc, rd, MPI_INT, d, mc, MPI_INT, root, inter),
                    MPI_Iscatterv(s, rc, rd, MPI_INT, d, mc, MPI_INT, root, inter, &req_),
                    INIT(Scatterv)(s, rc, rd, MPI_INT, d, mc, MPI_INT, root, inter, MPI_INFO_NULL, &req_),
                    (void)0);
            else
                RUN(mode, MPI_Scatter(s, count, MPI_INT, d, count, MPI_INT, root, inter),
                    MPI_Iscatter(s, count, MPI_INT, d, count, MPI_INT, root, inter, &req_),
                    INIT(Scatter)(s, count, MPI_INT, d, count, MPI_INT, root, inter, MPI_INFO_NULL, &req_),
                    (void)0);
            for (int i = 0; !mine && i < mc; i++)
                if (d[i] != gval(rg, 0, me, i)) {
                    FAIL("%s inter scatter%s count %d: [%d] = %d", mode_name[mode], v ? "v" : "",
                         count, i, d[i]);
                    break;
                }
        }
        /* Reduce (non-commutative) to rank 0 of group rg */
        for (int i = 0; i < count; i++)
            as[i] = affine_of(me + 100 * g, i), ad[i] = (affine_t){-1, -1};
        RUN(mode, MPI_Reduce(as, ad, count, affine, op, root, inter),
            MPI_Ireduce(as, ad, count, affine, op, root, inter, &req_),
            INIT(Reduce)(as, ad, count, affine, op, root, inter, MPI_INFO_NULL, &req_), (void)0);
        if (root == MPI_ROOT)
            check_remote_affine("reduce", mode, count, ad, count, 0, from, rn);
    }
    /* Allgather(v): rank q of the remote group gives count (+ q % 3) */
    for (int v = 0; v < 2; v++) {
        int total = 0, mc = count + (v ? me % 3 : 0);
        for (int q = 0; q < rn; q++)
            rc[q] = count + (v ? q % 3 : 0), total += rc[q];
        for (int q = 0, at = total; q < rn; q++)
            rd[q] = v ? (at -= rc[q]) : q * count;
        for (int i = 0; i < mc; i++)
            s[i] = gval(g, me, 0, i);
        for (int i = 0; i < big; i++)
            d[i] = -1;
        if (v)
            RUN(mode, MPI_Allgatherv(s, mc, MPI_INT, d, rc, rd, MPI_INT, inter),
                MPI_Iallgatherv(s, mc, MPI_INT, d, rc, rd, MPI_INT, inter, &req_),
                INIT(Allgatherv)(s, mc, MPI_INT, d, rc, rd, MPI_INT, inter, MPI_INFO_NULL, &req_), (void)0);
        else
            RUN(mode, MPI_Allgather(s, count, MPI_INT, d, count, MPI_INT, inter),
                MPI_Iallgather(s, count, MPI_INT, d, count, MPI_INT, inter, &req_),
                INIT(Allgather)(s, count, MPI_INT, d, count, MPI_INT, inter, MPI_INFO_NULL, &req_), (void)0);
        for (int q = 0; q < rn; q++)
            for (int i = 0; i < rc[q]; i++)
                if (d[rd[q] + i] != gval(1 - g, q, 0, i)) {
                    FAIL("%s inter allgather%s count %d: block %d [%d] = %d", mode_name[mode],
                         v ? "v" : "", count, q, i, d[rd[q] + i]);
                    q = rn;
                    break;
                }
    }
    /* Alltoall, Alltoallv (count + (me + q) % 3 between me and remote q),
     * Alltoallw (the same, byte displacements) */
    for (int v = 0; v < 3; v++) {
        int stotal = 0, rtotal = 0, *sdw = sd, *rdw = rd;
        MPI_Datatype ints[64];
        for (int q = 0; q < rn && q < 64; q++)
            ints[q] = MPI_INT;
        for (int q = 0; q < rn; q++)
            sc[q] = rc[q] = count + (v ? (me + q) % 3 : 0), stotal += sc[q], rtotal += rc[q];
        for (int q = 0, a = stotal, b = rtotal; q < rn; q++)
            sd[q] = v ? (a -= sc[q]) : q * count, rd[q] = v ? (b -= rc[q]) : q * count;
        for (int q = 0; q < rn; q++)
            for (int i = 0; i < sc[q]; i++)
                s[sd[q] + i] = gval(g, me, q, i);
        for (int i = 0; i < big; i++)
            d[i] = -1;
        if (v == 2)
            for (int q = 0; q < rn; q++)
                sdw[q] *= (int)sizeof(int), rdw[q] *= (int)sizeof(int);
        if (v == 0)
            RUN(mode, MPI_Alltoall(s, count, MPI_INT, d, count, MPI_INT, inter),
                MPI_Ialltoall(s, count, MPI_INT, d, count, MPI_INT, inter, &req_),
                INIT(Alltoall)(s, count, MPI_INT, d, count, MPI_INT, inter, MPI_INFO_NULL, &req_), (void)0);
        else if (v == 1)
            RUN(mode, MPI_Alltoallv(s, sc, sd, MPI_INT, d, rc, rd, MPI_INT, inter),
                MPI_Ialltoallv(s, sc, sd, MPI_INT, d, rc, rd, MPI_INT, inter, &req_),
                INIT(Alltoallv)(s, sc, sd, MPI_INT, d, rc, rd, MPI_INT, inter, MPI_INFO_NULL, &req_), (void)0);
        else if (rn <= 64)
            RUN(mode, MPI_Alltoallw(s, sc, sdw, ints, d, rc, rdw, ints, inter),
                MPI_Ialltoallw(s, sc, sdw, ints, d, rc, rdw, ints, inter, &req_),
                INIT(Alltoallw)(s, sc, sdw, ints, d, rc, rdw, ints, inter, MPI_INFO_NULL, &req_), (void)0);
        for (int q = 0; (v < 2 || rn <= 64) && q < rn; q++)
            for (int i = 0; i < rc[q]; i++)
                if (d[rd[q] / (v == 2 ? (int)sizeof(int) : 1) + i] != gval(1 - g, q, me, i)) {
                    FAIL("%s inter alltoall%s count %d: from %d [%d] = %d", mode_name[mode],
                         v == 1 ? "v" : v == 2 ? "w" : "", count, q, i,
                         d[rd[q] / (v == 2 ? (int)sizeof(int) : 1) + i]);
                    q = rn;
                    break;
                }
    }
    /* Allreduce, Reduce_scatter_block, Reduce_scatter (non-commutative):
     * both groups' inputs have n * rn * count (+ 1) elements */
    int total = count * n * rn;
    for (int i = 0; i < total + 1; i++)
        as[i] = affine_of(me + 100 * g, i), ad[i] = (affine_t){-1, -1};
    RUN(mode, MPI_Allreduce(as, ad, count, affine, op, inter),
        MPI_Iallreduce(as, ad, count, affine, op, inter, &req_),
        INIT(Allreduce)(as, ad, count, affine, op, inter, MPI_INFO_NULL, &req_), (void)0);
    check_remote_affine("allreduce", mode, count, ad, count, 0, 1 - g, rn);
    int each = count * rn;
    for (int i = 0; i < total + 1; i++)
        ad[i] = (affine_t){-1, -1};
    RUN(mode, MPI_Reduce_scatter_block(as, ad, each, affine, op, inter),
        MPI_Ireduce_scatter_block(as, ad, each, affine, op, inter, &req_),
        INIT(Reduce_scatter_block)(as, ad, each, affine, op, inter, MPI_INFO_NULL, &req_), (void)0);
    check_remote_affine("reduce_scatter_block", mode, count, ad, each, me * each, 1 - g, rn);
    for (int r = 0; r < n; r++) /* total + 1 split unevenly: the remainder to the last */
        rc[r] = (total + 1) / n + (r == n - 1 ? (total + 1) % n : 0);
    for (int i = 0; i < total + 1; i++)
        ad[i] = (affine_t){-1, -1};
    RUN(mode, MPI_Reduce_scatter(as, ad, rc, affine, op, inter),
        MPI_Ireduce_scatter(as, ad, rc, affine, op, inter, &req_),
        INIT(Reduce_scatter)(as, ad, rc, affine, op, inter, MPI_INFO_NULL, &req_), (void)0);
    check_remote_affine("reduce_scatter", mode, count, ad, rc[me], me * ((total + 1) / n), 1 - g, rn);
    free(s);
    free(d);
    free(sc);
    free(as);
    free(ad);
}

/* ---- neighbourhood collectives ------------------------------------------------------ */

enum { CART, GRAPH, DIST_GRAPH, NTOPOS };
static const char *topo_name[] = {"cart", "graph", "dist_graph"};

/* Rank r's out-neighbours in the graph topologies (the graph's: symmetric,
 * with repeated edges and a self loop; the distributed graph's: directed). */
static int graph_out(int kind, int r, int n, int *out)
{
    if (kind == GRAPH) {
        int e[] = {r + 1, r - 1 + n, r + 1, r - 1 + n, r};
        for (int j = 0; j < 5; j++)
            out[j] = e[j] % n;
        return 5;
    }
    int e[] = {r + 1, r + 1, r + 2, r};
    for (int j = 0; j < 4; j++)
        out[j] = e[j] % n;
    return 4;
}

/* Builds the topology; in[], out[]: this rank's neighbours as MPI lists them. */
static MPI_Comm make_topo(int kind, int *in, int *nin, int *out, int *nout)
{
    int n, me;
    MPI_Comm c;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (kind == CART) { /* periodic dimension 0, not dimension 1 */
        int dims[2] = {0, 0}, periods[2] = {1, 0};
        MPI_Dims_create(n, 2, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c);
        for (int d = 0; d < 2; d++)
            MPI_Cart_shift(c, d, 1, &in[2 * d], &in[2 * d + 1]);
        *nin = *nout = 4;
        memcpy(out, in, 4 * sizeof *in);
    } else if (kind == GRAPH) {
        int *index = malloc(n * sizeof *index), *edges = malloc(5 * n * sizeof *edges);
        for (int r = 0; r < n; r++)
            index[r] = 5 * (r + 1), graph_out(GRAPH, r, n, edges + 5 * r);
        MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &c);
        MPI_Graph_neighbors_count(c, me, nin);
        MPI_Graph_neighbors(c, me, *nin, in);
        *nout = *nin;
        memcpy(out, in, (size_t)*nin * sizeof *in);
        free(index);
        free(edges);
    } else {
        int o[8], no;
        *nout = graph_out(DIST_GRAPH, me, n, out), *nin = 0;
        for (int r = 0; r < n; r++) { /* in-edges in the senders' order */
            no = graph_out(DIST_GRAPH, r, n, o);
            for (int j = 0; j < no; j++)
                if (o[j] == me)
                    in[(*nin)++] = r;
        }
        int ni, nq, w, wi[16], wo[16]; /* weights: MPI_UNWEIGHTED upsets gcc's bounds checks */
        for (int i = 0; i < 16; i++)
            wi[i] = wo[i] = 1;
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, *nin, in, wi, *nout, out, wo,
                                       MPI_INFO_NULL, 0, &c);
        MPI_Dist_graph_neighbors_count(c, &ni, &nq, &w);
        MPI_Dist_graph_neighbors(c, ni, in, wi, nq, out, wo);
    }
    return c;
}

/* The out-slot of in[i] whose block lands in this rank's in-slot i:
 * Cartesian, the other direction of the dimension (MPI-4.1 8.6); graphs,
 * the k-th edge to this rank for the k-th edge from that rank. */
static int sender_slot(int kind, int me, int n, const int *in, int i)
{
    if (kind == CART)
        return i ^ 1;
    int k = 0, o[8], no = graph_out(kind, in[i], n, o);
    for (int j = 0; j < i; j++)
        k += in[j] == in[i];
    for (int j = 0; j < no; j++)
        if (o[j] == me && k-- == 0)
            return j;
    return -1;
}

static void check_neighbor(int kind, int mode, int count)
{
    int n, me, in[16], out[16], nin, nout, dims[2] = {0, 0};
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Dims_create(n, 2, dims);
    if (kind == CART && mode != BLOCKING && dims[0] <= 2 && getenv("MORE_SKIP_CART_PAIRS"))
        return;
    MPI_Comm c = make_topo(kind, in, &nin, out, &nout);
    MPI_Comm_rank(c, &me);
    int big = 16 * (2 * count + 8);
    int *s = malloc(big * sizeof *s), *d = malloc(big * sizeof *d);
    int sc[16], rc[16], sd[16], rd[16];
    MPI_Aint sdw[16], rdw[16];
    MPI_Datatype st[16], rt[16], pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    for (int v = 0; v < 5; v++) { /* allgather(v), alltoall(v, w) */
        int gather = v < 2, varied = v == 1 || v >= 3;
        /* what goes on the edge from slot j of rank r: count + (r + j) % 3 ints (+ the same
         * again for w, in pairs where (r + j) is odd) */
#define EDGE(r, j) (count + (varied ? ((r) + (gather ? 0 : (j))) % 3 : 0) + (v == 4 ? count + ((r) + (j)) % 3 : 0))
        int stotal = 0, rtotal = 0;
        for (int j = 0; j < nout; j++)
            sc[j] = EDGE(me, j), stotal += sc[j];
        for (int i = 0; i < nin; i++) {
            int j = in[i] == MPI_PROC_NULL ? 0 : sender_slot(kind, me, n, in, i);
            rc[i] = in[i] == MPI_PROC_NULL ? 0 : EDGE(in[i], j), rtotal += rc[i];
        }
        for (int j = 0, a = stotal; j < nout; j++)
            sd[j] = gather ? 0 : varied ? (a -= sc[j]) : j * count;
        for (int i = 0, b = rtotal; i < nin; i++)
            rd[i] = varied ? (b -= rc[i]) : i * count;
        for (int j = 0; j < nout; j++)
            for (int e = 0; e < sc[j]; e++)
                s[sd[j] + e] = val(me, gather ? 0 : j, e);
        for (int i = 0; i < big; i++)
            d[i] = -1;
        for (int j = 0; j < nout; j++) { /* w: pairs or ints, byte displacements */
            st[j] = (me + j) % 2 ? pair : MPI_INT;
            sdw[j] = (MPI_Aint)sd[j] * (MPI_Aint)sizeof(int);
            if (v == 4 && st[j] == pair)
                sc[j] /= 2;
        }
        for (int i = 0; i < nin; i++)
            rt[i] = MPI_INT, rdw[i] = (MPI_Aint)rd[i] * (MPI_Aint)sizeof(int);
        if (v == 0)
            RUN(mode, MPI_Neighbor_allgather(s, count, MPI_INT, d, count, MPI_INT, c),
                MPI_Ineighbor_allgather(s, count, MPI_INT, d, count, MPI_INT, c, &req_),
                INIT(Neighbor_allgather)(s, count, MPI_INT, d, count, MPI_INT, c, MPI_INFO_NULL, &req_), (void)0);
        else if (v == 1)
            RUN(mode, MPI_Neighbor_allgatherv(s, sc[0], MPI_INT, d, rc, rd, MPI_INT, c),
                MPI_Ineighbor_allgatherv(s, sc[0], MPI_INT, d, rc, rd, MPI_INT, c, &req_),
                INIT(Neighbor_allgatherv)(s, sc[0], MPI_INT, d, rc, rd, MPI_INT, c, MPI_INFO_NULL, &req_), (void)0);
        else if (v == 2)
            RUN(mode, MPI_Neighbor_alltoall(s, count, MPI_INT, d, count, MPI_INT, c),
                MPI_Ineighbor_alltoall(s, count, MPI_INT, d, count, MPI_INT, c, &req_),
                INIT(Neighbor_alltoall)(s, count, MPI_INT, d, count, MPI_INT, c, MPI_INFO_NULL, &req_), (void)0);
        else if (v == 3)
            RUN(mode, MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, d, rc, rd, MPI_INT, c),
                MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INT, d, rc, rd, MPI_INT, c, &req_),
                INIT(Neighbor_alltoallv)(s, sc, sd, MPI_INT, d, rc, rd, MPI_INT, c, MPI_INFO_NULL, &req_), (void)0);
        else
            RUN(mode, MPI_Neighbor_alltoallw(s, sc, sdw, st, d, rc, rdw, rt, c),
                MPI_Ineighbor_alltoallw(s, sc, sdw, st, d, rc, rdw, rt, c, &req_),
                INIT(Neighbor_alltoallw)(s, sc, sdw, st, d, rc, rdw, rt, c, MPI_INFO_NULL, &req_), (void)0);
#undef EDGE
        static const char *names[] = {"allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"};
        for (int i = 0; i < nin; i++) {
            int j = in[i] == MPI_PROC_NULL ? -1 : sender_slot(kind, me, n, in, i);
            for (int e = 0; j >= 0 && e < rc[i]; e++)
                if (d[rd[i] + e] != val(in[i], gather ? 0 : j, e)) {
                    FAIL("%s neighbor_%s on a %s count %d n=%d: slot %d (from %d) [%d] = %d",
                         mode_name[mode], names[v], topo_name[kind], count, n, i, in[i], e,
                         d[rd[i] + e]);
                    i = nin;
                    break;
                }
        }
    }
    MPI_Type_free(&pair);
    free(s);
    free(d);
    MPI_Comm_free(&c);
}

static void check_reduce_local(void)
{
    int a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50};
    MPI_Reduce_local(a, b, 5, MPI_INT, MPI_SUM);
    for (int i = 0; i < 5; i++)
        if (b[i] != 11 * (i + 1))
            FAIL("reduce_local [%d] = %d", i, b[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me_world);
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    MPI_Datatype affine;
    MPI_Op op;
    MPI_Type_contiguous(2, MPI_INT, &affine);
    MPI_Type_commit(&affine);
    MPI_Op_create(affine_op, 0, &op);
    MPI_Comm split, dup;
    MPI_Comm_split(MPI_COMM_WORLD, me_world % 2, -me_world, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm comms[3] = {MPI_COMM_WORLD, split, dup};
    static const int counts[] = {0, 1, 7, 1000};
    const char *only = getenv("MORE_ONLY"), *modes = getenv("MORE_MODES");
    for (int c = 0; c < 3; c++)
        for (int mode = 0; mode < NMODES; mode++) {
            if (modes && !strchr(modes, "bnp"[mode]))
                continue;
            check_barrier(comms[c], mode);
            if (mode == BLOCKING && (!only || strchr(only, 'o')))
                check_padded(comms[c]);
            for (int k = 0; k < 4; k++) {
                if (quick && c && k % 2)
                    continue;
                if (!only || strchr(only, 'r'))
                    check_rooted(comms[c], mode, counts[k]);
                if (!only || strchr(only, 's'))
                    check_spread(comms[c], mode, counts[k]);
                if (!only || strchr(only, 'o'))
                    check_ordered(comms[c], mode, counts[k], affine, op);
                if ((!only || strchr(only, 'v')) && mode == BLOCKING)
                    check_v_strided(comms[c], counts[k]);
            }
        }
    check_reduce_local();
    /* intercommunicators: even and odd world ranks, its dup, and merged back */
    int nworld;
    MPI_Comm_size(MPI_COMM_WORLD, &nworld);
    if (nworld > 1 && (!only || strchr(only, 'i'))) {
        MPI_Comm local, inter, inter_dup, merged;
        int g = me_world % 2;
        MPI_Comm_split(MPI_COMM_WORLD, g, me_world, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - g, 77, &inter);
        MPI_Comm_dup(inter, &inter_dup);
        for (int mode = 0; mode < NMODES; mode++)
            for (int k = 0; k < 4; k++)
                check_inter(k % 2 ? inter_dup : inter, g, mode, counts[k], affine, op);
        MPI_Intercomm_merge(inter, g, &merged);
        check_barrier(merged, BLOCKING);
        check_ordered(merged, NONBLOCKING, 7, affine, op);
        MPI_Comm_free(&merged);
        MPI_Comm_free(&inter_dup);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    }
    for (int kind = 0; (!only || strchr(only, 'n')) && kind < NTOPOS; kind++)
        for (int mode = 0; mode < NMODES; mode++)
            for (int k = 0; k < 4; k++)
                if (!quick || k % 2 == 0 || kind == CART)
                    check_neighbor(kind, mode, counts[k]);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    MPI_Op_free(&op);
    MPI_Type_free(&affine);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me_world == 0)
        printf("mpi_more_check: %d failure(s)\n", all);
    MPI_Finalize();
    return all != 0;
}
