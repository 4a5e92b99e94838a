#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The parameter tables of the docs, generated from the core's one table
# (core/params.c, printed by tests/unit/param_table --markdown SELECTION).  A
# markdown file holds each generated table between two marker lines:
#
#   <!-- params:begin SELECTION -->
#   <!-- params:end -->
#
# SELECTION: all (every parameter) or basic (levels 1 to 4).
#
#   tests/unit/gen_params.sh --update FILE...  rewrite the blocks from the table
#   tests/unit/gen_params.sh --check FILE...   exit 1 where a block differs
#                                              from the table, naming the
#                                              file, with a diff
#
# Files without blocks are left alone.  Exit status: 0, 1 (--check: some
# block differs), 2 (bad usage, a malformed block, no param_table).
# PARAM_TABLE names the program; by default tests/unit/param_table of the build
# ($TACOS_BUILD, else the tree this script is in), made first when its
# Makefile is there.
usage() { echo "usage: gen_params.sh --update|--check FILE..." >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1
shift
case $mode in --update | --check) ;; *) usage ;; esac

if [ -z "$PARAM_TABLE" ]; then
    dir=${TACOS_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/unit
    if [ -f "$dir/Makefile" ]; then
        make -s -C "$dir" param_table >/dev/null ||
            { echo "gen_params.sh: cannot make $dir/param_table" >&2; exit 2; }
    fi
    PARAM_TABLE=$dir/param_table
fi
[ -x "$PARAM_TABLE" ] || {
    echo "gen_params.sh: no $PARAM_TABLE (configure, then make -C tests/unit param_table)" >&2
    exit 2
}

T=$(mktemp -d "${TMPDIR:-/tmp}/gen_params.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT INT TERM
for sel in all basic; do
    "$PARAM_TABLE" --markdown "$sel" >"$T/$sel.md" || { echo "gen_params.sh: $PARAM_TABLE failed" >&2; exit 2; }
done

rc=0
for f in "$@"; do
    [ -f "$f" ] || { echo "gen_params.sh: no file $f" >&2; rc=2; continue; }
    # each block's lines become: the begin marker, an empty line, the
    # table, an empty line, the end marker
    awk -v dir="$T" -v file="$f" '
        function bad(msg) { print file ":" NR ": " msg | "cat 1>&2"; failed = 1; exit 2 }
        /^<!-- params:begin [a-z]+ -->$/ {
            if (open) bad("params:begin inside the block of line " open)
            sel = $3
            if (sel != "all" && sel != "basic") bad("unknown selection \"" sel "\" (all, basic)")
            print
            print ""
            while ((getline line < (dir "/" sel ".md")) > 0) print line
            close(dir "/" sel ".md")
            print ""
            open = NR
            next
        }
        /^<!-- params:end -->$/ {
            if (!open) bad("params:end without params:begin")
            open = 0
            print
            next
        }
        /^<!-- *params:/ { bad("not a marker line: <!-- params:begin all|basic --> or <!-- params:end -->") }
        !open { print }
        END { if (!failed && open) bad("no params:end for the block of line " open) }
    ' "$f" >"$T/new" || { rc=2; continue; }
    cmp -s "$f" "$T/new" && continue
    if [ "$mode" = --update ]; then
        cat "$T/new" >"$f" && echo "gen_params.sh: $f updated"
    else
        echo "$f: its parameter table differs from core/params.c (tests/unit/gen_params.sh --update $f):"
        diff -u "$f" "$T/new" | sed "1s|.*|--- $f|; 2s|.*|+++ generated from core/params.c|"
        [ "$rc" = 2 ] || rc=1
    fi
done
exit $rc
