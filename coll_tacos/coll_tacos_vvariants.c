/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The v-variants through the routed schedules: Gatherv, Scatterv,
 * Alltoallv and Alltoallw, where coll/tacos is the only component and
 * coll_tacos_v_schedules is on; otherwise the previous component's or the
 * textbook program.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "coll_tacos_driver.h"

/* Gatherv, Scatterv, Alltoallv and Alltoallw where coll/tacos is the only
 * component and coll_tacos_v_schedules is on (blocking, on an
 * intracommunicator: not_routed; with a previous component they are its, as
 * Gather and Scatter are on one host; off, the textbook program's: the exchange below
 * costs more than the schedule saves wherever the network routes).  The
 * ranks first allgather
 * whether each can take a schedule (not on GPU buffers) and its largest
 * buffer: the size the call plans as Gather, Scatter or All-to-All of
 * (thresholds, size class: the root's whole buffer, All-to-All's largest
 * send buffer).  A schedule may forward a block through ranks that do not
 * know its size, so the ranks need every rank's `mine` (the bytes of its
 * nmine blocks, to the root or to each rank): Gatherv's and Scatterv's
 * come with that first allgather, All-to-All's rows with a second one
 * where a schedule runs.  The schedule, synthesized for equal blocks, runs
 * with these.  Returns the call's status: where no schedule serves it, 0
 * with *why set (nothing ran); where every block is empty, 0 with *why
 * NULL (nothing to move: done). */
static int routed_v(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, int tag,
                    tacos_coll_t coll, int root, const size_t *mine, int nmine, size_t largest,
                    const tacos_data_t *in, const tacos_data_t *out, int can, const char **why)
{
    size_t n = (size_t)ompi_comm_size(comm), rec = nmine == 1 ? 3 : 2, cannot = 0, most = 0;
    size_t *all = malloc(n * (rec + (size_t)nmine) * sizeof *all), *sizes = all + n * rec;
    if (!all)
        return OMPI_ERR_OUT_OF_RESOURCE;
    size_t first[3] = {!can, largest, mine[0]};
    int rc = coll_tacos_core_allgather(m, first, all, rec * sizeof *all);
    for (size_t r = 0; r < n; r++) {
        cannot |= all[r * rec];
        most = all[r * rec + 1] > most ? all[r * rec + 1] : most;
        if (rec == 3)
            sizes[r] = all[r * rec + 2];
    }
    pml_ctx_t x = {.comm = comm, .tag = tag, .unit = &ompi_mpi_byte.dt};
    tacos_call_t call;
    coll_tacos_call_init(&call, &x);
    const tacos_plan_t *p = NULL;
    const char *cannot_why = cannot ? "no previous component; GPU buffers on a rank"
                                    : view_bytes(&ompi_mpi_byte.dt, most, &call.v, &x);
    *why = cannot_why;
    if (rc == OMPI_SUCCESS)
        rc = tacos_comm_plan_call(m->core, TACOS_BLOCKING, coll, root, most, why, &p);
    if (rc == OMPI_SUCCESS && p && rec == 2) {
        rc = coll_tacos_core_allgather(m, mine, sizes, (size_t)nmine * sizeof *sizes);
        /* that allgather may have planned a size of its own and evicted the
         * cache entry p points to: plan again (every rank alike) */
        *why = cannot_why, p = NULL;
        if (rc == OMPI_SUCCESS)
            rc = tacos_comm_plan_call(m->core, TACOS_BLOCKING, coll, root, most, why, &p);
    }
    if (rc == OMPI_SUCCESS && p) {
        tacos_args_t a = {.root = root, .sizes = sizes, .in = in, .out = out};
        rc = tacos_run(m->core, p, &call, &a);
    }
    if (p)
        *why = NULL; /* it ran (or failed) */
    free(all);
    return rc;
}

/* Why a v-variant does not go through routed_v, or NULL; *rc: the status
 * of the settings' agreement (the first time, a collective). */
static const char *not_routed(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm,
                              call_mode_t mode, int has_prev, int *rc)
{
    const char *why = NULL;
    *rc = OMPI_SUCCESS;
    if (has_prev || mode != BLOCKING || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) == 1)
        return has_prev                   ? PASSED
               : mode != BLOCKING         ? "no previous component; nonblocking"
               : OMPI_COMM_IS_INTER(comm) ? "no previous component; intercommunicator"
                                          : "no previous component; one rank";
    *rc = tacos_comm_v_schedules(m->core, &why);
    return why; /* the core's: the last such reason stays valid until the next call */
}

/* The blocks of `counts` x dtype at `displs` extents into buf (or, with a
 * datatype per block, types, at displs bytes); their bytes in bytes[]
 * (unless NULL) and in all. */
static size_t blocks_of(tacos_data_t *b, int n, const void *buf, CNTS counts,
                        DSPS displs, DT *dtype, DT *const *types, size_t *bytes)
{
    size_t all = 0;
    for (int i = 0; i < n; i++) {
        DT *t = types ? types[i] : dtype;
        size_t one = CNT_AT(counts, i) * type_size(t);
        b[i] = data(buf, CNT_AT(counts, i), t);
        b[i].buf = (char *)buf + (types ? DSP_AT(displs, i) : DSP_AT(displs, i) * b[i].extent);
        if (bytes)
            bytes[i] = one;
        all += one;
    }
    return all;
}

/* Gatherv (coll TACOS_GATHER) and Scatterv: the root's side is n blocks
 * (counts, displs, ltype at lbuf), the other side's one (this rank's:
 * ocount x otype at obuf, MPI_IN_PLACE at the root). */
static int rooted_v(mca_coll_tacos_module_t *m, struct ompi_communicator_t *comm, int tag,
                    tacos_coll_t coll, int root, const void *lbuf, CNTS counts,
                    DSPS displs, DT *ltype, const void *obuf, CNT ocount, DT *otype,
                    int device, const char **why)
{
    int n = ompi_comm_size(comm), at_root = ompi_comm_rank(comm) == root;
    int in_place = at_root && obuf == MPI_IN_PLACE;
    tacos_data_t one = in_place ? (tacos_data_t){0} : data(obuf, (size_t)ocount, otype);
    tacos_data_t *list = at_root ? malloc((size_t)n * sizeof *list) : NULL;
    if (at_root && !list)
        return OMPI_ERR_OUT_OF_RESOURCE;
    size_t bytes = in_place ? CNT_AT(counts, root) * type_size(ltype)
                            : (size_t)ocount * type_size(otype);
    size_t largest = list ? blocks_of(list, n, lbuf, counts, displs, ltype, NULL, NULL) : bytes;
    const tacos_data_t *side = in_place ? NULL : &one;
    int gather = coll == TACOS_GATHER;
    int rc = routed_v(m, comm, tag, coll, root, &bytes, 1, largest, gather ? side : list,
                      gather ? list : side, !device, why);
    free(list);
    return rc;
}

/* Alltoallv and Alltoallw (types: a datatype per block, displacements in
 * bytes); MPI_IN_PLACE goes to the textbook program (on every rank: MPI
 * wants it on all or none). */
static int alltoall_v(mca_coll_tacos_module_t *m, int tag, const void *sbuf, CNTS scounts,
                      DSPS sdispls, DT *sdtype, DT *const *stypes, void *rbuf,
                      CNTS rcounts, DSPS rdispls, DT *rdtype, DT *const *rtypes,
                      COMM, int device, const char **why)
{
    int n = ompi_comm_size(comm);
    if (sbuf == MPI_IN_PLACE)
        return *why = "no previous component; MPI_IN_PLACE", OMPI_SUCCESS;
    tacos_data_t *b = malloc(2 * (size_t)n * sizeof *b);
    size_t *bytes = malloc((size_t)n * sizeof *bytes);
    if (!b || !bytes) {
        free(b);
        free(bytes);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    size_t largest = blocks_of(b, n, sbuf, scounts, sdispls, sdtype, stypes, bytes);
    blocks_of(b + n, n, rbuf, rcounts, rdispls, rdtype, rtypes, NULL);
    int rc = routed_v(m, comm, tag, TACOS_ALLTOALL, 0, bytes, n, largest, b, b + n, !device,
                      why);
    free(b);
    free(bytes);
    return rc;
}

/* A v-variant in three modes: through a schedule where `routed` (a call
 * setting why where none serves it) runs one, else the previous component
 * or the textbook program (PARAMS, ARGS, SIG as for PASS_THROUGH). */
#define V_VARIANT(name, PARAMS, ARGS, SIG, routed)                                           \
    static int coll_tacos_##name(UNPAREN PARAMS, MOD, MODE_ARGS)                              \
    {                                                                                        \
        mca_coll_tacos_module_t *m = (mca_coll_tacos_module_t *)module;                      \
        NOT_ON_DEVICE(name, SIG);                                                            \
        int rc_;                                                                             \
        const char *why = not_routed(m, comm, mode, HAS_PREV(m, name), &rc_);                \
        if (rc_ != OMPI_SUCCESS)                                                             \
            return rc_;                                                                      \
        if (!why) {                                                                          \
            int rc = routed;                                                                 \
            if (rc != OMPI_SUCCESS || !why)                                                  \
                return rc;                                                                   \
        }                                                                                    \
        FALLBACK(m, name, why, UNPAREN ARGS);                                                \
    }                                                                                        \
    SLOTS(name, PARAMS, ARGS)

V_VARIANT(gatherv, (const void *sbuf, CNT scount, DT *sdtype, void *rbuf, CNTS rcounts,
                    DSPS displs, DT *rdtype, int root, COMM),
          (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm),
          (sbuf, OMPI_COMM_IS_INTER(comm) || ompi_comm_rank(comm) == root ? rbuf : NULL),
          rooted_v(m, comm, MCA_COLL_BASE_TAG_GATHERV, TACOS_GATHER, root, rbuf, rcounts, displs,
                   rdtype, sbuf, scount, sdtype, x.device, &why))
V_VARIANT(scatterv, (const void *sbuf, CNTS scounts, DSPS displs, DT *sdtype,
                     void *rbuf, CNT rcount, DT *rdtype, int root, COMM),
          (sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm),
          (OMPI_COMM_IS_INTER(comm) || ompi_comm_rank(comm) == root ? sbuf : NULL, rbuf),
          rooted_v(m, comm, MCA_COLL_BASE_TAG_SCATTERV, TACOS_SCATTER, root, sbuf, scounts,
                   displs, sdtype, rbuf, rcount, rdtype, x.device, &why))
V_VARIANT(alltoallv, (const void *sbuf, CNTS scounts, DSPS sdispls, DT *sdtype,
                      void *rbuf, CNTS rcounts, DSPS rdispls, DT *rdtype, COMM),
          (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm), (sbuf, rbuf),
          alltoall_v(m, MCA_COLL_BASE_TAG_ALLTOALLV, sbuf, scounts, sdispls, sdtype, NULL, rbuf,
                     rcounts, rdispls, rdtype, NULL, comm, x.device, &why))
V_VARIANT(alltoallw, (const void *sbuf, CNTS scounts, DSPS sdispls,
                      DT *const *sdtypes, void *rbuf, CNTS rcounts, DSPS rdispls,
                      DT *const *rdtypes, COMM),
          (sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm), (sbuf, rbuf),
          alltoall_v(m, MCA_COLL_BASE_TAG_ALLTOALLW, sbuf, scounts, sdispls, NULL, sdtypes, rbuf,
                     rcounts, rdispls, NULL, rdtypes, comm, x.device, &why))

void coll_tacos_fill_vvariants(mca_coll_base_module_t *s)
{
    FILL(s, gatherv) FILL(s, scatterv) FILL(s, alltoallv) FILL(s, alltoallw)
}
