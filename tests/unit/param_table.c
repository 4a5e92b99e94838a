/* SPDX-License-Identifier: BSD-3-Clause */
/* Prints the core's parameter table (core/params.c).
 *
 *   param_table                  one line each: name, who reads it (ompi,
 *                                pmpi, both), type, level, default ("-":
 *                                empty); test_params.sh checks ompi_info and
 *                                the PMPI library against it
 *   param_table --markdown SEL   the docs' table of the parameters SEL
 *                                names: all, or basic (levels 1 to 4);
 *                                gen_params.sh puts it between the markers
 *                                <!-- params:begin SEL --> and
 *                                <!-- params:end --> of markdown files
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "params.h"

#define BASIC_LEVEL 4 /* the "basic" table: levels 1 to 4 */

static int alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* s with the characters markdown would take for syntax escaped (an
 * underscore only where it does not join two letters or digits, as in
 * MPI_Bcast: within a word it starts no emphasis) */
static void md_text(const char *s)
{
    for (const char *s0 = s; *s; s++) {
        if (*s == '|' || *s == '*' || *s == '`' || *s == '[' || *s == ']' || *s == '\\' ||
            (*s == '_' && !(s > s0 && alnum(s[-1]) && alnum(s[1]))))
            putchar('\\');
        if (*s == '<')
            fputs("&lt;", stdout);
        else if (*s == '>')
            fputs("&gt;", stdout);
        else
            putchar(*s);
    }
}

static void md_type(const tacos_param_t *p)
{
    switch (p->type) {
    case TACOS_PT_BOOL: fputs("bool", stdout); return;
    case TACOS_PT_STRING: fputs("string", stdout); return;
    case TACOS_PT_SIZE: fputs("size", stdout); break;
    default: fputs("int", stdout);
    }
    long long top = p->type == TACOS_PT_SIZE ? (long long)(SIZE_MAX >> 1) : INT_MAX;
    long long bottom = p->type == TACOS_PT_SIZE ? 0 : -INT_MAX;
    if (p->lo <= bottom && p->hi >= top)
        return;
    if (p->hi >= top)
        printf(" ≥ %lld", p->lo);
    else
        printf(" %lld to %lld", p->lo, p->hi);
}

static void md_default(int i, const tacos_param_value_t *v)
{
    const tacos_param_t *p = &tacos_params[i];
    char def[256];
    if (p->def_doc) {
        md_text(p->def_doc);
        return;
    }
    tacos_param_format(i, v, def, sizeof def);
    if (p->type == TACOS_PT_BOOL)
        fputs(v->b ? "`true`" : "`false`", stdout);
    else if (!*def)
        fputs("(empty)", stdout);
    else
        printf("`%s`", def);
}

static void upper(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        out[k++] = *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;
    out[k] = 0;
}

static int markdown(const char *sel)
{
    int most = !strcmp(sel, "all") ? 9 : !strcmp(sel, "basic") ? BASIC_LEVEL : 0;
    if (!most) {
        fprintf(stderr, "param_table: unknown selection '%s' (all, basic)\n", sel);
        return 2;
    }
    tacos_param_value_t v[TACOS_NPARAMS];
    tacos_params_default(v);
    puts("| Parameter (Open MPI) | Environment (MPICH) | Type | Default | Equal on all ranks | "
         "Level | What it does |");
    puts("|---|---|---|---|---|---|---|");
    /* by level, then in the table's order */
    for (int level = 1; level <= most; level++)
        for (int i = 0; i < TACOS_NPARAMS; i++) {
            const tacos_param_t *p = &tacos_params[i];
            char env[64];
            if (p->level != level)
                continue;
            upper(p->name, env, sizeof env);
            fputs("| ", stdout);
            if (p->bindings & TACOS_PB_OMPI)
                printf("`coll_tacos_%s`", p->name);
            else
                fputs("—", stdout);
            fputs(" | ", stdout);
            if (p->bindings & TACOS_PB_PMPI)
                printf("`TACOS_%s`", env);
            else
                fputs("—", stdout);
            fputs(" | ", stdout);
            md_type(p);
            fputs(" | ", stdout);
            md_default(i, &v[i]);
            printf(" | %s | %d | ", p->all_equal ? "yes" : "no", p->level);
            md_text(p->help);
            putchar('.');
            if (p->settable && (p->bindings & TACOS_PB_OMPI))
                fputs(" Open MPI: writable through MPI_T, read when a communicator is created.",
                      stdout);
            puts(" |");
        }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--markdown"))
        return markdown(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: param_table [--markdown all|basic]\n");
        return 2;
    }
    tacos_param_value_t v[TACOS_NPARAMS];
    tacos_params_default(v);
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        char def[256];
        tacos_param_format(i, &v[i], def, sizeof def);
        printf("%s %s %s %d %s\n", p->name,
               p->bindings == TACOS_PB_BOTH ? "both" : p->bindings == TACOS_PB_OMPI ? "ompi" : "pmpi",
               p->type == TACOS_PT_BOOL ? "bool" : p->type == TACOS_PT_STRING ? "string" : "int",
               p->level, *def ? def : "-");
    }
    return 0;
}
