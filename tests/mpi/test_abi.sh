#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# One build of libtacos-pmpi against the MPI standard ABI (MPI-5: handles
# are pointers, one mpi.h, libmpi_abi.so.1) serves both MPI libraries that
# implement it: MPICH 5.0 and Open MPI 6.0 (Debian sid).  TACOS_BUILD is a
# tree built with
#   ./configure MPICH_CFLAGS="-DMPI_ABI -I$L/mpi_abi_mpich/include" MPICH_LIBS=-lmpi_abi
# (L=/usr/lib/x86_64-linux-gnu; .ci/series.sh does it in the sid leg), its
# mpi_coll_check_mpich and mpi_nbc_check_mpich built the same way.  Each
# implementation is chosen by a directory holding its libmpi_abi.so.1 (the
# packages' own links do not choose one: Debian's libmpi_abi.so.1 is Open
# MPI's), checked with ldd; then both programs at 2 and 3 ranks under each,
# every threshold 0: 0 failures, and schedules in the trace.
# Skips (77) where the ABI libraries are not installed.
B=${TACOS_BUILD:-../..}
T=${TACOS_TMP:-./tmp}/abi
L=/usr/lib/x86_64-linux-gnu
LIB="$B/pmpi/.libs/libtacos-pmpi.so"
[ -f $L/libmpi_abi_mpich.so.1.0.0 ] && [ -f $L/libmpi_abi_openmpi.so.1.0.0 ] ||
    { echo "test_abi.sh: no libmpi_abi of MPICH and of Open MPI here (Debian sid has both)"; exit 77; }
[ -f "$LIB" ] && [ -x "$B/tests/mpi/mpi_coll_check_mpich" ] ||
    { echo "test_abi.sh: $LIB or the test programs not built"; exit 1; }
rm -rf "$T" && mkdir -p "$T"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
for impl in mpich openmpi; do
    mkdir -p "$T/$impl"
    ln -sf "$L/libmpi_abi_$impl.so.1.0.0" "$T/$impl/libmpi_abi.so.1"
    case $impl in
    mpich) run="sh $(dirname "$0")/mpiexec_apart.sh -n" ;; # (mpiexec_apart.sh: why)
    openmpi) run="mpirun.openmpi --allow-run-as-root --oversubscribe -np" ;;
    esac
    LD_LIBRARY_PATH="$T/$impl" ldd "$LIB" | grep -q "libmpi_abi.so.1 => $T/$impl/" ||
        fail "$impl: the library does not load $T/$impl/libmpi_abi.so.1"
    for np in 2 3; do
        for prog in mpi_coll_check_mpich mpi_nbc_check_mpich; do
            timeout 300 env LD_LIBRARY_PATH="$T/$impl" TACOS_VERBOSE=10 TACOS_MIN_BYTES=0 \
                TACOS_ROOTED_MIN_BYTES=0 TACOS_GATHER_MIN_BYTES=0 \
                $run "$np" env LD_PRELOAD="$LIB" "$B/tests/mpi/$prog" --quick >"$T/out" 2>&1
            rc=$?
            grep -q "_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
                { fail "$impl np=$np $prog: exit $rc"; cp "$T/out" "$T/fail$fails.out"; tail -5 "$T/out" >&2; }
            grep -q "path=schedule" "$T/out" || fail "$impl np=$np $prog: no schedule ran"
        done
    done
    echo "MPI ABI, $impl: mpi_coll_check and mpi_nbc_check at 2 and 3 ranks through one libtacos-pmpi"
done
[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
