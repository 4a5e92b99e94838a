#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# One parameter table, two bindings (core/params.c): every parameter the
# table gives Open MPI is in ompi_info as coll_tacos_<name> with the
# table's default and level, and ompi_info lists none the table lacks; every one it
# gives the PMPI library is read from TACOS_<NAME> (TACOS_VERBOSE=10 has
# rank 0 print what it read): the table's default when unset, the value
# given when set.  param_table also fails where TACOS_SETTINGS_DEFAULT, the
# bindings' starting point, differs from the table.
B=${TACOS_BUILD:-../..}
T=${TACOS_TMP:-./tmp}/params
rm -rf "$T" && mkdir -p "$T"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# the table: ../unit's param_table, made there first where its Makefile is
U=$B/tests/unit
if [ -f "$U/Makefile" ]; then
    make -s -C "$U" param_table >/dev/null ||
        { echo "test_params.sh: cannot make $U/param_table" >&2; exit 99; }
fi
"$U/param_table" >"$T/table" || fail "param_table failed"
echo "$(wc -l <"$T/table") parameters in the table"

OMPI_MCA_mca_base_component_path="$B/coll_tacos/.libs:${OMPI_COMPONENT_DIR:?}" \
    ompi_info --param coll tacos --level 9 --parsable >"$T/info" 2>&1
n=0
while read -r name who type level def; do
    [ "$who" = pmpi ] && continue
    [ "$def" = - ] && def=""
    got=$(sed -n "s/^mca:coll:tacos:param:coll_tacos_$name:value://p" "$T/info")
    [ "$type" = bool ] && got=$(echo "$got" | sed 's/^true$/1/; s/^false$/0/')
    [ "$got" = "$def" ] || fail "coll_tacos_$name: ompi_info says '$got', the table '$def'"
    got=$(sed -n "s/^mca:coll:tacos:param:coll_tacos_$name:level://p" "$T/info")
    [ "$got" = "$level" ] || fail "coll_tacos_$name: ompi_info's level '$got', the table's $level"
    n=$((n + 1))
done <"$T/table"
for name in $(sed -n 's/^mca:coll:tacos:param:coll_tacos_\([a-z_]*\):value:.*/\1/p' "$T/info"); do
    grep -q "^$name " "$T/table" || fail "ompi_info lists coll_tacos_$name, which the table lacks"
done
echo "Open MPI: $n parameters registered with the table's defaults and levels"

LIB="$B/pmpi/.libs/libtacos-pmpi.so"
if ! command -v mpiexec.mpich >/dev/null || [ ! -f "$LIB" ] || [ ! -x ./mpi_hello_mpich ]; then
    echo "MPICH: not built, not checked"
else
    # pmpi VAR=value...: runs mpi_hello with the library and the settings given
    pmpi() {
        timeout 120 env TACOS_VERBOSE=10 "$@" sh "$(dirname "$0")/mpiexec_apart.sh" -n 1 \
            env LD_PRELOAD="$LIB" ./mpi_hello_mpich >"$T/pmpi" 2>&1
        grep -q "mpi_hello: 0 failure" "$T/pmpi" || { fail "mpi_hello under MPICH: $*"; tail -5 "$T/pmpi" >&2; }
    }
    said() { sed -n "s/^coll:tacos: parameter $1 = //p" "$T/pmpi"; }
    pmpi
    set --
    n=0
    while read -r name who type level def; do
        [ "$who" = ompi ] && continue
        [ "$def" = - ] && def=""
        [ "$name" = verbose ] && def=10
        [ "$(said "$name")" = "$def" ] ||
            fail "TACOS_$(echo "$name" | tr a-z A-Z): the library read '$(said "$name")', the table '$def'"
        n=$((n + 1))
        # another legal value for the second run
        case "$type:$name" in
        *:verbose) continue ;;
        string:dump_dir) v="$T/dump" ;;
        string:*) v="$T/$name-given" ;;
        bool:*) v=$((1 - def)) ;;
        int:hierarchy) v=0 ;; # (its default, 2, is its largest)
        *) v=$((def + 1)) ;;
        esac
        set -- "$@" "TACOS_$(echo "$name" | tr a-z A-Z)=$v"
        echo "$name $v" >>"$T/given"
    done <"$T/table"
    echo "MPICH: $n parameters read with the table's defaults"
    pmpi TACOS_PROBE=0 "$@"
    while read -r name v; do
        [ "$(said "$name")" = "$v" ] ||
            fail "TACOS_$(echo "$name" | tr a-z A-Z)=$v: the library read '$(said "$name")'"
    done <"$T/given"
    echo "MPICH: each read from TACOS_<NAME> when given"
    TACOS_MIN_BYTES=lots pmpi
    grep -q "TACOS_MIN_BYTES=lots is not an integer" "$T/pmpi" ||
        fail "TACOS_MIN_BYTES=lots: no message"
    [ "$(said min_bytes)" = 65536 ] || fail "TACOS_MIN_BYTES=lots: the default not kept"
fi
[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
