/* SPDX-License-Identifier: Apache-2.0 */
/* pd_svc: real metadata services on free loopback ports for tests and the scenario runner —
 * etcd (etcd-server), redis (redis-server) and pdkv-metaserver — each with a temporary data
 * directory and a log file, stopped (and the directory removed) by pd_svc_stop. */
#ifndef PD_SVC_H
#define PD_SVC_H

#include "pd_meta_scheme.h"
#include "pd_proc.h"

enum pd_svc_kind { PD_SVC_ETCD, PD_SVC_REDIS, PD_SVC_METASERVER };

struct pd_svc {
	enum pd_svc_kind kind;
	struct pd_proc proc;
	char host[64];
	int port;
	char conn[256];    /* "etcd://127.0.0.1:P", "redis://127.0.0.1:P",
	                      "http://127.0.0.1:P/metadata" */
	char datadir[512]; /* removed on stop */
	char log[512];
};

/* host NULL = 127.0.0.1; workdir NULL = $TMPDIR or /tmp. Waits until the service answers.
 * Returns 0, or 77-style -ENOENT when the server binary is not installed (caller may SKIP). */
int pd_svc_start(enum pd_svc_kind kind, const char *host, const char *workdir, struct pd_svc *out);
void pd_svc_stop(struct pd_svc *s);
/* Fault injection: sends sig to the service (and reaps it; its directory stays), and starts
 * it again, empty (etcd's data removed; redis and the metaserver keep nothing), on the same
 * client port. 0 or -errno. */
int pd_svc_kill(struct pd_svc *s, int sig);
int pd_svc_restart(struct pd_svc *s);
const char *pd_svc_kind_name(enum pd_svc_kind kind); /* "etcd" | "redis" | "http" */
/* The metadata store a service is (its pd_meta_scheme row; pd_meta_url builds its URL). */
enum pd_meta_store pd_svc_store(enum pd_svc_kind kind);
/* One GET (body discarded, proxies bypassed); the HTTP status, 0 when nothing answered in time. */
long pd_http_status(const char *url, int timeout_ms);

#endif
