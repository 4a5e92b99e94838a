/* SPDX-License-Identifier: BSD-3-Clause */
/* Topology model and generators: link counts, wiring, unwinding, removal,
 * and clear errors for bad specs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h" /* tacos_topo_copy (linked statically) */

static void expect_shape(const char *spec, int npus, size_t nlinks)
{
    tacos_topo_t *t = gen(spec);
    CHECK(t && t->npus == npus && t->nlinks == nlinks, "%s: %d NPUs %zu links, want %d %zu", spec,
          t ? t->npus : -1, t ? t->nlinks : 0, npus, nlinks);
    if (t)
        CHECK_OK(tacos_topo_check_connected(t));
    tacos_topo_free(t);
}

static double in_bw(const tacos_topo_t *t, int d)
{
    double s = 0;
    for (size_t k = t->in_off[d]; k < t->in_off[d + 1]; k++)
        s += t->links[t->in_links[k]].bw_gbps;
    return s;
}

/* Every link once in out_links sorted by (src, dst) and in in_links by
 * (dst, src), within the offsets of its endpoint. */
static void check_adjacency(const tacos_topo_t *t, const char *what)
{
    size_t m = t->nlinks, bad = 0;
    char *seen = calloc(m ? m : 1, 2);
    for (int v = 0; seen && v < t->npus; v++) {
        for (size_t k = t->out_off[v]; k < t->out_off[v + 1]; k++) {
            const tacos_link_t *l = &t->links[t->out_links[k]];
            bad += l->src != v || seen[2 * t->out_links[k]]++ ||
                   (k > t->out_off[v] && t->links[t->out_links[k - 1]].dst >= l->dst);
        }
        for (size_t k = t->in_off[v]; k < t->in_off[v + 1]; k++) {
            const tacos_link_t *l = &t->links[t->in_links[k]];
            bad += l->dst != v || seen[2 * t->in_links[k] + 1]++ ||
                   (k > t->in_off[v] && t->links[t->in_links[k - 1]].src >= l->src);
        }
    }
    CHECK(seen && t->out_off[t->npus] == m && t->in_off[t->npus] == m && !bad,
          "%s: adjacency of %zu links sorted, each once (%zu wrong)", what, m, bad);
    free(seen);
}

int main(void)
{
    expect_shape("ring:8", 8, 16);
    expect_shape("ring:2", 2, 2);
    expect_shape("uniring:8", 8, 8);
    expect_shape("fc:5", 5, 20);
    expect_shape("switch:8", 8, 8);
    expect_shape("line:4", 4, 6);
    expect_shape("mesh2d:4x3", 12, 2 * (3 * 3 + 4 * 2));
    expect_shape("torus2d:4x4", 16, 64);
    expect_shape("mesh3d:3x3x3", 27, 2 * 3 * 2 * 9);
    expect_shape("torus3d:3x3x3", 27, 27 * 6);
    expect_shape("hypercube:16", 16, 16 * 4);
    expect_shape("dgx1", 8, 32);
    /* 4 groups of 5 all-to-all + 6 global pairs */
    expect_shape("dragonfly:4x5", 20, 4 * 20 + 12);
    /* rfs 2x4x3: rings of 2 (1 pair), fc of 4, switch of 3 (degree 1) */
    expect_shape("rfs:2x4x3", 24, 12 * 2 + 6 * 12 + 8 * 3);
    expect_shape("fc:1", 1, 0);

    /* per-dimension bandwidth and the unwound switch's shared bandwidth */
    double bw[3] = {200, 100, 50}, lat = 0.5;
    tacos_topo_t *t = NULL;
    CHECK_OK(tacos_topo_generate("rfs:2x4x4", bw, 3, &lat, 1, 2, &t));
    if (t) {
        long l = tacos_topo_find_link(t, 0, 1);
        CHECK(l >= 0 && t->links[l].bw_gbps == 200, "ring dimension bandwidth");
        l = tacos_topo_find_link(t, 0, 2);
        CHECK(l >= 0 && t->links[l].bw_gbps == 100, "fc dimension bandwidth");
        l = tacos_topo_find_link(t, 0, 8);
        CHECK(l >= 0 && t->links[l].bw_gbps == 25, "switch degree 2: 50/2 per link");
        CHECK(tacos_topo_find_link(t, 0, 16) >= 0 && tacos_topo_find_link(t, 0, 24) < 0,
              "switch degree 2 links to i+1, i+2 only");
        tacos_topo_free(t);
    }
    /* DGX-1: every GPU has six NVLinks' worth of ingress */
    t = gen("dgx1");
    for (int d = 0; t && d < 8; d++)
        CHECK(in_bw(t, d) == 300, "dgx1 GPU %d ingress %g GB/s, want 6 x 50", d, in_bw(t, d));
    tacos_topo_free(t);
    /* DragonFly: each group has one link to every other group */
    t = gen("dragonfly:5x2");
    if (t) {
        for (int g = 0; g < 5; g++)
            for (int h = 0; h < 5; h++) {
                int n = 0;
                for (size_t i = 0; h != g && i < t->nlinks; i++)
                    n += t->links[i].src / 2 == g && t->links[i].dst / 2 == h;
                CHECK(h == g || n == 1, "groups %d->%d joined by %d links", g, h, n);
            }
        tacos_topo_free(t);
    }

    /* links added in a shuffled order: the adjacency sorted all the same;
     * a copy and a transpose keep it sorted, a transpose of the transpose
     * gives the links back in their order */
    CHECK_OK(tacos_topo_create(9, "shuffled", &t));
    for (int i = 0, a = 0; t && i < 72; i++, a = (a + 29) % 72) {
        int src = a / 8, dst = a % 8 >= src ? a % 8 + 1 : a % 8;
        CHECK_OK(tacos_topo_add_link(t, src, dst, 1, 1 + a));
    }
    CHECK_OK(tacos_topo_finalize(t));
    check_adjacency(t, "shuffled fc:9");
    tacos_topo_t *tt = NULL, *t2 = NULL, *tc = NULL;
    CHECK_OK(tacos_topo_copy(t, &tc));
    if (tc)
        check_adjacency(tc, "its copy");
    tacos_topo_free(tc);
    CHECK_OK(tacos_topo_transpose(t, &tt));
    if (tt) {
        check_adjacency(tt, "its transpose");
        CHECK_OK(tacos_topo_transpose(tt, &t2));
        CHECK(t2 && t2->nlinks == t->nlinks &&
                  !memcmp(t2->links, t->links, t->nlinks * sizeof *t->links) &&
                  !memcmp(t2->out_links, t->out_links, t->nlinks * sizeof *t->out_links) &&
                  !memcmp(t2->in_links, t->in_links, t->nlinks * sizeof *t->in_links),
              "transposed twice: the same links and adjacency");
        tacos_topo_free(t2);
        tacos_topo_free(tt);
    }
    tacos_topo_free(t);

    /* transpose reverses every link */
    t = gen("uniring:5");
    tt = NULL;
    CHECK_OK(tacos_topo_transpose(t, &tt));
    CHECK(tt && tacos_topo_find_link(tt, 1, 0) >= 0 && tacos_topo_find_link(tt, 0, 1) < 0,
          "transposed uni-ring runs backwards");
    tacos_topo_free(tt);
    tacos_topo_free(t);

    /* removing NPUs renumbers the rest and drops their links */
    t = gen("mesh2d:4x4");
    int failed[2] = {5, 10};
    CHECK_OK(tacos_topo_remove_npus(t, failed, 2));
    CHECK(t->npus == 14 && t->nlinks == 48 - 16, "4x4 mesh minus 2 inner NPUs: %d NPUs %zu links",
          t->npus, t->nlinks);
    CHECK(tacos_topo_find_link(t, 4, 5) < 0, "new 5 is old 6, which was not next to 4");
    CHECK(tacos_topo_find_link(t, 5, 6) >= 0, "old 6->7 is new 5->6");
    CHECK_OK(tacos_topo_check_connected(t));
    int bad = 99;
    CHECK_ERR(tacos_topo_remove_npus(t, &bad, 1), TACOS_ERR_ARG, "failed NPU 99");
    tacos_topo_free(t);
    /* a mesh line cut in two is not connected */
    t = gen("line:5");
    int mid = 2;
    CHECK_OK(tacos_topo_remove_npus(t, &mid, 1));
    CHECK_ERR(tacos_topo_check_connected(t), TACOS_ERR_TOPO, "not connected");
    tacos_topo_free(t);

    /* errors name what was wrong */
    double two[2] = {1, 2};
    CHECK_ERR(tacos_topo_generate("blob:4", &bw[0], 1, &lat, 1, 1, &t), TACOS_ERR_PARSE,
              "unknown topology 'blob:4'");
    CHECK_ERR(tacos_topo_generate("mesh2d:4", &bw[0], 1, &lat, 1, 1, &t), TACOS_ERR_PARSE,
              "2 dimensions, got 1 sizes");
    CHECK_ERR(tacos_topo_generate("mesh2d:4x0", &bw[0], 1, &lat, 1, 1, &t), TACOS_ERR_PARSE,
              "positive integers");
    CHECK_ERR(tacos_topo_generate("hypercube:12", &bw[0], 1, &lat, 1, 1, &t), TACOS_ERR_PARSE,
              "2^k");
    CHECK_ERR(tacos_topo_generate("rfs:2x4x4", two, 2, &lat, 1, 1, &t), TACOS_ERR_ARG,
              "give 1 or 3 bandwidth values, got 2");
    double neg = -1;
    CHECK_ERR(tacos_topo_generate("ring:4", &neg, 1, &lat, 1, 1, &t), TACOS_ERR_ARG,
              "bandwidth must be > 0");
    CHECK_ERR(tacos_topo_generate("ring", &bw[0], 1, &lat, 1, 1, &t), TACOS_ERR_PARSE,
              "expected <shape>:<sizes>");
    CHECK_ERR(tacos_topo_generate("switch:4", &bw[0], 1, &lat, 1, 0, &t), TACOS_ERR_ARG,
              "degree");
    CHECK_OK(tacos_topo_create(3, "dup", &t));
    CHECK_OK(tacos_topo_add_link(t, 0, 1, 1, 1));
    CHECK_OK(tacos_topo_add_link(t, 0, 1, 1, 1));
    CHECK_ERR(tacos_topo_finalize(t), TACOS_ERR_ARG, "two links 0->1");
    CHECK_ERR(tacos_topo_add_link(t, 0, 3, 1, 1), TACOS_ERR_ARG, "link 0->3");
    CHECK_ERR(tacos_topo_add_link(t, 1, 1, 1, 1), TACOS_ERR_ARG, "distinct");
    CHECK_ERR(tacos_topo_add_link(t, 1, 2, NAN, 1), TACOS_ERR_ARG, "latency");
    tacos_topo_free(t);
    return check_report("test_topology");
}
