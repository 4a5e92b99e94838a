/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OSU-style collective latency: for each size (bytes of the buffer), a
 * warm-up, then timed iterations of the collective; prints the average,
 * minimum and maximum over ranks of the mean time per call (us).
 *
 * usage: osu_coll [allreduce|allgather|allgatherv|bcast|reduce|reduce_scatter_block|alltoall|
 *                  gather|scatter|gatherv|scatterv|alltoallv]
 *                 [--min BYTES] [--max BYTES] [--factor F] [--ab ROUNDS]
 *                 [--variant NAME[:VAR=VALUE,...]]... [--baseline NAME]
 *                 [--mode blocking|nonblocking|overlap|persistent|init|first|second|
 *                         fresh-first|fresh-second|init-new|blocking-new]
 *
 * --factor: each size is F times the previous one (default 2).
 *
 * --mode (Allreduce): what is timed per call: MPI_Allreduce (blocking);
 * MPI_Iallreduce + MPI_Wait (nonblocking); overlap, as osu_iallreduce: the
 * nonblocking time t_pure, then MPI_Iallreduce, t_pure of computation with
 * no MPI call, MPI_Wait: prints the overlap % = 100 (1 - (t_total -
 * t_compute) / t_pure) instead of a time; persistent: MPI_Start +
 * MPI_Wait of a request made (after a blocking call of the size) once;
 * init: making and freeing that request; first, second: on a duplicate
 * made as the variant's, per block (a blocking call of twice the size
 * first: coll/tacos plans a size there), the first MPI_Iallreduce +
 * MPI_Wait of the size, or the second right after it (one call each, no
 * barrier between them); fresh-first, fresh-second: the same on a
 * duplicate where nothing ran before (a barrier on MPI_COMM_WORLD first);
 * init-new, blocking-new: on such a duplicate, making (and freeing) a
 * persistent request of the size, or the first blocking MPI_Allreduce.  --probes N: the computation
 * calls MPI_Test N times (OSU's -t; default none).  The warm-up ends with a barrier,
 * where coll/tacos plans the sizes nonblocking calls asked for.
 *
 * --ab: A/B in one job.  Two duplicates of MPI_COMM_WORLD, one created with
 * coll/tacos enabled and one with it disabled (the MPI_T control variable
 * coll_tacos_enable, read when a communicator is created), are timed in
 * alternating blocks, ROUNDS times per size; prints the median block of
 * each and their ratio.  Both see the same machine state, so drift between
 * runs cancels out.
 *
 * --variant (with --ab): instead of those two, one duplicate per variant,
 * created after writing the given MPI_T control variables (restored
 * afterwards), e.g. `--variant tacos --variant file:coll_tacos_topo_file=T.json
 * --variant tuned:coll_tacos_enable=0`; all timed in alternating blocks;
 * prints each variant's median and its ratio to the baseline variant (the
 * last one unless --baseline names another).  `prefer=A+B+^C` (Open MPI 5
 * and later) creates the variant's duplicate with the info key
 * ompi_comm_coll_preference "A,B,^C": coll components A then B first,
 * whatever their priorities, C excluded (for the peers whose priority
 * MPI_T cannot write, e.g. `--variant xhc:coll_tacos_enable=0,prefer=xhc`).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5 /* 5.0 has MPI_*_init but says MPI 3.1 */
#include <mpi-ext.h>
#define ALLREDUCE_INIT MPIX_Allreduce_init
#else
#define ALLREDUCE_INIT MPI_Allreduce_init
#endif

static const char *coll = "allreduce", *mode = "blocking";
static int probes; /* --probes: MPI_Test calls spread over the computation (OSU's -t) */

/* Computation for `us` microseconds, no MPI call. */
static void compute(double us)
{
    volatile double x = 0;
    double t = MPI_Wtime();
    while ((MPI_Wtime() - t) * 1e6 < us)
        for (int i = 0; i < 100; i++)
            x += 1e-9;
    (void)x; /* (gcc 16: set but not used) */
}

static MPI_Comm dup_variant(const char *variant, const char **vmode);
static const char *variant_now; /* --variant: the one being timed */

/* The first and second modes (see the top): us of that call. */
static double time_first(void *s, void *d, int count)
{
    const char *unused;
    MPI_Comm c = dup_variant(variant_now ? variant_now : "tacos", &unused);
    MPI_Request req;
    double t[2];
    if (strstr(mode, "-new")) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (!strcmp(mode, "init-new")) {
            ALLREDUCE_INIT(s, d, count, MPI_FLOAT, MPI_SUM, c, MPI_INFO_NULL, &req);
            t[0] = (MPI_Wtime() - t0) * 1e6;
            MPI_Request_free(&req);
        } else {
            MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, c);
            t[0] = (MPI_Wtime() - t0) * 1e6;
        }
        MPI_Comm_free(&c);
        return t[0];
    }
    if (!strncmp(mode, "fresh-", 6)) {
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(s, d, 2 * count, MPI_FLOAT, MPI_SUM, c);
        MPI_Barrier(c);
    }
    for (int i = 0; i < 2; i++) {
        double t0 = MPI_Wtime();
        MPI_Iallreduce(s, d, count, MPI_FLOAT, MPI_SUM, c, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        t[i] = (MPI_Wtime() - t0) * 1e6;
    }
    MPI_Comm_free(&c);
    return t[strstr(mode, "second") != NULL];
}

/* The nonblocking and persistent modes (see the top): us per call, or the
 * overlap %. */
static double time_nonblocking(MPI_Comm comm, void *s, void *d, int count, int iters)
{
    if (strstr(mode, "first") || strstr(mode, "second") || strstr(mode, "-new"))
        return time_first(s, d, count);
    int warm = iters / 10 + 2, persistent = !strcmp(mode, "persistent") || !strcmp(mode, "init");
    MPI_Request req = MPI_REQUEST_NULL;
    double t0 = 0, pure = 0;
    if (persistent) { /* the size planned by a blocking call first */
        MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, comm);
        ALLREDUCE_INIT(s, d, count, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL, &req);
    }
    for (int i = 0; i < warm + iters; i++) {
        if (i == warm) {
            MPI_Barrier(comm);
            t0 = MPI_Wtime();
        }
        if (!strcmp(mode, "init")) {
            MPI_Request_free(&req);
            ALLREDUCE_INIT(s, d, count, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL, &req);
            continue;
        }
        if (persistent)
            MPI_Start(&req);
        else
            MPI_Iallreduce(s, d, count, MPI_FLOAT, MPI_SUM, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    pure = (MPI_Wtime() - t0) * 1e6 / iters;
    if (req != MPI_REQUEST_NULL)
        MPI_Request_free(&req);
    if (strcmp(mode, "overlap"))
        return pure;
    double compute_us = 0, total = 0;
    MPI_Barrier(comm);
    for (int i = 0; i < iters; i++) {
        double t = MPI_Wtime();
        MPI_Iallreduce(s, d, count, MPI_FLOAT, MPI_SUM, comm, &req);
        double c = MPI_Wtime();
        for (int p = 0; p <= probes; p++) {
            int flag;
            compute(pure / (probes + 1));
            if (p < probes)
                MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        }
        compute_us += (MPI_Wtime() - c) * 1e6;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        total += (MPI_Wtime() - t) * 1e6;
    }
    double overlap = 100 * (1 - (total - compute_us) / iters / pure);
    return overlap < 0 ? 0 : overlap > 100 ? 100 : overlap;
}

static int rank_of(MPI_Comm comm)
{
    int r;
    MPI_Comm_rank(comm, &r);
    return r;
}

/* This rank's mean us per call over `iters` calls (after a warm-up). */
static double time_calls(MPI_Comm comm, int n, void *s, void *d, long bytes, int iters)
{
    int count = (int)(bytes / sizeof(float)), warm = iters / 10 + 2;
    if (count < 1)
        count = 1;
    int part = count / n ? count / n : 1;
    double t0 = 0;
    if (strcmp(mode, "blocking"))
        return time_nonblocking(comm, s, d, count, iters);
    /* the v-variants: rank r's block is 2 (r + 1) / (n + 1) x part (Alltoallv:
     * rank i sends block (i + j) mod n's size to rank j) */
    int *vc = malloc(6 * (size_t)n * sizeof *vc), *vd = vc + n, me = rank_of(comm);
    int *sc = vc + 2 * n, *sd = vc + 3 * n, *rc = vc + 4 * n, *rd = vc + 5 * n;
    for (int r = 0, at = 0; r < n; at += vc[r], r++)
        vc[r] = (int)((long)part * 2 * (r + 1) / (n + 1)), vd[r] = at;
    for (int j = 0, a = 0, b = 0; j < n; a += sc[j], b += rc[j], j++)
        sc[j] = rc[j] = vc[(me + j) % n], sd[j] = a, rd[j] = b;
    for (int i = 0; i < warm + iters; i++) {
        if (i == warm) {
            MPI_Barrier(comm);
            t0 = MPI_Wtime();
        }
        if (!strcmp(coll, "allreduce"))
            MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, comm);
        else if (!strcmp(coll, "allgather"))
            MPI_Allgather(s, part, MPI_FLOAT, d, part, MPI_FLOAT, comm);
        else if (!strcmp(coll, "allgatherv"))
            MPI_Allgatherv(s, vc[me], MPI_FLOAT, d, vc, vd, MPI_FLOAT, comm);
        else if (!strcmp(coll, "gather")) /* bytes: the root's whole buffer */
            MPI_Gather(s, part, MPI_FLOAT, d, part, MPI_FLOAT, 0, comm);
        else if (!strcmp(coll, "scatter"))
            MPI_Scatter(s, part, MPI_FLOAT, d, part, MPI_FLOAT, 0, comm);
        else if (!strcmp(coll, "gatherv"))
            MPI_Gatherv(s, vc[me], MPI_FLOAT, d, vc, vd, MPI_FLOAT, 0, comm);
        else if (!strcmp(coll, "scatterv"))
            MPI_Scatterv(s, vc, vd, MPI_FLOAT, d, vc[me], MPI_FLOAT, 0, comm);
        else if (!strcmp(coll, "alltoallv"))
            MPI_Alltoallv(s, sc, sd, MPI_FLOAT, d, rc, rd, MPI_FLOAT, comm);
        else if (!strcmp(coll, "bcast"))
            MPI_Bcast(s, count, MPI_FLOAT, 0, comm);
        else if (!strcmp(coll, "alltoall")) /* bytes: each rank's send buffer */
            MPI_Alltoall(s, part, MPI_FLOAT, d, part, MPI_FLOAT, comm);
        else if (!strcmp(coll, "reduce"))
            MPI_Reduce(s, d, count, MPI_FLOAT, MPI_SUM, 0, comm);
        else
            MPI_Reduce_scatter_block(s, d, part, MPI_FLOAT, MPI_SUM, comm);
    }
    free(vc);
    return (MPI_Wtime() - t0) * 1e6 / iters;
}

static double mean_over_ranks(double t, int n)
{
    double sum;
    MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / n;
}

#define MAXV 8

/* Writes MPI_T control variable `name` (an int, a bool or a string) from
 * text; the previous value goes to old (text) when old is not NULL. */
static void cvar_set(const char *name, const char *value, char *old, size_t oldlen)
{
    int idx, count, verb, bind, scope, namelen = 0, desclen = 0;
    MPI_Datatype type;
    MPI_T_enum en;
    MPI_T_cvar_handle h;
    char buf[4096] = "";
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS ||
        MPI_T_cvar_get_info(idx, NULL, &namelen, &verb, &type, &en, NULL, &desclen, &bind,
                            &scope) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS) {
        fprintf(stderr, "osu_coll: no MPI_T control variable %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int v = atoi(value), rc;
    if (type == MPI_CHAR) {
        if (old)
            MPI_T_cvar_read(h, buf);
        snprintf(old ? old : buf, old ? oldlen : 1, "%s", buf);
        rc = MPI_T_cvar_write(h, (void *)value);
    } else {
        int was = 0;
        if (old)
            MPI_T_cvar_read(h, &was);
        if (old)
            snprintf(old, oldlen, "%d", was);
        rc = MPI_T_cvar_write(h, &v);
    }
    MPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "osu_coll: cannot write %s through MPI_T\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static MPI_Comm dup_with_tacos(int on);

/* A duplicate of MPI_COMM_WORLD created with the assignments of a variant
 * "NAME:VAR=VALUE,VAR=VALUE" in force; "mode=M" sets the variant's --mode
 * instead (*vmode); coll_tacos_enable where MPI_T has no such variable
 * (MPICH with libtacos-pmpi): the info key tacos_enable. */
static MPI_Comm dup_variant(const char *variant, const char **vmode)
{
    char spec[4096], olds[8][4096], *names[8], *save = NULL, *prefer = NULL;
    int k = 0, enable = -1, idx;
    const char *colon = strchr(variant, ':');
    snprintf(spec, sizeof spec, "%s", colon ? colon + 1 : "");
    for (char *a = strtok_r(spec, ",", &save); a && k < 8; a = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(a, '=');
        if (!eq) {
            fprintf(stderr, "osu_coll: variant %s: '%s' is not VAR=VALUE\n", variant, a);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        *eq = 0;
        if (!strcmp(a, "mode")) {
            *vmode = strdup(eq + 1);
            continue;
        }
        if (!strcmp(a, "prefer")) { /* A+B+^C: the info key's "A,B,^C" */
            for (char *p = prefer = eq + 1; *p; p++)
                *p = *p == '+' ? ',' : *p;
            continue;
        }
        if (!strcmp(a, "coll_tacos_enable") &&
            MPI_T_cvar_get_index(a, &idx) != MPI_SUCCESS) {
            enable = atoi(eq + 1);
            continue;
        }
        names[k] = a;
        cvar_set(a, eq + 1, olds[k], sizeof olds[k]);
        k++;
    }
    MPI_Comm c;
    if (prefer) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "ompi_comm_coll_preference", prefer);
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
        MPI_Info_free(&info);
    } else if (enable >= 0)
        c = dup_with_tacos(enable);
    else
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    while (k-- > 0)
        cvar_set(names[k], olds[k], NULL, 0);
    return c;
}

/* A duplicate of MPI_COMM_WORLD created with coll/tacos on or off: the
 * Open MPI component's MPI_T variable coll_tacos_enable, or else (MPICH with
 * libtacos-pmpi) the communicator info key tacos_enable. */
static MPI_Comm dup_with_tacos(int on)
{
    int idx, count;
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    MPI_Comm c;
    if (MPI_T_cvar_get_index("coll_tacos_enable", &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS ||
        MPI_T_cvar_write(h, &on) != MPI_SUCCESS) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "tacos_enable", on ? "true" : "false");
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
        MPI_Info_free(&info);
        return c;
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
    long min = 8, max = 64L << 20, factor = 2;
    int rounds = 0, provided, nv = 0, base = -1;
    const char *variants[MAXV], *baseline = NULL, *vmode[MAXV];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min = atol(argv[++i]);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max = atol(argv[++i]);
        else if (!strcmp(argv[i], "--factor") && i + 1 < argc && atol(argv[i + 1]) > 1)
            factor = atol(argv[++i]);
        else if (!strcmp(argv[i], "--ab") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--variant") && i + 1 < argc && nv < MAXV)
            variants[nv++] = argv[++i];
        else if (!strcmp(argv[i], "--baseline") && i + 1 < argc)
            baseline = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else if (!strcmp(argv[i], "--probes") && i + 1 < argc)
            probes = atoi(argv[++i]);
        else
            coll = argv[i];
    }
    char *s = malloc((size_t)max * (size_t)n), *d = malloc((size_t)max * (size_t)n);
    memset(s, 1, (size_t)max * (size_t)n);
    memset(d, 0, (size_t)max * (size_t)n);
    MPI_Comm a = MPI_COMM_WORLD, b = MPI_COMM_NULL, vc[MAXV];
    if (rounds > 0) {
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        if (nv) {
            for (int v = 0; v < nv; v++) {
                vmode[v] = mode;
                vc[v] = dup_variant(variants[v], &vmode[v]);
                size_t len = strcspn(variants[v], ":");
                if (baseline && strlen(baseline) == len && !strncmp(baseline, variants[v], len))
                    base = v;
            }
            if (base < 0)
                base = nv - 1;
        } else {
            a = dup_with_tacos(1);
            b = dup_with_tacos(0);
        }
    }
    if (nv && rounds > 0) {
        if (me == 0) {
            printf("# %s %s, %d ranks, %d variants alternating over %d rounds (%s, median "
                   "block; ratio = variant / %.*s)\n# %10s",
                   coll, mode, n, nv, rounds,
                   strcmp(mode, "overlap") ? "us per call" : "overlap %", (int)strcspn(variants[base], ":"), variants[base],
                   "bytes");
            for (int v = 0; v < nv; v++)
                printf(" %14.*s", (int)strcspn(variants[v], ":"), variants[v]);
            for (int v = 0; v < nv; v++)
                if (v != base)
                    printf(" %8.*s", (int)strcspn(variants[v], ":"), variants[v]);
            printf("\n");
        }
        for (long bytes = min; bytes <= max; bytes *= factor) {
            int iters = bytes <= 65536 ? 100 : bytes <= (1 << 20) ? 20 : bytes <= (8 << 20) ? 5 : 2;
            double t[MAXV][64], med[MAXV];
            int r = rounds < 64 ? rounds : 64;
            for (int i = 0; i < r; i++)
                for (int v = 0; v < nv; v++) {
                    mode = vmode[v], variant_now = variants[v];
                    t[v][i] = mean_over_ranks(time_calls(vc[v], n, s, d, bytes, iters), n);
                }
            for (int v = 0; v < nv; v++) {
                qsort(t[v], (size_t)r, sizeof t[v][0], by_value);
                med[v] = t[v][r / 2];
            }
            if (me == 0) {
                printf("  %10ld", bytes);
                for (int v = 0; v < nv; v++)
                    printf(" %14.1f", med[v]);
                for (int v = 0; v < nv; v++)
                    if (v != base)
                        printf(" %7.2fx", med[v] / med[base]);
                printf("\n");
                fflush(stdout);
            }
        }
        for (int v = 0; v < nv; v++)
            MPI_Comm_free(&vc[v]);
        MPI_T_finalize();
        free(s);
        free(d);
        MPI_Finalize();
        return 0;
    }
    if (me == 0 && rounds > 0)
        printf("# %s, %d ranks, A/B over %d rounds\n# %10s %12s %12s %8s\n", coll, n, rounds,
               "bytes", "tacos_us", "tuned_us", "ratio");
    else if (me == 0)
        printf("# %s, %d ranks\n# %10s %12s %12s %12s\n", coll, n, "bytes", "avg_us", "min_us",
               "max_us");
    for (long bytes = min; bytes <= max; bytes *= factor) {
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
