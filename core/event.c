/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stable form of each call's decision: one line tests and tools can
 * read whatever the prose of the reasons says (docs/troubleshooting.md,
 * "Events"), with a key per reason.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tacos_comm.h"

/* Each reason's key, by the reason's first words (the first that matches).
 * tests/unit/test_docs.sh fails where a reason the sources give has none, or a
 * key is missing from the doc. */
static const struct {
    const char *text, *key;
} reason_keys[] = {
    {"nothing to move", "nothing_to_move"},
    {"one rank", "one_rank"},
    {"intercommunicator", "intercommunicator"},
    {"an intercommunicator", "intercommunicator"},
    {"coll/tacos is off or its settings differ", "off_or_settings_differ"},
    {"called by the previous component during", "setup"},
    {"no usable topology", "no_topology"},
    {"synthesis failed or ranks disagreed", "no_schedule"},
    {"not planned yet", "not_planned"},
    {"a rank lacked the schedule", "schedule_not_everywhere"},
    {"a schedule agreed in the request", "agreed_in_request"},
    {"the communicator has no state yet", "no_state_yet"},
    {"no state", "no_state"},
    {"buffer larger than INT_MAX", "buffer_over_int"},
    {"a block of more than 2 GiB", "block_over_2gib"},
    {"a count beyond int", "count_over_int"},
    {"non-commutative op", "noncommutative_op"},
    {"datatype whose elements overlap", "overlapping_datatype"},
    {"a user-defined op (nonblocking", "user_op_nonblocking"},
    {"served by the previous component", "previous_component"},
    {"on one node: MPICH's own", "one_node"},
    {"no previous component; nonblocking", "v_nonblocking"},
    {"no previous component; intercommunicator", "v_intercommunicator"},
    {"no previous component; one rank", "v_one_rank"},
    {"no previous component; MPI_IN_PLACE", "v_in_place"},
    {"no previous component; GPU buffers on a rank", "v_gpu_buffers"},
    {"no previous component", "no_previous_component"},
    {"coll/tacos was built without CUDA", "no_cuda_build"},
    {"host and GPU buffers in one call", "mixed_memory"},
    {"GPU buffer with a non-contiguous datatype", "noncontiguous_gpu_buffer"},
    {"user-defined op on GPU buffers", "user_op_gpu"},
    {"no GPU reduction for this op", "no_gpu_reduction"},
    {"MPI_IN_PLACE", "in_place"},
    {"a negative displacement", "negative_displacement"},
    {"not served on GPU buffers", "not_served_on_gpu"},
};

/* A parameter's name as the table has it: past the binding's prefix
 * ("coll_tacos_", "TACOS_"), in lower case, up to a space. */
static void param_name(const char *p, char *out, size_t room)
{
    if (!strncmp(p, "coll_tacos_", 11))
        p += 11;
    else if (!strncmp(p, "TACOS_", 6))
        p += 6;
    size_t i = 0;
    for (; p[i] && p[i] != ' ' && i + 1 < room; i++)
        out[i] = (char)tolower((unsigned char)p[i]);
    out[i] = 0;
}

const char *tacos_reason_key(const char *why, char buf[64])
{
    if (!why)
        return "-";
    for (size_t i = 0; i < sizeof reason_keys / sizeof *reason_keys; i++)
        if (!strncmp(why, reason_keys[i].text, strlen(reason_keys[i].text)))
            return reason_keys[i].key;
    /* the reasons that name a parameter: "below P", "P is 0", "P off" */
    char name[48];
    const char *sp = strchr(why, ' ');
    if (!strncmp(why, "below ", 6)) {
        param_name(why + 6, name, sizeof name);
        snprintf(buf, 64, "%s", name);
        return buf;
    }
    if (sp && (!strcmp(sp, " is 0") || !strcmp(sp, " off"))) {
        param_name(why, name, sizeof name);
        snprintf(buf, 64, "%s_off", name);
        return buf;
    }
    return "other";
}

const char *tacos_event(char buf[TACOS_EVENT_MAX], const char *coll, tacos_mode_t mode,
                        const char *path, const char *why)
{
    static const char *const modes[] = {"blocking", "nonblocking", "persistent"};
    char name[32], key[64];
    size_t i = 0;
    for (; coll[i] && i + 1 < sizeof name; i++)
        name[i] = (char)tolower((unsigned char)coll[i]);
    name[i] = 0;
    snprintf(buf, TACOS_EVENT_MAX, "event coll=%s mode=%s path=%s reason=%s", name,
             modes[mode], path, tacos_reason_key(why, key));
    return buf;
}
