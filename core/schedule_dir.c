/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_tacos_schedule_dir: whole schedules kept between jobs, one file per
 * key of what they are synthesized from (tacos_sched_key: the library's
 * version, the topology, collective, root, size class and synthesis
 * settings), checked against all of it when read (tacos_sched_load: key,
 * checksum, validation on the communicator's topology).  Rank 0 writes
 * what it synthesized; every rank reads.  A rank that reads and one that
 * synthesizes get the same schedule, and the ranks agree on it by hash as
 * on any other, so a file some ranks cannot see changes nothing.
 * tacos-synth --schedule-dir reads and writes the same files.
 */
#include <stdio.h>
#include <unistd.h>

#include "comm_internal.h"

/* Only whole schedules are kept: with coll_tacos_hierarchy 1 each rank
 * makes its own part. */
static int kept(const tacos_comm_t *c)
{
    return c->s.schedule_dir && c->s.schedule_dir[0] && c->s.hierarchy != TACOS_HIER_LEVELS;
}

/* The file of (coll, root, size class) on topo, and its key (0: the path
 * does not fit). */
static int file_of(const tacos_comm_t *c, const tacos_topo_t *topo, tacos_coll_t coll, int root,
                   int size_class, uint64_t key[TACOS_SCHED_KEY_WORDS], char path[4096])
{
    const tacos_settings_t *s = &c->s;
    tacos_synth_opts_t o = {coll, root, s->chunks, (uint64_t)1 << size_class, (uint64_t)s->seed,
                            s->trials > 0 ? s->trials : 1};
    tacos_sched_key(topo, &o, (tacos_hier_t)s->hierarchy, key);
    return tacos_sched_key_path(s->schedule_dir, key, path, 4096) == TACOS_OK;
}

tacos_sched_t *tacos_comm_schedule_read(const tacos_comm_t *c, const tacos_topo_t *topo,
                                        tacos_coll_t coll, int root, int size_class)
{
    uint64_t key[TACOS_SCHED_KEY_WORDS];
    char path[4096], p[64];
    tacos_sched_t *s = NULL;
    /* no file is the first job's case, and says nothing */
    if (!kept(c) || !file_of(c, topo, coll, root, size_class, key, path) || access(path, F_OK))
        return NULL;
    if (tacos_sched_load(path, topo, key, TACOS_SCHED_KEY_WORDS, &s) == TACOS_OK) {
        tacos_comm_say(c, 5, "%s root %d, %zu-byte class: schedule read from %s",
                       tacos_coll_name(coll), root, (size_t)1 << size_class, path);
        return s;
    }
    /* said by rank 0 (every rank reads the same file); its synthesis
     * replaces the file */
    if (c->ops.rank == 0)
        tacos_comm_say(c, 0, "%s: %s; synthesizing it again",
                       tacos_comm_param(c, "schedule_dir", p), tacos_last_error());
    return NULL;
}

void tacos_comm_schedule_write(const tacos_comm_t *c, const tacos_topo_t *topo, int size_class,
                               const tacos_sched_t *s)
{
    static int said;
    uint64_t key[TACOS_SCHED_KEY_WORDS];
    char path[4096], p[64];
    if (c->ops.rank != 0 || s->levels == 2 || !kept(c))
        return;
    if (file_of(c, topo, s->coll, s->root, size_class, key, path) &&
        tacos_sched_save(s, key, TACOS_SCHED_KEY_WORDS, path) == TACOS_OK)
        return;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) /* once per process */
        tacos_comm_say(c, 0, "%s: %s (schedules are not kept)",
                       tacos_comm_param(c, "schedule_dir", p), tacos_last_error());
}
