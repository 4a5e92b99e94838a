/* SPDX-License-Identifier: BSD-3-Clause */
/* Stand-in for Open MPI 5/6's opal/mca/threads/pthreads/threads_pthreads_tsd.h
 * (not installed): thread-specific data keys are pthread keys. */
#ifndef TACOS_COMPAT_THREADS_PTHREADS_TSD_H
#define TACOS_COMPAT_THREADS_PTHREADS_TSD_H
#include <pthread.h>

typedef pthread_key_t opal_tsd_key_t;

static inline int opal_tsd_key_delete(opal_tsd_key_t key)
{
    return pthread_key_delete(key);
}

static inline int opal_tsd_setspecific(opal_tsd_key_t key, void *value)
{
    return pthread_setspecific(key, value);
}

static inline int opal_tsd_getspecific(opal_tsd_key_t key, void **valuep)
{
    *valuep = pthread_getspecific(key);
    return 0; /* OPAL_SUCCESS */
}

#endif
