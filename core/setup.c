/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agreement a nonblocking call cannot wait for, carried by requests.
 * On a communicator whose ranks have not agreed on their settings and
 * topology yet (nothing blocking planned on it), the first nonblocking call
 * starts an exchange of every rank's settings and probe record: an
 * allgather in ceil(log2 n) rounds (Bruck's) on the binding's setup tag.
 * Its request and those of the calls after it wait for it in their
 * progress.  Once it is in, every rank holds the same inputs and decides
 * alike: whether the settings are equal and enabled, the call's threshold,
 * the topology (the topology file, read equal everywhere, or the records
 * merged, not calibrated: calibration takes a blocking collective; only
 * communicators within one host take this path, comm.c).  Each request then
 * synthesizes its key (kept here for the calls after it: this rank's
 * alone, a schedule is the same wherever it is made) and agrees on its
 * hash in its request as a call of a plan not agreed yet does (coll.c),
 * or runs its textbook program.  The next blocking point finishes the
 * exchange and agrees as before (tacos_comm_prepare).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"

/* What each rank gives. */
typedef struct {
    uint64_t settings[TACOS_NSETTINGS];
    uint64_t file_ok, file_hash; /* its topology file read; its vote (hash) */
    tacos_probe_record_t rec;    /* without a topology file */
} setup_record_t;

struct tacos_setup {
    pthread_mutex_t lock; /* progress may run on any thread */
    int round, nrounds, done, rc;
    setup_record_t *blocks; /* blocks[i]: rank (me + i) % n's, once in */
    void *live[2];
    char sends[2];
    int nlive, abandoned;
    /* once in: the same on every rank */
    const char *why; /* NULL: calls plan; else why every rank runs textbook programs */
    tacos_topo_t *topo; /* NULL: none on this rank (it votes no) */
    tacos_topo_t *file_topo;
    char problem[TACOS_PROBLEM_BYTES]; /* what this rank found wrong with its file */
    /* this rank's plans: cache_size of them, the oldest replaced */
    tacos_plan_t *memo;
    int nmemo, next;
    tacos_plan_t ticket;
    char buf[TACOS_WHY_BYTES];
};

tacos_setup_t *tacos_setup_reserve(const tacos_comm_t *c)
{
    int n = c->ops.size;
    tacos_setup_t *u = calloc(1, sizeof *u);
    setup_record_t *b = u ? calloc((size_t)(n > 0 ? n : 1), sizeof *b) : NULL;
    tacos_plan_t *memo = b ? calloc((size_t)c->s.cache_size, sizeof *memo) : NULL;
    if (!memo) {
        free(b);
        free(u);
        return NULL;
    }
    u->blocks = b, u->memo = memo;
    pthread_mutex_init(&u->lock, NULL);
    while (1 << u->nrounds < n)
        u->nrounds++;
    return u;
}

void tacos_setup_begin(tacos_comm_t *c)
{
    if (c->setup || !c->setup_room)
        return;
    tacos_setup_t *u = c->setup_room;
    setup_record_t *b = u->blocks;
    tacos_comm_settings_values(c, b[0].settings);
    if (c->s.topo_file) {
        b[0].file_ok = !tacos_comm_file_topology(c, &u->file_topo, u->problem) &&
                       !tacos_comm_check_topology(c, u->file_topo, u->problem);
        b[0].file_hash = tacos_comm_topology_vote(b[0].file_ok ? u->file_topo : NULL, u->problem);
    } else {
        b[0].rec = *tacos_comm_local_record(c);
    }
    c->setup = u, c->setup_room = NULL;
}

const tacos_plan_t *tacos_setup_ticket(tacos_comm_t *c, tacos_coll_t coll, int root,
                                       int size_class)
{
    tacos_plan_t *t = &c->setup->ticket;
    *t = (tacos_plan_t){.coll = coll, .root = root, .k = 1, .size_class = size_class,
                        .deferred = 1};
    return t;
}

/* Round `round`: the first min(d, n - d) blocks to rank - d, as many from
 * rank + d after them (d = 2^round). */
static int post_round(const tacos_comm_t *c, tacos_setup_t *u)
{
    const tacos_transport_t *tp = &c->ops.setup;
    int n = c->ops.size, me = c->ops.rank, d = 1 << u->round, rc;
    size_t bytes = (size_t)(d < n - d ? d : n - d) * sizeof *u->blocks;
    if ((rc = tp->irecv(tp->ctx, u->blocks + d, bytes, (me + d) % n, &u->live[0])))
        return rc;
    u->sends[0] = 0, u->nlive = 1;
    if ((rc = tp->isend(tp->ctx, u->blocks, bytes, (me - d + n) % n, &u->live[1])))
        return rc;
    u->sends[1] = 1, u->nlive = 2;
    return 0;
}

/* What every rank concludes from the same blocks. */
static void conclude(tacos_comm_t *c, tacos_setup_t *u)
{
    int n = c->ops.size, me = c->ops.rank, file_ok, same = 1, all_ok = 1, rc;
    char eq[TACOS_NSETTINGS], problem[TACOS_PROBLEM_BYTES] = "";
    for (int i = 0; i < TACOS_NSETTINGS; i++) {
        eq[i] = 1;
        for (int j = 1; j < n; j++)
            eq[i] &= u->blocks[j].settings[i] == u->blocks[0].settings[i];
    }
    for (int j = 0; j < n; j++) { /* (file_ok: all ok with one hash; same: one vote) */
        same &= u->blocks[j].file_ok == u->blocks[0].file_ok &&
                u->blocks[j].file_hash == u->blocks[0].file_hash;
        all_ok &= u->blocks[j].file_ok != 0;
    }
    file_ok = all_ok && same;
    if (tacos_comm_settings_conclude(c, eq) < 0) {
        u->why = "coll/tacos is off or its settings differ between ranks";
        return;
    }
    if (c->s.topo_file) {
        u->why = file_ok ? NULL : "no usable topology";
        if (!file_ok)
            tacos_comm_say_topology(c, u->problem, all_ok, same);
        u->topo = file_ok ? u->file_topo : NULL;
        if (!file_ok)
            tacos_topo_free(u->file_topo);
        u->file_topo = NULL;
        return;
    }
    tacos_probe_record_t *recs = malloc((size_t)n * sizeof *recs);
    if (!recs) /* this rank alone: it votes no */
        return;
    for (int r = 0; r < n; r++)
        recs[r] = u->blocks[(r - me + n) % n].rec;
    if ((rc = tacos_comm_records_topology(c, recs, &u->topo)) ||
        (rc = tacos_comm_check_topology(c, u->topo, problem))) {
        /* the same records on every rank: the same problem, but for memory */
        tacos_comm_say_topology(c, problem, 0, rc != TACOS_ERR_NOMEM);
        tacos_topo_free(u->topo);
        u->topo = NULL;
    }
    free(recs);
}

/* Progress: wait (blocking) or test; the conclusion once every round is in. */
static int step(tacos_comm_t *c, tacos_setup_t *u, int wait)
{
    const tacos_transport_t *tp = &c->ops.setup;
    int rc = 0;
    while (!rc && !u->done) {
        if (!u->nlive && u->round == u->nrounds) {
            conclude(c, u);
            free(u->blocks);
            u->blocks = NULL;
            __atomic_store_n(&u->done, 1, __ATOMIC_RELEASE);
            break;
        }
        if (!u->nlive) {
            rc = post_round(c, u);
            continue;
        }
        char fin[2] = {0, 0};
        rc = (wait ? tp->wait_some : tp->test_some)(tp->ctx, u->live, (size_t)u->nlive, fin);
        int k = 0;
        for (int i = 0; i < u->nlive; i++)
            if (!fin[i])
                u->live[k] = u->live[i], u->sends[k++] = u->sends[i];
        u->nlive = k;
        if (!rc && !k)
            u->round++;
        else if (!rc && !wait)
            break;
    }
    if (rc) { /* the peers may still write or read the blocks: kept */
        for (int i = 0; i < u->nlive; i++)
            tp->abandon(tp->ctx, u->live[i], u->sends[i]);
        u->nlive = 0, u->abandoned = 1;
        u->rc = rc = *c->ops.setup_error ? *c->ops.setup_error : TACOS_ERR_IO;
        tacos_comm_say(c, 0, "communicator %u, rank %d of %d: a message of the exchange of "
                             "settings and topology failed; the other ranks may wait for this "
                             "one until the error handler ends the job",
                       c->ops.id, c->ops.rank, c->ops.size);
        __atomic_store_n(&u->done, 1, __ATOMIC_RELEASE);
    }
    return rc;
}

int tacos_setup_progress(tacos_comm_t *c, int *ready)
{
    tacos_setup_t *u = c->setup;
    *ready = 0;
    if (__atomic_load_n(&u->done, __ATOMIC_ACQUIRE)) {
        *ready = 1;
        return u->rc;
    }
    if (pthread_mutex_trylock(&u->lock)) /* (another thread, or this one waiting in it) */
        return 0;
    int rc = step(c, u, 0);
    *ready = u->done;
    pthread_mutex_unlock(&u->lock);
    return rc;
}

int tacos_setup_finish(tacos_comm_t *c)
{
    tacos_setup_t *u = c->setup;
    pthread_mutex_lock(&u->lock);
    int rc = u->done ? u->rc : step(c, u, 1);
    pthread_mutex_unlock(&u->lock);
    return rc;
}

/* The key's plan in the memo, made where it is not. */
static tacos_plan_t *memo_plan(tacos_comm_t *c, tacos_setup_t *u, tacos_coll_t coll, int root,
                               int size_class)
{
    for (int i = 0; i < u->nmemo; i++) {
        tacos_plan_t *e = &u->memo[i];
        if (e->coll == coll && e->root == root && e->size_class == size_class)
            return e;
    }
    tacos_plan_t *slot = &u->memo[u->nmemo];
    if (u->nmemo < c->s.cache_size) {
        u->nmemo++;
    } else { /* (operations hold references of their own) */
        slot = &u->memo[u->next];
        u->next = (u->next + 1) % c->s.cache_size;
        tacos_comm_plan_free(slot);
    }
    tacos_sched_t *s = NULL;
    *slot = (tacos_plan_t){.coll = coll, .root = root, .size_class = size_class};
    if (u->topo && tacos_comm_make_plan(c, u->topo, coll, root, size_class, slot, &s))
        tacos_comm_report(c, u->topo, slot, s);
    tacos_sched_free(s);
    tacos_exec_free(slot->exec); /* (a blocking call's: requests make their own) */
    free(slot->off);
    slot->exec = NULL, slot->off = NULL;
    return slot;
}

int tacos_setup_take(tacos_comm_t *c, tacos_coll_t coll, int root, size_t bytes, tacos_plan_t *p,
                     const char **why)
{
    tacos_setup_t *u = c->setup;
    *p = (tacos_plan_t){.coll = coll, .root = root, .k = 1};
    if (u->why) {
        *why = u->why;
        return 0;
    }
    if (tacos_comm_below_threshold(c, coll, bytes, u->buf, why))
        return 0;
    if (!c->s.nonblocking) {
        char name[64];
        snprintf(u->buf, sizeof u->buf, "%s is 0", tacos_comm_param(c, "nonblocking", name));
        *why = u->buf;
        return 0;
    }
    pthread_mutex_lock(&u->lock);
    const tacos_plan_t *e = memo_plan(c, u, coll, root, tacos_comm_size_class(bytes));
    *p = *e;
    if (p->prog_refs)
        __atomic_add_fetch(p->prog_refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&u->lock);
    return 1;
}

void tacos_setup_free(tacos_setup_t *u)
{
    if (!u)
        return;
    for (int i = 0; i < u->nmemo; i++)
        tacos_comm_plan_free(&u->memo[i]);
    free(u->memo);
    if (!u->abandoned)
        free(u->blocks);
    tacos_topo_free(u->topo);
    tacos_topo_free(u->file_topo);
    pthread_mutex_destroy(&u->lock);
    free(u);
}
