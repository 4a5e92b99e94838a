# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tests/mpi's scripts: which sweep runs (sweep, and W below),
# and what an MPICH job preloads (mpich_preload).
# make check runs the short one; TACOS_TEST_FULL=1 runs the full one, every
# rank count of each sweep and every check at each (docs/testing.md).
#   sweep FULL SHORT   prints FULL in the full sweep, else SHORT: a list of
#                      rank counts, or the checks a run makes (--quick, or
#                      --world: --quick's checks of MPI_COMM_WORLD alone)
sweep() {
    if [ "${TACOS_TEST_FULL:-0}" = 1 ]; then echo "$1"; else echo "$2"; fi
}
# the checks of a run that tries a setting rather than a rank count (and,
# under MPICH, of the larger rank counts): every collective on
# MPI_COMM_WORLD in the short sweep (--quick adds a split communicator and
# duplicates)
W=$(sweep --quick --world)
# mpich_preload LIB   prints LD_PRELOAD for an MPICH job: LIB, then, where
#                      make check built it, libyield_when_idle (waiting
#                      ranks yield the core, as Open MPI's do when
#                      oversubscribed: yield_when_idle.c)
mpich_preload() {
    y=$(pwd)/.libs/libyield_when_idle.so
    if [ -f "$y" ]; then echo "$1:$y"; else echo "$1"; fi
}
