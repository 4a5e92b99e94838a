/* SPDX-License-Identifier: BSD-3-Clause */
/* Stand-in for Open MPI 5/6's opal/mca/threads/pthreads/threads_pthreads_mutex.h,
 * which opal_config.h names but Open MPI does not install.  Open MPI's own
 * is these pthread types under other names; the component checks at open
 * that opal_mutex_t, which holds one, has the size libopen-pal built it
 * with (coll_tacos_component.c). */
#ifndef TACOS_COMPAT_THREADS_PTHREADS_MUTEX_H
#define TACOS_COMPAT_THREADS_PTHREADS_MUTEX_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "opal/class/opal_object.h" /* what mutex.h takes from Open MPI's own */

typedef pthread_mutex_t opal_thread_internal_mutex_t;
typedef pthread_cond_t opal_thread_internal_cond_t;

#define OPAL_THREAD_INTERNAL_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#define OPAL_THREAD_INTERNAL_COND_INITIALIZER PTHREAD_COND_INITIALIZER

static inline int opal_thread_internal_mutex_init(opal_thread_internal_mutex_t *m, bool recursive)
{
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (!rc && recursive)
        rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    if (!rc)
        rc = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return rc ? -1 : 0; /* OPAL_ERROR, OPAL_SUCCESS */
}

/* 0 when taken, 1 when not, as opal_mutex_trylock says */
static inline int opal_thread_internal_mutex_trylock(opal_thread_internal_mutex_t *m)
{
    return pthread_mutex_trylock(m) ? 1 : 0;
}

static inline void opal_thread_internal_mutex_lock(opal_thread_internal_mutex_t *m)
{
    pthread_mutex_lock(m);
}

static inline void opal_thread_internal_mutex_unlock(opal_thread_internal_mutex_t *m)
{
    pthread_mutex_unlock(m);
}

static inline void opal_thread_internal_mutex_destroy(opal_thread_internal_mutex_t *m)
{
    pthread_mutex_destroy(m);
}

static inline int opal_thread_internal_cond_init(opal_thread_internal_cond_t *c)
{
    return pthread_cond_init(c, NULL) ? -1 : 0;
}

static inline void opal_thread_internal_cond_wait(opal_thread_internal_cond_t *c,
                                                  opal_thread_internal_mutex_t *m)
{
    pthread_cond_wait(c, m);
}

static inline int opal_thread_internal_cond_timedwait(opal_thread_internal_cond_t *c,
                                                      opal_thread_internal_mutex_t *m,
                                                      const struct timespec *abstime)
{
    return pthread_cond_timedwait(c, m, abstime);
}

static inline void opal_thread_internal_cond_broadcast(opal_thread_internal_cond_t *c)
{
    pthread_cond_broadcast(c);
}

static inline void opal_thread_internal_cond_signal(opal_thread_internal_cond_t *c)
{
    pthread_cond_signal(c);
}

static inline void opal_thread_internal_cond_destroy(opal_thread_internal_cond_t *c)
{
    pthread_cond_destroy(c);
}

#endif
