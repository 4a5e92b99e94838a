/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: schedule cache files (tacos_sched_load) on fs:2x4
 * (tacos-synth -t fs:2x4's links), under the key the input carries and
 * with its checksum mended first, so that inputs reach the header and
 * transfer checks and the validation rather than stop at the checksum. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tacos_synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tacos_topo_t *topo;
    static char path[64];
    double bw = 50, lat = 0.5;
    if (!topo && (tacos_topo_generate("fs:2x4", &bw, 1, &lat, 1, 1, &topo) ||
                  snprintf(path, sizeof path, "/tmp/fuzz_sched_bin.%d", (int)getpid()) < 0))
        abort();
    uint8_t *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    uint64_t h = 14695981039346656037ull, w, key[64] = {0};
    for (size_t i = 0; size >= 16 && size % 8 == 0 && i + 8 <= size - 8; i += 8) {
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    if (size >= 16 && size % 8 == 0)
        memcpy(b + size - 8, &h, 8);
    uint32_t nkey = 0;
    if (size >= 16)
        memcpy(&nkey, b + 12, 4);
    nkey = nkey > 64 ? 64 : nkey;
    if (16 + (size_t)nkey * 8 <= size)
        memcpy(key, b + 16, (size_t)nkey * 8);
    FILE *f = fopen(path, "wb");
    if (f && fwrite(b, 1, size, f) == size && !fclose(f)) {
        tacos_sched_t *s = NULL;
        if (tacos_sched_load(path, topo, key, (int)nkey, &s) == TACOS_OK)
            tacos_sched_free(s);
    } else if (f) {
        fclose(f);
    }
    free(b);
    return 0;
}
