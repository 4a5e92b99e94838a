#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Inputs that once crashed, hung or took gigabytes (tests/fixtures/fuzz):
# each ends with a result or a clear error, never a signal.
B=${TACOS_BUILD:-../..}
FIX=$(dirname "$0")/../fixtures/fuzz
fails=0
check() { # what file rc
    if [ "$3" -ge 124 ]; then
        echo "FAIL: $1 $2: exit $3" >&2
        fails=$((fails + 1))
    fi
}
for f in "$FIX"/topo/*.json; do
    timeout 120 "$B/synth/tacos-synth" -t "$f" -c allgather >/dev/null 2>&1
    check topology "$f" $?
done
for f in "$FIX"/sched/*.json; do
    timeout 120 "$B/synth/tacos-synth" --validate "$f" >/dev/null 2>&1
    check schedule "$f" $?
done
for f in "$FIX"/fabric/*; do
    timeout 120 "$B/tests/fuzz/fuzz_fabric_conf_replay" "$f" >/dev/null 2>&1
    check fabric "$f" $?
done
[ "$fails" = 0 ] && echo "test_fuzz_regress: all passed"
[ "$fails" = 0 ]
