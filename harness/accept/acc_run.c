/* SPDX-License-Identifier: Apache-2.0 */
/* acc_run: pdkv accept's nodes (namespaces it makes, a hosts file, the Slurm allocation) and
 * one pdkv-bench side on a node — through ip netns exec, the OpenSSH launcher, or srun. */
#include "acc_run.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/hr_slurm.h"
#include "pd_util.h"

#define OUT_MAX (256 * 1024)

struct acc_stop {
	struct acc_run *r;
	int x;
};

int acc_nodes_netns(struct acc_run *r, int n, char *why, size_t sz)
{
	char names[HR_NETNS_MAX][16];
	const char *hp[HR_NETNS_MAX];
	char err[512];
	if (n < 2 || n > HR_NETNS_MAX) {
		pd_seterr(why, sz, "--netns: expected 2..%d nodes, got %d", HR_NETNS_MAX, n);
		return 2;
	}
	if (hr_netns_probe(err, sizeof(err))) {
		pd_seterr(why, sz, "no network namespaces here: %s", err);
		return 77;
	}
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "node%d", i + 1);
		hp[i] = names[i];
	}
	if (hr_netns_create(&r->nn, hp, (size_t)n, 0, err, sizeof(err))) {
		pd_seterr(why, sz, "making %d namespaces failed: %s", n, err);
		return 77;
	}
	r->nn_on = true;
	for (int i = 0; i < n; i++) {
		const struct hr_nshost *h = hr_netns_find(&r->nn, names[i]);
		snprintf(r->nodes[i].name, sizeof(r->nodes[i].name), "node%d", i + 1);
		snprintf(r->nodes[i].addr, sizeof(r->nodes[i].addr), "%s", h ? h->addr : "?");
		r->nodes[i].kind = ACC_NODE_NETNS;
	}
	r->n = n;
	return 0;
}

int acc_nodes_hosts(struct acc_run *r, const char *path, const char *key, int connect_timeout_s,
                    char *why, size_t sz)
{
	char err[512], dir[600];
	if (hr_hosts_load(path, &r->hosts, err, sizeof(err))) {
		pd_seterr(why, sz, "--hosts: %s", err);
		return 2;
	}
	if (r->hosts.n < 2) {
		pd_seterr(why, sz,
		          "--hosts %s: %zu host%s, expected at least 2 lines of NAME "
		          "[USER@]ADDRESS [port=N] [pdkv=PATH] [KEY=VALUE ...]",
		          path, r->hosts.n, r->hosts.n == 1 ? "" : "s");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/.ssh", r->workdir);
	if (hr_ssh_init(&r->ssh, &r->hosts, dir, key, connect_timeout_s)) {
		pd_seterr(why, sz, "--hosts: cannot set up ssh state in %s", dir);
		return 2;
	}
	r->ssh_on = true;
	snprintf(r->rdir, sizeof(r->rdir), "/tmp/pdkv-accept-%d", (int)getpid());
	for (size_t i = 0; i < r->hosts.n; i++) {
		const struct hr_sshhost *h = &r->hosts.h[i];
		if (hr_ssh_check(&r->ssh, h->name, err, sizeof(err))) {
			pd_seterr(why, sz, "--hosts %s:%d: host %s: %s", path, h->line, h->name,
			          err);
			return 2;
		}
		snprintf(r->nodes[i].name, sizeof(r->nodes[i].name), "%s", h->name);
		snprintf(r->nodes[i].addr, sizeof(r->nodes[i].addr), "%s", h->addr);
		r->nodes[i].kind = ACC_NODE_SSH;
	}
	r->n = (int)r->hosts.n;
	return 0;
}

int acc_nodes_slurm(struct acc_run *r, char *why, size_t sz)
{
	/* scontrol reads SLURM_JOB_NODELIST itself when given no hostlist */
	const char *argv[] = {"scontrol", "show", "hostnames", NULL};
	char out[16384], *save = NULL;
	int ret = hr_cmd_run(argv, out, sizeof(out), 30000);
	if (ret) {
		pd_seterr(why, sz,
		          "--slurm: `scontrol show hostnames` %s (run inside an allocation: "
		          "salloc -N2 pdkv accept --slurm): %.200s",
		          ret == -ENOENT ? "is not installed" : "failed", out);
		return 2;
	}
	r->n = 0;
	for (char *t = strtok_r(out, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
		if (r->n == ACC_MAX_NODES) {
			pd_seterr(why, sz, "--slurm: over %d nodes in the allocation",
			          ACC_MAX_NODES);
			return 2;
		}
		char err[400];
		snprintf(r->nodes[r->n].name, sizeof(r->nodes[r->n].name), "%s", t);
		/* the node's NodeAddr: its bench binds there (not to the caller's address) */
		if (hr_slurm_node_addr(t, r->nodes[r->n].addr, sizeof(r->nodes[r->n].addr), err,
		                       sizeof(err))) {
			pd_seterr(why, sz, "--slurm: %s", err);
			return 2;
		}
		r->nodes[r->n++].kind = ACC_NODE_SLURM;
	}
	if (r->n < 2) {
		pd_seterr(why, sz, "--slurm: the allocation has %d node%s, expected at least 2",
		          r->n, r->n == 1 ? "" : "s");
		return 2;
	}
	return 0;
}

int acc_netns_slow(struct acc_run *r, const char *spec, char *why, size_t sz)
{
	char node[64], rate[32], err[512];
	const char *eq = strchr(spec, '=');
	const struct hr_nshost *h;
	if (!r->nn_on) {
		pd_seterr(why, sz,
		          "--netns-slow: only with --netns (it shapes a namespace's link)");
		return 2;
	}
	if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof(node) || !eq[1] ||
	    strlen(eq + 1) >= sizeof(rate)) {
		pd_seterr(why, sz, "--netns-slow: expected NODE=RATE (node2=200mbit), got \"%s\"",
		          spec);
		return 2;
	}
	snprintf(node, sizeof(node), "%.*s", (int)(eq - spec), spec);
	snprintf(rate, sizeof(rate), "%s", eq + 1);
	if (!(h = hr_netns_find(&r->nn, node))) {
		pd_seterr(why, sz, "--netns-slow: no node \"%s\" (node1..node%d)", node, r->n);
		return 2;
	}
	/* both directions: the bridge port's egress (towards the node), the node's eth0 egress */
	const char *a[] = {"tc",    "-n",      r->nn.bridge_ns, "qdisc", "add", "dev",
	                   h->port, "root",    "tbf",           "rate",  rate,  "burst",
	                   "64kb",  "latency", "100ms",         NULL};
	const char *b[] = {"tc",  "-n",   h->ns, "qdisc", "add",  "dev",     "eth0",  "root",
	                   "tbf", "rate", rate,  "burst", "64kb", "latency", "100ms", NULL};
	if (hr_cmd_run(a, err, sizeof(err), 10000) || hr_cmd_run(b, err, sizeof(err), 10000)) {
		pd_seterr(why, sz, "--netns-slow %s: tc tbf rate %s failed: %.300s", spec, rate,
		          err);
		return 2;
	}
	printf("# --netns-slow: %s's link (%s) limited to %s both ways (tc tbf)\n", node, h->addr,
	       rate);
	return 0;
}

/* argv of one bench side on node x: the node's way in, the binary, mode, the shared flags */
static int side_argv(struct acc_run *r, int x, const char **av, size_t max, char *bind, size_t bsz,
                     const char *mode, const char *extra)
{
	const struct acc_node *nd = &r->nodes[x];
	size_t k = 0;
	if (nd->kind == ACC_NODE_NETNS) {
		const struct hr_nshost *h = hr_netns_find(&r->nn, nd->name);
		av[k++] = "ip";
		av[k++] = "netns";
		av[k++] = "exec";
		av[k++] = h ? h->ns : "?";
		/* the caller's MC_TCP_BIND_ADDRESS (127.0.0.1 in tests) must not follow it in */
		snprintf(bind, bsz, "MC_TCP_BIND_ADDRESS=%s", nd->addr);
		av[k++] = "env";
		av[k++] = bind;
		av[k++] = r->bench;
	} else if (nd->kind == ACC_NODE_SLURM) {
		av[k++] = "srun";
		av[k++] = "-w";
		av[k++] = nd->name;
		av[k++] = "-N1";
		av[k++] = "-n1";
		av[k++] = "--overlap"; /* the node's target step keeps running beside it */
		av[k++] = "--quiet";
		/* srun passes the caller's environment on: its MC_TCP_BIND_ADDRESS (127.0.0.1 in
		 * tests) would pin the node's bench to the node's loopback */
		snprintf(bind, bsz, "MC_TCP_BIND_ADDRESS=%s", nd->addr);
		av[k++] = "env";
		av[k++] = bind;
		av[k++] = r->bench;
	} else {
		const struct hr_sshhost *h = hr_hosts_find(&r->hosts, nd->name);
		av[k++] = h && *h->pdkv ? h->pdkv : "pdkv";
		av[k++] = "bench";
	}
	av[k++] = mode;
	if (extra)
		av[k++] = extra;
	for (int i = 0; i < r->nbargs && k + 4 < max; i++)
		av[k++] = r->bargs[i];
	av[k] = NULL;
	return (int)k;
}

static int ssh_line(const char *const *av, char *line, size_t sz)
{
	char q[1024];
	line[0] = '\0';
	for (size_t i = 0; av[i]; i++) {
		if (hr_shell_quote(av[i], q, sizeof(q)) || strlen(line) + strlen(q) + 2 >= sz)
			return -1;
		if (i)
			strcat(line, " ");
		strcat(line, q);
	}
	return 0;
}

/* The segment a target printed ("Run the initiator with --segment_id=SEG;"), from its log. */
static bool find_segment(const char *text, char *seg, size_t sz)
{
	const char *p = text ? strstr(text, "--segment_id=") : NULL;
	size_t n = 0;
	if (!p)
		return false;
	p += strlen("--segment_id=");
	while (p[n] && p[n] != ';' && p[n] != '\n' && p[n] != ' ')
		n++;
	if (!n || n >= sz)
		return false;
	snprintf(seg, sz, "%.*s", (int)n, p);
	return true;
}

static bool target_poll(struct acc_run *r, int x, bool *gone)
{
	struct acc_target *t = &r->t[x];
	char *text = NULL, cmd[700], q[600], err[256];
	size_t len;
	bool found;
	*gone = false;
	if (r->nodes[x].kind == ACC_NODE_SSH) {
		text = malloc(OUT_MAX);
		snprintf(cmd, sizeof(cmd), "%s/target-%s.log", r->rdir, r->nodes[x].name);
		if (!text || hr_shell_quote(cmd, q, sizeof(q))) {
			free(text);
			return false;
		}
		snprintf(cmd, sizeof(cmd), "cat %s 2>/dev/null", q);
		hr_ssh_run(&r->ssh, r->nodes[x].name, cmd, text, OUT_MAX, 10000, err, sizeof(err));
		pd_write_file(t->log, text, strlen(text));
		*gone = hr_ssh_alive(&r->ssh, r->nodes[x].name, t->rpid) == 0;
	} else {
		pd_read_file(t->log, OUT_MAX, &text, &len);
		*gone = !pd_proc_alive(&t->proc);
	}
	found = find_segment(text, t->seg, sizeof(t->seg));
	free(text);
	return found;
}

int acc_target_spawn(struct acc_run *r, int x, char *why, size_t sz)
{
	struct acc_target *t = &r->t[x];
	const char *av[128];
	char bind[200], name[100], err[512];
	int ret;
	char *lp = pd_asprintf("%s/target-%s.log", r->workdir, r->nodes[x].name);
	snprintf(t->log, sizeof(t->log), "%s", lp ? lp : "/dev/null");
	free(lp);
	side_argv(r, x, av, PD_ARRAY_SIZE(av), bind, sizeof(bind), "--mode=target", NULL);
	if (r->nodes[x].kind == ACC_NODE_SSH) {
		snprintf(name, sizeof(name), "target-%s", r->nodes[x].name);
		ret = hr_ssh_start(&r->ssh, r->nodes[x].name, r->rdir, name, av, NULL, &t->rpid,
		                   err, sizeof(err));
	} else
		ret = pd_proc_spawn(&t->proc, "target", (char *const *)av, NULL, t->log);
	if (ret) {
		pd_seterr(why, sz, "node %s: cannot start the target: %s", r->nodes[x].name,
		          r->nodes[x].kind == ACC_NODE_SSH ? err : strerror(-ret));
		return -1;
	}
	t->up = true;
	return 0;
}

int acc_target_wait(struct acc_run *r, int x, char *why, size_t sz)
{
	bool gone = false;
	for (int k = 0; k < 600; k++) {
		if (target_poll(r, x, &gone))
			return 0;
		if (gone)
			break;
		usleep(100000);
	}
	pd_seterr(why, sz, "node %s: the target %s without printing its segment (log %s)",
	          r->nodes[x].name, gone ? "exited" : "ran 60 s", r->t[x].log);
	return -1;
}

static void keep_tail(struct acc_pair *p, const char *out)
{
	size_t n = strlen(out);
	const char *s = n > 150 ? out + n - 150 : out;
	snprintf(p->why, sizeof(p->why), "%s", s);
	for (char *c = p->why; *c; c++)
		if (*c == '\n')
			*c = ' ';
}

void acc_pair_run(struct acc_run *r, int i, int j, struct acc_pair *p)
{
	const char *av[128];
	char bind[200], err[256], *out = malloc(OUT_MAX), *line = NULL, path[700];
	int ret, tmo = (int)(r->row_timeout_s * 1000);
	memset(p, 0, sizeof(*p));
	p->i = i;
	p->j = j;
	if (!out) {
		p->error = true;
		snprintf(p->why, sizeof(p->why), "out of memory");
		return;
	}
	snprintf(path, sizeof(path), "--segment_id=%s", r->t[j].seg);
	side_argv(r, i, av, PD_ARRAY_SIZE(av), bind, sizeof(bind), "--mode=initiator", path);
	if (r->nodes[i].kind == ACC_NODE_SSH) {
		line = malloc(16384);
		if (!line || ssh_line(av, line, 16384))
			ret = -E2BIG;
		else
			ret = hr_ssh_run(&r->ssh, r->nodes[i].name, line, out, OUT_MAX, tmo, err,
			                 sizeof(err));
		free(line);
	} else
		ret = hr_cmd_run(av, out, OUT_MAX, tmo);
	acc_parse_bench(out, p);
	if (ret) {
		p->error = true;
		if (ret == -ETIMEDOUT)
			snprintf(p->why, sizeof(p->why), "initiator ran past %.0f s",
			         r->row_timeout_s);
		else
			keep_tail(p, out);
	} else if (!p->nrep)
		keep_tail(p, out);
	snprintf(path, sizeof(path), "%s/pair-%s-%s.log", r->workdir, r->nodes[i].name,
	         r->nodes[j].name);
	pd_write_file(path, out, strlen(out));
	free(out);
}

/* One node's target stopped (and, over ssh, its remote work dir removed): on a thread per
 * node, since each ssh round trip costs a second or more on a busy host. */
static void *stop_one(void *arg)
{
	struct acc_stop *st = arg;
	struct acc_run *r = st->r;
	struct acc_target *t = &r->t[st->x];
	const char *host = r->nodes[st->x].name;
	char cmd[300], q[200];
	if (r->nodes[st->x].kind != ACC_NODE_SSH) {
		if (t->up)
			pd_proc_stop(&t->proc, 3000);
	} else {
		if (t->up && t->rpid > 0)
			hr_ssh_stop(&r->ssh, host, t->rpid, 3000);
		if (!hr_shell_quote(r->rdir, q, sizeof(q))) {
			snprintf(cmd, sizeof(cmd), "rm -rf %s", q);
			hr_ssh_run(&r->ssh, host, cmd, NULL, 0, 10000, NULL, 0);
		}
	}
	t->up = false;
	return NULL;
}

void acc_run_teardown(struct acc_run *r)
{
	struct acc_stop st[ACC_MAX_NODES];
	pthread_t th[ACC_MAX_NODES];
	bool started[ACC_MAX_NODES] = {0};
	for (int x = 0; x < r->n; x++) {
		st[x] = (struct acc_stop){r, x};
		if (!r->t[x].up && !(r->ssh_on && r->nodes[x].kind == ACC_NODE_SSH))
			continue;
		if (pthread_create(&th[x], NULL, stop_one, &st[x]))
			stop_one(&st[x]);
		else
			started[x] = true;
	}
	for (int x = 0; x < r->n; x++)
		if (started[x])
			pthread_join(th[x], NULL);
	if (r->ssh_on) {
		hr_ssh_close(&r->ssh);
		r->ssh_on = false;
	}
	if (r->nn_on) {
		hr_netns_destroy(&r->nn);
		r->nn_on = false;
	}
}
