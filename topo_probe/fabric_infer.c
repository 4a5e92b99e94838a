/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The switch tree between hosts inferred without a fabric file: which hosts
 * share a leaf switch, the leaves under one root.  Then the rates of its
 * levels are measured as with a file (fabric_net.c).
 *
 * A leaf's hosts exchange at the rate of their ports whatever else runs; a
 * pair under two leaves is slower whenever more flows cross an uplink than
 * it carries.  In ring round r (r = 1 .. h/2) every host exchanges with the
 * hosts r before and r after it (in host order, around) at once: every pair
 * of hosts meets in exactly one round, and each leaf whose hosts are a run
 * of m in host order sends 2 min(r, m) flows through its uplink.  A round's
 * pairs, as shares of a port's share (the hosts' median of the most their
 * two flows carried in any round), split in two classes where they are
 * farthest apart; the slower class is slow where the faster ran SEPARATE
 * times its rate, every pair where even the faster is below ALL_SLOW, none
 * else.  The rounds stop where ALL_SLOW_STOP rounds in a row had only slow
 * pairs (where a leaf's hosts are a run in host order, no later round meets
 * two hosts of one leaf).
 *
 * What a pair says is weighed by its round: the share of the round's pairs
 * that were slow, for a fast pair, and less that for a slow one.  A round
 * whose classes are not apart (small r: no uplink full) says nothing: on
 * the emulated tree its pairs ran at 0.8-1.3 of their share whether they
 * crossed an uplink or not.  Each host, in host order, joins the leaf
 * whose hosts' pairs with it say most where that is not negative (a leaf
 * of its own where none is); then each moves to the leaf that fits it best
 * (or one of its own) until none moves; a host left alone joins the leaf
 * it fits best where one slow pair at most says otherwise (ALONE).  Hosts
 * that no uplink limits (not oversubscribed, or too few of a leaf's hosts
 * in the communicator to fill its uplink) may share a leaf: the network
 * carries them as one switch would.  An uplink shows only where it is oversubscribed by about
 * SEPARATE (1.35:1) or more and its leaf's hosts fill it.
 *
 * Every rank computes the same from the same times (the callers' max over
 * every rank after each round).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

#define SMALL_BYTES 8
#define SMALL_REPS 3
/* The size of a round's exchanges until one fills uplinks: about ROUND_US
 * at a port's share (two flows a host), at least TACOS_NET_S1_BYTES.  With
 * 32-45 KiB from the start the times of the rounds that filled no uplink
 * were latency and noise (a port's share 1.2-1.4x the true one). */
#define ROUND_US 7500.0
/* Once this share of a round's pairs were slow, the later rounds (more of
 * whose pairs cross uplinks) exchange CONFIRM_BYTES.  On the emulated
 * 16-host tree (queues of 200 KiB, 8 flows through each in the round where
 * every flow crossed an uplink) that round overflowed a queue in about half
 * the runs at 128 and at 64 KiB (TCP then waits out its 200 ms
 * retransmission timeout); at 32 KiB in none, but the queue took in a
 * flow's first bytes at a port's rate and pairs across leaves looked fast
 * (leaves right in 18 runs of 20); at 48 KiB the leaves were right in 20
 * of 20 and 2 runs took over 0.5 s. */
#define CONFIRM_SHARE 0.5
#define CONFIRM_BYTES 49152
/* The rounds stop after this many in a row in which every pair was slow
 * (where a leaf's hosts are a run in host order: no leaf is longer than
 * the rounds' r, and no later round meets two hosts of one leaf; where
 * they are not, later rounds would have met some, and the moves below
 * have only the rounds measured). */
#define ALL_SLOW_STOP 1
/* A round whose faster class is below this share of a port's share had
 * every pair cross a full uplink (fabric_net.c's UP_LIMITED). */
#define ALL_SLOW 0.8
/* A round's slower pairs crossed a full uplink where the faster ones ran
 * this many times their rate (on the emulated 16-host tree at 2:1, the
 * first round that filled the uplinks: 0.63-0.82 of a port's share across
 * them, 0.96-1.17 within a leaf; rounds that filled none: 0.79-1.30, their
 * classes 1.2 apart). */
#define SEPARATE 1.35
/* Passes that move hosts between the leaves grown (each host at most once
 * a pass; they end where none moved). */
#define MOVE_PASSES 4
/* A host left alone on a leaf joins the leaf it fits best where one pair
 * at most says otherwise, and no more than ALONE: one pair slowed in a
 * round whose slower class was most of its pairs says no more than that.  On the emulated trees (2:1)
 * a pair under one leaf came out slow with the pairs that crossed uplinks
 * (0.70 and 0.88 of a port's share against 1.1-1.2 for its kind) in 3
 * runs of 40 (tree8: the round in which the uplinks were just full; tree16:
 * noise), and left a host alone there (fit -0.75 and -0.81).  A host that
 * is alone on its leaf is slow with other leaves' hosts in every round
 * that fills their uplinks: -1 for the round in which every pair was slow,
 * and its share of slow pairs for each other round that filled them. */
#define ALONE 0.9

/* Ring round r: every leader exchanges `bytes` with the hosts r after and
 * r before it (one where 2r == h).  v[4x..4x+3]: host x's 8-byte and long
 * times with x+r and with x-r, on every rank. */
static int ring_round(const tacos_net_comm_t *c, const int *leader, int mine, int h, int r,
                      size_t bytes, double *v)
{
    int peers[2] = {0, 0}, k = 0, failed = 0;
    double t8[2] = {0, 0}, t[2] = {0, 0}, sync = 0;
    memset(v, 0, 4 * (size_t)h * sizeof *v);
    if (mine >= 0) {
        peers[0] = (mine + r) % h, peers[1] = (mine - r + h) % h;
        k = peers[0] == peers[1] ? 1 : 2;
        const size_t small[2] = {SMALL_BYTES, SMALL_BYTES};
        failed = tacos_net_exchange(c, leader, peers, k, small, SMALL_REPS, t8) != TACOS_OK;
    }
    if (c->max(c->ctx, &sync, 1))
        return tacos_error(TACOS_ERR_IO, "the caller's allreduce failed");
    if (mine >= 0 && !failed) {
        const size_t big[2] = {bytes, bytes};
        failed = tacos_net_exchange(c, leader, peers, k, big, 1, t) != TACOS_OK;
        v[4 * mine] = t8[0], v[4 * mine + 1] = t8[k - 1];
        v[4 * mine + 2] = t[0], v[4 * mine + 3] = t[k - 1];
    }
    return tacos_net_agree_max(c, v, 4 * h, failed);
}

/* Which of round r's pairs were slow, and what the round says: q[] (room
 * for h) the pairs' rates over a port's share (rate times the flows per
 * host, flows[], over `port`), sorted and split in two where the classes
 * are farthest apart (the most between-class variance).  Where even the
 * faster class is below ALL_SLOW (or is one pair below a port's share:
 * noise), every pair crossed a full uplink: *cut INFINITY, weight 1.  Where the classes are apart by SEPARATE, the slower
 * are slow: *cut between them, weight their share of the round.  Else the
 * round filled no uplink (or too little to tell from noise): *cut 0,
 * weight 0. */
static double classify(const double *rate, const double *flows, int h, int r, double port,
                       double *q, double *cut)
{
    int n = 0;
    for (int x = 0; x < h && port > 0 && isfinite(port); x++) {
        int y = (x + r) % h;
        size_t i = (size_t)x * (size_t)h + (size_t)y;
        if ((2 * r == h && y < x) || !(rate[i] > 0) || !isfinite(rate[i]))
            continue;
        q[n++] = rate[i] * flows[i] / port;
    }
    *cut = 0;
    if (n < 2)
        return 0;
    tacos_fabric_median(q, n); /* (sorts q) */
    double total = 0, below = 0, most = -1, lo = 0, hi = 0;
    int k = 1;
    for (int i = 0; i < n; i++)
        total += q[i];
    for (int i = 1; i < n; i++) { /* slower class q[0..i) */
        below += q[i - 1];
        double ml = below / i, mu = (total - below) / (n - i);
        double between = (double)i * (n - i) * (mu - ml) * (mu - ml);
        if (between > most)
            most = between, k = i, lo = ml, hi = mu;
    }
    if (hi < ALL_SLOW || (k == n - 1 && hi < 1)) { /* (one pair alone: at a port's share) */
        *cut = INFINITY;
        return 1;
    }
    if (hi < SEPARATE * lo)
        return 0;
    *cut = (q[k - 1] + q[k]) / 2;
    return (double)k / n;
}

/* The rate (bytes/us) of pair (x, x+r) in round r: both ends' times. */
static double pair_rate(const double *v, int h, int x, int r, size_t bytes)
{
    int y = (x + r) % h;
    double t8 = (v[4 * x] + v[4 * y + 1]) / 2, t = (v[4 * x + 2] + v[4 * y + 3]) / 2;
    return tacos_fabric_rate(bytes, t8, t);
}

/* What the ring rounds measured: rate[x*h+y] of each pair (0 unmeasured),
 * share[x*h+y] a port's share in its round, and round r's cut[r] and
 * weight[r] (classify). */
typedef struct {
    const double *rate, *share, *cut, *weight;
    int h;
} rounds_t;

/* What pair x, y says of their sharing a leaf: its round's weight (the
 * share of the round's pairs that were slow), for a fast pair, and less
 * that for a slow one (where every pair was slow, one fast pair is surely
 * under one leaf; a round that filled no uplink says nothing); unmeasured
 * 0. */
static double evidence(const rounds_t *m, int x, int y)
{
    size_t i = (size_t)x * (size_t)m->h + (size_t)y;
    if (x == y || m->rate[i] <= 0)
        return 0;
    int d = abs(x - y);
    d = d < m->h - d ? d : m->h - d;
    return m->rate[i] < m->cut[d] * m->share[i] ? -m->weight[d] : m->weight[d];
}

/* What host x's pairs with the hosts of leaf l (but x) say together;
 * -INFINITY where none was measured (nothing says x belongs there).
 * *apart (may be NULL): how many of those pairs say "apart". */
static double fit(const rounds_t *m, const int *leaf, int x, int l, int *apart)
{
    double sum = 0;
    int measured = 0, against = 0;
    for (int y = 0; y < m->h; y++)
        if (leaf[y] == l && y != x && m->rate[(size_t)x * (size_t)m->h + (size_t)y] > 0) {
            double e = evidence(m, x, y);
            sum += e;
            against += e < 0;
            measured++;
        }
    if (apart)
        *apart = against;
    return measured ? sum : -INFINITY;
}

/* The leaves numbered from 0 in order of first host, without gaps (renum:
 * room for nleaves); returns how many. */
static int renumber(int *leaf, int h, int nleaves, int *renum)
{
    for (int l = 0; l < nleaves; l++)
        renum[l] = -1;
    int k = 0;
    for (int x = 0; x < h; x++) {
        if (renum[leaf[x]] < 0)
            renum[leaf[x]] = k++;
        leaf[x] = renum[leaf[x]];
    }
    return k;
}

/* The leaves from what the rounds measured (m): each host in host order
 * joins the leaf it fits best where that fit is not negative (the first
 * such; a leaf of its own where none), then each moves to the leaf it fits
 * best (or one of its own, fit 0) until none moves; last, each host left
 * alone joins the leaf it fits best where that fit is at least -ALONE and
 * one pair at most is slow.
 * leaf[x] numbered from 0 in order of first host; returns how many (renum:
 * room for 2h + 1). */
static int find_leaves(const rounds_t *m, int *leaf, int *renum)
{
    int h = m->h, nleaves = 0;
    for (int x = 0; x < h; x++)
        leaf[x] = -1;
    for (int x = 0; x < h; x++) {
        double most = -INFINITY;
        for (int l = 0; l < nleaves; l++) {
            double f = fit(m, leaf, x, l, NULL);
            if (f >= 0 && f > most)
                most = f, leaf[x] = l;
        }
        if (leaf[x] < 0)
            leaf[x] = nleaves++;
    }
    nleaves = renumber(leaf, h, nleaves, renum);
    for (int pass = 0, moved = 1; pass < MOVE_PASSES && moved; pass++) {
        moved = 0;
        for (int x = 0; x < h; x++) {
            int best = leaf[x];
            double most = fit(m, leaf, x, best, NULL);
            most = most == -INFINITY ? 0 : most; /* (alone: a leaf of its own) */
            for (int l = 0; l <= nleaves; l++) { /* (nleaves: a leaf of its own) */
                double f = l == nleaves ? 0 : fit(m, leaf, x, l, NULL);
                if (l != leaf[x] && f > most)
                    most = f, best = l;
            }
            if (best != leaf[x]) {
                leaf[x] = best, moved = 1;
                nleaves += best == nleaves;
            }
        }
        nleaves = renumber(leaf, h, nleaves, renum);
    }
    for (int x = 0; x < h; x++) {
        int alone = 1, best = leaf[x], slow = 0; /* the best leaf's pairs saying "apart" */
        for (int y = 0; y < h && alone; y++)
            alone = y == x || leaf[y] != leaf[x];
        double most = -INFINITY;
        for (int l = 0; l < nleaves && alone; l++) {
            int apart = 0;
            double f = l == leaf[x] ? -INFINITY : fit(m, leaf, x, l, &apart);
            if (f > most)
                most = f, best = l, slow = apart;
        }
        if (most >= -ALONE && slow <= 1)
            leaf[x] = best;
    }
    return renumber(leaf, h, nleaves, renum);
}

/* The tree as topology.conf text: leaves tacos-leafL (Nodes = their hosts'
 * names), under tacos-root where there are several. */
static char *conf_text(const tacos_probe_record_t *recs, const int *leader, const int *leaf, int h,
                       int nleaves)
{
    size_t room = 64 * (size_t)(nleaves + 1) + (size_t)h * (TACOS_PROBE_NAME + 1), at = 0;
    char *text = malloc(room);
    if (!text)
        return NULL;
    for (int l = 0; l < nleaves; l++) {
        at += (size_t)snprintf(text + at, room - at, "SwitchName=tacos-leaf%d Nodes=", l);
        for (int x = 0, first = 1; x < h; x++)
            if (leaf[x] == l) {
                at += (size_t)snprintf(text + at, room - at, "%s%s", first ? "" : ",",
                                       recs[leader[x]].host);
                first = 0;
            }
        at += (size_t)snprintf(text + at, room - at, "\n");
    }
    if (nleaves > 1)
        at += (size_t)snprintf(text + at, room - at,
                               "SwitchName=tacos-root Switches=tacos-leaf[0-%d]\n", nleaves - 1);
    return text;
}

int tacos_fabric_infer(const tacos_probe_record_t *recs, int n, int me, const tacos_net_comm_t *c,
                       tacos_fabric_conf_t **conf, char **text, tacos_fabric_net_t *f)
{
    double t0 = tacos_fabric_now_us();
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local);
    int *leader = malloc((size_t)n * sizeof *leader), h = 0, rc = TACOS_OK, rounds = 0;
    double *rate = NULL, *share = NULL, *v = NULL, *best = NULL, *weight = NULL, *cut = NULL;
    int *leaf = NULL, *renum = NULL;
    char *made = NULL;
    *conf = NULL;
    memset(f, 0, sizeof *f);
    if (host && local && leader) {
        h = tacos_probe_hosts(recs, n, host, local);
        rate = calloc((size_t)h * (size_t)h, sizeof *rate);
        share = calloc((size_t)h * (size_t)h, sizeof *share);
        v = malloc(4 * (size_t)h * sizeof *v);
        best = calloc((size_t)h, sizeof *best);
        weight = calloc((size_t)h / 2 + 1, sizeof *weight);
        cut = calloc((size_t)h / 2 + 1, sizeof *cut);
        leaf = malloc((size_t)h * sizeof *leaf);
        renum = malloc((2 * (size_t)h + 1) * sizeof *renum);
    }
    /* every rank learns whether any lacks the memory (one returning alone
     * would leave the others in the exchanges) */
    rc = tacos_net_agree_memory(
        c,
        !(host && local && leader && rate && share && v && best && leaf && renum && weight && cut),
        "inferring the switch tree");
    if (rc)
        goto out;
    for (int i = n - 1; i >= 0; i--)
        leader[host[i]] = i;
    int mine = leader[host[me]] == me ? host[me] : -1;
    /* the size: S1 in round 1, then about ROUND_US at the share it showed
     * (round 1 again where that is more), CONFIRM_BYTES once uplinks are
     * full */
    size_t bytes = TACOS_NET_S1_BYTES;
    for (int r = 1, all_slow = 0; r <= h / 2 && all_slow < ALL_SLOW_STOP; r++) {
        if ((rc = ring_round(c, leader, mine, h, r, bytes, v)))
            break;
        rounds++;
        int two_peers = 2 * r != h;
        for (int x = 0; x < h; x++) {
            size_t xy = (size_t)x * (size_t)h + (size_t)((x + r) % h);
            size_t yx = (size_t)((x + r) % h) * (size_t)h + (size_t)x;
            rate[xy] = rate[yx] = pair_rate(v, h, x, r, bytes);
            share[xy] = share[yx] = two_peers ? 2 : 1; /* flows per host: the divisor (below) */
        }
        for (int x = 0; x < h; x++) { /* each host's best: what its flows carried */
            size_t row = (size_t)x * (size_t)h;
            best[x] = fmax(best[x], rate[row + (size_t)((x + r) % h)] +
                                        (two_peers ? rate[row + (size_t)((x - r + h) % h)] : 0));
        }
        memcpy(v, best, (size_t)h * sizeof *v); /* (scratch: the round is read) */
        double port = tacos_fabric_median(v, h);
        if (r == 1 && bytes == TACOS_NET_S1_BYTES) {
            size_t want = tacos_fabric_sized(port / 2 * ROUND_US);
            if (want != bytes) {
                bytes = want;
                memset(best, 0, (size_t)h * sizeof *best);
                r = 0; /* round 1 again at that size */
                continue;
            }
        }
        double now, slow = classify(rate, share, h, r, port, v, &now); /* (v: scratch) */
        all_slow = isinf(now) ? all_slow + 1 : 0;
        if (slow >= CONFIRM_SHARE && bytes > CONFIRM_BYTES)
            bytes = CONFIRM_BYTES;
    }
    if (rc)
        goto out;
    /* a port's share per pair: the hosts' median of their best, over the
     * flows per host of the pair's round */
    memcpy(v, best, (size_t)h * sizeof *v); /* (v: 4h >= h doubles of scratch) */
    double port = tacos_fabric_median(v, h);
    for (int r = 1; r <= h / 2; r++)
        weight[r] = classify(rate, share, h, r, port, v, &cut[r]);
    for (size_t i = 0; i < (size_t)h * (size_t)h; i++)
        share[i] = share[i] > 0 ? port / share[i] : 0;
    rounds_t measured = {rate, share, cut, weight, h};
    int nleaves = find_leaves(&measured, leaf, renum);
    /* the tree as a fabric file: a rank short of memory tells the others
     * (a parse error is the same on every rank) */
    made = conf_text(recs, leader, leaf, h, nleaves);
    rc = made ? tacos_fabric_conf_read_string(made, "the inferred switch tree", conf)
              : TACOS_ERR_NOMEM;
    int short_somewhere =
        tacos_net_agree_memory(c, !made || rc == TACOS_ERR_NOMEM, "inferring the switch tree");
    rc = rc ? rc : short_somewhere;
    if (rc)
        goto out;
    if ((rc = tacos_fabric_net_measure(*conf, recs, n, me, c, f)))
        goto out;
    f->rounds += rounds;
    f->measure_us = tacos_fabric_now_us() - t0;
out:
    if (rc) {
        tacos_fabric_conf_free(*conf);
        *conf = NULL;
        free(made);
        made = NULL;
    }
    if (text)
        *text = made;
    else
        free(made);
    free(host);
    free(local);
    free(leader);
    free(rate);
    free(share);
    free(v);
    free(best);
    free(weight);
    free(cut);
    free(leaf);
    free(renum);
    return rc;
}
