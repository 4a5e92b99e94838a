/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives libtacos-pmpi serves (MPI_Allreduce, MPI_Allgather,
 * MPI_Alltoall, MPI_Bcast, MPI_Reduce, MPI_Reduce_scatter(_block),
 * MPI_Gather, MPI_Scatter; each also nonblocking and persistent): the
 * drivers, which plan a call with the core and run it (or fall back to the
 * MPI library's own, or run it on host copies of GPU buffers), and their
 * int entry points; then the calls it does not serve that it waits for
 * while progressing its operations (the other collectives, the
 * communicator constructors).
 */
#include <mpi.h>

#include "drivers.h"
#include "tacos_pmpi.h"

/* The call's name in its mode. */
#define NAME(name, iname) (mode == NONBLOCKING ? #iname : mode == PERSISTENT ? #name "_init" : #name)

/* The MPI library's own collective in the call's mode. */
#define FALLBACK(name, iname, ...) IN_MODE(PMPI_##iname, PMPI_##name##_init, __VA_ARGS__)

/* The state (NULL: the MPI library's own collective, see PLAN). */
#define STATE(st, comm) state_t *st = pmpi_state_of(comm, mode != NONBLOCKING)

/* A call's context and what the core needs of it. */
#define CALL(state, tag_, op_)                                                               \
    call_ctx_t x = {.st = state, .tag = tag_, .unit = MPI_BYTE, .op = op_,                   \
                    .space = (state) ? &(state)->space : NULL};                              \
    tacos_call_t call = pmpi_call(&x) /* its memory set by RUN where the call is staged */

/* A call on host copies of GPU buffers, on this thread: 1 runs as planned,
 * 2 falls back as the original call did (without planning again). */
static _Thread_local struct {
    int then;
    const char *why;
} hand;

/* GPU buffers (bufs: the call's that matter on this rank; contiguous: all
 * of them one run of bytes) go through the schedule staged by the executor;
 * where it cannot take them (why_dev), or no schedule serves the call, the
 * call runs on host copies of its buffers (by_hand_<name>).  After the
 * view (x.unit, the size). */
#define DEVICE(contiguous, ...)                                                              \
    const void *bufs_[] = {__VA_ARGS__};                                                     \
    int then_ = hand.then; /* this call's own: collectives nested in it look again */        \
    hand.then = 0;                                                                           \
    if (!then_)                                                                              \
        pmpi_on_device(&x, bufs_, (int)(sizeof bufs_ / sizeof *bufs_));                      \
    const char *why_dev = pmpi_device_why(&x, contiguous, call.v.bytes)

/* The core's decision for the call (tacos_comm_decide; on a state not
 * made yet: pmpi_want): returns an error or, where nothing is to move,
 * success; falls back with the reason (on host copies where the buffers
 * are a GPU's); or goes on with p.  Without a state: the MPI library's own. */
#define PLAN(st, which, at, why, p, name, iname, ...)                                        \
    do {                                                                                     \
        int plan_rc_ = MPI_SUCCESS;                                                          \
        if (then_ != 2 && !(st) && x.device)                                                 \
            return by_hand_##name(mode, info, request, "no state", 2, __VA_ARGS__);          \
        if (then_ != 2 && !(st))                                                             \
            return FALLBACK(name, iname, __VA_ARGS__);                                       \
        if (then_ != 2 && (st) == &pmpi_unmade && !(x.device && why_dev))                    \
            pmpi_want(comm, which, at, call.v.bytes, &(why));                                \
        tacos_call_facts_t f_ = {.on_copies = then_, .copies_why = hand.why,                 \
                                 .device = x.device != 0, .why_dev = why_dev,                \
                                 .mode = (tacos_mode_t)mode, .coll = which, .root = at,      \
                                 .bytes = call.v.bytes};                                     \
        switch (tacos_comm_decide((st) && (st) != &pmpi_unmade ? (st)->core : NULL, &f_,     \
                                  &(why), &(p), &plan_rc_)) {                                \
        case TACOS_CALL_RUN:                                                                 \
            break;                                                                           \
        case TACOS_CALL_ERROR:                                                               \
            return PMPI_Comm_call_errhandler(comm, plan_rc_), plan_rc_;                      \
        case TACOS_CALL_DONE:                                                                \
            return MPI_SUCCESS;                                                              \
        case TACOS_CALL_COPIES:                                                              \
            return by_hand_##name(mode, info, request, why, 1, __VA_ARGS__);                 \
        case TACOS_CALL_COPIES_FALL_BACK:                                                    \
            return by_hand_##name(mode, info, request, why, 2, __VA_ARGS__);                 \
        default:                                                                             \
            pmpi_say(10, "MPI_%s: fallback: %s", NAME(name, iname), why);                    \
            pmpi_event(#name, mode, "fallback", why);                                        \
            return FALLBACK(name, iname, __VA_ARGS__);                                       \
        }                                                                                    \
    } while (0)

/* Runs plan p in the call's mode (staged where its memory says so: a
 * blocking call on the state's stream, an operation on its own); an error
 * goes to the communicator's error handler, as MPI's would. */
#define RUN(st, p, a, ic)                                                                    \
    pmpi_done(comm, mode == BLOCKING                                                         \
                        ? run_blocking(st, p, &call, &x, a)                                  \
                        : pmpi_memory_bind(NULL, &call, &x) ? MPI_ERR_OTHER                  \
                        : pmpi_launch(st, p, &call, a, mode == PERSISTENT, ic, request))


static int run_blocking(state_t *st, const tacos_plan_t *p, tacos_call_t *call, call_ctx_t *x,
                        const tacos_args_t *a)
{
    int rc = pmpi_memory_bind(&st->stream, call, x);
    return rc != MPI_SUCCESS ? rc : tacos_run(st->core, p, call, a);
}

/* A reduction's view; nonblocking and persistent calls also need a
 * predefined op: PMPI gives no way to hold a user's op past an
 * MPI_Op_free that may come before the operation ends. */
static const char *view_reduction(MPI_Datatype dtype, size_t count, MPI_Op op, call_mode_t mode,
                                  tacos_view_t *v, call_ctx_t *x)
{
    static const MPI_Op predefined[] = {MPI_MAX, MPI_MIN,  MPI_SUM,  MPI_PROD,   MPI_LAND,
                                        MPI_BAND, MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR,
                                        MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP};
    const char *why = pmpi_view_elements(dtype, count, op, v, x);
    int known = mode == BLOCKING;
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++)
        known |= op == predefined[i];
    return why ? why : known ? NULL : "a user-defined op (nonblocking and persistent calls)";
}

/* The calls on host copies of GPU buffers (defined below). */
#define BY_HAND_ARGS call_mode_t mode, MPI_Info info, MPI_Request *request, const char *why, int then
static int by_hand_Allreduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                             MPI_Datatype dtype, MPI_Op op, MPI_Comm comm);
static int by_hand_Allgather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                             void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm);
static int by_hand_Alltoall(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                            void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm);
static int by_hand_Bcast(BY_HAND_ARGS, void *buf, int count, MPI_Datatype dtype, int root,
                         MPI_Comm comm);
static int by_hand_Reduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                          MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm);
static int by_hand_Reduce_scatter_block(BY_HAND_ARGS, const void *sbuf, void *rbuf, int rcount,
                                        MPI_Datatype dtype, MPI_Op op, MPI_Comm comm);
static int by_hand_Reduce_scatter(BY_HAND_ARGS, const void *sbuf, void *rbuf,
                                  const int rcounts[], MPI_Datatype dtype, MPI_Op op,
                                  MPI_Comm comm);
static int by_hand_Gather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                          void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm);
static int by_hand_Scatter(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                           void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm);

/* Whether a buffer the call touches is one run of bytes (MPI_IN_PLACE: its
 * datatype is not to be read). */
static int one_run(const void *buf, size_t count, MPI_Datatype dtype)
{
    return buf == MPI_IN_PLACE || pmpi_contiguous(dtype, count);
}

int pmpi_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                   MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    CALL(st, TAG_ALLREDUCE, op);
    const char *why = view_reduction(dtype, (size_t)count, op, mode, &call.v, &x);
    DEVICE(pmpi_contiguous(dtype, (size_t)count), sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLREDUCE, 0, why, p, Allreduce, Iallreduce, sbuf, rbuf, count, dtype, op,
         comm);
    tacos_data_t s = pmpi_data(sbuf, (size_t)count, &dtype);
    tacos_data_t r = pmpi_data(rbuf, (size_t)count, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r};
    pmpi_icall_t ic = {.coll = TACOS_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf,
                       .rcount = count, .op = op};
    return RUN(st, p, &a, &ic);
}

int pmpi_allgather(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                   MPI_Datatype rdtype, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    CALL(st, TAG_ALLGATHER, MPI_OP_NULL);
    const char *why = pmpi_view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    DEVICE(one_run(sbuf, (size_t)scount, sdtype) &&
               pmpi_contiguous(rdtype, (size_t)rcount * (size_t)n),
           sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLGATHER, 0, why, p, Allgather, Iallgather, sbuf, scount, sdtype, rbuf, rcount,
         rdtype, comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    tacos_data_t s = sbuf == MPI_IN_PLACE ? (tacos_data_t){0}
                                          : pmpi_data(sbuf, (size_t)scount, &sdtype);
    tacos_data_t r = pmpi_data(rbuf, (size_t)rcount * (size_t)n, &rdtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r};
    pmpi_icall_t ic = {.coll = TACOS_ALLGATHER,
                       .sbuf = sbuf, .scount = scount, .rbuf = rbuf, .rcount = rcount};
    return RUN(st, p, &a, &ic);
}

int pmpi_alltoall(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    CALL(st, TAG_ALLTOALL, MPI_OP_NULL);
    const char *why = pmpi_view_bytes(rdtype, (size_t)rcount * (size_t)n, &call.v, &x);
    DEVICE(one_run(sbuf, (size_t)scount * (size_t)n, sdtype) &&
               pmpi_contiguous(rdtype, (size_t)rcount * (size_t)n),
           sbuf, rbuf);
    if (x.device && !why_dev && sbuf == MPI_IN_PLACE) /* its input is packed on the host */
        why_dev = "MPI_IN_PLACE";
    const tacos_plan_t *p;
    PLAN(st, TACOS_ALLTOALL, 0, why, p, Alltoall, Ialltoall, sbuf, scount, sdtype, rbuf, rcount,
         rdtype, comm);
    /* with MPI_IN_PLACE, scount and sdtype are not to be read */
    tacos_data_t s = sbuf == MPI_IN_PLACE ? (tacos_data_t){0}
                                          : pmpi_data(sbuf, (size_t)scount * (size_t)n, &sdtype);
    tacos_data_t r = pmpi_data(rbuf, (size_t)rcount * (size_t)n, &rdtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r};
    pmpi_icall_t ic = {.coll = TACOS_ALLTOALL,
                       .sbuf = sbuf, .scount = scount, .rbuf = rbuf, .rcount = rcount};
    return RUN(st, p, &a, &ic);
}

int pmpi_bcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    CALL(st, TAG_BCAST, MPI_OP_NULL);
    const char *why = pmpi_view_bytes(dtype, (size_t)count, &call.v, &x);
    DEVICE(pmpi_contiguous(dtype, (size_t)count), buf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_BROADCAST, root, why, p, Bcast, Ibcast, buf, count, dtype, root, comm);
    tacos_data_t d = pmpi_data(buf, (size_t)count, &dtype);
    tacos_args_t a = {.recv = &d, .root = root};
    pmpi_icall_t ic = {.coll = TACOS_BROADCAST, .rbuf = buf, .rcount = count,
                       .root = root};
    return RUN(st, p, &a, &ic);
}

int pmpi_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
                MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    CALL(st, TAG_REDUCE, op);
    const char *why = view_reduction(dtype, (size_t)count, op, mode, &call.v, &x);
    /* rbuf: the root's */
    DEVICE(pmpi_contiguous(dtype, (size_t)count), sbuf, me == root ? rbuf : NULL);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE, root, why, p, Reduce, Ireduce, sbuf, rbuf, count, dtype, op, root, comm);
    tacos_data_t s = pmpi_data(sbuf, (size_t)count, &dtype);
    tacos_data_t r = pmpi_data(rbuf, (size_t)count, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .root = root};
    pmpi_icall_t ic = {.coll = TACOS_REDUCE, .sbuf = sbuf, .rbuf = rbuf,
                       .rcount = count, .op = op, .root = root};
    return RUN(st, p, &a, &ic);
}

int pmpi_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                              MPI_Op op, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    size_t total = (size_t)rcount * (size_t)n;
    CALL(st, TAG_REDUCE_SCATTER, op);
    const char *why = view_reduction(dtype, total, op, mode, &call.v, &x);
    DEVICE(pmpi_contiguous(dtype, total), sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE_SCATTER, 0, why, p, Reduce_scatter_block, Ireduce_scatter_block, sbuf,
         rbuf, rcount, dtype, op, comm);
    tacos_data_t s = pmpi_data(sbuf, total, &dtype), r = pmpi_data(rbuf, total, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .each = (size_t)rcount};
    pmpi_icall_t ic = {.coll = TACOS_REDUCE_SCATTER, .block = 1, .sbuf = sbuf,
                       .rbuf = rbuf, .rcount = rcount, .op = op};
    return RUN(st, p, &a, &ic);
}

int pmpi_reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                        MPI_Op op, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n;
    PMPI_Comm_size(comm, &n);
    size_t total = 0;
    for (int r = 0; r < n; r++)
        total += (size_t)rcounts[r];
    CALL(st, TAG_REDUCE_SCATTER, op);
    const char *why = view_reduction(dtype, total, op, mode, &call.v, &x);
    DEVICE(pmpi_contiguous(dtype, total), sbuf, rbuf);
    const tacos_plan_t *p;
    PLAN(st, TACOS_REDUCE_SCATTER, 0, why, p, Reduce_scatter, Ireduce_scatter, sbuf, rbuf, rcounts,
         dtype, op, comm);
    tacos_data_t s = pmpi_data(sbuf, total, &dtype), r = pmpi_data(rbuf, total, &dtype);
    tacos_args_t a = {.send = sbuf == MPI_IN_PLACE ? NULL : &s, .recv = &r, .counts = rcounts};
    pmpi_icall_t ic = {.coll = TACOS_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf,
                       .rcounts = rcounts, .nranks = n, .op = op};
    return RUN(st, p, &a, &ic);
}

/* MPI_Gather (gathers) and MPI_Scatter: block r routed between rank r and
 * the root by the synthesized schedule where the communicator spans nodes;
 * on one node MPICH's own (there the schedule is the root's direct
 * exchange over one shared-memory switch).  The root holds n blocks
 * (Gather's receive buffer, Scatter's send buffer), every other rank one
 * (MPI_IN_PLACE at the root).  The call's size is the root's n blocks on
 * every rank, read from the buffers that matter on this rank. */
int pmpi_rooted(int gathers, const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm, MODE_ARGS)
{
    STATE(st, comm);
    int n, me;
    PMPI_Comm_size(comm, &n);
    PMPI_Comm_rank(comm, &me);
    const void *all_buf = gathers ? rbuf : sbuf, *own_buf = gathers ? sbuf : rbuf;
    size_t own_count = (size_t)(gathers ? scount : rcount);
    size_t all_count = (size_t)(gathers ? rcount : scount) * (size_t)n;
    MPI_Datatype all_type = gathers ? rdtype : sdtype, own_type = gathers ? sdtype : rdtype;
    int at_root = me == root, in_place = at_root && own_buf == MPI_IN_PLACE;
    CALL(st, gathers ? TAG_GATHER : TAG_SCATTER, MPI_OP_NULL);
    const char *why = at_root ? pmpi_view_bytes(all_type, all_count, &call.v, &x)
                              : pmpi_view_bytes(own_type, own_count * (size_t)n, &call.v, &x);
    if (!why && st && st != &pmpi_unmade)
        why = pmpi_left_to_mpich(st, gathers ? TACOS_GATHER : TACOS_SCATTER);
    DEVICE(one_run(own_buf, own_count, own_type) &&
               (!at_root || pmpi_contiguous(all_type, all_count)),
           own_buf, at_root ? all_buf : NULL);
    const tacos_plan_t *p;
    if (gathers)
        PLAN(st, TACOS_GATHER, root, why, p, Gather, Igather, sbuf, scount, sdtype, rbuf, rcount,
             rdtype, root, comm);
    else
        PLAN(st, TACOS_SCATTER, root, why, p, Scatter, Iscatter, sbuf, scount, sdtype, rbuf,
             rcount, rdtype, root, comm);
    tacos_data_t own = in_place ? (tacos_data_t){0} : pmpi_data(own_buf, own_count, &own_type);
    tacos_data_t all = at_root ? pmpi_data(all_buf, all_count, &all_type) : (tacos_data_t){0};
    const tacos_data_t *o = in_place ? NULL : &own, *l = at_root ? &all : NULL;
    tacos_args_t a = {.send = gathers ? o : l, .recv = gathers ? l : o, .root = root};
    pmpi_icall_t ic = {.coll = gathers ? TACOS_GATHER : TACOS_SCATTER, .sbuf = sbuf,
                       .scount = scount, .rbuf = rbuf, .rcount = rcount, .root = root};
    return RUN(st, p, &a, &ic);
}

/* A call on GPU buffers that neither the executor's staging nor MPICH can
 * take: an error, not a device pointer handed to code that reads it as
 * host memory. */
int pmpi_unserved(MPI_Comm comm, const char *name, const char *why)
{
    pmpi_say(0, "MPI_%s on GPU buffers: %s; not served (MPICH here is not CUDA-aware)", name, why);
    return pmpi_done(comm, MPI_ERR_UNSUPPORTED_OPERATION);
}

/* A call on host copies of up to two buffers (each copied in, so that what
 * the call does not write stays as it was; copied back where out0, out1):
 * blocking; nonblocking, copied back when it completes; persistent, copied
 * in at each start and back at each completion.  The call itself
 * (call_expr, on h0 and h1, its request in inner_) looks for no GPU
 * buffers and, where `then` is 2, falls back as the original call did. */
#define BY_HAND(label, call_expr, b0, n0, t0, out0, b1, n1, t1, out1)                        \
    do {                                                                                     \
        tacos_mirror_t mm_[2] = {{0}};                                                       \
        int out_[2] = {(out0), (out1)}, inter_ = 0;                                          \
        void *h0 = NULL, *h1 = NULL;                                                         \
        MPI_Request inner_ = MPI_REQUEST_NULL;                                               \
        const char *name_ = label;                                                           \
        if (comm != MPI_COMM_NULL)                                                           \
            PMPI_Comm_test_inter(comm, &inter_);                                             \
        if (inter_)                                                                          \
            return pmpi_unserved(comm, name_, "an intercommunicator");                       \
        pmpi_say(10, "MPI_%s on GPU buffers through host copies: %s", name_, why);           \
        pmpi_event(name_, mode, "copies", why);                                              \
        void **hs_ = pmpi_hand_stream();                                                     \
        int rc_ = pmpi_mirror(&mm_[0], hs_, b0, n0, t0, mode == PERSISTENT, &h0);            \
        if (rc_ == MPI_SUCCESS)                                                              \
            rc_ = pmpi_mirror(&mm_[1], hs_, b1, n1, t1, mode == PERSISTENT, &h1);            \
        if (rc_ != MPI_SUCCESS) {                                                            \
            pmpi_unmirror(&mm_[0], 0);                                                       \
            return pmpi_done(comm, rc_);                                                     \
        }                                                                                    \
        hand.then = then, hand.why = why;                                                    \
        rc_ = call_expr;                                                                     \
        hand.then = 0;                                                                       \
        if (rc_ == MPI_SUCCESS && mode != BLOCKING)                                          \
            return pmpi_done(comm, pmpi_launch_by_hand(inner_, mm_, out_, 2,                 \
                                                       mode == PERSISTENT, request));        \
        int back0_ = pmpi_unmirror(&mm_[0], (out0) && rc_ == MPI_SUCCESS);                   \
        int back1_ = pmpi_unmirror(&mm_[1], (out1) && rc_ == MPI_SUCCESS);                   \
        if (rc_ != MPI_SUCCESS) /* the call's own error, handled there */                    \
            return rc_;                                                                      \
        return pmpi_done(comm, back0_ != MPI_SUCCESS ? back0_ : back1_);                     \
    } while (0)

/* The call on host copies, in the original call's mode (its request in inner_). */
#define HOST(fn, ...) fn(__VA_ARGS__, mode, info, &inner_)

static int by_hand_Allreduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                             MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    BY_HAND(NAME(Allreduce, Iallreduce), HOST(pmpi_allreduce, h0, h1, count, dtype, op, comm),
            sbuf, (size_t)count, dtype, 0, rbuf, (size_t)count, dtype, 1);
}

size_t pmpi_size_of(MPI_Comm comm)
{
    int n = 0;
    PMPI_Comm_size(comm, &n);
    return (size_t)n;
}

static int by_hand_Allgather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                             void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm)
{
    BY_HAND(NAME(Allgather, Iallgather),
            HOST(pmpi_allgather, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf,
            (size_t)scount, sdtype, 0, rbuf, (size_t)rcount * pmpi_size_of(comm), rdtype, 1);
}

static int by_hand_Alltoall(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                            void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm)
{
    BY_HAND(NAME(Alltoall, Ialltoall),
            HOST(pmpi_alltoall, h0, scount, sdtype, h1, rcount, rdtype, comm), sbuf,
            (size_t)scount * pmpi_size_of(comm), sdtype, 0, rbuf,
            (size_t)rcount * pmpi_size_of(comm), rdtype, 1);
}

int pmpi_rank_of(MPI_Comm comm)
{
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    return me;
}

static int by_hand_Bcast(BY_HAND_ARGS, void *buf, int count, MPI_Datatype dtype, int root,
                         MPI_Comm comm)
{
    BY_HAND(NAME(Bcast, Ibcast), HOST(pmpi_bcast, h0, count, dtype, root, comm), buf,
            (size_t)count, dtype, pmpi_rank_of(comm) != root, NULL, 0, dtype, 0);
}

static int by_hand_Reduce(BY_HAND_ARGS, const void *sbuf, void *rbuf, int count,
                          MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm)
{
    int at_root = pmpi_rank_of(comm) == root; /* rbuf: the root's */
    BY_HAND(NAME(Reduce, Ireduce),
            HOST(pmpi_reduce, h0, at_root ? h1 : rbuf, count, dtype, op, root, comm), sbuf,
            (size_t)count, dtype, 0, at_root ? rbuf : NULL, (size_t)count, dtype, 1);
}

static int by_hand_Reduce_scatter_block(BY_HAND_ARGS, const void *sbuf, void *rbuf, int rcount,
                                        MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    size_t all = (size_t)rcount * pmpi_size_of(comm);
    BY_HAND(NAME(Reduce_scatter_block, Ireduce_scatter_block),
            HOST(pmpi_reduce_scatter_block, h0, h1, rcount, dtype, op, comm), sbuf, all, dtype, 0,
            rbuf, sbuf == MPI_IN_PLACE ? all : (size_t)rcount, dtype, 1);
}

static int by_hand_Reduce_scatter(BY_HAND_ARGS, const void *sbuf, void *rbuf,
                                  const int rcounts[], MPI_Datatype dtype, MPI_Op op,
                                  MPI_Comm comm)
{
    size_t all = 0, n = pmpi_size_of(comm);
    for (size_t r = 0; r < n; r++)
        all += (size_t)rcounts[r];
    BY_HAND(NAME(Reduce_scatter, Ireduce_scatter),
            HOST(pmpi_reduce_scatter, h0, h1, rcounts, dtype, op, comm), sbuf, all, dtype, 0, rbuf,
            sbuf == MPI_IN_PLACE ? all : (size_t)rcounts[pmpi_rank_of(comm)], dtype, 1);
}

static int by_hand_Gather(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                          void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    void *out = pmpi_rank_of(comm) == root ? rbuf : NULL; /* rbuf: the root's */
    BY_HAND(NAME(Gather, Igather),
            HOST(pmpi_rooted, 1, h0, scount, sdtype, out ? h1 : rbuf, rcount, rdtype, root, comm),
            sbuf, (size_t)scount, sdtype, 0, out, (size_t)rcount * pmpi_size_of(comm), rdtype, 1);
}

static int by_hand_Scatter(BY_HAND_ARGS, const void *sbuf, int scount, MPI_Datatype sdtype,
                           void *rbuf, int rcount, MPI_Datatype rdtype, int root, MPI_Comm comm)
{
    const void *in = pmpi_rank_of(comm) == root ? sbuf : NULL; /* sbuf: the root's */
    BY_HAND(NAME(Scatter, Iscatter),
            HOST(pmpi_rooted, 0, in ? h0 : sbuf, scount, sdtype, h1, rcount, rdtype, root, comm),
            in, (size_t)scount * pmpi_size_of(comm), sdtype, 0, rbuf, (size_t)rcount, rdtype, 1);
}

/* The entry points of the int forms (ENTRY_POINTS, drivers.h). */
#define CBUF const void *sbuf
#define DT MPI_Datatype
ENTRY_POINTS(Allreduce, Iallreduce, , pmpi_allreduce,
             (CBUF, void *rbuf, int count, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf, count,
             dtype, op, comm)
ENTRY_POINTS(Allgather, Iallgather, , pmpi_allgather,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, MPI_Comm comm), sbuf,
             scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Alltoall, Ialltoall, , pmpi_alltoall,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, MPI_Comm comm), sbuf,
             scount, sdtype, rbuf, rcount, rdtype, comm)
ENTRY_POINTS(Bcast, Ibcast, , pmpi_bcast,
             (void *buf, int count, DT dtype, int root, MPI_Comm comm), buf, count, dtype, root,
             comm)
ENTRY_POINTS(Reduce, Ireduce, , pmpi_reduce,
             (CBUF, void *rbuf, int count, DT dtype, MPI_Op op, int root, MPI_Comm comm), sbuf,
             rbuf, count, dtype, op, root, comm)
ENTRY_POINTS(Gather, Igather, , pmpi_rooted,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, int root,
              MPI_Comm comm),
             1, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Scatter, Iscatter, , pmpi_rooted,
             (CBUF, int scount, DT sdtype, void *rbuf, int rcount, DT rdtype, int root,
              MPI_Comm comm),
             0, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm)
ENTRY_POINTS(Reduce_scatter_block, Ireduce_scatter_block, , pmpi_reduce_scatter_block,
             (CBUF, void *rbuf, int rcount, DT dtype, MPI_Op op, MPI_Comm comm), sbuf, rbuf,
             rcount, dtype, op, comm)
ENTRY_POINTS(Reduce_scatter, Ireduce_scatter, , pmpi_reduce_scatter,
             (CBUF, void *rbuf, const int rcounts[], DT dtype, MPI_Op op, MPI_Comm comm), sbuf,
             rbuf, rcounts, dtype, op, comm)
#undef CBUF
#undef DT

/* ---- the calls that wait (not served) ------------------------------------------------- */

/* The collectives this library does not serve: MPICH's, waited for
 * (WAITED, drivers.h). */
#define CBUF const void *sbuf
#define CINTS const int
WAITED(Allgatherv, Iallgatherv,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, CINTS rc[], CINTS d[], MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Gatherv, Igatherv,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, CINTS rc[], CINTS d[], MPI_Datatype rt, int root,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, root, comm)
WAITED(Scatterv, Iscatterv,
       (CBUF, CINTS sc[], CINTS d[], MPI_Datatype st, void *rbuf, int rc, MPI_Datatype rt, int root,
        MPI_Comm comm),
       sbuf, sc, d, st, rbuf, rc, rt, root, comm)
WAITED(Alltoallv, Ialltoallv,
       (CBUF, CINTS sc[], CINTS sd[], MPI_Datatype st, void *rbuf, CINTS rc[], CINTS rd[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED_UNLESS(IN_PLACE, Alltoallw, Ialltoallw,
              (CBUF, CINTS sc[], CINTS sd[], const MPI_Datatype st[], void *rbuf, CINTS rc[],
               CINTS rd[], const MPI_Datatype rt[], MPI_Comm comm),
              sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Scan, Iscan, (CBUF, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm), sbuf,
       rbuf, count, t, op, comm)
WAITED(Exscan, Iexscan, (CBUF, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm),
       sbuf, rbuf, count, t, op, comm)
WAITED(Neighbor_allgather, Ineighbor_allgather,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, int rc, MPI_Datatype rt, MPI_Comm comm), sbuf,
       sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_allgatherv, Ineighbor_allgatherv,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, CINTS rc[], CINTS d[], MPI_Datatype rt,
        MPI_Comm comm),
       sbuf, sc, st, rbuf, rc, d, rt, comm)
WAITED(Neighbor_alltoall, Ineighbor_alltoall,
       (CBUF, int sc, MPI_Datatype st, void *rbuf, int rc, MPI_Datatype rt, MPI_Comm comm), sbuf,
       sc, st, rbuf, rc, rt, comm)
WAITED(Neighbor_alltoallv, Ineighbor_alltoallv,
       (CBUF, CINTS sc[], CINTS sd[], MPI_Datatype st, void *rbuf, CINTS rc[], CINTS rd[],
        MPI_Datatype rt, MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
WAITED(Neighbor_alltoallw, Ineighbor_alltoallw,
       (CBUF, CINTS sc[], const MPI_Aint sd[], const MPI_Datatype st[], void *rbuf, CINTS rc[],
        const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm comm),
       sbuf, sc, sd, st, rbuf, rc, rd, rt, comm)
#undef CBUF
#undef CINTS

/* MPICH's nonblocking form, waited for on every rank as WAITED says: a
 * rank in MPI_Comm_dup progresses this library's operations while it
 * waits (MPI_Comm_split and the other constructors have no nonblocking
 * form). */
WAITED(Comm_dup, Comm_idup, (MPI_Comm comm, MPI_Comm *newcomm), comm, newcomm)

/* The blocking calls over a communicator that have no nonblocking form
 * (its constructors): MPICH's, once every rank of comm has arrived, so
 * that none waits there for this rank's operations (before, a rank in
 * MPI_Comm_split while a peer waited for its part of a collective hung). */
#define ARRIVED_FIRST(name, params, ...)                                                     \
    int MPI_##name params                                                                    \
    {                                                                                        \
        int rc_ = pmpi_arrived(comm);                                                        \
        return rc_ != MPI_SUCCESS ? rc_ : PMPI_##name(__VA_ARGS__);                          \
    }
#define CINTS const int
ARRIVED_FIRST(Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm), comm, color, key,
              newcomm)
ARRIVED_FIRST(Comm_split_type,
              (MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm), comm, type,
              key, info, newcomm)
ARRIVED_FIRST(Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm), comm, group,
              newcomm)
ARRIVED_FIRST(Intercomm_merge, (MPI_Comm comm, int high, MPI_Comm *newcomm), comm, high, newcomm)
ARRIVED_FIRST(Cart_create,
              (MPI_Comm comm, int ndims, CINTS dims[], CINTS periods[], int reorder,
               MPI_Comm *newcomm),
              comm, ndims, dims, periods, reorder, newcomm)
ARRIVED_FIRST(Cart_sub, (MPI_Comm comm, CINTS remain[], MPI_Comm *newcomm), comm, remain, newcomm)
ARRIVED_FIRST(Graph_create,
              (MPI_Comm comm, int nnodes, CINTS index[], CINTS edges[], int reorder,
               MPI_Comm *newcomm),
              comm, nnodes, index, edges, reorder, newcomm)
ARRIVED_FIRST(Dist_graph_create,
              (MPI_Comm comm, int n, CINTS sources[], CINTS degrees[], CINTS dests[],
               CINTS weights[], MPI_Info info, int reorder, MPI_Comm *newcomm),
              comm, n, sources, degrees, dests, weights, info, reorder, newcomm)
ARRIVED_FIRST(Dist_graph_create_adjacent,
              (MPI_Comm comm, int indegree, CINTS sources[], CINTS sourceweights[], int outdegree,
               CINTS dests[], CINTS destweights[], MPI_Info info, int reorder, MPI_Comm *newcomm),
              comm, indegree, sources, sourceweights, outdegree, dests, destweights, info, reorder,
              newcomm)
#undef CINTS
