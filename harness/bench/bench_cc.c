/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cc: --congestion, the TCP congestion control of every data socket of a run (pdkv's
 * lanes and target, and the plain-socket baseline on both sides), through PDKV_TCP_CONGESTION
 * (pd_sock_congestion), which the spawned loopback target inherits.
 *
 * Why a benchmark wants it: a loopback flow under BBR (a common host default) is paced and its
 * congestion window is a few segments (its round trip is microseconds), so the sender waits for
 * each ACK, and an ACK waits for the receiving thread to read. A receiver that does more between
 * reads than a bare socket loop (pdkv's target confirms every WRITE, as Mooncake's wire asks)
 * then stalls its sender more than the socket's receiver stalls its own: on the 2-core CI host
 * pdkv's 1 MiB WRITE ran at 0.79-0.92 of the socket under the host's bbr and at 0.97-0.98 with
 * both on cubic (docs/tcp.md, issue 33). The banner and the JSON say which one ran. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_tcpcc.h"
#include "pd_util.h"

static struct {
	char name[32], host[32], desc[160];
} g_cc;

/* Can a socket of this process use name? 0, or -errno of the refusal. */
static int try_cc(const char *name)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), err;

	if (fd < 0)
		return -errno;
	err = pd_tcp_cc_set(fd, name);
	close(fd);
	return err;
}

int bench_cc_parse(const struct bench_opts *o)
{
	char avail[256] = "";
	const char *env = pd_env_str("PDKV_TCP_CONGESTION"), *want = o->congestion;
	int err;

	if (pd_tcp_cc_host(g_cc.host, sizeof(g_cc.host), avail, sizeof(avail)))
		snprintf(g_cc.host, sizeof(g_cc.host), "unknown");
	if (!want || !*want) {
		if (env && *env)
			snprintf(g_cc.desc, sizeof(g_cc.desc),
			         "%s (PDKV_TCP_CONGESTION; host default %s)", env, g_cc.host);
		else
			snprintf(g_cc.desc, sizeof(g_cc.desc), "%s (host default)", g_cc.host);
		snprintf(g_cc.name, sizeof(g_cc.name), "%s", env && *env ? env : g_cc.host);
		return 0;
	}
	if (strlen(want) >= 16 ||
	    strspn(want, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(want)) {
		fprintf(
		    stderr,
		    "pdkv-bench: --congestion=%s: expected the name of a TCP congestion control "
		    "(this host offers: %s)\n",
		    want, *avail ? avail : "unknown");
		return 2;
	}
	if ((err = try_cc(want)) == -ENOENT) { /* the kernel's answer for a name it lacks */
		fprintf(stderr,
		        "pdkv-bench: --congestion=%s: not available on this host (it offers: "
		        "%s; modprobe tcp_%s may add it)\n",
		        want, *avail ? avail : "unknown", want);
		return 2;
	}
	if (err) {
		fprintf(stderr, "pdkv-bench: --congestion=%s: the kernel refused it (%s)%s\n", want,
		        strerror(-err),
		        err == -EPERM ? "; without CAP_NET_ADMIN only the names in "
		                        "net.ipv4.tcp_allowed_congestion_control"
		                      : "");
		return 2;
	}
	setenv("PDKV_TCP_CONGESTION", want, 1); /* this process's engine, the target it spawns */
	snprintf(g_cc.name, sizeof(g_cc.name), "%s", want);
	snprintf(g_cc.desc, sizeof(g_cc.desc), "%s (--congestion; host default %s)%s", want,
	         g_cc.host, o->compare_mooncake ? "; Mooncake's rows keep the host default" : "");
	return 0;
}

const char *bench_cc_desc(void)
{
	return g_cc.desc;
}

const char *bench_cc_name(void)
{
	return g_cc.name;
}

const char *bench_cc_host(void)
{
	return g_cc.host;
}
