/*
 * Running a call: the collectives' drivers every binding shares (which
 * buffer the schedule runs in, block layouts, what is packed and when), the
 * scratch a communicator keeps across calls, and fault injection for tests.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

/* ---- fault injection ----------------------------------------------------------- */

static int fault_rank = -1, fault_left;
static char fault_kind[8];

static void fault_init(void)
{
    const char *e = getenv("TACOS_FAULT"), *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r)
        r = getenv("PMI_RANK");
    if (!e || !r || sscanf(e, "%d:%7[a-z]:%d", &fault_rank, fault_kind, &fault_left) != 3 ||
        fault_rank != atoi(r))
        fault_rank = -1;
}

int tacos_fault(const char *what)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fault_init);
    return fault_rank >= 0 && !strcmp(fault_kind, what) &&
           __atomic_sub_fetch(&fault_left, 1, __ATOMIC_RELAXED) == 0;
}
/* ---- scratch kept between calls ------------------------------------------------- */

/* Bytes of scratch all communicators of the process keep between calls. */
static size_t scratch_kept;

/* A buffer of at least `bytes` in *buf (counted in scratch_kept). */
static char *grow(char **buf, size_t *have, size_t bytes)
{
    if (bytes > *have || !*buf) {
        free(*buf);
        __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
        *buf = tacos_fault("alloc") ? NULL : malloc(bytes ? bytes : 1);
        *have = *buf ? bytes : 0;
        __atomic_add_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    }
    return *buf;
}

static void drop(char **buf, size_t *have, int free_it)
{
    if (free_it)
        free(*buf);
    __atomic_sub_fetch(&scratch_kept, *have, __ATOMIC_RELAXED);
    *buf = NULL;
    *have = 0;
}

void tacos_comm_drop_scratch(tacos_comm_t *c)
{
    drop(&c->work, &c->work_bytes, 1);
    drop(&c->recv, &c->recv_bytes, 1);
}

void *tacos_comm_recv_scratch(tacos_comm_t *c, size_t bytes)
{
    return grow(&c->recv, &c->recv_bytes, bytes);
}

/* Scratch for the units; unit 0 at the returned address. */
static char *work_space(tacos_comm_t *c, const tacos_view_t *v)
{
    char *w = grow(&c->work, &c->work_bytes, v->units * v->unit_ext);
    return w ? w - v->shift : NULL;
}

/* After a call: the communicator keeps its scratch (no page faults next
 * time) while the process's total stays within scratch_max. */
static int finish(tacos_comm_t *c, int rc)
{
    if (__atomic_load_n(&scratch_kept, __ATOMIC_RELAXED) > c->s.scratch_max)
        tacos_comm_drop_scratch(c);
    return rc;
}

/* ---- views ------------------------------------------------------------------------ */

/* Messages and packing take int counts of bytes. */
static const char *too_big(const tacos_view_t *v)
{
    return v->bytes > INT_MAX || v->units * v->unit_ext > INT_MAX
               ? "buffer larger than INT_MAX bytes"
               : NULL;
}

const char *tacos_view_bytes(size_t count, size_t size, tacos_view_t *v)
{
    *v = (tacos_view_t){count * size, 1, count * size, 0};
    return count && size > SIZE_MAX / count ? "buffer larger than INT_MAX bytes" : too_big(v);
}

const char *tacos_view_elements(size_t count, size_t size, ptrdiff_t ext, ptrdiff_t tlb,
                                ptrdiff_t text, int commutative, tacos_view_t *v)
{
    *v = (tacos_view_t){0, 0, 0, tlb};
    if (!commutative)
        return "non-commutative op";
    if (ext <= 0 || text > ext) /* the same datatype on every rank: the same answer */
        return "datatype whose elements overlap";
    *v = (tacos_view_t){count, (size_t)ext, count * size, tlb};
    return count && (size_t)ext > SIZE_MAX / count ? "buffer larger than INT_MAX bytes"
                                                    : too_big(v);
}

/* ---- running a program -------------------------------------------------------- */

/* Runs plan p on the units in work, cut into blocks p->off (in units):
 * start + wait on the state cached with the program. */
static int run(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call, char *work,
               const tacos_exec_opts_t *opts)
{
    const tacos_view_t *v = &call->v;
    tacos_comm_say(c, 10, "%s %zu bytes on %d ranks: schedule k=%d, %zu ops",
                   tacos_coll_name(p->coll), v->bytes, c->ops.size, p->k, p->prog->nops);
    tacos_exec_opts_t o = opts ? *opts : (tacos_exec_opts_t){0};
    o.ordered = c->s.deterministic;
    if (o.input)
        o.input = (const char *)o.input + v->shift;
    int rc = tacos_exec_start(p->exec, p->off, work + v->shift, v->unit_ext, &call->tp, &o);
    if (rc == TACOS_OK)
        rc = tacos_exec_wait(p->exec);
    if (rc == TACOS_OK)
        return 0;
    int error = *call->error;
    /* sends abandoned in flight may still read the work buffer: set aside */
    drop(&c->work, &c->work_bytes, 0);
    const char *what = error                   ? "a message failed"
                       : rc == TACOS_ERR_NOMEM ? "out of memory for the executor"
                                               : "the schedule cannot progress (a coll/tacos bug)";
    int ret = error ? error : rc == TACOS_ERR_NOMEM ? call->err_nomem : call->err_internal;
    tacos_comm_say(c, 0, "%s of %zu bytes on rank %d of %d: %s (%d); the other ranks may wait "
                         "for this one until the error handler ends the job",
                   tacos_coll_name(p->coll), v->bytes, c->ops.rank, c->ops.size, what, ret);
    return ret;
}

/* Blocks of counts[r] units (or `each` when counts is NULL), into off[0..n]
 * (the cached plan's array: no allocation per call). */
static void sized_blocks(size_t *off, int n, const int *counts, size_t each)
{
    off[0] = 0;
    for (int r = 0; r < n; r++)
        off[r + 1] = off[r] + (counts ? (size_t)counts[r] : each);
}

static void even_blocks(size_t *off, int n, size_t units)
{
    for (int r = 0; r <= n; r++)
        off[r] = units * (size_t)r / (size_t)n;
}

/* d's units in place (unit 0's address), or NULL where it goes through
 * scratch: its data is one run of bytes and, for elements, they are packed
 * tightly (no lower bound, no padding: the signature's size is the units'
 * extent; always so for bytes). */
static char *direct(const tacos_call_t *call, const tacos_data_t *d)
{
    const tacos_view_t *v = &call->v;
    if (!d->count)
        return d->buf;
    if (v->shift != 0 || v->units * v->unit_ext != v->bytes)
        return NULL;
    return call->contiguous(call->tp.ctx, d);
}

#define PACK(call, d, work) (call)->pack((call)->tp.ctx, d, work)
#define UNPACK(call, work, d) (call)->unpack((call)->tp.ctx, work, d)

/* ---- the collectives ------------------------------------------------------------ */

int tacos_run_allreduce(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
                        const tacos_data_t *send, const tacos_data_t *recv)
{
    const tacos_data_t *in = send ? send : recv;
    char *out = direct(call, recv), *src = direct(call, in);
    int rc;
    even_blocks(p->off, c->ops.size, call->v.units);
    if (out && src) { /* the input read in place; rbuf gets each chunk when first written */
        tacos_exec_opts_t opts = {.input = src};
        rc = run(c, p, call, out, src == out ? NULL : &opts);
    } else { /* through scratch */
        char *work = work_space(c, &call->v);
        rc = !work ? call->err_nomem : PACK(call, in, work);
        if (!rc)
            rc = run(c, p, call, work, NULL);
        if (!rc)
            rc = UNPACK(call, work, recv);
    }
    return finish(c, rc);
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} copy_args_t;

static void copy_block(void *arg)
{
    copy_args_t *a = arg;
    if (a->bytes)
        memcpy(a->dst, a->src, a->bytes);
}

int tacos_run_allgather(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
                        const tacos_data_t *send, const tacos_data_t *recv)
{
    int n = c->ops.size, me = c->ops.rank, rc = 0;
    size_t block = call->v.bytes / (size_t)n, per_rank = recv->count / (size_t)n;
    char *out = direct(call, recv), *work = out ? out : work_space(c, &call->v);
    const char *own = send ? direct(call, send) : NULL;
    sized_blocks(p->off, n, NULL, block);
    if (!work)
        return finish(c, call->err_nomem);
    /* the own block: sent straight from sbuf and copied into place while
     * the first messages travel, or packed into place first */
    copy_args_t copy = {work + block * (size_t)me, own, block};
    tacos_exec_opts_t opts = {.own_src = own, .own_block = me, .overlap = copy_block,
                              .overlap_arg = &copy};
    tacos_data_t mine = {(char *)recv->buf + (ptrdiff_t)me * (ptrdiff_t)per_rank * recv->extent,
                         per_rank, recv->type, recv->extent};
    if (send && !own)
        rc = PACK(call, send, work + block * (size_t)me);
    else if (!send && !out)
        rc = PACK(call, &mine, work + block * (size_t)me);
    if (!rc)
        rc = run(c, p, call, work, own ? &opts : NULL);
    if (!rc && !out)
        rc = UNPACK(call, work, recv);
    return finish(c, rc);
}

int tacos_run_bcast(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
                    const tacos_data_t *data, int root)
{
    int me = c->ops.rank, rc = 0;
    char *at = direct(call, data), *work = at ? at : work_space(c, &call->v);
    even_blocks(p->off, c->ops.size, call->v.units);
    if (!work)
        return finish(c, call->err_nomem);
    if (!at && me == root)
        rc = PACK(call, data, work);
    if (!rc)
        rc = run(c, p, call, work, NULL);
    if (!rc && !at && me != root)
        rc = UNPACK(call, work, data);
    return finish(c, rc);
}

int tacos_run_reduce(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
                     const tacos_data_t *send, const tacos_data_t *recv, int root)
{
    int me = c->ops.rank, rc = 0;
    /* the root reduces in rbuf where it can, the others in scratch; the
     * input is read in place where it can */
    const tacos_data_t *in = send ? send : recv;
    char *src = direct(call, in), *out = me == root ? direct(call, recv) : NULL;
    char *work = out && src ? out : work_space(c, &call->v);
    even_blocks(p->off, c->ops.size, call->v.units);
    if (!work)
        return finish(c, call->err_nomem);
    tacos_exec_opts_t opts = {.input = src, .keep = me == root ? TACOS_KEEP_ALL : TACOS_KEEP_NONE};
    if (!src) /* packed into the work buffer (else read in place, or already there) */
        rc = PACK(call, in, work);
    if (!rc)
        rc = run(c, p, call, work, src && src != work ? &opts : NULL);
    if (!rc && me == root && work != out)
        rc = UNPACK(call, work, recv);
    return finish(c, rc);
}

/* The schedule runs in scratch holding the whole input, which it reads from
 * the caller's buffer in place where it can; only the result block is
 * written to rbuf (with MPI_IN_PLACE the rest of rbuf stays as it was). */
int tacos_run_reduce_scatter(tacos_comm_t *c, const tacos_plan_t *p, const tacos_call_t *call,
                             const tacos_data_t *send, const tacos_data_t *recv,
                             const int *counts, size_t each)
{
    int me = c->ops.rank, rc = 0;
    const tacos_view_t *v = &call->v;
    const tacos_data_t *in = send ? send : recv;
    char *src = direct(call, in), *work = work_space(c, v);
    sized_blocks(p->off, c->ops.size, counts, each);
    if (!work)
        return finish(c, call->err_nomem);
    tacos_exec_opts_t opts = {.input = src, .keep = TACOS_KEEP_BLOCK, .keep_block = me};
    if (!src)
        rc = PACK(call, in, work);
    if (!rc)
        rc = run(c, p, call, work, src ? &opts : NULL);
    size_t first = p->off[me], mine = p->off[me + 1] - first;
    tacos_data_t result = {recv->buf, mine, recv->type, recv->extent};
    if (!rc && mine) {
        char *out = direct(call, &result), *res = work + first * v->unit_ext;
        if (out)
            memcpy(out, res, mine * v->unit_ext);
        else
            rc = UNPACK(call, res, &result);
    }
    return finish(c, rc);
}
