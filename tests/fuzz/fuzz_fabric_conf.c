/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: Slurm topology.conf (tacos_fabric_conf_read_string,
 * then a lookup of each node's host and short name) and the whole input as
 * one hostlist (tacos_hostlist_expand).  With -DFUZZ_REPLAY it is a plain
 * program instead, running each file named on its command line through the
 * same function (test_fuzz_regress.sh, without clang). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tacos_probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    tacos_fabric_conf_t *f = NULL;
    if (tacos_fabric_conf_read_string(text, "fuzz", &f) == TACOS_OK) {
        for (int i = 0; i < f->nnodes && i < 64; i++) {
            char host[TACOS_PROBE_NAME + 8];
            snprintf(host, sizeof host, "%s.x", f->nodes[i].host);
            if (tacos_fabric_conf_leaf_of(f, f->nodes[i].host) < 0 ||
                tacos_fabric_conf_leaf_of(f, host) < 0)
                abort(); /* every node has a leaf */
        }
        tacos_fabric_conf_free(f);
    }
    char(*names)[TACOS_PROBE_NAME] = NULL;
    int n = 0;
    if (tacos_hostlist_expand(text, 4096, &names, &n) == TACOS_OK)
        free(names);
    free(text);
    return 0;
}

#ifdef FUZZ_REPLAY
int main(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        FILE *fp = fopen(argv[a], "rb");
        if (!fp) {
            perror(argv[a]);
            return 1;
        }
        static uint8_t buf[TACOS_FABRIC_MAX_BYTES + 1];
        size_t n = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
        LLVMFuzzerTestOneInput(buf, n);
    }
    return 0;
}
#endif
