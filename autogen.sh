#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Generates ./configure from configure.ac (needs autoconf, automake, libtool).
set -e
cd "$(dirname "$0")"
autoreconf --install --force
