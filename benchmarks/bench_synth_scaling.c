/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synthesis scaling: All-Gather, 1 chunk per NPU of 1 MiB, uniform 50 GB/s
 * 0.5 us links.  Each topology runs in its own process so the peak RSS is its
 * own; the table shows synthesis time, peak RSS, collective time, the lower
 * bound, and the target each must meet (synthesis time limit, and whether the
 * collective time must equal the bound or be within 3% of it).
 *
 * usage: bench_synth_scaling [--trials T] [SPEC[/limit_s[/tolerance]] ...]
 */
#define _DEFAULT_SOURCE /* wait4 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tacos_synth.h"

typedef struct {
    const char *spec;
    double limit_s;   /* synthesis time target */
    double tolerance; /* allowed time / bound - 1 */
} row_t;

static const row_t defaults[] = {
    {"mesh2d:32x32", 1.0, 0.0},
    {"mesh2d:64x64", 15.0, 0.0},
    {"torus3d:8x8x8", 1.0, 0.0},
    {"torus2d:16x16", 0.5, 0.03},
};

typedef struct {
    int ok, npus, chunks;
    double synth_s, time_us, bound_us;
    char err[256];
} result_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_child(const char *spec, int trials, int fd)
{
    result_t r = {0};
    double bw = 50, lat = 0.5;
    tacos_topo_t *t = NULL;
    tacos_sched_t *s = NULL;
    if (tacos_topo_generate(spec, &bw, 1, &lat, 1, 1, &t) == TACOS_OK) {
        uint64_t size = (uint64_t)t->npus << 20;
        tacos_synth_opts_t o = {TACOS_ALLGATHER, 0, 1, size, 1, trials, 0, 0};
        double t0 = now_s();
        if (tacos_synthesize(t, &o, &s) == TACOS_OK) {
            r.synth_s = now_s() - t0;
            r.time_us = s->time_us;
            r.npus = t->npus;
            r.chunks = s->nchunks;
            r.ok = tacos_lower_bound(t, TACOS_ALLGATHER, 0, 1, size, &r.bound_us) == TACOS_OK;
        }
    }
    if (!r.ok)
        snprintf(r.err, sizeof r.err, "%s", tacos_last_error());
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(2);
    _exit(0);
}

int main(int argc, char **argv)
{
    int trials = 1, nrows = 0, all_met = 1;
    row_t rows[64];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) {
            trials = atoi(argv[++i]);
        } else if (nrows < 64) {
            char *spec = argv[i], *slash = strchr(spec, '/');
            rows[nrows] = (row_t){spec, 0, 0};
            if (slash) {
                *slash = '\0';
                sscanf(slash + 1, "%lf/%lf", &rows[nrows].limit_s, &rows[nrows].tolerance);
            }
            nrows++;
        }
    }
    if (!nrows) {
        nrows = (int)(sizeof defaults / sizeof defaults[0]);
        memcpy(rows, defaults, sizeof defaults);
    }
    printf("All-Gather, 1 chunk/NPU of 1 MiB, 50 GB/s, 0.5 us links, %d trial%s\n", trials,
           trials == 1 ? "" : "s");
    printf("%-15s %6s %6s %9s %9s %13s %13s %7s  %-22s %s\n", "topology", "NPUs", "chunks",
           "synth_s", "RSS_MiB", "collective_us", "bound_us", "eff", "target", "met");
    for (int i = 0; i < nrows; i++) {
        int fds[2];
        if (pipe(fds))
            return 1;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            run_child(rows[i].spec, trials, fds[1]);
        }
        close(fds[1]);
        result_t r = {0};
        ssize_t got = read(fds[0], &r, sizeof r);
        close(fds[0]);
        int status;
        struct rusage ru;
        wait4(pid, &status, 0, &ru);
        if (got != (ssize_t)sizeof r || !r.ok) {
            printf("%-15s error: %s\n", rows[i].spec, got == (ssize_t)sizeof r ? r.err : "crashed");
            all_met = 0;
            continue;
        }
        double eff = r.bound_us / r.time_us;
        char target[64] = "-";
        int met = 1;
        if (rows[i].limit_s > 0) {
            met = r.synth_s < rows[i].limit_s && r.time_us <= r.bound_us * (1 + rows[i].tolerance + 1e-9);
            if (rows[i].tolerance > 0)
                snprintf(target, sizeof target, "<%gs, within %g%%", rows[i].limit_s,
                         100 * rows[i].tolerance);
            else
                snprintf(target, sizeof target, "<%gs, = bound", rows[i].limit_s);
        }
        all_met &= met;
        printf("%-15s %6d %6d %9.3f %9.1f %13.3f %13.3f %6.1f%%  %-22s %s\n", rows[i].spec, r.npus,
               r.chunks, r.synth_s, ru.ru_maxrss / 1024.0, r.time_us, r.bound_us, 100 * eff, target,
               rows[i].limit_s > 0 ? (met ? "yes" : "NO") : "-");
    }
    return all_met ? 0 : 3;
}
