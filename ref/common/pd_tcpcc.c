/* SPDX-License-Identifier: Apache-2.0 */
/* pd_tcpcc: the TCP congestion control of data sockets (PDKV_TCP_CONGESTION, docs/tcp.md). */
#include "pd_tcpcc.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "pd_env.h"
#include "pd_log.h"

/* first line of a /proc/sys file into buf; 0 or -errno */
static int read_sysctl_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		err = -EIO;
	else
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	return err;
}

int pd_tcp_cc_host(char *buf, size_t len, char *avail, size_t alen)
{
	int err = read_sysctl_line("/proc/sys/net/ipv4/tcp_congestion_control", buf, len);

	if (!err && avail)
		err = read_sysctl_line("/proc/sys/net/ipv4/tcp_available_congestion_control", avail,
		                       alen);
	return err;
}

int pd_tcp_cc_set(int fd, const char *name)
{
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name)))
		return -errno;
	return 0;
}

int pd_sock_congestion(int fd)
{
	static atomic_bool warned;
	const char *cc = pd_env_str("PDKV_TCP_CONGESTION");
	char avail[256] = "?";
	int err;

	if (!cc || !*cc || !(err = pd_tcp_cc_set(fd, cc)))
		return 0;
	if (!atomic_exchange(&warned, true)) {
		int e = -err;
		read_sysctl_line("/proc/sys/net/ipv4/tcp_available_congestion_control", avail,
		                 sizeof(avail));
		pd_warn("PDKV_TCP_CONGESTION=%s: the kernel refused it on a data socket (%s); "
		        "keeping the host's default (this host offers: %s%s)",
		        cc, strerror(e), avail,
		        e == EPERM ? "; without CAP_NET_ADMIN only net.ipv4."
		                     "tcp_allowed_congestion_control"
		                   : "");
		errno = e;
	}
	return -errno;
}
