/* SPDX-License-Identifier: BSD-3-Clause */
/* TACOS-ILP: hand-computed optima, every collective valid and no slower than
 * the greedy (the routed ones moving each chunk along one path), the time limit keeping the best so far, and a clear error
 * without CBC.  Skips (77) when libtacos-synth was built without CBC. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { M = 1000000 }; /* bytes per NPU */

static tacos_topo_t *make_topo(const char *spec)
{
    double bw = 1, lat = 0;
    tacos_topo_t *t = NULL;
    CHECK_OK(tacos_topo_generate(spec, &bw, 1, &lat, 1, 1, &t));
    return t;
}

/* ILP and greedy on t; checks validity, ILP <= greedy, returns the ILP time
 * in chunk times (bandwidth 1 GB/s, latency 0: a chunk of `chunk` bytes
 * takes chunk / 1000 us). */
static double steps(tacos_topo_t *t, tacos_coll_t coll, int k, double seconds, int want_proven)
{
    tacos_synth_opts_t o = {coll, 0, k, (uint64_t)M * (uint64_t)t->npus, 1, 1, 0, 0};
    tacos_sched_t *g = NULL, *s = NULL;
    int proven = -1;
    CHECK_OK(tacos_synthesize(t, &o, &g));
    CHECK_OK(tacos_synthesize_ilp(t, &o, seconds, &s, &proven));
    CHECK_OK(tacos_sched_validate(s));
    CHECK(s->time_us <= g->time_us * (1 + 1e-9), "%s %s k=%d: ILP %.3f us slower than greedy %.3f",
          t->name, tacos_coll_name(coll), k, s->time_us, g->time_us);
    CHECK(proven == want_proven, "%s %s k=%d: proven %d, want %d", t->name, tacos_coll_name(coll),
          k, proven, want_proven);
    if (tacos_coll_routed(coll)) /* moved, never copied: a chunk leaves an NPU once */
        for (size_t i = 0; i < s->nxfers; i++)
            for (size_t j = i + 1; j < s->nxfers; j++)
                CHECK(s->xfers[i].chunk != s->xfers[j].chunk || s->xfers[i].src != s->xfers[j].src,
                      "%s %s k=%d: chunk %d leaves NPU %d twice", t->name, tacos_coll_name(coll),
                      k, s->xfers[i].chunk, s->xfers[i].src);
    double chunk_us = (double)M / k / 1e3, r = s->time_us / chunk_us;
    tacos_sched_free(g);
    tacos_sched_free(s);
    return r;
}

static void expect_steps(const char *spec, tacos_coll_t coll, int k, double want)
{
    tacos_topo_t *t = make_topo(spec);
    double got = steps(t, coll, k, 60, 1);
    CHECK(got > want - 1e-6 && got < want + 1e-6, "%s %s k=%d: %.3f chunk times, want %.0f", spec,
          tacos_coll_name(coll), k, got, want);
    tacos_topo_free(t);
}

int main(void)
{
    tacos_topo_t *t = make_topo("ring:4");
    tacos_synth_opts_t o = {TACOS_ALLGATHER, 0, 1, 4 * M, 1, 1, 0, 0};
    tacos_sched_t *s = NULL;
    if (!tacos_have_ilp()) {
        CHECK_ERR(tacos_synthesize_ilp(t, &o, 1, &s, NULL), TACOS_ERR_ARG, "CBC");
        printf("SKIP: built without CBC (coinor-libcbc-dev)\n");
        tacos_topo_free(t);
        return 77;
    }
    CHECK_ERR(tacos_synthesize_ilp(t, &o, 0, &s, NULL), TACOS_ERR_ARG, "time limit");
    tacos_topo_free(t);

    /* one-way ring of 4: 3 chunks over one in-link each */
    expect_steps("uniring:4", TACOS_ALLGATHER, 1, 3);
    /* two-way ring of 4: 3 chunks over 2 in-links, and the far one needs 2 hops */
    expect_steps("ring:4", TACOS_ALLGATHER, 1, 2);
    /* two-way ring of 4, 2 chunks each: 6 half-chunks over 2 in-links */
    expect_steps("ring:4", TACOS_ALLGATHER, 2, 3);
    /* line 0-1-2, broadcast from 0 of 3 chunks (k = 1; the buffer is 3 NPUs'
     * worth): 3 over the first link, the last one more hop; k = 2: 6 + 1 */
    expect_steps("line:3", TACOS_BROADCAST, 1, 4);
    expect_steps("line:3", TACOS_BROADCAST, 2, 7);
    /* a 3x3 mesh: the corner takes 8 chunks over 2 in-links */
    expect_steps("mesh2d:3x3", TACOS_ALLGATHER, 1, 4);
    /* All-to-All on a two-way ring of 4: 16 hops of blocks over 8 links; the
     * greedy takes 3 (the far blocks of neighbours meet on one link) */
    expect_steps("ring:4", TACOS_ALLTOALL, 1, 2);
    /* Gather to 0 on a line 0-1-2: blocks 1 and 2 over the one link into 0 */
    expect_steps("line:3", TACOS_GATHER, 1, 2);

    /* every collective on small shapes: valid, never slower, proven */
    const char *shapes[] = {"mesh2d:2x3", "ring:5", "hypercube:8"};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int c = 0; c < TACOS_NCOLLS; c++) /* routed: k = 2 is not proven in a minute */
            for (int k = 1; k <= (tacos_coll_routed((tacos_coll_t)c) ? 1 : 2); k++) {
                t = make_topo(shapes[i]);
                steps(t, (tacos_coll_t)c, k, 60, 1);
                tacos_topo_free(t);
            }

    /* DGX-1's two bandwidths (latency 0): the ILP is no slower than 16 greedy trials */
    {
        double bw = 50, lat = 0;
        CHECK_OK(tacos_topo_generate("dgx1", &bw, 1, &lat, 1, 1, &t));
        tacos_synth_opts_t d = {TACOS_ALLGATHER, 0, 1, 8 * (uint64_t)M, 1, 16, 0, 0};
        tacos_sched_t *g = NULL;
        int proven = 0;
        CHECK_OK(tacos_synthesize(t, &d, &g));
        d.trials = 1;
        CHECK_OK(tacos_synthesize_ilp(t, &d, 60, &s, &proven));
        CHECK_OK(tacos_sched_validate(s));
        CHECK(proven && s->time_us <= g->time_us, "dgx1: ILP %.3f us (proven %d), greedy x16 %.3f",
              s->time_us, proven, g->time_us);
        tacos_sched_free(g);
        tacos_sched_free(s);
        tacos_topo_free(t);
    }

    /* a limit too short for any answer: the greedy's schedule (above DGX-1's
     * optimum at one trial), not proven */
    {
        double bw = 50, lat = 0;
        CHECK_OK(tacos_topo_generate("dgx1", &bw, 1, &lat, 1, 1, &t));
        steps(t, TACOS_ALLGATHER, 1, 1e-9, 0);
        tacos_topo_free(t);
    }
    return 0;
}
