/*
 * The network between hosts, measured: one rank per host (its first rank)
 * exchanges messages with every other host, and the links of the model are
 * derived from the times.  No MPI here: the caller passes an exchange and a
 * max-allreduce (tacos_net_comm_t).
 *
 * 1. Pairs: in H-1 rounds (H for odd H) every host exchanges with one
 *    partner (a round-robin tournament), 8 B for the latency, then S1 and S2
 *    bytes both ways at once (above Open MPI's TCP eager limit, as the
 *    chunks of the schedules that cross hosts are).  The bandwidth is the
 *    slope (S2-S1)/(t2-t1), the latency the intercept at S2 (it includes
 *    what a rendezvous adds), never below the 8-byte time.
 * 2. Shared paths: a pair {a,b} whose rate a relay c could also carry
 *    (both a-c and c-b at least about as fast) may be routed through c
 *    rather than be a link of its own.  Host a exchanging with b and c at
 *    once slows one of the two down when they share a link out of a, and
 *    likewise for b.  {a,b} is taken for a path through c, and gets no link
 *    in the model, when both tests (a; b,c) and (b; a,c) show a slowdown:
 *    then its traffic shares a link with a-c and with c-b, which is what a
 *    route a-c-b does.  A direct link shares with at most one side (a route
 *    of a leg through it), never both.
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
#define REFINE_US 40000.0 /* a fast pair's second size takes about this long */
#define RELAY_SLACK 0.85 /* a relay path carries the rate if both legs reach this share */
/* A pair shares links with both legs of a relay when both tests slow an
 * exchange down at least SLOWDOWN: two equal flows on a link halve (2x).
 * On a link shared with a slower flow the faster one keeps most of its
 * rate (400 and 100 Mbit/s flows on a 400 link leave 300: 1.33x), which
 * the noise of a busy machine hides (single exchanges on the 2-core test
 * machine varied by up to 1.4x): a path whose legs differ that much in
 * speed is not told from a link.  Noise only adds time, so each exchange
 * is timed three times and the shortest kept. */
#define SLOWDOWN 1.5
#define TEST_REPS 3
/* Tests for shared paths grow as H^3 at worst; above this many (about 5
 * hosts' worth), every measured pair becomes a link. */
#define TACOS_NET_MAX_TESTS 64

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
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
    if (!net->lat_us || !net->bw_gbps || !net->t_us || !net->routed || !net->s2_bytes) {
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
            if (!(t[0] > 0 && t[1] > 0 && t[2] > 0))
                return tacos_error(TACOS_ERR_INVALID, "hosts %d and %d were not measured", a, b);
            if (!(s2 > (double)s1))
                return tacos_error(TACOS_ERR_INVALID, "hosts %d and %d: no second size", a, b);
            double bytes_per_us = t[2] > t[1] ? (s2 - (double)s1) / (t[2] - t[1]) : s2 / t[2];
            /* the intercept, within [t0, LAT_CAP * t0]: more than a few 8-byte
             * times is the queueing of the large exchanges (TCP's start, a
             * shaper's burst), which a message of a schedule's chunk size
             * does not see the way a 512 KiB one does */
            double lat = t[2] - s2 / bytes_per_us;
            net->bw_gbps[ab] = bytes_per_us / 1e3;
            net->lat_us[ab] = lat < t[0] ? t[0] : lat > LAT_CAP * t[0] ? LAT_CAP * t[0] : lat;
        }
    return TACOS_OK;
}

static double bw(const tacos_net_t *net, int a, int b)
{
    return net->bw_gbps[(size_t)a * (size_t)net->nhosts + (size_t)b];
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

/* Could a path a-c-b carry what {a,b} measured?  (The fit is symmetric.) */
static int relay_plausible(const tacos_net_t *net, int a, int b, int c)
{
    double need = RELAY_SLACK * bw(net, a, b);
    return c != a && c != b && bw(net, a, c) >= need && bw(net, c, b) >= need;
}

int tacos_net_tests(const tacos_net_t *net, tacos_net_test_t **out, int *nout)
{
    int h = net->nhosts, n = 0;
    size_t cap = 0;
    tacos_net_test_t *v = NULL;
    for (int a = 0; a < h; a++)
        for (int b = a + 1; b < h; b++)
            for (int c = 0; c < h; c++) {
                if (!relay_plausible(net, a, b, c))
                    continue;
                const int xyz[2][3] = {{a, b, c}, {b, a, c}};
                for (int k = 0; k < 2; k++) {
                    int x = xyz[k][0], y = xyz[k][1], z = xyz[k][2];
                    if (find_test(v, n, x, y, z) >= 0)
                        continue;
                    tacos_net_test_t *g = tacos_grow(v, &cap, (size_t)n, sizeof *v, 16);
                    if (!g) {
                        free(v);
                        return tacos_error(TACOS_ERR_NOMEM, "out of memory planning tests");
                    }
                    v = g;
                    v[n++] = (tacos_net_test_t){x, y < z ? y : z, y < z ? z : y, 0, 0};
                }
            }
    *out = v;
    *nout = n;
    return TACOS_OK;
}

/* Is {a,b} a leg of a pair already taken for a path (through a or b)? */
static int is_leg(const unsigned char *routed, int h, int a, int b)
{
    for (int x = 0; x < h; x++)
        for (int y = 0; y < h; y++) {
            int via = routed[(size_t)x * h + y] - 1;
            if (via >= 0 && ((via == a && (x == b || y == b)) || (via == b && (x == a || y == a))))
                return 1;
        }
    return 0;
}

void tacos_net_classify(tacos_net_t *net, const tacos_net_test_t *tests, int ntests)
{
    int h = net->nhosts;
    size_t hh = (size_t)h * (size_t)h;
    unsigned char *routed = net->routed;
    memset(routed, 0, hh);
    /* the strongest evidence first; a path's legs are links, so a pair
     * already taken for a leg of another's path is not a path itself (and
     * removing paths never disconnects hosts: their legs stay) */
    for (;;) {
        int best_a = -1, best_b = -1, best_c = -1;
        double best = SLOWDOWN;
        for (int a = 0; a < h; a++)
            for (int b = a + 1; b < h; b++)
                for (int c = 0; c < h && !routed[(size_t)a * h + b]; c++) {
                    int i = find_test(tests, ntests, a, b, c), j = find_test(tests, ntests, b, a, c);
                    if (i < 0 || j < 0 || routed[(size_t)a * h + c] || routed[(size_t)c * h + b] ||
                        is_leg(routed, h, a, b))
                        continue;
                    double s = fmin(fmax(tests[i].slow_y, tests[i].slow_z),
                                    fmax(tests[j].slow_y, tests[j].slow_z));
                    if (s >= best) {
                        best = s;
                        best_a = a, best_b = b, best_c = c;
                    }
                }
        if (best_a < 0)
            break;
        routed[(size_t)best_a * h + best_b] = routed[(size_t)best_b * h + best_a] =
            (unsigned char)(best_c + 1);
    }
    for (size_t i = 0; i < hh; i++)
        if (routed[i])
            net->bw_gbps[i] = 0;
}

int tacos_net_describe(const tacos_probe_record_t *recs, int n, const tacos_net_t *net,
                       char **out)
{
    int h = net->nhosts, *host = malloc((size_t)n * sizeof *host),
        *local = malloc((size_t)n * sizeof *local), *first = malloc(((size_t)h + 1) * sizeof *first);
    /* a line per pair: three host names and some words */
    size_t len = (size_t)h * (size_t)h * (4 * TACOS_PROBE_NAME + 128) + 1, used = 0;
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
 * times; the shortest time per peer. */
static int exchange(const tacos_net_comm_t *c, const int *leader, const int *hosts, int k,
                    size_t bytes, int reps, double *best)
{
    int peers[2];
    double t[2];
    for (int i = 0; i < k; i++) {
        peers[i] = leader[hosts[i]];
        best[i] = INFINITY;
    }
    for (int r = 0; r < reps; r++) {
        int rc = c->exchange(c->ctx, peers, k, bytes, t);
        if (rc)
            return rc;
        for (int i = 0; i < k; i++)
            best[i] = t[i] < best[i] ? t[i] : best[i];
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

/* Every rank's times and sizes on every rank, or an error everywhere. */
static int agree_times(const tacos_net_comm_t *c, tacos_net_t *net, int *failed)
{
    size_t hh = (size_t)net->nhosts * (size_t)net->nhosts;
    double flag = *failed;
    int rc;
    if ((rc = max_all(c, net->t_us, (int)(3 * hh))) || (rc = max_all(c, net->s2_bytes, (int)hh)) ||
        (rc = max_all(c, &flag, 1)))
        return rc;
    return flag > 0 ? tacos_error(TACOS_ERR_INVALID, "an exchange between hosts failed") : 0;
}

/* The size a's pair with b is measured with again (the same on both: the
 * fit is symmetric), or 0 when S2 already took long enough. */
static size_t refine_bytes(const tacos_net_t *net, int a, int b)
{
    double bytes = net->bw_gbps[(size_t)a * (size_t)net->nhosts + (size_t)b] * 1e3 * REFINE_US;
    size_t big = bytes > TACOS_NET_MAX_BYTES ? TACOS_NET_MAX_BYTES : (size_t)bytes & ~(size_t)65535;
    return big >= 2 * TACOS_NET_S2_BYTES ? big : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int tacos_net_measure(const tacos_probe_record_t *recs, int n, int me, const tacos_net_comm_t *c,
                      tacos_net_t *net)
{
    const size_t s1 = TACOS_NET_S1_BYTES, s2 = TACOS_NET_S2_BYTES;
    double t0 = now_us();
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
    for (int r = 0; r < tacos_net_rounds(h); r++) {
        int p = mine >= 0 ? tacos_net_partner(h, r, mine) : -1;
        double warm[1], small[SMALL_REPS], *t = p >= 0 ? times(net, mine, p) : NULL;
        /* the rounds start together, so no pair's traffic meets another round's */
        if ((rc = sync_all(c)))
            goto out;
        if (p < 0 || failed)
            continue;
        /* the first exchange also opens the connection: not timed */
        failed = exchange(c, leader, &p, 1, SMALL_BYTES, 1, warm) != TACOS_OK;
        for (int i = 0; i < SMALL_REPS && !failed; i++)
            failed = exchange(c, leader, &p, 1, SMALL_BYTES, 1, &small[i]) != TACOS_OK;
        failed = failed || exchange(c, leader, &p, 1, s1, 2, &t[1]) != TACOS_OK ||
                 exchange(c, leader, &p, 1, s2, 2, &t[2]) != TACOS_OK;
        net->s2_bytes[(size_t)mine * (size_t)h + (size_t)p] = (double)s2;
        if (!failed) {
            qsort(small, SMALL_REPS, sizeof *small, cmp_double);
            t[0] = small[SMALL_REPS / 2];
        }
    }
    if ((rc = agree_times(c, net, &failed)) || (rc = tacos_net_fit(net, s1)))
        goto out;
    /* fast pairs again with a size that takes about REFINE_US: at 512 KiB
     * their slope spans a few ms, as noisy as the rest.  Every rank clears
     * what is measured again, so the max below keeps only the new figures. */
    for (int a = 0; a < h; a++)
        for (int b = 0; b < h; b++)
            if (a != b && refine_bytes(net, a, b)) {
                times(net, a, b)[2] = 0;
                net->s2_bytes[(size_t)a * (size_t)h + (size_t)b] = 0;
            }
    for (int r = 0; r < tacos_net_rounds(h); r++) {
        int p = mine >= 0 ? tacos_net_partner(h, r, mine) : -1;
        size_t big = p >= 0 ? refine_bytes(net, mine, p) : 0;
        if ((rc = sync_all(c)))
            goto out;
        if (p < 0 || failed || !big)
            continue;
        failed = exchange(c, leader, &p, 1, big, 1, &times(net, mine, p)[2]) != TACOS_OK;
        net->s2_bytes[(size_t)mine * (size_t)h + (size_t)p] = (double)big;
    }
    /* the same numbers everywhere: fit and plan fail on every rank or none
     * (short of memory, where a rank runs no test but still takes part) */
    if ((rc = agree_times(c, net, &failed)) || (rc = tacos_net_fit(net, s1)))
        goto out;
    flag = tacos_net_tests(net, &tests, &ntests) != TACOS_OK;
    if ((rc = max_all(c, &flag, 1)))
        goto out;
    if (flag > 0) {
        rc = tacos_error(TACOS_ERR_NOMEM, "a rank ran out of memory planning tests");
        goto out;
    }
    if (ntests > TACOS_NET_MAX_TESTS) {
        net->note = "too many possible shared paths to test: every measured pair is a link";
        ntests = 0;
    }
    double slow[2 * TACOS_NET_MAX_TESTS] = {0};
    /* shared paths: one test at a time, each against the S1 times alone */
    for (int i = 0; i < ntests; i++) {
        const tacos_net_test_t *q = &tests[i];
        double t[2];
        if ((rc = sync_all(c)))
            goto out;
        if (failed || mine < 0)
            continue;
        if (mine == q->x) {
            int yz[2] = {q->y, q->z};
            failed = exchange(c, leader, yz, 2, s1, TEST_REPS, t) != TACOS_OK;
            if (!failed) {
                double ty = (times(net, q->x, q->y)[1] + times(net, q->y, q->x)[1]) / 2,
                       tz = (times(net, q->x, q->z)[1] + times(net, q->z, q->x)[1]) / 2;
                slow[2 * i] = t[0] / ty;
                slow[2 * i + 1] = t[1] / tz;
            }
        } else if (mine == q->y || mine == q->z) {
            failed = exchange(c, leader, &q->x, 1, s1, TEST_REPS, t) != TACOS_OK;
        }
    }
    flag = failed;
    if ((ntests && (rc = max_all(c, slow, 2 * ntests))) || (rc = max_all(c, &flag, 1)))
        goto out;
    if (flag > 0) {
        rc = tacos_error(TACOS_ERR_INVALID, "an exchange between hosts failed");
        goto out;
    }
    for (int i = 0; i < ntests; i++) {
        tests[i].slow_y = slow[2 * i];
        tests[i].slow_z = slow[2 * i + 1];
    }
    net->ntests = ntests;
    tacos_net_classify(net, tests, ntests);
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
