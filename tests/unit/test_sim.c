/* SPDX-License-Identifier: BSD-3-Clause */
/* Simulator against hand-computed cases, simulated = synthesized time,
 * baselines (validated, textbook step counts), ideal bound, SVG structure;
 * a size class's schedule replayed at larger classes as fast as their own
 * where the links' latencies are small (tacos_latency_share: coll/tacos's
 * reuse_percent). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * fmax(1.0, fabs((double)(b))))

/* A schedule of hand-written transfers over `topo` (k = 1). */
static tacos_sched_t *handmade(tacos_topo_t *topo, const tacos_xfer_t *x, size_t n)
{
    tacos_sched_t *s = calloc(1, sizeof *s);
    *s = (tacos_sched_t){TACOS_ALLGATHER, topo->npus, 1, topo->npus, 0,
                         (uint64_t)topo->npus * 1000, 0, n, malloc(n * sizeof *x), topo, 0, 0};
    memcpy(s->xfers, x, n * sizeof *x);
    return s;
}

static tacos_topo_t *line_topo(int n, const double *lat, const double *bw)
{
    tacos_topo_t *t;
    CHECK_OK(tacos_topo_create(n, "line", &t));
    for (int i = 0; i + 1 < n; i++) {
        CHECK_OK(tacos_topo_add_link(t, i, i + 1, lat[i], bw[i]));
        CHECK_OK(tacos_topo_add_link(t, i + 1, i, lat[i], bw[i]));
    }
    CHECK_OK(tacos_topo_finalize(t));
    return t;
}

static tacos_sim_t *sim(const tacos_sched_t *s, const tacos_topo_t *net, int order)
{
    tacos_sim_t *r = NULL;
    CHECK_OK(tacos_simulate(s, net, order, &r));
    return r;
}

static void hand_cases(void)
{
    /* 1000-byte chunks; link i: latency lat[i], 1 GB/s = 1000 B/us */
    double lat[3] = {1, 2, 3}, bw[3] = {1, 1, 0.5};
    tacos_topo_t *t = line_topo(4, lat, bw); /* costs 2, 3, 5 us */

    /* two messages contend for link 0->1: served one after the other */
    tacos_xfer_t two[2] = {{0, 1, 0, 0, 1, 0}, {0.5, 1.5, 1, 0, 1, 0}};
    tacos_sched_t *s = handmade(t, two, 2);
    tacos_sim_t *r = sim(s, t, 0);
    long l = tacos_topo_find_link(t, 0, 1);
    CHECK(r && NEAR(r->time_us, 4) && NEAR(r->link_busy_us[l], 4) && NEAR(r->link_bytes[l], 2000),
          "contention: %.6f us", r ? r->time_us : -1);
    tacos_sim_free(r);
    s->topo = NULL;
    tacos_sched_free(s);

    /* the same two chunks with the same start and end on the link: one
     * message, the latency paid once (1 + 2000 B at 1000 B/us) */
    two[1].start_us = two[0].start_us;
    two[1].end_us = two[0].end_us;
    s = handmade(t, two, 2);
    r = sim(s, t, 1);
    CHECK(r && NEAR(r->time_us, 3) && NEAR(r->link_busy_us[l], 3) && NEAR(r->link_bytes[l], 2000),
          "one message of two chunks: %.6f us", r ? r->time_us : -1);
    tacos_sim_free(r);
    s->topo = NULL;
    tacos_sched_free(s);

    /* a 3-hop route, stored and forwarded: 2 + 3 + 5 */
    tacos_xfer_t far[1] = {{0, 1, 0, 0, 3, 0}};
    s = handmade(t, far, 1);
    tacos_topo_t *logical = gen("fc:4");
    s->topo = logical;
    r = sim(s, t, 0);
    CHECK(r && NEAR(r->time_us, 10), "3-hop route: %.6f us, want 10", r ? r->time_us : -1);
    CHECK(r && r->nbusy == 3 && NEAR(r->link_busy_us[tacos_topo_find_link(t, 2, 3)], 5),
          "3-hop route busy intervals");
    tacos_sim_free(r);
    tacos_sched_free(s);

    /* a dependency chain: chunk 0 relayed 0->1->2->3 leaves each NPU once
     * it landed there; an unrelated chunk shares link 1->2 and goes first
     * under first come first served */
    tacos_xfer_t chain[4] = {{0, 1, 0, 0, 1, 0}, {0, 1, 1, 1, 2, 0}, {2, 3, 0, 1, 2, 0},
                             {3, 4, 0, 2, 3, 0}};
    s = handmade(t, chain, 4);
    r = sim(s, t, 0);
    /* 0->1 [0,2]; chunk 1 on 1->2 [0,3]; chunk 0 on 1->2 waits: [3,6]; 2->3 [6,11] */
    CHECK(r && NEAR(r->time_us, 11), "dependency chain: %.6f us, want 11", r ? r->time_us : -1);
    tacos_sim_free(r);
    s->topo = NULL;
    tacos_sched_free(s);
    tacos_topo_free(t);
}

static void sim_matches_synthesis(void)
{
    const char *specs[] = {"mesh2d:4x4", "torus2d:4x4", "dgx1", "dragonfly:3x2", "rfs:2x4x2",
                           "hypercube:8", "uniring:5"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        for (int c = 0; c <= TACOS_ALLREDUCE; c++) {
            tacos_topo_t *t = gen(specs[i]);
            tacos_synth_opts_t o = {(tacos_coll_t)c, 1, 2, 1 << 20, 3, 1, 0, 0};
            tacos_sched_t *s = NULL;
            CHECK_OK(tacos_synthesize(t, &o, &s));
            tacos_sim_t *r = s ? sim(s, t, 1) : NULL;
            int gather = c == TACOS_ALLGATHER || c == TACOS_BROADCAST;
            /* copies run exactly as synthesized; reductions may only start
             * earlier when their inputs are ready earlier */
            CHECK(r && (gather ? NEAR(r->time_us, s->time_us)
                               : r->time_us <= s->time_us * (1 + 1e-9)),
                  "%s on %s: simulated %.6f, synthesized %.6f", tacos_coll_name((tacos_coll_t)c),
                  specs[i], r ? r->time_us : -1, s ? s->time_us : -1);
            tacos_sim_free(r);
            tacos_sched_free(s);
            tacos_topo_free(t);
        }
}

static double baseline_time(const char *name, tacos_coll_t coll, const char *spec, double lat,
                            uint64_t size)
{
    double bw = 50;
    tacos_topo_t *t = NULL;
    tacos_sched_t *b = NULL;
    CHECK_OK(tacos_topo_generate(spec, &bw, 1, &lat, 1, 1, &t));
    CHECK_OK(tacos_baseline(name, coll, t->npus, size, &b));
    double time = -1;
    if (b) {
        int rc = tacos_sched_validate(b);
        CHECK(rc == TACOS_OK, "%s %s (%d NPUs) invalid: %s", name, tacos_coll_name(coll), t->npus,
              tacos_last_error());
        tacos_sim_t *r = sim(b, t, 0);
        time = r ? r->time_us : -1;
        tacos_sim_free(r);
        tacos_sched_free(b);
    }
    tacos_topo_free(t);
    return time;
}

static void baselines(void)
{
    const char *names[] = {"ring", "direct", "rhd", "dbt"};
    tacos_coll_t colls[] = {TACOS_ALLREDUCE, TACOS_ALLGATHER, TACOS_REDUCE_SCATTER};
    for (int n = 1; n <= 9; n++) /* every baseline validates wherever defined */
        for (int a = 0; a < 4; a++)
            for (int c = 0; c < 3; c++) {
                int pow2 = (n & (n - 1)) == 0;
                if ((a == 3 && c) || (a == 2 && c && !pow2))
                    continue;
                char spec[32];
                snprintf(spec, sizeof spec, "fc:%d", n);
                baseline_time(names[a], colls[c], spec, 0.5, 6006);
            }
    /* textbook step counts on home topologies */
    for (int n = 3; n <= 8; n++) {
        char spec[32];
        snprintf(spec, sizeof spec, "ring:%d", n);
        double step = 0.5 + (1 << 20) / (2.0 * n) / 50e3; /* half the data per ring */
        double t = baseline_time("ring", TACOS_ALLREDUCE, spec, 0.5, 1 << 20);
        CHECK(NEAR(t, 2 * (n - 1) * step), "ring allreduce on %s: %.4f us = %.3f steps, want %d",
              spec, t, t / step, 2 * (n - 1));
        snprintf(spec, sizeof spec, "fc:%d", n);
        step = 0.5 + (1 << 20) / (double)n / 50e3;
        t = baseline_time("direct", TACOS_ALLREDUCE, spec, 0.5, 1 << 20);
        CHECK(NEAR(t, 2 * step), "direct allreduce on %s: %.3f steps, want 2", spec, t / step);
    }
    /* RHD on a hypercube, no latency: (N-1) chunk times each way */
    double t = baseline_time("rhd", TACOS_ALLREDUCE, "hypercube:8", 0, 8000);
    CHECK(NEAR(t, 2 * 7 * 1000 / 50e3), "rhd allreduce hypercube:8: %.6f us", t);
    /* errors */
    tacos_sched_t *b;
    CHECK_ERR(tacos_baseline("rhd", TACOS_ALLGATHER, 6, 100, &b), TACOS_ERR_ARG, "power-of-two");
    CHECK_ERR(tacos_baseline("dbt", TACOS_ALLGATHER, 4, 100, &b), TACOS_ERR_ARG, "allreduce only");
    CHECK_ERR(tacos_baseline("tree", TACOS_ALLREDUCE, 4, 100, &b), TACOS_ERR_ARG,
              "unknown baseline 'tree'");
    CHECK_ERR(tacos_baseline("ring", TACOS_BROADCAST, 4, 100, &b), TACOS_ERR_ARG, "broadcast");
}

/* han:L validates for every group size dividing every count, and takes the
 * steps of its two levels: up, 2(G-1) ring steps (All-Gather and
 * Reduce-Scatter: G-1), down; a member's own chunk stays. */
static void han(void)
{
    tacos_coll_t colls[] = {TACOS_ALLREDUCE, TACOS_ALLGATHER, TACOS_REDUCE_SCATTER};
    for (int n = 1; n <= 12; n++)
        for (int L = 1; L <= n; L++)
            for (int c = 0; c < 3 && n % L == 0; c++) {
                char spec[32], name[32];
                snprintf(spec, sizeof spec, "fc:%d", n);
                snprintf(name, sizeof name, "han:%d", L);
                double t = baseline_time(name, colls[c], spec, 1, n);
                int G = n / L, steps = (c ? 1 : 2) * (G - 1) + (L > 1 ? 2 : 0);
                if (c == 1 && n == 2 && L == 2)
                    steps = 1; /* the leader's own chunk goes down at once */
                /* one byte per chunk at 50 GB/s beside 1 us per step */
                CHECK(n == 1 || fabs(t - steps) < 0.01 * steps + 0.01,
                      "%s %s on %d NPUs: %.3f us, want about %d steps", name,
                      tacos_coll_name(colls[c]), n, t, steps);
            }
    tacos_sched_t *b;
    CHECK_ERR(tacos_baseline("han", TACOS_ALLREDUCE, 8, 100, &b), TACOS_ERR_ARG, "han:L");
    CHECK_ERR(tacos_baseline("han:3", TACOS_ALLREDUCE, 8, 100, &b), TACOS_ERR_ARG, "dividing");
    CHECK_ERR(tacos_baseline("han:0", TACOS_ALLREDUCE, 8, 100, &b), TACOS_ERR_ARG, "dividing");
    CHECK_ERR(tacos_baseline("han:2x", TACOS_ALLREDUCE, 8, 100, &b), TACOS_ERR_ARG, "dividing");
    CHECK_ERR(tacos_baseline("han:2", TACOS_ALLTOALL, 8, 100, &b), TACOS_ERR_ARG, "alltoall");
}

/* Switches as nodes: fs:4x3 gains a node per rail (4), each joined to its
 * 3 members by a port each way.  A message between two members crosses two
 * ports and costs what the unwound link would (latency + bytes / bandwidth:
 * the switch passes it on as its head arrives); two messages from one rank
 * share its port for their bytes, not their latency. */
static void switch_nodes(void)
{
    double bw[2] = {100, 25}, lat[2] = {0.5, 2};
    tacos_topo_t *net = NULL, *t = NULL;
    CHECK_OK(tacos_topo_generate_network("fs:4x3", bw, 2, lat, 2, &net));
    CHECK_OK(tacos_topo_generate("fs:4x3", bw, 2, lat, 2, 2, &t));
    if (!net || !t)
        return;
    CHECK(net->npus == 16 && net->nranks == 12 && net->nlinks == 3 * 12 + 4 * 3 * 2 &&
              net->ndims == 0,
          "fs:4x3 as a network: %d nodes, %d ranks, %zu links", net->npus, net->nranks,
          net->nlinks);
    tacos_sched_t *s = NULL;
    tacos_synth_opts_t o = {TACOS_ALLGATHER, 0, 1, 12 * 25000, 1, 1, 0, 0};
    CHECK_ERR(tacos_synthesize(net, &o, &s), TACOS_ERR_ARG, "switches as nodes");
    CHECK_OK(tacos_synthesize(t, &o, &s));
    if (!s)
        return;
    tacos_sim_t *r = sim(s, net, 1);
    CHECK(r && r->time_us > 0, "a schedule simulated on switch nodes");
    tacos_sim_free(r);
    /* one chunk (1 us at 25 GB/s) from rank 0 to rank 4 (rail 0, 2 us) */
    s->nxfers = 1;
    s->xfers[0] = (tacos_xfer_t){0, 3, 0, 0, 4, 0};
    r = sim(s, net, 1);
    CHECK(r && NEAR(r->time_us, 2 + 1), "across a switch node: %.3f us, want 3",
          r ? r->time_us : -1);
    CHECK(r && r->nbusy == 2 && NEAR(r->busy_end_us[0] - r->busy_start_us[0], 1),
          "a port is busy while it sends");
    tacos_sim_free(r);
    /* and to rank 8 as well: its port sends the second from 1 us */
    s->nxfers = 2;
    s->xfers[1] = (tacos_xfer_t){0, 3, 0, 0, 8, 0};
    r = sim(s, net, 1);
    CHECK(r && NEAR(r->time_us, 1 + 2 + 1), "two through one port: %.3f us, want 4",
          r ? r->time_us : -1);
    tacos_sim_free(r);
    tacos_sched_free(s);
    tacos_topo_free(t);
    /* a schedule of another rank count is refused */
    tacos_topo_t *t16 = gen("fc:16");
    o.size_bytes = 16 * 1000;
    s = NULL;
    CHECK_OK(tacos_synthesize(t16, &o, &s));
    CHECK_ERR(s ? tacos_simulate(s, net, 1, &r) : TACOS_ERR_ARG, TACOS_ERR_ARG, "12 ranks");
    tacos_sched_free(s);
    tacos_topo_free(t16);
    tacos_topo_free(net);
    /* cut through a tree of unequal ports: rank 0 to rank 2 of fattree:2x2
     * crosses host port (25 GB/s), uplink, downlink (100 GB/s), host port,
     * 1 us latency each: 4 us + the slowest port's 1 us, the uplink busy
     * for its own 0.25 us */
    double tbw[2] = {25, 100}, tlat[2] = {2, 2};
    CHECK_OK(tacos_topo_generate("fattree:2x2", tbw, 2, tlat, 2, 1, &t));
    CHECK_OK(tacos_topo_generate_network("fattree:2x2", tbw, 2, tlat, 2, &net));
    o.size_bytes = 4 * 25000;
    s = NULL;
    CHECK_OK(t ? tacos_synthesize(t, &o, &s) : TACOS_ERR_ARG);
    if (s && net) {
        s->nxfers = 1;
        s->xfers[0] = (tacos_xfer_t){0, 5, 0, 0, 2, 0};
        r = sim(s, net, 1);
        CHECK(r && NEAR(r->time_us, 5) && r->nbusy == 4 &&
                  NEAR(r->busy_end_us[1] - r->busy_start_us[1], 0.25),
              "through a tree: %.3f us, want 5; uplink busy %.3f us", r ? r->time_us : -1,
              r && r->nbusy > 1 ? r->busy_end_us[1] - r->busy_start_us[1] : -1);
        tacos_sim_free(r);
    }
    tacos_sched_free(s);
    tacos_topo_free(t);
    tacos_topo_free(net);
    /* switch trees: fattree 2x3 has 6 ranks, 3 leaves and a spine */
    CHECK_OK(tacos_topo_generate_network("fattree:2x3", bw, 2, lat, 2, &net));
    CHECK(net && net->npus == 10 && net->nlinks == 2 * (6 + 3),
          "fattree:2x3 as a network: %d nodes, %zu links", net ? net->npus : 0,
          net ? net->nlinks : 0);
    tacos_topo_free(net);
    CHECK_OK(tacos_topo_generate_network("rails:4x2", bw, 2, lat, 2, &net));
    CHECK(net && net->npus == 8 + 2 + 4 && net->nlinks == 2 * (2 * 4 + 4 * 2),
          "rails:4x2 as a network: %d nodes, %zu links", net ? net->npus : 0,
          net ? net->nlinks : 0);
    tacos_topo_free(net);
    CHECK_OK(tacos_topo_generate_network("torus2d:3x3", bw, 1, lat, 1, &net));
    CHECK(net && net->npus == 9 && net->ndims == 2, "no switch: the shape as it is");
    tacos_topo_free(net);
}

/* coll/tacos's flat first-call policy (k as the model picks; what its
 * default, coll_tacos_hierarchy 2, kept on these shapes too) is never
 * slower than the best of Ring, RHD, Direct, DBT and han, simulated on
 * switch nodes, on a set of shapes and sizes where that holds (every
 * switch unwound with degree 1; 1 MiB and 64 MiB).  Where it does not
 * (benchmarks/results/2026-11-30-baselines-switch-nodes.md): below 1 MiB
 * Direct and RHD through a switch beat it; at 1 MiB RHD on 256 and 1,024
 * ranks and on a 2:1 fat tree; Ring on fat trees at 64 MiB and more (and
 * here on fattree:4x4 at 2:1 by 1-4 %). */
static void never_slower_than_baselines(void)
{
    static const struct {
        const char *spec;
        double bw[2], lat[2];
    } shapes[] = {{"fs:4x4", {100, 25}, {0.5, 2}},     {"fs:8x4", {100, 25}, {0.5, 2}},
                  {"fs:2x8", {100, 25}, {0.5, 2}},     {"rails:4x4", {100, 25}, {0.5, 2}},
                  {"torus2d:4x4", {50, 50}, {0.5, 0.5}}};
    static const char *const names[] = {"ring", "rhd", "direct", "dbt", "han"};
    tacos_coll_t colls[] = {TACOS_ALLREDUCE, TACOS_ALLGATHER, TACOS_REDUCE_SCATTER};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tacos_topo_t *t = NULL, *net = NULL;
        CHECK_OK(tacos_topo_generate(shapes[i].spec, shapes[i].bw, 2, shapes[i].lat, 2, 1, &t));
        CHECK_OK(tacos_topo_generate_network(shapes[i].spec, shapes[i].bw, 2, shapes[i].lat, 2,
                                             &net));
        for (int c = 0; c < 3 && t && net; c++)
            for (uint64_t size = 1 << 20; size <= 64 << 20; size <<= 6) {
                tacos_synth_opts_t o = {colls[c], 0, 0, size, 1, 1, 0, 0};
                tacos_sched_t *s = NULL;
                CHECK_OK(tacos_synthesize_auto(t, &o, TACOS_AUTO_MAX_K, TACOS_HIER_FLAT, &s));
                tacos_sim_t *r = s ? sim(s, net, 1) : NULL;
                double best = INFINITY;
                const char *which = "none";
                for (int a = 0; a < 5; a++) {
                    char name[32]; /* han: groups of the shape's first size */
                    if (a == 4)
                        snprintf(name, sizeof name, "han:%d",
                                 atoi(strchr(shapes[i].spec, ':') + 1));
                    else
                        snprintf(name, sizeof name, "%s", names[a]);
                    tacos_sched_t *b = NULL;
                    if (tacos_baseline(name, colls[c], t->npus, size, &b))
                        continue; /* not defined for this collective or count */
                    tacos_sim_t *rb = sim(b, net, 0);
                    if (rb && rb->time_us < best)
                        best = rb->time_us, which = names[a];
                    tacos_sim_free(rb);
                    tacos_sched_free(b);
                }
                CHECK(r && r->time_us <= best * (1 + 1e-9),
                      "%s %s %llu B: TACOS %.1f us, %s %.1f us", shapes[i].spec,
                      tacos_coll_name(colls[c]), (unsigned long long)size, r ? r->time_us : -1,
                      which, best);
                tacos_sim_free(r);
                tacos_sched_free(s);
            }
        tacos_topo_free(t);
        tacos_topo_free(net);
    }
}

static void ideal(void)
{
    tacos_topo_t *t = gen("fc:4");
    double v;
    CHECK_OK(tacos_ideal_bound(t, TACOS_ALLREDUCE, 150000, &v));
    /* 150000 * 2*3/4 bytes over 3 x 50 GB/s, plus one hop of 0.5 us */
    CHECK(NEAR(v, 150000 * 1.5 / 150e3 + 0.5), "ideal fc:4 allreduce %.6f", v);
    CHECK_OK(tacos_ideal_bound(t, TACOS_ALLGATHER, 150000, &v));
    CHECK(NEAR(v, 150000 * 0.75 / 150e3 + 0.5), "ideal fc:4 allgather %.6f", v);
    tacos_topo_free(t);
    t = gen("mesh2d:3x3");
    CHECK_OK(tacos_ideal_bound(t, TACOS_ALLREDUCE, 9e5, &v));
    CHECK(NEAR(v, 9e5 * 2 * 8 / 9 / 100e3 + 4 * 0.5), "ideal 3x3 mesh: corner ingress %.6f", v);
    tacos_topo_free(t);
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void pictures(void)
{
    const char *dir = getenv("TACOS_TMP");
    char heat[512], util[512];
    snprintf(heat, sizeof heat, "%s/heat.svg", dir ? dir : ".");
    snprintf(util, sizeof util, "%s/util.svg", dir ? dir : ".");
    tacos_topo_t *t = gen("mesh2d:3x3");
    tacos_synth_opts_t o = {TACOS_ALLREDUCE, 0, 1, 9000, 1, 1, 0, 0};
    tacos_sched_t *s = NULL, *b = NULL;
    CHECK_OK(tacos_synthesize(t, &o, &s));
    CHECK_OK(tacos_baseline("ring", TACOS_ALLREDUCE, 9, 9000, &b));
    tacos_sim_t *r1 = sim(s, t, 1), *r2 = sim(b, t, 0);
    CHECK_OK(tacos_svg_heatmap(r1, t, "allreduce <9000 B> & mesh", heat));
    const tacos_sim_t *runs[2] = {r1, r2};
    const char *names[2] = {"tacos", "ring"};
    CHECK_OK(tacos_svg_utilization(runs, names, 2, "utilization", util));
    char *text = slurp(heat);
    CHECK(text && strncmp(text, "<?xml", 5) == 0 && count(text, "<svg ") == 1 &&
              count(text, "</svg>") == 1 && count(text, "<title>") == (int)t->nlinks &&
              strstr(text, "allreduce &lt;9000 B&gt; &amp; mesh") &&
              strstr(text, "destination NPU") && strstr(text, "source NPU") &&
              strstr(text, "no link"),
          "heat map structure");
    text = slurp(util);
    CHECK(text && count(text, "<polyline") == 2 && strstr(text, "time (us)") &&
              strstr(text, "links busy") && strstr(text, ">ring (") && count(text, "</svg>") == 1,
          "utilization plot structure");
    double u[10];
    CHECK_OK(tacos_sim_utilization(r1, 10, u));
    double mean = 0;
    for (int i = 0; i < 10; i++) {
        CHECK(u[i] >= 0 && u[i] <= 1 + 1e-9, "utilization bin %d = %f", i, u[i]);
        mean += u[i] / 10;
    }
    double busy = 0;
    for (size_t l = 0; l < t->nlinks; l++)
        busy += r1->link_busy_us[l];
    CHECK(NEAR(mean, busy / (r1->time_us * t->nlinks)), "utilization mean %.6f", mean);
    CHECK_ERR(tacos_svg_heatmap(r1, t, "x", "/nonexistent/dir/h.svg"), TACOS_ERR_IO, "cannot open");
    tacos_sim_free(r1);
    tacos_sim_free(r2);
    tacos_sched_free(s);
    tacos_sched_free(b);
    tacos_topo_free(t);
}

/* The schedule synthesized at `from` bytes (k 0: chosen as coll/tacos
 * chooses it), replayed at `to` as an executor replays it, over the one
 * synthesized at `to`; 0 where synthesis failed. */
static double replayed_over_own(const tacos_topo_t *t, tacos_coll_t coll, int k, uint64_t from,
                                uint64_t to)
{
    tacos_synth_opts_t o = {coll, 1, k, from, 1, 1, 0, 0};
    tacos_sched_t *a = NULL, *b = NULL;
    tacos_sim_t *r = NULL;
    double ratio = 0;
#define SYNTH(out) tacos_synthesize_auto(t, &o, TACOS_AUTO_MAX_K, TACOS_HIER_FLAT, out)
    if (SYNTH(&a) == TACOS_OK && (o.size_bytes = to) && SYNTH(&b) == TACOS_OK) {
        tacos_sched_t at = *a;
        at.size_bytes = to;
        CHECK_OK(tacos_simulate(&at, a->topo, 1, &r));
        ratio = r ? r->time_us / b->time_us : 0;
    }
#undef SYNTH
    tacos_sim_free(r);
    tacos_sched_free(a);
    tacos_sched_free(b);
    return ratio;
}

/* coll/tacos's reuse_percent: the smallest size class at which every
 * link's latency is at most 2 % of a chunk's time (at the largest k) serves
 * every larger class; its schedule replayed at the next 3 classes is within
 * 2 % of each one's own (in this sweep: as fast).  Below that share,
 * replaying a class's schedule at the next class can cost more than 10 %,
 * so the share matters. */
static void larger_classes(void)
{
    static const char *const shapes[] = {"ring:8",      "fs:2x4",      "mesh2d:3x3",
                                         "rfs:2x2x2",   "fs:4x4",      "torus2d:4x4",
                                         "fattree:4x4", "rails:4x4",   "dragonfly:4x5"};
    static const tacos_coll_t colls[] = {TACOS_ALLREDUCE, TACOS_ALLGATHER, TACOS_REDUCE_SCATTER,
                                         TACOS_BROADCAST, TACOS_REDUCE,    TACOS_ALLTOALL};
    double bw[2] = {100, 25}, lat[2] = {0.5, 2}, worst_below = 0;
    int compared = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        tacos_topo_t *t = NULL;
        if (tacos_topo_generate(shapes[i], bw, 2, lat, 2, 1, &t) != TACOS_OK) /* one dimension */
            CHECK_OK(tacos_topo_generate(shapes[i], bw, 1, lat, 1, 1, &t));
        for (size_t c = 0; t && c < sizeof colls / sizeof *colls; c++)
            for (int k = 0; k <= 2; k++) {
                int kmax = k ? k : TACOS_AUTO_MAX_K, a = 10;
                while (a < 40 && tacos_latency_share(t, kmax, (uint64_t)1 << a) > 0.02)
                    a++;
                for (int d = 1; d <= 3; d++) {
                    double r = replayed_over_own(t, colls[c], k, (uint64_t)1 << a,
                                                 (uint64_t)1 << (a + d));
                    CHECK(r > 0 && r <= 1.02, "%s %s k=%d: 2^%d's schedule at 2^%d: %.3f x its own",
                          shapes[i], tacos_coll_name(colls[c]), k, a, a + d, r);
                    compared++;
                }
                for (int e = 12; k == 1 && e < a; e += 2) {
                    double r = replayed_over_own(t, colls[c], k, (uint64_t)1 << e,
                                                 (uint64_t)1 << (e + 1));
                    worst_below = r > worst_below ? r : worst_below;
                }
            }
        tacos_topo_free(t);
    }
    CHECK(compared == 9 * 6 * 3 * 3, "%d comparisons", compared);
    CHECK(worst_below > 1.1, "below the share: replayed at most %.3f x its own", worst_below);
}

int main(void)
{
    if (getenv("TACOS_TMP"))
        (void)!system("mkdir -p \"$TACOS_TMP\"");
    hand_cases();
    sim_matches_synthesis();
    baselines();
    han();
    switch_nodes();
    never_slower_than_baselines();
    ideal();
    pictures();
    larger_classes();
    return check_report("test_sim");
}
