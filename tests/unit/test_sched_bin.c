/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Schedule cache files (synth/sched_bin.c): what is saved loads back the
 * same, transfer for transfer; a file of another key, one whose schedule is
 * not the one its key names, a damaged, truncated or foreign one, one whose
 * checksum was mended over a wrong schedule, and a FIFO are refused with a
 * message; two processes writing the same file while a third reads never
 * show the reader part of one.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"

static char dir[] = "/tmp/test_sched_bin-XXXXXX";
static char path[4096];

static tacos_synth_opts_t opts(tacos_coll_t coll, int root, int k)
{
    return (tacos_synth_opts_t){coll, root, k, 1 << 20, 1, 1, 0, 0};
}

static tacos_sched_t *synth(const tacos_topo_t *t, const tacos_synth_opts_t *o)
{
    tacos_sched_t *s = NULL;
    CHECK_OK(tacos_synthesize_auto(t, o, TACOS_AUTO_MAX_K, TACOS_HIER_FLAT, &s));
    return s;
}

static long file_size(void)
{
    struct stat st;
    return stat(path, &st) ? -1 : (long)st.st_size;
}

static void patch(long at, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f && !fseek(f, at, SEEK_SET) && fwrite(bytes, 1, n, f) == n, "patching %s", path);
    if (f)
        fclose(f);
}

static void flip(long at, unsigned char bits)
{
    unsigned char b = 0;
    FILE *f = fopen(path, "rb");
    CHECK(f && !fseek(f, at, SEEK_SET) && fread(&b, 1, 1, f) == 1, "reading %s", path);
    if (f)
        fclose(f);
    b ^= bits;
    patch(at, &b, 1);
}

/* The checksum as the format says (FNV over 64-bit words, each product
 * folded), computed here anew over the file and written at its end. */
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
        h ^= h >> 32;
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

/* The file's first transfer: after the header, key and body, counted back
 * from the end. */
static long first_xfer(const tacos_sched_t *s)
{
    return file_size() - 8 - (long)(s->nxfers * sizeof *s->xfers);
}

/* One rank's part: only its choice is kept (k, time); each rank makes its
 * part again from it, the same as synthesized, and the choice is refused
 * under the flat hierarchy, damaged, with a time that is not a number, or
 * where the part's time differs (another build's). */
static void parts(const tacos_topo_t *t)
{
    tacos_synth_opts_t o = opts(TACOS_ALLREDUCE, 0, 0);
    tacos_sched_t *part = NULL, *choice = NULL, *again = NULL;
    CHECK_OK(tacos_synthesize_hier_rank(t, &o, 0, &part));
    if (!part)
        return;
    CHECK_ERR(tacos_sched_cache_save(part, &o, TACOS_HIER_FLAT, path), TACOS_ERR_ARG,
              "only synthesized schedules and parts");
    CHECK_OK(tacos_sched_cache_path(dir, t, &o, TACOS_HIER_AUTO, path, sizeof path));
    CHECK_OK(tacos_sched_cache_save(part, &o, TACOS_HIER_AUTO, path));
    CHECK(file_size() == 16 + 8 * 11 + 40 + 8 + 8, "a part's choice takes %ld bytes", file_size());
    CHECK_OK(tacos_sched_cache_load(path, t, &o, TACOS_HIER_AUTO, &choice));
    CHECK(choice && choice->levels == 2 && choice->nxfers == 0 &&
              choice->chunks_per_npu == part->chunks_per_npu && choice->time_us == part->time_us,
          "the choice read: levels %d, %zu transfers, k %d, %.3f us", choice ? choice->levels : -1,
          choice ? choice->nxfers : 0, choice ? choice->chunks_per_npu : 0,
          choice ? choice->time_us : 0);
    for (int r = 0; choice && r < t->npus; r++) { /* each rank's own part, as synthesized */
        tacos_sched_t *mine = NULL;
        CHECK_OK(tacos_synthesize_kept_part(t, &o, choice, r, &again));
        CHECK_OK(tacos_synthesize_hier_rank(t, &o, r, &mine));
        CHECK(again && mine && same(again, mine) && again->levels == 2,
              "rank %d: the part made from the choice differs", r);
        tacos_sched_free(again);
        tacos_sched_free(mine);
        again = NULL;
    }
    if (choice) { /* another build's: the same k, another time */
        choice->time_us *= 1.5;
        CHECK_ERR(tacos_synthesize_kept_part(t, &o, choice, 1, &again), TACOS_ERR_PARSE,
                  "another build");
        CHECK(!again, "a part made from a choice refused");
    }
    tacos_sched_free(choice);
    choice = NULL;
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &choice), TACOS_ERR_PARSE,
              "kept for another topology");
    long time_at = 16 + 8 * 11 + 40;
    flip(time_at + 3, 0x01);
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_AUTO, &choice), TACOS_ERR_PARSE,
              "checksum");
    double bad[] = {NAN, -1, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_OK(tacos_sched_cache_save(part, &o, TACOS_HIER_AUTO, path));
        patch(time_at, &bad[i], 8);
        mend_checksum();
        CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_AUTO, &choice), TACOS_ERR_PARSE,
                  "a part's time");
    }
    CHECK_OK(tacos_sched_cache_save(part, &o, TACOS_HIER_AUTO, path));
    CHECK(truncate(path, time_at + 8) == 0, "truncate");
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_AUTO, &choice), TACOS_ERR_PARSE,
              "length is wrong");
    unlink(path);
    tacos_sched_free(part);
    /* a k set (coll_tacos_chunks 2) in levels (coll_tacos_hierarchy 1) */
    tacos_synth_opts_t k2 = opts(TACOS_ALLREDUCE, 0, 2);
    tacos_sched_t *mine = NULL;
    part = NULL;
    CHECK_OK(tacos_synthesize_hier_rank(t, &k2, 5, &part));
    CHECK_OK(tacos_sched_cache_path(dir, t, &k2, TACOS_HIER_LEVELS, path, sizeof path));
    if (part)
        CHECK_OK(tacos_sched_cache_save(part, &k2, TACOS_HIER_LEVELS, path));
    CHECK_OK(tacos_sched_cache_load(path, t, &k2, TACOS_HIER_LEVELS, &choice));
    if (choice)
        CHECK_OK(tacos_synthesize_kept_part(t, &k2, choice, 5, &mine));
    CHECK(part && mine && same(part, mine) && mine->chunks_per_npu == 2,
          "k = 2 in levels: the part made from the choice differs");
    unlink(path);
    tacos_sched_free(mine);
    tacos_sched_free(choice);
    tacos_sched_free(part);
}

static void round_trips(void)
{
    tacos_topo_t *t = gen("fs:2x4"), *mesh = gen("mesh2d:3x3");
    struct {
        const tacos_topo_t *t;
        tacos_coll_t coll;
        int root, k;
    } cases[] = {{t, TACOS_ALLREDUCE, 0, 1},    {t, TACOS_ALLGATHER, 0, 3},
                 {mesh, TACOS_BROADCAST, 4, 2}, {mesh, TACOS_ALLTOALL, 0, 1},
                 {t, TACOS_REDUCE, 7, 1},       {t, TACOS_ALLREDUCE, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tacos_synth_opts_t o = opts(cases[i].coll, cases[i].root, cases[i].k);
        tacos_sched_t *s = synth(cases[i].t, &o), *back = NULL;
        if (!s)
            continue;
        CHECK_OK(tacos_sched_cache_path(dir, cases[i].t, &o, TACOS_HIER_FLAT, path, sizeof path));
        CHECK(!strncmp(path, dir, strlen(dir)) && strstr(path, "/tacos-") &&
              strstr(path, ".sched"), "path %s", path);
        CHECK_OK(tacos_sched_cache_save(s, &o, TACOS_HIER_FLAT, path));
        CHECK_OK(tacos_sched_cache_load(path, cases[i].t, &o, TACOS_HIER_FLAT, &back));
        CHECK(back && same(s, back), "case %zu (%s): loaded differs", i, tacos_coll_name(s->coll));
        tacos_sched_free(back);
        tacos_sched_free(s);
        unlink(path);
    }
    /* composed from levels: kept as such, read under the hierarchy that
     * can make it only; one rank's part is not a whole schedule */
    tacos_synth_opts_t o = opts(TACOS_ALLREDUCE, 0, 1);
    tacos_sched_t *h = NULL, *back = NULL;
    snprintf(path, sizeof path, "%s/levels.sched", dir);
    CHECK_OK(tacos_synthesize_hier(t, &o, &h));
    if (h) {
        CHECK_OK(tacos_sched_cache_save(h, &o, TACOS_HIER_AUTO, path));
        CHECK_OK(tacos_sched_cache_load(path, t, &o, TACOS_HIER_AUTO, &back));
        CHECK(back && same(h, back) && back->levels == 1, "levels: loaded differs");
        tacos_sched_free(back);
        tacos_sched_free(h);
        h = NULL;
    }
    unlink(path);
    parts(t);
    char tiny[16];
    CHECK_ERR(tacos_sched_cache_path(dir, t, &o, TACOS_HIER_FLAT, tiny, sizeof tiny), TACOS_ERR_ARG,
              "too long");
    tacos_topo_free(mesh);
    tacos_topo_free(t);
}

static void refusals(void)
{
    tacos_topo_t *t = gen("fs:2x4"), *ring = gen("ring:8");
    tacos_synth_opts_t o = opts(TACOS_ALLREDUCE, 0, 1), seed2 = o, ag = opts(TACOS_ALLGATHER, 0, 1);
    tacos_synth_opts_t agg = o;
    seed2.seed = 2;
    agg.chunks_per_msg = 4;
    tacos_sched_t *s = synth(t, &o), *g = synth(t, &ag), *back = NULL;
    if (!s || !g || !ring)
        return;
    CHECK_OK(tacos_sched_cache_path(dir, t, &o, TACOS_HIER_FLAT, path, sizeof path));
    CHECK_OK(tacos_sched_cache_save(s, &o, TACOS_HIER_FLAT, path));
    long n = file_size(), first = first_xfer(s);
    /* another key: other options, hierarchy, topology */
    CHECK_ERR(tacos_sched_cache_load(path, t, &seed2, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "kept for another topology");
    CHECK_ERR(tacos_sched_cache_load(path, t, &agg, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "kept for another topology");
    /* a chunk per message, 0 or 1: the same key as before aggregation */
    char path1[4096];
    agg.chunks_per_msg = 1;
    CHECK_OK(tacos_sched_cache_path(dir, t, &agg, TACOS_HIER_FLAT, path1, sizeof path1));
    CHECK(strcmp(path, path1) == 0, "chunks_per_msg 1: %s, 0: %s", path1, path);
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_AUTO, &back), TACOS_ERR_PARSE,
              "kept for another topology");
    CHECK_ERR(tacos_sched_cache_load(path, ring, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "kept for another topology");
    /* an All-Gather saved under the All-Reduce's key */
    CHECK_OK(tacos_sched_cache_save(g, &o, TACOS_HIER_FLAT, path));
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "not the one its key names");
    /* one bit flipped in a transfer; the top bits of two words (which a
     * plain word-wise FNV lets cancel) */
    CHECK_OK(tacos_sched_cache_save(s, &o, TACOS_HIER_FLAT, path));
    flip(n / 2, 0x10);
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "checksum");
    CHECK_OK(tacos_sched_cache_save(s, &o, TACOS_HIER_FLAT, path));
    flip(first + 31, 0x80), flip(first + 63, 0x80);
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "checksum");
    /* checksums mended over what the validator refuses: a chunk that does
     * not exist, a transfer without a link, a reduce flag of 2, a time that
     * is not a number, two transfers out of start order */
    int32_t src = s->xfers[0].src, dst = 0, two = 2;
    for (; dst < t->npus; dst++) {
        int linked = dst == src;
        for (size_t i = 0; i < t->nlinks; i++)
            linked |= t->links[i].src == src && t->links[i].dst == dst;
        if (!linked)
            break;
    }
    double nan = NAN;
    size_t later = 1;
    while (later < s->nxfers && s->xfers[later].start_us == s->xfers[0].start_us)
        later++;
    CHECK(dst < t->npus && later < s->nxfers, "no unlinked rank or no later transfer");
    struct {
        long at;
        const void *bytes;
        size_t n;
        const char *why;
    } bad[] = {{first + 16, &s->nchunks, 4, "out of range"},
               {first + 24, &dst, 4, "no link"},
               {first + 28, &two, 4, "reduce 2"},
               {first + 8, &nan, 8, "not finite"},
               {first, &s->xfers[later].start_us, 8, "start-time order"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_OK(tacos_sched_cache_save(s, &o, TACOS_HIER_FLAT, path));
        patch(bad[i].at, bad[i].bytes, bad[i].n);
        if (i == 4) /* transfer 0 starting after a later one */
            patch(bad[i].at + 8, &(double){s->xfers[later].start_us + 1e6}, 8);
        mend_checksum();
        CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_INVALID,
                  bad[i].why);
    }
    /* truncated, empty, not ours, not a file, not there */
    CHECK_OK(tacos_sched_cache_save(s, &o, TACOS_HIER_FLAT, path));
    CHECK(truncate(path, n - 40) == 0, "truncate");
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "length is wrong");
    CHECK(truncate(path, 0) == 0, "truncate");
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "truncated");
    CHECK_OK(tacos_sched_write_file(s, path)); /* the JSON form */
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_PARSE,
              "not a schedule cache file of this version");
    unlink(path);
    CHECK(mkfifo(path, 0600) == 0, "mkfifo");
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_IO,
              "not a regular file");
    unlink(path);
    CHECK_ERR(tacos_sched_cache_load(path, t, &o, TACOS_HIER_FLAT, &back), TACOS_ERR_IO,
              "cannot open");
    CHECK_ERR(tacos_sched_cache_save(s, &o, TACOS_HIER_FLAT, "/nonexistent/x.sched"),
              TACOS_ERR_IO, "cannot create");
    tacos_sched_free(g);
    tacos_sched_free(s);
    tacos_topo_free(ring);
    tacos_topo_free(t);
}

/* Two writers of the same file (different schedules under one key: k
 * chosen automatically, as two builds could choose) and a reader: every
 * load gives one of the two whole, and no temporary file stays. */
static void concurrent(void)
{
    tacos_topo_t *t = gen("fs:2x4");
    tacos_synth_opts_t o1 = opts(TACOS_ALLREDUCE, 0, 1), o2 = opts(TACOS_ALLREDUCE, 0, 2),
                       any = opts(TACOS_ALLREDUCE, 0, 0);
    tacos_sched_t *a = synth(t, &o1), *b = synth(t, &o2);
    if (!a || !b)
        return;
    CHECK_OK(tacos_sched_cache_path(dir, t, &any, TACOS_HIER_FLAT, path, sizeof path));
    CHECK_OK(tacos_sched_cache_save(a, &any, TACOS_HIER_FLAT, path));
    pid_t kids[2];
    for (int w = 0; w < 2; w++)
        if ((kids[w] = fork()) == 0) {
            int bad = 0;
            for (int i = 0; i < 300; i++)
                bad |= tacos_sched_cache_save(w ? b : a, &any, TACOS_HIER_FLAT, path) != TACOS_OK;
            _exit(bad);
        }
    int loads = 0, wrong = 0;
    for (int i = 0; i < 300; i++) {
        tacos_sched_t *back = NULL;
        if (tacos_sched_cache_load(path, t, &any, TACOS_HIER_FLAT, &back) == TACOS_OK) {
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
    unlink(path);
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
    round_trips();
    refusals();
    concurrent();
    unlink(path);
    rmdir(dir);
    return check_report("test_sched_bin");
}
