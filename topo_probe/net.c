/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network between hosts, measured: one rank per host (its first rank)
 * exchanges messages with every other host, and the links of the model are
 * derived from the times.  No MPI here: the caller passes an exchange and a
 * max-allreduce (tacos_net_comm_t).
 *
 * 1. Pairs: in H-1 rounds (H for odd H) every host exchanges with one
 *    partner (a round-robin tournament), 8 B for the latency and, once
 *    every pair of the round is through those, S1 bytes both ways at once
 *    (above Open MPI's TCP eager limit, as the chunks of
 *    the schedules that cross hosts are); then, in a second tournament, a
 *    size that takes about SECOND_US at the rate S1 showed (at least 2 S1;
 *    none where S1 took about SECOND_US already), once, and again in a
 *    third where it came out stalled.  The latency is the intercept
 *    of the line through the two sizes, within a few 8-byte times (the
 *    8-byte time with one size); the bandwidth what the longer size's time
 *    leaves after that latency.  A pair that a relay could carry clearly
 *    faster than it measured (ALONE_GAIN) may have shared a link with
 *    another pair of its round (a ring of 4 equal links: h0-h2 through h1
 *    and h1-h3 through h0 share h0-h1, and came out at half its rate, so
 *    that the tests below, sized from that rate, saw nothing shared): it
 *    exchanges every size again, in rounds that keep apart the pairs whose
 *    ends and relays meet, and keeps the shorter times.
 * 2. Shared paths: a pair {a,b} whose rate a relay c could also carry
 *    (both a-c and c-b at least about as fast) may be routed through c
 *    rather than be a link of its own.  Each host of such a triple
 *    exchanges with the other two at once (three tests), each exchange
 *    sized to take about TEST_US alone; c's test is the control (its
 *    exchanges run on separate legs either way: what slows it is its
 *    host doing two at once, which a's and b's tests are divided by).  On
 *    a route a-c-b, a's two exchanges share the leg a-c and b's share c-b
 *    (the one whose leg is the bottleneck ends about 2x later; over a
 *    faster leg the exchange with c loses what the path takes of the leg:
 *    1.25x on 400 and 100 Mbit/s legs), while c's run on separate legs.
 *    The rates measured in step 1 predict the three tests' slowdowns for "{a,b} is a path
 *    through c" and for "every pair is a link", and a leg's exchange in its
 *    end's test against the same exchange in c's; {a,b} is taken for a
 *    path (no link in the model) when the path explains the tests better
 *    by a margin, strongest evidence first.  A path's leg may be a path
 *    itself (routes of more than two hops: two triangles joined by one
 *    link) where the route visits each host once and the tests show it
 *    through each host it crosses.  A triple's screens run first:
 *    the fewest of its tests that each path it could hold slows about 2x
 *    (the test at the path's bottleneck leg); if none is slowed, its other
 *    tests do not run (pairs4: 4 tests of 12), nor any where the screens,
 *    spread over the hosts, show every host's port limiting it (switch4:
 *    8 tests of 12; see mark).  The tests of the paths'
 *    ends (and their controls where slowed), and of the triples whose pair
 *    only the control kept from being a path (unless every test of
 *    each of the triple's hosts was slowed: their ports, not noise;
 *    switch4), are run again and the pairs classified once more on the
 *    shorter times.  The screens and the tests they let through run in
 *    steps where triples without a host in common test at once (6 hosts
 *    joined by one: 60 tests in 30 steps); the reruns one at a time.
 * 3. Classes: links whose bandwidths lie within CLASS_SPREAD of each other
 *    are one class and take its mean latency and bandwidth.  What tells
 *    them apart is the measurement's noise, and the synthesizer takes
 *    every difference for real: on pairs4 a cross link measured 1 % faster
 *    than its twin made the Gather greedy relay a host's blocks to that
 *    twin over their fast link, where they queued behind its own (8.8 ms
 *    modelled at 512 KiB against 6.9 ms on the true links; 6.6 ms with
 *    classes).
 *
 * Every exchange but the 8-byte ones is timed from an untimed 8-byte
 * exchange with the same peers before it, so no peer's data can arrive
 * before the clock starts (see exchange()).  The callers' exchange and
 * max wait with pauses (tacos_net_idle), leaving the cores to the ranks
 * whose messages are in flight.
 *
 * Every rank computes the same model from the same numbers: the times are
 * combined with the max-allreduce after each phase.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "probe_internal.h"

#define SMALL_BYTES 8
#define SMALL_REPS 5
/* A pair's second size takes about SECOND_US.  A pair whose S1 exchange
 * took SKIP_SECOND of that already has no second size: the S1 time is its
 * measurement (on the testbed, links of 100 Mbit/s and below: 10.5 ms; a
 * 400 Mbit/s pair whose one S1 exchange stalled for a few milliseconds
 * still gets its second size).  The second size runs once, and once more
 * where its rate came out below SECOND_STALL of the rate S1 showed (a
 * stall: less of the longer size's time is latency), the shorter kept.
 * On the testbed with jumbo frames (tests/testbed/testbed.sh) one 10 ms exchange
 * of a 400 Mbit/s link came out below 85 % of its rate in 4 of 40, the
 * shorter of two in 0 of 40; always twice, ring4 took 105 ms, once and
 * again where stalled 95 (about 1 run in 3 runs it again: S1's rate is
 * noisy too, the second size's 0.86-1.05 of it), links 0.90-1.06 of their
 * rate (always twice: 0.93-1.06), right in 18 of 20 runs both (ring4 with
 * 2 ranks per host: 38 and 45 of 60; bench_measure.sh, 2026-11-26).  With
 * 1500-byte frames the 2 cores carried every packet of four emulated hosts
 * and limited the links, not the shapers: a single 10 ms exchange came out
 * low in 14 of 20 and 20 ms three times over (the earlier setting, 3.5x
 * the cost) was needed. */
#define SECOND_US 10000.0
#define SECOND_STALL 0.9
#define SKIP_SECOND 0.9
/* Each exchange of a test alone takes about TEST_US.  With the screens,
 * 4 KiB steps, the reruns as they are and the second size twice, ring4
 * took 104 ms (median) with 3 ms, right in 30 of 30 runs, and 95 ms with
 * 2.5 ms, right in 5 of 10; with 4 ms 118 ms, while the reruns still kept
 * nothing (bench_measure.sh, 2026-11-26). */
#define TEST_US 3000.0
#define TEST_MIN_BYTES (32 * 1024)
#define RELAY_SLACK 0.85 /* a relay path carries the rate if both legs reach this share */
/* A pair that a relay could carry this many times faster than it measured
 * is measured again apart from the pairs that could share its links (two
 * pairs sharing a link unfairly left one at 2/3 of its rate). */
#define ALONE_GAIN 1.25
/* A path must explain the tests better than "all links" by at least one
 * test slowed 1.5x (squared log ratios).  Noise only adds time, so the
 * tests of the paths' ends (and of those the control kept from being one)
 * are run again and the shorter time kept: a rank held up on the busy
 * 2-core machine slows a test as a shared link would, but seldom twice.
 * Each test runs once before that: since the waits pause (tacos_net_idle)
 * a second run of every test found no more paths right (ring4: 20 of 20
 * runs both paths through the right relay either way) and cost 140 ms
 * (tests of 6 ms, 1500-byte frames). */
#define PATH_EVIDENCE 0.1644 /* log(1.5)^2 */
#define FLOW_WEIGHT 0.25 /* an exchange's own time against the end of both */
#define LEG_WEIGHT 1.0   /* a leg's two exchanges against each other */
#define TEST_REPS 1
/* A triple's screens (tests that each path the triple could hold slows at
 * least SCREEN_PREDICT, one at least) below SCREEN_SLOW rule out every
 * path: its other tests do not run.  Noise only adds time, and so only
 * lets more tests through. */
#define SCREEN_PREDICT 1.6
#define SCREEN_SLOW 1.25
/* A host whose tests (two or more) took this many times their time alone
 * on average, each of them slowed (SCREEN_SLOW), sends all its exchanges
 * through one port or link (port_limited): a triple of such hosts is not
 * run again to confirm its control.  Between SCREEN_SLOW and what a shared
 * port gives: on switch4 every test took 1.61-1.99x in 7 runs of one 2-core
 * VM, and with every test held to 1.6 that VM found no switch in 9 runs in
 * a row (2026-12-02); held to 1.45 a CI machine found none in 3 */
#define PORT_SLOW 1.35
/* Tests for shared paths grow as H^3 at worst.  Tests of triples without
 * a host in common run at once (the screens and the tests they let
 * through; the confirming reruns, which decide, one at a time): H^3 tests
 * in about H^2 steps.  Where more than MAX_TESTS are planned, or all of
 * them, placed together, need more than MAX_STEPS steps (about 7 hosts: 7
 * joined by one, 105 tests in 54 steps; 8 such, 168 in 84), every measured
 * pair becomes a link (a run takes more steps: the screens are placed
 * apart from the tests they let through, and the reruns take one each).  Two
 * such triples' tests can still meet on a link where a pair of one is
 * routed through a host of the other: that only adds time, which the
 * screens read as a possible path (more tests run), and which the reruns,
 * alone, take back from the paths' ends, their controls where slowed, and
 * the controls that hid a path (but where all three hosts' ports limit
 * them: port_limited).
 * One test per host,
 * each host exchanging with every other at once (H tests; tried
 * 2026-11-26 with a model of every flow of such a test), cannot tell
 * ring4 from its relabelling: links h0-h1, h0-h2, h2-h3, h1-h3 with
 * h0-h3 through h1 and h1-h2 through h0 slow the same exchanges by the
 * same factors in all four tests, and a schedule for it would overload
 * h0-h1.  Two exchanges at a time keep a path's legs apart. */
#define TACOS_NET_MAX_TESTS 256
#define TACOS_NET_MAX_STEPS 64
/* Links this close in bandwidth are one class: the accuracy the
 * measurement is held to (the emulated rate within 15 %). */
#define CLASS_SPREAD 0.15

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void tacos_net_idle(double waited_us)
{
    if (waited_us >= TACOS_NET_SPIN_US) {
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
    }
}

int tacos_net_rounds(int nhosts) { return nhosts < 2 ? 0 : nhosts % 2 ? nhosts : nhosts - 1; }

/* The circle method: host m-1 (a bye when H is odd) stays, the others
 * rotate; in round r, m-1 meets r and x meets 2r-x mod m-1. */
int tacos_net_partner(int nhosts, int round, int host)
{
    int m = nhosts + (nhosts & 1), p;
    if (host == m - 1)
        p = round;
    else if (host == round)
        p = m - 1;
    else
        p = ((2 * round - host) % (m - 1) + (m - 1)) % (m - 1);
    return p < nhosts ? p : -1;
}

void tacos_net_free(tacos_net_t *net)
{
    if (!net)
        return;
    free(net->lat_us);
    free(net->bw_gbps);
    free(net->t_us);
    free(net->routed);
    free(net->s2_bytes);
    free(net->port_slow);
    memset(net, 0, sizeof *net);
}

int tacos_net_alloc(tacos_net_t *net, int nhosts)
{
    size_t hh = (size_t)nhosts * (size_t)nhosts;
    memset(net, 0, sizeof *net);
    net->nhosts = nhosts;
    net->lat_us = calloc(hh ? hh : 1, sizeof *net->lat_us);
    net->bw_gbps = calloc(hh ? hh : 1, sizeof *net->bw_gbps);
    net->t_us = calloc(3 * (hh ? hh : 1), sizeof *net->t_us);
    net->routed = calloc(hh ? hh : 1, sizeof *net->routed);
    net->s2_bytes = calloc(hh ? hh : 1, sizeof *net->s2_bytes);
    net->port_slow = calloc(nhosts > 0 ? 2 * (size_t)nhosts : 1, sizeof *net->port_slow);
    if (!net->lat_us || !net->bw_gbps || !net->t_us || !net->routed || !net->s2_bytes ||
        !net->port_slow) {
        tacos_net_free(net);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory for %d hosts' measurements", nhosts);
    }
    return TACOS_OK;
}

/* t_us[3*(a*H+b) + k]: k = 0 the 8-byte exchange, 1 and 2 the S1 and
 * s2_bytes[a*H+b] exchanges, as host a timed them with b (0: not measured). */
static double *times(const tacos_net_t *net, int a, int b)
{
    return &net->t_us[3 * ((size_t)a * (size_t)net->nhosts + (size_t)b)];
}

/* The latency fitted is at most this many 8-byte exchange times. */
#define LAT_CAP 4.0

int tacos_net_fit(tacos_net_t *net, size_t s1)
{
    int h = net->nhosts;
    for (int a = 0; a < h; a++)
        for (int b = 0; b < h; b++) {
            size_t ab = (size_t)a * (size_t)h + (size_t)b;
            net->lat_us[ab] = net->bw_gbps[ab] = 0;
            if (a == b)
                continue;
            /* both ends timed the same exchanges: average their views */
            double t[3], s2 = net->s2_bytes[ab];
            for (int k = 0; k < 3; k++)
                t[k] = (times(net, a, b)[k] + times(net, b, a)[k]) / 2;
            if (!(t[0] > 0 && t[1] > t[0] && t[2] > t[0]))
                return tacos_error(TACOS_ERR_INVALID, "hosts %d and %d were not measured", a, b);
            t[1] -= t[0], t[2] -= t[0]; /* timed from their token: an 8-byte exchange */
            if (!(s2 >= (double)s1))
                return tacos_error(TACOS_ERR_INVALID, "hosts %d and %d: no second size", a, b);
            /* one size (S1 took long enough): the latency is the 8-byte time */
            double bytes_per_us = s2 > (double)s1 && t[2] > t[1] ? (s2 - (double)s1) / (t[2] - t[1])
                                                                 : s2 / t[2];
            /* the intercept, within [t0, LAT_CAP * t0]: more than a few 8-byte
             * times is the queueing of the large exchanges (TCP's start, a
             * shaper's burst), which a message of a schedule's chunk size
             * does not see the way the second size does */
            double lat = t[2] - s2 / bytes_per_us;
            lat = lat < t[0] ? t[0] : lat > LAT_CAP * t[0] ? LAT_CAP * t[0] : lat;
            /* the bandwidth through the second size's time with that latency:
             * the longest exchange is the surest; a slope alone was once 10x
             * too high (ring4: 0.118 GB/s for 0.012) after an S1 exchange
             * stalled */
            net->lat_us[ab] = lat;
            net->bw_gbps[ab] = t[2] > lat ? s2 / (t[2] - lat) / 1e3 : bytes_per_us / 1e3;
        }
    return TACOS_OK;
}

static double bw(const tacos_net_t *net, int a, int b)
{
    return net->bw_gbps[(size_t)a * (size_t)net->nhosts + (size_t)b];
}

/* Rounded down to 4 KiB, within [lo, TACOS_NET_MAX_BYTES].  (16 KiB made
 * one slow pair's test 32 KiB and its twin's 48 KiB at about 12 MB/s: a
 * shared leg's two exchanges then ended 1.5x and 1x their times alone, and
 * ring4 lost a path that way.) */
static size_t sized(double bytes, size_t lo)
{
    size_t b = bytes >= TACOS_NET_MAX_BYTES ? TACOS_NET_MAX_BYTES : (size_t)bytes & ~(size_t)4095;
    return b > lo ? b : lo;
}

/* A test's sizes, x's with y and with z: what each pair carries alone in
 * about TEST_US, rounded down to 4 KiB (the same on every rank: from the
 * agreed fit).  Equal times, not equal sizes: an exchange over a fast leg
 * that a path also crosses then lasts as long as the path's and ends
 * measurably later (1.25x on 400 and 100 Mbit/s legs); of equal sizes it
 * ran a quarter of the test, a few milliseconds, and its 4/3 was lost in
 * the noise. */
static void test_bytes(const tacos_net_t *net, const tacos_net_test_t *q, size_t out[2])
{
    out[0] = sized(bw(net, q->x, q->y) * 1e3 * TEST_US, TEST_MIN_BYTES);
    out[1] = sized(bw(net, q->x, q->z) * 1e3 * TEST_US, TEST_MIN_BYTES);
}

/* Test (x; y,z) with y < z, or -1. */
static int find_test(const tacos_net_test_t *v, int n, int x, int y, int z)
{
    if (y > z) {
        int s = y;
        y = z;
        z = s;
    }
    for (int i = 0; i < n; i++)
        if (v[i].x == x && v[i].y == y && v[i].z == z)
            return i;
    return -1;
}

/* Could a path a-c-b carry `share` of what {a,b} measured (both legs that
 * fast)?  (The fit is symmetric.) */
static int relay_carries(const tacos_net_t *net, int a, int b, int c, double share)
{
    double need = share * bw(net, a, b);
    return c != a && c != b && bw(net, a, c) >= need && bw(net, c, b) >= need;
}

/* Could a path a-c-b carry what {a,b} measured? */
static int relay_plausible(const tacos_net_t *net, int a, int b, int c)
{
    return relay_carries(net, a, b, c, RELAY_SLACK);
}

static void predict(const tacos_net_t *net, const tacos_net_test_t *t, int a, int b, int c,
                    double p[3]);

/* Adds test (x; y,z) unless planned already. */
static int add_test(tacos_net_test_t **v, size_t *cap, int *n, int x, int y, int z)
{
    if (find_test(*v, *n, x, y, z) >= 0)
        return TACOS_OK;
    tacos_net_test_t *g = tacos_grow(*v, cap, (size_t)*n, sizeof **v, 16);
    if (!g)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory planning tests");
    *v = g;
    g[(*n)++] = (tacos_net_test_t){x, y < z ? y : z, y < z ? z : y, 0, 0, 0, 0, 0};
    return TACOS_OK;
}

/* The tests of test i's triple, x's (i) first, y's, z's (tacos_net_tests
 * plans all three of a triple, so none is -1). */
static void triple_of(const tacos_net_test_t *v, int n, int i, int j[3])
{
    const int t3[3] = {v[i].x, v[i].y, v[i].z};
    for (int s = 0; s < 3; s++)
        j[s] = find_test(v, n, t3[s], t3[(s + 1) % 3], t3[(s + 2) % 3]);
}

/* The screens of the triple of tests j[3]: the fewest of them such that
 * every path the triple could hold slows one SCREEN_PREDICT or more (its
 * bottleneck leg shared: 2x); the others run only if a screen is slowed.
 * On ring4 and pairs4 one test screens each triple, on 4 hosts with equal
 * links two do; where a path slows no test that much (a slow pair whose
 * relay has legs 4x faster: 1.25x), all three are screens and run.  Of
 * the fewest that do, those whose hosts screened least so far (screens[],
 * per host; counted here): spread over the hosts, the screens alone can
 * show every host's port limiting it (mark: on switch4 each host screens
 * two triples, and no other test runs). */
static void plan_screens(const tacos_net_t *net, tacos_net_test_t *v, const int j[3], int *screens)
{
    const int t3[3] = {v[j[0]].x, v[j[0]].y, v[j[0]].z};
    int covers[3] = {0, 0, 0}, all = 0; /* bit k: the path without t3[k], through it */
    for (int k = 0; k < 3; k++) {
        int a = t3[(k + 1) % 3], b = t3[(k + 2) % 3];
        if (!relay_plausible(net, a, b, t3[k]))
            continue;
        all |= 1 << k;
        for (int s = 0; s < 3; s++) {
            double slow[3];
            predict(net, &v[j[s]], a, b, t3[k], slow);
            covers[s] |= (slow[0] >= SCREEN_PREDICT) << k;
        }
    }
    /* the subsets of {0,1,2} by size: bit s = j[s] screens */
    static const int subsets[] = {1, 2, 4, 3, 5, 6, 7};
    int pick = 7, size = 3, load = 0;
    for (size_t m = 0; m < sizeof subsets / sizeof *subsets; m++) {
        int got = 0, n = 0, l = 0;
        for (int s = 0; s < 3; s++)
            if (subsets[m] >> s & 1) {
                got |= covers[s];
                n++;
                l += screens[t3[s]];
            }
        if ((got & all) == all && (n < size || (n == size && l < load)))
            pick = subsets[m], size = n, load = l;
    }
    for (int s = 0; s < 3; s++) {
        v[j[s]].screen = pick >> s & 1;
        screens[t3[s]] += pick >> s & 1;
    }
}

int tacos_net_tests(const tacos_net_t *net, tacos_net_test_t **out, int *nout)
{
    int h = net->nhosts, n = 0, rc = TACOS_OK;
    size_t cap = 0;
    tacos_net_test_t *v = NULL;
    /* all three tests of a triple where one pair could be a path through
     * the third: which of the three hosts stays quiet tells the relay */
    for (int a = 0; a < h && !rc; a++)
        for (int b = a + 1; b < h && !rc; b++)
            for (int c = 0; c < h && !rc; c++)
                if (relay_plausible(net, a, b, c) && !(rc = add_test(&v, &cap, &n, a, b, c)) &&
                    !(rc = add_test(&v, &cap, &n, b, a, c)))
                    rc = add_test(&v, &cap, &n, c, a, b);
    if (rc) {
        free(v);
        return rc;
    }
    int *screens = calloc((size_t)(h ? h : 1), sizeof *screens);
    if (!screens) {
        free(v);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory planning tests of %d hosts", h);
    }
    for (int i = 0; i < n; i++) {
        int j[3];
        triple_of(v, n, i, j);
        if (i < j[1] && i < j[2]) /* each triple once (j[0] is i) */
            plan_screens(net, v, j, screens);
    }
    free(screens);
    *out = v;
    *nout = n;
    return TACOS_OK;
}

/* Does the route of {x,y} cross the pair {a,b}: is it {a,b}, or does one
 * of its legs' routes cross it?  (Routes visit each host once: may_route.) */
static int route_crosses(const unsigned char *routed, int h, int x, int y, int a, int b)
{
    if ((x == a && y == b) || (x == b && y == a))
        return 1;
    int via = routed[(size_t)x * h + y] - 1;
    return via >= 0 &&
           (route_crosses(routed, h, x, via, a, b) || route_crosses(routed, h, via, y, a, b));
}

/* Does the route of {x,y} pass host v (an end, or a relay of a leg)? */
static int route_visits(const unsigned char *routed, int h, int x, int y, int v)
{
    int via = routed[(size_t)x * h + y] - 1;
    return v == x || v == y ||
           (via >= 0 && (route_visits(routed, h, x, via, v) || route_visits(routed, h, via, y, v)));
}

/* May {a,b}, not yet a path, become one through c?  Only where the route
 * a..c..b visits each host once: the legs' routes meet at c alone (b not
 * on a..c, a not on c..b).  So no pair's route ever crosses that pair
 * again (routes form no loop, and route_crosses ends). */
static int may_route(const unsigned char *routed, int h, int a, int b, int c)
{
    if (routed[(size_t)a * h + b])
        return 0;
    for (int v = 0; v < h; v++)
        if (v != c && route_visits(routed, h, a, c, v) && route_visits(routed, h, c, b, v))
            return 0;
    return !route_visits(routed, h, a, c, b) && !route_visits(routed, h, c, b, a);
}

/* Two flows that carry bytes[i] at rate[i] alone start together through
 * one link of capacity cap (max-min fair while both run, each held to its
 * own rate; the one left alone goes back to its rate): when each ends. */
static void share_link(double cap, const double *bytes, const double *rate, double *end)
{
    double r[2] = {cap / 2, cap / 2};
    if (rate[0] + rate[1] <= cap)
        r[0] = rate[0], r[1] = rate[1];
    else if (rate[0] <= cap / 2)
        r[0] = rate[0], r[1] = cap - rate[0];
    else if (rate[1] <= cap / 2)
        r[1] = rate[1], r[0] = cap - rate[1];
    int first = bytes[0] / r[0] <= bytes[1] / r[1] ? 0 : 1, other = 1 - first;
    end[first] = bytes[first] / r[first];
    end[other] = end[first] + (bytes[other] - r[other] * end[first]) / rate[other];
}

static double log_error(double measured, double predicted)
{
    /* noise only adds time: faster than alone counts as not slowed */
    double l = log(fmax(measured, 1) / predicted);
    return l * l;
}

/* What "{a,b} is a path through c" predicts of test t (c < 0: every pair
 * is a link, nothing slows down): p[0] the end of both exchanges, p[1] and
 * p[2] those with y and z, each over its time alone.  On the path a-c-b,
 * a's exchanges with b and c share the leg a-c: the later of the two ends
 * when the leg has carried both, or later where the path's slower leg
 * holds its exchange back (2x when a-c is that leg; 1.25x over a
 * 400 Mbit/s leg beside a 100 one: the exchange with c, as long alone as
 * the other, gets 3/4 of the leg while the path runs).  Likewise b's share
 * c-b; c's two run on separate legs. */
static void predict(const tacos_net_t *net, const tacos_net_test_t *t, int a, int b, int c,
                    double p[3])
{
    p[0] = p[1] = p[2] = 1;
    if (c < 0 || t->x == c)
        return;
    /* o: the path's other end; the path's rate is its slower leg's, so
     * that two models of one triple that share the same slow leg differ
     * only where a leg is shared, not in their rates' noise */
    int x = t->x, o = x == a ? b : a, yo = t->y == o;
    size_t sz[2];
    test_bytes(net, t, sz);
    double leg = bw(net, x, c), bytes[2] = {(double)sz[!yo], (double)sz[yo]};
    double rate[2] = {fmin(leg, bw(net, c, o)), leg}, done[2]; /* [0]: with o, [1]: with c */
    share_link(leg, bytes, rate, done);
    double alone[2] = {bytes[0] / rate[0], bytes[1] / rate[1]};
    p[0] = fmax(done[0], done[1]) / fmax(alone[0], alone[1]);
    p[1] = done[!yo] / alone[!yo];
    p[2] = done[yo] / alone[yo];
}

/* How far test t is from what the model predicts.  The end is the main
 * term: however unfairly two flows share a link, both are through when it
 * has carried both.  Each exchange's own time counts less (FLOW_WEIGHT). */
static double test_error(const tacos_net_t *net, const tacos_net_test_t *t, int a, int b, int c)
{
    double p[3];
    predict(net, t, a, b, c, p);
    return log_error(t->slow, p[0]) +
           FLOW_WEIGHT * (log_error(t->slow_y, p[1]) + log_error(t->slow_z, p[2]));
}

/* The slowdown test t measured (or the model predicted, p) of x's exchange
 * with peer. */
static double of_peer(const tacos_net_test_t *t, const double *p, int peer)
{
    return t->y == peer ? p[1] : p[2];
}

/* How far the leg x-c's two exchanges (in x's test and in c's) are apart
 * against what the model predicts (c < 0: not at all).  The two exchange
 * the same bytes between the same hosts, so their ratio does not depend on
 * the fitted rate (a fast rate fitted 25 % low hid the 1.25x of a leg
 * shared with a path) nor on a machine slow for a while.  Only over a leg
 * at least twice as fast as the path's other: there the path's flow is
 * held to the other leg's rate and leaves the rest to the exchange with
 * the relay.  Where the two compete for the leg (its bottleneck, or legs
 * about as fast: 6 hosts joined by one host at 100 Mbit/s) TCP shares it
 * unfairly, the exchange with the relay ending first, at 0.8x its time
 * alone, where the model has 2x: a fast leg measured 2 % faster than the
 * other hid 9 of 10 such paths. */
static double leg_error(const tacos_net_t *net, const tacos_net_test_t *tx,
                        const tacos_net_test_t *tc, int a, int b, int c, int x, int relay)
{
    int o = x == a ? b : a;
    if (bw(net, x, relay) < 2 * bw(net, relay, o))
        return 0;
    double px[3], pc[3];
    const double mx[3] = {tx->slow, tx->slow_y, tx->slow_z};
    const double mc[3] = {tc->slow, tc->slow_y, tc->slow_z};
    predict(net, tx, a, b, c, px);
    predict(net, tc, a, b, c, pc);
    double l = log(of_peer(tx, mx, relay) / of_peer(tc, mc, x)) -
               log(of_peer(tx, px, relay) / of_peer(tc, pc, x));
    return l * l;
}

/* The evidence that {a,b} is a path through c: how much better that model
 * explains the triple's three tests than "all links", and the legs' pairs
 * of exchanges (LEG_WEIGHT); -1 when a test is missing.  With `control`,
 * a's and b's tests are first divided by c's slowdown. */
static double path_evidence(const tacos_net_t *net, const tacos_net_test_t *tests, int ntests,
                            int a, int b, int c, int control)
{
    const int xyz[3][3] = {{a, b, c}, {b, a, c}, {c, a, b}};
    const tacos_net_test_t *t[3];
    double gain = 0;
    for (int k = 0; k < 3; k++) {
        int i = find_test(tests, ntests, xyz[k][0], xyz[k][1], xyz[k][2]);
        if (i < 0 || !(tests[i].slow > 0)) /* not planned, or not run: screened out */
            return -1;
        t[k] = &tests[i];
    }
    /* c's test is the control: both models have its exchanges on separate
     * legs, so what slows it is a host doing two exchanges at once, which
     * slows a's and b's tests too.  (The end of both, not the less slowed
     * exchange: a CPU-bound host slows its exchange over a fast leg, not
     * the one a slow link holds back; with the less slowed one, ring4 with
     * 2 ranks per host in 999-byte pieces took a link for a path in 6 of
     * 6 runs, with the end in 1 of 4.)  On the testbed's triangle in
     * 999-byte pieces (the exchanges CPU-bound on 2 busy cores) h1's test
     * ran 2.1x its time alone and h0's, the relay's, 1.4x: without the
     * control h1-h2 became a path through h0 in 3 of 16 runs, with it in
     * none of 12; false paths' evidence on ring4 and star3 fell from
     * 0.22-0.53 to below 0.15, true paths' stayed 0.36-1.09.  It leans
     * towards "link": a path whose relay's test was slowed (1.36x or more
     * on equal legs: noise, too) is hidden, so its triple runs again
     * (confirm), and noise seldom strikes twice. */
    double o = control ? fmax(1, t[2]->slow) : 1;
    for (int k = 0; k < 2; k++) {
        tacos_net_test_t q = *t[k];
        q.slow /= o, q.slow_y /= o, q.slow_z /= o;
        gain += test_error(net, &q, a, b, -1) - test_error(net, &q, a, b, c);
    }
    for (int k = 0; k < 2; k++)
        gain += LEG_WEIGHT * (leg_error(net, t[k], t[2], a, b, -1, xyz[k][0], c) -
                              leg_error(net, t[k], t[2], a, b, c, xyz[k][0], c));
    return gain;
}

/* Does the route of {x,y} look like a path through every host it
 * crosses (path_evidence through each)?  A route of more than two hops
 * slows the tests of each of its hosts' triples as one of two does (a
 * route a-c-d-b: a's exchanges with b and with c share a-c, b's with a
 * and with c share b-d), so a pair is a path through a leg that is itself
 * a path only where its tests say so through that leg's relay too. */
static int route_seen(const tacos_net_t *net, const tacos_net_test_t *tests, int ntests, int x,
                      int y, int at_x, int at_y)
{
    int h = net->nhosts, via = net->routed[(size_t)at_x * h + at_y] - 1;
    if (via < 0)
        return 1;
    if (path_evidence(net, tests, ntests, x, y, via, 1) < PATH_EVIDENCE)
        return 0;
    return route_seen(net, tests, ntests, x, y, at_x, via) &&
           route_seen(net, tests, ntests, x, y, via, at_y);
}

/* Would every route be seen (route_seen) with {a,b} a path through c?
 * The routes that cross {a,b} are checked; {a,b}'s own through c is. */
static int routes_seen_with(tacos_net_t *net, const tacos_net_test_t *tests, int ntests, int a,
                            int b, int c)
{
    int h = net->nhosts, seen = 1;
    unsigned char *ab = &net->routed[(size_t)a * h + b], *ba = &net->routed[(size_t)b * h + a];
    *ab = *ba = (unsigned char)(c + 1);
    for (int x = 0; x < h && seen; x++)
        for (int y = x + 1; y < h && seen; y++)
            if (net->routed[(size_t)x * h + y] && route_crosses(net->routed, h, x, y, a, b))
                seen = route_seen(net, tests, ntests, x, y, x, y);
    *ab = *ba = 0;
    return seen;
}

/* Host c's tests' least slowdown (s[0]) and their mean (s[1]), where two
 * or more ran (else both 0).  Its port limits it (port_limited) where every
 * test was slowed (SCREEN_SLOW) and they were PORT_SLOW on average: hosts on
 * one switch are (switch4: every test of every host 1.76-1.96x; each
 * exchange 1.49-1.96x, as TCP shares a port unfairly; on a busy VM single
 * tests 1.30-1.43x among others at 1.6-1.8x), and so is a host on a single
 * link.  A relay's test over separate legs (about 1x) is not, nor a host of
 * a mesh (0.7-1.04x on switch4's VM). */
static void port_slow(const tacos_net_test_t *tests, int ntests, int c, double s[2])
{
    int ran = 0;
    s[0] = INFINITY, s[1] = 0;
    for (int i = 0; i < ntests; i++)
        if (tests[i].x == c && tests[i].slow > 0) {
            s[0] = fmin(s[0], tests[i].slow);
            s[1] += tests[i].slow;
            ran++;
        }
    if (ran < 2)
        s[0] = s[1] = 0;
    else
        s[1] /= ran;
}

static int port_limited(const tacos_net_test_t *tests, int ntests, int c)
{
    double s[2];
    port_slow(tests, ntests, c, s);
    return s[0] >= SCREEN_SLOW && s[1] >= PORT_SLOW;
}

/* Whether every one of h hosts is port_limited (two tests a host: 4 hosts
 * or more): hosts on one switch. */
static int all_port_limited(const tacos_net_test_t *tests, int ntests, int h)
{
    int all = h >= 4;
    for (int x = 0; x < h && all; x++)
        all = port_limited(tests, ntests, x);
    return all;
}

void tacos_net_classify(tacos_net_t *net, tacos_net_test_t *tests, int ntests)
{
    int h = net->nhosts;
    size_t hh = (size_t)h * (size_t)h;
    unsigned char *routed = net->routed;
    memset(routed, 0, hh);
    /* the strongest evidence first.  A path's leg may be a path itself
     * (two triangles joined by one link: h0-h4 through h2, h2-h4 through
     * h3) where the route visits each host once (may_route: so no route
     * loops, every route ends in links, and removing paths never
     * disconnects hosts) and the longer route is seen through each host it
     * crosses (routes_seen_with) */
    for (;;) {
        int best_a = -1, best_b = -1, best_c = -1;
        double best = PATH_EVIDENCE;
        for (int a = 0; a < h; a++)
            for (int b = a + 1; b < h; b++)
                for (int c = 0; c < h; c++) {
                    if (!relay_plausible(net, a, b, c) || !may_route(routed, h, a, b, c))
                        continue;
                    double e = path_evidence(net, tests, ntests, a, b, c, 1);
                    if (e >= best && routes_seen_with(net, tests, ntests, a, b, c)) {
                        best = e;
                        best_a = a, best_b = b, best_c = c;
                    }
                }
        if (best_a < 0)
            break;
        routed[(size_t)best_a * h + best_b] = routed[(size_t)best_b * h + best_a] =
            (unsigned char)(best_c + 1);
    }
    /* tests to confirm: a path's ends' (noise that slowed either made it a
     * path: pairs4's host 2 held up once in its screen, 2x, made h1-h2 a
     * path through h0 in test_net), the relay's, the control, where it was
     * slowed (SCREEN_SLOW: by another triple's test crossing the same link
     * in its step, it weakens the path once the ends' reruns took that
     * back: two triangles joined by one link lost paths that way), and all
     * three of a triple with a pair that only the control kept from being
     * a path (the relay's test slowed by noise; a path it may be), unless
     * the tests of all three hosts say their ports limit them, as on one
     * switch (port_limited: on switch4 this took 12 reruns, 70 ms, and
     * confirmed every one).  Not the relay's alone: leaves on single links
     * are port-limited too, and a triple of two leaves and their hub whose
     * hub was held up once routed the leaves' pair through a third leaf,
     * hiding the hub's paths, until this rerun took the stall back */
    for (int i = 0; i < ntests; i++) {
        const int t3[3] = {tests[i].x, tests[i].y, tests[i].z};
        int ports = port_limited(tests, ntests, t3[0]) && port_limited(tests, ntests, t3[1]) &&
                    port_limited(tests, ntests, t3[2]);
        tests[i].confirm = 0;
        for (int k = 0; k < 3; k++) { /* the pair without t3[k], through t3[k] */
            int a = t3[(k + 1) % 3], b = t3[(k + 2) % 3], c = t3[k];
            unsigned char via = routed[(size_t)a * h + b];
            tests[i].confirm |=
                (via == c + 1 && (tests[i].x != c || tests[i].slow >= SCREEN_SLOW)) ||
                (!via && relay_plausible(net, a, b, c) && may_route(routed, h, a, b, c) &&
                 path_evidence(net, tests, ntests, a, b, c, 0) >= PATH_EVIDENCE && !ports);
        }
    }
    /* hosts on one switch (or a tree of switches, which these tests do not
     * tell from one): one port carries all of each host's exchanges, so
     * the pairs are not links of their own (a mesh at the port's rate lets
     * a schedule send H-1 times what a port carries) */
    int routes = 0;
    for (size_t i = 0; i < hh; i++)
        if (routed[i]) {
            net->bw_gbps[i] = 0;
            routes = 1;
        }
    for (int x = 0; x < h; x++)
        port_slow(tests, ntests, x, &net->port_slow[2 * x]);
    net->switched = all_port_limited(tests, ntests, h) && !routes;
}

void tacos_net_classes(tacos_net_t *net)
{
    size_t h = (size_t)net->nhosts;
    /* class after class from the slowest link: [first, first * (1 + spread)];
     * its mean lies inside, so the next class starts above it */
    for (double done = 0;;) {
        double first = INFINITY, lat = 0, bw = 0;
        int links = 0;
        for (size_t ab = 0; ab < h * h; ab++)
            if (net->bw_gbps[ab] > done && net->bw_gbps[ab] < first)
                first = net->bw_gbps[ab];
        if (first == INFINITY)
            return;
        done = first * (1 + CLASS_SPREAD);
        for (size_t ab = 0; ab < h * h; ab++)
            if (net->bw_gbps[ab] >= first && net->bw_gbps[ab] <= done)
                lat += net->lat_us[ab], bw += net->bw_gbps[ab], links++;
        for (size_t ab = 0; ab < h * h; ab++)
            if (net->bw_gbps[ab] >= first && net->bw_gbps[ab] <= done)
                net->lat_us[ab] = lat / links, net->bw_gbps[ab] = bw / links;
    }
}

int tacos_net_describe(const tacos_probe_record_t *recs, int n, const tacos_net_t *net,
                       char **out)
{
    int h = net->nhosts, *host = malloc((size_t)n * sizeof *host),
        *local = malloc((size_t)n * sizeof *local), *first = malloc(((size_t)h + 1) * sizeof *first);
    /* a line per pair: three host names and some words; one on a switch */
    size_t len = ((size_t)h * (size_t)h + (size_t)h) * (4 * TACOS_PROBE_NAME + 128) + 256, used = 0;
    char *text = malloc(len);
    int rc = TACOS_OK;
    if (!host || !local || !first || !text) {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory describing %d hosts", h);
        goto out;
    }
    tacos_probe_hosts(recs, n, host, local);
    for (int i = n - 1; i >= 0; i--)
        first[host[i]] = i;
    text[0] = 0;
    for (int a = 0; a < h; a++)
        for (int b = a + 1; b < h; b++) {
            size_t ab = (size_t)a * (size_t)h + (size_t)b;
            const char *x = recs[first[a]].host, *y = recs[first[b]].host;
            if (net->routed[ab])
                used += (size_t)snprintf(text + used, len - used,
                                         "%s - %s: a path through %s (shares its links: no "
                                         "link of its own)\n",
                                         x, y, recs[first[net->routed[ab] - 1]].host);
            else
                used += (size_t)snprintf(text + used, len - used,
                                         "%s - %s: %.1f us %.4f GB/s (measured)\n", x, y,
                                         net->lat_us[ab], net->bw_gbps[ab]);
        }
    /* why hosts were or were not found on one switch */
    int slowed = h >= 4;
    for (int a = 0; a < h; a++)
        slowed &= net->port_slow[2 * a] > 0;
    if (slowed)
        used += (size_t)snprintf(text + used, len - used,
                                 "each host's tests slowed at least/on average (one switch where "
                                 "every one is %.2fx/%.2fx or more):", SCREEN_SLOW, PORT_SLOW);
    for (int a = 0; a < h && slowed; a++)
        used += (size_t)snprintf(text + used, len - used, " %s %.2fx/%.2fx%s", recs[first[a]].host,
                                 net->port_slow[2 * a], net->port_slow[2 * a + 1],
                                 a + 1 < h ? "," : "\n");
    if (net->switched)
        snprintf(text + used, len - used,
                 "every host's port limited each of its tests: one switch (or a tree of "
                 "switches these tests do not tell from one), its ports at the rates above\n");
    *out = text;
    text = NULL;
out:
    free(host);
    free(local);
    free(first);
    free(text);
    return rc;
}

/* ---- the measurement, driven through the caller's exchange --------------- */

/* This rank exchanges `bytes` with each leader of hosts[0..k) at once, reps
 * times; the times of the repetition that ended soonest (noise only adds
 * time; with k = 2 the flows may share a link unfairly, so each flow's own
 * shortest time would pair the luckier flow of each repetition).
 *
 * Each repetition but of SMALL_BYTES starts with an untimed 8-byte exchange
 * with the same peers, and is timed from before it: a peer sends its data
 * only once this rank's token has reached it, so none arrives before the
 * clock starts.  Without it, a peer that left the step before this rank
 * (ranks leave an allreduce at different times, and a rank of a busy
 * machine loses its core for milliseconds) had sent part of its data
 * already, and tests came out 0.01-0.2 of the time alone: noise that took
 * time away, which the shortest of the repetitions then kept. */
int tacos_net_exchange(const tacos_net_comm_t *c, const int *leader, const int *hosts, int k,
                       const size_t *bytes, int reps, double *best)
{
    int peers[2], token = 0;
    const size_t small[2] = {SMALL_BYTES, SMALL_BYTES};
    double t[2], end = INFINITY;
    for (int i = 0; i < k; i++) {
        peers[i] = leader[hosts[i]];
        token |= bytes[i] > SMALL_BYTES;
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now_us(), lead = 0;
        int rc = token ? c->exchange(c->ctx, peers, k, small, t) : 0;
        if (!rc) {
            lead = token ? now_us() - t0 : 0;
            rc = c->exchange(c->ctx, peers, k, bytes, t);
        }
        if (rc)
            return rc;
        for (int i = 0; i < k; i++)
            t[i] += lead;
        double e = k == 2 ? fmax(t[0], t[1]) : t[0];
        if (e < end) {
            end = e;
            memcpy(best, t, (size_t)k * sizeof *t);
        }
    }
    return TACOS_OK;
}

/* Every rank, before a step whose traffic must not meet the previous one's
 * (a max over one number: an allreduce of nothing may return at once). */
static int sync_all(const tacos_net_comm_t *c)
{
    double v = 0;
    return c->max(c->ctx, &v, 1) ? tacos_error(TACOS_ERR_IO, "the caller's allreduce failed") : 0;
}

/* The max over every rank of v[0..n). */
static int max_all(const tacos_net_comm_t *c, double *v, int n)
{
    return c->max(c->ctx, v, n) ? tacos_error(TACOS_ERR_IO, "the caller's allreduce failed") : 0;
}

int tacos_net_agree_max(const tacos_net_comm_t *c, double *v, int n, int failed)
{
    double flag = failed;
    int rc;
    if ((rc = max_all(c, v, n)) || (rc = max_all(c, &flag, 1)))
        return rc;
    return flag > 0 ? tacos_error(TACOS_ERR_INVALID, "an exchange between hosts failed") : 0;
}

int tacos_net_agree_memory(const tacos_net_comm_t *c, int short_here, const char *what)
{
    double flag = short_here;
    int rc = max_all(c, &flag, 1);
    if (rc)
        return rc;
    return flag > 0 ? tacos_error(TACOS_ERR_NOMEM, "a rank ran out of memory %s", what) : 0;
}

/* Every rank's times on every rank (the sizes are computed alike on every
 * rank from them), or an error everywhere. */
static int agree_times(const tacos_net_comm_t *c, tacos_net_t *net, int failed)
{
    return tacos_net_agree_max(c, net->t_us, 3 * net->nhosts * net->nhosts, failed);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The pair's second size: what takes about SECOND_US at the rate its S1
 * exchange showed (both ends' view averaged: the same on both), or 0 where
 * S1 took about that long already (its time is the pair's measurement). */
static size_t second_bytes(const tacos_net_t *net, int a, int b)
{
    double t1 = (times(net, a, b)[1] + times(net, b, a)[1]) / 2;
    if (t1 >= SKIP_SECOND * SECOND_US)
        return 0;
    return sized((double)TACOS_NET_S1_BYTES / t1 * SECOND_US, 2 * TACOS_NET_S1_BYTES);
}

/* The fitted time of one exchange of `bytes` between a and b. */
static double fitted_us(const tacos_net_t *net, int a, int b, size_t bytes)
{
    size_t ab = (size_t)a * (size_t)net->nhosts + (size_t)b;
    return net->lat_us[ab] + (double)bytes / (net->bw_gbps[ab] * 1e3);
}

/* Does the pair exchange a second size (s2_bytes, set by second_sizes)? */
static int has_second(const tacos_net_t *net, int a, int b)
{
    return net->s2_bytes[(size_t)a * (size_t)net->nhosts + (size_t)b] > TACOS_NET_S1_BYTES;
}

/* Did the pair's second size stall?  Its rate came out below SECOND_STALL
 * of the rate its S1 showed, which the longer size can only exceed (less
 * of its time is latency).  From the agreed times: the same on every rank. */
static int second_stalled(const tacos_net_t *net, int a, int b)
{
    double s2 = net->s2_bytes[(size_t)a * (size_t)net->nhosts + (size_t)b], t[3];
    if (!has_second(net, a, b))
        return 0;
    for (int k = 0; k < 3; k++) /* both ends' views, timed from the token */
        t[k] = (times(net, a, b)[k] + times(net, b, a)[k]) / 2 - (k ? t[0] : 0);
    return s2 / t[2] < SECOND_STALL * (double)TACOS_NET_S1_BYTES / t[1];
}

/* This rank's exchange of size k with host p into t[k]: 0 the 8-byte one
 * (the median of SMALL_REPS, after one that opens the connection), 1 S1,
 * 2 the second size. */
static int pair_exchange(const tacos_net_comm_t *c, const int *leader, const tacos_net_t *net,
                         int mine, int p, int k, double *t)
{
    size_t bytes = k == 0   ? SMALL_BYTES
                   : k == 1 ? TACOS_NET_S1_BYTES
                            : (size_t)net->s2_bytes[(size_t)mine * (size_t)net->nhosts + (size_t)p];
    if (k)
        return tacos_net_exchange(c, leader, &p, 1, &bytes, 1, &t[k]);
    double small[SMALL_REPS], warm;
    int rc = tacos_net_exchange(c, leader, &p, 1, &bytes, 1, &warm);
    for (int i = 0; i < SMALL_REPS && !rc; i++)
        rc = tacos_net_exchange(c, leader, &p, 1, &bytes, 1, &small[i]);
    if (rc)
        return rc;
    qsort(small, SMALL_REPS, sizeof *small, cmp_double);
    t[0] = small[SMALL_REPS / 2];
    return TACOS_OK;
}

/* One tournament of pair rounds, phase 1 (the 8-byte exchanges, then, all
 * pairs together again, S1: a pair's 8 bytes queued behind another's S1
 * in a link both cross came out 0.6 ms, on two triangles joined by one
 * link, and their latency 2.4 ms) or 2 (the second size, for the pairs
 * that have one).  The rounds start together, so no pair's traffic meets
 * another round's; a round in which no pair exchanges is left out.  A
 * failed exchange is remembered in *failed, not returned, so that this
 * rank still takes part in every later step. */
static int pair_rounds(const tacos_net_comm_t *c, const int *leader, tacos_net_t *net, int mine,
                       int phase, int *failed)
{
    int h = net->nhosts, rc;
    for (int r = 0; r < tacos_net_rounds(h); r++) {
        int p = mine >= 0 ? tacos_net_partner(h, r, mine) : -1, busy = phase == 1;
        for (int x = 0; x < h && !busy; x++) {
            int y = tacos_net_partner(h, r, x);
            busy = y > x && has_second(net, x, y);
        }
        for (int k = phase == 1 ? 0 : 2; k <= phase && busy; k++) {
            if ((rc = sync_all(c)))
                return rc;
            if (p >= 0 && !*failed && (phase == 1 || has_second(net, mine, p)))
                *failed = pair_exchange(c, leader, net, mine, p, k, times(net, mine, p)) != 0;
        }
    }
    return TACOS_OK;
}

/* Could a relay carry {a,b} clearly faster than it measured (ALONE_GAIN)?
 * Its exchange may then have shared a link with another pair of its round
 * (a ring of 4 equal links: h0-h2 through h1 and h1-h3 through h0 share
 * h0-h1 and came out at half its rate). */
static int maybe_shared(const tacos_net_t *net, int a, int b)
{
    for (int c = 0; c < net->nhosts; c++)
        if (relay_carries(net, a, b, c, ALONE_GAIN))
            return 1;
    return 0;
}

/* Is host x one of {a,b}'s in plan_apart: an end, or a relay of
 * maybe_shared? */
static int apart_host(const tacos_net_t *net, int a, int b, int x)
{
    return x == a || x == b || relay_carries(net, a, b, x, ALONE_GAIN);
}

/* Rounds for the pairs of maybe_shared, each after every round that holds
 * one of its hosts (apart_host), so that no two pairs of a round can share
 * a link through one relay; busy[x]: the last round host x is in.  How
 * many rounds. */
static int plan_apart(const tacos_net_t *net, int *round, int *busy)
{
    int h = net->nhosts, rounds = 0;
    for (int a = 0; a < h; a++)
        for (int b = a + 1; b < h; b++) {
            if (!maybe_shared(net, a, b))
                continue;
            int r = 0;
            for (int x = 0; x < h; x++)
                if (apart_host(net, a, b, x))
                    r = busy[x] > r ? busy[x] : r;
            r++;
            for (int x = 0; x < h; x++)
                if (apart_host(net, a, b, x))
                    busy[x] = r;
            round[a * h + b] = round[b * h + a] = r;
            rounds = r > rounds ? r : rounds;
        }
    return rounds;
}

/* The pairs of again() exchange their second size once more and keep the
 * shorter time (noise and other pairs' traffic only add time): in their
 * tournament's rounds, or with `apart` in the rounds of plan_apart, every
 * size (their 8 bytes and S1 met the same traffic in their round as their
 * second size: two triangles joined by one link, three pairs of a round
 * across it, fitted 1.4-3.3 ms of latency from an S1 that shared the link
 * and a second size that did not).  The new times are agreed on their
 * own: the max over every rank of the old and the new would be the old.
 * Which pairs and rounds comes from agreed times: the same on every
 * rank. */
static int pairs_again(const tacos_net_comm_t *c, const int *leader, tacos_net_t *net, int mine,
                        int (*again)(const tacos_net_t *, int, int), int apart, int *failed)
{
    int h = net->nhosts, rc = TACOS_OK, any = 0, rounds = tacos_net_rounds(h);
    size_t hh = (size_t)h * (size_t)h;
    for (int a = 0; a < h && !any; a++)
        for (int b = a + 1; b < h && !any; b++)
            any = again(net, a, b);
    if (!any)
        return TACOS_OK;
    double *t = calloc(3 * hh, sizeof *t);
    int *round = calloc(hh + (size_t)h, sizeof *round);
    double flag = !t || !round;
    if ((rc = max_all(c, &flag, 1)) || flag > 0) {
        rc = rc ? rc : tacos_error(TACOS_ERR_NOMEM, "a rank ran out of memory measuring");
        goto out;
    }
    if (apart) {
        rounds = plan_apart(net, round, round + hh);
    } else {
        for (int r = 0; r < rounds; r++)
            for (int x = 0; x < h; x++) {
                int y = tacos_net_partner(h, r, x);
                if (y >= 0 && again(net, x, y))
                    round[x * h + y] = r + 1;
            }
    }
    for (int r = 1; r <= rounds; r++) {
        int busy = 0;
        for (size_t ab = 0; ab < hh && !busy; ab++)
            busy = round[ab] == r;
        if (!busy)
            continue;
        if ((rc = sync_all(c)))
            goto out;
        for (int p = 0; p < h && mine >= 0 && !*failed; p++) {
            double *mp = &t[3 * ((size_t)mine * (size_t)h + (size_t)p)];
            if (round[mine * h + p] != r)
                continue;
            for (int k = apart ? 0 : 2; k < 3 && !*failed; k++)
                *failed = (k < 2 || has_second(net, mine, p)) &&
                          pair_exchange(c, leader, net, mine, p, k, mp) != TACOS_OK;
            mp[2] = has_second(net, mine, p) ? mp[2] : mp[1];
        }
    }
    if ((rc = tacos_net_agree_max(c, t, 3 * (int)hh, *failed)))
        goto out;
    for (size_t k = 0; k < 3 * hh; k++)
        if (t[k] > 0)
            net->t_us[k] = fmin(net->t_us[k], t[k]);
out:
    free(t);
    free(round);
    return rc;
}

/* The second sizes: a pair whose S1 took long enough keeps that time
 * (s2_bytes = S1); the others exchange their second size once, and again
 * where it came out stalled (second_stalled), keeping the shorter.  Then
 * the pairs that may have shared a link in their round (maybe_shared)
 * exchange every size once more, apart. */
static int second_sizes(const tacos_net_comm_t *c, const int *leader, tacos_net_t *net, int mine,
                        int *failed)
{
    int h = net->nhosts, rc;
    for (int a = 0; a < h; a++)
        for (int b = 0; b < h; b++) {
            if (a == b)
                continue;
            size_t big = second_bytes(net, a, b);
            net->s2_bytes[(size_t)a * (size_t)h + (size_t)b] =
                (double)(big ? big : TACOS_NET_S1_BYTES);
            if (!big)
                times(net, a, b)[2] = times(net, a, b)[1];
        }
    if ((rc = pair_rounds(c, leader, net, mine, 2, failed)) ||
        (rc = agree_times(c, net, *failed)) ||
        (rc = pairs_again(c, leader, net, mine, second_stalled, 0, failed)) ||
        (rc = tacos_net_fit(net, TACOS_NET_S1_BYTES)))
        return rc;
    return pairs_again(c, leader, net, mine, maybe_shared, 1, failed);
}

/* Do tests i and j have a host in common? */
static int tests_meet(const tacos_net_test_t *v, int i, int j)
{
    const int a[3] = {v[i].x, v[i].y, v[i].z}, b[3] = {v[j].x, v[j].y, v[j].z};
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < 3; l++)
            if (a[k] == b[l])
                return 1;
    return 0;
}

/* The steps the tests with run[i] set run in (step[i]; the others -1):
 * with `together` each step in turn takes the tests left that have no
 * host in common with those it took, those that meet the most tests left
 * first (they are the hardest to place later: 7 hosts joined by one, 105
 * tests, in 54 steps, 75 in test order); else one test a step, in test
 * order.  How many steps. */
static int plan_steps(const tacos_net_test_t *tests, int ntests, const char *run, int together,
                      int *step)
{
    int left = 0, nsteps = 0, meets[TACOS_NET_MAX_TESTS];
    for (int i = 0; i < ntests; i++)
        left += (step[i] = run[i] ? -2 : -1) == -2;
    for (; left; nsteps++) {
        for (int i = 0; i < ntests; i++) {
            meets[i] = 0;
            for (int j = 0; j < ntests && step[i] == -2 && together; j++)
                meets[i] += j != i && step[j] == -2 && tests_meet(tests, i, j);
        }
        for (int took = 0; !took || together; took++) {
            int best = -1;
            for (int i = 0; i < ntests; i++) {
                int fits = step[i] == -2 && (best < 0 || meets[i] > meets[best]);
                for (int j = 0; j < ntests && fits; j++)
                    fits = step[j] != nsteps || !tests_meet(tests, i, j);
                best = fits ? i : best;
            }
            if (best < 0)
                break;
            step[best] = nsteps;
            left--;
        }
    }
    return nsteps;
}

/* The tests with run[i] set, in the steps plan_steps gives them;
 * slow[3i..3i+2] = test i's slowdowns as this rank saw them (left alone
 * where it is not the test's x).  A host takes part in at most one test of
 * a step. */
static int run_tests(const tacos_net_comm_t *c, const int *leader, tacos_net_t *net, int mine,
                     const tacos_net_test_t *tests, int ntests, const char *run, int together,
                     double *slow, int *failed)
{
    int step[TACOS_NET_MAX_TESTS], nsteps = plan_steps(tests, ntests, run, together, step);
    for (int s = 0; s < nsteps; s++) {
        int rc;
        if ((rc = sync_all(c)))
            return rc;
        net->test_steps++;
        for (int i = 0; i < ntests && !*failed && mine >= 0; i++) {
            const tacos_net_test_t *q = &tests[i];
            size_t bytes[2];
            double t[2];
            if (step[i] != s || (mine != q->x && mine != q->y && mine != q->z))
                continue;
            test_bytes(net, q, bytes);
            if (mine == q->x) {
                int yz[2] = {q->y, q->z};
                if ((*failed = tacos_net_exchange(c, leader, yz, 2, bytes, TEST_REPS, t) != TACOS_OK))
                    continue;
                double ty = fitted_us(net, q->x, q->y, bytes[0]);
                double tz = fitted_us(net, q->x, q->z, bytes[1]);
                slow[3 * i] = fmax(t[0], t[1]) / fmax(ty, tz);
                slow[3 * i + 1] = t[0] / ty;
                slow[3 * i + 2] = t[1] / tz;
            } else {
                *failed = tacos_net_exchange(c, leader, &q->x, 1, &bytes[mine == q->z], TEST_REPS, t) !=
                          TACOS_OK;
            }
        }
    }
    return TACOS_OK;
}

/* Runs the tests marked in run[] (from the fit again: classifying takes
 * the paths' rates out; `together`: see plan_steps) and agrees on their
 * slowdowns; a test run before keeps the shorter (noise only adds time).
 * The new times are agreed on their own: kept on x alone, the max over
 * every rank of the old and the new was the old. */
static int run_marked(const tacos_net_comm_t *c, const int *leader, tacos_net_t *net, int mine,
                      tacos_net_test_t *tests, int ntests, const char *run, int together,
                      int *failed)
{
    double slow[3 * TACOS_NET_MAX_TESTS] = {0};
    int rc = tacos_net_fit(net, TACOS_NET_S1_BYTES);
    if (!rc)
        rc = run_tests(c, leader, net, mine, tests, ntests, run, together, slow, failed);
    if (rc || (rc = tacos_net_agree_max(c, slow, 3 * ntests, *failed)))
        return rc;
    for (int i = 0; i < ntests; i++) {
        double *kept[3] = {&tests[i].slow, &tests[i].slow_y, &tests[i].slow_z};
        if (!run[i])
            continue;
        net->ntests++;
        for (int k = 0; k < 3; k++)
            *kept[k] = *kept[k] > 0 ? fmin(*kept[k], slow[3 * i + k]) : slow[3 * i + k];
    }
    return TACOS_OK;
}

/* Marks the tests of phase `phase` of h hosts: 0 the screens, 1 the
 * others of the triples whose screens were slowed, unless the screens
 * already show every host's port limiting it (one switch: no test could
 * tell a path from a shared port, and the classification joins them as
 * one switch; on switch4 4 tests of 12; port_slow then reads two tests a
 * host).  Not where only a triple's own hosts look so: a relay whose
 * screens all had both peers behind one of its links looks port-limited
 * too, and its other tests are what show a route through it (two hosts
 * each with leaves, or a route of three hops, test_net).  2: those the
 * classification wants confirmed.  How many. */
static int mark(const tacos_net_test_t *tests, int ntests, int h, int phase, char *run)
{
    int marked = 0, ports = phase == 1 && all_port_limited(tests, ntests, h);
    for (int i = 0; i < ntests; i++) {
        int j[3], slowed = 0;
        triple_of(tests, ntests, i, j);
        for (int s = 0; s < 3; s++)
            slowed |= tests[j[s]].screen && tests[j[s]].slow >= SCREEN_SLOW;
        run[i] = (char)(phase == 0   ? tests[i].screen
                        : phase == 1 ? !tests[i].screen && slowed && !ports
                                    : tests[i].confirm);
        marked += run[i];
    }
    return marked;
}

const char *const tacos_net_phase_names[TACOS_NET_PHASES] = {"pairs", "second sizes", "tests",
                                                             "reruns"};

/* Phase p took from *t until now; *t: now. */
static void phase_ends(tacos_net_t *net, int p, double *t)
{
    double end = now_us();
    net->phase_us[p] = end - *t;
    *t = end;
}

int tacos_net_measure(const tacos_probe_record_t *recs, int n, int me, const tacos_net_comm_t *c,
                      tacos_net_t *net)
{
    double t0 = now_us(), t = t0;
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local);
    int *leader = malloc((size_t)n * sizeof *leader), rc = TACOS_OK, failed = 0;
    tacos_net_test_t *tests = NULL;
    int ntests = 0;
    int h = 0;
    if (host && local && leader) {
        h = tacos_probe_hosts(recs, n, host, local);
        for (int i = n - 1; i >= 0; i--)
            leader[host[i]] = i;
        rc = tacos_net_alloc(net, h);
    } else {
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory measuring %d ranks", n);
    }
    /* a rank short of memory stops every rank, not only itself */
    double flag = rc != TACOS_OK;
    int mrc = max_all(c, &flag, 1);
    if (mrc || flag > 0) {
        rc = mrc ? mrc : rc ? rc : tacos_error(TACOS_ERR_NOMEM, "another rank ran out of memory");
        goto out;
    }
    int mine = leader[host[me]] == me ? host[me] : -1;
    /* the same numbers everywhere after each phase: sizes, fit and plan are
     * computed alike on every rank and fail on every rank or none (short of
     * memory, a rank runs no test but still takes part) */
    if ((rc = pair_rounds(c, leader, net, mine, 1, &failed)) ||
        (rc = agree_times(c, net, failed)))
        goto out;
    phase_ends(net, 0, &t);
    if ((rc = second_sizes(c, leader, net, mine, &failed)) ||
        (rc = tacos_net_fit(net, TACOS_NET_S1_BYTES)))
        goto out;
    phase_ends(net, 1, &t);
    flag = tacos_net_tests(net, &tests, &ntests) != TACOS_OK;
    if ((rc = max_all(c, &flag, 1)))
        goto out;
    if (flag > 0) {
        rc = tacos_error(TACOS_ERR_NOMEM, "a rank ran out of memory planning tests");
        goto out;
    }
    char run[TACOS_NET_MAX_TESTS];
    int step[TACOS_NET_MAX_TESTS];
    memset(run, 1, sizeof run);
    if (ntests > TACOS_NET_MAX_TESTS ||
        plan_steps(tests, ntests, run, 1, step) > TACOS_NET_MAX_STEPS) {
        net->note = "too many possible shared paths to test: every measured pair is a link";
        ntests = 0;
    }
    /* the screens and the tests they let through, triples without a host
     * in common at once; then, one at a time, those the classification
     * wants confirmed once more */
    for (int phase = 0; phase < 2; phase++)
        if (mark(tests, ntests, h, phase, run) &&
            (rc = run_marked(c, leader, net, mine, tests, ntests, run, 1, &failed)))
            goto out;
    tacos_net_classify(net, tests, ntests);
    phase_ends(net, 2, &t);
    if (mark(tests, ntests, h, 2, run)) {
        if ((rc = run_marked(c, leader, net, mine, tests, ntests, run, 0, &failed)))
            goto out;
        tacos_net_classify(net, tests, ntests);
    }
    phase_ends(net, 3, &t);
    tacos_net_classes(net);
    net->measure_us = now_us() - t0;
out:
    if (rc)
        tacos_net_free(net);
    free(host);
    free(local);
    free(leader);
    free(tests);
    return rc;
}
