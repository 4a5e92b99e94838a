/* SPDX-License-Identifier: BSD-3-Clause */
/* What the files of the core share about a communicator (not for bindings). */
#ifndef TACOS_COMM_INTERNAL_H
#define TACOS_COMM_INTERNAL_H

#include <pthread.h>

#include "tacos_comm.h"

/* A buffer of a memory component: pinned staging space, device work space. */
typedef struct {
    char *p;
    size_t bytes;
    const tacos_mc_t *mc;
    /* device: 0 pinned host memory, 1 device memory, 2 device memory the
     * peers map (CUDA IPC's staging; apart in the pool: mapped already);
     * counted: in the process's scratch total (a communicator's) */
    int device, counted;
} tacos_mc_buf_t;

/* Buffers a communicator keeps for its operations of their own. */
#define TACOS_POOL_BUFS 8

typedef struct {
    tacos_coll_t coll;
    int root;
    size_t bytes;
} tacos_wanted_t;

/* The exchange of settings and probe records a nonblocking call starts
 * (setup.c). */
typedef struct tacos_setup tacos_setup_t;

/* How many settings every rank must have alike (tacos_comm_settings_values). */
#define TACOS_NSETTINGS 24

/* The room of a reason that names a parameter. */
#define TACOS_WHY_BYTES 128
/* The room of a problem found with the topology (a file's path and what
 * was wrong with it). */
#define TACOS_PROBLEM_BYTES 640

/* The smallest nonblocking call that starts or waits for the exchange of
 * settings and probe records (setup.c) before the ranks agreed on them, on
 * a communicator within one host; a smaller one falls back and is
 * recorded, as the default coll_tacos_min_bytes would make it do.  A
 * constant: every rank decides alike, also for the calls Open MPI makes
 * from progress (a context-id agreement's few bytes), whose order relative
 * to a blocking call differs between ranks.  (Across hosts the schedules
 * need the measured network, which takes a blocking point: those calls
 * fall back and are recorded too.) */
#define TACOS_SETUP_MIN_BYTES 65536

struct tacos_comm {
    tacos_settings_t s;
    tacos_comm_ops_t ops;
    int agreed;         /* 0 not yet, 1 settings equal and enabled, -1 fall back */
    int settings_said;  /* rank 0 named the settings that differ */
    int topo_said;      /* its topology's problem was said */
    /* the first nonblocking call on a communicator not agreed yet made it;
     * kept while the communicator lives (requests wait for it) */
    tacos_setup_t *setup;
    tacos_setup_t *setup_room; /* its memory until then (ops.agree_in_request within a host) */
    tacos_topo_t *topo; /* built at the first plan that runs a schedule */
    int topo_state;     /* 0 not yet, 1 ready, -1 unusable */
    int busy;           /* running its own collectives */
    tacos_plan_t *cache; /* s.cache_size entries */
    int ncache, next_evict;
    /* the executor state a blocking call runs (tacos_run), and an entry
     * evicted while it did (by a nonblocking call made from progress):
     * freed when the call ends (tacos_comm_run_end) */
    const tacos_exec_t *running;
    tacos_plan_t evicted;
    tacos_wanted_t *wanted; /* keys nonblocking calls found unplanned, s.cache_size at most */
    int nwanted;
    char why[TACOS_WHY_BYTES]; /* a reason naming a parameter */
    /* scratch kept across calls (coll.c): the work buffer, and the
     * executor's space for arriving reductions */
    char *work, *recv;
    size_t work_bytes, recv_bytes;
    tacos_mc_buf_t stage, dwork; /* calls on device buffers: staging, work space */
    tacos_mc_buf_t ipc_stage;    /* blocking calls through CUDA IPC: staging peers read */
    /* what operations of their own (nonblocking, persistent) gave back of
     * their staging and device work space, for the next ones (coll.c): a
     * nonblocking call through CUDA IPC then stages where an earlier one
     * did, which the peers mapped already.  Given back where operations
     * end: on any thread. */
    tacos_mc_buf_t pool[TACOS_POOL_BUFS];
    int npool;
    pthread_mutex_t pool_lock;
    char *on_host; /* ops.on_host's copy (NULL: every rank on this host, or not known) */
    int *host_ids; /* room for every rank's host until on_host is checked
                    * (ipc.c: then found symmetric on every rank, or dropped) */
    int hosts_wanted; /* a persistent or nonblocking call wanted on_host checked: the
                       * next blocking collective does it (host_ids still there) */
    /* CUDA IPC's agreement (ipc.c, from agreed results: the same on every
     * rank): calls that skip it after a "no" of a program on host buffers,
     * and the next such pause; whether each rank can map what the others
     * of its host export (0 not tested yet, 1 yes, -1 no: no IPC).  This
     * rank's own: whether one of its calls on the communicator that could
     * take IPC (agreeing or skipping), or a nonblocking call that asked for
     * the test, was staged through a component with IPC. */
    unsigned ipc_skip, ipc_pause;
    int ipc_mappable, ipc_staged;
    /* a nonblocking call found it untested: the next blocking collective
     * agrees as a blocking call would, with the component of this rank's
     * last such call on GPU memory (NULL: none) */
    int ipc_test_wanted;
    const tacos_mc_t *ipc_test_mc;
};

/* ---- comm.c, for setup.c ---- */

/* Frees what plan p holds (its program through prog_refs). */
void tacos_comm_plan_free(tacos_plan_t *p);

/* The settings every rank must have alike, as numbers. */
void tacos_comm_settings_values(const tacos_comm_t *c, uint64_t v[TACOS_NSETTINGS]);

/* Given eq[i]: whether setting i is equal on every rank, the state
 * tacos_comm_t.agreed takes (1 or -1); rank 0 names those that differ,
 * once. */
int tacos_comm_settings_conclude(tacos_comm_t *c, const char *eq);

/* The topology file's topology (0), or an error code with what was wrong
 * in problem, to be said once the ranks agree (tacos_comm_say_topology). */
int tacos_comm_file_topology(const tacos_comm_t *c, tacos_topo_t **t,
                             char problem[TACOS_PROBLEM_BYTES]);

/* 0 where t is connected, else an error code with what was wrong in
 * problem. */
int tacos_comm_check_topology(const tacos_comm_t *c, const tacos_topo_t *t,
                              char problem[TACOS_PROBLEM_BYTES]);

/* What a rank votes: its topology's hash, or (its problem non-empty, or
 * no topology) the problem's; equal on every rank that failed alike. */
uint64_t tacos_comm_topology_vote(const tacos_topo_t *t, const char *problem);

/* Says why the ranks agreed to fall back for want of a topology, once per
 * communicator (the nonblocking set-up and the first blocking call both
 * conclude).  all_ok: every rank has a topology, not the same one (said
 * by rank 0, the others at verbose level 1).  Else this rank's problem,
 * if any: where every rank found the same one (`same`) rank 0 alone says
 * it and the others at verbose level 1; else each rank that found one
 * (their files differ, or one lacked memory). */
void tacos_comm_say_topology(tacos_comm_t *c, const char *problem, int all_ok, int same);

/* The size class of a call of `bytes`: floor(log2(bytes)). */
int tacos_comm_size_class(size_t bytes);

/* Whether the call is below its threshold: *why names it (in buf). */
int tacos_comm_below_threshold(const tacos_comm_t *c, tacos_coll_t coll, size_t bytes,
                               char buf[TACOS_WHY_BYTES], const char **why);

/* Synthesizes (coll, root, size class) on topo for k = 1, 2, 4, 8 until
 * one is clearly slower (by a tenth) than the best so far, then 16 and 32
 * while each is the fastest so far (tacos_synthesize_for_rank), keeps the one
 * the model times fastest (the same on every rank) and makes this rank's
 * program and its state, not agreed yet (made->agreed 0, made->hash the
 * schedule's); returns whether it did (else made holds nothing).  *sched:
 * the schedule, the caller's to free (NULL where synthesis failed). */
int tacos_comm_make_plan(const tacos_comm_t *c, const tacos_topo_t *topo, tacos_coll_t coll,
                         int root, int size_class, tacos_plan_t *made, tacos_sched_t **sched);

/* ---- schedule_dir.c: coll_tacos_schedule_dir ---- */

/* The schedule synthesis with options o on topo would make, kept in the
 * directory and checked (NULL: none kept, or none that passes; rank 0 says
 * why, once). */
tacos_sched_t *tacos_comm_schedule_read(const tacos_comm_t *c, const tacos_topo_t *topo,
                                        const tacos_synth_opts_t *o);
/* Rank 0 keeps schedule s, synthesized with o, there (whole ones only). */
void tacos_comm_schedule_write(const tacos_comm_t *c, const tacos_topo_t *topo,
                               const tacos_synth_opts_t *o, const tacos_sched_t *s);
/* Removes the file of o (a rank read it and the ranks disagreed). */
void tacos_comm_schedule_forget(const tacos_comm_t *c, const tacos_topo_t *topo,
                                const tacos_synth_opts_t *o);

/* Says what the model gives for schedule s of made; rank 0 dumps it. */
void tacos_comm_report(const tacos_comm_t *c, const tacos_topo_t *topo, const tacos_plan_t *made,
                       const tacos_sched_t *s);

/* ---- setup.c ---- */

/* The memory of the exchange, taken when the communicator is made so that
 * no rank finds itself short of it once the others started (they would
 * wait for its part forever): NULL where there is none. */
tacos_setup_t *tacos_setup_reserve(const tacos_comm_t *c);

/* Starts the exchange in the reserved memory, where none was started. */
void tacos_setup_begin(tacos_comm_t *c);

/* The plan a nonblocking call gets while its request waits for the
 * exchange: the key alone (deferred). */
const tacos_plan_t *tacos_setup_ticket(tacos_comm_t *c, tacos_coll_t coll, int root,
                                       int size_class);

/* Progresses the exchange without blocking: *ready once it is in (also
 * where it failed: the error is returned). */
int tacos_setup_progress(tacos_comm_t *c, int *ready);

/* Progresses it until it is in (a blocking point: every rank gets there). */
int tacos_setup_finish(tacos_comm_t *c);

/* Once it is in, the plan of a deferred call: 1 with *p holding a
 * reference to the program (prog NULL where this rank has none: it votes
 * no), or 0 where every rank runs the textbook program (*why). */
int tacos_setup_take(tacos_comm_t *c, tacos_coll_t coll, int root, size_t bytes, tacos_plan_t *p,
                     const char **why);

void tacos_setup_free(tacos_setup_t *u);

/* Releases a plan's program held by prog_refs (comm.c). */
void tacos_prog_release(tacos_prog_t *prog, int *refs);

/* Frees the communicator's scratch (coll.c). */
void tacos_comm_drop_scratch(tacos_comm_t *c);

/* A message through the binding's log (printf format). */
void tacos_comm_say(const tacos_comm_t *c, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A parameter's name as the binding spells it: the prefix and the name,
 * upper case when the prefix is ("TACOS_MIN_BYTES"). */
const char *tacos_comm_param(const tacos_comm_t *c, const char *name, char buf[64]);

/* The topology from every rank's probe record, calibrated and with the
 * links between hosts measured as the settings say (topology.c; a
 * collective over the binding's callbacks).  0 with *out, or nonzero: the
 * callback's status or a TACOS_ERR_* code, with a message. */
int tacos_comm_probed_topology(tacos_comm_t *c, tacos_topo_t **out);

/* FNV-1a over 64-bit words, from h (TACOS_HASH_OFFSET to start). */
#define TACOS_HASH_OFFSET 1469598103934665603ull
uint64_t tacos_comm_hash_words(uint64_t h, const uint64_t *v, size_t n);

/* Element-wise maximum over the ranks of v[0..n), every value >= 0 and
 * finite, not -0.0 (one max_u64 in place: such doubles order as their bits
 * do). */
int tacos_comm_max_nonneg(tacos_comm_t *c, double *v, int n);

/* Whether every rank's map of the ranks of its host (on_host) says the
 * same, once: where any disagrees, every rank drops its map (ipc.c; a
 * collective; host_ids freed). */
int tacos_comm_check_hosts(tacos_comm_t *c);

/* A blocking call of plan p starts (tacos_comm_run_begin) and ends. */
void tacos_comm_run_begin(tacos_comm_t *c, const tacos_plan_t *p);
void tacos_comm_run_end(tacos_comm_t *c);

/* The agreement a nonblocking call wanted (ipc_test_wanted; ipc.c, a
 * collective): where every rank is staged through a component with IPC,
 * the test whether they can map each other's memory. */
int tacos_ipc_test_wanted(tacos_comm_t *c);

#endif
