/* SPDX-License-Identifier: BSD-3-Clause */
/* The throughput-optimal (cut) bound: hand-computed cases, and brute force
 * over every cut of small random directed graphs. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h" /* tacos_topo_transitive (linked statically) */

enum { M = 1000000 }; /* bytes per NPU; at 1 GB/s they take 1000 us */

static tacos_topo_t *make(int n) /* links added by the caller, latency 0 */
{
    tacos_topo_t *t = NULL;
    CHECK_OK(tacos_topo_create(n, "test", &t));
    return t;
}

static void both(tacos_topo_t *t, int a, int b, double bw)
{
    CHECK_OK(tacos_topo_add_link(t, a, b, 0, bw));
    CHECK_OK(tacos_topo_add_link(t, b, a, 0, bw));
}

static double optimal(tacos_topo_t *t, tacos_coll_t coll, int root)
{
    double us = -1;
    CHECK_OK(tacos_topo_finalize(t));
    CHECK_OK(tacos_optimal_bound(t, coll, root, (uint64_t)M * (uint64_t)t->npus, &us));
    return us;
}

static void expect(tacos_topo_t *t, tacos_coll_t coll, int root, double want, const char *what)
{
    double got = optimal(t, coll, root);
    CHECK(fabs(got - want) <= 1e-6 * want + 0.01, "%s: %.6f us, want %.6f", what, got, want);
    tacos_topo_free(t);
}

/* max over cuts: All-Gather (S lacks what is outside it) or Broadcast from
 * root (S without the root lacks everything). */
static double brute(const tacos_topo_t *t, tacos_coll_t coll, int root)
{
    int n = t->npus;
    double best = 0;
    for (unsigned s = 1; s + 1 < (1u << n); s++) {
        if (coll == TACOS_BROADCAST && (s >> root & 1))
            continue;
        double in = 0;
        int inside = 0;
        for (int v = 0; v < n; v++)
            inside += s >> v & 1;
        for (size_t l = 0; l < t->nlinks; l++)
            if (!(s >> t->links[l].src & 1) && (s >> t->links[l].dst & 1))
                in += t->links[l].bw_gbps * 1e3;
        double need = coll == TACOS_BROADCAST ? (double)M * n : (double)M * (n - inside);
        if (need / in > best)
            best = need / in;
    }
    return best;
}

int main(void)
{
    tacos_topo_t *t;
    /* a one-way ring of 5: every NPU takes 4 blocks over its one link */
    t = make(5);
    for (int i = 0; i < 5; i++)
        CHECK_OK(tacos_topo_add_link(t, i, (i + 1) % 5, 0, 1));
    expect(t, TACOS_ALLGATHER, 0, 4000, "uni-ring 5");
    t = make(5);
    for (int i = 0; i < 5; i++)
        CHECK_OK(tacos_topo_add_link(t, i, (i + 1) % 5, 0, 1));
    expect(t, TACOS_REDUCE_SCATTER, 0, 4000, "uni-ring 5 reduce-scatter");
    /* a two-way ring of 5: two links in */
    t = make(5);
    for (int i = 0; i < 5; i++)
        both(t, i, (i + 1) % 5, 1);
    expect(t, TACOS_ALLGATHER, 0, 2000, "ring 5");
    t = make(5);
    for (int i = 0; i < 5; i++)
        both(t, i, (i + 1) % 5, 1);
    expect(t, TACOS_ALLREDUCE, 0, 4000, "ring 5 all-reduce");
    /* a line 0-1-2: an end takes 2 blocks over one link */
    t = make(3);
    both(t, 0, 1, 1), both(t, 1, 2, 1);
    expect(t, TACOS_ALLGATHER, 0, 2000, "line 3");
    t = make(3);
    both(t, 0, 1, 1), both(t, 1, 2, 1);
    expect(t, TACOS_BROADCAST, 0, 3000, "line 3 broadcast"); /* 3 MB over one link */
    /* a star: a leaf takes 4 blocks over its link */
    t = make(5);
    for (int i = 1; i < 5; i++)
        both(t, 0, i, 1);
    expect(t, TACOS_ALLGATHER, 0, 4000, "star 1+4");
    /* two fast triangles joined by one slow bridge: the bottleneck cut */
    t = make(6);
    for (int g = 0; g < 6; g += 3)
        both(t, g, g + 1, 10), both(t, g + 1, g + 2, 10), both(t, g, g + 2, 10);
    both(t, 2, 3, 1);
    expect(t, TACOS_ALLGATHER, 0, 3000, "two triangles and a bridge");
    /* two rates: a 2x2 mesh with a fast and a slow dimension */
    t = make(4);
    both(t, 0, 1, 4), both(t, 2, 3, 4), both(t, 0, 2, 1), both(t, 1, 3, 1);
    /* {0,1} lacks 2 blocks and has 2 x 1 GB/s coming in: 1000 us; a single
     * NPU 3 blocks over 5 GB/s: 600; {0,3} 2 over 10: 200 */
    expect(t, TACOS_ALLGATHER, 0, 1000, "2x2 mesh 4/1");
    /* a switch of 4 unwound with degree 3, 3 GB/s per port: 1 GB/s links */
    t = make(4);
    int members[4] = {0, 1, 2, 3};
    CHECK_OK(tacos_topo_add_switch(t, members, 4, 0, 3, 3));
    expect(t, TACOS_ALLGATHER, 0, 1000, "switch of 4");

    /* random strongly connected graphs: max-flow = brute force over cuts */
    srand(7);
    for (int trial = 0; trial < 200; trial++) {
        int n = 2 + trial % 6;
        char has[8][8] = {{0}};
        t = make(n);
        for (int i = 0; i < n; i++) { /* a one-way ring keeps it connected */
            CHECK_OK(tacos_topo_add_link(t, i, (i + 1) % n, 0, 1 + rand() % 9));
            has[i][(i + 1) % n] = 1;
        }
        for (int e = 0; e < n * 2; e++) {
            int a = rand() % n, b = rand() % n;
            if (a != b && !has[a][b]) {
                CHECK_OK(tacos_topo_add_link(t, a, b, 0, 0.5 + rand() % 20));
                has[a][b] = 1;
            }
        }
        tacos_coll_t coll = trial % 3 ? TACOS_ALLGATHER : TACOS_BROADCAST;
        int root = trial % n;
        double got = optimal(t, coll, root), want = brute(t, coll, root);
        CHECK(fabs(got - want) <= 1e-6 * want + 0.01, "random %d (n=%d, %s): %.6f, brute force %.6f",
              trial, n, tacos_coll_name(coll), got, want);
        tacos_topo_free(t);
    }

    /* a vertex-transitive product: what holds at NPU 0 stands for every NPU
     * (max-flow, latency diameter), the same bounds as with the shape
     * unknown (every NPU computed) */
    static const struct {
        const char *spec;
        double bw[3];
        int nbw, degree, transitive;
    } products[] = {
        {"fs:4x4", {100, 25}, 2, 1, 1},         {"torus2d:3x4", {50, 20}, 2, 1, 1},
        {"uniring:5", {50}, 1, 1, 1},           {"switch:6", {60}, 1, 2, 1},
        {"rfs:2x3x2", {200, 100, 50}, 3, 1, 1}, {"mesh2d:3x4", {50, 20}, 2, 1, 0},
        {"fs:3x5", {100, 25}, 2, 4, 1}};
    for (size_t i = 0; i < sizeof products / sizeof products[0]; i++)
        for (int coll = TACOS_ALLGATHER; coll <= TACOS_ALLREDUCE; coll++)
            for (int bound = 0; bound < 3; bound++) {
                double lat[3] = {1, 3, 0.5}, known = 0, unknown = 0;
                CHECK_OK(tacos_topo_generate(products[i].spec, products[i].bw, products[i].nbw,
                                             lat, products[i].nbw, products[i].degree, &t));
                CHECK(tacos_topo_transitive(t) == products[i].transitive,
                      "%s: transitive %d, want %d", products[i].spec, tacos_topo_transitive(t),
                      products[i].transitive);
                for (int shape = 1; shape >= 0; shape--) {
                    double *us = shape ? &known : &unknown;
                    t->ndims = shape ? t->ndims : 0;
                    tacos_coll_t c = (tacos_coll_t)coll;
                    CHECK_OK(bound == 0   ? tacos_optimal_bound(t, c, 0, 1 << 24, us)
                             : bound == 1 ? tacos_lower_bound(t, c, 0, 2, 1 << 16, us)
                                          : tacos_ideal_bound(t, c, 1 << 16, us));
                }
                CHECK(fabs(known - unknown) <= 1e-9 * unknown,
                      "%s %s, bound %d: %.6f us, every NPU %.6f", products[i].spec,
                      tacos_coll_name((tacos_coll_t)coll), bound, known, unknown);
                tacos_topo_free(t);
            }
    /* the same along the first coordinate but not along the second: a
     * torus whose third row's links are slower (the first-row NPU 0 alone
     * would put the All-Gather optimum at a third of the truth) */
    double lat2[2] = {1, 1}, bw2[2] = {50, 20}, shaped = 0, unshaped = 0;
    CHECK_OK(tacos_topo_generate("torus2d:3x4", bw2, 2, lat2, 2, 1, &t));
    for (size_t l = 0; l < t->nlinks; l++)
        if (t->links[l].src / 3 == 2 && t->links[l].dst / 3 == 2)
            t->links[l].bw_gbps = 5, t->links[l].lat_us = 10;
    CHECK(!tacos_topo_transitive(t), "torus2d:3x4, one row slower: taken as transitive");
    CHECK_OK(tacos_optimal_bound(t, TACOS_ALLGATHER, 0, 1 << 24, &shaped));
    t->ndims = 0;
    CHECK_OK(tacos_optimal_bound(t, TACOS_ALLGATHER, 0, 1 << 24, &unshaped));
    CHECK(shaped == unshaped, "torus2d:3x4, one row slower: %.3f us, every NPU %.3f", shaped,
          unshaped);
    tacos_topo_free(t);
    /* a shape whose links differ from place to place is not taken as
     * transitive: a one-way ring of 5 with one slow link (NPU 3 takes 4
     * blocks over 0.5 GB/s; NPU 0 alone would say 4000 us), or one link of
     * a long latency that no path from NPU 0 takes */
    t = make(5);
    for (int i = 0; i < 5; i++)
        CHECK_OK(tacos_topo_add_link(t, i, (i + 1) % 5, 0, i == 2 ? 0.5 : 1));
    t->ndims = 1, t->dims[0] = 5;
    expect(t, TACOS_ALLGATHER, 0, 8000, "uni-ring 5, one link slow, shape given");
    t = make(5);
    for (int i = 0; i < 5; i++)
        CHECK_OK(tacos_topo_add_link(t, i, (i + 1) % 5, i == 4 ? 100 : 0, 1));
    t->ndims = 1, t->dims[0] = 5;
    CHECK_OK(tacos_topo_finalize(t));
    double ideal = 0; /* the bytes over the slowest ingress plus the latency diameter */
    CHECK_OK(tacos_ideal_bound(t, TACOS_ALLGATHER, 5, &ideal));
    CHECK(ideal > 100, "uni-ring 5, one link of 100 us, shape given: ideal bound %.3f us", ideal);
    tacos_topo_free(t);

    /* more chunks never hurt: with latency 0 a k-chunk schedule is never
     * slower than the 1-chunk one (its split is a candidate; with latency,
     * up to one latency per extra message) */
    static const struct {
        const char *spec;
        double bw[3];
        int nbw;
    } shapes[] = {{"fs:4x4", {100, 25}, 2},       {"fs:8x8", {100, 25}, 2},
                  {"rfs:2x4x2", {200, 100, 50}, 3}, {"ss:4x4", {300, 25}, 2},
                  {"dragonfly:3x4", {400, 200}, 2}, {"mesh2d:3x4", {50}, 1},
                  {"ring:6", {50}, 1},              {"dgx1", {50}, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int coll = 0; coll <= TACOS_ALLREDUCE; coll++) {
            double lat[3] = {0, 0, 0};
            CHECK_OK(tacos_topo_generate(shapes[i].spec, shapes[i].bw, shapes[i].nbw, lat, 1, 1,
                                         &t));
            double one = 0;
            for (int k = 1; k <= 4; k++) {
                tacos_synth_opts_t o = {(tacos_coll_t)coll, 1, k, 64 << 20, 1, 1, 0, 0};
                tacos_sched_t *sc = NULL;
                CHECK_OK(tacos_synthesize(t, &o, &sc));
                if (!sc)
                    continue;
                CHECK_OK(tacos_sched_validate(sc));
                if (k == 1)
                    one = sc->time_us;
                else
                    CHECK(sc->time_us <= one * (1 + 1e-9), "%s %s k=%d: %.3f us, k=1 %.3f us",
                          shapes[i].spec, tacos_coll_name((tacos_coll_t)coll), k, sc->time_us,
                          one);
                tacos_sched_free(sc);
            }
            tacos_topo_free(t);
        }
    return check_report("test_optimal");
}
