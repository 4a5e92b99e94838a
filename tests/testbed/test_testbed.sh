#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# coll/tacos on an emulated cluster (tests/testbed/testbed.sh: network namespaces,
# tbf-limited links; needs root, skips with 77 where it cannot run):
#  - pairs4's full mesh (h0-h1 and h2-h3 at 400 Mbit/s, the cross links here
#    at 50) and a triangle with 1/2/1 ranks per host (h0-h1 and h0-h2 at 400,
#    h1-h2 at 50): mpi_coll_check --quick with coll/tacos forced and the
#    probed + measured topology, every result checked, each collective
#    through a schedule; on the triangle, messages between hosts in pieces of
#    999 bytes (coll_tacos_net_piece_bytes: not a multiple of any datatype,
#    while ranks of one host send whole messages), elsewhere the default
#    (TCP's eager limit);
#  - what the component measured: every pair (all are neighbours) a link, fast
#    links more than twice as fast as slow ones — checks of structure, not of
#    timing (a shape failing only these is measured again, up to 3 times).
#    (Paths through another host are checked on a modelled cluster in
#    test_net: here a shape with routed pairs would make this test depend
#    on concurrent timings that 2 busy cores can disturb; README Topology
#    probing);
#  - MPI_Gather(v) and MPI_Scatter(v) (mpi_more_check's rooted checks, every
#    result checked) with tuned present: between hosts Gather and Scatter
#    run a schedule (tuned's would take them from the previous component);
#  - MPI_Bcast and MPI_Reduce of 256 KiB with the default thresholds: between
#    hosts they run a schedule (coll_tacos_rooted_net_min_bytes, 128 KiB; on
#    one host rooted_min_bytes, 4 MiB, leaves them to tuned);
#  - tacos-probe --all writes the measured topology, which tacos-synth reads;
#  - on the triangle, each rank knows which ranks share its host, and with
#    the staging shared as CUDA IPC shares GPU memory (coll_tacos_stage 3)
#    ranks 1 and 2 read each other's staged chunks while messages between
#    hosts stay staged, in blocking calls and persistent ones
#    (mpi_coll_check, mpi_nbc_check: every result checked; mapping memory
#    of another host fails the call);
#  - coll/tacos alone with net_piece_bytes different on the ranks of one host:
#    right results, one message naming it;
#  - testbed.sh refuses bad shapes with switches, naming why (no root
#    needed); switch4 routes every pair through the switch, tacos-probe
#    --all measures across it, and tacos-synth reads its true topology;
#    not measured, its small sizes run on the switch fully unwound, right.
B=${TACOS_BUILD:-../..}
SRC=$(cd "$(dirname "$0")" && pwd) # tests/testbed/, where testbed.sh is
CHECK=$(cd "$(dirname "${TACOS_MPI_CHECK:-../mpi/mpi_coll_check}")" && pwd)/mpi_coll_check
MORE=$(dirname "$CHECK")/mpi_more_check
NBC=$(dirname "$CHECK")/mpi_nbc_check
T=$(mkdir -p "${TACOS_TMP:-./tmp}/testbed" && cd "${TACOS_TMP:-./tmp}/testbed" && pwd)
OSU=$(cd "$B" && pwd)/benchmarks/osu_coll
OMPI_MCA_mca_base_component_path="$(cd "$B" && pwd)/coll_tacos/.libs:${OMPI_COMPONENT_DIR:?}"
export OMPI_MCA_mca_base_component_path T CHECK MORE NBC OSU
TACOS_PROBE=$(cd "$B" && pwd)/topo_probe/tacos-probe
TACOS_SYNTH=$(cd "$B" && pwd)/synth/tacos-synth
export TACOS_PROBE TACOS_SYNTH
fails=0 noisy=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# what the measurement made of a shape: timings of 2 busy cores can disturb it
# (a triangle's slow link came out as a path through the third host in 3 of
# about 10 CI runs, twice in a row once, before the relay's test became the
# control of the concurrent tests), so a shape whose only failures are these
# runs again, up to 3 times; wrong results never do, and a systematic error
# fails every time
fail_measured() { echo "FAIL (measured): $*" >&2; noisy=$((noisy + 1)); }

# Inside the testbed: the checker with coll/tacos forced, then tacos-probe.
cat >"$T/job.sh" <<'EOF'
$TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    --mca coll_tacos_net_piece_bytes "$PIECE" --mca coll_tacos_min_bytes 0 \
    --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0 "$CHECK" --quick \
    >"$T/out" 2>&1 || echo "mpi_coll_check exit $?" >>"$T/out"
MORE_ONLY=r $TESTBED_MPIRUN -x MORE_ONLY --mca coll tacos,tuned,basic,inter,libnbc,self \
    --mca coll_tacos_verbose 10 --mca coll_tacos_net_piece_bytes "$PIECE" \
    --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0 "$MORE" >"$T/more.out" 2>&1 ||
    echo "mpi_more_check exit $?" >>"$T/more.out"
for c in bcast reduce; do
    $TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        "$OSU" $c --min 262144 --max 262144 || echo "osu_coll $c exit $?"
done >"$T/rooted.out" 2>&1
[ -z "$IPC" ] || $TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self \
    --mca coll_tacos_verbose 10 --mca coll_tacos_stage 3 --mca coll_tacos_cuda_ipc_min_bytes 0 \
    --mca coll_tacos_stage_min_bytes 0 --mca coll_tacos_min_bytes 0 \
    --mca coll_tacos_rooted_min_bytes 0 "$CHECK" --quick >"$T/ipc.out" 2>&1 ||
    echo "mpi_coll_check (IPC) exit $?" >>"$T/ipc.out"
[ -z "$IPC" ] || $TESTBED_MPIRUN --mca coll tacos,tuned,basic,inter,libnbc,self \
    --mca coll_tacos_verbose 10 --mca coll_tacos_stage 3 --mca coll_tacos_cuda_ipc_min_bytes 0 \
    --mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 "$NBC" --quick \
    >"$T/ipc_nbc.out" 2>&1 || echo "mpi_nbc_check (IPC) exit $?" >>"$T/ipc_nbc.out"
$TESTBED_MPIRUN "$TACOS_PROBE" --all -o "$T/probed.json" >"$T/probe.out" 2>&1 ||
    echo "tacos-probe exit $?" >>"$T/probe.out"
EOF

# shape RANKS 'links' 'routed' 'fast-link slow-link' [piece bytes]
shape() {
    name=$1 ranks=$2 links=$3 routed=$4 fast=$5 slow=$6 PIECE=${7:--1}
    export PIECE
    rm -f "$T/out" "$T/more.out" "$T/rooted.out" "$T/probe.out" "$T/probed.json" "$T/ipc.out" \
        "$T/ipc_nbc.out"
    timeout 600 bash "$SRC/testbed.sh" run "$name" -r "$ranks" -- sh "$T/job.sh" 2>"$T/testbed.err"
    rc=$?
    if [ $rc = 77 ]; then
        cat "$T/testbed.err" >&2
        [ $fails = 0 ] || exit 1
        exit 77
    fi
    [ $rc = 0 ] || { fail "$name: testbed exit $rc"; cat "$T/testbed.err" >&2; }
    grep -q "mpi_coll_check: 0 failure" "$T/out" ||
        { fail "$name -r $ranks: mpi_coll_check"; tail -20 "$T/out" >&2; }
    if [ -n "$IPC" ]; then
        # which ranks share a host (what CUDA IPC between hosts goes by, made
        # where cuda_ipc_min_bytes is set), as the binding says: on 1/2/1
        # ranks per host, ranks 1 and 2 share h1
        for r in "0: 0" "1: 1 2" "2: 1 2" "3: 3"; do
            grep -q "communicator 0, rank ${r%%:*} of 4: ranks of its host: ${r#*: }\$" "$T/ipc.out" ||
                fail "$name -r $ranks: rank ${r%%:*} does not see ranks ${r#*: } on its host"
        done
        grep -q "mpi_coll_check: 0 failure" "$T/ipc.out" ||
            { fail "$name -r $ranks: mpi_coll_check with IPC"; tail -20 "$T/ipc.out" >&2; }
        grep -q "allreduce [0-9]* bytes on 4 ranks: .*(peers read it: IPC)" "$T/ipc.out" ||
            fail "$name -r $ranks: no call through IPC"
        grep -q "mpi_nbc_check: 0 failure" "$T/ipc_nbc.out" ||
            { fail "$name -r $ranks: mpi_nbc_check with IPC"; tail -20 "$T/ipc_nbc.out" >&2; }
        for kind in persistent nonblocking; do
            grep -q "allreduce [0-9]* bytes on 4 ranks: .*($kind), .*(peers read it: IPC)" \
                "$T/ipc_nbc.out" || fail "$name -r $ranks: no $kind call through IPC"
        done
    fi
    for c in allreduce allgather broadcast reduce reduce-scatter; do
        grep -q "coll:tacos: $c [0-9]* bytes on .*schedule k=" "$T/out" ||
            fail "$name: coll/tacos never ran $c"
    done
    grep -q "mpi_more_check: 0 failure" "$T/more.out" ||
        { fail "$name: mpi_more_check (rooted)"; tail -20 "$T/more.out" >&2; }
    for c in gather scatter; do
        grep -q "coll:tacos: $c [0-9]* bytes on .*schedule k=" "$T/more.out" ||
            fail "$name: MPI_${c} between hosts never ran a schedule (tuned present)"
    done
    for c in broadcast reduce; do
        grep -q "coll:tacos: $c 262144 bytes on .*schedule k=" "$T/rooted.out" ||
            { fail "$name: a 256 KiB $c between hosts ran no schedule"; tail -5 "$T/rooted.out" >&2; }
    done
    grep -q "network between [0-9]* hosts measured" "$T/out" || fail "$name: nothing measured"
    for l in $links; do
        l=$(echo "$l" | sed 's/-/ - /')
        grep -q "coll:tacos:   $l: .* GB/s (measured)" "$T/out" || fail_measured "$name: no link $l"
    done
    for r in $routed; do
        r=$(echo "$r" | sed 's/-/ - /')
        grep -q "coll:tacos:   $r: a path through" "$T/out" || fail_measured "$name: $r is not a path"
    done
    bw() { grep -m1 "coll:tacos:   $(echo "$1" | sed 's/-/ - /'): " "$T/out" |
        sed 's/.* us \([0-9.]*\) GB\/s.*/\1/'; }
    if [ -n "$fast" ]; then
        f=$(bw "$fast") s=$(bw "$slow")
        awk -v f="$f" -v s="$s" 'BEGIN { exit !(f > 2 * s && s > 0) }' ||
            fail_measured "$name: $fast measured ${f:-?} GB/s, $slow ${s:-?}: want the fast one > 2x"
    fi
    grep "network between\|coll:tacos:   h" "$T/out" | sort -u | sed "s/^/$name: /"
    grep -q "network between" "$T/probe.out" && "$TACOS_SYNTH" --topology "$T/probed.json" \
        -c allreduce >/dev/null 2>&1 || { fail "$name: tacos-probe --all"; cat "$T/probe.out" >&2; }
}

# shape, and again (up to 3 times in all) where only what it measured failed
measured_shape() {
    for try in 1 2 3; do
        noisy=0
        shape "$@"
        [ $noisy = 0 ] && return
        [ $try = 3 ] || echo "$1: $noisy check(s) of what was measured failed; measuring again" >&2
    done
    fails=$((fails + noisy))
}

# shape specs with switches: an error names what is wrong (exit 2, before
# anything is set up; needs no root)
for bad in "4:0-s0@100,1-s0@200|one rate a switch" "4:0-s0@100|fewer than 2 ports" \
    "3:0-s0@100,1-s0@100,s0-s1@100|fewer than 2 ports" "4:0-s0@100,5-s0@100|host 5 does not" \
    "3:0-s0@100,1-s1@100,2-s2@100,s0-s1@200,s1-s2@200,s0-s2@200|closes a cycle of switches" \
    "4:0-s0@100,1-s0@100,2-s1@100,3-s1@100,s0-s1@200|one rate a switch" \
    "4:0-s0@100,1-s0@100,2-s1@100,3-s1@100,1-s1@100,s0-s2@200,s1-s2@200|host h1 on switches s1 and s0" \
    "4:0-s0@100,3-s0@100,0-s1@100,1-s1@100,2-s2@100,3-s2@100,s1-s3@200,s2-s3@200|host h0 on switches s0 and s1"; do
    bash "$SRC/testbed.sh" run "${bad%%|*}" -- true 2>"$T/bad.err"
    rc=$?
    [ $rc = 2 ] && grep -q "${bad#*|}" "$T/bad.err" ||
        { fail "testbed.sh run ${bad%%|*}: exit $rc, want 2 and '${bad#*|}'"; cat "$T/bad.err" >&2; }
done

# slow links at 50 Mbit/s, 8x below the fast ones: with 4 busy ranks on 2
# cores a 400 Mbit/s link measured as little as 0.023 GB/s (half its rate),
# only 2x a 100 Mbit/s one
measured_shape 4:0-1@400,2-3@400,0-2@50,0-3@50,1-2@50,1-3@50 1 \
    "h0-h1 h2-h3 h0-h2 h0-h3 h1-h2 h1-h3" "" h0-h1 h0-h2
# switch4: every pair routed through the switch's namespace, messages get
# through it (tacos-probe --all measures every pair: what it makes of them is
# README's, not checked here), and its true topology (a switch unwound into a
# full mesh) is one tacos-synth reads
# and the hosts found on one switch (a measured check: up to 3 runs)
for try in 1 2 3; do
    rm -rf "$T/sw"
    timeout 300 bash "$SRC/testbed.sh" run switch4 -o "$T/sw" -- \
        sh -c '$TESTBED_MPIRUN "$TACOS_PROBE" --all -o "$TESTBED_DIR/probed.json"' >"$T/sw.out" 2>&1 ||
        { fail "switch4: testbed or tacos-probe exit"; cat "$T/sw.out" >&2; break; }
    grep -q "network between 4 hosts measured" "$T/sw.out" ||
        { fail "switch4: nothing measured"; cat "$T/sw.out" >&2; break; }
    grep -q "port limited each of its tests: one switch" "$T/sw.out" && break
    [ $try = 3 ] && { fail "switch4: not found on one switch in 3 runs"; cat "$T/sw.out" >&2; }
done
[ "$(grep -c '^route h[0-9]*<->h[0-9]*: h[0-9]* s0 h[0-9]*$' "$T/sw/shape.txt")" = 6 ] ||
    { fail "switch4: not every pair routed through s0"; cat "$T/sw/shape.txt" >&2; }
"$TACOS_SYNTH" --topology "$T/sw/topology.json" -c allreduce >/dev/null 2>"$T/sw/err" ||
    { fail "switch4: tacos-synth cannot read its true topology"; cat "$T/sw/err" "$T/sw/topology.json" >&2; }
# ... and not measured (coll_tacos_measure 0: the hosts on one network
# switch, unwound as a ring of 4): the small sizes synthesized on it fully
# unwound, the large on the ring, all right (six collectives, four counts)
timeout 300 bash "$SRC/testbed.sh" run switch4 -- sh -c '$TESTBED_MPIRUN \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_measure 0 \
    --mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 \
    --mca coll_tacos_gather_min_bytes 0 --mca coll_tacos_verbose 5 "$CHECK" --p2p' \
    >"$T/sw-full.out" 2>&1 || echo "testbed or mpi_coll_check exit $?" >>"$T/sw-full.out"
grep -q "mpi_coll_check: 0 failure" "$T/sw-full.out" ||
    { fail "switch4, not measured: mpi_coll_check"; tail -20 "$T/sw-full.out" >&2; }
grep -q "for [0-9]*-byte class, switches fully unwound: " "$T/sw-full.out" &&
    grep -q "allreduce root 0 k=[0-9]* for [0-9]*-byte class: " "$T/sw-full.out" ||
    { fail "switch4, not measured: not small sizes fully unwound and the others not"; grep "modelled" "$T/sw-full.out" | head >&2; }

# tree16: 16 hosts of one rank under 4 leaves, the leaves under a spine
# through uplinks of half their hosts' rate: a pair under two leaves is routed
# through both and the spine, the true topology (a switch tree) is one
# tacos-synth reads, and the collectives through coll/tacos on it (thresholds
# 0, the true topology) are right; through its topology.conf and through
# the tree inferred, the six collectives at four counts (--p2p: about 80 s
# less each than --world's checks at 16 ranks on 2 cores)
cat >"$T/tree.sh" <<'EOF'
$TESTBED_MPIRUN --mca coll_tacos_topo_file "$TESTBED_TOPO" --mca coll_tacos_min_bytes 0 \
    --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0 \
    --mca coll_tacos_verbose 10 "$CHECK" --world >"$T/tree.out" 2>&1 ||
    echo "mpi_coll_check exit $?" >>"$T/tree.out"
cp "$TESTBED_FABRIC" "$T/tree.conf" 2>/dev/null
$TESTBED_MPIRUN --mca coll_tacos_fabric_file "$TESTBED_FABRIC" --mca coll_tacos_min_bytes 0 \
    --mca coll_tacos_rooted_min_bytes 0 --mca coll_tacos_gather_min_bytes 0 \
    --mca coll_tacos_verbose 10 "$CHECK" --p2p >"$T/tree-fabric.out" 2>&1 ||
    echo "mpi_coll_check exit $?" >>"$T/tree-fabric.out"
# two duplicates of MPI_COMM_WORLD with the file: the second takes the
# rates the first measured
$TESTBED_MPIRUN --mca coll_tacos_fabric_file "$TESTBED_FABRIC" --mca coll_tacos_min_bytes 0 \
    --mca coll_tacos_verbose 5 "$OSU" allreduce --min 4096 --max 4096 --ab 1 --variant a \
    --variant b >"$T/tree-fabric2.out" 2>&1 || echo "osu_coll exit $?" >>"$T/tree-fabric2.out"
# without either: the tree inferred (more than 8 hosts).  Last: its rounds
# overflow the switches' queues, and run before the fabric file's job it
# once left that job's uplinks at 0.35-0.6 of their rate (a stalled round,
# 370 ms); why is not known
$TESTBED_MPIRUN --mca coll_tacos_min_bytes 0 --mca coll_tacos_rooted_min_bytes 0 \
    --mca coll_tacos_gather_min_bytes 0 --mca coll_tacos_verbose 10 "$CHECK" --p2p \
    >"$T/tree-infer.out" 2>&1 || echo "mpi_coll_check exit $?" >>"$T/tree-infer.out"
# a second inference alone, with two duplicates of MPI_COMM_WORLD that take
# it from the job's cache (whether its leaves are right: below, on a slower
# tree)
$TESTBED_MPIRUN --mca coll_tacos_min_bytes 0 --mca coll_tacos_verbose 5 "$OSU" allreduce \
    --min 4096 --max 4096 --ab 1 --variant a --variant b >"$T/tree-infer2.out" 2>&1 ||
    echo "osu_coll exit $?" >>"$T/tree-infer2.out"
EOF
rm -rf "$T/tree" "$T/tree.out"
timeout 600 bash "$SRC/testbed.sh" run tree16 -o "$T/tree" -- sh "$T/tree.sh" 2>"$T/testbed.err" ||
    { fail "tree16: testbed exit"; cat "$T/testbed.err" >&2; }
grep -q '^route h0<->h15: h0 s0 s4 s3 h15$' "$T/tree/shape.txt" &&
    grep -q '^route h0<->h1: h0 s0 h1$' "$T/tree/shape.txt" ||
    { fail "tree16: h0-h15 not routed through s0, s4, s3 or h0-h1 not through s0"; cat "$T/tree/shape.txt" >&2; }
"$TACOS_SYNTH" --topology "$T/tree/topology.json" -c allreduce >/dev/null 2>"$T/tree/err" ||
    { fail "tree16: tacos-synth cannot read its true topology"; cat "$T/tree/err" "$T/tree/topology.json" >&2; }
grep -q "mpi_coll_check: 0 failure" "$T/tree.out" ||
    { fail "tree16: mpi_coll_check"; tail -20 "$T/tree.out" >&2; }
for c in allreduce allgather broadcast reduce reduce-scatter alltoall; do
    grep -q "coll:tacos: $c [0-9]* bytes on 16 ranks: .*schedule k=" "$T/tree.out" ||
        fail "tree16: coll/tacos never ran $c"
done
# ... and without a file: a tree inferred and the collectives right through
# it (its leaves printed; checked below)
grep -q "mpi_coll_check: 0 failure" "$T/tree-infer.out" ||
    { fail "tree16, inferred: mpi_coll_check"; tail -20 "$T/tree-infer.out" >&2; }
grep -q "network between 16 hosts inferred" "$T/tree-infer.out" ||
    { fail "tree16, inferred: no tree inferred"; grep "network" "$T/tree-infer.out" >&2; }
# the leaves in a file's lines "...Nodes=a,b,c": each sorted, then all
# (a cached tree's lines, printed again, once)
leaves_in() {
    sed -n "s/^$2SwitchName=[^ ]* Nodes=//p" "$1" | while read -r l; do
        echo "$l" | tr ',' '\n' | sort | paste -sd,
    done | sort -u | paste -sd' '
}
want=$(leaves_in "$T/tree.conf" "")
got=$(leaves_in "$T/tree-infer.out" ".*coll:tacos:   ")
got2=$(leaves_in "$T/tree-infer2.out" ".*coll:tacos:   ")
echo "tree16, inferred leaves: $got; again: $got2 (the testbed's: $want)"
[ "$(grep -c "network between 16 hosts from this job's earlier inference" "$T/tree-infer2.out")" = 2 ] ||
    { fail "tree16, inferred: the duplicates did not reuse the job's tree"; grep network "$T/tree-infer2.out" >&2; }
# ... and with its topology.conf (coll_tacos_fabric_file): the tree read,
# the collectives right through it (its rates: below, at half the rates)
printf 'SwitchName=s0 Nodes=h0,h1,h2,h3\n' >"$T/want.conf"
head -1 "$T/tree.conf" 2>/dev/null | cmp -s - "$T/want.conf" ||
    { fail "tree16: topology.conf's first line"; cat "$T/tree.conf" >&2; }
grep -q "mpi_coll_check: 0 failure" "$T/tree-fabric.out" ||
    { fail "tree16, fabric file: mpi_coll_check"; tail -20 "$T/tree-fabric.out" >&2; }
grep -q "coll:tacos: allreduce [0-9]* bytes on 16 ranks: .*schedule k=" "$T/tree-fabric.out" ||
    fail "tree16, fabric file: coll/tacos never ran allreduce"
grep -q "network between 16 hosts from .*, rates from this job's earlier measurement" \
    "$T/tree-fabric2.out" ||
    { fail "tree16, fabric file: a duplicate did not reuse the job's rates"; grep network "$T/tree-fabric2.out" >&2; }
# The leaves inferred, on the same tree at half its rates (ports 50 Mbit/s,
# uplinks 100): at 100/200 the 16 hosts' first rounds carry 1.6 Gbit/s each
# way, more than the 2 cores forward, and on one such VM the leaves came
# out right in 1 run of 6 (the code that found them in 20 of 20 on
# 2026-11-29: 0 of 6); at 50/100 in 6 of 6
# (benchmarks/results/2026-12-02-infer-tree16-capacity.md).  Right in one
# of two inferences (the measurement is statistical).
TREE16_HALF=16:$(for l in $(seq 0 15); do printf '%d-s%d@50,' "$l" $((l / 4)); done)
TREE16_HALF=${TREE16_HALF}s0-s4@100,s1-s4@100,s2-s4@100,s3-s4@100
cat >"$T/half.sh" <<'EOF'
$TESTBED_MPIRUN --mca coll_tacos_fabric_file "$TESTBED_FABRIC" --mca coll_tacos_min_bytes 0 \
    --mca coll_tacos_verbose 5 "$OSU" allreduce --min 4096 --max 4096 --ab 1 --variant a \
    >"$T/half-fabric.out" 2>&1 || echo "osu_coll exit $?" >>"$T/half-fabric.out"
for i in 1 2; do
    $TESTBED_MPIRUN --mca coll_tacos_min_bytes 0 --mca coll_tacos_verbose 5 "$OSU" allreduce \
        --min 4096 --max 4096 --ab 1 --variant a >"$T/half$i.out" 2>&1 ||
        echo "osu_coll exit $?" >>"$T/half$i.out"
done
EOF
rm -rf "$T/half1.out" "$T/half2.out" "$T/half-fabric.out" "$T/half"
timeout 600 bash "$SRC/testbed.sh" run "$TREE16_HALF" -o "$T/half" -- sh "$T/half.sh" \
    2>"$T/testbed.err" || { fail "tree16 at half rates: testbed exit"; cat "$T/testbed.err" >&2; }
half1=$(leaves_in "$T/half1.out" ".*coll:tacos:   ")
half2=$(leaves_in "$T/half2.out" ".*coll:tacos:   ")
echo "tree16 at half rates, inferred leaves: $half1; again: $half2"
[ -n "$want" ] && { [ "$half1" = "$want" ] || [ "$half2" = "$want" ]; } ||
    fail "tree16 at half rates, inferred: leaves $half1 and $half2, not the testbed's $want"
# ... and with its topology.conf (coll_tacos_fabric_file): each level's rate
# measured (ports 50 Mbit/s, uplinks 100, at TCP goodput) within 0.4-2x its
# emulated rate, each leaf's uplink more than 1.4x its port.  At half the
# rates, as the inference above: at 100/200 the uplinks came out at 0.3-3.5x
# their rate on an idle VM (benchmarks/results/2026-12-02-infer-tree16-capacity.md)
# and 0.37x in a CI run, at 50/100 within 0.95-1.13.  A check of structure
# more than of accuracy: on a busy 2-core VM (12-27 % steal) the ports of
# the full-rate tree came out at 0.59-0.85 (2026-11-30)
goodput=$(sed -n 's/^goodput \([0-9.]*\).*/\1/p' "$T/half/shape.txt")
# (the first communicator's: a later one over the same hosts prints its kept rates again)
grep "coll:tacos:   s[0-3]: 4 hosts" "$T/half-fabric.out" | head -4 | awk -v g="$goodput" '
    { for (i = 1; i < NF; i++) { if ($i == "port") port = $(i + 1); if ($i == "uplink") up = $(i + 3) } }
    { want_p = 50 * g / 8 / 1000; want_u = 100 * g / 8 / 1000 }
    port < 0.4 * want_p || port > 2 * want_p || up < 0.4 * want_u || up > 2 * want_u ||
        up <= 1.4 * port {
        printf "%s port %s GB/s (want %.4g), uplink %s (want %.4g)\n", $0, port, want_p, up, want_u; bad = 1 }
    { n++ } END { exit bad || n != 4 }' >"$T/rates" ||
    { fail "tree16 at half rates, fabric file: rates found"; cat "$T/rates" >&2; grep "coll:tacos:   s\|network between" "$T/half-fabric.out" >&2; }

IPC=1
export IPC
measured_shape 3:0-1@400,0-2@400,1-2@50 1,2,1 "h0-h1 h0-h2 h1-h2" "" h0-h1 h1-h2 999

IPC=
# coll/tacos alone (its textbook programs, also for its own agreement) on 2
# hosts x 2 ranks, the ranks of h1 with pieces of 64 bytes: the settings
# differ, so every message goes whole until and after the agreement says so
# (with pieces before it, the agreement's own allreduce was truncated)
cat >"$T/alone.sh" <<'EOF'
MR=$(echo "$TESTBED_MPIRUN" | sed 's/-np [0-9]*//')
$MR --mca coll tacos -np 2 "$CHECK" --quick : \
    -np 2 -x OMPI_MCA_coll_tacos_net_piece_bytes=64 "$CHECK" --quick >"$T/out" 2>&1 ||
    echo "mpi_coll_check exit $?" >>"$T/out"
EOF
rm -f "$T/out"
timeout 600 bash "$SRC/testbed.sh" run two -r 2 -- sh "$T/alone.sh" 2>"$T/testbed.err" ||
    { fail "two -r 2, tacos alone: testbed exit"; cat "$T/testbed.err" >&2; }
grep -q "mpi_coll_check: 0 failure" "$T/out" ||
    { fail "tacos alone, net_piece_bytes on two ranks: mpi_coll_check"; tail -20 "$T/out" >&2; }
grep -q "different coll_tacos_net_piece_bytes" "$T/out" ||
    fail "tacos alone, net_piece_bytes on two ranks: no message naming it"

[ $fails = 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
