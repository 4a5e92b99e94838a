/* SPDX-License-Identifier: BSD-3-Clause */
/* Minimal test helpers: every failed CHECK prints where and why. */
#ifndef TACOS_CHECK_H
#define TACOS_CHECK_H

#include <stdio.h>
#include <string.h>

#include "tacos_synth.h"

static int check_failures;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            check_failures++;                                                            \
        }                                                                                \
    } while (0)

#define CHECK_OK(expr)                                                                   \
    do {                                                                                 \
        int check_rc_ = (expr);                                                          \
        CHECK(check_rc_ == TACOS_OK, "rc %d: %s", check_rc_, tacos_last_error());        \
    } while (0)

/* Expects error code `code` and a message containing `needle`. */
#define CHECK_ERR(expr, code, needle)                                                    \
    do {                                                                                 \
        int check_rc_ = (expr);                                                          \
        CHECK(check_rc_ == (code) && strstr(tacos_last_error(), (needle)),               \
              "rc %d (want %d), message '%s' (want '%s')", check_rc_, (code),            \
              tacos_last_error(), (needle));                                             \
    } while (0)

static inline int check_report(const char *name)
{
    if (check_failures)
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
    return check_failures ? 1 : 0;
}

/* Uniform-link generator with the defaults used across tests. */
static inline tacos_topo_t *gen(const char *spec)
{
    double bw = 50, lat = 0.5;
    tacos_topo_t *t = NULL;
    if (tacos_topo_generate(spec, &bw, 1, &lat, 1, 1, &t))
        fprintf(stderr, "generate %s: %s\n", spec, tacos_last_error());
    return t;
}

#endif
