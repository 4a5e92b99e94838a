# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tests/mpi's scripts: which sweep runs (sweep, and W below).
# make check runs the short one; TACOS_TEST_FULL=1 runs the full one, every
# rank count of each sweep and every check at each (docs/testing.md).
#   sweep FULL SHORT   prints FULL in the full sweep, else SHORT: a list of
#                      rank counts, or the checks a run makes (--quick, or
#                      --world: --quick's checks of MPI_COMM_WORLD alone)
sweep() {
    if [ "${TACOS_TEST_FULL:-0}" = 1 ]; then echo "$1"; else echo "$2"; fi
}
# the checks of a run that tries a setting (or, under MPICH, whose spinning
# ranks make every check slow, a larger rank count) rather than a rank
# count: every collective on MPI_COMM_WORLD in the short sweep (--quick
# adds a split communicator and duplicates)
W=$(sweep --quick --world)
