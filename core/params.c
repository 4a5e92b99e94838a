/* The table of every parameter (params.h) and what both bindings do with it. */
#include "params.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tacos_param_t tacos_params[TACOS_NPARAMS] = {
    [TACOS_P_ENABLE] = {"enable", TACOS_PT_BOOL, 1, NULL, 0, 1, 1, 1, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, enable),
        "Run collectives through coll/tacos schedules (default true); false: every call "
         "goes to the previous component. Writable at run time through MPI_T "
         "(MPI_T_cvar_write): communicators created afterwards see the new value, e.g. "
         "to compare with the other components in one job. Like every parameter that "
         "decides which messages a rank sends, it must be equal on all ranks of a "
         "communicator: they check at its first collective, and fall back with one "
         "message naming the parameters that differ"},
    [TACOS_P_PRIORITY] = {"priority", TACOS_PT_INT, 35, NULL, -2147483647, 2147483647, 1, 0, TACOS_PB_OMPI, 1,
        -1,
        "Priority of coll/tacos among the coll components (default 35, above tuned's "
         "30); 0 or less never selects it. Must be equal on all ranks, as must the coll "
         "selection itself (--mca coll): a communicator where only some ranks have "
         "coll/tacos hangs at its first collective, as with any coll component"},
    [TACOS_P_VERBOSE] = {"verbose", TACOS_PT_INT, 0, NULL, 0, 100, 0, 0, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, verbose),
        "Verbosity: 1 errors and fallbacks of a whole communicator, 5 the topology and "
         "each schedule synthesized (modelled time and, on rank 0, the "
         "throughput-optimal time, which costs up to seconds at hundreds of ranks), 10 "
         "one line per call (collective, bytes, schedule or fallback and why)"},
    [TACOS_P_MIN_BYTES] = {"min_bytes", TACOS_PT_INT, 65536, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, min_bytes),
        "Collectives whose whole buffer is smaller than this many bytes go to the "
         "previous component (default 65536: below it the per-call cost of a schedule "
         "exceeds what a better route saves on one host; see README Performance); where "
         "coll/tacos is the only component and coll_tacos_v_schedules is on, also "
         "MPI_Alltoallv and MPI_Alltoallw (the largest send buffer of any rank)"},
    [TACOS_P_ROOTED_MIN_BYTES] = {"rooted_min_bytes", TACOS_PT_INT, 4194304, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, rooted_min_bytes),
        "Like min_bytes, for MPI_Bcast and MPI_Reduce (default 4194304: measured on one "
         "host, their schedules match tuned's trees only from about 4 MiB); see "
         "rooted_net_min_bytes for communicators that span hosts"},
    [TACOS_P_ROOTED_NET_MIN_BYTES] = {"rooted_net_min_bytes", TACOS_PT_INT, 131072, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, rooted_net_min_bytes),
        "Like rooted_min_bytes, for MPI_Bcast and MPI_Reduce on communicators that span "
         "hosts (Open MPI's locality) (default 131072: from there their schedules took "
         "0.11-0.58 of tuned's time on the emulated cluster's meshes and rings, "
         "0.24-1.08 over one link; README Performance)"},
    [TACOS_P_GATHER_MIN_BYTES] = {"gather_min_bytes", TACOS_PT_INT, 524288, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, gather_min_bytes),
        "Like min_bytes, for MPI_Gather and MPI_Scatter (the root's whole buffer) where "
         "coll/tacos serves them: on communicators that span hosts, or with coll/tacos "
         "the only component (then also MPI_Gatherv and MPI_Scatterv with "
         "coll_tacos_v_schedules on); below it the previous component or the textbook "
         "program (default 524288: on the emulated cluster the schedules beat tuned on "
         "every shape from 512 KiB, mixed below)"},
    [TACOS_P_DETERMINISTIC] = {"deterministic", TACOS_PT_BOOL, 1, NULL, 0, 1, 0, 1, TACOS_PB_BOTH, 1,
        offsetof(tacos_settings_t, deterministic),
        "Combine the contributions arriving for a chunk in the schedule's fixed order: "
         "a floating-point reduction that runs a schedule gives the same bits in every "
         "run for the same topology, settings, rank count and call (default true; what "
         "falls back gets the previous component's order: README, Reductions' order). "
         "false: in arrival order, which waits less where contributions arrive unevenly, "
         "but whose last bits may change from run to run. Writable through MPI_T: read "
         "when a communicator is created"},
    [TACOS_P_TOPO_FILE] = {"topo_file", TACOS_PT_STRING, 0, NULL, 0, 0, 1, 1, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, topo_file),
        "Topology JSON file (the format tacos-synth reads) describing the links between "
         "the communicator's ranks, rank i = NPU i; its NPU count must equal the "
         "communicator size (else: error message and fallback). Empty (default): the "
         "topology probed with hwloc and UCX and, across hosts, measured (see probe, "
         "measure). Writable through MPI_T: read when a communicator is created"},
    [TACOS_P_CHUNKS] = {"chunks", TACOS_PT_INT, 0, NULL, 0, 2147483647, 1, 1, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, chunks),
        "Chunks per rank the buffer is cut into for pipelining; 0 = automatic: of 1, 2, "
         "4 and 8, the one whose synthesized schedule the topology model times fastest "
         "for the call's size class. Writable through MPI_T: read when a communicator is "
         "created"},
    [TACOS_P_UNWIND_DEGREE] = {"unwind_degree", TACOS_PT_INT, 0, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, unwind_degree),
        "Switch unwinding degree d used to turn the topology's switches (a host's "
         "shared memory, an NVSwitch fabric, the network) into point-to-point links "
         "(each member to the next d members, each link 1/d of the bandwidth). 0 "
         "(default) = automatic: d = members-1 for shared memory and NVSwitch, where "
         "every pair is equally close, and 1 for the network switches"},
    [TACOS_P_SEED] = {"seed", TACOS_PT_INT, 1, NULL, 0, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, seed),
        "Seed of the synthesis PRNG (every rank must use the same; default 1)"},
    [TACOS_P_TRIALS] = {"trials", TACOS_PT_INT, 1, NULL, 1, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, trials),
        "Independent synthesis seeds tried per schedule, fastest kept (default 1)"},
    [TACOS_P_PROBE] = {"probe", TACOS_PT_BOOL, 1, NULL, 0, 1, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, probe),
        "Learn the links between ranks with hwloc (packages, NUMA, GPUs, NVLink, NICs) "
         "and UCX (transport latency and bandwidth) at the first collective (default "
         "true); false: the default model (a shared-memory switch per host, a network "
         "switch per local rank index, fixed figures; README Topology probing)"},
    [TACOS_P_PROBE_HWLOC_XML] = {"probe_hwloc_xml", TACOS_PT_STRING, 0, NULL, 0, 0, 0, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, probe_hwloc_xml),
        "Read this process's machine from this hwloc XML export (lstopo --of xml) "
         "instead of discovering it; empty (default): discover this machine"},
    [TACOS_P_PROBE_GPU] = {"probe_gpu", TACOS_PT_BOOL, 0, NULL, 0, 1, 0, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, probe_gpu),
        "Model each rank's GPU (local rank's device, honouring CUDA_VISIBLE_DEVICES) "
         "and its NVLink/NVSwitch links (default false: this build moves host buffers, "
         "which travel through shared memory whatever GPUs the host has)"},
    [TACOS_P_UCX_LIB] = {"ucx_lib", TACOS_PT_STRING, 0, "libuct.so.0", 0, 0, 0, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, ucx_lib),
        "The UCT library loaded (dlopen) to read transport latency and bandwidth "
         "(default libuct.so.0); empty: do not ask UCX, keep the default figures"},
    [TACOS_P_CALIBRATE] = {"calibrate", TACOS_PT_BOOL, 0, NULL, 0, 1, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, calibrate),
        "At the first collective, time ping-pongs of 8 B and 1 MiB between two ranks of "
         "one host and between two hosts; the measured latency and bandwidth replace the "
         "probed ones (default false)"},
    [TACOS_P_MEASURE] = {"measure", TACOS_PT_INT, 1, NULL, 0, 2, 1, 0, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, measure),
        "Links between hosts when a communicator spans several: 1 (default) measure "
         "every pair of hosts at the first collective that needs the topology (one rank "
         "per host, H-1 parallel rounds of 8 B and 128 KiB exchanges, then one of about "
         "10 ms per pair whose 128 KiB took less than 9 ms, again where it stalled or "
         "where another pair of its round may have shared its link, then concurrent "
         "exchanges that tell links from paths through another host, triples without a "
         "host in common at once; 0.05-0.14 s at 4 hosts, 0.4 s at 6 and 0.75 s at 7 "
         "joined by one, on 100-400 Mbit/s links; above about 7 hosts' worth of tests "
         "every pair becomes a link), reused by later communicators over the same hosts "
         "in this job; 2 measure again for every communicator; 0 never (the probed "
         "figures: one network switch). A topology file overrides it"},
    [TACOS_P_CACHE_SIZE] = {"cache_size", TACOS_PT_INT, 32, NULL, 1, 2147483647, 1, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, cache_size),
        "Schedules kept per communicator, one per (collective, root, power-of-two size "
         "class) used; beyond it the oldest is dropped and synthesized again when needed "
         "(default 32). Must be equal on all ranks"},
    [TACOS_P_NONBLOCKING] = {"nonblocking", TACOS_PT_BOOL, 1, NULL, 0, 1, 1, 0, TACOS_PB_BOTH, 4,
        offsetof(tacos_settings_t, nonblocking),
        "Run nonblocking (MPI_I*) and persistent (MPIX_*_init on Open MPI 4.1, "
         "MPI_*_init) collectives through schedules too, where their size is planned "
         "already (default true); false: they go to the previous component (libnbc). Must be equal on all ranks"},
    [TACOS_P_V_SCHEDULES] = {"v_schedules", TACOS_PT_BOOL, 0, NULL, 0, 1, 1, 1, TACOS_PB_OMPI, 6,
        offsetof(tacos_settings_t, v_schedules),
        "Where coll/tacos is the only coll component: run blocking MPI_Gatherv, "
         "MPI_Scatterv, MPI_Alltoallv and MPI_Alltoallw through the Gather, Scatter and "
         "All-to-All schedules with blocks of the call's sizes (default false: their "
         "textbook programs). Every such call then first allgathers the block sizes "
         "(relays must know them), about 8 us at 4 ranks on one host, so it pays only "
         "where schedules forward blocks through other ranks (links without routing, "
         "e.g. GPU meshes). Must be equal on all ranks; writable through MPI_T, read "
         "when a communicator is created"},
    [TACOS_P_NET_PIECE_BYTES] = {"net_piece_bytes", TACOS_PT_INT, -1, NULL, -1, 2147483647, 1, 0, TACOS_PB_OMPI, 6,
        -1,
        "The largest message coll/tacos sends to a rank on another host; longer ones go "
         "as several messages of at most this size. -1 (default): Open MPI's TCP eager "
         "limit (btl_tcp_eager_limit) less 256 bytes of headers when the PML is ob1 and "
         "the TCP BTL is loaded, else no limit: over TCP a message above the eager limit "
         "waits for the receiver's clear-to-send, which queues behind the data the "
         "schedule sends the other way on the same connection. 0: no limit. Must be "
         "equal on all ranks"},
    [TACOS_P_SCRATCH_MAX_BYTES] = {"scratch_max_bytes", TACOS_PT_SIZE, 268435456, NULL, 0, (long long)(SIZE_MAX >> 1), 0, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, scratch_max),
        "Scratch memory (work buffers, space for arriving reductions) the communicators "
         "of a process keep between calls to avoid page faults, in total; a call that "
         "finds the total above it frees its communicator's scratch when it returns "
         "(default 268435456)"},
    [TACOS_P_DUMP_DIR] = {"dump_dir", TACOS_PT_STRING, 0, NULL, 0, 0, 0, 0, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, dump_dir),
        "Directory (created if missing) where each rank 0 writes the topology and every "
         "schedule it synthesizes as JSON (tacos-synth --validate/--simulate reads "
         "them), and every rank's probe record (tacos-commN-probe.json); empty: off"},
    [TACOS_P_CUDA] = {"cuda", TACOS_PT_BOOL, 1, NULL, 0, 1, 0, 0, TACOS_PB_BOTH, 4,
        -1,
        "Look for GPU (CUDA) buffers in each call (default true): the CUDA driver "
         "(libcuda.so.1) is loaded at the first collective where coll/tacos was built "
         "with --with-cuda (else, or without a driver or device, every buffer is host "
         "memory). Buffers in device memory go through the schedules staged chunk by "
         "chunk through pinned host memory, with reductions on the GPU; what that cannot "
         "serve goes through host copies of the whole buffers. false: buffers are never "
         "looked at (device pointers then reach Open MPI as they are)"},
    [TACOS_P_STAGE] = {"stage", TACOS_PT_INT, 0, NULL, 0, 3, 0, 1, TACOS_PB_BOTH, 9,
        -1,
        "Testing the GPU path without a GPU (default 0: off). 1: host buffers go "
         "through the executor's staging as GPU buffers do (copies into staging space, "
         "posted once copied); 2: every buffer is taken for a GPU's (host memory "
         "underneath), so calls a GPU buffer cannot take through the schedule run on "
         "copies of their buffers (user-defined ops, derived datatypes, fallbacks); 3: "
         "as 1, and the staging is memory the ranks of a host map from each other "
         "(memfd, /proc/PID/fd) as CUDA IPC maps GPU memory, so that calls of at least "
         "coll_tacos_cuda_ipc_min_bytes (to be set: without CUDA its default is -1) take "
         "the IPC path. A rank's own affair: 1 and 2 change no message, 3 only where "
         "every rank agrees. Writable through MPI_T: read when a communicator is created "
         "(osu_coll --variant compares them in one job)"},
    [TACOS_P_STAGE_MIN_BYTES] = {"stage_min_bytes", TACOS_PT_SIZE, 2097152, NULL, 0, (long long)(SIZE_MAX >> 1), 0, 1, TACOS_PB_BOTH, 6,
        -1,
        "GPU buffers: calls on fewer bytes than this (default 2097152) go through host "
         "copies of their whole buffers (one copy in, one back) instead of the schedule "
         "staged chunk by chunk, whose every message waits for a copy or a reduction on "
         "the GPU (about 10 us each): on an H100 shared by 2 and 4 ranks the staged "
         "schedule won from 1 and 2 MiB; with several ranks per GPU under CUDA MPS, with "
         "IPC, 131072 (and cuda_ipc_min_bytes 131072) is faster (README: GPU buffers). "
         "The host copies run the same collective, so this is a rank's own affair: no "
         "message changes. Writable through MPI_T: read when a communicator is created"},
    [TACOS_P_CUDA_IPC_MIN_BYTES] = {"cuda_ipc_min_bytes", TACOS_PT_INT, TACOS_IPC_MIN_BYTES_DEFAULT, NULL, -1, 2147483647, 1, 1, TACOS_PB_BOTH, 6,
        offsetof(tacos_settings_t, cuda_ipc_min_bytes),
        "GPU buffers: a blocking, nonblocking or persistent collective of at least this "
         "many bytes (default 1048576 in builds --with-cuda, -1 (never) without CUDA) "
         "whose schedule is staged on every rank lets each rank read the staged chunks "
         "of the ranks of its host from their GPU memory (CUDA IPC: one device copy "
         "instead of a copy to pinned host memory, a message and a copy back; messages "
         "between hosts stay staged). The ranks first agree that every one of them is "
         "staged through CUDA (an 8-byte allreduce in blocking calls of at least this "
         "size, also where the buffers are host memory; after a no where some rank never "
         "had a call there staged through CUDA (a program on host buffers), the next 1, "
         "2, 4 ... 64 such calls skip it and stage as before (otherwise every such call "
         "agrees); a persistent call agrees once, at its first start, a nonblocking one "
         "at its start, with a nonblocking one-byte dissemination). At the first yes on "
         "a communicator the ranks test that each can map a block the others of its host "
         "export (their GPUs need peer access; IPC is refused under MIG and between "
         "containers); where one cannot, that communicator stages (one message names a "
         "rank that cannot and why). A nonblocking call takes IPC only on a communicator "
         "tested so: on one not tested yet it is staged and the next blocking collective "
         "there (MPI_Barrier too) tests. Must be equal on all ranks; writable through "
         "MPI_T, read when a communicator is created"},
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
