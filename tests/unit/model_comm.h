/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The communication that the network tests (test_net.c, test_fabric_net.c)
 * give a measurement in place of MPI, every rank on its own thread.
 *
 * Exchanges run at once, as they do on a network: a rank's flows wait in
 * a batch until every rank is either waiting too or in the next
 * max-allreduce, and then all of the batch's flows are timed together by
 * the test's own model of the network (time_flows).  The max-allreduce is
 * an element-wise max of every rank's values, between barriers; it fails
 * on every rank that gives another length than rank 0.
 */
#ifndef TACOS_TESTS_MODEL_COMM_H
#define TACOS_TESTS_MODEL_COMM_H

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct {
    int n; /* ranks */
    pthread_barrier_t bar;
    pthread_mutex_t lock;
    pthread_cond_t timed;  /* a batch of flows has been timed */
    int nflows;            /* flows in the batch, the test's arrays hold them */
    int waiting, at_max;   /* ranks waiting for the batch, ranks in the max */
    unsigned long batches; /* batches timed */
    double *sum;           /* the max being built */
    int len;
    void (*time_flows)(void *ctx); /* times the batch's nflows flows (lock held) */
    void *ctx;
} model_comm_t;

static void model_comm_init(model_comm_t *m, int n, void (*time_flows)(void *ctx), void *ctx)
{
    *m = (model_comm_t){.n = n, .time_flows = time_flows, .ctx = ctx};
    pthread_barrier_init(&m->bar, NULL, (unsigned)n);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->timed, NULL);
}

static void model_comm_fini(model_comm_t *m)
{
    free(m->sum);
    pthread_barrier_destroy(&m->bar);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->timed);
}

/* Times the batch once every rank waits for it or has reached the next
 * max (with m->lock held). */
static void model_time_batch(model_comm_t *m)
{
    if (!m->waiting || m->waiting + m->at_max < m->n)
        return;
    m->time_flows(m->ctx);
    m->nflows = m->waiting = 0;
    m->batches++;
    pthread_cond_broadcast(&m->timed);
}

/* With the rank's flows added to the batch (and m->lock held), waits
 * until the batch is timed. */
static void model_wait_batch(model_comm_t *m)
{
    m->waiting++;
    unsigned long batch = m->batches;
    model_time_batch(m);
    while (m->batches == batch)
        pthread_cond_wait(&m->timed, &m->lock);
}

/* by[0..n): the batch's flows i ordered by (src[i], dst[i], tag[i]), a
 * flow's identity, not by the threads' order of arrival: timed in this
 * order, the fair shares round the same way, and so a test passes or fails
 * the same way, every run. */
typedef struct {
    int src, dst, tag, i;
} model_flow_key_t;

static int model_flow_cmp(const void *a, const void *b)
{
    const model_flow_key_t *x = a, *y = b;
    return x->src != y->src ? (x->src > y->src) - (x->src < y->src)
           : x->dst != y->dst ? (x->dst > y->dst) - (x->dst < y->dst)
                              : (x->tag > y->tag) - (x->tag < y->tag);
}

static void model_flow_order(int n, const int *src, const int *dst, const int *tag, int *by)
{
    model_flow_key_t *key = malloc((n > 0 ? (size_t)n : 1) * sizeof *key);
    if (!key)
        abort();
    for (int i = 0; i < n; i++)
        key[i] = (model_flow_key_t){src[i], dst[i], tag[i], i};
    qsort(key, (size_t)n, sizeof *key, model_flow_cmp);
    for (int i = 0; i < n; i++)
        by[i] = key[i].i;
    free(key);
}

/* The max-allreduce of v[0..n-1] over every rank: 0, or 1 where the
 * lengths differ. */
static int model_max(model_comm_t *m, int rank, double *v, int n)
{
    pthread_mutex_lock(&m->lock);
    m->at_max++;
    model_time_batch(m);
    pthread_mutex_unlock(&m->lock);
    pthread_barrier_wait(&m->bar);
    if (rank == 0) {
        free(m->sum);
        m->sum = calloc((size_t)n + 1, sizeof *m->sum);
        m->len = n;
        m->at_max = 0; /* every rank is here: none exchanges before the last barrier */
    }
    pthread_barrier_wait(&m->bar);
    pthread_mutex_lock(&m->lock);
    int bad = m->len != n;
    for (int i = 0; i < n && !bad; i++)
        m->sum[i] = fmax(m->sum[i], v[i]);
    pthread_mutex_unlock(&m->lock);
    pthread_barrier_wait(&m->bar);
    for (int i = 0; i < n && !bad; i++)
        v[i] = m->sum[i];
    pthread_barrier_wait(&m->bar);
    return bad;
}

#endif
