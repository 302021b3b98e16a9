/* SPDX-License-Identifier: Apache-2.0 */
/* pd_svc: starts etcd, redis-server or pdkv-metaserver on free loopback ports with a private
 * data directory, waits until each answers, and stops them again (directory removed). */
#include "pd_svc.h"
#include "pd_log.h"
#include "pd_util.h"
#include "pd_env.h"
#include "pd_meta_scheme.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SVC_START_TIMEOUT_MS 20000
#define SVC_START_TRIES      3

const char *pd_svc_kind_name(enum pd_svc_kind kind)
{
	switch (kind) {
	case PD_SVC_ETCD:
		return PD_META_ETCD;
	case PD_SVC_REDIS:
		return PD_META_REDIS;
	case PD_SVC_METASERVER:
		return PD_META_HTTP;
	}
	return "?";
}

enum pd_meta_store pd_svc_store(enum pd_svc_kind kind)
{
	return kind == PD_SVC_ETCD    ? PD_META_STORE_ETCD
	       : kind == PD_SVC_REDIS ? PD_META_STORE_REDIS
	                              : PD_META_STORE_HTTP;
}

static int is_exec(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Full path of prog found in PATH, or -ENOENT. */
static int find_in_path(const char *prog, char *out, size_t outsz)
{
	const char *path = pd_env_str("PATH");
	char *copy, *save = NULL, *dir;
	int ret = -ENOENT;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, outsz, "%s/%s", *dir ? dir : ".", prog);
		if (is_exec(out)) {
			ret = 0;
			break;
		}
	}
	free(copy);
	return ret;
}

/* pdkv-metaserver: $PDKV_BIN, then next to (or ../bin of) this executable, then PATH. */
static int find_metaserver(char *out, size_t outsz)
{
	const char *bin = pd_env_str("PDKV_BIN");
	if (bin && *bin) {
		snprintf(out, outsz, "%s/pdkv-metaserver", bin);
		if (is_exec(out))
			return 0;
	}
	snprintf(out, outsz, "%s/pdkv-metaserver", pd_self_dir());
	if (is_exec(out))
		return 0;
	snprintf(out, outsz, "%s/../bin/pdkv-metaserver", pd_self_dir());
	if (is_exec(out))
		return 0;
	return find_in_path("pdkv-metaserver", out, outsz);
}

static size_t discard_cb(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

long pd_http_status(const char *url, int timeout_ms)
{
	CURL *c = curl_easy_init();
	long code = 0;
	if (!c)
		return 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return code;
}

static int redis_ping(const char *host, int port)
{
	struct timeval tv = {0, 500000};
	redisContext *rc = redisConnectWithTimeout(host, port, tv);
	redisReply *r;
	int ok = 0;
	if (!rc)
		return 0;
	if (!rc->err) {
		redisSetTimeout(rc, tv);
		r = redisCommand(rc, "PING");
		ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG");
		if (r)
			freeReplyObject(r);
	}
	redisFree(rc);
	return ok;
}

static int svc_ready(struct pd_svc *s)
{
	char url[512];
	switch (s->kind) {
	case PD_SVC_ETCD:
		snprintf(url, sizeof(url), "http://%s:%d/health", s->host, s->port);
		return pd_http_status(url, 1000) == 200;
	case PD_SVC_REDIS:
		return redis_ping(s->host, s->port);
	case PD_SVC_METASERVER:
		snprintf(url, sizeof(url), "http://%s:%d/health", s->host, s->port);
		return pd_http_status(url, 1000) == 200;
	}
	return 0;
}

/* Last lines of the service log, so a failed start explains itself. */
static void log_tail(const char *path)
{
	char *buf = NULL, *p;
	size_t len = 0;
	if (pd_read_file(path, 64 << 20, &buf, &len))
		return;
	p = len > 1500 ? buf + len - 1500 : buf;
	pd_err("%s (tail):\n%s", path, p);
	free(buf);
}

/* Two distinct free ports (etcd needs a client and a peer port). */
static int two_ports(const char *host, int *a, int *b)
{
	for (int i = 0; i < 10; i++) {
		*a = pd_free_port(host);
		*b = pd_free_port(host);
		if (*a < 0)
			return *a;
		if (*b < 0)
			return *b;
		if (*a != *b)
			return 0;
	}
	return -EADDRNOTAVAIL;
}

/* keep_port: restart on s->port (a new peer port for etcd) instead of picking both */
static int spawn_once(struct pd_svc *s, const char *exe, bool keep_port)
{
	char a[8][320], etcd_data[600];
	char *argv[24];
	int n = 0, peer = 0, ret;

	if (keep_port) {
		peer = pd_free_port(s->host);
		ret = peer < 0 ? peer : peer == s->port ? -EADDRINUSE : 0;
	} else {
		ret = two_ports(s->host, &s->port, &peer);
	}
	if (ret)
		return ret;
	switch (s->kind) {
	case PD_SVC_ETCD:
		snprintf(a[0], sizeof(a[0]), "http://%s:%d", s->host, s->port);
		snprintf(a[1], sizeof(a[1]), "http://%s:%d", s->host, peer);
		snprintf(a[2], sizeof(a[2]), "default=http://%s:%d", s->host, peer);
		argv[n++] = (char *)exe;
		argv[n++] = "--name";
		argv[n++] = "default";
		snprintf(etcd_data, sizeof(etcd_data), "%s/data", s->datadir);
		argv[n++] = "--data-dir";
		argv[n++] = etcd_data;
		argv[n++] = "--listen-client-urls";
		argv[n++] = a[0];
		argv[n++] = "--advertise-client-urls";
		argv[n++] = a[0];
		argv[n++] = "--listen-peer-urls";
		argv[n++] = a[1];
		argv[n++] = "--initial-advertise-peer-urls";
		argv[n++] = a[1];
		argv[n++] = "--initial-cluster";
		argv[n++] = a[2];
		argv[n++] = "--log-level";
		argv[n++] = "warn";
		argv[n++] = "--logger";
		argv[n++] = "zap";
		break;
	case PD_SVC_REDIS:
		snprintf(a[0], sizeof(a[0]), "%d", s->port);
		argv[n++] = (char *)exe;
		argv[n++] = "--port";
		argv[n++] = a[0];
		argv[n++] = "--bind";
		argv[n++] = s->host;
		argv[n++] = "--save";
		argv[n++] = "";
		argv[n++] = "--appendonly";
		argv[n++] = "no";
		argv[n++] = "--dir";
		argv[n++] = s->datadir;
		argv[n++] = "--daemonize";
		argv[n++] = "no";
		break;
	case PD_SVC_METASERVER:
		snprintf(a[0], sizeof(a[0]), "%d", s->port);
		argv[n++] = (char *)exe;
		argv[n++] = "--port";
		argv[n++] = a[0];
		argv[n++] = "--host";
		argv[n++] = s->host;
		break;
	}
	argv[n] = NULL;
	ret = pd_proc_spawn(&s->proc, pd_svc_kind_name(s->kind), argv, NULL, s->log);
	if (ret)
		return ret;
	for (uint64_t end = pd_now_ns() + SVC_START_TIMEOUT_MS * 1000000ull;;) {
		if (!pd_proc_alive(&s->proc))
			return -EADDRINUSE; /* most likely the port was taken meanwhile: retry */
		if (svc_ready(s))
			return 0;
		if (pd_now_ns() >= end) {
			pd_proc_stop(&s->proc, 2000);
			return -ETIMEDOUT;
		}
		pd_sleep_ms(50);
	}
}

/* Services this process started, by value (the caller's struct may be gone by exit time):
 * an exit without pd_svc_stop still stops them and removes their directories. */
#define SVC_LIVE_MAX 64
static struct {
	pid_t pid, owner; /* a forked child that exits must not stop its parent's services */
	char dir[512];
} live[SVC_LIVE_MAX];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t live_once = PTHREAD_ONCE_INIT;

static void live_atexit(void)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < SVC_LIVE_MAX; i++) {
		struct pd_proc p = {.pid = live[i].pid, .exit_status = -1};
		if (!live[i].pid || live[i].owner != getpid())
			continue;
		pd_proc_stop(&p, 2000);
		if (live[i].dir[0] && !pd_env_set("PDKV_KEEP_SVC"))
			pd_rm_rf(live[i].dir);
		live[i].pid = 0;
	}
	pthread_mutex_unlock(&live_lock);
}

static void live_init(void)
{
	atexit(live_atexit);
}

static void live_add(pid_t pid, const char *dir)
{
	pthread_once(&live_once, live_init);
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < SVC_LIVE_MAX; i++)
		if (!live[i].pid) {
			live[i].pid = pid;
			live[i].owner = getpid();
			snprintf(live[i].dir, sizeof(live[i].dir), "%s", dir);
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

static void live_del(pid_t pid)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < SVC_LIVE_MAX; i++)
		if (live[i].pid == pid)
			live[i].pid = 0;
	pthread_mutex_unlock(&live_lock);
}

/* Removes workdir/pdkv-<kind>-* directories whose owner process (owner.pid) is gone — left
 * behind by a test that was killed. Directories without an owner file are left alone. */
static void sweep_stale(const char *workdir)
{
	DIR *d = opendir(workdir);
	struct dirent *de;
	char path[1024], *txt;
	size_t len;
	int64_t pid;
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "pdkv-etcd-", 10) &&
		    strncmp(de->d_name, "pdkv-redis-", 11) && strncmp(de->d_name, "pdkv-http-", 10))
			continue;
		snprintf(path, sizeof(path), "%s/%s/owner.pid", workdir, de->d_name);
		if (pd_read_file(path, 64, &txt, &len))
			continue;
		txt[strcspn(txt, "\n")] = '\0';
		if (!pd_parse_i64(txt, &pid) && pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH) {
			snprintf(path, sizeof(path), "%s/%s", workdir, de->d_name);
			pd_dbg("pd_svc: removing stale %s (owner %lld gone)", path, (long long)pid);
			pd_rm_rf(path);
		}
		free(txt);
	}
	closedir(d);
}

int pd_svc_start(enum pd_svc_kind kind, const char *host, const char *workdir, struct pd_svc *out)
{
	static const char *progs[] = {"etcd", "redis-server", "pdkv-metaserver"};
	char exe[PATH_MAX], tmpl[600];
	int ret;

	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->proc.exit_status = -1;
	if ((unsigned)kind > PD_SVC_METASERVER)
		return -EINVAL;
	snprintf(out->host, sizeof(out->host), "%s", host && *host ? host : "127.0.0.1");
	if (!workdir || !*workdir)
		workdir = pd_env_str("TMPDIR");
	if (!workdir || !*workdir)
		workdir = "/tmp";

	ret = kind == PD_SVC_METASERVER ? find_metaserver(exe, sizeof(exe))
	                                : find_in_path(progs[kind], exe, sizeof(exe));
	if (ret) {
		pd_warn("pd_svc: %s not found (install it or set PATH/PDKV_BIN)", progs[kind]);
		return -ENOENT;
	}
	ret = pd_mkdir_p(workdir);
	if (ret) {
		pd_err("pd_svc: cannot create workdir %s: %s", workdir, strerror(-ret));
		return ret;
	}
	sweep_stale(workdir);
	if (snprintf(tmpl, sizeof(tmpl), "%s/pdkv-%s-XXXXXX", workdir, pd_svc_kind_name(kind)) >=
	    400) {
		pd_err("pd_svc: workdir path too long: %s", workdir);
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(tmpl)) {
		ret = -errno;
		pd_err("pd_svc: mkdtemp %s: %s", tmpl, strerror(errno));
		return ret;
	}
	if (snprintf(out->datadir, sizeof(out->datadir), "%s", tmpl) < 0 ||
	    snprintf(out->log, sizeof(out->log), "%s/%s.log", tmpl, progs[kind]) < 0)
		return -EINVAL;
	{
		char owner[620], pid[24];
		int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (snprintf(owner, sizeof(owner), "%s/owner.pid", tmpl) > 0)
			pd_write_file(owner, pid, (size_t)n);
	}

	for (int i = 0; i < SVC_START_TRIES; i++) {
		if (kind == PD_SVC_ETCD) {
			/* a failed attempt leaves a half-initialised member dir behind */
			char data[600];
			if (snprintf(data, sizeof(data), "%s/data", out->datadir) > 0)
				pd_rm_rf(data);
		}
		ret = spawn_once(out, exe, false);
		if (ret == 0)
			break;
		pd_warn("pd_svc: %s on %s:%d did not come up (%s), attempt %d/%d", progs[kind],
		        out->host, out->port, strerror(-ret), i + 1, SVC_START_TRIES);
		if (ret == -ENOENT)
			break;
	}
	if (ret) {
		log_tail(out->log);
		pd_svc_stop(out);
		return ret;
	}
	pd_meta_url(out->conn, sizeof(out->conn), pd_svc_store(kind), out->host, out->port);
	live_add(out->proc.pid, out->datadir);
	pd_dbg("pd_svc: %s up at %s (pid %d, dir %s)", progs[kind], out->conn, (int)out->proc.pid,
	       out->datadir);
	return 0;
}

int pd_svc_kill(struct pd_svc *s, int sig)
{
	if (!s || s->proc.pid <= 0)
		return -ESRCH;
	live_del(s->proc.pid);
	if (sig == SIGKILL) {
		kill(-s->proc.pid, SIGKILL);
		pd_proc_wait(&s->proc, 5000);
	} else {
		kill(-s->proc.pid, sig);
		if (pd_proc_wait(&s->proc, 5000))
			pd_proc_stop(&s->proc, 0);
	}
	pd_proc_stop(&s->proc, 0); /* reaps; idempotent */
	return 0;
}

int pd_svc_restart(struct pd_svc *s)
{
	static const char *progs[] = {"etcd", "redis-server", "pdkv-metaserver"};
	char exe[PATH_MAX], data[600];
	int ret = -EINVAL;

	if (!s || (unsigned)s->kind > PD_SVC_METASERVER)
		return -EINVAL;
	if (s->proc.pid > 0)
		pd_svc_kill(s, SIGKILL);
	ret = s->kind == PD_SVC_METASERVER ? find_metaserver(exe, sizeof(exe))
	                                   : find_in_path(progs[s->kind], exe, sizeof(exe));
	if (ret)
		return -ENOENT;
	for (int i = 0; i < SVC_START_TRIES; i++) {
		/* empty: a restarted store has lost every key */
		if (s->kind == PD_SVC_ETCD &&
		    snprintf(data, sizeof(data), "%s/data", s->datadir) > 0)
			pd_rm_rf(data);
		ret = spawn_once(s, exe, true);
		if (ret == 0)
			break;
		pd_sleep_ms(200); /* the old socket may linger a moment */
	}
	if (ret)
		return ret;
	live_add(s->proc.pid, s->datadir);
	return 0;
}

void pd_svc_stop(struct pd_svc *s)
{
	if (!s)
		return;
	if (s->proc.pid > 0)
		live_del(s->proc.pid);
	pd_proc_stop(&s->proc, 3000);
	if (s->datadir[0] && !pd_env_set("PDKV_KEEP_SVC"))
		pd_rm_rf(s->datadir);
	s->datadir[0] = '\0';
	s->port = 0;
}
