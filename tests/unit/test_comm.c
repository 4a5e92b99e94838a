/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The core's per-communicator decisions without MPI: every rank is a thread
 * with its own tacos_comm_t; the max-allreduce the binding would provide is
 * a barrier over shared slots, and so is the allgather of probe records
 * (the default model: one host).  Checks that
 * equal settings give plans (cached, agreed), that one rank's different
 * setting makes every rank fall back with one message, thresholds, cache
 * eviction, neighbouring size classes sharing a schedule (reuse_percent),
 * a topology file of the wrong size, and schedules kept between
 * "jobs" in coll_tacos_schedule_dir (read back, read by some ranks only,
 * a damaged file said once and replaced).  Also the table of
 * other processes' memory an IPC component maps (mem_ipc.c), and the CUDA
 * IPC agreement of blocking calls (ipc.c) with a component that maps
 * memory within the process.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ipc.h"
#include "mem.h"
#include "params.h"
#include "tacos_comm.h"
#include "tacos_probe.h"

/* ranks, and values one max over them takes (the core's settings
 * agreement: 17 values and their complements) */
enum { MAXN = 8, MAXV = 64 };

typedef struct {
    int n;
    pthread_barrier_t bar;
    uint64_t slot[MAXN][MAXV];
    char *gathered; /* the allgather's */
    atomic_int errors_logged, synthesized, maxes, read, reused, removed, fully_unwound;
    int ranks_per_host; /* > 0: the records say hosts of this many ranks */
} world_t;

typedef struct {
    world_t *w;
    int rank;
    tacos_settings_t s;
    tacos_comm_t *c;
    int result; /* per scenario */
    uint64_t hash; /* per scenario */
} rank_t;

static int max_u64(void *ctx, uint64_t *v, int n)
{
    rank_t *r = ctx;
    world_t *w = r->w;
    if (n > MAXV) {
        fprintf(stderr, "test_comm: a max over %d values (room for %d)\n", n, MAXV);
        abort();
    }
    memcpy(w->slot[r->rank], v, (size_t)n * sizeof *v);
    if (r->rank == 0)
        atomic_fetch_add(&w->maxes, 1);
    pthread_barrier_wait(&w->bar);
    for (int q = 0; q < w->n; q++)
        for (int i = 0; i < n; i++)
            if (w->slot[q][i] > v[i])
                v[i] = w->slot[q][i];
    pthread_barrier_wait(&w->bar);
    return 0;
}

static int allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    rank_t *r = ctx;
    world_t *w = r->w;
    if (r->rank == 0)
        w->gathered = malloc(bytes * (size_t)w->n);
    pthread_barrier_wait(&w->bar);
    memcpy(w->gathered + bytes * (size_t)r->rank, mine, bytes);
    pthread_barrier_wait(&w->bar);
    memcpy(all, w->gathered, bytes * (size_t)w->n);
    for (int i = 0; w->ranks_per_host && bytes == sizeof(tacos_probe_record_t) && i < w->n; i++) {
        tacos_probe_record_t *rec = (tacos_probe_record_t *)all + i;
        snprintf(rec->host, sizeof rec->host, "h%d", i / w->ranks_per_host);
        rec->host_id = 1000 + (uint64_t)(i / w->ranks_per_host);
    }
    pthread_barrier_wait(&w->bar);
    if (r->rank == 0)
        free(w->gathered);
    return 0;
}

static void logger(void *ctx, int level, const char *msg)
{
    rank_t *r = ctx;
    if (level == 0)
        atomic_fetch_add(&r->w->errors_logged, 1);
    if (level == 5 && strstr(msg, "modelled"))
        atomic_fetch_add(&r->w->synthesized, 1);
    if (level == 5 && strstr(msg, "modelled") && strstr(msg, "switches fully unwound"))
        atomic_fetch_add(&r->w->fully_unwound, 1);
    if (level == 5 && strstr(msg, "schedule read from"))
        atomic_fetch_add(&r->w->read, 1);
    if (level == 5 && strstr(msg, "class's schedule"))
        atomic_fetch_add(&r->w->reused, 1);
    if (level == 1 && strstr(msg, "is not what the other ranks synthesized"))
        atomic_fetch_add(&r->w->removed, 1);
}

static tacos_settings_t base_settings(void)
{
    tacos_settings_t s = tacos_settings_default();
    s.min_bytes = s.rooted_min_bytes = s.gather_min_bytes = 1000;
    s.cache_size = 4;
    s.probe = 0;
    s.param_prefix = "coll_tacos_";
    return s;
}

typedef void (*scenario_t)(rank_t *r);

static void *thread_main(void *arg)
{
    rank_t *r = ((void **)arg)[0];
    scenario_t f = (scenario_t)((void **)arg)[1];
    tacos_comm_ops_t ops = {.ctx = r, .rank = r->rank, .size = r->w->n, .local_rank = r->rank,
                            .id = 7, .max_u64 = max_u64, .allgather = allgather,
                            .log = logger}; /* no measurement on one host */
    r->c = tacos_comm_new(&r->s, &ops);
    f(r);
    tacos_comm_free(r->c);
    return NULL;
}

static const char *topo_file; /* every rank's, with the file scenario */
static void (*every_rank)(tacos_settings_t *); /* every rank's tweak (NULL: none) */

/* Runs f on n ranks, per_host to a host (0: all on one); tweak changes
 * rank 1's settings (NULL: none). */
static void run_on(int n, int per_host, scenario_t f, void (*tweak)(tacos_settings_t *),
                   rank_t *ranks, world_t *w)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    w->ranks_per_host = per_host;
    pthread_barrier_init(&w->bar, NULL, (unsigned)n);
    pthread_t th[MAXN];
    void *args[MAXN][2];
    for (int i = 0; i < n; i++) {
        ranks[i] = (rank_t){w, i, base_settings(), NULL, 0, 0};
        ranks[i].s.topo_file = (char *)topo_file;
        if (every_rank)
            every_rank(&ranks[i].s);
        if (tweak && i == 1)
            tweak(&ranks[i].s);
        args[i][0] = &ranks[i];
        args[i][1] = (void *)f;
        pthread_create(&th[i], NULL, thread_main, args[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&w->bar);
}

static void run(int n, scenario_t f, void (*tweak)(tacos_settings_t *), rank_t *ranks,
                world_t *w)
{
    run_on(n, 0, f, tweak, ranks, w);
}

static void run_hosts(int n, int per_host, scenario_t f, rank_t *ranks, world_t *w)
{
    run_on(n, per_host, f, NULL, ranks, w);
}

/* result: 1 plan for a large Allreduce, cached the second time, with a
 * program of this rank; 2 more when the small call falls back for the
 * threshold with that reason. */
static void plans(rank_t *r)
{
    const tacos_plan_t *p = NULL, *q = NULL;
    const char *why = NULL;
    CHECK(tacos_comm_plan(r->c, TACOS_ALLREDUCE, 0, 1 << 20, &why, &p) == 0, "plan");
    why = NULL;
    CHECK(tacos_comm_plan(r->c, TACOS_ALLREDUCE, 0, (1 << 20) + 5, &why, &q) == 0, "plan again");
    r->result = p && p == q && p->prog && p->exec && p->off && p->k >= 1;
    why = NULL;
    CHECK(tacos_comm_plan(r->c, TACOS_ALLREDUCE, 0, 999, &why, &q) == 0, "small plan");
    if (!q && why && strstr(why, "below coll_tacos_min_bytes"))
        r->result += 2;
}

/* result: 1 where a 4 KiB and a 64 MiB Allreduce both plan (on hosts
 * joined by a network switch: small sizes on it fully unwound) */
static void small_and_large(rank_t *r)
{
    const tacos_plan_t *p = NULL, *q = NULL;
    const char *why = NULL;
    CHECK(tacos_comm_plan(r->c, TACOS_ALLREDUCE, 0, 4096, &why, &p) == 0, "small plan");
    why = NULL;
    CHECK(tacos_comm_plan(r->c, TACOS_ALLREDUCE, 0, 64 << 20, &why, &q) == 0, "large plan");
    r->result = p && p->prog && q && q->prog && p != q;
}

static void unmeasured(tacos_settings_t *s) { s->measure = 0; }
static void unwind_ring(tacos_settings_t *s) { s->measure = 0, s->unwind_degree = 1; }

/* 4 hosts of one rank and 3 of two on one network switch, not measured
 * (a ring of hosts; degree 1 set: the same): the small call on the switch
 * fully unwound, the large on the ring, agreed on every rank; with
 * unwind_degree 1, both on the ring; on one host, no such choice. */
static void lowerings(rank_t *ranks, world_t *w)
{
    const struct { int n, per, want; void (*tweak)(tacos_settings_t *); } cases[] = {
        {4, 1, 4, unmeasured}, {6, 2, 6, unmeasured}, {4, 1, 0, unwind_ring}, {4, 0, 0, NULL}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        every_rank = cases[k].tweak;
        run_hosts(cases[k].n, cases[k].per, small_and_large, ranks, w);
        every_rank = NULL;
        for (int i = 0; i < cases[k].n; i++)
            CHECK(ranks[i].result == 1, "lowerings %zu: rank %d planned %d", k, i, ranks[i].result);
        CHECK(w->errors_logged == 0 && w->synthesized == 2 * cases[k].n &&
                  w->fully_unwound == cases[k].want,
              "lowerings %zu: %d messages, %d syntheses (want %d), %d fully unwound (want %d)", k,
              (int)w->errors_logged, (int)w->synthesized, 2 * cases[k].n,
              (int)w->fully_unwound, cases[k].want);
    }
}

static void seed_differs(tacos_settings_t *s) { s->seed = 2; }
static void disabled(tacos_settings_t *s) { s->enable = 0; }

/* result: 1 when the plan falls back because the settings differ. */
static void falls_back(rank_t *r)
{
    const tacos_plan_t *p = NULL;
    const char *why = NULL;
    CHECK(tacos_comm_plan(r->c, TACOS_BROADCAST, 2, 1 << 20, &why, &p) == 0, "plan");
    r->result = !p && why && strstr(why, "settings differ");
}

/* cache of 4: five size classes, then the first again (evicted: made anew) */
static void eviction(rank_t *r)
{
    const tacos_plan_t *p = NULL;
    for (int i = 0; i < 6; i++) {
        const char *why = NULL;
        size_t bytes = (size_t)4096 << (i % 5);
        CHECK(tacos_comm_plan(r->c, TACOS_ALLGATHER, 0, bytes, &why, &p) == 0 && p, "plan %d", i);
    }
}

/* result: 1 where three large Allreduce classes (1 GiB, then 3 GiB and
 * 512 MiB; reversed: the other way round) all have programs, one shared by
 * the three (the class that serves them all's); hash: the 1 GiB plan's */
static void large_classes(rank_t *r, int reversed)
{
    const tacos_plan_t *p[3] = {NULL, NULL, NULL};
    const size_t bytes[3] = {(size_t)1 << 30, (size_t)3 << 30, (size_t)1 << 29};
    for (int j = 0; j < 3; j++) {
        int i = reversed ? 2 - j : j;
        const char *why = NULL;
        CHECK(tacos_comm_plan(r->c, TACOS_ALLREDUCE, 0, bytes[i], &why, &p[i]) == 0 && p[i],
              "plan of %zu bytes: %s", bytes[i], why ? why : "");
    }
    r->result = p[0] && p[1] && p[2] && p[0]->prog == p[1]->prog && p[1]->prog == p[2]->prog &&
                p[0]->exec != p[1]->exec && p[1]->exec != p[2]->exec;
    r->hash = p[0] ? p[0]->hash : 0;
}
static void large_classes_forward(rank_t *r) { large_classes(r, 0); }
static void large_classes_reversed(rank_t *r) { large_classes(r, 1); }

static void no_reuse(tacos_settings_t *s) { s->reuse_percent = 0; }

static void file_plan(rank_t *r)
{
    const tacos_plan_t *p = NULL;
    const char *why = NULL;
    CHECK(tacos_comm_plan(r->c, TACOS_ALLREDUCE, 0, 1 << 20, &why, &p) == 0, "plan");
    r->result = !p && why && strstr(why, "no usable topology");
}

/* ---- coll_tacos_schedule_dir ---- */

static char kept_dir[] = "/tmp/test_comm-XXXXXX", other_dir[] = "/tmp/test_comm-XXXXXX";
static void in_kept_dir(tacos_settings_t *s) { s->schedule_dir = kept_dir; }
static void in_other_dir(tacos_settings_t *s) { s->schedule_dir = other_dir; }

/* The one file in dir (its path in path), or how many there are. */
static int files_in(const char *dir, char *path, size_t n)
{
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && ++files == 1)
            snprintf(path, n, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    return files;
}

static void remove_files(const char *dir)
{
    char path[512];
    while (files_in(dir, path, sizeof path) > 0 && !unlink(path))
        ;
}

static void check_plans(int n, const rank_t *ranks, const world_t *w, const char *what,
                        int reads, int errors)
{
    for (int i = 0; i < n; i++)
        CHECK(ranks[i].result == 3, "%s: rank %d plans result %d", what, i, ranks[i].result);
    CHECK(reads < 0 || w->read == reads, "%s: %d ranks read the schedule, want %d", what, (int)w->read, reads);
    CHECK(w->errors_logged == errors, "%s: %d messages, want %d", what, (int)w->errors_logged,
          errors);
}

static void schedules_kept(rank_t *ranks, world_t *w)
{
    char path[512];
    if (!mkdtemp(kept_dir) || !mkdtemp(other_dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    every_rank = in_kept_dir;
    run(3, plans, NULL, ranks, w);
    check_plans(3, ranks, w, "the first job", -1, 0); /* (rank 0 may write before some read) */
    CHECK(files_in(kept_dir, path, sizeof path) == 1, "the first job kept %d files, want 1",
          files_in(kept_dir, path, sizeof path));
    run(3, plans, NULL, ranks, w);
    check_plans(3, ranks, w, "the second job", 3, 0);
    /* rank 1 sees another directory: it synthesizes, the others read, all agree */
    run(3, plans, in_other_dir, ranks, w);
    check_plans(3, ranks, w, "one rank without the file", 2, 0);
    /* damaged: said once (rank 0), synthesized, replaced */
    FILE *f = fopen(path, "r+b");
    int byte = f && !fseek(f, 200, SEEK_SET) ? fgetc(f) : EOF;
    CHECK(byte != EOF && !fseek(f, 200, SEEK_SET) && fputc(byte ^ 0x5a, f) != EOF, "damaging %s",
          path);
    if (f)
        fclose(f);
    run(3, plans, NULL, ranks, w);
    /* (a rank may read the replacement: rank 0 writes it as soon as it made it) */
    check_plans(3, ranks, w, "a damaged file", -1, 1);
    run(3, plans, NULL, ranks, w);
    check_plans(3, ranks, w, "the replaced file", 3, 0);
    /* a file of the right key (the default coll_tacos_hierarchy, 2) but
     * another schedule (k = 3, which the automatic choice never makes), as
     * another build could keep: ranks
     * that read it and rank 1, which synthesizes, disagree; the size falls
     * back and the file is removed; the next job synthesizes and keeps */
    remove_files(kept_dir);
    const char *fix = getenv("TACOS_FIXTURES");
    char file[512];
    snprintf(file, sizeof file, "%s/mesh2x2.json", fix ? fix : "../fixtures");
    tacos_topo_t *mesh = NULL;
    tacos_sched_t *k3 = NULL;
    tacos_synth_opts_t o = {TACOS_ALLREDUCE, 0, 3, 1 << 20, 1, 1, 0, 0}, asked = o;
    asked.chunks_per_npu = 0;
    CHECK_OK(tacos_topo_read_file(file, &mesh));
    if (mesh && tacos_synthesize(mesh, &o, &k3) == TACOS_OK &&
        tacos_sched_cache_path(kept_dir, mesh, &asked, TACOS_HIER_AUTO, path, sizeof path) == 0)
        CHECK_OK(tacos_sched_cache_save(k3, &asked, TACOS_HIER_AUTO, path));
    tacos_sched_free(k3);
    tacos_topo_free(mesh);
    topo_file = file;
    run(4, plans, in_other_dir, ranks, w);
    CHECK(ranks[0].result == 2 && w->read == 3 && w->removed == 1 && access(path, F_OK),
          "a file another build kept: result %d (want 2: the size falls back), %d ranks read it "
          "(want 3), removed %d times (want 1), %s", ranks[0].result, (int)w->read,
          (int)w->removed, access(path, F_OK) ? "gone" : "still there");
    run(4, plans, NULL, ranks, w);
    check_plans(4, ranks, w, "after the removal", -1, 0); /* (rank 0 may write first) */
    CHECK(files_in(kept_dir, path, sizeof path) == 1, "after the removal: nothing kept");
    topo_file = NULL;
    every_rank = NULL;
    remove_files(kept_dir);
    remove_files(other_dir);
}

/* The time of a part's choice kept in path (160 bytes: header, key, body,
 * time, checksum), or with time > 0 that time written in its place and the
 * checksum mended (FNV over the words before it, each product folded). */
static double choice_time(const char *path, double time)
{
    unsigned char b[160];
    double was = 0;
    FILE *f = fopen(path, "r+b");
    if (!f || fread(b, 1, sizeof b, f) != sizeof b) {
        CHECK(0, "reading %s", path);
        if (f)
            fclose(f);
        return 0;
    }
    memcpy(&was, b + 144, 8);
    if (time > 0) {
        uint64_t h = 14695981039346656037ull, w;
        memcpy(b + 144, &time, 8);
        for (int i = 0; i < 152; i += 8) {
            memcpy(&w, b + i, 8);
            h = (h ^ w) * 1099511628211ull;
            h ^= h >> 32;
        }
        memcpy(b + 152, &h, 8);
        CHECK(!fseek(f, 0, SEEK_SET) && fwrite(b, 1, sizeof b, f) == sizeof b, "writing %s", path);
    }
    fclose(f);
    return was;
}

static void in_kept_dir_in_levels(tacos_settings_t *s)
{
    s->schedule_dir = kept_dir;
    s->hierarchy = TACOS_HIER_LEVELS;
}

/* A rank's part in levels: its choice kept (k and time), each rank's part
 * made from it by the second job, agreed as synthesized; a choice whose
 * time the parts made from it do not model (another build's) synthesized
 * again and replaced. */
static void parts_kept(rank_t *ranks, world_t *w)
{
    char path[512], file[512];
    const char *fix = getenv("TACOS_FIXTURES");
    struct stat st;
    snprintf(file, sizeof file, "%s/switch2x4.json", fix ? fix : "../fixtures");
    topo_file = file;
    every_rank = in_kept_dir_in_levels;
    run(8, plans, NULL, ranks, w);
    check_plans(8, ranks, w, "parts: the first job", -1, 0);
    CHECK(files_in(kept_dir, path, sizeof path) == 1 && !stat(path, &st) && st.st_size == 160,
          "parts: the first job kept %d files (want 1, a part's choice of 160 bytes)",
          files_in(kept_dir, path, sizeof path));
    run(8, plans, NULL, ranks, w);
    check_plans(8, ranks, w, "parts: the second job", 8, 0);
    double kept = choice_time(path, 0);
    choice_time(path, kept * 1.5);
    run(8, plans, NULL, ranks, w);
    /* (rank 0 replaces it as soon as it synthesized: a rank may read that;
     * not said: a process says the directory's problems once, and
     * schedules_kept's damaged file was said) */
    check_plans(8, ranks, w, "parts: another build's choice", -1, 0);
    CHECK(w->read < 8 && choice_time(path, 0) == kept,
          "parts: another build's choice: %d ranks took it, %g us kept after (want %g)",
          (int)w->read, choice_time(path, 0), kept);
    run(8, plans, NULL, ranks, w);
    check_plans(8, ranks, w, "parts: the replaced choice", 8, 0);
    topo_file = NULL;
    every_rank = NULL;
    remove_files(kept_dir);
    rmdir(kept_dir);
    rmdir(other_dir);
}

/* ---- the IPC mappings' table ---- */

static int opened, closed;

static int fake_open(const tacos_ipc_desc_t *d, uintptr_t *base, size_t *bytes)
{
    *base = 0x100000 + (uintptr_t)d->buffer_id * 0x1000;
    *bytes = 0x1000;
    opened++;
    return 0;
}

static void fake_close(uintptr_t base, size_t bytes)
{
    (void)base, (void)bytes;
    closed++;
}

/* 200 allocations pinned at once (more than the table's first slots: it
 * grows), each found again while pinned; once unpinned, the next mapping
 * closes all but `kept` of them, the least recently used first. */
static void ipc_maps(void)
{
    enum { N = 200, KEPT = 64 };
    static tacos_ipc_desc_t d[N + 1];
    tacos_ipc_maps_t t = {.kept = KEPT, .max_bytes = (size_t)-1, .open = fake_open,
                          .close = fake_close};
    tacos_ipc_map_t *m;
    for (int i = 0; i <= N; i++) {
        d[i].pid = 42, d[i].buffer_id = (unsigned long long)i + 1;
        memcpy(d[i].handle, &i, sizeof i);
    }
    for (int i = 0; i < N; i++) {
        int rc = tacos_ipc_maps_pin(&t, &d[i], &m);
        CHECK(!rc && m && m->base == 0x100000 + (uintptr_t)(i + 1) * 0x1000,
              "ipc maps: pin %d of %d at once: rc %d", i, N, rc);
    }
    CHECK(opened == N && closed == 0 && t.n == N, "ipc maps: %d opened, %d closed, %d mapped",
          opened, closed, t.n);
    CHECK(!tacos_ipc_maps_pin(&t, &d[7], &m) && m->pins == 2 && opened == N,
          "ipc maps: a pinned mapping opened again");
    tacos_ipc_maps_unpin(&t, &d[7]);
    for (int i = 0; i < N; i++)
        tacos_ipc_maps_unpin(&t, &d[i]);
    CHECK(!tacos_ipc_maps_pin(&t, &d[N], &m) && t.n == KEPT && closed == N + 1 - KEPT,
          "ipc maps: %d mapped, %d closed once unpinned (want %d, %d)", t.n, closed, KEPT,
          N + 1 - KEPT);
    CHECK(!tacos_ipc_maps_pin(&t, &d[N - 1], &m) && opened == N + 1,
          "ipc maps: the most recently used closed");
    free(t.maps);
}

/* ---- the CUDA IPC agreement of blocking calls ---- */

static void *plain_alloc(size_t bytes) { return malloc(bytes); }
static int fake_export(const void *p, tacos_ipc_desc_t *d)
{
    memset(d, 0, sizeof *d);
    memcpy(&d->handle, &p, sizeof p);
    return 0;
}
static int fake_import(const tacos_ipc_desc_t *d, const void **p)
{
    memcpy(p, &d->handle, sizeof *p);
    return 0;
}
static void fake_release(const tacos_ipc_desc_t *d) { (void)d; }

/* A component whose "device" memory the ranks (threads) map as it is. */
static const tacos_mc_t fake_ipc = {.name = "fake", .dev_alloc = plain_alloc, .dev_free = free,
                                    .ipc_export = fake_export, .ipc_import = fake_import,
                                    .ipc_release = fake_release};
static const tacos_mem_t a_stream;

/* 1 MiB calls: on GPU buffers (through fake_ipc) where on_gpu says so;
 * result: how many took IPC. */
static void agree_calls(rank_t *r, int calls, int (*on_gpu)(int rank, int call))
{
    tacos_call_t call = {.v = {.bytes = 1 << 20}};
    for (int i = 0; i < calls; i++) {
        const tacos_mc_t *ipc = NULL;
        int gpu = on_gpu(r->rank, i);
        call.mem = gpu ? &a_stream : NULL, call.mc = gpu ? &fake_ipc : NULL;
        CHECK(tacos_ipc_agree(r->c, &call, &ipc) == 0, "rank %d: agreement %d failed", r->rank, i);
        r->result += ipc != NULL;
    }
}
static int every_other(int rank, int call) { (void)rank; return call % 2 == 0; }
static int never(int rank, int call) { (void)rank, (void)call; return 0; }
static int all_but_rank_0(int rank, int call) { (void)call; return rank != 0; }
static int rank_0_now_and_then(int rank, int call) { return call < 4 || rank || call % 2; }
static int host_first(int rank, int call) { (void)rank; return call % 2; }
static void gpu_and_host(rank_t *r) { agree_calls(r, 40, every_other); }
static void host_only(rank_t *r) { agree_calls(r, 200, never); }
static void one_rank_on_host(rank_t *r) { agree_calls(r, 200, all_but_rank_0); }
static void rank_0_on_host_now_and_then(rank_t *r) { agree_calls(r, 40, rank_0_now_and_then); }
static void host_then_gpu(rank_t *r) { agree_calls(r, 40, host_first); }
static void ipc_from_0(tacos_settings_t *s) { s->cuda_ipc_min_bytes = 0; }

static void ipc_agreements(rank_t *ranks, world_t *w)
{
    /* every call on GPU buffers takes IPC, though host calls come between
     * (a pause after their "no" made 2 in 3 of them stage) */
    every_rank = ipc_from_0;
    run(3, gpu_and_host, NULL, ranks, w);
    for (int i = 0; i < 3; i++)
        CHECK(ranks[i].result == 20, "GPU calls between host calls: rank %d took IPC %d times "
              "of 20", i, ranks[i].result);
    /* the same starting on host buffers: the first call pauses (no rank
     * staged yet), the GPU call it skips counts, so no later one pauses */
    run(3, host_then_gpu, NULL, ranks, w);
    for (int i = 0; i < 3; i++)
        CHECK(ranks[i].result == 19, "host call first: rank %d took IPC %d times of 20, want 19",
              i, ranks[i].result);
    /* rank 0 on host buffers in every other call from the fifth: the
     * others take IPC only where it is on the GPU too */
    run(3, rank_0_on_host_now_and_then, NULL, ranks, w);
    for (int i = 0; i < 3; i++)
        CHECK(ranks[i].result == 22, "rank 0 on host buffers now and then: rank %d took IPC %d "
              "times, want 22", i, ranks[i].result);
    /* a program on host buffers, and one whose rank 0 is: few agreements */
    scenario_t f[] = {host_only, one_rank_on_host};
    for (int k = 0; k < 2; k++) {
        run(3, f[k], NULL, ranks, w);
        CHECK(ranks[0].result + ranks[1].result + ranks[2].result == 0, "host calls: IPC");
        CHECK(w->maxes <= 12, "%s: %d agreements in 200 calls, want at most 12",
              k ? "rank 0 on host buffers" : "host buffers", (int)w->maxes);
    }
    every_rank = NULL;
}

/* The events' reason keys do not depend on how a binding spells a
 * parameter, and the event names the collective as MPI does. */
static void events(void)
{
    static const char *const cases[][2] = {
        {"below coll_tacos_min_bytes", "min_bytes"},
        {"below TACOS_ROOTED_NET_MIN_BYTES", "rooted_net_min_bytes"},
        {"coll_tacos_nonblocking is 0", "nonblocking_off"},
        {"TACOS_NONBLOCKING is 0", "nonblocking_off"},
        {"coll_tacos_v_schedules off", "v_schedules_off"},
        {"no previous component; one rank", "v_one_rank"},
        {"no previous component", "no_previous_component"},
        {"synthesis failed or ranks disagreed earlier", "no_schedule"},
        {"not planned yet (whatever follows)", "not_planned"},
        {"an intercommunicator", "intercommunicator"},
        {"something new", "other"},
    };
    char key[64], event[TACOS_EVENT_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *k = tacos_reason_key(cases[i][0], key);
        CHECK(!strcmp(k, cases[i][1]), "key of \"%s\": %s, want %s", cases[i][0], k, cases[i][1]);
    }
    CHECK(!strcmp(tacos_reason_key(NULL, key), "-"), "no reason: %s", tacos_reason_key(NULL, key));
    tacos_event(event, "Reduce_scatter_block", TACOS_PERSISTENT, "fallback", "below TACOS_MIN_BYTES");
    CHECK(!strcmp(event, "event coll=reduce_scatter_block mode=persistent path=fallback "
                         "reason=min_bytes"), "event: %s", event);
}

int main(void)
{
    alarm(300); /* ranks that disagree wait at a barrier forever: fail instead */
    events();
    ipc_maps();
    world_t w;
    rank_t ranks[MAXN];
    for (int n = 2; n <= 5; n++) {
        run(n, plans, NULL, ranks, &w);
        for (int i = 0; i < n; i++)
            CHECK(ranks[i].result == 3, "n=%d rank %d: plans result %d", n, i, ranks[i].result);
        CHECK(w.errors_logged == 0, "n=%d: %d messages", n, (int)w.errors_logged);
        CHECK(w.synthesized == n, "n=%d: %d syntheses (one per rank)", n, (int)w.synthesized);
    }
    void (*tweaks[])(tacos_settings_t *) = {seed_differs, disabled};
    for (int t = 0; t < 2; t++) {
        run(4, falls_back, tweaks[t], ranks, &w);
        for (int i = 0; i < 4; i++)
            CHECK(ranks[i].result == 1, "tweak %d rank %d: no fall-back", t, i);
        /* one message, from rank 0 (rank 1 alone off is a difference too) */
        CHECK(w.errors_logged == 1, "tweak %d: %d messages, want 1", t, (int)w.errors_logged);
        CHECK(w.synthesized == 0, "tweak %d: synthesized anyway", t);
    }
    /* one synthesis per rank (the class serving all three), whatever the order */
    run(3, large_classes_forward, NULL, ranks, &w);
    uint64_t forward = ranks[0].hash;
    for (int i = 0; i < 3; i++)
        CHECK(ranks[i].result == 1, "large classes: rank %d's plans do not share", i);
    CHECK(w.synthesized == 3 && w.reused == 9, "large classes: %d syntheses, %d shared, "
          "want 3 and 9", (int)w.synthesized, (int)w.reused);
    run(3, large_classes_reversed, NULL, ranks, &w);
    CHECK(ranks[0].result == 1 && ranks[0].hash == forward && w.synthesized == 3,
          "large classes in reverse: result %d, %d syntheses, the 1 GiB schedule %s",
          ranks[0].result, (int)w.synthesized, ranks[0].hash == forward ? "the same" : "another");
    every_rank = no_reuse;
    run(3, large_classes_forward, NULL, ranks, &w);
    every_rank = NULL;
    CHECK(ranks[0].result == 0 && w.synthesized == 9 && w.reused == 0,
          "reuse_percent 0: %d syntheses, %d shared, want 9 and 0", (int)w.synthesized,
          (int)w.reused);
    run(3, eviction, NULL, ranks, &w);
    CHECK(w.synthesized == 3 * 6, "eviction: %d syntheses, want 18 (the first class again)",
          (int)w.synthesized);
    /* a topology file for 8 NPUs on 3 ranks: every rank falls back, and rank 0
     * alone says why */
    const char *fix = getenv("TACOS_FIXTURES");
    char path[512];
    snprintf(path, sizeof path, "%s/ring8.json", fix ? fix : "../fixtures");
    topo_file = path;
    run(3, file_plan, NULL, ranks, &w);
    topo_file = NULL;
    for (int i = 0; i < 3; i++)
        CHECK(ranks[i].result == 1, "wrong-size file: rank %d did not fall back", i);
    CHECK(w.errors_logged == 1, "wrong-size file: %d messages, want 1 (rank 0's)",
          (int)w.errors_logged);
    lowerings(ranks, &w);
    ipc_agreements(ranks, &w);
    schedules_kept(ranks, &w);
    parts_kept(ranks, &w);
    return check_report("test_comm");
}
