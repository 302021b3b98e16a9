/* SPDX-License-Identifier: Apache-2.0 */
/* hr_launch: the two launchers of a scenario's processes (here through pd_proc, or on a hosts.txt
 * machine through ssh/scp), placing roles on hosts, and the metadata service as a placed node. */
#include "hr_launch.h"
#include "hr_deploy.h"
#include "hr_hosts.h"
#include "pd_env.h"
#include "pd_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const role_names[HR_NROLES] = {"prefill", "decode", "proxy", "metadata",
                                                  "reference"};

/* ---- this host: pd_proc, inside the namespace of the node's address ---- */

static int local_spawn(struct hr_deploy *d, struct hr_node *n, char *const argv[],
                       char *const env[], char *err, size_t errsz)
{
	const char *ns = hr_net_ns_of(d->net, n->host);
	size_t argc = 0, i = 0;
	int ret;
	while (argv[argc])
		argc++;
	char **v = calloc(argc + 5, sizeof(char *));
	if (!v)
		return -ENOMEM;
	if (ns) { /* ip execs it, so the pid stays the node's */
		v[i++] = "ip";
		v[i++] = "netns";
		v[i++] = "exec";
		v[i++] = (char *)ns;
	}
	for (size_t k = 0; k < argc; k++)
		v[i++] = argv[k];
	char log[sizeof(n->proc.log)]; /* pd_proc_spawn copies it into n->proc.log */
	snprintf(log, sizeof(log), "%s", n->proc.log);
	ret = pd_proc_spawn(&n->proc, n->name, v, env, log);
	free(v);
	if (ret)
		snprintf(err, errsz, "cannot start %s: %s", n->name, strerror(-ret));
	return ret;
}

static int local_alive(struct hr_deploy *d, struct hr_node *n)
{
	(void)d;
	return pd_proc_alive(&n->proc);
}

static void local_stop(struct hr_deploy *d, struct hr_node *n, int grace_ms)
{
	(void)d;
	pd_proc_stop(&n->proc, grace_ms);
}

static void local_fetch(struct hr_deploy *d, struct hr_node *n)
{
	(void)d;
	(void)n;
}

static void local_describe(const struct hr_node *n, char *out, size_t sz)
{
	int st = n->proc.exit_status;
	if (st >= 0 && WIFEXITED(st))
		snprintf(out, sz, "exit status %d", WEXITSTATUS(st));
	else if (st >= 0 && WIFSIGNALED(st))
		snprintf(out, sz, "killed by signal %d (%s%s)", WTERMSIG(st),
		         strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
	else
		snprintf(out, sz, "exited");
}

const struct hr_launch_ops hr_launch_local = {
    .name = "local",
    .spawn = local_spawn,
    .alive = local_alive,
    .stop = local_stop,
    .fetch_log = local_fetch,
    .describe_exit = local_describe,
    .alive_every = 1,
};

/* ---- another machine: hr_ssh (start under setsid nohup, alive, stop by group, scp) ---- */

/* argv[0] "…/pdkv-X" runs as "PDKV X" there (hosts.txt's pdkv); anything else (etcd,
 * redis-server) from the remote PATH by its base name. */
static void remote_argv(const struct hr_sshhost *h, char *const argv[], const char **out,
                        size_t max)
{
	const char *base = strrchr(argv[0], '/');
	size_t i = 0;
	base = base ? base + 1 : argv[0];
	if (!strncmp(base, "pdkv-", 5)) {
		out[i++] = h->pdkv;
		out[i++] = base + 5;
	} else {
		out[i++] = base;
	}
	for (size_t k = 1; argv[k] && i + 1 < max; k++)
		out[i++] = argv[k];
	out[i] = NULL;
}

/* MOONCAKE_CONFIG_PATH=LOCAL: the generated file goes there by scp, the variable points at the
 * copy. Other entries pass unchanged. */
static int remote_env(struct hr_deploy *d, struct hr_node *n, char *const env[], char **out,
                      size_t max, char *err, size_t errsz)
{
	static const char key[] = "MOONCAKE_CONFIG_PATH=";
	size_t i = 0;
	for (; env && env[i] && i + 1 < max; i++) {
		char remote[600];
		int ret;
		if (strncmp(env[i], key, sizeof(key) - 1)) {
			out[i] = strdup(env[i]);
			continue;
		}
		snprintf(remote, sizeof(remote), "%s/mooncake.json", n->rdir);
		ret = hr_ssh_put(&d->rem->ssh, n->rhost, env[i] + sizeof(key) - 1, remote, err,
		                 errsz);
		if (ret)
			return ret;
		out[i] = pd_asprintf("%s%s", key, remote);
	}
	out[i] = NULL;
	return 0;
}

static int ssh_spawn(struct hr_deploy *d, struct hr_node *n, char *const argv[], char *const env[],
                     char *err, size_t errsz)
{
	const struct hr_sshhost *h = hr_hosts_find(d->rem->hosts, n->rhost);
	const char *rargv[160];
	char *renv[64] = {0}, q[600], mk[700];
	int ret = 0;
	bool copies = false;
	remote_argv(h, argv, rargv, PD_ARRAY_SIZE(rargv));
	for (size_t i = 0; env && env[i]; i++)
		copies |= !strncmp(env[i], "MOONCAKE_CONFIG_PATH=", 21);
	if (hr_shell_quote(n->rdir, q, sizeof(q)))
		return -E2BIG;
	snprintf(mk, sizeof(mk), "mkdir -p %s", q);
	if (copies) /* scp needs the directory; hr_ssh_start makes it otherwise */
		ret = hr_ssh_run(&d->rem->ssh, n->rhost, mk, NULL, 0, 0, err, errsz);
	if (ret > 0) {
		snprintf(err, errsz, "host %s: cannot create %s", n->rhost, n->rdir);
		return -EIO;
	}
	if (ret == 0)
		ret = remote_env(d, n, env, renv, PD_ARRAY_SIZE(renv), err, errsz);
	if (ret == 0)
		ret = hr_ssh_start(&d->rem->ssh, n->rhost, n->rdir, n->name, rargv,
		                   (const char *const *)renv, &n->rpid, err, errsz);
	for (size_t i = 0; renv[i]; i++)
		free(renv[i]);
	return ret;
}

static int ssh_alive(struct hr_deploy *d, struct hr_node *n)
{
	int ret;
	if (n->rpid <= 0)
		return 0;
	ret = hr_ssh_alive(&d->rem->ssh, n->rhost, n->rpid);
	if (ret == 0)
		n->rpid = 0;
	return ret != 0; /* a host that cannot be asked is not known to be gone */
}

/* The remote log replaces the local one, under the command-line header hr_spawn wrote. */
static void ssh_fetch(struct hr_deploy *d, struct hr_node *n)
{
	char remote[600], part[600], err[600], *head = NULL, *body = NULL;
	size_t hl = 0, bl = 0;
	snprintf(remote, sizeof(remote), "%s/%s.log", n->rdir, n->name);
	snprintf(part, sizeof(part), "%s.part", n->proc.log);
	if (hr_ssh_get(&d->rem->ssh, n->rhost, remote, part, err, sizeof(err)))
		return;
	if (pd_read_file(part, 64 << 20, &body, &bl) == 0) {
		pd_read_file(n->proc.log, 64 << 10, &head, &hl);
		size_t keep = head && head[0] == '#' ? strcspn(head, "\n") + 1 : 0;
		char *all = malloc(keep + bl + 1);
		if (keep > hl)
			keep = hl;
		if (all) {
			if (keep)
				memcpy(all, head, keep);
			if (bl)
				memcpy(all + keep, body, bl);
			pd_write_file(n->proc.log, all, keep + bl);
			free(all);
		}
	}
	free(head);
	free(body);
	unlink(part);
}

static void ssh_stop(struct hr_deploy *d, struct hr_node *n, int grace_ms)
{
	if (n->rpid > 0 && hr_ssh_stop(&d->rem->ssh, n->rhost, n->rpid, grace_ms) == 0)
		n->rpid = 0;
	else if (n->rpid > 0 && hr_ssh_alive(&d->rem->ssh, n->rhost, n->rpid) == 0)
		n->rpid = 0;
	ssh_fetch(d, n);
}

static void ssh_describe(const struct hr_node *n, char *out, size_t sz)
{
	snprintf(out, sz, "exited on host %s", n->rhost);
}

const struct hr_launch_ops hr_launch_ssh = {
    .name = "ssh",
    .spawn = ssh_spawn,
    .alive = ssh_alive,
    .stop = ssh_stop,
    .fetch_log = ssh_fetch,
    .describe_exit = ssh_describe,
    .alive_every = 8,
};

/* ---- placing roles ---- */

int hr_remote_setup(struct hr_remote *rm, const struct hr_scenario *sc, const struct hr_opts *o,
                    const char *workdir, char *why, size_t sz)
{
	char dir[600];
	const char *user = pd_env_str("USER");
	memset(rm, 0, sizeof(*rm));
	rm->run = *sc;
	if (!o->hosts || !sc->hosts)
		return 0;
	rm->on = true;
	rm->hosts = o->hosts;
	snprintf(rm->base, sizeof(rm->base), "/tmp/pdkv-remote.%s.%d", user ? user : "u",
	         (int)getpid());
	/* in the scenario's work dir: it goes with it (an empty run dir is then removed) */
	snprintf(dir, sizeof(dir), "%.590s/.ssh", workdir);
	if (hr_ssh_init(&rm->ssh, o->hosts, dir, o->ssh_key, o->ssh_timeout_s)) {
		snprintf(why, sz, "cannot set up ssh state in %s", dir);
		return -1;
	}
	rm->ssh_up = true;
	for (int i = 0; i < HR_NROLES; i++) {
		const char *name = hr_role_host(sc, role_names[i]);
		const struct hr_sshhost *h = name ? hr_hosts_find(o->hosts, name) : NULL;
		if (name && !h) {
			snprintf(why, sz, "hosts.%s: host \"%s\" is not in %s", role_names[i], name,
			         o->hosts->path);
			return -1;
		}
		if (!h)
			continue;
		snprintf(rm->host[i], sizeof(rm->host[i]), "%s", h->name);
		snprintf(rm->addr[i], sizeof(rm->addr[i]), "%s", h->addr);
		bool seen = false;
		for (int k = 0; k < i; k++)
			seen |= !strcmp(rm->host[k], h->name);
		if (!seen && hr_ssh_check(&rm->ssh, h->name, why, sz))
			return -1;
	}
	char **outs[] = {&rm->run.prefill_host, &rm->run.decode_host, &rm->run.proxy_host};
	for (int i = 0; i < 3; i++)
		if (rm->host[i][0])
			*outs[i] = rm->addr[i];
	return 0;
}

void hr_remote_teardown(struct hr_remote *rm)
{
	if (!rm->ssh_up)
		return;
	for (int i = 0; i < HR_NROLES; i++) {
		char q[300], line[400], err[400];
		bool seen = false;
		for (int k = 0; k < i; k++)
			seen |= !strcmp(rm->host[k], rm->host[i]);
		if (!rm->host[i][0] || seen || hr_shell_quote(rm->base, q, sizeof(q)))
			continue;
		snprintf(line, sizeof(line), "rm -rf %s", q);
		hr_ssh_run(&rm->ssh, rm->host[i], line, NULL, 0, 0, err, sizeof(err));
	}
	hr_ssh_close(&rm->ssh);
	rm->ssh_up = false;
}

const char *hr_role_addr(const struct hr_deploy *d, int role)
{
	const struct hr_scenario *sc = d->sc;
	if (d->rem && d->rem->on && d->rem->host[role][0])
		return d->rem->addr[role];
	if (role == HR_ROLE_PREFILL)
		return sc->prefill_host;
	if (role == HR_ROLE_DECODE)
		return sc->decode_host;
	if (role == HR_ROLE_PROXY || !sc->hosts)
		return role == HR_ROLE_PROXY ? sc->proxy_host : "127.0.0.1";
	if (d->net && d->net->on) { /* metadata, reference: their namespace, else the runner's */
		const struct hr_nshost *h =
		    hr_netns_find(&d->net->nn, hr_role_host(sc, role_names[role]));
		return h ? h->addr : d->net->nn.root_addr;
	}
	return "127.0.0.1";
}

bool hr_addr_elsewhere(const struct hr_deploy *d, const char *addr)
{
	if (hr_net_ns_of(d->net, addr))
		return true;
	for (int i = 0; d->rem && d->rem->on && addr && i < HR_NROLES; i++)
		if (d->rem->host[i][0] && !strcmp(d->rem->addr[i], addr))
			return true;
	return false;
}

void hr_node_place(struct hr_deploy *d, struct hr_node *n, int role)
{
	n->ops = &hr_launch_local;
	n->rhost[0] = n->rdir[0] = '\0';
	if (!d->rem || !d->rem->on || !d->rem->host[role][0])
		return;
	n->ops = d->rem->ops ? d->rem->ops : &hr_launch_ssh;
	snprintf(n->rhost, sizeof(n->rhost), "%s", d->rem->host[role]);
	snprintf(n->rdir, sizeof(n->rdir), "%s/%s/%s", d->rem->base, n->rhost, d->sc->name);
}

/* ---- the metadata service as a node ---- */

static bool in_path(const char *prog)
{
	const char *path = pd_env_str("PATH");
	char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
	bool found = false;
	for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char p[600];
		snprintf(p, sizeof(p), "%s/%s", dir, prog);
		found = access(p, X_OK) == 0;
	}
	free(copy);
	return found;
}

static void add(cJSON *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(cJSON *a, const char *fmt, ...)
{
	char buf[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(a, cJSON_CreateString(buf));
}

/* etcd / redis-server / pdkv-metaserver on addr:port, its data under data (made here when
 * local; relative to the work dir when remote). NULL when the server is not installed here. */
static cJSON *meta_argv(struct hr_deploy *d, enum pd_svc_kind kind, const char *addr, int port,
                        int peer, bool remote)
{
	char data[700], exe[600];
	cJSON *a = cJSON_CreateArray();
	snprintf(data, sizeof(data), "%s/metadata-data", remote ? "." : d->workdir);
	if (!remote)
		pd_mkdir_p(data);
	switch (kind) {
	case PD_SVC_ETCD:
		if (!remote && !in_path("etcd"))
			break;
		add(a, "etcd");
		add(a, "--name");
		add(a, "default");
		add(a, "--data-dir");
		add(a, "%s", data);
		add(a, "--listen-client-urls");
		add(a, "http://%s:%d", addr, port);
		add(a, "--advertise-client-urls");
		add(a, "http://%s:%d", addr, port);
		/* a single member: its peer port stays on the host's loopback */
		add(a, "--listen-peer-urls");
		add(a, "http://127.0.0.1:%d", peer);
		add(a, "--initial-advertise-peer-urls");
		add(a, "http://127.0.0.1:%d", peer);
		add(a, "--initial-cluster");
		add(a, "default=http://127.0.0.1:%d", peer);
		add(a, "--log-level");
		add(a, "warn");
		add(a, "--logger");
		add(a, "zap");
		return a;
	case PD_SVC_REDIS:
		if (!remote && !in_path("redis-server"))
			break;
		add(a, "redis-server");
		add(a, "--port");
		add(a, "%d", port);
		add(a, "--bind");
		add(a, "%s", addr);
		add(a, "--save");
		add(a, "%s", "");
		add(a, "--appendonly");
		add(a, "no");
		add(a, "--dir");
		add(a, "%s", remote ? "." : data);
		add(a, "--daemonize");
		add(a, "no");
		/* on a namespace's or machine's address, not loopback: redis would refuse peers */
		add(a, "--protected-mode");
		add(a, "no");
		return a;
	case PD_SVC_METASERVER:
		if (hr_find_bin("pdkv-metaserver", exe, sizeof(exe)) && !remote)
			break;
		add(a, "%s", remote ? "pdkv-metaserver" : exe);
		add(a, "--host");
		add(a, "%s", addr);
		add(a, "--port");
		add(a, "%d", port);
		return a;
	}
	cJSON_Delete(a);
	return NULL;
}

int hr_launch_meta(struct hr_deploy *d, char *why, size_t sz)
{
	enum pd_svc_kind kind = hr_meta_svc(d->sc->meta);
	struct hr_node *n = &d->metanode, *one[1] = {n};
	const char *addr = hr_role_addr(d, HR_ROLE_METADATA);
	const char *pick = hr_addr_elsewhere(d, addr) ? "127.0.0.1" : addr;
	int port = pd_free_port(pick), peer = pd_free_port(pick), ret;
	cJSON *argv;
	memset(n, 0, sizeof(*n));
	hr_node_place(d, n, HR_ROLE_METADATA);
	for (int i = 0; i < 10 && peer == port; i++)
		peer = pd_free_port(pick);
	if (port < 0 || peer < 0 || peer == port) {
		snprintf(why, sz, "no free port for the metadata service");
		return -EADDRINUSE;
	}
	argv = meta_argv(d, kind, addr, port, peer, n->ops != &hr_launch_local);
	if (!argv) {
		snprintf(why, sz, "its server is not installed on this host");
		return -ENOENT;
	}
	snprintf(n->host, sizeof(n->host), "%s", addr);
	n->port = port;
	snprintf(n->base_url, sizeof(n->base_url), "http://%s:%d", addr, port);
	if (kind != PD_SVC_REDIS) /* redis answers no HTTP: a TCP connect is its health */
		snprintf(n->health_url, sizeof(n->health_url), "%s/health", n->base_url);
	d->meta.kind = kind;
	d->meta.port = port;
	snprintf(d->meta.host, sizeof(d->meta.host), "%s", addr);
	pd_meta_url(d->meta.conn, sizeof(d->meta.conn), pd_svc_store(kind), addr, port);
	char name[32];
	snprintf(name, sizeof(name), "metadata-%s", pd_svc_kind_name(kind));
	ret = hr_spawn(d, n, name, argv, NULL);
	cJSON_Delete(argv);
	if (ret) {
		if (why != d->why)
			snprintf(why, sz, "%s", d->why[0] ? d->why : strerror(-ret));
		return ret == -ENOENT ? -EIO
		                      : ret; /* -ENOENT means "not installed" to the caller */
	}
	return hr_wait_healthy(d, one, 1, pd_now_s() + 20, NULL, why, sz);
}
