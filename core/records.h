/* SPDX-License-Identifier: BSD-3-Clause */
/* The probe records' side of the core's topology (topology.c), for the
 * exchange inside requests (setup.c). */
#ifndef TACOS_RECORDS_H
#define TACOS_RECORDS_H

#include "comm_internal.h"
#include "tacos_probe.h"

/* This process's probe record (probed at the first call, with c's settings). */
const tacos_probe_record_t *tacos_comm_local_record(const tacos_comm_t *c);

/* The topology of every rank's record, recs[0..size), as
 * tacos_comm_probed_topology makes it but neither calibrated nor measured
 * (setup.c; local: the same on every rank from the same records). */
int tacos_comm_records_topology(const tacos_comm_t *c, tacos_probe_record_t *recs,
                                tacos_topo_t **out);

/* Whether recs[0..n) name more than one host. */
int tacos_comm_spans_hosts(const tacos_probe_record_t *recs, int n);

#endif
