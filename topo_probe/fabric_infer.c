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
 * of m in host order sends 2 min(r, m) flows through its uplink.  A pair is
 * slow where its rate is below UP_LIMITED of a port's share (the hosts'
 * median of the most their two flows carried in any round).  The rounds
 * stop early where ALL_SLOW_STOP rounds in a row had only slow pairs.
 *
 * What a pair says is weighed by its round: the share of the round's pairs
 * that were slow, for a fast pair, and less that for a slow one.  A round
 * that filled no uplink (small r) says nothing: its cross pairs are as fast
 * as the others, and a slow pair there was noise.  Each host, in host
 * order, joins the leaf whose hosts' pairs with it say most where that is
 * not negative (a leaf of its own where none is); then each moves to the
 * leaf that fits it best (or one of its own) until none moves.  Hosts that
 * no uplink limits (not oversubscribed, or too few of a leaf's hosts in the
 * communicator to fill its uplink) may share a leaf: the network carries
 * them as one switch would.  An uplink shows only where it is
 * oversubscribed by clearly more than 1/UP_LIMITED (1.25:1) and its leaf's
 * hosts fill it.
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
/* The size of a round's exchanges: about ROUND_US at a port's share (two
 * flows a host), at least TACOS_NET_S1_BYTES.  Where more flows cross an
 * uplink than it carries, its switch queues what they send faster: on the
 * emulated 16-host tree (queues of 200 KiB) S1 overflowed them in some
 * runs, and TCP waited out its 200 ms retransmission timeout in a round
 * or two; with 32-45 KiB no round stalled, but the times were latency and
 * noise, and the leaves came out wrong in 6 runs of 6. */
#define ROUND_US 7500.0
/* The rounds stop after this many in a row in which every pair was slow
 * (where a leaf's hosts are a run in host order: no leaf is longer than
 * the rounds' r, and no later round meets two hosts of one leaf). */
#define ALL_SLOW_STOP 2
/* A pair slower than this share of a port's share crossed a full uplink
 * (fabric_net.c's threshold). */
#define UP_LIMITED 0.8
/* Passes that move hosts between the leaves grown (each host at most once
 * a pass; they end where none moved). */
#define MOVE_PASSES 4

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

/* The share of round r's measured pairs that were slow: rate times the
 * flows per host (flows[]) below UP_LIMITED of a port's rate. */
static double slow_share(const double *rate, const double *flows, int h, int r, double port)
{
    int slow = 0, pairs = 0;
    for (int x = 0; x < h; x++) {
        int y = (x + r) % h;
        size_t i = (size_t)x * (size_t)h + (size_t)y;
        if ((2 * r == h && y < x) || rate[i] <= 0)
            continue;
        pairs++;
        slow += rate[i] * flows[i] < UP_LIMITED * port;
    }
    return pairs ? (double)slow / pairs : 0;
}

/* The rate (bytes/us) of pair (x, x+r) in round r: both ends' times. */
static double pair_rate(const double *v, int h, int x, int r, size_t bytes)
{
    int y = (x + r) % h;
    double t8 = (v[4 * x] + v[4 * y + 1]) / 2, t = (v[4 * x + 2] + v[4 * y + 3]) / 2;
    return tacos_fabric_rate(bytes, t8, t);
}

/* What pair x, y says of their sharing a leaf: the share of its round's
 * pairs that were slow, for a fast pair, and less that for a slow one (a
 * round without slow pairs filled no uplink: its fast pairs say nothing,
 * and a slow pair there was noise; where every pair was slow, one fast
 * pair is surely under one leaf); unmeasured 0.  weight[r]: round r's
 * share. */
static double evidence(const double *rate, const double *share, const double *weight, int h, int x,
                       int y)
{
    size_t i = (size_t)x * (size_t)h + (size_t)y;
    if (x == y || rate[i] <= 0)
        return 0;
    int d = abs(x - y);
    double w = weight[d < h - d ? d : h - d];
    return rate[i] < UP_LIMITED * share[i] ? -w : w;
}

/* What host x's pairs with the hosts of leaf l (but x) say together;
 * -INFINITY where none was measured (nothing says x belongs there). */
static double fit(const double *rate, const double *share, const double *weight, const int *leaf,
                  int h, int x, int l)
{
    double sum = 0;
    int measured = 0;
    for (int y = 0; y < h; y++)
        if (leaf[y] == l && y != x && rate[(size_t)x * (size_t)h + (size_t)y] > 0) {
            sum += evidence(rate, share, weight, h, x, y);
            measured++;
        }
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

/* The leaves from the pairs' rates (rate[x*h+y], 0 unmeasured): each host
 * in host order joins the leaf it fits best where that fit is not negative
 * (the first such; a leaf of its own where none), then each moves to the
 * leaf it fits best (or one of its own, fit 0) until none moves.  leaf[x]
 * numbered from 0 in order of first host; returns how many (renum: room
 * for 2h + 1). */
static int find_leaves(const double *rate, const double *share, const double *weight, int h,
                       int *leaf, int *renum)
{
    int nleaves = 0;
    for (int x = 0; x < h; x++)
        leaf[x] = -1;
    for (int x = 0; x < h; x++) {
        double most = -INFINITY;
        for (int l = 0; l < nleaves; l++) {
            double f = fit(rate, share, weight, leaf, h, x, l);
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
            double most = fit(rate, share, weight, leaf, h, x, best);
            most = most == -INFINITY ? 0 : most; /* (alone: a leaf of its own) */
            for (int l = 0; l <= nleaves; l++) { /* (nleaves: a leaf of its own) */
                double f = l == nleaves ? 0 : fit(rate, share, weight, leaf, h, x, l);
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
    return nleaves;
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
    double *rate = NULL, *share = NULL, *v = NULL, *best = NULL, *weight = NULL;
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
        leaf = malloc((size_t)h * sizeof *leaf);
        renum = malloc((2 * (size_t)h + 1) * sizeof *renum);
    }
    /* every rank learns whether any lacks the memory (one returning alone
     * would leave the others in the exchanges) */
    rc = tacos_net_agree_memory(c, !(host && local && leader && rate && share && v && best &&
                                     leaf && renum && weight),
                                "inferring the switch tree");
    if (rc)
        goto out;
    for (int i = n - 1; i >= 0; i--)
        leader[host[i]] = i;
    int mine = leader[host[me]] == me ? host[me] : -1;
    /* the size: S1 in round 1, then about ROUND_US at the share it showed
     * (round 1 again where that is more) */
    size_t bytes = TACOS_NET_S1_BYTES;
    for (int r = 1, all_slow = 0; r <= h / 2 && all_slow < ALL_SLOW_STOP; r++) {
        if ((rc = ring_round(c, leader, mine, h, r, bytes, v)))
            break;
        rounds++;
        int two = 2 * r != h;
        for (int x = 0; x < h; x++) {
            size_t xy = (size_t)x * (size_t)h + (size_t)((x + r) % h);
            size_t yx = (size_t)((x + r) % h) * (size_t)h + (size_t)x;
            rate[xy] = rate[yx] = pair_rate(v, h, x, r, bytes);
            share[xy] = share[yx] = two ? 2 : 1; /* flows per host: the divisor (below) */
        }
        for (int x = 0; x < h; x++) { /* each host's best: what its flows carried */
            size_t row = (size_t)x * (size_t)h;
            best[x] = fmax(best[x], rate[row + (size_t)((x + r) % h)] +
                                        (two ? rate[row + (size_t)((x - r + h) % h)] : 0));
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
        all_slow = slow_share(rate, share, h, r, port) == 1 ? all_slow + 1 : 0;
    }
    if (rc)
        goto out;
    /* a port's share per pair: the hosts' median of their best, over the
     * flows per host of the pair's round */
    double *m = v; /* (4h >= h doubles of scratch) */
    memcpy(m, best, (size_t)h * sizeof *m);
    double port = tacos_fabric_median(m, h);
    for (int r = 1; r <= h / 2; r++)
        weight[r] = slow_share(rate, share, h, r, port);
    for (size_t i = 0; i < (size_t)h * (size_t)h; i++)
        share[i] = share[i] > 0 ? port / share[i] : 0;
    int nleaves = find_leaves(rate, share, weight, h, leaf, renum);
    /* the tree as a fabric file: a rank short of memory tells the others
     * (a parse error is the same on every rank) */
    made = conf_text(recs, leader, leaf, h, nleaves);
    rc = made ? tacos_fabric_conf_read_string(made, "the inferred switch tree", conf)
              : TACOS_ERR_NOMEM;
    int short_somewhere = tacos_net_agree_memory(c, !made || rc == TACOS_ERR_NOMEM,
                                                 "inferring the switch tree");
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
    free(leaf);
    free(renum);
    return rc;
}
