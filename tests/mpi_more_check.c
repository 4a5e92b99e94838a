/*
 * The collectives coll/tacos serves with textbook programs where no other
 * component is selected (`mpirun --mca coll tacos`): Barrier, Gather(v),
 * Scatter(v), Allgatherv, Alltoallv, Alltoallw, Scan, Exscan,
 * Reduce_local, and the reductions with a non-commutative op, each
 * blocking, nonblocking and persistent (started twice), every result
 * checked against values computed here; on MPI_COMM_WORLD, a split and a
 * dup.  Prints "mpi_more_check: 0 failure(s)" on success.  For debugging:
 * MORE_TRACE=1 prints each call's line before it runs, MORE_ONLY=ros runs
 * only the rooted (r), ordered (o) or spreading (s) checks named.
 */
#include <mpi.h>
#include <stdio.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4 /* Open MPI 4.1: persistent collectives are MPIX_ */
#include <mpi-ext.h>
#define INIT(name) MPIX_##name##_init
#else
#define INIT(name) MPI_##name##_init
#endif
#include <stdlib.h>
#include <string.h>

static int failures, me_world;

#define FAIL(...)                                                                            \
    do {                                                                                     \
        if (failures++ < 20) {                                                               \
            fprintf(stderr, "rank %d: ", me_world);                                          \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

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
        /* Allgatherv: rank r has count + r % 3 elements, placed backwards */
        int total = 0;
        for (int r = 0; r < n; r++)
            rc[r] = count + r % 3, total += rc[r];
        for (int r = 0, at = total; r < n; r++)
            rd[r] = at -= rc[r];
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
                    FAIL("%s allgatherv count %d%s n=%d: block %d [%d] = %d", mode_name[mode], count,
                         in_place ? " in place" : "", n, r, i, d[rd[r] + i]);
                    r = n;
                    break;
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
    for (int c = 0; c < 3; c++)
        for (int mode = 0; mode < NMODES; mode++) {
            check_barrier(comms[c], mode);
            for (int k = 0; k < 4; k++) {
                if (quick && c && k % 2)
                    continue;
                const char *only = getenv("MORE_ONLY");
                if (!only || strchr(only, 'r'))
                    check_rooted(comms[c], mode, counts[k]);
                if (!only || strchr(only, 's'))
                    check_spread(comms[c], mode, counts[k]);
                if (!only || strchr(only, 'o'))
                    check_ordered(comms[c], mode, counts[k], affine, op);
            }
        }
    check_reduce_local();
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
