#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The docs' parameter tables are the core's (core/params.c): every block
# between <!-- params:begin SELECTION --> and <!-- params:end --> in
# README.md and docs/*.md equals what gen_params.sh generates from
# param_table (a file that differs is named, with a diff); docs/parameters.md
# holds the table of every parameter, and the "all" and "basic" tables have
# a row per parameter, resp. per parameter of levels 1 to 4.  Then
# gen_params.sh itself, on copies: a changed cell is found and --update
# mends it, files without blocks pass, malformed blocks are refused.
# (test_params.sh checks the component and the PMPI library against the
# same table.)
S=${TACOS_SRC:-../..}
T=${TACOS_TMP:-./tmp}/param_docs
GEN="$S/tests/unit/gen_params.sh"
rm -rf "$T" && mkdir -p "$T"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
[ -x ./param_table ] || { echo "test_param_docs.sh: ./param_table not built" >&2; exit 99; }
PARAM_TABLE=./param_table
export PARAM_TABLE

# the docs as they are
set --
for f in "$S/README.md" "$S"/docs/*.md; do
    [ -f "$f" ] && set -- "$@" "$f"
done
sh "$GEN" --check "$@" || fail "a parameter table in the docs differs from core/params.c (above)"
echo "checked $# files; with tables: $(cd "$S" && grep -l "^<!-- params:begin" README.md docs/*.md 2>/dev/null | tr "\n" " ")"
grep -qx '<!-- params:begin all -->' "$S/docs/parameters.md" ||
    fail "docs/parameters.md has no <!-- params:begin all --> block"

# a row per parameter
./param_table >"$T/table"
n=$(wc -l <"$T/table")
basic=$(awk '$4 <= 4' "$T/table" | wc -l)
rows() { ./param_table --markdown "$1" | grep -c '^| `coll_tacos_\|^| — '; }
[ "$(rows all)" = "$n" ] || fail "the 'all' table has $(rows all) rows, the core $n parameters"
[ "$(rows basic)" = "$basic" ] || fail "the 'basic' table has $(rows basic) rows, levels 1-4 hold $basic"
[ "$basic" -ge 3 ] && [ "$basic" -le 8 ] || fail "$basic parameters at levels 1-4: a few are meant to be"
echo "$n parameters, $basic at levels 1-4"

# gen_params.sh on copies
printf '# Title\n\nNo table here.\n' >"$T/none.md"
cp "$T/none.md" "$T/none.orig"
sh "$GEN" --check "$T/none.md" >"$T/out" 2>&1 || fail "a file without blocks fails --check: $(cat "$T/out")"
sh "$GEN" --update "$T/none.md" >"$T/out" 2>&1 && cmp -s "$T/none.md" "$T/none.orig" ||
    fail "--update changed a file without blocks"
printf 'Intro\n\n<!-- params:begin basic -->\nstale\n<!-- params:end -->\n\nAfter\n' >"$T/stale.md"
sh "$GEN" --check "$T/stale.md" >"$T/out" 2>&1
[ $? = 1 ] && grep -q "stale.md" "$T/out" && grep -q "^-stale" "$T/out" ||
    fail "--check of a stale block: no exit 1 naming the file with a diff: $(cat "$T/out")"
sh "$GEN" --update "$T/stale.md" >/dev/null 2>&1 && sh "$GEN" --check "$T/stale.md" >/dev/null 2>&1 ||
    fail "--update did not mend a stale block"
grep -q '^After$' "$T/stale.md" && grep -q '^Intro$' "$T/stale.md" || fail "--update lost the text around a block"
sed 's/| `65536` |/| `65537` |/' "$S/docs/parameters.md" >"$T/changed.md"
cmp -s "$S/docs/parameters.md" "$T/changed.md" && fail "no min_bytes default of 65536 in docs/parameters.md to change"
sh "$GEN" --check "$T/changed.md" >"$T/out" 2>&1
[ $? = 1 ] && grep -q '^-.*65537' "$T/out" && grep -q '^+.*65536' "$T/out" ||
    fail "--check of a changed default: no diff: $(cat "$T/out")"
for bad in 'params:begin all' 'params:begn all' 'params:begin bogus' 'params:end' 'params:begin basic -->\n<!-- params:begin all'; do
    printf '<!-- %b -->\n' "$bad" >"$T/bad.md"
    sh "$GEN" --check "$T/bad.md" >"$T/out" 2>&1
    [ $? = 2 ] || fail "a malformed block ($bad) is not refused: $(cat "$T/out")"
done
[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
