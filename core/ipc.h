/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CUDA IPC between the ranks of a host: whether a call takes it, agreed by
 * the ranks, and whether they can map each other's memory (ipc.c).
 */
#ifndef TACOS_IPC_H
#define TACOS_IPC_H

#include "comm_internal.h"

/* A block a rank exports so that the ranks of its host test mapping it. */
typedef struct {
    tacos_ipc_desc_t d;
    long long ok; /* made and exported (a long long: no padding in the message) */
} tacos_ipc_probe_t;

/* A message of the agreement: every rank's "no" bits ORed (bit 0: no
 * IPC, bit 1: no schedule), and the schedule's hash and its complement
 * ORed (equal on every rank where h & nh is 0). */
typedef struct {
    uint64_t h, nh;
    uint64_t no;
} tacos_vote_msg_t;

/* The agreement of a persistent or nonblocking call, without blocking (ipc.c). */
typedef struct {
    int phase;       /* 0: none in flight */
    int round, test; /* test: the communicator's mapping was untested at the call's creation */
    int plan_no;     /* after it ended: some rank had not the call's schedule, or another */
    tacos_vote_msg_t in, *mine; /* mine: this rank's so far, what it sends (own memory:
                                 * an abandoned send may outlive the agreement) */
    unsigned char no;
    void **live;     /* the requests in flight (nlive), each a send or a receive */
    char *sends, *done;
    int nlive;
    tacos_ipc_probe_t *probes; /* with test: one per rank (this rank's at its index) */
    void *block;               /* with test: what this rank exports */
} tacos_ipc_vote_t;

/* A blocking call: *ipc = the call's component where the ranks agree to
 * read each other's staging through it, else NULL (a collective where the
 * call may take IPC; nonzero: the binding's status or a TACOS_ERR_*). */
int tacos_ipc_agree(tacos_comm_t *c, const tacos_call_t *call, const tacos_mc_t **ipc);

/* At the creation of a persistent or nonblocking call (in collective
 * order): whether it agrees at its first start (then v is set up for it). */
int tacos_ipc_eligible(tacos_comm_t *c, const tacos_call_t *call, int persistent,
                       tacos_ipc_vote_t *v);

/* The agreement of such a call: start, then progress until *answer is 1
 * (IPC) or -1 (staged); ask_ipc 0: IPC is not asked (the answer is -1).
 * With plan, the same rounds agree whether every rank has the call's
 * schedule, the same one (*plan: its hash; NULL: this rank has none);
 * v->plan_no at the end: not so.  On an error the agreement is abandoned. */
int tacos_ipc_vote_start(tacos_ipc_vote_t *v, tacos_comm_t *c, const tacos_call_t *call,
                         int ask_ipc, int plan, const uint64_t *hash);
int tacos_ipc_vote_progress(tacos_ipc_vote_t *v, tacos_comm_t *c, const tacos_call_t *call,
                            int *answer);
/* Gives up what is in flight and frees the agreement's memory. */
void tacos_ipc_vote_free(tacos_ipc_vote_t *v, const tacos_call_t *call);

#endif
