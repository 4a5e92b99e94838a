/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libtacos-synth: topology model, TACOS collective synthesis, schedule IR,
 * validator and JSON I/O.  Depends on libc and cJSON only.
 *
 * Conventions: functions return TACOS_OK or a TACOS_ERR_* code; outputs go
 * through pointer arguments and are set only on success; on failure the
 * message naming what was wrong is available from tacos_last_error().
 * Units are in the names: lat_us (microseconds), bw_gbps (10^9 bytes/s),
 * bytes, t_us.
 */
#ifndef TACOS_SYNTH_H
#define TACOS_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

enum {
    TACOS_OK = 0,
    TACOS_ERR_ARG = 1,      /* invalid argument or option value */
    TACOS_ERR_NOMEM = 2,    /* allocation failed */
    TACOS_ERR_IO = 3,       /* file could not be read or written */
    TACOS_ERR_PARSE = 4,    /* malformed input (JSON, spec string) */
    TACOS_ERR_TOPO = 5,     /* topology cannot serve the request */
    TACOS_ERR_INVALID = 6   /* schedule failed validation */
};

/* Message of the last error raised by this thread (never NULL). */
const char *tacos_last_error(void);
/* Records the message tacos_last_error() returns and returns `code`: for
 * libraries built on this one (libtacos-probe), so one message reaches the
 * caller whichever library failed. */
int tacos_error(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Two times closer than this are the same event (relative tolerance). */
/* Sizes every reader and builder refuses beyond (before allocating). */
#define TACOS_MAX_NPUS 65536
#define TACOS_MAX_LINKS (1 << 20)

#define TACOS_TIME_EPS(t_us) (1e-9 * ((t_us) > 1.0 ? (t_us) : 1.0))

/* ---- topology ---------------------------------------------------------- */

typedef struct {
    int src, dst;
    double lat_us;
    double bw_gbps;
} tacos_link_t;

typedef struct tacos_topo {
    int npus;
    size_t nlinks;
    tacos_link_t *links;
    char *name;
    /* Adjacency (CSR), built by tacos_topo_finalize(): the links entering
     * NPU d are in_links[in_off[d] .. in_off[d+1]) sorted by source; the
     * links leaving s are out_links[out_off[s] .. out_off[s+1]) sorted by
     * destination. */
    size_t *in_off, *in_links;
    size_t *out_off, *out_links;
    size_t cap;
    /* Shape of a generated product topology (NPU = x0 + d0*(x1 + d1*...)),
     * used for dimension-order routing; ndims = 0 when unknown. */
    int ndims;
    int dims[16];
    /* A network from tacos_topo_generate_network: nodes 0..nranks-1 are
     * ranks, the others switches (synthesis refuses it); 0 elsewhere. */
    int nranks;
    /* The same network with every switch fully unwound, which small sizes
     * are synthesized on (tacos_lowering_for; coll/tacos sets it): freed
     * with this topology; not copied, hashed or written; NULL: none. */
    struct tacos_topo *full;
} tacos_topo_t;

/* Time for `bytes` over a link: lat_us + bytes / (bw_gbps * 1e3) in us. */
static inline double tacos_link_cost_us(const tacos_link_t *l, double bytes)
{
    return l->lat_us + bytes / (l->bw_gbps * 1e3);
}

int tacos_topo_create(int npus, const char *name, tacos_topo_t **out);
void tacos_topo_free(tacos_topo_t *t);
/* Adds the directed link src->dst; a second link between the same pair is
 * rejected (describe a wider link with a larger bandwidth). */
int tacos_topo_add_link(tacos_topo_t *t, int src, int dst, double lat_us,
                        double bw_gbps);
/* Adds the switch joining npus[0..n) unwound with degree d: member i gets
 * links to members i+1..i+d (mod n), latency lat_us, bandwidth bw_gbps/d.
 * d is capped at n-1. */
int tacos_topo_add_switch(tacos_topo_t *t, const int *npus, int n,
                          double lat_us, double bw_gbps, int degree);
/* Builds the adjacency lists; required before synthesis and after edits. */
int tacos_topo_finalize(tacos_topo_t *t);

/* Automatic unwinding of a network switch of `members` hosts, as coll/tacos
 * lowers the network it measures (coll_tacos_unwind_degree 0): a ring
 * (degree 1) up to TACOS_AUTO_DEGREE members; beyond, each member joined to
 * the next TACOS_AUTO_DEGREE, as an inferred switch tree is, so that no
 * chunk crosses more than members / TACOS_AUTO_DEGREE hops of the switch
 * (docs/synthesis.md#switches says why). */
#define TACOS_AUTO_DEGREE 8
int tacos_switch_auto_degree(int members);
/* Of two lowerings of one network (the same NPUs, finalized): `wide`, its
 * switches unwound as tacos_switch_auto_degree says, and `full`, every
 * member of a switch linked to every other (NULL: none), the one a
 * collective of size_bytes is synthesized on: full where one chunk of it
 * (size_bytes / NPUs) reaches the other NPUs from NPU 0 sooner on average
 * over shortest paths (hops of latency + bytes / bandwidth), else wide.
 * coll/tacos chooses so per size class (coll_tacos_unwind_degree 0), and
 * tacos-synth --unwind-degree auto. */
int tacos_lowering_for(const tacos_topo_t *wide, const tacos_topo_t *full, uint64_t size_bytes,
                       const tacos_topo_t **out);
/* *full, the network of `wide` lowered with every switch fully unwound,
 * kept as tacos_lowering_for's `full`: named "NAME, switches fully
 * unwound"; where it has no more links than wide (no switch was unwound
 * with a smaller degree), freed and *full = NULL. */
int tacos_lowering_keep_full(const tacos_topo_t *wide, tacos_topo_t **full);

/* Switch trees (fabric.c): switches are nodes npus.. after the ranks,
 * joined by ports (both directions at one rate and latency); lowered into
 * rank-to-rank links of a topology.  At most TACOS_MAX_SWITCHES switches. */
#define TACOS_MAX_SWITCHES 4096
typedef struct tacos_fabric tacos_fabric_t;
int tacos_fabric_new(int npus, tacos_fabric_t **out);
void tacos_fabric_free(tacos_fabric_t *f);
/* Adds a switch named `name` (unique, not a number) whose groups each join
 * the next `degree` ones; *id its node id. */
int tacos_fabric_add_switch(tacos_fabric_t *f, const char *name, int degree, int *id);
/* The node id of the switch named `name`, or -1. */
int tacos_fabric_switch(const tacos_fabric_t *f, const char *name);
/* A port of switch sw (a node id) joining node (a rank or a switch). */
int tacos_fabric_add_port(tacos_fabric_t *f, int node, int sw, double lat_us, double bw_gbps);
/* Checks the tree (every switch has a port, a rank is on one switch, no
 * cycle) and adds its lowered links to t (not where t links the pair
 * already). */
int tacos_fabric_lower(const tacos_fabric_t *f, tacos_topo_t *t);
/* The same NPUs with every link reversed (finalized). */
int tacos_topo_transpose(const tacos_topo_t *t, tacos_topo_t **out);
/* Removes (fails) the listed NPUs and their links; the remaining NPUs keep
 * their order and are renumbered 0..npus-1 (finalized); drops t->full. */
int tacos_topo_remove_npus(tacos_topo_t *t, const int *failed, int nfailed);
/* Index of link src->dst, or -1. Needs a finalized topology. */
long tacos_topo_find_link(const tacos_topo_t *t, int src, int dst);
/* TACOS_OK when every NPU reaches every other one over directed links. */
int tacos_topo_check_connected(const tacos_topo_t *t);

/*
 * Built-in shapes, spelled "<name>:<sizes>":
 *   ring:N  uniring:N  fc:N  switch:N  mesh2d:RxC  torus2d:RxC
 *   mesh3d:XxYxZ  torus3d:XxYxZ  hypercube:N (N = 2^k)  dragonfly:GxR
 *   fattree:MxL (M hosts on each of L leaves under one spine; bandwidth and
 *   latency: a host's port, a leaf's uplink)
 *   rails:GxH (H hosts of G ranks on a switch each, rank g of every host
 *   on rail switch g; bandwidth and latency: the host's switch, a rail's port)
 *   dgx1   and compositions "<kinds>:<sizes>" with one kind letter per
 *   dimension: r ring, u uni-ring, l line (mesh edge), f fully-connected,
 *   s switch; e.g. rfs:2x4x16.
 * bw_gbps/lat_us hold one value per dimension (ndims values) or one value
 * for all dimensions (nvals == 1). degree unwinds switch dimensions;
 * TACOS_DEGREE_AUTO unwinds them as coll/tacos would: a host's switch (the
 * first dimension of two or more, rails' host switch) with degree
 * members - 1, a network's switch with tacos_switch_auto_degree, a switch
 * tree's (fattree, rails) each joining its groups to the next
 * min(groups - 1, TACOS_AUTO_DEGREE).
 */
#define TACOS_DEGREE_AUTO (-1)
/* A degree that unwinds every switch fully (degrees are capped at its
 * members - 1). */
#define TACOS_DEGREE_FULL (1 << 24)
int tacos_topo_generate(const char *spec, const double *bw_gbps, int nbw,
                        const double *lat_us, int nlat, int degree,
                        tacos_topo_t **out);

/* The same shape as a physical network for tacos_simulate: every switch a
 * node of its own after the ranks (nranks: the shape's rank count; node ids
 * from nranks on are switches), joined to each member by a port of the
 * switch's bandwidth each way and half its latency, so a message between
 * two members costs what a degree-1 unwound link would (latency + bytes /
 * bandwidth), and what a member sends shares one port whatever the peers;
 * links between ranks as in tacos_topo_generate.  Synthesis refuses it
 * (TACOS_ERR_ARG). */
int tacos_topo_generate_network(const char *spec, const double *bw_gbps, int nbw,
                                const double *lat_us, int nlat, tacos_topo_t **out);

/* JSON topology files (see README "Topology files"). `where` names the
 * source in error messages (a path, or "<string>"). */
int tacos_topo_from_json(const char *text, const char *where,
                         tacos_topo_t **out);
int tacos_topo_read_file(const char *path, tacos_topo_t **out);
/* The same, refusing (before reading links) a file whose NPU count is not
 * `npus`. */
int tacos_topo_read_file_npus(const char *path, int npus, tacos_topo_t **out);
/* Returns a malloc'd JSON text (explicit links). */
int tacos_topo_to_json(const tacos_topo_t *t, char **out);
int tacos_topo_write_file(const tacos_topo_t *t, const char *path);

/* ---- collectives and schedules ----------------------------------------- */

typedef enum {
    TACOS_ALLGATHER,
    TACOS_BROADCAST,
    TACOS_REDUCE_SCATTER,
    TACOS_REDUCE,
    TACOS_ALLREDUCE,
    TACOS_ALLTOALL,
    TACOS_GATHER,
    TACOS_SCATTER
} tacos_coll_t;
#define TACOS_NCOLLS (TACOS_SCATTER + 1)

const char *tacos_coll_name(tacos_coll_t c);
/* Reduce-Scatter, Reduce and All-Reduce: arrivals are combined. */
int tacos_coll_reduces(tacos_coll_t c);
/* Broadcast, Reduce, Gather and Scatter: the root matters. */
int tacos_coll_rooted(tacos_coll_t c);
/* All-to-All, Gather and Scatter: each chunk is routed from one NPU to one
 * other, nothing spread or combined. */
int tacos_coll_routed(tacos_coll_t c);
/* Chunks of a schedule of the collective: npus x chunks_per_npu, and for
 * All-to-All npus^2 x chunks_per_npu (chunk ((i*npus + j)*k + p) is part p
 * of what NPU i sends to NPU j).  size_bytes is the whole buffer of one rank
 * (All-to-All: its send buffer, npus blocks; Gather and Scatter: the root's,
 * npus blocks), so a chunk is always size_bytes / (npus x chunks_per_npu)
 * bytes.  Gather and Scatter route block r (chunks r*k .. r*k+k-1) from NPU
 * r to the root, or from the root to NPU r, as All-to-All routes its
 * blocks. */
long long tacos_coll_nchunks(tacos_coll_t c, int npus, int chunks_per_npu);
/* A routed collective's chunk: the NPU it starts at and the one it must
 * reach. */
void tacos_chunk_route(tacos_coll_t c, int npus, int chunks_per_npu, int root, int chunk,
                       int *from, int *to);
int tacos_coll_parse(const char *name, tacos_coll_t *out);

/* One chunk moving over one link. `reduce`: the receiver combines it into
 * its own copy instead of storing it. */
typedef struct {
    double start_us, end_us;
    int32_t chunk, src, dst;
    int32_t reduce;
} tacos_xfer_t;

/*
 * A schedule: the collective over `npus` ranks, its buffer of size_bytes
 * split into nchunks = chunks_per_npu * npus chunks (chunk c of All-Gather /
 * Reduce-Scatter belongs to rank c / chunks_per_npu), and the transfers
 * in start order (ties in a deterministic order).  The topology is kept for validation.
 */
typedef struct {
    tacos_coll_t coll;
    int npus;
    int chunks_per_npu;
    int nchunks;
    int root; /* Broadcast and Reduce */
    uint64_t size_bytes;
    double time_us;
    size_t nxfers;
    tacos_xfer_t *xfers;
    tacos_topo_t *topo; /* owned */
    /* 1 for step-based algorithms (baselines): times are logical steps, and
     * the chunks one pair exchanges in one step travel as one message. */
    int steps;
    /* 1 when composed from levels (tacos_synthesize_hier), 2 one rank's
     * part of a composition (tacos_synthesize_hier_rank); not in JSON
     * files (in schedule cache files) */
    int levels;
} tacos_sched_t;

typedef struct {
    tacos_coll_t coll;
    int root;
    int chunks_per_npu;
    uint64_t size_bytes;
    uint64_t seed;
    int trials;
    /* The most chunks one message on a link carries (0 or 1: one).  The
     * transfers of one message share link, start and end, and take the
     * link's time for their bytes together (latency once).  Flat synthesis
     * of All-Gather, Reduce-Scatter, All-Reduce, Broadcast and Reduce; at
     * most TACOS_MAX_CHUNKS_PER_MSG. */
    int chunks_per_msg;
    /* With chunks_per_msg > 1: the most bytes such a message carries (0:
     * no limit): as many chunks as fit, one at least (tacos_msg_chunks). */
    uint64_t msg_bytes;
} tacos_synth_opts_t;
#define TACOS_MAX_CHUNKS_PER_MSG 64
/* coll_tacos_message_bytes' and tacos-synth --message-bytes' default: Open
 * MPI's shared-memory eager limit (btl_vader_eager_limit, 4096) less 256
 * bytes of headers (packed messages just past it were the slowest) */
#define TACOS_MSG_BYTES_DEFAULT 3840

/* The most chunks of chunk_bytes one message may carry under o. */
int tacos_msg_chunks(const tacos_synth_opts_t *o, double chunk_bytes);

/* Synthesizes the collective on a finalized topology (copied into the
 * schedule). Runs `trials` seeds derived from `seed`, keeps the fastest. */
int tacos_synthesize(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                     tacos_sched_t **out);
/* Flat: the greedy over the whole topology (tacos_synthesize); levels:
 * tacos_synthesize_hier; auto: both where the topology has levels, the one
 * the model times faster kept (flat where it has none). */
typedef enum { TACOS_HIER_FLAT, TACOS_HIER_LEVELS, TACOS_HIER_AUTO } tacos_hier_t;
int tacos_synthesize_with(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                          tacos_hier_t hier, tacos_sched_t **out);
/* The first-call policy of coll/tacos (tacos-synth -k auto): synthesizes
 * (tacos_synthesize_with) with chunks_per_npu k = 1, 2, 4, ... up to max_k
 * until one models slower by more than a tenth than the best so far, or,
 * past TACOS_AUTO_TIES_K, until one is not the fastest so far, and keeps
 * the fastest (the schedule's chunks_per_npu says which); where
 * opts->chunks_per_npu is set (> 0), tacos_synthesize_with with that k
 * alone.  Any synthesis that fails fails it.  coll/tacos goes up to
 * TACOS_AUTO_MAX_K, through tacos_synthesize_for_rank. */
#define TACOS_AUTO_MAX_K 32
#define TACOS_AUTO_TIES_K 8
int tacos_synthesize_auto(const tacos_topo_t *topo, const tacos_synth_opts_t *opts, int max_k,
                          tacos_hier_t hier, tacos_sched_t **out);
/* Hierarchical synthesis (All-Gather, Reduce-Scatter, All-Reduce): the NPUs
 * as G groups of L (a product shape's first dimension, else the components
 * joined by links faster than the slowest) and L rails (the l-th member of
 * each group); each level synthesized on its own links, once per distinct
 * set of links, and the levels joined into one schedule (All-Reduce:
 * Reduce-Scatter in the groups, All-Reduce on the rails, All-Gather in the
 * groups), each transfer starting as soon as its link and chunk allow.
 * TACOS_ERR_TOPO when the topology has no such levels or a group or rail is
 * not connected by its own links. */
int tacos_synthesize_hier(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                          tacos_sched_t **out);
/* What one rank needs of it, without the whole: the transfers to and from
 * `rank` with the levels one after the other (each starting when the
 * previous one ends; the MPI libraries' executor overlaps them anyway, a
 * message waiting only for its chunk), from the syntheses of the rank's
 * own group and rail and the first ones'.  tacos_sched_program() of it is
 * the rank's program.  time_us: the first group's and first rail's levels
 * one after the other, the same on every rank; levels = 2.  Not a whole
 * schedule: it does not validate.  chunks_per_npu 0: k as
 * tacos_synthesize_auto picks it by that time. */
int tacos_synthesize_hier_rank(const tacos_topo_t *topo, const tacos_synth_opts_t *opts, int rank,
                               tacos_sched_t **out);
/* Rank `rank`'s part again from a choice kept (tacos_sched_cache_load of a
 * part: levels 2, no transfers, its k and time_us): tacos_synthesize_hier_rank
 * at that k, TACOS_ERR_PARSE where the part it makes does not model the
 * same time (another build's choice: synthesize with the policy instead). */
int tacos_synthesize_kept_part(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                               const tacos_sched_t *choice, int rank, tacos_sched_t **out);
/* What coll/tacos synthesizes for `rank` at a first call (tacos-synth
 * --part RANK), k as tacos_synthesize_auto picks it (up to
 * TACOS_AUTO_MAX_K) where opts->chunks_per_npu is 0: flat, the whole flat
 * schedule; levels, the rank's part (tacos_synthesize_hier_rank), or flat
 * where the topology has no levels or the collective does not compose;
 * auto, the part against flat, the faster in the model kept (flat on a
 * tie; the part timed as its levels one after the other, which its run
 * ended within on every shape measured), flat synthesized only below
 * TACOS_AUTO_FLAT_NPUS NPUs: from there it costs a second and more per
 * size class (docs/synthesis.md); where flat's k is automatic its search
 * runs against the part: flat at k = 1 more than 1.1x the part's time
 * stops it (its synthesis gives up there) and the part is kept.  The same
 * on every rank.  A failure of the part other than "no levels" fails it. */
#define TACOS_AUTO_FLAT_NPUS 512
int tacos_synthesize_for_rank(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                              tacos_hier_t hier, int rank, tacos_sched_t **out);
/* What the ranks' parts make together: every rank's part
 * (tacos_synthesize_hier_rank, k as they pick it where chunks_per_npu is
 * 0) as one schedule (levels = 1), each transfer where both its ends'
 * parts place it, then started again in that order as soon as its link
 * and chunk allow (the parts' chunk times come from each level's share of
 * the bytes): it validates where the parts are right, and tacos_simulate
 * times what coll_tacos_hierarchy 1 runs.  TACOS_ERR_TOPO where the two
 * ends of a transfer place it at different times (groups or rails unlike
 * each other: each rank's levels then fall at its own times).  Costs npus
 * parts' syntheses. */
int tacos_synthesize_hier_parts(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                                tacos_sched_t **out);
void tacos_sched_free(tacos_sched_t *s);

/* TACOS-ILP: tacos_synthesize, then every phase (All-Gather or Broadcast,
 * on the transposed links for the reductions; All-to-All, Gather and
 * Scatter: each chunk wanted at its destination) as an integer program over
 * the time-expanded network in steps of the smallest link time, horizons
 * searched upwards within `seconds` in all; a phase keeps the greedy's
 * schedule unless the program finds a faster one.  *proven (may be NULL):
 * 1 when every phase is optimal among schedules whose transfers start on
 * those steps (exact for links of equal time).  TACOS_ERR_ARG when the
 * library was built without CBC (tacos_have_ilp() == 0). */
int tacos_synthesize_ilp(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                         double seconds, tacos_sched_t **out, int *proven);
int tacos_have_ilp(void);
double tacos_sched_chunk_bytes(const tacos_sched_t *s);
/* The most chunks one message carries (transfers on one link with the same
 * start and end: tacos_synth_opts_t.chunks_per_msg); 0 without transfers,
 * -1 out of memory. */
int tacos_sched_most_per_message(const tacos_sched_t *s);
/* Whether two transfers travel as one message: the same link, start and
 * end.  In schedule order a message's transfers are side by side. */
static inline int tacos_same_message(const tacos_xfer_t *a, const tacos_xfer_t *b)
{
    return a->src == b->src && a->dst == b->dst && a->start_us == b->start_us &&
           a->end_us == b->end_us;
}

/* Lower bound on the collective time (us) over this topology: the larger of
 * the latency diameter and the per-NPU ingress bound (see README). For
 * All-Reduce, the Reduce-Scatter bound plus the All-Gather bound. */
int tacos_lower_bound(const tacos_topo_t *topo, tacos_coll_t coll, int root,
                      int chunks_per_npu, uint64_t size_bytes, double *out_us);

/* The largest share any link's latency takes of its time to carry one
 * chunk (size_bytes / (npus x chunks_per_npu) bytes); 0 without links.
 * Where it is small at two sizes, every link's cost scales alike between
 * them, and so does any schedule's modelled time (coll/tacos reuses a
 * size class's schedule for the next one then: coll_tacos_reuse_percent). */
double tacos_latency_share(const tacos_topo_t *topo, int chunks_per_npu, uint64_t size_bytes);

/* Throughput-optimal bound (us): for All-Gather, the largest over sets S of
 * NPUs of the bytes S must receive / the bandwidth into S (ForestColl's cut
 * bound, reached by spanning-tree packings), computed exactly by max-flow;
 * Reduce-Scatter the same on the transposed links, All-Reduce both added;
 * Broadcast/Reduce the bytes / the root's min cut (Edmonds).  Each phase is
 * at least the latency diameter (no chunk count goes below it). */
int tacos_optimal_bound(const tacos_topo_t *topo, tacos_coll_t coll, int root,
                        uint64_t size_bytes, double *out_us);

/* Proves a schedule correct against its own topology: transfers are on
 * links, last at least the link cost, never overlap on a link; each send's
 * chunk is present at its start; reductions combine each rank's
 * contribution at most once; every postcondition holds at the end.  On
 * failure returns TACOS_ERR_INVALID and tacos_last_error() describes the
 * earliest violation (transfer index, time, ranks, chunk). */
int tacos_sched_validate(const tacos_sched_t *s);

/* Schedule JSON files; reading validates. */
int tacos_sched_write_file(const tacos_sched_t *s, const char *path);
int tacos_sched_read_file(const char *path, tacos_sched_t **out);
int tacos_sched_from_json(const char *text, const char *where,
                          tacos_sched_t **out);

/* Schedule cache files (coll_tacos_schedule_dir, tacos-synth
 * --schedule-dir).  A whole schedule synthesized with options o and
 * hierarchy hier (chunks_per_npu 0: tacos_synthesize_auto's choice), or a
 * rank's part's choice (levels 2, hier not flat: its k and time_us alone;
 * loaded as such, with no transfers, for tacos_synthesize_kept_part), is kept
 * in the file tacos_sched_cache_path names in dir: DIR/tacos-HASH.sched,
 * HASH that of a key of this library's version, its synthesis generation,
 * the topology (tacos_topo_hash), o and hier (TACOS_ERR_ARG where the path
 * does not fit in n; path untouched then).  Saving writes a fresh
 * temporary file in the same directory and renames it, so readers and
 * concurrent writers (also on other hosts) never see part of one.  Loading
 * gives the topology the schedule must serve (copied into it) and refuses,
 * the reason in tacos_last_error(): TACOS_ERR_IO a file it cannot open or
 * read, or one that is not a regular file; TACOS_ERR_PARSE one of another
 * key or format version, of the wrong length, with a damaged checksum, or
 * whose schedule is not the collective, root, size and chunk count the
 * options ask for (a part's choice: whose time is not finite and positive);
 * TACOS_ERR_INVALID one whose schedule does not validate on topo;
 * TACOS_ERR_NOMEM. */
int tacos_sched_cache_path(const char *dir, const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                           tacos_hier_t hier, char *path, size_t n);
int tacos_sched_cache_save(const tacos_sched_t *s, const tacos_synth_opts_t *o, tacos_hier_t hier,
                           const char *path);
int tacos_sched_cache_load(const char *path, const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                           tacos_hier_t hier, tacos_sched_t **out);
/* A hash of the NPU count, the shape's dimensions and the links in order
 * (rates included). */
uint64_t tacos_topo_hash(const tacos_topo_t *t);

/* ---- one rank's program ------------------------------------------------- */

typedef enum { TACOS_OP_SEND, TACOS_OP_RECV } tacos_op_kind_t;

/*
 * An operation of one rank.  Ops are ordered by the time they act (a send at
 * its start, a receive at its end; receives first on ties), so every
 * dependency points to an earlier op.  A send waits for the receives that
 * brought or reduced its chunk; a receive that writes (copy) or combines
 * (reduce) into a chunk waits for the earlier sends of that chunk, and a copy
 * also for earlier receives of it.  `seq` numbers the messages from src to
 * dst in link order, so the executor can match them regardless of the order
 * in which they become ready.  `joined`: the op travels in one message with
 * the op of seq - 1 of its link (its transfer and the one before it in the
 * schedule are one message: tacos_same_message,
 * tacos_synth_opts_t.chunks_per_msg); both ends of a link mark the same.
 * The ops of one message act at one time (its start, its end), so none of
 * them depends on a later op of the same link: the executor, which posts a
 * message once every op of it may go, relies on that.
 */
typedef struct {
    tacos_op_kind_t kind;
    int reduce;
    int chunk;
    int peer;
    int seq;
    double t_us;
    size_t ndeps;
    size_t deps; /* offset into tacos_prog_t.dep */
    int joined;
} tacos_op_t;

typedef struct {
    int rank;
    size_t nops;
    tacos_op_t *ops;
    size_t *dep; /* dependency op indices, ops[i].deps .. + ndeps */
} tacos_prog_t;

int tacos_sched_program(const tacos_sched_t *s, int rank, tacos_prog_t **out);
void tacos_prog_free(tacos_prog_t *p);

/* ---- simulation, baselines, ideal bound -------------------------------- */

/* What a simulation measured: finish time, per-link busy time and bytes, and
 * every link-busy interval (for utilization over time). */
typedef struct {
    double time_us;
    size_t nlinks;
    double *link_busy_us, *link_bytes;
    size_t nbusy;
    double *busy_start_us, *busy_end_us;
} tacos_sim_t;

/* Runs schedule s over the physical network `net` (its first s->npus nodes
 * the schedule's NPUs; any others switches: tacos_topo_generate_network,
 * which pass a message on as its head arrives; their ports are busy for
 * the bytes at their own rate, not for their latency, nor while a slower
 * link feeds them).  Transfers between non-neighbours are routed over a
 * shortest path (dimension order on generated shapes, lowest-numbered next
 * hop on networks with switch nodes) and stored and forwarded at each rank
 * at latency + bytes/bandwidth per hop; a link serves one message at a
 * time; a transfer leaves once the transfers that brought its chunk to its
 * source have landed.  Waiting messages are served first come first served,
 * ties in schedule order; with schedule_order = 1 the messages of each pair
 * also leave in schedule order, as an executor replays a synthesized
 * schedule (then, on the schedule's own topology, no transfer lands later
 * than the schedule says).  TACOS_ERR_ARG where net's ranks (nranks, else
 * its nodes) are not the schedule's NPUs. */
int tacos_simulate(const tacos_sched_t *s, const tacos_topo_t *net, int schedule_order,
                   tacos_sim_t **out);
void tacos_sim_free(tacos_sim_t *r);
/* Fraction of links busy in each of nbins equal slices of [0, time_us]. */
int tacos_sim_utilization(const tacos_sim_t *r, int nbins, double *out);

/* A textbook algorithm as a schedule on its logical peers (the schedule's
 * topology is the fully connected logical graph; times are logical steps):
 * "ring" (bidirectional: two rings with half the data each; allreduce,
 * allgather, reduce-scatter), "direct" (same), "rhd" (recursive halving and
 * doubling; allreduce with the fold to a power of two for other counts,
 * allgather and reduce-scatter on power-of-two counts), "dbt" (double binary
 * tree, pipelined; allreduce), "han:L" (two levels through leaders in the
 * manner of Open MPI's coll/han, unsegmented: groups of L consecutive NPUs,
 * each through its first as leader, the leaders on a ring; allreduce,
 * allgather, reduce-scatter). Simulate it on a network for its time. */
int tacos_baseline(const char *name, tacos_coll_t coll, int npus, uint64_t size_bytes,
                   tacos_sched_t **out);

/* Ideal time (us): size x 2(N-1)/N / (min over NPUs of ingress bandwidth) +
 * latency diameter for All-Reduce; (N-1)/N for All-Gather and Reduce-Scatter,
 * 1 for Broadcast and Reduce (egress for the reductions to one place). */
int tacos_ideal_bound(const tacos_topo_t *t, tacos_coll_t coll, uint64_t size_bytes,
                      double *out_us);

/* SVG pictures: a source x destination link-load heat map of one simulation
 * (colour = busy time, black = no link), and utilization over time for
 * several simulations (one line each). */
int tacos_svg_heatmap(const tacos_sim_t *r, const tacos_topo_t *net, const char *title,
                      const char *path);
int tacos_svg_utilization(const tacos_sim_t *const *runs, const char *const *names, int nruns,
                          const char *title, const char *path);

#ifdef __cplusplus
}
#endif
#endif
