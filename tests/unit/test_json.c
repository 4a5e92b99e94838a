/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON I/O: topology and schedule round trips, fixtures, and clear errors
 * for malformed input. */
#include <stdlib.h>

#include "check.h"

static char path_buf[512];
static const char *tmp_path(const char *name)
{
    const char *dir = getenv("TACOS_TMP");
    snprintf(path_buf, sizeof path_buf, "%s/%s", dir ? dir : ".", name);
    return path_buf;
}

static int same_topo(const tacos_topo_t *a, const tacos_topo_t *b)
{
    if (a->npus != b->npus || a->nlinks != b->nlinks)
        return 0;
    for (size_t i = 0; i < a->nlinks; i++) {
        const tacos_link_t *x = &a->links[i];
        long j = tacos_topo_find_link(b, x->src, x->dst);
        if (j < 0 || b->links[j].lat_us != x->lat_us || b->links[j].bw_gbps != x->bw_gbps)
            return 0;
    }
    return 1;
}

/* (start, src, dst, chunk): the order a schedule's transfers are kept in */
static int by_start(const void *a, const void *b)
{
    const tacos_xfer_t *x = a, *y = b;
    if (x->start_us != y->start_us)
        return x->start_us < y->start_us ? -1 : 1;
    if (x->src != y->src)
        return x->src - y->src;
    return x->dst != y->dst ? x->dst - y->dst : x->chunk - y->chunk;
}

/* A schedule written with its transfers shuffled reads back sorted: many
 * transfers share a start (a torus, every link alike), over several merge
 * widths; checked against qsort here. */
static void read_sorts(void)
{
    double bw = 50, lat = 0.5;
    tacos_topo_t *t = NULL;
    tacos_sched_t *s = NULL, *r = NULL;
    tacos_synth_opts_t o = {TACOS_ALLREDUCE, 0, 4, 1 << 20, 1, 1, 0, 0};
    CHECK_OK(tacos_topo_generate("torus2d:4x4", &bw, 1, &lat, 1, 1, &t));
    CHECK_OK(tacos_synthesize(t, &o, &s));
    if (!s) {
        tacos_topo_free(t);
        return;
    }
    srand(7);
    for (size_t i = s->nxfers; i > 1; i--) {
        size_t j = (size_t)rand() % i;
        tacos_xfer_t x = s->xfers[i - 1];
        s->xfers[i - 1] = s->xfers[j], s->xfers[j] = x;
    }
    CHECK_OK(tacos_sched_write_file(s, tmp_path("shuffled.json")));
    CHECK_OK(tacos_sched_read_file(tmp_path("shuffled.json"), &r));
    qsort(s->xfers, s->nxfers, sizeof *s->xfers, by_start);
    CHECK(s->nxfers > 1000 && r && r->nxfers == s->nxfers &&
              memcmp(r->xfers, s->xfers, s->nxfers * sizeof *s->xfers) == 0,
          "shuffled schedule of %zu transfers read back in start order", s->nxfers);
    tacos_sched_free(r);
    tacos_sched_free(s);
    tacos_topo_free(t);
}

static void expect_bad_topo(const char *text, int code, const char *needle)
{
    tacos_topo_t *t = NULL;
    CHECK_ERR(tacos_topo_from_json(text, "bad.json", &t), code, needle);
    CHECK(strncmp(tacos_last_error(), "bad.json", 8) == 0, "message names the file: %s",
          tacos_last_error());
    CHECK(t == NULL, "no topology on error");
}

int main(void)
{
    if (getenv("TACOS_TMP"))
        (void)!system("mkdir -p \"$TACOS_TMP\"");
    /* topology round trip, heterogeneous links included */
    double bw[3] = {200, 100, 50}, lat[3] = {0.5, 0.75, 1.25};
    tacos_topo_t *t = NULL, *u = NULL;
    CHECK_OK(tacos_topo_generate("rfs:2x4x3", bw, 3, lat, 3, 2, &t));
    CHECK_OK(tacos_topo_write_file(t, tmp_path("rfs.json")));
    CHECK_OK(tacos_topo_read_file(tmp_path("rfs.json"), &u));
    CHECK(u && same_topo(t, u) && strcmp(u->name, "rfs:2x4x3") == 0, "topology round trip");
    tacos_topo_free(u);

    /* schedule round trip: identical transfers, validated on read */
    tacos_synth_opts_t o = {TACOS_ALLREDUCE, 0, 2, 1000, 3, 2, 0, 0};
    tacos_sched_t *s = NULL, *r = NULL;
    CHECK_OK(tacos_synthesize(t, &o, &s));
    CHECK_OK(tacos_sched_write_file(s, tmp_path("ar.json")));
    CHECK_OK(tacos_sched_read_file(tmp_path("ar.json"), &r));
    CHECK(r && r->nxfers == s->nxfers && r->coll == s->coll && r->size_bytes == 1000 &&
              r->chunks_per_npu == 2 &&
              memcmp(r->xfers, s->xfers, s->nxfers * sizeof *s->xfers) == 0 &&
              same_topo(r->topo, t),
          "schedule round trip");
    tacos_sched_free(r);
    tacos_sched_free(s);
    tacos_topo_free(t);
    read_sorts();

    /* fixtures: generator with failed NPUs; links + switches with defaults */
    CHECK_OK(tacos_topo_read_file(FIXTURES "/mesh4x4_failed.json", &t));
    CHECK(t && t->npus == 14 && t->nlinks == 32, "failed mesh: %d NPUs", t ? t->npus : -1);
    tacos_topo_free(t);
    CHECK_OK(tacos_topo_read_file(FIXTURES "/two_hosts.json", &t));
    if (t) {
        long l = tacos_topo_find_link(t, 0, 4);
        CHECK(t->nlinks == 16 + 4 && l >= 0 && t->links[l].bw_gbps == 25 &&
                  t->links[l].lat_us == 3.0,
              "two hosts: %zu links", t->nlinks);
        l = tacos_topo_find_link(t, 1, 0);
        CHECK(l >= 0 && t->links[l].bw_gbps == 150 && t->links[l].lat_us == 0.7,
              "defaults apply to links");
    }
    tacos_topo_free(t);

    /* malformed topologies */
    expect_bad_topo("{\"npus\": 4, \"links\": [", TACOS_ERR_PARSE, "malformed JSON");
    expect_bad_topo("[1,2]", TACOS_ERR_PARSE, "must be a JSON object");
    expect_bad_topo("{\"npus\": 4}", TACOS_ERR_PARSE, "needs 'generator'");
    expect_bad_topo("{\"npus\": \"four\", \"links\": []}", TACOS_ERR_PARSE, "'npus' must be a number");
    expect_bad_topo("{\"npus\": 0, \"links\": []}", TACOS_ERR_ARG, "1 to 65536 NPUs");
    expect_bad_topo("{\"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 1}]}", TACOS_ERR_PARSE,
                    "links[0]: missing field 'lat_us'");
    expect_bad_topo("{\"npus\": 2, \"lat_us\": 1, \"bw_gbps\": 1, \"links\": [{\"src\": 0, "
                    "\"dst\": 2}]}",
                    TACOS_ERR_ARG, "links[0]: link 0->2");
    expect_bad_topo("{\"npus\": 2, \"lat_us\": 1, \"links\": [{\"src\": 0, \"dst\": 1, "
                    "\"bw_gbps\": -5}]}",
                    TACOS_ERR_ARG, "bandwidth must be > 0");
    expect_bad_topo("{\"npus\": 2, \"lat_us\": 1, \"bw_gbps\": 1, \"links\": [{\"src\": 0.5, "
                    "\"dst\": 1}]}",
                    TACOS_ERR_PARSE, "'src' must be an integer");
    expect_bad_topo("{\"generator\": \"mesh9d:2\"}", TACOS_ERR_PARSE, "field 'generator'");
    expect_bad_topo("{\"generator\": \"ring:4\", \"failed_npus\": [7]}", TACOS_ERR_ARG,
                    "failed NPU 7");
    expect_bad_topo("{\"npus\": 3, \"lat_us\": 1, \"bw_gbps\": 1, \"switches\": [{\"npus\": "
                    "[0, 1, 5]}]}",
                    TACOS_ERR_ARG, "switches[0]");
    expect_bad_topo("{\"format\": \"other\", \"generator\": \"ring:4\"}", TACOS_ERR_PARSE,
                    "'format'");
    CHECK_ERR(tacos_topo_read_file("/nonexistent/topo.json", &t), TACOS_ERR_IO,
              "/nonexistent/topo.json: cannot open");

    /* malformed and invalid schedules */
    CHECK_ERR(tacos_sched_from_json("{", "s.json", &s), TACOS_ERR_PARSE, "s.json: malformed");
    CHECK_ERR(tacos_sched_from_json("{\"format\":\"tacos-schedule\",\"collective\":\"gossip\"}",
                                    "s.json", &s),
              TACOS_ERR_ARG, "unknown collective 'gossip'");
    const char *head = "{\"format\":\"tacos-schedule\",\"collective\":\"allgather\",\"npus\":2,"
                       "\"chunks_per_npu\":1,\"size_bytes\":2000,"
                       "\"topology\":{\"generator\":\"ring:2\"},\"transfers\":";
    char text[1024];
    snprintf(text, sizeof text, "%s[[0,0,1,0,10.5,0],[1,1,0,0,10.5,0]]}", head);
    CHECK_OK(tacos_sched_from_json(text, "s.json", &s));
    tacos_sched_free(s);
    snprintf(text, sizeof text, "%s[[0,0,1,0,10.5,0]]}", head);
    CHECK_ERR(tacos_sched_from_json(text, "s.json", &s), TACOS_ERR_INVALID,
              "NPU 0 never receives chunk 1");
    snprintf(text, sizeof text, "%s[[0,0,1,0,10.5]]}", head);
    CHECK_ERR(tacos_sched_from_json(text, "s.json", &s), TACOS_ERR_PARSE, "transfers[0] must be");
    snprintf(text, sizeof text, "%s[[0,0,1,0,0.51,0],[1,1,0,0,0.51,0]]}", head);
    CHECK_ERR(tacos_sched_from_json(text, "s.json", &s), TACOS_ERR_INVALID,
              "less than the link time");

    /* sizes refused before anything is allocated (each of these once took
     * seconds and gigabytes) */
    expect_bad_topo("{\"npus\": 100000000, \"lat_us\": 1, \"bw_gbps\": 1, \"links\": []}",
                    TACOS_ERR_ARG, "1 to 65536 NPUs, not 100000000");
    {
        char *big = malloc(64 * 5000 + 256);
        int at = sprintf(big, "{\"npus\": 5000, \"lat_us\": 1, \"bw_gbps\": 1, "
                              "\"unwind_degree\": 4999, \"switches\": [{\"npus\": [0");
        for (int i = 1; i < 5000; i++)
            at += sprintf(big + at, ",%d", i);
        sprintf(big + at, "]}]}");
        expect_bad_topo(big, TACOS_ERR_ARG, "more than the 1048576 a topology may have");
        free(big);
    }
    snprintf(text, sizeof text,
             "{\"format\":\"tacos-schedule\",\"collective\":\"allgather\",\"npus\":2,"
             "\"chunks_per_npu\":1,\"root\":1e300,\"size_bytes\":2000,"
             "\"topology\":{\"generator\":\"ring:2\"},\"transfers\":[]}");
    CHECK_ERR(tacos_sched_from_json(text, "s.json", &s), TACOS_ERR_PARSE,
              "'root' must be an integer from 0 to 2^53");
    /* 16000 NPUs and a few transfers: the validator's memory follows the
     * schedule (it took npus^2/8 bytes per chunk: 91 s) */
    snprintf(text, sizeof text,
             "{\"format\":\"tacos-schedule\",\"collective\":\"allgather\",\"npus\":16000,"
             "\"chunks_per_npu\":1,\"size_bytes\":2000,"
             "\"topology\":{\"generator\":\"ring:16000\"},\"transfers\":[[0,0,1,0,10.5,0]]}");
    CHECK_ERR(tacos_sched_from_json(text, "s.json", &s), TACOS_ERR_INVALID,
              "NPU 2 never receives chunk 0");
    /* the component's reader: a file for another communicator size is
     * refused before its links are read */
    CHECK_OK(tacos_topo_generate("rfs:2x4x3", bw, 3, lat, 3, 2, &t));
    CHECK_OK(tacos_topo_write_file(t, tmp_path("rfs24.json")));
    tacos_topo_free(t);
    CHECK_ERR(tacos_topo_read_file_npus(tmp_path("rfs24.json"), 4, &u), TACOS_ERR_TOPO,
              "describes 24 NPUs, not 4");
    CHECK_OK(tacos_topo_read_file_npus(tmp_path("rfs24.json"), 24, &u));
    tacos_topo_free(u);
    return check_report("test_json");
}
