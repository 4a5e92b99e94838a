/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared inside libtacos-probe; not installed. */
#ifndef TACOS_PROBE_INTERNAL_H
#define TACOS_PROBE_INTERNAL_H

#include "tacos_probe.h"

/* Not exported from libtacos-probe.so. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* The default model's figures (README "Topology probing"): used where no
 * source measured anything. */
#define TACOS_DEFAULT_SHM_LAT_US 0.5
#define TACOS_DEFAULT_SHM_BW_GBPS 10.0
#define TACOS_DEFAULT_NET_LAT_US 2.0
#define TACOS_DEFAULT_NET_BW_GBPS 12.5
#define TACOS_DEFAULT_NVLINK_LAT_US 1.0
/* Shared memory between processes bound to different packages crosses the
 * inter-socket link: this much more latency and this share of bandwidth. */
#define TACOS_XPKG_EXTRA_LAT_US 0.2
#define TACOS_XPKG_BW_SHARE 0.5

uint64_t tacos_probe_host_hash(const char *name);

/* NVLink of the record's GPU through libnvidia-ml.so.1 (dlopen): fills
 * nvlink_gbps/nvswitch_gbps from the active links.  busids[j] is host GPU
 * j's PCI bus id ("dddd:bb:dd.f").  Returns TACOS_OK, or an error when NVML
 * is absent or does not know the GPU (the record is then unchanged). */
int tacos_probe_nvml(tacos_probe_record_t *r, char (*busids)[16], int ngpus);

/* Latency and bandwidth of the shared-memory and network transports UCT
 * offers (dlopen of `lib`); classes it has nothing for keep their figures. */
int tacos_probe_ucx(tacos_probe_record_t *r, const char *lib);

/* The measurement's steps that fabric_net.c shares (net.c).  An exchange
 * of this rank (a host's leader) with the leaders of hosts[0..k) (k <= 2),
 * bytes[i] each way, `reps` times, timed from an untimed 8-byte token;
 * best: the times of the repetition that ended soonest. */
int tacos_net_exchange(const tacos_net_comm_t *c, const int *leader, const int *hosts, int k,
                       const size_t *bytes, int reps, double *best);
/* The max over every rank of v[0..n), and an error on every rank where an
 * exchange failed on any (`failed`: this rank's). */
int tacos_net_agree_max(const tacos_net_comm_t *c, double *v, int n, int failed);
/* TACOS_ERR_NOMEM on every rank ("a rank ran out of memory <what>") where
 * any rank is short (`short_here`: this one), else 0: agreed before any
 * exchange, so that no rank returns alone and leaves others waiting. */
int tacos_net_agree_memory(const tacos_net_comm_t *c, int short_here, const char *what);

/* The tree of a Slurm topology.yaml (fabric_yaml.c) as topology.conf
 * lines: *lines (malloc'd) one "SwitchName=... Switches=... Nodes=..." line
 * per switch, *at (malloc'd) the YAML line of each of the *n; messages
 * name `name` and the line. */
int tacos_fabric_yaml_lines(const char *text, const char *name, char **lines, int **at, int *n);

/* fabric_net.c's steps that fabric_infer.c shares: the monotonic clock in
 * us; a size for `bytes` (a multiple of 4 KiB, at least TACOS_NET_S1_BYTES,
 * at most TACOS_NET_MAX_BYTES); bytes per us of an exchange of `bytes` in t
 * us of which t8 latency; the median of v[0..n) (sorts v). */
double tacos_fabric_now_us(void);
size_t tacos_fabric_sized(double bytes);
double tacos_fabric_rate(size_t bytes, double t8, double t);
double tacos_fabric_median(double *v, int n);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
