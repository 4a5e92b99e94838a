/* SPDX-License-Identifier: BSD-3-Clause */
/* What the MPI test programs share: the persistent collectives' names
 * (Open MPI 4.1's are MPIX_*_init, MPI-4's MPI_*_init) and FAIL, which
 * counts a failure and prints the first 20 with the world rank (the
 * program defines `failures` and `me_world`). */
#ifndef TACOS_MPI_CHECK_H
#define TACOS_MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5 /* 5.0 has MPI_*_init but says MPI 3.1 */
#include <mpi-ext.h>
#define INIT(name) MPIX_##name##_init
#else
#define INIT(name) MPI_##name##_init
#endif

#define FAIL(...)                                                                            \
    do {                                                                                     \
        if (failures++ < 20) {                                                               \
            fprintf(stderr, "rank %d: ", me_world);                                          \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

#endif
