/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GPU buffers in libtacos-pmpi: which of a call's buffers are in GPU memory,
 * whether the executor can stage them (the schedule, chunk by chunk through
 * pinned host memory) and the stream it stages through, and host copies of
 * them for the calls it cannot (the call then runs on the copies: "by
 * hand").  The same memory layer (core/mem.h) and rules as the Open MPI
 * component; MPICH here is not CUDA-aware, so a device pointer must never
 * reach it.
 */
#include <stdlib.h>

#include "tacos_pmpi.h"

static int use_cuda = 1;           /* TACOS_CUDA */
static int stage; /* TACOS_STAGE: 1 host buffers staged too, 2 taken for a GPU's, 3 as 1 with
                   * the staging shared by IPC (tests) */
static size_t stage_min_bytes; /* TACOS_STAGE_MIN_BYTES */

void pmpi_memory_settings(int cuda, int stage_as, size_t stage_min)
{
    use_cuda = cuda, stage = stage_as, stage_min_bytes = stage_min;
}

/* Where GPU buffers come from: CUDA's, or host memory taken for a GPU's (tests). */
static const tacos_mc_t *device_mc(void)
{
    return stage == 2 ? tacos_mc_host_as_device() : use_cuda ? tacos_mc_cuda(NULL) : NULL;
}

void pmpi_on_device(call_ctx_t *x, const void *const *bufs, int n)
{
    x->mc = device_mc();
    x->device = tacos_mem_device(x->mc, bufs, n, MPI_IN_PLACE, &x->dev_buf);
}

/* MPICH's predefined op in the core's names, TACOS_RED_NOPS for others. */
static tacos_red_op_t red_op(MPI_Op op)
{
    static const struct {
        MPI_Op op;
        tacos_red_op_t red;
    } map[] = {{MPI_SUM, TACOS_RED_SUM},   {MPI_PROD, TACOS_RED_PROD},    {MPI_MIN, TACOS_RED_MIN},
               {MPI_MAX, TACOS_RED_MAX},   {MPI_LAND, TACOS_RED_LAND},    {MPI_LOR, TACOS_RED_LOR},
               {MPI_LXOR, TACOS_RED_LXOR}, {MPI_BAND, TACOS_RED_BAND},    {MPI_BOR, TACOS_RED_BOR},
               {MPI_BXOR, TACOS_RED_BXOR}, {MPI_MINLOC, TACOS_RED_MINLOC}, {MPI_MAXLOC, TACOS_RED_MAXLOC}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (map[i].op == op)
            return map[i].red;
    return TACOS_RED_NOPS;
}

/* A predefined datatype in the core's names (by its representation),
 * TACOS_T_NTYPES for others. */
static tacos_red_type_t red_type(MPI_Datatype t)
{
    static const struct {
        MPI_Datatype t;
        tacos_red_type_t red;
    } pairs[] = {{MPI_FLOAT_INT, TACOS_T_FLOAT_INT}, {MPI_DOUBLE_INT, TACOS_T_DOUBLE_INT},
                 {MPI_LONG_INT, TACOS_T_LONG_INT},   {MPI_2INT, TACOS_T_2INT},
                 {MPI_SHORT_INT, TACOS_T_SHORT_INT}, {MPI_FLOAT, TACOS_T_FLOAT},
                 {MPI_DOUBLE, TACOS_T_DOUBLE},       {MPI_C_BOOL, TACOS_T_UINT8},
                 {MPI_BYTE, TACOS_T_UINT8}};
    static const MPI_Datatype is_signed[] = {MPI_CHAR, MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT,
                                              MPI_LONG, MPI_LONG_LONG, MPI_INT8_T, MPI_INT16_T,
                                              MPI_INT32_T, MPI_INT64_T};
    static const MPI_Datatype is_unsigned[] = {
        MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T};
    static const tacos_red_type_t by_size[2][9] = {
        {0, TACOS_T_INT8, TACOS_T_INT16, 0, TACOS_T_INT32, 0, 0, 0, TACOS_T_INT64},
        {0, TACOS_T_UINT8, TACOS_T_UINT16, 0, TACOS_T_UINT32, 0, 0, 0, TACOS_T_UINT64}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        if (pairs[i].t == t)
            return pairs[i].red;
    int size = 0, sign = -1;
    for (size_t i = 0; sign < 0 && i < sizeof is_signed / sizeof *is_signed; i++)
        sign = is_signed[i] == t ? 0 : -1;
    for (size_t i = 0; sign < 0 && i < sizeof is_unsigned / sizeof *is_unsigned; i++)
        sign = is_unsigned[i] == t ? 1 : -1;
    PMPI_Type_size(t, &size);
    if (sign < 0 || size < 1 || size > 8 || !by_size[sign][size])
        return TACOS_T_NTYPES;
    return by_size[sign][size];
}

const char *pmpi_device_why(call_ctx_t *x, int contiguous, size_t bytes)
{
    x->red_op = TACOS_RED_SUM, x->red_type = TACOS_T_UINT8; /* data movement: no reductions */
    if (!x->device)
        return NULL;
    if (x->op != MPI_OP_NULL)
        x->red_op = red_op(x->op), x->red_type = red_type(x->unit);
    return tacos_mem_why(x->mc, x->device, contiguous, x->op != MPI_OP_NULL, x->red_op,
                         x->red_type, bytes, stage_min_bytes,
                         "below TACOS_STAGE_MIN_BYTES");
}

int pmpi_memory_bind(void **stream, tacos_call_t *call, call_ctx_t *x)
{
    const tacos_mc_t *mc = x->device     ? x->mc
                           : stage == 1 ? tacos_mc_host()
                           : stage == 3 ? tacos_mc_host_shared()
                                        : NULL;
    if (!mc)
        return MPI_SUCCESS; /* host memory, no staging */
    call->mc = mc;
    call->mem = &x->mem;
    if (!stream)
        return MPI_SUCCESS; /* an operation binds a stream of its own */
    if (!mc->bind) { /* host memory (or taken for a GPU's): the host's stream */
        tacos_mem_host(x, call->tp.reduce, &x->mem);
        return MPI_SUCCESS;
    }
    if (!*stream && mc->stream_new(x->dev_buf, stream)) {
        pmpi_say(0, "a call on GPU buffers: %s", mc->why());
        return MPI_ERR_OTHER;
    }
    mc->bind(*stream, x->red_op, x->red_type, &x->mem);
    return MPI_SUCCESS;
}

/* By hand: copies in, the call on them, copies out. */

int pmpi_mirror(tacos_mirror_t *mm, void **stream, const void *buf, size_t count,
                MPI_Datatype dtype, int later, void **host)
{
    const tacos_mc_t *mc = device_mc();
    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    if (buf && buf != MPI_IN_PLACE && count) { /* its datatype is to be read */
        PMPI_Type_get_extent(dtype, &lb, &ext);
        PMPI_Type_get_true_extent(dtype, &tlb, &text);
    }
    int rc = tacos_mirror_data(mm, mc, stream, buf, count, ext, tlb, text, MPI_IN_PLACE, later,
                               host);
    if (rc == TACOS_ERR_ARG) {
        pmpi_say(0, "a GPU buffer of a datatype with a negative extent is not served");
        return MPI_ERR_TYPE;
    }
    if (rc == TACOS_ERR_NOMEM)
        return MPI_ERR_NO_MEM;
    if (rc) {
        pmpi_say(0, "staging a GPU buffer by hand: %s", mc->why());
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

int pmpi_mirror_copy(const tacos_mirror_t *mm, int to_host)
{
    if (!mm->host || !tacos_mirror_copy(mm, to_host))
        return MPI_SUCCESS;
    pmpi_say(0, "staging a GPU buffer by hand: %s", mm->mc->why());
    return MPI_ERR_OTHER;
}

int pmpi_unmirror(tacos_mirror_t *mm, int out)
{
    int rc = out ? pmpi_mirror_copy(mm, 0) : MPI_SUCCESS;
    tacos_mirror_free(mm, 0);
    return rc;
}

/* Blocking calls' copies by hand: one stream for the process, made once
 * (a communicator's own may not exist: calls that fall back have none). */
void **pmpi_hand_stream(void)
{
    static void *stream;
    return &stream;
}

void pmpi_stream_free(void *stream)
{
    const tacos_mc_t *mc = tacos_mc_cuda(NULL);
    if (stream && mc)
        mc->stream_free(stream);
}
