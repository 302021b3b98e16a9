/* SPDX-License-Identifier: Apache-2.0 */
/* hr_fault_flood: the fault kind {"at": "during_workload", "flood": [targets], "connections": N,
 * "mode": "idle"|"slow", "duration_ms": D, "interval_ms": I, "from": ADDR} — idle or
 * byte-at-a-time connections against the named servers, and what each server did about them. */
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

#define FLOOD_MAX_CONNS 1024 /* per target */
#define FLOOD_TARGETS   7

static const char *const flood_targets[FLOOD_TARGETS] = {
    "prefill", "decode", "proxy", "metadata", "te-data", "handshake", "bootstrap"};

/* ------------------------------------------------------------------ schema */

static int flood_parse(const char *path, const char *field, const cJSON *e, char *err, size_t sz)
{
	static const char *const keys[] = {"at",   "after_ms",    "flood",       "connections",
	                                   "mode", "duration_ms", "interval_ms", "from"};
	const cJSON *v;
	struct in_addr a;
	int ret =
	    hr_fault_hostile_common(path, field, e, keys, PD_ARRAY_SIZE(keys),
	                            "a flood fault has at, after_ms, flood, connections, mode, "
	                            "duration_ms, interval_ms, from",
	                            err, sz);

	if (ret)
		return ret;
	if (!hr_fault_names_ok(cJSON_GetObjectItemCaseSensitive(e, "flood"), flood_targets,
	                       FLOOD_TARGETS))
		return pd_field_err(
		    path, err, sz, field,
		    "\"flood\": expected one or a list of prefill, decode, proxy, metadata, "
		    "te-data, handshake, bootstrap");
	if (!hr_fault_num_in(cJSON_GetObjectItemCaseSensitive(e, "connections"), 1,
	                     FLOOD_MAX_CONNS))
		return pd_field_err(path, err, sz, field, "\"connections\": expected 1..%d",
		                    FLOOD_MAX_CONNS);
	if (!hr_fault_num_in(cJSON_GetObjectItemCaseSensitive(e, "interval_ms"), 10, 10000))
		return pd_field_err(path, err, sz, field, "\"interval_ms\": expected 10..10000");
	v = cJSON_GetObjectItemCaseSensitive(e, "mode");
	if (v && !(cJSON_IsString(v) &&
	           (!strcmp(v->valuestring, "idle") || !strcmp(v->valuestring, "slow"))))
		return pd_field_err(path, err, sz, field,
		                    "\"mode\": expected \"idle\" or \"slow\"");
	v = cJSON_GetObjectItemCaseSensitive(e, "from");
	if (v && !(cJSON_IsString(v) && inet_pton(AF_INET, v->valuestring, &a) == 1))
		return pd_field_err(
		    path, err, sz, field,
		    "\"from\": expected an IPv4 address of this host (e.g. 127.0.0.9)");
	return 0;
}

/* ------------------------------------------------------------------ where the targets listen */

/* The listening TCP sockets of pid (its own network namespace's table). */
static size_t listen_ports(int pid, struct hr_addr *out, size_t max)
{
	unsigned long inodes[512];
	size_t ni = 0, n = 0;
	char path[64], line[512];
	struct dirent *de;
	DIR *dir;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	if (!(dir = opendir(path)))
		return 0;
	while ((de = readdir(dir)) && ni < PD_ARRAY_SIZE(inodes)) {
		char lp[340], tgt[64];
		ssize_t l;
		snprintf(lp, sizeof(lp), "%s/%s", path, de->d_name);
		l = readlink(lp, tgt, sizeof(tgt) - 1);
		if (l > 0 && (tgt[l] = '\0', sscanf(tgt, "socket:[%lu]", &inodes[ni]) == 1))
			ni++;
	}
	closedir(dir);
	snprintf(path, sizeof(path), "/proc/%d/net/tcp", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned ip, port, st;
		unsigned long ino;
		struct in_addr a;
		if (sscanf(line, " %*d: %8X:%4X %*8X:%*4X %2X %*s %*s %*s %*d %*d %lu", &ip, &port,
		           &st, &ino) != 4 ||
		    st != 0x0A)
			continue;
		for (size_t i = 0; i < ni; i++)
			if (inodes[i] == ino) {
				a.s_addr = ip; /* the kernel prints the address in memory order */
				inet_ntop(AF_INET, &a, out[n].host, sizeof(out[n].host));
				out[n++].port = (int)port;
				break;
			}
	}
	fclose(f);
	return n;
}

/* Prefill's TE ports: the pair p, p+1 among its listening sockets that are not its HTTP,
 * side-channel or bootstrap port (the handshake server on the rpc port, TCP data on +1). */
static bool te_ports(struct hr_deploy *d, struct hr_addr *hs, struct hr_addr *data)
{
	struct hr_addr l[64], side = {.port = -1};
	int ack = -1;
	size_t n = d->prefill.proc.pid > 0 ? listen_ports(d->prefill.proc.pid, l, 64) : 0;

	hr_hostile_side_channel(d, &side, &ack);
	for (size_t i = 0; i < n; i++) {
		int p = l[i].port;
		if (p == d->prefill.port || p == side.port || p == ack || p == d->bootstrap_port[0])
			continue;
		for (size_t k = 0; k < n; k++)
			if (l[k].port == p + 1) {
				*hs = l[i];
				*data = l[k];
				if (!strcmp(hs->host, "0.0.0.0"))
					snprintf(hs->host, sizeof(hs->host), "%s", d->prefill.host);
				snprintf(data->host, sizeof(data->host), "%s", hs->host);
				return true;
			}
	}
	return false;
}

static bool flood_target(struct hr_deploy *d, const char *t, struct hr_addr *a)
{
	struct hr_addr other;
	const struct hr_node *n = !strcmp(t, "prefill")  ? &d->prefill
	                          : !strcmp(t, "decode") ? &d->decode
	                          : !strcmp(t, "proxy")  ? &d->proxy
	                                                 : NULL;
	if (n) {
		snprintf(a->host, sizeof(a->host), "%s", n->host);
		a->port = n->port;
		return n->port > 0;
	}
	if (!strcmp(t, "metadata")) {
		snprintf(a->host, sizeof(a->host), "%s", d->meta.host);
		a->port = d->meta.port;
		return d->meta_up;
	}
	if (!strcmp(t, "bootstrap")) {
		snprintf(a->host, sizeof(a->host), "%s", d->prefill.host);
		a->port = d->bootstrap_port[0];
		return cfg_gen_is_b(d->sc->gen) && a->port > 0;
	}
	return !strcmp(t, "te-data") ? te_ports(d, &other, a) : te_ports(d, a, &other);
}

/* ------------------------------------------------------------------ the flood */

struct fconn {
	int fd, tgt;
	size_t sent;
};

/* What a slow client trickles: the start of a request of the target's protocol. */
static char slow_byte(int tgt, size_t i)
{
	static const char http[] = "POST /v1/completions HTTP/1.1\r\nHost: pdkv\r\n"
	                           "Content-Type: application/json\r\nX-Slow: ";
	if (tgt >= 4) /* TE data / handshake: a header's worth of bytes, never complete */
		return 0;
	return i < sizeof(http) - 1 ? http[i] : 'a';
}

struct flood_tally {
	int opened, refused, closed, reopened;
	struct hr_addr a;
	bool found;
};

/* Waits up to ms for the server to close some of c, and closes those (tallied). */
static void reap(struct fconn *c, size_t nc, struct flood_tally *t, struct pollfd *p, int ms)
{
	for (size_t i = 0; i < nc; i++)
		p[i] = (struct pollfd){.fd = c[i].fd, .events = POLLIN};
	poll(p, nc, ms);
	for (size_t i = 0; i < nc; i++) {
		char b[512];
		ssize_t r;
		if (c[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = recv(c[i].fd, b, sizeof(b), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			close(c[i].fd);
			c[i].fd = -1;
			t[c[i].tgt].closed++;
		}
	}
}

/* Right after the burst a server may still hold a connection it is letting go (the runner's
 * /metrics scrape just before the workload): the slot it frees a moment later would let the
 * workload past a flood meant to lock it out. So slots the server closed are taken again, in
 * rounds of 100 ms, until a round holds no more connections than the last (at most 5). */
static void top_up(struct fconn *c, size_t nc, struct flood_tally *t, const char *from,
                   volatile sig_atomic_t *stop)
{
	struct pollfd *p = calloc(nc ? nc : 1, sizeof(*p));
	size_t held = 0;

	for (int round = 0; p && round < 5 && !*stop; round++) {
		size_t now = 0;

		pd_sleep_ms(100);
		reap(c, nc, t, p, 0);
		for (size_t i = 0; i < nc; i++)
			now += c[i].fd >= 0;
		if (round && now <= held)
			break;
		held = now;
		for (size_t i = 0; i < nc; i++)
			if (c[i].fd < 0 &&
			    (c[i].fd = hr_hostile_connect(from, &t[c[i].tgt].a)) >= 0) {
				c[i].sent = 0;
				t[c[i].tgt].reopened++;
			}
	}
	free(p);
}

static void flood_loop(struct fconn *c, size_t nc, struct flood_tally *t, bool slow, int iv_ms,
                       double end, volatile sig_atomic_t *stop)
{
	struct pollfd *p = calloc(nc ? nc : 1, sizeof(*p));
	double next = pd_now_s() + iv_ms / 1000.0;
	if (!p)
		return;
	while (!*stop && pd_now_s() < end) {
		size_t live = 0;
		reap(c, nc, t, p, 50);
		if (slow && pd_now_s() >= next) {
			next += iv_ms / 1000.0;
			for (size_t i = 0; i < nc; i++) {
				char ch = slow_byte(c[i].tgt, c[i].sent);
				if (c[i].fd >= 0 &&
				    send(c[i].fd, &ch, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
					c[i].sent++;
			}
		}
		for (size_t i = 0; i < nc; i++)
			live += c[i].fd >= 0;
		if (!live)
			break;
	}
	free(p);
}

static void flood_run_on(struct hr_deploy *d, const cJSON *e, volatile sig_atomic_t *stop,
                         volatile sig_atomic_t *opened, char *notes, size_t nsz)
{
	const cJSON *fl = cJSON_GetObjectItemCaseSensitive(e, "flood");
	const cJSON *nv = cJSON_GetObjectItemCaseSensitive(e, "connections");
	const cJSON *mv = cJSON_GetObjectItemCaseSensitive(e, "mode");
	const cJSON *dv = cJSON_GetObjectItemCaseSensitive(e, "duration_ms");
	const cJSON *iv = cJSON_GetObjectItemCaseSensitive(e, "interval_ms");
	const cJSON *fv = cJSON_GetObjectItemCaseSensitive(e, "from");
	int per = nv ? nv->valueint : 32, dur = dv ? dv->valueint : 3000;
	bool slow = mv && !strcmp(mv->valuestring, "slow");
	const char *from = fv ? fv->valuestring : "127.0.0.9";
	struct flood_tally t[FLOOD_TARGETS];
	struct fconn *c = calloc((size_t)per * FLOOD_TARGETS, sizeof(*c));
	size_t nc = 0;
	double t0 = pd_now_s();
	char line[900] = "";

	memset(t, 0, sizeof(t));
	if (!c)
		return;
	for (int k = 0; k < FLOOD_TARGETS; k++) {
		bool want = cJSON_IsString(fl) ? !strcmp(fl->valuestring, flood_targets[k]) : false;
		for (const cJSON *x = cJSON_IsArray(fl) ? fl->child : NULL; x; x = x->next)
			want |= !strcmp(x->valuestring, flood_targets[k]);
		if (!want)
			continue;
		if (!(t[k].found = flood_target(d, flood_targets[k], &t[k].a))) {
			hr_note_add(notes, nsz, "flood: could not find %s's port",
			            flood_targets[k]);
			continue;
		}
		for (int i = 0; i < per && !*stop; i++) {
			int fd = hr_hostile_connect(from, &t[k].a);
			if (fd < 0) {
				t[k].refused++;
				continue;
			}
			c[nc++] = (struct fconn){.fd = fd, .tgt = k};
			t[k].opened++;
		}
	}
	top_up(c, nc, t, from, stop);
	*opened = 1;
	flood_loop(c, nc, t, slow, iv ? iv->valueint : 500, t0 + dur / 1000.0, stop);
	for (size_t i = 0; i < nc; i++)
		if (c[i].fd >= 0)
			close(c[i].fd);
	free(c);
	pd_sleep_ms(300); /* the servers see the closes before anything else is sent */
	for (int k = 0; k < FLOOD_TARGETS; k++) {
		size_t l = strlen(line);
		if (t[k].found)
			snprintf(line + l, sizeof(line) - l,
			         "%s%s %s:%d %d/%d opened, %d closed by it, %d reopened",
			         l ? ", " : "", flood_targets[k], t[k].a.host, t[k].a.port,
			         t[k].opened, per, t[k].closed, t[k].reopened);
	}
	hr_note_add(notes, nsz, "flood (%s, %d per target from %s, %.1f s): %s",
	            slow ? "a byte per interval" : "idle", per, from, pd_now_s() - t0, line);
}

static void flood_run(struct hr_pfaults *f, const cJSON *e)
{
	flood_run_on(f->d, e, &f->stop, &f->opened, f->notes, sizeof(f->notes));
}

const struct hr_fault_kind hr_fault_flood = {
    .key = "flood",
    .hostile = true,
    .parse = flood_parse,
    .run = flood_run,
};
