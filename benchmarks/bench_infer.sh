#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What inferring the switch tree between hosts costs and finds on the
# emulated cluster (tests/testbed/testbed.sh; root): one testbed of SHAPE
# (default tree16; any shape with leaf switches, e.g. 2 leaves of 2 hosts:
# 4:0-s0@100,1-s0@100,2-s1@100,3-s1@100,s0-s2@100,s1-s2@100) and RUNS jobs
# (default 10), each MPI_Allreduce of 4 KiB through coll/tacos with no
# fabric file and coll_tacos_infer_hosts 1, whose first call infers the
# tree (as the default does over more than 8 hosts).  Each job's line: the
# time and rounds the component reports, whether the leaves it found are
# the testbed's (its topology.conf: the hosts of each leaf switch, in any
# order), and each leaf's port and uplink rate as measured over the true
# one (the testbed's rate times its TCP goodput, shape.txt), lowest and
# highest over the leaves.
#
# With BUILD_B set to another build's source tree (its coll_tacos/.libs
# built), each run is a job of this build (A) and one of that build (B),
# in turns A B, B A, ..., in the same testbed; the build column says which.
#
#   benchmarks/bench_infer.sh [SHAPE]
B=$(cd "$(dirname "$0")/.." && pwd)
SHAPE=${1:-tree16}
RUNS=${RUNS:-10}
. "$B/benchmarks/common.sh" && use_built_component
PATH_A=$OMPI_MCA_mca_base_component_path
PATH_B=
if [ -n "${BUILD_B:-}" ]; then
    [ -f "$BUILD_B/coll_tacos/.libs/mca_coll_tacos.so" ] || {
        echo "bench_infer: no $BUILD_B/coll_tacos/.libs/mca_coll_tacos.so (build BUILD_B first)" >&2
        exit 2
    }
    PATH_B=$(cd "$BUILD_B" && pwd)/coll_tacos/.libs:$pkglibdir
fi
export RUNS B PATH_A PATH_B
JOB=${TMPDIR:-/tmp}/bench_infer_job.sh
cat >"$JOB" <<'EOS'
want=$(sed -n 's/^SwitchName=[^ ]* Nodes=//p' "$TESTBED_FABRIC" | tr ',' ' ' |
    while read -r l; do echo "$l" | tr ' ' '\n' | sort | paste -sd,; done | sort | paste -sd' ')
i=0
while [ "$i" -lt "$RUNS" ]; do
  i=$((i + 1))
  order="A B"
  [ $((i % 2)) -eq 0 ] && order="B A" # (neither build always first)
  for v in $order; do
    eval p=\$PATH_$v
    [ -n "$p" ] || continue
    out=$(OMPI_MCA_mca_base_component_path=$p $TESTBED_MPIRUN --mca coll_tacos_min_bytes 0 --mca coll_tacos_verbose 5 \
        --mca coll_tacos_infer_hosts 1 "$B/benchmarks/osu_coll" allreduce --min 4096 --max 4096 2>&1)
    line=$(printf '%s\n' "$out" | sed -n 's/.*network between \([0-9]*\) hosts inferred: \([0-9]*\) rounds, \([0-9.]*\) ms.*/\3 \2/p')
    got=$(printf '%s\n' "$out" | sed -n 's/.*coll:tacos:   SwitchName=tacos-leaf[0-9]* Nodes=//p' |
        while read -r l; do echo "$l" | tr ',' '\n' | sort | paste -sd,; done | sort | paste -sd' ')
    right=no
    [ -n "$got" ] && [ "$got" = "$want" ] && right=yes
    # each leaf's rates over the true ones: a leaf's hosts' link and its
    # testbed switch's uplink (the one switch link of a leaf)
    rates=$({ cat "$TESTBED_DIR/shape.txt"; printf '%s\n' "$out"; } | awk '
        function ratio(x) { if (lo[k] == "" || x < lo[k]) lo[k] = x; if (hi[k] == "" || x > hi[k]) hi[k] = x }
        /^goodput / { g = $2 }
        /^link h[0-9]*-s/ { split($2, e, /[-:]/); port[e[1]] = $3; sw[e[1]] = e[2] }
        /^link s[0-9]*-s/ { split($2, e, /[-:]/); for (j = 1; j <= 2; j++) { nsw[e[j]]++; up[e[j]] = $3 } }
        /SwitchName=tacos-leaf[0-9]* Nodes=/ { sub(/.*SwitchName=/, ""); split($2, h, /[=,]/); first[$1] = h[2] }
        /coll:tacos:   tacos-leaf[0-9]*: .* port / {
            for (j = 1; j <= NF; j++) if ($j ~ /^tacos-leaf[0-9]*:$/) { l = $j; sub(/:$/, "", l) }
            for (j = 1; j <= NF; j++) if ($j == "GB/s") gb[l, ++ng[l]] = $(j - 1)
        }
        END {
            for (l in first) {
                x = first[l]; s = sw[x]
                if (!g || !port[x] || !ng[l]) continue
                k = "port"; ratio(gb[l, 1] / (port[x] * g / 8000))
                if (ng[l] > 1 && nsw[s] == 1) { k = "up"; ratio(gb[l, 2] / (up[s] * g / 8000)) }
            }
            printf "%s | %s", lo["port"] == "" ? "-" : sprintf("%.2f–%.2f", lo["port"], hi["port"]),
                lo["up"] == "" ? "-" : sprintf("%.2f–%.2f", lo["up"], hi["up"])
        }')
    echo "| $i | $v | ${line% *} | ${line#* } | $right | $rates | $got |"
  done
done
EOS
echo "| run | build | ms | rounds | right | port ÷ true | uplink ÷ true | leaves found |"
echo "|---|---|---|---|---|---|---|---|"
bash "$B/tests/testbed/testbed.sh" run "$SHAPE" -- sh "$JOB"
rc=$?
rm -f "$JOB"
exit $rc
