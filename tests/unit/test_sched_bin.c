/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule cache files (synth/sched_bin.c): what is saved loads back the
 * same, transfer for transfer; a file of another key, a damaged, truncated
 * or foreign one, and one whose checksum was mended over a wrong schedule
 * are refused with a message; two processes writing the same file while a
 * third reads never show the reader part of one.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/wait.h>

#include "check.h"

static char dir[] = "/tmp/test_sched_bin-XXXXXX";
static char path[256];

static tacos_sched_t *synth(const tacos_topo_t *t, tacos_coll_t coll, int root, int k)
{
    tacos_synth_opts_t o = {coll, root, k, 1 << 20, 1, 1};
    tacos_sched_t *s = NULL;
    CHECK_OK(tacos_synthesize(t, &o, &s));
    return s;
}

static long file_size(void)
{
    FILE *f = fopen(path, "rb");
    long n = -1;
    if (f && !fseek(f, 0, SEEK_END))
        n = ftell(f);
    if (f)
        fclose(f);
    return n;
}

static void patch(long at, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f && !fseek(f, at, SEEK_SET) && fwrite(bytes, 1, n, f) == n, "patching %s", path);
    if (f)
        fclose(f);
}

/* FNV-1a over 64-bit words, as the format says, computed here anew */
static void mend_checksum(void)
{
    long n = file_size();
    unsigned char *b = malloc((size_t)n);
    FILE *f = fopen(path, "rb");
    CHECK(b && f && fread(b, 1, (size_t)n, f) == (size_t)n, "reading %s", path);
    if (f)
        fclose(f);
    uint64_t h = 14695981039346656037ull, w;
    for (long i = 0; b && i + 8 <= n - 8; i += 8) {
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    free(b);
    patch(n - 8, &h, 8);
}

static int same(const tacos_sched_t *a, const tacos_sched_t *b)
{
    return a->coll == b->coll && a->npus == b->npus && a->chunks_per_npu == b->chunks_per_npu &&
           a->root == b->root && a->size_bytes == b->size_bytes && a->time_us == b->time_us &&
           a->nxfers == b->nxfers && a->levels == b->levels &&
           !memcmp(a->xfers, b->xfers, a->nxfers * sizeof *a->xfers);
}

static void round_trips(void)
{
    tacos_topo_t *t = gen("fs:2x4"), *mesh = gen("mesh2d:3x3");
    const uint64_t key[3] = {1, 2, 3};
    struct {
        const tacos_topo_t *t;
        tacos_coll_t coll;
        int root, k;
    } cases[] = {{t, TACOS_ALLREDUCE, 0, 1}, {t, TACOS_ALLGATHER, 0, 3},
                 {mesh, TACOS_BROADCAST, 4, 2}, {mesh, TACOS_ALLTOALL, 0, 1},
                 {t, TACOS_REDUCE, 7, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tacos_sched_t *s = synth(cases[i].t, cases[i].coll, cases[i].root, cases[i].k), *back = NULL;
        if (!s)
            continue;
        CHECK_OK(tacos_sched_save(s, key, 3, path));
        CHECK_OK(tacos_sched_load(path, cases[i].t, key, 3, &back));
        CHECK(back && same(s, back), "case %zu (%s): loaded differs", i, tacos_coll_name(s->coll));
        tacos_sched_free(back);
        tacos_sched_free(s);
    }
    /* composed from levels: kept as such; one rank's part is not a whole schedule */
    tacos_synth_opts_t o = {TACOS_ALLREDUCE, 0, 1, 1 << 20, 1, 1};
    tacos_sched_t *h = NULL, *back = NULL;
    CHECK_OK(tacos_synthesize_hier(t, &o, &h));
    if (h) {
        CHECK_OK(tacos_sched_save(h, key, 3, path));
        CHECK_OK(tacos_sched_load(path, t, key, 3, &back));
        CHECK(back && same(h, back) && back->levels == 1, "levels: loaded differs");
        tacos_sched_free(back);
        tacos_sched_free(h);
    }
    CHECK_OK(tacos_synthesize_hier_rank(t, &o, 3, &h));
    if (h)
        CHECK_ERR(tacos_sched_save(h, key, 3, path), TACOS_ERR_ARG, "whole schedule");
    tacos_sched_free(h);
    tacos_topo_free(mesh);
    tacos_topo_free(t);
}

static void refusals(void)
{
    tacos_topo_t *t = gen("fs:2x4"), *ring = gen("uniring:8");
    const uint64_t key[2] = {7, 8}, other[2] = {7, 9};
    tacos_sched_t *s = synth(t, TACOS_ALLREDUCE, 0, 1), *back = NULL;
    if (!s || !ring)
        return;
    CHECK_OK(tacos_sched_save(s, key, 2, path));
    long n = file_size();
    CHECK_ERR(tacos_sched_load(path, t, other, 2, &back), TACOS_ERR_PARSE, "another topology");
    CHECK_ERR(tacos_sched_load(path, t, key, 1, &back), TACOS_ERR_PARSE, "another topology");
    /* the links it uses are not all in a ring of 8 */
    CHECK_ERR(tacos_sched_load(path, ring, key, 2, &back), TACOS_ERR_INVALID, "invalid schedule");
    /* one bit flipped in a transfer */
    unsigned char bit = 0x10;
    patch(n / 2, &bit, 1);
    CHECK_ERR(tacos_sched_load(path, t, key, 2, &back), TACOS_ERR_PARSE, "checksum");
    /* the checksum mended over a chunk that does not exist: validation refuses */
    CHECK_OK(tacos_sched_save(s, key, 2, path));
    long first = n - 8 - (long)(s->nxfers * sizeof *s->xfers);
    patch(first + 16, &s->nchunks, 4); /* transfers[0].chunk, after its two times */
    mend_checksum();
    CHECK_ERR(tacos_sched_load(path, t, key, 2, &back), TACOS_ERR_INVALID, "invalid schedule");
    /* and over a transfer sent to a rank its sender has no link to */
    CHECK_OK(tacos_sched_save(s, key, 2, path));
    int32_t src = s->xfers[0].src, dst = 0;
    for (; dst < t->npus; dst++) {
        int linked = dst == src;
        for (size_t i = 0; i < t->nlinks; i++)
            linked |= t->links[i].src == src && t->links[i].dst == dst;
        if (!linked)
            break;
    }
    CHECK(dst < t->npus, "rank %d is linked to every rank", src);
    patch(first + 24, &dst, 4);
    mend_checksum();
    CHECK_ERR(tacos_sched_load(path, t, key, 2, &back), TACOS_ERR_INVALID, "invalid schedule");
    /* truncated, empty, not ours */
    CHECK_OK(tacos_sched_save(s, key, 2, path));
    CHECK(truncate(path, n - 40) == 0, "truncate");
    CHECK_ERR(tacos_sched_load(path, t, key, 2, &back), TACOS_ERR_PARSE, "");
    CHECK(truncate(path, 0) == 0, "truncate");
    CHECK_ERR(tacos_sched_load(path, t, key, 2, &back), TACOS_ERR_PARSE, "truncated");
    CHECK_OK(tacos_sched_write_file(s, path)); /* the JSON form */
    CHECK_ERR(tacos_sched_load(path, t, key, 2, &back), TACOS_ERR_PARSE, "");
    CHECK_ERR(tacos_sched_load("/nonexistent/x.sched", t, key, 2, &back), TACOS_ERR_IO,
              "cannot open");
    CHECK_ERR(tacos_sched_save(s, key, 2, "/nonexistent/x.sched"), TACOS_ERR_IO, "cannot create");
    tacos_sched_free(s);
    tacos_topo_free(ring);
    tacos_topo_free(t);
}

/* Two writers of the same file (different schedules under one key, as two
 * jobs on different library builds could) and a reader: every load gives
 * one of the two whole, and no temporary file stays. */
static void concurrent(void)
{
    tacos_topo_t *t = gen("fs:2x4");
    const uint64_t key[1] = {42};
    tacos_sched_t *a = synth(t, TACOS_ALLREDUCE, 0, 1), *b = synth(t, TACOS_ALLREDUCE, 0, 2);
    if (!a || !b)
        return;
    CHECK_OK(tacos_sched_save(a, key, 1, path));
    pid_t kids[2];
    for (int w = 0; w < 2; w++)
        if ((kids[w] = fork()) == 0) {
            int bad = 0;
            for (int i = 0; i < 300; i++)
                bad |= tacos_sched_save(w ? b : a, key, 1, path) != TACOS_OK;
            _exit(bad);
        }
    int loads = 0, wrong = 0;
    for (int i = 0; i < 300; i++) {
        tacos_sched_t *back = NULL;
        if (tacos_sched_load(path, t, key, 1, &back) == TACOS_OK) {
            loads++;
            wrong += !same(back, a) && !same(back, b);
        } else {
            wrong++;
            fprintf(stderr, "load %d: %s\n", i, tacos_last_error());
        }
        tacos_sched_free(back);
    }
    for (int w = 0; w < 2; w++) {
        int st = 1;
        waitpid(kids[w], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed", w);
    }
    CHECK(loads == 300 && wrong == 0, "%d of 300 loads whole, %d wrong", loads, wrong);
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        files += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK(files == 1, "%d files in %s, want 1 (temporary files left)", files, dir);
    tacos_sched_free(a);
    tacos_sched_free(b);
    tacos_topo_free(t);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/s.sched", dir);
    round_trips();
    refusals();
    concurrent();
    unlink(path);
    rmdir(dir);
    return check_report("test_sched_bin");
}
