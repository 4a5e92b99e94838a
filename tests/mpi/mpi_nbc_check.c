/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nonblocking and persistent collectives, every result checked element by
 * element against values computed here:
 *   each of the six alone (counts, in place, roots), first before and then
 *   after a blocking collective planned its size;
 *   16 outstanding of mixed kinds completed in reverse order (MPI_Waitall,
 *   MPI_Testany loops); two communicators interleaved;
 *   persistent requests started many times with changing contents (also
 *   as the first operations of a communicator), freed
 *   inactive and while active, two started in different orders on
 *   different ranks, one waited for with a persistent barrier of the MPI
 *   library's own (MPI_Waitall); a communicator duplicated while an
 *   operation runs; a rank in a barrier (of another communicator, or of
 *   the collective's own) while the others wait for a collective before
 *   theirs; an application's MPI_ANY_TAG receive
 *   posted while a collective runs;
 *   a rank that computes before it waits (the others must not deadlock),
 *   a rank in MPI_Recv while another waits (the receive progresses);
 *   no growth of the heap over many calls.
 * Open MPI 4.1's persistent collectives are MPIX_*_init, MPI-4's MPI_*_init.
 * Usage: mpi_nbc_check [--quick] [--fallback]
 *                      [--persistent-only | --first-call | --nonblocking-only]
 *   --fallback: the MPI library's own collectives serve the calls (libnbc
 *   refuses MPI_Request_free on an active request: that case is left out)
 *   --persistent-only: only persistent requests, on a communicator where
 *   nothing else ran (check_persistent_only)
 *   --first-call: only nonblocking calls of new sizes after one blocking
 *   call (check_first_call)
 *   --nonblocking-only: the same on a communicator where nothing else ran,
 *   the first completed by a rank that computes before it waits
 */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5 /* 5.0 has MPI_*_init but says MPI 3.1 */
#include <mpi-ext.h>
#define INIT(name) MPIX_##name##_init
#else
#define INIT(name) MPI_##name##_init
#endif

static int failures, me, n, fallback;

#define FAIL(...)                                                                            \
    do {                                                                                     \
        if (failures++ < 10) {                                                               \
            fprintf(stderr, "rank %d: ", me);                                                \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

enum { ALLREDUCE, ALLGATHER, BCAST, REDUCE, RSB, RS, ALLTOALL, NKINDS };
static const char *kind_name[] = {"allreduce", "allgather", "bcast", "reduce",
                                  "reduce_scatter_block", "reduce_scatter", "alltoall"};

/* One collective call: its buffers and what it must produce. */
typedef struct {
    int kind, count, root, in_place, salt;
    MPI_Comm comm;
    int size, rank;
    double *sbuf, *rbuf;
    int *counts;
    MPI_Request req;
} coll_t;

static double in(int r, size_t i, int salt) { return (double)(r + 1) * (double)(i % 1000 + 1) + salt; }

static double sum(int size, size_t i, int salt)
{
    double s = 0;
    for (int r = 0; r < size; r++)
        s += in(r, i, salt);
    return s;
}

static size_t displ(const coll_t *c, int r)
{
    size_t d = 0;
    for (int q = 0; q < r; q++)
        d += (size_t)c->counts[q];
    return d;
}

static void make(coll_t *c, int kind, MPI_Comm comm, int count, int root, int in_place)
{
    memset(c, 0, sizeof *c);
    c->kind = kind, c->comm = comm, c->count = count, c->root = root, c->in_place = in_place;
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_rank(comm, &c->rank);
    size_t all = (size_t)count * (size_t)c->size;
    c->counts = malloc((size_t)c->size * sizeof *c->counts);
    for (int r = 0; r < c->size; r++)
        c->counts[r] = count + r % 3;
    size_t rs_total = displ(c, c->size);
    size_t big = all > rs_total ? all : rs_total;
    c->sbuf = malloc((big + 1) * sizeof(double));
    c->rbuf = malloc((big + 1) * sizeof(double));
}

static void unmake(coll_t *c)
{
    free(c->sbuf);
    free(c->rbuf);
    free(c->counts);
}

/* Inputs for this round (salt), the result buffer poisoned. */
static void fill(coll_t *c, int salt)
{
    int me_c = c->rank, P = c->size, cnt = c->count;
    size_t all = (size_t)cnt * (size_t)P, rs_total = displ(c, P);
    size_t big = all > rs_total ? all : rs_total;
    c->salt = salt;
    for (size_t i = 0; i <= big; i++)
        c->rbuf[i] = -7;
    double *src = c->in_place ? c->rbuf : c->sbuf;
    switch (c->kind) {
    case ALLREDUCE:
    case REDUCE:
        if (c->kind == ALLREDUCE || !c->in_place || me_c == c->root)
            for (int i = 0; i < cnt; i++)
                src[i] = in(me_c, (size_t)i, salt);
        if (c->kind == REDUCE && c->in_place && me_c != c->root) /* sbuf is the input there */
            for (int i = 0; i < cnt; i++)
                c->sbuf[i] = in(me_c, (size_t)i, salt);
        break;
    case ALLGATHER:
        for (int i = 0; i < cnt; i++)
            (c->in_place ? c->rbuf + (size_t)me_c * (size_t)cnt : c->sbuf)[i] =
                in(me_c, (size_t)i, salt);
        break;
    case BCAST:
        for (int i = 0; i < cnt; i++)
            c->rbuf[i] = me_c == c->root ? in(me_c, (size_t)i, salt) : -7;
        break;
    case RSB:
    case ALLTOALL: /* element j*cnt + i goes to rank j */
        for (size_t i = 0; i < all; i++)
            src[i] = in(me_c, i, salt);
        break;
    case RS:
        for (size_t i = 0; i < rs_total; i++)
            src[i] = in(me_c, i, salt);
        break;
    }
}

static void post(coll_t *c, int persistent)
{
    const void *s = c->in_place ? MPI_IN_PLACE : c->sbuf;
    int cnt = c->count, rc = MPI_SUCCESS;
    MPI_Comm comm = c->comm;
    MPI_Info info = MPI_INFO_NULL;
    if (c->kind == REDUCE && c->in_place && c->rank != c->root)
        s = c->sbuf;
    switch (c->kind) {
    case ALLREDUCE:
        rc = persistent ? INIT(Allreduce)(s, c->rbuf, cnt, MPI_DOUBLE, MPI_SUM, comm, info, &c->req)
                        : MPI_Iallreduce(s, c->rbuf, cnt, MPI_DOUBLE, MPI_SUM, comm, &c->req);
        break;
    case ALLGATHER:
        rc = persistent ? INIT(Allgather)(s, cnt, MPI_DOUBLE, c->rbuf, cnt, MPI_DOUBLE, comm, info,
                                          &c->req)
                        : MPI_Iallgather(s, cnt, MPI_DOUBLE, c->rbuf, cnt, MPI_DOUBLE, comm, &c->req);
        break;
    case BCAST:
        rc = persistent ? INIT(Bcast)(c->rbuf, cnt, MPI_DOUBLE, c->root, comm, info, &c->req)
                        : MPI_Ibcast(c->rbuf, cnt, MPI_DOUBLE, c->root, comm, &c->req);
        break;
    case REDUCE:
        rc = persistent ? INIT(Reduce)(s, c->rbuf, cnt, MPI_DOUBLE, MPI_SUM, c->root, comm, info,
                                       &c->req)
                        : MPI_Ireduce(s, c->rbuf, cnt, MPI_DOUBLE, MPI_SUM, c->root, comm, &c->req);
        break;
    case RSB:
        rc = persistent ? INIT(Reduce_scatter_block)(s, c->rbuf, cnt, MPI_DOUBLE, MPI_SUM, comm,
                                                     info, &c->req)
                        : MPI_Ireduce_scatter_block(s, c->rbuf, cnt, MPI_DOUBLE, MPI_SUM, comm,
                                                    &c->req);
        break;
    case ALLTOALL:
        rc = persistent ? INIT(Alltoall)(s, cnt, MPI_DOUBLE, c->rbuf, cnt, MPI_DOUBLE, comm, info,
                                         &c->req)
                        : MPI_Ialltoall(s, cnt, MPI_DOUBLE, c->rbuf, cnt, MPI_DOUBLE, comm, &c->req);
        break;
    case RS:
        rc = persistent ? INIT(Reduce_scatter)(s, c->rbuf, c->counts, MPI_DOUBLE, MPI_SUM, comm,
                                               info, &c->req)
                        : MPI_Ireduce_scatter(s, c->rbuf, c->counts, MPI_DOUBLE, MPI_SUM, comm,
                                              &c->req);
        break;
    }
    if (rc != MPI_SUCCESS)
        FAIL("%s%s: error %d", persistent ? "init " : "i", kind_name[c->kind], rc);
}

static void expect_at(const coll_t *c, const double *buf, size_t i, double want, const char *where)
{
    if (buf[i] != want)
        FAIL("%s %s count %d root %d in_place %d on %d ranks: [%zu] = %g, want %g", where,
             kind_name[c->kind], c->count, c->root, c->in_place, c->size, i, buf[i], want);
}

static void check(const coll_t *c, const char *where)
{
    int me_c = c->rank, P = c->size, cnt = c->count, salt = c->salt;
    int before = failures;
    switch (c->kind) {
    case ALLREDUCE:
        for (int i = 0; i < cnt && failures == before; i++)
            expect_at(c, c->rbuf, (size_t)i, sum(P, (size_t)i, salt), where);
        break;
    case REDUCE:
        for (int i = 0; me_c == c->root && i < cnt && failures == before; i++)
            expect_at(c, c->rbuf, (size_t)i, sum(P, (size_t)i, salt), where);
        break;
    case ALLGATHER:
        for (int r = 0; r < P; r++)
            for (int i = 0; i < cnt && failures == before; i++)
                expect_at(c, c->rbuf, (size_t)r * (size_t)cnt + (size_t)i, in(r, (size_t)i, salt),
                          where);
        break;
    case BCAST:
        for (int i = 0; i < cnt && failures == before; i++)
            expect_at(c, c->rbuf, (size_t)i, in(c->root, (size_t)i, salt), where);
        break;
    case RSB:
        for (int i = 0; i < cnt && failures == before; i++)
            expect_at(c, c->rbuf, (size_t)i, sum(P, (size_t)me_c * (size_t)cnt + (size_t)i, salt),
                      where);
        break;
    case ALLTOALL:
        for (int r = 0; r < P; r++)
            for (int i = 0; i < cnt && failures == before; i++)
                expect_at(c, c->rbuf, (size_t)r * (size_t)cnt + (size_t)i,
                          in(r, (size_t)me_c * (size_t)cnt + (size_t)i, salt), where);
        break;
    case RS:
        for (int i = 0; i < c->counts[me_c] && failures == before; i++)
            expect_at(c, c->rbuf, (size_t)i, sum(P, displ(c, me_c) + (size_t)i, salt), where);
        break;
    }
}

static void wait_check(coll_t *c, const char *where)
{
    if (MPI_Wait(&c->req, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        FAIL("%s: MPI_Wait failed", where);
    check(c, where);
}

/* Each collective alone: the first round before its size is planned, the
 * second after a blocking collective planned it. */
static void check_alone(MPI_Comm comm, int quick)
{
    static const int counts[] = {0, 1, 7, 1000, 65537};
    int P;
    MPI_Comm_size(comm, &P);
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < NKINDS; k++)
            for (int ci = 0; ci < 5; ci++) {
                if (quick && (ci == 1 || ci == 4))
                    continue;
                for (int ip = 0; ip < 2; ip++)
                    for (int root = 0; root < P; root += P > 1 ? P - 1 : 1) {
                        if (k != BCAST && k != REDUCE && root)
                            continue;
                        if (k == BCAST && ip)
                            continue;
#ifdef MPICH_VERSION
                        /* MPICH 4.0.2's own MPI_Ireduce_scatter in place
                         * aborts on an overlapping memcpy (README), and
                         * serves what is not planned yet */
                        if (k == RS && ip && counts[ci] > 1000)
                            continue;
#endif
                        coll_t c;
                        make(&c, k, comm, counts[ci], root, ip);
                        fill(&c, round * 10 + ci);
                        post(&c, 0);
                        wait_check(&c, round ? "alone, planned" : "alone, unplanned");
                        unmake(&c);
                    }
            }
        MPI_Barrier(comm); /* plans what the nonblocking calls wanted */
    }
}

/* 16 outstanding collectives of mixed kinds, completed in reverse order;
 * count 0: 1000 elements each, else count + 997 i for the i-th. */
static void check_many_of(MPI_Comm comm, int testany, int count)
{
    enum { N = 16 };
    coll_t c[N];
    MPI_Request req[N];
    int P;
    MPI_Comm_size(comm, &P);
    for (int i = 0; i < N; i++) {
        int ip = (i / NKINDS) % 2 && i % NKINDS != BCAST;
#ifdef MPICH_VERSION
        ip &= !(fallback && i % NKINDS == RS); /* (MPICH 4.0.2's, see check_first_call) */
#endif
        make(&c[i], i % NKINDS, comm, count ? count + 997 * i : 1000, (i / NKINDS) % P, ip);
        fill(&c[i], 100 + i);
        post(&c[i], 0);
    }
    for (int i = 0; i < N; i++)
        req[i] = c[N - 1 - i].req;
    MPI_Status st[N];
    if (!testany) {
        if (MPI_Waitall(N, req, st) != MPI_SUCCESS)
            FAIL("MPI_Waitall failed");
    } else {
        for (int left = N; left > 0;) {
            int idx, flag = 0;
            if (MPI_Testany(N, req, &idx, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                FAIL("MPI_Testany failed");
                break;
            }
            if (flag && idx != MPI_UNDEFINED)
                left--;
        }
    }
    for (int i = 0; i < N; i++) {
        check(&c[i], testany ? "16 outstanding, MPI_Testany" : "16 outstanding, MPI_Waitall");
        unmake(&c[i]);
    }
}

static void check_many(MPI_Comm comm, int testany) { check_many_of(comm, testany, 0); }

static void check_late_waiter(MPI_Comm comm);

/* --first-call: on a communicator where one blocking collective planned a
 * size (the ranks agreed on the settings and the topology there), the
 * first nonblocking call of every other size runs a schedule, agreed in
 * its request (test_mpi.sh reads the trace): 16 outstanding of sizes no
 * call had, completed with MPI_Waitall, 16 more with MPI_Testany, then
 * each kind alone at a prime count, in place and at every root.
 * --nonblocking-only (blocking_first 0): no blocking call first, so the
 * first requests also agree on settings and topology; a rank computes
 * before it waits for the first (the late waiter's, not counted there). */
static void check_first_call(int blocking_first)
{
    MPI_Comm comm;
    int P, one = 1, all;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_size(comm, &P);
    if (blocking_first) {
        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, comm);
        if (all != P)
            FAIL("first call: MPI_Allreduce gave %d, want %d", all, P);
    } else {
        check_late_waiter(comm);
    }
    /* (nonblocking only: 64 KiB and more, which agree in the request) */
    check_many_of(comm, 0, blocking_first ? 3001 : 9001);
    check_many_of(comm, 1, 50021);
    for (int k = 0; k < NKINDS; k++)
        for (int ip = 0; ip < 2; ip++)
            for (int root = 0; root < P; root++) {
                if ((k != BCAST && k != REDUCE && root) || (k == BCAST && ip))
                    continue;
#ifdef MPICH_VERSION
                /* MPICH 4.0.2's own MPI_Ireduce_scatter in place aborts
                 * on an overlapping memcpy (README) */
                if (k == RS && ip && fallback)
                    continue;
#endif
                coll_t c;
                make(&c, k, comm, (blocking_first ? 7919 : 8209) + 2 * root + ip, root, ip);
                fill(&c, 300 + k);
                post(&c, 0);
                wait_check(&c, "first call");
                unmake(&c);
            }
    /* the first size again, blocking (the ranks agree on what the
     * nonblocking calls made), then nonblocking */
    coll_t c;
    make(&c, ALLREDUCE, comm, 3001, 0, 0);
    fill(&c, 400);
    MPI_Allreduce(c.sbuf, c.rbuf, 3001, MPI_DOUBLE, MPI_SUM, comm);
    check(&c, "first call, then blocking");
    fill(&c, 401);
    post(&c, 0);
    wait_check(&c, "first call, blocking, then nonblocking");
    unmake(&c);
    /* a call of a new size freed while it may still run (not on one rank,
     * or with --fallback, where libnbc serves: its requests refuse that) */
    if (P > 1 && !fallback) {
        make(&c, ALLREDUCE, comm, 200003, 0, 0);
        fill(&c, 402);
        post(&c, 0);
        MPI_Request_free(&c.req);
        MPI_Barrier(comm);
        MPI_Allreduce(MPI_IN_PLACE, &P, 1, MPI_INT, MPI_MAX, comm); /* progress meanwhile */
        /* nothing tells when it ends: its buffers are never freed */
    }
    MPI_Comm_free(&comm);
}

/* Nonblocking collectives on two communicators, interleaved. */
static void check_two_comms(MPI_Comm a, MPI_Comm b)
{
    enum { N = 8 };
    coll_t c[N];
    MPI_Request req[N];
    for (int i = 0; i < N; i++) {
        make(&c[i], (i / 2) % NKINDS, i % 2 ? b : a, 1000, 0, 0);
        fill(&c[i], 200 + i);
        post(&c[i], 0);
        req[i] = c[i].req;
    }
    MPI_Status st[N];
    if (MPI_Waitall(N, req, st) != MPI_SUCCESS)
        FAIL("MPI_Waitall on two communicators failed");
    for (int i = 0; i < N; i++) {
        check(&c[i], "two communicators");
        unmake(&c[i]);
    }
}

/* Persistent requests: started `starts` times with new contents each time. */
static void check_persistent(MPI_Comm comm, int starts)
{
    int P;
    MPI_Comm_size(comm, &P);
    for (int k = 0; k < NKINDS; k++) {
        coll_t c;
        make(&c, k, comm, 1000, k == BCAST || k == REDUCE ? P - 1 : 0, k == ALLREDUCE);
        post(&c, 1);
        int times = k == ALLREDUCE ? starts : starts / 10 + 1;
        for (int t = 0; t < times && !failures; t++) {
            fill(&c, 300 + t);
            if (MPI_Start(&c.req) != MPI_SUCCESS)
                FAIL("MPI_Start failed");
            if (MPI_Wait(&c.req, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                FAIL("MPI_Wait on a persistent request failed");
            check(&c, "persistent");
        }
        if (c.req == MPI_REQUEST_NULL)
            FAIL("MPI_Wait freed a persistent request");
        MPI_Request_free(&c.req); /* inactive */
        unmake(&c);
    }
    /* freed after it completed, before the wait that would make it inactive */
    coll_t c;
    make(&c, ALLREDUCE, comm, 1000, 0, 0);
    post(&c, 1);
    fill(&c, 400);
    MPI_Start(&c.req);
    for (int flag = 0; !flag;) /* MPI_Test makes it inactive: a copy of the handle tests */
        MPI_Request_get_status(c.req, &flag, MPI_STATUS_IGNORE);
    check(&c, "persistent, complete before MPI_Request_free");
    MPI_Request_free(&c.req);
    /* freed while it may still run: it completes on its own (not on one
     * rank, where libnbc serves: its requests refuse MPI_Request_free
     * while active) */
    if (P == 1 || fallback) {
        unmake(&c);
        return;
    }
    post(&c, 1);
    fill(&c, 401);
    MPI_Start(&c.req);
    MPI_Request_free(&c.req);
    MPI_Barrier(comm);
    MPI_Allreduce(MPI_IN_PLACE, &P, 1, MPI_INT, MPI_MAX, comm); /* progress meanwhile */
    /* nothing tells when the operation ends (it may still run after the
     * barrier): its buffers are never freed */
}

/* Persistent Allreduces on a communicator of their own: the first made
 * before its size is planned (the MPI library's), the next after a
 * barrier planned it, the first operation of coll/tacos's there (with GPU
 * buffers and CUDA IPC: it agrees on IPC and tests mapping at its first
 * start, no blocking collective having tested the communicator). */
static void check_persistent_first(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int round = 0; round < 2; round++) {
        coll_t c;
        make(&c, ALLREDUCE, comm, 1000, 0, 0);
        post(&c, 1);
        for (int t = 0; t < 3 && !failures; t++) {
            fill(&c, 500 + t);
            MPI_Start(&c.req);
            MPI_Wait(&c.req, MPI_STATUS_IGNORE);
            check(&c, round ? "persistent, first of the communicator's planned" : "persistent, unplanned");
        }
        MPI_Request_free(&c.req);
        unmake(&c);
        if (!round)
            MPI_Barrier(comm); /* plans its size */
    }
    MPI_Comm_free(&comm);
}

/* --persistent-only: every kind as a persistent request made on a
 * communicator where no other collective ran before (its initialization
 * plans the size: MPI orders persistent initializations like blocking
 * collectives), started 5 times. */
static void check_persistent_only(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int k = 0; k < NKINDS && !failures; k++) {
        coll_t c;
        make(&c, k, comm, 4099, k == BCAST || k == REDUCE ? n - 1 : 0, 0);
        post(&c, 1);
        for (int t = 0; t < 5 && !failures; t++) {
            fill(&c, 600 + t);
            MPI_Start(&c.req);
            MPI_Wait(&c.req, MPI_STATUS_IGNORE);
            check(&c, "persistent, on a communicator of persistent calls only");
        }
        MPI_Request_free(&c.req);
        unmake(&c);
    }
    MPI_Comm_free(&comm);
}

/* Two persistent Allreduces of one planned size started in one order on
 * even ranks and in the other on odd ones (MPI orders their
 * initializations only): each must reduce its own inputs. */
static void check_persistent_order(MPI_Comm comm)
{
    coll_t c[2];
    for (int i = 0; i < 2; i++)
        make(&c[i], ALLREDUCE, comm, 65537, 0, 0);
    fill(&c[0], 0);
    MPI_Allreduce(c[0].sbuf, c[0].rbuf, c[0].count, MPI_DOUBLE, MPI_SUM, comm); /* plans it */
    for (int i = 0; i < 2; i++)
        post(&c[i], 1);
    for (int t = 0; t < 4 && !failures; t++) {
        fill(&c[0], 700 + t), fill(&c[1], 800 + t);
        int first = c[0].rank % 2;
        MPI_Start(&c[first].req);
        MPI_Start(&c[!first].req);
        MPI_Request r[2] = {c[0].req, c[1].req};
        MPI_Status st[2];
        MPI_Waitall(2, r, st);
        check(&c[0], "persistent, started in another order on odd ranks (first)");
        check(&c[1], "persistent, started in another order on odd ranks (second)");
    }
    for (int i = 0; i < 2; i++) {
        MPI_Request_free(&c[i].req);
        unmake(&c[i]);
    }
}

/* A communicator made while an operation of this one runs: Open MPI agrees
 * on its context id with nonblocking Allreduces, run from progress. */
static void check_dup_while_active(MPI_Comm comm)
{
    coll_t c;
    int one = 1, all = 0;
    make(&c, ALLREDUCE, comm, 1 << 20, 0, 0);
    fill(&c, 900);
    MPI_Allreduce(c.sbuf, c.rbuf, c.count, MPI_DOUBLE, MPI_SUM, comm); /* plans it */
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_MAX, comm); /* and the agreement's size */
    for (int t = 0; t < 10 && !failures; t++) {
        MPI_Comm d;
        fill(&c, 900 + t);
        post(&c, 0);
        MPI_Comm_dup(comm, &d);
        wait_check(&c, "MPI_Comm_dup while it runs");
        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, d);
        if (all != c.size)
            FAIL("Allreduce on the duplicate: %d, want %d", all, c.size);
        MPI_Comm_free(&d);
    }
    unmake(&c);
}

/* Rank 0 enters a barrier on another communicator before it waits for a
 * collective the others wait for first: the barrier must match theirs and
 * progress the collective. */
static void check_barrier_while_active(MPI_Comm comm, MPI_Comm other)
{
    coll_t c;
    make(&c, ALLREDUCE, comm, 65537, 0, 0);
    fill(&c, 950);
    MPI_Allreduce(c.sbuf, c.rbuf, c.count, MPI_DOUBLE, MPI_SUM, comm); /* plans it */
    for (int t = 0; t < 3 && !failures; t++) {
        fill(&c, 950 + t);
        post(&c, 0);
        if (c.rank != 0)
            wait_check(&c, "waited for before a barrier");
        MPI_Barrier(other);
        if (c.rank == 0)
            wait_check(&c, "waited for after a barrier");
    }
    unmake(&c);
}

/* Rank 0 enters a blocking collective the MPI library runs (one coll/tacos
 * leaves to it, two it does not serve, the first collective of a new
 * communicator, which makes its state, MPI_Comm_dup, two constructors with
 * no nonblocking form and MPI_Alltoallw in place) before it waits for a
 * collective the others wait for first: that collective must progress it
 * (MPI's progress rule).  Under MPICH such blocking calls did not progress
 * the library's operations: a hang. */
static void check_blocking_while_active(MPI_Comm comm, MPI_Comm other)
{
    static const char *what[] = {"MPI_Gather",
                                 "MPI_Scan",
                                 "MPI_Allgatherv",
                                 "a new communicator's first MPI_Allreduce",
                                 "MPI_Comm_dup",
                                 "MPI_Comm_split",
                                 "MPI_Cart_create",
                                 "MPI_Alltoallw in place",
                                 "MPI_Comm_split_type",
                                 "MPI_Comm_create",
                                 "MPI_Cart_sub",
                                 "MPI_Graph_create",
                                 "MPI_Dist_graph_create_adjacent",
                                 "MPI_Dist_graph_create",
                                 "MPI_Intercomm_merge"};
    enum { CASES = sizeof what / sizeof *what };
    coll_t c;
    int osize, orank;
    MPI_Comm_size(other, &osize);
    MPI_Comm_rank(other, &orank);
    int *all = malloc((size_t)osize * sizeof *all), *counts = malloc((size_t)osize * sizeof *counts);
    int *displs = malloc((size_t)osize * sizeof *displs);
    int *bytes_at = malloc((size_t)osize * sizeof *bytes_at);
    MPI_Datatype *ints = malloc((size_t)osize * sizeof *ints);
    for (int r = 0; r < osize; r++)
        counts[r] = 1, displs[r] = r, bytes_at[r] = r * (int)sizeof(int), ints[r] = MPI_INT;
    /* made before: the cartesian communicator Cart_sub splits, the group
     * Comm_create takes, the intercommunicator of two halves Intercomm_merge
     * joins (none on one rank); a ring for the graphs */
    int periods = 1, keep = 1, half = orank < osize / 2, ring[2] = {(orank + 1) % osize, 1};
    int left = (orank + osize - 1) % osize, right = ring[0];
    int *index = malloc((size_t)osize * sizeof *index), *edges = malloc((size_t)osize * sizeof *edges);
    for (int r = 0; r < osize; r++)
        index[r] = r + 1, edges[r] = (r + 1) % osize;
    MPI_Comm cart, halves, inter = MPI_COMM_NULL;
    MPI_Group group;
    MPI_Cart_create(other, 1, &osize, &periods, 0, &cart);
    MPI_Comm_group(other, &group);
    MPI_Comm_split(other, half, orank, &halves);
    if (osize > 1)
        MPI_Intercomm_create(halves, 0, other, half ? osize / 2 : 0, 5, &inter);
    make(&c, ALLREDUCE, comm, 65537, 0, 0);
    /* Gather's root: the rank that enters first (a leaf would send and leave) */
    int first = c.rank == 0 ? orank : 0, root = 0;
    MPI_Allreduce(&first, &root, 1, MPI_INT, MPI_MAX, other);
    fill(&c, 970);
    MPI_Allreduce(c.sbuf, c.rbuf, c.count, MPI_DOUBLE, MPI_SUM, comm); /* plans it */
    for (int t = 0; t < CASES; t++) { /* (every rank: one that stopped would leave the others) */
        MPI_Comm fresh = MPI_COMM_NULL;
        if (t == 3)
            MPI_Comm_dup(other, &fresh);
        int mine = orank + 10 * t, got = -1;
        fill(&c, 970 + t);
        post(&c, 0);
        if (c.rank != 0)
            wait_check(&c, "waited for before a blocking collective");
        memset(all, 0xff, (size_t)osize * sizeof *all);
        switch (t) {
        case 0:
            MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, root, other);
            for (int r = 0; r < osize && orank == root; r++)
                if (all[r] != r)
                    FAIL("MPI_Gather during a collective: block %d is %d", r, all[r]);
            break;
        case 1:
            MPI_Scan(&mine, &got, 1, MPI_INT, MPI_SUM, other);
            if (got != orank * (orank + 1) / 2 + 10 * (orank + 1))
                FAIL("MPI_Scan during a collective: %d", got);
            break;
        case 2:
            MPI_Allgatherv(&mine, 1, MPI_INT, all, counts, displs, MPI_INT, other);
            for (int r = 0; r < osize; r++)
                if (all[r] != r + 20)
                    FAIL("MPI_Allgatherv during a collective: block %d is %d", r, all[r]);
            break;
        case 3:
            MPI_Allreduce(&mine, &got, 1, MPI_INT, MPI_SUM, fresh);
            if (got != osize * (osize - 1) / 2 + 30 * osize)
                FAIL("MPI_Allreduce on a new communicator during a collective: %d", got);
            break;
        case 4:
            MPI_Comm_dup(other, &fresh);
            MPI_Comm_size(fresh, &got);
            if (got != osize)
                FAIL("MPI_Comm_dup during a collective: %d ranks", got);
            break;
        case 5: /* in reverse order */
            MPI_Comm_split(other, 0, osize - orank, &fresh);
            MPI_Comm_rank(fresh, &got);
            if (got != osize - 1 - orank)
                FAIL("MPI_Comm_split during a collective: rank %d", got);
            break;
        case 6: {
            int periods = 1;
            MPI_Cart_create(other, 1, &osize, &periods, 0, &fresh);
            MPI_Comm_size(fresh, &got);
            if (got != osize)
                FAIL("MPI_Cart_create during a collective: %d ranks", got);
            break;
        }
        case 7: /* block r of rank q: 100 q + r, then 100 r + orank here */
            for (int r = 0; r < osize; r++)
                all[r] = 100 * orank + r;
            MPI_Alltoallw(MPI_IN_PLACE, counts, bytes_at, ints, all, counts, bytes_at, ints, other);
            for (int r = 0; r < osize; r++)
                if (all[r] != 100 * r + orank)
                    FAIL("MPI_Alltoallw in place during a collective: block %d is %d", r, all[r]);
            break;
        case 8:
            MPI_Comm_split_type(other, MPI_COMM_TYPE_SHARED, orank, MPI_INFO_NULL, &fresh);
            MPI_Comm_size(fresh, &got);
            if (got < 1 || got > osize)
                FAIL("MPI_Comm_split_type during a collective: %d ranks", got);
            break;
        case 9:
            MPI_Comm_create(other, group, &fresh);
            MPI_Comm_rank(fresh, &got);
            if (got != orank)
                FAIL("MPI_Comm_create during a collective: rank %d", got);
            break;
        case 10:
            MPI_Cart_sub(cart, &keep, &fresh);
            MPI_Comm_size(fresh, &got);
            if (got != osize)
                FAIL("MPI_Cart_sub during a collective: %d ranks", got);
            break;
        case 11:
            MPI_Graph_create(other, osize, index, edges, 0, &fresh);
            MPI_Graph_neighbors(fresh, orank, 1, &got);
            if (got != right)
                FAIL("MPI_Graph_create during a collective: neighbour %d", got);
            break;
        case 12:
        case 13: {
            int in = -1, out = -1, weighted, w[2] = {1, 1}; /* (weights: a ring's of 1) */
            if (t == 12)
                MPI_Dist_graph_create_adjacent(other, 1, &left, &w[0], 1, &right, &w[1],
                                               MPI_INFO_NULL, 0, &fresh);
            else
                MPI_Dist_graph_create(other, 1, &orank, &ring[1], &right, &w[0], MPI_INFO_NULL,
                                      0, &fresh);
            MPI_Dist_graph_neighbors_count(fresh, &in, &out, &weighted);
            if (in == 1 && out == 1)
                MPI_Dist_graph_neighbors(fresh, 1, &in, &w[0], 1, &out, &w[1]);
            if (in != left || out != right)
                FAIL("%s during a collective: neighbours %d, %d", what[t], in, out);
            break;
        }
        default:
            if (inter == MPI_COMM_NULL)
                break;
            MPI_Intercomm_merge(inter, !half, &fresh);
            MPI_Comm_rank(fresh, &got);
            if (got != orank)
                FAIL("MPI_Intercomm_merge during a collective: rank %d", got);
        }
        if (c.rank == 0)
            wait_check(&c, what[t]);
        if (fresh != MPI_COMM_NULL)
            MPI_Comm_free(&fresh);
    }
    unmake(&c);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&halves);
    if (inter != MPI_COMM_NULL)
        MPI_Comm_free(&inter);
    MPI_Group_free(&group);
    free(all);
    free(counts);
    free(displs);
    free(bytes_at);
    free(ints);
    free(index);
    free(edges);
}

/* Rank 0 enters a barrier on the call's own communicator before it waits
 * for the call, which the others wait for first, on a communicator where
 * only nonblocking calls ran: with GPU buffers and CUDA IPC that barrier
 * agrees on IPC for the call (the communicator untested), and must
 * progress the call while it waits for the others. */
static void check_barrier_same_comm(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    coll_t c;
    make(&c, ALLREDUCE, comm, 65537, 0, 0);
    for (int t = 0; t < 4 && !failures; t++) {
        fill(&c, 960 + t);
        post(&c, 0);
        if (c.rank != 0 || t == 0) /* the first call the MPI library's: not planned yet */
            wait_check(&c, "waited for before a barrier of its communicator");
        MPI_Barrier(comm); /* (the first plans the size) */
        if (c.rank == 0 && t > 0)
            wait_check(&c, "waited for after a barrier of its communicator");
    }
    unmake(&c);
    MPI_Comm_free(&comm);
}

/* A persistent collective of this library's and one of the MPI library's
 * own (a barrier) completed by one MPI_Waitall. */
static void check_waitall_mixed(MPI_Comm comm)
{
    coll_t c;
    MPI_Request r[2];
    MPI_Status st[2];
    make(&c, ALLREDUCE, comm, 65537, 0, 0);
    post(&c, 1);
    INIT(Barrier)(comm, MPI_INFO_NULL, &r[1]);
    for (int t = 0; t < 3 && !failures; t++) {
        fill(&c, 960 + t);
        r[0] = c.req;
        MPI_Startall(2, r);
        if (MPI_Waitall(2, r, st) != MPI_SUCCESS)
            FAIL("MPI_Waitall of two persistent requests failed");
        check(&c, "persistent, waited for with a persistent barrier");
    }
    MPI_Request_free(&c.req);
    MPI_Request_free(&r[1]);
    unmake(&c);
}

/* Rank 0 has an application's MPI_ANY_TAG receive posted while a
 * collective runs: only rank 1's message, sent after it, may match it
 * (pml/ucx keeps 24 bits of a tag: tags of the collective's that read as
 * user tags there were taken by the receive). */
static void check_any_tag_receive(MPI_Comm comm)
{
    coll_t c;
    MPI_Request u = MPI_REQUEST_NULL;
    MPI_Status st;
    int got[4] = {-1, -1, -1, -1}, token = 4242, count = -1;
    make(&c, ALLREDUCE, comm, 65537, 0, 0);
    fill(&c, 970);
    MPI_Allreduce(c.sbuf, c.rbuf, c.count, MPI_DOUBLE, MPI_SUM, comm); /* plans it */
    fill(&c, 971);
    if (c.rank == 0 && c.size > 1)
        MPI_Irecv(got, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &u);
    post(&c, 0);
    wait_check(&c, "an MPI_ANY_TAG receive posted meanwhile");
    if (c.rank == 1)
        MPI_Send(&token, 1, MPI_INT, 0, 5, comm);
    if (u != MPI_REQUEST_NULL) {
        MPI_Wait(&u, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        if (st.MPI_SOURCE != 1 || st.MPI_TAG != 5 || count != 1 || got[0] != token)
            FAIL("an MPI_ANY_TAG receive got source %d tag %d count %d value %d, want 1 5 1 %d",
                 st.MPI_SOURCE, st.MPI_TAG, count, got[0], token);
    }
    unmake(&c);
}

/* Rank 0 computes for a while before it waits. */
static void check_late_waiter(MPI_Comm comm)
{
    coll_t c;
    make(&c, ALLREDUCE, comm, 65537, 0, 0);
    fill(&c, 500);
    post(&c, 0);
    if (c.rank == 0) {
        double t = MPI_Wtime(), x = 0;
        while (MPI_Wtime() - t < 0.3)
            x += 1e-9;
        if (x < 0)
            FAIL("?");
    }
    wait_check(&c, "late waiter");
    unmake(&c);
}

/* Rank 0 blocks in a receive (MPI_Recv, MPI_Mprobe, MPI_Sendrecv_replace
 * on every other int, MPI_Sendrecv, MPI_Recv_c; any source and tag where
 * the call allows) while rank 1 waits for the collective, then sends the
 * two ints rank 0 receives: the receive must progress the collective
 * (MPI's progress rule; under MPICH MPI_Mprobe, MPI_Sendrecv_replace and
 * MPI_Recv_c hung before the library wrapped them).  The data, the status
 * (source, tag, elements) and what rank 0 sent back are checked; then
 * MPI_Recv and MPI_Sendrecv with MPI_PROC_NULL partners while the
 * collective runs (MPICH's nonblocking receive said source 0, tag 0). */
static void check_recv_progress(MPI_Comm comm)
{
    static const char *what[] = {"MPI_Recv", "MPI_Mprobe", "MPI_Sendrecv_replace", "MPI_Sendrecv",
                                 "MPI_Recv_c"};
    int cases = MPI_VERSION >= 4 ? 5 : 4;
    coll_t c;
    make(&c, ALLREDUCE, comm, 65537, 0, 0);
    MPI_Datatype every_other;
    MPI_Type_vector(2, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    for (int v = 0; v < cases && c.size > 1; v++) {
        fill(&c, 600 + v);
        post(&c, 0);
        int buf[4] = {0, 1, 2, 3}, first[2] = {0, 1}, two[2] = {100, 101}, got = -1;
        MPI_Status st = {.MPI_SOURCE = -99, .MPI_TAG = -99};
        MPI_Message m;
        if (c.rank == 0) {
            switch (v) {
            case 0:
                MPI_Recv(buf, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
                break;
            case 1:
                MPI_Mprobe(1, 77, comm, &m, MPI_STATUS_IGNORE);
                MPI_Mrecv(buf, 2, MPI_INT, &m, &st);
                break;
            case 2:
                MPI_Sendrecv_replace(buf, 1, every_other, 1, 78, 1, 77, comm, &st);
                break;
            case 3:
                MPI_Sendrecv(first, 2, MPI_INT, 1, 78, buf, 2, MPI_INT, MPI_ANY_SOURCE,
                             MPI_ANY_TAG, comm, &st);
                break;
            default:
#if MPI_VERSION >= 4
                MPI_Recv_c(buf, 2, MPI_INT, 1, MPI_ANY_TAG, comm, &st);
#endif
                break;
            }
        }
        wait_check(&c, what[v]);
        if (c.rank == 1) {
            MPI_Send(two, 2, MPI_INT, 0, 77, comm);
            if (v == 2 || v == 3) /* rank 0's ints 0 and 2, or 0 and 1 */
                MPI_Recv(two, 2, MPI_INT, 0, 78, comm, MPI_STATUS_IGNORE);
            if ((v == 2 || v == 3) && (two[0] != 0 || two[1] != (v == 2 ? 2 : 1)))
                FAIL("%s during a collective: rank 1 got %d %d", what[v], two[0], two[1]);
        }
        if (c.rank != 0)
            continue;
        MPI_Get_elements(&st, MPI_INT, &got);
        if (st.MPI_SOURCE != 1 || st.MPI_TAG != 77 || got != 2)
            FAIL("%s during a collective: status source %d tag %d, %d ints", what[v], st.MPI_SOURCE,
                 st.MPI_TAG, got);
        int want[4] = {100, 101, 2, 3}, spread[4] = {100, 1, 101, 3};
        if (memcmp(buf, v == 2 ? spread : want, sizeof buf))
            FAIL("%s during a collective: got %d %d %d %d", what[v], buf[0], buf[1], buf[2],
                 buf[3]);
    }
    /* the others join once rank 0 is done: its collective is in flight */
    fill(&c, 690);
    int go = 1;
    if (c.rank != 0)
        MPI_Recv(&go, 1, MPI_INT, 0, 79, comm, MPI_STATUS_IGNORE);
    post(&c, 0);
    for (int v = 0; v < 2 && c.rank == 0; v++) {
        int x = 5, got = -1;
        MPI_Status st = {.MPI_SOURCE = -99, .MPI_TAG = -99};
        if (v)
            MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, &x, 1, MPI_INT, MPI_PROC_NULL, 1, comm,
                         &st);
        else
            MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, comm, &st);
        MPI_Get_count(&st, MPI_INT, &got);
        if (st.MPI_SOURCE != MPI_PROC_NULL || st.MPI_TAG != MPI_ANY_TAG || got != 0 || x != 5)
            FAIL("%s from MPI_PROC_NULL during a collective: source %d tag %d, %d ints",
                 v ? "MPI_Sendrecv" : "MPI_Recv", st.MPI_SOURCE, st.MPI_TAG, got);
    }
    for (int r = 1; r < c.size && c.rank == 0; r++)
        MPI_Send(&go, 1, MPI_INT, r, 79, comm);
    wait_check(&c, "MPI_PROC_NULL partners");
    MPI_Type_free(&every_other);
    unmake(&c);
}

static size_t heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* The heap does not grow with the number of calls. */
static void check_no_growth(MPI_Comm comm)
{
    size_t before = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 200; i++) {
            coll_t c;
            make(&c, i % NKINDS, comm, 1000, 0, 0);
            fill(&c, i);
            post(&c, 0);
            wait_check(&c, "growth");
            unmake(&c);
        }
        if (round == 0)
            before = heap_bytes();
    }
    size_t after = heap_bytes();
    if (after > before + (1 << 20))
        FAIL("the heap grew by %zu bytes over 400 nonblocking calls", after - before);
}

int main(int argc, char **argv)
{
    int provided, quick = 0, persistent_only = 0, first_call = 0, nonblocking_only = 0;
    for (int i = 1; i < argc; i++)
        quick |= !strcmp(argv[i], "--quick"), fallback |= !strcmp(argv[i], "--fallback"),
            persistent_only |= !strcmp(argv[i], "--persistent-only"),
            first_call |= !strcmp(argv[i], "--first-call"),
            nonblocking_only |= !strcmp(argv[i], "--nonblocking-only");
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm a, b;
    if (persistent_only || first_call || nonblocking_only) {
        if (persistent_only)
            check_persistent_only();
        else
            check_first_call(first_call);
        goto done;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &b); /* ranks in reverse order */
    check_persistent_first();
    check_barrier_same_comm();
    check_alone(a, quick);
    check_many(a, 0);
    check_many(a, 1);
    check_alone(b, 1);
    check_two_comms(a, b);
    check_persistent(a, quick ? 200 : 1000);
    check_persistent_order(a);
    check_dup_while_active(a);
    check_barrier_while_active(a, b);
    check_blocking_while_active(a, b);
    check_waitall_mixed(a);
    check_any_tag_receive(a);
    check_late_waiter(a);
    MPI_Barrier(a); /* plans the late waiter's size */
    check_late_waiter(a);
    check_recv_progress(a);
    check_no_growth(a);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
done:;
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("mpi_nbc_check: %d failure(s) on %d ranks\n", all, n);
    MPI_Finalize();
    return all != 0;
}
