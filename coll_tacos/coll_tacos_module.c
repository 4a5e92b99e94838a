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

/* ---- module object -------------------------------------------------------- */

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
        tacos_prog_free(m->cache[i].prog);
    tacos_topo_free(m->topo);
    free(m->topo_file);
    free(m->scratch);
    free(m->recv_scratch);
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
    /* cheap and the same on every rank */
    if (!C->enable || C->priority <= 0 || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2)
        return NULL;
    mca_coll_tacos_module_t *m = OBJ_NEW(mca_coll_tacos_module_t);
    if (!m)
        return NULL;
    if (C->topo_file && C->topo_file[0] && !(m->topo_file = strdup(C->topo_file))) {
        OBJ_RELEASE(m);
        return NULL;
    }
    m->chunks = C->chunks;
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

/* All ranks agree on `ok` and on the 64-bit hash (max over ranks of each of
 * h and ~h equals the local value only when every rank has the same h). */
static int agree(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, int ok, uint64_t h,
                 int *agreed)
{
    uint64_t v[3] = {ok ? 0 : 1, h, ~h}, r[3];
    int rc = m->prev_allreduce(v, r, 3, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op, comm,
                               m->prev_allreduce_module);
    *agreed = rc == OMPI_SUCCESS && r[0] == 0 && r[1] == h && r[2] == ~h;
    return rc;
}

static uint64_t topo_hash(const tacos_topo_t *t)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)t->npus;
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        uint64_t v[4] = {(uint64_t)l->src, (uint64_t)l->dst, 0, 0};
        memcpy(&v[2], &l->lat_us, 8);
        memcpy(&v[3], &l->bw_gbps, 8);
        for (int j = 0; j < 4; j++)
            h = (h ^ v[j]) * 1099511628211ull;
    }
    return h;
}

/* Builds the topology once per communicator; -1 state means fall back. */
static int ensure_topology(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm)
{
    if (m->topo_state)
        return OMPI_SUCCESS;
    int n = ompi_comm_size(comm), ok = 1, agreed, rc;
    tacos_topo_t *t = NULL;
    /* the file or the probe: the probe runs collectives, so every rank must
     * take the same way (coll_tacos_topo_file is writable through MPI_T) */
    uint64_t file_hash = 1469598103934665603ull;
    for (const char *c = m->topo_file; c && *c; c++)
        file_hash = (file_hash ^ (unsigned char)*c) * 1099511628211ull;
    if ((rc = agree(m, comm, 1, m->topo_file ? file_hash : 0, &agreed)) != OMPI_SUCCESS ||
        !agreed) {
        if (rc == OMPI_SUCCESS && ompi_comm_rank(comm) == 0)
            opal_output(0, "coll:tacos: the ranks have different coll_tacos_topo_file settings; "
                           "falling back to the previous component");
        m->topo_state = -1;
        return rc;
    }
    if (m->topo_file) {
        if (tacos_topo_read_file(m->topo_file, &t)) {
            opal_output(0, "coll:tacos: coll_tacos_topo_file: %s; falling back to the previous "
                           "component",
                        tacos_last_error());
            ok = 0;
        } else if (t->npus != n) {
            opal_output(0, "coll:tacos: coll_tacos_topo_file %s describes %d NPUs but the "
                           "communicator has %d ranks; falling back to the previous component",
                        m->topo_file, t->npus, n);
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
        if (ok)
            TRACE(1, "ranks disagree on the topology; falling back");
        tacos_topo_free(t);
        m->topo_state = -1;
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
        h = (h ^ v) * 1099511628211ull;
    }
    return h;
}

/* This rank's program for (coll, root, bytes), synthesized on first use; NULL
 * (with *reason) when the call must fall back. */
static const tacos_prog_t *program(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                                   tacos_coll_t coll, int root, size_t bytes, int *k,
                                   const char **reason)
{
    if (m->in_setup) {
        *reason = "called by the previous component during coll/tacos setup";
        return NULL;
    }
    m->in_setup = 1;
    int rc = ensure_topology(m, comm);
    m->in_setup = 0;
    if (rc != OMPI_SUCCESS || m->topo_state < 0) {
        *reason = "no usable topology";
        return NULL;
    }
    int size_class = 0;
    while (size_class < 62 && ((size_t)2 << size_class) <= bytes)
        size_class++;
    for (int i = 0; i < m->ncache; i++) {
        mca_coll_tacos_entry_t *e = &m->cache[i];
        if (e->coll == coll && e->root == root && e->size_class == size_class) {
            *k = e->k;
            *reason = "synthesis failed or ranks disagreed earlier";
            return e->prog;
        }
    }
    /* chunks per rank: the parameter, or the k whose schedule the model says
     * is fastest for this size (every rank computes the same) */
    tacos_sched_t *s = NULL;
    tacos_prog_t *p = NULL;
    int ok = 1;
    for (int kk = m->chunks > 0 ? m->chunks : 1; ok && kk <= (m->chunks > 0 ? m->chunks : 8);
         kk *= 2) {
        tacos_synth_opts_t o = {coll, root, kk, (uint64_t)1 << size_class, (uint64_t)C->seed,
                                C->trials > 0 ? C->trials : 1};
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
    if (rc != OMPI_SUCCESS || !agreed) {
        tacos_prog_free(p);
        p = NULL;
    }
    mca_coll_tacos_entry_t *slot = &m->cache[m->ncache];
    if (m->ncache < TACOS_CACHE_MAX) {
        m->ncache++;
    } else { /* every rank evicts the same entry: the cache stays identical */
        slot = &m->cache[m->next_evict];
        m->next_evict = (m->next_evict + 1) % TACOS_CACHE_MAX;
        tacos_prog_free(slot->prog);
    }
    *slot = (mca_coll_tacos_entry_t){coll, root, *k, size_class, p};
    *reason = "synthesis failed or ranks disagreed";
    return p;
}

/* ---- transport over the PML ------------------------------------------------ */

typedef struct {
    struct ompi_communicator_t *comm;
    int tag;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    mca_coll_tacos_module_t *module;
} pml_ctx_t;

/* A buffer of at least `bytes` kept in *buf across calls. */
static char *grow(char **buf, size_t *have, size_t bytes)
{
    if (bytes > *have) {
        free(*buf);
        *buf = malloc(bytes);
        *have = *buf ? bytes : 0;
    }
    return *buf;
}

static void *recv_space(void *ctx, size_t bytes)
{
    mca_coll_tacos_module_t *m = ((pml_ctx_t *)ctx)->module;
    return grow(&m->recv_scratch, &m->recv_scratch_bytes, bytes);
}

static int pml_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    pml_ctx_t *c = ctx;
    return MCA_PML_CALL(isend(buf, (int)bytes, &ompi_mpi_byte.dt, peer, c->tag,
                              MCA_PML_BASE_SEND_STANDARD, c->comm, (ompi_request_t **)req));
}

static int pml_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    pml_ctx_t *c = ctx;
    return MCA_PML_CALL(irecv(buf, (int)bytes, &ompi_mpi_byte.dt, peer, c->tag, c->comm,
                              (ompi_request_t **)req));
}

static int pml_wait_some(void *ctx, void **reqs, size_t n, char *done)
{
    (void)ctx;
    int outcount = 0, idx[64], rc;
    if (n > 64) { /* wait for the first of many */
        int i;
        rc = ompi_request_wait_any(n, (ompi_request_t **)reqs, &i, MPI_STATUS_IGNORE);
        if (rc == OMPI_SUCCESS && i >= 0)
            done[i] = 1;
        return rc;
    }
    rc = ompi_request_wait_some(n, (ompi_request_t **)reqs, &outcount, idx, MPI_STATUSES_IGNORE);
    for (int i = 0; rc == OMPI_SUCCESS && i < outcount; i++)
        done[idx[i]] = 1;
    return rc;
}

static int op_reduce(void *ctx, const void *src, void *dst, size_t count)
{
    pml_ctx_t *c = ctx;
    ompi_op_reduce(c->op, (void *)src, dst, (int)count, c->dtype);
    return OMPI_SUCCESS;
}

/* ---- common path ------------------------------------------------------------ */

/* Raw bytes can carry the data: predefined types (pair types with their
 * padding included) and contiguous layouts starting at offset 0. */
static const char *check_type(struct ompi_datatype_t *dtype, size_t count, size_t *extent)
{
    ptrdiff_t lb, ext, true_lb, true_ext;
    ompi_datatype_get_extent(dtype, &lb, &ext);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_ext);
    if (lb != 0 || true_lb < 0 || true_lb + true_ext > ext)
        return "datatype with a non-zero lower bound";
    if (!ompi_datatype_is_predefined(dtype) &&
        !ompi_datatype_is_contiguous_memory_layout(dtype, count > 1 ? 2 : 1))
        return "non-contiguous derived datatype";
    if (count * (size_t)ext > INT_MAX)
        return "buffer larger than INT_MAX bytes";
    *extent = (size_t)ext;
    return NULL;
}

/* Runs the collective's program on buf (total elements split into blocks).
 * When no program can serve the call, sets *reason, leaves buf untouched and
 * returns FALL_BACK; otherwise an OMPI status. */
#define FALL_BACK 1
static int run(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, tacos_coll_t coll,
               int root, void *buf, const size_t *block_off, size_t extent,
               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int tag,
               const tacos_exec_opts_t *opts, const char **reason)
{
    int n = ompi_comm_size(comm), k;
    size_t bytes = block_off[n] * extent;
    const tacos_prog_t *p = program(m, comm, coll, root, bytes, &k, reason);
    if (!p)
        return FALL_BACK;
    pml_ctx_t ctx = {comm, tag, dtype, op, m};
    tacos_transport_t tp = {&ctx, pml_isend, pml_irecv, pml_wait_some, op_reduce, recv_space};
    TRACE(10, "%s %zu bytes on %d ranks: schedule k=%d, %zu ops", tacos_coll_name(coll), bytes, n,
          k, p->nops);
    int rc = tacos_exec_run(p, n, k, block_off, buf, extent, &tp, opts);
    if (rc == TACOS_ERR_NOMEM || rc == TACOS_ERR_INVALID) { /* PML errors return as they are */
        opal_output(0, "coll:tacos: %s of %zu bytes on rank %d of %d: %s", tacos_coll_name(coll),
                    bytes, ompi_comm_rank(comm), n,
                    rc == TACOS_ERR_NOMEM ? "out of memory for the executor"
                                          : "the schedule cannot progress (a coll/tacos bug)");
        return rc == TACOS_ERR_NOMEM ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_ERROR;
    }
    return rc;
}

/* Blocks of counts[r] elements (or `each` when counts is NULL), in order. */
static size_t *sized_blocks(int n, const int *counts, size_t each)
{
    size_t *off = malloc(((size_t)n + 1) * sizeof *off);
    if (!off)
        return NULL;
    off[0] = 0;
    for (int r = 0; r < n; r++)
        off[r + 1] = off[r] + (counts ? (size_t)counts[r] : each);
    return off;
}

static size_t *even_blocks(int n, size_t count)
{
    size_t *off = malloc(((size_t)n + 1) * sizeof *off);
    for (int r = 0; off && r <= n; r++)
        off[r] = count * (size_t)r / (size_t)n;
    return off;
}

#define FALLBACK(m, name, why, ...)                                                          \
    do {                                                                                     \
        TRACE(10, #name ": fallback: %s", why);                                              \
        return (m)->prev_##name(__VA_ARGS__, (m)->prev_##name##_module);                     \
    } while (0)

static const char *reduction_ok(struct ompi_op_t *op, size_t bytes, int rooted)
{
    if (!ompi_op_is_commute(op))
        return "non-commutative op";
    if (bytes < (size_t)(rooted ? C->rooted_min_bytes : C->min_bytes))
        return rooted ? "below coll_tacos_rooted_min_bytes" : "below coll_tacos_min_bytes";
    return NULL;
}

/* ---- collectives ------------------------------------------------------------- */

int mca_coll_tacos_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    size_t ext = 0;
    const char *why = check_type(dtype, (size_t)count, &ext);
    if (!why)
        why = reduction_ok(op, (size_t)count * ext, 0);
    if (why)
        FALLBACK(m, allreduce, why, sbuf, rbuf, count, dtype, op, comm);
    size_t *off = even_blocks(ompi_comm_size(comm), (size_t)count);
    if (!off)
        return OMPI_ERR_OUT_OF_RESOURCE;
    /* sbuf is read in place; rbuf gets each chunk when it is first written */
    tacos_exec_opts_t opts = {.input = sbuf};
    int rc = run(m, comm, TACOS_ALLREDUCE, 0, rbuf, off, ext, dtype, op,
                 MCA_COLL_BASE_TAG_ALLREDUCE, sbuf == MPI_IN_PLACE ? NULL : &opts, &why);
    free(off);
    if (rc == FALL_BACK) /* rbuf untouched */
        FALLBACK(m, allreduce, why, sbuf, rbuf, count, dtype, op, comm);
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
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    size_t ext = 0;
    const char *why = check_type(rdtype, (size_t)rcount * (size_t)n, &ext);
    if (!why && sbuf != MPI_IN_PLACE && (sdtype != rdtype || scount != rcount))
        why = "send and receive types or counts differ";
    if (!why && (size_t)rcount * n * ext < (size_t)C->min_bytes)
        why = "below coll_tacos_min_bytes";
    if (why)
        FALLBACK(m, allgather, why, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    size_t *off = sized_blocks(n, NULL, (size_t)rcount);
    if (!off)
        return OMPI_ERR_OUT_OF_RESOURCE;
    /* own block: sent straight from sbuf, copied into rbuf while the first
     * messages travel */
    copy_args_t copy = {(char *)rbuf + off[me] * ext, sbuf, (size_t)rcount * ext};
    tacos_exec_opts_t opts = {.own_src = sbuf, .own_block = me, .overlap = copy_block,
                              .overlap_arg = &copy};
    int rc = run(m, comm, TACOS_ALLGATHER, 0, rbuf, off, ext, rdtype, NULL,
                 MCA_COLL_BASE_TAG_ALLGATHER, sbuf == MPI_IN_PLACE ? NULL : &opts, &why);
    if (rc == FALL_BACK && sbuf != MPI_IN_PLACE)
        copy_block(&copy);
    free(off);
    if (rc == FALL_BACK)
        FALLBACK(m, allgather, why, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, rcount, rdtype, comm);
    return rc;
}

int mca_coll_tacos_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    size_t ext = 0;
    const char *why = check_type(dtype, (size_t)count, &ext);
    if (!why && (size_t)count * ext < (size_t)C->rooted_min_bytes)
        why = "below coll_tacos_rooted_min_bytes";
    if (why)
        FALLBACK(m, bcast, why, buf, count, dtype, root, comm);
    size_t *off = even_blocks(ompi_comm_size(comm), (size_t)count);
    if (!off)
        return OMPI_ERR_OUT_OF_RESOURCE;
    int rc = run(m, comm, TACOS_BROADCAST, root, buf, off, ext, dtype, NULL,
                 MCA_COLL_BASE_TAG_BCAST, NULL, &why);
    free(off);
    if (rc == FALL_BACK)
        FALLBACK(m, bcast, why, buf, count, dtype, root, comm);
    return rc;
}

/* A work buffer of at least `bytes`, kept across calls (no page faults). */
static char *scratch(mca_coll_tacos_module_t *m, size_t bytes)
{
    return grow(&m->scratch, &m->scratch_bytes, bytes);
}

int mca_coll_tacos_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int me = ompi_comm_rank(comm);
    size_t ext = 0;
    const char *why = check_type(dtype, (size_t)count, &ext);
    if (!why)
        why = reduction_ok(op, (size_t)count * ext, 1);
    if (why)
        FALLBACK(m, reduce, why, sbuf, rbuf, count, dtype, op, root, comm);
    /* the root reduces in rbuf, the others in scratch; sbuf is read in place */
    char *work = me == root ? rbuf : scratch(m, (size_t)count * ext + 1);
    size_t *off = even_blocks(ompi_comm_size(comm), (size_t)count);
    if (!work || !off) {
        free(off);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    tacos_exec_opts_t opts = {.input = sbuf, .keep = me == root ? TACOS_KEEP_ALL : TACOS_KEEP_NONE};
    int rc = run(m, comm, TACOS_REDUCE, root, work, off, ext, dtype, op,
                 MCA_COLL_BASE_TAG_REDUCE, sbuf == MPI_IN_PLACE ? NULL : &opts, &why);
    free(off);
    if (rc == FALL_BACK) /* nothing was touched */
        FALLBACK(m, reduce, why, sbuf, rbuf, count, dtype, op, root, comm);
    return rc;
}

/* Reduce-Scatter over blocks of counts[r] elements (or `each`, see
 * sized_blocks); the work buffer holds the whole input. */
static int reduce_scatter_blocks(mca_coll_tacos_module_t *m, const void *sbuf, void *rbuf,
                                 const int *counts, size_t each, size_t ext,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, int tag, const char **why)
{
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), rc;
    size_t *off = sized_blocks(n, counts, each);
    if (!off)
        return OMPI_ERR_OUT_OF_RESOURCE;
    size_t total = off[n] * ext, mine = (off[me + 1] - off[me]) * ext;
    if (sbuf == MPI_IN_PLACE) { /* rbuf holds the input: work in it */
        rc = run(m, comm, TACOS_REDUCE_SCATTER, 0, rbuf, off, ext, dtype, op, tag, NULL, why);
        if (rc == OMPI_SUCCESS && mine)
            memmove(rbuf, (char *)rbuf + off[me] * ext, mine);
    } else {
        char *work = scratch(m, total + 1);
        tacos_exec_opts_t opts = {.input = sbuf, .keep = TACOS_KEEP_BLOCK, .keep_block = me};
        rc = work ? run(m, comm, TACOS_REDUCE_SCATTER, 0, work, off, ext, dtype, op, tag, &opts,
                        why)
                  : OMPI_ERR_OUT_OF_RESOURCE;
        if (rc == OMPI_SUCCESS && mine)
            memcpy(rbuf, work + off[me] * ext, mine);
    }
    free(off);
    return rc;
}

int mca_coll_tacos_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    size_t ext = 0;
    const char *why = check_type(dtype, (size_t)rcount * (size_t)n, &ext);
    if (!why)
        why = reduction_ok(op, (size_t)rcount * n * ext, 0);
    if (why)
        FALLBACK(m, reduce_scatter_block, why, sbuf, rbuf, rcount, dtype, op, comm);
    int rc = reduce_scatter_blocks(m, sbuf, rbuf, NULL, (size_t)rcount, ext, dtype, op, comm,
                                   MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK, &why);
    if (rc == FALL_BACK)
        FALLBACK(m, reduce_scatter_block, why, sbuf, rbuf, rcount, dtype, op, comm);
    return rc;
}

int mca_coll_tacos_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;
    int n = ompi_comm_size(comm);
    size_t ext = 0, total = 0;
    for (int r = 0; r < n; r++)
        total += (size_t)rcounts[r];
    const char *why = check_type(dtype, total, &ext);
    if (!why)
        why = reduction_ok(op, total * ext, 0);
    if (why)
        FALLBACK(m, reduce_scatter, why, sbuf, rbuf, rcounts, dtype, op, comm);
    int rc = reduce_scatter_blocks(m, sbuf, rbuf, rcounts, 0, ext, dtype, op, comm,
                                   MCA_COLL_BASE_TAG_REDUCE_SCATTER, &why);
    if (rc == FALL_BACK)
        FALLBACK(m, reduce_scatter, why, sbuf, rbuf, rcounts, dtype, op, comm);
    return rc;
}
