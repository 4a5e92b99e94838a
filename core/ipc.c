/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CUDA IPC between the ranks of a host (exec.h: opts->ipc): whether a call
 * takes it.  Whether a call is staged through a component with IPC is each
 * rank's own affair (its buffers, its driver), and a rank reading
 * descriptions where another sends data would get garbage, so the ranks
 * agree on it:
 *
 * - a blocking call asks where it may take IPC at all (ipc_possible: the
 *   settings and the size, the same on every rank) with an allreduce of
 *   each rank's "no";
 * - a persistent call asks at its first start, a nonblocking one at once,
 *   without blocking: each rank's "no" ORed by dissemination in the call's
 *   own messages;
 * - across hosts, a message is a description only where both ends take
 *   the other for one of their host: the ranks' host maps are checked once;
 * - once per communicator, at the first agreement that says yes, the ranks
 *   test that each can map what the others of its host export (CUDA IPC
 *   needs peer access between their GPUs, and is refused between
 *   containers): a rank that could not would fail its call after the
 *   others had sent it descriptions.  Where one cannot, the communicator
 *   does without IPC.  A nonblocking call never tests: on a communicator
 *   not tested yet it is staged, and the next blocking collective tests.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"

enum { VOTE = 1, EXCHANGE, CONFIRM };

#define PROBE_BYTES 256

/* Whether this process said that ranks cannot map each other's memory
 * (once; later communicators say it at verbose level 1). */
static int said;

static int say_level(void)
{
    return __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) ? 1 : 0;
}

/* Why this rank takes no IPC: it cannot map the memory of rank `peer` of
 * its host, or (peer < 0) cannot export its own; for the communicator
 * (blocking calls' test) or for one persistent call. */
static void say_cannot(tacos_comm_t *c, int level, int peer, const char *why, int persistent)
{
    char what[64];
    if (peer < 0)
        snprintf(what, sizeof what, "export GPU memory");
    else
        snprintf(what, sizeof what, "map GPU memory of rank %d, of its host,", peer);
    tacos_comm_say(c, level,
                   persistent ? "rank %d cannot %s through CUDA IPC (%s): a persistent call on "
                                "communicator %u is staged"
                              : "rank %d cannot %s through CUDA IPC (%s): no CUDA IPC on "
                                "communicator %u",
                   c->ops.rank, what, why, c->ops.id);
}

/* After a "no" from a rank none of whose calls on the communicator was
 * staged through a component with IPC yet (a program on host buffers), the
 * next 1, 2, 4 ... 64 blocking calls that could take IPC (doubling while
 * the answer stays so) do without it and without asking: such a program
 * pays one agreement in 64 calls, not one per call.  A "no" from ranks that
 * all had such calls (a GPU program with a call on host buffers now and
 * then) pauses nothing: its next call on GPU buffers takes IPC. */
#define IPC_MAX_PAUSE 64

/* Whether a call of this size may go through CUDA IPC, before the ranks
 * are asked (the agreed settings, the view's bytes and what the
 * communicator found: the same on every rank). */
static int ipc_possible(const tacos_comm_t *c, const tacos_call_t *call)
{
    return c->s.cuda_ipc_min_bytes >= 0 && call->v.bytes >= (size_t)c->s.cuda_ipc_min_bytes &&
           c->ops.size > 1 && c->ipc_mappable >= 0;
}

/* ---- the test of mapping ---------------------------------------------------------- */

/* This rank's block for the test, described in *p; p->ok = 0 where it
 * cannot be made (NULL: out of memory) or exported (why says why). */
static void *probe_make(const tacos_mc_t *mc, tacos_ipc_probe_t *p, char *why, size_t len)
{
    void *block = mc->dev_alloc(PROBE_BYTES);
    memset(p, 0, sizeof *p);
    p->ok = block && !mc->ipc_export(block, &p->d);
    if (block && !p->ok)
        snprintf(why, len, "%s", mc->why ? mc->why() : "?");
    return block;
}

/* Maps the blocks the other ranks of this one's host exported (unpinned at
 * once; the component keeps the mapping among the last ones it made): 0,
 * or the first rank whose block it could not map + 1, with why. */
static int probe_map(const tacos_comm_t *c, const tacos_mc_t *mc, const tacos_ipc_probe_t *all,
                     char *why, size_t len)
{
    for (int r = 0; r < c->ops.size; r++) {
        const void *p;
        if (r == c->ops.rank || (c->on_host && !c->on_host[r]) || !all[r].ok)
            continue;
        if (mc->ipc_import(&all[r].d, &p)) {
            snprintf(why, len, "%s", mc->why ? mc->why() : "?");
            return r + 1;
        }
        mc->ipc_release(&all[r].d);
    }
    return 0;
}

/* A blocking call's test, once every rank said yes with its block in
 * all[rank]: the blocks allgathered, each rank maps those of its host, the
 * lowest rank that could not says why. */
static int test_mapping(tacos_comm_t *c, const tacos_mc_t *mc, tacos_ipc_probe_t *all)
{
    int n = c->ops.size, me = c->ops.rank, bad = 0;
    tacos_ipc_probe_t mine = all[me];
    char why[256];
    int rc = c->ops.allgather(c->ops.ctx, &mine, all, sizeof mine);
    if (!rc)
        bad = probe_map(c, mc, all, why, sizeof why);
    uint64_t first = bad ? (uint64_t)(n - me) : 0; /* the maximum: the lowest such rank */
    if (!rc)
        rc = c->ops.max_u64(c->ops.ctx, &first, 1);
    if (rc)
        return rc;
    c->ipc_mappable = first ? -1 : 1;
    if (bad && first == (uint64_t)(n - me))
        say_cannot(c, say_level(), bad - 1, why, 0);
    return 0;
}

/* ---- blocking calls --------------------------------------------------------------- */

/* Once, before the first IPC agreement of a communicator that spans hosts
 * (a blocking call's; for persistent and nonblocking ones the next
 * blocking collective, tacos_comm_prepare): whether every rank's map of the
 * ranks of its host says the same (each rank's host named by its lowest
 * rank there).  A message is a
 * description where both ends take the other for one of their host: where
 * any map disagrees, every rank drops its map and the communicator does
 * without IPC. */
int tacos_comm_check_hosts(tacos_comm_t *c)
{
    int n = c->ops.size, me = c->ops.rank, first = 0, *id = c->host_ids, rc;
    while (first < n && !c->on_host[first])
        first++;
    uint64_t bad = !c->on_host[me];
    c->busy = 1; /* collectives of the core's own */
    rc = c->ops.allgather(c->ops.ctx, &first, id, sizeof first);
    for (int r = 0; !rc && r < n; r++)
        bad |= (c->on_host[r] != 0) != (id[r] == first);
    if (!rc)
        rc = c->ops.max_u64(c->ops.ctx, &bad, 1);
    c->busy = 0;
    if (rc)
        return rc;
    free(c->host_ids); /* checked */
    c->host_ids = NULL;
    if (bad) {
        free(c->on_host);
        c->on_host = NULL;
        if (me == 0)
            tacos_comm_say(c, 0, "the ranks' maps of who shares a host differ: no CUDA IPC on "
                                 "communicator %u", c->ops.id);
    }
    return 0;
}

/* A blocking collective's agreement, where a call may take IPC and the
 * host maps are checked: whether every rank is staged through a component
 * with IPC (mc: this rank's, NULL where it is not).  A rank says yes where
 * it is and, before the communicator's test, it has its block to export.
 * Its "no": 1 where it had such a call on the communicator, 2 where it had
 * none (the pause above), or, where it cannot export its block (MIG, a
 * driver without IPC), 3 + (n - rank): then the lowest such rank says why
 * and the communicator does without IPC.  *ipc = mc where every rank said
 * yes and the ranks can map each other's memory. */
static int agree(tacos_comm_t *c, const tacos_mc_t *mc, const tacos_mc_t **ipc)
{
    int n = c->ops.size, me = c->ops.rank, rc, staged = mc && mc->ipc_export;
    *ipc = NULL;
    c->ipc_staged |= staged;
    if (c->ipc_skip) {
        c->ipc_skip--;
        return 0;
    }
    uint64_t no = staged ? 0 : 2 - (uint64_t)c->ipc_staged;
    tacos_ipc_probe_t *all = NULL;
    void *block = NULL;
    char why[256];
    if (!no && !c->ipc_mappable) { /* untested: the test follows a yes */
        if ((all = malloc((size_t)n * sizeof *all)))
            block = probe_make(mc, &all[me], why, sizeof why);
        no = !block ? 1 : !all[me].ok ? 3 + (uint64_t)(n - me) : 0;
    }
    c->busy = 1; /* collectives of the core's own */
    rc = c->ops.max_u64(c->ops.ctx, &no, 1);
    if (!rc && !no && all)
        rc = test_mapping(c, mc, all);
    c->busy = 0;
    if (block)
        mc->dev_free(block);
    free(all);
    if (rc)
        return rc;
    if (no >= 3) {
        c->ipc_mappable = -1;
        if (no == 3 + (uint64_t)(n - me))
            say_cannot(c, say_level(), -1, why, 0);
    } else if (no == 2) {
        c->ipc_skip = c->ipc_pause ? c->ipc_pause : 1;
        c->ipc_pause = c->ipc_skip * 2 < IPC_MAX_PAUSE ? c->ipc_skip * 2 : IPC_MAX_PAUSE;
    } else if (!no && c->ipc_mappable > 0) {
        *ipc = mc;
        c->ipc_pause = 0;
    }
    return 0;
}

int tacos_ipc_agree(tacos_comm_t *c, const tacos_call_t *call, const tacos_mc_t **ipc)
{
    *ipc = NULL;
    if (!ipc_possible(c, call))
        return 0;
    int rc = c->host_ids ? tacos_comm_check_hosts(c) : 0; /* a map not checked yet */
    if (rc || (c->ops.spans_hosts && !c->on_host))
        return rc;
    return agree(c, call->mem ? call->mc : NULL, ipc);
}

/* A nonblocking call takes IPC only on a communicator tested already (its
 * own test would be a new block exported, mapped by every peer, at each
 * call): one that found it untested asked for this agreement at the next
 * blocking collective, after the host maps' check it also asked for. */
int tacos_ipc_test_wanted(tacos_comm_t *c)
{
    const tacos_mc_t *mc = c->ipc_test_mc, *ipc;
    c->ipc_test_wanted = 0, c->ipc_test_mc = NULL;
    if (c->ipc_mappable || c->host_ids || (c->ops.spans_hosts && !c->on_host))
        return 0;
    return agree(c, mc, &ipc);
}

/* ---- persistent and nonblocking calls --------------------------------------------- */

/* Whether a call of its own asks is decided when it is made, where calls
 * are in the same order on every rank (their starts need not be): the
 * size and the settings, across hosts only once a blocking collective has
 * checked the ranks' host maps (a call that finds them unchecked asks for
 * that, and is staged), and the communicator's test: where a blocking call
 * found the ranks cannot map each other's memory, never; where none has
 * tested it yet, a persistent call tests at its first start, for itself,
 * and a nonblocking one is staged and asks the next blocking collective to
 * test (tacos_ipc_test_wanted).  Where a call asks, every rank's "no" is
 * ORed at its start (a nonblocking call's: at once). */
int tacos_ipc_eligible(tacos_comm_t *c, const tacos_call_t *call, int persistent,
                       tacos_ipc_vote_t *v)
{
    memset(v, 0, sizeof *v);
    if (!ipc_possible(c, call))
        return 0;
    if (c->host_ids)
        c->hosts_wanted = 1;
    if (!persistent && !c->ipc_mappable) {
        c->ipc_test_wanted = 1;
        if (call->mem && call->mc && call->mc->ipc_export)
            c->ipc_test_mc = call->mc;
        return 0;
    }
    v->test = !c->ipc_mappable;
    return !c->host_ids && !(c->ops.spans_hosts && !c->on_host);
}

/* Adds a request in flight. */
static void add(tacos_ipc_vote_t *v, void *req, int is_send)
{
    v->live[v->nlive] = req;
    v->sends[v->nlive++] = (char)is_send;
}

/* Gives up what is in flight; the agreement's memory is freed, but where
 * it did not end (an error, a request freed while agreeing) peers may still
 * read this rank's block and, where a send was in flight, its description:
 * those are left allocated. */
void tacos_ipc_vote_free(tacos_ipc_vote_t *v, const tacos_call_t *call)
{
    int ended = v->phase == 0, sending = 0;
    for (int i = 0; i < v->nlive; i++) {
        sending |= v->sends[i];
        call->tp.abandon(call->tp.ctx, v->live[i], v->sends[i]);
    }
    if (!sending) {
        free(v->probes);
        free(v->mine);
    }
    if (v->block && ended)
        call->mc->dev_free(v->block);
    free(v->live);
    *v = (tacos_ipc_vote_t){.test = v->test, .plan_no = v->plan_no};
}

/* Round `round` of the dissemination: what this rank knows to rank +
 * 2^round, what rank - 2^round knows from it. */
static int post_round(tacos_ipc_vote_t *v, const tacos_comm_t *c, const tacos_call_t *call)
{
    const tacos_transport_t *tp = &call->tp;
    int n = c->ops.size, me = c->ops.rank, d = 1 << v->round, rc;
    void *req;
    v->mine->no = v->no;
    if ((rc = tp->irecv(tp->ctx, &v->in, sizeof v->in, ((me - d) % n + n) % n, &req)))
        return rc;
    add(v, req, 0);
    if ((rc = tp->isend(tp->ctx, v->mine, sizeof *v->mine, (me + d) % n, &req)))
        return rc;
    add(v, req, 1);
    return 0;
}

/* The test's exchange: this rank's block to every rank of its host, theirs
 * from each. */
static int post_exchange(tacos_ipc_vote_t *v, const tacos_comm_t *c, const tacos_call_t *call)
{
    const tacos_transport_t *tp = &call->tp;
    int rc = 0, me = c->ops.rank;
    void *req;
    for (int r = 0; !rc && r < c->ops.size; r++) {
        if (r == me || (c->on_host && !c->on_host[r]))
            continue;
        if (!(rc = tp->irecv(tp->ctx, &v->probes[r], sizeof *v->probes, r, &req)))
            add(v, req, 0);
        if (!rc && !(rc = tp->isend(tp->ctx, &v->probes[me], sizeof *v->probes, r, &req)))
            add(v, req, 1);
    }
    return rc;
}

/* Each rank's "no" ORed: whether its call is staged through a component
 * with IPC and, where the call tests, whether it has its block to export. */
int tacos_ipc_vote_start(tacos_ipc_vote_t *v, tacos_comm_t *c, const tacos_call_t *call,
                         int ask_ipc, int plan, const uint64_t *hash)
{
    int n = c->ops.size, room = v->test && ask_ipc ? 2 * n : 2, rc;
    v->no = (unsigned char)((ask_ipc && call->mem && call->mc && call->mc->ipc_export ? 0 : 1) |
                            (plan && !hash ? 2 : 0));
    v->plan_no = 0;
    v->nlive = 0;
    if (!(v->mine = calloc(1, sizeof *v->mine)) ||
        !(v->live = malloc((size_t)room * (sizeof *v->live + 2)))) {
        free(v->mine);
        v->mine = NULL;
        return TACOS_ERR_NOMEM;
    }
    if (plan && hash)
        v->mine->h = *hash, v->mine->nh = ~*hash;
    v->sends = (char *)(v->live + room), v->done = v->sends + room;
    if (!v->no && v->test) { /* (a rank that cannot export says no: that call is staged) */
        char why[256];
        if ((v->probes = calloc((size_t)n, sizeof *v->probes)))
            v->block = probe_make(call->mc, &v->probes[c->ops.rank], why, sizeof why);
        v->no = !v->probes || !v->probes[c->ops.rank].ok;
        if (v->block && v->no)
            say_cannot(c, 1, -1, why, 1);
    }
    v->round = 0;
    v->phase = VOTE;
    if ((rc = post_round(v, c, call)))
        tacos_ipc_vote_free(v, call);
    return rc;
}

/* The next step once the step in flight is done: the next round, the
 * exchange (after a yes where the call tests) or the confirmation (after
 * it); *answer once the last is done. */
static int next_step(tacos_ipc_vote_t *v, tacos_comm_t *c, const tacos_call_t *call, int *answer)
{
    char why[256];
    if (v->phase == EXCHANGE) { /* every block of the host in: map them, then OR who could not */
        int bad = probe_map(c, call->mc, v->probes, why, sizeof why);
        if (bad)
            say_cannot(c, 1, bad - 1, why, 1);
        v->no = bad != 0, v->round = 0, v->phase = CONFIRM;
        return post_round(v, c, call);
    }
    v->no |= (unsigned char)(v->in.no & 3);
    v->mine->h |= v->in.h, v->mine->nh |= v->in.nh;
    if (1 << ++v->round < c->ops.size)
        return post_round(v, c, call);
    if (v->mine->h & v->mine->nh) /* two ranks have different schedules */
        v->no |= 2;
    v->plan_no = (v->no & 2) != 0;
    if (v->phase == VOTE && !v->no && v->test) { /* all yes, the communicator untested */
        v->phase = EXCHANGE;
        return post_exchange(v, c, call);
    }
    if (v->phase == CONFIRM && v->no && c->ops.rank == 0)
        tacos_comm_say(c, say_level(),
                       "on communicator %u a rank cannot map GPU memory of another of its host "
                       "through CUDA IPC (verbose level 1 says which): a persistent call is staged",
                       c->ops.id);
    *answer = v->no & 1 ? -1 : 1;
    v->phase = 0; /* ended */
    tacos_ipc_vote_free(v, call);
    return 0;
}

/* Tests every request in flight at once, keeping those not done; the next
 * step once none is left. */
int tacos_ipc_vote_progress(tacos_ipc_vote_t *v, tacos_comm_t *c, const tacos_call_t *call,
                            int *answer)
{
    int k = 0, rc;
    memset(v->done, 0, (size_t)v->nlive);
    rc = call->tp.test_some(call->tp.ctx, v->live, (size_t)v->nlive, v->done);
    for (int i = 0; i < v->nlive; i++) /* (done: completed or failed, forgotten either way) */
        if (!v->done[i])
            v->live[k] = v->live[i], v->sends[k++] = v->sends[i];
    v->nlive = k;
    if (!rc && !k)
        rc = next_step(v, c, call, answer);
    if (rc)
        tacos_ipc_vote_free(v, call);
    return rc;
}
