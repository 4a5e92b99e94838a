#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# coll/tacos under real mpirun: mpi_coll_check at 1..8 ranks with the
# component forced and min_bytes/rooted_min_bytes 0 (so even 1-element
# calls run schedules);
# the verbose trace proves the component ran the
# collectives (a silent fallback cannot pass); topology files make
# non-trivial schedules run over shared memory; kept schedules, levels,
# staging, nonblocking and persistent calls, faults.  coll/tacos alone,
# datatypes, determinism and bad input: test_mpi_calls.sh.
CHECK=${TACOS_MPI_CHECK:-./mpi_coll_check}
FIX=$(dirname "$0")/../fixtures
T=${TACOS_TMP:-./tmp}/mpi
mkdir -p "$T"
. "$(dirname "$0")/ompi_env.sh"

# run NP 'expected stderr text' [mpirun options...] -- [check args]
run() {
    np=$1 want=$2
    shift 2
    opts=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts="$opts $1"; shift; done
    [ "$1" = "--" ] && shift
    case "$opts" in # GPU buffers through the staged schedule unless a run says otherwise
    *stage_min_bytes*) ;;
    *) opts="$opts --mca coll_tacos_stage_min_bytes 0" ;;
    esac
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $NO_MIN \
        $opts "$CHECK" "$@" >"$T/out" 2>&1
    rc=$?
    grep -q "mpi_coll_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { fail "np=$np$opts: exit $rc"; tail -20 "$T/out" >&2; }
    [ -z "$want" ] || grep -qF -- "$want" "$T/out" || fail "np=$np$opts: no '$want' in output"
    ran=$(grep -c "path=schedule" "$T/out")
    if [ "$np" -gt 1 ]; then
        for c in allreduce allgather bcast reduce 'reduce_scatter(_block)?' alltoall; do
            grep -Eq "event coll=$c mode=[a-z]* path=schedule" "$T/out" ||
                fail "np=$np$opts: coll/tacos never ran $c"
        done
    fi
    echo "np=$np$opts: $ran calls through tacos schedules, $(grep -c 'path=fallback' "$T/out") fallbacks"
}

for np in 1 2 3 4 5 7 8; do
    if [ "$np" -le 4 ]; then run "$np" ""; else run "$np" "" -- --quick; fi
done
run 4 "" --mca coll_tacos_topo_file "$FIX/mesh2x2.json" -- $W
run 8 "" --mca coll_tacos_topo_file "$FIX/ring8.json" -- $W
run 8 "" --mca coll_tacos_topo_file "$FIX/switch2x4.json" -- $W
run 8 "" --mca coll_tacos_topo_file "$FIX/rfs2x2x2.json" --mca coll_tacos_chunks 3 -- $W
# messages of several chunks (packed by the sender), also staged
run 4 "chunks a message" --mca coll_tacos_topo_file "$FIX/mesh2x2.json" \
    --mca coll_tacos_chunks_per_message 8
run 8 "chunks a message" --mca coll_tacos_topo_file "$FIX/ring8.json" --mca coll_tacos_chunks 4 \
    --mca coll_tacos_chunks_per_message 8 --mca coll_tacos_stage 1 -- $W
# ... held to coll_tacos_message_bytes: with 16 bytes, none of several
# chunks in a class whose chunks are 16 bytes or more (k <= 8 on 4 ranks;
# the model's chunks of smaller classes are fractions of a byte)
run 4 "" --mca coll_tacos_topo_file "$FIX/mesh2x2.json" --mca coll_tacos_chunks_per_message 8 \
    --mca coll_tacos_message_bytes 16
sed -n 's/.* for \([0-9]*\)-byte class: .*up to \([0-9]*\) chunks a message.*/\1 \2/p' "$T/out" |
    awk '$1 >= 512 { bad = 1 } END { exit !bad }' &&
    fail "message_bytes 16: several chunks of 16 bytes or more in a message"
grep -q "chunks a message" "$T/out" || fail "message_bytes 16: no small class packed"
# schedules kept between jobs: the first job reads the 2 MiB Allreduce
# tacos-synth kept for it, the second every schedule it uses (flat: with
# hierarchy 2 the model keeps that class's part in levels, whose choice
# alone is kept: below)
rm -rf "$T/kept" && mkdir -p "$T/kept/new"
"$B/synth/tacos-synth" -t "$FIX/rfs2x2x2.json" -c allreduce -s 2MiB -k auto \
    --schedule-dir "$T/kept/new" >/dev/null || fail "tacos-synth --schedule-dir"
# (rank 0 rewrites a file it synthesizes: a new inode; a rank that cannot
# read one says so at level 1)
pre=$(ls "$T/kept/new")
for job in first second; do
    ls -i "$T/kept/new" | sort >"$T/kept.before"
    run 8 "allreduce root 0, 2097152-byte class: schedule read from $T/kept/new/$pre" \
        --mca coll_tacos_topo_file "$FIX/rfs2x2x2.json" --mca coll_tacos_schedule_dir \
        "$T/kept/new" --mca coll_tacos_hierarchy 0 -- $W
    ls -i "$T/kept/new" | sort >"$T/kept.after"
    [ -z "$(comm -23 "$T/kept.before" "$T/kept.after")" ] ||
        fail "schedule_dir: the $job job synthesized a kept schedule again"
    ! grep "coll_tacos_schedule_dir: " "$T/out" >&2 || fail "schedule_dir: the $job job could not read"
done
# ... and in levels: the first job keeps the choices of its parts (k and
# time), the second makes each rank's part from them, writes nothing and
# gets the same results
rm -rf "$T/kept/parts"
for job in first second; do
    ls -i "$T/kept/parts" 2>/dev/null | sort >"$T/kept.before"
    run 8 "" --mca coll_tacos_topo_file "$FIX/switch2x4.json" --mca coll_tacos_hierarchy 1 \
        --mca coll_tacos_schedule_dir "$T/kept/parts" -- $W
done
ls -i "$T/kept/parts" | sort | cmp -s - "$T/kept.before" &&
    grep -q "schedule read from .* (the part's choice: this rank's part made at its k)" "$T/out" ||
    fail "schedule_dir, in levels: the second job did not make its parts from the choices kept"
! grep "coll_tacos_schedule_dir: " "$T/out" >&2 || fail "schedule_dir, in levels: could not read"
# in levels (hierarchy 1): 2 hosts x 4 ranks and 4 x 2, groups and rails
run 8 "in levels" --mca coll_tacos_topo_file "$FIX/switch2x4.json" --mca coll_tacos_hierarchy 1 \
    -- $W
run 8 "in levels" --mca coll_tacos_topo_file "$FIX/switch4x2.json" --mca coll_tacos_hierarchy 1 \
    --mca coll_tacos_chunks 2 -- $W
# ... with messages of several chunks: each level's chunks that take a link
# at once travel packed (on 4 x 2: 2 x 4's levels have none to pack)
for f in switch2x4 switch4x2; do
    run 8 "" --mca coll_tacos_topo_file "$FIX/$f.json" --mca coll_tacos_hierarchy 1 \
        --mca coll_tacos_chunks_per_message 8 -- $W
done
grep -Eq " in levels .*, up to [0-9]+ chunks a message" "$T/out" ||
    fail "switch4x2: no part in levels packed several chunks into a message"
# the same 2 x 4 with the ranks placed round-robin (mpirun --map-by node):
# groups of ranks 0,2,4,6 and 1,3,5,7
run 8 "in levels" --mca coll_tacos_topo_file "$FIX/switch2x4-roundrobin.json" \
    --mca coll_tacos_hierarchy 1 -- $W
# hierarchy 2 (the default): on 4 hosts x 2 ranks the model keeps the part
# in levels at 64 KiB and flat at 1 MiB and above
run 8 " in levels (this rank's part) for " --mca coll_tacos_topo_file "$FIX/switch4x2.json" -- $W
run 4 "" --mca coll_tacos_unwind_degree 3 --mca coll_tacos_trials 2 -- $W
# every size class next to a planned one takes its schedule
run 5 "class's schedule" --mca coll_tacos_reuse_percent 100 -- $W
run 8 "class's schedule" --mca coll_tacos_topo_file "$FIX/rfs2x2x2.json" \
    --mca coll_tacos_reuse_percent 100 -- $W
# the executor's staging (the GPU path) on host memory: every message
# through staging space, every local copy and reduction through the memory
# layer; a rank's own affair, so staged and unstaged ranks mix
run 3 "stage=host" --mca coll_tacos_stage 1
run 8 "stage=host" --mca coll_tacos_stage 1 --mca coll_tacos_topo_file "$FIX/ring8.json" \
    --mca coll_tacos_chunks 3 -- $W
timeout 300 mpirun --allow-run-as-root --oversubscribe \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $NO_MIN \
    -np 2 "$CHECK" --quick : -np 3 -x OMPI_MCA_coll_tacos_stage=1 "$CHECK" --quick >"$T/out" 2>&1
[ $? = 0 ] && grep -q "mpi_coll_check: 0 failure" "$T/out" && grep -q "stage=host" "$T/out" ||
    fail "3 of 5 ranks staged: wrong results"
# coll_tacos_stage=3 ($IPC, ompi_env.sh): staged as 1, and the ranks read
# each other's staging from shared memory (descriptions instead of data,
# the agreement, the end's fence)
run 3 "ipc=1" $IPC
run 7 "ipc=1" $IPC --mca coll_tacos_chunks 3 -- $W
run 3 "" --mca coll_tacos_stage 3
grep -qF "ipc=1" "$T/out" && fail "stage 3, default cuda_ipc_min_bytes: IPC in a build without CUDA"
# IPC only where every rank is staged through shared memory: 2 of 4 are
# not, so every call stages its messages (the ranks agree on it)
timeout 300 mpirun --allow-run-as-root --oversubscribe \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $NO_MIN --mca coll_tacos_cuda_ipc_min_bytes 0 --mca coll_tacos_stage_min_bytes 0 \
    -np 2 -x OMPI_MCA_coll_tacos_stage=3 "$CHECK" --quick : \
    -np 2 -x OMPI_MCA_coll_tacos_stage=1 "$CHECK" --quick >"$T/out" 2>&1
[ $? = 0 ] && grep -q "mpi_coll_check: 0 failure" "$T/out" && grep -q "stage=host" "$T/out" ||
    fail "2 of 4 ranks with shared staging: wrong results"
grep -qF "ipc=1" "$T/out" && fail "2 of 4 ranks with shared staging: IPC though 2 ranks cannot"
# every buffer taken for a GPU's (coll_tacos_stage=2, host memory
# underneath): what the schedule cannot take with GPU buffers (thresholds,
# user ops, derived datatypes, intercommunicators, nonblocking and
# persistent calls not planned) runs on copies of the buffers
run 3 "path=copies reason=user_op_gpu" --mca coll_tacos_stage 2
run 3 "path=copies reason=noncontiguous_gpu_buffer" \
    --mca coll_tacos_stage 2 -- --signatures
# with the default coll_tacos_stage_min_bytes (2 MiB) the small "GPU" calls
# go through host copies, whose calls still run schedules
run 3 "path=copies reason=stage_min_bytes" --mca coll_tacos_stage 2 \
    --mca coll_tacos_stage_min_bytes 2097152 -- --quick

# nonblocking and persistent collectives (mpi_nbc_check): every result
# checked, and every collective ran a schedule of its own (a silent
# fall-back to libnbc cannot pass)
NBC=${TACOS_NBC_CHECK:-./mpi_nbc_check}
for np in 1 2 3 4 5 7 8; do
    quick=""
    [ "$np" -gt 4 ] && quick=--quick
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $NO_MIN \
        "$NBC" $quick >"$T/out" 2>&1
    rc=$?
    grep -q "mpi_nbc_check: 0 failure" "$T/out" && [ $rc = 0 ] ||
        { fail "nonblocking np=$np: exit $rc"; tail -20 "$T/out" >&2; }
    [ "$np" -gt 1 ] && for c in allreduce allgather bcast reduce 'reduce_scatter(_block)?' alltoall; do
        grep -Eq "event coll=$c mode=nonblocking path=schedule" "$T/out" ||
            fail "nonblocking np=$np: coll/tacos never ran $c"
    done
    echo "nonblocking np=$np: $(grep -c 'mode=nonblocking path=schedule' "$T/out") operations through tacos schedules"
done
# over pml/ucx, which keeps 24 bits of a tag: the operations' tags must not
# read as user tags there (an MPI_ANY_TAG receive of the application's took
# them); skipped where UCX cannot run
for np in 2 3; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np --mca pml ucx \
        --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $NO_MIN "$NBC" --quick >"$T/out" 2>&1
    rc=$?
    if grep -q "cannot be selected\|No components were able to be opened" "$T/out"; then
        echo "nonblocking over pml/ucx: not run (UCX cannot be selected here)"
        break
    fi
    grep -q "mpi_nbc_check: 0 failure" "$T/out" && [ $rc = 0 ] &&
        grep -q "mode=nonblocking path=schedule" "$T/out" ||
        { fail "nonblocking over pml/ucx np=$np: exit $rc"; tail -5 "$T/out" >&2; }
    echo "nonblocking over pml/ucx np=$np: $(grep -c 'mode=nonblocking path=schedule' "$T/out") operations through tacos schedules"
done
# nonblocking and persistent calls on host copies (GPU buffers taken for
# so), and coll/tacos alone (textbook programs inside, intercommunicators)
for c in "tacos,tuned,basic,inter,libnbc,self $NBC 4" "tacos,self $NBC 3" \
    "tacos,self ${TACOS_MORE_CHECK:-./mpi_more_check} 5"; do
    set -- $c
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np $3 --mca coll $1 \
        --mca coll_tacos_verbose 10 --mca coll_tacos_stage 2 "$2" --quick >"$T/out" 2>&1
    rc=$?
    grep -q "0 failure" "$T/out" && [ $rc = 0 ] && grep -q "mode=nonblocking path=copies" "$T/out" &&
        grep -q "mode=persistent path=copies" "$T/out" ||
        { fail "stage 2, coll $1, $2 at $3 ranks: exit $rc"; tail -5 "$T/out" >&2; }
done
# staged (the GPU path on host memory), operations of their own in flight at once
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $NO_MIN --mca coll_tacos_stage 1 \
    "$NBC" --quick >"$T/out" 2>&1
[ $? = 0 ] && grep -q "mpi_nbc_check: 0 failure" "$T/out" &&
    grep -q "mode=nonblocking path=schedule .* stage=host " "$T/out" || fail "nonblocking staged: wrong results"
# persistent calls staged through shared memory (stage 3) agree on IPC at
# their first start, nonblocking ones at once, without blocking (a
# dissemination of one byte); nonblocking ones only where a blocking
# collective tested that the ranks can map each other's memory: before, they
# are staged and the next blocking collective tests (mpi_nbc_check's first
# communicator sees only nonblocking calls and barriers until its persistent
# calls); where 2 of 4 ranks stage through plain host memory, no call goes
# through IPC
for np in 4 8; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $NO_MIN $IPC "$NBC" --quick >"$T/out" 2>&1
    [ $? = 0 ] && grep -q "mpi_nbc_check: 0 failure" "$T/out" ||
        { fail "nonblocking and persistent with IPC at $np ranks"; tail -5 "$T/out" >&2; }
    grep -q "mode=persistent path=schedule .* stage=shared_host_memory ipc=1" "$T/out" ||
        fail "no persistent call through IPC at $np ranks"
    grep -q "mode=nonblocking path=schedule .* stage=shared_host_memory ipc=1" "$T/out" ||
        fail "no nonblocking call through IPC at $np ranks"
    grep -q "mode=nonblocking path=schedule .* stage=shared_host_memory ipc=0" "$T/out" ||
        fail "no nonblocking call staged before the communicator was tested at $np ranks"
done
timeout 300 mpirun --allow-run-as-root --oversubscribe \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $NO_MIN --mca coll_tacos_cuda_ipc_min_bytes 0 \
    -np 2 -x OMPI_MCA_coll_tacos_stage=3 "$NBC" --quick : \
    -np 2 -x OMPI_MCA_coll_tacos_stage=1 "$NBC" --quick >"$T/out" 2>&1
[ $? = 0 ] && grep -q "mpi_nbc_check: 0 failure" "$T/out" ||
    fail "persistent, 2 of 4 ranks with shared staging: wrong results"
# (a communicator of the two ranks that can, mpi_nbc_check's halves of the
# world for MPI_Intercomm_merge, may use IPC; one with all four may not)
grep -F "ipc=1" "$T/out" | grep -q " ranks=4 " &&
    fail "nonblocking, 2 of 4 ranks with shared staging: IPC on the four"
# a rank that cannot map what the others of its host export (as GPUs
# without peer access: TACOS_FAULT fails every mapping rank 2 makes), or
# cannot export its own (as under MIG: every export of rank 1's): the first
# agreement that says yes on a communicator tests it, and where that rank is
# a member the communicator stages (one message names it); a persistent call
# on a communicator no blocking call tested tests it itself (mpi_nbc_check's
# first persistent calls are on a communicator of their own), a nonblocking
# one is staged and the next blocking collective tests. Without the test
# that rank's first call through IPC failed after the others had sent it
# descriptions
for case in "$CHECK 2:ipcmap:1 2 cannot map GPU memory of rank 0, of its host" \
    "$NBC 2:ipcmap:1 2 cannot map GPU memory of rank 0, of its host" \
    "$CHECK 1:ipcexp:1 1 cannot export GPU memory"; do
    set -- $case
    prog=$1 fault=$2 who=$3
    shift 3
    rm -rf "$T/ranks" # (each rank's output apart: mpirun's merged output can join lines)
    TACOS_FAULT=$fault timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
        -x TACOS_FAULT --output-filename "$T/ranks" \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $NO_MIN $IPC --mca coll_tacos_stage_min_bytes 0 "$prog" --quick >"$T/out" 2>&1
    [ $? = 0 ] && grep -q ": 0 failure" "$T/out" ||
        { fail "$prog, $fault: wrong results"; tail -5 "$T/out" >&2; }
    err=$T/ranks/1/rank.$who/stderr
    grep -q "coll:tacos: rank $who $*.*no CUDA IPC on communicator 0\$" "$err" ||
        fail "$prog, $fault: no message for MPI_COMM_WORLD"
    grep -qF "ipc=1" "$err" && fail "$prog, $fault: rank $who took IPC"
    [ "$prog" = "$NBC" ] || continue
    grep -q "rank 2 cannot map .*: a persistent call on communicator" "$T/out" &&
        grep -q "on communicator [0-9]* a rank cannot map GPU memory" "$T/out" ||
        fail "persistent calls on a communicator not tested did not test it"
done
# persistent requests on a communicator where nothing else ran: each
# initialization plans its size (MPI orders persistent initializations like
# blocking collectives), so every start runs a schedule
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 3 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $NO_MIN "$NBC" --persistent-only >"$T/out" 2>&1 || fail "persistent only: exit $?"
grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "persistent only: wrong results"
for c in allreduce allgather bcast reduce 'reduce_scatter(_block)?' alltoall; do
    grep -Eq "event coll=$c mode=persistent path=schedule .* ranks=3 " "$T/out" ||
        fail "persistent only: no $c schedule"
done
grep -q "mode=persistent path=fallback" "$T/out" && fail "persistent only: an initialization fell back"

# Exact counts of events read each rank's own output (mpirun
# --output-filename, below $T/of; ranks_out gathers it into $T/per_rank.out): on
# the terminal, Open MPI forwards the ranks' output in chunks, not lines,
# and a line of one rank was once cut by another's (a count one short).
OF="--output-filename $T/of"
ranks_out() { cat "$T"/of/*/rank.*/stderr >"$T/per_rank.out" 2>/dev/null; rm -rf "$T/of"; }
# nonblocking calls of sizes not planned yet, after one blocking call
# (mpi_nbc_check --first-call): each runs a schedule from its first call,
# agreed in its request; where one rank's synthesis fails (TACOS_FAULT
# RANK:synth:N), every rank runs the textbook program instead, in the request
for np in 1 2 3 5 8; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $OF $NO_MIN "$NBC" --first-call >"$T/out" 2>&1 || fail "first call np=$np: exit $?"
    ranks_out
    grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "first call np=$np: wrong results"
    [ $np = 1 ] && continue
    # 32 outstanding, then each kind alone (Bcast at each root, Reduce at
    # each in place or not), one after a blocking call of its size, one freed
    want=$((np * (32 + 10 + 3 * np + 2)))
    got=$(grep -c "event coll=.* mode=nonblocking path=schedule .* ranks=$np " "$T/per_rank.out")
    [ "$got" = "$want" ] || fail "first call np=$np: $got nonblocking schedules, want $want"
done
# only nonblocking calls, on a communicator where nothing ran before
# (--nonblocking-only): the requests also agree on settings and topology,
# and every call runs a schedule from its first (one more: the late
# waiter's)
for np in 2 3 5 8; do
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np \
        --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $OF $NO_MIN "$NBC" --nonblocking-only >"$T/out" 2>&1 || fail "nonblocking only np=$np: exit $?"
    ranks_out
    grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "nonblocking only np=$np: wrong results"
    want=$((np * (32 + 10 + 3 * np + 2 + 1)))
    got=$(grep -c "event coll=.* mode=nonblocking path=schedule .* ranks=$np " "$T/per_rank.out")
    [ "$got" = "$want" ] || fail "nonblocking only np=$np: $got nonblocking schedules, want $want"
done
# ... with the default thresholds: the calls below them run the textbook
# program until the first blocking point, the others schedules; with
# coll/tacos disabled on two ranks (settings that differ): every call the
# textbook program (--fallback: libnbc serves after the first blocking
# point, and refuses MPI_Request_free of an active request); where the
# exchange's first send fails on a rank: an error, no hang
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    "$NBC" --nonblocking-only >"$T/out" 2>&1 || fail "nonblocking only, thresholds: exit $?"
grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "nonblocking only, thresholds: wrong results"
grep -q "event coll=reduce mode=nonblocking path=textbook reason=rooted_min_bytes" "$T/out" ||
    fail "nonblocking only, thresholds: a Reduce below its threshold did not run the textbook program"
grep -q "event coll=allgather mode=nonblocking path=schedule" "$T/out" ||
    fail "nonblocking only, thresholds: no Allgather schedule"
timeout 300 mpirun --allow-run-as-root --oversubscribe \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 $NO_MIN \
    -np 2 "$NBC" --nonblocking-only --fallback : \
    -np 2 -x OMPI_MCA_coll_tacos_enable=0 "$NBC" --nonblocking-only --fallback >"$T/out" 2>&1 ||
    fail "nonblocking only, settings differ: exit $?"
grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "nonblocking only, settings differ: wrong results"
grep -q "mode=nonblocking path=schedule" "$T/out" &&
    fail "nonblocking only, settings differ: a schedule ran"
grep -q "event coll=allgather mode=nonblocking path=textbook reason=off_or_settings_differ" "$T/out" ||
    fail "nonblocking only, settings differ: no textbook program"
n=$(grep -c "have different coll_tacos_enable" "$T/out") # (the duplicate's, the world's)
[ "$n" -ge 1 ] && [ "$n" -le 2 ] || fail "nonblocking only, settings differ: $n messages"
TACOS_FAULT=1:send:1 timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 -x TACOS_FAULT \
    --mca coll tacos,tuned,basic,inter,libnbc,self $NO_MIN "$NBC" --nonblocking-only >"$T/out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "nonblocking only, a failed send: exit $rc"
grep -q "a message of the exchange of settings and topology failed" "$T/out" ||
    fail "nonblocking only, a failed send: no message"
# ... where rank 1's second synthesis fails: every rank runs the textbook
# program for that key's calls (which key: the order progress binds them)
TACOS_FAULT=1:synth:2 timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
    -x TACOS_FAULT --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $OF $NO_MIN "$NBC" --nonblocking-only >"$T/out" 2>&1 || fail "nonblocking only, synthesis fault: exit $?"
ranks_out
grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "nonblocking only, synthesis fault: wrong results"
got=$(grep -c "event coll=.* mode=nonblocking path=textbook reason=schedule_not_everywhere" "$T/per_rank.out")
[ "$got" -gt 0 ] && [ $((got % 4)) = 0 ] ||
    fail "nonblocking only, synthesis fault: $got textbook programs, not every rank's"
# ... where rank 2's schedule differs (TACOS_FAULT RANK:hash:N), the same;
# either way the size falls back from the next blocking call on, on every rank
for f in "1:synth:2|synthesis fault" "2:hash:2|schedules differ"; do
    what="first call, ${f#*|}"
    TACOS_FAULT=${f%%|*} timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
        -x TACOS_FAULT --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
        $OF $NO_MIN "$NBC" --first-call >"$T/out" 2>&1 || fail "$what: exit $?"
    ranks_out
    grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "$what: wrong results"
    [ "$(grep -c "event coll=allreduce mode=nonblocking path=textbook reason=schedule_not_everywhere" "$T/per_rank.out")" = 4 ] ||
        fail "$what: not every rank ran the textbook program"
    [ "$(grep -c "event coll=allreduce mode=nonblocking path=fallback reason=no_schedule" "$T/per_rank.out")" = 4 ] ||
        fail "$what: the size did not fall back after the blocking call"
done
# a cache of 2 entries: plans evicted while calls that agree on them run
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    --mca coll_tacos_cache_size 2 $OF $NO_MIN "$NBC" --first-call >"$T/out" 2>&1 ||
    fail "first call, cache of 2: exit $?"
ranks_out
grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "first call, cache of 2: wrong results"
[ "$(grep -c "event coll=.* mode=nonblocking path=schedule .* ranks=4 " "$T/per_rank.out")" = $((4 * 56)) ] ||
    fail "first call, cache of 2: not every call ran a schedule"

# coll_tacos_nonblocking=0: every nonblocking and persistent call to libnbc, saying why
timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 \
    --mca coll tacos,tuned,basic,inter,libnbc,self --mca coll_tacos_verbose 10 \
    $NO_MIN \
    --mca coll_tacos_nonblocking 0 "$NBC" --quick --fallback >"$T/out" 2>&1 ||
    fail "nonblocking=0: exit $?"
grep -q "mpi_nbc_check: 0 failure" "$T/out" || fail "nonblocking=0: wrong results"
grep -qE "\((nonblocking|persistent)\)" "$T/out" && fail "nonblocking=0: a nonblocking or persistent call ran a schedule"
grep -q "event coll=allreduce mode=nonblocking path=fallback reason=nonblocking_off" "$T/out" ||
    fail "nonblocking=0: no reason in the trace"

[ "$fails" = 0 ] && echo "test_mpi: all passed" || echo "test_mpi: $fails failure(s)"
[ "$fails" = 0 ]
