/* SPDX-License-Identifier: BSD-3-Clause */
/* Minimal stand-in for Open MPI's ompi/mpi/fortran/base/fint_2_int.h, which
 * Debian's libopenmpi-dev lacks but ompi/op/op.h includes.  On Debian the
 * Fortran INTEGER is a C int, so the conversions are casts. */
#ifndef TACOS_COMPAT_FINT_2_INT_H
#define TACOS_COMPAT_FINT_2_INT_H
#define OMPI_FINT_2_INT(a) ((int)(a))
#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_PFINT_2_PINT(a) ((int *)(a))
#endif
