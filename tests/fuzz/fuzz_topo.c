/* libFuzzer target: topology JSON (tacos_topo_from_json). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tacos_synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    tacos_topo_t *t = NULL;
    if (tacos_topo_from_json(text, "fuzz", &t) == TACOS_OK)
        tacos_topo_free(t);
    free(text);
    return 0;
}
