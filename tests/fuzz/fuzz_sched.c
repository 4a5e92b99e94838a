/* libFuzzer target: schedule JSON (tacos_sched_from_json, which validates). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tacos_synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    tacos_sched_t *s = NULL;
    if (tacos_sched_from_json(text, "fuzz", &s) == TACOS_OK)
        tacos_sched_free(s);
    free(text);
    return 0;
}
