/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared inside libtacos-synth; not installed. */
#ifndef TACOS_INTERNAL_H
#define TACOS_INTERNAL_H

#include <stdint.h>
#include "grow.h"
#include "tacos_synth.h"

#if defined(__GNUC__)
#define TACOS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TACOS_PRINTF(f, a)
#endif

/* Everything below stays inside the library: not exported from
 * libtacos-synth.so (tacos_error is public: tacos_synth.h). */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* xoshiro256** seeded through splitmix64: same seed, same stream, on every
 * machine. */
typedef struct {
    uint64_t s[4];
} tacos_rng_t;

void tacos_rng_seed(tacos_rng_t *r, uint64_t seed);
uint64_t tacos_rng_next(tacos_rng_t *r);
/* Uniform in [0, n), n > 0. */
uint64_t tacos_rng_below(tacos_rng_t *r, uint64_t n);
uint64_t tacos_splitmix64(uint64_t *state);

/* Links a->b and b->a alike. */
int tacos_topo_add_both(tacos_topo_t *t, int a, int b, double lat_us, double bw_gbps);

/* Networks with switches as nodes (tacos_topo_generate_network): the
 * switch joining members m[0..n) as a node of its own, numbered npus (the
 * count grows by one), with a port of bw_gbps and lat_us / 2 each way to
 * every member; the same for a switch tree's switches and ports. */
int tacos_topo_add_switch_node(tacos_topo_t *t, const int *m, int n, double lat_us,
                               double bw_gbps);
int tacos_fabric_add_nodes(const tacos_fabric_t *f, tacos_topo_t *topo);

/* How the transposed topology (every link reversed) maps onto t: the
 * smallest b dividing npus such that NPU i goes to NPU tacos_mirror_npu(i,
 * b), its mirror image in its block of b consecutive NPUs, with the same
 * links, latencies and bandwidths; 0 where none does.  b = 1: every link
 * has its reverse; b = npus: i goes to npus - 1 - i (switches unwound into
 * one-way rings, uni-rings, in any dimension of a shape); b = the ranks of
 * a host: each host's switch so, the links between hosts the same for
 * every local index (a probed cluster).  Needs a finalized topology. */
int tacos_topo_mirror(const tacos_topo_t *t);
static inline int tacos_mirror_npu(int i, int b) { return i - i % b + (b - 1 - i % b); }

/* Whether t is a generated product (ndims > 0: NPU = x0 + d0 (x1 + ...))
 * whose links, latencies and bandwidths are the same after a cyclic shift
 * of any one coordinate: the shifts then generate automorphisms taking NPU
 * 0 to any NPU, so what holds from (or into) NPU 0 holds from every NPU
 * (a shortest-path eccentricity, a max-flow from a source feeding all NPUs
 * alike).  Rings, fully-connected groups and unwound switches of uniform
 * links pass; a line of 3 or more, or links that differ from place to
 * place, fail.  Checked on the links, not assumed from the shape; needs a
 * finalized topology (0 otherwise). */
int tacos_topo_transitive(const tacos_topo_t *t);

/* Bitsets of 64-bit words. */
#define TACOS_WORDS(nbits) (((size_t)(nbits) + 63) / 64)
static inline int tacos_bit_get(const uint64_t *b, size_t i)
{
    return (int)((b[i >> 6] >> (i & 63)) & 1u);
}
static inline void tacos_bit_set(uint64_t *b, size_t i)
{
    b[i >> 6] |= (uint64_t)1 << (i & 63);
}
static inline void tacos_bit_clear(uint64_t *b, size_t i)
{
    b[i >> 6] &= ~((uint64_t)1 << (i & 63));
}

/* Bit counting: the instruction where the target has it, else SWAR (the
 * generic library call is several times slower in the synthesis loop). */
static inline int tacos_popcount64(uint64_t x)
{
#if defined(__POPCNT__)
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (int)((x * 0x0101010101010101ull) >> 56);
#endif
}
static inline int tacos_ctz64(uint64_t x) { return __builtin_ctzll(x); }


/* Binary min-heap of (k1, k2, id), lexicographic; grows as needed (zero-
 * initialize, free v). */
typedef struct {
    double k1, k2;
    size_t id;
} tacos_heap_item_t;

typedef struct {
    tacos_heap_item_t *v;
    size_t n, cap;
} tacos_heap_t;

int tacos_heap_push(tacos_heap_t *h, tacos_heap_item_t it);
tacos_heap_item_t tacos_heap_pop(tacos_heap_t *h);

/* What every synthesis refuses: an unfinalized or disconnected topology,
 * an unknown collective, bad k, size, trials or root, too many chunks. */
int tacos_check_opts(const tacos_topo_t *topo, const tacos_synth_opts_t *o);
/* A synthesis that stopped once it was slower than its caller can use
 * (tacos_auto_k's give_up_us); never returned by the public functions. */
#define TACOS_SLOWER 100
/* What the synthesis of one k in tacos_auto_k takes from those before it:
 * when it is of no use (collectives.c). */
typedef struct tacos_auto_pass tacos_auto_pass_t;
/* tacos_synthesize_auto's k policy over any synthesis at a fixed k; one
 * that takes `pass` may stop with TACOS_SLOWER past pass's time. */
typedef int (*tacos_synth_fn)(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                              const void *arg, tacos_auto_pass_t *pass, tacos_sched_t **out);
int tacos_auto_k(const tacos_topo_t *topo, const tacos_synth_opts_t *o, int max_k,
                 tacos_synth_fn synth, const void *arg, tacos_sched_t **out);
/* tacos_synthesize_auto, flat, against another candidate of rival_us
 * (e.g. a part in levels): k = 1 gives up once clearly slower than that
 * (CLEARLY_SLOWER), as a larger k would against a smaller one, and then
 * TACOS_SLOWER is returned and *out is NULL. */
int tacos_synthesize_flat_against(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                                  int max_k, double rival_us, tacos_sched_t **out);

/* Deep copy of a finalized topology. */
int tacos_topo_copy(const tacos_topo_t *t, tacos_topo_t **out);

/* Schedules are built by appending transfers. */
int tacos_sched_alloc(tacos_coll_t coll, int npus, int chunks_per_npu,
                      int root, uint64_t size_bytes, const tacos_topo_t *topo,
                      tacos_sched_t **out);
int tacos_sched_reserve(tacos_sched_t *s, size_t n);
/* Of trials: *best becomes the faster of *best (NULL: none yet) and
 * *cand, the other is freed, *cand is NULL. */
void tacos_sched_keep_faster(tacos_sched_t **best, tacos_sched_t **cand);
/* Sorts transfers by (start, src, dst, chunk) and sets time_us. */
void tacos_sched_sort(tacos_sched_t *s);
/* Every chunk of `one` (sorted) split into k parts sent back to back along
 * its paths, each part as soon as its link is free and it reached the
 * sender (split.c; k = 1: the schedule restarted at those times), time_us
 * set but its transfers not yet sorted (tacos_sched_sort). */
int tacos_sched_split(const tacos_sched_t *one, const tacos_topo_t *topo, int k,
                      tacos_sched_t **out);

/* Which chunks each rank holds at t=0 (pre) and must hold at the end (post)
 * for the gather-like collectives (All-Gather, Broadcast) and the routed
 * ones (All-to-All, Gather, Scatter: a chunk at its source, and at its
 * destination too at the end). */
uint64_t *tacos_coll_bitsets(tacos_coll_t coll, int npus, int nchunks,
                             int chunks_per_npu, int root, int post);

/* Whole-file text I/O with errors naming the path. */
int tacos_read_text(const char *path, char **out);
int tacos_write_text(const char *path, const char *text);

/* The topology as a cJSON object (caller deletes), NULL when out of memory. */
struct cJSON;
struct cJSON *tacos_topo_to_cjson(const tacos_topo_t *t);
/* expect_npus: 0, or the NPU count the caller needs (checked before links). */
int tacos_topo_from_cjson(const struct cJSON *root, const char *where, int expect_npus,
                          tacos_topo_t **out);
/* Parses JSON text (a file) with errors naming `where` (the path). */
int tacos_json_parse(const char *text, const char *where, struct cJSON **out);
int tacos_json_read_file(const char *path, struct cJSON **out);

/* A second method tried after the greedy's trials in every phase (the
 * gather-like collective on the topology or its transpose): it may fill
 * `out` (allocated, empty) with a schedule faster than greedy_us and set
 * *better; *proven = 1 when no schedule of its model is faster than the
 * result it leaves (its own or the greedy's). */
typedef int (*tacos_improve_fn)(void *ctx, const tacos_topo_t *topo, int nchunks,
                                double chunk_bytes, const uint64_t *pre, const uint64_t *post,
                                double greedy_us, tacos_sched_t *out, int *better, int *proven);
/* tacos_synthesize with `improve` run on every phase; *proven: every phase. */
int tacos_synthesize_improved(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                              tacos_improve_fn improve, void *ctx, tacos_sched_t **out,
                              int *proven);

/* Fewest-hop routes (route.c), as the simulator sends messages between
 * NPUs that are not neighbours: dimension order on generated shapes.  Hop
 * distances to each destination are computed on first use. */
typedef struct {
    const tacos_topo_t *net;
    int **dist;
    int *queue;
} tacos_router_t;
int tacos_router_init(tacos_router_t *r, const tacos_topo_t *t); /* TACOS_ERR_NOMEM, no message */
void tacos_router_free(tacos_router_t *r);
/* The links of the route src -> dst into hops[0..*nhops) (room for npus). */
int tacos_route(tacos_router_t *r, int src, int dst, size_t *hops, size_t *nhops);
/* next[v * npus + j]: the link a message from v to j leaves v on (the
 * direct link between neighbours, else the route's first), SIZE_MAX for
 * v = j and where j cannot be reached from v (not an error: a rooted
 * collective needs paths from or to the root only); from that hop on, the
 * route to j is the same as from v. */
int tacos_route_first_hops(const tacos_topo_t *t, size_t *next);

/* All-to-All, Gather and Scatter (alltoall.c): the best of o->trials runs
 * of the routing greedy and one along the simulator's routes (what direct
 * exchange does), unsorted, topology not yet attached. */
int tacos_alltoall_synthesize(const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                              tacos_sched_t **out);
/* Its bound: the larger of the latency diameter (link time of a chunk of
 * chunk_bytes) and, over candidate cuts (each NPU, the prefixes of
 * breadth-first orders, each group joined by links of at least a given
 * bandwidth), the bytes that must cross the cut / its bandwidth. */
int tacos_alltoall_bound(const tacos_topo_t *topo, uint64_t size_bytes, double chunk_bytes,
                         double *out_us);
/* Gather's and Scatter's: the larger of the farthest NPU's time from (to)
 * the root for one chunk and, over each NPU and each group joined by links
 * of at least a given bandwidth, the blocks that must cross its edge / the
 * bandwidth across it (from the root's side, or towards it). */
int tacos_rooted_route_bound(const tacos_topo_t *topo, tacos_coll_t coll, int root,
                             uint64_t size_bytes, double chunk_bytes, double *out_us);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
