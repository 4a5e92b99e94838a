#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tacos-probe on saved machines and on this one, --all under mpirun feeding
# tacos-synth, and coll/tacos probing this machine for real (results right,
# summary printed, bad inputs fall back to the default model).
B=${TACOS_BUILD:-../..}
PROBE="$B/topo_probe/tacos-probe"
SYNTH="$B/synth/tacos-synth"
CHECK=${TACOS_MPI_CHECK:-./mpi_coll_check}
FIX=$(dirname "$0")/../fixtures/hwloc
T=${TACOS_TMP:-./tmp}/probe
mkdir -p "$T"
OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:${OMPI_COMPONENT_DIR:?}"
export OMPI_MCA_mca_base_component_path
MPIRUN="timeout 300 mpirun --allow-run-as-root --oversubscribe"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in $(head -c 300 "$1")"; }

# saved machines: the record and this host's topology
"$PROBE" --hwloc-xml "$FIX/nvidiaDGX2.xml" --no-ucx >"$T/dgx2.json" 2>"$T/err" || fail "DGX-2 probe"
has "$T/dgx2.json" '"nvswitch_gbps":	150' "DGX-2 record"
has "$T/dgx2.json" '16 rank(s) on 1 host(s), 16-16 per host, 16 with a GPU' "DGX-2 summary"
has "$T/dgx2.json" 'nvlink 1 us 150 GB/s (hwloc nvswitch)' "DGX-2 NVLink source"
"$PROBE" --hwloc-xml "$FIX/power8gpudistances.xml" --no-ucx --local-rank 2 >"$T/p8.json" ||
    fail "POWER8 probe"
has "$T/p8.json" '"nvlink_gbps":	[0, 0, 0, 40]' "POWER8 GPU 2's NVLink row"
"$PROBE" --hwloc-xml "$FIX/24em64t-2n6c2t-pci.xml" --no-ucx --no-gpu --cpuset 0 >"$T/cpu.json" ||
    fail "dual-socket probe"
has "$T/cpu.json" '"package":	0' "bound to PU 0"
has "$T/cpu.json" '"nics":	["mlx4_0", "eth0", "eth1", "eth2"]' "NICs near PU 0"

# this machine, with UCX
"$PROBE" >"$T/here.json" 2>"$T/err" || fail "probing this machine: $(cat "$T/err")"
has "$T/here.json" '"machine_source":	"hwloc"' "this machine"
has "$T/here.json" '(UCX ' "UCX figures on this machine"

# bad input: clear message, exit 1 for a machine that cannot be read
head -c 2000 "$FIX/nvidiaDGX2.xml" >"$T/corrupt.xml"
for bad in "$T/corrupt.xml:not an hwloc XML export" "$T/missing.xml:No such file"; do
    "$PROBE" --hwloc-xml "${bad%%:*}" >"$T/out" 2>"$T/err" && fail "bad XML ${bad%%:*} accepted"
    has "$T/err" "${bad#*:}" "bad XML ${bad%%:*}"
done
"$PROBE" --cpuset nonsense >/dev/null 2>"$T/err" && fail "bad --cpuset accepted"
has "$T/err" "not a PU list" "bad --cpuset"
"$PROBE" --ranks 0 >/dev/null 2>"$T/err"; [ $? = 2 ] || fail "--ranks 0: exit status"
"$PROBE" --ucx-lib /nonexistent/libuct.so.0 >"$T/out" 2>"$T/err" || fail "UCX absent: exit status"
has "$T/err" "UCX unavailable" "UCX absent"
has "$T/out" 'shm 0.5 us 10 GB/s (default)' "UCX absent: default figures"

# --all under mpirun: the merged topology reads back through tacos-synth
$MPIRUN -np 3 "$PROBE" --all -o "$T/all.json" >"$T/out" 2>&1 || fail "tacos-probe --all: $(tail -3 "$T/out")"
has "$T/out" "3 rank(s) on 1 host(s)" "--all summary"
"$SYNTH" --topology "$T/all.json" --collective allreduce --size 1MB >"$T/synth" 2>&1 ||
    fail "tacos-synth cannot use the --all topology: $(cat "$T/synth")"

# coll/tacos probing this machine: results right, summary at verbose 5
run() { # name 'expected text' options...
    name=$1 want=$2
    shift 2
    $MPIRUN -np 4 --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        --mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0 "$@" \
        "$CHECK" --quick >"$T/out" 2>&1 || fail "$name: exit $?: $(tail -3 "$T/out")"
    has "$T/out" "mpi_coll_check: 0 failure" "$name"
    has "$T/out" "$want" "$name"
    grep -q "allreduce [0-9]* bytes on 4 ranks: schedule" "$T/out" || fail "$name: tacos never ran"
}
run "probe" "topology probed:1host: 4 rank(s) on 1 host(s)"
run "probe+calibrate" "(calibration " --mca coll_tacos_calibrate 1
run "probe off" "topology default:1host" --mca coll_tacos_probe 0
run "corrupt XML" "coll:tacos: probe: hwloc XML $T/corrupt.xml: not an hwloc XML export" --mca coll_tacos_probe_hwloc_xml "$T/corrupt.xml"
run "UCX absent" "UCX unavailable" --mca coll_tacos_ucx_lib /nonexistent/libuct.so.0
run "saved DGX-2 with GPUs" "4 with a GPU; shm" --mca coll_tacos_probe_hwloc_xml "$FIX/nvidiaDGX2.xml" \
    --mca coll_tacos_probe_gpu 1 --mca coll_tacos_ucx_lib ""
rm -rf "$T/dump" && mkdir -p "$T/dump"
run "dump" "topology probed" --mca coll_tacos_dump_dir "$T/dump"
cat "$T"/dump/*-probe.json >"$T/records" 2>/dev/null
has "$T/records" '"machine_source":	"hwloc"' "dumped probe records"

[ "$fails" = 0 ] && echo "test_probe: all passed" || echo "test_probe: $fails failure(s)"
[ "$fails" = 0 ]
