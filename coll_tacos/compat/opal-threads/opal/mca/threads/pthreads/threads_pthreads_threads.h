/* SPDX-License-Identifier: BSD-3-Clause */
/* Stand-in for Open MPI 5/6's opal/mca/threads/pthreads/threads_pthreads_threads.h
 * (not installed): threads.h declares struct opal_thread_t itself and
 * leaves opal_thread_yield to this header. */
#ifndef TACOS_COMPAT_THREADS_PTHREADS_THREADS_H
#define TACOS_COMPAT_THREADS_PTHREADS_THREADS_H
#include <pthread.h>
#include <sched.h>

static inline void opal_thread_yield(void)
{
    sched_yield();
}
#endif
