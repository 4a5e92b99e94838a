/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TACOS against Ring, Direct, RHD and DBT, simulated on the same topology by
 * the congestion-aware simulator, beside the ideal bound: the setups of the
 * TACOS evaluation (All-Reduce, 0.5 us and 50 GB/s links unless noted).
 * TACOS tries 1, 2, 4, ... max_k chunks per NPU (8 or 16, per table) with a
 * number of seeds each, and keeps the fastest simulated schedule.  Prints the
 * tables and writes them as CSV.
 *
 * usage: bench_compare [--csv FILE] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tacos_synth.h"

#define NBASE 4
static const char *base_names[NBASE] = {"ring", "direct", "rhd", "dbt"};

typedef struct {
    double tacos_us, ideal_us, optimal_us, synth_s;
    int k;
    double base_us[NBASE]; /* < 0: not applicable */
} row_t;

static FILE *csv;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_compare: %s: %s\n", what, tacos_last_error());
    exit(1);
}

static double simulate(const tacos_sched_t *s, const tacos_topo_t *t, int order)
{
    tacos_sim_t *r;
    if (tacos_simulate(s, t, order, &r))
        die("simulate");
    double us = r->time_us;
    tacos_sim_free(r);
    return us;
}

static row_t run(const tacos_topo_t *t, uint64_t size, int max_k, int trials)
{
    row_t row = {0};
    row.tacos_us = -1;
    double t0 = now_s();
    for (int k = 1; k <= max_k; k *= 2) {
        tacos_synth_opts_t o = {TACOS_ALLREDUCE, 0, k, size, 1, trials, 0, 0};
        tacos_sched_t *s;
        if (tacos_synthesize(t, &o, &s))
            die(t->name);
        double us = simulate(s, t, 1);
        if (row.tacos_us < 0 || us < row.tacos_us) {
            row.tacos_us = us;
            row.k = k;
        }
        tacos_sched_free(s);
    }
    row.synth_s = now_s() - t0;
    if (tacos_ideal_bound(t, TACOS_ALLREDUCE, size, &row.ideal_us))
        die("ideal");
    if (tacos_optimal_bound(t, TACOS_ALLREDUCE, 0, size, &row.optimal_us))
        die("optimal");
    for (int b = 0; b < NBASE; b++) {
        tacos_sched_t *s;
        row.base_us[b] = -1;
        if (tacos_baseline(base_names[b], TACOS_ALLREDUCE, t->npus, size, &s) == TACOS_OK) {
            row.base_us[b] = simulate(s, t, 0);
            tacos_sched_free(s);
        }
    }
    return row;
}

/* A generated shape (bandwidths and latencies one per dimension, or one for
 * all) or, for a name ending in .json, a file of benchmarks/topologies. */
static tacos_topo_t *topo_lat(const char *spec, const char *bw_list, const char *lat_list,
                              const int *failed, int nfailed)
{
    double bw[3] = {50, 50, 50}, lat[3] = {0.5, 0.5, 0.5};
    int nbw = sscanf(bw_list, "%lf,%lf,%lf", &bw[0], &bw[1], &bw[2]);
    int nlat = sscanf(lat_list, "%lf,%lf,%lf", &lat[0], &lat[1], &lat[2]);
    tacos_topo_t *t;
    size_t len = strlen(spec);
    if (len > 5 && strcmp(spec + len - 5, ".json") == 0) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", TOPO_DIR, spec);
        if (tacos_topo_read_file(path, &t))
            die(path);
        return t;
    }
    if (tacos_topo_generate(spec, bw, nbw, lat, nlat, 1, &t) ||
        (nfailed && tacos_topo_remove_npus(t, failed, nfailed)))
        die(spec);
    return t;
}

static tacos_topo_t *topo(const char *spec, const char *bw_list, const int *failed, int nfailed)
{
    return topo_lat(spec, bw_list, "0.5", failed, nfailed);
}

/* The throughput-optimal time when every message pays its link's latency:
 * no schedule whose messages carry at most `chunk` bytes moves more than
 * chunk / cost(chunk) bytes per us over a link, so the same cut bound with
 * those bandwidths holds for it (the k-chunk schedules here). */
static double optimal_per_message(const char *spec, const char *bw, const char *lat,
                                  uint64_t size, double chunk)
{
    tacos_topo_t *t = topo_lat(spec, bw, lat, NULL, 0);
    for (size_t i = 0; i < t->nlinks; i++)
        t->links[i].bw_gbps = chunk / tacos_link_cost_us(&t->links[i], chunk) / 1e3;
    double us;
    if (tacos_optimal_bound(t, TACOS_ALLREDUCE, 0, size, &us))
        die("optimal");
    tacos_topo_free(t);
    return us;
}

static void header(const char *title)
{
    printf("\n%s\n", title);
    printf("%-16s %5s %8s %3s %12s %12s %12s %12s %12s %12s %7s %12s %7s %8s %8s\n", "topology",
           "NPUs", "size_MB", "k", "tacos_us", "ring_us", "direct_us", "rhd_us", "dbt_us",
           "ideal_us", "eff", "optimal_us", "eff_opt", "best_bl", "synth_s");
}

/* One row: absolute times, efficiency vs ideal, speedup over the best baseline. */
static void print_row(int table, const char *label, const tacos_topo_t *t, uint64_t size,
                      const row_t *r)
{
    double best = -1;
    printf("%-16s %5d %8.1f %3d %12.1f", label, t->npus, size / 1e6, r->k, r->tacos_us);
    for (int b = 0; b < NBASE; b++) {
        if (r->base_us[b] < 0)
            printf(" %12s", "n/a");
        else
            printf(" %12.1f", r->base_us[b]);
        if (r->base_us[b] >= 0 && (best < 0 || r->base_us[b] < best))
            best = r->base_us[b];
    }
    printf(" %12.1f %6.1f%% %12.1f %6.1f%% %7.2fx %8.3f\n", r->ideal_us,
           100 * r->ideal_us / r->tacos_us, r->optimal_us, 100 * r->optimal_us / r->tacos_us,
           best / r->tacos_us, r->synth_s);
    fprintf(csv, "%d,%s,%d,%llu,%d,%.3f", table, label, t->npus, (unsigned long long)size, r->k,
            r->tacos_us);
    for (int b = 0; b < NBASE; b++)
        fprintf(csv, ",%.3f", r->base_us[b]);
    fprintf(csv, ",%.3f,%.4f,%.4f,%.3f,%.4f\n", r->ideal_us, r->ideal_us / r->tacos_us,
            best / r->tacos_us, r->optimal_us, r->optimal_us / r->tacos_us);
}

/* Table 2 style: every algorithm normalized to TACOS. */
static void print_normalized(const char *label, const row_t *r)
{
    printf("%-16s %7.2f", label, 1.0);
    for (int b = 0; b < NBASE; b++)
        if (r->base_us[b] < 0)
            printf(" %7s", "n/a");
        else
            printf(" %7.2f", r->base_us[b] / r->tacos_us);
    printf(" %7.2f\n", r->ideal_us / r->tacos_us);
}

int main(int argc, char **argv)
{
    const char *csv_path = "compare.csv";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv_path = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
    }
    csv = fopen(csv_path, "w");
    if (!csv) {
        perror(csv_path);
        return 1;
    }
    fprintf(csv, "table,topology,npus,size_bytes,k,tacos_us,ring_us,direct_us,rhd_us,dbt_us,"
                 "ideal_us,efficiency,speedup_vs_best_baseline,optimal_us,optimal_efficiency\n");
    int max_k = quick ? 2 : 8;
    uint64_t GB = 1000000000ull;

    header("1. 64 NPUs, 1 GB All-Reduce, 0.5 us, 50 GB/s (k <= 8, 16 seeds)");
    const char *t1[] = {"ring:64", "fc:64", "mesh2d:8x8", "mesh3d:4x4x4"};
    for (int i = 0; i < 4; i++) {
        tacos_topo_t *t = topo(t1[i], "50", NULL, 0);
        row_t r = run(t, GB, max_k, 16);
        print_row(1, t1[i], t, GB, &r);
        tacos_topo_free(t);
    }

    header("2. 3D Ring-FC-Switch 2x4xN, 200/100/50 GB/s, 1 GB All-Reduce (k <= 16, 2 seeds)");
    row_t rows2[4];
    const char *t2[] = {"rfs:2x4x2", "rfs:2x4x4", "rfs:2x4x8", "rfs:2x4x16"};
    double eff_sum = 0;
    for (int i = 0; i < (quick ? 2 : 4); i++) {
        tacos_topo_t *t = topo(t2[i], "200,100,50", NULL, 0);
        rows2[i] = run(t, GB, 2 * max_k, 2);
        print_row(2, t2[i], t, GB, &rows2[i]);
        eff_sum += rows2[i].ideal_us / rows2[i].tacos_us;
        tacos_topo_free(t);
    }
    printf("normalized to TACOS (time / TACOS time; ideal < 1 is the gap):\n");
    printf("%-16s %7s %7s %7s %7s %7s %7s\n", "topology", "TACOS", "Ring", "Direct", "RHD", "DBT",
           "Ideal");
    for (int i = 0; i < (quick ? 2 : 4); i++)
        print_normalized(t2[i], &rows2[i]);
    printf("average efficiency vs ideal: %.1f%%\n", 100 * eff_sum / (quick ? 2 : 4));

    header("3. 2D Switch 8x4 (300/25 GB/s) and DragonFly 4x5 (400/200 GB/s), 1 GB (k <= 16, 4 seeds)");
    const char *t3[] = {"ss:8x4", "dragonfly:4x5"}, *bw3[] = {"300,25", "400,200"};
    for (int i = 0; i < 2; i++) {
        tacos_topo_t *t = topo(t3[i], bw3[i], NULL, 0);
        row_t r = run(t, GB, 2 * max_k, 4);
        print_row(3, t3[i], t, GB, &r);
        tacos_topo_free(t);
    }

    header("4. Efficiency vs ideal over sizes (k <= 8, 2 seeds)");
    const char *t4[] = {"torus3d:5x5x5", "mesh2d:10x10", "mesh3d:5x5x5"};
    uint64_t sizes[] = {1000000, 10000000, 100000000, GB};
    for (int i = 0; i < 3; i++) {
        tacos_topo_t *t = topo(t4[i], "50", NULL, 0);
        for (int j = quick ? 2 : 0; j < 4; j++) {
            row_t r = run(t, sizes[j], max_k, 2);
            print_row(4, t4[i], t, sizes[j], &r);
        }
        tacos_topo_free(t);
    }

    header("5. 4x4 mesh with NPUs 5 and 10 failed (14 NPUs), 1 GB (k <= 8, 4 seeds)");
    int failed[2] = {5, 10};
    tacos_topo_t *t = topo("mesh2d:4x4", "50", failed, 2);
    row_t r = run(t, GB, max_k, 4);
    print_row(5, "mesh4x4-2failed", t, GB, &r);
    tacos_topo_free(t);

    printf("\n6. Share of the throughput optimum (All-Reduce; k <= %d, 4 seeds; opt_msg: the optimum "
           "when each message of the chosen k pays its latency)\n", 4 * max_k);
    printf("%-22s %5s %8s %3s %12s %12s %7s %12s %7s %8s %8s\n", "topology", "NPUs", "size_MB",
           "k", "tacos_us", "optimal_us", "eff_opt", "opt_msg_us", "eff_msg", "best_bl", "synth_s");
    struct {
        const char *spec, *bw, *lat;
        uint64_t size;
        int full_only;
    } goal[] = {
        {"rfs:2x4x2", "200,100,50", "0.5", GB, 0},  {"rfs:2x4x4", "200,100,50", "0.5", GB, 0},
        {"rfs:2x4x8", "200,100,50", "0.5", GB, 1},  {"rfs:2x4x16", "200,100,50", "0.5", GB, 1},
        {"ss:8x4", "300,25", "0.5", GB, 0},         {"dragonfly:4x5", "400,200", "0.5", GB, 0},
        {"dgx1", "50", "0.5", GB, 0},               {"fs:8x8", "100,25", "0.5,2", 64 << 20, 0},
        {"fs:8x64", "100,25", "0.5,2", 64 << 20, 1}, {"dgx2_probed.json", "", "", GB, 0},
        {"testbed_two_r2.json", "", "", 64 << 20, 0}, {"testbed_pairs4_r2.json", "", "", 64 << 20, 0},
        {"testbed_ring4_r2.json", "", "", 64 << 20, 0}, {"testbed_star3_r2.json", "", "", 64 << 20, 0},
        {"mesh2d:8x8", "50", "0.5", GB, 0},         {"torus3d:4x4x4", "50", "0.5", GB, 0},
    };
    double worst = 1;
    for (size_t i = 0; i < sizeof goal / sizeof *goal; i++) {
        if (quick && goal[i].full_only)
            continue;
        tacos_topo_t *t = topo_lat(goal[i].spec, goal[i].bw, goal[i].lat, NULL, 0);
        /* 512 NPUs: k <= 8 and one seed keep it to a minute */
        int big = t->npus > 256;
        row_t r = run(t, goal[i].size, big ? 8 : 4 * max_k, big ? 1 : 4);
        double best = -1;
        for (int b = 0; b < NBASE; b++)
            if (r.base_us[b] >= 0 && (best < 0 || r.base_us[b] < best))
                best = r.base_us[b];
        double chunk = (double)goal[i].size / ((double)r.k * t->npus);
        double msg = optimal_per_message(goal[i].spec, goal[i].bw, goal[i].lat, goal[i].size, chunk);
        printf("%-22s %5d %8.1f %3d %12.1f %12.1f %6.1f%% %12.1f %6.1f%% %7.2fx %8.3f\n",
               goal[i].spec, t->npus, goal[i].size / 1e6, r.k, r.tacos_us, r.optimal_us,
               100 * r.optimal_us / r.tacos_us, msg, 100 * msg / r.tacos_us, best / r.tacos_us,
               r.synth_s);
        fprintf(csv, "6,%s,%d,%llu,%d,%.3f,%.3f,%.3f,%.3f,%.3f,,,%.4f,%.3f,%.4f\n", goal[i].spec,
                t->npus, (unsigned long long)goal[i].size, r.k, r.tacos_us, r.base_us[0],
                r.base_us[1], r.base_us[2], r.base_us[3], best / r.tacos_us, r.optimal_us,
                r.optimal_us / r.tacos_us);
        if (r.optimal_us / r.tacos_us < worst)
            worst = r.optimal_us / r.tacos_us;
        tacos_topo_free(t);
    }
    printf("lowest share of the optimum: %.1f%%\n", 100 * worst);

    fclose(csv);
    printf("\nCSV written to %s\n", csv_path);
    return 0;
}
