#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# testbed.sh: an emulated cluster of hosts on this one Linux machine, made of
# network namespaces, for running Open MPI jobs over rate-limited links.
#
#   testbed.sh run SHAPE [-r RANKS] [-o OUTDIR] -- COMMAND [ARGS...]
#   testbed.sh down      remove a leftover testbed (tacos-* namespaces, their processes)
#   testbed.sh shapes    list the shapes
#
# TESTBED_MTU: the emulated links' MTU (default 9000; 1500 for standard frames).
# SHAPE is two, pairs4, ring4, star3, switch4, tree16 or N:A-B@MBIT,A-B@MBIT,...
# (hosts 0..N-1, undirected links in Mbit/s; an end sK is switch K, numbered from
# s0 without gaps: a namespace that forwards between the hosts and switches
# linked to it, each port shaped at its link's rate; switches linked to switches
# form trees). RANKS: ranks per host, one number for every host (default 1) or a
# comma list, one per host (-r 1,2,1). OUTDIR (default: a fresh temporary
# directory, removed at the end) receives hostfile, agent (the ssh stand-in),
# topology.json (the true topology, tacos-topology format: NPUs = ranks, links =
# physical links at TCP goodput; a switch alone = a non-blocking switch unwound
# into a full mesh, a tree = named switches, each with its ports' rate, a host
# of several ranks under one a switch of its own), topology.conf (the switches as
# Slurm's tree plugin lists them, where every host is on one switch and on no
# link of its own) and shape.txt.
#
# Layout:
#   tacos-head  where COMMAND and mpirun run; bridge br0 10.77.0.254/24 (management,
#               not rate-limited) with one veth to every host ("mg", 10.77.0.(i+1)).
#   tacos-hI    host hI, hostname hI under the agent; one host address
#               10.77.100.(I+1)/32 on veth "ha" (the only address Open MPI's TCP
#               transport uses); veth "to-hJ" per neighbour J with tbf on egress at
#               both ends and a /32 route to hJ's host address ("to-sK" to a switch,
#               no route: it is only a next hop); non-neighbours get fewest-hop
#               routes (via ... onlink, forwarding on; through a switch counts as one
#               hop, as a link; ties avoid the link that comes last in (lower end,
#               higher end) order), the same path both ways, so routed traffic
#               really crosses and shares the emulated links.
#   tacos-sK    switch K: address 10.77.101.(K+1), a veth "to-hJ" per host J on it
#               and "to-sJ" per switch J linked to it (tbf at both ends: the port),
#               routes to every host.
# COMMAND runs in tacos-head with TESTBED_DIR, TESTBED_FABRIC (topology.conf, or
# empty), TESTBED_MPIRUN (the mpirun prefix:
# run "$TESTBED_MPIRUN ./prog"; ranks 0..n0-1 on h0, then h1, ...), TESTBED_MPIEXEC (the
# same for MPICH: "$TESTBED_MPIEXEC ./prog"), TESTBED_NP,
# TESTBED_HOSTS and TESTBED_TOPO exported; the environment reaches the ranks
# (Open MPI refuses an --mca parameter given twice: do not repeat the prefix's).
# Everything is torn down on exit, error or signal. One testbed at a time.
#
# Exit: COMMAND's status; 1 a testbed already exists or set-up failed; 2 usage or
# bad shape; 77 cannot run here (not root, no namespaces, no tbf, no mpirun);
# 128+N killed by signal N.
set -u
PATH=$PATH:/usr/sbin:/sbin
MTU="" GOODPUT="" TBF="" # the links' frames and shapers: frames() below, called by run
MGMT_NET=10.77.0.0/24 HOST_NET=10.77.100.0/24

die() { c=$1; shift; echo "testbed.sh: $*" >&2; exit "$c"; }
# frames: the links' MTU (TESTBED_MTU), TCP goodput and tbf parameters.
# Jumbo frames by default: with 1500-byte frames the 2 cores carried every packet
# of all emulated hosts, and two 400 Mbit/s links both ways at once (1.6 Gbit/s in
# all) were held back by the CPU, not the shapers (single 10 ms exchanges came out
# at 0.80 of the rate, median; with jumbo frames at 1.02). TCP goodput: (MTU - 52) /
# (MTU + 14) of the rate (IP and TCP headers with timestamps; Ethernet header):
# 0.993 at 9000, 0.956 at 1500. tbf: a bucket of 8 KiB or one frame and 1 KiB,
# whichever is larger (a small initial burst; tbf drops frames larger than its
# bucket) and a 200 KiB queue (a few 64 KiB GSO packets: locally sent TCP does not
# overflow it; 16 ms at 100 Mbit/s, 4 ms at 400).
frames() {
    MTU=${TESTBED_MTU:-9000}
    [[ $MTU =~ ^[1-9][0-9]*$ ]] && [ "${#MTU}" -le 5 ] && [ "$MTU" -ge 1280 ] &&
        [ "$MTU" -le 65535 ] || die 2 "TESTBED_MTU '$MTU': a number from 1280 to 65535"
    GOODPUT=$(awk -v m="$MTU" 'BEGIN { printf "%.4f", (m - 52) / (m + 14) }')
    TBF="burst $((MTU + 1024 > 8192 ? MTU + 1024 : 8192)) limit 200k"
}
skip() { echo "testbed.sh: SKIP: $*" >&2; exit 77; }
usage() {
    die 2 "usage: $0 run SHAPE [-r RANKS] [-o OUTDIR] -- COMMAND [ARGS...] | down | shapes${1:+ ($1)}"
}

shapes() {
    cat <<'EOF'
two      h0-h1 400 Mbit/s
pairs4   4 hosts, full mesh: h0-h1, h2-h3 400; h0-h2, h0-h3, h1-h2, h1-h3 100
ring4    ring h0-h1 400, h1-h2 100, h2-h3 400, h3-h0 100; h0<->h2, h1<->h3 over 2 hops
star3    hub h0: h0-h1 400, h0-h2 100; h1<->h2 through h0
switch4  4 hosts on one switch s0, each port 100 Mbit/s (every pair shares its hosts' ports)
tree16   16 hosts under leaves s0..s3 (hosts 4i..4i+3, ports 100), leaves under spine s4
         by uplinks of 200 (2:1); a pair under two leaves crosses both uplinks
N:A-B@MBIT,...  custom, e.g. 3:0-1@400,1-2@100 (hosts 0..N-1, N <= 32, undirected links);
         an end sK is switch K, e.g. 3:0-s0@100,1-s0@100,2-s0@100; switches joined to
         switches form trees (no cycles; a host on one switch of a tree), rooted where the
         rates fit, centre first; a switch's ports to its hosts and to the switches below
         it: one rate
EOF
}

our_ns() { ip netns list 2>/dev/null | awk '$1 ~ /^tacos-/ { print $1 }'; }

# Kill every process in our namespaces (TERM: a second to exit in order, then
# KILL), delete the namespaces and the Open MPI session directories left behind.
ns_pids() { for ns in $1; do ip netns pids "$ns"; done 2>/dev/null; }
teardown() {
    local nss pids all="" sig p
    nss=$(our_ns)
    [ -n "$nss" ] || return 0
    for sig in TERM KILL; do
        pids=$(ns_pids "$nss")
        [ -n "$pids" ] || break
        all="$all $pids"
        # shellcheck disable=SC2086
        kill -"$sig" $pids 2>/dev/null
        for _ in $(seq "$([ $sig = TERM ] && echo 10 || echo 30)"); do # 1 s, 3 s
            [ -n "$(ns_pids "$nss")" ] || break
            sleep 0.1
        done
    done
    for ns in $nss; do ip netns del "$ns" 2>/dev/null; done
    for p in $all; do rm -rf "${TMPDIR:-/tmp}/ompi."*".$(id -u)/pid.$p"; done
    rmdir "${TMPDIR:-/tmp}/ompi.h"[0-9]*".$(id -u)" 2>/dev/null
    [ -z "$(our_ns)" ] || echo "testbed.sh: could not remove: $(our_ns | paste -sd' ')" >&2
}

# Nodes: hosts 0..N-1, then switches N..NODES-1 (sK is node N+K).
nm() { if [ "$1" -lt "$N" ]; then echo "h$1"; else echo "s$(($1 - N))"; fi; }
addr() { if [ "$1" -lt "$N" ]; then echo "10.77.100.$(($1 + 1))"; else echo "10.77.101.$(($1 - N + 1))"; fi; }

# parse_shape SHAPE: sets N, NODES, E and per link k (sorted by ends): LA[k] < LB[k], LR[k];
# per switch node s: SR[s] its ports' rate, SH[s] its hosts (a list), SS[s] the
# switches linked to it, TREE[s] (1: in a tree of switches), UP[s] (its parent
# switch in the tree, or empty: its root, tree_roots).
parse_shape() {
    local spec l a b r k s t seen=" "
    case $1 in
    two) spec=2:0-1@400 ;;
    pairs4) spec=4:0-1@400,2-3@400,0-2@100,0-3@100,1-2@100,1-3@100 ;;
    ring4) spec=4:0-1@400,1-2@100,2-3@400,0-3@100 ;;
    star3) spec=3:0-1@400,0-2@100 ;;
    switch4) spec=4:0-s0@100,1-s0@100,2-s0@100,3-s0@100 ;;
    tree16) # leaves s0..s3 of hosts 4i..4i+3 at 100, uplinks to spine s4 at 200 (2:1)
        spec=16:$(for ((l = 0; l < 16; l++)); do printf '%d-s%d@100,' $l $((l / 4)); done)
        spec=${spec}s0-s4@200,s1-s4@200,s2-s4@200,s3-s4@200 ;;
    *) spec=$1 ;;
    esac
    local e='(s?[0-9]{1,3})'
    [[ $spec =~ ^[0-9]+:$e-$e@[0-9]+(,$e-$e@[0-9]+)*$ ]] ||
        die 2 "bad shape '$1': want $(shapes | awk '/^[a-z]/ { printf "%s, ", $1 }')or N:A-B@MBIT,... (see: $0 shapes)"
    N=$((10#${spec%%:*}))
    ((N >= 2 && N <= 32)) || die 2 "bad shape '$1': 2 to 32 hosts"
    NODES=$N
    LA=() LB=() LR=() SR=() SH=() SS=() TREE=() UP=() SET=()
    for l in $(echo "${spec#*:}" | tr ',-' '  ' | sed 's/@[0-9]*//g'); do
        [[ $l == s* ]] || [ "$((10#$l))" -lt "$N" ] || die 2 "bad shape '$1': host $l does not exist (hosts 0..$((N - 1)))"
    done
    for l in $(echo "${spec#*:}" | tr ',' '\n' | tr -- '-@' '  ' |
        awk -v n="$N" 'function node(x) { return x ~ /^s/ ? n + substr(x, 2) : x + 0 }
            { a = node($1); b = node($2); if (a > b) { t = a; a = b; b = t }; print a "-" b "-" $3 + 0 }' |
        sort -t- -n -k1,1 -k2,2); do
        IFS=- read -r a b r <<<"$l"
        ((b < N + 16)) || die 2 "bad shape '$1': switch s$((b - N)) does not exist (s0..s15)"
        [ "$a" != "$b" ] || die 2 "bad shape '$1': link $(nm "$a")-$(nm "$b") joins a node to itself"
        ((r >= 1 && r <= 100000)) || die 2 "bad shape '$1': rate $r not in 1..100000 Mbit/s"
        case $seen in *" $a-$b "*) die 2 "bad shape '$1': link $(nm "$a")-$(nm "$b") given twice" ;; esac
        seen="$seen$a-$b "
        if [ "$a" -ge "$N" ]; then # two switches: a tree's (SET: which tree, by union-find)
            s=$(set_of "$a") t=$(set_of "$b")
            [ "$s" != "$t" ] || die 2 "bad shape '$1': link $(nm "$a")-$(nm "$b") closes a cycle of switches (switches form trees)"
            SET[s]=$t SS[a]="${SS[a]:-} $b" SS[b]="${SS[b]:-} $a" TREE[a]=1 TREE[b]=1
        elif [ "$b" -ge "$N" ]; then # a host's port on a switch
            SH[b]="${SH[b]:-} $a"
        fi
        for s in $a $b; do ((s < NODES)) || NODES=$((s + 1)); done
        LA+=("$a") LB+=("$b") LR+=("$r")
    done
    E=${#LA[@]}
    [ "$E" -le 48 ] || die 2 "bad shape '$1': at most 48 links"
    for ((s = N; s < NODES; s++)); do
        [ -n "${SH[s]:-}${SS[s]:-}" ] || die 2 "bad shape '$1': switch $(nm "$s") not given (switches are s0, s1, ... without gaps)"
        # shellcheck disable=SC2086
        [ "$(set -- ${SH[s]:-} ${SS[s]:-}; echo $#)" -ge 2 ] || die 2 "bad shape '$1': switch $(nm "$s") has fewer than 2 ports"
    done
    tree_roots "$1"
    t=$(rate_clash -)
    [ -z "$t" ] || die 2 "bad shape '$1': $t"
    for ((k = 0; k < E; k++)); do
        [ "${LB[k]}" -lt "$N" ] || SR[$(port_of "$k")]=${LR[k]}
    done
    for ((s = N; s < NODES; s++)); do
        [ -n "${TREE[s]:-}" ] || continue
        for a in ${SH[s]:-}; do for ((t = N; t < NODES; t++)); do
            [ "$t" != "$s" ] || continue
            case " ${SH[t]:-} " in *" $a "*) die 2 "bad shape '$1': host h$a on switches $(nm "$t") and $(nm "$s"), $(nm "$s") a tree's (a host is on one switch of a tree)" ;; esac
        done; done
    done
}

# The switch whose port link k (to a switch) is: a host's switch, or the
# parent in a tree.
port_of() {
    local a=${LA[$1]} b=${LB[$1]}
    if [ "$a" -ge "$N" ] && [ "${UP[b]}" = "$a" ]; then echo "$a"; else echo "$b"; fi
}

# rate_clash TREE: why the switches of tree TREE (its set_of; -: the switches
# in no tree) break "one rate a switch" (its hosts' ports and the uplinks of the
# switches below it), or nothing.
rate_clash() {
    local k s rate=()
    for ((k = 0; k < E; k++)); do
        [ "${LB[k]}" -ge "$N" ] || continue
        s=$(port_of "$k")
        if [ "$1" = - ]; then [ -z "${TREE[s]:-}" ] || continue; else [ -n "${TREE[s]:-}" ] && [ "$(set_of "$s")" = "$1" ] || continue; fi
        [ "${rate[s]:-${LR[k]}}" = "${LR[k]}" ] || { echo "switch $(nm "$s") has ports of ${rate[s]} and ${LR[k]} Mbit/s (one rate a switch: its hosts' ports and the uplinks of the switches below it)"; return; }
        rate[s]=${LR[k]}
    done
}

# The tree (set) a switch is in, by union-find over SET.
set_of() { local s=$1; while [ -n "${SET[s]:-}" ]; do s=${SET[s]}; done; echo "$s"; }

# Each tree of switches rooted where its rates fit ("one rate a switch"), the
# centre first (the least greatest hop count to its other switches, ties to
# the lowest number): UP[s] its parent.
tree_roots() {
    local s t u d p why first
    for ((s = N; s < NODES; s++)); do
        [ -n "${TREE[s]:-}" ] && [ -z "${UP[s]+x}" ] || continue
        first=""
        for t in $(for t in $(tree_bfs "$s" | awk '{ print $1 }'); do
            echo "$(tree_bfs "$t" | awk '{ if ($2 > m) m = $2 } END { print m + 0 }') $t"
        done | sort -n -k1,1 -k2,2 | awk '{ print $2 }'); do
            UP[t]=""
            while read -r u d p; do [ "$u" = "$t" ] || UP[u]=$p; done < <(tree_bfs "$t")
            why=$(rate_clash "$(set_of "$s")")
            [ -n "$why" ] || continue 2
            [ -n "$first" ] || first="$why (rooted at $(nm "$t"), and no other root fits)"
        done
        die 2 "bad shape '$1': $first"
    done
}

# "switch hops parent" for every switch of s's tree, breadth first from s.
tree_bfs() {
    local q=("$1") i=0 s t dist=() par=()
    dist[$1]=0 par[$1]=-
    while [ $i -lt ${#q[@]} ]; do
        s=${q[i]} i=$((i + 1))
        echo "$s ${dist[s]} ${par[s]}"
        for t in ${SS[s]:-}; do
            [ -z "${dist[t]+x}" ] || continue
            dist[t]=$((dist[s] + 1)) par[t]=$s q+=("$t")
        done
    done
}

# Fewest hops (a link to or between switches half a hop: through one switch is
# one hop, as a link), ties to the least sum of 2^k over the path's links k (in sorted
# order, below half a hop): the paths are unique, hence the same both ways, and
# every path's tail is the tail's own path (consistent next hops).
# Over every node (hosts and switches). Sets NX[a*NODES+c] (next hop from a towards c)
# and NB[a*NODES+c] (1: neighbours).
routes() {
    local INF=$((1 << 62)) M=$((1 << (E + 1))) a b c k d w
    D=() NX=() NB=()
    for ((a = 0; a < NODES * NODES; a++)); do D[a]=$INF NX[a]=-1 NB[a]=0; done
    for ((a = 0; a < NODES; a++)); do D[a * NODES + a]=0; done
    for ((k = 0; k < E; k++)); do
        a=${LA[k]} b=${LB[k]} w=$((b < N ? M : M / 2))
        D[a * NODES + b]=$((w + (1 << k))) D[b * NODES + a]=$((w + (1 << k)))
        NX[a * NODES + b]=$b NX[b * NODES + a]=$a NB[a * NODES + b]=1 NB[b * NODES + a]=1
    done
    for ((k = 0; k < NODES; k++)); do for ((a = 0; a < NODES; a++)); do
        [ "${D[a * NODES + k]}" = "$INF" ] && continue
        for ((c = 0; c < NODES; c++)); do
            [ "${D[k * NODES + c]}" = "$INF" ] && continue
            d=$((D[a * NODES + k] + D[k * NODES + c]))
            if [ "$d" -lt "${D[a * NODES + c]}" ]; then D[a * NODES + c]=$d NX[a * NODES + c]=${NX[a * NODES + k]}; fi
        done
    done; done
    for ((c = 1; c < N; c++)); do
        [ "${D[c]}" != "$INF" ] || die 2 "bad shape '$SHAPE': disconnected (no path from h0 to h$c)"
    done
}

path() { local a=$1 c=$2 p; p=$(nm "$1"); while [ "$a" != "$c" ]; do a=${NX[a * NODES + c]}; p="$p $(nm "$a")"; done; echo "$p"; }

# A rate in Mbit/s as TCP goodput in GB/s, shared by $2 (default 1).
mbit_gbps() { awk -v r="$1" -v m="${2:-1}" -v g="$GOODPUT" 'BEGIN { printf "%.6g", r * g / 8 / 1000 / m }'; }

# tree_switch S: switch S of a tree as a named entry (sep: what comes before it):
# crossing a port costs 50 us (a host to a host under one leaf: 100 us, as a
# switch alone); each group below it joined to every other.
tree_switch() {
    local s=$1 a t npus="" kids="" groups=0 bw
    bw=$(mbit_gbps "${SR[s]}")
    for a in ${SH[s]:-}; do
        groups=$((groups + 1))
        if [ "${RK[a]}" = 1 ]; then npus="$npus${npus:+, }${OFF[a]}"; continue; fi
        kids="$kids${kids:+, }\"h$a\""
        printf '%s\n    {"name": "h%d", "npus": [%s], "lat_us": 0, "bw_gbps": %s, "unwind_degree": %d}' \
            "$sep" "$a" "$(seq -s, "${OFF[a]}" $((OFF[a] + RK[a] - 1)))" "$bw" $((RK[a] - 1))
        sep=,
    done
    for ((t = N; t < NODES; t++)); do
        [ "${UP[t]-}" = "$s" ] || continue
        groups=$((groups + 1)) kids="$kids${kids:+, }\"$(nm "$t")\""
    done
    printf '%s\n    {"name": "%s", "npus": [%s], "switches": [%s], "lat_us": 100, "bw_gbps": %s, "unwind_degree": %d}' \
        "$sep" "$(nm "$s")" "$npus" "$kids" "$bw" $((groups > 1 ? groups - 1 : 1))
    sep=,
}

# write_files: hostfile, agent, topology.json, shape.txt into $OUT.
write_files() {
    local i k a b l m s t bw members kids hosts sep="" npus=0
    : >"$OUT/hostfile"
    for ((i = 0; i < N; i++)); do OFF[i]=$npus; npus=$((npus + RK[i])); echo "h$i slots=${RK[i]}" >>"$OUT/hostfile"; done
    NP=$npus
    cat >"$OUT/agent" <<'EOF'
#!/bin/sh
# ssh stand-in for mpirun on the testbed: agent [ssh options] HOST COMMAND...
# runs COMMAND in namespace tacos-HOST under its own hostname HOST.
while [ $# -gt 0 ]; do
    case $1 in
    -[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;; # ssh options with an argument
    -*) shift ;;
    *) break ;;
    esac
done
case ${1:-} in h[0-9]*) ;; *) echo "testbed agent: no such host '${1:-}'" >&2; exit 255 ;; esac
host=$1
shift
exec ip netns exec "tacos-$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
EOF
    chmod +x "$OUT/agent"
    {
        printf '{\n  "format": "tacos-topology",\n  "name": "testbed %s, ranks %s",\n' "$SHAPE" "$RANKS"
        printf '  "npus": %d,\n  "links": [' "$NP"
        for ((i = 0; i < N; i++)); do for ((a = 0; a < RK[i]; a++)); do for ((b = a + 1; b < RK[i]; b++)); do
            printf '%s\n    {"src": %d, "dst": %d, "lat_us": 1, "bw_gbps": 5, "bidirectional": true, "name": "h%d shared memory"}' \
                "$sep" $((OFF[i] + a)) $((OFF[i] + b)) "$i"
            sep=,
        done; done; done
        for ((k = 0; k < E; k++)); do
            a=${LA[k]} b=${LB[k]}
            [ "$b" -lt "$N" ] || continue # a switch's port: below
            m=$((RK[a] < RK[b] ? RK[a] : RK[b]))
            bw=$(mbit_gbps "${LR[k]}" "$m")
            for ((l = 0; l < m; l++)); do
                printf '%s\n    {"src": %d, "dst": %d, "lat_us": 50, "bw_gbps": %s, "bidirectional": true, "name": "h%d-h%d %d Mbit/s TCP"}' \
                    "$sep" $((OFF[a] + l)) $((OFF[b] + l)) "$bw" "$a" "$b" "${LR[k]}"
                sep=,
            done
        done
        # a switch alone: per local rank index l (l < the fewest ranks of its
        # hosts), one non-blocking switch of those ranks, unwound into a full
        # mesh (each port's rate shared by the other members; unnamed: a name
        # makes it a tree's switch); a tree's: a named switch (its ports to its
        # hosts, and to the switches below it: their uplinks), a host of
        # several ranks a switch of its own under it
        printf '\n  ]'
        sep=""
        [ "$NODES" = "$N" ] || printf ',\n  "switches": ['
        for ((s = N; s < NODES; s++)); do
            if [ -n "${TREE[s]:-}" ]; then
                tree_switch "$s"
                continue
            fi
            m=64 members=""
            for a in ${SH[s]}; do m=$((RK[a] < m ? RK[a] : m)); done
            bw=$(mbit_gbps "${SR[s]}" "$m")
            for ((l = 0; l < m; l++)); do
                members=$(for a in ${SH[s]}; do echo $((OFF[a] + l)); done | paste -sd,)
                # shellcheck disable=SC2086
                printf '%s\n    {"npus": [%s], "lat_us": 100, "bw_gbps": %s, "unwind_degree": %d}' \
                    "$sep" "$members" "$bw" $(($(set -- ${SH[s]}; echo $#) - 1))
                sep=,
            done
        done
        [ "$NODES" = "$N" ] || printf '\n  ]'
        printf '\n}\n'
    } >"$OUT/topology.json"
    # the switches as Slurm's topology.conf describes them (tree plugin),
    # where every host is on one switch and on no link of its own
    local on=0 direct=0
    for ((s = N; s < NODES; s++)); do on=$((on + $(set -- ${SH[s]:-}; echo $#))); done
    for ((k = 0; k < E; k++)); do [ "${LB[k]}" -lt "$N" ] && direct=1; done
    rm -f "$OUT/topology.conf"
    if [ "$NODES" != "$N" ] && [ "$on" = "$N" ] && [ "$direct" = 0 ]; then
        for ((s = N; s < NODES; s++)); do
            kids="" hosts=""
            for ((t = N; t < NODES; t++)); do [ "${UP[t]-}" = "$s" ] && kids="$kids${kids:+,}$(nm "$t")"; done
            for a in ${SH[s]:-}; do hosts="$hosts${hosts:+,}h$a"; done
            echo "SwitchName=$(nm "$s")${kids:+ Switches=$kids}${hosts:+ Nodes=$hosts}"
        done >"$OUT/topology.conf"
    fi
    {
        echo "testbed $SHAPE: $N hosts, $NP ranks; tbf rate R $TBF at both ends of each link, MTU $MTU"
        echo "goodput $GOODPUT (TCP payload per byte of the rate)"
        for ((i = 0; i < N; i++)); do
            echo "h$i: ranks $((OFF[i]))..$((OFF[i] + RK[i] - 1)), host address 10.77.100.$((i + 1)), management 10.77.0.$((i + 1))"
        done
        for ((k = 0; k < E; k++)); do echo "link $(nm "${LA[k]}")-$(nm "${LB[k]}"): ${LR[k]} Mbit/s"; done
        for ((a = 0; a < N; a++)); do for ((b = a + 1; b < N; b++)); do
            [ "${NB[a * NODES + b]}" = 1 ] || echo "route h$a<->h$b: $(path "$a" "$b")"
        done; done
    } >"$OUT/shape.txt"
}

# setup: the namespaces, links, qdiscs and routes.
setup() {
    local i j k a b r h
    ip -n tacos-head link add tbfprobe type veth peer name tbfprobe1 || return 1
    # shellcheck disable=SC2086
    tc -n tacos-head qdisc add dev tbfprobe root tbf rate 100mbit $TBF 2>"$OUT/.err" ||
        skip "tc qdisc tbf unsupported: $(head -1 "$OUT/.err")"
    ip netns exec tacos-head unshare --uts true 2>"$OUT/.err" || skip "unshare --uts failed: $(head -1 "$OUT/.err")"
    ip -n tacos-head -batch - <<EOF || return 1
link del tbfprobe
link set lo up
link add br0 type bridge
addr add 10.77.0.254/24 dev br0
link set br0 up
EOF
    for ((i = 0; i < NODES; i++)); do
        ip netns add "tacos-$(nm $i)" || return 1
        [ "$i" -ge "$N" ] || ip -n tacos-head link add "m$i" type veth peer name mg netns "tacos-h$i" || return 1
    done
    for ((k = 0; k < E; k++)); do
        a=$(nm "${LA[k]}") b=$(nm "${LB[k]}")
        ip -n "tacos-$a" link add "to-$b" mtu "$MTU" type veth peer name "to-$a" mtu "$MTU" netns "tacos-$b" || return 1
    done
    for ((i = 0; i < N; i++)); do echo "link set m$i master br0 up"; done | ip -n tacos-head -batch - || return 1
    for ((i = 0; i < NODES; i++)); do
        h=$(addr "$i")
        {
            echo "link set lo up"
            if [ "$i" -lt "$N" ]; then
                echo "addr add 10.77.0.$((i + 1))/24 dev mg"
                echo "link set mg up"
            fi
            echo "link add ha type veth peer name hb"
            echo "addr add $h/32 dev ha"
            echo "link set ha up"
            echo "link set hb up"
            for ((j = 0; j < NODES; j++)); do
                [ "$j" != "$i" ] && [ "${NB[i * NODES + j]}" = 1 ] || continue
                echo "link set to-$(nm "$j") up"
                [ "$j" -ge "$N" ] || echo "route add $(addr "$j")/32 dev to-$(nm "$j") src $h"
            done
            for ((j = 0; j < N; j++)); do # routes to the hosts only (a switch's address is a next hop)
                k=${NX[i * NODES + j]}
                [ "$j" != "$i" ] && [ "${NB[i * NODES + j]}" = 0 ] || continue
                echo "route add $(addr "$j")/32 via $(addr "$k") dev to-$(nm "$k") onlink src $h"
            done
        } | ip -n "tacos-$(nm "$i")" -batch - || return 1
        # shellcheck disable=SC2016
        ip netns exec "tacos-$(nm "$i")" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward &&
            for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 >"$f"; done &&
            { [ ! -e /proc/sys/net/ipv6 ] || echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6; }' || return 1
    done
    for ((k = 0; k < E; k++)); do
        a=$(nm "${LA[k]}") b=$(nm "${LB[k]}") r=${LR[k]}
        # shellcheck disable=SC2086
        tc -n "tacos-$a" qdisc add dev "to-$b" root tbf rate "${r}mbit" $TBF &&
            tc -n "tacos-$b" qdisc add dev "to-$a" root tbf rate "${r}mbit" $TBF || return 1
    done
}

run() {
    local i t cpid rc OUT_TMP=""
    [ $# -ge 1 ] || usage "no shape"
    SHAPE=$1 RANKS=1 OUT=""
    shift
    while [ $# -gt 0 ]; do
        case $1 in
        -r) [ $# -ge 2 ] || usage "-r needs RANKS"; RANKS=$2; shift 2 ;;
        -o) [ $# -ge 2 ] || usage "-o needs OUTDIR"; OUT=$2; shift 2 ;;
        --) shift; break ;;
        -*) usage "unknown option $1" ;;
        *) break ;;
        esac
    done
    [ $# -ge 1 ] || usage "no COMMAND"
    parse_shape "$SHAPE"
    frames
    [[ $RANKS =~ ^[0-9]+(,[0-9]+)*$ ]] || die 2 "bad ranks '$RANKS': a number or a comma list of numbers"
    IFS=, read -r -a RK <<<"$RANKS"
    if [ "${#RK[@]}" = 1 ]; then for ((i = 1; i < N; i++)); do RK[i]=${RK[0]}; done; fi
    [ "${#RK[@]}" = "$N" ] || die 2 "bad ranks '$RANKS': ${#RK[@]} values for $N hosts"
    for ((i = 0; i < N; i++)); do
        RK[i]=$((10#${RK[i]}))
        ((RK[i] >= 1 && RK[i] <= 64)) || die 2 "bad ranks '$RANKS': each must be 1..64"
    done
    routes
    case $OUT in "" | /*) ;; *) OUT=$PWD/$OUT ;; esac
    [[ $OUT =~ ^[A-Za-z0-9_./+-]*$ ]] || die 2 "OUTDIR '$OUT': only letters, digits and _./+- please"

    [ "$(id -u)" = 0 ] || skip "needs root (network namespaces, unshare --uts)"
    for t in ip tc unshare mpirun; do command -v "$t" >/dev/null || skip "$t not found"; done
    [ -z "$(our_ns)" ] || die 1 "a testbed already exists (namespaces: $(our_ns | paste -sd' ')); remove it with: $0 down"
    if ! t=$(ip netns add tacos-head 2>&1); then # the first namespace: ours from here on
        [ -z "$(our_ns)" ] || die 1 "another testbed is starting; remove it with: $0 down"
        skip "ip netns add failed: $(echo "$t" | head -1)"
    fi
    trap 'trap - EXIT INT TERM HUP; trap "" PIPE; teardown; [ -z "$OUT_TMP" ] || rm -rf "$OUT_TMP"' EXIT
    trap 'echo "testbed.sh: interrupted" >&2; exit 130' INT
    trap 'echo "testbed.sh: terminated" >&2; exit 143' TERM
    trap 'echo "testbed.sh: hung up" >&2; exit 129' HUP
    trap 'exit 141' PIPE # its output's reader gone (e.g. "| head")
    if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/testbed.XXXXXX) || die 1 "mktemp failed"; OUT_TMP=$OUT; fi
    mkdir -p "$OUT" || die 1 "cannot create $OUT"

    write_files
    setup || die 1 "set-up failed"
    rm -f "$OUT/.err"
    export TESTBED_DIR=$OUT TESTBED_NP=$NP TESTBED_HOSTS=$N TESTBED_TOPO=$OUT/topology.json
    TESTBED_FABRIC="" # Slurm's topology.conf where the shape has one
    [ -f "$OUT/topology.conf" ] && TESTBED_FABRIC=$OUT/topology.conf
    export TESTBED_FABRIC
    export TESTBED_MPIRUN="mpirun --allow-run-as-root --oversubscribe --hostfile $OUT/hostfile -np $NP \
--map-by slot --bind-to none --mca plm_rsh_agent $OUT/agent --mca plm_rsh_no_tree_spawn 1 \
--mca oob_tcp_if_include $MGMT_NET --mca pml ob1 --mca btl self,vader,tcp --mca btl_tcp_if_include $HOST_NET \
--mca mpi_yield_when_idle 1"
    # MPICH's hydra: the same agent; UCX over TCP on the host address (its
    # shared memory would join namespaces of one machine), so one rank per
    # host is what this emulates faithfully under MPICH
    export TESTBED_MPIEXEC="mpiexec.mpich -launcher ssh -launcher-exec $OUT/agent -iface br0 \
-hosts $(sed 's/ slots=/:/' "$OUT/hostfile" | paste -sd,) -n $NP -env UCX_TLS tcp,self -env UCX_NET_DEVICES ha"
    # in the background so that a signal runs its trap at once; keep stdin
    { exec 3<&0; } 2>/dev/null || exec 3</dev/null
    ip netns exec tacos-head "$@" <&3 &
    cpid=$!
    wait "$cpid"
    rc=$?
    exit "$rc"
}

case ${1:-} in
run) shift; run "$@" ;;
down) [ "$(id -u)" = 0 ] || die 1 "needs root"; teardown ;;
shapes) shapes ;;
*) usage ;;
esac
