/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libtacos-pmpi's per-communicator state: made at a communicator's first
 * blocking collective (or MPI_Barrier), kept as an attribute of it and
 * freed with it (or at MPI_Finalize); the core's callbacks over its private
 * duplicate; the keys nonblocking calls want before it is made, which
 * MPI_Barrier plans; and the calls that touch it (MPI_Barrier, the info
 * key tacos_enable, MPI_Finalize).
 */
#include <pthread.h>
#include <stdint.h>
#ifdef MPI_ABI
#include <dlfcn.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "tacos_pmpi.h"
#include "tacos_probe.h"

static int keyval = MPI_KEYVAL_INVALID;
static int unmade_keyval = MPI_KEYVAL_INVALID; /* keys wanted before the state was made */
static int enable_keyval = MPI_KEYVAL_INVALID; /* the info key tacos_enable, until the state */
static int live_states;                    /* for the verbose summary at MPI_Finalize */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int finalizing; /* from MPI_Finalize on, every call goes to MPI */

/* A communicator whose state could not be allocated: it falls back. */
static state_t no_state;

/* The state goes with its last holder: the communicator's attribute, or
 * an operation still running after MPI_Comm_free. */
void pmpi_state_release(state_t *st)
{
    if (st == &no_state || __atomic_sub_fetch(&st->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    pmpi_state_ready(st, 1);
    tacos_comm_free(st->core);
    pmpi_stream_free(st->stream);
    if (st->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&st->comm);
    if (st->fallback_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&st->fallback_comm);
    free(st->space.p);
    free(st->measure);
    free(st->measure_space.p);
    free(st->setup);
    free(st->setup_space.p);
    free(st);
    __atomic_sub_fetch(&live_states, 1, __ATOMIC_RELAXED);
}

static int delete_state(MPI_Comm comm, int key, void *attr, void *extra)
{
    (void)comm, (void)key, (void)extra;
    pmpi_state_release(attr);
    return MPI_SUCCESS;
}

/* Keys nonblocking calls wanted while their communicator had no state (an
 * attribute): its next MPI_Barrier makes the state and plans them. */
enum { MAX_UNMADE = 32 };
typedef struct {
    int n;
    struct {
        tacos_coll_t coll;
        int root;
        size_t bytes;
    } key[MAX_UNMADE];
} unmade_t;
static unmade_t no_keys; /* where a list could not be allocated */

static int delete_unmade(MPI_Comm comm, int key, void *attr, void *extra)
{
    (void)comm, (void)key, (void)extra;
    if (attr != &no_keys)
        free(attr);
    return MPI_SUCCESS;
}

static void init_once(void)
{
    pmpi_read_settings();
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &keyval, NULL);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &enable_keyval, NULL);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_unmade, &unmade_keyval, NULL);
}

/* The core's callbacks over the private duplicate.  Its collectives are
 * nonblocking on every rank and waited for with pmpi_wait: a rank whose
 * operations of this library's are in flight must progress them while it
 * waits (a peer may wait for one of them before it joins, e.g. a rank in
 * MPI_Barrier, which may agree on CUDA IPC for a nonblocking call, while
 * another waits for that call first), and a blocking collective on some
 * ranks would not match a nonblocking one on others. */
int pmpi_waited(int rc, MPI_Request *r)
{
    return rc == MPI_SUCCESS ? pmpi_wait(r, MPI_STATUS_IGNORE) : rc;
}

/* Once a nonblocking barrier on comm is done (waited for, progressing this
 * library's operations), every rank of comm is in the same call: none
 * waits for an operation of this library's that this rank would have to
 * progress, so what follows may block in MPICH.  (On an intercommunicator
 * MPI promises only that the remote group has entered; MPICH's barrier
 * there starts with one over the local group, so both have.) */
int pmpi_arrived(MPI_Comm comm)
{
    MPI_Request r;
    return pmpi_waited(PMPI_Ibarrier(comm, &r), &r);
}

static int own_allreduce(void *v, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    MPI_Request r;
    return pmpi_waited(PMPI_Iallreduce(MPI_IN_PLACE, v, n, type, op, comm, &r), &r);
}

static int core_max_u64(void *ctx, uint64_t *v, int n)
{
    return own_allreduce(v, n, MPI_UINT64_T, MPI_MAX, ((state_t *)ctx)->comm);
}

static int core_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    MPI_Request r;
    return pmpi_waited(PMPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                                       ((state_t *)ctx)->comm, &r),
                       &r);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The same, waiting as tacos_net_idle says (the network measurement), and
 * progressing the library's operations as pmpi_wait does (the steps of a
 * measurement start after one of these: a peer that waits for one of
 * those operations first then joins). */
static int core_max_u64_idle(void *ctx, uint64_t *v, int n)
{
    MPI_Request req;
    int done = 0, rc;
    double t0 = now_us();
    rc = PMPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_MAX, ((state_t *)ctx)->comm, &req);
    while (rc == MPI_SUCCESS && !done)
        if ((rc = PMPI_Test(&req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) {
            pmpi_progress();
            tacos_net_idle(now_us() - t0);
        }
    return rc;
}

static void core_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    pmpi_say(level, "%s", msg);
}

/* A transport of the core's own (whole messages on `tag` of st's private
 * duplicate) in *ctx; none where its context cannot be made (*ctx NULL:
 * then the state is not made). */
static tacos_transport_t own_transport(state_t *st, int tag, void **ctx, space_t *space)
{
    call_ctx_t *x = st ? *ctx = calloc(1, sizeof *x) : NULL;
    if (!x)
        return (tacos_transport_t){0};
    *x = (call_ctx_t){.st = st, .tag = tag, .unit = MPI_BYTE, .space = space};
    return pmpi_transport(x);
}

/* The core's callbacks, and the settings, of comm's state st (n ranks,
 * this one me; on_host as tacos_comm_ops_t says). */
static tacos_comm_ops_t state_ops(state_t *st, MPI_Comm comm, int me, int n, int spans,
                                  const char *on_host, tacos_settings_t *set)
{
    static unsigned next_id; /* only names the communicator in messages and dumps */
    const char *lr = getenv("MPI_LOCALRANKID"); /* set by MPICH's hydra */
    if (!lr) /* Open MPI's mpirun (a build against the MPI standard ABI) */
        lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    tacos_comm_ops_t ops = {.ctx = st,
                            .rank = me,
                            .size = n,
                            .local_rank = lr ? atoi(lr) : 0,
                            .spans_hosts = spans,
                            .on_host = on_host,
                            .id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED),
                            .max_u64 = core_max_u64,
                            .max_u64_idle = core_max_u64_idle,
                            .allgather = core_allgather,
                            .log = core_log,
                            .agree_in_request = 1, /* (requests.c: its calls fall back in order) */
                            .measure = own_transport(st, TAG_MEASURE, &st->measure,
                                                     &st->measure_space),
                            .setup = own_transport(st, TAG_SETUP, &st->setup, &st->setup_space)};
    ops.setup_error = st->setup ? &((call_ctx_t *)st->setup)->error : NULL;
    *set = *pmpi_settings();
    void *on;
    int found = 0;
    PMPI_Comm_get_attr(comm, enable_keyval, &on, &found);
    if (found) /* the info key tacos_enable (agreed at the first plan like the rest) */
        set->enable = on != NULL;
    return ops;
}

/* on_host[r] = 1 for each rank r of comm in node (its ranks on this node);
 * 0 when that cannot be said (out of memory). */
static int mark_node(MPI_Comm comm, MPI_Comm node, int on_node, char *on_host)
{
    MPI_Group g, gn;
    int *in = malloc(2 * (size_t)on_node * sizeof *in), ok = 0;
    if (!in || !on_host) {
        free(in);
        return 0;
    }
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS) {
        free(in);
        return 0;
    }
    if (PMPI_Comm_group(node, &gn) == MPI_SUCCESS) {
        for (int i = 0; i < on_node; i++)
            in[i] = i;
        if (PMPI_Group_translate_ranks(gn, on_node, in, g, in + on_node) == MPI_SUCCESS) {
            for (int i = 0; i < on_node; i++)
                if (in[on_node + i] != MPI_UNDEFINED)
                    on_host[in[on_node + i]] = 1;
            ok = 1;
        }
        PMPI_Group_free(&gn);
    }
    PMPI_Group_free(&g);
    free(in);
    return ok;
}

/* Every rank makes the state at its communicator's first call (a collective
 * call, so all of them), and they agree whether all succeeded. */
static state_t *make_state(MPI_Comm comm)
{
    int n, me, inter, ok;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &n);
    PMPI_Comm_rank(comm, &me);
    state_t *st = calloc(1, sizeof *st);
    MPI_Comm dup = MPI_COMM_NULL, fb = MPI_COMM_NULL;
    /* every rank here before the blocking collectives below (pmpi_arrived) */
    if (!inter && n >= 2)
        pmpi_arrived(comm); /* (an error: the same calls follow) */
    /* splits in rank order: the same group, but unlike a dup they run none
     * of the application's attribute copy (and later delete) callbacks */
    if (!inter && n >= 2 && PMPI_Comm_split(comm, 0, me, &dup) == MPI_SUCCESS &&
        PMPI_Comm_split(comm, 0, me, &fb) == MPI_SUCCESS) {
        /* errors come back here (then go to the application's handler) */
        PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        PMPI_Comm_set_errhandler(fb, MPI_ERRORS_RETURN);
        /* whether some rank is on another node: where its node's
         * communicator is smaller than this one (on every rank alike) */
        MPI_Comm node;
        int on_node = n;
        /* per rank: on this node (what CUDA IPC goes by; none where it is off) */
        int want_map = pmpi_settings()->cuda_ipc_min_bytes >= 0;
        char *on_host = want_map ? calloc((size_t)n, 1) : NULL;
        int marked = 0;
        if (PMPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
            MPI_SUCCESS) {
            PMPI_Comm_size(node, &on_node);
            marked = want_map && mark_node(dup, node, on_node, on_host);
            PMPI_Comm_free(&node);
        }
        if (!marked) {
            free(on_host);
            on_host = NULL;
        }
        int spans = on_node < n; /* the same on every rank, unless a split failed */
        PMPI_Allreduce(MPI_IN_PLACE, &spans, 1, MPI_INT, MPI_MAX, dup);
        if (st) {
            tacos_settings_t set;
            tacos_comm_ops_t ops = state_ops(st, comm, me, n, spans, on_host, &set);
            /* (without on_host, a rank would decide on IPC alone) */
            if (st->measure && st->setup && (on_host || !spans || !want_map))
                st->core = tacos_comm_new(&set, &ops);
        }
        free(on_host);
        int failed = !(st && st->core); /* anywhere */
        PMPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, dup);
        ok = !failed;
        if (st)
            st->spans_hosts = spans;
        if (!ok && st) {
            tacos_comm_free(st->core);
            st->core = NULL;
        }
        if (!ok && me == 0)
            pmpi_say(0, "no state for a communicator (out of memory, or its ranks' hosts not known); it falls back");
    }
    if (!st) {
        if (dup != MPI_COMM_NULL)
            PMPI_Comm_free(&dup);
        if (fb != MPI_COMM_NULL)
            PMPI_Comm_free(&fb);
        st = &no_state;
    } else {
        st->comm = dup, st->fallback_comm = fb; /* MPI_COMM_NULL: intercommunicator or one rank */
        st->refs = 1;
        __atomic_add_fetch(&live_states, 1, __ATOMIC_RELAXED);
    }
    PMPI_Comm_set_attr(comm, keyval, st);
    return st;
}

/* ---- states made by a nonblocking call ------------------------------------------- */

/* Each rank of MPI_COMM_WORLD's node, as the world rank of the node's first
 * (from MPI_Init on; NULL where not known, on every rank alike). */
static int *world_node;

/* At MPI_Init: which node each rank of MPI_COMM_WORLD runs on.  Not
 * under Open MPI (the MPI standard ABI's build): there an MPI_Comm_idup
 * with other nonblocking collectives of the communicator in flight crossed
 * libnbc's messages (MPI_ERR_TRUNCATE, wrong sums at 3 ranks), so its
 * communicators keep making their state at a blocking call. */
static void map_world(void)
{
#ifdef MPI_ABI
    void *self = dlopen(NULL, RTLD_NOW);
    if (!self || !dlsym(self, "MPIX_Grequest_start")) /* (MPICH's: every rank alike) */
        return;
#endif
    int n, me, first = -1, have;
    MPI_Comm node;
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    int *map = malloc((size_t)n * sizeof *map);
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        first = me;
        PMPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
    }
    have = map && first >= 0;
    PMPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (have && PMPI_Allgather(&first, 1, MPI_INT, map, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS)
        world_node = map;
    else
        free(map);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        map_world();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        map_world();
    return rc;
}

/* Whether every rank of comm (n ranks) is on this node, by the world's
 * map, where it covers them (translated a chunk at a time: no memory). */
static int on_this_node(MPI_Comm comm, int n)
{
    enum { CHUNK = 256 };
    MPI_Group g, world;
    int in[CHUNK], out[CHUNK], one = world_node != NULL, node = -1;
    if (!one || PMPI_Comm_group(comm, &g) != MPI_SUCCESS)
        return 0;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int at = 0; one && at < n; at += CHUNK) {
        int k = n - at < CHUNK ? n - at : CHUNK;
        for (int i = 0; i < k; i++)
            in[i] = at + i;
        one = PMPI_Group_translate_ranks(g, k, in, world, out) == MPI_SUCCESS;
        for (int i = 0; one && i < k; i++) {
            one = out[i] != MPI_UNDEFINED && (node < 0 || world_node[out[i]] == node);
            node = one ? world_node[out[i]] : node;
        }
    }
    PMPI_Group_free(&world);
    PMPI_Group_free(&g);
    return one;
}

static pthread_mutex_t dup_lock = PTHREAD_MUTEX_INITIALIZER;

/* A nonblocking call's state of comm (n ranks, this one me, all on this
 * node): its duplicates started (MPI_Comm_idup: the application's
 * attribute copy callbacks run for them, and its delete callbacks when
 * they are freed), its core made to agree in the call's request
 * (tacos_setup_begin).  Every other rank starts the same: one that cannot
 * (no memory, an idup refused) would leave them waiting for its part, so
 * it aborts the job, saying why. */
static state_t *make_early_state(MPI_Comm comm, int me, int n)
{
    state_t *st = calloc(1, sizeof *st);
    const char *cause = "out of memory";
    int rc = MPI_ERR_NO_MEM;
    if (st) {
        st->comm = st->fallback_comm = st->made[0] = st->made[1] = MPI_COMM_NULL;
        st->dup_req[0] = st->dup_req[1] = MPI_REQUEST_NULL;
        tacos_settings_t set;
        tacos_comm_ops_t ops = state_ops(st, comm, me, n, 0, NULL, &set);
        if (st->measure && st->setup)
            st->core = tacos_comm_new(&set, &ops);
        rc = st->core ? MPI_SUCCESS : MPI_ERR_NO_MEM;
        for (int i = 0; rc == MPI_SUCCESS && i < 2; i++)
            if ((rc = PMPI_Comm_idup(comm, &st->made[i], &st->dup_req[i])) != MPI_SUCCESS)
                cause = "MPI_Comm_idup failed";
    }
    if (!st || rc != MPI_SUCCESS) {
        pmpi_say(0, "no state for a communicator at its first nonblocking call on rank %d (%s); "
                    "the other ranks would wait for this one: aborting", me, cause);
        PMPI_Abort(comm, rc);
    }
    st->pending = 1, st->refs = 1;
    __atomic_add_fetch(&live_states, 1, __ATOMIC_RELAXED);
    PMPI_Comm_set_attr(comm, keyval, st);
    return st;
}

int pmpi_state_ready(state_t *st, int wait)
{
    if (!__atomic_load_n(&st->pending, __ATOMIC_ACQUIRE))
        return 1;
    if (wait)
        pthread_mutex_lock(&dup_lock);
    else if (pthread_mutex_trylock(&dup_lock))
        return 0;
    int flag = 1, rc = MPI_SUCCESS;
    if (st->pending) {
        if (wait)
            for (int i = 0; i < 2 && rc == MPI_SUCCESS; i++)
                rc = pmpi_wait(&st->dup_req[i], MPI_STATUS_IGNORE);
        else
            for (int i = 0, one; i < 2 && rc == MPI_SUCCESS; i++)
                if ((rc = PMPI_Test(&st->dup_req[i], &one, MPI_STATUS_IGNORE)) == MPI_SUCCESS)
                    flag &= one;
        if (rc != MPI_SUCCESS) { /* (its messages fail with an invalid communicator) */
            pmpi_say(0, "duplicating a communicator for its first nonblocking call failed (%d)",
                     rc);
            flag = 1;
        }
        if (flag) {
            st->comm = st->made[0], st->fallback_comm = st->made[1];
            for (int i = 0; rc == MPI_SUCCESS && i < 2; i++)
                PMPI_Comm_set_errhandler(st->made[i], MPI_ERRORS_RETURN);
            __atomic_store_n(&st->pending, 0, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&dup_lock);
    return flag;
}

/* A communicator whose state is not made yet, to a nonblocking call. */
state_t pmpi_unmade;

/* The communicator's state, made at its first call: by a blocking call
 * (`make` 1) with collectives; by a nonblocking one (0, which must not wait
 * for other ranks) only where every rank is on this node, with its
 * duplicates under way; elsewhere, and to a look-up (-1), `pmpi_unmade`.  A
 * blocking call's state is ready.  NULL: fall back. */
state_t *pmpi_state_of(MPI_Comm comm, int make)
{
    pthread_once(&once, init_once);
    state_t *st = NULL;
    int found = 0, inter = 0, n = 0, me = 0;
    if (__atomic_load_n(&finalizing, __ATOMIC_RELAXED) || comm == MPI_COMM_NULL ||
        PMPI_Comm_get_attr(comm, keyval, &st, &found) != MPI_SUCCESS)
        return NULL;
    if (!found && make <= 0) { /* intercommunicators never get a state: they fall back */
        if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
            return NULL;
        PMPI_Comm_size(comm, &n);
        PMPI_Comm_rank(comm, &me);
        int here = make == 0 && n >= 2 && on_this_node(comm, n);
        return here ? make_early_state(comm, me, n) : &pmpi_unmade;
    }
    if (!found)
        st = make_state(comm);
    if (st && st->core && make > 0)
        pmpi_state_ready(st, 1);
    return st && st->core ? st : NULL;
}

/* A nonblocking call on a communicator whose state is not made yet falls
 * back; its key, if it has one to move, is recorded for the
 * communicator's next MPI_Barrier. */
void pmpi_want(MPI_Comm comm, tacos_coll_t coll, int root, size_t bytes, const char **why)
{
    unmade_t *u;
    int found = 0;
    if (*why)
        return;
    if (!bytes) {
        *why = "nothing to move";
        return;
    }
    *why = "the communicator has no state yet (made by its first blocking collective or "
           "MPI_Barrier)";
    PMPI_Comm_get_attr(comm, unmade_keyval, &u, &found);
    if (!found) {
        if (!(u = calloc(1, sizeof *u)))
            u = &no_keys;
        PMPI_Comm_set_attr(comm, unmade_keyval, u);
    }
    if (u != &no_keys && u->n < MAX_UNMADE)
        u->key[u->n].coll = coll, u->key[u->n].root = root, u->key[u->n++].bytes = bytes;
}

/* Why a collective goes to MPICH's own whatever its size, or NULL: Gather
 * and Scatter on one node (for the calls and for the sizes MPI_Barrier
 * plans alike). */
const char *pmpi_left_to_mpich(const state_t *st, tacos_coll_t coll)
{
    return !st->spans_hosts && (coll == TACOS_GATHER || coll == TACOS_SCATTER)
               ? "on one node: MPICH's own"
               : NULL;
}

/* MPI_Barrier plans what nonblocking calls of the communicator wanted
 * (making its state first where one of them found none), and progresses
 * operations in flight while it waits. */
int MPI_Barrier(MPI_Comm comm)
{
    unmade_t *u;
    int marked = 0, rc;
    pthread_once(&once, init_once);
    if (comm != MPI_COMM_NULL)
        PMPI_Comm_get_attr(comm, unmade_keyval, &u, &marked);
    state_t *st = pmpi_state_of(comm, marked ? 1 : -1);
    if (st == &pmpi_unmade) /* none, and no nonblocking call wanted one */
        st = NULL;
    if (st)
        pmpi_state_ready(st, 1);
    if (st && marked) {
        /* the keys are the same on every rank, unless one lacked the memory */
        int n[2] = {u->n, -u->n};
        own_allreduce(n, 2, MPI_INT, MPI_MIN, st->comm);
        for (int i = 0; n[0] == -n[1] && i < u->n; i++) {
            const char *why = pmpi_left_to_mpich(st, u->key[i].coll);
            tacos_comm_plan_nonblocking(st->core, u->key[i].coll, u->key[i].root,
                                        u->key[i].bytes, &why);
        }
    }
    if (marked)
        PMPI_Comm_delete_attr(comm, unmade_keyval);
    if (st && (rc = tacos_comm_prepare(st->core)) != MPI_SUCCESS)
        return pmpi_done(comm, rc);
    /* nonblocking on every rank (blocking and nonblocking barriers do not
     * match, and only some ranks may have operations of this library's to
     * progress while they wait), as are the allreduces above (own_allreduce,
     * the core's callbacks) */
    MPI_Request r; /* (an error went to the communicator's handler in MPICH's call) */
    return pmpi_waited(PMPI_Ibarrier(comm, &r), &r);
}

/* The info key "tacos_enable" ("true" or "false"; MPI_Comm_dup_with_info,
 * MPI_Comm_set_info before the communicator's first collective) overrides
 * TACOS_ENABLE for that communicator: a switch that needs no environment,
 * e.g. to compare with MPICH's own collectives in one job.  MPICH keeps no
 * info key it does not know, so the library reads it on the way in. */
static void note_enable(MPI_Comm comm, MPI_Info info)
{
    char v[16];
    int flag = 0;
    pthread_once(&once, init_once);
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, "tacos_enable", sizeof v - 1, v, &flag) ||
        !flag)
        return;
    int on = !strcmp(v, "true") || !strcmp(v, "1");
    if (!on && strcmp(v, "false") && strcmp(v, "0"))
        pmpi_say(0, "info key tacos_enable=%s is neither true nor false; ignored", v);
    else
        PMPI_Comm_set_attr(comm, enable_keyval, on ? (void *)1 : NULL);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    MPI_Request r; /* waited for, as MPI_Comm_dup (drivers.c) */
    int rc = pmpi_waited(PMPI_Comm_idup_with_info(comm, info, newcomm, &r), &r);
    if (rc == MPI_SUCCESS)
        note_enable(*newcomm, info);
    return rc;
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    int rc = PMPI_Comm_set_info(comm, info);
    if (rc == MPI_SUCCESS)
        note_enable(comm, info);
    return rc;
}

/* comm's state goes, where it has one (Open MPI fails the deletion of an
 * attribute never set, MPI_COMM_SELF's as a rule). */
static void delete_state_of(MPI_Comm comm)
{
    void *st;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, keyval, &st, &found) == MPI_SUCCESS && found)
        PMPI_Comm_delete_attr(comm, keyval);
}

/* States of MPI_COMM_WORLD and MPI_COMM_SELF go before MPI does (their
 * attributes may outlive the library's last chance to free a duplicate);
 * collectives called from then on (e.g. in attribute callbacks that
 * PMPI_Finalize runs) go to MPI. */
int MPI_Finalize(void)
{
    if (keyval != MPI_KEYVAL_INVALID) {
        delete_state_of(MPI_COMM_WORLD);
        delete_state_of(MPI_COMM_SELF);
        __atomic_store_n(&finalizing, 1, __ATOMIC_RELAXED);
        pmpi_requests_finalize();
        tacos_comm_forget_networks();
        free(world_node);
        world_node = NULL;
        int me;
        PMPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (me == 0)
            pmpi_say(5, "MPI_Finalize: %d communicator state(s) left (communicators not freed)",
                __atomic_load_n(&live_states, __ATOMIC_RELAXED));
    }
    return PMPI_Finalize();
}
