/* SPDX-License-Identifier: BSD-3-Clause */
/* The validator accepts synthesized schedules and rejects each planted
 * violation with a message naming it; the earliest violation is reported. */
#include <stdlib.h>

#include "check.h"

static tacos_sched_t *make(const char *spec, tacos_coll_t coll)
{
    tacos_topo_t *t = gen(spec);
    tacos_synth_opts_t o = {coll, 0, 1, 3 << 20, 1, 1, 0, 0};
    tacos_sched_t *s = NULL;
    CHECK_OK(tacos_synthesize(t, &o, &s));
    CHECK_OK(tacos_sched_validate(s));
    tacos_topo_free(t);
    return s;
}

/* Inserts x at position i (the caller keeps start-time order). */
static void insert(tacos_sched_t *s, size_t i, tacos_xfer_t x)
{
    s->xfers = realloc(s->xfers, (s->nxfers + 1) * sizeof *s->xfers);
    memmove(s->xfers + i + 1, s->xfers + i, (s->nxfers++ - i) * sizeof *s->xfers);
    s->xfers[i] = x;
}

static size_t first_with(const tacos_sched_t *s, int src, int dst)
{
    for (size_t i = 0; i < s->nxfers; i++)
        if (s->xfers[i].src == src && s->xfers[i].dst == dst)
            return i;
    return 0;
}

int main(void)
{
    tacos_sched_t *s;

    /* transfer on a link that does not exist (ring:4 has no 0->2) */
    s = make("ring:4", TACOS_ALLGATHER);
    s->xfers[0].dst = (s->xfers[0].src + 2) % 4;
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "no link");
    tacos_sched_free(s);

    /* faster than the link allows */
    s = make("ring:4", TACOS_ALLGATHER);
    s->xfers[3].end_us = s->xfers[3].start_us + 0.5 * (s->xfers[3].end_us - s->xfers[3].start_us);
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "transfer 3: chunk");
    CHECK(strstr(tacos_last_error(), "less than the link time"), "%s", tacos_last_error());
    tacos_sched_free(s);

    /* two chunks on one link at once: overlapping messages */
    s = make("ring:4", TACOS_ALLGATHER);
    size_t i = first_with(s, 1, 2);
    tacos_xfer_t x = s->xfers[i];
    x.chunk = (x.chunk + 1) % 4;
    x.end_us += 1;
    insert(s, i + 1, x);
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "link 1->2 carries chunk");
    tacos_sched_free(s);

    /* ... or one message (same start and end) too short for two chunks */
    s = make("ring:4", TACOS_ALLGATHER);
    i = first_with(s, 1, 2);
    x = s->xfers[i];
    x.chunk = (x.chunk + 1) % 4;
    insert(s, i + 1, x);
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "link 1->2 takes");
    CHECK(strstr(tacos_last_error(), "of its message's 2 chunks"), "%s", tacos_last_error());
    tacos_sched_free(s);

    /* sending a chunk the sender does not hold yet */
    s = make("uniring:4", TACOS_ALLGATHER);
    s->xfers[0].chunk = (s->xfers[0].src + 2) % 4; /* at t=0 NPU src holds only its own */
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "does not hold it");
    tacos_sched_free(s);

    /* a contribution reduced twice: repeat the last reduction into an owner */
    s = make("uniring:3", TACOS_REDUCE_SCATTER);
    x = s->xfers[s->nxfers - 1];
    double d = x.end_us - x.start_us;
    x.start_us = s->time_us;
    x.end_us = s->time_us + d;
    insert(s, s->nxfers, x);
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "twice");
    tacos_sched_free(s);

    /* postconditions: a missing copy, a missing contribution */
    s = make("ring:4", TACOS_ALLGATHER);
    s->nxfers--;
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "never receives chunk");
    tacos_sched_free(s);
    s = make("fc:4", TACOS_ALLREDUCE);
    for (i = 0; i < s->nxfers && !s->xfers[i].reduce; i++)
        ;
    memmove(s->xfers + i, s->xfers + i + 1, (--s->nxfers - i) * sizeof *s->xfers); /* drop it */
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "lacking the contribution of rank");
    tacos_sched_free(s);

    /* only the last rank's contribution missing: the last word of the sets,
     * partial (70) and full (128) */
    const char *rings[] = {"ring:70", "ring:128"};
    for (int k = 0; k < 2; k++) {
        s = make(rings[k], TACOS_ALLREDUCE);
        for (i = 0; i < s->nxfers && !(s->xfers[i].src == s->npus - 1 && s->xfers[i].reduce &&
                                       s->xfers[i].start_us == 0);
             i++)
            ;
        CHECK(i < s->nxfers, "%s: no reduction from the last rank at t=0", rings[k]);
        memmove(s->xfers + i, s->xfers + i + 1, (--s->nxfers - i) * sizeof *s->xfers);
        CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "lacking the contribution of rank");
        char want[64];
        snprintf(want, sizeof want, "contribution of rank %d", s->npus - 1);
        CHECK(strstr(tacos_last_error(), want), "%s: %s", rings[k], tacos_last_error());
        tacos_sched_free(s);
    }

    /* a reduction in a collective that reduces nothing; a flag of 2 */
    s = make("ring:4", TACOS_ALLGATHER);
    s->xfers[1].reduce = 1;
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "allgather reduces nothing");
    tacos_sched_free(s);
    s = make("ring:4", TACOS_ALLREDUCE);
    s->xfers[1].reduce = 2;
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "reduce 2");
    tacos_sched_free(s);

    /* malformed transfers and headers */
    s = make("ring:4", TACOS_ALLGATHER);
    s->xfers[2].chunk = 99;
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "out of range");
    s->xfers[2].chunk = 0;
    s->npus = 5;
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "header");
    tacos_sched_free(s);

    /* two violations: the earlier one is reported */
    s = make("uniring:5", TACOS_ALLGATHER);
    size_t last = s->nxfers - 1;
    s->xfers[last].dst = (s->xfers[last].src + 2) % 5; /* late: no link */
    s->xfers[1].chunk = (s->xfers[1].src + 3) % 5;     /* t=0: not held */
    CHECK_ERR(tacos_sched_validate(s), TACOS_ERR_INVALID, "transfer 1: NPU");
    tacos_sched_free(s);
    return check_report("test_validate");
}
