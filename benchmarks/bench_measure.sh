#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What the network measurement costs and finds on the emulated cluster
# (tests/testbed/testbed.sh; root). For each shape, one testbed and RUNS runs of
# `tacos-probe --all` (the measurement the component makes at its first
# collective between hosts). With PROBE_B set to another build's
# tacos-probe, runs alternate between this build (A) and that one (B), and
# each gets a row: the baseline in the same testbed, at the same moments.
#
#   benchmarks/bench_measure.sh [-r RANKS] [SHAPE...]   (default: two pairs4 ring4 star3)
# Environment: RUNS (default 10), PROBE_B (a tacos-probe to compare with,
# an absolute path: it runs in the testbed's namespaces).  A pair routed
# over more than 2 hops is right as a path through any host of its route
# (the measurement names one relay; the others follow from its legs); a
# pair routed through a switch alone (h0 s0 h1) is right as a link at the
# port's rate (the measurement sees hosts, not switches).
#
# Columns: the measuring time (ms, as tacos-probe reports it) and each
# phase's median (pairs: the S1 rounds; second sizes, with the pairs
# measured again apart; tests: for shared paths; reruns: those that
# confirm); "pairs right":
# pairs of hosts measured as what they are (a link where the shape has one,
# a path through the right relay where it routes them), over all runs;
# "runs right": runs with every pair right; "links GB/s ÷ true": each
# measured link's bandwidth over its TCP goodput (rate × the goodput the
# testbed's shape.txt gives, as its topology.json has it), lowest and highest; "off > 15 %": links
# outside the accuracy the measurement is held to.
B=$(cd "$(dirname "$0")/.." && pwd)
RANKS=1
[ "${1:-}" = "-r" ] && { RANKS=$2; shift 2; }
SHAPES=${*:-two pairs4 ring4 star3}
RUNS=${RUNS:-10}
export RUNS PROBE_A="$B/topo_probe/tacos-probe" PROBE_B="${PROBE_B:-}"
JOB=${TMPDIR:-/tmp}/bench_measure_job.sh

cat >"$JOB" <<'EOF'
i=0
while [ "$i" -lt "$RUNS" ]; do
    for v in A B; do
        eval p=\$PROBE_$v
        [ -n "$p" ] || continue
        echo "run $v"
        $TESTBED_MPIRUN "$p" --all -o "$TESTBED_DIR/measured.json" 2>&1 | grep "network between\|phases (ms)\|  h[0-9]* - "
    done
    i=$((i + 1))
done
EOF

echo "| shape | build | runs | ms min | ms median | ms max | phases ms (median): pairs / second sizes / tests / reruns | pairs right | runs right | links GB/s ÷ true | off > 15 % |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for shape in $SHAPES; do
    out=$(bash "$B/tests/testbed/testbed.sh" run "$shape" -r "$RANKS" -- \
        sh -c 'cat "$TESTBED_DIR/shape.txt"; sh "$0"' "$JOB") || {
        rc=$?
        echo "bench_measure: testbed $shape failed (exit $rc)" >&2
        [ $rc -eq 77 ] && exit 77
        continue
    }
    for v in A B; do
        [ $v = B ] && [ -z "$PROBE_B" ] && continue
        echo "$out" | awk -v V=$v -v S="$shape" -v R="$RANKS" '
        BEGIN { goodput = 0.956 } # a shape.txt without it: 1500-byte frames
        /^goodput / { goodput = $2 }
        /^link h/ { split($2, e, /[-:]/); r = $3 * goodput / 8 / 1000; truth[e[1] "-" e[2]] = "link"; rate[e[1] "-" e[2]] = r }
        /^route h[0-9]*<->h[0-9]*: h[0-9]* s[0-9]* h[0-9]*$/ { # through a switch alone
                     split($2, e, /<->|:/); k = e[1] "-" e[2]; truth[k] = "link"; rate[k] = rate[$3 "-" $4]; next }
        /^route h/ { split($2, e, /<->|:/); k = e[1] "-" e[2]; truth[k] = "routed"; hops[k] = " "
                     for (i = 4; i < NF; i++) hops[k] = hops[k] $i " " }
        /^run / { on = ($2 == V); if (on) { runs++; pairs_run[runs] = 0; wrong[runs] = 0 } next }
        !on { next }
        /network between/ { for (i = 1; i <= NF; i++) if ($i == "ms") t[runs] = $(i - 1) }
        /phases \(ms\):/ { ps = $0; sub(/.*phases \(ms\): */, "", ps); np = split(ps, ph, /, /)
                          for (p = 1; p <= np; p++) { nw = split(ph[p], w, / /); pt[p, runs] = w[nw] + 0 } }
        / h[0-9]* - h[0-9]*:/ {
            for (i = 1; i <= NF; i++) if ($i ~ /^h[0-9]+$/ && $(i + 1) == "-") { a = $i; b = $(i + 2); sub(/:$/, "", b) }
            k = a "-" b; got = "link"
            if ($0 ~ /a path through/) { for (i = 1; i <= NF; i++) if ($i == "through") via = $(i + 1); got = "routed" }
            ok = (got == truth[k]) && (got == "link" || index(hops[k], " " via " ") > 0)
            pairs++; right += ok; if (!ok) wrong[runs]++
            if (got == "link" && truth[k] == "link") {
                for (i = 1; i <= NF; i++) if ($i == "GB/s") x = $(i - 1) / rate[k]
                if (lo == "" || x < lo) lo = x; if (hi == "" || x > hi) hi = x
                links++; off += (x < 0.85 || x > 1.15)
            }
        }
        END {
            if (!runs) exit
            n = 0; for (i = 1; i <= runs; i++) if (t[i] != "") s[++n] = t[i] + 0
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
            good = 0; for (i = 1; i <= runs; i++) good += (wrong[i] == 0 && t[i] != "")
            phases = ""
            for (p = 1; p <= np; p++) { # the median of each phase (builds without phases: -)
                m = 0; for (i = 1; i <= runs; i++) if ((p, i) in pt) v[++m] = pt[p, i]
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
                phases = phases (p > 1 ? " / " : "") (m ? sprintf("%.0f", m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2) : "-")
            }
            printf "| %s (%s/host) | %s | %d | %.0f | %.0f | %.0f | %s | %d/%d | %d/%d | %.2f–%.2f | %d/%d |\n",
                S, R, V == "A" ? "this" : "PROBE_B", runs, s[1], n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2, s[n],
                phases == "" ? "-" : phases, right, pairs, good, runs, lo, hi, off, links
        }'
    done
done
