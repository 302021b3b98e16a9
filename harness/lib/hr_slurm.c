/* SPDX-License-Identifier: Apache-2.0 */
/* hr_slurm: the allocation a --launcher slurm run uses (SLURM_JOB_ID's or salloc --no-shell's),
 * its nodes and their addresses, placing a scenario's roles on them, and ending its steps. */
#include "hr_slurm.h"
#include "hr_launch.h"
#include "hr_netns.h"
#include "pd_env.h"
#include "pd_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wordexp.h>

#define SLURM_CMD_MS   30000  /* squeue, scontrol, scancel, a cleanup step */
#define SALLOC_WAIT_MS 600000 /* salloc: waiting for the nodes */

static const char *const role_names[HR_NROLES] = {"prefill", "decode", "proxy", "metadata",
                                                  "reference"};

/* the host a role runs on (hr_role_host's rule, kept here so this file calls nothing of the
 * runner's): metadata and reference default to the proxy's */
static const char *role_host(const struct hr_scenario *sc, const char *role)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(sc->hosts, role);
	if (cJSON_IsString(h))
		return h->valuestring;
	if (!strcmp(role, "metadata") || !strcmp(role, "reference"))
		return role_host(sc, "proxy");
	return NULL;
}

void hr_slurm_init(struct hr_slurm *s, const char *slurm_args)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->args, sizeof(s->args), "%s", slurm_args ? slurm_args : "");
	snprintf(s->prefix, sizeof(s->prefix), "pdkv-%d-", (int)getpid());
}

/* the last non-empty line of a command's output: what it complained about */
static void last_line(const char *out, char *line, size_t sz)
{
	const char *end = out + strlen(out), *start;
	while (end > out && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	start = end;
	while (start > out && start[-1] != '\n')
		start--;
	snprintf(line, sz, "%.*s", (int)(end - start), start);
}

/* Runs argv; 0 with out filled, or -1 with why naming the command and its complaint. */
static int run(const char *const argv[], char *out, size_t osz, int ms, char *why, size_t sz)
{
	int ret = hr_cmd_run(argv, out, osz, ms);
	char line[300];
	if (ret == 0)
		return 0;
	last_line(out, line, sizeof(line));
	if (ret == -ENOENT)
		snprintf(why, sz, "%s not found (apt-get install slurm-client)", argv[0]);
	else if (ret == -ETIMEDOUT)
		snprintf(why, sz, "%s did not finish within %ds", argv[0], ms / 1000);
	else
		snprintf(why, sz, "%s %s failed (exit %d): %s", argv[0], argv[1] ? argv[1] : "",
		         ret, line[0] ? line : "no output");
	return -1;
}

/* salloc --no-shell ARGS: an allocation of pdkv's own, cancelled by hr_slurm_close */
static int own_allocation(struct hr_slurm *s, FILE *progress, char *why, size_t sz)
{
	char err[300], name[64], out[4096];
	wordexp_t we; /* shell words and quotes; no command substitution */
	const char *argv[80];
	size_t n = 0;
	const char *p;
	if (wordexp(s->args, &we, WRDE_NOCMD)) {
		snprintf(why, sz,
		         "--slurm-args \"%s\": expected salloc options as a shell would "
		         "split them (no $(...) or `...`)",
		         s->args);
		return -1;
	}
	snprintf(name, sizeof(name), "--job-name=%srun", s->prefix);
	argv[n++] = "salloc";
	argv[n++] = "--no-shell";
	argv[n++] = name;
	for (size_t i = 0; i < we.we_wordc && n + 1 < PD_ARRAY_SIZE(argv); i++)
		argv[n++] = we.we_wordv[i];
	argv[n] = NULL;
	if (progress)
		fprintf(progress, "# slurm: salloc --no-shell %s (waiting for the nodes)\n",
		        s->args);
	int ret = run(argv, out, sizeof(out), SALLOC_WAIT_MS, why, sz);
	wordfree(&we);
	if (ret == 0 && (p = strstr(out, "Granted job allocation ")))
		snprintf(s->job, sizeof(s->job), "%.*s", (int)strspn(p + 23, "0123456789"), p + 23);
	if (!s->job[0]) {
		/* a request still pending (salloc timed out) must not run later */
		const char *cancel[] = {"scancel", name + 1, NULL};
		char o2[512], w2[100];
		run(cancel, o2, sizeof(o2), SLURM_CMD_MS, w2, sizeof(w2));
		if (ret == 0) {
			last_line(out, err, sizeof(err));
			snprintf(why, sz, "salloc gave no job id: %s", err);
		}
		return -1;
	}
	s->own = true;
	return 0;
}

int hr_slurm_node_addr(const char *node, char *addr, size_t asz, char *why, size_t sz)
{
	const char *argv[] = {"scontrol", "show", "node", "-o", node, NULL};
	char out[4096], host[128] = "";
	const char *p;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	if (run(argv, out, sizeof(out), SLURM_CMD_MS, why, sz))
		return -1;
	p = strstr(out, "NodeAddr=");
	snprintf(host, sizeof(host), "%.*s", p ? (int)strcspn(p + 9, " \n") : 0, p ? p + 9 : "");
	if (!host[0])
		snprintf(host, sizeof(host), "%s", node);
	if (getaddrinfo(host, NULL, &hints, &ai) || !ai) {
		snprintf(why, sz, "node %s: its address \"%s\" does not resolve to IPv4", node,
		         host);
		return -1;
	}
	inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, addr, (socklen_t)asz);
	freeaddrinfo(ai);
	return 0;
}

static int list_nodes(struct hr_slurm *s, char *why, size_t sz)
{
	const char *q[] = {"squeue", "-h", "-j", s->job, "-o", "%N", NULL};
	char list[2048], out[8192], *save = NULL;
	if (run(q, list, sizeof(list), SLURM_CMD_MS, why, sz))
		return -1;
	list[strcspn(list, "\r\n")] = '\0';
	if (!list[0]) {
		snprintf(why, sz, "job %s has no nodes (not running: squeue -j %s)", s->job,
		         s->job);
		return -1;
	}
	const char *h[] = {"scontrol", "show", "hostnames", list, NULL};
	if (run(h, out, sizeof(out), SLURM_CMD_MS, why, sz))
		return -1;
	for (char *t = strtok_r(out, "\r\n", &save); t && s->n < HR_SLURM_NODES_MAX;
	     t = strtok_r(NULL, "\r\n", &save)) {
		snprintf(s->node[s->n], sizeof(s->node[0]), "%s", t);
		if (hr_slurm_node_addr(t, s->addr[s->n], sizeof(s->addr[0]), why, sz))
			return -1;
		s->n++;
	}
	if (!s->n) {
		snprintf(why, sz, "scontrol show hostnames %s: no node", list);
		return -1;
	}
	return 0;
}

int hr_slurm_open(struct hr_slurm *s, FILE *progress, char *why, size_t sz)
{
	const char *job = pd_env_str("SLURM_JOB_ID");
	if (s->open)
		return 0;
	if (s->failed) {
		snprintf(why, sz, "%s", s->why);
		return -1;
	}
	if (s->args[0] ? own_allocation(s, progress, why, sz) : 0)
		goto fail;
	if (!s->args[0] && !job) {
		snprintf(why, sz,
		         "not inside a Slurm allocation (SLURM_JOB_ID is unset) and no "
		         "--slurm-args: run pdkv under salloc/sbatch, or give --slurm-args \"-N 3 "
		         "...\" (salloc's options) for an allocation of its own");
		goto fail;
	}
	if (!s->args[0])
		snprintf(s->job, sizeof(s->job), "%s", job);
	snprintf(s->base, sizeof(s->base), "/tmp/pdkv-slurm.%s.%d", s->job, (int)getpid());
	if (list_nodes(s, why, sz))
		goto fail;
	s->open = true;
	if (progress) {
		fprintf(progress, "# slurm: job %s%s, %zu node%s:", s->job,
		        s->own ? " (pdkv's own)" : "", s->n, s->n == 1 ? "" : "s");
		for (size_t i = 0; i < s->n; i++)
			fprintf(progress, " %s (%s)", s->node[i], s->addr[i]);
		fprintf(progress, "\n");
	}
	return 0;
fail:
	s->failed = true;
	snprintf(s->why, sizeof(s->why), "%s", why);
	hr_slurm_close(s);
	s->failed = true;
	return -1;
}

void hr_slurm_close(struct hr_slurm *s)
{
	char ids[4096], nodes[2048] = "", out[1024], why[300];
	size_t k = 0;
	if (s->job[0] && hr_slurm_steps(s, s->prefix, ids, sizeof(ids)) > 0)
		hr_slurm_cancel(ids, "KILL");
	for (size_t i = 0; s->open && i < s->n; i++)
		if (s->used[i] && strlen(nodes) + strlen(s->node[i]) + 2 < sizeof(nodes)) {
			strcat(nodes, k++ ? "," : "");
			strcat(nodes, s->node[i]);
		}
	if (k) { /* one last step over the nodes used: their work dirs go */
		char jobid[64], nn[32], name[80];
		snprintf(jobid, sizeof(jobid), "--jobid=%s", s->job);
		snprintf(nn, sizeof(nn), "--nodes=%zu", k);
		snprintf(name, sizeof(name), "--job-name=%sclean", s->prefix);
		const char *argv[] = {"srun",       jobid, "--overlap", nn,   "--ntasks-per-node=1",
		                      "--nodelist", nodes, name,        "rm", "-rf",
		                      s->base,      NULL};
		run(argv, out, sizeof(out), SLURM_CMD_MS, why, sizeof(why));
	}
	if (s->own && s->job[0]) {
		const char *argv[] = {"scancel", s->job, NULL};
		run(argv, out, sizeof(out), SLURM_CMD_MS, why, sizeof(why));
	}
	s->own = s->open = false;
	s->job[0] = '\0';
	memset(s->used, 0, sizeof(s->used));
}

/* the roles' host names in role order, each once */
static size_t host_names(const struct hr_scenario *sc, const char **names)
{
	size_t n = 0;
	for (int r = 0; r < HR_NROLES; r++) {
		const char *h = role_host(sc, role_names[r]);
		bool seen = false;
		for (size_t k = 0; h && k < n; k++)
			seen |= !strcmp(names[k], h);
		if (h && !seen)
			names[n++] = h;
	}
	return n;
}

/* The scenario's mooncake URLs name a loopback address outright ("127.0.0.1:${PORT_KV}", a
 * same-host scenario): its prefill and decode can only meet on one node. */
static bool loopback_urls(const struct hr_scenario *sc)
{
	static const char *const keys[] = {"prefill_url", "decode_url"};
	for (size_t i = 0; i < PD_ARRAY_SIZE(keys); i++) {
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(sc->mooncake, keys[i]);
		if (cJSON_IsString(u) && (!strncmp(u->valuestring, "127.", 4) ||
		                          !strncmp(u->valuestring, "localhost", 9)))
			return true;
	}
	return false;
}

int hr_slurm_setup(struct hr_remote *rm, struct hr_slurm *s, const struct hr_scenario *sc,
                   FILE *progress, char *why, size_t sz)
{
	const char *names[HR_NROLES];
	size_t nn;
	memset(rm, 0, sizeof(*rm));
	rm->run = *sc;
	if (hr_slurm_open(s, progress, why, sz))
		return -1;
	rm->on = true;
	rm->ops = &hr_launch_slurm;
	rm->slurm = s;
	snprintf(rm->base, sizeof(rm->base), "%s", s->base);
	if (!sc->hosts) { /* a scenario without "hosts": one node per side, proxy on a third */
		rm->own_hosts = cJSON_CreateObject();
		cJSON_AddStringToObject(rm->own_hosts, "prefill", "p");
		cJSON_AddStringToObject(rm->own_hosts, "decode", loopback_urls(sc) ? "p" : "d");
		cJSON_AddStringToObject(rm->own_hosts, "proxy", "x");
		rm->run.hosts = rm->own_hosts;
	}
	nn = host_names(&rm->run, names);
	for (int r = 0; r < HR_NROLES; r++) {
		const char *h = role_host(&rm->run, role_names[r]);
		size_t i = 0;
		while (i < nn && strcmp(names[i], h))
			i++;
		i %= s->n;
		snprintf(rm->host[r], sizeof(rm->host[r]), "%s", s->node[i]);
		snprintf(rm->addr[r], sizeof(rm->addr[r]), "%s", s->addr[i]);
		s->used[i] = true;
	}
	rm->run.prefill_host = rm->addr[HR_ROLE_PREFILL];
	rm->run.decode_host = rm->addr[HR_ROLE_DECODE];
	rm->run.proxy_host = rm->addr[HR_ROLE_PROXY];
	if (progress)
		fprintf(progress, "# slurm: %s: prefill on %s, decode on %s, proxy on %s%s%s\n",
		        sc->name, rm->host[HR_ROLE_PREFILL], rm->host[HR_ROLE_DECODE],
		        rm->host[HR_ROLE_PROXY],
		        nn > s->n ? " (fewer nodes than hosts: some share a node)" : "",
		        !sc->hosts && loopback_urls(sc)
		            ? " (its mooncake URLs name loopback: prefill and decode share a node)"
		            : "");
	return 0;
}

void hr_slurm_teardown(struct hr_remote *rm)
{
	char ids[4096];
	if (rm->slurm && rm->slurm->open &&
	    hr_slurm_steps(rm->slurm, rm->slurm->prefix, ids, sizeof(ids)) > 0)
		hr_slurm_cancel(ids, "KILL");
	hr_slurm_faults_free(rm); /* a cut's step still there ends (its link goes up) */
	cJSON_Delete(rm->own_hosts);
	rm->own_hosts = NULL;
	rm->slurm = NULL;
}
