#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# mpiexec_apart.sh ARGS...: mpiexec.mpich ARGS with each rank's stdout and
# stderr written to files of their own, then printed one after the other
# (rank 0's, rank 1's ...; each rank's stdout, then its stderr).  Hydra's
# merged output can cut one rank's line in two and put another rank's
# between the halves, and a test that greps for a message then misses it.
# Exit status: mpiexec's.
d=$(mktemp -d "${TMPDIR:-/tmp}/mpiexec_apart.XXXXXX") || exit 1
show() {
    for f in "$d"/*; do
        [ -f "$f" ] && cat "$f"
    done
    rm -rf "$d"
}
trap 'show; exit 143' TERM INT
mpiexec.mpich -outfile-pattern "$d/%r.1" -errfile-pattern "$d/%r.2" "$@"
rc=$?
show
exit $rc
