/* SPDX-License-Identifier: Apache-2.0 */
/* hr_deploy: internal to the runner library — one scenario's processes (hr_deploy.c) as used by
 * the scenario flow (hr_run.c). */
#ifndef HR_DEPLOY_H
#define HR_DEPLOY_H

#include "hr.h"
#include "hr_node.h"
#include "testsvc/pd_svc.h"

struct hr_net;
struct hr_remote;
struct hr_pfaults;

struct hr_deploy {
	char workdir[512];
	const struct hr_scenario *sc;
	char standin_exe[600], proxy_exe[600];
	char env[800];         /* V0: MOONCAKE_CONFIG_PATH=WORKDIR/mooncake.json; V1: "" */
	int bootstrap_port[2]; /* V1: VLLM_MOONCAKE_BOOTSTRAP_PORT of prefill [0] and decode [1] */
	struct pd_svc meta;
	bool meta_up;
	bool plain_on; /* a check compares against the plain stand-in */
	struct hr_node prefill, decode, plain, proxy;
	struct hr_node metanode; /* with "hosts": the metadata service, on its role's host */
	struct hr_vars vars;
	int picked[HR_MAX_VARS]; /* the ${PORT_X} blocks handed out so far */
	size_t npicked;
	struct hr_net *net;    /* "hosts": the namespaces the nodes run in (hr_hosts.h), or NULL */
	struct hr_remote *rem; /* --hosts: the machines the nodes run on (hr_launch.h), or NULL */
	char why[600];         /* what went wrong in a step that has no err argument */
	struct hr_pfaults *pf; /* process faults during the workload (hr_faults.c), or NULL */
};

/* ---- process faults (hr_faults.c and its kinds, hr_faults.h): "faults" entries with "kill",
 * "rogue" or "flood" ---- */
/* Validates one such entry (field names it in errors). 0 or -1 with err set. */
int hr_faults_parse_entry(const char *path, const char *field, const cJSON *e, char *err,
                          size_t errsz);
bool hr_faults_is_process(const cJSON *e); /* the entry names a kind of hr_faults.c's table */
/* Starts the fault thread for the scenario's process faults (none: nothing). */
void hr_faults_start(struct hr_deploy *d);
/* Waits for the faults still due (each bounded), and a probe request after restarts; what
 * was done ("decode SIGKILL at +0.5s; ...") into notes, "" when nothing. */
void hr_faults_stop(struct hr_deploy *d, char *notes, size_t sz);
/* Ends the fault thread (hr_deploy_stop calls it once the nodes are stopped: what it restarted
 * was forked from it and would get SIGTERM when it ends). */
void hr_faults_release(struct hr_deploy *d);

/* With hostile faults (and no restart): the probe request after the faults, sent once the
 * runner has read /metrics so the counters the checks compare hold the workload alone. */
void hr_faults_probe_hostile(struct hr_deploy *d, char *notes, size_t nsz);

/* ---- deployment plan: what to start and with which arguments ---- */
/* Forgets what an earlier attempt picked (ports, variables) so a retry starts fresh. */
void hr_deploy_reset(struct hr_deploy *d);
/* The test service behind a scenario's metadata store (m is not HR_META_P2P); inline, so the
 * files that start or name a store share it without a call between them. */
static inline enum pd_svc_kind hr_meta_svc(enum hr_meta m)
{
	return m == HR_META_ETCD    ? PD_SVC_ETCD
	       : m == HR_META_REDIS ? PD_SVC_REDIS
	                            : PD_SVC_METASERVER;
}
/* Starts the scenario's metadata service (none for P2PHANDSHAKE): 0, -ENOENT when its server
 * is not installed, or another -errno. */
int hr_deploy_start_meta(struct hr_deploy *d);
/* ${...} variables: hosts, work dir, metadata, and a fresh port block per ${PORT_X}. */
int hr_deploy_setup_vars(struct hr_deploy *d);
/* V0: WORKDIR/mooncake.json from the scenario's template, and the env line pointing at it.
 * V1 (no mooncake.json): free VLLM_MOONCAKE_BOOTSTRAP_PORT blocks for prefill and decode. */
int hr_deploy_write_mooncake(struct hr_deploy *d, char *err, size_t errsz);
/* A free HTTP port and the URLs for every node the scenario needs. */
int hr_deploy_init_nodes(struct hr_deploy *d);
/* argv of a stand-in launched the way the guide launches vLLM; kv NULL = plain stand-in */
cJSON *hr_standin_argv(struct hr_deploy *d, const struct hr_node *n, const cJSON *kv,
                       const cJSON *side_args, char *err, size_t errsz);
/* argv of the proxy in front of prefill and decode, plus the scenario's proxy_args */
cJSON *hr_proxy_argv(struct hr_deploy *d, char *err, size_t errsz);

/* ---- processes: hr_node.h ---- */

/* The environment of a connector stand-in (side 0 = prefill, 1 = decode): the V0 config path
 * or the V1 bootstrap port, then the scenario's "env". NULL-terminated, malloc'd strings;
 * free with hr_env_free. */
char **hr_standin_env(const struct hr_deploy *d, int side);
void hr_deploy_stop(struct hr_deploy *d);
bool hr_deploy_all_gone(const struct hr_deploy *d);
/* {"prefill": {"warnings": N, "errors": N, "first_warning": ..., "first_error": ...}, ...} */
cJSON *hr_deploy_logs(const struct hr_deploy *d);

#endif
