/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: schedule cache files (tacos_sched_cache_load) of an
 * All-Reduce on fs:2x4 (tacos-synth -t fs:2x4's links) with k chosen
 * automatically, as tacos-synth -t fs:2x4 -c allreduce -k auto
 * --schedule-dir keeps them, flat where the input has an odd number of
 * 8-byte words, else in levels (--hierarchy auto: a part's choice, 20
 * words, is read there); the key written over the input's and its
 * checksum mended first, so that inputs reach the length, header and
 * transfer checks and the validation rather than stop at the key or the
 * checksum. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tacos_synth.h"

enum { KEY_AT = 16, BODY_AT = 16 + 11 * 8 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tacos_topo_t *topo;
    static char path[64], keyed[4096];
    static uint8_t key[2][BODY_AT - KEY_AT];
    const tacos_synth_opts_t o = {TACOS_ALLREDUCE, 0, 0, 1 << 20, 1, 1, 0, 0};
    const tacos_hier_t hiers[2] = {TACOS_HIER_AUTO, TACOS_HIER_FLAT};
    tacos_hier_t hier = hiers[size / 8 % 2];
    double bw = 50, lat = 0.5;
    if (!topo) { /* the keys: those of files tacos_sched_cache_save writes */
        tacos_sched_t *s = NULL;
        FILE *f;
        if (tacos_topo_generate("fs:2x4", &bw, 1, &lat, 1, 1, &topo) ||
            tacos_synthesize_auto(topo, &o, TACOS_AUTO_MAX_K, TACOS_HIER_FLAT, &s))
            abort();
        for (int i = 0; i < 2; i++) {
            if (tacos_sched_cache_path("/tmp", topo, &o, hiers[i], keyed, sizeof keyed) ||
                tacos_sched_cache_save(s, &o, hiers[i], keyed) || !(f = fopen(keyed, "rb")) ||
                fseek(f, KEY_AT, SEEK_SET) || fread(key[i], 1, sizeof key[i], f) != sizeof key[i])
                abort();
            fclose(f);
            unlink(keyed);
        }
        tacos_sched_free(s);
        snprintf(path, sizeof path, "/tmp/fuzz_sched_bin.%d", (int)getpid());
    }
    uint8_t *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    if (size >= BODY_AT)
        memcpy(b + KEY_AT, key[size / 8 % 2], sizeof key[0]);
    uint64_t h = 14695981039346656037ull, w;
    for (size_t i = 0; size >= 16 && size % 8 == 0 && i + 8 <= size - 8; i += 8) {
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 32;
    }
    if (size >= 16 && size % 8 == 0)
        memcpy(b + size - 8, &h, 8);
    FILE *f = fopen(path, "wb");
    if (f && fwrite(b, 1, size, f) == size && !fclose(f)) {
        tacos_sched_t *s = NULL;
        if (tacos_sched_cache_load(path, topo, &o, hier, &s) == TACOS_OK)
            tacos_sched_free(s);
    } else if (f) {
        fclose(f);
    }
    free(b);
    return 0;
}
