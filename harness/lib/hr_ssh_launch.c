/* SPDX-License-Identifier: Apache-2.0 */
/* hr_ssh_launch: the launcher half of hr_ssh — ssh/scp command lines, remote start under setsid
 * nohup with the pid captured, alive and stop by process group, and closing the masters. */
#include "hr_ssh.h"
#include "hr_netns.h"
#include "pd_env.h"
#include "pd_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SSH_LIMIT_MS 30000 /* one ssh/scp call beyond its ConnectTimeout */
#define MAX_ARGS     48

struct argv_buf {
	const char *v[MAX_ARGS];
	size_t n;
	char store[10][700]; /* the -o values built here */
	size_t nstore;
};

static void push(struct argv_buf *a, const char *s)
{
	if (a->n + 1 < MAX_ARGS)
		a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void push_opt(struct argv_buf *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void push_opt(struct argv_buf *a, const char *fmt, ...)
{
	va_list ap;
	if (a->nstore == sizeof(a->store) / sizeof(a->store[0]))
		return;
	va_start(ap, fmt);
	vsnprintf(a->store[a->nstore], sizeof(a->store[0]), fmt, ap);
	va_end(ap);
	push(a, "-o");
	push(a, a->store[a->nstore++]);
}

static int host_index(const struct hr_ssh *s, const char *host)
{
	const struct hr_sshhost *h = hr_hosts_find(s->hosts, host);
	return h ? (int)(h - s->hosts->h) : -1;
}

/* The options every ssh and scp call shares: no prompts, bounded connect, one master per host,
 * host keys checked against the user's file and recorded (first contact) in our own. */
static void common_opts(struct hr_ssh *s, struct argv_buf *a, int idx)
{
	const struct hr_sshhost *h = &s->hosts->h[idx];
	const char *home = pd_env_str("HOME");
	push_opt(a, "BatchMode=yes");
	push_opt(a, "ConnectTimeout=%d", s->connect_timeout_s);
	push_opt(a, "ControlMaster=auto");
	push_opt(a, "ControlPath=%s/%d", s->ctl, idx);
	push_opt(a, "ControlPersist=300");
	push_opt(a, "StrictHostKeyChecking=accept-new");
	push_opt(a, "UserKnownHostsFile=%s/known_hosts %s/.ssh/known_hosts", s->dir,
	         home ? home : "/nonexistent");
	push_opt(a, "ServerAliveInterval=5");
	push(a, "-o");
	push(a, "ServerAliveCountMax=2");
	push(a, "-o");
	push(a, "LogLevel=ERROR");
	if (s->identity[0]) {
		push(a, "-i");
		push(a, s->identity);
		push(a, "-o");
		push(a, "IdentitiesOnly=yes");
	}
	if (h->port)
		push_opt(a, "Port=%d", h->port);
	s->masters[idx] = true;
}

int hr_ssh_init(struct hr_ssh *s, const struct hr_hosts *hosts, const char *dir,
                const char *identity, int connect_timeout_s)
{
	memset(s, 0, sizeof(*s));
	s->hosts = hosts;
	s->connect_timeout_s = connect_timeout_s > 0 ? connect_timeout_s : 10;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	snprintf(s->identity, sizeof(s->identity), "%s", identity ? identity : "");
	snprintf(s->ctl, sizeof(s->ctl), "/tmp/pdkv-cm.XXXXXX");
	if (pd_mkdir_p(dir) || !mkdtemp(s->ctl)) {
		s->ctl[0] = '\0';
		return -errno ? -errno : -EIO;
	}
	return 0;
}

/* ssh's own complaint: the last non-empty line of its output */
static void last_line(const char *out, char *line, size_t sz)
{
	const char *end = out + strlen(out), *start;
	while (end > out && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	start = end;
	while (start > out && start[-1] != '\n')
		start--;
	snprintf(line, sz, "%.*s", (int)(end - start), start);
}

static int ssh_error(const struct hr_sshhost *h, int ret, const char *out, char *err, size_t sz)
{
	char line[300];
	last_line(out, line, sizeof(line));
	if (ret == -ETIMEDOUT) {
		snprintf(err, sz, "host %s (%s): ssh did not finish within %ds", h->name, h->addr,
		         SSH_LIMIT_MS / 1000);
		return -ETIMEDOUT;
	}
	if (ret == -ENOENT) {
		snprintf(err, sz, "ssh not found (apt-get install openssh-client)");
		return -ENOENT;
	}
	if (strstr(line, "Permission denied") || strstr(line, "verification failed")) {
		snprintf(err, sz, "host %s (%s%s%s): authentication refused: %s", h->name, h->user,
		         h->user[0] ? "@" : "", h->addr, line);
		return -EACCES;
	}
	snprintf(err, sz, "host %s (%s): cannot reach it through ssh: %s", h->name, h->addr,
	         line[0] ? line : "ssh exit 255");
	return -EHOSTUNREACH;
}

/* a = prog [flag] and the options every call to host takes; NULL (with err) when host is not in
 * hosts.txt. */
static const struct hr_sshhost *begin_argv(struct hr_ssh *s, const char *host, struct argv_buf *a,
                                           const char *prog, const char *flag, char *err,
                                           size_t errsz)
{
	int idx = host_index(s, host);
	if (idx < 0) {
		snprintf(err, errsz, "host \"%s\" is not in %s", host, s->hosts->path);
		return NULL;
	}
	push(a, prog);
	if (flag)
		push(a, flag);
	common_opts(s, a, idx);
	return &s->hosts->h[idx];
}

int hr_ssh_run(struct hr_ssh *s, const char *host, const char *cmdline, char *out, size_t outsz,
               int timeout_ms, char *err, size_t errsz)
{
	struct argv_buf a = {.n = 0};
	char dest[200], local[4096];
	int ret;
	const struct hr_sshhost *h = begin_argv(s, host, &a, "ssh", NULL, err, errsz);
	if (!h)
		return -ENOENT;
	snprintf(dest, sizeof(dest), "%s%s%s", h->user, h->user[0] ? "@" : "", h->addr);
	push(&a, "--");
	push(&a, dest);
	push(&a, cmdline);
	if (!out || outsz < sizeof(local)) {
		ret = hr_cmd_run(a.v, local, sizeof(local),
		                 timeout_ms > 0 ? timeout_ms : SSH_LIMIT_MS);
		if (out && outsz)
			snprintf(out, outsz, "%s", local);
	} else {
		ret = hr_cmd_run(a.v, out, outsz, timeout_ms > 0 ? timeout_ms : SSH_LIMIT_MS);
	}
	if (ret == 255 || ret < 0)
		return ssh_error(h, ret, out && outsz >= sizeof(local) ? out : local, err, errsz);
	return ret;
}

int hr_ssh_check(struct hr_ssh *s, const char *host, char *err, size_t errsz)
{
	const struct hr_sshhost *h = hr_hosts_find(s->hosts, host);
	char q[600], line[1300], out[2048];
	int ret;
	if (!h) {
		snprintf(err, errsz, "host \"%s\" is not in %s", host, s->hosts->path);
		return -ENOENT;
	}
	if (hr_shell_quote(h->pdkv, q, sizeof(q)))
		return -E2BIG;
	snprintf(line, sizeof(line), "command -v %s >/dev/null || exit 127; %s --help >/dev/null",
	         q, q);
	ret = hr_ssh_run(s, host, line, out, sizeof(out), 0, err, errsz);
	if (ret == 127) {
		snprintf(
		    err, errsz,
		    "host %s (%s): pdkv is not installed there (no \"%s\"; install the package, "
		    "or set pdkv=PATH on line %d of %s)",
		    h->name, h->addr, h->pdkv, h->line, s->hosts->path);
		return -ENOENT;
	}
	if (ret > 0) {
		char tail[300];
		last_line(out, tail, sizeof(tail));
		snprintf(err, errsz, "host %s (%s): %s --help exited %d: %s", h->name, h->addr,
		         h->pdkv, ret, tail);
		return -EIO;
	}
	return ret;
}

/* appends ' QUOTED' to line */
static int add_quoted(char *line, size_t sz, const char *word)
{
	size_t n = strlen(line);
	if (n + 2 >= sz)
		return -1;
	line[n++] = ' ';
	line[n] = '\0';
	return hr_shell_quote(word, line + n, sz - n);
}

static int start_line(const struct hr_sshhost *h, const char *dir, const char *name,
                      const char *const argv[], const char *const env[], char *line, size_t sz)
{
	char qd[700], qlog[200];
	if (hr_shell_quote(dir, qd, sizeof(qd)) || hr_shell_quote(name, qlog, sizeof(qlog)))
		return -1;
	/* setsid: the process leads its own group, so stop can kill whatever it forked */
	snprintf(line, sz, "mkdir -p %s && cd %s && { setsid nohup env", qd, qd);
	for (size_t i = 0; i < h->nenv; i++)
		if (add_quoted(line, sz, h->env[i]))
			return -1;
	for (size_t i = 0; env && env[i]; i++)
		if (add_quoted(line, sz, env[i]))
			return -1;
	for (size_t i = 0; argv[i]; i++)
		if (add_quoted(line, sz, argv[i]))
			return -1;
	if (strlen(line) + strlen(qlog) + 64 >= sz)
		return -1;
	strcat(line, " >");
	strcat(line, qlog);
	strcat(line, ".log 2>&1 </dev/null & } && echo pdkv-pid=$!");
	return 0;
}

int hr_ssh_start(struct hr_ssh *s, const char *host, const char *remote_dir, const char *name,
                 const char *const argv[], const char *const env[], int *pid, char *err,
                 size_t errsz)
{
	const struct hr_sshhost *h = hr_hosts_find(s->hosts, host);
	char *line = malloc(16384), out[1024];
	const char *p;
	int ret;
	*pid = 0;
	if (!h || !line) {
		free(line);
		snprintf(err, errsz, "host \"%s\" is not in %s", host, s->hosts->path);
		return -ENOENT;
	}
	if (start_line(h, remote_dir, name, argv, env, line, 16384)) {
		free(line);
		snprintf(err, errsz, "%s on host %s: command line too long", name, host);
		return -E2BIG;
	}
	ret = hr_ssh_run(s, host, line, out, sizeof(out), 0, err, errsz);
	free(line);
	if (ret < 0)
		return ret;
	p = strstr(out, "pdkv-pid=");
	if (ret || !p || (*pid = atoi(p + 9)) <= 1) {
		char tail[300];
		last_line(out, tail, sizeof(tail));
		snprintf(err, errsz, "%s on host %s did not start (exit %d): %s", name, host, ret,
		         tail);
		*pid = 0;
		return -EIO;
	}
	return 0;
}

int hr_ssh_alive(struct hr_ssh *s, const char *host, int pid)
{
	char line[200], err[400];
	int ret;
	/* a zombie is gone too: the remote init may not have reaped it yet */
	snprintf(line, sizeof(line),
	         "st=$(ps -o stat= -p %d) || exit 1; case $st in Z*) exit 1;; esac; exit 0", pid);
	ret = hr_ssh_run(s, host, line, NULL, 0, 0, err, sizeof(err));
	return ret < 0 ? ret : ret == 0;
}

int hr_ssh_stop(struct hr_ssh *s, const char *host, int pid, int grace_ms)
{
	char line[600], err[400];
	int ret;
	if (pid <= 1)
		return -EINVAL;
	snprintf(line, sizeof(line),
	         "kill -TERM -- -%d 2>/dev/null; i=0; while [ $i -lt %d ]; do "
	         "st=$(ps -o stat= -p %d) || break; case $st in Z*) break;; esac; "
	         "sleep 0.1; i=$((i+1)); done; kill -KILL -- -%d 2>/dev/null; exit 0",
	         pid, grace_ms / 100 + 1, pid, pid);
	ret = hr_ssh_run(s, host, line, NULL, 0, grace_ms + SSH_LIMIT_MS, err, sizeof(err));
	return ret < 0 ? ret : 0;
}

static int scp(struct hr_ssh *s, const char *host, const char *from, const char *to, bool put,
               char *err, size_t errsz)
{
	struct argv_buf a = {.n = 0};
	char remote[800], out[1024], tail[300];
	int ret;
	const struct hr_sshhost *h = begin_argv(s, host, &a, "scp", "-q", err, errsz);
	if (!h)
		return -ENOENT;
	snprintf(remote, sizeof(remote), "%s%s%s%s%s:%s", h->user, h->user[0] ? "@" : "",
	         strchr(h->addr, ':') ? "[" : "", h->addr, strchr(h->addr, ':') ? "]" : "",
	         put ? to : from);
	push(&a, "--");
	push(&a, put ? from : remote);
	push(&a, put ? remote : to);
	ret = hr_cmd_run(a.v, out, sizeof(out), SSH_LIMIT_MS);
	if (ret == 0)
		return 0;
	if (ret == 255 || ret < 0)
		return ssh_error(h, ret, out, err, errsz);
	last_line(out, tail, sizeof(tail));
	snprintf(err, errsz, "scp %s %s host %s: %s", put ? from : from, put ? "to" : "from", host,
	         tail[0] ? tail : "failed");
	return -EIO;
}

int hr_ssh_put(struct hr_ssh *s, const char *host, const char *local, const char *remote, char *err,
               size_t errsz)
{
	return scp(s, host, local, remote, true, err, errsz);
}

int hr_ssh_get(struct hr_ssh *s, const char *host, const char *remote, const char *local, char *err,
               size_t errsz)
{
	return scp(s, host, remote, local, false, err, errsz);
}

void hr_ssh_close(struct hr_ssh *s)
{
	for (size_t i = 0; s->hosts && i < s->hosts->n; i++) {
		char cp[160], out[256];
		if (!s->masters[i])
			continue;
		snprintf(cp, sizeof(cp), "ControlPath=%s/%zu", s->ctl, i);
		const char *argv[] = {"ssh", "-o", cp, "-O", "exit", s->hosts->h[i].addr, NULL};
		hr_cmd_run(argv, out, sizeof(out), 5000);
		s->masters[i] = false;
	}
	if (s->ctl[0])
		pd_rm_rf(s->ctl);
	s->ctl[0] = '\0';
}
