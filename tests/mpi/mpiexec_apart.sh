#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# mpiexec_apart.sh ARGS...: mpiexec.mpich ARGS with each rank's stdout and
# stderr written to files of their own, then printed one after the other
# (each rank's stdout, then its stderr; ranks in the order of their numbers
# as text: 0, 1, 10, 11 ..., 2).  Hydra's merged output can cut one rank's
# line in two and put another rank's between the halves, and a test that
# greps for a message then misses it.
# Exit status: mpiexec's.
d=$(mktemp -d "${TMPDIR:-/tmp}/mpiexec_apart.XXXXXX") || exit 1
show() {
    for f in "$d"/*; do
        [ -f "$f" ] && cat "$f"
    done
    rm -rf "$d"
}
trap 'show; exit 143' TERM
trap 'show; exit 130' INT
mpiexec.mpich -outfile-pattern "$d/%r.1" -errfile-pattern "$d/%r.2" "$@"
rc=$?
trap - TERM INT
show
exit $rc
