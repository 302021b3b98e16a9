/* SPDX-License-Identifier: Apache-2.0 */
/* hr_slurm_faults: a scenario's link faults under --launcher slurm — each cut is an srun step on
 * the node of the host it names, taking the node's interface down and up again on its own timer
 * (the node is unreachable while its link is down, so nothing from here could bring it up). */
#include "hr_deploy.h"
#include "hr_faults.h"
#include "hr_launch.h"
#include "hr_netns.h"
#include "hr_slurm.h"
#include "pd_util.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBE_MS 30000

/* One cut: the link of `host` down at +down_ms, up at +up_ms (from the workload's start). */
struct hr_slurm_cut {
	char host[32], node[64], addr[64], dev[32];
	double down_ms, up_ms;
	struct pd_proc proc;
	char log[600];
	bool started;
};

struct hr_slurm_faults {
	size_t n;
	struct hr_slurm_cut c[8];
	double t0;    /* pd_now_s at the workload's start */
	long long w0; /* the same instant, CLOCK_REALTIME ns (the nodes' clocks are the same) */
	char applied[800];
};

/* On the node: the interface holding address $1, and whether this step may set it
 * (CAP_NET_ADMIN: setting a link that is up "up" again is refused without it). */
static const char probe_script[] =
    "command -v ip >/dev/null || { echo 'no: ip (iproute2) is not installed'; exit 0; }; "
    "d=$(ip -o -4 addr show to \"$1/32\" | awk '{print $2; exit}'); "
    "[ -n \"$d\" ] || { echo \"no: no interface holds $1\"; exit 0; }; "
    "[ \"$d\" != lo ] || { echo \"no: $1 is on loopback\"; exit 0; }; "
    "if o=$(ip link set dev \"$d\" up 2>&1); then echo \"dev $d\"; "
    "else echo \"no: ip link set dev $d: $o\"; fi";

/* On the node: $1 down at CLOCK_REALTIME ns $2, up at $3; up again on any way out. */
static const char cut_script[] =
    "d=$1; trap 'ip link set dev \"$d\" up' EXIT; trap 'exit 1' TERM INT HUP; "
    "w() { t=$(( $1 - $(date +%s%N) )); [ $t -le 0 ] || "
    "sleep $((t / 1000000000)).$(printf %09d $((t % 1000000000))); }; "
    "w $2; ip link set dev \"$d\" down || exit 1; echo \"down $(date +%s%N)\"; "
    "w $3; ip link set dev \"$d\" up || exit 1; echo \"up $(date +%s%N)\"";

static bool is_link_fault(const cJSON *e)
{
	return !hr_faults_is_process(e) && cJSON_GetObjectItemCaseSensitive(e, "link");
}

bool hr_scenario_has_link_faults(const struct hr_scenario *sc)
{
	for (const cJSON *e = sc->faults ? sc->faults->child : NULL; e; e = e->next)
		if (is_link_fault(e))
			return true;
	return false;
}

/* a {"flood": ...} fault (hr_fault_flood.c) */
static bool has_flood(const struct hr_scenario *sc)
{
	for (const cJSON *e = sc->faults ? sc->faults->child : NULL; e; e = e->next)
		if (cJSON_GetObjectItemCaseSensitive(e, "flood"))
			return true;
	return false;
}

static double after_ms(const cJSON *e)
{
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "after_ms");
	return ms ? ms->valuedouble : 200;
}

/* the node index a host name runs on, -1 when no role runs there; *shared: another host name
 * of the scenario is on the same node */
static int node_of(const struct hr_remote *rm, const char *host, bool *shared)
{
	static const char *const roles[HR_NROLES] = {"prefill", "decode", "proxy", "metadata",
	                                             "reference"};
	int node = -1;
	*shared = false;
	for (int r = 0; r < HR_NROLES; r++) {
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(rm->run.hosts, roles[r]);
		if (!cJSON_IsString(h) || strcmp(h->valuestring, host))
			continue;
		for (size_t i = 0; i < rm->slurm->n; i++)
			if (!strcmp(rm->slurm->node[i], rm->host[r]))
				node = (int)i;
	}
	for (int r = 0; node >= 0 && r < HR_NROLES; r++) {
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(rm->run.hosts, roles[r]);
		if (cJSON_IsString(h) && strcmp(h->valuestring, host) &&
		    !strcmp(rm->host[r], rm->slurm->node[node]))
			*shared = true;
	}
	return node;
}

static bool own_address(const char *addr)
{
	struct ifaddrs *ifa = NULL;
	bool own = false;
	char a[INET_ADDRSTRLEN];
	if (getifaddrs(&ifa))
		return false;
	for (struct ifaddrs *i = ifa; i && !own; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a,
		              sizeof(a)))
			own = !strcmp(a, addr);
	freeifaddrs(ifa);
	return own;
}

/* The cuts: each "down" paired with the next "up" of the same link. 0, or 77 with why. */
static int pair_cuts(struct hr_slurm_faults *f, const struct hr_scenario *sc, char *why, size_t sz)
{
	int i = 0;
	for (const cJSON *e = sc->faults->child; e; e = e->next, i++) {
		const char *link, *act;
		const cJSON *u;
		if (!is_link_fault(e))
			continue;
		link = cJSON_GetObjectItemCaseSensitive(e, "link")->valuestring;
		act = cJSON_GetObjectItemCaseSensitive(e, "action")->valuestring;
		if (strcmp(act, "down"))
			continue; /* an "up" closes the cut before it (or is a no-op) */
		for (u = e->next; u; u = u->next)
			if (is_link_fault(u) &&
			    !strcmp(cJSON_GetObjectItemCaseSensitive(u, "link")->valuestring, link))
				break;
		if (!u ||
		    strcmp(cJSON_GetObjectItemCaseSensitive(u, "action")->valuestring, "up")) {
			snprintf(
			    why, sz,
			    "faults[%d]: link %s goes down with no later \"up\": under --launcher "
			    "slurm a cut link comes back only on the node's own timer (nothing "
			    "reaches the node while it is down), so a link left down for good is "
			    "not run there; add {\"link\": \"%s\", \"action\": \"up\", "
			    "\"after_ms\": N} or run it on netns hosts (no --launcher)",
			    i, link, link);
			return 77;
		}
		if (f->n == PD_ARRAY_SIZE(f->c)) {
			snprintf(why, sz, "faults: over %zu link cuts", PD_ARRAY_SIZE(f->c));
			return 77;
		}
		struct hr_slurm_cut *c = &f->c[f->n++];
		snprintf(c->host, sizeof(c->host), "%s", link);
		c->down_ms = after_ms(e);
		c->up_ms = after_ms(u) > c->down_ms ? after_ms(u) : c->down_ms;
	}
	return 0;
}

/* Runs the probe on the cut's node: its interface, or 77 with why. */
static int probe_node(struct hr_remote *rm, struct hr_slurm_cut *c, char *why, size_t sz)
{
	struct hr_slurm *s = rm->slurm;
	char jobid[64], nl[96], name[96], out[2048];
	snprintf(jobid, sizeof(jobid), "--jobid=%s", s->job);
	snprintf(nl, sizeof(nl), "--nodelist=%s", c->node);
	snprintf(name, sizeof(name), "--job-name=%slinkprobe", s->prefix);
	const char *argv[] = {"srun",       jobid, "--overlap", "--nodes=1", "--ntasks=1",
	                      nl,           name,  "--quiet",   "/bin/sh",   "-c",
	                      probe_script, "sh",  c->addr,     NULL};
	int ret = hr_cmd_run(argv, out, sizeof(out), PROBE_MS);
	const char *p = strstr(out, "dev ");
	if (ret == 0 && p && (p == out || p[-1] == '\n')) {
		snprintf(c->dev, sizeof(c->dev), "%.*s", (int)strcspn(p + 4, " \r\n"), p + 4);
		return 0;
	}
	out[strcspn(out, "\r\n")] = '\0';
	snprintf(why, sz,
	         "link faults under --launcher slurm: node %s (%s, host %s): %s%s (a cut is "
	         "`ip link set DEV down` in a step on the node: it needs CAP_NET_ADMIN there)",
	         c->node, c->addr, c->host, !strncmp(out, "no: ", 4) ? out + 4 : out,
	         ret ? " (srun failed)" : "");
	return 77;
}

int hr_slurm_faults_prepare(struct hr_remote *rm, FILE *progress, char *why, size_t sz)
{
	struct hr_slurm_faults *f;
	int ret;
	if (rm->slurm && has_flood(&rm->run)) {
		snprintf(why, sz,
		         "faults: a flood opens its connections here, from an address of this "
		         "host (\"from\", 127.0.0.9 by default), and finds the ports of "
		         "processes running here; under --launcher slurm the roles run on the "
		         "allocation's nodes, so the flood would reach none of them (run it "
		         "locally or on netns hosts)");
		return 77;
	}
	if (!rm->slurm || !hr_scenario_has_link_faults(&rm->run))
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(why, sz, "out of memory");
		return -1;
	}
	rm->lf = f;
	if ((ret = pair_cuts(f, &rm->run, why, sz)))
		return ret;
	for (size_t i = 0; i < f->n; i++) {
		struct hr_slurm_cut *c = &f->c[i];
		bool shared;
		int k = node_of(rm, c->host, &shared);
		if (k < 0) {
			snprintf(why, sz, "link %s: no role runs on that host", c->host);
			return 77;
		}
		snprintf(c->node, sizeof(c->node), "%s", rm->slurm->node[k]);
		snprintf(c->addr, sizeof(c->addr), "%s", rm->slurm->addr[k]);
		if (shared || own_address(c->addr)) {
			snprintf(why, sz,
			         "link %s: its node %s %s, so cutting its link would cut more than "
			         "that host (give the allocation a node per host)",
			         c->host, c->node,
			         shared ? "also runs another host of the scenario"
			                : "is the one pdkv run runs on");
			return 77;
		}
		if ((ret = probe_node(rm, c, why, sz)))
			return ret;
		if (progress)
			fprintf(progress,
			        "# slurm: link %s = %s on node %s (%s): cut by a step there\n",
			        c->host, c->dev, c->node, c->addr);
	}
	return 0;
}

static long long realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void hr_slurm_faults_start(struct hr_remote *rm, const char *workdir)
{
	struct hr_slurm_faults *f = rm ? rm->lf : NULL;
	if (!f)
		return;
	f->t0 = pd_now_s();
	f->w0 = realtime_ns();
	f->applied[0] = '\0';
	for (size_t i = 0; i < f->n; i++) {
		struct hr_slurm_cut *c = &f->c[i];
		char jobid[64], nl[96], name[96], at1[32], at2[32];
		snprintf(jobid, sizeof(jobid), "--jobid=%s", rm->slurm->job);
		snprintf(nl, sizeof(nl), "--nodelist=%s", c->node);
		snprintf(name, sizeof(name), "--job-name=%slink-%s", rm->slurm->prefix, c->host);
		snprintf(at1, sizeof(at1), "%lld", f->w0 + (long long)(c->down_ms * 1e6));
		snprintf(at2, sizeof(at2), "%lld", f->w0 + (long long)(c->up_ms * 1e6));
		snprintf(c->log, sizeof(c->log), "%s/link-%s-%zu.log", workdir, c->host, i);
		char *argv[] = {
		    "srun", jobid,     "--overlap", "--nodes=1", "--ntasks=1",       nl,
		    name,   "--quiet", "/bin/sh",   "-c",        (char *)cut_script, "sh",
		    c->dev, at1,       at2,         NULL};
		c->started = pd_proc_spawn(&c->proc, "link", argv, NULL, c->log) == 0;
	}
}

/* "down NS" / "up NS" from the step's log, as seconds from the workload's start; -1 = absent */
static double stamp(const struct hr_slurm_faults *f, const char *text, const char *key)
{
	char pat[16];
	long long ns;
	const char *p;
	snprintf(pat, sizeof(pat), "%s ", key);
	for (p = text; p && (p = strstr(p, pat)); p++)
		if ((p == text || p[-1] == '\n') && sscanf(p + strlen(pat), "%lld", &ns) == 1)
			return (double)(ns - f->w0) / 1e9;
	return -1;
}

int hr_slurm_faults_stop(struct hr_remote *rm, char *why, size_t sz)
{
	struct hr_slurm_faults *f = rm ? rm->lf : NULL;
	int bad = 0;
	if (!f)
		return 0;
	for (size_t i = 0; i < f->n; i++) {
		struct hr_slurm_cut *c = &f->c[i];
		char *text = NULL, last[200] = "";
		size_t len = 0;
		/* its own timer brings the link up; then srun's output comes through */
		double until = f->t0 + c->up_ms / 1000.0 + 15;
		while (c->started && pd_proc_alive(&c->proc) && pd_now_s() < until)
			pd_sleep_ms(50);
		if (c->started)
			pd_proc_stop(&c->proc, 1000);
		pd_read_file(c->log, 64 * 1024, &text, &len);
		double down = stamp(f, text ? text : "", "down"),
		       up = stamp(f, text ? text : "", "up");
		if (text && len) {
			char *nl = text + len;
			while (nl > text && (nl[-1] == '\n' || nl[-1] == '\r'))
				*--nl = '\0';
			snprintf(last, sizeof(last), "%s",
			         strrchr(text, '\n') ? strrchr(text, '\n') + 1 : text);
		}
		free(text);
		if (down < 0 || up < 0) {
			if (!bad++)
				snprintf(why, sz, "link %s (%s on node %s) %s: %s", c->host, c->dev,
				         c->node,
				         down < 0 ? "was never cut" : "did not come back up",
				         last[0] ? last : "its step printed nothing");
			hr_note_add(f->applied, sizeof(f->applied), "link %s: %s", c->host,
			            down < 0 ? "not cut" : "not restored");
			continue;
		}
		hr_note_add(f->applied, sizeof(f->applied),
		            "link %s down at +%.1fs, up at +%.1fs (%s on node %s, a step there)",
		            c->host, down, up, c->dev, c->node);
	}
	return bad ? -1 : 0;
}

const char *hr_slurm_faults_applied(const struct hr_remote *rm)
{
	return rm && rm->lf ? rm->lf->applied : "";
}

void hr_slurm_faults_free(struct hr_remote *rm)
{
	struct hr_slurm_faults *f = rm->lf;
	for (size_t i = 0; f && i < f->n; i++)
		if (f->c[i].started)
			pd_proc_stop(&f->c[i].proc, 1000);
	free(f);
	rm->lf = NULL;
}
