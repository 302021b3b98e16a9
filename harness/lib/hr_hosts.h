/* SPDX-License-Identifier: Apache-2.0 */
/* hr_hosts: a scenario's "hosts", "faults" and "mtu" — the roles placed in network namespaces
 * (hr_netns), the scenario the runner then runs on those addresses, and the timed link faults. */
#ifndef HR_HOSTS_H
#define HR_HOSTS_H

#include "hr.h"
#include "hr_netns.h"

#include <pthread.h>

/* Validates and keeps "hosts" ({"prefill": NAME, "decode": ..., "proxy": ..., "metadata": ...,
 * "reference": ...}), "faults" ([{"at": "during_transfer", "link": NAME, "action": "down"|"up",
 * "after_ms": N}]) and "mtu". Called by hr_scenario_parse; -1 and err naming the field. */
int hr_scenario_parse_hosts(const char *path, const cJSON *root, struct hr_scenario *sc, char *err,
                            size_t errsz);
/* The host a role runs on, NULL = the runner's own stack. metadata and reference default to
 * the proxy's host. */
const char *hr_role_host(const struct hr_scenario *sc, const char *role);

struct hr_net {
	bool on;                /* the scenario has "hosts" */
	struct hr_netns nn;     /* the namespaces made for it */
	struct hr_scenario run; /* shallow copy of the scenario on the namespace addresses */
	char addr[3][20];       /* prefill, decode, proxy */
	pthread_t faults;
	bool faults_on;
	volatile int stop;
	double t0;               /* the workload's start (pd_now_s) */
	bool down[HR_NETNS_MAX]; /* nn.h[i]'s link is down (a fault); restored after the workload */
	char applied[600];       /* what the fault thread did, for the report */
};

/* 0 when the scenario has no hosts or they are ready (net->on), 77 when this host cannot make
 * namespaces (why = the reason, a NOTRUN), -1 when making them failed (why). */
int hr_net_setup(struct hr_net *net, const struct hr_scenario *sc, char *why, size_t sz);
/* The namespace whose address is addr, NULL when addr is on the runner's stack. */
const char *hr_net_ns_of(const struct hr_net *net, const char *addr);
/* Starts the scenario's faults, timed from now (the workload's start); stop joins them and
 * brings up every link they left down (noted in applied), before the runner reads /metrics. */
void hr_net_faults_start(struct hr_net *net);
void hr_net_faults_stop(struct hr_net *net);
/* Removes every namespace and link; idempotent. */
void hr_net_teardown(struct hr_net *net);

#endif
