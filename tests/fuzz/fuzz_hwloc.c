/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: an hwloc XML export through the probe (what
 * coll_tacos_probe_hwloc_xml and tacos-probe --hwloc-xml read). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tacos_probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/tacos-fuzz-hwloc-%d.xml", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    tacos_probe_opts_t o;
    tacos_probe_opts_init(&o);
    o.hwloc_xml = path;
    o.ucx_lib = "";
    o.local_rank = 0;
    tacos_probe_record_t r;
    (void)tacos_probe_local(&o, &r);
    return 0;
}
