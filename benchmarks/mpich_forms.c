/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What libtacos-pmpi's waited forms cost: MPICH's blocking collectives
 * (the baseline) against its nonblocking forms completed at once with
 * MPI_Wait, which the library runs for every blocking collective it does
 * not serve or leaves to MPICH (so that the call progresses the library's
 * operations).  Run without the library: it times MPICH's two forms.
 *
 *   mpiexec.mpich -n 2 benchmarks/mpich_forms [--rounds R] [--max BYTES]
 *
 * Per collective and size (8 B to --max, default 64 KiB, x8), R rounds
 * (default 20) that each time a block of calls in one form and then in the
 * other (alternating, as osu_coll --ab does); the median over rounds of each
 * form's time per call, and waited / blocking.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, BCAST, REDUCE, ALLGATHERV, SCAN, NCOLLS };
static const char *names[] = {"allreduce", "bcast", "reduce", "allgatherv", "scan"};

static int n, me, *counts, *displs;
static char *sbuf, *rbuf;

/* One call of collective c on `count` bytes, blocking or waited. */
static void call(int c, int count, int waited)
{
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Comm w = MPI_COMM_WORLD;
    int ints = count / (int)sizeof(int) > 0 ? count / (int)sizeof(int) : 1;
    for (int i = 0; c == ALLGATHERV && i < n; i++)
        counts[i] = count, displs[i] = i * count;
    switch (c) {
    case ALLREDUCE:
        waited ? MPI_Iallreduce(sbuf, rbuf, ints, MPI_INT, MPI_SUM, w, &r)
               : MPI_Allreduce(sbuf, rbuf, ints, MPI_INT, MPI_SUM, w);
        break;
    case BCAST:
        waited ? MPI_Ibcast(rbuf, count, MPI_BYTE, 0, w, &r) : MPI_Bcast(rbuf, count, MPI_BYTE, 0, w);
        break;
    case REDUCE:
        waited ? MPI_Ireduce(sbuf, rbuf, ints, MPI_INT, MPI_SUM, 0, w, &r)
               : MPI_Reduce(sbuf, rbuf, ints, MPI_INT, MPI_SUM, 0, w);
        break;
    case ALLGATHERV:
        waited ? MPI_Iallgatherv(sbuf, count, MPI_BYTE, rbuf, counts, displs, MPI_BYTE, w, &r)
               : MPI_Allgatherv(sbuf, count, MPI_BYTE, rbuf, counts, displs, MPI_BYTE, w);
        break;
    default:
        waited ? MPI_Iscan(sbuf, rbuf, ints, MPI_INT, MPI_SUM, w, &r)
               : MPI_Scan(sbuf, rbuf, ints, MPI_INT, MPI_SUM, w);
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = 20, max = 65536;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max"))
            max = atoi(argv[i + 1]);
    sbuf = calloc((size_t)max, 1);
    rbuf = calloc((size_t)max * (size_t)n, 1);
    counts = malloc((size_t)n * sizeof *counts);
    displs = malloc((size_t)n * sizeof *displs);
    double *t[2] = {malloc((size_t)rounds * sizeof(double)), malloc((size_t)rounds * sizeof(double))};
    if (!sbuf || !rbuf || !counts || !displs || !t[0] || !t[1] || rounds < 1)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (me == 0)
        printf("# MPICH's blocking collectives against their nonblocking forms + MPI_Wait, %d ranks,"
               " median of %d alternating rounds\n"
               "| collective | bytes | blocking us | waited us | waited / blocking |\n"
               "|---|---|---|---|---|\n",
               n, rounds);
    for (int c = 0; c < NCOLLS; c++)
        for (int bytes = 8; bytes <= max; bytes *= 8) {
            int iters = bytes <= 4096 ? 200 : 50;
            for (int r = 0; r < rounds; r++)
                for (int waited = 0; waited < 2; waited++) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = MPI_Wtime();
                    for (int i = 0; i < iters; i++)
                        call(c, bytes, waited);
                    double mine = (MPI_Wtime() - t0) / iters, most;
                    MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                    t[waited][r] = most * 1e6;
                }
            qsort(t[0], (size_t)rounds, sizeof(double), cmp);
            qsort(t[1], (size_t)rounds, sizeof(double), cmp);
            double b = t[0][rounds / 2], w = t[1][rounds / 2];
            if (me == 0)
                printf("| %s | %d | %.2f | %.2f | %.2f |\n", names[c], bytes, b, w, w / b);
        }
    free(sbuf);
    free(rbuf);
    free(counts);
    free(displs);
    free(t[0]);
    free(t[1]);
    MPI_Finalize();
    return 0;
}
