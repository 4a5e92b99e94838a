#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What inferring the switch tree between hosts costs and finds on the
# emulated cluster (tests/testbed/testbed.sh; root): one testbed of SHAPE
# (default tree16, the only shape with switches under switches) and RUNS
# jobs (default 10), each MPI_Allreduce of 4 KiB through coll/tacos with no
# fabric file, whose measurement infers the tree (more than 8 hosts).  Each
# job's line: the time and rounds the component reports, the leaves it
# found, and whether they are the testbed's (its topology.conf: the hosts of
# each leaf switch, in any order).
#
#   benchmarks/bench_infer.sh [SHAPE]
B=$(cd "$(dirname "$0")/.." && pwd)
SHAPE=${1:-tree16}
RUNS=${RUNS:-10}
export RUNS B
JOB=${TMPDIR:-/tmp}/bench_infer_job.sh
cat >"$JOB" <<'EOS'
want=$(sed -n 's/^SwitchName=[^ ]* Nodes=//p' "$TESTBED_FABRIC" | tr ',' ' ' |
    while read -r l; do echo "$l" | tr ' ' '\n' | sort | paste -sd,; done | sort | paste -sd' ')
i=0
while [ "$i" -lt "$RUNS" ]; do
    i=$((i + 1))
    out=$($TESTBED_MPIRUN --mca coll_tacos_min_bytes 0 --mca coll_tacos_verbose 5 \
        "$B/benchmarks/osu_coll" allreduce --min 4096 --max 4096 2>&1)
    line=$(echo "$out" | sed -n 's/.*network between \([0-9]*\) hosts inferred: \([0-9]*\) rounds, \([0-9.]*\) ms.*/\3 \2/p')
    got=$(echo "$out" | sed -n 's/.*coll:tacos:   SwitchName=tacos-leaf[0-9]* Nodes=//p' |
        while read -r l; do echo "$l" | tr ',' '\n' | sort | paste -sd,; done | sort | paste -sd' ')
    right=no
    [ -n "$got" ] && [ "$got" = "$want" ] && right=yes
    echo "| $i | ${line% *} | ${line#* } | $right | $got |"
done
EOS
echo "| run | ms | rounds | right | leaves found |"
echo "|---|---|---|---|---|"
bash "$B/tests/testbed/testbed.sh" run "$SHAPE" -- sh "$JOB"
rc=$?
rm -f "$JOB"
exit $rc
