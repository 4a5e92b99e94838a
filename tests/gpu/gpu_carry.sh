#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Packs what a machine with a GPU but no MPI needs to run the GPU tests
# (tests/gpu/gpu_run.sh there) into one file, gpu-carry.tar.xz in the
# repository root (ignored by git):
#
#   b/     a --with-cuda build of this tree's tracked files: the component
#          (mca_coll_tacos.so), the MPICH PMPI library (libtacos-pmpi.so),
#          mpi_gpu_check for Open MPI and mpi_gpu_check_mpich for MPICH
#   root/  Debian's Open MPI and MPICH (apt-get download, dpkg -x) and every
#          library they, their plugins and b/ link that is not the C
#          library's own, resolved on this machine; stripped, without
#          headers, manuals and the Fortran, Java and OpenSHMEM libraries
#
# Needs the CUDA toolkit (/usr/local/cuda or CUDA_HOME), MPICH and Open MPI
# installed here (their libraries' dependencies are copied from here) and
# apt's package lists.  About 5 minutes on 2 cores.
#
#   tests/gpu/gpu_carry.sh
set -e
R=$(cd "$(dirname "$0")/../.." && pwd)
CUDA=${CUDA_HOME:-/usr/local/cuda}
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-carry.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
C=$W/carry
mkdir -p "$W/src" "$W/deb" "$C/b/coll_tacos/.libs" "$C/b/pmpi/.libs" "$C/b/tests/gpu" "$C/root"

echo "gpu_carry: building $(git -C "$R" rev-parse --short HEAD) --with-cuda=$CUDA in $W/src"
(cd "$R" && git ls-files -z | xargs -0 tar -cf -) | tar -xf - -C "$W/src"
(cd "$W/src" && ./autogen.sh && ./configure --with-cuda="$CUDA" &&
    make -j"$(nproc)" && make -C tests/gpu mpi_gpu_check mpi_gpu_check_mpich) \
    >"$W/build.log" 2>&1 ||
    { tail -30 "$W/build.log" >&2; echo "gpu_carry: the build failed" >&2; exit 1; }
cp "$W/src/coll_tacos/.libs/mca_coll_tacos.so" "$C/b/coll_tacos/.libs/"
cp "$W/src/pmpi/.libs/libtacos-pmpi.so" "$C/b/pmpi/.libs/"
cp "$W/src/tests/gpu/mpi_gpu_check" "$W/src/tests/gpu/mpi_gpu_check_mpich" "$C/b/tests/gpu/"

echo "gpu_carry: Debian's Open MPI and MPICH"
# the versions installed here (the build and the copied libraries are theirs)
pkgs=
for p in openmpi-bin openmpi-common libopenmpi3 libpmix2 mpich libmpich12; do
    v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null) || v=
    pkgs="$pkgs $p${v:+=$v}"
done
# shellcheck disable=SC2086
(cd "$W/deb" && apt-get download $pkgs) >"$W/apt.log" 2>&1 || { cat "$W/apt.log" >&2; exit 1; }
for d in "$W"/deb/*.deb; do dpkg -x "$d" "$C/root"; done
ln -sf orterun "$C/root/usr/bin/mpirun" # the alternatives' links, not in the packages
ln -sf mpiexec.hydra "$C/root/usr/bin/mpiexec.mpich"
L=$C/root/usr/lib/x86_64-linux-gnu
rm -rf "$C/root/usr/include" "$C/root/usr/share/man" "$C/root/usr/share/doc" \
    "$L"/libmpi_mpifh* "$L"/libmpi_usempi* "$L"/libmpi_java* "$L"/liboshmem* \
    "$L"/libmpichfort* "$L"/libmpichcxx* "$L"/openmpi/lib/openmpi3/mca_*oshmem* \
    "$L"/openmpi/lib/openmpi3/mca_spml_* "$L"/openmpi/lib/openmpi3/mca_sshmem_* \
    "$L"/openmpi/lib/openmpi3/mca_atomic_* "$L"/openmpi/lib/openmpi3/mca_scoll_*
# the libraries all of it links, from this machine, but the C library's
find "$C" -type f | while read -r f; do ldd "$f" 2>/dev/null || :; done |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|ld-linux-x86-64)\.so' |
    while read -r lib; do
        case $lib in "$C"/*) continue ;; esac
        [ -e "$L/$(basename "$lib")" ] || cp -L "$lib" "$L/"
    done
find "$C" -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-unneeded {} + 2>/dev/null || true
tar -cJf "$R/gpu-carry.tar.xz" -C "$C" .
echo "gpu_carry: $R/gpu-carry.tar.xz, $(du -k "$R/gpu-carry.tar.xz" | cut -f1) KiB ($(du -sk "$C" | cut -f1) KiB unpacked)"
