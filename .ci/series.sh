#!/bin/sh
# Inside a Debian 13 or sid root filesystem (.ci/in-rootfs.sh): build this
# tree against that Open MPI (5.0, 6.0) with -Werror and run
# tests/test_params.sh and tests/test_series.sh.  Exit status: the build's or
# the tests'.
set -eu
mpirun --version | head -1
gcc --version | head -1
./autogen.sh >/dev/null
./configure -q 2>configure.err || { cat configure.err; exit 1; }
make -j2 >make.log 2>&1 || { grep -a -B2 -A5 "error" make.log | head -60; exit 1; }
cd tests
make -j2 mpi_coll_check mpi_nbc_check mpi_more_check mpi_dtype_check param_table >/dev/null
if [ -f ../pmpi/.libs/libtacos-pmpi.so ]; then
    make -j2 mpi_coll_check_mpich mpi_nbc_check_mpich mpi_hello_mpich >/dev/null
fi
TACOS_BUILD=/src TACOS_TMP=/src/tests/tmp \
OMPI_COMPONENT_DIR=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://') \
    sh -c 'sh test_params.sh; p=$?; sh test_series.sh && [ $p = 0 ]'
