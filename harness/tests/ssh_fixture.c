/* SPDX-License-Identifier: Apache-2.0 */
/* ssh_fixture: namespaces with a real sshd each for the launcher tests — keys, sshd_config,
 * start and stop, and the leak checks (by command line, by network namespace). */
#include "ssh_fixture.h"
#include "lib/hr.h"
#include "pd_util.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sshfx_sh(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return system(line);
}

const char *sshfx_missing(char *why, size_t sz)
{
	if (hr_netns_probe(why, sz))
		return why;
	if (access("/usr/sbin/sshd", X_OK) || system("command -v ssh-keygen >/dev/null")) {
		snprintf(why, sz, "needs openssh-server and openssh-client (ci/install-deps.sh)");
		return why;
	}
	return NULL;
}

static int find_pdkv(char *out, size_t sz)
{
	if (hr_find_bin("pdkv", out, sz) == 0)
		return 0;
	snprintf(out, sz, "%s/../bin/pdkv", pd_self_dir());
	return access(out, X_OK) ? -1 : 0;
}

static int start_sshd(struct sshfx *f, const char *host)
{
	const struct hr_nshost *h = hr_netns_find(&f->nn, host);
	char cfg[256], log[256], text[1024];
	snprintf(cfg, sizeof(cfg), "%s/sshd-%s.conf", f->dir, host);
	snprintf(log, sizeof(log), "%s/sshd-%s.log", f->dir, host);
	/* SetEnv SHLVL=1: Debian's bash sources ~/.bashrc for a command sshd runs only at shell
	 * level 1; at 2 it skips it, so a host's .bashrc (pyenv init: ~1 s) does not slow every
	 * ssh command of the tests (0.07 s instead). */
	snprintf(text, sizeof(text),
	         "ListenAddress %s\nPort 22\nHostKey %s/hostkey\nPidFile none\n"
	         "AuthorizedKeysFile %s/authorized_keys\nPasswordAuthentication no\n"
	         "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
	         "PermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\n"
	         "MaxSessions 64\nMaxStartups 64\nLogLevel ERROR\nSetEnv SHLVL=1\n",
	         h->addr, f->dir, f->dir);
	if (pd_write_file(cfg, text, strlen(text)))
		return -1;
	char *argv[] = {"ip", "netns", "exec", (char *)h->ns, "/usr/sbin/sshd",
	                "-D", "-e",    "-f",   cfg,           NULL};
	if (pd_proc_spawn(&f->sshd[f->nsshd++], "sshd", argv, NULL, log))
		return -1;
	return pd_wait_tcp(h->addr, 22, 10000);
}

int sshfx_up(struct sshfx *f, const char *const *hosts, size_t n)
{
	char err[600];
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/pdkv-ssh-test.XXXXXX");
	if (!mkdtemp(f->dir) || find_pdkv(f->pdkv, sizeof(f->pdkv)))
		return -1;
	mkdir("/run/sshd", 0755); /* sshd's privilege separation directory */
	if (sshfx_sh("ssh-keygen -q -t ed25519 -N '' -f %s/hostkey && ssh-keygen -q -t ed25519 "
	             "-N '' -f %s/userkey && ssh-keygen -q -t ed25519 -N '' -f %s/wrongkey && "
	             "cp %s/userkey.pub %s/authorized_keys",
	             f->dir, f->dir, f->dir, f->dir, f->dir))
		return -1;
	if (hr_netns_create(&f->nn, hosts, n, 0, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (start_sshd(f, hosts[i])) {
			fprintf(stderr, "sshd did not come up (logs in %s)\n", f->dir);
			return -1;
		}
	return 0;
}

void sshfx_down(struct sshfx *f)
{
	for (size_t i = 0; i < f->nsshd; i++)
		pd_proc_stop(&f->sshd[i], 2000);
	f->nsshd = 0;
	hr_netns_destroy(&f->nn);
	if (f->dir[0])
		pd_rm_rf(f->dir);
	f->dir[0] = '\0';
}

void sshfx_ghost(const struct sshfx *f, char *out, size_t sz)
{
	char *dot;
	snprintf(out, sz, "%s", f->nn.root_addr);
	dot = strrchr(out, '.');
	if (dot && (size_t)(dot - out) + 4 < sz)
		strcpy(dot, ".99");
}

int sshfx_procs_with(const char *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d))) {
		char p[300], *buf = NULL;
		size_t len = 0;
		if (atoi(e->d_name) <= 0 || atoi(e->d_name) == (int)getpid())
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		if (pd_read_file(p, 1 << 16, &buf, &len) == 0) {
			for (size_t i = 0; i + 1 < len; i++)
				if (!buf[i])
					buf[i] = ' ';
			n += len && memmem(buf, len, s, strlen(s)) != NULL;
		}
		free(buf);
	}
	if (d)
		closedir(d);
	return n;
}

static int count_in(const struct sshfx *f, const char *host)
{
	const struct hr_nshost *h = hr_netns_find(&f->nn, host);
	char nsp[128];
	struct stat want;
	DIR *d;
	struct dirent *e;
	int n = 0;
	if (!h)
		return -1;
	snprintf(nsp, sizeof(nsp), "/run/netns/%s", h->ns);
	if (stat(nsp, &want) || !(d = opendir("/proc")))
		return -1;
	while ((e = readdir(d))) {
		int pid = atoi(e->d_name);
		char p[64];
		struct stat st;
		bool listener = false;
		if (pid <= 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/ns/net", pid);
		if (stat(p, &st) || st.st_ino != want.st_ino || st.st_dev != want.st_dev)
			continue;
		for (size_t i = 0; i < f->nsshd; i++)
			listener |= f->sshd[i].pid == pid;
		n += !listener;
	}
	closedir(d);
	return n;
}

int sshfx_procs_in(const struct sshfx *f, const char *host, int wait_ms)
{
	int n = count_in(f, host);
	for (int t = 0; n > 0 && t < wait_ms; t += 100) {
		pd_sleep_ms(100);
		n = count_in(f, host);
	}
	return n;
}
