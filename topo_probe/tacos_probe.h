/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libtacos-probe: what one rank sees of the machine (hwloc: host, package,
 * NUMA node, cores, GPU, NVLink, NICs; NVML when present; UCX: transport
 * latency and bandwidth), as one fixed-size record, and the merge of every
 * rank's record into a synth topology.  No MPI in here: the caller exchanges
 * the records (one allgather of sizeof(tacos_probe_record_t) bytes each).
 *
 * Conventions as in tacos_synth.h: TACOS_OK or TACOS_ERR_*, the message in
 * tacos_last_error().
 */
#ifndef TACOS_PROBE_H
#define TACOS_PROBE_H

#include <stdint.h>

#include "tacos_synth.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TACOS_PROBE_VERSION 1
#define TACOS_PROBE_MAX_GPUS 32 /* per host */
#define TACOS_PROBE_MAX_NICS 4
#define TACOS_PROBE_NAME 64

/* Where a figure came from. */
typedef enum {
    TACOS_SRC_DEFAULT,
    TACOS_SRC_HWLOC,
    TACOS_SRC_NVML,
    TACOS_SRC_UCX,
    TACOS_SRC_CALIBRATION
} tacos_probe_src_t;
const char *tacos_probe_src_name(int src);

/* Link classes a rank can reach. */
enum {
    TACOS_CLASS_SHM,    /* another process on this host, host memory */
    TACOS_CLASS_NET,    /* a process on another host */
    TACOS_CLASS_NVLINK, /* another GPU over NVLink, per link or into the NVSwitch fabric */
    TACOS_NCLASSES
};
const char *tacos_probe_class_name(int cls);

typedef struct {
    double lat_us, bw_gbps;
    int32_t src;                     /* tacos_probe_src_t */
    char transport[TACOS_PROBE_NAME]; /* e.g. "posix/memory", "tcp/eth0", "" */
} tacos_probe_link_class_t;

typedef struct {
    /* header: the same layout in every version */
    uint32_t version; /* TACOS_PROBE_VERSION */
    uint32_t bytes;   /* sizeof(tacos_probe_record_t) */
    uint64_t host_id; /* hash of the host name */
    char host[TACOS_PROBE_NAME];
    int32_t machine_src; /* hwloc, or default when hwloc failed */
    /* binding: -1 when the process is not bound inside one object */
    int32_t package, numa, ncores;
    int32_t host_packages;
    /* GPU: index among the host's GPUs in PCI bus order, -1 none */
    int32_t gpu, host_gpus;
    int32_t gpu_package; /* the package the GPU hangs off, -1 unknown */
    char gpu_busid[16];
    int32_t nvlink_src; /* where nvlink_gbps/nvswitch_gbps came from */
    float nvlink_gbps[TACOS_PROBE_MAX_GPUS]; /* to host GPU j, point to point */
    float nvswitch_gbps; /* into an NVSwitch fabric, 0 = none */
    /* NICs near the binding, nearest (OpenFabrics first) first */
    int32_t nnics;
    char nics[TACOS_PROBE_MAX_NICS][16];
    tacos_probe_link_class_t cls[TACOS_NCLASSES];
} tacos_probe_record_t;

typedef struct {
    const char *hwloc_xml; /* NULL: this machine; else an exported hwloc XML */
    const char *cpuset;    /* NULL: this process's binding; else a PU list "0-5,12" */
    int slice, nslices;    /* nslices > 0 (and no cpuset): bound to the slice-th of
                            * nslices equal parts of the PUs (a simulated binding) */
    int local_rank;        /* which visible GPU this process uses (mod count) */
    const char *cuda_visible_devices; /* NULL: $CUDA_VISIBLE_DEVICES */
    const char *ucx_lib;   /* NULL: "libuct.so.0"; "": do not use UCX */
    int use_nvml;          /* read NVLink through libnvidia-ml.so.1 if present */
    const char *hostname;  /* NULL: gethostname() */
} tacos_probe_opts_t;

/* Defaults: this machine, its binding, local rank 0, UCX and NVML on. */
void tacos_probe_opts_init(tacos_probe_opts_t *o);

/* A record with the documented default figures and no hardware facts. */
void tacos_probe_record_default(tacos_probe_record_t *r, const char *hostname);

/* Probes this process.  *r is always filled (defaults where a source
 * failed); the return is TACOS_OK, or the error of the first source that
 * failed (hwloc: the record then carries defaults only; UCX: the link
 * classes keep their defaults). */
int tacos_probe_local(const tacos_probe_opts_t *o, tacos_probe_record_t *r);

/* Probes this host as nranks ranks: rank i has local rank i and is bound to
 * the i-th of nranks equal slices of the PUs (as mpirun --bind-to would);
 * UCX is asked once.  Returns as tacos_probe_local. */
int tacos_probe_host(const tacos_probe_opts_t *o, int nranks, tacos_probe_record_t *recs);

/* Checks that every record has this version and size. */
int tacos_probe_check(const tacos_probe_record_t *recs, int n);

/* Merges n ranks' records into a finalized topology of n NPUs (rank order).
 * unwind_degree 0 = automatic (shared memory and NVSwitch: members-1,
 * network: 1).  With defaults_only, only the host of each record is used
 * (the default model). */
int tacos_probe_merge(const tacos_probe_record_t *recs, int n, int unwind_degree,
                      int defaults_only, tacos_topo_t **out);

/* Host index of every rank (hosts numbered in order of first appearance)
 * and its local index on that host; returns the number of hosts. */
int tacos_probe_hosts(const tacos_probe_record_t *recs, int n, int *host, int *local);

/* ---- the network between hosts, measured (net.c) ------------------------ */

/* Message sizes of the bandwidth measurement: above Open MPI's TCP eager
 * limit (64 KiB), like the chunks that cross hosts. */
#define TACOS_NET_S1_BYTES (128 * 1024)
#define TACOS_NET_MAX_BYTES (4 << 20) /* the second size: at most this */

/* The measurement's phases, timed: the pairs' S1 rounds, their second
 * sizes (and the pairs measured again apart), the tests for shared paths
 * (the screens and the tests they let through), the reruns that confirm. */
#define TACOS_NET_PHASES 4
extern const char *const tacos_net_phase_names[TACOS_NET_PHASES];

/* What was measured between hosts (numbered as tacos_probe_hosts does). */
typedef struct {
    int nhosts;
    double *lat_us;  /* [a*nhosts+b]: a->b latency of the model */
    double *bw_gbps; /* [a*nhosts+b]: a->b bandwidth; 0 = no link (routed or a==b) */
    double *t_us;    /* [3*(a*nhosts+b)+k]: a's times with b: 8 B, S1, second size */
    double *s2_bytes; /* [a*nhosts+b]: the second size of the pair (S1 where S1 took long
                       * enough: then k = 2 is the S1 time) */
    unsigned char *routed; /* [a*nhosts+b]: 0 a link; c+1: a path through host c */
    int switched; /* 1: every host's port limited each of its tests and no pair is routed:
                   * hosts on one switch (tacos_probe_merge_net joins them as one) */
    double *port_slow; /* [2*host], [2*host+1]: its tests' least and mean slowdown (0: fewer
                        * than two ran), what says its port limits it (net.c port_limited) */
    int ntests;            /* concurrent tests run for shared paths (reruns too) */
    int test_steps;        /* the steps they ran in (tests without a host in common at once) */
    double measure_us;     /* time the measurement took */
    const char *note;      /* NULL, or what could not be separated */
    double phase_us[TACOS_NET_PHASES]; /* of measure_us: tacos_net_phase_names' */
} tacos_net_t;

/* How the measurement reaches the other ranks (the caller binds MPI).
 * exchange: this rank sends bytes[i] to each of peers[0..n) (n <= 2) and
 * receives bytes[i] (<= TACOS_NET_MAX_BYTES) from it, all at once; t_us[i] = microseconds until
 * the data from peers[i] arrived (a send may complete into the kernel's
 * socket buffer long before its data arrives), returning once everything
 * completed.  max: in-place element-wise
 * maximum of v[0..n) over every rank.  Both return 0 on success, and
 * both should wait as tacos_net_idle says (tests of their requests, not a
 * blocking wait that polls the network without a pause). */
typedef struct {
    void *ctx;
    int (*exchange)(void *ctx, const int *peers, int n, const size_t *bytes, double *t_us);
    int (*max)(void *ctx, double *v, int n);
} tacos_net_comm_t;

/* What an exchange or max of the measurement does between two tests of
 * its requests that found nothing done, `waited_us` after it started
 * waiting: nothing for the first TACOS_NET_SPIN_US (an 8-byte exchange's
 * time must not hold a sleep), then a nap of 20 us (about 70: the kernel's
 * default timer slack adds 50).  Busy-polling
 * ranks take the cores from the ranks whose messages are being timed: with
 * 4 ranks on 2 cores a rank whose last piece had arrived waited for a core,
 * and fast links measured up to 20 % low; with 2 ranks per host those not
 * measuring spun in the max and concurrent tests took direct links for
 * paths (see topo_probe/net.c). */
#define TACOS_NET_SPIN_US 1000.0
void tacos_net_idle(double waited_us);

/* A concurrent test: host x exchanges with y and z at once; slow = the
 * time until both ended divided by the longer of the two alone (0: not
 * run); slow_y, slow_z = each exchange's time divided by its time alone.
 * confirm (set by tacos_net_classify): the test is worth running again (a
 * path's end, or a triple whose pair would be a path but for the relay's
 * test).  screen (set by tacos_net_tests): the test runs first, the others
 * of its triple only if a screen is slowed. */
typedef struct {
    int x, y, z;
    double slow, slow_y, slow_z;
    int confirm, screen;
} tacos_net_test_t;

/* Collective over the n ranks of the records (this rank is `me`): the first
 * rank of each host measures every other host in tacos_net_rounds() rounds
 * plus the tests for shared paths; every rank gets the same *net (free with
 * tacos_net_free).  One host: nhosts 1, nothing measured. */
int tacos_net_measure(const tacos_probe_record_t *recs, int n, int me, const tacos_net_comm_t *c,
                      tacos_net_t *net);
void tacos_net_free(tacos_net_t *net);

/* One line per pair of hosts, by host name: "h0 - h1: 26.3 us 0.0362 GB/s
 * (measured)" or "h0 - h2: a path through h1 (...)", and one more where
 * the hosts are on one switch (malloc'd text). */
int tacos_net_describe(const tacos_probe_record_t *recs, int n, const tacos_net_t *net,
                       char **out);

/* The steps of tacos_net_measure, for tests and offline use. */
int tacos_net_alloc(tacos_net_t *net, int nhosts);
int tacos_net_rounds(int nhosts);
int tacos_net_partner(int nhosts, int round, int host); /* -1: no partner this round */
int tacos_net_fit(tacos_net_t *net, size_t s1); /* t_us, s2_bytes -> lat_us, bw_gbps */
int tacos_net_tests(const tacos_net_t *net, tacos_net_test_t **tests, int *ntests);
void tacos_net_classify(tacos_net_t *net, tacos_net_test_t *tests, int ntests);
void tacos_net_classes(tacos_net_t *net); /* links of one class take its mean α, β */

/* tacos_probe_merge with the links between hosts taken from `net` (NULL:
 * the network switch of the records): for each pair of hosts A, B with a
 * link, the ranks with local index l < min(ranks of A, ranks of B) are
 * joined, each with 1/min(...) of the measured bandwidth. */
int tacos_probe_merge_net(const tacos_probe_record_t *recs, int n, int unwind_degree,
                          int defaults_only, const tacos_net_t *net, tacos_topo_t **out);

/* ---- Slurm topology.conf, tree plugin (fabric_conf.c) ------------------ */

/* What coll_tacos_fabric_file names (tacos_fabric_net_measure below).
 * The grammar, limits and messages are in
 * docs/topology-and-schedule-files.md. */
#define TACOS_FABRIC_MAX_BYTES (4 << 20)   /* a file or string */
#define TACOS_FABRIC_MAX_LINE (64 << 10)   /* a logical line, continuations joined */
#define TACOS_FABRIC_MAX_LINES (1 << 20)   /* physical lines */
#define TACOS_FABRIC_MAX_SWITCHES 65536
#define TACOS_FABRIC_MAX_NODES (1 << 20)
#define TACOS_HOSTLIST_MAX_GROUPS 8        /* bracket groups in one name */
#define TACOS_HOSTLIST_MAX_NUMBER 999999999 /* largest number in a range */

/* Expands a Slurm hostlist expression: names separated by commas or
 * whitespace, each with up to TACOS_HOSTLIST_MAX_GROUPS bracket groups of
 * numbers and ranges ("node[01-16,20]", "rack[1-2]-n[1-4]": the cartesian
 * product, first group outermost).  A range's low bound fixes the width
 * ("[08-11]": node08..node11).  The count (at most max) and the length of
 * every name (at most TACOS_PROBE_NAME - 1 bytes) are checked before
 * anything is expanded.  *names (free()) holds *n names in order;
 * duplicates are kept. */
int tacos_hostlist_expand(const char *expr, size_t max, char (**names)[TACOS_PROBE_NAME],
                          int *n);

typedef struct {
    char name[TACOS_PROBE_NAME];
    int parent;          /* index of the switch whose Switches= lists it; -1: a root */
    uint32_t link_speed; /* LinkSpeed= (Slurm's arbitrary units), 0 when absent */
    int nchildren;
    int *children;       /* the switches of its Switches=, in the order listed */
    int line;            /* line of its SwitchName= */
} tacos_fabric_switch_t;

typedef struct {
    char host[TACOS_PROBE_NAME];
    int leaf;            /* index of the switch whose Nodes= lists it */
    int line;
} tacos_fabric_node_t;

/* A checked forest of switches: every switch defined once with one parent
 * at most, no cycles, every node under one switch, no name both a node and
 * a switch.  Several roots (disconnected trees) are allowed, as in Slurm. */
typedef struct {
    int nswitches, nnodes, nroots;
    tacos_fabric_switch_t *switches; /* in the order of their lines */
    tacos_fabric_node_t *nodes;      /* in the order listed */
    int *host_index;                 /* hash slots of nodes by host (fabric_conf.c) */
    size_t host_index_cap;
    uint64_t hash;                   /* of the text read (FNV-1a): the same file */
} tacos_fabric_conf_t;

/* Reads topology.conf text; `name` (a path, or "<string>") starts every
 * message: "name:LINE: what".  TACOS_ERR_PARSE for a bad file. */
int tacos_fabric_conf_read_string(const char *text, const char *name, tacos_fabric_conf_t **out);
/* The same from a file (TACOS_ERR_IO naming the path when it cannot be read). */
int tacos_fabric_conf_read_file(const char *path, tacos_fabric_conf_t **out);
void tacos_fabric_conf_free(tacos_fabric_conf_t *f);

/* Index of the leaf switch of `host`: the node named exactly so, else the
 * node whose name up to its first '.' equals host's up to its first '.'
 * (the first in file order); -1 when none. */
int tacos_fabric_conf_leaf_of(const tacos_fabric_conf_t *f, const char *host);

/* The network between hosts from a fabric file: its tree, each host on the
 * leaf that lists it, and each level's rate and latency as measured
 * (fabric_net.c).  Per switch of the file (used: a host of the
 * communicator is under it): port_*, a port of a leaf to one of its hosts;
 * up_*, its port to its parent (roots: 0). */
typedef struct {
    int nhosts, nswitches;
    int *leaf; /* [host] */
    char *used;
    double *port_gbps, *port_lat_us, *up_gbps, *up_lat_us;
    int rounds;        /* exchange rounds run */
    double measure_us; /* what the measurement took */
} tacos_fabric_net_t;

/* Collective over the n ranks of the records, as tacos_net_measure: the
 * first rank of each host exchanges with others in a few rounds (the ports
 * of each leaf, then the uplinks one level at a time); every rank gets the
 * same *f.  Errors (the same on every rank): a host that no leaf of the
 * file lists, hosts under different roots. */
int tacos_fabric_net_measure(const tacos_fabric_conf_t *conf, const tacos_probe_record_t *recs,
                             int n, int me, const tacos_net_comm_t *c, tacos_fabric_net_t *f);
void tacos_fabric_net_free(tacos_fabric_net_t *f);
/* A copy of src in *dst (allocated; TACOS_ERR_NOMEM, dst empty, where
 * memory is short). */
int tacos_fabric_net_copy(tacos_fabric_net_t *dst, const tacos_fabric_net_t *src);
/* One line per switch used: "s0: 4 hosts, port 0.0124 GB/s 50 us, uplink
 * 0.0248 GB/s 5 us" (malloc'd text). */
int tacos_fabric_net_describe(const tacos_fabric_conf_t *conf, const tacos_fabric_net_t *f,
                              char **out);
/* Without a fabric file, communicators over more than this many hosts have
 * their switch tree inferred (tacos_fabric_infer); over fewer, every pair
 * of hosts is measured (tacos_net_measure).  The default of the component's
 * infer_hosts (tacos-probe --infer-hosts), which takes at most MAX. */
#define TACOS_FABRIC_INFER_HOSTS 8
#define TACOS_FABRIC_INFER_MAX_HOSTS 64 /* the most coll_tacos_infer_hosts takes */
/* Collective as tacos_fabric_net_measure, without a file: infers which
 * hosts share a leaf switch, in h/2 rounds for h hosts (fabric_infer.c),
 * and measures that tree's rates.  *conf: the tree as a fabric file would
 * give it (leaves tacos-leafL, under tacos-root where there are several);
 * *text (unless NULL): its topology.conf text; f: as from
 * tacos_fabric_net_measure, the rounds and time including the inference. */
int tacos_fabric_infer(const tacos_probe_record_t *recs, int n, int me, const tacos_net_comm_t *c,
                       tacos_fabric_conf_t **conf, char **text, tacos_fabric_net_t *f);
/* tacos_probe_merge with the links between hosts lowered from the fabric:
 * for each local index l, a copy of the tree whose leaves hold the ranks
 * of index l, every port's rate divided by the ranks per host (they share
 * a host's port).  unwind_degree 0: each switch joins each of its groups
 * (counted with the tree rooted at its centre, as tacos_fabric_lower roots
 * it) to the next min(groups - 1, TACOS_FABRIC_AUTO_DEGREE) (a full mesh of a
 * few groups; more would cost flat synthesis seconds per size class and,
 * with 8 ranks per host from 360 hosts on a switch, more links than a
 * topology may have). */
#define TACOS_FABRIC_AUTO_DEGREE TACOS_AUTO_DEGREE
int tacos_probe_merge_fabric(const tacos_probe_record_t *recs, int n, int unwind_degree,
                             int defaults_only, const tacos_fabric_conf_t *conf,
                             const tacos_fabric_net_t *f, tacos_topo_t **out);

/* JSON of one record (malloc'd text). */
int tacos_probe_record_to_json(const tacos_probe_record_t *r, char **out);

/* One-paragraph summary: hosts, ranks per host, link classes with α/β and
 * their source. */
void tacos_probe_summary(const tacos_probe_record_t *recs, int n, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
