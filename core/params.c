/* SPDX-License-Identifier: BSD-3-Clause */
/* The table of every parameter (params.h) and what both bindings do with it. */
#include "params.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tacos_probe.h" /* TACOS_FABRIC_INFER_HOSTS */

#define STR_(x) #x
#define STR(x) STR_(x)

const tacos_param_t tacos_params[TACOS_NPARAMS] = {
    [TACOS_P_ENABLE] = {"enable", TACOS_PT_BOOL, 1, NULL, 0, 1, 1, 1, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, enable),
        "Run collectives through coll/tacos schedules. false: every call goes to the "
         "previous component, except a nonblocking call of 64 KiB or more made before the "
         "communicator's first blocking collective, persistent initialization or "
         "MPI_Barrier: it agrees with the other ranks in its request first, then runs "
         "coll/tacos's textbook program (Open MPI) or MPICH's own (MPICH) on every rank, "
         "since every rank must run the same program before the ranks have compared their "
         "settings"},
    [TACOS_P_PRIORITY] = {"priority", TACOS_PT_INT, 35, NULL, -2147483647, 2147483647, 1, 0, TACOS_PB_OMPI, 5,
        -1,
        "Selection priority among Open MPI's coll components (tuned's is 30); 0 or less: "
         "never selected. Not checked: a communicator where only some ranks select "
         "coll/tacos (this, or --mca coll, differing) hangs at its first collective, as "
         "with any coll component"},
    [TACOS_P_VERBOSE] = {"verbose", TACOS_PT_INT, 0, NULL, 0, 100, 0, 0, TACOS_PB_BOTH, 2,
        offsetof(tacos_settings_t, verbose),
        "Verbosity: 0 errors and fall-backs of a whole communicator only; 1 also why "
         "ranks disagreed; 5 also the topology and each schedule synthesized with its "
         "modelled time (on rank 0 also the throughput-optimal time, slow to compute at "
         "hundreds of ranks); 10 also each call: a line of prose (collective, bytes, "
         "schedule or fall-back and why) and its event (docs/troubleshooting.md)"},
    [TACOS_P_MIN_BYTES] = {"min_bytes", TACOS_PT_INT, 65536, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, min_bytes),
        "Collectives whose whole buffer is smaller than this many bytes go to the "
         "previous component (MPI_Bcast, MPI_Reduce, MPI_Gather and MPI_Scatter have "
         "their own thresholds); where coll/tacos is the only coll component and "
         "v_schedules is on, also MPI_Alltoallv and MPI_Alltoallw (by the largest send "
         "buffer of any rank)"},
    [TACOS_P_ROOTED_MIN_BYTES] = {"rooted_min_bytes", TACOS_PT_INT, 4194304, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 5,
        offsetof(tacos_settings_t, rooted_min_bytes),
        "Like min_bytes, for MPI_Bcast and MPI_Reduce on communicators within one host "
         "(rooted_net_min_bytes: on those that span hosts)"},
    [TACOS_P_ROOTED_NET_MIN_BYTES] = {"rooted_net_min_bytes", TACOS_PT_INT, 131072, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 5,
        offsetof(tacos_settings_t, rooted_net_min_bytes),
        "Like min_bytes, for MPI_Bcast and MPI_Reduce on communicators that span hosts "
         "(as the MPI library's locality tells)"},
    [TACOS_P_GATHER_MIN_BYTES] = {"gather_min_bytes", TACOS_PT_INT, 524288, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 5,
        offsetof(tacos_settings_t, gather_min_bytes),
        "Like min_bytes, for MPI_Gather and MPI_Scatter (by the root's whole buffer) "
         "where coll/tacos serves them: on communicators that span hosts, or where "
         "coll/tacos is the only coll component (then also MPI_Gatherv and MPI_Scatterv "
         "with v_schedules on); below it: the previous component or the textbook program"},
    [TACOS_P_DETERMINISTIC] = {"deterministic", TACOS_PT_BOOL, 1, NULL, 0, 1, 0, 1, TACOS_PB_BOTH, 3,
        offsetof(tacos_settings_t, deterministic),
        "Combine the contributions arriving for a chunk in the schedule's fixed order: a "
         "floating-point reduction that runs a schedule gives the same bits in every run "
         "with the same topology, settings, rank count and call (calls that fall back get "
         "the previous component's order). false: in arrival order, which waits less "
         "where contributions arrive unevenly; the last bits may differ between runs"},
    [TACOS_P_TOPO_FILE] = {"topo_file", TACOS_PT_STRING, 0, NULL, 0, 0, 1, 1, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, topo_file),
        "Topology JSON file (the format tacos-synth reads) of the links between the "
         "communicator's ranks, rank i = NPU i; its NPU count must equal the "
         "communicator's size (otherwise: an error message and the fall-back). Empty: "
         "the topology is probed (hwloc, UCX) and, across hosts, measured (probe, measure)"},
    [TACOS_P_FABRIC_FILE] = {"fabric_file", TACOS_PT_STRING, 0, NULL, 0, 0, 1, 1, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, fabric_file),
        "Slurm topology.conf (tree plugin: SwitchName with Switches= or Nodes=) or "
         "topology.yaml (its cluster_default tree) of the switches between hosts. A communicator that spans hosts takes its switch tree "
         "from it, each host on the leaf that lists its name, and measures only each "
         "level's rate and latency (a few rounds of exchanges whatever the number of "
         "hosts; with measure 1 kept for later communicators over the same hosts). A "
         "file that cannot be read, differs between ranks, or lacks a host: "
         "one message and the measurement as without it. Empty: the network between "
         "hosts is measured (measure). A topo_file overrides it"},
    [TACOS_P_CHUNKS] = {"chunks", TACOS_PT_INT, 0, NULL, 0, 2147483647, 1, 1, TACOS_PB_BOTH, 5,
        offsetof(tacos_settings_t, chunks),
        "Chunks per rank the buffer is cut into for pipelining. 0: automatic: 1, 2, 4 "
         "and 8 are synthesized in turn until one is more than 10% slower than the best "
         "so far, then 16 and 32 while each is the fastest so far, and the schedule the "
         "topology model times fastest for the call's size class is kept"},
    [TACOS_P_CHUNKS_PER_MESSAGE] = {"chunks_per_message", TACOS_PT_INT, 1, NULL, 1, TACOS_MAX_CHUNKS_PER_MSG, 1, 1, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, chunks_per_message),
        "The most chunks one message may carry. Above 1, a schedule of All-Gather, "
         "Reduce-Scatter, All-Reduce, Broadcast or Reduce may send several "
         "chunks that take a link at the same time as one message, one latency for all "
         "(the sender packs them, the receiver lands each); it is also synthesized with one "
         "chunk per message and the one the topology model times faster is kept. In levels "
         "(coll_tacos_hierarchy 1 and 2) each level of a rank's part is synthesized so; "
         "the whole composition (tacos-synth --hierarchy levels without --part) keeps one "
         "chunk per message. Off (1) by default: packed messages past the transport's "
         "eager limit wait for a rendezvous, which the model does not see"},
    [TACOS_P_MESSAGE_BYTES] = {"message_bytes", TACOS_PT_INT, TACOS_MSG_BYTES_DEFAULT, NULL, 0, 2147483647, 1, 1, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, message_bytes),
        "With chunks_per_message above 1: the most bytes one message of several chunks "
         "carries; a schedule packs only as many chunks as fit (one at least). Keep it "
         "below the transport's eager limit less its headers (Open MPI's shared memory: "
         "btl_vader_eager_limit, 4096 bytes; TCP: btl_tcp_eager_limit, 65536): a packed "
         "message past it waits for the receiver's clear-to-send, which the topology "
         "model does not see. 0: no limit"},
    [TACOS_P_UNWIND_DEGREE] = {"unwind_degree", TACOS_PT_INT, 0, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, unwind_degree),
        "Switch unwinding degree d: the topology's switches (a host's shared memory, an "
         "NVSwitch fabric, the network) become point-to-point links from each member to "
         "the next d members, each with 1/d of the bandwidth (in a switch tree, each lowered link "
         "a max-min fair share of the ports on its path). 0: automatic, d = "
         "members - 1 for shared memory and NVSwitch, for a network switch 1 (a ring) up to 8 "
         "hosts and 8 beyond, and in a "
         "switch tree (a fabric file or an inferred tree) each switch's groups (hosts, or "
         "the hosts under a child switch) each joined to the next min(groups - 1, 8); "
         "where that leaves a switch with fewer links, sizes whose chunks cross the switch "
         "sooner on it fully unwound (every member joined to every other: a hop less for "
         "small chunks) are synthesized on that lowering instead"},
    [TACOS_P_HIERARCHY] = {"hierarchy", TACOS_PT_INT, 2, NULL, 0, 2, 1, 1, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, hierarchy),
        "How All-Gather, Reduce-Scatter and All-Reduce schedules are synthesized. 0: flat, "
         "over the whole topology at once. 1: in levels where the topology has them (groups "
         "of equal size joined by links faster than the slowest, such as the ranks of a "
         "host, and rails, the i-th rank of every group), each level on its own links: "
         "All-Reduce within the groups, across them on each rail, within the groups again; "
         "All-Gather on the rails, then within the groups; Reduce-Scatter within the "
         "groups, then on the rails; flat where it has none and for the other collectives. "
         "Each rank synthesizes only its own group's and rail's levels (and the first "
         "group's and rail's, whose levels one after the other are the time by which every "
         "rank picks the same chunk count) and builds its program from its own part; "
         "dump_dir then writes no such schedule. 2 (the default): the rank's part in "
         "levels against the flat schedule, the one the topology model times faster kept "
         "(the part timed as its levels one after the other, and flat's chunk count not "
         "searched past 1 where flat at 1 models over 1.1 times the part; the same on every rank; a "
         "part kept is not dumped, and schedule_dir keeps only its choice); flat is tried only on "
         "communicators of fewer than 512 ranks, above which its synthesis costs seconds "
         "per size class"},
    [TACOS_P_SEED] = {"seed", TACOS_PT_INT, 1, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, seed),
        "Seed of the synthesis' pseudo-random number generator"},
    [TACOS_P_TRIALS] = {"trials", TACOS_PT_INT, 1, NULL, 1, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, trials),
        "Independent synthesis seeds tried per schedule; the fastest schedule is kept"},
    [TACOS_P_REUSE_PERCENT] = {"reuse_percent", TACOS_PT_INT, 2, NULL, 0, 100, 1, 1, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, reuse_percent),
        "Size classes share a schedule where chunks are large: a class is served by the "
         "smallest class at which every link's latency is at most this percent of its "
         "time to carry one chunk (at the largest chunk count the settings allow), where "
         "that is smaller, whose schedule it shares instead of synthesizing its own (every "
         "link's cost, and any schedule's modelled time, then scale alike between them: "
         "docs/synthesis.md). Depends on the topology and settings only, not on which "
         "calls came first. 0: every size class synthesized"},
    [TACOS_P_PROBE] = {"probe", TACOS_PT_BOOL, 1, NULL, 0, 1, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, probe),
        "Learn the links between ranks at the first collective with hwloc (packages, "
         "NUMA nodes, GPUs, NVLink, NICs) and UCX (transport latency and bandwidth). "
         "false: the default model (a shared-memory switch per host, a network switch per "
         "local rank index, fixed figures)"},
    [TACOS_P_PROBE_HWLOC_XML] = {"probe_hwloc_xml", TACOS_PT_STRING, 0, NULL, 0, 0, 0, 0, TACOS_PB_BOTH, 8,
        offsetof(tacos_settings_t, probe_hwloc_xml),
        "Read this process's machine from this hwloc XML export (lstopo --of xml) "
         "instead of discovering it; empty: discover this machine"},
    [TACOS_P_PROBE_GPU] = {"probe_gpu", TACOS_PT_BOOL, 0, NULL, 0, 1, 0, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, probe_gpu),
        "Model each rank's GPU (the local rank's device, honouring CUDA_VISIBLE_DEVICES) "
         "and its NVLink and NVSwitch links. false: no GPU in the model; the ranks of a "
         "host are joined by shared memory"},
    [TACOS_P_UCX_LIB] = {"ucx_lib", TACOS_PT_STRING, 0, "libuct.so.0", 0, 0, 0, 0, TACOS_PB_BOTH, 7,
        offsetof(tacos_settings_t, ucx_lib),
        "The UCT library loaded (dlopen) to read transport latency and bandwidth; empty: "
         "UCX is not asked and the default figures stay"},
    [TACOS_P_CALIBRATE] = {"calibrate", TACOS_PT_BOOL, 0, NULL, 0, 1, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, calibrate),
        "At the first collective, time ping-pongs of 8 B and 1 MiB between two ranks of "
         "one host and between two hosts; the measured latency and bandwidth replace the "
         "probed ones"},
    [TACOS_P_MEASURE] = {"measure", TACOS_PT_INT, 1, NULL, 0, 2, 1, 0, TACOS_PB_BOTH, 5,
        offsetof(tacos_settings_t, measure),
        "Links between hosts when a communicator spans several. 1: measure them (one "
         "rank per host exchanges messages with the others) at the first collective that "
         "needs the topology, and reuse the result for later communicators over the same "
         "hosts in this job (over more than infer_hosts hosts: infer their leaf switches "
         "and measure each level's rate, kept the same way); 2: measure again for every "
         "communicator; 0: never (the probed figures: one network switch). A topo_file "
         "overrides it; with a fabric_file it only says whether the rates measured on its "
         "tree are kept (1)"},
    [TACOS_P_INFER_HOSTS] = {"infer_hosts", TACOS_PT_INT, TACOS_FABRIC_INFER_HOSTS, NULL, 1,
        TACOS_FABRIC_INFER_MAX_HOSTS, 1, 0, TACOS_PB_BOTH, 5, offsetof(tacos_settings_t, infer_hosts),
        "Over more than this many hosts (and no fabric_file), the measurement between "
         "hosts infers their switch tree: which hosts share a leaf switch, and each "
         "level's rate, in rounds of disjoint exchanges. Up to it, every pair of hosts is "
         "measured (rounds that grow with the hosts) and tested for shared paths where "
         "the tests fit (about 8 hosts; above, every pair becomes a link), which finds "
         "direct links and relays of any shape but cannot describe a leaf's uplink. 1: "
         "infer on every communicator that spans hosts"},
    [TACOS_P_CACHE_SIZE] = {"cache_size", TACOS_PT_INT, 32, NULL, 1, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, cache_size),
        "Schedules kept per communicator, one per (collective, root, power-of-two size "
         "class) used; beyond it the oldest is dropped, and synthesized again when needed"},
    [TACOS_P_SCHEDULE_DIR] = {"schedule_dir", TACOS_PT_STRING, 0, NULL, 0, 0, 0, 0, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, schedule_dir),
        "Directory (created if missing) that keeps schedules between jobs: the first "
         "call of a collective, root and size class reads the schedule synthesized for "
         "the same topology, library build and synthesis settings there instead of "
         "synthesizing it, and rank 0 writes each one it synthesizes (to a temporary "
         "file, then renamed: jobs on any host may share the directory, which must be one "
         "every rank sees). Files are checked on reading (key, checksum, validation on the "
         "communicator's topology); one that fails is said and replaced. Of a rank's own "
         "part in levels (hierarchy 1 and 2) only the choice is kept, its chunk count and "
         "modelled time: each rank makes its part again at that count, without the search "
         "over counts (nor, with 2, the flat schedule it was compared with), and one whose "
         "time differs synthesizes as if none were kept. tacos-synth --schedule-dir fills "
         "it. Empty: off"},
    [TACOS_P_NONBLOCKING] = {"nonblocking", TACOS_PT_BOOL, 1, NULL, 0, 1, 1, 0, TACOS_PB_BOTH, 5,
        offsetof(tacos_settings_t, nonblocking),
        "Run nonblocking collectives (MPI_Iallreduce and the like) and persistent ones "
         "(MPI_Allreduce_init and the like; MPIX_Allreduce_init and the like on Open MPI "
         "4.1) through schedules too: a persistent call plans its size at initialization, "
         "a nonblocking one runs where its size is planned already. false: they go to the "
         "previous component (Open MPI: libnbc)"},
    [TACOS_P_V_SCHEDULES] = {"v_schedules", TACOS_PT_BOOL, 0, NULL, 0, 1, 1, 1, TACOS_PB_OMPI, 6,
        offsetof(tacos_settings_t, v_schedules),
        "Where coll/tacos is the only coll component: run blocking MPI_Gatherv, "
         "MPI_Scatterv, MPI_Alltoallv and MPI_Alltoallw through the Gather, Scatter and "
         "All-to-All schedules with blocks of the call's sizes. false: their textbook "
         "programs. Each such call first allgathers the block sizes, so it pays only "
         "where schedules forward blocks through other ranks (links without routing, "
         "e.g. GPU meshes)"},
    [TACOS_P_NET_PIECE_BYTES] = {"net_piece_bytes", TACOS_PT_INT, -1, NULL, -1, 2147483647, 1, 0, TACOS_PB_OMPI, 6,
        -1,
        "The largest message coll/tacos sends to a rank on another host; longer ones go "
         "as several messages of at most this size. -1: Open MPI's TCP eager limit "
         "(btl_tcp_eager_limit) less 256 bytes of headers when the PML is ob1 and the TCP "
         "BTL is loaded, else no limit (over TCP a message above the eager limit waits "
         "for the receiver's clear-to-send, which queues behind the data sent the other "
         "way on the same connection). 0: no limit"},
    [TACOS_P_SCRATCH_MAX_BYTES] = {"scratch_max_bytes", TACOS_PT_SIZE, 268435456, NULL, 0, (long long)(SIZE_MAX >> 1), 0, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, scratch_max),
        "Scratch memory (work buffers, space for arriving reductions) the communicators "
         "of a process keep between calls, in total; a call that finds the total above "
         "it frees its communicator's scratch when it returns"},
    [TACOS_P_DUMP_DIR] = {"dump_dir", TACOS_PT_STRING, 0, NULL, 0, 0, 0, 0, TACOS_PB_BOTH, 8,
        offsetof(tacos_settings_t, dump_dir),
        "Directory (created if missing) where rank 0 of each communicator writes the "
         "topology (and its switches fully unwound, which small sizes use, where that "
         "differs) and every schedule it synthesizes as JSON (for tacos-synth --validate "
         "and --simulate), and every rank its probe record (tacos-commN-probe.json); "
         "empty: off"},
    [TACOS_P_CUDA] = {"cuda", TACOS_PT_BOOL, 1, NULL, 0, 1, 0, 0, TACOS_PB_BOTH, 5,
        -1,
        "Look for GPU (CUDA) buffers in each call: builds --with-cuda load the CUDA "
         "driver (libcuda.so.1) at the first collective (without CUDA, a driver or a "
         "device, every buffer is host memory). GPU buffers go through the schedules "
         "staged chunk by chunk through pinned host memory, with reductions on the GPU; "
         "what that cannot serve goes through host copies of the whole buffers. false: "
         "buffers are never looked at (device pointers reach the previous component as "
         "they are)"},
    [TACOS_P_STAGE] = {"stage", TACOS_PT_INT, 0, NULL, 0, 3, 0, 1, TACOS_PB_BOTH, 9,
        -1,
        "Testing the GPU path without a GPU. 0: off; 1: host buffers go through the "
         "executor's staging as GPU buffers do; 2: every buffer is taken for a GPU's "
         "(host memory underneath), so calls that GPU buffers cannot take through a "
         "schedule run on copies of their buffers; 3: as 1, with staging memory the "
         "ranks of a host map from each other (memfd) as CUDA IPC maps GPU memory, so "
         "calls from cuda_ipc_min_bytes (set it: without CUDA it is -1) take the IPC "
         "path. 1 and 2 change no message; 3 takes IPC only where every rank agrees"},
    [TACOS_P_STAGE_MIN_BYTES] = {"stage_min_bytes", TACOS_PT_SIZE, 2097152, NULL, 0, (long long)(SIZE_MAX >> 1), 0, 1, TACOS_PB_BOTH, 5,
        -1,
        "GPU buffers: calls on fewer bytes than this go through host copies of their "
         "whole buffers (one copy in, one back) instead of the schedule staged chunk by "
         "chunk, where each message waits for a copy or a reduction on the GPU. The host "
         "copies run the same collective: no message changes"},
    [TACOS_P_CUDA_IPC_MIN_BYTES] = {"cuda_ipc_min_bytes", TACOS_PT_INT, TACOS_IPC_MIN_BYTES_DEFAULT, NULL, -1, 2147483647, 1, 1, TACOS_PB_BOTH, 5,
        offsetof(tacos_settings_t, cuda_ipc_min_bytes),
        "GPU buffers: collectives of at least this many bytes whose schedule every rank "
         "stages through CUDA read the staged chunks of the other ranks of their host "
         "from those ranks' GPU memory (CUDA IPC: one device copy instead of a copy to "
         "pinned host memory, a message and a copy back); between hosts they stay "
         "staged. -1: never. Before such a call the ranks agree that every one stages it "
         "(blocking calls: an 8-byte allreduce, also on host buffers; nonblocking and "
         "persistent ones: a one-byte dissemination at their (first) start), and at the "
         "first yes on a communicator test that each can map the memory of the others of "
         "its host (peer access needed; refused under MIG and between containers): where "
         "one cannot, that communicator stays staged. Nonblocking calls take IPC only on "
         "a communicator that a blocking collective has tested",
        STR(TACOS_IPC_MIN_BYTES_CUDA) " (built --with-cuda), -1 (without CUDA)"},
};

void tacos_params_default(tacos_param_value_t *v)
{
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        memset(&v[i], 0, sizeof v[i]);
        if (p->type == TACOS_PT_INT)
            v[i].i = (int)p->def;
        else if (p->type == TACOS_PT_BOOL)
            v[i].b = p->def != 0;
        else if (p->type == TACOS_PT_SIZE)
            v[i].z = (size_t)p->def;
        else
            v[i].s = (char *)p->def_string;
    }
}

tacos_settings_t tacos_settings_default(void)
{
    tacos_param_value_t v[TACOS_NPARAMS];
    tacos_settings_t s = {.previous = "the previous component"};
    tacos_params_default(v);
    tacos_params_settings(v, &s);
    return s;
}

int tacos_param_parse(int i, const char *text, tacos_param_value_t *v, char *err, size_t n)
{
    const tacos_param_t *p = &tacos_params[i];
    if (p->type == TACOS_PT_STRING) {
        v->s = (char *)text;
        return 0;
    }
    if (p->type == TACOS_PT_BOOL) {
        static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
        for (int k = 0; k < 4; k++) {
            if (!strcmp(text, yes[k]) || !strcmp(text, no[k])) {
                v->b = !strcmp(text, yes[k]);
                return 0;
            }
        }
        snprintf(err, n, "not 1/true/yes/on or 0/false/no/off");
        return -1;
    }
    char *end;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (errno || end == text || *end || x < p->lo || x > p->hi) {
        snprintf(err, n, "not an integer from %lld to %lld", p->lo, p->hi);
        return -1;
    }
    if (p->type == TACOS_PT_INT)
        v->i = (int)x;
    else
        v->z = (size_t)x;
    return 0;
}

void tacos_param_help(int i, char *buf, size_t n)
{
    const tacos_param_t *p = &tacos_params[i];
    snprintf(buf, n, "%s.%s%s", p->help, p->all_equal ? " Must be equal on all ranks." : "",
             p->settable ? " Writable through MPI_T, read when a communicator is created." : "");
}

void tacos_param_format(int i, const tacos_param_value_t *v, char *buf, size_t n)
{
    switch (tacos_params[i].type) {
    case TACOS_PT_INT:
        snprintf(buf, n, "%d", v->i);
        break;
    case TACOS_PT_BOOL:
        snprintf(buf, n, "%d", v->b ? 1 : 0);
        break;
    case TACOS_PT_SIZE:
        snprintf(buf, n, "%zu", v->z);
        break;
    default:
        snprintf(buf, n, "%s", v->s ? v->s : "");
    }
}

void tacos_params_settings(const tacos_param_value_t *v, tacos_settings_t *s)
{
    for (int i = 0; i < TACOS_NPARAMS; i++) {
        const tacos_param_t *p = &tacos_params[i];
        if (p->field < 0)
            continue;
        char *at = (char *)s + p->field;
        if (p->type == TACOS_PT_INT)
            *(int *)at = v[i].i;
        else if (p->type == TACOS_PT_BOOL)
            *(int *)at = v[i].b;
        else if (p->type == TACOS_PT_SIZE)
            *(size_t *)at = v[i].z;
        else
            *(const char **)at = v[i].s;
    }
}
