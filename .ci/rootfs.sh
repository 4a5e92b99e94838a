#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# .ci/rootfs.sh SUITE DIR: make a Debian SUITE (trixie, sid) root filesystem
# in DIR with what the project builds and tests with, or reuse the one a
# previous run left there.  The stamp file is written last, so a run cut
# short is rebuilt.  Exit 77 when the archive cannot be reached.
set -eu
suite=$1 dir=$2
pkgs="build-essential autoconf automake libtool pkg-config libcjson-dev
libhwloc-dev libucx-dev libopenmpi-dev openmpi-bin libpmix-dev mpich
libmpich-dev"
[ "$suite" = sid ] && pkgs="$pkgs libucc-dev"
want=$(echo "$suite" $pkgs | md5sum | cut -c1-16)
[ -f "$dir/.tacos-rootfs" ] && [ "$(cat "$dir/.tacos-rootfs")" = "$want" ] && exit 0
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
command -v mmdebstrap >/dev/null || apt-get install -y mmdebstrap
if ! mmdebstrap --variant=minbase --include="$(echo $pkgs | tr ' ' ,)" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        "$suite" "$dir" http://deb.debian.org/debian; then
    rm -rf "$dir"
    echo "rootfs.sh: could not make a $suite root filesystem from the archive" >&2
    exit 77
fi
echo "$want" > "$dir/.tacos-rootfs"
