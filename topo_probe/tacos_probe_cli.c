/* SPDX-License-Identifier: BSD-3-Clause */
/* tacos-probe: what coll/tacos sees of a machine, as JSON. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tacos_probe.h"

static const char usage[] =
    "usage: tacos-probe [options]\n"
    "Prints this process's probe record and the topology of this host with\n"
    "--ranks ranks on it (rank i bound to the i-th equal slice of the PUs and\n"
    "using the i-th visible GPU), as JSON.  With --all, run under mpirun: rank 0\n"
    "prints the merged topology of all ranks in the JSON format tacos-synth\n"
    "--topology and coll_tacos_topo_file read; when the ranks span several hosts,\n"
    "the links between them are measured as coll/tacos measures them (above 8\n"
    "hosts, --infer-hosts: the leaf switches inferred, each level's rate measured).\n"
    "\n"
    "  --hwloc-xml FILE   read a saved machine (lstopo --of xml) instead of this one\n"
    "  --cpuset LIST      the record's binding, as PUs (default: this process's)\n"
    "  --local-rank N     the record's local rank (picks the GPU; default:\n"
    "                     $OMPI_COMM_WORLD_LOCAL_RANK, else 0)\n"
    "  --cuda-visible-devices LIST  instead of $CUDA_VISIBLE_DEVICES\n"
    "  --no-gpu           model no GPU (CPU buffers)\n"
    "  --ranks N          ranks on the host for the host topology (default: one\n"
    "                     per GPU, else one per package)\n"
    "  --unwind-degree D  switch unwinding (default 0: automatic)\n"
    "  --ucx-lib PATH     the libuct to load (default libuct.so.0)\n"
    "  --no-ucx           do not ask UCX (default figures)\n"
    "  --no-nvml          do not ask NVML\n"
    "  --hostname NAME    the host name recorded (default: this host's)\n"
    "  --all              merge every rank's record (under mpirun)\n"
    "  --no-measure       with --all: do not measure the links between hosts (one\n"
    "                     network switch with the probed figures)\n"
    "  --infer-hosts N    with --all: over more than N hosts (1-64, default 8) infer\n"
    "                     the switch tree, up to N measure every pair, as\n"
    "                     coll_tacos_infer_hosts does\n"
    "  --piece BYTES      with --all: measure with messages of at most BYTES, as\n"
    "                     coll/tacos sends between hosts (coll_tacos_net_piece_bytes;\n"
    "                     default 65280, what it uses over Open MPI's TCP with the\n"
    "                     default eager limit; 0: whole messages)\n"
    "  -o FILE            write the JSON to FILE instead of stdout\n"
    "  -h, --help         this text\n"
    "\n"
    "Exit status: 0 on success, 1 on an error (message on stderr), 2 on bad usage.\n";

static int bad_usage(const char *what)
{
    fprintf(stderr, "tacos-probe: %s\n%s", what, usage);
    return 2;
}

static int to_int(const char *s, int min, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > 1 << 20)
        return -1;
    *out = (int)v;
    return 0;
}

static int emit(const char *path, const char *text)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f || fprintf(f, "%s\n", text) < 0 || (path && fclose(f))) {
        fprintf(stderr, "tacos-probe: cannot write %s\n", path ? path : "stdout");
        return 1;
    }
    return 0;
}

/* ---- measuring the network between hosts over MPI ---- */

static char net_sbuf[TACOS_NET_MAX_BYTES], net_rbuf[2 * TACOS_NET_MAX_BYTES];
static size_t net_piece = 65280; /* --piece */
static int infer_hosts = TACOS_FABRIC_INFER_HOSTS; /* --infer-hosts */
_Static_assert(TACOS_FABRIC_INFER_MAX_HOSTS == 64, "--infer-hosts's usage and message say 64");

/* Both ways with each peer at once, in pieces of at most net_piece bytes;
 * a peer's time is when its last piece arrived. */
static int mpi_exchange(void *ctx, const int *peers, int n, const size_t *bytes, double *t_us)
{
    (void)ctx;
    size_t most = 0, posted = 0, piece[2];
    for (int i = 0; i < n && i < 2; i++) {
        piece[i] = net_piece && net_piece < bytes[i] ? net_piece : bytes[i] ? bytes[i] : 1;
        most += 2 * ((bytes[i] + piece[i] - 1) / piece[i]);
    }
    MPI_Request *req = malloc((most + 1) * sizeof *req);
    int *peer_of = malloc((most + 1) * sizeof *peer_of), rc = n > 2 || !req || !peer_of;
    char *to = net_rbuf;
    double t0 = MPI_Wtime();
    for (int i = 0; i < n && !rc; to += bytes[i++])
        for (size_t at = 0; at < bytes[i]; at += piece[i]) {
            int len = (int)(bytes[i] - at < piece[i] ? bytes[i] - at : piece[i]);
            MPI_Irecv(to + at, len, MPI_BYTE, peers[i], 77, MPI_COMM_WORLD, &req[posted]);
            peer_of[posted++] = i;
            MPI_Isend(net_sbuf + at, len, MPI_BYTE, peers[i], 77, MPI_COMM_WORLD, &req[posted]);
            peer_of[posted++] = -1; /* sends: not timed */
        }
    for (size_t left = posted; left > 0 && !rc;) { /* waiting as tacos_net_idle says */
        int idx, done = 0;
        /* twice: Open MPI's Testany looks at the requests before it
         * progresses them, so what that progress completed shows on the
         * next test (after a nap, it would be timed a nap late) */
        for (int k = 0; k < 2 && !done && !rc; k++)
            rc = MPI_Testany((int)posted, req, &idx, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS;
        double now = (MPI_Wtime() - t0) * 1e6;
        if (!done) {
            tacos_net_idle(now);
            continue;
        }
        left--;
        if (!rc && peer_of[idx] >= 0)
            t_us[peer_of[idx]] = now;
    }
    free(req);
    free(peer_of);
    return rc;
}

static int mpi_max(void *ctx, double *v, int n)
{
    (void)ctx;
    MPI_Request req;
    int done = 0;
    double t0 = MPI_Wtime();
    if (MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req))
        return 1;
    while (!done)
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE))
            return 1;
        else if (!done)
            tacos_net_idle((MPI_Wtime() - t0) * 1e6);
    return 0;
}

/* Rank 0's report of each measured pair of hosts, on stderr. */
static void print_network(const tacos_probe_record_t *recs, int n, const tacos_net_t *net)
{
    char *text = NULL, *save = NULL;
    fprintf(stderr, "tacos-probe: network between %d hosts measured in %.1f ms (%d rounds, %d "
                    "concurrent tests in %d steps)%s%s\n",
            net->nhosts, net->measure_us / 1e3, tacos_net_rounds(net->nhosts), net->ntests,
            net->test_steps,
            net->note ? ": " : "", net->note ? net->note : "");
    fprintf(stderr, "tacos-probe:   phases (ms):");
    for (int p = 0; p < TACOS_NET_PHASES; p++)
        fprintf(stderr, "%s %s %.1f", p ? "," : "", tacos_net_phase_names[p], net->phase_us[p] / 1e3);
    fprintf(stderr, "\n");
    if (tacos_net_describe(recs, n, net, &text) == TACOS_OK)
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            fprintf(stderr, "tacos-probe:   %s\n", l);
    free(text);
}

/* Rank 0's report of the tree inferred between hosts, on stderr. */
static void print_tree(const tacos_fabric_conf_t *tree, char *text, const tacos_fabric_net_t *f)
{
    char *lines = NULL, *save = NULL;
    fprintf(stderr, "tacos-probe: network between %d hosts inferred in %.1f ms (%d rounds)\n",
            f->nhosts, f->measure_us / 1e3, f->rounds);
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        fprintf(stderr, "tacos-probe:   %s\n", l);
    if (tacos_fabric_net_describe(tree, f, &lines) == TACOS_OK)
        for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            fprintf(stderr, "tacos-probe:   %s\n", l);
    free(lines);
}

/* Under mpirun: allgather the records, measure the network between hosts,
 * rank 0 merges and prints. */
static int probe_all(tacos_probe_opts_t *o, int degree, int measure, const char *out)
{
    int argc = 0, rank, n, rc = 0;
    MPI_Init(&argc, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    tacos_probe_record_t mine, *all = malloc((size_t)n * sizeof *all);
    int *host = malloc((size_t)n * sizeof *host), *local = malloc((size_t)n * sizeof *local);
    if (!all || !host || !local) {
        fprintf(stderr, "tacos-probe: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (tacos_probe_local(o, &mine))
        fprintf(stderr, "tacos-probe: rank %d: %s\n", rank, tacos_last_error());
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                  MPI_COMM_WORLD);
    tacos_net_t net = {0};
    tacos_fabric_conf_t *tree = NULL;
    tacos_fabric_net_t fabric = {0};
    char *tree_text = NULL;
    int hosts = tacos_probe_hosts(all, n, host, local);
    free(host);
    free(local);
    tacos_net_comm_t comm = {NULL, mpi_exchange, mpi_max};
    int have_net = measure && hosts > 1 && tacos_probe_check(all, n) == TACOS_OK;
    if (have_net && hosts > infer_hosts) { /* as the component: the tree inferred */
        if (tacos_fabric_infer(all, n, rank, &comm, &tree, &tree_text, &fabric) && rank == 0)
            fprintf(stderr, "tacos-probe: inferring the switch tree: %s; measuring every pair\n",
                    tacos_last_error());
    }
    if (tree)
        have_net = 0;
    if (have_net && tacos_net_measure(all, n, rank, &comm, &net)) {
        if (rank == 0)
            fprintf(stderr, "tacos-probe: measuring the network: %s; the probed figures stand "
                            "in\n",
                    tacos_last_error());
        have_net = 0;
    }
    if (rank == 0) {
        tacos_topo_t *t = NULL;
        char *json = NULL, summary[512];
        if (have_net)
            print_network(all, n, &net);
        if (tree)
            print_tree(tree, tree_text, &fabric);
        if ((tree ? tacos_probe_merge_fabric(all, n, degree, 0, tree, &fabric, &t)
                  : tacos_probe_merge_net(all, n, degree, 0, have_net ? &net : NULL, &t)) ||
            tacos_topo_to_json(t, &json)) {
            fprintf(stderr, "tacos-probe: %s\n", tacos_last_error());
            rc = 1;
        } else {
            tacos_probe_summary(all, n, summary, sizeof summary);
            fprintf(stderr, "tacos-probe: %s\n", summary);
            rc = emit(out, json);
        }
        free(json);
        tacos_topo_free(t);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    tacos_net_free(&net);
    tacos_fabric_net_free(&fabric);
    tacos_fabric_conf_free(tree);
    free(tree_text);
    free(all);
    MPI_Finalize();
    return rc;
}

/* This process's record and this host's topology. */
static int probe_one(tacos_probe_opts_t *o, int nranks, int degree, const char *out)
{
    tacos_probe_record_t mine, *host = NULL;
    tacos_topo_t *t = NULL;
    char *rec = NULL, *topo = NULL, *text = NULL, summary[512];
    int rc = 1;
    if (tacos_probe_local(o, &mine)) {
        fprintf(stderr, "tacos-probe: %s\n", tacos_last_error());
        if ((o->hwloc_xml || o->cpuset) && mine.machine_src != TACOS_SRC_HWLOC)
            return 1; /* the machine asked for could not be read */
    }
    if (nranks == 0)
        nranks = mine.host_gpus > 0 && o->local_rank >= 0 ? mine.host_gpus
               : mine.host_packages > 0                       ? mine.host_packages
                                                              : 1;
    if (!(host = malloc((size_t)nranks * sizeof *host)))
        goto out;
    tacos_probe_opts_t quiet = *o;
    quiet.ucx_lib = ""; /* the transports are known already */
    tacos_probe_host(&quiet, nranks, host);
    for (int i = 0; i < nranks; i++) {
        host[i].cls[TACOS_CLASS_SHM] = mine.cls[TACOS_CLASS_SHM];
        host[i].cls[TACOS_CLASS_NET] = mine.cls[TACOS_CLASS_NET];
    }
    if (tacos_probe_merge(host, nranks, degree, 0, &t) || tacos_probe_record_to_json(&mine, &rec) ||
        tacos_topo_to_json(t, &topo)) {
        fprintf(stderr, "tacos-probe: %s\n", tacos_last_error());
        goto out;
    }
    tacos_probe_summary(host, nranks, summary, sizeof summary);
    size_t len = strlen(rec) + strlen(topo) + strlen(summary) + 64;
    if (!(text = malloc(len)))
        goto out;
    snprintf(text, len, "{\"summary\": \"%s\",\n\"record\": %s,\n\"host_topology\": %s}", summary,
             rec, topo);
    rc = emit(out, text);
out:
    free(text);
    free(rec);
    free(topo);
    free(host);
    tacos_topo_free(t);
    return rc;
}

int main(int argc, char **argv)
{
    enum { XML = 256, CPUSET, LOCAL, CVD, NOGPU, RANKS, DEGREE, UCXLIB, NOUCX, NONVML, HOST, ALL,
           NOMEASURE, PIECE, INFER };
    static const struct option opts[] = {
        {"hwloc-xml", required_argument, 0, XML}, {"cpuset", required_argument, 0, CPUSET},
        {"local-rank", required_argument, 0, LOCAL},
        {"cuda-visible-devices", required_argument, 0, CVD}, {"no-gpu", no_argument, 0, NOGPU},
        {"ranks", required_argument, 0, RANKS}, {"unwind-degree", required_argument, 0, DEGREE},
        {"ucx-lib", required_argument, 0, UCXLIB}, {"no-ucx", no_argument, 0, NOUCX},
        {"no-nvml", no_argument, 0, NONVML}, {"hostname", required_argument, 0, HOST},
        {"all", no_argument, 0, ALL}, {"no-measure", no_argument, 0, NOMEASURE},
        {"piece", required_argument, 0, PIECE}, {"infer-hosts", required_argument, 0, INFER},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    tacos_probe_opts_t o;
    tacos_probe_opts_init(&o);
    const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK"), *out = NULL;
    int nranks = 0, degree = 0, all = 0, nogpu = 0, measure = 1, c;
    if (env && to_int(env, 0, &o.local_rank))
        o.local_rank = 0;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case XML: o.hwloc_xml = optarg; break;
        case CPUSET: o.cpuset = optarg; break;
        case LOCAL:
            if (to_int(optarg, 0, &o.local_rank))
                return bad_usage("--local-rank needs an integer >= 0");
            break;
        case CVD: o.cuda_visible_devices = optarg; break;
        case NOGPU: nogpu = 1; break;
        case RANKS:
            if (to_int(optarg, 1, &nranks))
                return bad_usage("--ranks needs an integer >= 1");
            break;
        case DEGREE:
            if (to_int(optarg, 0, &degree))
                return bad_usage("--unwind-degree needs an integer >= 0");
            break;
        case UCXLIB: o.ucx_lib = optarg; break;
        case NOUCX: o.ucx_lib = ""; break;
        case NONVML: o.use_nvml = 0; break;
        case HOST: o.hostname = optarg; break;
        case ALL: all = 1; break;
        case NOMEASURE: measure = 0; break;
        case PIECE: {
            int p;
            if (to_int(optarg, 0, &p) || (p > 0 && p < 1024))
                return bad_usage("--piece needs 0 or an integer >= 1024");
            net_piece = (size_t)p;
            break;
        }
        case INFER:
            if (to_int(optarg, 1, &infer_hosts) || infer_hosts > TACOS_FABRIC_INFER_MAX_HOSTS)
                return bad_usage("--infer-hosts needs an integer from 1 to 64");
            break;
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return bad_usage("unknown option");
        }
    }
    if (optind < argc)
        return bad_usage("unexpected argument");
    if (nogpu)
        o.local_rank = -1;
    return all ? probe_all(&o, degree, measure, out) : probe_one(&o, nranks, degree, out);
}
