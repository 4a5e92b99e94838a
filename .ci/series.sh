#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Inside a Debian 13 or sid root filesystem (.ci/in-rootfs.sh): build this
# tree against that Open MPI (5.0, 6.0) with -Werror and run
# tests/mpi's test_params.sh, test_series.sh, test_mpich.sh (and, where the
# MPI standard ABI is installed, test_abi.sh).  Exit status: the build's or
# the tests'.
set -eu
mpirun --version | head -1
gcc --version | head -1
./autogen.sh >/dev/null
./configure -q 2>configure.err || { cat configure.err; exit 1; }
make -j2 >make.log 2>&1 || { grep -a -B2 -A5 "error" make.log | head -60; exit 1; }
cd tests/mpi
make -j2 mpi_coll_check mpi_nbc_check mpi_more_check mpi_dtype_check >/dev/null
make -C ../unit param_table >/dev/null # test_params.sh reads it
if [ -f ../../pmpi/.libs/libtacos-pmpi.so ]; then
    make -j2 mpi_coll_check_mpich mpi_nbc_check_mpich mpi_more_check_mpich mpi_hello_mpich \
        libyield_when_idle.la >/dev/null
    make -C ../../benchmarks osu_coll_mpich >/dev/null
fi
export TACOS_BUILD=/src TACOS_TMP=/src/tests/tmp
export OMPI_COMPONENT_DIR=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
rc=0
sh test_params.sh || rc=1
sh test_series.sh || rc=1
sh test_mpich.sh || rc=1
# where MPICH and Open MPI both implement the MPI standard ABI (sid): the
# PMPI library and two test programs built once more against it, in a
# copy of this build (tests/mpi/test_abi.sh runs them under both)
L=/usr/lib/x86_64-linux-gnu
if [ -f $L/libmpi_abi_mpich.so.1.0.0 ]; then
    rm -rf /tmp/abi && cp -a /src /tmp/abi
    ABI="MPICH_CFLAGS=-DMPI_ABI -I$L/mpi_abi_mpich/include"
    { make -C /tmp/abi/pmpi clean && make -C /tmp/abi/pmpi "$ABI" MPICH_LIBS=-lmpi_abi &&
      rm -f /tmp/abi/tests/mpi/*_mpich /tmp/abi/tests/mpi/*_mpich-*.o &&
      make -C /tmp/abi/tests/mpi "$ABI" MPICH_LIBS=-lmpi_abi mpi_coll_check_mpich mpi_nbc_check_mpich
    } >/tmp/abi/abi.log 2>&1 || { grep -a -B2 -A5 "error" /tmp/abi/abi.log | head -40; exit 1; }
    TACOS_BUILD=/tmp/abi TACOS_TMP=/tmp/abi/tests/tmp sh test_abi.sh || rc=1
fi
exit $rc
