/* SPDX-License-Identifier: Apache-2.0 */
/* hr_slurm: pdkv run --launcher slurm — the allocation (the one pdkv runs inside, or its own
 * from salloc --no-shell), its nodes' addresses, roles placed on them, one srun step per node. */
#ifndef HR_SLURM_H
#define HR_SLURM_H

#include "hr.h"

#include <stdbool.h>
#include <stddef.h>

#define HR_SLURM_NODES_MAX 64

struct hr_remote;

/* One pdkv run's allocation; zeroed by hr_slurm_init, opened on the first scenario that runs
 * through Slurm, closed (own allocation cancelled, remote work dirs removed) at the end. */
struct hr_slurm {
	char args[1024]; /* --slurm-args: salloc's options; "" = run inside SLURM_JOB_ID */
	bool open, own;  /* own: pdkv made the allocation and cancels it */
	bool failed;     /* opening failed once: every scenario reports why, nobody retries */
	char why[600];
	char job[32];    /* the job id the steps run in */
	char prefix[48]; /* every step's name starts with it: pdkv-<pid>- */
	char base[120];  /* the nodes' work dirs: BASE/NODE/SCENARIO (node-local /tmp) */
	size_t n;
	char node[HR_SLURM_NODES_MAX][64];
	char addr[HR_SLURM_NODES_MAX][64]; /* NodeAddr, resolved to an IPv4 address */
	bool used[HR_SLURM_NODES_MAX];     /* a step ran there: its work dir is removed at close */
	unsigned seq;                      /* step names: PREFIX<seq>-NAME */
};

void hr_slurm_init(struct hr_slurm *s, const char *slurm_args);
/* The allocation: SLURM_JOB_ID's (no --slurm-args) or a new one; its nodes and addresses.
 * 0, or -1 with why (also kept in s->why for the scenarios after). */
int hr_slurm_open(struct hr_slurm *s, FILE *progress, char *why, size_t sz);
/* Cancels every step of this run still there, removes the nodes' work dirs, and cancels the
 * allocation when pdkv made it. Idempotent. */
void hr_slurm_close(struct hr_slurm *s);

/* Like hr_remote_setup for Slurm: the scenario's host names (none: prefill, decode, proxy on
 * nodes 0, 1, 2) on the allocation's nodes in order of first use, wrapping round when it has
 * fewer nodes than names. 0 or -1 with why. */
int hr_slurm_setup(struct hr_remote *rm, struct hr_slurm *s, const struct hr_scenario *sc,
                   FILE *progress, char *why, size_t sz);
/* Ends this scenario's steps that are still there (scancel of their ids). */
void hr_slurm_teardown(struct hr_remote *rm);

/* NodeAddr of node (its name when unset), resolved to an IPv4 address (scontrol show node).
 * 0, or -1 with why. */
int hr_slurm_node_addr(const char *node, char *addr, size_t asz, char *why, size_t sz);
/* Step ids (JOB.STEP) of this run whose name starts with name_prefix, comma-separated into
 * out; the number found, or -errno when squeue failed. */
int hr_slurm_steps(const struct hr_slurm *s, const char *name_prefix, char *out, size_t sz);
/* scancel [--signal=SIG] of the comma-separated ids; 0 or squeue/scancel's failure. */
int hr_slurm_cancel(const char *ids, const char *sig);

/* ---- link faults under --launcher slurm (hr_slurm_faults.c) ---- */
/* The scenario has {"link": ..., "action": ...} faults. */
bool hr_scenario_has_link_faults(const struct hr_scenario *sc);
/* Before the deployment: each "down" paired with the next "up" of its link, the link's node
 * (it must run that host alone, not pdkv run itself), its interface (the one holding the node's
 * address) found and CAP_NET_ADMIN there checked by a step. 0 (nothing to do, or ready),
 * 77 with why (a NOTRUN: a cut that cannot be made or undone there, or a flood, which only
 * reaches processes on this host), -1 with why. */
int hr_slurm_faults_prepare(struct hr_remote *rm, FILE *progress, char *why, size_t sz);
/* At the workload's start: one step per cut, down and up on the node's own timer (the node's
 * clock, CLOCK_REALTIME, as Slurm's nodes keep it in step). Its output: WORKDIR/link-*.log. */
void hr_slurm_faults_start(struct hr_remote *rm, const char *workdir);
/* After the workload: waits for each cut's step (its link back up), notes what happened.
 * 0, or -1 with why when a link was never cut or not restored (never a silent PASS). */
int hr_slurm_faults_stop(struct hr_remote *rm, char *why, size_t sz);
/* What the cuts did ("" when none), for the progress and the report's logs. */
const char *hr_slurm_faults_applied(const struct hr_remote *rm);
void hr_slurm_faults_free(struct hr_remote *rm);

#endif
