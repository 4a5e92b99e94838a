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
    "--topology and coll_tacos_topo_file read.\n"
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
    "  -o FILE            write the JSON to FILE instead of stdout\n"
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

/* Under mpirun: allgather the records, rank 0 merges and prints. */
static int probe_all(tacos_probe_opts_t *o, int degree, const char *out)
{
    int argc = 0, rank, n, rc = 0;
    MPI_Init(&argc, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    tacos_probe_record_t mine, *all = malloc((size_t)n * sizeof *all);
    if (!all) {
        fprintf(stderr, "tacos-probe: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (tacos_probe_local(o, &mine))
        fprintf(stderr, "tacos-probe: rank %d: %s\n", rank, tacos_last_error());
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                  MPI_COMM_WORLD);
    if (rank == 0) {
        tacos_topo_t *t = NULL;
        char *json = NULL, summary[512];
        if (tacos_probe_merge(all, n, degree, 0, &t) || tacos_topo_to_json(t, &json)) {
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
    enum { XML = 256, CPUSET, LOCAL, CVD, NOGPU, RANKS, DEGREE, UCXLIB, NOUCX, NONVML, HOST, ALL };
    static const struct option opts[] = {
        {"hwloc-xml", required_argument, 0, XML}, {"cpuset", required_argument, 0, CPUSET},
        {"local-rank", required_argument, 0, LOCAL},
        {"cuda-visible-devices", required_argument, 0, CVD}, {"no-gpu", no_argument, 0, NOGPU},
        {"ranks", required_argument, 0, RANKS}, {"unwind-degree", required_argument, 0, DEGREE},
        {"ucx-lib", required_argument, 0, UCXLIB}, {"no-ucx", no_argument, 0, NOUCX},
        {"no-nvml", no_argument, 0, NONVML}, {"hostname", required_argument, 0, HOST},
        {"all", no_argument, 0, ALL}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    tacos_probe_opts_t o;
    tacos_probe_opts_init(&o);
    const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK"), *out = NULL;
    int nranks = 0, degree = 0, all = 0, nogpu = 0, c;
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
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return bad_usage("unknown option");
        }
    }
    if (optind < argc)
        return bad_usage("unexpected argument");
    if (nogpu)
        o.local_rank = -1;
    return all ? probe_all(&o, degree, out) : probe_one(&o, nranks, degree, out);
}
