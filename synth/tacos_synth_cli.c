/* SPDX-License-Identifier: BSD-3-Clause */
/* tacos-synth: synthesize a collective schedule for a topology. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tacos_synth.h"

#define MAX_LIST 16

static const char usage[] =
    "usage: tacos-synth --topology SPEC|FILE.json [options]\n"
    "       tacos-synth --validate SCHEDULE.json\n"
    "\n"
    "Synthesizes a collective schedule with the TACOS greedy (link-chunk matching\n"
    "over a time-expanded network) and prints its summary.\n"
    "\n"
    "Topology:\n"
    "  -t, --topology SPEC|FILE  built-in shape or topology JSON file. Shapes:\n"
    "                            ring:N uniring:N fc:N switch:N line:N mesh2d:RxC\n"
    "                            torus2d:RxC mesh3d:XxYxZ torus3d:XxYxZ\n"
    "                            hypercube:N (N=2^k) dragonfly:GROUPSxROUTERS dgx1,\n"
    "                            fattree:HOSTSxLEAVES (--bw PORT,UPLINK),\n"
    "                            rails:RANKSxHOSTS (--bw HOST,RAIL),\n"
    "                            or one letter per dimension (r ring, u uni-ring,\n"
    "                            l line, f fully-connected, s switch): rfs:2x4x16\n"
    "      --bw LIST             link bandwidth in GB/s (10^9 B/s), one value or one\n"
    "                            per dimension, e.g. 200,100,50 (default 50)\n"
    "      --lat LIST            link latency in us, same form (default 0.5)\n"
    "      --unwind-degree D     switch unwinding degree (default 1; capped at N-1); auto:\n"
    "                            as coll/tacos unwinds (a host's switch N-1, a network's\n"
    "                            a ring up to 8 hosts and 8 beyond, a switch tree's 8;\n"
    "                            sizes whose chunks cross sooner with every switch fully\n"
    "                            unwound, so); wide: auto's degrees at every size\n"
    "      --failed-npus LIST    remove these NPUs (comma list), renumbering the rest\n"
    "      --write-topology FILE write the topology as JSON (explicit links)\n"
    "\n"
    "Collective:\n"
    "  -c, --collective NAME     allgather | broadcast | reduce-scatter | reduce |\n"
    "                            allreduce | alltoall | gather | scatter (default\n"
    "                            allgather)\n"
    "      --root R              root of broadcast/reduce/gather/scatter (default 0)\n"
    "  -s, --size SIZE           the collective's whole buffer: gathered output for\n"
    "                            allgather, each rank's vector otherwise (alltoall:\n"
    "                            its send buffer; gather/scatter: the root's).\n"
    "                            Suffixes B KB MB GB (10^3) KiB MiB GiB (2^10) (default 1MiB)\n"
    "      --chunk-size SIZE     instead of --size: bytes of one chunk\n"
    "  -k, --chunks-per-npu K|auto  chunks per NPU; one chunk = size / (K x NPUs)\n"
    "                            (default 1).\n"
    "                            auto: as coll/tacos at a first call, K = 1, 2, 4, 8\n"
    "                            until one models over a tenth slower, then 16, 32\n"
    "                            while each is the fastest so far; the fastest\n"
    "                            kept (synthesis: the time of all tried)\n"
    "      --chunks-per-message M  up to M chunks (1..64) in one message where a\n"
    "                            link's latency outweighs a chunk's bytes, the\n"
    "                            latency paid once; the faster of that and one\n"
    "                            chunk per message kept (default 1; flat, spread\n"
    "                            collectives; coll_tacos_chunks_per_message)\n"
    "      --message-bytes SIZE  with M > 1, the most bytes such a message\n"
    "                            carries: as many chunks as fit, one at least\n"
    "                            (default 3840, 0: no limit;\n"
    "                            coll_tacos_message_bytes)\n"
    "      --part RANK           with --hierarchy levels: only what RANK needs, as\n"
    "                            coll/tacos with coll_tacos_hierarchy 1 (its own\n"
    "                            transfers, levels one after the other; the time is\n"
    "                            the first group's and rail's levels in turn); with\n"
    "                            auto, as with coll_tacos_hierarchy 2: that part or\n"
    "                            the whole flat schedule, the faster in the model\n"
    "                            (flat tried below 512 ranks only). A part's bound:\n"
    "                            the throughput optimum alone, against its time.\n"
    "                            all: every rank's part, each transfer from its\n"
    "                            sender's, as one schedule (validated; simulate it\n"
    "                            for what coll_tacos_hierarchy 1 runs)\n"
    "      --hierarchy flat|levels|auto  flat (default): the greedy over the whole\n"
    "                            topology. levels: All-Gather, Reduce-Scatter and\n"
    "                            All-Reduce composed from groups (a shape's first\n"
    "                            dimension, else what links faster than the slowest\n"
    "                            join) and rails (the i-th member of every group),\n"
    "                            each synthesized on its own links. auto: both where\n"
    "                            the topology has levels, the faster kept (the whole\n"
    "                            composition; with --part or --schedule-dir, as\n"
    "                            coll/tacos's default: a rank's part against flat)\n"
    "\n"
    "Search and output:\n"
    "      --seed S              PRNG seed (default 1); same seed, same schedule\n"
    "      --trials T            independent seeds tried, fastest kept (default 1)\n"
    "      --method greedy|ilp   ilp: after the greedy, each phase (All-to-All,\n"
    "                            Gather, Scatter: their routing) as an integer\n"
    "                            program over the time-expanded network (TACOS-ILP,\n"
    "                            COIN-OR CBC), kept when faster; for small shapes\n"
    "      --ilp-seconds S       time limit of --method ilp, all phases (default 60);\n"
    "                            on time-out the best schedule so far is kept\n"
    "      --schedule-dir DIR    read the schedule from DIR (created if missing)\n"
    "                            where coll/tacos's coll_tacos_schedule_dir keeps\n"
    "                            one for this topology and these options, else\n"
    "                            synthesize and keep it there. Matches what a\n"
    "                            communicator asks\n"
    "                            for with the communicator's topology file, a\n"
    "                            power-of-two --size, -k auto (or its\n"
    "                            coll_tacos_chunks) and its --seed, --trials and\n"
    "                            --hierarchy (with levels or auto, as coll/tacos's\n"
    "                            hierarchy 1 or 2: where it keeps a rank's part in\n"
    "                            levels, that choice, its k and time, and rank 0's\n"
    "                            part made again at that k)\n"
    "  -o, --output FILE         write the schedule as JSON\n"
    "      --program RANK        print the ordered program of one rank\n"
    "      --summary-json        print the summary as one JSON line: npus, chunks,\n"
    "                            synth_seconds, collective_us, lower_bound_us,\n"
    "                            efficiency, optimal_us, optimal_efficiency,\n"
    "                            transfers, chunks_per_message (the most one\n"
    "                            message carries; bounds null where over 1), ...\n"
    "      --no-validate         skip validating the synthesized schedule\n"
    "      --validate FILE       read a schedule JSON, validate it, print its summary\n"
    "      --simulate FILE       read a schedule JSON, validate it and simulate it on its\n"
    "                            topology (with --compare, baselines beside it)\n"
    "\n"
    "Simulation and comparison:\n"
    "      --compare LIST        simulate baselines on the same topology and size and\n"
    "                            print them beside TACOS and the ideal bound: ring,\n"
    "                            direct, rhd, dbt, han (two levels through a leader\n"
    "                            per group of the shape's first size, as coll/han,\n"
    "                            unsegmented; han:L groups of L); alltoall: direct,\n"
    "                            pairwise, bruck;\n"
    "                            gather, scatter: direct (comma list; baselines\n"
    "                            take root 0)\n"
    "      --heatmap FILE.svg    link-load heat map of the TACOS schedule; with\n"
    "                            --compare also FILE-<baseline>.svg\n"
    "      --utilization FILE.svg  link utilization over time, one line per algorithm\n"
    "      --switch-nodes        simulate (TACOS and the baselines) on the shape with\n"
    "                            every switch a node of its own, its ports at the\n"
    "                            switch's bandwidth, cut through (not stored),\n"
    "                            not on the unwound links TACOS plans over (the\n"
    "                            ideal bound is not shown); a built-in shape\n"
    "  -h, --help                this text\n"
    "\n"
    "Exit status: 0 on success, 1 on an error (message on stderr), 2 on bad usage.\n";

static int die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "tacos-synth: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'tacos-synth --help'.\n");
    return 2;
}

static int parse_size(const char *s, uint64_t *out)
{
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},      {"B", 1},           {"KB", 1e3},       {"MB", 1e6},
                 {"GB", 1e9},  {"KiB", 1024.0},    {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            double bytes = v * units[i].mult;
            if (bytes < 1 || bytes > 1e18 || bytes != floor(bytes))
                return -1;
            *out = (uint64_t)bytes;
            return 0;
        }
    return -1;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_doubles(const char *s, double *v, int *n)
{
    *n = 0;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || *n == MAX_LIST || !isfinite(x))
            return -1;
        v[(*n)++] = x;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

static int parse_ints(const char *s, int *v, int *n, int max)
{
    *n = 0;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || *n == max || x < 0 || x > 1 << 24)
            return -1;
        v[(*n)++] = (int)x;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int is_file(const char *arg)
{
    struct stat st;
    size_t n = strlen(arg);
    return stat(arg, &st) == 0 || (n > 5 && strcmp(arg + n - 5, ".json") == 0);
}

/* *topo, a shape unwound as the component unwinds it (TACOS_DEGREE_AUTO)
 * with the failed NPUs removed, replaced by the same shape with its
 * switches fully unwound where tacos_lowering_for picks that for size
 * (none where that has more links than a topology may: as coll/tacos). */
static int pick_lowering(const char *spec, const double *bw, int nbw, const double *lat,
                         int nlat, const int *failed, int nfailed, uint64_t size,
                         tacos_topo_t **topo)
{
    tacos_topo_t *full = NULL;
    const tacos_topo_t *use = *topo;
    if (tacos_topo_generate(spec, bw, nbw, lat, nlat, TACOS_DEGREE_FULL, &full))
        return TACOS_OK;
    int rc = nfailed ? tacos_topo_remove_npus(full, failed, nfailed) : TACOS_OK;
    if (!rc && !(rc = tacos_lowering_keep_full(*topo, &full)))
        rc = tacos_lowering_for(*topo, full, size, &use);
    if (!rc && use == full) {
        tacos_topo_free(*topo);
        *topo = full;
        full = NULL;
    }
    tacos_topo_free(full);
    return rc;
}

static void print_program(const tacos_prog_t *p)
{
    printf("program of rank %d (%zu ops)\n", p->rank, p->nops);
    for (size_t i = 0; i < p->nops; i++) {
        const tacos_op_t *op = &p->ops[i];
        printf("  %4zu t=%-12.6g %s %-6s chunk %-5d %s %-5d seq %-4d deps", i, op->t_us,
               op->kind == TACOS_OP_SEND ? "send" : "recv", op->reduce ? "reduce" : "copy",
               op->chunk, op->kind == TACOS_OP_SEND ? "to" : "from", op->peer, op->seq);
        for (size_t d = 0; d < op->ndeps; d++)
            printf(" %zu", p->dep[op->deps + d]);
        printf("\n");
    }
}

#define MAX_BASELINES 8

/* Everything a run reports. */
typedef struct {
    const tacos_sched_t *s;
    double synth_s; /* < 0: the schedule was read from a file */
    const char *kept; /* --schedule-dir: its file; read_kept: read from it */
    int read_kept;
    double bound_us;
    double optimal_us; /* throughput-optimal (cut) bound, latency-aware */
    int per_msg;       /* the most chunks one message carries (> 1: no bounds, NAN) */
    int ilp;           /* --method ilp; ilp_proven: no faster schedule in its model */
    int ilp_proven;
    uint64_t seed;
    int trials;
    tacos_sim_t *sim; /* the schedule simulated on its topology, if asked */
    tacos_topo_t *net; /* --switch-nodes: the network simulated on (else the topology) */
    int han_group;     /* the built-in shape's first size where it has two or more, else 0 */
    double ideal_us;
    int nbase;
    const char *base_name[MAX_BASELINES];
    tacos_sim_t *base_sim[MAX_BASELINES]; /* NULL: not applicable, see base_err */
    char base_err[MAX_BASELINES][200];
} report_t;

/* One algorithm's simulated time, its share of the ideal bound (not with
 * --switch-nodes) and its time over TACOS's. */
static void compare_row(const report_t *r, const char *name, double t_us, double tacos_us)
{
    char share[32] = "-";
    if (!r->net)
        snprintf(share, sizeof share, "%.1f%%", 100 * (t_us > 0 ? r->ideal_us / t_us : 1));
    printf("%-10s %14.3f %10s %9.2fx\n", name, t_us, share, tacos_us > 0 ? t_us / tacos_us : 1.0);
}

/* ,"key":value, or null where the value is NAN (not computed) */
static void json_number(const char *key, double v)
{
    printf(isnan(v) ? "%snull" : "%s%.6f", key, v);
}

static void print_json(const report_t *r)
{
    const tacos_sched_t *s = r->s;
    const tacos_topo_t *t = s->topo;
    printf("{\"topology\":\"%s\",\"collective\":\"%s\",\"npus\":%d,\"links\":%zu,"
           "\"chunks_per_npu\":%d,\"chunks\":%d,\"size_bytes\":%llu,\"seed\":%llu,"
           "\"trials\":%d,\"synth_seconds\":%.6f,\"collective_us\":%.6f,",
           t->name, tacos_coll_name(s->coll), s->npus, t->nlinks, s->chunks_per_npu, s->nchunks,
           (unsigned long long)s->size_bytes, (unsigned long long)r->seed, r->trials, r->synth_s,
           s->time_us);
    json_number("\"lower_bound_us\":", r->bound_us);
    json_number(",\"efficiency\":", s->time_us > 0 ? r->bound_us / s->time_us : 1.0);
    json_number(",\"optimal_us\":", r->optimal_us);
    json_number(",\"optimal_efficiency\":", s->time_us > 0 ? r->optimal_us / s->time_us : 1.0);
    printf(",\"transfers\":%zu,\"chunks_per_message\":%d", s->nxfers, r->per_msg);
    if (s->levels == 2) /* one rank's part: its time an estimate, the optimum its only bound */
        printf(",\"part\":true");
    printf(",\"method\":\"%s\",\"hierarchy\":\"%s\"", r->ilp ? "ilp" : "greedy",
           s->levels ? "levels" : "flat");
    if (r->ilp)
        printf(",\"ilp_proven\":%s", r->ilp_proven ? "true" : "false");
    if (r->kept) /* (its name only: the directory might need escaping) */
        printf(",\"schedule_file\":\"%s\",\"read\":%s", strrchr(r->kept, '/') + 1,
               r->read_kept ? "true" : "false");
    if (r->sim) {
        printf(",\"simulated_us\":%.6f,\"switch_nodes\":%s,\"ideal_us\":", r->sim->time_us,
               r->net ? "true" : "false");
        printf(r->net ? "null" : "%.6f", r->ideal_us); /* (a bound of the unwound links) */
        printf(",\"baselines\":{");
        for (int i = 0, first = 1; i < r->nbase; i++)
            if (r->base_sim[i]) {
                printf("%s\"%s\":%.6f", first ? "" : ",", r->base_name[i], r->base_sim[i]->time_us);
                first = 0;
            }
        printf("}");
    }
    printf("}\n");
}

static void print_summary(const report_t *r, int json)
{
    if (json) {
        print_json(r);
        return;
    }
    const tacos_sched_t *s = r->s;
    const tacos_topo_t *t = s->topo;
    printf("topology      %s (%d NPUs, %zu links)\n", t->name, s->npus, t->nlinks);
    printf("collective    %s, %llu bytes, %d chunks/NPU (%d chunks of %.0f bytes)\n",
           tacos_coll_name(s->coll), (unsigned long long)s->size_bytes, s->chunks_per_npu,
           s->nchunks, tacos_sched_chunk_bytes(s));
    if (r->read_kept)
        printf("read          %.3f s (%s%s)\n", r->synth_s, r->kept,
               s->levels == 2 ? ": the part's choice, rank 0's part made at its k" : "");
    else if (r->synth_s >= 0)
        printf("synthesis     %.3f s (seed %llu, %d trial%s%s)%s%s\n", r->synth_s,
               (unsigned long long)r->seed, r->trials, r->trials == 1 ? "" : "s",
               s->levels ? ", in levels" : "", r->kept ? ", kept in " : "",
               r->kept ? r->kept : "");
    if (s->levels == 2) {
        printf("time          %.3f us (the first group's and rail's levels in turn)\n",
               s->time_us);
        if (!isnan(r->optimal_us))
            printf("optimal       %.3f us (%.1f%% of the part's time, which the ranks' run "
                   "ends within)\n",
                   r->optimal_us, 100 * (s->time_us > 0 ? r->optimal_us / s->time_us : 1.0));
        printf("transfers     %zu (to and from the one rank)\n", s->nxfers);
        return;
    }
    printf("time          %.3f us\n", s->time_us);
    if (r->per_msg > 1) {
        printf("messages      up to %d chunks each\n", r->per_msg);
        printf("bounds        n/a (they charge every chunk the latency)\n");
    } else {
        printf("lower bound   %.3f us (efficiency %.1f%%)\n", r->bound_us,
               100 * (s->time_us > 0 ? r->bound_us / s->time_us : 1.0));
        printf("optimal       %.3f us (efficiency %.1f%%; throughput-optimal cut bound)\n",
               r->optimal_us, 100 * (s->time_us > 0 ? r->optimal_us / s->time_us : 1.0));
    }
    printf("transfers     %zu\n", s->nxfers);
    if (r->ilp)
        printf("ilp           %s\n", r->ilp_proven
                                       ? "optimal: no schedule on the ILP's time steps is faster"
                                       : "not proven optimal (time limit or too large)");
    if (!r->sim)
        return;
    double tacos = r->sim->time_us;
    printf("simulated     %.3f us%s\n", tacos, r->net ? " (switches as nodes)" : "");
    if (r->net) /* the ideal bound is one of the unwound links */
        printf("ideal         n/a with --switch-nodes\n");
    else
        printf("ideal         %.3f us (efficiency %.1f%%)\n", r->ideal_us,
               100 * (tacos > 0 ? r->ideal_us / tacos : 1.0));
    printf("\n%-10s %14s %10s %10s\n", "algorithm", "simulated_us", "vs_ideal", "tacos_x");
    compare_row(r, "tacos", tacos, tacos);
    for (int i = 0; i < r->nbase; i++) {
        if (r->base_sim[i])
            compare_row(r, r->base_name[i], r->base_sim[i]->time_us, tacos);
        else
            printf("%-10s %14s  (%s)\n", r->base_name[i], "n/a", r->base_err[i]);
    }
    if (!r->net)
        printf("%-10s %14.3f\n", "ideal", r->ideal_us);
}

/* 1073741824 -> "1 GiB", 1000000000 -> "1 GB", else bytes. */
static void format_size(char *out, size_t n, uint64_t b)
{
    static const char *units[] = {"GiB", "MiB", "KiB", "GB", "MB", "KB"};
    static const uint64_t mult[] = {1ull << 30, 1ull << 20, 1ull << 10, 1000000000ull, 1000000ull,
                                    1000ull};
    for (int i = 0; i < 6; i++)
        if (b >= mult[i] && b % mult[i] == 0) {
            snprintf(out, n, "%llu %s", (unsigned long long)(b / mult[i]), units[i]);
            return;
        }
    snprintf(out, n, "%llu bytes", (unsigned long long)b);
}

/* "heat.svg" + "ring" -> "heat-ring.svg" */
static void derived_path(char *out, size_t n, const char *path, const char *algo)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
        dot = path + strlen(path);
    snprintf(out, n, "%.*s-%s%s", (int)(dot - path), path, algo, dot);
}

/* Simulates the schedule, the baselines and writes the pictures. */
static int compare(report_t *r, char *list, const char *heatmap, const char *utilization)
{
    const tacos_sched_t *s = r->s;
    const tacos_topo_t *net = r->net ? r->net : s->topo;
    int rc = tacos_simulate(s, net, 1, &r->sim);
    if (!rc && !r->net)
        rc = tacos_ideal_bound(s->topo, s->coll, s->size_bytes, &r->ideal_us);
    for (char *tok = list ? strtok(list, ",") : NULL; tok && !rc && r->nbase < MAX_BASELINES;
         tok = strtok(NULL, ",")) {
        int i = r->nbase++;
        tacos_sched_t *b;
        r->base_name[i] = tok;
        char han[32];
        if (strcmp(tok, "han") == 0 && r->han_group) /* groups: the shape's first size */
            snprintf(han, sizeof han, "han:%d", r->han_group), tok = han;
        int brc = tacos_baseline(tok, s->coll, s->npus, s->size_bytes, &b);
        if (brc == TACOS_OK) {
            rc = tacos_simulate(b, net, 0, &r->base_sim[i]);
            tacos_sched_free(b);
        } else if (strncmp(tacos_last_error(), "unknown baseline", 16) == 0) {
            rc = brc;
        } else {
            snprintf(r->base_err[i], sizeof r->base_err[i], "%s", tacos_last_error());
        }
    }
    char title[512], path[1024], size[64];
    format_size(size, sizeof size, s->size_bytes);
    const tacos_sim_t *runs[MAX_BASELINES + 1] = {r->sim};
    const char *names[MAX_BASELINES + 1] = {"tacos"};
    int nruns = 1;
    for (int i = 0; i < r->nbase; i++)
        if (r->base_sim[i]) {
            runs[nruns] = r->base_sim[i];
            names[nruns++] = r->base_name[i];
        }
    for (int i = 0; i < nruns && heatmap && !rc; i++) {
        snprintf(title, sizeof title, "%s, %s on %s: %s (%.6g us)", tacos_coll_name(s->coll), size,
                 s->topo->name, names[i], runs[i]->time_us);
        if (i)
            derived_path(path, sizeof path, heatmap, names[i]);
        rc = tacos_svg_heatmap(runs[i], net, title, i ? path : heatmap);
    }
    if (utilization && !rc) {
        snprintf(title, sizeof title, "link utilization: %s, %s on %s", tacos_coll_name(s->coll),
                 size, s->topo->name);
        rc = tacos_svg_utilization(runs, names, nruns, title, utilization);
    }
    return rc;
}

static void report_free(report_t *r)
{
    tacos_sim_free(r->sim);
    tacos_topo_free(r->net);
    for (int i = 0; i < r->nbase; i++)
        tacos_sim_free(r->base_sim[i]);
}

int main(int argc, char **argv)
{
    enum { O_BW = 256, O_LAT, O_DEGREE, O_FAILED, O_WTOPO, O_ROOT, O_CHUNK, O_SEED, O_TRIALS, O_PER_MSG,
           O_MSG_BYTES,
           O_PROGRAM, O_JSON, O_NOVAL, O_VALIDATE, O_COMPARE, O_SIMULATE, O_HEATMAP, O_UTIL,
           O_METHOD, O_ILP_SECONDS, O_HIERARCHY, O_PART, O_SCHED_DIR, O_SWITCH_NODES };
    static const struct option opts[] = {
        {"topology", required_argument, 0, 't'},  {"bw", required_argument, 0, O_BW},
        {"lat", required_argument, 0, O_LAT},     {"unwind-degree", required_argument, 0, O_DEGREE},
        {"failed-npus", required_argument, 0, O_FAILED},
        {"write-topology", required_argument, 0, O_WTOPO},
        {"collective", required_argument, 0, 'c'}, {"root", required_argument, 0, O_ROOT},
        {"size", required_argument, 0, 's'},       {"chunk-size", required_argument, 0, O_CHUNK},
        {"chunks-per-npu", required_argument, 0, 'k'}, {"seed", required_argument, 0, O_SEED},
        {"trials", required_argument, 0, O_TRIALS}, {"output", required_argument, 0, 'o'},
        {"chunks-per-message", required_argument, 0, O_PER_MSG},
        {"message-bytes", required_argument, 0, O_MSG_BYTES},
        {"program", required_argument, 0, O_PROGRAM}, {"summary-json", no_argument, 0, O_JSON},
        {"no-validate", no_argument, 0, O_NOVAL},  {"validate", required_argument, 0, O_VALIDATE},
        {"compare", required_argument, 0, O_COMPARE}, {"simulate", required_argument, 0, O_SIMULATE},
        {"heatmap", required_argument, 0, O_HEATMAP}, {"utilization", required_argument, 0, O_UTIL},
        {"method", required_argument, 0, O_METHOD},
        {"ilp-seconds", required_argument, 0, O_ILP_SECONDS},
        {"hierarchy", required_argument, 0, O_HIERARCHY}, {"part", required_argument, 0, O_PART},
        {"schedule-dir", required_argument, 0, O_SCHED_DIR},
        {"switch-nodes", no_argument, 0, O_SWITCH_NODES},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    int ilp = 0;
    double ilp_seconds = 60;
    tacos_hier_t hier = TACOS_HIER_FLAT;
    const char *topo_arg = NULL, *out_path = NULL, *wtopo = NULL, *validate_path = NULL;
    const char *heatmap = NULL, *utilization = NULL, *sched_dir = NULL;
    char *compare_list = NULL;
    double bw[MAX_LIST] = {50}, lat[MAX_LIST] = {0.5};
    int nbw = 1, nlat = 1, nfailed = 0, json = 0, validate = 1, failed[4096];
    enum { PART_ALL = -2 }; /* (part -1: none) */
    long degree = 1, root = 0, k = 1, trials = 1, program = -1, part = -1, per_msg = 1;
    uint64_t size = 1 << 20, chunk_size = 0, seed = 1, msg_bytes = TACOS_MSG_BYTES_DEFAULT;
    int have_size = 0, simulate = 0, switch_nodes = 0, wide = 0;
    tacos_coll_t coll = TACOS_ALLGATHER;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:c:s:k:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': topo_arg = optarg; break;
        case O_BW:
            if (parse_doubles(optarg, bw, &nbw))
                return die_usage("--bw '%s': expected GB/s numbers separated by commas", optarg);
            break;
        case O_LAT:
            if (parse_doubles(optarg, lat, &nlat))
                return die_usage("--lat '%s': expected microsecond numbers separated by commas",
                                 optarg);
            break;
        case O_DEGREE:
            wide = !strcmp(optarg, "wide");
            if (!strcmp(optarg, "auto") || wide)
                degree = TACOS_DEGREE_AUTO;
            else if (parse_long(optarg, 1, 1 << 24, &degree))
                return die_usage("--unwind-degree '%s': expected an integer >= 1, auto or wide",
                                 optarg);
            break;
        case O_FAILED:
            if (parse_ints(optarg, failed, &nfailed, 4096))
                return die_usage("--failed-npus '%s': expected NPU numbers separated by commas",
                                 optarg);
            break;
        case O_WTOPO: wtopo = optarg; break;
        case 'c':
            if (tacos_coll_parse(optarg, &coll))
                return die_usage("%s", tacos_last_error());
            break;
        case O_ROOT:
            if (parse_long(optarg, 0, 1 << 24, &root))
                return die_usage("--root '%s': expected an integer >= 0", optarg);
            break;
        case 's':
            if (parse_size(optarg, &size))
                return die_usage("--size '%s': expected a positive whole number of bytes with an "
                                 "optional suffix B KB MB GB KiB MiB GiB",
                                 optarg);
            have_size = 1;
            break;
        case O_CHUNK:
            if (parse_size(optarg, &chunk_size))
                return die_usage("--chunk-size '%s': expected a positive whole number of bytes "
                                 "with an optional suffix B KB MB GB KiB MiB GiB",
                                 optarg);
            break;
        case 'k':
            if (strcmp(optarg, "auto") ? parse_long(optarg, 1, 1 << 20, &k) : (k = 0))
                return die_usage("--chunks-per-npu '%s': expected an integer >= 1 or auto",
                                 optarg);
            break;
        case O_SEED: {
            char *end;
            errno = 0;
            seed = strtoull(optarg, &end, 10);
            if (end == optarg || *end || errno || optarg[0] == '-')
                return die_usage("--seed '%s': expected a non-negative integer", optarg);
            break;
        }
        case O_TRIALS:
            if (parse_long(optarg, 1, 1 << 20, &trials))
                return die_usage("--trials '%s': expected an integer >= 1", optarg);
            break;
        case O_PER_MSG:
            if (parse_long(optarg, 1, TACOS_MAX_CHUNKS_PER_MSG, &per_msg))
                return die_usage("--chunks-per-message '%s': expected an integer 1..64", optarg);
            break;
        case O_MSG_BYTES:
            if (!strcmp(optarg, "0"))
                msg_bytes = 0;
            else if (parse_size(optarg, &msg_bytes))
                return die_usage("--message-bytes '%s': expected 0 or a whole number of bytes "
                                 "with an optional suffix B KB MB GB KiB MiB GiB",
                                 optarg);
            break;
        case O_METHOD:
            if (strcmp(optarg, "ilp") && strcmp(optarg, "greedy"))
                return die_usage("--method '%s': expected greedy or ilp", optarg);
            ilp = strcmp(optarg, "ilp") == 0;
            break;
        case O_HIERARCHY:
            if (!strcmp(optarg, "flat") || !strcmp(optarg, "levels") || !strcmp(optarg, "auto"))
                hier = optarg[0] == 'f' ? TACOS_HIER_FLAT
                       : optarg[0] == 'l' ? TACOS_HIER_LEVELS : TACOS_HIER_AUTO;
            else
                return die_usage("--hierarchy '%s': expected flat, levels or auto", optarg);
            break;
        case O_ILP_SECONDS: {
            char *end;
            ilp_seconds = strtod(optarg, &end);
            if (end == optarg || *end || !(ilp_seconds > 0) || ilp_seconds > 1e6)
                return die_usage("--ilp-seconds '%s': expected seconds > 0", optarg);
            break;
        }
        case 'o': out_path = optarg; break;
        case O_SCHED_DIR: sched_dir = optarg; break;
        case O_PART:
            if (strcmp(optarg, "all") == 0)
                part = PART_ALL;
            else if (parse_long(optarg, 0, 1 << 24, &part))
                return die_usage("--part '%s': expected a rank >= 0 or all", optarg);
            break;
        case O_PROGRAM:
            if (parse_long(optarg, 0, 1 << 24, &program))
                return die_usage("--program '%s': expected a rank >= 0", optarg);
            break;
        case O_JSON: json = 1; break;
        case O_NOVAL: validate = 0; break;
        case O_VALIDATE: validate_path = optarg; break;
        case O_SIMULATE: validate_path = optarg; simulate = 1; break;
        case O_COMPARE: {
            int n = 1;
            for (const char *p = optarg; *p; p++)
                n += *p == ',';
            if (n > MAX_BASELINES)
                return die_usage("--compare '%s': at most 8 baselines", optarg);
            compare_list = optarg;
            break;
        }
        case O_HEATMAP: heatmap = optarg; break;
        case O_SWITCH_NODES: switch_nodes = 1; break;
        case O_UTIL: utilization = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case ':': return die_usage("option '%s' needs a value", argv[optind - 1]);
        default: return die_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return die_usage("unexpected argument '%s'", argv[optind]);

    tacos_topo_t *topo = NULL;
    tacos_sched_t *s = NULL;
    report_t r = {0};
    r.synth_s = -1;
    int rc = 0;
    if (switch_nodes && (!topo_arg || is_file(topo_arg) || nfailed || validate_path))
        return die_usage("%s", "--switch-nodes takes a built-in shape, and no --failed-npus, "
                               "--validate or --simulate");
    if (validate_path && (part != -1 || sched_dir))
        return die_usage("%s", "--part and --schedule-dir synthesize; not with --validate or "
                               "--simulate");
    if (sched_dir && (part != -1 || ilp))
        return die_usage("%s", "--schedule-dir keeps what coll/tacos reads: not with --part or "
                               "--method ilp");
    if (validate_path) { /* --validate or --simulate: a schedule from disk */
        if ((rc = tacos_sched_read_file(validate_path, &s)))
            goto fail;
        if (!json)
            printf("%s: valid schedule\n", validate_path);
    } else {
        if (!topo_arg)
            return die_usage("%s", "missing --topology (see --help for the shapes)");
        if (have_size && chunk_size)
            return die_usage("%s", "give --size or --chunk-size, not both");
        if (!k && (chunk_size || ilp))
            return die_usage("%s", "--chunks-per-npu auto takes --size and --method greedy");
        if (hier != TACOS_HIER_FLAT && ilp)
            return die_usage("%s", "--hierarchy levels or auto takes --method greedy");
        if (per_msg > 1 && ilp)
            return die_usage("%s", "--chunks-per-message takes --method greedy (the ILP's steps "
                                   "carry a chunk per link)");
        if (part == PART_ALL && hier != TACOS_HIER_LEVELS)
            return die_usage("%s", "--part all takes --hierarchy levels");
        if (part >= 0 && (hier == TACOS_HIER_FLAT || out_path || compare_list || heatmap ||
                          utilization || switch_nodes || (program >= 0 && program != part)))
            return die_usage("%s", "--part takes --hierarchy levels or auto, and no -o, "
                                   "--compare, --heatmap, --utilization, --switch-nodes or "
                                   "--program of another rank (it is not a whole schedule)");
        rc = is_file(topo_arg)
                 ? tacos_topo_read_file(topo_arg, &topo)
                 : tacos_topo_generate(topo_arg, bw, nbw, lat, nlat, (int)degree, &topo);
        /* han's groups: a product shape's first size (ranks on a host for
         * rails, hosts on a leaf for fattree), not a dragonfly's groups */
        const char *sizes = is_file(topo_arg) ? NULL : strchr(topo_arg, ':');
        if (sizes && strpbrk(sizes, "xX") && strncmp(topo_arg, "dragonfly:", 10) != 0)
            r.han_group = atoi(sizes + 1);
        if (!rc && switch_nodes &&
            !(rc = tacos_topo_generate_network(topo_arg, bw, nbw, lat, nlat, &r.net)) &&
            r.net->npus == r.net->nranks)
            fprintf(stderr, "tacos-synth: --switch-nodes: %s has no switch; simulating on its "
                            "links\n", topo_arg);
        if (rc || (nfailed && (rc = tacos_topo_remove_npus(topo, failed, nfailed))))
            goto fail;
        if (chunk_size)
            size = chunk_size * (uint64_t)k * (uint64_t)topo->npus;
        /* the component's lowering for this size (tacos_lowering_for) */
        if ((degree == TACOS_DEGREE_AUTO && !wide && !is_file(topo_arg) &&
             (rc = pick_lowering(topo_arg, bw, nbw, lat, nlat, failed, nfailed, size, &topo))) ||
            (wtopo && (rc = tacos_topo_write_file(topo, wtopo))))
            goto fail;
        tacos_synth_opts_t o = {coll,        (int)root,     (int)k,   size, seed,
                                (int)trials, (int)per_msg, msg_bytes};
        static char kept[4096];
        if (sched_dir) {
            if (mkdir(sched_dir, 0755) && errno != EEXIST) {
                fprintf(stderr, "tacos-synth: %s: cannot create: %s\n", sched_dir, strerror(errno));
                goto fail_quiet;
            }
            if ((rc = tacos_sched_cache_path(sched_dir, topo, &o, hier, kept, sizeof kept)))
                goto fail;
            r.kept = kept;
        }
        double t0 = now_s();
        if (sched_dir && !access(kept, F_OK)) {
            tacos_sched_t *choice = NULL;
            if (tacos_sched_cache_load(kept, topo, &o, hier, &s) == TACOS_OK && s->levels == 2) {
                choice = s; /* rank 0's part made at its k (NULL: not the same time) */
                tacos_synthesize_kept_part(topo, &o, choice, 0, &s);
            }
            if (!s)
                fprintf(stderr, "tacos-synth: %s; synthesizing it again\n", tacos_last_error());
            tacos_sched_free(choice);
            r.read_kept = s != NULL;
        }
        if (!s && (rc = ilp ? tacos_synthesize_ilp(topo, &o, ilp_seconds, &s, &r.ilp_proven)
                  : part >= 0 ? tacos_synthesize_for_rank(topo, &o, hier,
                                                          (int)part, &s)
                  : part == PART_ALL ? tacos_synthesize_hier_parts(topo, &o, &s)
                  /* what coll/tacos keeps with coll_tacos_hierarchy 1 and 2: rank
                   * 0's schedule or part (of which its choice is kept) */
                  : sched_dir && hier != TACOS_HIER_FLAT
                      ? tacos_synthesize_for_rank(topo, &o, hier, 0, &s)
                  : tacos_synthesize_auto(topo, &o, TACOS_AUTO_MAX_K, hier, &s)))
            goto fail;
        if (sched_dir && s->levels == 2) {
            fprintf(stderr, "tacos-synth: the part's choice %s: coll/tacos "
                            "(coll_tacos_hierarchy %d) synthesizes each rank's part in levels "
                            "here, below is rank 0's\n", r.read_kept ? "read" : "kept",
                    hier == TACOS_HIER_LEVELS ? 1 : 2);
            if (out_path || compare_list || heatmap || utilization || switch_nodes ||
                (program >= 0 && program != 0)) {
                fprintf(stderr, "tacos-synth: -o, --compare, --heatmap, --utilization, "
                                "--switch-nodes and --program of another rank take a whole "
                                "schedule\n");
                goto fail_quiet;
            }
        }
        r.ilp = ilp;
        r.synth_s = now_s() - t0;
        r.seed = seed;
        r.trials = (int)trials;
        if (validate && s->levels != 2 && !r.read_kept && (rc = tacos_sched_validate(s))) {
            fprintf(stderr, "tacos-synth: internal error: synthesized schedule is invalid: %s\n",
                    tacos_last_error());
            goto fail_quiet;
        }
        if (out_path && (rc = tacos_sched_write_file(s, out_path)))
            goto fail;
        if (r.kept && !r.read_kept && (rc = tacos_sched_cache_save(s, &o, hier, kept)))
            goto fail;
    }
    r.s = s;
    r.per_msg = tacos_sched_most_per_message(s);
    if (s->levels == 2) /* one rank's part: no lower bound for its k */
        r.bound_us = NAN;
    if (r.per_msg > 1) /* the bounds charge each chunk the latency */
        r.bound_us = r.optimal_us = NAN;
    else if ((s->levels != 2 && (rc = tacos_lower_bound(s->topo, s->coll, s->root,
                                                         s->chunks_per_npu, s->size_bytes,
                                                         &r.bound_us))) ||
             (rc = tacos_optimal_bound(s->topo, s->coll, s->root, s->size_bytes, &r.optimal_us)))
        goto fail;
    if ((simulate || compare_list || heatmap || utilization || switch_nodes) &&
        (rc = compare(&r, compare_list, heatmap, utilization)))
        goto fail;
    print_summary(&r, json);
    if (program >= 0) {
        tacos_prog_t *p;
        if ((rc = tacos_sched_program(s, (int)program, &p)))
            goto fail;
        print_program(p);
        tacos_prog_free(p);
    }
    report_free(&r);
    tacos_sched_free(s);
    tacos_topo_free(topo);
    return 0;
fail:
    fprintf(stderr, "tacos-synth: %s\n", tacos_last_error());
fail_quiet:
    report_free(&r);
    tacos_sched_free(s);
    tacos_topo_free(topo);
    return 1;
}
