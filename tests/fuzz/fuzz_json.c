/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: topology JSON (tacos_topo_from_json), or with
 * -DFUZZ_SCHEDULE schedule JSON (tacos_sched_from_json, which validates). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tacos_synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
#ifdef FUZZ_SCHEDULE
    tacos_sched_t *s = NULL;
    if (tacos_sched_from_json(text, "fuzz", &s) == TACOS_OK)
        tacos_sched_free(s);
#else
    tacos_topo_t *t = NULL;
    if (tacos_topo_from_json(text, "fuzz", &t) == TACOS_OK)
        tacos_topo_free(t);
#endif
    free(text);
    return 0;
}
