/*
 * OSU-style collective latency: for each size (bytes of the buffer), a
 * warm-up, then timed iterations of the collective; prints the average,
 * minimum and maximum over ranks of the mean time per call (us).
 *
 * usage: osu_coll [allreduce|allgather|bcast|reduce|reduce_scatter_block]
 *                 [--min BYTES] [--max BYTES] [--ab ROUNDS]
 *
 * --ab: A/B in one job.  Two duplicates of MPI_COMM_WORLD, one created with
 * coll/tacos enabled and one with it disabled (the MPI_T control variable
 * coll_tacos_enable, read when a communicator is created), are timed in
 * alternating blocks, ROUNDS times per size; prints the median block of
 * each and their ratio.  Both see the same machine state, so drift between
 * runs cancels out.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *coll = "allreduce";

/* This rank's mean us per call over `iters` calls (after a warm-up). */
static double time_calls(MPI_Comm comm, int n, void *s, void *d, long bytes, int iters)
{
    int count = (int)(bytes / sizeof(float)), warm = iters / 10 + 2;
    if (count < 1)
        count = 1;
    int part = count / n ? count / n : 1;
    double t0 = 0;
    for (int i = 0; i < warm + iters; i++) {
        if (i == warm) {
            MPI_Barrier(comm);
            t0 = MPI_Wtime();
        }
        if (!strcmp(coll, "allreduce"))
            MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, comm);
        else if (!strcmp(coll, "allgather"))
            MPI_Allgather(s, part, MPI_FLOAT, d, part, MPI_FLOAT, comm);
        else if (!strcmp(coll, "bcast"))
            MPI_Bcast(s, count, MPI_FLOAT, 0, comm);
        else if (!strcmp(coll, "reduce"))
            MPI_Reduce(s, d, count, MPI_FLOAT, MPI_SUM, 0, comm);
        else
            MPI_Reduce_scatter_block(s, d, part, MPI_FLOAT, MPI_SUM, comm);
    }
    return (MPI_Wtime() - t0) * 1e6 / iters;
}

static double mean_over_ranks(double t, int n)
{
    double sum;
    MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / n;
}

/* A duplicate of MPI_COMM_WORLD created with coll_tacos_enable = on. */
static MPI_Comm dup_with_tacos(int on)
{
    int idx, count;
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    MPI_Comm c;
    if (MPI_T_cvar_get_index("coll_tacos_enable", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS ||
        MPI_T_cvar_write(h, &on) != MPI_SUCCESS) {
        fprintf(stderr, "osu_coll: cannot set coll_tacos_enable through MPI_T (is coll/tacos "
                        "loaded?)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
        return MPI_COMM_NULL;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    on = 1;
    MPI_T_cvar_write(h, &on);
    MPI_T_cvar_handle_free(&h);
    return c;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long min = 8, max = 64L << 20;
    int rounds = 0, provided;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min = atol(argv[++i]);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max = atol(argv[++i]);
        else if (!strcmp(argv[i], "--ab") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else
            coll = argv[i];
    }
    char *s = malloc((size_t)max * (size_t)n), *d = malloc((size_t)max * (size_t)n);
    memset(s, 1, (size_t)max * (size_t)n);
    memset(d, 0, (size_t)max * (size_t)n);
    MPI_Comm a = MPI_COMM_WORLD, b = MPI_COMM_NULL;
    if (rounds > 0) {
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        a = dup_with_tacos(1);
        b = dup_with_tacos(0);
    }
    if (me == 0 && rounds > 0)
        printf("# %s, %d ranks, A/B over %d rounds\n# %10s %12s %12s %8s\n", coll, n, rounds,
               "bytes", "tacos_us", "tuned_us", "ratio");
    else if (me == 0)
        printf("# %s, %d ranks\n# %10s %12s %12s %12s\n", coll, n, "bytes", "avg_us", "min_us",
               "max_us");
    for (long bytes = min; bytes <= max; bytes *= 2) {
        int iters = bytes <= 65536 ? 400 : bytes <= (1 << 20) ? 100 : bytes <= (8 << 20) ? 20 : 6;
        if (rounds > 0) {
            double ta[64], tb[64];
            int r = rounds < 64 ? rounds : 64;
            for (int i = 0; i < r; i++) {
                ta[i] = mean_over_ranks(time_calls(a, n, s, d, bytes, iters), n);
                tb[i] = mean_over_ranks(time_calls(b, n, s, d, bytes, iters), n);
            }
            qsort(ta, (size_t)r, sizeof ta[0], by_value);
            qsort(tb, (size_t)r, sizeof tb[0], by_value);
            if (me == 0)
                printf("  %10ld %12.2f %12.2f %7.2fx\n", bytes, ta[r / 2], tb[r / 2],
                       ta[r / 2] / tb[r / 2]);
            continue;
        }
        double t = time_calls(a, n, s, d, bytes, iters), lo, hi, avg = mean_over_ranks(t, n);
        MPI_Reduce(&t, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0)
            printf("  %10ld %12.2f %12.2f %12.2f\n", bytes, avg, lo, hi);
    }
    if (rounds > 0) {
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
        MPI_T_finalize();
    }
    free(s);
    free(d);
    MPI_Finalize();
    return 0;
}
