/* SPDX-License-Identifier: Apache-2.0 */
/* hr_launch: where one process of a scenario runs — on this host (pd_proc, inside its host's
 * namespace with "hosts") or on another machine through hr_ssh (pdkv run --hosts). */
#ifndef HR_LAUNCH_H
#define HR_LAUNCH_H

#include "hr.h"
#include "hr_ssh.h"

struct hr_deploy;
struct hr_node;

/* The few things the deployment does with a process; one table per way of running it, so
 * hr_deploy.c never asks which one it has. */
struct hr_launch_ops {
	const char *name;
	/* argv[0] is this host's path of the program; the log goes to n->proc.log (here) */
	int (*spawn)(struct hr_deploy *d, struct hr_node *n, char *const argv[], char *const env[],
	             char *err, size_t errsz);
	int (*alive)(struct hr_deploy *d, struct hr_node *n); /* 1 running, 0 gone */
	void (*stop)(struct hr_deploy *d, struct hr_node *n, int grace_ms);
	void (*fetch_log)(struct hr_deploy *d, struct hr_node *n); /* remote log into proc.log */
	void (*describe_exit)(const struct hr_node *n, char *out, size_t sz);
	int alive_every; /* a health wait asks alive every Nth round (an ssh round trip costs) */
	/* a process fault's signal to the node's process where one to the local pid's group
	 * would not reach it (srun forwards TERM to its step, never KILL); NULL: that group */
	void (*signal)(struct hr_deploy *d, struct hr_node *n, int sig);
};

extern const struct hr_launch_ops hr_launch_local, hr_launch_ssh;
extern const struct hr_launch_ops hr_launch_slurm; /* srun job steps (hr_slurm_launch.c) */

enum {
	HR_ROLE_PREFILL,
	HR_ROLE_DECODE,
	HR_ROLE_PROXY,
	HR_ROLE_METADATA,
	HR_ROLE_REFERENCE,
	HR_NROLES
};

/* pdkv run --hosts: the scenario's host names mapped to machines through hosts.txt; with
 * --launcher slurm to the allocation's nodes (hr_slurm.h) */
struct hr_remote {
	bool on;
	const struct hr_hosts *hosts;
	struct hr_ssh ssh;
	bool ssh_up;
	char base[128];                  /* remote work dirs: BASE/HOST/SCENARIO */
	char host[HR_NROLES][32];        /* hosts.txt name per role, "" = this host */
	char addr[HR_NROLES][128];       /* its address */
	struct hr_scenario run;          /* shallow copy on those addresses */
	const struct hr_launch_ops *ops; /* the nodes' launcher, NULL = hr_launch_ssh */
	struct hr_slurm *slurm;          /* --launcher slurm: the allocation */
	cJSON *own_hosts;           /* "hosts" made up for a scenario without (slurm), or NULL */
	struct hr_slurm_faults *lf; /* slurm: the link cuts (hr_slurm_faults.c), or NULL */
};

/* With o->hosts and a scenario that has "hosts": every host it names must be in hosts.txt,
 * reachable, authenticated, with pdkv installed (checked here, once per host); ssh's state
 * (known_hosts) goes in WORKDIR/.ssh. 0 (rm->on tells whether it applies), or -1 with why. */
int hr_remote_setup(struct hr_remote *rm, const struct hr_scenario *sc, const struct hr_opts *o,
                    const char *workdir, char *why, size_t sz);
/* Removes the remote work dirs (their logs were fetched when each process stopped) and ends
 * the ssh connections. Idempotent. */
void hr_remote_teardown(struct hr_remote *rm);
/* The address a role runs on: a namespace's, a remote host's, or the scenario's own. */
const char *hr_role_addr(const struct hr_deploy *d, int role);
/* The address is not this host's own (a namespace or a remote machine): pick ports on
 * loopback instead. */
bool hr_addr_elsewhere(const struct hr_deploy *d, const char *addr);
/* Picks the launcher of node n (role) and fills n's remote host. */
void hr_node_place(struct hr_deploy *d, struct hr_node *n, int role);
/* The metadata service as a node of the deployment (scenarios with "hosts"): on the metadata
 * role's host, through its launcher; waits until it answers. 0, -ENOENT (not installed here),
 * or -errno with why. */
int hr_launch_meta(struct hr_deploy *d, char *why, size_t sz);

#endif
