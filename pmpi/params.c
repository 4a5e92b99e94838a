/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libtacos-pmpi's parameters: every parameter of the core's table
 * (params.h) that the library reads, from the TACOS_<NAME> environment
 * variables, into the settings each communicator's state starts from; and
 * pmpi_say, the library's messages at the verbosity they set.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "params.h"

#include "tacos_pmpi.h"

static tacos_settings_t settings; /* pmpi_read_settings: from the parameter table */

static tacos_param_value_t values[TACOS_NPARAMS];

const tacos_settings_t *pmpi_settings(void)
{
    return &settings;
}

/* Every parameter of the core's table (params.h) the PMPI library reads,
 * from TACOS_<NAME>: a value that is not allowed keeps the default, with
 * one message (rank 0 of the world, or every process before MPI_Init). */
void pmpi_read_settings(void)
{
    int me = 0, up = 0;
    PMPI_Initialized(&up);
    if (up)
        PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    tacos_params_default(values);
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        char name[64] = "TACOS_", err[256];
        for (size_t k = 0; p->name[k] && k + 7 < sizeof name; k++)
            name[6 + k] = (char)toupper((unsigned char)p->name[k]), name[7 + k] = 0;
        const char *e = getenv(name);
        if (!(p->bindings & TACOS_PB_PMPI) || !e || (!*e && p->type != TACOS_PT_STRING))
            continue;
        if (tacos_param_parse(i, e, &values[i], err, sizeof err) && me == 0)
            fprintf(stderr, "coll:tacos: %s=%s is %s; using the default\n", name, e, err);
    }
    settings = tacos_settings_default();
    tacos_params_settings(values, &settings);
    for (int i = 0; i < TACOS_NPARAMS && me == 0 && settings.verbose >= 10; i++) {
        char v[256];
        tacos_param_format(i, &values[i], v, sizeof v);
        if (tacos_params[i].bindings & TACOS_PB_PMPI)
            fprintf(stderr, "coll:tacos: parameter %s = %s\n", tacos_params[i].name, v);
    }
    settings.param_prefix = "TACOS_";
    settings.previous = "the MPI library's own collectives";
    pmpi_memory_settings(values[TACOS_P_CUDA].b, values[TACOS_P_STAGE].i,
                         values[TACOS_P_STAGE_MIN_BYTES].z);
}

void pmpi_say(int level, const char *fmt, ...)
{
    if (level > settings.verbose)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "coll:tacos: %s\n", msg);
}

void pmpi_event(const char *name, int mode, const char *path, const char *why)
{
    if (settings.verbose < 10)
        return;
    char base[48], event[TACOS_EVENT_MAX];
    const char *init = mode == TACOS_PERSISTENT ? strstr(name, "_init") : NULL;
    if (mode == TACOS_NONBLOCKING && name[0] == 'I')
        name++;
    size_t n = init ? (size_t)(init - name) : strlen(name);
    snprintf(base, sizeof base, "%.*s%s", (int)n, name, init ? init + 5 : "");
    pmpi_say(10, "%s", tacos_event(event, base, (tacos_mode_t)mode, path, why));
}
