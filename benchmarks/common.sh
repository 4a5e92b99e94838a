# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the benchmark scripts once B (the build tree) is set.

# Open MPI loads the built coll/tacos, then its own components; exported.
use_built_component() {
    pkglibdir=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed 's/^path:pkglibdir://')
    [ -n "$pkglibdir" ] || {
        echo "$(basename "$0"): ompi_info gave no pkglibdir (Open MPI installed?)" >&2
        exit 1
    }
    OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:$pkglibdir"
    export OMPI_MCA_mca_base_component_path
}

# This build's tacos-synth as $SYNTH_A, and the baseline's from the
# environment ($SYNTH_B, built from the baseline commit), or exit 2.
need_baseline_synth() {
    SYNTH_A=$B/synth/tacos-synth
    [ -x "${SYNTH_B:-}" ] || {
        echo "$(basename "$0"): set SYNTH_B to the baseline's tacos-synth" >&2
        exit 2
    }
}

# A number from tacos-synth --summary-json: field KEY "$json"
field() { echo "$2" | sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }

# SHAPE:BW:LAT (fs:8x32:100,25:0.5,2) into $shape, $bw and $lat
shape_arg() {
    shape=${1%%:*}:$(echo "$1" | cut -d: -f2)
    bw=$(echo "$1" | cut -d: -f3)
    lat=$(echo "$1" | cut -d: -f4)
}
