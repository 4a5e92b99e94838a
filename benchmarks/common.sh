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
