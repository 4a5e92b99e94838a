/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test harness only (tests/mpi, preloaded into MPICH jobs after
 * libtacos-pmpi): MPICH's ch4:ucx ranks poll without pause while they
 * wait, and the tests run 3-8 ranks on 2 cores, so a rank that has work
 * waits for the scheduler to take the core from pollers.  Open MPI yields
 * when oversubscribed (mpi_yield_when_idle); this gives MPICH the same by
 * wrapping ucp_worker_progress, which its progress loop calls on every
 * pass: after 64 calls in a row in which UCX progressed nothing,
 * sched_yield().  (Messages through MPICH's shared memory are not UCX's:
 * a rank receiving only those yields every 64 passes too.)  Only when a
 * rank runs: no message, request or result changes; where MPICH does not
 * use UCX (ch4:ofi) nothing calls it and the jobs poll as before.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

enum { IDLE_POLLS = 64 };

typedef unsigned (*progress_fn)(void *worker);

unsigned ucp_worker_progress(void *worker);

unsigned ucp_worker_progress(void *worker)
{
    static progress_fn real;
    static __thread unsigned idle;
    progress_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (!f) { /* no progress would hang the job: say why instead */
            fprintf(stderr, "libyield_when_idle: no ucp_worker_progress after it (%s)\n",
                    dlerror());
            abort();
        }
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);
    }
    unsigned n = f(worker);
    if (n)
        idle = 0;
    else if (++idle >= IDLE_POLLS) {
        idle = 0;
        sched_yield();
    }
    return n;
}
