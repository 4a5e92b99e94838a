/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm's topology.yaml (Slurm 24.11 and later) read as the topology.conf
 * lines of its tree (fabric_conf.c reads those): a list of topologies, each
 * a mapping with `topology`, `cluster_default` and one of `tree`, `block`
 * or `flat`; a tree's `switches` a list of mappings with `switch`, and
 * `children` and/or `nodes` (hostlist expressions, as a string or a list of
 * them).  The tree read is the first with `cluster_default: true`, else the
 * first.
 *
 * The YAML read is the block subset such files are written in: mappings
 * and lists by indentation (spaces), `- ` items (a mapping may start on the
 * item's line), plain or quoted scalars, flow lists of scalars ([a, b]),
 * '#' comments, `---` and `...`.  Anchors, tags, multi-line scalars and flow
 * mappings are refused with the line. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "probe_internal.h"

#define MAX_DEPTH 16

typedef enum { YAML_SCALAR, YAML_MAP, YAML_LIST } kind_t;

/* A node: a scalar (text), a mapping (keys[i] -> kids[i]) or a list (kids). */
typedef struct node {
    kind_t kind;
    int line;
    char *text;
    char **keys;
    struct node **kids;
    int n;
} node_t;

/* A line of the file: its indentation, its content (comment and trailing
 * blanks removed; changed in place where a `- ` item is read), its number. */
typedef struct {
    int indent, line;
    char *s;
} line_t;

typedef struct {
    const char *name;
    line_t *lines;
    int n, at;
} parser_t;

static void node_free(node_t *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->n; i++) {
        if (x->keys)
            free(x->keys[i]);
        node_free(x->kids[i]);
    }
    free(x->keys);
    free(x->kids);
    free(x->text);
    free(x);
}

static node_t *node_new(kind_t kind, int line)
{
    node_t *x = calloc(1, sizeof *x);
    if (x)
        x->kind = kind, x->line = line;
    return x;
}

/* Appends kid (and key, for a mapping) to x; frees them where memory is
 * short. */
static int node_add(node_t *x, char *key, node_t *kid)
{
    node_t **kids = realloc(x->kids, (size_t)(x->n + 1) * sizeof *kids);
    if (kids)
        x->kids = kids;
    char **keys = x->kind == YAML_MAP ? realloc(x->keys, (size_t)(x->n + 1) * sizeof *keys) : NULL;
    if (keys)
        x->keys = keys;
    if (!kid || !kids || (x->kind == YAML_MAP && !keys)) {
        free(key);
        node_free(kid);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
    }
    if (x->kind == YAML_MAP)
        x->keys[x->n] = key;
    x->kids[x->n++] = kid;
    return TACOS_OK;
}

/* A scalar's text: quotes removed (no escapes); NULL where memory is short. */
static char *scalar_text(const char *s, size_t len)
{
    if (len >= 2 && (s[0] == '"' || s[0] == '\'') && s[len - 1] == s[0])
        s++, len -= 2;
    char *t = malloc(len + 1);
    if (t) {
        memcpy(t, s, len);
        t[len] = '\0';
    }
    return t;
}

/* A value written on its key's or item's line: a scalar, or a flow list of
 * scalars. */
static int inline_value(parser_t *p, const char *s, int line, node_t **out)
{
    if (strchr("&*!|>{", *s))
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: '%c' (anchors, tags, block scalars and "
                                            "flow mappings are not read here)",
                           p->name, line, *s);
    if (*s != '[') {
        node_t *x = node_new(YAML_SCALAR, line);
        if (!x || !(x->text = scalar_text(s, strlen(s)))) {
            node_free(x);
            return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
        }
        *out = x;
        return TACOS_OK;
    }
    size_t len = strlen(s);
    if (s[len - 1] != ']')
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: a flow list that does not end on its line",
                           p->name, line);
    node_t *x = node_new(YAML_LIST, line);
    if (!x)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
    int rc = TACOS_OK;
    for (const char *a = s + 1; a < s + len - 1 && !rc;) {
        while (*a == ' ' || *a == ',')
            a++;
        const char *b = a;
        while (b < s + len - 1 && *b != ',')
            b++;
        const char *e = b;
        while (e > a && e[-1] == ' ')
            e--;
        if (e > a && strchr("[{", *a))
            rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: a flow list inside a flow list", p->name,
                             line);
        else if (e > a) {
            node_t *item = node_new(YAML_SCALAR, line);
            if (item && !(item->text = scalar_text(a, (size_t)(e - a)))) {
                node_free(item);
                item = NULL;
            }
            rc = node_add(x, NULL, item);
        }
        a = b;
    }
    if (rc) {
        node_free(x);
        return rc;
    }
    *out = x;
    return TACOS_OK;
}

static int block(parser_t *p, int indent, int depth, node_t **out);

/* The value of a key or item whose line holds nothing more: the block
 * indented under it (for a key, a list may start at the key's indent). */
static int nested(parser_t *p, int indent, int line, int depth, int key, node_t **out)
{
    line_t *l = p->at < p->n ? &p->lines[p->at] : NULL;
    if (l && (l->indent > indent || (key && l->indent == indent && l->s[0] == '-' &&
                                     (l->s[1] == ' ' || !l->s[1]))))
        return block(p, l->indent, depth + 1, out);
    node_t *x = node_new(YAML_SCALAR, line); /* empty: null */
    if (!x || !(x->text = scalar_text("", 0))) {
        node_free(x);
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
    }
    *out = x;
    return TACOS_OK;
}

/* A list at `indent`: its `- ` items. */
static int list(parser_t *p, int indent, int depth, node_t *x)
{
    int rc = TACOS_OK;
    while (!rc && p->at < p->n && p->lines[p->at].indent == indent) {
        line_t *l = &p->lines[p->at];
        if (l->s[0] != '-' || (l->s[1] && l->s[1] != ' '))
            break; /* (a key of the mapping the list is the value of) */
        char *rest = l->s + 1;
        int col = indent + 1;
        while (*rest == ' ')
            rest++, col++;
        node_t *kid = NULL;
        if (!*rest) { /* the item's value below it */
            p->at++;
            rc = nested(p, indent, l->line, depth, 0, &kid);
        } else { /* the item's line read again as the start of its value */
            l->s = rest, l->indent = col;
            rc = block(p, col, depth + 1, &kid);
        }
        if (!rc)
            rc = node_add(x, NULL, kid);
    }
    return rc;
}

/* The position of a mapping key's ':' on a line (outside quotes), or NULL. */
static char *key_colon(char *s)
{
    char quote = 0;
    for (char *c = s; *c; c++) {
        if (quote)
            quote = *c == quote ? 0 : quote;
        else if (*c == '"' || *c == '\'')
            quote = *c;
        else if (*c == ':' && (!c[1] || c[1] == ' '))
            return c;
    }
    return NULL;
}

/* A mapping at `indent`: its `key: value` lines. */
static int map(parser_t *p, int indent, int depth, node_t *x)
{
    int rc = TACOS_OK;
    while (!rc && p->at < p->n && p->lines[p->at].indent == indent) {
        line_t *l = &p->lines[p->at];
        char *colon = key_colon(l->s);
        if (!colon || (l->s[0] == '-' && (l->s[1] == ' ' || !l->s[1])))
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: '%.40s' is not 'key: value'", p->name,
                               l->line, l->s);
        for (int i = 0; i < x->n; i++)
            if ((size_t)(colon - l->s) == strlen(x->keys[i]) &&
                !strncmp(x->keys[i], l->s, (size_t)(colon - l->s)))
                return tacos_error(TACOS_ERR_PARSE, "%s:%d: key '%s' given twice", p->name,
                                   l->line, x->keys[i]);
        char *key = scalar_text(l->s, (size_t)(colon - l->s)), *v = colon + 1;
        while (*v == ' ')
            v++;
        node_t *kid = NULL;
        p->at++;
        rc = !key ? tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml")
             : *v ? inline_value(p, v, l->line, &kid)
                  : nested(p, indent, l->line, depth, 1, &kid);
        if (!rc)
            rc = node_add(x, key, kid);
        else
            free(key);
    }
    return rc;
}

/* The block (a list or a mapping, or one scalar) starting at the current
 * line, whose indentation is `indent`. */
static int block(parser_t *p, int indent, int depth, node_t **out)
{
    line_t *l = &p->lines[p->at];
    if (depth > MAX_DEPTH)
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: nested more than %d deep", p->name, l->line,
                           MAX_DEPTH);
    int is_list = l->s[0] == '-' && (l->s[1] == ' ' || !l->s[1]);
    if (!is_list && !key_colon(l->s)) { /* a scalar alone */
        p->at++;
        return inline_value(p, l->s, l->line, out);
    }
    node_t *x = node_new(is_list ? YAML_LIST : YAML_MAP, l->line);
    if (!x)
        return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
    int rc = is_list ? list(p, indent, depth, x) : map(p, indent, depth, x);
    if (!rc && p->at < p->n && p->lines[p->at].indent > indent)
        rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: indented unlike the lines before it",
                         p->name, p->lines[p->at].line);
    if (rc) {
        node_free(x);
        return rc;
    }
    *out = x;
    return TACOS_OK;
}

/* The file's lines: comments, blank lines and document markers left out. */
static int split(parser_t *p, char *text)
{
    int cap = 0, line = 0;
    for (char *s = text; *s;) {
        char *e = strchr(s, '\n');
        if (e)
            *e = '\0';
        line++;
        char quote = 0, *c = s;
        for (; *c; c++) { /* '#' starts a comment at the start or after a blank */
            if (quote)
                quote = *c == quote ? 0 : quote;
            else if (*c == '"' || *c == '\'')
                quote = *c;
            else if (*c == '#' && (c == s || c[-1] == ' ' || c[-1] == '\t'))
                break;
        }
        while (c > s && isspace((unsigned char)c[-1]))
            c--;
        *c = '\0';
        int indent = 0;
        while (s[indent] == ' ')
            indent++;
        if (s[indent] == '\t')
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: a tab indents the line (YAML indents "
                                                "with spaces)",
                               p->name, line);
        if (s[indent] && strcmp(s, "---") && strcmp(s, "...")) {
            if (p->n == cap) {
                line_t *l = realloc(p->lines, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *l);
                if (!l)
                    return tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
                p->lines = l;
            }
            p->lines[p->n++] = (line_t){indent, line, s + indent};
        }
        s = e ? e + 1 : c;
        if (!e)
            break;
    }
    return TACOS_OK;
}

static node_t *get(const node_t *x, const char *key)
{
    for (int i = 0; x->kind == YAML_MAP && i < x->n; i++)
        if (!strcmp(x->keys[i], key))
            return x->kids[i];
    return NULL;
}

/* Appends " Key=v1,v2" for a scalar or a list of scalars. */
static int append(const char *name, const node_t *v, const char *key, char *buf, size_t room,
                  size_t *at)
{
    if (v->kind == YAML_MAP)
        return tacos_error(TACOS_ERR_PARSE, "%s:%d: %s is a mapping, not a hostlist", name,
                           v->line, key);
    *at += (size_t)snprintf(buf + *at, room - *at, " %s=", key);
    for (int i = 0; i < (v->kind == YAML_LIST ? v->n : 1) && *at < room; i++) {
        const node_t *s = v->kind == YAML_LIST ? v->kids[i] : v;
        if (s->kind != YAML_SCALAR)
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: %s holds a list or a mapping", name,
                               s->line, key);
        if (strpbrk(s->text, " \t="))
            return tacos_error(TACOS_ERR_PARSE, "%s:%d: %s '%.40s' holds a blank or '='", name,
                               s->line, key, s->text);
        *at += (size_t)snprintf(buf + *at, room - *at, "%s%s", i ? "," : "", s->text);
    }
    return TACOS_OK;
}

/* The tree's switches as topology.conf lines. */
static int tree_lines(const char *name, const node_t *switches, char **lines, int **at, int *n)
{
    size_t room = TACOS_FABRIC_MAX_BYTES + 1, len = 0;
    char *buf = malloc(room);
    int *where = malloc((size_t)(switches->n ? switches->n : 1) * sizeof *where), rc = TACOS_OK;
    if (!buf || !where)
        rc = tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
    for (int i = 0; i < switches->n && !rc; i++) {
        const node_t *sw = switches->kids[i], *v;
        if (sw->kind != YAML_MAP) {
            rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: a switch is not a mapping", name, sw->line);
            break;
        }
        for (int k = 0; k < sw->n && !rc; k++)
            if (strcmp(sw->keys[k], "switch") && strcmp(sw->keys[k], "children") &&
                strcmp(sw->keys[k], "nodes"))
                rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: unknown key '%.40s' (a switch has "
                                                  "switch, children and nodes)",
                                 name, sw->kids[k]->line, sw->keys[k]);
        if (!rc && !((v = get(sw, "switch")) && v->kind == YAML_SCALAR && v->text[0]))
            rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: a switch without 'switch: NAME'", name,
                             sw->line);
        where[i] = sw->line;
        size_t start = len;
        if (!rc)
            rc = append(name, get(sw, "switch"), "SwitchName", buf, room, &len);
        if (!rc && (v = get(sw, "children")))
            rc = append(name, v, "Switches", buf, room, &len);
        if (!rc && (v = get(sw, "nodes")))
            rc = append(name, v, "Nodes", buf, room, &len);
        if (!rc && len + 1 >= room)
            rc = tacos_error(TACOS_ERR_PARSE, "%s: more than %d bytes of switches", name,
                             TACOS_FABRIC_MAX_BYTES);
        if (!rc) {
            memmove(buf + start, buf + start + 1, len - start - 1); /* (the leading blank) */
            buf[len - 1] = '\n';
            buf[len] = '\0';
        }
    }
    if (rc) {
        free(buf);
        free(where);
        return rc;
    }
    *lines = buf, *at = where, *n = switches->n;
    return TACOS_OK;
}

int tacos_fabric_yaml_lines(const char *text, const char *name, char **lines, int **at, int *n)
{
    parser_t p = {name, NULL, 0, 0};
    char *copy = strdup(text);
    node_t *root = NULL;
    int rc = copy ? split(&p, copy)
                  : tacos_error(TACOS_ERR_NOMEM, "out of memory reading a topology.yaml");
    if (!rc && !p.n)
        rc = tacos_error(TACOS_ERR_PARSE, "%s: no topologies", name);
    if (!rc && p.lines[0].indent)
        rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: the first line is indented", name,
                         p.lines[0].line);
    if (!rc)
        rc = block(&p, 0, 0, &root);
    if (!rc && p.at < p.n)
        rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: indented unlike the lines before it",
                         name,
                         p.lines[p.at].line);
    if (!rc && root->kind != YAML_LIST)
        rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: not a list of topologies ('- topology: NAME')",
                         name, root->line);
    const node_t *tree = NULL, *first = NULL;
    for (int i = 0; !rc && i < root->n && !tree; i++) {
        const node_t *t = root->kids[i], *v = get(t, "tree"), *d = get(t, "cluster_default");
        if (t->kind != YAML_MAP || !get(t, "topology"))
            rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: a topology without 'topology: NAME'", name,
                             t->line);
        else if (v && d && d->kind == YAML_SCALAR && !strcasecmp(d->text, "true"))
            tree = v;
        else if (v && !first)
            first = v;
    }
    tree = tree ? tree : first;
    const node_t *sws = tree ? get(tree, "switches") : NULL;
    if (!rc && !tree)
        rc = tacos_error(TACOS_ERR_PARSE, "%s: no tree topology (only 'tree:' is read; block "
                                          "and flat describe no switches)",
                         name);
    if (!rc && !(sws && sws->kind == YAML_LIST && sws->n))
        rc = tacos_error(TACOS_ERR_PARSE, "%s:%d: the tree has no 'switches:' list", name,
                         tree->line);
    if (!rc)
        rc = tree_lines(name, sws, lines, at, n);
    node_free(root);
    free(p.lines);
    free(copy);
    return rc;
}
