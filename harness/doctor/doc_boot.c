/* SPDX-License-Identifier: Apache-2.0 */
/* doc_boot: pdkv doctor's gen B bootstrap finding (issue 34) — a bootstrap server that also
 * answers on a non-loopback address, or whose /query lists a worker that does not answer. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc_boot.h"
#include "kv1/kv1_boot.h"
#include "pd_util.h"

enum { OK, WARN, FAIL }; /* doctor_main.c's levels */

/* "http://host:port[/...]" -> host, port. 0 or -1. */
static int url_hostport(const char *url, char *host, size_t hsz, int *port)
{
	const char *p = strstr(url, "://");
	char hp[300];
	size_t n;

	p = p ? p + 3 : url;
	n = strcspn(p, "/");
	if (n >= sizeof(hp))
		return -1;
	snprintf(hp, sizeof(hp), "%.*s", (int)n, p);
	return pd_split_hostport(hp, host, hsz, port);
}

static bool loopback(const char *h)
{
	return !strncmp(h, "127.", 4) || !strcmp(h, "localhost") || !strcmp(h, "::1") ||
	       !strcmp(h, "[::1]");
}

/* Does the port answer on one of the host's non-loopback IPv4 addresses? The first into out. */
static bool answers_elsewhere(int port, char *out, size_t osz)
{
	struct ifaddrs *ifs = NULL;
	bool hit = false;

	if (getifaddrs(&ifs))
		return false;
	for (struct ifaddrs *i = ifs; i && !hit; i = i->ifa_next) {
		char a[INET_ADDRSTRLEN];
		int fd;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof(a));
		if (loopback(a))
			continue;
		fd = pd_tcp_connect(a, port, 500);
		if (fd >= 0) {
			close(fd);
			snprintf(out, osz, "%s", a);
			hit = true;
		}
	}
	freeifaddrs(ifs);
	return hit;
}

static void check_workers(const struct kv1_boot_table *t, doc_report_fn rep)
{
	int bad = 0, n = 0;

	for (size_t e = 0; e < t->n; e++)
		for (int k = 0; k < t->v[e].ntp; k++) {
			const char *a = t->v[e].addr[k];
			char host[256];
			int port = 0, fd;

			if (!a)
				continue;
			n++;
			fd = strncmp(a, "tcp://", 6) ||
			             pd_split_hostport(a + 6, host, sizeof(host), &port)
			         ? -1
			         : pd_tcp_connect(host, port, 1000);
			if (fd >= 0) {
				close(fd);
				continue;
			}
			bad++;
			rep(FAIL, "bootstrap workers",
			    "a router that picks this rank sends its requests to a worker that "
			    "never "
			    "answers: restart the prefill (its bootstrap server forgets "
			    "registrations) "
			    "and keep /register off untrusted networks",
			    "dp rank %d (engine %s) tp rank %d: worker %s does not answer",
			    t->v[e].dp_rank, t->v[e].engine_id, k, a);
		}
	if (!bad)
		rep(OK, "bootstrap workers", NULL, "%d registered worker(s) answer", n);
}

void doc_check_bootstrap(const char *url, doc_report_fn rep)
{
	struct kv1_boot_table t;
	char host[256], other[64], err[512];
	int port = 0;

	if (url_hostport(url, host, sizeof(host), &port)) {
		rep(FAIL, "bootstrap server", "give --bootstrap=http://HOST:PORT",
		    "\"%s\": not a URL", url);
		return;
	}
	if (kv1_boot_query(url, 2000, &t, err, sizeof(err))) {
		rep(FAIL, "bootstrap server", "start the gen B prefill or fix the URL", "%s", err);
		return;
	}
	if (!loopback(host))
		rep(WARN, "bootstrap exposure",
		    "anyone who reaches it can POST /register a bogus rank; bind it to loopback "
		    "(pdkv-standin --bootstrap-host, pdkv bootstrap --host) or firewall the port",
		    "%s answers on non-loopback address %s (vLLM binds 0.0.0.0)", url, host);
	else if (answers_elsewhere(port, other, sizeof(other)))
		rep(WARN, "bootstrap exposure",
		    "anyone who reaches it can POST /register a bogus rank; bind it to loopback "
		    "(pdkv-standin --bootstrap-host, pdkv bootstrap --host) or firewall the port",
		    "port %d also answers on non-loopback address %s (vLLM binds 0.0.0.0)", port,
		    other);
	else
		rep(OK, "bootstrap exposure", NULL, "port %d answers on loopback only", port);
	check_workers(&t, rep);
	kv1_boot_table_free(&t);
}
