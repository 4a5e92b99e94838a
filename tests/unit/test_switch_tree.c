/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Switch trees in topology files (synth/fabric.c through topo_json.c):
 * named switches with ranks and child switches on their ports, lowered
 * into rank-to-rank links.  Checks the links and rates of a worked
 * example, that one switch lowers as the unwinding does, that no port
 * carries more than its rate (fat trees at 2:1 and 4:1, a three-level
 * tree), that a pair linked in "links" keeps its link, that synthesis
 * runs on the result, and each refusal with its message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static tacos_topo_t *load(const char *json)
{
    tacos_topo_t *t = NULL;
    int rc = tacos_topo_from_json(json, "test", &t);
    CHECK(rc == TACOS_OK, "%s: %s", json, tacos_last_error());
    return t;
}

static void expect_link(const tacos_topo_t *t, int s, int d, double lat, double bw)
{
    long i = tacos_topo_find_link(t, s, d);
    CHECK(i >= 0, "no link %d->%d", s, d);
    if (i < 0)
        return;
    CHECK(fabs(t->links[i].lat_us - lat) < 1e-9 && fabs(t->links[i].bw_gbps - bw) < 1e-9,
          "link %d->%d: %g us, %g GB/s (want %g, %g)", s, d, t->links[i].lat_us,
          t->links[i].bw_gbps, lat, bw);
}

/* The design's example: 2 leaves x 2 hosts, each leaf's uplink as fast as
 * one host port (2:1). */
static void two_leaves(void)
{
    tacos_topo_t *t = load(
        "{\"npus\":4,\"lat_us\":1,\"switches\":["
        "{\"name\":\"leaf0\",\"npus\":[0,1],\"bw_gbps\":12.5},"
        "{\"name\":\"leaf1\",\"npus\":[2,3],\"bw_gbps\":12.5},"
        "{\"name\":\"spine\",\"switches\":[\"leaf0\",\"leaf1\"],\"bw_gbps\":12.5,\"lat_us\":2}]}");
    if (!t)
        return;
    CHECK(t->nlinks == 8, "%zu links, want 8", t->nlinks);
    expect_link(t, 0, 1, 1, 6.25);
    expect_link(t, 1, 0, 1, 6.25);
    expect_link(t, 2, 3, 1, 6.25);
    expect_link(t, 0, 2, 3, 6.25);
    expect_link(t, 2, 0, 3, 6.25);
    expect_link(t, 1, 3, 3, 6.25);
    expect_link(t, 3, 1, 3, 6.25);
    CHECK_OK(tacos_topo_check_connected(t));
    tacos_topo_free(t);
}

/* One switch lowers to the unwinding of tacos_topo_add_switch. */
static void one_switch(int degree)
{
    char json[256];
    snprintf(json, sizeof json,
             "{\"npus\":5,\"switches\":[{\"name\":\"s\",\"npus\":[0,1,2,3,4],\"bw_gbps\":10,"
             "\"lat_us\":1,\"unwind_degree\":%d}]}",
             degree);
    tacos_topo_t *t = load(json), *u = NULL;
    int m[5] = {0, 1, 2, 3, 4};
    CHECK_OK(tacos_topo_create(5, NULL, &u));
    CHECK_OK(tacos_topo_add_switch(u, m, 5, 1, 10, degree));
    CHECK_OK(tacos_topo_finalize(u));
    if (t && u) {
        CHECK(t->nlinks == u->nlinks, "degree %d: %zu links, unwound %zu", degree, t->nlinks,
              u->nlinks);
        for (size_t i = 0; i < u->nlinks; i++)
            expect_link(t, u->links[i].src, u->links[i].dst, u->links[i].lat_us,
                        u->links[i].bw_gbps);
    }
    tacos_topo_free(t);
    tacos_topo_free(u);
}

/* What flows out of and into each set of ranks (a host; a leaf's hosts). */
static void port_sums(const tacos_topo_t *t, const int *leaf_of, int leaf, double *out, double *in)
{
    *out = *in = 0;
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        int s = leaf_of[l->src] == leaf, d = leaf_of[l->dst] == leaf;
        if (s && !d)
            *out += l->bw_gbps;
        if (d && !s)
            *in += l->bw_gbps;
    }
}

/* t is connected, and an All-Gather synthesized on it is valid. */
static void connected_and_synthesizes(const tacos_topo_t *t)
{
    CHECK_OK(tacos_topo_check_connected(t));
    tacos_synth_opts_t o = {TACOS_ALLGATHER, 0, 1, 1 << 20, 1, 1, 0, 0};
    tacos_sched_t *s = NULL;
    CHECK_OK(tacos_synthesize(t, &o, &s));
    if (s)
        CHECK_OK(tacos_sched_validate(s));
    tacos_sched_free(s);
}

/* L leaves of M hosts, ports of p GB/s, each leaf's uplink M p / ratio:
 * no host port and no uplink carries more than its rate; synthesis runs. */
static void fat_tree(int leaves, int hosts, double ratio)
{
    double p = 10, up = hosts * p / ratio;
    int n = leaves * hosts;
    size_t room = 256 + (size_t)n * 16 + (size_t)leaves * 96;
    char *json = malloc(room);
    size_t at = (size_t)snprintf(json, room, "{\"npus\":%d,\"lat_us\":1,\"switches\":[", n);
    for (int l = 0; l < leaves; l++) {
        at += (size_t)snprintf(json + at, room - at, "{\"name\":\"leaf%d\",\"bw_gbps\":%g,\"npus\":[",
                               l, p);
        for (int h = 0; h < hosts; h++)
            at += (size_t)snprintf(json + at, room - at, "%s%d", h ? "," : "", l * hosts + h);
        at += (size_t)snprintf(json + at, room - at, "]},");
    }
    at += (size_t)snprintf(json + at, room - at, "{\"name\":\"spine\",\"bw_gbps\":%g,\"switches\":[",
                           up);
    for (int l = 0; l < leaves; l++)
        at += (size_t)snprintf(json + at, room - at, "%s\"leaf%d\"", l ? "," : "", l);
    snprintf(json + at, room - at, "]}]}");
    tacos_topo_t *t = load(json), *g = NULL;
    free(json);
    if (!t)
        return;
    /* the built-in shape is the same tree */
    char spec[32];
    double bws[2] = {p, up}, lats[2] = {1, 1};
    snprintf(spec, sizeof spec, "fattree:%dx%d", hosts, leaves);
    CHECK_OK(tacos_topo_generate(spec, bws, 2, lats, 2, 1, &g));
    if (g) {
        CHECK(g->nlinks == t->nlinks, "%s: %zu links, the file's %zu", spec, g->nlinks, t->nlinks);
        for (size_t i = 0; i < g->nlinks; i++)
            expect_link(t, g->links[i].src, g->links[i].dst, g->links[i].lat_us,
                        g->links[i].bw_gbps);
        tacos_topo_free(g);
    }
    int *host = malloc((size_t)n * sizeof *host), *leaf = malloc((size_t)n * sizeof *leaf);
    for (int r = 0; r < n; r++)
        host[r] = r, leaf[r] = r / hosts;
    double out, in;
    for (int r = 0; r < n; r++) {
        port_sums(t, host, r, &out, &in);
        CHECK(out <= p * (1 + 1e-9) && in <= p * (1 + 1e-9),
              "%dx%d %g:1: rank %d sends %g, receives %g GB/s through a port of %g", leaves, hosts,
              ratio, r, out, in, p);
    }
    for (int l = 0; l < leaves; l++) {
        port_sums(t, leaf, l, &out, &in);
        CHECK(out <= up * (1 + 1e-9) && in <= up * (1 + 1e-9) && out > 0,
              "%dx%d %g:1: leaf %d sends %g, receives %g GB/s through an uplink of %g", leaves,
              hosts, ratio, l, out, in, up);
    }
    connected_and_synthesizes(t);
    free(host);
    free(leaf);
    tacos_topo_free(t);
}

/* rails:GxH: links inside a host, or between ranks of one local index
 * (their rail); no rail port over its rate; connected; synthesis runs. */
static void rails(int per_host, int hosts)
{
    char spec[32];
    double bw[2] = {100, 25}, lat[2] = {0.5, 2};
    tacos_topo_t *t = NULL;
    snprintf(spec, sizeof spec, "rails:%dx%d", per_host, hosts);
    CHECK_OK(tacos_topo_generate(spec, bw, 2, lat, 2, 1, &t));
    if (!t)
        return;
    int n = per_host * hosts, *host = malloc((size_t)n * sizeof *host);
    for (int r = 0; r < n; r++)
        host[r] = r / per_host;
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        int inside = host[l->src] == host[l->dst];
        CHECK(inside || l->src % per_host == l->dst % per_host,
              "%s: link %d->%d joins two rails", spec, l->src, l->dst);
        CHECK(l->bw_gbps <= (inside ? 100 : 25) * (1 + 1e-9), "%s: link %d->%d at %g GB/s", spec,
              l->src, l->dst, l->bw_gbps);
    }
    for (int r = 0; r < n; r++) { /* rank r's rail port: its links out of its host */
        double out = 0, in = 0;
        for (size_t i = 0; i < t->nlinks; i++) {
            const tacos_link_t *l = &t->links[i];
            if (host[l->src] != host[l->dst]) {
                out += l->src == r ? l->bw_gbps : 0;
                in += l->dst == r ? l->bw_gbps : 0;
            }
        }
        CHECK(out <= 25 * (1 + 1e-9) && in <= 25 * (1 + 1e-9) && (hosts == 1 || out > 0),
              "%s: rank %d sends %g, receives %g GB/s through a rail port of 25", spec, r, out,
              in);
    }
    connected_and_synthesizes(t);
    free(host);
    tacos_topo_free(t);
}

/* Three levels, uneven: connected, no rank port over its rate. */
static void three_levels(void)
{
    tacos_topo_t *t = load(
        "{\"npus\":7,\"lat_us\":1,\"bw_gbps\":8,\"switches\":["
        "{\"name\":\"core\",\"switches\":[\"agg0\",\"agg1\"],\"npus\":[6]},"
        "{\"name\":\"agg0\",\"switches\":[\"tor0\",\"tor1\"]},"
        "{\"name\":\"agg1\",\"switches\":[\"tor2\"]},"
        "{\"name\":\"tor0\",\"npus\":[0,1]},{\"name\":\"tor1\",\"npus\":[2]},"
        "{\"name\":\"tor2\",\"npus\":[3,4,5],\"bw_gbps\":4}]}");
    if (!t)
        return;
    CHECK_OK(tacos_topo_check_connected(t));
    for (int r = 0; r < 7; r++) {
        double out = 0, in = 0, p = r >= 3 && r <= 5 ? 4 : 8;
        for (size_t i = 0; i < t->nlinks; i++) {
            out += t->links[i].src == r ? t->links[i].bw_gbps : 0;
            in += t->links[i].dst == r ? t->links[i].bw_gbps : 0;
        }
        CHECK(out <= p * (1 + 1e-9) && in <= p * (1 + 1e-9) && out > 0 && in > 0,
              "three levels: rank %d sends %g, receives %g through a port of %g", r, out, in, p);
    }
    tacos_topo_free(t);
}

/* A pair given in "links" keeps that link; the others are lowered. */
static void given_link(void)
{
    tacos_topo_t *t = load("{\"npus\":3,\"lat_us\":1,\"links\":[{\"src\":0,\"dst\":1,\"bw_gbps\":100,"
                           "\"lat_us\":0.1}],\"switches\":[{\"name\":\"s\",\"npus\":[0,1,2],"
                           "\"bw_gbps\":10}]}");
    if (!t)
        return;
    expect_link(t, 0, 1, 0.1, 100);
    expect_link(t, 1, 2, 1, 10);
    expect_link(t, 2, 0, 1, 10);
    tacos_topo_free(t);
}

static void refusals(void)
{
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"npus\":4,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,1]},"
         "{\"name\":\"b\",\"npus\":[2,3]},{\"name\":\"s0\",\"switches\":[\"a\",\"b\"]},"
         "{\"name\":\"s1\",\"switches\":[\"a\",\"b\"]}]}",
         "close a cycle"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,1]},"
         "{\"name\":\"lonely\",\"npus\":[]}]}",
         "switch 'lonely' has no links"},
        {"{\"npus\":3,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,1]},"
         "{\"name\":\"b\",\"npus\":[1,2]}]}",
         "rank 1 is on two switches ('a', 'b')"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,1]},"
         "{\"name\":\"s\",\"switches\":[\"nope\"]}]}",
         "switches[1].switches[0] must name a switch"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0]},"
         "{\"name\":\"a\",\"npus\":[1]}]}",
         "switch 'a' is given twice"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"12\",\"npus\":[0,1]}]}",
         "neither empty nor a number"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,7]}]}",
         "switches[0].npus[1]: rank 7 is not one of 0..1"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\"}]}",
         "a named switch needs 'npus' or 'switches'"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,0]}]}",
         "rank 0 is listed twice on switch 'a'"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,1]},"
         "{\"name\":\"b\",\"switches\":[\"b\"]}]}",
         "switches[1].switches[0]: a switch under itself"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":[0,1]},"
         "{\"name\":\"x\",\"switches\":[\"y\"]},{\"name\":\"y\",\"switches\":[]}]}",
         "switch 'x' and the switches joined to it reach no rank"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"\",\"npus\":[0,1]}]}",
         "neither empty nor a number"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1,\"switches\":[{\"name\":\"a\",\"npus\":\"x\"}]}",
         "test: switches[0].npus must be an array of integers"},
        {"{\"npus\":2,\"bw_gbps\":1,\"lat_us\":1e308,\"switches\":[{\"name\":\"a\",\"npus\":[0]},"
         "{\"name\":\"b\",\"npus\":[1]},{\"name\":\"c\",\"switches\":[\"a\",\"b\"],"
         "\"lat_us\":1e308}]}",
         "infinite latency"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tacos_topo_t *t = NULL;
        int rc = tacos_topo_from_json(bad[i].json, "test", &t);
        const char *e = tacos_last_error(), *again = strstr(e, "test:");
        CHECK(rc != TACOS_OK && strstr(e, bad[i].want) && again && !strstr(again + 1, "test:"),
              "refusal %zu: rc %d, message '%s' (want '%s', the file named once)", i, rc, e,
              bad[i].want);
        tacos_topo_free(t);
    }
    /* too many links: refused before they are made, naming the switch */
    enum { N = 1500 };
    size_t room = 128 + 6 * N;
    char *json = malloc(room);
    size_t at = (size_t)snprintf(json, room, "{\"npus\":%d,\"bw_gbps\":1,\"lat_us\":1,\"switches\":"
                                 "[{\"name\":\"big\",\"unwind_degree\":%d,\"npus\":[", N, N - 1);
    for (int r = 0; r < N; r++)
        at += (size_t)snprintf(json + at, room - at, "%s%d", r ? "," : "", r);
    snprintf(json + at, room - at, "]}]}");
    tacos_topo_t *t = NULL;
    CHECK_ERR(tacos_topo_from_json(json, "test", &t), TACOS_ERR_ARG,
              "switch 'big' lowered with degree 1499 makes");
    tacos_topo_free(t);
    free(json);
    double bw[2] = {1, 1}, lat[2] = {1, 1};
    CHECK_ERR(tacos_topo_generate("fattree:1x4096", bw, 2, lat, 2, 1, &t), TACOS_ERR_ARG,
              "at most 4095 leaves");
    CHECK_ERR(tacos_topo_generate("rails:4097x2", bw, 2, lat, 2, 1, &t), TACOS_ERR_ARG,
              "at most 4096 ranks per host");
}

/* Ranks listed in any order: the same links (groups go by their first rank). */
static void any_order(void)
{
    tacos_topo_t *a = load("{\"npus\":4,\"lat_us\":1,\"bw_gbps\":5,\"switches\":[{\"name\":\"s\","
                           "\"npus\":[3,1,0,2]}]}");
    tacos_topo_t *b = load("{\"npus\":4,\"lat_us\":1,\"bw_gbps\":5,\"switches\":[{\"name\":\"s\","
                           "\"npus\":[0,1,2,3]}]}");
    if (a && b) {
        CHECK(a->nlinks == b->nlinks, "%zu links, %zu in order", a->nlinks, b->nlinks);
        for (size_t i = 0; i < b->nlinks; i++)
            expect_link(a, b->links[i].src, b->links[i].dst, b->links[i].lat_us,
                        b->links[i].bw_gbps);
    }
    tacos_topo_free(a);
    tacos_topo_free(b);
}

static tacos_topo_t *shape(const char *spec, int degree)
{
    double bw[2] = {100, 25}, lat[2] = {0.5, 2};
    tacos_topo_t *t = NULL;
    int dims = strchr(spec, 'x') ? 2 : 1;
    CHECK_OK(tacos_topo_generate(spec, bw, dims, lat, dims, degree, &t));
    return t;
}

/* TACOS_DEGREE_AUTO (tacos-synth --unwind-degree auto) unwinds each shape
 * as coll/tacos does: the same links as the given degree on each row. */
static void auto_degree(void)
{
    static const struct {
        const char *spec;
        int as; /* the degree that gives the same links, 0: none does */
        size_t nlinks;
    } rows[] = {
        {"switch:8", 1, 8},              /* a network's switch of 8: a ring */
        {"switch:12", 8, 12 * 8},        /* more than 8: the next 8 */
        {"fs:8x4", 1, 4 * 56 + 8 * 4},   /* rails of 4 hosts: rings */
        {"fs:8x16", 8, 16 * 56 + 8 * 16 * 8},
        {"ss:4x4", 0, 4 * 12 + 4 * 4},   /* the host's switch 3, rails 1 */
        {"fattree:4x4", 8, 0},           /* the tree: groups joined to all (< 8) */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        tacos_topo_t *a = shape(rows[i].spec, TACOS_DEGREE_AUTO), *b = NULL;
        if (!a)
            continue;
        if (rows[i].nlinks)
            CHECK(a->nlinks == rows[i].nlinks, "%s auto: %zu links, want %zu", rows[i].spec,
                  a->nlinks, rows[i].nlinks);
        if (rows[i].as && (b = shape(rows[i].spec, rows[i].as)))
            CHECK(a->nlinks == b->nlinks &&
                      !memcmp(a->links, b->links, a->nlinks * sizeof *a->links),
                  "%s auto: not the links of degree %d", rows[i].spec, rows[i].as);
        connected_and_synthesizes(a);
        tacos_topo_free(a);
        tacos_topo_free(b);
    }
    tacos_topo_t *t = NULL;
    CHECK_ERR(tacos_topo_generate("switch:4", (double[]){10}, 1, (double[]){1}, 1, 0, &t),
              TACOS_ERR_ARG, "degree must be >= 1");
}

/* Which lowering a size takes (tacos_lowering_for): on fs:8xH (rails at
 * 25 GB/s and 2 us) the fully unwound rails up to 1 MiB, as the switches
 * themselves time it (benchmarks/results/2026-12-03-lowering.md), the
 * component's from 4 MiB (fs:8x8: its chunks of 64 KiB cross a ring of 8
 * sooner); fs:8x128 fully unwound to 4 MiB (chunks of 4 KiB).  A lowering
 * with no more links (fattree:4x4's groups already joined to all) is no
 * second one; a full lowering is named so. */
static void lowering(void)
{
    static const struct {
        const char *spec;
        int full_up_to_mib; /* sizes up to this many MiB fully unwound */
    } rows[] = {{"fs:8x8", 1}, {"fs:8x32", 1}, {"fs:8x64", 1}, {"fs:8x128", 4}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        tacos_topo_t *wide = shape(rows[i].spec, TACOS_DEGREE_AUTO);
        tacos_topo_t *full = shape(rows[i].spec, TACOS_DEGREE_FULL);
        if (!wide || !full)
            continue;
        CHECK_OK(tacos_lowering_keep_full(wide, &full));
        CHECK(full && strstr(full->name, ", switches fully unwound"), "%s: full lowering %s",
              rows[i].spec, full ? full->name : "dropped");
        const tacos_topo_t *on = NULL;
        for (uint64_t size = 64 << 10; full && size <= 64 << 20; size <<= 2) {
            int want_full = size <= (uint64_t)rows[i].full_up_to_mib << 20;
            CHECK_OK(tacos_lowering_for(wide, full, size, &on));
            CHECK(on == (want_full ? full : wide), "%s at %llu bytes: %s", rows[i].spec,
                  (unsigned long long)size, on == full ? "fully unwound" : "the component's");
        }
        CHECK_OK(tacos_lowering_for(wide, NULL, 64 << 10, &on));
        CHECK(on == wide, "%s: no full lowering, yet not wide", rows[i].spec);
        tacos_topo_free(wide);
        tacos_topo_free(full);
    }
    tacos_topo_t *tree = shape("fattree:4x4", TACOS_DEGREE_AUTO);
    tacos_topo_t *all = shape("fattree:4x4", TACOS_DEGREE_FULL);
    if (tree && all) {
        CHECK_OK(tacos_lowering_keep_full(tree, &all));
        CHECK(!all, "fattree:4x4: a full lowering with no more links kept");
    }
    tacos_topo_free(tree);
    tacos_topo_free(all);
}

int main(void)
{
    lowering();
    auto_degree();
    two_leaves();
    for (int d = 1; d <= 4; d++)
        one_switch(d);
    fat_tree(4, 4, 2);
    fat_tree(4, 4, 4);
    fat_tree(8, 16, 2);
    rails(4, 3);
    rails(8, 16);
    rails(1, 5);
    rails(3, 1);
    three_levels();
    given_link();
    any_order();
    refusals();
    return check_report("test_switch_tree");
}
