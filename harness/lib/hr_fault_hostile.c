/* SPDX-License-Identifier: Apache-2.0 */
/* hr_fault_hostile: what the hostile-peer fault kinds (hr_fault_rogue.c, hr_fault_flood.c)
 * share — the schema every such entry has, where prefill's side channel and KV regions are (from
 * its log), a bounded TCP connect, and whether the peer closed a connection. */
#include "hr_faults.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cfg/cfg_vllm.h"
#include "pd_util.h"

bool hr_fault_in_list(const char *s, const char *const *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, l[i]))
			return true;
	return false;
}

bool hr_fault_names_ok(const cJSON *v, const char *const *list, size_t n)
{
	if (cJSON_IsString(v))
		return hr_fault_in_list(v->valuestring, list, n);
	if (!cJSON_IsArray(v) || !v->child)
		return false;
	for (const cJSON *x = v->child; x; x = x->next)
		if (!cJSON_IsString(x) || !hr_fault_in_list(x->valuestring, list, n))
			return false;
	return true;
}

bool hr_fault_num_in(const cJSON *v, double lo, double hi)
{
	return !v || (cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi);
}

int hr_fault_hostile_common(const char *path, const char *field, const cJSON *e,
                            const char *const *keys, size_t nkeys, const char *has, char *err,
                            size_t sz)
{
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(e, "at");

	for (const cJSON *k = e->child; k; k = k->next)
		if (!hr_fault_in_list(k->string, keys, nkeys))
			return pd_field_err(path, err, sz, field, "unknown key \"%s\" (%s)",
			                    k->string, has);
	if (!cJSON_IsString(at) || strcmp(at->valuestring, "during_workload"))
		return pd_field_err(path, err, sz, field, "expected \"at\": \"during_workload\"");
	if (!hr_fault_num_in(cJSON_GetObjectItemCaseSensitive(e, "after_ms"), 0, 600000) ||
	    !hr_fault_num_in(cJSON_GetObjectItemCaseSensitive(e, "duration_ms"), 1, 60000))
		return pd_field_err(path, err, sz, field,
		                    "\"after_ms\": expected 0..600000, \"duration_ms\" 1..60000");
	return 0;
}

/* ------------------------------------------------------------------ where things are */

/* V1: prefill's KV regions from its log ("N KV buffers x B blocks x L bytes"): N and L. */
bool hr_hostile_kv_regions(struct hr_deploy *d, int *nbufs, long *block_len)
{
	const char *log = hr_node_log(d, &d->prefill);
	char line[2048];
	bool got = false;
	FILE *f = log ? fopen(log, "r") : NULL;
	while (f && !got && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "segment ");
		got = p && (p = strchr(p, ',')) &&
		      sscanf(p, ", %d KV buffers x %*d blocks x %ld bytes", nbufs, block_len) == 2;
	}
	if (f)
		fclose(f);
	return got && *nbufs > 0 && *nbufs <= 64;
}

/* Prefill's side channel from its log: V0 "zmq bind H:D/A", V1 "side channel tcp://H:P". */
bool hr_hostile_side_channel(struct hr_deploy *d, struct hr_addr *a, int *ack_port)
{
	const char *log = hr_node_log(d, &d->prefill);
	char line[2048];
	bool v0 = d->sc->gen == CFG_GEN_V0, got = false;
	FILE *f = log ? fopen(log, "r") : NULL;

	while (f && !got && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, v0 ? "kvc: pipe prefill end:" : "side channel tcp://");
		if (!p)
			continue;
		if (v0)
			got = (p = strstr(p, "zmq bind ")) &&
			      sscanf(p, "zmq bind %63[^:]:%d/%d", a->host, &a->port, ack_port) == 3;
		else
			got = sscanf(p, "side channel tcp://%63[^:]:%d", a->host, &a->port) == 2;
	}
	if (f)
		fclose(f);
	if (got && (!strcmp(a->host, "*") || !strcmp(a->host, "0.0.0.0")))
		snprintf(a->host, sizeof(a->host), "%s", d->prefill.host);
	return got;
}

/* ------------------------------------------------------------------ sockets */

/* A TCP connection to a from src (NULL: any); -1 when it could not be made within 2 s. */
int hr_hostile_connect(const char *src, const struct hr_addr *a)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)a->port)};
	struct sockaddr_in me = {.sin_family = AF_INET};
	struct pollfd p;
	int fd, e = 0;
	socklen_t el = sizeof(e);

	if (inet_pton(AF_INET, a->host, &sa.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (src && (inet_pton(AF_INET, src, &me.sin_addr) != 1 ||
	            bind(fd, (struct sockaddr *)&me, sizeof(me)))) {
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	if (poll(&p, 1, 2000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Did the peer close fd within ms? (reads and drops what it sends) */
bool hr_hostile_closed_within(int fd, int ms)
{
	double end = pd_now_s() + ms / 1000.0;
	char b[4096];
	while (pd_now_s() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;
		if (poll(&p, 1, 50) <= 0)
			continue;
		r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
	return false;
}
