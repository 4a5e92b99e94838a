/*
 * The MPI-neutral core of coll/tacos: one communicator's state (settings,
 * topology, schedule cache with the executor's state) and the decisions that
 * must be identical on every rank, reaching MPI only through the callbacks a
 * binding provides (the Open MPI component in coll_tacos/, a PMPI library).
 *
 * Status codes: the core returns 0, or the nonzero status a callback
 * returned, untouched (the binding's space, e.g. an MPI error).  Whatever
 * else goes wrong inside the core (no memory, a bad topology file, ranks
 * that disagree) is a fall-back agreed by every rank: a NULL plan with a
 * reason, never a status.
 */
#ifndef TACOS_COMM_H
#define TACOS_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"
#include "tacos_synth.h"

/* The settings that decide which messages a rank sends (compared across
 * ranks at the first plan), and the local ones. */
typedef struct {
    int enable, min_bytes, rooted_min_bytes, chunks, seed, trials, unwind_degree;
    int probe, calibrate, measure, cache_size;
    char *topo_file; /* NULL: the binding's probe */
    /* local: no message depends on them */
    int deterministic;
    int verbose;          /* >= 5: rank 0's schedule lines also give the optimal time */
    const char *dump_dir; /* NULL or empty: no dumps */
    const char *param_prefix; /* how the binding names parameters: "coll_tacos_" */
} tacos_settings_t;

typedef struct {
    void *ctx;
    int rank, size;
    unsigned id; /* names the communicator in messages and dump files */
    /* v[0..n) = its maximum over the ranks, in place (a collective). */
    int (*max_u64)(void *ctx, uint64_t *v, int n);
    /* The topology when no file is given (it may run collectives). */
    int (*probe_topology)(void *ctx, tacos_topo_t **out);
    /* A message: level 0 always (errors, once where every rank says the same:
     * the core prints those on rank 0 only), higher ones by verbosity. */
    void (*log)(void *ctx, int level, const char *msg);
} tacos_comm_ops_t;

/* A synthesized program with what every call of it needs (made while the
 * ranks agree on it, so a call allocates nothing but scratch). */
typedef struct {
    tacos_coll_t coll;
    int root, k, size_class;
    tacos_prog_t *prog; /* NULL: this key falls back */
    tacos_exec_t *exec; /* the executor's state */
    size_t *off;        /* block offsets, size + 1 */
} tacos_plan_t;

typedef struct tacos_comm tacos_comm_t;

/* NULL when out of memory.  The settings are copied. */
tacos_comm_t *tacos_comm_new(const tacos_settings_t *s, const tacos_comm_ops_t *ops);
void tacos_comm_free(tacos_comm_t *c);
const tacos_settings_t *tacos_comm_settings(const tacos_comm_t *c);

/* The plan for a call of `bytes` bytes of type signature (equal on every
 * rank) in *plan, or NULL with *why.  Every reason is decided from inputs
 * equal on every rank; the first call agrees on the settings, the first of
 * a key synthesizes and agrees on the schedule.  While the core runs its
 * own collectives (the callbacks), a call that comes back into the binding
 * gets a NULL plan ("called ... during coll/tacos setup"). */
int tacos_comm_plan(tacos_comm_t *c, tacos_coll_t coll, int root, size_t bytes, const char **why,
                    const tacos_plan_t **plan);

#endif
