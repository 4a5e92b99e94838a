/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For tests: host memory whose "device" allocations the other processes of
 * the host can map, exported and imported as CUDA IPC shares a GPU's (see
 * mem.h), so that the IPC path (the agreement, the host maps, descriptions
 * instead of data, the end's fence) runs under real MPI without a GPU.
 *
 * An allocation is a memfd mapped shared; its description names the host,
 * the process and the descriptor, and another process maps it read-only
 * through /proc/PID/fd/FD (the same user, as CUDA IPC needs).  A process
 * asked to map another host's memory fails, as CUDA would: the test sees a
 * wrong host map instead of reading through a kernel the emulated hosts
 * happen to share.  Mappings are kept and pinned as the CUDA component's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "tacos_comm.h" /* tacos_fault */
#include "tacos_synth.h"

#define MAX_ALLOCS 1024 /* this process's shared allocations at once */
#define KEPT_MAPS 64    /* other processes' kept mapped once nothing pins them */

typedef struct { /* what a description's handle holds */
    int fd;
    char host[60];
} handle_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *base;
    size_t bytes;
    int fd;
    unsigned long long id;
} allocs[MAX_ALLOCS];
static unsigned long long next_id = 1;
static __thread char last_error[160];

static int fail(const char *what)
{
    snprintf(last_error, sizeof last_error, "shared host memory: %s", what);
    return TACOS_ERR_IO;
}

static void this_host(char *host, size_t n)
{
    if (gethostname(host, n))
        host[0] = 0;
    host[n - 1] = 0;
}

static void *shared_alloc(size_t bytes)
{
    bytes = bytes ? bytes : 1;
    int fd = memfd_create("tacos-staging", MFD_CLOEXEC), kept = 0;
    void *p = fd >= 0 && !ftruncate(fd, (off_t)bytes)
                  ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    pthread_mutex_lock(&lock);
    for (int i = 0; p != MAP_FAILED && !kept && i < MAX_ALLOCS; i++)
        if (!allocs[i].base) {
            allocs[i].base = p, allocs[i].bytes = bytes, allocs[i].fd = fd;
            allocs[i].id = next_id++;
            kept = 1;
        }
    pthread_mutex_unlock(&lock);
    if (kept)
        return p;
    if (p != MAP_FAILED)
        munmap(p, bytes);
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* The allocation holding p, or -1 (called with the lock held). */
static int find_alloc(const void *p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base && (const char *)p >= allocs[i].base &&
            (const char *)p < allocs[i].base + allocs[i].bytes)
            return i;
    return -1;
}

static void shared_free(void *p)
{
    pthread_mutex_lock(&lock);
    int i = p ? find_alloc(p) : -1;
    if (i >= 0) {
        munmap(allocs[i].base, allocs[i].bytes);
        close(allocs[i].fd);
        allocs[i].base = NULL;
    }
    pthread_mutex_unlock(&lock);
}

/* Tests: from the export TACOS_FAULT=RANK:ipcexp:N names on, every one
 * fails, as CUDA IPC under MIG. */
static int no_export;

static int shared_export(const void *p, tacos_ipc_desc_t *d)
{
    handle_t h = {0};
    if (no_export || (no_export = tacos_fault("ipcexp")))
        return fail("cannot export memory (TACOS_FAULT)");
    this_host(h.host, sizeof h.host);
    pthread_mutex_lock(&lock);
    int i = find_alloc(p);
    if (i >= 0) {
        h.fd = allocs[i].fd;
        d->buffer_id = allocs[i].id, d->offset = (unsigned long long)((const char *)p - allocs[i].base);
    }
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return fail("exporting memory it did not allocate");
    memcpy(d->handle, &h, sizeof h);
    d->pid = (long long)getpid();
    return 0;
}

/* Tests: from the mapping TACOS_FAULT=RANK:ipcmap:N names on, every one
 * fails, as with GPUs that have no peer access. */
static int no_peers;

/* Maps what d describes (tacos_ipc_maps_t's open; with the lock held). */
static int map_in(const tacos_ipc_desc_t *d, uintptr_t *base, size_t *bytes)
{
    handle_t h;
    char path[64], host[sizeof h.host];
    struct stat st;
    if (no_peers || (no_peers = tacos_fault("ipcmap")))
        return fail("cannot map another process's memory (TACOS_FAULT)");
    memcpy(&h, d->handle, sizeof h);
    this_host(host, sizeof host);
    if (strcmp(h.host, host)) {
        snprintf(last_error, sizeof last_error,
                 "shared host memory: rank on %s asked to map memory of %s", host, h.host);
        return TACOS_ERR_IO;
    }
    snprintf(path, sizeof path, "/proc/%lld/fd/%d", d->pid, h.fd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    void *p = MAP_FAILED;
    if (fd >= 0 && !fstat(fd, &st))
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED)
        return fail("mapping another process's memory (/proc/PID/fd) failed");
    *base = (uintptr_t)p, *bytes = (size_t)st.st_size;
    return 0;
}

static void unmap(uintptr_t base, size_t bytes)
{
    munmap((void *)base, bytes);
}

static tacos_ipc_maps_t maps = {.kept = KEPT_MAPS,
                                .max_bytes = (size_t)-1, .open = map_in, .close = unmap};

static int shared_import(const tacos_ipc_desc_t *d, const void **p)
{
    tacos_ipc_map_t *m;
    *p = NULL;
    pthread_mutex_lock(&lock);
    int rc = tacos_ipc_maps_pin(&maps, d, &m);
    if (rc == TACOS_ERR_NOMEM)
        rc = fail("out of memory for mappings of other processes' allocations");
    if (!rc && d->offset >= m->bytes) {
        tacos_ipc_maps_unpin(&maps, d);
        rc = fail("a description past the end of its allocation");
    }
    if (!rc)
        *p = (const char *)m->base + d->offset;
    pthread_mutex_unlock(&lock);
    return rc;
}

static void shared_release(const tacos_ipc_desc_t *d)
{
    pthread_mutex_lock(&lock);
    tacos_ipc_maps_unpin(&maps, d);
    pthread_mutex_unlock(&lock);
}

static tacos_mem_kind_t shared_query(const void *p)
{
    (void)p;
    return TACOS_MEM_HOST;
}

static const char *shared_why(void)
{
    return last_error;
}

static const tacos_mc_t shared_mc = {.name = "shared host memory",
                                     .query = shared_query,
                                     .host_alloc = malloc,
                                     .host_free = free,
                                     .dev_alloc = shared_alloc,
                                     .dev_free = shared_free,
                                     .ipc_export = shared_export,
                                     .ipc_import = shared_import,
                                     .ipc_release = shared_release,
                                     .why = shared_why};

const tacos_mc_t *tacos_mc_host_shared(void)
{
    return &shared_mc;
}
