/* Prints the core's parameter table (core/params.c), one line each:
 * name, who reads it (ompi, pmpi, both), default.  test_params.sh checks
 * ompi_info and the PMPI library against it. */
#include <stdio.h>
#include <string.h>

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
    /* the defaults the bindings start from agree with the table */
    tacos_settings_t fixed = TACOS_SETTINGS_DEFAULT, table = TACOS_SETTINGS_DEFAULT;
    tacos_params_settings(v, &table);
    int differ = 0;
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        size_t len = p->type == TACOS_PT_SIZE ? sizeof(size_t)
                     : p->type == TACOS_PT_STRING ? sizeof(char *) : sizeof(int);
        if (p->field < 0 || p->type == TACOS_PT_STRING)
            continue;
        if (memcmp((char *)&fixed + p->field, (char *)&table + p->field, len)) {
            fprintf(stderr, "TACOS_SETTINGS_DEFAULT differs from the table for %s\n", p->name);
            differ = 1;
        }
    }
    return differ;
}
