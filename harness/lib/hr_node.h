/* SPDX-License-Identifier: Apache-2.0 */
/* hr_node: one process of a scenario's deployment (hr_node.c, the library's ground floor):
 * spawn through its launcher, health wait, liveness, logs. hr_find_bin is declared in hr.h. */
#ifndef HR_NODE_H
#define HR_NODE_H

#include "hr.h"
#include "pd_proc.h"

struct hr_deploy;
struct hr_launch_ops;

struct hr_node {
	char name[32];
	struct pd_proc proc; /* local: the process; remote: proc.log is where its log is fetched */
	bool started;
	const struct hr_launch_ops *ops; /* how it runs (hr_launch.h), set by hr_node_place */
	char rhost[32];                  /* remote: its hosts.txt name */
	char rdir[512];                  /* remote: its work dir there */
	int rpid;                        /* remote: its pid (= process group) there, 0 = gone */
	char host[64];
	int port;
	char base_url[128]; /* http://host:port */
	char health_url[160];
	char metrics_url[160];
	/* what hr_spawn ran, kept for a restart fault (hr_faults.c) */
	cJSON *spawn_argv;
	char **spawn_env;
};

/* The line of a log that best explains a failed start (its first "error" line, else its last). */
void hr_log_tail(const char *path, char *out, size_t sz);
void hr_env_free(char **env);
/* argv_json: array of strings (argv[0] = full path); env: NULL-terminated "K=V" list or NULL.
 * Log: WORKDIR/NAME.log. n->ops must be set (hr_node_place); -EINVAL with d->why when not. */
int hr_spawn(struct hr_deploy *d, struct hr_node *n, const char *name, cJSON *argv_json,
             char *const *env);
/* Waits until every node's health_url answers 200 (no URL: its port accepts); a node that exits
 * fails at once with its log's telling line in why. */
int hr_wait_healthy(struct hr_deploy *d, struct hr_node **nodes, size_t n, double deadline,
                    volatile sig_atomic_t *stop, char *why, size_t sz);
/* Through the node's launcher: running (1) or gone (0); the local path of its log (fetched
 * back first when it ran elsewhere). */
int hr_node_alive(struct hr_deploy *d, struct hr_node *n);
const char *hr_node_log(struct hr_deploy *d, struct hr_node *n);

#endif
