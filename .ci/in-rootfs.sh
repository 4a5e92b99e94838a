#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# .ci/in-rootfs.sh DIR COMMAND...: run COMMAND (through sh -c) as root inside
# the root filesystem DIR, in /src, which holds a copy of this work tree's
# tracked files.  /proc, /sys and /dev are mounted in a private mount
# namespace, so nothing stays mounted when the command ends.
# TACOS_ROOTFS_KEEP=1 copies over the previous copy and its build instead
# of starting from an empty /src.  The environment is cleared but for
# TACOS_TEST_FULL (1: the MPI tests' full sweep, docs/testing.md).
set -eu
dir=$1; shift
src=$(cd "$(dirname "$0")/.." && pwd)
[ "${TACOS_ROOTFS_KEEP:-0}" = 1 ] || rm -rf "$dir/src"
mkdir -p "$dir/src"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$dir/src" -xf -
exec unshare -m sh -c '
    mount --make-rprivate /
    mount -t proc proc "$1/proc"
    mount --rbind /sys "$1/sys"
    mount --rbind /dev "$1/dev"
    mount -t tmpfs tmpfs "$1/tmp"
    mount -t tmpfs -o size=1g tmpfs "$1/dev/shm" 2>/dev/null || true
    exec chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        TACOS_TEST_FULL="${TACOS_TEST_FULL:-0}" sh -c "cd /src && $2"' sh "$dir" "$*"
