/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule cache files (coll_tacos_schedule_dir, tacos-synth
 * --schedule-dir): a whole schedule in binary, under the key of what it was
 * synthesized from, in a file named by the key's hash.  Host byte order, every
 * field 8-byte aligned:
 *   "TACOSSCH", u32 version, u32 nkey, u64 key[nkey],
 *   i32 coll, npus, chunks_per_npu, root, steps, levels,
 *   u64 size_bytes, f64 time_us, u64 nxfers,
 *   nxfers x {f64 start_us, end_us; i32 chunk, src, dst, reduce},
 *   u64 checksum (FNV-1a over the 64-bit words before it).
 * The topology is not stored: the reader gives the one the schedule must
 * serve and it is validated on that.  Written to a temporary name in the
 * same directory and renamed, so a reader sees a whole file or none.
 */
#ifdef HAVE_CONFIG_H
#include "config.h" /* PACKAGE_VERSION */
#endif
#ifndef PACKAGE_VERSION /* (built by hand: the fuzz targets) */
#define PACKAGE_VERSION "unknown"
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "internal.h"

#define MAGIC "TACOSSCH"
#define FORMAT_VERSION 1u
#define MAX_KEY 64
#define FNV_OFFSET 14695981039346656037ull

_Static_assert(sizeof(tacos_xfer_t) == 32, "transfers are stored as they lie in memory");

typedef struct {
    char magic[8];
    uint32_t version, nkey;
} head_t;

typedef struct {
    int32_t coll, npus, chunks_per_npu, root, steps, levels;
    uint64_t size_bytes;
    double time_us;
    uint64_t nxfers;
} body_t;

static uint64_t checksum(uint64_t h, const void *p, size_t bytes)
{
    const unsigned char *b = p;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    return h;
}

uint64_t tacos_topo_hash(const tacos_topo_t *t)
{
    uint64_t h = FNV_OFFSET ^ (uint64_t)t->npus;
    for (size_t i = 0; i < t->nlinks; i++) {
        const tacos_link_t *l = &t->links[i];
        uint64_t v[4] = {(uint64_t)l->src, (uint64_t)l->dst, 0, 0};
        memcpy(&v[2], &l->lat_us, 8);
        memcpy(&v[3], &l->bw_gbps, 8);
        h = checksum(h, v, sizeof v);
    }
    return h;
}

void tacos_sched_key(const tacos_topo_t *topo, const tacos_synth_opts_t *o, tacos_hier_t hier,
                     uint64_t key[TACOS_SCHED_KEY_WORDS])
{
    const char *version = PACKAGE_VERSION;
    uint64_t v = FNV_OFFSET;
    for (; *version; version++) {
        uint64_t byte = (unsigned char)*version;
        v = checksum(v, &byte, 8);
    }
    const uint64_t k[TACOS_SCHED_KEY_WORDS] = {
        v, tacos_topo_hash(topo), (uint64_t)o->coll, (uint64_t)o->root, o->size_bytes,
        (uint64_t)o->chunks_per_npu, o->seed, (uint64_t)o->trials, (uint64_t)hier};
    memcpy(key, k, sizeof k);
}

int tacos_sched_key_path(const char *dir, const uint64_t key[TACOS_SCHED_KEY_WORDS], char *path,
                         size_t n)
{
    uint64_t h = checksum(FNV_OFFSET, key, TACOS_SCHED_KEY_WORDS * 8);
    if ((size_t)snprintf(path, n, "%s/tacos-%016llx.sched", dir, (unsigned long long)h) >= n)
        return tacos_error(TACOS_ERR_ARG, "%s: the directory's name is too long", dir);
    return TACOS_OK;
}

/* fwrite of n bytes, adding them to the checksum */
static int put(FILE *f, const void *p, size_t n, uint64_t *h)
{
    *h = checksum(*h, p, n);
    return fwrite(p, 1, n, f) == n;
}

int tacos_sched_save(const tacos_sched_t *s, const uint64_t *key, int nkey, const char *path)
{
    if (nkey < 0 || nkey > MAX_KEY || s->levels == 2)
        return tacos_error(TACOS_ERR_ARG, "%s: a whole schedule and a key of 0..%d words", path,
                           MAX_KEY);
    /* a name no other writer uses: hosts may share the directory */
    char tmp[4400], host[128] = "";
    static unsigned serial;
    gethostname(host, sizeof host - 1);
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.%s.%ld.%u.tmp", path, host, (long)getpid(),
                         __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED)) >= sizeof tmp)
        return tacos_error(TACOS_ERR_ARG, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return tacos_error(TACOS_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    head_t hd = {{0}, FORMAT_VERSION, (uint32_t)nkey};
    memcpy(hd.magic, MAGIC, 8);
    body_t b = {(int32_t)s->coll, s->npus, s->chunks_per_npu, s->root, s->steps, s->levels,
                s->size_bytes, s->time_us, s->nxfers};
    uint64_t h = FNV_OFFSET;
    int ok = put(f, &hd, sizeof hd, &h) && put(f, key, (size_t)nkey * 8, &h) &&
             put(f, &b, sizeof b, &h) && put(f, s->xfers, s->nxfers * sizeof *s->xfers, &h);
    ok = ok && fwrite(&h, 8, 1, f) == 1;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return tacos_error(TACOS_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return TACOS_OK;
}

/* What a file must say, checked before anything is allocated by it. */
static int check_body(const body_t *b, const tacos_topo_t *topo, size_t bytes_left)
{
    if (b->coll < 0 || b->coll >= TACOS_NCOLLS || b->npus != topo->npus ||
        b->chunks_per_npu < 1 || b->root < 0 || b->root >= b->npus || b->size_bytes < 1 ||
        tacos_coll_nchunks((tacos_coll_t)b->coll, b->npus, b->chunks_per_npu) > 1 << 28)
        return 0;
    return b->nxfers <= bytes_left / sizeof(tacos_xfer_t) &&
           bytes_left == b->nxfers * sizeof(tacos_xfer_t) + 8;
}

static int load(const unsigned char *buf, size_t len, const char *path, const tacos_topo_t *topo,
                const uint64_t *key, int nkey, tacos_sched_t **out)
{
    head_t hd;
    body_t b;
    size_t at = sizeof hd + (size_t)nkey * 8;
    if (len < at + sizeof b + 8 || len % 8)
        return tacos_error(TACOS_ERR_PARSE, "%s: truncated (%zu bytes)", path, len);
    memcpy(&hd, buf, sizeof hd);
    if (memcmp(hd.magic, MAGIC, 8) || hd.version != FORMAT_VERSION)
        return tacos_error(TACOS_ERR_PARSE, "%s: not a schedule cache file of this version", path);
    uint64_t h, stored;
    memcpy(&stored, buf + len - 8, 8);
    if ((h = checksum(FNV_OFFSET, buf, len - 8)) != stored)
        return tacos_error(TACOS_ERR_PARSE, "%s: checksum mismatch (the file is damaged)", path);
    if (hd.nkey != (uint32_t)nkey || memcmp(buf + sizeof hd, key, (size_t)nkey * 8))
        return tacos_error(TACOS_ERR_PARSE,
                           "%s: saved for another topology, collective, size or settings", path);
    memcpy(&b, buf + at, sizeof b);
    at += sizeof b;
    if (!check_body(&b, topo, len - at))
        return tacos_error(TACOS_ERR_PARSE, "%s: its header does not fit its topology or length",
                           path);
    tacos_sched_t *s;
    int rc = tacos_sched_alloc((tacos_coll_t)b.coll, b.npus, b.chunks_per_npu, b.root,
                               b.size_bytes, topo, &s);
    if (!rc && (rc = tacos_sched_reserve(s, b.nxfers ? b.nxfers : 1)) != TACOS_OK)
        tacos_sched_free(s);
    if (rc)
        return rc;
    memcpy(s->xfers, buf + at, b.nxfers * sizeof *s->xfers);
    s->nxfers = b.nxfers;
    s->steps = b.steps != 0;
    s->levels = b.levels == 1;
    tacos_sched_sort(s);
    if ((rc = tacos_sched_validate(s)) != TACOS_OK) {
        tacos_sched_free(s);
        return tacos_error(rc, "%s: invalid schedule: %s", path, tacos_last_error());
    }
    *out = s;
    return TACOS_OK;
}

int tacos_sched_load(const char *path, const tacos_topo_t *topo, const uint64_t *key, int nkey,
                     tacos_sched_t **out)
{
    if (nkey < 0 || nkey > MAX_KEY)
        return tacos_error(TACOS_ERR_ARG, "%s: a key of 0..%d words", path, MAX_KEY);
    FILE *f = fopen(path, "rb");
    if (!f)
        return tacos_error(TACOS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    unsigned char *buf = NULL;
    int rc = TACOS_ERR_IO;
    if (fstat(fileno(f), &st) == 0 && st.st_size >= 0) {
        size_t len = (size_t)st.st_size;
        if (!(buf = malloc(len ? len : 1)))
            rc = tacos_error(TACOS_ERR_NOMEM, "%s: out of memory", path);
        else if (fread(buf, 1, len, f) == len)
            rc = load(buf, len, path, topo, key, nkey, out);
    }
    if (rc == TACOS_ERR_IO)
        tacos_error(rc, "%s: cannot read", path);
    fclose(f);
    free(buf);
    return rc;
}
