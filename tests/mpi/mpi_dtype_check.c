/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Derived datatypes through every collective, checked byte by byte.
 *
 * Each buffer is described here, independently of MPI: per element n ints
 * at byte offsets off[], elements ext bytes apart.  A buffer is blocks of
 * such elements at byte bases; it is allocated with guard bytes before its
 * first and after its last byte, and every byte that no block describes
 * (the guards, a vector's gaps, a resized type's padding) must keep its
 * fill after the call, the inputs must keep every byte, and each output int
 * must hold the value computed here.  The layouts: an int; an int resized
 * with a lower bound and a larger extent; an int at a negative true lower
 * bound (alone, and resized larger); a vector with gaps; a vector with a
 * negative stride; an hvector; a struct with padding; a column (a vector
 * resized to one int's extent: a size 4 times its extent, as a matrix
 * transpose uses).  Ranks pick different layouts for the same signature,
 * per peer where the call takes per-peer types.
 *
 * Collectives: a matrix transpose through MPI_Alltoallw at sizes that do
 * and do not divide; then Alltoall(v,w), Gather(v), Scatter(v),
 * Allgather(v), Bcast, Reduce, Allreduce, Reduce_scatter(_block), Scan,
 * Exscan (MPI_IN_PLACE where legal), the neighbourhood Alltoall(v,w) and
 * Allgather(v) on a ring, and Alltoallw, Gatherv, Scatterv and Allgatherv
 * on an intercommunicator; each blocking, nonblocking and persistent
 * (started twice); on MPI_COMM_WORLD and a split.  Counts 0, 1, primes and
 * one large size.  Prints "mpi_dtype_check: 0 failure(s)" on success.
 * --quick: fewer rounds.  DTYPE_TRACE=1 prints each call before it runs;
 * DTYPE_MODES=bnp runs only the blocking (b), nonblocking (n) or
 * persistent (p) forms named.
 */
#include "mpi_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, me_world;


enum { BLOCKING, NONBLOCKING, PERSISTENT, NMODES };
static const char *mode_name[] = {"blocking", "nonblocking", "persistent"};

/* Whether DTYPE_MODES (b, n, p; unset: all) names mode. */
static int mode_on(int mode)
{
    const char *m = getenv("DTYPE_MODES");
    return !m || strchr(m, "bnp"[mode]);
}
static const char *what; /* the call being checked, for messages */

/* ---- layouts -------------------------------------------------------------------- */

enum { COLUMN_STRIDE = 64 }; /* a column's ints are this many ints apart */
typedef struct {
    const char *name;
    int n;         /* ints per element */
    long off[4];   /* their byte offsets from the element's address */
    long ext;      /* elements' distance */
    MPI_Datatype t;
} layout_t;

enum { COLUMN = 8, NLAYOUTS = 10 };
static layout_t L[NLAYOUTS] = {
    {"int", 1, {0}, 4, 0},
    {"int resized (lb -4, extent 12)", 1, {0}, 12, 0},
    {"int at true lb -8", 1, {-8}, 4, 0},
    {"int at true lb -8 resized (lb -16, extent 20)", 1, {-8}, 20, 0},
    {"vector 2 x 1 stride 3", 2, {0, 12}, 16, 0},
    {"vector 2 x 1 stride -3", 2, {0, -12}, 16, 0},
    {"hvector 3 x 1 stride 8 bytes", 3, {0, 8, 16}, 20, 0},
    {"struct of 2 ints with padding (extent 16)", 2, {0, 8}, 16, 0},
    {"column: vector 4 x 1 stride 64 resized to extent 4", 4,
     {0, 4 * COLUMN_STRIDE, 8 * COLUMN_STRIDE, 12 * COLUMN_STRIDE}, 4, 0},
    {"int resized to extent -4 (elements run backwards)", 1, {0}, -4, 0},
};

static void make_layouts(void)
{
    MPI_Datatype t, u;
    int one[2] = {1, 1};
    MPI_Aint at[2] = {-8, 0};
    L[0].t = MPI_INT;
    MPI_Type_create_resized(MPI_INT, -4, 12, &L[1].t);
    MPI_Type_create_hindexed(1, one, at, MPI_INT, &L[2].t);
    MPI_Type_create_hindexed(1, one, at, MPI_INT, &t);
    MPI_Type_create_resized(t, -16, 20, &L[3].t);
    MPI_Type_free(&t);
    MPI_Type_vector(2, 1, 3, MPI_INT, &L[4].t);
    MPI_Type_vector(2, 1, -3, MPI_INT, &L[5].t);
    MPI_Type_create_hvector(3, 1, 8, MPI_INT, &L[6].t);
    MPI_Datatype ints[2] = {MPI_INT, MPI_INT};
    MPI_Aint disp[2] = {0, 8};
    MPI_Type_create_struct(2, one, disp, ints, &u);
    MPI_Type_create_resized(u, 0, 16, &L[7].t);
    MPI_Type_free(&u);
    MPI_Type_vector(4, 1, COLUMN_STRIDE, MPI_INT, &t);
    MPI_Type_create_resized(t, 0, 4, &L[COLUMN].t);
    MPI_Type_free(&t);
    MPI_Type_create_resized(MPI_INT, 0, -4, &L[9].t);
    for (int i = 1; i < NLAYOUTS; i++) {
        MPI_Type_commit(&L[i].t);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(L[i].t, &lb, &ext);
        if (ext != L[i].ext)
            FAIL("layout %s: extent %ld, described %ld", L[i].name, (long)ext, L[i].ext);
    }
}

static long pos(int l, long j) { return j / L[l].n * L[l].ext + L[l].off[j % L[l].n]; }

/* ---- buffers ---------------------------------------------------------------------- */

enum { MAXBLOCKS = 64, GUARD = 64 };
static const unsigned char FILL = 0xA5;

/* Ints of one layout from a base.  Before the call int t holds in0 + t
 * (in0 0: the fill); after it want0 + step * t (want0 0: not checked, as
 * MPI leaves it undefined). */
typedef struct {
    long base; /* bytes from buf */
    int lay;
    long ints;
    int in0, want0, step;
} block_t;

typedef struct {
    int nb;
    block_t b[MAXBLOCKS];
    char *mem, *buf;
    size_t len;
} buffer_t;

static void add(buffer_t *x, long base, int lay, long ints, int in0, int want0, int step)
{
    if (x->nb == MAXBLOCKS) {
        FAIL("%s: too many blocks (a bug of this test)", what);
        return;
    }
    x->b[x->nb++] = (block_t){base, lay, ints, in0, want0, step};
}

/* An input block: its values stay.  An output block: it gets them. */
static void add_in(buffer_t *x, long base, int lay, long ints, int v)
{
    add(x, base, lay, ints, v, v, 1);
}
static void add_out(buffer_t *x, long base, int lay, long ints, int v)
{
    add(x, base, lay, ints, 0, v, 1);
}

/* The lowest and past-the-highest byte of ints [0, ints) of layout l. */
static void span(int l, long ints, long *lo, long *hi)
{
    *lo = 0, *hi = 0;
    for (long t = 0; t < ints; t++) {
        long p = pos(l, t);
        if (t == 0 || p < *lo)
            *lo = p;
        if (t == 0 || p + 4 > *hi)
            *hi = p + 4;
    }
}

/* Where a block of (lay, ints) goes after x's blocks: past their last byte
 * and a gap, at a multiple of `unit` bytes (an extent where displacements
 * count extents, 1 where they count bytes). */
static long next_base(const buffer_t *x, int lay, long ints, long unit)
{
    long end = 0, lo, hi;
    if (!x->nb) /* at 0 (Open MPI 4.1's coll/self takes Alltoallw's first
                 * displacement in extents) */
        return 0;
    for (int i = 0; i < x->nb; i++) {
        span(x->b[i].lay, x->b[i].ints, &lo, &hi);
        if (x->b[i].ints && x->b[i].base + hi > end)
            end = x->b[i].base + hi;
    }
    span(lay, ints, &lo, &hi);
    long base = end - lo + 4, u = unit < 0 ? -unit : unit;
    return (base + u - 1) / u * u;
}

/* Every byte the fill, then the inputs' values. */
static void reset(buffer_t *x)
{
    memset(x->mem, FILL, x->len);
    for (int i = 0; i < x->nb; i++)
        for (long t = 0; x->b[i].in0 && t < x->b[i].ints; t++) {
            int v = x->b[i].in0 + (int)t;
            memcpy(x->buf + x->b[i].base + pos(x->b[i].lay, t), &v, 4);
        }
}

/* Allocates x's blocks with GUARD bytes on either side, then reset. */
static void realize(buffer_t *x)
{
    long lo = 0, hi = 0, a, b;
    for (int i = 0; i < x->nb; i++) {
        span(x->b[i].lay, x->b[i].ints, &a, &b);
        if (x->b[i].ints && x->b[i].base + a < lo)
            lo = x->b[i].base + a;
        if (x->b[i].ints && x->b[i].base + b > hi)
            hi = x->b[i].base + b;
    }
    x->len = (size_t)(hi - lo) + 2 * GUARD;
    x->mem = malloc(x->len);
    x->buf = x->mem + GUARD - lo;
    reset(x);
}

/* Every checked int holds its value, every byte of no block its fill. */
static void verify(const buffer_t *x, const char *which)
{
    char *mask = calloc(x->len, 1);
    int bad = 0;
    for (int i = 0; i < x->nb; i++)
        for (long t = 0; t < x->b[i].ints; t++) {
            long p = x->b[i].base + pos(x->b[i].lay, t);
            int v, want = x->b[i].want0 + x->b[i].step * (int)t;
            memset(mask + (x->buf - x->mem) + p, 1, 4);
            memcpy(&v, x->buf + p, 4);
            if (x->b[i].want0 && v != want && bad++ < 2)
                FAIL("%s: %s block %d (%s, %ld ints) int %ld: %d, want %d", what, which, i,
                     L[x->b[i].lay].name, x->b[i].ints, t, v, want);
        }
    for (size_t k = 0; k < x->len; k++)
        if (!mask[k] && (unsigned char)x->mem[k] != FILL && bad++ < 2)
            FAIL("%s: %s: byte %ld from its first block's lowest changed (no block has it)",
                 what, which, (long)k - GUARD);
    free(mask);
}

static void drop(buffer_t *x)
{
    free(x->mem);
    memset(x, 0, sizeof *x);
}

/* A value no other block of the call has: block (from, to) of a round. */
static int val(int from, int to, int round) { return ((from * 67 + to) * 8 + round % 8) * 40000 + 1; }

/* ---- running one call in a mode ----------------------------------------------------- */

/* Runs the call in mode, then checks its buffers: blocking, or the request
 * completed (persistent: started twice, the buffers reset between). */
#define RUN(mode, blocking, nonblocking, persistent, sb, rb)                               \
    do {                                                                                 \
        MPI_Request req_;                                                                \
        if (getenv("DTYPE_TRACE"))                                                       \
            fprintf(stderr, "rank %d: %s %s\n", me_world, what, mode_name[mode]);        \
        if ((mode) == BLOCKING) {                                                        \
            blocking;                                                                    \
        } else if ((mode) == NONBLOCKING) {                                              \
            nonblocking;                                                                 \
            MPI_Wait(&req_, MPI_STATUS_IGNORE);                                          \
        } else {                                                                         \
            persistent;                                                                  \
            for (int s_ = 0; s_ < 2; s_++) {                                             \
                if (s_)                                                                  \
                    reset(sb), reset(rb);                                                \
                MPI_Start(&req_);                                                        \
                MPI_Wait(&req_, MPI_STATUS_IGNORE);                                      \
            }                                                                            \
            MPI_Request_free(&req_);                                                     \
        }                                                                                \
        verify(sb, "send buffer");                                                       \
        verify(rb, "receive buffer");                                                    \
        drop(sb), drop(rb);                                                              \
    } while (0)

/* ---- the transpose ---------------------------------------------------------------- */

/* A (rows x cols) float matrix, rank r holding rows [first(r), first(r+1))
 * (the last rank the rest), transposed into (cols x rows) held the same
 * way: rank me sends p the block of its rows and p's columns as one vector
 * (or hvector), p receives it as rows(me) columns (a vector of cols(p)
 * floats `rows` apart, resized to one float's extent); or by_columns: me
 * sends cols(p) columns (a vector of rows(me) floats, resized likewise),
 * p receives rows of rows(me) floats, resized to a row of the result. */
static long first(long len, int n, int r) { return r * (len / n); }
static long part(long len, int n, int r) { return r == n - 1 ? len - first(len, n, r) : len / n; }

static void transpose(MPI_Comm comm, long rows, long cols, int by_columns, int mode)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    long my_rows = part(rows, n, me), my_cols = part(cols, n, me);
    size_t a_len = (size_t)(my_rows * cols) * 4 + 2 * GUARD;
    size_t t_len = (size_t)(my_cols * rows) * 4 + 2 * GUARD;
    char *a_mem = malloc(a_len), *t_mem = malloc(t_len);
    float *a = (float *)(a_mem + GUARD), *at = (float *)(t_mem + GUARD);
    memset(a_mem, FILL, a_len);
    memset(t_mem, FILL, t_len);
    for (long i = 0; i < my_rows; i++)
        for (long j = 0; j < cols; j++)
            a[i * cols + j] = (float)((first(rows, n, me) + i) * cols + j);
    int *sc = malloc(4 * (size_t)n * sizeof *sc), *sd = sc + n, *rc = sd + n, *rd = rc + n;
    MPI_Datatype *st = malloc(2 * (size_t)n * sizeof *st), *rt = st + n, col;
    for (int p = 0; p < n; p++) {
        long p_cols = part(cols, n, p), p_rows = part(rows, n, p);
        if (by_columns) { /* columns of my rows out, rows of p's columns in */
            if (p % 2)
                MPI_Type_vector((int)my_rows, 1, (int)cols, MPI_FLOAT, &col);
            else
                MPI_Type_create_hvector((int)my_rows, 1, (MPI_Aint)cols * 4, MPI_FLOAT, &col);
            MPI_Type_create_resized(col, 0, 4, &st[p]);
            MPI_Type_free(&col);
            sc[p] = (int)p_cols, sd[p] = (int)(first(cols, n, p) * 4);
            MPI_Type_contiguous((int)p_rows, MPI_FLOAT, &col);
            MPI_Type_create_resized(col, 0, (MPI_Aint)rows * 4, &rt[p]);
            MPI_Type_free(&col);
            rc[p] = (int)my_cols, rd[p] = (int)(first(rows, n, p) * 4);
        } else { /* a block of my rows out, columns of p's rows in */
            if ((me + p) % 2)
                MPI_Type_vector((int)my_rows, (int)p_cols, (int)cols, MPI_FLOAT, &st[p]);
            else
                MPI_Type_create_hvector((int)my_rows, (int)p_cols, (MPI_Aint)cols * 4,
                                        MPI_FLOAT, &st[p]);
            sc[p] = 1, sd[p] = (int)(first(cols, n, p) * 4);
            if (p % 2)
                MPI_Type_vector((int)my_cols, 1, (int)rows, MPI_FLOAT, &col);
            else
                MPI_Type_create_hvector((int)my_cols, 1, (MPI_Aint)rows * 4, MPI_FLOAT, &col);
            MPI_Type_create_resized(col, 0, 4, &rt[p]);
            MPI_Type_free(&col);
            rc[p] = (int)p_rows, rd[p] = (int)(first(rows, n, p) * 4);
        }
        MPI_Type_commit(&st[p]);
        MPI_Type_commit(&rt[p]);
    }
    char name[96];
    snprintf(name, sizeof name, "transpose %ldx%ld through alltoallw %s (%s)", rows, cols,
             mode_name[mode], by_columns ? "columns sent" : "columns received");
    what = name;
    if (getenv("DTYPE_TRACE"))
        fprintf(stderr, "rank %d: %s\n", me_world, what);
    MPI_Request req;
    if (mode == BLOCKING)
        MPI_Alltoallw(a, sc, sd, st, at, rc, rd, rt, comm);
    else if (mode == NONBLOCKING) {
        MPI_Ialltoallw(a, sc, sd, st, at, rc, rd, rt, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        INIT(Alltoallw)(a, sc, sd, st, at, rc, rd, rt, comm, MPI_INFO_NULL, &req);
        for (int s = 0; s < 2; s++) {
            memset(t_mem, FILL, t_len);
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
    }
    int bad = 0;
    for (long j = 0; j < my_cols; j++)
        for (long i = 0; i < rows; i++) {
            float want = (float)(i * cols + first(cols, n, me) + j);
            if (at[j * rows + i] != want && bad++ < 2)
                FAIL("%s: element (%ld, %ld) of the transpose: %g, want %g", name,
                     first(cols, n, me) + j, i, (double)at[j * rows + i], (double)want);
        }
    for (long i = 0; i < my_rows * cols; i++)
        if (a[i] != (float)(first(rows, n, me) * cols + i) && bad++ < 2)
            FAIL("%s: the matrix changed at %ld", name, i);
    for (size_t k = 0; k < GUARD; k++)
        if (((unsigned char)t_mem[k] != FILL || (unsigned char)t_mem[t_len - 1 - k] != FILL ||
             (unsigned char)a_mem[k] != FILL || (unsigned char)a_mem[a_len - 1 - k] != FILL) &&
            bad++ < 2)
            FAIL("%s: a guard byte changed", name);
    for (int p = 0; p < n; p++)
        MPI_Type_free(&st[p]), MPI_Type_free(&rt[p]);
    free(st), free(sc), free(a_mem), free(t_mem);
}

/* ---- the sweep -------------------------------------------------------------------- */

static const long sizes[] = {0, 1, 2, 3, 5, 7, 12, 13, 64, 257};
enum { NSIZES = sizeof sizes / sizeof *sizes, LARGE = 4104 }; /* whole elements of most layouts */

typedef struct {
    MPI_Comm comm;
    int me, n, round, mode;
    long large; /* 0, or every block's ints this round */
    char label[160];
} ctx_t;

static void name(ctx_t *c, const char *call)
{
    snprintf(c->label, sizeof c->label, "%s %s (round %d%s)", call, mode_name[c->mode], c->round,
             c->large ? ", large" : "");
    what = c->label;
}

/* The layouts every send side (0) and receive side (1) takes where they
 * fit (-1: the sweep's choice): each pair of layouts in turn. */
static int force[2] = {-1, -1};
/* The ints from `from` to `to` (the same on both); symmetric: the same
 * both ways (MPI_IN_PLACE All-to-All). */
static const long pair_sizes[] = {12, 60, 0, 24}; /* whole elements of every layout */
static long ints_of(const ctx_t *c, int from, int to)
{
    if (force[0] >= 0)
        return pair_sizes[(size_t)(from * 3 + to * 5 + c->round) % 4];
    return c->large ? c->large : sizes[(size_t)(from * 3 + to * 5 + c->round) % NSIZES];
}
static long sym_ints(const ctx_t *c, int a, int b)
{
    if (force[0] >= 0)
        return pair_sizes[(size_t)(a * 3 + b * 3 + c->round) % 4];
    return c->large ? c->large : sizes[(size_t)(a * 3 + b * 3 + c->round) % NSIZES];
}

/* Whether every block's ints (nb blocks) fill whole elements of layout l
 * (`run`: the blocks are one run of elements, a column's all apart). */
static int fits(int l, const long *ints, int nb, int run)
{
    long elements = 0, most = 0;
    for (int b = 0; b < nb; b++) {
        if (ints[b] % L[l].n)
            return 0;
        elements += ints[b] / L[l].n;
        most = ints[b] / L[l].n > most ? ints[b] / L[l].n : most;
    }
    return l != COLUMN || (run ? elements : most) <= COLUMN_STRIDE;
}


/* The first layout from `from` on that fits, or the forced one of side. */
static int layout_side(int side, int from, const long *ints, int nb, int run)
{
    if (force[side] >= 0 && fits(force[side], ints, nb, run))
        return force[side];
    for (int i = 0; i < NLAYOUTS; i++)
        if (fits((from + i) % NLAYOUTS, ints, nb, run))
            return (from + i) % NLAYOUTS;
    return 0;
}
#define SEND 0
#define RECV 1
static int layout1(int side, int from, long ints) { return layout_side(side, from, &ints, 1, 0); }

/* A v-variant's blocks: block b of ints[b] at a displacement in extents
 * (counts, displs, set) or in bytes (bytes). */
static void place(buffer_t *x, int lay, const long *ints, const int *in0, const int *want0, int nb,
                  int *counts, int *displs, int bytes)
{
    for (int b = 0; b < nb; b++) {
        long base = next_base(x, lay, ints[b], bytes ? 1 : L[lay].ext);
        add(x, base, lay, ints[b], in0 ? in0[b] : 0, want0 ? want0[b] : 0, 1);
        counts[b] = (int)(ints[b] / L[lay].n);
        displs[b] = (int)(bytes ? base : base / L[lay].ext);
    }
}

/* A non-v buffer: nb blocks of `ints` each, one run of elements. */
static void run_of(buffer_t *x, int lay, long ints, const int *in0, const int *want0, int nb)
{
    for (int b = 0; b < nb; b++)
        add(x, b * (ints / L[lay].n) * L[lay].ext, lay, ints, in0 ? in0[b] : 0,
            want0 ? want0[b] : 0, 1);
}

typedef struct {
    int *sc, *sd, *rc, *rd, *in0, *want0;
    long *sint, *rint;
    MPI_Datatype *st, *rt;
} args_t;

static args_t args_new(int n)
{
    args_t a;
    a.sc = calloc(6 * (size_t)n + 1, sizeof(int));
    a.sd = a.sc + n, a.rc = a.sd + n, a.rd = a.rc + n, a.in0 = a.rd + n, a.want0 = a.in0 + n;
    a.sint = calloc(2 * (size_t)n + 1, sizeof(long));
    a.rint = a.sint + n;
    a.st = calloc(2 * (size_t)n + 1, sizeof(MPI_Datatype));
    a.rt = a.st + n;
    return a;
}
static void args_free(args_t *a) { free(a->sc), free(a->sint), free(a->st); }

/* Alltoall(v,w): w: per-peer layouts on both sides, displacements in
 * bytes; v: one layout a side.  In place: the blocks symmetric, the input
 * this rank's blocks where its receive blocks are. */
static void alltoall_vw(ctx_t *c, int w, int in_place)
{
    int n = c->n, me = c->me;
    buffer_t sb = {0}, rb = {0};
    args_t a = args_new(n);
    for (int p = 0; p < n; p++) {
        a.sint[p] = in_place ? sym_ints(c, me, p) : ints_of(c, me, p);
        a.rint[p] = in_place ? sym_ints(c, p, me) : ints_of(c, p, me);
    }
    int sl = layout_side(SEND, me + c->round, a.sint, n, 0);
    int rl = layout_side(RECV, me + c->round + 3, a.rint, n, 0);
    for (int p = 0; p < n; p++) {
        int sp = w ? layout1(SEND, me * 2 + p + c->round, a.sint[p]) : sl;
        int rp = in_place ? rl : w ? layout1(RECV, me + p * 3 + c->round + 1, a.rint[p]) : rl;
        long sbase = next_base(&sb, sp, a.sint[p], w ? 1 : L[sp].ext);
        long rbase = next_base(&rb, rp, a.rint[p], w ? 1 : L[rp].ext);
        add_in(&sb, sbase, sp, a.sint[p], val(me, p, c->round));
        add(&rb, rbase, rp, a.rint[p], in_place ? val(me, p, c->round) : 0, val(p, me, c->round), 1);
        a.sc[p] = (int)(a.sint[p] / L[sp].n), a.st[p] = L[sp].t;
        a.rc[p] = (int)(a.rint[p] / L[rp].n), a.rt[p] = L[rp].t;
        a.sd[p] = (int)(w ? sbase : sbase / L[sp].ext);
        a.rd[p] = (int)(w ? rbase : rbase / L[rp].ext);
    }
    if (in_place)
        drop(&sb);
    realize(&sb), realize(&rb);
    const void *s = in_place ? MPI_IN_PLACE : sb.buf;
    name(c, w ? in_place ? "alltoallw in place" : "alltoallw"
              : in_place ? "alltoallv in place" : "alltoallv");
    if (w)
        RUN(c->mode, MPI_Alltoallw(s, a.sc, a.sd, a.st, rb.buf, a.rc, a.rd, a.rt, c->comm),
            MPI_Ialltoallw(s, a.sc, a.sd, a.st, rb.buf, a.rc, a.rd, a.rt, c->comm, &req_),
            INIT(Alltoallw)(s, a.sc, a.sd, a.st, rb.buf, a.rc, a.rd, a.rt, c->comm,
                            MPI_INFO_NULL, &req_),
            &sb, &rb);
    else
        RUN(c->mode, MPI_Alltoallv(s, a.sc, a.sd, a.st[0], rb.buf, a.rc, a.rd, a.rt[0], c->comm),
            MPI_Ialltoallv(s, a.sc, a.sd, a.st[0], rb.buf, a.rc, a.rd, a.rt[0], c->comm, &req_),
            INIT(Alltoallv)(s, a.sc, a.sd, a.st[0], rb.buf, a.rc, a.rd, a.rt[0], c->comm,
                            MPI_INFO_NULL, &req_),
            &sb, &rb);
    args_free(&a);
}

/* Alltoall: every block the same ints, a layout a side. */
static void alltoall(ctx_t *c)
{
    int n = c->n, me = c->me;
    buffer_t sb = {0}, rb = {0};
    args_t a = args_new(n);
    long ints = ints_of(c, 0, 0);
    for (int p = 0; p < n; p++)
        a.sint[p] = ints, a.in0[p] = val(me, p, c->round), a.want0[p] = val(p, me, c->round);
    int sl = layout_side(SEND, me + c->round, a.sint, n, 1);
    int rl = layout_side(RECV, me + c->round + 5, a.sint, n, 1);
    run_of(&sb, sl, ints, a.in0, a.in0, n);
    run_of(&rb, rl, ints, NULL, a.want0, n);
    realize(&sb), realize(&rb);
    int scount = (int)(ints / L[sl].n), rcount = (int)(ints / L[rl].n);
    name(c, "alltoall");
    RUN(c->mode, MPI_Alltoall(sb.buf, scount, L[sl].t, rb.buf, rcount, L[rl].t, c->comm),
        MPI_Ialltoall(sb.buf, scount, L[sl].t, rb.buf, rcount, L[rl].t, c->comm, &req_),
        INIT(Alltoall)(sb.buf, scount, L[sl].t, rb.buf, rcount, L[rl].t, c->comm, MPI_INFO_NULL,
                       &req_),
        &sb, &rb);
    args_free(&a);
}

/* Gather(v) to root and Scatter(v) from it; v: each rank's own ints, in
 * place: the root's block stays where it is. */
static void gather_scatter(ctx_t *c, int scatter, int v, int in_place, int root)
{
    int n = c->n, me = c->me, at_root = me == root;
    buffer_t one = {0}, all = {0};
    args_t a = args_new(n);
    for (int q = 0; q < n; q++) {
        a.sint[q] = v ? ints_of(c, q, root) : ints_of(c, 0, root);
        a.in0[q] = val(q, root, c->round);
    }
    int bl = layout_side(!scatter, me + c->round + 2, a.sint, n, !v);
    int ol = layout1(scatter, me + c->round, a.sint[me]);
    if (!(in_place && at_root)) {
        if (scatter)
            add_out(&one, 0, ol, a.sint[me], a.in0[me]);
        else
            add_in(&one, 0, ol, a.sint[me], a.in0[me]);
    }
    if (at_root) { /* Scatter: every block stays; Gather: each arrives (in place: the root's was there) */
        int *in = calloc((size_t)n, sizeof *in);
        for (int q = 0; q < n; q++)
            in[q] = scatter || (in_place && q == me) ? a.in0[q] : 0;
        if (v)
            place(&all, bl, a.sint, in, a.in0, n, a.rc, a.rd, 0);
        else
            run_of(&all, bl, a.sint[0], in, a.in0, n);
        free(in);
    }
    realize(&one), realize(&all);
    int ocount = (int)(a.sint[me] / L[ol].n), bcount = (int)(a.sint[0] / L[bl].n);
    const void *o = in_place && at_root ? MPI_IN_PLACE : one.buf;
    MPI_Datatype bt = L[bl].t, ot = L[ol].t;
    char label[64];
    snprintf(label, sizeof label, "%s%s root %d%s", scatter ? "scatter" : "gather", v ? "v" : "",
             root, in_place ? " in place" : "");
    name(c, label);
    if (scatter && v)
        RUN(c->mode, MPI_Scatterv(all.buf, a.rc, a.rd, bt, (void *)o, ocount, ot, root, c->comm),
            MPI_Iscatterv(all.buf, a.rc, a.rd, bt, (void *)o, ocount, ot, root, c->comm, &req_),
            INIT(Scatterv)(all.buf, a.rc, a.rd, bt, (void *)o, ocount, ot, root, c->comm,
                           MPI_INFO_NULL, &req_),
            &all, &one);
    else if (scatter)
        RUN(c->mode, MPI_Scatter(all.buf, bcount, bt, (void *)o, ocount, ot, root, c->comm),
            MPI_Iscatter(all.buf, bcount, bt, (void *)o, ocount, ot, root, c->comm, &req_),
            INIT(Scatter)(all.buf, bcount, bt, (void *)o, ocount, ot, root, c->comm,
                          MPI_INFO_NULL, &req_),
            &all, &one);
    else if (v)
        RUN(c->mode, MPI_Gatherv(o, ocount, ot, all.buf, a.rc, a.rd, bt, root, c->comm),
            MPI_Igatherv(o, ocount, ot, all.buf, a.rc, a.rd, bt, root, c->comm, &req_),
            INIT(Gatherv)(o, ocount, ot, all.buf, a.rc, a.rd, bt, root, c->comm, MPI_INFO_NULL,
                          &req_),
            &one, &all);
    else
        RUN(c->mode, MPI_Gather(o, ocount, ot, all.buf, bcount, bt, root, c->comm),
            MPI_Igather(o, ocount, ot, all.buf, bcount, bt, root, c->comm, &req_),
            INIT(Gather)(o, ocount, ot, all.buf, bcount, bt, root, c->comm, MPI_INFO_NULL,
                         &req_),
            &one, &all);
    args_free(&a);
}

/* Allgather(v): every rank's block to every rank; in place: this rank's
 * is there already. */
static void allgather(ctx_t *c, int v, int in_place)
{
    int n = c->n, me = c->me;
    buffer_t one = {0}, all = {0};
    args_t a = args_new(n);
    for (int q = 0; q < n; q++) {
        a.sint[q] = v ? ints_of(c, q, 0) : ints_of(c, 0, 0);
        a.in0[q] = val(q, 0, c->round);
        a.want0[q] = in_place && q == me ? a.in0[q] : 0;
    }
    int bl = layout_side(RECV, me + c->round + 4, a.sint, n, !v);
    int ol = layout1(SEND, me + c->round + 1, a.sint[me]);
    if (!in_place)
        add_in(&one, 0, ol, a.sint[me], a.in0[me]);
    if (v)
        place(&all, bl, a.sint, a.want0, a.in0, n, a.rc, a.rd, 0);
    else
        run_of(&all, bl, a.sint[0], a.want0, a.in0, n);
    realize(&one), realize(&all);
    int ocount = (int)(a.sint[me] / L[ol].n), bcount = (int)(a.sint[0] / L[bl].n);
    const void *o = in_place ? MPI_IN_PLACE : one.buf;
    MPI_Datatype bt = L[bl].t, ot = L[ol].t;
    name(c, v ? in_place ? "allgatherv in place" : "allgatherv"
              : in_place ? "allgather in place" : "allgather");
    if (v)
        RUN(c->mode, MPI_Allgatherv(o, ocount, ot, all.buf, a.rc, a.rd, bt, c->comm),
            MPI_Iallgatherv(o, ocount, ot, all.buf, a.rc, a.rd, bt, c->comm, &req_),
            INIT(Allgatherv)(o, ocount, ot, all.buf, a.rc, a.rd, bt, c->comm, MPI_INFO_NULL,
                             &req_),
            &one, &all);
    else
        RUN(c->mode, MPI_Allgather(o, ocount, ot, all.buf, bcount, bt, c->comm),
            MPI_Iallgather(o, ocount, ot, all.buf, bcount, bt, c->comm, &req_),
            INIT(Allgather)(o, ocount, ot, all.buf, bcount, bt, c->comm, MPI_INFO_NULL, &req_),
            &one, &all);
    args_free(&a);
}

/* Bcast from root, each rank its own layout. */
static void bcast(ctx_t *c, int root)
{
    buffer_t none = {0}, b = {0};
    long ints = ints_of(c, root, 1);
    int l = layout1(c->me == root ? SEND : RECV, c->me + c->round + 6, ints), v = val(root, 1, c->round);
    add(&b, 0, l, ints, c->me == root ? v : 0, v, 1);
    realize(&none), realize(&b);
    int count = (int)(ints / L[l].n);
    char label[32];
    snprintf(label, sizeof label, "bcast root %d", root);
    name(c, label);
    RUN(c->mode, MPI_Bcast(b.buf, count, L[l].t, root, c->comm),
        MPI_Ibcast(b.buf, count, L[l].t, root, c->comm, &req_),
        INIT(Bcast)(b.buf, count, L[l].t, root, c->comm, MPI_INFO_NULL, &req_), &none, &b);
}

/* The reductions (MPI_SUM of ints, one layout on every rank): rank r's
 * int t is 1000 r + 1 + t. */
enum { ALLREDUCE, REDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN, EXSCAN, NREDUCTIONS };
static const char *red_name[] = {"allreduce",            "reduce", "reduce_scatter",
                                 "reduce_scatter_block", "scan",   "exscan"};
static int base_of(int r) { return 1000 * r + 1; }

/* MPI_SUM for a layout's ints (predefined ops take predefined types only):
 * a commutative op of the test's own. */
static MPI_Op layout_sum;
static void layout_sum_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    int l = -1;
    for (int i = 0; i < NLAYOUTS; i++)
        l = *t == L[i].t ? i : l;
    if (l < 0) {
        FAIL("%s: the op was called with a datatype no layout has", what);
        return;
    }
    for (long j = 0; j < (long)*len * L[l].n; j++) {
        int a, b;
        memcpy(&a, (char *)in + pos(l, j), 4);
        memcpy(&b, (char *)inout + pos(l, j), 4);
        b += a;
        memcpy((char *)inout + pos(l, j), &b, 4);
    }
}

static void reduction(ctx_t *c, int kind, int in_place, int root)
{
    int n = c->n, me = c->me, sum = 0, below = 0;
    buffer_t sb = {0}, rb = {0};
    args_t a = args_new(n);
    for (int r = 0; r < n; r++)
        sum += base_of(r), below += r < me ? base_of(r) : 0;
    long total = 0, first_mine = 0;
    for (int r = 0; r < n; r++) { /* Reduce_scatter's blocks: each rank's ints */
        a.rint[r] = kind == REDUCE_SCATTER ? ints_of(c, r, r) : ints_of(c, 0, 0);
        first_mine += r < me ? a.rint[r] : 0;
        total += a.rint[r];
    }
    int scatters = kind == REDUCE_SCATTER || kind == REDUCE_SCATTER_BLOCK;
    long in_ints = scatters ? total : a.rint[0], out_ints = scatters ? a.rint[me] : in_ints;
    int l = layout_side(SEND, c->round + kind, a.rint, n, 1); /* the same on every rank */
    /* the result: the sum over the ranks (Scan: up to me, Exscan: below me;
     * rank 0's undefined); Reduce's only at the root, Reduce_scatter's from
     * this rank's first int of the whole */
    int want = kind == SCAN ? below + base_of(me) : kind == EXSCAN ? below : sum;
    int step = kind == SCAN ? me + 1 : kind == EXSCAN ? me : n;
    if (scatters)
        want += step * (int)first_mine;
    if ((kind == REDUCE && me != root) || (kind == EXSCAN && me == 0))
        want = 0;
    int in_rb = in_place && (kind != REDUCE || me == root);
    if (in_rb && scatters) /* the input in rb, the result at its start */
        add(&rb, 0, l, in_ints, base_of(me), 0, 1);
    if (in_rb && scatters) {
        rb.b[0].ints = out_ints, rb.b[0].want0 = want, rb.b[0].step = step;
        add(&rb, out_ints / L[l].n * L[l].ext, l, in_ints - out_ints, base_of(me) + (int)out_ints, 0, 1);
        rb.b[0].in0 = base_of(me);
    } else if (in_rb)
        add(&rb, 0, l, in_ints, base_of(me), want, step);
    else {
        add_in(&sb, 0, l, in_ints, base_of(me));
        if (kind != REDUCE || me == root)
            add(&rb, 0, l, out_ints, 0, want, step);
    }
    realize(&sb), realize(&rb);
    const void *s = in_rb ? MPI_IN_PLACE : sb.buf;
    int count = (int)(in_ints / L[l].n), each = (int)(a.rint[0] / L[l].n);
    for (int r = 0; r < n; r++)
        a.rc[r] = (int)(a.rint[r] / L[l].n);
    MPI_Datatype t = L[l].t;
    MPI_Op sum_op = l ? layout_sum : MPI_SUM;
    MPI_Comm cm = c->comm;
    char label[48];
    snprintf(label, sizeof label, "%s%s root %d", red_name[kind], in_place ? " in place" : "", root);
    name(c, label);
    switch (kind) {
    case ALLREDUCE:
        RUN(c->mode, MPI_Allreduce(s, rb.buf, count, t, sum_op, cm),
            MPI_Iallreduce(s, rb.buf, count, t, sum_op, cm, &req_),
            INIT(Allreduce)(s, rb.buf, count, t, sum_op, cm, MPI_INFO_NULL, &req_), &sb, &rb);
        break;
    case REDUCE:
        RUN(c->mode, MPI_Reduce(s, rb.buf, count, t, sum_op, root, cm),
            MPI_Ireduce(s, rb.buf, count, t, sum_op, root, cm, &req_),
            INIT(Reduce)(s, rb.buf, count, t, sum_op, root, cm, MPI_INFO_NULL, &req_), &sb, &rb);
        break;
    case REDUCE_SCATTER:
        RUN(c->mode, MPI_Reduce_scatter(s, rb.buf, a.rc, t, sum_op, cm),
            MPI_Ireduce_scatter(s, rb.buf, a.rc, t, sum_op, cm, &req_),
            INIT(Reduce_scatter)(s, rb.buf, a.rc, t, sum_op, cm, MPI_INFO_NULL, &req_), &sb, &rb);
        break;
    case REDUCE_SCATTER_BLOCK:
        RUN(c->mode, MPI_Reduce_scatter_block(s, rb.buf, each, t, sum_op, cm),
            MPI_Ireduce_scatter_block(s, rb.buf, each, t, sum_op, cm, &req_),
            INIT(Reduce_scatter_block)(s, rb.buf, each, t, sum_op, cm, MPI_INFO_NULL, &req_),
            &sb, &rb);
        break;
    case SCAN:
        RUN(c->mode, MPI_Scan(s, rb.buf, count, t, sum_op, cm),
            MPI_Iscan(s, rb.buf, count, t, sum_op, cm, &req_),
            INIT(Scan)(s, rb.buf, count, t, sum_op, cm, MPI_INFO_NULL, &req_), &sb, &rb);
        break;
    default:
        RUN(c->mode, MPI_Exscan(s, rb.buf, count, t, sum_op, cm),
            MPI_Iexscan(s, rb.buf, count, t, sum_op, cm, &req_),
            INIT(Exscan)(s, rb.buf, count, t, sum_op, cm, MPI_INFO_NULL, &req_), &sb, &rb);
    }
    args_free(&a);
}

/* The neighbourhood collectives on a ring (periodic from 3 ranks: the two
 * neighbours differ): neighbour k (0: the rank below, 1: above), or
 * MPI_PROC_NULL (no block).  Alltoallw: a layout per neighbour. */
enum { N_ALLTOALL, N_ALLTOALLV, N_ALLTOALLW, N_ALLGATHER, N_ALLGATHERV, NNEIGHBOR };
static const char *nb_name[] = {"neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw",
                                "neighbor_allgather", "neighbor_allgatherv"};

static void neighbor(ctx_t *c, MPI_Comm ring, int kind)
{
    int me = c->me, nb[2];
    MPI_Cart_shift(ring, 0, 1, &nb[0], &nb[1]);
    buffer_t sb = {0}, rb = {0};
    args_t a = args_new(2);
    int gather = kind >= N_ALLGATHER, same = kind == N_ALLTOALL || kind == N_ALLGATHER;
    for (int k = 0; k < 2; k++) { /* what goes to and comes from neighbour k */
        int p = nb[k] == MPI_PROC_NULL ? -1 : nb[k];
        a.sint[k] = same ? ints_of(c, 0, 0) : gather ? ints_of(c, me, 0) : p < 0 ? 0 : ints_of(c, me, p);
        a.rint[k] = same ? ints_of(c, 0, 0) : p < 0 ? 0 : ints_of(c, p, gather ? 0 : me);
        a.in0[k] = gather ? val(me, 0, c->round) : val(me, p < 0 ? 99 : p, c->round);
        a.want0[k] = p < 0 ? 0 : gather ? val(p, 0, c->round) : val(p, me, c->round);
    }
    int sl = layout_side(SEND, me + c->round, a.sint, 2, 1);
    int rl = layout_side(RECV, me + c->round + 2, a.rint, 2, 1);
    if (gather)
        add_in(&sb, 0, sl, a.sint[0], a.in0[0]), a.sc[0] = (int)(a.sint[0] / L[sl].n);
    else if (same)
        run_of(&sb, sl, a.sint[0], a.in0, a.in0, 2);
    else
        for (int k = 0; k < 2; k++) {
            int l = kind == N_ALLTOALLW ? layout1(SEND, me + k + c->round, a.sint[k]) : sl;
            long base = next_base(&sb, l, a.sint[k], kind == N_ALLTOALLW ? 1 : L[l].ext);
            add_in(&sb, base, l, a.sint[k], a.in0[k]);
            a.sc[k] = (int)(a.sint[k] / L[l].n), a.st[k] = L[l].t;
            a.sd[k] = (int)(kind == N_ALLTOALLW ? base : base / L[l].ext);
        }
    if (same)
        run_of(&rb, rl, a.rint[0], NULL, a.want0, 2);
    else
        for (int k = 0; k < 2; k++) {
            int l = kind == N_ALLTOALLW ? layout1(RECV, me + 2 * k + c->round + 1, a.rint[k]) : rl;
            long base = next_base(&rb, l, a.rint[k], kind == N_ALLTOALLW ? 1 : L[l].ext);
            add_out(&rb, base, l, a.rint[k], a.want0[k]);
            a.rc[k] = (int)(a.rint[k] / L[l].n), a.rt[k] = L[l].t;
            a.rd[k] = (int)(kind == N_ALLTOALLW ? base : base / L[l].ext);
        }
    realize(&sb), realize(&rb);
    int scount = (int)(a.sint[0] / L[sl].n), rcount = (int)(a.rint[0] / L[rl].n);
    MPI_Datatype st = L[sl].t, rt = L[rl].t;
    name(c, nb_name[kind]);
    switch (kind) {
    case N_ALLTOALL:
        RUN(c->mode, MPI_Neighbor_alltoall(sb.buf, scount, st, rb.buf, rcount, rt, ring),
            MPI_Ineighbor_alltoall(sb.buf, scount, st, rb.buf, rcount, rt, ring, &req_),
            INIT(Neighbor_alltoall)(sb.buf, scount, st, rb.buf, rcount, rt, ring, MPI_INFO_NULL,
                                    &req_),
            &sb, &rb);
        break;
    case N_ALLTOALLV:
        RUN(c->mode, MPI_Neighbor_alltoallv(sb.buf, a.sc, a.sd, st, rb.buf, a.rc, a.rd, rt, ring),
            MPI_Ineighbor_alltoallv(sb.buf, a.sc, a.sd, st, rb.buf, a.rc, a.rd, rt, ring, &req_),
            INIT(Neighbor_alltoallv)(sb.buf, a.sc, a.sd, st, rb.buf, a.rc, a.rd, rt, ring,
                                     MPI_INFO_NULL, &req_),
            &sb, &rb);
        break;
    case N_ALLTOALLW: {
        MPI_Aint sd[2] = {a.sd[0], a.sd[1]}, rd[2] = {a.rd[0], a.rd[1]};
        RUN(c->mode, MPI_Neighbor_alltoallw(sb.buf, a.sc, sd, a.st, rb.buf, a.rc, rd, a.rt, ring),
            MPI_Ineighbor_alltoallw(sb.buf, a.sc, sd, a.st, rb.buf, a.rc, rd, a.rt, ring, &req_),
            INIT(Neighbor_alltoallw)(sb.buf, a.sc, sd, a.st, rb.buf, a.rc, rd, a.rt, ring,
                                     MPI_INFO_NULL, &req_),
            &sb, &rb);
        break;
    }
    case N_ALLGATHER:
        RUN(c->mode, MPI_Neighbor_allgather(sb.buf, scount, st, rb.buf, rcount, rt, ring),
            MPI_Ineighbor_allgather(sb.buf, scount, st, rb.buf, rcount, rt, ring, &req_),
            INIT(Neighbor_allgather)(sb.buf, scount, st, rb.buf, rcount, rt, ring, MPI_INFO_NULL,
                                     &req_),
            &sb, &rb);
        break;
    default:
        RUN(c->mode, MPI_Neighbor_allgatherv(sb.buf, a.sc[0], st, rb.buf, a.rc, a.rd, rt, ring),
            MPI_Ineighbor_allgatherv(sb.buf, a.sc[0], st, rb.buf, a.rc, a.rd, rt, ring, &req_),
            INIT(Neighbor_allgatherv)(sb.buf, a.sc[0], st, rb.buf, a.rc, a.rd, rt, ring,
                                      MPI_INFO_NULL, &req_),
            &sb, &rb);
    }
    args_free(&a);
}

/* On an intercommunicator of the even and odd world ranks (local rank i of
 * side s is world rank 2i + s): Alltoallw, Gatherv and Scatterv to the odd
 * side's rank 0, Allgatherv; values named by world ranks. */
static void inter(ctx_t *c, MPI_Comm ic, int side, int kind)
{
    int me, m;
    MPI_Comm_rank(ic, &me);
    MPI_Comm_remote_size(ic, &m);
    int wme = 2 * me + side;
    buffer_t sb = {0}, rb = {0};
    args_t a = args_new(m);
    for (int p = 0; p < m; p++) {
        int wp = 2 * p + !side;
        a.sint[p] = ints_of(c, wme, wp), a.rint[p] = ints_of(c, wp, kind == 0 ? wme : 0);
        int sl = layout1(SEND, wme + p + c->round, a.sint[p]);
        int rl = layout1(RECV, wme + 2 * p + c->round, a.rint[p]);
        if (kind == 0) {
            long sbase = next_base(&sb, sl, a.sint[p], 1), rbase = next_base(&rb, rl, a.rint[p], 1);
            add_in(&sb, sbase, sl, a.sint[p], val(wme, wp, c->round));
            add_out(&rb, rbase, rl, a.rint[p], val(wp, wme, c->round));
            a.sc[p] = (int)(a.sint[p] / L[sl].n), a.st[p] = L[sl].t, a.sd[p] = (int)sbase;
            a.rc[p] = (int)(a.rint[p] / L[rl].n), a.rt[p] = L[rl].t, a.rd[p] = (int)rbase;
        }
        a.in0[p] = val(wp, 0, c->round);
    }
    int root_side = 1, at_root = side == root_side && me == 0, mine = wme;
    long own = ints_of(c, mine, 0);
    int ol = layout1(SEND, wme + c->round + 3, own), bl = layout_side(RECV, c->round + 5 + side, a.rint, m, 0);
    name(c, kind == 0 ? "alltoallw (intercommunicator)"
            : kind == 1 ? "gatherv (intercommunicator)"
            : kind == 2 ? "scatterv (intercommunicator)"
                        : "allgatherv (intercommunicator)");
    if (kind == 0) {
        realize(&sb), realize(&rb);
        RUN(c->mode, MPI_Alltoallw(sb.buf, a.sc, a.sd, a.st, rb.buf, a.rc, a.rd, a.rt, ic),
            MPI_Ialltoallw(sb.buf, a.sc, a.sd, a.st, rb.buf, a.rc, a.rd, a.rt, ic, &req_),
            INIT(Alltoallw)(sb.buf, a.sc, a.sd, a.st, rb.buf, a.rc, a.rd, a.rt, ic, MPI_INFO_NULL,
                            &req_),
            &sb, &rb);
    } else if (kind == 1 || kind == 2) { /* the even side's ranks to and from the odd side's 0 */
        int root = side == root_side ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int scatter = kind == 2;
        for (int p = 0; p < m; p++)
            a.rint[p] = ints_of(c, 2 * p + !side, 1), a.in0[p] = val(2 * p + !side, 1, c->round);
        long mine_ints = ints_of(c, wme, 1);
        if (at_root) {
            bl = layout_side(kind == 1, c->round + 7, a.rint, m, 0);
            place(scatter ? &sb : &rb, bl, a.rint, scatter ? a.in0 : NULL, a.in0, m, a.rc, a.rd, 0);
        } else if (side != root_side) {
            ol = layout1(kind == 2, wme + c->round + 3, mine_ints);
            if (scatter)
                add_out(&rb, 0, ol, mine_ints, val(wme, 1, c->round));
            else
                add_in(&sb, 0, ol, mine_ints, val(wme, 1, c->round));
        }
        realize(&sb), realize(&rb);
        int oc = (int)(mine_ints / L[ol].n);
        if (scatter)
            RUN(c->mode, MPI_Scatterv(sb.buf, a.rc, a.rd, L[bl].t, rb.buf, oc, L[ol].t, root, ic),
                MPI_Iscatterv(sb.buf, a.rc, a.rd, L[bl].t, rb.buf, oc, L[ol].t, root, ic, &req_),
                INIT(Scatterv)(sb.buf, a.rc, a.rd, L[bl].t, rb.buf, oc, L[ol].t, root, ic,
                               MPI_INFO_NULL, &req_),
                &sb, &rb);
        else
            RUN(c->mode, MPI_Gatherv(sb.buf, oc, L[ol].t, rb.buf, a.rc, a.rd, L[bl].t, root, ic),
                MPI_Igatherv(sb.buf, oc, L[ol].t, rb.buf, a.rc, a.rd, L[bl].t, root, ic, &req_),
                INIT(Gatherv)(sb.buf, oc, L[ol].t, rb.buf, a.rc, a.rd, L[bl].t, root, ic,
                              MPI_INFO_NULL, &req_),
                &sb, &rb);
    } else {
        for (int p = 0; p < m; p++)
            a.rint[p] = ints_of(c, 2 * p + !side, 0);
        bl = layout_side(RECV, c->round + 5 + side, a.rint, m, 0);
        add_in(&sb, 0, ol, own, val(wme, 0, c->round));
        place(&rb, bl, a.rint, NULL, a.in0, m, a.rc, a.rd, 0);
        realize(&sb), realize(&rb);
        int oc = (int)(own / L[ol].n);
        RUN(c->mode, MPI_Allgatherv(sb.buf, oc, L[ol].t, rb.buf, a.rc, a.rd, L[bl].t, ic),
            MPI_Iallgatherv(sb.buf, oc, L[ol].t, rb.buf, a.rc, a.rd, L[bl].t, ic, &req_),
            INIT(Allgatherv)(sb.buf, oc, L[ol].t, rb.buf, a.rc, a.rd, L[bl].t, ic, MPI_INFO_NULL,
                             &req_),
            &sb, &rb);
    }
    args_free(&a);
}

/* Every collective in mode on comm, round r (large: every block LARGE
 * ints). */
static void sweep_mode(MPI_Comm comm, int round, int large, int mode)
{
    ctx_t c = {comm, 0, 0, round, mode, large ? LARGE : 0, ""};
    if (!mode_on(mode))
        return;
    MPI_Comm_rank(comm, &c.me);
    MPI_Comm_size(comm, &c.n);
    int root = round % c.n;
    for (int w = 0; w < 2; w++)
        for (int ip = 0; ip < 2; ip++)
            alltoall_vw(&c, w, ip);
    alltoall(&c);
    for (int scatter = 0; scatter < 2; scatter++)
        for (int v = 0; v < 2; v++)
            for (int ip = 0; ip < 2; ip++)
                gather_scatter(&c, scatter, v, ip, root);
    for (int v = 0; v < 2; v++)
        for (int ip = 0; ip < 2; ip++)
            allgather(&c, v, ip);
    bcast(&c, root);
    for (int k = 0; k < NREDUCTIONS; k++)
        for (int ip = 0; ip < 2; ip++)
            reduction(&c, k, ip, root);
}

static void sweep(MPI_Comm comm, int round, int large)
{
    for (int mode = 0; mode < NMODES; mode++)
        sweep_mode(comm, round, large, mode);
}

/* Each pair of layouts (send side, receive side) through every collective
 * where the sizes let them (quick: each layout on each side twice), the
 * mode in turn. */
static void pairs(MPI_Comm comm, int quick)
{
    for (int a = 0; a < NLAYOUTS; a++)
        for (int b = 0; b < NLAYOUTS; b++) {
            if (quick && b != a && b != (4 * a + 1) % NLAYOUTS)
                continue;
            force[SEND] = a, force[RECV] = b;
            int mode = (a + b) % NMODES;
            while (!mode_on(mode))
                mode = (mode + 1) % NMODES;
            sweep_mode(comm, a * NLAYOUTS + b, 0, mode);
        }
    force[SEND] = force[RECV] = -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, quick = argc > 1 && !strcmp(argv[1], "--quick");
    MPI_Comm_rank(MPI_COMM_WORLD, &me_world);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    make_layouts();
    MPI_Op_create(layout_sum_fn, 1, &layout_sum);
    /* the transpose: sizes that divide and that do not */
    long shapes[][2] = {{8 * (long)n, 8 * (long)n}, {4 * (long)n + 3, 2 * (long)n + 1}, {37, 29}};
    for (int s = 0; s < 3; s++)
        for (int mode = 0; mode < NMODES; mode++)
            if (shapes[s][0] >= n && shapes[s][1] >= n && mode_on(mode))
                for (int by = 0; by < 2; by++)
                    transpose(MPI_COMM_WORLD, shapes[s][0], shapes[s][1], by, mode);
    pairs(MPI_COMM_WORLD, quick);
    int rounds = quick ? 2 : 5;
    for (int r = 0; r < rounds; r++)
        sweep(MPI_COMM_WORLD, r, 0);
    sweep(MPI_COMM_WORLD, rounds, 1);
    /* a split: the world's ranks in reverse, two groups from 4 ranks */
    MPI_Comm split, ring, ic = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, n >= 4 ? me_world % 2 : 0, n - me_world, &split);
    sweep(split, 1, 0);
    int dims[1] = {n}, periodic[1] = {n >= 3};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, 0, &ring);
    ctx_t c = {ring, me_world, n, 0, 0, 0, ""};
    for (c.round = 0; c.round < (quick ? 1 : 3); c.round++)
        for (c.mode = 0; c.mode < NMODES; c.mode++)
            for (int k = 0; k < NNEIGHBOR && mode_on(c.mode); k++)
                neighbor(&c, ring, k);
    if (n >= 2) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, me_world % 2, me_world, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, !(me_world % 2), 7, &ic);
        MPI_Comm_free(&half);
        for (c.round = 0; c.round < (quick ? 1 : 3); c.round++)
            for (c.mode = 0; c.mode < NMODES; c.mode++)
                for (int k = 0; k < 4 && mode_on(c.mode); k++)
                    inter(&c, ic, me_world % 2, k);
        MPI_Comm_free(&ic);
    }
    MPI_Comm_free(&ring);
    MPI_Comm_free(&split);
    for (int i = 1; i < NLAYOUTS; i++)
        MPI_Type_free(&L[i].t);
    MPI_Op_free(&layout_sum);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me_world == 0)
        printf("mpi_dtype_check: %d failure(s)\n", all);
    MPI_Finalize();
    return all != 0;
}
