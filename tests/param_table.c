/* Prints the core's parameter table (core/params.c), one line each:
 * name, who reads it (ompi, pmpi, both), default.  test_params.sh checks
 * ompi_info and the PMPI library against it. */
#include <stdio.h>

#include "params.h"

int main(void)
{
    tacos_param_value_t v[TACOS_NPARAMS];
    tacos_params_default(v);
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        char def[256];
        tacos_param_format(i, &v[i], def, sizeof def);
        printf("%s %s %s %s\n", p->name,
               p->bindings == TACOS_PB_BOTH ? "both" : p->bindings == TACOS_PB_OMPI ? "ompi" : "pmpi",
               p->type == TACOS_PT_BOOL ? "bool" : p->type == TACOS_PT_STRING ? "string" : "int",
               *def ? def : "-");
    }
    return 0;
}
