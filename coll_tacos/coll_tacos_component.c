/* Component: MCA parameters, open/close, and the communicator query. */
#include "ompi_config.h"

#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/proc/proc.h"

#include "coll_tacos.h"

static int tacos_register(void);
static int tacos_open(void);
static int tacos_close(void);
static int tacos_init_query(bool enable_progress_threads, bool enable_mpi_threads);

mca_coll_tacos_component_t mca_coll_tacos_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "tacos",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = tacos_open,
            .mca_close_component = tacos_close,
            .mca_register_component_params = tacos_register,
        },
        .collm_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .collm_init_query = tacos_init_query,
        .collm_comm_query = mca_coll_tacos_comm_query,
    },
    .priority = 35,
    .output = -1,
};

/* A parameter in ompi_info; settable ones can be written through MPI_T.
 * Those that decide which messages a rank sends must be equal on every rank
 * (scope ALL_EQ); the module checks that at a communicator's first call. */
enum { READONLY, SETTABLE, ALL_EQ = 2 };

static void reg(const char *name, const char *help, mca_base_var_type_t type, int how,
                void *storage)
{
    (void)mca_base_component_var_register(
        &mca_coll_tacos_component.super.collm_version, name, help, type, NULL, 0,
        how & SETTABLE ? MCA_BASE_VAR_FLAG_SETTABLE : 0, OPAL_INFO_LVL_6,
        how & ALL_EQ     ? MCA_BASE_VAR_SCOPE_ALL_EQ
        : how & SETTABLE ? MCA_BASE_VAR_SCOPE_LOCAL
                         : MCA_BASE_VAR_SCOPE_READONLY,
        storage);
}

static void reg_int(const char *name, const char *help, int *storage)
{
    reg(name, help, MCA_BASE_VAR_TYPE_INT, ALL_EQ, storage);
}

static void reg_string(const char *name, const char *help, char **storage)
{
    reg(name, help, MCA_BASE_VAR_TYPE_STRING, READONLY, storage);
}

static void reg_bool(const char *name, const char *help, bool *storage)
{
    reg(name, help, MCA_BASE_VAR_TYPE_BOOL, ALL_EQ, storage);
}

static int tacos_register(void)
{
    mca_coll_tacos_component_t *c = &mca_coll_tacos_component;
    const tacos_settings_t d = TACOS_SETTINGS_DEFAULT; /* every binding's defaults */
    c->enable = d.enable, c->min_bytes = d.min_bytes, c->rooted_min_bytes = d.rooted_min_bytes;
    c->gather_min_bytes = d.gather_min_bytes, c->rooted_net_min_bytes = d.rooted_net_min_bytes;
    c->chunks = d.chunks, c->seed = d.seed, c->trials = d.trials;
    c->unwind_degree = d.unwind_degree, c->probe = d.probe, c->calibrate = d.calibrate;
    c->measure = d.measure, c->cache_size = d.cache_size, c->deterministic = d.deterministic;
    c->nonblocking = d.nonblocking, c->net_piece_bytes = -1;
    c->v_schedules = d.v_schedules, c->cuda_ipc_min_bytes = d.cuda_ipc_min_bytes;
    c->probe_gpu = d.probe_gpu, c->ucx_lib = (char *)d.ucx_lib, c->scratch_max = d.scratch_max;
    c->cuda = true, c->stage = 0, c->stage_min_bytes = 2 << 20;
    reg("cuda",
        "Look for GPU (CUDA) buffers in each call (default true): the CUDA driver "
        "(libcuda.so.1) is loaded at the first collective where coll/tacos was built with "
        "--with-cuda (else, or without a driver or device, every buffer is host memory). "
        "Buffers in device memory go through the schedules staged chunk by chunk through "
        "pinned host memory, with reductions on the GPU; what that cannot serve goes "
        "through host copies of the whole buffers. false: buffers are never looked at "
        "(device pointers then reach Open MPI as they are)",
        MCA_BASE_VAR_TYPE_BOOL, READONLY, &c->cuda);
    reg("stage",
        "Testing the GPU path without a GPU (default 0: off). 1: host buffers go through "
        "the executor's staging as GPU buffers do (copies into staging space, posted once "
        "copied); 2: every buffer is taken for a GPU's (host memory underneath), so calls "
        "a GPU buffer cannot take through the schedule run on copies of their buffers "
        "(user-defined ops, derived datatypes, fallbacks); 3: as 1, and the staging is "
        "memory the ranks of a host map from each other (memfd, /proc/PID/fd) as CUDA IPC "
        "maps GPU memory, so that calls of at least coll_tacos_cuda_ipc_min_bytes "
        "(to be set: without CUDA its default is -1) take the IPC path. A rank's own affair: "
        "1 and 2 change no message, 3 only where every rank agrees. Writable through MPI_T: "
        "read when a communicator is created (osu_coll --variant compares them in one job)",
        MCA_BASE_VAR_TYPE_INT, SETTABLE, &c->stage);
    reg("stage_min_bytes",
        "GPU buffers: calls on fewer bytes than this (default 2097152) go through host "
        "copies of their whole buffers (one copy in, one back) instead of the schedule "
        "staged chunk by chunk, whose every message waits for a copy or a reduction on the "
        "GPU (about 10 us each): on an H100 shared by 2 and 4 ranks the staged schedule "
        "won from 1 and 2 MiB; with several ranks per GPU under CUDA MPS, with IPC, "
        "131072 (and cuda_ipc_min_bytes 131072) is faster (README: GPU buffers). "
        "The host copies run the same collective, so this is a "
        "rank's own affair: no message changes. Writable through MPI_T: read when a "
        "communicator is created",
        MCA_BASE_VAR_TYPE_SIZE_T, SETTABLE, &c->stage_min_bytes);
    reg("cuda_ipc_min_bytes",
            "GPU buffers: a blocking, nonblocking or persistent collective of at least this "
            "many bytes (default 1048576 in builds --with-cuda, -1 (never) without CUDA) whose "
            "schedule is staged on every rank lets each rank "
            "read the staged chunks of the ranks of its host from their GPU memory (CUDA IPC: "
            "one device copy instead of a copy to pinned host memory, a message and a copy "
            "back; messages between hosts stay staged). The "
            "ranks first agree that every one of them is staged through CUDA (an 8-byte "
            "allreduce in blocking calls of at least this size, also where the buffers "
            "are host memory; after a no where some rank never had a call there staged "
            "through CUDA (a program on host buffers), the next 1, 2, 4 ... 64 such "
            "calls skip it and stage as before (otherwise every such call agrees); a "
            "persistent call agrees once, at its first "
            "start, a nonblocking one at its start, with a nonblocking one-byte dissemination). "
            "At the first yes on a communicator the ranks test that each can map a block "
            "the others of its host export (their GPUs need peer access; IPC is refused "
            "under MIG and between containers); where one cannot, that communicator stages "
            "(one message names a rank that cannot and why). A nonblocking call takes IPC only "
            "on a communicator tested so: on one not tested yet it is staged and the next "
            "blocking collective there (MPI_Barrier too) tests. Must be equal on "
            "all ranks; writable through MPI_T, read when a communicator is created",
            MCA_BASE_VAR_TYPE_INT, SETTABLE | ALL_EQ, &c->cuda_ipc_min_bytes);
    reg_int("priority",
            "Priority of coll/tacos among the coll components (default 35, above tuned's 30); "
            "0 or less never selects it. Must be equal on all ranks, as must the coll "
            "selection itself (--mca coll): a communicator where only some ranks have "
            "coll/tacos hangs at its first collective, as with any coll component",
            &c->priority);
    reg("enable",
        "Run collectives through coll/tacos schedules (default true); false: every call goes "
        "to the previous component. Writable at run time through MPI_T (MPI_T_cvar_write): "
        "communicators created afterwards see the new value, e.g. to compare with the other "
        "components in one job. Like every parameter that decides which messages a rank "
        "sends, it must be equal on all ranks of a communicator: they check at its first "
        "collective, and fall back with one message naming the parameters that differ",
        MCA_BASE_VAR_TYPE_BOOL, SETTABLE | ALL_EQ, &c->enable);
    reg("verbose",
        "Verbosity: 1 errors and fallbacks of a whole communicator, 5 the topology and each "
        "schedule synthesized (modelled time and, on rank 0, the throughput-optimal time, which "
        "costs up to seconds at hundreds of ranks), 10 one line per call (collective, bytes, schedule or "
        "fallback and why)",
        MCA_BASE_VAR_TYPE_INT, READONLY, &c->verbose);
    reg("topo_file",
        "Topology JSON file (the format tacos-synth reads) describing the links between "
        "the communicator's ranks, rank i = NPU i; its NPU count must equal the "
        "communicator size (else: error message and fallback). Empty (default): the "
        "topology probed with hwloc and UCX and, across hosts, measured (see probe, measure). "
        "Writable through MPI_T: read when a communicator is created",
        MCA_BASE_VAR_TYPE_STRING, SETTABLE | ALL_EQ, &c->topo_file);
    reg_int("unwind_degree",
            "Switch unwinding degree d used to turn the topology's switches (a host's shared "
            "memory, an NVSwitch fabric, the network) into point-to-point links (each member "
            "to the next d members, each link 1/d of the bandwidth). 0 (default) = automatic: "
            "d = members-1 for shared memory and NVSwitch, where every pair is equally close, "
            "and 1 for the network switches",
            &c->unwind_degree);
    reg("chunks",
        "Chunks per rank the buffer is cut into for pipelining; 0 = automatic: of 1, 2, 4 "
        "and 8, the one whose synthesized schedule the topology model times fastest for the "
        "call's size class. Writable through MPI_T: read when a communicator is created",
        MCA_BASE_VAR_TYPE_INT, SETTABLE | ALL_EQ, &c->chunks);
    reg_int("min_bytes",
            "Collectives whose whole buffer is smaller than this many bytes go to the previous "
            "component (default 65536: below it the per-call cost of a schedule exceeds what a "
            "better route saves on one host; see README Performance); where coll/tacos is the "
            "only component and coll_tacos_v_schedules is on, also MPI_Alltoallv and "
            "MPI_Alltoallw (the largest send buffer of any rank)",
            &c->min_bytes);
    reg_int("rooted_min_bytes",
            "Like min_bytes, for MPI_Bcast and MPI_Reduce (default 4194304: measured on one host, "
            "their schedules match tuned's trees only from about 4 MiB); see rooted_net_min_bytes "
            "for communicators that span hosts",
            &c->rooted_min_bytes);
    reg_int("rooted_net_min_bytes",
            "Like rooted_min_bytes, for MPI_Bcast and MPI_Reduce on communicators that span hosts "
            "(Open MPI's locality) (default 131072: from there their schedules took 0.11-0.58 of "
            "tuned's time on the emulated cluster's meshes and rings, 0.24-1.08 over one link; "
            "README Performance)",
            &c->rooted_net_min_bytes);
    reg_int("gather_min_bytes",
            "Like min_bytes, for MPI_Gather and MPI_Scatter (the root's whole buffer) where "
            "coll/tacos serves them: on communicators that span hosts, or with coll/tacos the only "
            "component (then also MPI_Gatherv and MPI_Scatterv with coll_tacos_v_schedules on); "
            "below it the previous component or the textbook program (default 524288: on the "
            "emulated cluster the schedules beat tuned on every shape from 512 KiB, mixed below)",
            &c->gather_min_bytes);
    reg_int("seed", "Seed of the synthesis PRNG (every rank must use the same; default 1)",
            &c->seed);
    reg_int("trials", "Independent synthesis seeds tried per schedule, fastest kept (default 1)",
            &c->trials);
    reg_bool("probe",
             "Learn the links between ranks with hwloc (packages, NUMA, GPUs, NVLink, NICs) "
             "and UCX (transport latency and bandwidth) at the first collective (default "
             "true); false: the default model (a shared-memory switch per host, a network "
             "switch per local rank index, fixed figures; README Topology probing)",
             &c->probe);
    reg_string("probe_hwloc_xml",
               "Read this process's machine from this hwloc XML export (lstopo --of xml) "
               "instead of discovering it; empty (default): discover this machine",
               &c->probe_hwloc_xml);
    reg_bool("probe_gpu",
             "Model each rank's GPU (local rank's device, honouring CUDA_VISIBLE_DEVICES) and "
             "its NVLink/NVSwitch links (default false: this build moves host buffers, which "
             "travel through shared memory whatever GPUs the host has)",
             &c->probe_gpu);
    reg_string("ucx_lib",
               "The UCT library loaded (dlopen) to read transport latency and bandwidth "
               "(default libuct.so.0); empty: do not ask UCX, keep the default figures",
               &c->ucx_lib);
    reg_bool("calibrate",
             "At the first collective, time ping-pongs of 8 B and 1 MiB between two ranks of "
             "one host and between two hosts; the measured latency and bandwidth replace the "
             "probed ones (default false)",
             &c->calibrate);
    reg_int("measure",
            "Links between hosts when a communicator spans several: 1 (default) measure every "
            "pair of hosts at the first collective that needs the topology (one rank per host, "
            "H-1 parallel rounds of 8 B and 128 KiB exchanges, then one of about 10 ms per "
            "pair whose 128 KiB took less than 9 ms, again where it stalled or where another "
            "pair of its round may have shared its link, then concurrent exchanges that tell links "
            "from paths through another host, triples without a host in common at once; "
            "0.05-0.14 s at 4 hosts, 0.4 s at 6 and 0.75 s at 7 joined by one, on 100-400 "
            "Mbit/s links; above about 7 hosts' worth of tests every pair becomes a link), "
            "reused by later communicators over the same hosts in this job; 2 measure again for every communicator; 0 never "
            "(the probed figures: one network switch). A topology file overrides it",
            &c->measure);
    reg_int("cache_size",
            "Schedules kept per communicator, one per (collective, root, power-of-two size "
            "class) used; beyond it the oldest is dropped and synthesized again when needed "
            "(default 32). Must be equal on all ranks",
            &c->cache_size);
    reg_bool("nonblocking",
             "Run nonblocking (MPI_I*) and persistent (MPIX_*_init) collectives through "
             "schedules too, where their size is planned already (default true); false: they go "
             "to the previous component (libnbc). Must be equal on all ranks",
             &c->nonblocking);
    reg("v_schedules",
             "Where coll/tacos is the only coll component: run blocking MPI_Gatherv, "
             "MPI_Scatterv, MPI_Alltoallv and MPI_Alltoallw through the Gather, Scatter and "
             "All-to-All schedules with blocks of the call's sizes (default false: their textbook "
             "programs). Every such call then first allgathers the block sizes (relays must know "
             "them), about 8 us at 4 ranks on one host, so it pays only where schedules forward "
             "blocks through other ranks (links without routing, e.g. GPU meshes). Must be equal "
             "on all ranks; writable through MPI_T, read when a communicator is created",
             MCA_BASE_VAR_TYPE_BOOL, SETTABLE | ALL_EQ, &c->v_schedules);
    reg_int("net_piece_bytes",
            "The largest message coll/tacos sends to a rank on another host; longer ones go "
            "as several messages of at most this size. -1 (default): Open MPI's TCP eager "
            "limit (btl_tcp_eager_limit) less 256 bytes of headers when the PML is ob1 and the "
            "TCP BTL is loaded, else no limit: over TCP a message above the eager limit waits "
            "for the receiver's clear-to-send, which queues behind the data the schedule sends "
            "the other way on the same connection. 0: no limit. Must be equal on all ranks",
            &c->net_piece_bytes);
    reg("scratch_max_bytes",
        "Scratch memory (work buffers, space for arriving reductions) the communicators of a "
        "process keep between calls to avoid page faults, in total; a call that finds the "
        "total above it frees its communicator's scratch when it returns (default 268435456)",
        MCA_BASE_VAR_TYPE_SIZE_T, READONLY, &c->scratch_max);
    reg("deterministic",
        "Combine the contributions arriving for a chunk in the schedule's fixed order: a "
        "floating-point reduction that runs a schedule gives the same bits in every run for "
        "the same topology, settings, rank count and call (default true; what falls back "
        "gets the previous component's order: README, Reductions' order). false: in arrival "
        "order, which waits less where contributions arrive unevenly, but whose last bits "
        "may change from run to run. Writable through MPI_T: read when a communicator is "
        "created",
        MCA_BASE_VAR_TYPE_BOOL, SETTABLE, &c->deterministic);
    reg_string("dump_dir",
               "Directory (created if missing) where each rank 0 writes the topology and every "
               "schedule it synthesizes as JSON (tacos-synth --validate/--simulate reads them), and every "
               "rank's probe record (tacos-commN-probe.json); empty: off",
               &c->dump_dir);
    return OMPI_SUCCESS;
}

static int tacos_open(void)
{
    mca_coll_tacos_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_tacos_component.output, mca_coll_tacos_component.verbose);
    return OMPI_SUCCESS;
}

static int tacos_close(void)
{
    opal_progress_unregister(mca_coll_tacos_progress); /* where it was registered */
    if (mca_coll_tacos_component.output >= 0)
        opal_output_close(mca_coll_tacos_component.output);
    mca_coll_tacos_component.output = -1;
    return OMPI_SUCCESS;
}

/* net_piece_bytes -1: the TCP BTL's eager limit less the PML's headers,
 * where ob1 sends over TCP (the PML is selected before coll). */
static size_t auto_net_piece(void)
{
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    int idx = mca_base_var_find("opal", "btl", "tcp", "eager_limit");
    const size_t *eager = NULL;
    if (strcmp(pml, "ob1") || idx < 0 ||
        mca_base_var_get_value(idx, (const void *)&eager, NULL, NULL) != OPAL_SUCCESS || !eager)
        return 0;
    return *eager > 1024 ? *eager - 256 : 0;
}

static int tacos_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    mca_coll_tacos_component_t *c = &mca_coll_tacos_component;
    c->net_piece = c->net_piece_bytes < 0 ? auto_net_piece() : (size_t)c->net_piece_bytes;
    if (OMPI_PROC_MY_NAME->vpid == 0 && c->net_piece)
        opal_output_verbose(5, c->output,
                            "coll:tacos: messages to ranks on other hosts: %zu bytes at most",
                            c->net_piece);
    return OMPI_SUCCESS;
}
