/* SPDX-License-Identifier: BSD-3-Clause */
/* libtacos-probe: hwloc XML machines (real exports, tests/fixtures/hwloc),
 * UCX present and absent, records from several ranks merged into
 * topologies, bad input. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "tacos_probe.h"

#define XML(name) FIXTURES "/hwloc/" name ".xml"

static int near(double a, double b) { return fabs(a - b) < 1e-6 * (1 + fabs(b)); }

/* The link src->dst of a finalized topology, or NULL. */
static const tacos_link_t *link_of(const tacos_topo_t *t, int s, int d)
{
    long i = tacos_topo_find_link(t, s, d);
    return i < 0 ? NULL : &t->links[i];
}

#define CHECK_LINK(t, s, d, lat, bw)                                                          \
    do {                                                                                      \
        const tacos_link_t *l_ = link_of(t, s, d);                                            \
        CHECK(l_ && near(l_->lat_us, lat) && near(l_->bw_gbps, bw),                           \
              "link %d->%d: %s lat %g bw %g, want %g %g", s, d, l_ ? "has" : "missing",       \
              l_ ? l_->lat_us : 0, l_ ? l_->bw_gbps : 0, (double)(lat), (double)(bw));        \
    } while (0)

static tacos_probe_opts_t xml_opts(const char *path)
{
    tacos_probe_opts_t o;
    tacos_probe_opts_init(&o);
    o.hwloc_xml = path;
    o.ucx_lib = "";
    o.hostname = "node0";
    return o;
}

/* DGX-2: 16 V100 behind 12 NVSwitches, 6 links of 25 GB/s per GPU. */
static void test_dgx2(void)
{
    tacos_probe_opts_t o = xml_opts(XML("nvidiaDGX2"));
    tacos_probe_record_t r[16];
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK_OK(tacos_probe_host(&o, 16, r));
    for (int i = 0; i < 16; i++) {
        CHECK(r[i].machine_src == TACOS_SRC_HWLOC && r[i].host_gpus == 16 && r[i].gpu == i,
              "rank %d: gpu %d of %d", i, r[i].gpu, r[i].host_gpus);
        CHECK(near(r[i].nvswitch_gbps, 150) && r[i].nvlink_src == TACOS_SRC_HWLOC,
              "rank %d: NVSwitch %g GB/s", i, r[i].nvswitch_gbps);
        for (int j = 0; j < 16; j++)
            CHECK(r[i].nvlink_gbps[j] == 0, "GPU %d has a direct link to %d", i, j);
        CHECK(r[i].package == (i < 8 ? 0 : 1) && r[i].gpu_package == (i < 8 ? 0 : 1),
              "rank %d bound in package %d, GPU in %d", i, r[i].package, r[i].gpu_package);
    }
    CHECK(!strcmp(r[0].gpu_busid, "0000:34:00.0"), "GPU 0 is %s", r[0].gpu_busid);
    CHECK(strcmp(r[0].gpu_busid, r[1].gpu_busid) < 0, "bus order");
    tacos_topo_t *t = NULL;
    CHECK_OK(tacos_probe_merge(r, 16, 0, 0, &t));
    if (t) { /* the fabric as one switch of 16, unwound d=15: 150/15 each way */
        CHECK(t->npus == 16 && t->nlinks == 240, "%d NPUs %zu links", t->npus, t->nlinks);
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++)
                if (i != j)
                    CHECK_LINK(t, i, j, 1.0, 10.0);
    }
    tacos_topo_free(t);
    /* CUDA_VISIBLE_DEVICES: indices and UUID prefixes; an invalid entry ends the list */
    tacos_probe_record_t one;
    o.cuda_visible_devices = "3,5";
    o.local_rank = 1;
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.gpu == 5, "local rank 1 of '3,5' uses GPU %d", one.gpu);
    o.cuda_visible_devices = "GPU-d3977428";
    o.local_rank = 0;
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.gpu == 0, "UUID prefix picks GPU %d", one.gpu);
    o.cuda_visible_devices = "99,1";
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.gpu == -1, "invalid first entry: GPU %d", one.gpu);
    o.cuda_visible_devices = NULL;
    o.local_rank = -1;
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.gpu == -1 && one.nvswitch_gbps == 0, "no GPU asked for");
}

/* POWER8: GPU pairs (0,1) and (2,3) joined by 40 GB/s NVLink, each pair on
 * its own package. */
static void test_power8(void)
{
    tacos_probe_opts_t o = xml_opts(XML("power8gpudistances"));
    tacos_probe_record_t r[4];
    CHECK_OK(tacos_probe_host(&o, 4, r));
    int peer[4] = {1, 0, 3, 2};
    for (int i = 0; i < 4; i++) {
        CHECK(r[i].gpu == i && r[i].host_gpus == 4 && r[i].nvswitch_gbps == 0, "rank %d", i);
        for (int j = 0; j < 4; j++)
            CHECK(near(r[i].nvlink_gbps[j], j == peer[i] ? 40 : 0), "GPU %d->%d: %g", i, j,
                  r[i].nvlink_gbps[j]);
        CHECK(r[i].package == i / 2 && r[i].gpu_package == i / 2, "rank %d in package %d, GPU in %d",
              i, r[i].package, r[i].gpu_package);
    }
    tacos_topo_t *t = NULL;
    CHECK_OK(tacos_probe_merge(r, 4, 0, 0, &t));
    if (t) {
        double xpkg = 10.0 / 3 * 0.5; /* shared memory, d=3, across packages */
        CHECK_LINK(t, 0, 1, 1.0, 40);
        CHECK_LINK(t, 3, 2, 1.0, 40);
        CHECK_LINK(t, 0, 2, 0.7, xpkg);
        CHECK_LINK(t, 1, 3, 0.7, xpkg);
        CHECK(t->nlinks == 12, "%zu links", t->nlinks);
    }
    tacos_topo_free(t);
}

/* CPU nodes: packages, NUMA nodes, cores and NICs of simulated bindings. */
static void test_cpu_nodes(void)
{
    tacos_probe_opts_t o = xml_opts(XML("24em64t-2n6c2t-pci"));
    tacos_probe_record_t r[4], one;
    o.local_rank = -1;
    o.cpuset = "0";
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.package == 0 && one.numa == 0 && one.ncores == 1 && one.host_packages == 2,
          "PU 0: package %d numa %d cores %d", one.package, one.numa, one.ncores);
    CHECK(one.nnics == 4 && !strcmp(one.nics[0], "mlx4_0"), "NICs near PU 0: %d, %s", one.nnics,
          one.nics[0]);
    o.cpuset = "23";
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.package == 1 && one.numa == 1 && one.nnics == 0, "PU 23: package %d numa %d",
          one.package, one.numa);
    o.cpuset = NULL; /* a saved machine: bound to all of it */
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.package == -1 && one.numa == -1 && one.ncores == 12, "unbound: %d %d %d",
          one.package, one.numa, one.ncores);
    CHECK_OK(tacos_probe_host(&o, 4, r));
    for (int i = 0; i < 4; i++)
        CHECK(r[i].package == i / 2 && r[i].ncores == 3 && r[i].gpu == -1, "rank %d: %d %d", i,
              r[i].package, r[i].ncores);
    tacos_topo_t *t = NULL;
    CHECK_OK(tacos_probe_merge(r, 4, 0, 0, &t));
    if (t) {
        CHECK_LINK(t, 0, 1, 0.5, 10.0 / 3);
        CHECK_LINK(t, 2, 3, 0.5, 10.0 / 3);
        CHECK_LINK(t, 1, 2, 0.7, 10.0 / 6);
    }
    tacos_topo_free(t);

    o = xml_opts(XML("32em64t-2n8c2t-pci-normalio"));
    o.cpuset = "0";
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.nnics == 0 && one.host_gpus == 4, "package 0: %d NICs, %d GPUs", one.nnics,
          one.host_gpus);
    o.cpuset = "31";
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.nnics == 4 && !strcmp(one.nics[0], "mlx5_0") && one.package == 1,
          "package 1: %d NICs, first %s", one.nnics, one.nics[0]);

    o = xml_opts(XML("96em64t-4n4d3ca2co-pci"));
    o.local_rank = 0;
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.host_gpus == 0 && one.gpu == -1 && one.ncores == 96,
          "on-board VGA is no GPU: %d GPUs, %d cores", one.host_gpus, one.ncores);
    o = xml_opts(XML("16amd64-4distances"));
    o.cpuset = "0";
    CHECK_OK(tacos_probe_local(&o, &one));
    CHECK(one.package == 0 && one.numa == 0 && one.host_packages == 8, "AMD: %d %d %d",
          one.package, one.numa, one.host_packages);
}

static void test_bad_input(void)
{
    const char *tmp = getenv("TACOS_TMP") ? getenv("TACOS_TMP") : ".";
    char path[4096];
    tacos_probe_record_t r;
    tacos_probe_opts_t o = xml_opts(FIXTURES "/hwloc/missing.xml");
    CHECK_ERR(tacos_probe_local(&o, &r), TACOS_ERR_IO, "missing.xml: No such file");
    CHECK(r.machine_src == TACOS_SRC_DEFAULT && r.package == -1 && r.gpu == -1 &&
              r.cls[TACOS_CLASS_SHM].src == TACOS_SRC_DEFAULT,
          "defaults after a failed probe");
    snprintf(path, sizeof path, "%s/corrupt.xml", tmp); /* the first 3000 bytes of a machine */
    FILE *in = fopen(XML("nvidiaDGX2"), "r"), *out = fopen(path, "w");
    char buf[3000];
    size_t got = in ? fread(buf, 1, sizeof buf, in) : 0;
    CHECK(in && out && got == sizeof buf && fwrite(buf, 1, got, out) == got, "writing %s", path);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    o.hwloc_xml = path;
    CHECK_ERR(tacos_probe_local(&o, &r), TACOS_ERR_PARSE, "corrupt.xml");
    CHECK(r.machine_src == TACOS_SRC_DEFAULT && r.host_gpus == 0, "defaults after corrupt XML");
    o = xml_opts(XML("nvidiaDGX2"));
    o.cpuset = "zz";
    CHECK_ERR(tacos_probe_local(&o, &r), TACOS_ERR_ARG, "not a PU list");
    o.cpuset = "1000";
    CHECK_ERR(tacos_probe_local(&o, &r), TACOS_ERR_ARG, "no PU of");
    /* UCX absent at run time: default figures, a message */
    o = xml_opts(XML("nvidiaDGX2"));
    o.ucx_lib = "/nonexistent/libuct.so.0";
    CHECK_ERR(tacos_probe_local(&o, &r), TACOS_ERR_IO, "UCX unavailable");
    CHECK(r.machine_src == TACOS_SRC_HWLOC && r.cls[TACOS_CLASS_NET].src == TACOS_SRC_DEFAULT &&
              near(r.cls[TACOS_CLASS_NET].bw_gbps, 12.5),
          "UCX absent keeps the hwloc facts and default figures");
}

/* UCX is installed with the project (libucx0): its shared-memory transport
 * answers on any Linux machine. */
static void test_ucx(void)
{
    tacos_probe_opts_t o = xml_opts(XML("24em64t-2n6c2t-pci"));
    o.ucx_lib = NULL;
    tacos_probe_record_t r;
    CHECK_OK(tacos_probe_local(&o, &r));
    const tacos_probe_link_class_t *c = &r.cls[TACOS_CLASS_SHM];
    CHECK(c->src == TACOS_SRC_UCX && c->bw_gbps > 0 && c->lat_us >= 0 && c->transport[0],
          "shared memory from UCX: source %s, %g us, %g GB/s, '%s'", tacos_probe_src_name(c->src),
          c->lat_us, c->bw_gbps, c->transport);
    char *json = NULL;
    CHECK_OK(tacos_probe_record_to_json(&r, &json));
    CHECK(json && strstr(json, "\"source\":\t\"UCX\"") && strstr(json, "\"host\":\t\"node0\""),
          "record JSON: %s", json ? json : "(null)");
    free(json);
}

/* Synthetic records: hosts given by name, figures from the defaults. */
static void make(tacos_probe_record_t *r, const char *host, int gpu)
{
    tacos_probe_record_default(r, host);
    r->gpu = gpu;
}

static void check_synthesizes(tacos_topo_t *t)
{
    tacos_synth_opts_t so = {TACOS_ALLREDUCE, 0, 2, 1 << 20, 1, 1, 0, 0};
    tacos_sched_t *s = NULL;
    CHECK_OK(tacos_topo_check_connected(t));
    CHECK_OK(tacos_synthesize(t, &so, &s));
    if (s)
        CHECK_OK(tacos_sched_validate(s));
    tacos_sched_free(s);
}

static void test_merge(void)
{
    tacos_probe_record_t r[6];
    tacos_topo_t *t = NULL;
    /* 1 host x 4 ranks: one switch unwound d=3 (or the degree asked for) */
    for (int i = 0; i < 4; i++)
        make(&r[i], "a", -1);
    CHECK_OK(tacos_probe_merge(r, 4, 0, 0, &t));
    if (t) {
        CHECK(t->nlinks == 12 && !strcmp(t->name, "probed:1host"), "%zu links, %s", t->nlinks,
              t->name);
        CHECK_LINK(t, 3, 0, 0.5, 10.0 / 3);
        check_synthesizes(t);
    }
    tacos_topo_free(t);
    CHECK_OK(tacos_probe_merge(r, 4, 1, 0, &t));
    if (t) {
        CHECK(t->nlinks == 4, "d=1: %zu links", t->nlinks);
        CHECK_LINK(t, 3, 0, 0.5, 10.0);
    }
    tacos_topo_free(t);
    /* 2 hosts x 2 ranks: host links, and rank l of each host on switch l */
    make(&r[0], "a", -1), make(&r[1], "a", -1), make(&r[2], "b", -1), make(&r[3], "b", -1);
    CHECK_OK(tacos_probe_merge(r, 4, 0, 0, &t));
    if (t) {
        CHECK(t->nlinks == 8 && !strcmp(t->name, "probed:2hosts"), "%zu links", t->nlinks);
        CHECK_LINK(t, 0, 1, 0.5, 10);
        CHECK_LINK(t, 0, 2, 2.0, 12.5 / 2); /* two ranks share the host's NIC */
        CHECK_LINK(t, 3, 1, 2.0, 12.5 / 2);
        CHECK(!link_of(t, 0, 3), "no link across hosts and local indices");
        check_synthesizes(t);
    }
    tacos_topo_free(t);
    /* 3 hosts with 1, 2 and 3 ranks, interleaved in rank order */
    const char *hosts[6] = {"c", "b", "a", "c", "b", "c"};
    for (int i = 0; i < 6; i++)
        make(&r[i], hosts[i], -1);
    CHECK_OK(tacos_probe_merge(r, 6, 0, 0, &t));
    if (t) {
        /* local 0: ranks 0,1,2 as a ring; local 1: 3,4; local 2: 5 alone */
        CHECK_LINK(t, 0, 1, 2.0, 12.5 / 3); /* host c's NIC shared by 3 */
        CHECK_LINK(t, 1, 2, 2.0, 12.5 / 2);
        CHECK_LINK(t, 2, 0, 2.0, 12.5 / 3);
        CHECK_LINK(t, 3, 4, 2.0, 12.5 / 3);
        CHECK_LINK(t, 0, 5, 0.5, 10.0 / 2); /* host c: 3 ranks, d=2 */
        CHECK(!link_of(t, 5, 2) && !link_of(t, 2, 5), "rank 5 has no network link");
        check_synthesizes(t);
    }
    tacos_topo_free(t);
    /* a network switch of up to 8 hosts is a ring; of more, each host is
     * joined to the next 8 (tacos_switch_auto_degree), each link an eighth
     * of the port; the degree asked for wins */
    tacos_probe_record_t many[12];
    for (int hosts = 8; hosts <= 12; hosts += 4) {
        for (int i = 0; i < hosts; i++) {
            char name[8];
            snprintf(name, sizeof name, "h%d", i);
            make(&many[i], name, -1);
        }
        int d = hosts > 8 ? 8 : 1;
        CHECK_OK(tacos_probe_merge(many, hosts, 0, 0, &t));
        if (t) {
            CHECK(t->nlinks == (size_t)(hosts * d), "%d hosts: %zu links, want %d", hosts,
                  t->nlinks, hosts * d);
            CHECK_LINK(t, 0, d, 2.0, 12.5 / d);
            CHECK(!link_of(t, 0, d + 1), "%d hosts: degree above %d", hosts, d);
        }
        tacos_topo_free(t);
        CHECK_OK(tacos_probe_merge(many, hosts, 2, 0, &t));
        if (t)
            CHECK(t->nlinks == (size_t)(hosts * 2), "%d hosts, d=2: %zu links", hosts, t->nlinks);
        tacos_topo_free(t);
    }
    /* ranks on separate NICs do not share them */
    make(&r[0], "a", -1), make(&r[1], "a", -1), make(&r[2], "b", -1), make(&r[3], "b", -1);
    for (int i = 0; i < 4; i++) {
        r[i].nnics = 1;
        snprintf(r[i].nics[0], sizeof r[i].nics[0], "mlx5_%d", i % 2);
    }
    CHECK_OK(tacos_probe_merge(r, 4, 0, 0, &t));
    if (t)
        CHECK_LINK(t, 1, 3, 2.0, 12.5);
    tacos_topo_free(t);
    /* GPU and CPU ranks mixed on one host, a host without GPUs beside it */
    const char *mixed[5] = {"g", "g", "g", "g", "cpu"};
    for (int i = 0; i < 5; i++)
        make(&r[i], mixed[i], i < 2 ? i : -1);
    r[0].nvlink_gbps[1] = r[1].nvlink_gbps[0] = 50;
    CHECK_OK(tacos_probe_merge(r, 5, 0, 0, &t));
    if (t) {
        CHECK_LINK(t, 0, 1, 1.0, 50);      /* NVLink beats shared memory */
        CHECK_LINK(t, 0, 2, 0.5, 10.0 / 3); /* a CPU rank: shared memory */
        CHECK_LINK(t, 0, 4, 2.0, 12.5 / 4);
        check_synthesizes(t);
    }
    tacos_topo_free(t);
    /* the default model ignores everything but the hosts */
    CHECK_OK(tacos_probe_merge(r, 5, 0, 1, &t));
    if (t) {
        CHECK(!strcmp(t->name, "default:2hosts"), "%s", t->name);
        CHECK_LINK(t, 0, 1, 0.5, 10.0 / 3);
    }
    tacos_topo_free(t);
    /* a single rank */
    CHECK_OK(tacos_probe_merge(r, 1, 0, 0, &t));
    if (t)
        CHECK(t->npus == 1 && t->nlinks == 0, "one rank: %zu links", t->nlinks);
    tacos_topo_free(t);
    /* records of another version: refused, the default model still works */
    r[2].version = 99;
    t = NULL;
    CHECK_ERR(tacos_probe_merge(r, 5, 0, 0, &t), TACOS_ERR_PARSE, "rank 2 has version 99");
    CHECK(t == NULL, "no topology on error");
    CHECK_OK(tacos_probe_merge(r, 5, 0, 1, &t));
    tacos_topo_free(t);
    CHECK_ERR(tacos_probe_merge(r, 0, 0, 0, &t), TACOS_ERR_ARG, "no records");
    char summary[512];
    tacos_probe_summary(r, 5, summary, sizeof summary);
    CHECK(strstr(summary, "5 rank(s) on 2 host(s), 1-4 per host, 2 with a GPU") &&
              strstr(summary, "shm 0.5 us 10 GB/s (default)"),
          "summary: %s", summary);
}

int main(void)
{
    test_dgx2();
    test_power8();
    test_cpu_nodes();
    test_bad_input();
    test_ucx();
    test_merge();
    return check_report("test_probe");
}
