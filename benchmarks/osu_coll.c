/*
 * OSU-style collective latency: for each size (bytes of the buffer), a
 * warm-up, then timed iterations of the collective; prints the average,
 * minimum and maximum over ranks of the mean time per call (us).
 *
 * usage: osu_coll [allreduce|allgather|bcast|reduce|reduce_scatter_block]
 *                 [--min BYTES] [--max BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *coll = "allreduce";
    long min = 8, max = 64L << 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min = atol(argv[++i]);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max = atol(argv[++i]);
        else
            coll = argv[i];
    }
    char *s = malloc((size_t)max * (size_t)n), *d = malloc((size_t)max * (size_t)n);
    memset(s, 1, (size_t)max * (size_t)n);
    memset(d, 0, (size_t)max * (size_t)n);
    if (me == 0)
        printf("# %s, %d ranks\n# %10s %12s %12s %12s\n", coll, n, "bytes", "avg_us", "min_us",
               "max_us");
    for (long bytes = min; bytes <= max; bytes *= 2) {
        int count = (int)(bytes / sizeof(float));
        if (count < 1)
            count = 1;
        int iters = bytes <= 65536 ? 400 : bytes <= (1 << 20) ? 100 : bytes <= (8 << 20) ? 20 : 6;
        int warm = iters / 10 + 2;
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
            }
            if (!strcmp(coll, "allreduce"))
                MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            else if (!strcmp(coll, "allgather"))
                MPI_Allgather(s, count / n ? count / n : 1, MPI_FLOAT, d, count / n ? count / n : 1,
                              MPI_FLOAT, MPI_COMM_WORLD);
            else if (!strcmp(coll, "bcast"))
                MPI_Bcast(s, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
            else if (!strcmp(coll, "reduce"))
                MPI_Reduce(s, d, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            else
                MPI_Reduce_scatter_block(s, d, count / n ? count / n : 1, MPI_FLOAT, MPI_SUM,
                                         MPI_COMM_WORLD);
        }
        double t = (MPI_Wtime() - t0) * 1e6 / iters, sum, lo, hi;
        MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0)
            printf("  %10ld %12.2f %12.2f %12.2f\n", bytes, sum / n, lo, hi);
    }
    free(s);
    free(d);
    MPI_Finalize();
    return 0;
}
