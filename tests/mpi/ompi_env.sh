# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the scripts that run Open MPI jobs (test_mpi.sh,
# test_mpi_calls.sh, test_series.sh): the build (B), coll/tacos found
# before Open MPI's own components (OMPI_COMPONENT_DIR), the sweep
# (sweep.sh), fail (counts into fails), traced, NO_MIN and IPC.
B=${TACOS_BUILD:-../..}
OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:${OMPI_COMPONENT_DIR:?}"
export OMPI_MCA_mca_base_component_path
. "$(dirname "$0")/sweep.sh"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# traced WHAT LINE...: $T/out's trace has "event LINE" (a regular
# expression) for each LINE; each one missing fails, named with WHAT
traced() {
    traced_what=$1
    shift
    for traced_line in "$@"; do
        grep -q "event $traced_line" "$T/out" || fail "$traced_what: no '$traced_line' in the trace"
    done
}
# every size threshold 0: even 1-element calls run schedules
NO_MIN="--mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0"
# coll_tacos_stage=3: staged as 1, and the ranks read each other's staging
# from memory shared as CUDA IPC shares a GPU's (the IPC path without a
# GPU); the threshold is set (without CUDA its default is -1: no IPC)
IPC="--mca coll_tacos_stage 3 --mca coll_tacos_cuda_ipc_min_bytes 0"
