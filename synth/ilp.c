/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TACOS-ILP (the earlier TACOS paper, section V): a phase of a collective as
 * an integer program over the time-expanded network, solved with COIN-OR CBC.
 *
 * Time is cut in steps of the smallest link time for one chunk; a link of
 * cost c takes d = ceil(c / step) steps.  For a horizon of H steps:
 *
 *   x[l,c,t] in {0,1}  link l starts chunk c at step t (t + d_l <= H)
 *   h[v,c,t] in {0,1}  NPU v holds chunk c at step t (1 <= t <= H)
 *
 *   sum over c and t' in (t - d_l, t] of x[l,c,t'] <= 1   (one chunk per link)
 *   x[l,c,t] <= h[src,c,t]                               (send what is held)
 *   h[v,c,t] <= h[v,c,t-1] + sum_{l into v} x[l,c,t-d_l]  (hold what arrived)
 *   sum_{l into v, t} x[l,c,t] <= 1                      (arrive once: reversed
 *                                                          schedules reduce each arrival)
 *   h[v,c,H] = 1 for each (v, c) of the postcondition.
 *
 * No objective: each horizon is a feasibility problem, and feasibility is
 * monotone in H, so a binary search runs between a lower bound (the latency
 * diameter in steps; the steps an NPU's in-links need to bring what it
 * lacks) and the last horizon that would beat the greedy's time.  A time-out
 * ends the search (the paper's early termination: the best schedule so far
 * is kept, the greedy's if none).  A chunk appears in x and h only from the
 * first step it can reach the NPU, so small shapes stay small; programs past
 * ILP_MAX_COLS columns or ILP_MAX_STEPS steps are not built.  The schedule found keeps its steps as start
 * times with the real link times, so it is valid and no slower than H steps.
 *
 * CBC (EPL-2.0, Debian coinor-libcbc-dev) rather than GLPK (GPL-3): it links
 * into a BSD-style component without changing its licence, and it is the
 * faster of the two on these 0-1 programs.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#ifdef TACOS_HAVE_CBC
#include <Cbc_C_Interface.h>

/* Largest program built (columns) and horizon (steps): beyond them CBC's
 * first LP alone can outlast any time limit, so the greedy's schedule stays. */
#define ILP_MAX_COLS 60000
#define ILP_MAX_STEPS 256

typedef struct {
    double seconds_left;
} ilp_ctx_t;

typedef struct {
    const tacos_topo_t *topo;
    int n, nchunks;
    size_t words;
    const uint64_t *pre, *post;
    int *steps;    /* per link */
    int *earliest; /* [v][c]: first step c can be at v (INT_MAX: never) */
    int H;
    int *xcol;     /* [l][c][t] column or -1 */
    int *hcol;     /* [v][c][t] column, -1 when fixed 0, -2 when held from the start */
} ilp_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int held(const ilp_t *p, int v, int c)
{
    return tacos_bit_get(p->pre + (size_t)v * p->words, (size_t)c);
}

/* earliest[v][c] by Bellman-Ford over link steps from the NPUs holding c. */
static void earliest_steps(ilp_t *p)
{
    const tacos_topo_t *t = p->topo;
    for (int v = 0; v < p->n; v++)
        for (int c = 0; c < p->nchunks; c++)
            p->earliest[(size_t)v * p->nchunks + c] = held(p, v, c) ? 0 : INT_MAX;
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t l = 0; l < t->nlinks; l++) {
            int *from = p->earliest + (size_t)t->links[l].src * p->nchunks;
            int *to = p->earliest + (size_t)t->links[l].dst * p->nchunks;
            for (int c = 0; c < p->nchunks; c++)
                if (from[c] != INT_MAX && from[c] + p->steps[l] < to[c]) {
                    to[c] = from[c] + p->steps[l];
                    changed = 1;
                }
        }
    }
}

static int *xat(const ilp_t *p, size_t l, int c, int t)
{
    return p->xcol + ((l * (size_t)p->nchunks + (size_t)c) * (size_t)p->H + (size_t)t);
}

static int *hat(const ilp_t *p, int v, int c, int t)
{
    return p->hcol + (((size_t)v * p->nchunks + (size_t)c) * (size_t)(p->H + 1) + (size_t)t);
}

/* Builds the program for horizon p->H; returns NULL when out of memory or too large. */
static Cbc_Model *build(ilp_t *p, int *too_large)
{
    const tacos_topo_t *t = p->topo;
    int H = p->H, C = p->nchunks, ncols = 0;
    size_t nx = t->nlinks * (size_t)C * (size_t)H, nh = (size_t)p->n * C * (size_t)(H + 1);
    *too_large = 0;
    p->xcol = malloc((nx ? nx : 1) * sizeof *p->xcol);
    p->hcol = malloc(nh * sizeof *p->hcol);
    int *idx = NULL;
    double *val = NULL;
    Cbc_Model *m = NULL;
    if (!p->xcol || !p->hcol)
        goto fail;
    for (int v = 0; v < p->n; v++)
        for (int c = 0; c < C; c++)
            for (int s = 0; s <= H; s++) {
                int e = p->earliest[(size_t)v * C + c];
                *hat(p, v, c, s) = held(p, v, c) ? -2 : (s >= 1 && e <= s) ? ncols++ : -1;
            }
    for (size_t l = 0; l < t->nlinks; l++)
        for (int c = 0; c < C; c++)
            for (int s = 0; s < H; s++) {
                int src = t->links[l].src, dst = t->links[l].dst;
                int e = p->earliest[(size_t)src * C + c];
                *xat(p, l, c, s) =
                    (!held(p, dst, c) && e <= s && s + p->steps[l] <= H) ? ncols++ : -1;
            }
    if (ncols > ILP_MAX_COLS) {
        *too_large = 1;
        goto fail;
    }
    size_t maxnz = (size_t)C * (size_t)H + 2 + (size_t)(t->nlinks + 1) * (size_t)H;
    idx = malloc(maxnz * sizeof *idx);
    val = malloc(maxnz * sizeof *val);
    m = Cbc_newModel();
    if (!idx || !val || !m)
        goto fail;
    for (int j = 0; j < ncols; j++)
        Cbc_addCol(m, "", 0, 1, 0, 1, 0, NULL, NULL);
    int nz;
    /* one chunk per link at a time */
    for (size_t l = 0; l < t->nlinks; l++)
        for (int s = 0; s < H; s++) {
            nz = 0;
            for (int c = 0; c < C; c++)
                for (int u = s - p->steps[l] + 1; u <= s; u++)
                    if (u >= 0 && *xat(p, l, c, u) >= 0) {
                        idx[nz] = *xat(p, l, c, u);
                        val[nz++] = 1;
                    }
            if (nz > 1)
                Cbc_addRow(m, "", nz, idx, val, 'L', 1);
        }
    /* send what is held */
    for (size_t l = 0; l < t->nlinks; l++)
        for (int c = 0; c < C; c++)
            for (int s = 0; s < H; s++) {
                int x = *xat(p, l, c, s), h = *hat(p, t->links[l].src, c, s);
                if (x < 0 || h == -2)
                    continue;
                idx[0] = x, val[0] = 1, idx[1] = h, val[1] = -1;
                Cbc_addRow(m, "", 2, idx, val, 'L', 0); /* h >= 0 here: earliest <= s */
            }
    for (int v = 0; v < p->n; v++)
        for (int c = 0; c < C; c++) {
            if (held(p, v, c))
                continue;
            /* hold what arrived */
            for (int s = 1; s <= H; s++) {
                int h = *hat(p, v, c, s);
                if (h < 0)
                    continue;
                nz = 0;
                idx[nz] = h, val[nz++] = 1;
                if (*hat(p, v, c, s - 1) >= 0)
                    idx[nz] = *hat(p, v, c, s - 1), val[nz++] = -1;
                for (size_t k = t->in_off[v]; k < t->in_off[v + 1]; k++) {
                    size_t l = t->in_links[k];
                    int u = s - p->steps[l];
                    if (u >= 0 && *xat(p, l, c, u) >= 0)
                        idx[nz] = *xat(p, l, c, u), val[nz++] = -1;
                }
                Cbc_addRow(m, "", nz, idx, val, 'L', 0);
            }
            /* arrive once */
            nz = 0;
            for (size_t k = t->in_off[v]; k < t->in_off[v + 1]; k++)
                for (int s = 0; s < H; s++)
                    if (*xat(p, t->in_links[k], c, s) >= 0)
                        idx[nz] = *xat(p, t->in_links[k], c, s), val[nz++] = 1;
            if (nz > 1)
                Cbc_addRow(m, "", nz, idx, val, 'L', 1);
            /* the postcondition */
            if (tacos_bit_get(p->post + (size_t)v * p->words, (size_t)c)) {
                idx[0] = *hat(p, v, c, H), val[0] = 1; /* H >= earliest: a column */
                Cbc_addRow(m, "", 1, idx, val, 'G', 1);
            }
        }
    free(idx);
    free(val);
    return m;
fail:
    free(idx);
    free(val);
    if (m)
        Cbc_deleteModel(m);
    free(p->xcol);
    free(p->hcol);
    p->xcol = p->hcol = NULL;
    return NULL;
}

/* The solution of horizon p->H as the schedule `out` (replacing what it
 * held): each transfer starts on its step and takes its link's real time. */
static int take(const ilp_t *p, const double *x, double chunk_bytes, double step,
                tacos_sched_t *out)
{
    const tacos_topo_t *topo = p->topo;
    size_t count = 0;
    for (size_t l = 0; l < topo->nlinks; l++)
        for (int c = 0; c < p->nchunks; c++)
            for (int s = 0; s < p->H; s++)
                count += *xat(p, l, c, s) >= 0 && x[*xat(p, l, c, s)] > 0.5;
    int rc = tacos_sched_reserve(out, count);
    if (rc)
        return rc;
    out->nxfers = 0;
    out->time_us = 0;
    for (size_t l = 0; l < topo->nlinks; l++)
        for (int c = 0; c < p->nchunks; c++)
            for (int s = 0; s < p->H; s++)
                if (*xat(p, l, c, s) >= 0 && x[*xat(p, l, c, s)] > 0.5) {
                    double t = s * step, e = t + tacos_link_cost_us(&topo->links[l], chunk_bytes);
                    out->xfers[out->nxfers++] =
                        (tacos_xfer_t){t, e, c, topo->links[l].src, topo->links[l].dst, 0};
                    if (e > out->time_us)
                        out->time_us = e;
                }
    tacos_sched_sort(out);
    return TACOS_OK;
}

static int improve(void *vctx, const tacos_topo_t *topo, int nchunks, double chunk_bytes,
                   const uint64_t *pre, const uint64_t *post, double greedy_us,
                   tacos_sched_t *out, int *better, int *proven)
{
    ilp_ctx_t *ctx = vctx;
    ilp_t p = {topo, topo->npus, nchunks, TACOS_WORDS(nchunks), pre, post, NULL, NULL, 0,
               NULL, NULL};
    int rc = TACOS_OK;
    double step = INFINITY;
    *better = *proven = 0;
    for (size_t l = 0; l < topo->nlinks; l++)
        if (tacos_link_cost_us(&topo->links[l], chunk_bytes) < step)
            step = tacos_link_cost_us(&topo->links[l], chunk_bytes);
    p.steps = malloc((topo->nlinks ? topo->nlinks : 1) * sizeof *p.steps);
    p.earliest = malloc((size_t)p.n * nchunks * sizeof *p.earliest);
    if (!p.steps || !p.earliest) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory for the ILP on %s", topo->name);
        goto out;
    }
    for (size_t l = 0; l < topo->nlinks; l++)
        p.steps[l] = (int)ceil(tacos_link_cost_us(&topo->links[l], chunk_bytes) / step - 1e-9);
    earliest_steps(&p);
    int lo = 0;
    for (int v = 0; v < p.n; v++)
        for (int c = 0; c < nchunks; c++)
            if (tacos_bit_get(post + (size_t)v * p.words, (size_t)c)) {
                int e = p.earliest[(size_t)v * nchunks + c];
                if (e == INT_MAX)
                    goto out; /* unreachable: the greedy has said so already */
                lo = e > lo ? e : lo;
            }
    /* per NPU: H steps bring at most sum over in-links of floor(H / d_l) chunks */
    for (int v = 0; v < p.n; v++) {
        size_t need = 0;
        for (size_t w = 0; w < p.words; w++)
            need += (size_t)tacos_popcount64(post[(size_t)v * p.words + w] &
                                             ~pre[(size_t)v * p.words + w]);
        for (int H = lo;; H++) {
            size_t can = 0;
            for (size_t k = topo->in_off[v]; k < topo->in_off[v + 1]; k++)
                can += (size_t)(H / p.steps[topo->in_links[k]]);
            if (can >= need) {
                lo = H;
                break;
            }
        }
    }
    /* Binary search over the horizons that would beat the greedy
     * (H * step < greedy_us): feasibility is monotone in H. */
    int hi = (int)fmin(ceil(greedy_us / step - 1e-9) - 1, INT_MAX - 1), capped = hi > ILP_MAX_STEPS;
    if (capped)
        hi = ILP_MAX_STEPS;
    while (lo <= hi) {
        if (ctx->seconds_left <= 0)
            goto out;
        p.H = lo + (hi - lo) / 2;
        int too_large, found = 0;
        Cbc_Model *m = build(&p, &too_large);
        if (!m) {
            if (!too_large)
                rc = tacos_error(TACOS_ERR_NOMEM, "out of memory for the ILP on %s", topo->name);
            goto out; /* too large: the best so far, not proven */
        }
        Cbc_setLogLevel(m, 0);
        Cbc_setMaximumSeconds(m, ctx->seconds_left);
        double t0 = now_s();
        Cbc_solve(m);
        ctx->seconds_left -= now_s() - t0;
        if (Cbc_isProvenOptimal(m)) {
            rc = take(&p, Cbc_getColSolution(m), chunk_bytes, step, out);
            found = 1;
        } else if (!Cbc_isProvenInfeasible(m)) {
            Cbc_deleteModel(m); /* time limit without an answer */
            goto out;
        }
        Cbc_deleteModel(m);
        free(p.xcol);
        free(p.hcol);
        p.xcol = p.hcol = NULL;
        if (rc)
            goto out;
        if (found) {
            *better = 1;
            hi = p.H - 1;
        } else {
            lo = p.H + 1;
        }
    }
    /* the horizon below the result (or the greedy) is infeasible */
    *proven = *better || !capped;
out:
    free(p.steps);
    free(p.earliest);
    free(p.xcol);
    free(p.hcol);
    return rc;
}

int tacos_have_ilp(void) { return 1; }

int tacos_synthesize_ilp(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                         double seconds, tacos_sched_t **out, int *proven)
{
    ilp_ctx_t ctx = {seconds};
    if (!(seconds > 0))
        return tacos_error(TACOS_ERR_ARG, "ILP time limit must be > 0 seconds, got %g", seconds);
    return tacos_synthesize_improved(topo, opts, improve, &ctx, out, proven);
}

#else

int tacos_have_ilp(void) { return 0; }

int tacos_synthesize_ilp(const tacos_topo_t *topo, const tacos_synth_opts_t *opts,
                         double seconds, tacos_sched_t **out, int *proven)
{
    (void)topo, (void)opts, (void)seconds, (void)out, (void)proven;
    return tacos_error(TACOS_ERR_ARG, "this libtacos-synth was built without an ILP solver "
                                      "(configure found no CBC: apt-get install "
                                      "coinor-libcbc-dev, then configure again)");
}

#endif
