/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm's topology.conf (the tree plugin's SwitchName lines) and its
 * hostlist expressions, read into a checked forest of switches and the
 * nodes under them (issue 59); a topology.yaml's tree read as those lines
 * (fabric_yaml.c).  Every limit is checked before the memory it
 * bounds is allocated, so a hostile range fails fast with a message. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "probe_internal.h"

#define NAME_MAX_LEN (TACOS_PROBE_NAME - 1)

/* ---- hostlist expressions ---- */

static int is_sep(char c) { return c == ',' || c == ' ' || c == '\t'; }

/* A byte a name may hold: printable, not a separator, bracket, '=', quote. */
static int is_name_char(char c)
{
    unsigned char u = (unsigned char)c;
    return u > ' ' && u != 0x7f && !strchr(",[]=\"", c);
}

/* Reads digits at *p (at most 9: numbers up to TACOS_HOSTLIST_MAX_NUMBER);
 * *width = how many.  Returns -1 when there are none or too many. */
static long read_number(const char **p, int *width)
{
    const char *s = *p;
    long v = 0;
    int w = 0;
    while (isdigit((unsigned char)s[w])) {
        if (w == 9)
            return -1;
        v = v * 10 + (s[w] - '0');
        w++;
    }
    if (w == 0)
        return -1;
    *p = s + w;
    *width = w;
    return v;
}

static int digits(long v)
{
    int d = 1;
    while (v >= 10)
        v /= 10, d++;
    return d;
}

/* One range of a bracket group: lo-hi (or lo alone), printed `width` wide. */
typedef struct {
    long lo, hi;
    int width;
} range_t;

/* Parses the range at *p (inside brackets) and moves past it. */
static int read_range(const char **p, const char *what, range_t *r)
{
    int w, wh;
    const char *s = *p;
    if ((r->lo = read_number(&s, &w)) < 0)
        return tacos_error(TACOS_ERR_PARSE, "%s: '%.20s' in brackets is not a number or range "
                           "(numbers of at most 9 digits)", what, *p);
    r->width = w;
    r->hi = r->lo;
    if (*s == '-') {
        s++;
        if ((r->hi = read_number(&s, &wh)) < 0)
            return tacos_error(TACOS_ERR_PARSE, "%s: range '%.20s' has no upper bound "
                               "(numbers of at most 9 digits)", what, *p);
        if (r->hi < r->lo)
            return tacos_error(TACOS_ERR_PARSE, "%s: range %ld-%ld is reversed", what, r->lo,
                               r->hi);
    }
    *p = s;
    return TACOS_OK;
}

/* Checks the term at *p (up to a separator or the end) and moves past it:
 * *count = the names it expands to (capped at max + 1), *len = the longest. */
static int check_term(const char **p, const char *what, size_t max, size_t *count, size_t *len)
{
    const char *s = *p;
    size_t c = 1, l = 0;
    int groups = 0;
    while (*s && !is_sep(*s)) {
        if (*s == '[') {
            if (++groups > TACOS_HOSTLIST_MAX_GROUPS)
                return tacos_error(TACOS_ERR_PARSE, "%s: more than %d bracket groups in one name",
                                   what, TACOS_HOSTLIST_MAX_GROUPS);
            s++;
            if (*s == ']')
                return tacos_error(TACOS_ERR_PARSE, "%s: empty brackets", what);
            size_t gc = 0;
            int gl = 0;
            for (;;) {
                range_t r;
                int rc = read_range(&s, what, &r);
                if (rc)
                    return rc;
                gc += (size_t)(r.hi - r.lo + 1);
                if (gc > max)
                    gc = max + 1; /* keeps the product below overflow */
                int w = r.width > digits(r.hi) ? r.width : digits(r.hi);
                if (w > gl)
                    gl = w;
                if (*s == ',') {
                    s++;
                    continue;
                }
                if (*s == ']')
                    break;
                if (!*s)
                    return tacos_error(TACOS_ERR_PARSE, "%s: missing ']'", what);
                if (*s == '[')
                    return tacos_error(TACOS_ERR_PARSE, "%s: nested '['", what);
                return tacos_error(TACOS_ERR_PARSE, "%s: '%c' in brackets (only numbers, "
                                   "ranges lo-hi and commas)", what, *s);
            }
            s++; /* the ']' */
            c = gc && c > max / gc ? max + 1 : c * gc;
            l += (size_t)gl;
        } else if (*s == ']') {
            return tacos_error(TACOS_ERR_PARSE, "%s: ']' without '['", what);
        } else if (!is_name_char(*s)) {
            return tacos_error(TACOS_ERR_PARSE, "%s: byte 0x%02x is not allowed in a name",
                               what, (unsigned char)*s);
        } else {
            s++;
            l++;
        }
        if (l > NAME_MAX_LEN)
            return tacos_error(TACOS_ERR_PARSE, "%s: a name longer than %d bytes", what,
                               NAME_MAX_LEN);
    }
    *p = s;
    *count = c;
    *len = l;
    return TACOS_OK;
}

/* Writes the names of the (checked) term at s, between s and end, with
 * `buf` holding the first `len` bytes of each, to names[*n...]. */
static void expand_term(const char *s, const char *end, char *buf, size_t len,
                        char (*names)[TACOS_PROBE_NAME], int *n)
{
    while (s < end && *s != '[')
        buf[len++] = *s++;
    if (s == end) {
        buf[len] = '\0';
        memcpy(names[(*n)++], buf, len + 1);
        return;
    }
    const char *close = strchr(s, ']');
    s++;
    while (s < close) {
        range_t r;
        read_range(&s, "", &r); /* checked already */
        for (long v = r.lo; v <= r.hi; v++) {
            int w = snprintf(buf + len, TACOS_PROBE_NAME - len, "%0*ld", r.width, v);
            expand_term(close + 1, end, buf, len + (size_t)w, names, n);
        }
        if (*s == ',')
            s++;
    }
}

/* tacos_hostlist_expand with `what` starting every message. */
static int expand(const char *expr, size_t max, const char *what,
                  char (**names)[TACOS_PROBE_NAME], int *n)
{
    size_t total = 0;
    if (max > TACOS_FABRIC_MAX_NODES)
        max = TACOS_FABRIC_MAX_NODES;
    for (const char *s = expr; *s;) {
        if (is_sep(*s)) {
            s++;
            continue;
        }
        size_t c = 0, l = 0;
        int rc = check_term(&s, what, max, &c, &l);
        if (rc)
            return rc;
        total += c;
        if (total > max)
            return tacos_error(TACOS_ERR_PARSE, "%s: more than %zu names", what, max);
    }
    char(*v)[TACOS_PROBE_NAME] = malloc((total ? total : 1) * sizeof *v);
    if (!v)
        return tacos_error(TACOS_ERR_NOMEM, "%s: out of memory for %zu names", what, total);
    int k = 0;
    for (const char *s = expr; *s;) {
        if (is_sep(*s)) {
            s++;
            continue;
        }
        const char *e = s;
        for (int in = 0; *e && (in || !is_sep(*e)); e++)
            in = *e == '[' ? 1 : *e == ']' ? 0 : in;
        char buf[TACOS_PROBE_NAME];
        expand_term(s, e, buf, 0, v, &k);
        s = e;
    }
    *names = v;
    *n = k;
    return TACOS_OK;
}

int tacos_hostlist_expand(const char *expr, size_t max, char (**names)[TACOS_PROBE_NAME], int *n)
{
    if (!expr || !names || !n)
        return tacos_error(TACOS_ERR_ARG, "tacos_hostlist_expand: NULL argument");
    char what[64];
    snprintf(what, sizeof what, "hostlist '%.40s%s'", expr, strlen(expr) > 40 ? "..." : "");
    return expand(expr, max, what, names, n);
}

/* ---- an index of names (open addressing; -1 empty) ---- */

typedef struct {
    int *slot;
    size_t cap, n;
} name_index_t;

/* The name of entry i: entries are `stride` bytes apart from `base`, each
 * starting with its name. */
#define NAME_AT(base, stride, i) ((const char *)(base) + (size_t)(i) * (stride))

static size_t index_find(const name_index_t *x, const void *base, size_t stride,
                         const char *name)
{
    size_t h = (size_t)tacos_probe_host_hash(name) & (x->cap - 1);
    while (x->slot[h] >= 0 && strcmp(NAME_AT(base, stride, x->slot[h]), name))
        h = (h + 1) & (x->cap - 1);
    return h;
}

/* Entry of `name`, or -1. */
static int index_get(const name_index_t *x, const void *base, size_t stride, const char *name)
{
    return x->cap ? x->slot[index_find(x, base, stride, name)] : -1;
}

/* Adds entry i (whose name is not in x yet). */
static int index_add(name_index_t *x, const void *base, size_t stride, int i)
{
    if (2 * (x->n + 1) > x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        int *slot = malloc(cap * sizeof *slot);
        if (!slot)
            return tacos_error(TACOS_ERR_NOMEM, "out of memory indexing names");
        for (size_t k = 0; k < cap; k++)
            slot[k] = -1;
        name_index_t y = {slot, cap, 0};
        for (size_t k = 0; k < x->cap; k++)
            if (x->slot[k] >= 0)
                y.slot[index_find(&y, base, stride, NAME_AT(base, stride, x->slot[k]))] =
                    x->slot[k];
        free(x->slot);
        y.n = x->n;
        *x = y;
    }
    x->slot[index_find(x, base, stride, NAME_AT(base, stride, i))] = i;
    x->n++;
    return TACOS_OK;
}

/* ---- topology.conf ---- */

/* What a file is read into while its lines are read. */
typedef struct {
    const char *name;
    tacos_fabric_conf_t *f;
    size_t cap_sw, cap_child, cap_nodes;
    char (**child_names)[TACOS_PROBE_NAME]; /* [switch]: Switches= names, to resolve */
    name_index_t sw_index, node_index;
} reader_t;

void tacos_fabric_conf_free(tacos_fabric_conf_t *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->nswitches; i++)
        free(f->switches[i].children);
    free(f->switches);
    free(f->nodes);
    free(f->host_index);
    free(f);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return TACOS_OK;
    size_t c = *cap ? 2 * *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
    *p = q;
    *cap = c;
    return TACOS_OK;
}

/* The value of a key (its `len` bytes at v) as a string, for messages and
 * for the hostlist parser. */
static char *value_dup(const char *v, size_t len)
{
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, v, len);
        s[len] = '\0';
    }
    return s;
}

/* "path:LINE: Key=value" (shortened) starting the messages of a value. */
static void set_what(char *what, size_t len, const char *name, int line, const char *key,
                     const char *v)
{
    snprintf(what, len, "%.80s:%d: %s=%.40s%s", name, line, key, v, strlen(v) > 40 ? "..." : "");
}

/* Reads one logical line (comments and continuations removed). */
static int read_line(reader_t *r, char *text, int line)
{
    tacos_fabric_conf_t *f = r->f;
    const char *val[4] = {NULL, NULL, NULL, NULL}; /* SwitchName Switches Nodes LinkSpeed */
    size_t vlen[4] = {0, 0, 0, 0};
    static const char *keys[4] = {"SwitchName", "Switches", "Nodes", "LinkSpeed"};
    char *s = text;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        char *tok = s;
        while (*s && *s != '=' && *s != ' ' && *s != '\t')
            s++;
        size_t klen = (size_t)(s - tok);
        if (*s != '=')
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: '%.*s' is not Key=Value", r->name, line,
                               (int)(klen > 40 ? 40 : klen), tok);
        int k = 0;
        while (k < 4 && !(strlen(keys[k]) == klen && !strncasecmp(keys[k], tok, klen)))
            k++;
        if (k == 4) {
            if ((klen == 9 && !strncasecmp(tok, "BlockName", 9)) ||
                (klen == 10 && !strncasecmp(tok, "BlockSizes", 10)))
                return tacos_error(TACOS_ERR_PARSE, "%s:%d: %.*s is topology/block, not a tree "
                                   "(only SwitchName lines are read)", r->name, line, (int)klen,
                                   tok);
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: unknown key '%.*s' (a tree's lines have "
                               "SwitchName, Switches, Nodes and LinkSpeed)", r->name, line,
                               (int)(klen > 40 ? 40 : klen), tok);
        }
        if (val[k])
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: %s= given twice", r->name, line, keys[k]);
        val[k] = ++s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
        vlen[k] = (size_t)(s - val[k]);
        if (!vlen[k])
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: %s= has no value", r->name, line, keys[k]);
    }
    if (!val[0] && !val[1] && !val[2] && !val[3])
        return TACOS_OK; /* blank */
    if (!val[0])
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: no SwitchName=", r->name, line);

    int me = f->nswitches, rc;
    if (me >= TACOS_FABRIC_MAX_SWITCHES)
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: more than %d switches", r->name, line,
                           TACOS_FABRIC_MAX_SWITCHES);
    if ((rc = grow((void **)&f->switches, &r->cap_sw, (size_t)me + 1, sizeof *f->switches)))
        return rc;
    if ((rc = grow((void **)&r->child_names, &r->cap_child, (size_t)me + 1,
                   sizeof *r->child_names)))
        return rc;
    r->child_names[me] = NULL;
    tacos_fabric_switch_t *sw = &f->switches[me];
    memset(sw, 0, sizeof *sw);
    sw->parent = -1;
    sw->line = line;

    /* one name: SwitchName= is read as a hostlist that must name one switch */
    char what[200];
    char(*names)[TACOS_PROBE_NAME] = NULL;
    int n = 0;
    char *v = value_dup(val[0], vlen[0]);
    if (!v)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
    set_what(what, sizeof what, r->name, line, keys[0], v);
    rc = expand(v, 2, what, &names, &n);
    free(v);
    if (rc)
        return rc;
    if (n != 1) {
        free(names);
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: SwitchName= names %s switch (one per line)",
                           r->name, line, n ? "more than one" : "no");
    }
    memcpy(sw->name, names[0], sizeof sw->name);
    free(names);
    int prev = index_get(&r->sw_index, f->switches, sizeof *f->switches, sw->name);
    if (prev >= 0)
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: switch %s is defined again (first on line %d)",
                           r->name, line, sw->name, f->switches[prev].line);
    f->nswitches++;
    if ((rc = index_add(&r->sw_index, f->switches, sizeof *f->switches, me)))
        return rc;

    if (val[3]) {
        const char *p = val[3];
        unsigned long long speed = 0;
        for (size_t i = 0; i < vlen[3]; i++, p++) {
            if (!isdigit((unsigned char)*p) || (speed = speed * 10 + (unsigned)(*p - '0')) >
                                                   0xffffffffull)
                return tacos_error(TACOS_ERR_PARSE, "%s:%d: LinkSpeed=%.*s is not a whole number "
                                   "of at most 4294967295", r->name, line,
                                   (int)(vlen[3] > 20 ? 20 : vlen[3]), val[3]);
        }
        sw->link_speed = (uint32_t)speed;
    }
    if (!val[1] && !val[2])
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: switch %s has neither Switches= nor Nodes=",
                           r->name, line, sw->name);
    if (val[1]) {
        if (!(v = value_dup(val[1], vlen[1])))
            return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
        set_what(what, sizeof what, r->name, line, keys[1], v);
        rc = expand(v, TACOS_FABRIC_MAX_SWITCHES, what, &r->child_names[me], &sw->nchildren);
        free(v);
        if (rc)
            return rc;
        if (!(sw->children = malloc((sw->nchildren ? sw->nchildren : 1) * sizeof(int))))
            return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
    }
    if (val[2]) {
        if (!(v = value_dup(val[2], vlen[2])))
            return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
        set_what(what, sizeof what, r->name, line, keys[2], v);
        rc = expand(v, TACOS_FABRIC_MAX_NODES - (size_t)f->nnodes, what, &names, &n);
        free(v);
        if (rc)
            return rc;
        rc = grow((void **)&f->nodes, &r->cap_nodes, (size_t)f->nnodes + (size_t)n,
                  sizeof *f->nodes);
        for (int i = 0; i < n && !rc; i++) {
            tacos_fabric_node_t *nd = &f->nodes[f->nnodes];
            memcpy(nd->host, names[i], sizeof nd->host);
            nd->leaf = me;
            nd->line = line;
            int at = index_get(&r->node_index, f->nodes, sizeof *f->nodes, nd->host);
            if (at >= 0 && f->nodes[at].leaf == me)
                rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: node %s is listed twice under switch %s",
                                 r->name, line, nd->host, sw->name);
            else if (at >= 0)
                rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: node %s is under switch %s and under "
                                 "switch %s (line %d)", r->name, line, nd->host, sw->name,
                                 f->switches[f->nodes[at].leaf].name, f->nodes[at].line);
            else if (!(rc = index_add(&r->node_index, f->nodes, sizeof *f->nodes, f->nnodes)))
                f->nnodes++;
        }
        free(names);
        if (rc)
            return rc;
    }
    return TACOS_OK;
}

/* Resolves every Switches= name, then checks that the switches form a
 * forest and that no node is also a switch. */
static int link_switches(reader_t *r)
{
    tacos_fabric_conf_t *f = r->f;
    for (int i = 0; i < f->nswitches; i++) {
        tacos_fabric_switch_t *sw = &f->switches[i];
        for (int c = 0; c < sw->nchildren; c++) {
            const char *cn = r->child_names[i][c];
            int j = index_get(&r->sw_index, f->switches, sizeof *f->switches, cn);
            if (j < 0)
                return tacos_error(TACOS_ERR_PARSE, "%s:%d: switch %s lists switch %s, which is "
                                   "not defined", r->name, sw->line, sw->name, cn);
            if (j == i)
                return tacos_error(TACOS_ERR_PARSE, "%s:%d: switch %s lists itself (a cycle)",
                                   r->name, sw->line, sw->name);
            if (f->switches[j].parent == i)
                return tacos_error(TACOS_ERR_PARSE, "%s:%d: switch %s lists switch %s twice",
                                   r->name, sw->line, sw->name, cn);
            if (f->switches[j].parent >= 0) {
                const tacos_fabric_switch_t *p = &f->switches[f->switches[j].parent];
                return tacos_error(TACOS_ERR_PARSE, "%s:%d: switch %s is under switch %s and "
                                   "under switch %s (line %d)", r->name, sw->line, cn, sw->name,
                                   p->name, p->line);
            }
            f->switches[j].parent = i;
            sw->children[c] = j;
        }
    }
    /* one parent each: a cycle is a walk up that comes back to itself */
    unsigned char *state = calloc((size_t)f->nswitches + 1, 1); /* 1 on this walk, 2 done */
    if (!state)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
    int rc = TACOS_OK;
    for (int i = 0; i < f->nswitches && !rc; i++) {
        int j = i;
        while (j >= 0 && !state[j]) {
            state[j] = 1;
            j = f->switches[j].parent;
        }
        if (j >= 0 && state[j] == 1) {
            const tacos_fabric_switch_t *sw = &f->switches[j];
            rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: switch %s is below itself (a cycle through "
                             "switch %s, line %d)", r->name, sw->line, sw->name,
                             f->switches[sw->parent].name, f->switches[sw->parent].line);
        }
        for (j = i; j >= 0 && state[j] == 1; j = f->switches[j].parent)
            state[j] = 2;
    }
    free(state);
    if (rc)
        return rc;
    for (int i = 0; i < f->nswitches; i++)
        f->nroots += f->switches[i].parent < 0;
    for (int i = 0; i < f->nnodes; i++) {
        int j = index_get(&r->sw_index, f->switches, sizeof *f->switches, f->nodes[i].host);
        if (j >= 0)
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: %s is a node and also a switch (line %d)",
                               r->name, f->nodes[i].line, f->nodes[i].host, f->switches[j].line);
    }
    return TACOS_OK;
}

/* Reads the lines of text: '#' to the end of a line is a comment, and a
 * line ending in '\' (after its comment and trailing blanks are removed)
 * continues on the next, as in Slurm's parser. */
static int read_lines(reader_t *r, const char *text)
{
    char *buf = malloc(TACOS_FABRIC_MAX_LINE + 1);
    if (!buf)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
    size_t len = 0;
    int line = 0, first = 0, rc = TACOS_OK;
    for (const char *s = text; *s && !rc;) {
        const char *e = s;
        while (*e && *e != '\n')
            e++;
        if (++line > TACOS_FABRIC_MAX_LINES) {
            rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: more than %d lines", r->name, line,
                             TACOS_FABRIC_MAX_LINES);
            break;
        }
        if (!len)
            first = line;
        const char *c = memchr(s, '#', (size_t)(e - s));
        const char *t = c ? c : e;
        while (t > s && isspace((unsigned char)t[-1]))
            t--;
        int more = t > s && t[-1] == '\\';
        if (more)
            t--;
        if (len + (size_t)(t - s) + 1 > TACOS_FABRIC_MAX_LINE) {
            rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: line longer than %d bytes", r->name, first,
                             TACOS_FABRIC_MAX_LINE);
            break;
        }
        for (const char *p = s; p < t; p++) /* \r and other blanks become spaces */
            buf[len++] = isspace((unsigned char)*p) ? ' ' : *p;
        buf[len++] = ' ';
        s = *e ? e + 1 : e;
        if (!more || !*s) {
            buf[len] = '\0';
            rc = read_line(r, buf, first);
            len = 0;
        }
    }
    free(buf);
    return rc;
}

/* Reads a topology.yaml's tree: its switches as topology.conf lines, each
 * read with the YAML line of its switch. */
static int read_yaml(reader_t *r, const char *text)
{
    char *lines = NULL, *s;
    int *at = NULL, n = 0, rc = tacos_fabric_yaml_lines(text, r->name, &lines, &at, &n);
    s = lines;
    for (int i = 0; i < n && !rc; i++) {
        char *e = strchr(s, '\n');
        *e = '\0';
        rc = read_line(r, s, at[i]);
        s = e + 1;
    }
    free(lines);
    free(at);
    return rc;
}

/* Whether text is a topology.yaml: its name ends in .yaml or .yml, or its
 * first line that is not blank or a comment is "---" or starts "- ". */
static int is_yaml(const char *text, const char *name)
{
    size_t len = strlen(name);
    if ((len > 5 && !strcasecmp(name + len - 5, ".yaml")) ||
        (len > 4 && !strcasecmp(name + len - 4, ".yml")))
        return 1;
    for (const char *s = text; *s;) {
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        if (*s != '#' && *s != '\n')
            return !strncmp(s, "---", 3) || (s[0] == '-' && (s[1] == ' ' || s[1] == '\n'));
        while (*s && *s != '\n')
            s++;
        s += *s == '\n';
    }
    return 0;
}

int tacos_fabric_conf_read_string(const char *text, const char *name, tacos_fabric_conf_t **out)
{
    if (!text || !out)
        return tacos_error(TACOS_ERR_ARG, "tacos_fabric_conf_read_string: NULL argument");
    if (!name)
        name = "<string>";
    if (strlen(text) > TACOS_FABRIC_MAX_BYTES)
        return tacos_error(TACOS_ERR_PARSE, "%s: more than %d bytes", name,
                           TACOS_FABRIC_MAX_BYTES);
    reader_t r = {.name = name};
    if (!(r.f = calloc(1, sizeof *r.f)))
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a fabric file");
    int rc = is_yaml(text, name) ? read_yaml(&r, text) : read_lines(&r, text);
    if (!rc && !r.f->nswitches)
        rc = tacos_error(TACOS_ERR_PARSE, "%s: no SwitchName lines", name);
    if (!rc)
        rc = link_switches(&r);
    for (int i = 0; i < r.f->nswitches; i++)
        free(r.child_names[i]);
    free(r.child_names);
    free(r.sw_index.slot);
    if (rc) {
        free(r.node_index.slot);
        tacos_fabric_conf_free(r.f);
        return rc;
    }
    r.f->host_index = r.node_index.slot;
    r.f->host_index_cap = r.node_index.cap;
    r.f->hash = 1469598103934665603ull; /* FNV-1a */
    for (const char *c = text; *c; c++)
        r.f->hash = (r.f->hash ^ (unsigned char)*c) * 1099511628211ull;
    *out = r.f;
    return TACOS_OK;
}

int tacos_fabric_conf_read_file(const char *path, tacos_fabric_conf_t **out)
{
    if (!path || !out)
        return tacos_error(TACOS_ERR_ARG, "tacos_fabric_conf_read_file: NULL argument");
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return tacos_error(TACOS_ERR_IO, "cannot open fabric file %s", path);
    char *text = malloc(TACOS_FABRIC_MAX_BYTES + 2);
    if (!text) {
        fclose(fp);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading %s", path);
    }
    size_t n = fread(text, 1, TACOS_FABRIC_MAX_BYTES + 1, fp);
    int err = ferror(fp);
    fclose(fp);
    int rc;
    if (err)
        rc = tacos_error(TACOS_ERR_IO, "cannot read fabric file %s", path);
    else if (n > TACOS_FABRIC_MAX_BYTES)
        rc = tacos_error(TACOS_ERR_PARSE, "%s: more than %d bytes", path, TACOS_FABRIC_MAX_BYTES);
    else if (memchr(text, '\0', n))
        rc = tacos_error(TACOS_ERR_PARSE, "%s: a NUL byte (not a text file)", path);
    else {
        text[n] = '\0';
        rc = tacos_fabric_conf_read_string(text, path, out);
    }
    free(text);
    return rc;
}

/* ---- lookup ---- */

static size_t short_len(const char *s)
{
    const char *dot = strchr(s, '.');
    return dot ? (size_t)(dot - s) : strlen(s);
}

int tacos_fabric_conf_leaf_of(const tacos_fabric_conf_t *f, const char *host)
{
    if (!f || !host)
        return -1;
    name_index_t x = {f->host_index, f->host_index_cap, (size_t)f->nnodes};
    int i = index_get(&x, f->nodes, sizeof *f->nodes, host);
    if (i >= 0)
        return f->nodes[i].leaf;
    size_t l = short_len(host);
    for (i = 0; i < f->nnodes; i++)
        if (short_len(f->nodes[i].host) == l && !strncmp(f->nodes[i].host, host, l))
            return f->nodes[i].leaf;
    return -1;
}
