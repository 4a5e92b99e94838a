/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_tacos_schedule_dir: schedules kept between jobs, one file per
 * key of what they are synthesized from (tacos_sched_cache_path: the
 * library, the topology, the synthesis options and hierarchy), checked
 * against all of it when read (tacos_sched_cache_load: key, the schedule
 * asked for, checksum, validation on the communicator's topology).  Rank 0
 * writes what it synthesized; every rank reads.  A rank that reads and one
 * that synthesizes normally get the same schedule, and the ranks agree on
 * it by hash as on any other; where they do not (a file kept by another
 * build of the same version), the ranks that read remove it.  Of a rank's
 * part in levels (coll_tacos_hierarchy 1 and 2) only the choice is kept,
 * its k and modelled time: each rank rebuilds its own part at that k,
 * which skips the search over k (and, below TACOS_AUTO_FLAT_NPUS ranks, the
 * flat schedule it was measured against).
 * tacos-synth --schedule-dir reads and writes the same files.
 */
#include <stdio.h>
#include <unistd.h>

#include "comm_internal.h"

/* The file of o, where schedules are kept. */
static int file_of(const tacos_comm_t *c, const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                   char path[4096])
{
    const tacos_settings_t *s = &c->s;
    return s->schedule_dir && s->schedule_dir[0] &&
           tacos_sched_cache_path(s->schedule_dir, topo, o, (tacos_hier_t)s->hierarchy, path,
                                  4096) == TACOS_OK;
}

/* A problem with the directory, said once per process by rank 0 (every
 * rank reads the same files); the other ranks' at verbose level 1. */
static void say_once(const tacos_comm_t *c, const char *what)
{
    static int said;
    char p[64];
    if (c->ops.rank != 0)
        tacos_comm_say(c, 1, "%s: rank %d: %s%s", tacos_comm_param(c, "schedule_dir", p),
                       c->ops.rank, tacos_last_error(), what);
    else if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        tacos_comm_say(c, 0, "%s: %s%s (further problems with it are not said)",
                       tacos_comm_param(c, "schedule_dir", p), tacos_last_error(), what);
}

tacos_sched_t *tacos_comm_schedule_read(const tacos_comm_t *c, const tacos_topo_t *topo,
                                        const tacos_synth_opts_t *o)
{
    char path[4096];
    tacos_sched_t *s = NULL;
    /* no file is the first job's case, and says nothing */
    if (!file_of(c, topo, o, path) || access(path, F_OK))
        return NULL;
    if (tacos_sched_cache_load(path, topo, o, (tacos_hier_t)c->s.hierarchy, &s) == TACOS_OK &&
        s->levels == 2) { /* a part's choice: this rank's part at its k */
        tacos_sched_t *choice = s;
        if (tacos_synthesize_kept_part(topo, o, choice, c->ops.rank, &s) != TACOS_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", tacos_last_error());
            tacos_error(TACOS_ERR_PARSE, "%s: %s", path, why);
        }
        tacos_sched_free(choice);
    }
    if (s) {
        tacos_comm_say(c, 5, "%s root %d, %llu-byte class: schedule read from %s%s",
                       tacos_coll_name(o->coll), o->root, (unsigned long long)o->size_bytes, path,
                       s->levels == 2 ? " (the part's choice: this rank's part made at its k)" : "");
        return s;
    }
    say_once(c, "; synthesizing it again (rank 0 replaces it)");
    return NULL;
}

void tacos_comm_schedule_write(const tacos_comm_t *c, const tacos_topo_t *topo,
                               const tacos_synth_opts_t *o, const tacos_sched_t *s)
{
    char path[4096];
    if (c->ops.rank != 0 || !file_of(c, topo, o, path))
        return;
    if (tacos_sched_cache_save(s, o, (tacos_hier_t)c->s.hierarchy, path) != TACOS_OK)
        say_once(c, " (schedules are not kept)");
}

void tacos_comm_schedule_forget(const tacos_comm_t *c, const tacos_topo_t *topo,
                                const tacos_synth_opts_t *o)
{
    char path[4096], p[64];
    if (file_of(c, topo, o, path) && !unlink(path))
        tacos_comm_say(c, 1, "%s: %s is not what the other ranks synthesized (kept by another "
                             "build?); removed",
                       tacos_comm_param(c, "schedule_dir", p), path);
}
