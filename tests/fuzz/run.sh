#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Fuzzes the parsers with libFuzzer (clang -fsanitize=fuzzer,address):
# topology JSON, schedule JSON, schedule cache files, hwloc XML through the probe, Slurm's
# topology.conf, topology.yaml and hostlists (fabric).
#   tests/fuzz/run.sh [SECONDS per target, default 60] [OUTDIR]
# Seeds: tests/fixtures (+ the regression inputs in tests/fixtures/fuzz).
# Crashing or slow inputs land in OUTDIR/<target>/ (crash-*, timeout-*,
# slow-unit-*): copy them to tests/fixtures/fuzz/<target>/ once fixed;
# test_fuzz_regress reads every file there in each `make check`.
set -e
secs=${1:-60}
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${2:-/tmp/tacos-fuzz}
command -v clang >/dev/null || { echo "run.sh: clang not found" >&2; exit 77; }
mkdir -p "$out"
synth=$(ls "$top"/synth/*.c | grep -v tacos_synth_cli)
probe=$(ls "$top"/topo_probe/*.c | grep -v tacos_probe_cli)
cflags="-g -O1 -fsanitize=fuzzer,address,undefined -I$top/synth -I$top/topo_probe -I$top"
for target in ${TACOS_FUZZ_TARGETS:-topo sched schedbin hwloc fabric}; do
    bin=$out/fuzz_$target
    case $target in
        topo) src="fuzz_json.c" ;;
        sched) src="fuzz_json.c -DFUZZ_SCHEDULE" ;;
        schedbin) src="fuzz_sched_bin.c" ;;
        hwloc) src="fuzz_hwloc.c" ;;
        fabric) src="fuzz_fabric_conf.c" ;;
    esac
    # shellcheck disable=SC2086
    (cd "$top/tests/fuzz" && clang $cflags -o "$bin" $src $synth $probe \
        -lcjson -lhwloc -ldl -lm -lpthread)
    corpus=$out/$target/corpus
    mkdir -p "$corpus" "$out/$target/found"
    case $target in
        topo) cp "$top"/tests/fixtures/*.json "$corpus"/ ;;
        sched) "$top"/synth/tacos-synth -t ring:4 -c allgather -k 2 \
                   -o "$corpus/ag.json" >/dev/null 2>&1 || true
               "$top"/synth/tacos-synth -t rfs:2x2x2 -c reduce --root 3 \
                   -o "$corpus/red.json" >/dev/null 2>&1 || true ;;
        schedbin) "$top"/synth/tacos-synth -t fs:2x4 -c allreduce -k auto \
                      --schedule-dir "$corpus" >/dev/null 2>&1 || true
                  # a part's choice
                  "$top"/synth/tacos-synth -t fs:2x4 -c allreduce -s 1MiB -k auto \
                      --hierarchy levels --schedule-dir "$corpus" >/dev/null 2>&1 || true ;;
        hwloc) cp "$top"/tests/fixtures/hwloc/*.xml "$corpus"/ ;;
        fabric) cp "$top"/tests/fixtures/fabric/*.conf "$top"/tests/fixtures/fabric/*.yaml "$corpus"/ ;;
    esac
    [ -d "$top/tests/fixtures/fuzz/$target" ] && cp "$top/tests/fixtures/fuzz/$target"/* "$corpus"/ 2>/dev/null || true
    # hwloc 2.9 leaks the objects of an XML it fails to load (inside
    # hwloc_topology_load; the probe destroys the topology): not ours
    leaks=1
    [ $target = hwloc ] && leaks=0
    echo "== fuzz_$target for ${secs}s"
    (cd "$out/$target/found" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -report_slow_units=2 -detect_leaks=$leaks "$corpus" 2>&1 | tail -4) || true
    ls "$out/$target/found"
done
