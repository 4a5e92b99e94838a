/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule cache files (coll_tacos_schedule_dir, tacos-synth
 * --schedule-dir): a whole schedule in binary, in a file named by the hash
 * of the key of what it was synthesized from.  Host byte order (the key
 * holds a byte-order word, so hosts of the other order use other files),
 * every field 8-byte aligned:
 *   "TACOSSCH", u32 version, u32 key words (KEY_WORDS), u64 key[],
 *   i32 coll, npus, chunks_per_npu, root, levels, pad, u64 size_bytes,
 *   u64 nxfers, nxfers x {f64 start_us, end_us; i32 chunk, src, dst, reduce},
 *   u64 checksum (over the 64-bit words before it).
 * Or a rank's part's choice (levels 2, nxfers 0): the body, f64 time_us
 * (the part's, the same on every rank), u64 checksum; each reader rebuilds
 * its own part at that chunk count (tacos_synthesize_kept_part).
 * The topology is not stored: the reader gives the one the schedule must
 * serve, and the schedule is validated on it.  Written to a fresh temporary
 * file in the same directory (mkstemp) and renamed, so a reader sees a
 * whole file or none.
 */
#ifdef HAVE_CONFIG_H
#include "config.h" /* PACKAGE_VERSION */
#endif
#ifndef PACKAGE_VERSION /* (built by hand: the fuzz targets) */
#define PACKAGE_VERSION "unknown"
#endif
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "internal.h"

#define MAGIC "TACOSSCH"
#define FORMAT_VERSION 1u
/* Bumped whenever synthesis makes other schedules from the same inputs
 * (PACKAGE_VERSION stays the same between development builds). */
#define SYNTH_GENERATION 6u /* 2: k up to 32 automatically; 3: All-Reduce's All-Gather mirrored;
                               * 4: hierarchy 2 a rank's part against flat, not the whole;
                               * 5: a part's choice kept;
                               * 6: hierarchy 2: flat's k against the part */
#define KEY_WORDS 11
#define FNV_OFFSET 14695981039346656037ull

_Static_assert(sizeof(tacos_xfer_t) == 32, "transfers are stored as they lie in memory");

typedef struct {
    char magic[8];
    uint32_t version, nkey;
} head_t;

typedef struct {
    int32_t coll, npus, chunks_per_npu, root, levels, pad;
    uint64_t size_bytes, nxfers;
} body_t;

_Static_assert(sizeof(head_t) == 16 && sizeof(body_t) == 40, "no padding written");

/* FNV over 64-bit words, each product folded so that a change in a word's
 * high bits reaches the low ones (two flipped top bits do not cancel). */
static uint64_t checksum(uint64_t h, const void *p, size_t bytes)
{
    const unsigned char *b = p;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 32;
    }
    return h;
}

uint64_t tacos_topo_hash(const tacos_topo_t *t)
{
    uint64_t h = FNV_OFFSET ^ (uint64_t)t->npus, shape[17] = {(uint64_t)t->ndims};
    for (int d = 0; d < t->ndims && d < 16; d++)
        shape[d + 1] = (uint64_t)t->dims[d];
    h = checksum(h, shape, sizeof shape);
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        uint64_t v[4] = {(uint64_t)l->src, (uint64_t)l->dst, 0, 0};
        memcpy(&v[2], &l->lat_us, 8);
        memcpy(&v[3], &l->bw_gbps, 8);
        h = checksum(h, v, sizeof v);
    }
    return h;
}

/* What a schedule is synthesized from: the library, the topology, the
 * options and the hierarchy (and the byte order its file is in). */
static void key_of(const tacos_topo_t *topo, const tacos_synth_opts_t *o, tacos_hier_t hier,
                   uint64_t key[KEY_WORDS])
{
    uint64_t version = FNV_OFFSET;
    for (const char *c = PACKAGE_VERSION; *c; c++) {
        uint64_t byte = (unsigned char)*c;
        version = checksum(version, &byte, 8);
    }
    const uint64_t k[KEY_WORDS] = {0x0102030405060708ull, version, SYNTH_GENERATION,
                                   tacos_topo_hash(topo), (uint64_t)o->coll, (uint64_t)o->root,
                                   o->size_bytes, (uint64_t)o->chunks_per_npu, o->seed,
                                   (uint64_t)o->trials,
                                   /* aggregation beside it (and its message bytes):
                                    * the keys of one chunk per message as before */
                                   (uint64_t)hier | (o->chunks_per_msg > 1
                                                         ? (uint64_t)o->chunks_per_msg << 8 |
                                                               o->msg_bytes << 16
                                                         : 0)};
    memcpy(key, k, sizeof k);
}

int tacos_sched_cache_path(const char *dir, const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                           tacos_hier_t hier, char *path, size_t n)
{
    uint64_t key[KEY_WORDS];
    char name[4096];
    key_of(topo, o, hier, key);
    uint64_t h = checksum(FNV_OFFSET, key, sizeof key);
    if ((size_t)snprintf(name, sizeof name, "%s/tacos-%016llx.sched", dir,
                         (unsigned long long)h) >= sizeof name || strlen(name) >= n)
        return tacos_error(TACOS_ERR_ARG, "%s: the directory's name is too long", dir);
    memcpy(path, name, strlen(name) + 1);
    return TACOS_OK;
}

/* write of n bytes, adding them to the checksum */
static int put(FILE *f, const void *p, size_t n, uint64_t *h)
{
    *h = checksum(*h, p, n);
    return fwrite(p, 1, n, f) == n;
}

int tacos_sched_cache_save(const tacos_sched_t *s, const tacos_synth_opts_t *o, tacos_hier_t hier,
                           const char *path)
{
    int part = s->levels == 2;
    if (s->steps || !s->topo || (part && hier == TACOS_HIER_FLAT))
        return tacos_error(TACOS_ERR_ARG, "%s: only synthesized schedules and parts are kept", path);
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp)
        return tacos_error(TACOS_ERR_ARG, "%s: path too long", path);
    int fd = mkstemp(tmp); /* a name no other writer has, on any host */
    if (fd >= 0) /* readable by the other users of a shared directory, where it can be */
        (void)!fchmod(fd, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd), unlink(tmp);
        return tacos_error(TACOS_ERR_IO, "%s: cannot create: %s", tmp, strerror(e));
    }
    uint64_t key[KEY_WORDS], h = FNV_OFFSET;
    key_of(s->topo, o, hier, key);
    head_t hd = {{0}, FORMAT_VERSION, KEY_WORDS};
    memcpy(hd.magic, MAGIC, 8);
    body_t b = {(int32_t)s->coll, s->npus, s->chunks_per_npu, s->root, s->levels, 0,
                s->size_bytes, part ? 0 : s->nxfers};
    int ok = put(f, &hd, sizeof hd, &h) && put(f, key, sizeof key, &h) &&
             put(f, &b, sizeof b, &h) &&
             (part ? put(f, &s->time_us, sizeof s->time_us, &h)
                   : put(f, s->xfers, s->nxfers * sizeof *s->xfers, &h));
    ok = ok && fwrite(&h, 8, 1, f) == 1;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return tacos_error(TACOS_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return TACOS_OK;
}

/* The body is what was asked for, and its length the file's (a part's
 * choice: no transfers, its time). */
static int body_fits(const body_t *b, const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                     tacos_hier_t hier, uint64_t bytes_left)
{
    int k_ok = o->chunks_per_npu > 0 ? b->chunks_per_npu == o->chunks_per_npu
                                     : b->chunks_per_npu >= 1 && b->chunks_per_npu <= TACOS_AUTO_MAX_K;
    int asked = b->coll == (int32_t)o->coll && b->root == o->root &&
                b->size_bytes == o->size_bytes && k_ok && b->npus == topo->npus && b->pad == 0;
    if (b->levels == 2)
        return asked && hier != TACOS_HIER_FLAT && b->nxfers == 0 && bytes_left == 16;
    return asked && (b->levels == 0 || (b->levels == 1 && hier != TACOS_HIER_FLAT)) &&
           bytes_left >= 8 && b->nxfers <= (bytes_left - 8) / sizeof(tacos_xfer_t) &&
           bytes_left == b->nxfers * sizeof(tacos_xfer_t) + 8;
}

/* read of n bytes, adding them to the checksum; an error where it cannot
 * (the file shrank, or read failed) */
static int get(int fd, void *p, size_t n, uint64_t *h, const char *path)
{
    for (size_t at = 0; at < n;) {
        ssize_t r = read(fd, (char *)p + at, n - at);
        if (r == 0)
            return tacos_error(TACOS_ERR_PARSE, "%s: truncated while reading", path);
        if (r < 0 && errno != EINTR)
            return tacos_error(TACOS_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        at += r > 0 ? (size_t)r : 0;
    }
    *h = checksum(*h, p, n);
    return TACOS_OK;
}

static int load(int fd, uint64_t len, const char *path, const tacos_topo_t *topo,
                const tacos_synth_opts_t *o, tacos_hier_t hier, tacos_sched_t **out)
{
    head_t hd;
    body_t b;
    uint64_t key[KEY_WORDS], want[KEY_WORDS], h = FNV_OFFSET, stored;
    if (len < sizeof hd + sizeof key + sizeof b + 8)
        return tacos_error(TACOS_ERR_PARSE, "%s: truncated (%llu bytes)", path,
                           (unsigned long long)len);
    int rc;
    if ((rc = get(fd, &hd, sizeof hd, &h, path)))
        return rc;
    if (memcmp(hd.magic, MAGIC, 8) || hd.version != FORMAT_VERSION || hd.nkey != KEY_WORDS)
        return tacos_error(TACOS_ERR_PARSE, "%s: not a schedule cache file of this version", path);
    key_of(topo, o, hier, want);
    if ((rc = get(fd, key, sizeof key, &h, path)) || (rc = get(fd, &b, sizeof b, &h, path)))
        return rc;
    if (memcmp(key, want, sizeof key))
        return tacos_error(TACOS_ERR_PARSE,
                           "%s: kept for another topology, collective, size or settings", path);
    tacos_synth_opts_t as_kept = *o;
    as_kept.chunks_per_npu = b.chunks_per_npu;
    if (!body_fits(&b, topo, o, hier, len - sizeof hd - sizeof key - sizeof b) ||
        tacos_check_opts(topo, &as_kept) != TACOS_OK) /* (the chunk count's bounds) */
        return tacos_error(TACOS_ERR_PARSE,
                           "%s: its schedule is not the one its key names, or its length is wrong",
                           path);
    tacos_sched_t *s;
    /* (a part's choice: no transfers to validate on the topology) */
    rc = tacos_sched_alloc(o->coll, b.npus, b.chunks_per_npu, b.root, b.size_bytes,
                           b.levels == 2 ? NULL : topo, &s);
    if (!rc && (rc = tacos_sched_reserve(s, b.nxfers)) != TACOS_OK)
        tacos_sched_free(s);
    if (rc)
        return rc;
    double part_us = 0;
    if ((rc = b.levels == 2 ? get(fd, &part_us, 8, &h, path)
                            : get(fd, s->xfers, b.nxfers * sizeof *s->xfers, &h, path)) ||
        (rc = get(fd, &stored, 8, &(uint64_t){0}, path))) {
        tacos_sched_free(s);
        return rc;
    }
    if (stored != h) {
        tacos_sched_free(s);
        return tacos_error(TACOS_ERR_PARSE, "%s: checksum mismatch (the file is damaged)", path);
    }
    s->nxfers = b.nxfers;
    s->levels = b.levels;
    if (b.levels == 2) { /* a part's choice: what its reader rebuilds */
        s->time_us = part_us;
        if (!(part_us > 0 && part_us < INFINITY)) {
            tacos_sched_free(s);
            return tacos_error(TACOS_ERR_PARSE, "%s: a part's time of %g us", path, part_us);
        }
        *out = s;
        return TACOS_OK;
    }
    /* in start order, as saved (the validator refuses any other, and
     * non-finite times): no sort, which would reorder ties */
    for (size_t i = 0; i < s->nxfers; i++)
        s->time_us = s->xfers[i].end_us > s->time_us ? s->xfers[i].end_us : s->time_us;
    if ((rc = tacos_sched_validate(s)) != TACOS_OK) {
        rc = tacos_error(rc, "%s: invalid schedule: %s", path, tacos_last_error());
        tacos_sched_free(s);
        return rc;
    }
    *out = s;
    return TACOS_OK;
}

int tacos_sched_cache_load(const char *path, const tacos_topo_t *topo, const tacos_synth_opts_t *o,
                           tacos_hier_t hier, tacos_sched_t **out)
{
    /* not blocking on a FIFO or a device planted there: only regular files */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return tacos_error(TACOS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        rc = tacos_error(TACOS_ERR_IO, "%s: not a regular file", path);
    else
        rc = load(fd, (uint64_t)st.st_size, path, topo, o, hier, out);
    close(fd);
    return rc;
}
