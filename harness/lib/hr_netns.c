/* SPDX-License-Identifier: Apache-2.0 */
/* hr_netns: namespaces, veths, bridge, 198.18.0.0/15 addresses, link faults and nftables drops
 * for scenarios across separate network stacks; everything made is removed again (hr_netns.h). */
#include "hr_netns.h"
#include "pd_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NETNS_DIR    "/run/netns"
#define CMD_LIMIT_MS 10000 /* one `ip` / `nft` call; a hung one is killed */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int hr_cmd_run(const char *const argv[], char *out, size_t outsz, int timeout_ms)
{
	int pfd[2], efd[2], st = 0, exec_errno = 0;
	size_t len = 0;
	double t0 = now_ms();
	pid_t pid;
	if (out && outsz)
		out[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	if (pipe2(efd, O_CLOEXEC)) { /* carries exec's errno: exit 127 stays the command's own */
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		close(efd[0]);
		close(efd[1]);
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		setpgid(0, 0); /* a Ctrl-C meant for the runner must not kill its ssh mid-cleanup */
		dup2(null, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execvp(argv[0], (char *const *)argv);
		exec_errno = errno;
		(void)!write(efd[1], &exec_errno, sizeof(exec_errno));
		_exit(127);
	}
	close(pfd[1]);
	close(efd[1]);
	if (read(efd[0], &exec_errno, sizeof(exec_errno)) != sizeof(exec_errno))
		exec_errno = 0;
	close(efd[0]);
	/* until it exits: a daemon it left behind (ssh's ControlPersist master) may hold the pipe
	 */
	for (bool exited = false, eof = false; !exited;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		char buf[512];
		ssize_t r;
		if (now_ms() - t0 > timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			close(pfd[0]);
			return -ETIMEDOUT;
		}
		if (eof)
			usleep(10 * 1000);
		else if (poll(&p, 1, 50) == 1) {
			r = read(pfd[0], buf, sizeof(buf));
			eof = r <= 0;
			for (ssize_t i = 0; i < r && out && len + 1 < outsz; i++)
				out[len++] = buf[i];
			if (out && outsz)
				out[len] = '\0';
			if (r > 0)
				continue;
		}
		exited = waitpid(pid, &st, WNOHANG) == pid;
	}
	close(pfd[0]);
	if (WIFSIGNALED(st))
		return -EINTR;
	if (exec_errno)
		return -exec_errno;
	return WEXITSTATUS(st);
}

/* hr_cmd_run of a NULL-terminated list; on failure err = "CMD ...: its output" */
static int cmd(char *err, size_t errsz, const char *arg0, ...)
{
	const char *argv[24];
	char out[512], line[300] = "";
	size_t n = 0;
	va_list ap;
	int ret;
	argv[n++] = arg0;
	va_start(ap, arg0);
	while (n + 1 < sizeof(argv) / sizeof(argv[0]) && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	ret = hr_cmd_run(argv, out, sizeof(out), CMD_LIMIT_MS);
	if (ret == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		strncat(line, i ? " " : "", sizeof(line) - strlen(line) - 1);
		strncat(line, argv[i], sizeof(line) - strlen(line) - 1);
	}
	out[strcspn(out, "\n")] = '\0';
	pd_seterr(err, errsz, "`%s` failed: %s", line,
	          ret == -ENOENT      ? "command not found"
	          : ret == -ETIMEDOUT ? "timed out"
	          : out[0]            ? out
	                              : "non-zero exit");
	return ret < 0 ? ret : -EIO;
}

bool hr_netns_name_ok(const char *host)
{
	size_t n = host ? strlen(host) : 0;
	if (n == 0 || n > 20)
		return false;
	return strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
	       n;
}

/* setns into the namespace at path from a child, as hr_netns_enter does: 0 or -errno */
static int probe_setns(const char *path)
{
	int st = 0;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		_exit(fd < 0 ? (errno & 0x7f) : setns(fd, CLONE_NEWNET) ? (errno & 0x7f) : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -EINTR;
	return -WEXITSTATUS(st);
}

int hr_netns_probe(char *why, size_t sz)
{
	char name[64], path[128], err[400];
	int ret;
	snprintf(name, sizeof(name), HR_NETNS_PREFIX "%d.probe", (int)getpid());
	ret = cmd(err, sizeof(err), "ip", "netns", "add", name, NULL);
	if (ret == -ENOENT) {
		pd_seterr(why, sz, "network namespaces need `ip` (iproute2), not found in PATH");
		return -ENOENT;
	}
	if (ret) {
		pd_seterr(why, sz, "network namespaces need root or CAP_NET_ADMIN (uid %d): %s",
		          (int)getuid(), err);
		return -EPERM;
	}
	/* what a run does next: `ip -n` / `ip netns exec` (a mount namespace with / made rslave:
	 * fails in a chroot, whose / is no mount point) and setns from a forked child */
	snprintf(path, sizeof(path), NETNS_DIR "/%s", name);
	ret = cmd(err, sizeof(err), "ip", "netns", "exec", name, "ip", "link", "set", "lo", "up",
	          NULL);
	if (ret == 0 && (ret = probe_setns(path)))
		snprintf(err, sizeof(err), "setns into %s: %s", path, strerror(-ret));
	cmd(NULL, 0, "ip", "netns", "del", name, NULL);
	if (ret) {
		pd_seterr(why, sz,
		          "this host can add a network namespace but not enter it (a chroot or a "
		          "container without CAP_SYS_ADMIN?): %s",
		          err);
		return -EPERM;
	}
	return 0;
}

static void ip4_str(uint32_t a, char *out, size_t sz)
{
	struct in_addr in = {.s_addr = htonl(a)};
	if (!inet_ntop(AF_INET, &in, out, (socklen_t)sz))
		out[0] = '\0';
}

/* A /24 inside 198.18.0.0/15 that no interface of this namespace uses yet: runs of other
 * processes (each with its own root veth) then never share a route. Hosts get .10, .11, ... */
static int pick_subnet(struct hr_netns *nn)
{
	struct ifaddrs *ifa = NULL;
	int start = (int)(getpid() % 512);
	if (getifaddrs(&ifa))
		ifa = NULL;
	for (int k = 0; k < 512; k++) {
		uint32_t net = (198u << 24) | (18u << 16) | ((uint32_t)((start + k) % 512) << 8);
		bool used = (net & 0xff00u) == 0xff00u; /* skip x.y.255.0: looks like broadcast */
		for (struct ifaddrs *a = ifa; a && !used; a = a->ifa_next) {
			if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET)
				continue;
			uint32_t x = ntohl(((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr);
			used = (x & 0xffffff00u) == net;
		}
		if (used)
			continue;
		char base[16];
		ip4_str(net, base, sizeof(base));
		snprintf(nn->subnet, sizeof(nn->subnet), "%s/24", base);
		ip4_str(net | 1u, nn->root_addr, sizeof(nn->root_addr));
		for (size_t i = 0; i < nn->n; i++)
			ip4_str(net | (uint32_t)(10 + i), nn->h[i].addr, sizeof(nn->h[i].addr));
		freeifaddrs(ifa);
		return 0;
	}
	freeifaddrs(ifa);
	return -EADDRNOTAVAIL;
}

static int make_bridge(struct hr_netns *nn, char *err, size_t errsz)
{
	const char *b = nn->bridge_ns;
	char mtu[16], cidr[32];
	snprintf(mtu, sizeof(mtu), "%d", nn->mtu);
	snprintf(cidr, sizeof(cidr), "%s/24", nn->root_addr);
	if (cmd(err, errsz, "ip", "netns", "add", b, NULL))
		return -EIO;
	nn->created = true;
	if (cmd(err, errsz, "ip", "-n", b, "link", "set", "lo", "up", NULL) ||
	    cmd(err, errsz, "ip", "-n", b, "link", "add", "br0", "mtu", mtu, "type", "bridge",
	        NULL) ||
	    cmd(err, errsz, "ip", "-n", b, "link", "set", "br0", "up", NULL) ||
	    cmd(err, errsz, "ip", "link", "add", nn->root_if, "mtu", mtu, "type", "veth", "peer",
	        "name", "up0", "netns", b, NULL) ||
	    cmd(err, errsz, "ip", "-n", b, "link", "set", "up0", "mtu", mtu, "master", "br0", "up",
	        NULL) ||
	    cmd(err, errsz, "ip", "addr", "add", cidr, "dev", nn->root_if, NULL) ||
	    cmd(err, errsz, "ip", "link", "set", nn->root_if, "up", NULL))
		return -EIO;
	return 0;
}

static int make_host(struct hr_netns *nn, struct hr_nshost *h, char *err, size_t errsz)
{
	const char *b = nn->bridge_ns;
	char mtu[16], cidr[32];
	snprintf(mtu, sizeof(mtu), "%d", nn->mtu);
	snprintf(cidr, sizeof(cidr), "%s/24", h->addr);
	if (cmd(err, errsz, "ip", "netns", "add", h->ns, NULL))
		return -EIO;
	if (cmd(err, errsz, "ip", "-n", h->ns, "link", "set", "lo", "up", NULL) ||
	    cmd(err, errsz, "ip", "-n", b, "link", "add", h->port, "mtu", mtu, "type", "veth",
	        "peer", "name", "eth0", "netns", h->ns, NULL) ||
	    cmd(err, errsz, "ip", "-n", b, "link", "set", h->port, "master", "br0", "up", NULL) ||
	    cmd(err, errsz, "ip", "-n", h->ns, "link", "set", "eth0", "mtu", mtu, "up", NULL) ||
	    cmd(err, errsz, "ip", "-n", h->ns, "addr", "add", cidr, "dev", "eth0", NULL))
		return -EIO;
	return 0;
}

int hr_netns_create(struct hr_netns *nn, const char *const *hosts, size_t n, int mtu, char *err,
                    size_t errsz)
{
	int pid = (int)getpid();
	memset(nn, 0, sizeof(*nn));
	nn->mtu = mtu > 0 ? mtu : 1500;
	if (nn->mtu < 576 || nn->mtu > 9000) {
		pd_seterr(err, errsz, "mtu %d: expected 576..9000", mtu);
		return -EINVAL;
	}
	snprintf(nn->prefix, sizeof(nn->prefix), HR_NETNS_PREFIX "%d", pid);
	snprintf(nn->bridge_ns, sizeof(nn->bridge_ns), HR_NETNS_PREFIX "%d.br", pid);
	snprintf(nn->root_if, sizeof(nn->root_if), "pdkv%dr", pid);
	for (size_t i = 0; i < n; i++) {
		if (!hr_netns_name_ok(hosts[i])) {
			pd_seterr(err, errsz, "host name \"%s\": expected 1..20 of A-Z a-z 0-9 _ -",
			          hosts[i] ? hosts[i] : "");
			return -EINVAL;
		}
		if (hr_netns_find(nn, hosts[i]))
			continue; /* roles naming the same host share it */
		if (nn->n == HR_NETNS_MAX) {
			pd_seterr(err, errsz, "more than %d hosts", HR_NETNS_MAX);
			return -E2BIG;
		}
		struct hr_nshost *h = &nn->h[nn->n++];
		snprintf(h->name, sizeof(h->name), "%s", hosts[i]);
		snprintf(h->ns, sizeof(h->ns), HR_NETNS_PREFIX "%d-%s", pid, hosts[i]);
		snprintf(h->port, sizeof(h->port), "p%zu", nn->n - 1);
	}
	if (pick_subnet(nn)) {
		pd_seterr(err, errsz, "no free /24 left in 198.18.0.0/15 on this host");
		return -EADDRNOTAVAIL;
	}
	if (make_bridge(nn, err, errsz))
		goto fail;
	for (size_t i = 0; i < nn->n; i++)
		if (make_host(nn, &nn->h[i], err, errsz))
			goto fail;
	return 0;
fail:
	hr_netns_destroy(nn);
	return -EIO;
}

const struct hr_nshost *hr_netns_find(const struct hr_netns *nn, const char *host)
{
	for (size_t i = 0; host && i < nn->n; i++)
		if (!strcmp(nn->h[i].name, host))
			return &nn->h[i];
	return NULL;
}

int hr_netns_exec_prefix(const struct hr_netns *nn, const char *host, const char *out[4])
{
	const struct hr_nshost *h = hr_netns_find(nn, host);
	if (!h)
		return -ENOENT;
	out[0] = "ip";
	out[1] = "netns";
	out[2] = "exec";
	out[3] = h->ns;
	return 4;
}

int hr_netns_enter(const struct hr_netns *nn, const char *host)
{
	const struct hr_nshost *h = hr_netns_find(nn, host);
	char path[128];
	int fd, ret = 0;
	if (!h)
		return -ENOENT;
	snprintf(path, sizeof(path), NETNS_DIR "/%s", h->ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNET))
		ret = -errno;
	close(fd);
	return ret;
}

int hr_netns_link(struct hr_netns *nn, const char *host, bool up, char *err, size_t errsz)
{
	const struct hr_nshost *h = hr_netns_find(nn, host);
	if (!h) {
		pd_seterr(err, errsz, "link \"%s\": not a host of this run", host ? host : "");
		return -ENOENT;
	}
	/* the bridge end: the host keeps its address and route and sees NO-CARRIER, like a
	 * pulled cable; its packets go nowhere and TCP must notice through its own timeouts */
	return cmd(err, errsz, "ip", "-n", nn->bridge_ns, "link", "set", h->port,
	           up ? "up" : "down", NULL);
}

int hr_netns_drop(struct hr_netns *nn, const char *host, int percent, char *err, size_t errsz)
{
	struct hr_nshost *h = (struct hr_nshost *)hr_netns_find(nn, host);
	char rule[64], why[400] = "";
	int ret;
	if (!h) {
		pd_seterr(err, errsz, "drop \"%s\": not a host of this run", host ? host : "");
		return -ENOENT;
	}
	if (percent < 0 || percent > 100) {
		pd_seterr(err, errsz, "drop: %d%%, expected 0..100", percent);
		return -EINVAL;
	}
	if (h->drops) {
		cmd(NULL, 0, "ip", "netns", "exec", h->ns, "nft", "delete", "table", "inet", "pdkv",
		    NULL);
		h->drops = false;
	}
	if (percent == 0)
		return 0;
	if (percent == 100)
		snprintf(rule, sizeof(rule), "drop");
	else
		snprintf(rule, sizeof(rule), "numgen random mod 100 < %d drop", percent);
	ret = cmd(why, sizeof(why), "ip", "netns", "exec", h->ns, "nft", "add", "table", "inet",
	          "pdkv", NULL);
	if (ret == 0) {
		h->drops = true;
		ret = cmd(why, sizeof(why), "ip", "netns", "exec", h->ns, "nft", "add", "chain",
		          "inet", "pdkv", "in", "{ type filter hook input priority 0 ; }", NULL);
	}
	if (ret == 0)
		ret = cmd(why, sizeof(why), "ip", "netns", "exec", h->ns, "nft", "add", "rule",
		          "inet", "pdkv", "in", rule, NULL);
	if (ret == 0)
		return 0;
	pd_seterr(err, errsz, "packet drops need nftables: %s", why);
	if (strstr(why, "not found") || strstr(why, "not supported") || strstr(why, "No such file"))
		return -ENOTSUP;
	return ret;
}

/* SIGKILLs every process whose network namespace is the one bound at path. */
static int kill_inside(const char *path)
{
	struct stat ns, st;
	DIR *d;
	struct dirent *e;
	int n = 0;
	if (stat(path, &ns) || !(d = opendir("/proc")))
		return 0;
	while ((e = readdir(d))) {
		char p[300];
		int pid = atoi(e->d_name);
		if (pid <= 0 || pid == (int)getpid())
			continue;
		snprintf(p, sizeof(p), "/proc/%d/ns/net", pid);
		if (stat(p, &st) == 0 && st.st_ino == ns.st_ino && st.st_dev == ns.st_dev) {
			kill(pid, SIGKILL);
			n++;
		}
	}
	closedir(d);
	return n;
}

static void del_ns(const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), NETNS_DIR "/%s", name);
	if (access(path, F_OK))
		return;
	if (kill_inside(path))
		usleep(50 * 1000); /* let the killed go before the namespace does */
	cmd(NULL, 0, "ip", "netns", "del", name, NULL);
}

void hr_netns_destroy(struct hr_netns *nn)
{
	if (!nn->created)
		return;
	for (size_t i = 0; i < nn->n; i++)
		del_ns(nn->h[i].ns);
	if (if_nametoindex(nn->root_if))
		cmd(NULL, 0, "ip", "link", "del", nn->root_if, NULL);
	del_ns(nn->bridge_ns);
	nn->created = false;
}

static bool pid_dead(int pid)
{
	return pid > 0 && kill(pid, 0) && errno == ESRCH;
}

int hr_netns_cleanup_stale(void)
{
	DIR *d = opendir(NETNS_DIR);
	struct dirent *e;
	struct if_nameindex *ifs;
	int removed = 0;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, HR_NETNS_PREFIX, strlen(HR_NETNS_PREFIX)))
			continue;
		if (pid_dead(atoi(e->d_name + strlen(HR_NETNS_PREFIX)))) {
			del_ns(e->d_name);
			removed++;
		}
	}
	if (d)
		closedir(d);
	ifs = if_nameindex();
	for (struct if_nameindex *i = ifs; i && i->if_index; i++) {
		int pid;
		char r;
		if (sscanf(i->if_name, "pdkv%d%c", &pid, &r) == 2 && r == 'r' && pid_dead(pid))
			cmd(NULL, 0, "ip", "link", "del", i->if_name, NULL);
	}
	if (ifs)
		if_freenameindex(ifs);
	return removed;
}
