/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One communicator's coll/tacos state and the decisions every rank must
 * make alike: the settings compared across ranks, the topology (a file or
 * the binding's probe) agreed by hash, and a cache of synthesized programs,
 * each agreed by the hash of its schedule, with the executor's state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "comm_internal.h"
#include "tacos_probe.h" /* TACOS_FABRIC_INFER_MAX_HOSTS */


void tacos_comm_say(const tacos_comm_t *c, int level, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->ops.log(c->ops.ctx, level, msg);
}

/* A plan's program is shared by the cache and by each operation in flight
 * or persistent request that runs it: freed by the last of them (an entry
 * evicted while in use lives on in those; an operation may end in another
 * thread's progress: atomic counts). */
void tacos_prog_release(tacos_prog_t *prog, int *refs)
{
    if (refs && __atomic_sub_fetch(refs, 1, __ATOMIC_ACQ_REL) == 0) {
        tacos_prog_free(prog);
        free(refs);
    }
}

void tacos_comm_plan_free(tacos_plan_t *p)
{
    tacos_exec_free(p->exec);
    tacos_prog_release(p->prog, p->prog_refs);
    free(p->off);
    p->prog = NULL, p->exec = NULL, p->off = NULL, p->prog_refs = NULL;
}

const char *tacos_comm_param(const tacos_comm_t *c, const char *name, char buf[64])
{
    const char *prefix = c->s.param_prefix ? c->s.param_prefix : "";
    int upper = prefix[0] >= 'A' && prefix[0] <= 'Z';
    size_t n = (size_t)snprintf(buf, 64, "%s%s", prefix, name);
    for (size_t i = strlen(prefix); upper && i < n && i < 63; i++)
        if (buf[i] >= 'a' && buf[i] <= 'z')
            buf[i] = (char)(buf[i] - 'a' + 'A');
    return buf;
}

/* mkdir -p of parameter `param`'s directory, tried once per process
 * (*tried; a message if it cannot). */
static void make_dirs(const tacos_comm_t *c, const char *param, const char *dir, int *tried)
{
    if (__atomic_exchange_n(tried, 1, __ATOMIC_RELAXED))
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *q = path + 1;; q++) {
        if (*q && *q != '/')
            continue;
        char end = *q;
        *q = 0;
        if (mkdir(path, 0755) && errno != EEXIST) {
            char p[64];
            tacos_comm_say(c, 0, "%s: cannot create %s: %s", tacos_comm_param(c, param, p), path,
                           strerror(errno));
            return;
        }
        if (!(*q = end))
            return;
    }
}

/* Which ranks share this rank's host (the first 16), as the binding said. */
static void say_host(const tacos_comm_t *c)
{
    char list[16 * 12 + 8] = "";
    size_t at = 0;
    for (int r = 0, shown = 0; r < c->ops.size; r++) {
        if (!c->on_host[r])
            continue;
        if (shown++ == 16) {
            strcpy(list + at, " ...");
            break;
        }
        at += (size_t)snprintf(list + at, sizeof list - at, " %d", r);
    }
    tacos_comm_say(c, 10, "communicator %u, rank %d of %d: ranks of its host:%s", c->ops.id,
                   c->ops.rank, c->ops.size, list);
}

tacos_comm_t *tacos_comm_new(const tacos_settings_t *s, const tacos_comm_ops_t *ops)
{
    tacos_comm_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->s = *s;
    c->ops = *ops;
    pthread_mutex_init(&c->pool_lock, NULL);
    c->s.cache_size = s->cache_size > 0 ? s->cache_size : 1;
    c->s.infer_hosts = s->infer_hosts < 1                              ? 1
                       : s->infer_hosts > TACOS_FABRIC_INFER_MAX_HOSTS ? TACOS_FABRIC_INFER_MAX_HOSTS
                                                                       : s->infer_hosts;
    c->s.hierarchy = s->hierarchy < TACOS_HIER_FLAT || s->hierarchy > TACOS_HIER_AUTO
                         ? TACOS_HIER_FLAT
                         : s->hierarchy;
    c->s.topo_file = c->s.fabric_file = NULL;
    c->ops.on_host = NULL;
    int copy_host = ops->spans_hosts && ops->on_host && ops->size > 0 && s->cuda_ipc_min_bytes >= 0;
    if (copy_host && (c->on_host = malloc((size_t)ops->size)))
        memcpy(c->on_host, ops->on_host, (size_t)ops->size);
    int short_of_host = copy_host && !c->on_host;
    /* room to check the ranks' maps agree before IPC (ipc.c) */
    if (copy_host && !(c->host_ids = malloc((size_t)ops->size * sizeof *c->host_ids)))
        short_of_host = 1;
    c->cache = calloc((size_t)c->s.cache_size, sizeof *c->cache);
    c->wanted = calloc((size_t)c->s.cache_size, sizeof *c->wanted);
    static int dump_tried, schedule_tried;
    if (s->dump_dir && s->dump_dir[0])
        make_dirs(c, "dump_dir", s->dump_dir, &dump_tried);
    if (s->schedule_dir && s->schedule_dir[0])
        make_dirs(c, "schedule_dir", s->schedule_dir, &schedule_tried);
    if (ops->agree_in_request && !ops->spans_hosts)
        c->setup_room = tacos_setup_reserve(c);
    int short_of_setup = ops->agree_in_request && !ops->spans_hosts && !c->setup_room;
    int short_of_files = (s->topo_file && s->topo_file[0] && !(c->s.topo_file = strdup(s->topo_file))) ||
                         (s->fabric_file && s->fabric_file[0] && !(c->s.fabric_file = strdup(s->fabric_file)));
    if (!c->cache || !c->wanted || short_of_host || short_of_setup || short_of_files) {
        tacos_comm_free(c);
        return NULL;
    }
    if (c->on_host && s->verbose >= 10)
        say_host(c);
    return c;
}

void tacos_comm_free(tacos_comm_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->ncache; i++)
        tacos_comm_plan_free(&c->cache[i]);
    free(c->cache);
    free(c->wanted);
    tacos_comm_drop_scratch(c);
    pthread_mutex_destroy(&c->pool_lock);
    tacos_topo_free(c->topo);
    tacos_setup_free(c->setup);
    tacos_setup_free(c->setup_room);
    free(c->s.topo_file);
    free(c->s.fabric_file);
    free(c->on_host);
    free(c->host_ids);
    free(c);
}

const tacos_settings_t *tacos_comm_settings(const tacos_comm_t *c) { return &c->s; }

/* ---- agreement ------------------------------------------------------------ */

/* Whether each of v[0..n) (n <= ALL_EQUAL_MAX) is equal on every rank
 * (eq[i]), with one max over the values and their complements (max of ~v =
 * ~min). */
#define ALL_EQUAL_MAX 32
static int all_equal(tacos_comm_t *c, const uint64_t *v, int n, char *eq)
{
    uint64_t w[2 * ALL_EQUAL_MAX];
    for (int i = 0; i < n; i++)
        w[i] = v[i], w[n + i] = ~v[i];
    c->busy = 1;
    int rc = c->ops.max_u64(c->ops.ctx, w, 2 * n);
    c->busy = 0;
    for (int i = 0; i < n; i++)
        eq[i] = !rc && w[i] == ~w[n + i];
    return rc;
}

/* All ranks are ok and hold the same 64-bit hash (*agreed); *differ (may
 * be NULL): all are ok but the hashes differ. */
static int agree(tacos_comm_t *c, int ok, uint64_t h, int *agreed, int *differ)
{
    uint64_t v[2] = {(uint64_t)ok, h};
    char eq[2];
    int rc = all_equal(c, v, 2, eq);
    *agreed = ok && eq[0] && eq[1];
    if (differ)
        *differ = ok && eq[0] && !eq[1];
    return rc;
}

uint64_t tacos_comm_hash_words(uint64_t h, const uint64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h;
}

static uint64_t string_hash(const char *s)
{
    uint64_t h = TACOS_HASH_OFFSET;
    for (; s && *s; s++) {
        uint64_t v = (unsigned char)*s;
        h = tacos_comm_hash_words(h, &v, 1);
    }
    return s ? h : 0;
}

static uint64_t sched_hash(const tacos_sched_t *s)
{
    if (s->levels == 2) { /* one rank's part: what every rank shares of it */
        uint64_t v[3] = {0, (uint64_t)s->chunks_per_npu, (uint64_t)s->nchunks};
        memcpy(&v[0], &s->time_us, sizeof v[0]);
        return tacos_comm_hash_words(TACOS_HASH_OFFSET, v, 3);
    }
    uint64_t h = TACOS_HASH_OFFSET ^ s->nxfers;
    for (size_t i = 0; i < s->nxfers; i++) {
        const tacos_xfer_t *x = &s->xfers[i];
        int joined = i && tacos_same_message(x, x - 1); /* (tacos_op_t.joined) */
        uint64_t v = (uint64_t)x->chunk << 34 ^ (uint64_t)x->src << 17 ^ (uint64_t)x->dst ^
                     (uint64_t)joined << 62 ^ (uint64_t)(x->reduce != 0) << 63;
        h = tacos_comm_hash_words(h, &v, 1);
    }
    return h;
}

static const char *const settings_names[] = {
    "enable", "min_bytes", "rooted_min_bytes", "chunks", "seed", "trials", "unwind_degree",
    "probe", "calibrate", "measure", "cache_size", "topo_file", "nonblocking", "net_piece_bytes",
    "v_schedules", "gather_min_bytes", "rooted_net_min_bytes", "cuda_ipc_min_bytes",
    "fabric_file", "infer_hosts", "hierarchy", "reuse_percent", "chunks_per_message",
    "message_bytes"};
_Static_assert(sizeof settings_names / sizeof settings_names[0] == TACOS_NSETTINGS,
               "a name per setting compared");
_Static_assert(TACOS_NSETTINGS <= ALL_EQUAL_MAX, "all_equal compares at most ALL_EQUAL_MAX values");

void tacos_comm_settings_values(const tacos_comm_t *c, uint64_t v[TACOS_NSETTINGS])
{
    const tacos_settings_t *s = &c->s;
    const uint64_t w[TACOS_NSETTINGS] = {
        (uint64_t)s->enable, (uint64_t)s->min_bytes, (uint64_t)s->rooted_min_bytes,
        (uint64_t)s->chunks, (uint64_t)s->seed, (uint64_t)s->trials, (uint64_t)s->unwind_degree,
        (uint64_t)s->probe, (uint64_t)s->calibrate, (uint64_t)s->measure,
        (uint64_t)s->cache_size, string_hash(s->topo_file), (uint64_t)s->nonblocking,
        (uint64_t)s->net_piece, (uint64_t)s->v_schedules, (uint64_t)s->gather_min_bytes,
        (uint64_t)s->rooted_net_min_bytes, (uint64_t)s->cuda_ipc_min_bytes,
        string_hash(s->fabric_file), (uint64_t)s->infer_hosts, (uint64_t)s->hierarchy,
        (uint64_t)s->reuse_percent, (uint64_t)s->chunks_per_message, (uint64_t)s->message_bytes};
    memcpy(v, w, sizeof w);
}

int tacos_comm_settings_conclude(tacos_comm_t *c, const char *eq)
{
    char differ[1024] = "", param[64];
    for (int i = 0; i < TACOS_NSETTINGS; i++)
        if (!eq[i])
            snprintf(differ + strlen(differ), sizeof differ - strlen(differ), "%s%s",
                     differ[0] ? ", " : "", tacos_comm_param(c, settings_names[i], param));
    if (differ[0] && c->ops.rank == 0 && !c->settings_said)
        tacos_comm_say(c, 0, "the ranks of communicator %u have different %s; falling back to %s",
                       c->ops.id, differ, c->s.previous);
    c->settings_said |= differ[0] != 0;
    return !differ[0] && c->s.enable ? 1 : -1;
}

/* At the first plan, every rank (also those with enable off) learns whether
 * the settings are equal everywhere; any difference: one message naming
 * them, and the fall-back for the communicator's lifetime. */
static int settings_agreed(tacos_comm_t *c, int *use)
{
    *use = c->agreed > 0;
    if (c->agreed)
        return 0;
    uint64_t v[TACOS_NSETTINGS];
    char eq[TACOS_NSETTINGS];
    tacos_comm_settings_values(c, v);
    int rc = all_equal(c, v, TACOS_NSETTINGS, eq);
    if (rc)
        return rc;
    c->agreed = tacos_comm_settings_conclude(c, eq);
    *use = c->agreed > 0;
    return 0;
}

/* ---- topology ------------------------------------------------------------- */

static void dump(const tacos_comm_t *c, const char *what, const tacos_topo_t *t,
                 const tacos_sched_t *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tacos-comm%u-%s.json", c->s.dump_dir, c->ops.id, what);
    if (t ? tacos_topo_write_file(t, path) : tacos_sched_write_file(s, path))
        tacos_comm_say(c, 0, "dump: %s", tacos_last_error());
}

/* What rc (tacos_last_error()) says was wrong, between before and after,
 * kept to be said once the ranks agree; a rank that lacked memory names
 * itself, so that its problem is its own (tacos_comm_say_topology). */
static int note_problem(const tacos_comm_t *c, int rc, const char *before, const char *after,
                        char problem[TACOS_PROBLEM_BYTES])
{
    char rank[32] = "";
    if (rc == TACOS_ERR_NOMEM)
        snprintf(rank, sizeof rank, " on rank %d", c->ops.rank);
    snprintf(problem, TACOS_PROBLEM_BYTES, "%s%s%s%s", before, tacos_last_error(), after, rank);
    return rc;
}

int tacos_comm_file_topology(const tacos_comm_t *c, tacos_topo_t **t,
                             char problem[TACOS_PROBLEM_BYTES])
{
    int n = c->ops.size, rc = tacos_topo_read_file_npus(c->s.topo_file, n, t);
    char p[64], before[80], after[64];
    if (!rc)
        return 0;
    snprintf(before, sizeof before, "%s: ", tacos_comm_param(c, "topo_file", p));
    snprintf(after, sizeof after, " (the communicator has %d ranks)", n);
    return note_problem(c, rc, before, after, problem);
}

int tacos_comm_check_topology(const tacos_comm_t *c, const tacos_topo_t *t,
                              char problem[TACOS_PROBLEM_BYTES])
{
    int rc = tacos_topo_check_connected(t);
    return rc ? note_problem(c, rc, "", "", problem) : 0;
}

void tacos_comm_say_topology(tacos_comm_t *c, const char *problem, int all_ok, int same)
{
    if (c->topo_said || (!all_ok && !problem[0]))
        return;
    if (all_ok)
        tacos_comm_say(c, c->ops.rank ? 1 : 0,
                       "the ranks of communicator %u have different topologies; falling back "
                       "to %s",
                       c->ops.id, c->s.previous);
    else
        tacos_comm_say(c, same && c->ops.rank ? 1 : 0, "%s; falling back to %s", problem,
                       c->s.previous);
    c->topo_said = 1;
}

uint64_t tacos_comm_topology_vote(const tacos_topo_t *t, const char *problem)
{
    return t && !problem[0] ? tacos_topo_hash(t) : string_hash(problem);
}

/* The lowering of topo that plan p was synthesized on. */
static const tacos_topo_t *plan_topo(const tacos_topo_t *topo, const tacos_plan_t *p)
{
    return p->fully_unwound ? topo->full : topo;
}

/* Builds the topology once; an agreed -1 state means fall back. */
static int ensure_topology(tacos_comm_t *c)
{
    if (c->topo_state)
        return 0;
    int ok = 1, rc = 0;
    char problem[TACOS_PROBLEM_BYTES] = "", eq[3];
    tacos_topo_t *t = NULL;
    if (c->s.topo_file) {
        ok = !tacos_comm_file_topology(c, &t, problem);
    } else {
        c->busy = 1;
        rc = tacos_comm_probed_topology(c, &t);
        c->busy = 0;
        ok = !rc && t;
        if (rc == TACOS_ERR_NOMEM) /* (the probe says its other failures) */
            note_problem(c, rc, "no topology: ", "", problem);
    }
    ok = ok && !tacos_comm_check_topology(c, t, problem);
    /* ok everywhere with one hash: agreed; failed everywhere with one
     * problem: rank 0 says it */
    /* (the full lowering voted apart: where only it differs, short of
     * memory on a rank, every rank goes on without it) */
    uint64_t v[3] = {(uint64_t)ok, tacos_comm_topology_vote(ok ? t : NULL, problem),
                     ok && t->full ? tacos_topo_hash(t->full) : 0};
    rc = all_equal(c, v, 3, eq);
    if (rc || !ok || !eq[0] || !eq[1]) {
        if (!rc)
            tacos_comm_say_topology(c, problem, ok && eq[0], eq[0] && eq[1]);
        tacos_topo_free(t);
        c->topo_state = rc ? 0 : -1; /* an error: undecided, returned */
        return rc;
    }
    if (!eq[2]) {
        tacos_comm_say(c, 5, "the ranks' networks fully unwound differ (memory was short on "
                             "one): every size on %s", t->name);
        tacos_topo_free(t->full);
        t->full = NULL;
    }
    c->topo = t;
    c->topo_state = 1;
    if (c->s.dump_dir && c->s.dump_dir[0] && c->ops.rank == 0) {
        dump(c, "topology", t, NULL);
        if (t->full)
            dump(c, "topology-fully-unwound", t->full, NULL);
    }
    return 0;
}

/* ---- programs --------------------------------------------------------------- */

/* The size class whose schedule serves size_class on topo: the smallest
 * class at which every link's latency is at most reuse_percent of its time
 * to carry one chunk (at the largest k the settings may pick), where that
 * is below size_class (every larger class then faces the same problem
 * scaled: docs/synthesis.md); else size_class.  A function of the
 * topology, the settings and the class alone, so a class's schedule does
 * not depend on which calls came first.  On the automatic lowering (topo,
 * not topo->full): with reuse_percent 2 a class that serves others has
 * chunks of 50 latencies' time and more, far past where the full lowering
 * is taken. */
static int schedule_class(const tacos_comm_t *c, const tacos_topo_t *topo, int size_class)
{
    int k = c->s.chunks > 0 ? c->s.chunks : TACOS_AUTO_MAX_K, lo = 0, hi = size_class;
    double p = c->s.reuse_percent / 100.0;
    if (p <= 0 || tacos_latency_share(topo, k, (uint64_t)1 << size_class) > p)
        return size_class;
    while (lo < hi) { /* the share falls as the class grows */
        int mid = lo + (hi - lo) / 2;
        if (tacos_latency_share(topo, k, (uint64_t)1 << mid) <= p)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The synthesis options of (coll, root, size class) on topo under the
 * settings: those of the class whose schedule serves it. */
static tacos_synth_opts_t synth_opts(const tacos_comm_t *c, const tacos_topo_t *topo,
                                     tacos_coll_t coll, int root, int size_class)
{
    const tacos_settings_t *st = &c->s;
    int served_by = schedule_class(c, topo, size_class);
    return (tacos_synth_opts_t){coll, root, st->chunks, (uint64_t)1 << served_by,
                                (uint64_t)st->seed, st->trials > 0 ? st->trials : 1,
                                st->chunks_per_message, (uint64_t)st->message_bytes};
}

/* Gives plan p (its prog, prog_refs and k set) its executor state; says
 * where memory is short (the ranks agree after, so every rank falls back). */
static int plan_exec(const tacos_comm_t *c, tacos_plan_t *p)
{
    int n = c->ops.size;
    if (p->prog_refs && !tacos_exec_new(p->prog, n, p->k, &p->exec) &&
        (p->off = malloc(((size_t)n + 1) * sizeof *p->off)))
        return 1;
    tacos_comm_say(c, 0, "out of memory for a %s schedule on rank %d; that size falls back",
                   tacos_coll_name(p->coll), c->ops.rank);
    return 0;
}

/* Synthesizes (coll, root, size class) with the chunks and hierarchy
 * settings (tacos_synthesize_for_rank; the same on every rank),
 * and makes this rank's program and its state, not agreed yet
 * (made->agreed 0, made->hash the schedule's); returns whether it did
 * (else made holds nothing).  *s: the schedule, the caller's to free (NULL
 * where synthesis failed). */
int tacos_comm_make_plan(const tacos_comm_t *c, const tacos_topo_t *topo, tacos_coll_t coll,
                         int root, int size_class, tacos_plan_t *made, tacos_sched_t **sched)
{
    const tacos_settings_t *st = &c->s;
    tacos_sched_t *s = NULL;
    int ok = 1, fault = tacos_fault("synth");
    *made = (tacos_plan_t){.coll = coll, .root = root, .size_class = size_class};
    tacos_synth_opts_t o = synth_opts(c, topo, coll, root, size_class);
    /* the lowering the serving class takes (tacos_lowering_for; topo where
     * that runs short of memory: the schedules' hashes then differ and the
     * ranks fall back for this size) */
    const tacos_topo_t *on = topo;
    (void)tacos_lowering_for(topo, topo->full, o.size_bytes, &on);
    made->fully_unwound = on != topo;
    topo = on;
    tacos_sched_t *kept = fault ? NULL : tacos_comm_schedule_read(c, topo, &o);
    s = kept;
    made->read = kept != NULL;
    ok = !fault && (kept || tacos_synthesize_for_rank(topo, &o, (tacos_hier_t)st->hierarchy,
                                                      c->ops.rank, &s) == TACOS_OK);
    if (ok && !kept)
        tacos_comm_schedule_write(c, topo, &o, s);
    made->k = ok ? s->chunks_per_npu : 0;
    ok = ok && tacos_sched_program(s, c->ops.rank, &made->prog) == TACOS_OK;
    if (!ok)
        tacos_comm_say(c, 0, "%s synthesis on %s: %s; that size falls back", tacos_coll_name(coll),
                       topo->name, fault ? "a fault injected (TACOS_FAULT)" : tacos_last_error());
    if (ok && (made->prog_refs = malloc(sizeof *made->prog_refs)))
        *made->prog_refs = 1; /* the cache's */
    else if (ok) /* no reference to count it with: freed here */
        tacos_prog_free(made->prog), made->prog = NULL;
    ok = ok && plan_exec(c, made);
    if (!ok)
        tacos_comm_plan_free(made);
    made->hash = ok ? sched_hash(s) ^ (uint64_t)tacos_fault("hash") : 0;
    *sched = s;
    return ok;
}

/* Says what the model gives for schedule s of made; rank 0 dumps it. */
void tacos_comm_report(const tacos_comm_t *c, const tacos_topo_t *topo, const tacos_plan_t *made,
                       const tacos_sched_t *s)
{
    const tacos_settings_t *st = &c->s;
    const char *coll = tacos_coll_name(made->coll);
    const tacos_topo_t *on = plan_topo(topo, made);
    if (st->dump_dir && st->dump_dir[0] && c->ops.rank == 0 && s->levels != 2) {
        char what[128];
        snprintf(what, sizeof what, "%s-root%d-k%d-%zuB", coll, made->root, made->k,
                 (size_t)s->size_bytes);
        dump(c, what, NULL, s);
    }
    /* the throughput-optimal time costs seconds at hundreds of ranks and is
     * the same on all: rank 0 alone computes it, and only when it is shown */
    char optimal[64] = "";
    double opt;
    if (st->verbose >= 5 && c->ops.rank == 0 &&
        !tacos_optimal_bound(on, made->coll, made->root, (uint64_t)s->size_bytes, &opt))
        snprintf(optimal, sizeof optimal, ", optimal %.3f us (%.0f%%)", opt,
                 100 * opt / s->time_us);
    static const char *const how[] = {"", " in levels", " in levels (this rank's part)"};
    char served[64] = "", packed[48] = "";
    if (s->size_bytes != (uint64_t)1 << made->size_class)
        snprintf(served, sizeof served, " (the %zu-byte class's schedule)", (size_t)s->size_bytes);
    int most = st->verbose >= 5 && st->chunks_per_message > 1 ? tacos_sched_most_per_message(s) : 1;
    if (most > 1)
        snprintf(packed, sizeof packed, ", up to %d chunks a message", most);
    tacos_comm_say(c, 5,
                   "%s root %d k=%d%s for %zu-byte class%s%s: %zu transfers%s, %.3f us modelled%s",
                   coll, made->root, made->k, how[s->levels], (size_t)1 << made->size_class,
                   served, made->fully_unwound ? ", switches fully unwound" : "", s->nxfers, packed,
                   s->time_us, optimal);
}

/* make_plan, then the ranks agree on the schedule (a collective). */
static int synthesize(tacos_comm_t *c, tacos_coll_t coll, int root, int size_class,
                      tacos_plan_t *made)
{
    tacos_sched_t *s;
    int agreed = 0, differ = 0, ok = tacos_comm_make_plan(c, c->topo, coll, root, size_class, made, &s);
    int rc = agree(c, ok, made->hash, &agreed, &differ);
    if (differ)
        tacos_comm_say(c, 1, "ranks synthesized different %s schedules; falling back",
            tacos_coll_name(coll));
    if (differ && made->read) {
        tacos_synth_opts_t o = synth_opts(c, c->topo, coll, root, size_class);
        tacos_comm_schedule_forget(c, plan_topo(c->topo, made), &o);
    }
    if (agreed)
        tacos_comm_report(c, c->topo, made, s);
    tacos_sched_free(s);
    if (rc || !agreed)
        tacos_comm_plan_free(made);
    made->agreed = 1;
    return rc;
}

int tacos_comm_size_class(size_t bytes)
{
    int size_class = 0;
    while (size_class < 62 && ((size_t)2 << size_class) <= bytes)
        size_class++;
    return size_class;
}

/* The cached plan of a key, or NULL. */
static tacos_plan_t *cached(tacos_comm_t *c, tacos_coll_t coll, int root, int size_class)
{
    for (int i = 0; i < c->ncache; i++) {
        tacos_plan_t *e = &c->cache[i];
        if (e->coll == coll && e->root == root && e->size_class == size_class)
            return e;
    }
    return NULL;
}

/* made in the cache; every rank puts and evicts the same entries (in
 * collective order), so the caches stay identical. */
static tacos_plan_t *cache_put(tacos_comm_t *c, const tacos_plan_t *made)
{
    tacos_plan_t *slot = &c->cache[c->ncache];
    if (c->ncache < c->s.cache_size) {
        c->ncache++;
    } else {
        slot = &c->cache[c->next_evict];
        c->next_evict = (c->next_evict + 1) % c->s.cache_size;
        if (slot->exec && slot->exec == c->running) /* in use: freed when that call ends */
            c->evicted = *slot;
        else
            tacos_comm_plan_free(slot);
    }
    *slot = *made;
    return slot;
}

void tacos_comm_run_begin(tacos_comm_t *c, const tacos_plan_t *p) { c->running = p->exec; }

void tacos_comm_run_end(tacos_comm_t *c)
{
    c->running = NULL;
    tacos_comm_plan_free(&c->evicted);
}

/* A plan for the size class that shares the program of e, the plan of the
 * class whose schedule serves it (the same on every rank); the ranks agree
 * on it, so that one rank short of memory makes every rank fall back. */
static int share(tacos_comm_t *c, const tacos_plan_t *e, int size_class, tacos_plan_t *made)
{
    int agreed = 0;
    *made = (tacos_plan_t){.coll = e->coll, .root = e->root, .size_class = size_class, .k = e->k,
                           .hash = e->hash, .agreed = 1};
    if (!e->prog) /* it falls back: so does this one, on every rank */
        return 0;
    made->prog = e->prog, made->prog_refs = e->prog_refs;
    __atomic_add_fetch(made->prog_refs, 1, __ATOMIC_ACQ_REL);
    int ok = plan_exec(c, made), rc = agree(c, ok, e->hash, &agreed, NULL);
    if (rc || !agreed)
        tacos_comm_plan_free(made);
    else
        tacos_comm_say(c, 5, "%s root %d, %zu-byte class: the %zu-byte class's schedule (k=%d)",
                       tacos_coll_name(e->coll), e->root, (size_t)1 << size_class,
                       (size_t)1 << e->size_class, e->k);
    return rc;
}

/* This rank's program for (coll, root, bytes), synthesized on first use. */
static int program(tacos_comm_t *c, tacos_coll_t coll, int root, size_t bytes, const char **why,
                   const tacos_plan_t **out)
{
    int rc = ensure_topology(c);
    if (rc || c->topo_state < 0) {
        *why = "no usable topology";
        return rc;
    }
    int size_class = tacos_comm_size_class(bytes);
    tacos_plan_t *e = cached(c, coll, root, size_class);
    if (e) {
        *why = "synthesis failed or ranks disagreed earlier";
        *out = e->prog ? e : NULL;
        return 0;
    }
    tacos_plan_t made;
    int served_by = schedule_class(c, c->topo, size_class);
    const tacos_plan_t *by = NULL;
    if (served_by == size_class)
        rc = synthesize(c, coll, root, size_class, &made);
    else if (!(rc = program(c, coll, root, (size_t)1 << served_by, why, &by)))
        rc = share(c, cached(c, coll, root, served_by), size_class, &made);
    if (rc) /* undecided: nothing cached */
        return rc;
    tacos_plan_t *slot = cache_put(c, &made);
    *why = "synthesis failed or ranks disagreed";
    *out = slot->prog ? slot : NULL;
    return 0;
}

/* Keys nonblocking calls wanted, planned by the next blocking call. */
static int plan_wanted(tacos_comm_t *c)
{
    int rc = 0, n = c->nwanted;
    c->nwanted = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char *why = NULL;
        const tacos_plan_t *p;
        rc = tacos_comm_plan(c, c->wanted[i].coll, c->wanted[i].root, c->wanted[i].bytes, &why,
                             &p);
    }
    return rc;
}

int tacos_comm_below_threshold(const tacos_comm_t *c, tacos_coll_t coll, size_t bytes,
                               char buf[TACOS_WHY_BYTES], const char **why)
{
    /* Gather and Scatter, Bcast and Reduce (between hosts: their own), the rest */
    int k = coll == TACOS_GATHER || coll == TACOS_SCATTER ? 2 : tacos_coll_rooted(coll);
    if (k == 1 && c->ops.spans_hosts)
        k = 3;
    const int min[] = {c->s.min_bytes, c->s.rooted_min_bytes, c->s.gather_min_bytes,
                       c->s.rooted_net_min_bytes};
    static const char *const name[] = {"min_bytes", "rooted_min_bytes", "gather_min_bytes",
                                       "rooted_net_min_bytes"};
    if (bytes >= (size_t)min[k])
        return 0;
    char p[64];
    snprintf(buf, TACOS_WHY_BYTES, "below %s", tacos_comm_param(c, name[k], p));
    *why = buf;
    return 1;
}

/* tacos_comm_plan; persistent: for a persistent call, which falls back
 * where coll_tacos_nonblocking is 0 */
static int plan_key(tacos_comm_t *c, tacos_coll_t coll, int root, size_t bytes, int persistent,
                    const char **why, const tacos_plan_t **plan)
{
    int use, rc;
    *plan = NULL;
    if (c->busy) {
        *why = "called by the previous component during coll/tacos setup";
        return 0;
    }
    if ((rc = tacos_comm_prepare(c)))
        return rc;
    if (*why)
        return 0;
    if ((rc = settings_agreed(c, &use)))
        return rc;
    if (!use) {
        *why = "coll/tacos is off or its settings differ between ranks";
        return 0;
    }
    if (tacos_comm_below_threshold(c, coll, bytes, c->why, why))
        return 0;
    if (persistent && !c->s.nonblocking) {
        char p[64];
        snprintf(c->why, sizeof c->why, "%s is 0", tacos_comm_param(c, "nonblocking", p));
        *why = c->why;
        return 0;
    }
    return program(c, coll, root, bytes, why, plan);
}

int tacos_comm_plan(tacos_comm_t *c, tacos_coll_t coll, int root, size_t bytes, const char **why,
                    const tacos_plan_t **p)
{
    return plan_key(c, coll, root, bytes, 0, why, p);
}

int tacos_comm_v_schedules(tacos_comm_t *c, const char **why)
{
    int use = 0, rc = c->busy ? 0 : settings_agreed(c, &use);
    char p[64];
    *why = c->busy ? "called by the previous component during coll/tacos setup"
           : !use  ? "coll/tacos is off or its settings differ between ranks"
                   : NULL;
    if (!*why && !c->s.v_schedules) {
        snprintf(c->why, sizeof c->why, "%s off", tacos_comm_param(c, "v_schedules", p));
        *why = c->why;
    }
    return rc;
}

/* The ranks agree on the plans nonblocking calls made (in cache order, the
 * same on every rank), ALL_EQUAL_MAX / 2 at a time: from now on their calls
 * need not agree.  On an error the rest stay as they were (on every rank). */
static int agree_made(tacos_comm_t *c)
{
    enum { BATCH = ALL_EQUAL_MAX / 2 };
    tacos_plan_t *e[BATCH];
    uint64_t v[2 * BATCH];
    char eq[2 * BATCH];
    for (int i = 0; i < c->ncache;) {
        int k = 0, rc;
        for (; i < c->ncache && k < BATCH; i++)
            if (!c->cache[i].agreed) {
                e[k] = &c->cache[i];
                v[2 * k] = e[k]->prog != NULL, v[2 * k + 1] = e[k]->hash;
                k++;
            }
        if (!k)
            break;
        if ((rc = all_equal(c, v, 2 * k, eq)))
            return rc;
        for (int j = 0; j < k; j++) {
            int agreed = e[j]->prog && eq[2 * j] && eq[2 * j + 1];
            if (!agreed && e[j]->prog && c->ops.rank == 0)
                tacos_comm_say(c, 1, "the ranks do not all have the same %s schedule; falling back",
                               tacos_coll_name(e[j]->coll));
            if (e[j]->prog && e[j]->read && eq[2 * j] && !eq[2 * j + 1]) { /* all have one */
                tacos_synth_opts_t o =
                    synth_opts(c, c->topo, e[j]->coll, e[j]->root, e[j]->size_class);
                tacos_comm_schedule_forget(c, plan_topo(c->topo, e[j]), &o);
            }
            if (!agreed)
                tacos_comm_plan_free(e[j]);
            e[j]->agreed = 1;
        }
    }
    return 0;
}

int tacos_comm_prepare(tacos_comm_t *c)
{
    int rc = 0;
    if (c->busy)
        return 0;
    if (c->setup) { /* (a nonblocking call started it: every rank did) */
        int use;
        if ((rc = tacos_setup_finish(c)) || (rc = settings_agreed(c, &use)) ||
            (use && (rc = ensure_topology(c))))
            return rc;
    }
    if ((rc = agree_made(c)))
        return rc;
    if (c->hosts_wanted && c->host_ids)
        rc = tacos_comm_check_hosts(c);
    if (!rc && c->ipc_test_wanted)
        rc = tacos_ipc_test_wanted(c);
    if (c->agreed < 0 || (c->agreed > 0 && c->topo_state)) { /* no call starts the exchange now */
        tacos_setup_free(c->setup_room);
        c->setup_room = NULL;
    }
    return rc || !c->nwanted ? rc : plan_wanted(c);
}

int tacos_comm_plan_call(tacos_comm_t *c, tacos_mode_t mode, tacos_coll_t coll, int root,
                         size_t bytes, const char **why, const tacos_plan_t **p)
{
    *p = NULL;
    if (!*why && bytes == 0) {
        if (mode != TACOS_BLOCKING)
            *why = "nothing to move";
        return 0;
    }
    if (mode == TACOS_NONBLOCKING) {
        *p = tacos_comm_plan_nonblocking(c, coll, root, bytes, why);
        return 0;
    }
    return plan_key(c, coll, root, bytes, mode == TACOS_PERSISTENT, why, p);
}

tacos_call_action_t tacos_comm_decide(tacos_comm_t *c, const tacos_call_facts_t *f,
                                      const char **why, const tacos_plan_t **plan, int *rc)
{
    *plan = NULL, *rc = 0;
    if (f->on_copies == 2) { /* the host copies of a call that falls back */
        *why = f->copies_why;
        return TACOS_CALL_FALL_BACK;
    }
    if (f->device && (f->why_dev || f->inter)) {
        *why = f->why_dev ? f->why_dev : "intercommunicator";
        return TACOS_CALL_COPIES;
    }
    if (f->inter) {
        *why = "intercommunicator";
        return TACOS_CALL_FALL_BACK;
    }
    if (!*why && f->size == 1)
        *why = "one rank";
    if (c && (*rc = tacos_comm_plan_call(c, f->mode, f->coll, f->root, f->bytes, why, plan)))
        return TACOS_CALL_ERROR;
    if (*plan && !(*plan)->agreed && f->device) {
        /* the list it would run instead reads host memory */
        *why = "a schedule agreed in the request, on host copies";
        *plan = NULL;
        return TACOS_CALL_COPIES;
    }
    if (*plan)
        return TACOS_CALL_RUN;
    if (!*why)
        return TACOS_CALL_DONE;
    /* the previous component cannot take GPU memory */
    return f->device ? TACOS_CALL_COPIES_FALL_BACK : TACOS_CALL_FALL_BACK;
}

const tacos_plan_t *tacos_comm_plan_nonblocking(tacos_comm_t *c, tacos_coll_t coll, int root,
                                                size_t bytes, const char **why)
{
    if (*why)
        return NULL;
    if (c->busy) {
        *why = "called by the previous component during coll/tacos setup";
        return NULL;
    }
    if (c->agreed < 0) {
        *why = "coll/tacos is off or its settings differ between ranks";
        return NULL;
    }
    if (c->agreed > 0 && tacos_comm_below_threshold(c, coll, bytes, c->why, why))
        return NULL;
    if (c->agreed > 0 && !c->s.nonblocking) {
        char p[64];
        snprintf(c->why, sizeof c->why, "%s is 0", tacos_comm_param(c, "nonblocking", p));
        *why = c->why;
        return NULL;
    }
    if (c->topo_state < 0) {
        *why = "no usable topology";
        return NULL;
    }
    int planned = c->agreed > 0 && c->topo_state > 0;
    tacos_plan_t *e = planned ? cached(c, coll, root, tacos_comm_size_class(bytes)) : NULL;
    if (e) {
        *why = "synthesis failed or ranks disagreed earlier";
        return e->prog || !e->agreed ? e : NULL;
    }
    if (planned && c->ops.agree_in_request) {
        /* synthesized here, agreed in the call's request (every rank makes
         * the same calls in the same order, so every rank caches the same
         * key, also where it failed: the request says no for it) */
        tacos_plan_t made;
        tacos_sched_t *s;
        if (tacos_comm_make_plan(c, c->topo, coll, root, tacos_comm_size_class(bytes), &made, &s))
            tacos_comm_report(c, c->topo, &made, s);
        tacos_sched_free(s);
        return cache_put(c, &made);
    }
    /* not planned yet: planning needs the ranks to agree, which a
     * nonblocking call must not wait for; the next blocking collective on
     * the communicator plans it (every rank records the same keys) */
    int i = 0, size_class = tacos_comm_size_class(bytes);
    while (i < c->nwanted && !(c->wanted[i].coll == coll && c->wanted[i].root == root &&
                               tacos_comm_size_class(c->wanted[i].bytes) == size_class))
        i++;
    if (i == c->nwanted && c->nwanted < c->s.cache_size)
        c->wanted[c->nwanted++] = (tacos_wanted_t){coll, root, bytes};
    /* meanwhile the request agrees on settings and topology itself (setup.c) */
    int ticket = c->ops.agree_in_request && bytes >= TACOS_SETUP_MIN_BYTES && !c->ops.spans_hosts;
    if (ticket) {
        tacos_setup_begin(c);
        return tacos_setup_ticket(c, coll, root, size_class);
    }
    *why = "not planned yet (nonblocking calls never wait for the ranks to agree: the next "
           "blocking collective on this communicator plans this size)";
    return NULL;
}
