/*
 * Module: per-communicator state, lazy topology and schedule synthesis with a
 * cross-rank agreement check, the PML transport for the executor, and the
 * collectives.  Every case it cannot serve goes to the previous component.
 */
#include "ompi_config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "coll_tacos.h"
#include "exec.h"

#define C (&mca_coll_tacos_component)
#define TRACE(level, ...) opal_output_verbose(level, C->output, "coll:tacos: " __VA_ARGS__)

/* ---- scratch kept between calls -------------------------------------------- */

/* Bytes of scratch all communicators of the process keep between calls. */
static size_t scratch_kept;

/* A buffer of at least `bytes` in *buf (counted in scratch_kept). */
static int fault(const char *what);
static char *grow(char **buf, size_t *have, size_t bytes)
{
    if (bytes > *have || !*buf) {
        free(*buf);
        __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
        *buf = fault("alloc") ? NULL : malloc(bytes ? bytes : 1);
        *have = *buf ? bytes : 0;
        __atomic_add_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    }
    return *buf;
}

static void drop(char **buf, size_t *have)
{
    free(*buf);
    __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    *buf = NULL;
    *have = 0;
}

/* After a call: the communicator keeps its scratch (no page faults next
 * time) while the process's total stays within coll_tacos_scratch_max_bytes. */
static void release_scratch(mca_coll_tacos_module_t *m, int all)
{
    if (all || __atomic_load_n(&scratch_kept, __ATOMIC_RELAXED) > C->scratch_max) {
        drop(&m->scratch, &m->scratch_bytes);
        drop(&m->recv_scratch, &m->recv_scratch_bytes);
    }
}

/* ---- module object -------------------------------------------------------- */

static void entry_free(mca_coll_tacos_entry_t *e)
{
    tacos_exec_free(e->exec);
    tacos_prog_free(e->prog);
    free(e->off);
}

static void module_construct(mca_coll_tacos_module_t *m)
{
    memset((char *)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
}

static void module_destruct(mca_coll_tacos_module_t *m)
{
    mca_coll_base_module_t *prev[] = {m->prev_allreduce_module, m->prev_allgather_module,
                                      m->prev_bcast_module, m->prev_reduce_module,
                                      m->prev_reduce_scatter_module,
                                      m->prev_reduce_scatter_block_module};
    for (size_t i = 0; i < sizeof prev / sizeof prev[0]; i++)
        if (prev[i])
            OBJ_RELEASE(prev[i]);
    for (int i = 0; i < m->ncache; i++)
        entry_free(&m->cache[i]);
    free(m->cache);
    tacos_topo_free(m->topo);
    free(m->cfg.topo_file);
    release_scratch(m, 1);
}

OBJ_CLASS_INSTANCE(mca_coll_tacos_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

#define SAVE(m, comm, name)                                                                  \
    do {                                                                                     \
        if (!(comm)->c_coll->coll_##name || !(comm)->c_coll->coll_##name##_module) {         \
            TRACE(1, "no previous component provides " #name "; declining");                 \
            return OMPI_ERROR;                                                               \
        }                                                                                    \
        (m)->prev_##name = (comm)->c_coll->coll_##name;                                      \
        (m)->prev_##name##_module = (comm)->c_coll->coll_##name##_module;                    \
        OBJ_RETAIN((m)->prev_##name##_module);                                               \
    } while (0)

static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    SAVE(m, comm, allreduce);
    SAVE(m, comm, allgather);
    SAVE(m, comm, bcast);
    SAVE(m, comm, reduce);
    SAVE(m, comm, reduce_scatter);
    SAVE(m, comm, reduce_scatter_block);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_tacos_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    /* cheap and the same on every rank; coll_tacos_enable is not checked
     * here but agreed at the first collective, so that a rank where it is
     * off still takes part in that agreement (and then only forwards) */
    if (C->priority <= 0 || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2)
        return NULL;
    mca_coll_tacos_module_t *m = OBJ_NEW(mca_coll_tacos_module_t);
    if (!m)
        return NULL;
    m->cfg = (mca_coll_tacos_settings_t){C->enable,        C->min_bytes, C->rooted_min_bytes,
                                         C->chunks,        C->seed,      C->trials,
                                         C->unwind_degree, C->probe,     C->calibrate,
                                         C->measure,       C->cache_size > 0 ? C->cache_size : 1,
                                         C->deterministic, NULL};
    m->cache = calloc((size_t)m->cfg.cache_size, sizeof *m->cache);
    if (!m->cache ||
        (C->topo_file && C->topo_file[0] && !(m->cfg.topo_file = strdup(C->topo_file)))) {
        OBJ_RELEASE(m);
        return NULL;
    }
    *priority = C->priority;
    m->super.coll_module_enable = module_enable;
    m->super.coll_allreduce = mca_coll_tacos_allreduce;
    m->super.coll_allgather = mca_coll_tacos_allgather;
    m->super.coll_bcast = mca_coll_tacos_bcast;
    m->super.coll_reduce = mca_coll_tacos_reduce;
    m->super.coll_reduce_scatter = mca_coll_tacos_reduce_scatter;
    m->super.coll_reduce_scatter_block = mca_coll_tacos_reduce_scatter_block;
    return &m->super;
}

/* ---- topology ------------------------------------------------------------- */

/* Whether each of v[0..n) is equal on every rank (eq[i]), with one
 * max-allreduce of the values and their complements (max of ~v = ~min). */
static int all_equal(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                     const uint64_t *v, int n, char *eq)
{
    uint64_t w[32];
    for (int i = 0; i < n; i++)
        w[i] = v[i], w[n + i] = ~v[i];
    int rc = m->prev_allreduce(MPI_IN_PLACE, w, 2 * n, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op,
                               comm, m->prev_allreduce_module);
    for (int i = 0; i < n; i++)
        eq[i] = rc == OMPI_SUCCESS && w[i] == ~w[n + i];
    return rc;
}

/* All ranks are ok and hold the same 64-bit hash. */
static int agree(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, int ok, uint64_t h,
                 int *agreed)
{
    uint64_t v[2] = {(uint64_t)ok, h};
    char eq[2];
    int rc = all_equal(m, comm, v, 2, eq);
    *agreed = ok && eq[0] && eq[1];
    return rc;
}

/* FNV-1a over 64-bit words. */
static uint64_t hash_words(uint64_t h, const uint64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h;
}

static uint64_t topo_hash(const tacos_topo_t *t)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)t->npus;
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        uint64_t v[4] = {(uint64_t)l->src, (uint64_t)l->dst, 0, 0};
        memcpy(&v[2], &l->lat_us, 8);
        memcpy(&v[3], &l->bw_gbps, 8);
        h = hash_words(h, v, 4);
    }
    return h;
}

static uint64_t string_hash(const char *c)
{
    uint64_t h = 1469598103934665603ull;
    for (; c && *c; c++) {
        uint64_t v = (unsigned char)*c;
        h = hash_words(h, &v, 1);
    }
    return c ? h : 0;
}

/* At the first collective on the communicator, every rank (also those with
 * coll_tacos_enable off) learns whether the settings are equal everywhere.
 * Any difference: one message naming the parameters, and the previous
 * component for the communicator's lifetime.  *use: schedules may run.  An
 * error of the allreduce is returned (a rank alone must not fall back). */
static int settings_agreed(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                           int *use)
{
    *use = m->agreed > 0;
    if (m->agreed || m->in_setup)
        return OMPI_SUCCESS;
    const mca_coll_tacos_settings_t *c = &m->cfg;
    static const char *names[] = {"enable", "min_bytes", "rooted_min_bytes", "chunks", "seed",
                                  "trials", "unwind_degree", "probe", "calibrate", "measure",
                                  "cache_size", "topo_file"};
    enum { N = sizeof names / sizeof names[0] };
    uint64_t v[N] = {(uint64_t)c->enable, (uint64_t)c->min_bytes, (uint64_t)c->rooted_min_bytes,
                     (uint64_t)c->chunks, (uint64_t)c->seed, (uint64_t)c->trials,
                     (uint64_t)c->unwind_degree, (uint64_t)c->probe, (uint64_t)c->calibrate,
                     (uint64_t)c->measure, (uint64_t)c->cache_size, string_hash(c->topo_file)};
    char eq[N], differ[256] = "";
    m->in_setup = 1;
    int rc = all_equal(m, comm, v, N, eq);
    m->in_setup = 0;
    if (rc != OMPI_SUCCESS)
        return rc;
    for (int i = 0; i < N; i++)
        if (!eq[i])
            snprintf(differ + strlen(differ), sizeof differ - strlen(differ), "%scoll_tacos_%s",
                     differ[0] ? ", " : "", names[i]);
    if (differ[0] && ompi_comm_rank(comm) == 0)
        opal_output(0, "coll:tacos: the ranks of communicator %u have different %s; falling "
                       "back to the previous component",
                    ompi_comm_get_cid(comm), differ);
    m->agreed = !differ[0] && c->enable ? 1 : -1;
    *use = m->agreed > 0;
    return OMPI_SUCCESS;
}

/* Builds the topology once per communicator; -1 state means fall back. */
static int ensure_topology(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm)
{
    if (m->topo_state)
        return OMPI_SUCCESS;
    int n = ompi_comm_size(comm), ok = 1, agreed, rc;
    tacos_topo_t *t = NULL;
    if (m->cfg.topo_file) {
        if (tacos_topo_read_file_npus(m->cfg.topo_file, n, &t)) {
            opal_output(0, "coll:tacos: coll_tacos_topo_file: %s (the communicator has %d "
                           "ranks); falling back to the previous component",
                        tacos_last_error(), n);
            ok = 0;
        }
    } else if ((rc = mca_coll_tacos_probed_topology(m, comm, &t)) != OMPI_SUCCESS) {
        ok = 0;
    }
    if (ok && tacos_topo_check_connected(t)) {
        opal_output(0, "coll:tacos: %s; falling back to the previous component", tacos_last_error());
        ok = 0;
    }
    rc = agree(m, comm, ok, ok ? topo_hash(t) : 0, &agreed);
    if (rc != OMPI_SUCCESS || !agreed) {
        if (ok && rc == OMPI_SUCCESS)
            TRACE(1, "ranks disagree on the topology; falling back");
        tacos_topo_free(t);
        m->topo_state = rc == OMPI_SUCCESS ? -1 : 0; /* an error: undecided, returned */
        return rc;
    }
    m->topo = t;
    m->topo_state = 1;
    if (C->dump_dir && C->dump_dir[0] && ompi_comm_rank(comm) == 0) {
        char path[4096];
        mca_coll_tacos_dump_dir();
        snprintf(path, sizeof path, "%s/tacos-comm%u-topology.json", C->dump_dir,
                 ompi_comm_get_cid(comm));
        if (tacos_topo_write_file(t, path))
            opal_output(0, "coll:tacos: dump: %s", tacos_last_error());
    }
    return OMPI_SUCCESS;
}

/* ---- schedules ------------------------------------------------------------ */

static uint64_t sched_hash(const tacos_sched_t *s)
{
    uint64_t h = 1469598103934665603ull ^ s->nxfers;
    for (size_t i = 0; i < s->nxfers; i++) {
        const tacos_xfer_t *x = &s->xfers[i];
        uint64_t v = (uint64_t)x->chunk << 34 ^ (uint64_t)x->src << 17 ^ (uint64_t)x->dst ^
                     (uint64_t)x->reduce << 63;
        h = hash_words(h, &v, 1);
    }
    return h;
}

/* This rank's program for (coll, root, bytes), synthesized on first use; NULL
 * (with *reason) when the call must fall back.  Decided from inputs equal on
 * every rank (the agreed settings and topology, the signature's bytes) and,
 * at first use, agreed. */
static int program(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                   tacos_coll_t coll, int root, size_t bytes, int *k, const char **reason,
                   const mca_coll_tacos_entry_t **out)
{
    *out = NULL;
    if (m->in_setup) {
        *reason = "called by the previous component during coll/tacos setup";
        return OMPI_SUCCESS;
    }
    m->in_setup = 1;
    int rc = ensure_topology(m, comm);
    m->in_setup = 0;
    if (rc != OMPI_SUCCESS || m->topo_state < 0) {
        *reason = "no usable topology";
        return rc;
    }
    int size_class = 0;
    while (size_class < 62 && ((size_t)2 << size_class) <= bytes)
        size_class++;
    for (int i = 0; i < m->ncache; i++) {
        mca_coll_tacos_entry_t *e = &m->cache[i];
        if (e->coll == coll && e->root == root && e->size_class == size_class) {
            *k = e->k;
            *reason = "synthesis failed or ranks disagreed earlier";
            *out = e->prog ? e : NULL;
            return OMPI_SUCCESS;
        }
    }
    /* chunks per rank: the parameter, or the k whose schedule the model says
     * is fastest for this size (every rank computes the same) */
    tacos_sched_t *s = NULL;
    tacos_prog_t *p = NULL;
    int ok = 1;
    const mca_coll_tacos_settings_t *c = &m->cfg;
    for (int kk = c->chunks > 0 ? c->chunks : 1; ok && kk <= (c->chunks > 0 ? c->chunks : 8);
         kk *= 2) {
        tacos_synth_opts_t o = {coll, root, kk, (uint64_t)1 << size_class, (uint64_t)c->seed,
                                c->trials > 0 ? c->trials : 1};
        tacos_sched_t *cand = NULL;
        ok = tacos_synthesize(m->topo, &o, &cand) == TACOS_OK;
        if (ok && (!s || cand->time_us < s->time_us)) {
            tacos_sched_free(s);
            s = cand;
            *k = kk;
        } else {
            tacos_sched_free(cand);
        }
    }
    ok = ok && tacos_sched_program(s, ompi_comm_rank(comm), &p) == TACOS_OK;
    if (!ok)
        opal_output(0, "coll:tacos: %s synthesis on %s: %s; falling back", tacos_coll_name(coll),
                    m->topo->name, tacos_last_error());
    int n = ompi_comm_size(comm);
    tacos_exec_t *x = NULL;
    size_t *off = NULL;
    if (ok && (tacos_exec_new(p, n, *k, &x) || !(off = malloc(((size_t)n + 1) * sizeof *off)))) {
        opal_output(0, "coll:tacos: out of memory for a %s schedule on rank %d; falling back",
                    tacos_coll_name(coll), ompi_comm_rank(comm));
        ok = 0; /* agreed below: every rank falls back */
    }
    int agreed = 0;
    m->in_setup = 1;
    rc = agree(m, comm, ok, ok ? sched_hash(s) : 0, &agreed);
    m->in_setup = 0;
    if (ok && !agreed)
        TRACE(1, "ranks synthesized different %s schedules; falling back", tacos_coll_name(coll));
    if (agreed && C->dump_dir && C->dump_dir[0] && ompi_comm_rank(comm) == 0) {
        char path[4096];
        mca_coll_tacos_dump_dir();
        snprintf(path, sizeof path, "%s/tacos-comm%u-%s-root%d-k%d-%zuB.json", C->dump_dir,
                 ompi_comm_get_cid(comm), tacos_coll_name(coll), root, *k, (size_t)s->size_bytes);
        if (tacos_sched_write_file(s, path))
            opal_output(0, "coll:tacos: dump: %s", tacos_last_error());
    }
    if (agreed)
        TRACE(5, "%s root %d k=%d for %zu-byte class: %zu transfers, %.3f us modelled",
              tacos_coll_name(coll), root, *k, (size_t)s->size_bytes, s->nxfers, s->time_us);
    tacos_sched_free(s);
    mca_coll_tacos_entry_t made = {coll, root, *k, size_class, p, x, off};
    if (rc != OMPI_SUCCESS || !agreed) {
        entry_free(&made);
        made.prog = NULL, made.exec = NULL, made.off = NULL;
    }
    if (rc != OMPI_SUCCESS) /* not decided: returned, nothing cached */
        return rc;
    mca_coll_tacos_entry_t *slot = &m->cache[m->ncache];
    if (m->ncache < m->cfg.cache_size) {
        m->ncache++;
    } else { /* every rank evicts the same entry: the cache stays identical */
        slot = &m->cache[m->next_evict];
        m->next_evict = (m->next_evict + 1) % m->cfg.cache_size;
        entry_free(slot);
    }
    *slot = made;
    *reason = "synthesis failed or ranks disagreed";
    *out = slot->prog ? slot : NULL;
    return OMPI_SUCCESS;
}

/* ---- transport over the PML ------------------------------------------------ */

typedef struct {
    struct ompi_communicator_t *comm;
    int tag;
    struct ompi_datatype_t *dtype; /* what reductions combine */
    ptrdiff_t shift;               /* the executor's unit i starts shift past element i */
    struct ompi_op_t *op;
    mca_coll_tacos_module_t *module;
    int error; /* the first MPI error of the transport (the executor's own
                * codes are TACOS_ERR_*: another space) */
} pml_ctx_t;

/* Test builds and tests: TACOS_FAULT=RANK:send:N makes the N-th message
 * posted by the process of that MPI_COMM_WORLD rank fail, RANK:alloc:N its
 * N-th scratch allocation. */
static int fault(const char *what)
{
    static int rank = -2, left;
    static char kind[8];
    if (rank == -2) {
        const char *e = getenv("TACOS_FAULT");
        if (!e || sscanf(e, "%d:%7[a-z]:%d", &rank, kind, &left) != 3 ||
            rank != ompi_comm_rank(&ompi_mpi_comm_world.comm))
            rank = -1;
    }
    return rank >= 0 && !strcmp(kind, what) && --left == 0;
}

static int failed(pml_ctx_t *c, int rc)
{
    if (rc != OMPI_SUCCESS && !c->error)
        c->error = rc;
    return rc != OMPI_SUCCESS;
}

static void *recv_space(void *ctx, size_t bytes)
{
    mca_coll_tacos_module_t *m = ((pml_ctx_t *)ctx)->module;
    return grow(&m->recv_scratch, &m->recv_scratch_bytes, bytes);
}

static int pml_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    pml_ctx_t *c = ctx;
    if (fault("send"))
        return failed(c, OMPI_ERR_OUT_OF_RESOURCE);
    return failed(c, MCA_PML_CALL(isend(buf, (int)bytes, &ompi_mpi_byte.dt, peer, c->tag,
                                        MCA_PML_BASE_SEND_STANDARD, c->comm,
                                        (ompi_request_t **)req)));
}

static int pml_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    pml_ctx_t *c = ctx;
    return failed(c, MCA_PML_CALL(irecv(buf, (int)bytes, &ompi_mpi_byte.dt, peer, c->tag,
                                        c->comm, (ompi_request_t **)req)));
}

/* Completed requests are freed; one that failed stays allocated after
 * Open MPI's wait (its status holds the error): take the error, free it. */
static int reap(pml_ctx_t *c, ompi_request_t **req, char *done)
{
    *done = 1;
    if (*req == &ompi_request_null.request)
        return 0;
    int rc = (*req)->req_status.MPI_ERROR;
    ompi_request_free(req);
    return failed(c, rc != OMPI_SUCCESS ? rc : OMPI_ERROR);
}

static int pml_wait_some(void *ctx, void **reqs, size_t n, char *done)
{
    pml_ctx_t *c = ctx;
    ompi_request_t **r = (ompi_request_t **)reqs;
    int outcount = 0, idx[64], rc = 0;
    if (n > 64) { /* wait for the first of many */
        int i = MPI_UNDEFINED;
        ompi_request_wait_any(n, r, &i, MPI_STATUS_IGNORE);
        return i == MPI_UNDEFINED ? failed(c, OMPI_ERROR) : reap(c, &r[i], &done[i]);
    }
    ompi_request_wait_some((int)n, r, &outcount, idx, MPI_STATUSES_IGNORE);
    if (outcount == MPI_UNDEFINED || outcount <= 0)
        return failed(c, OMPI_ERROR);
    for (int i = 0; i < outcount; i++)
        rc |= reap(c, &r[idx[i]], &done[idx[i]]);
    return rc;
}

static int pml_test_some(void *ctx, void **reqs, size_t n, char *done)
{
    pml_ctx_t *c = ctx;
    ompi_request_t **r = (ompi_request_t **)reqs;
    int outcount = 0, idx[64], rc = 0;
    size_t base = 0;
    for (; base < n; base += 64) { /* in slices of 64 */
        int m = (int)(n - base < 64 ? n - base : 64);
        ompi_request_test_some(m, r + base, &outcount, idx, MPI_STATUSES_IGNORE);
        for (int i = 0; outcount != MPI_UNDEFINED && i < outcount; i++)
            rc |= reap(c, &r[base + idx[i]], &done[base + idx[i]]);
    }
    return rc;
}

static void pml_abandon(void *ctx, void *req, int is_send)
{
    (void)ctx;
    ompi_request_t *r = req;
    if (!is_send) { /* it may target scratch: gone before returning */
        ompi_request_cancel(r);
        ompi_request_wait(&r, MPI_STATUS_IGNORE);
    }
    if (r != &ompi_request_null.request)
        ompi_request_free(&r); /* a send completes on its own */
}

static int op_reduce(void *ctx, const void *src, void *dst, size_t count)
{
    pml_ctx_t *c = ctx;
    ompi_op_reduce(c->op, (char *)src - c->shift, (char *)dst - c->shift, (int)count, c->dtype);
    return OMPI_SUCCESS;
}

/* ---- the data as schedules see it ------------------------------------------ */

/* A rank's data as `units` elements of `unit`, `unit_ext` bytes apart:
 * - collectives that only move data: the type signature's bytes (unit
 *   MPI_BYTE), cut the same on every rank whatever (count, datatype) each
 *   passes;
 * - reductions: elements of the datatype (MPI wants the same datatype on
 *   every rank there, and Open MPI's predefined ops take predefined types).
 * `bytes`, the signature's size, is equal on every rank and makes every
 * decision.  Whether a rank works in its own buffer or in scratch (packed
 * by Open MPI's datatype engine) is its own affair: no message changes. */
typedef struct {
    struct ompi_datatype_t *unit;
    size_t units, unit_ext, bytes;
    ptrdiff_t shift; /* where element 0's data starts (true lb): the executor
                      * moves [shift + i*ext, shift + (i+1)*ext) for unit i */
} view_t;

static size_t type_size(struct ompi_datatype_t *dtype)
{
    size_t size;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

static const char *too_big(const view_t *v)
{
    return v->bytes > INT_MAX || v->units * v->unit_ext > INT_MAX
               ? "buffer larger than INT_MAX bytes"
               : NULL;
}

static const char *view_bytes(struct ompi_datatype_t *dtype, size_t count, view_t *v)
{
    size_t bytes = count * type_size(dtype);
    *v = (view_t){&ompi_mpi_byte.dt, bytes, 1, bytes, 0};
    return too_big(v);
}

static const char *view_elements(struct ompi_datatype_t *dtype, size_t count,
                                 struct ompi_op_t *op, view_t *v)
{
    ptrdiff_t lb, ext, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    if (!ompi_op_is_commute(op))
        return "non-commutative op";
    if (ext <= 0 || text > ext) /* the same datatype on every rank: the same answer */
        return "datatype whose elements overlap";
    *v = (view_t){dtype, count, (size_t)ext, count * type_size(dtype), tlb};
    return too_big(v);
}

/* buf itself as the units (unit 0's address), or NULL where it must be
 * packed: the signature's bytes in a row, or elements with nothing between
 * or around them (not pair types' padding: that is the caller's). */
static char *direct(const view_t *v, const void *buf, size_t count, struct ompi_datatype_t *dtype)
{
    ptrdiff_t tlb, text;
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    if (!count)
        return (char *)buf;
    if (v->unit == &ompi_mpi_byte.dt)
        return ompi_datatype_is_contiguous_memory_layout(dtype, (int)count) ? (char *)buf + tlb
                                                                            : NULL;
    return tlb == 0 && (size_t)text == v->unit_ext && type_size(dtype) == v->unit_ext &&
                   ompi_datatype_is_contiguous_memory_layout(dtype, (int)count)
               ? (char *)buf
               : NULL;
}

/* Scratch for the units, kept across calls (no page faults); unit 0 at the
 * returned address. */
static char *work_space(mca_coll_tacos_module_t *m, const view_t *v)
{
    char *w = grow(&m->scratch, &m->scratch_bytes, v->units * v->unit_ext);
    return w ? w - v->shift : NULL;
}

/* Between a (buffer, count, datatype) and its units in work. */
static int pack(const view_t *v, const void *buf, size_t count, struct ompi_datatype_t *dtype,
                char *work)
{
    if (v->unit != &ompi_mpi_byte.dt)
        return ompi_datatype_sndrcv(buf, (int)count, dtype, work, (int)count, dtype);
    return ompi_datatype_sndrcv(buf, (int)count, dtype, work, (int)(count * type_size(dtype)),
                                &ompi_mpi_packed.dt);
}

static int unpack(const view_t *v, const char *work, void *buf, size_t count,
                  struct ompi_datatype_t *dtype)
{
    if (v->unit != &ompi_mpi_byte.dt)
        return ompi_datatype_sndrcv(work, (int)count, dtype, buf, (int)count, dtype);
    return ompi_datatype_sndrcv(work, (int)(count * type_size(dtype)), &ompi_mpi_packed.dt, buf,
                                (int)count, dtype);
}

/* ---- running a program -------------------------------------------------------- */

/* Runs the plan p on the units in work, cut into blocks p->off (in units):
 * start + wait on the state cached with the program. */
static int run(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, tacos_coll_t coll,
               const mca_coll_tacos_entry_t *p, char *work, const view_t *v, struct ompi_op_t *op,
               int tag, const tacos_exec_opts_t *opts)
{
    int n = ompi_comm_size(comm);
    pml_ctx_t ctx = {comm, tag, v->unit, v->shift, op, m, OMPI_SUCCESS};
    tacos_transport_t tp = {&ctx,        pml_isend,   pml_irecv, pml_wait_some,
                            pml_test_some, pml_abandon, op_reduce, recv_space};
    TRACE(10, "%s %zu bytes on %d ranks: schedule k=%d, %zu ops", tacos_coll_name(coll), v->bytes,
          n, p->k, p->prog->nops);
    tacos_exec_opts_t o = opts ? *opts : (tacos_exec_opts_t){0};
    o.ordered = m->cfg.deterministic;
    if (o.input)
        o.input = (const char *)o.input + v->shift;
    int rc = tacos_exec_start(p->exec, p->off, work + v->shift, v->unit_ext, &tp, &o);
    if (rc == TACOS_OK)
        rc = tacos_exec_wait(p->exec);
    if (rc == TACOS_OK)
        return OMPI_SUCCESS;
    if (ctx.error) { /* sends abandoned in flight may still read the scratch */
        __atomic_sub_fetch(&scratch_kept, m->scratch_bytes, __ATOMIC_RELAXED);
        m->scratch = NULL;
        m->scratch_bytes = 0;
    }
    const char *what = ctx.error ? "a message failed"
                       : rc == TACOS_ERR_NOMEM ? "out of memory for the executor"
                                               : "the schedule cannot progress (a coll/tacos bug)";
    opal_output(0, "coll:tacos: %s of %zu bytes on rank %d of %d: %s (%d); the other ranks may "
                   "wait for this one until the error handler ends the job",
                tacos_coll_name(coll), v->bytes, ompi_comm_rank(comm), n, what, ctx.error);
    return ctx.error                ? ctx.error
           : rc == TACOS_ERR_NOMEM ? OMPI_ERR_OUT_OF_RESOURCE
                                   : OMPI_ERROR;
}

/* Blocks of counts[r] * scale units (or `each` when counts is NULL), into
 * off[0..n] (the cached plan's array: no allocation per call). */
static const size_t *sized_blocks(size_t *off, int n, const int *counts, size_t each, size_t scale)
{
    off[0] = 0;
    for (int r = 0; r < n; r++)
        off[r + 1] = off[r] + (counts ? (size_t)counts[r] * scale : each);
    return off;
}

static void even_blocks(size_t *off, int n, size_t units)
{
    for (int r = 0; r <= n; r++)
        off[r] = units * (size_t)r / (size_t)n;
}

#define FALLBACK(m, name, why, ...)                                                          \
    do {                                                                                     \
        TRACE(10, #name ": fallback: %s", why);                                              \
        return (m)->prev_##name(__VA_ARGS__, (m)->prev_##name##_module);                     \
    } while (0)

/* The program for a call of `bytes` signature bytes in *p, or NULL with
 * *why: every reason is decided from what is equal on every rank.  Returns
 * an error of the agreement collectives (never a reason to fall back: that
 * rank alone would). */
static int plan(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, tacos_coll_t coll,
                int root, size_t bytes, int *k, const char **why,
                const mca_coll_tacos_entry_t **p)
{
    int rooted = coll == TACOS_BROADCAST || coll == TACOS_REDUCE, use, rc;
    *p = NULL;
    if (*why)
        return OMPI_SUCCESS;
    if ((rc = settings_agreed(m, comm, &use)) != OMPI_SUCCESS)
        return rc;
    if (!use) {
        *why = m->in_setup ? "called by the previous component during coll/tacos setup"
                           : "coll/tacos is off or its settings differ between ranks";
        return OMPI_SUCCESS;
    }
    if (bytes < (size_t)(rooted ? m->cfg.rooted_min_bytes : m->cfg.min_bytes)) {
        *why = rooted ? "below coll_tacos_rooted_min_bytes" : "below coll_tacos_min_bytes";
        return OMPI_SUCCESS;
    }
    return program(m, comm, coll, root, bytes, k, why, p);
}

/* Plans; returns an error, falls back, or goes on with p. */
#define PLAN(m, comm, coll, root, v, k, why, p, name, ...)                                   \
    do {                                                                                     \
        int plan_rc_ = plan(m, comm, coll, root, (v).bytes, k, &(why), &(p));                \
        if (plan_rc_ != OMPI_SUCCESS)                                                        \
            return plan_rc_;                                                                 \
        if (!(p))                                                                            \
            FALLBACK(m, name, why, __VA_ARGS__);                                             \
    } while (0)

/* ---- collectives ------------------------------------------------------------- */

/* An empty signature moves nothing on any rank (count 0, or a type of size
 * 0): done, with no message. */
#define NOTHING_TO_DO(v)                                                                     \
    do {                                                                                     \
        if ((v).bytes == 0)                                                                  \
            return OMPI_SUCCESS;                                                             \
    } while (0)

int mca_coll_tacos_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    view_t v;
    const char *why = view_elements(dtype, (size_t)count, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    int k, n = ompi_comm_size(comm), rc;
    const mca_coll_tacos_entry_t *p;
    PLAN(m, comm, TACOS_ALLREDUCE, 0, v, &k, why, p, allreduce, sbuf, rbuf, count, dtype, op, comm);
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    char *out = direct(&v, rbuf, (size_t)count, dtype), *src = direct(&v, in, (size_t)count, dtype);
    even_blocks(p->off, n, v.units);
    if (out && src) { /* the input read in place; rbuf gets each chunk when first written */
        tacos_exec_opts_t opts = {.input = src};
        rc = run(m, comm, TACOS_ALLREDUCE, p, out, &v, op, MCA_COLL_BASE_TAG_ALLREDUCE,
                 src == out ? NULL : &opts);
    } else { /* through scratch */
        char *work = work_space(m, &v);
        rc = !work ? OMPI_ERR_OUT_OF_RESOURCE : pack(&v, in, (size_t)count, dtype, work);
        if (rc == OMPI_SUCCESS)
            rc = run(m, comm, TACOS_ALLREDUCE, p, work, &v, op,
                     MCA_COLL_BASE_TAG_ALLREDUCE, NULL);
        if (rc == OMPI_SUCCESS)
            rc = unpack(&v, work, rbuf, (size_t)count, dtype);
    }
    release_scratch(m, 0);
    return rc;
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} copy_args_t;

static void copy_block(void *arg)
{
    copy_args_t *c = arg;
    if (c->bytes)
        memcpy(c->dst, c->src, c->bytes);
}

int mca_coll_tacos_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), k, rc = OMPI_SUCCESS;
    view_t v;
    const char *why = view_bytes(rdtype, (size_t)rcount * (size_t)n, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const mca_coll_tacos_entry_t *p;
    PLAN(m, comm, TACOS_ALLGATHER, 0, v, &k, why, p, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    size_t block = v.bytes / (size_t)n;
    ptrdiff_t lb, rext;
    ompi_datatype_get_extent(rdtype, &lb, &rext);
    char *out = direct(&v, rbuf, (size_t)rcount * (size_t)n, rdtype);
    char *work = out ? out : work_space(m, &v);
    const char *own = sbuf == MPI_IN_PLACE ? NULL : direct(&v, sbuf, (size_t)scount, sdtype);
    sized_blocks(p->off, n, NULL, block, 0);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    /* the own block: sent straight from sbuf and copied into place while
     * the first messages travel, or packed into place first */
    copy_args_t copy = {work + block * (size_t)me, own, block};
    tacos_exec_opts_t opts = {.own_src = own, .own_block = me, .overlap = copy_block,
                              .overlap_arg = &copy};
    if (sbuf != MPI_IN_PLACE && !own)
        rc = pack(&v, sbuf, (size_t)scount, sdtype, work + block * (size_t)me);
    else if (sbuf == MPI_IN_PLACE && !out)
        rc = pack(&v, (char *)rbuf + (ptrdiff_t)me * rcount * rext, (size_t)rcount, rdtype,
                  work + block * (size_t)me);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_ALLGATHER, p, work, &v, NULL, MCA_COLL_BASE_TAG_ALLGATHER,
                 own ? &opts : NULL);
    if (rc == OMPI_SUCCESS && !out)
        rc = unpack(&v, work, rbuf, (size_t)rcount * (size_t)n, rdtype);
    release_scratch(m, 0);
    return rc;
}

int mca_coll_tacos_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int k, me = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    view_t v;
    const char *why = view_bytes(dtype, (size_t)count, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const mca_coll_tacos_entry_t *p;
    PLAN(m, comm, TACOS_BROADCAST, root, v, &k, why, p, bcast, buf, count, dtype, root, comm);
    char *at = direct(&v, buf, (size_t)count, dtype), *work = at ? at : work_space(m, &v);
    even_blocks(p->off, ompi_comm_size(comm), v.units);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    if (!at && me == root)
        rc = pack(&v, buf, (size_t)count, dtype, work);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_BROADCAST, p, work, &v, NULL, MCA_COLL_BASE_TAG_BCAST,
                 NULL);
    if (rc == OMPI_SUCCESS && !at && me != root)
        rc = unpack(&v, work, buf, (size_t)count, dtype);
    release_scratch(m, 0);
    return rc;
}

int mca_coll_tacos_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int me = ompi_comm_rank(comm), k, rc = OMPI_SUCCESS;
    view_t v;
    const char *why = view_elements(dtype, (size_t)count, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const mca_coll_tacos_entry_t *p;
    PLAN(m, comm, TACOS_REDUCE, root, v, &k, why, p, reduce, sbuf, rbuf, count, dtype, op, root, comm);
    /* the root reduces in rbuf where it can, the others in scratch; the
     * input is read in place where it can */
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    char *src = direct(&v, in, (size_t)count, dtype);
    char *out = me == root ? direct(&v, rbuf, (size_t)count, dtype) : NULL;
    char *work = out && src ? out : work_space(m, &v);
    even_blocks(p->off, ompi_comm_size(comm), v.units);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    tacos_exec_opts_t opts = {.input = src, .keep = me == root ? TACOS_KEEP_ALL : TACOS_KEEP_NONE};
    if (!src || src == work) /* the input in the work buffer already, or packed there */
        rc = src ? OMPI_SUCCESS : pack(&v, in, (size_t)count, dtype, work);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_REDUCE, p, work, &v, op, MCA_COLL_BASE_TAG_REDUCE,
                 src && src != work ? &opts : NULL);
    if (rc == OMPI_SUCCESS && me == root && work != out)
        rc = unpack(&v, work, rbuf, (size_t)count, dtype);
    release_scratch(m, 0);
    return rc;
}

/* Reduce-Scatter over blocks of counts[r] elements (or `each`): the schedule
 * runs in scratch holding the whole input, which it reads from the caller's
 * buffer in place where it can; only the result block is written to rbuf
 * (with MPI_IN_PLACE the rest of rbuf stays as the caller left it). */
static int reduce_scatter_blocks(mca_coll_tacos_module_t *m, const mca_coll_tacos_entry_t *p,
                                 const void *sbuf, void *rbuf,
                                 const int *counts, size_t each, const view_t *v,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, int tag)
{
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    char *src = direct(v, in, v->units, dtype), *work = work_space(m, v);
    const size_t *off = sized_blocks(p->off, n, counts, each, 1);
    if (!work)
        return OMPI_ERR_OUT_OF_RESOURCE;
    tacos_exec_opts_t opts = {.input = src, .keep = TACOS_KEEP_BLOCK, .keep_block = me};
    if (!src)
        rc = pack(v, in, v->units, dtype, work);
    if (rc == OMPI_SUCCESS)
        rc = run(m, comm, TACOS_REDUCE_SCATTER, p, work, v, op, tag, src ? &opts : NULL);
    size_t mine = off[me + 1] - off[me];
    if (rc == OMPI_SUCCESS && mine) {
        view_t r = *v;
        r.units = mine;
        char *out = direct(&r, rbuf, mine, dtype), *res = work + off[me] * v->unit_ext;
        if (out)
            memcpy(out, res, mine * v->unit_ext);
        else
            rc = unpack(&r, res, rbuf, mine, dtype);
    }
    release_scratch(m, 0);
    return rc;
}

int mca_coll_tacos_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm), k;
    view_t v;
    const char *why = view_elements(dtype, (size_t)rcount * (size_t)n, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const mca_coll_tacos_entry_t *p;
    PLAN(m, comm, TACOS_REDUCE_SCATTER, 0, v, &k, why, p, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
    return reduce_scatter_blocks(m, p, sbuf, rbuf, NULL,
                                 (size_t)rcount, &v, dtype, op, comm,
                                 MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK);
}

int mca_coll_tacos_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm), k;
    size_t total = 0;
    for (int r = 0; r < n; r++)
        total += (size_t)rcounts[r];
    view_t v;
    const char *why = view_elements(dtype, total, op, &v);
    if (!why)
        NOTHING_TO_DO(v);
    const mca_coll_tacos_entry_t *p;
    PLAN(m, comm, TACOS_REDUCE_SCATTER, 0, v, &k, why, p, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    return reduce_scatter_blocks(m, p, sbuf, rbuf, rcounts, 0, &v,
                                 dtype, op, comm, MCA_COLL_BASE_TAG_REDUCE_SCATTER);
}
