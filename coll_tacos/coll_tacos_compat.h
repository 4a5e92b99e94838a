/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the Open MPI series coll/tacos builds against, chosen
 * by OMPI_MAJOR_VERSION: 4 (coll interface 2.0.0), 5 (2.4.0) and 6 (3.0.0,
 * Open MPI main).  Everything else in the component is written once:
 *   tacos_coll_component_t, TACOS_COLL_BASE_VERSION  the component's type and version
 *   CNT                        a count argument (int; size_t from 6)
 *   CNTS, DSPS, BDSPS          per-rank counts, displacements in extents and in
 *                              bytes (neighbour Alltoallw): arrays up to 5,
 *                              Open MPI's count/disp arrays from 6
 *   CNT_AT, DSP_AT, BDSP_AT    element i of them (size_t, ptrdiff_t)
 *   CNTS_OF, DSPS_OF           the argument for an int array of our own
 *   NO_CNTS, NO_DSPS, NO_BDSPS none (the regular variant of a v-collective)
 *   CNTS_FIT, CNTS_INTS        counts as the int array the core takes
 *   TACOS_INSTALLS             6: module_enable installs the module's functions
 *                              (after saving the previous ones) and
 *                              module_disable puts the previous ones back
 *   tacos_comm_id(comm)        a number naming the communicator, equal on every
 *                              rank (5 and 6: its local index may differ)
 */
#ifndef COLL_TACOS_COMPAT_H
#define COLL_TACOS_COMPAT_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef OMPI_MODULE_DECLSPEC /* 5 on */
#define OMPI_MODULE_DECLSPEC OMPI_DECLSPEC
#endif

#if OMPI_MAJOR_VERSION >= 6
#include "ompi/util/count_disp_array.h"
typedef mca_coll_base_component_3_0_0_t tacos_coll_component_t;
#define TACOS_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_3_0_0
#define TACOS_INSTALLS 1
#define CNT size_t
#define CNTS ompi_count_array_t
#define DSPS ompi_disp_array_t
#define BDSPS ompi_disp_array_t
#define CNT_AT(a, i) ompi_count_array_get(a, (size_t)(i))
#define DSP_AT(a, i) ompi_disp_array_get(a, (size_t)(i))
#define BDSP_AT(a, i) ompi_disp_array_get(a, (size_t)(i))
#define CNTS_OF(p) ompi_count_array_create(p)
#define DSPS_OF(p) ompi_disp_array_create(p)
#define NO_CNTS OMPI_COUNT_ARRAY_NULL
#define NO_DSPS OMPI_DISP_ARRAY_NULL
#define NO_BDSPS OMPI_DISP_ARRAY_NULL
#else
#if OMPI_MAJOR_VERSION == 5
typedef mca_coll_base_component_2_4_0_t tacos_coll_component_t;
#define TACOS_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
typedef mca_coll_base_component_2_0_0_t tacos_coll_component_t;
#define TACOS_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif
#define TACOS_INSTALLS 0
#define CNT int
#define CNTS const int *
#define DSPS const int *
#define BDSPS const MPI_Aint *
#define CNT_AT(a, i) ((size_t)(a)[i])
#define DSP_AT(a, i) ((ptrdiff_t)(a)[i])
#define BDSP_AT(a, i) ((ptrdiff_t)(a)[i])
#define CNTS_OF(p) ((const int *)(p))
#define DSPS_OF(p) ((const int *)(p))
#define NO_CNTS ((const int *)NULL)
#define NO_DSPS ((const int *)NULL)
#define NO_BDSPS ((const MPI_Aint *)NULL)
#endif

/* The counts a[0..n) of a call as the int array the core's schedules
 * take, CNTS_INTS: a itself, or (Open MPI 6, the 64-bit arrays of an
 * MPI_*_c call) a copy in *tmp, to be freed; NULL when out of memory.
 * CNTS_FIT(a, n, size): whether every block's bytes (count times the
 * datatype's size, equal on every rank, whatever (count, datatype) each
 * passes) fit an int, so that every count does (else the call goes to the
 * previous component, on every rank).  Displacements are a rank's own
 * layout: the core takes them as ptrdiff_t (DSP_AT), whatever their size. */
#if OMPI_MAJOR_VERSION >= 6
static inline int tacos_cnts_fit(intptr_t a, int n, size_t size)
{
    for (int i = 0; size && i < n; i++) /* (no bytes: nothing to cut) */
        if (ompi_count_array_get(a, (size_t)i) > INT_MAX / size)
            return 0;
    return 1;
}

static inline const int *tacos_ints(intptr_t a, int n, int **tmp)
{
    *tmp = NULL;
    if (!ompi_count_array_is_64bit(a))
        return ompi_count_array_ptr(a);
    if (!(*tmp = malloc((size_t)(n > 0 ? n : 1) * sizeof **tmp)))
        return NULL;
    for (int i = 0; i < n; i++)
        (*tmp)[i] = (int)ompi_count_array_get(a, (size_t)i);
    return *tmp;
}
#define CNTS_FIT(a, n, size) tacos_cnts_fit(a, n, size)
#define CNTS_INTS(a, n, tmp) tacos_ints(a, n, tmp)
#else
#define CNTS_FIT(a, n, size) 1
#define CNTS_INTS(a, n, tmp) (*(tmp) = NULL, (a))
#endif

static inline unsigned tacos_comm_id(struct ompi_communicator_t *comm)
{
#if OMPI_MAJOR_VERSION >= 5
    /* the extended context id is the same on every rank; communicators
     * made the classic way have base 0 and their agreed index as sub */
    ompi_comm_extended_cid_t id = ompi_comm_get_extended_cid(comm);
    uint64_t v = id.cid_base ? id.cid_base * 0x9E3779B97F4A7C15ull ^ id.cid_sub.u64
                             : id.cid_sub.u64;
    return (unsigned)(v ^ v >> 32);
#else
    return ompi_comm_get_cid(comm); /* agreed when the communicator was made */
#endif
}

#endif
