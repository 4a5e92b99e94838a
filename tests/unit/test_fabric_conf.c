/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm hostlists and topology.conf (topo_probe/fabric_conf.c): expansions
 * and trees written out by hand, and one message per kind of bad input,
 * naming the file and line. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tacos_probe.h"

/* Expands expr and compares with the names of `want` (space-separated). */
static void check_hosts(const char *expr, const char *want)
{
    char(*names)[TACOS_PROBE_NAME] = NULL;
    int n = -1;
    int rc = tacos_hostlist_expand(expr, 1000, &names, &n);
    CHECK(rc == TACOS_OK, "%s: %s", expr, tacos_last_error());
    if (rc)
        return;
    char got[4096] = "";
    for (int i = 0; i < n; i++) {
        strcat(got, i ? " " : "");
        strcat(got, names[i]);
    }
    CHECK(!strcmp(got, want), "%s: got '%s', want '%s'", expr, got, want);
    free(names);
}

static void check_bad_hosts(const char *expr, size_t max, const char *needle)
{
    char(*names)[TACOS_PROBE_NAME] = NULL;
    int n = -1;
    CHECK_ERR(tacos_hostlist_expand(expr, max, &names, &n), TACOS_ERR_PARSE, needle);
    CHECK(names == NULL && n == -1, "%s: outputs set on failure", expr);
}

static void test_hostlists(void)
{
    check_hosts("node1", "node1");
    check_hosts("a,b[1-3],c", "a b1 b2 b3 c");
    check_hosts("node[08-11]", "node08 node09 node10 node11");
    check_hosts("node[01-03,20]", "node01 node02 node03 node20");
    check_hosts("n[9-11]", "n9 n10 n11");
    check_hosts("n[098-101]", "n098 n099 n100 n101");
    check_hosts("rack[1-2]-n[1-3]", "rack1-n1 rack1-n2 rack1-n3 rack2-n1 rack2-n2 rack2-n3");
    check_hosts("[1-2]x", "1x 2x");
    check_hosts("s[0-2,4-5,12]", "s0 s1 s2 s4 s5 s12");
    check_hosts("  a ,\tb  c,, d ", "a b c d");
    check_hosts("", "");
    check_hosts("n[3]", "n3");
    check_hosts("host.example.org,h[1-2].x", "host.example.org h1.x h2.x");

    check_bad_hosts("n[]", 1000, "empty brackets");
    check_bad_hosts("n[1-3", 1000, "missing ']'");
    check_bad_hosts("n[1-3,", 1000, "not a number");
    check_bad_hosts("n[5-2]", 1000, "range 5-2 is reversed");
    check_bad_hosts("n1]", 1000, "']' without '['");
    check_bad_hosts("n[1[2]]", 1000, "nested '['");
    check_bad_hosts("n[1-]", 1000, "no upper bound");
    check_bad_hosts("n[a-b]", 1000, "not a number or range");
    check_bad_hosts("bgl[123x456]", 1000, "'x' in brackets");
    check_bad_hosts("n[1 - 2]", 1000, "in brackets");
    check_bad_hosts("n[1,,2]", 1000, "not a number");
    check_bad_hosts("n[1234567890]", 1000, "at most 9 digits");
    check_bad_hosts("a=b", 1000, "byte 0x3d");
    check_bad_hosts("n[1-5]", 4, "more than 4 names");
    check_bad_hosts("a,b,c", 2, "more than 2 names");
    check_bad_hosts("x[1][2][3][4][5][6][7][8][9]", 1000, "more than 8 bracket groups");
    check_bad_hosts("a123456789012345678901234567890123456789012345678901234567890123", 1000,
                    "longer than 63 bytes");
    check_bad_hosts("a12345678901234567890123456789012345678901234567890123456[1-100000000]",
                    1u << 30, "longer than 63 bytes");
    /* refused from the counts alone: nothing is expanded or allocated */
    check_bad_hosts("n[0-999999999]", 1000000, "more than 1000000 names");
    check_bad_hosts("n[0-999999999]", (size_t)1 << 40, "more than 1048576 names");
    check_bad_hosts("a[0-99999]b[0-99999]c[0-99999]", (size_t)1 << 40, "more than 1048576 names");
    CHECK_ERR(tacos_hostlist_expand(NULL, 1, NULL, NULL), TACOS_ERR_ARG, "NULL");
}

static tacos_fabric_conf_t *read_fixture(const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/fabric/%s", FIXTURES, file);
    tacos_fabric_conf_t *f = NULL;
    int rc = tacos_fabric_conf_read_file(path, &f);
    CHECK(rc == TACOS_OK && f, "%s: %s", path, tacos_last_error());
    return f;
}

static int sw_index(const tacos_fabric_conf_t *f, const char *name)
{
    for (int i = 0; i < f->nswitches; i++)
        if (!strcmp(f->switches[i].name, name))
            return i;
    return -1;
}

static void test_two_level(void)
{
    tacos_fabric_conf_t *f = read_fixture("two_level.conf");
    if (!f)
        return;
    CHECK(f->nswitches == 5 && f->nnodes == 16 && f->nroots == 1, "%d switches %d nodes %d roots",
          f->nswitches, f->nnodes, f->nroots);
    int spine = sw_index(f, "spine");
    CHECK(spine == 4 && f->switches[4].parent == -1 && f->switches[4].nchildren == 4 &&
          f->switches[4].link_speed == 0, "spine");
    for (int l = 0; l < 4; l++) {
        const tacos_fabric_switch_t *s = &f->switches[l];
        char name[16];
        snprintf(name, sizeof name, "leaf%d", l + 1);
        CHECK(!strcmp(s->name, name) && s->parent == 4 && s->nchildren == 0 &&
              s->link_speed == 100 && s->line == l + 2, "leaf %d: %s parent %d line %d", l,
              s->name, s->parent, s->line);
        CHECK(f->switches[4].children[l] == l, "spine child %d", l);
    }
    for (int i = 0; i < 16; i++) {
        char host[16];
        snprintf(host, sizeof host, "node%02d", i + 1);
        CHECK(!strcmp(f->nodes[i].host, host) && f->nodes[i].leaf == i / 4, "node %d: %s on %d",
              i, f->nodes[i].host, f->nodes[i].leaf);
        CHECK(tacos_fabric_conf_leaf_of(f, host) == i / 4, "leaf of %s", host);
    }
    /* the short name matches a qualified host, and a qualified name a short node */
    CHECK(tacos_fabric_conf_leaf_of(f, "node07.cluster.example.org") == 1, "qualified host");
    CHECK(tacos_fabric_conf_leaf_of(f, "node17") == -1, "unknown host");
    CHECK(tacos_fabric_conf_leaf_of(f, "node1") == -1, "no prefix match");
    CHECK(tacos_fabric_conf_leaf_of(f, "") == -1, "empty host");
    CHECK(tacos_fabric_conf_leaf_of(f, NULL) == -1, "NULL host");
    tacos_fabric_conf_free(f);
}

static void test_three_level(void)
{
    tacos_fabric_conf_t *f = read_fixture("three_level.conf");
    if (!f)
        return;
    CHECK(f->nswitches == 7 && f->nnodes == 13 && f->nroots == 1, "%d switches %d nodes",
          f->nswitches, f->nnodes);
    int core = sw_index(f, "core"), poda = sw_index(f, "poda"), podb = sw_index(f, "podb");
    int l[4] = {sw_index(f, "l1"), sw_index(f, "l2"), sw_index(f, "l3"), sw_index(f, "l4")};
    CHECK(core == 0 && poda == 1 && podb == 2 && l[0] == 3 && l[3] == 6, "order");
    CHECK(f->switches[core].parent == -1 && f->switches[poda].parent == core &&
          f->switches[podb].parent == core, "pods under core");
    CHECK(f->switches[podb].link_speed == 40 && f->switches[podb].line == 6 &&
          f->switches[podb].nchildren == 2, "continued line: speed %u line %d",
          f->switches[podb].link_speed, f->switches[podb].line);
    CHECK(f->switches[l[0]].parent == poda && f->switches[l[1]].parent == poda &&
          f->switches[l[2]].parent == podb && f->switches[l[3]].parent == podb, "leaves");
    CHECK(f->switches[l[2]].line == 11 && f->switches[l[3]].line == 12, "lines %d %d",
          f->switches[l[2]].line, f->switches[l[3]].line);
    static const struct {
        const char *host;
        int leaf;
    } want[] = {{"rack1-n1", 0}, {"rack1-n2", 0}, {"gpu07", 0},   {"rack1-x8", 1},
                {"rack1-x9", 1}, {"rack2-x8", 1}, {"rack2-x9", 1}, {"c08", 2},
                {"c09", 2},      {"c10", 2},      {"c11", 2},      {"d1.example.org", 3},
                {"d2", 3}};
    for (int i = 0; i < 13; i++) {
        CHECK(!strcmp(f->nodes[i].host, want[i].host) && f->nodes[i].leaf == l[want[i].leaf],
              "node %d: %s on %d", i, f->nodes[i].host, f->nodes[i].leaf);
        CHECK(tacos_fabric_conf_leaf_of(f, want[i].host) == l[want[i].leaf], "leaf of %s",
              want[i].host);
    }
    CHECK(tacos_fabric_conf_leaf_of(f, "d1") == l[3], "short name of a qualified node");
    CHECK(tacos_fabric_conf_leaf_of(f, "d1.other") == l[3], "short names of both");
    CHECK(tacos_fabric_conf_leaf_of(f, "d2.example.org") == l[3], "short host name");
    CHECK(tacos_fabric_conf_leaf_of(f, "d3") == -1, "unknown");
    tacos_fabric_conf_free(f);
}

/* text read as the file `name` (its kind by its name): so many switches,
 * nodes and roots; check_bad_read: a parse error holding needle. */
static void check_read(const char *name, const char *text, int nswitches, int nnodes, int nroots)
{
    tacos_fabric_conf_t *f = NULL;
    int rc = tacos_fabric_conf_read_string(text, name, &f);
    CHECK(rc == TACOS_OK, "'%s': %s", text, tacos_last_error());
    if (rc)
        return;
    CHECK(f->nswitches == nswitches && f->nnodes == nnodes && f->nroots == nroots,
          "'%s': %d switches %d nodes %d roots", text, f->nswitches, f->nnodes, f->nroots);
    tacos_fabric_conf_free(f);
}

static void check_bad_read(const char *name, const char *text, const char *needle)
{
    tacos_fabric_conf_t *f = NULL;
    CHECK_ERR(tacos_fabric_conf_read_string(text, name, &f), TACOS_ERR_PARSE, needle);
    CHECK(f == NULL, "output set on failure");
}

static void check_conf(const char *text, int nswitches, int nnodes, int nroots)
{
    check_read("t.conf", text, nswitches, nnodes, nroots);
}

static void check_bad_conf(const char *text, const char *needle)
{
    check_bad_read("t.conf", text, needle);
}

static void test_strings(void)
{
    check_conf("SwitchName=s1 Nodes=a,b\nSwitchName=s2 Nodes=c\n", 2, 3, 2); /* two trees */
    check_conf("SwitchName=top Switches=s1\r\nSwitchName=s1 Nodes=a Switches=s2\r\n"
               "SwitchName=s2 Nodes=b", 3, 2, 1); /* CRLF, no final newline, both keys */
    check_conf("# only\n\n   \nSwitchName=s Nodes=n\\\n", 1, 1, 1); /* continued into the end */
    check_conf("SwitchName=s Nodes=n[1-2] \\  # comment first\n  LinkSpeed=7\n", 1, 2, 1);
    check_conf("SwitchName=s LinkSpeed=4294967295 Nodes=n", 1, 1, 1);

    check_bad_conf("SwitchName=s1 Nodes=a\nSwitchName=s2 Bogus=1 Nodes=b\n",
                   "t.conf:2: unknown key 'Bogus'");
    check_bad_conf("BlockName=b1 Nodes=a\n", "t.conf:1: BlockName is topology/block");
    check_bad_conf("SwitchName=s1 Nodes=a\n\nSwitchName=s1 Nodes=b\n",
                   "t.conf:3: switch s1 is defined again (first on line 1)");
    check_bad_conf("SwitchName=s1 Nodes=a,b\nSwitchName=s2 Nodes=c,b\n",
                   "t.conf:2: node b is under switch s2 and under switch s1 (line 1)");
    check_bad_conf("SwitchName=s1 Nodes=a,b,a\n", "t.conf:1: node a is listed twice under switch s1");
    check_bad_conf("SwitchName=s1 Nodes=a\nSwitchName=s2 Nodes=b\nSwitchName=t1 Switches=s1\n"
                   "SwitchName=t2 Switches=s[1-2]\n",
                   "t.conf:4: switch s1 is under switch t2 and under switch t1 (line 3)");
    check_bad_conf("SwitchName=t Switches=s1,s2\nSwitchName=s1 Nodes=a\n",
                   "t.conf:1: switch t lists switch s2, which is not defined");
    check_bad_conf("SwitchName=t Switches=t Nodes=a\n", "t.conf:1: switch t lists itself");
    check_bad_conf("SwitchName=t Switches=s,s\nSwitchName=s Nodes=a\n",
                   "t.conf:1: switch t lists switch s twice");
    check_bad_conf("SwitchName=t\n", "t.conf:1: switch t has neither Switches= nor Nodes=");
    check_bad_conf("SwitchName=t LinkSpeed=5\n", "has neither Switches= nor Nodes=");
    check_bad_conf("Nodes=a\n", "t.conf:1: no SwitchName=");
    check_bad_conf("SwitchName=s Nodes=a Nodes=b\n", "t.conf:1: Nodes= given twice");
    check_bad_conf("SwitchName=s Nodes=\n", "t.conf:1: Nodes= has no value");
    check_bad_conf("SwitchName=s Nodes = a\n", "t.conf:1: 'Nodes' is not Key=Value");
    check_bad_conf("SwitchName=s[1-2] Nodes=a\n", "t.conf:1: SwitchName= names more than one");
    check_bad_conf("SwitchName=s Nodes=n[1-3\n", "t.conf:1: Nodes=n[1-3: missing ']'");
    check_bad_conf("SwitchName=s Switches=x[3-1]\n", "t.conf:1: Switches=x[3-1]: range 3-1");
    check_bad_conf("SwitchName=s Nodes=n[0-999999999]\n",
                   "t.conf:1: Nodes=n[0-999999999]: more than 1048576 names");
    check_bad_conf("SwitchName=s Switches=n[0-999999]\n", "more than 65536 names");
    check_bad_conf("SwitchName=s LinkSpeed=fast Nodes=a\n", "t.conf:1: LinkSpeed=fast");
    check_bad_conf("SwitchName=s LinkSpeed=4294967296 Nodes=a\n", "not a whole number");
    check_bad_conf("SwitchName=s LinkSpeed=-1 Nodes=a\n", "not a whole number");
    check_bad_conf("SwitchName=s Nodes=s\n", "t.conf:1: s is a node and also a switch (line 1)");
    check_bad_conf("# nothing\n\n", "t.conf: no SwitchName lines");
    check_bad_conf("", "t.conf: no SwitchName lines");
    /* the continued line is reported at its first line */
    check_bad_conf("SwitchName=a Nodes=x\nSwitchName=b \\\n  Nodes=y \\\n  Foo=1\n",
                   "t.conf:2: unknown key 'Foo'");
    /* the cycle's file: every switch has a parent */
    char path[1024];
    snprintf(path, sizeof path, "%s/fabric/bad_cycle.conf", FIXTURES);
    tacos_fabric_conf_t *f = NULL;
    CHECK_ERR(tacos_fabric_conf_read_file(path, &f), TACOS_ERR_PARSE, "is below itself (a cycle");
    CHECK_ERR(tacos_fabric_conf_read_file(path, &f), TACOS_ERR_PARSE, "bad_cycle.conf:1: switch a");
    CHECK_ERR(tacos_fabric_conf_read_file("/nonexistent/topology.conf", &f), TACOS_ERR_IO,
              "cannot open fabric file /nonexistent/topology.conf");
    CHECK(f == NULL, "output set on failure");
    CHECK_ERR(tacos_fabric_conf_read_string(NULL, "x", &f), TACOS_ERR_ARG, "NULL");
}

/* Slurm's topology.yaml: the tree topology read as topology.conf lines. */
static void check_yaml(const char *text, int nswitches, int nnodes, int nroots)
{
    check_read("t.yaml", text, nswitches, nnodes, nroots);
}

static void check_bad_yaml(const char *text, const char *needle)
{
    check_bad_read("t.yaml", text, needle);
}

static void test_yaml(void)
{
    /* the fixture: two_level.conf's tree, leaves written four ways */
    tacos_fabric_conf_t *f = NULL, *g = read_fixture("two_level.conf");
    char path[1024];
    snprintf(path, sizeof path, "%s/fabric/two_level.yaml", FIXTURES);
    int rc = tacos_fabric_conf_read_file(path, &f);
    CHECK(rc == TACOS_OK, "two_level.yaml: %s", tacos_last_error());
    if (!rc && g) {
        CHECK(f->nswitches == g->nswitches && f->nnodes == g->nnodes && f->nroots == 1,
              "two_level.yaml: %d switches %d nodes %d roots", f->nswitches, f->nnodes,
              f->nroots);
        for (int i = 0; i < g->nnodes && i < f->nnodes; i++)
            CHECK(!strcmp(f->nodes[i].host, g->nodes[i].host) &&
                      !strcmp(f->switches[f->nodes[i].leaf].name,
                              g->switches[g->nodes[i].leaf].name),
                  "two_level.yaml: node %d %s", i, f->nodes[i].host);
        CHECK(f->switches[1].line == 19 && f->switches[4].parent == -1, "line %d",
              f->switches[1].line);
    }
    tacos_fabric_conf_free(f);
    tacos_fabric_conf_free(g);
    snprintf(path, sizeof path, "%s/fabric/bad_indent.yaml", FIXTURES);
    f = NULL;
    CHECK_ERR(tacos_fabric_conf_read_file(path, &f), TACOS_ERR_PARSE,
              "bad_indent.yaml:6: indented unlike the lines before it");

    /* Slurm's example; by content where the name says nothing */
    tacos_fabric_conf_t *h = NULL;
    CHECK(tacos_fabric_conf_read_string("- topology: topo1\n  cluster_default: True\n  tree:\n"
                                        "    switches:\n    - switch: sw_root\n"
                                        "      nodes: node[01-04]\n",
                                        "fabric", &h) == TACOS_OK &&
              h->nswitches == 1 && h->nnodes == 4,
          "Slurm's example: %s", tacos_last_error());
    tacos_fabric_conf_free(h);
    /* the default tree over the first; lists indented under their key */
    check_yaml("- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodes: x\n"
               "- topology: b\n  cluster_default: true\n  tree:\n    switches:\n"
               "      - switch: t\n        children: [u, v]\n      - switch: u\n"
               "        nodes: y[1-3]\n      - switch: v\n        nodes: z\n",
               3, 4, 1);
    check_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: x\n"
               "- topology: b\n  tree:\n    switches:\n    - switch: t\n      nodes: y\n",
               1, 1, 1); /* no default: the first */

    check_bad_yaml("- topology: a\n  flat: true\n", "t.yaml: no tree topology");
    check_bad_yaml("- topology: a\n  tree:\n    switches: []\n", "t.yaml:3: the tree has no");
    check_bad_yaml("topology: a\n", "t.yaml:1: not a list of topologies");
    check_bad_yaml("- tree:\n    switches:\n    - switch: s\n      nodes: x\n",
                   "t.yaml:1: a topology without 'topology: NAME'");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: x\n"
                   "      speed: 10\n",
                   "t.yaml:6: unknown key 'speed'");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - nodes: x\n",
                   "t.yaml:4: a switch without 'switch: NAME'");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: x\n"
                   "    - switch: s\n      nodes: y\n",
                   "t.yaml:6: switch s is defined again (first on line 4)");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n      nodes: x\n"
                   "    - switch: t\n      nodes: x\n",
                   "t.yaml:6: node x is under switch t and under switch s (line 4)");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n"
                   "      nodes: n[1-3\n",
                   "t.yaml:4: Nodes=n[1-3: missing ']'");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n"
                   "      children: t\n",
                   "t.yaml:4: switch s lists switch t, which is not defined");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n"
                   "      nodes: [a, [b]]\n",
                   "t.yaml:5: a flow list inside a flow list");
    check_bad_yaml("- topology: a\n  tree: &x\n", "t.yaml:2: '&'");
    check_bad_yaml("- topology: a\n\ttree:\n", "t.yaml:2: a tab indents the line");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n"
                   "      nodes: x\nx: 1\n",
                   "t.yaml:6: indented unlike the lines before it");
    check_bad_yaml("- topology: a\n  topology: b\n", "t.yaml:2: key 'topology' given twice");
    check_bad_yaml("- topology: a\n  tree:\n    switches:\n    - switch: s\n"
                   "      nodes: a b\n",
                   "t.yaml:5: Nodes 'a b' holds a blank");
    char deep[2048] = "- topology: a\n  tree:\n";
    for (int d = 0; d < 20; d++) {
        size_t at = strlen(deep);
        snprintf(deep + at, sizeof deep - at, "%*sk%d:\n", 4 + 2 * d, "", d);
    }
    check_bad_yaml(deep, "nested more than 16 deep");
}

/* The limits, each just over. */
static void test_limits(void)
{
    size_t big = (size_t)TACOS_FABRIC_MAX_LINE + 10;
    char *text = malloc((size_t)TACOS_FABRIC_MAX_BYTES + 16);
    if (!text)
        return;
    /* a logical line too long, in continued pieces */
    size_t k = 0;
    k += (size_t)sprintf(text, "SwitchName=s Nodes=a\n");
    while (k < 2 * big) {
        memcpy(text + k, "Nodes=a \\\n", 10);
        k += 10;
    }
    text[k] = '\0';
    check_bad_conf(text, "t.conf:2: line longer than 65536 bytes");
    /* too many lines */
    memset(text, '\n', (size_t)TACOS_FABRIC_MAX_LINES + 1);
    text[TACOS_FABRIC_MAX_LINES + 1] = '\0';
    check_bad_conf(text, "more than 1048576 lines");
    /* too many bytes */
    memset(text, ' ', (size_t)TACOS_FABRIC_MAX_BYTES + 1);
    text[TACOS_FABRIC_MAX_BYTES + 1] = '\0';
    check_bad_conf(text, "t.conf: more than 4194304 bytes");
    /* too many switches: 65537 lines of one switch each */
    k = 0;
    for (int i = 0; i <= TACOS_FABRIC_MAX_SWITCHES; i++)
        k += (size_t)sprintf(text + k, "SwitchName=s%d Nodes=n%d\n", i, i);
    check_bad_conf(text, "t.conf:65537: more than 65536 switches");
    /* too many nodes over several lines: 2^20 is allowed, one more is not */
    sprintf(text, "SwitchName=a Nodes=n[0-524287]\nSwitchName=b Nodes=m[0-524287]\n");
    check_conf(text, 2, 1 << 20, 2);
    strcat(text, "SwitchName=c Nodes=x\n");
    check_bad_conf(text, "t.conf:3: Nodes=x: more than 0 names");
    free(text);
}

int main(void)
{
    test_hostlists();
    test_two_level();
    test_three_level();
    test_strings();
    test_limits();
    test_yaml();
    return check_report("test_fabric_conf");
}
