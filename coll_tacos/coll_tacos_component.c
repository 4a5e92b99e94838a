/* SPDX-License-Identifier: BSD-3-Clause */
/* Component: MCA parameters, open/close, and the communicator query. */
#include "ompi_config.h"

#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/proc/proc.h"

#include "coll_tacos.h"

static int tacos_register(void);
static int tacos_open(void);
static int tacos_close(void);
static int tacos_init_query(bool enable_progress_threads, bool enable_mpi_threads);

mca_coll_tacos_component_t mca_coll_tacos_component = {
    .super = {
        .collm_version = {
            TACOS_COLL_BASE_VERSION,
            .mca_component_name = "tacos",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = tacos_open,
            .mca_close_component = tacos_close,
            .mca_register_component_params = tacos_register,
        },
        .collm_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .collm_init_query = tacos_init_query,
        .collm_comm_query = mca_coll_tacos_comm_query,
    },
    .output = -1,
};

/* Every parameter of the core's table (params.h) that Open MPI reads, as
 * the MCA variable coll_tacos_<name>: ompi_info lists it at its level;
 * settable ones can be written through MPI_T; those that decide which
 * messages a rank sends have scope ALL_EQ (the core checks them at a
 * communicator's first plan). */
static int tacos_register(void)
{
    static const mca_base_var_type_t types[] = {
        [TACOS_PT_INT] = MCA_BASE_VAR_TYPE_INT, [TACOS_PT_BOOL] = MCA_BASE_VAR_TYPE_BOOL,
        [TACOS_PT_SIZE] = MCA_BASE_VAR_TYPE_SIZE_T, [TACOS_PT_STRING] = MCA_BASE_VAR_TYPE_STRING};
    static char help[TACOS_NPARAMS][2048]; /* kept: registered for the component's life */
    mca_coll_tacos_component_t *c = &mca_coll_tacos_component;
    tacos_params_default(c->values);
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        if (!(p->bindings & TACOS_PB_OMPI))
            continue;
        tacos_param_help(i, help[i], sizeof help[i]);
        (void)mca_base_component_var_register(
            &c->super.collm_version, p->name, help[i], types[p->type], NULL, 0,
            p->settable ? MCA_BASE_VAR_FLAG_SETTABLE : 0, OPAL_INFO_LVL_1 + (p->level - 1),
            p->all_equal  ? MCA_BASE_VAR_SCOPE_ALL_EQ
            : p->settable ? MCA_BASE_VAR_SCOPE_LOCAL
                          : MCA_BASE_VAR_SCOPE_READONLY,
            &c->values[i]);
    }
    return OMPI_SUCCESS;
}

static int tacos_open(void)
{
#if OMPI_MAJOR_VERSION >= 5
    /* built with stand-ins for thread headers Open MPI did not install
     * (configure; compat/opal-threads): the mutex libopen-pal was built
     * with must be the one these headers describe, or nothing is safe */
    size_t theirs = OBJ_CLASS(opal_mutex_t)->cls_sizeof;
    if (theirs != sizeof(opal_mutex_t)) {
        opal_output(0, "coll:tacos: not loaded: Open MPI's opal_mutex_t has %zu bytes, the headers "
                       "coll/tacos was built with say %zu; build it again against this Open MPI",
                    theirs, sizeof(opal_mutex_t));
        return OMPI_ERROR;
    }
#endif
    mca_coll_tacos_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_tacos_component.output, TACOS_PARAM(VERBOSE).i);
    return OMPI_SUCCESS;
}

static int tacos_close(void)
{
    opal_progress_unregister(mca_coll_tacos_progress); /* where it was registered */
    tacos_comm_forget_networks();
    if (mca_coll_tacos_component.output >= 0)
        opal_output_close(mca_coll_tacos_component.output);
    mca_coll_tacos_component.output = -1;
    return OMPI_SUCCESS;
}

/* net_piece_bytes -1: the TCP BTL's eager limit less the PML's headers,
 * where ob1 sends over TCP (the PML is selected before coll). */
static size_t auto_net_piece(void)
{
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    int idx = mca_base_var_find("opal", "btl", "tcp", "eager_limit");
    const size_t *eager = NULL;
    if (strcmp(pml, "ob1") || idx < 0 ||
        mca_base_var_get_value(idx, (const void *)&eager, NULL, NULL) != OPAL_SUCCESS || !eager)
        return 0;
    return *eager > 1024 ? *eager - 256 : 0;
}

static int tacos_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    mca_coll_tacos_component_t *c = &mca_coll_tacos_component;
    int bytes = TACOS_PARAM(NET_PIECE_BYTES).i;
    c->net_piece = bytes < 0 ? auto_net_piece() : (size_t)bytes;
    if (OMPI_PROC_MY_NAME->vpid == 0 && c->net_piece)
        opal_output_verbose(5, c->output,
                            "coll:tacos: messages to ranks on other hosts: %zu bytes at most",
                            c->net_piece);
    return OMPI_SUCCESS;
}
