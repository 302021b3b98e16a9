/* SPDX-License-Identifier: Apache-2.0 */
/* hr_netns: separate network stacks on one machine — one Linux network namespace per scenario
 * host, veth pairs into a bridge, RFC 2544 addresses, link cuts and packet drops, full cleanup. */
#ifndef HR_NETNS_H
#define HR_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#define HR_NETNS_MAX    8
#define HR_NETNS_PREFIX "pdkv-" /* every namespace this module makes: pdkv-<pid>-<host> */

struct hr_nshost {
	char name[32]; /* the scenario's host name */
	char ns[64];   /* netns name, pdkv-<pid>-<name> */
	char port[16]; /* its veth end on the bridge: the switch port a link fault cuts */
	char addr[16]; /* 198.18.x.y / 198.19.x.y, on eth0 inside ns */
	bool drops;    /* an nftables drop rule is installed */
};

/* A run's layout: the bridge lives in its own namespace (pdkv-<pid>.br), so a run adds exactly
 * one interface to the caller's namespace (pdkv<pid>r, the runner's own stack on the bridge). */
struct hr_netns {
	char prefix[32];    /* pdkv-<pid> */
	char bridge_ns[64]; /* pdkv-<pid>.br */
	char root_if[16];   /* pdkv<pid>r in the caller's namespace */
	char root_addr[16]; /* x.y.z.1: where roles left out of "hosts" (the runner's stack) live */
	char subnet[24];    /* x.y.z.0/24 */
	int mtu;
	size_t n;
	struct hr_nshost h[HR_NETNS_MAX];
	bool created; /* anything exists that hr_netns_destroy must remove */
};

/* 0 when this process may create namespaces; else -EPERM / -ENOENT with the reason
 * (not root, no CAP_NET_ADMIN, no `ip`, `ip netns add` refused) for a NOTRUN. */
int hr_netns_probe(char *why, size_t sz);
/* Valid host name for a namespace: 1..20 of [A-Za-z0-9_-]. */
bool hr_netns_name_ok(const char *host);
/* Creates one namespace per host (duplicates collapse), veths into the bridge, addresses and
 * mtu (0 = 1500). On failure everything made so far is removed; -errno and err. */
int hr_netns_create(struct hr_netns *nn, const char *const *hosts, size_t n, int mtu, char *err,
                    size_t errsz);
const struct hr_nshost *hr_netns_find(const struct hr_netns *nn, const char *host);
/* argv prefix that runs a command inside host's namespace: {"ip","netns","exec",NS}; the
 * command keeps its pid (ip execs it). Returns 4, or -ENOENT for an unknown host. */
int hr_netns_exec_prefix(const struct hr_netns *nn, const char *host, const char *out[4]);
/* Moves the calling process (a child after fork) into host's namespace: 0 or -errno. */
int hr_netns_enter(const struct hr_netns *nn, const char *host);
/* Link fault: the host's switch port down or up (`ip link set`). 0 or -errno. */
int hr_netns_link(struct hr_netns *nn, const char *host, bool up, char *err, size_t errsz);
/* Drops percent (1..100) of the packets the host receives through nftables (0 removes the
 * rule). -ENOTSUP with err when nft or the kernel's nf_tables is missing. */
int hr_netns_drop(struct hr_netns *nn, const char *host, int percent, char *err, size_t errsz);
/* Kills what still runs inside the namespaces, deletes them and the root veth. Idempotent. */
void hr_netns_destroy(struct hr_netns *nn);
/* Removes pdkv-<pid>-* namespaces and pdkv<pid>r links whose pid no longer runs (a run that
 * was SIGKILLed). Returns how many namespaces it removed. */
int hr_netns_cleanup_stale(void);

/* Runs argv (PATH searched, stdin /dev/null) with stdout+stderr collected into out (truncated to
 * outsz); its exit status (0 = ok), -ENOENT when it is not installed, -ETIMEDOUT when it was
 * killed after timeout_ms, another -errno when it could not start. Also used by hr_ssh. */
int hr_cmd_run(const char *const argv[], char *out, size_t outsz, int timeout_ms);

#endif
