/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every parameter of coll/tacos, in one table that both bindings read: the
 * Open MPI component registers entry `name` as the MCA variable
 * coll_tacos_<name> (ompi_info lists it), the PMPI library reads
 * TACOS_<NAME> from the environment.  The defaults, the ranges, which must
 * be equal on every rank and the help live here only, so the two cannot
 * drift (tests/mpi/test_params.sh checks both against this table).  The
 * docs' parameter tables are generated from it too (tests/unit/gen_params.sh;
 * tests/unit/test_param_docs.sh fails where one differs).
 */
#ifndef TACOS_PARAMS_H
#define TACOS_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "tacos_comm.h"

typedef enum { TACOS_PT_INT, TACOS_PT_BOOL, TACOS_PT_SIZE, TACOS_PT_STRING } tacos_param_type_t;

/* which bindings read a parameter */
enum { TACOS_PB_OMPI = 1, TACOS_PB_PMPI = 2, TACOS_PB_BOTH = 3 };

typedef struct {
    const char *name;        /* coll_tacos_<name>, TACOS_<NAME> */
    tacos_param_type_t type;
    long long def;           /* the default (INT, BOOL, SIZE) */
    const char *def_string;  /* the default (STRING; NULL: empty) */
    long long lo, hi;        /* the values allowed (INT, SIZE) */
    int all_equal;           /* decides which messages a rank sends: must be equal on
                              * every rank (checked at a communicator's first plan) */
    int settable;            /* Open MPI: writable through MPI_T, read when a
                              * communicator is created */
    int bindings;            /* TACOS_PB_*: who reads it */
    int level;               /* ompi_info level, as Open MPI's components tier them:
                              * 1-3 users, 4-6 tuners, 7-9 implementors (each
                              * basic, detailed, all).  The few most users need
                              * are at 1-4 (the docs' "basic" table), the rest
                              * at 5-9 */
    ptrdiff_t field;         /* its place in tacos_settings_t, or -1 (the binding's own) */
    const char *help;        /* what it does: short, factual, no measurements; one
                              * sentence of tacos_param_help adds whether it must be
                              * equal on all ranks and is writable through MPI_T */
    const char *def_doc;     /* the default as the docs state it where the build
                              * decides it; NULL: def or def_string */
} tacos_param_t;

enum {
    TACOS_P_ENABLE,
    TACOS_P_PRIORITY,
    TACOS_P_VERBOSE,
    TACOS_P_MIN_BYTES,
    TACOS_P_ROOTED_MIN_BYTES,
    TACOS_P_ROOTED_NET_MIN_BYTES,
    TACOS_P_GATHER_MIN_BYTES,
    TACOS_P_DETERMINISTIC,
    TACOS_P_TOPO_FILE,
    TACOS_P_FABRIC_FILE,
    TACOS_P_CHUNKS,
    TACOS_P_CHUNKS_PER_MESSAGE,
    TACOS_P_MESSAGE_BYTES,
    TACOS_P_UNWIND_DEGREE,
    TACOS_P_HIERARCHY,
    TACOS_P_SEED,
    TACOS_P_TRIALS,
    TACOS_P_REUSE_PERCENT,
    TACOS_P_PROBE,
    TACOS_P_PROBE_HWLOC_XML,
    TACOS_P_PROBE_GPU,
    TACOS_P_UCX_LIB,
    TACOS_P_CALIBRATE,
    TACOS_P_MEASURE,
    TACOS_P_INFER_HOSTS,
    TACOS_P_CACHE_SIZE,
    TACOS_P_SCHEDULE_DIR,
    TACOS_P_NONBLOCKING,
    TACOS_P_V_SCHEDULES,
    TACOS_P_NET_PIECE_BYTES,
    TACOS_P_SCRATCH_MAX_BYTES,
    TACOS_P_DUMP_DIR,
    TACOS_P_CUDA,
    TACOS_P_STAGE,
    TACOS_P_STAGE_MIN_BYTES,
    TACOS_P_CUDA_IPC_MIN_BYTES,
    TACOS_NPARAMS
};

extern const tacos_param_t tacos_params[TACOS_NPARAMS];

/* A parameter's value, in the storage its type takes (Open MPI's MCA
 * variables write into it). */
typedef union {
    int i;     /* INT */
    bool b;    /* BOOL */
    size_t z;  /* SIZE */
    char *s;   /* STRING (NULL: empty) */
} tacos_param_value_t;

/* v[0..TACOS_NPARAMS) = the defaults. */
void tacos_params_default(tacos_param_value_t *v);

/* The settings every parameter's default gives (previous: "the previous
 * component"; param_prefix and net_piece unset). */
tacos_settings_t tacos_settings_default(void);

/* Parameter i from text (the environment's TACOS_<NAME>): 0, or -1 with
 * *v unchanged and what is allowed in err ("not an integer from 0 to 3"). */
int tacos_param_parse(int i, const char *text, tacos_param_value_t *v, char *err, size_t n);

/* Parameter i's help as ompi_info shows it: help, then "Must be equal on
 * all ranks." where all_equal and "Writable through MPI_T, read when a
 * communicator is created." where settable. */
void tacos_param_help(int i, char *buf, size_t n);

/* Value v of parameter i as text ("1", "65536", "" for an empty string). */
void tacos_param_format(int i, const tacos_param_value_t *v, char *buf, size_t n);

/* The settings the values give (fields of parameters with one; the
 * binding fills the rest: previous, param_prefix, net_piece). */
void tacos_params_settings(const tacos_param_value_t *v, tacos_settings_t *s);

#endif
