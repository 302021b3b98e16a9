/* SPDX-License-Identifier: Apache-2.0 */
/* acc_run: where pdkv accept's nodes come from (namespaces it makes, a hosts file, the Slurm
 * allocation) and how one pdkv-bench side runs on a node (ip netns exec, ssh, srun). */
#ifndef PDKV_ACC_RUN_H
#define PDKV_ACC_RUN_H

#include "accept.h"
#include "lib/hr_netns.h"
#include "lib/hr_ssh.h"
#include "pd_proc.h"

struct acc_target {
	struct pd_proc proc; /* netns, slurm: the local process (ip netns exec / srun) */
	int rpid;            /* ssh: the remote process group */
	char log[512];       /* this host's copy of its output */
	char seg[256];       /* the segment it printed */
	bool up;
};

struct acc_run {
	struct acc_node nodes[ACC_MAX_NODES];
	int n;
	char workdir[512];
	char bench[512]; /* pdkv-bench here (netns, slurm: the same path on the nodes) */
	/* bench arguments both sides get (validated by bench_parse), NULL-terminated */
	const char *bargs[96];
	int nbargs;
	uint64_t buffer_size; /* the target's buffer: the largest block x batch x threads */
	double row_timeout_s; /* an initiator run's limit */
	char unit[8];         /* pdkv-bench's --report_unit */
	struct hr_netns nn;
	bool nn_on;
	struct hr_hosts hosts;
	struct hr_ssh ssh;
	bool ssh_on;
	char rdir[128]; /* ssh: the remote work dir */
	struct acc_target t[ACC_MAX_NODES];
};

/* Nodes: 0, 77 (no namespaces here: why), or 2 (bad input: why names the flag or file). */
int acc_nodes_netns(struct acc_run *r, int n, char *why, size_t sz);
int acc_nodes_hosts(struct acc_run *r, const char *path, const char *key, int connect_timeout_s,
                    char *why, size_t sz);
int acc_nodes_slurm(struct acc_run *r, char *why, size_t sz);
/* --netns-slow NODE=RATE: tc tbf at RATE on both ends of NODE's link. 0, or 2 with why. */
int acc_netns_slow(struct acc_run *r, const char *spec, char *why, size_t sz);

/* Starts node x's target; then waits for the segment it prints (up to 60 s), so every node's
 * target starts before the first wait. 0 or -1 with why. */
int acc_target_spawn(struct acc_run *r, int x, char *why, size_t sz);
int acc_target_wait(struct acc_run *r, int x, char *why, size_t sz);
/* Runs the initiator on node i against node j's target, its rows into p. */
void acc_pair_run(struct acc_run *r, int i, int j, struct acc_pair *p);
/* Stops every target, removes namespaces, ends ssh connections. Idempotent. */
void acc_run_teardown(struct acc_run *r);

#endif
