/* SPDX-License-Identifier: Apache-2.0 */
/* hr_run: one scenario from start to verdict — work dir, metadata service, stand-ins, proxy,
 * workload, /metrics before and after, checks, teardown (also on failure, timeout, Ctrl-C). */
#include "hr_deploy.h"
#include "hr_hosts.h"
#include "hr_launch.h"
#include "hr_router.h"
#include "hr_slurm.h"
#include "pd_log.h"
#include "pd_stats.h"
#include "pd_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_S 120.0
#define HEALTH_BOUND_S    30.0

struct run {
	const struct hr_scenario *sc;
	const struct hr_opts *o;
	struct hr_result *res;
	struct hr_deploy d;
	double t0, deadline;
	int last_pct;
	bool port_race; /* a start lost a port to another program: worth one more attempt */
	int attempt;
};

static void progress(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(struct run *r, const char *fmt, ...)
{
	va_list ap;
	char line[160];
	int n;
	if (!r->o->progress)
		return;
	n = snprintf(line, sizeof(line), "# %s: ", r->sc->name);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (r->o->progress_tty) /* one status line, kept short so \r can rewrite it */
		fprintf(r->o->progress, "\r\033[K%.100s", line);
	else
		fprintf(r->o->progress, "%s\n", line);
	fflush(r->o->progress);
}

static void fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct run *r, const char *fmt, ...)
{
	va_list ap;
	if (r->res->status != HR_PASS)
		return; /* keep the first reason */
	r->res->status = HR_FAIL;
	va_start(ap, fmt);
	vsnprintf(r->res->reason, sizeof(r->res->reason), fmt, ap);
	va_end(ap);
}

static void notrun(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notrun(struct run *r, const char *fmt, ...)
{
	va_list ap;
	r->res->status = HR_NOTRUN;
	va_start(ap, fmt);
	vsnprintf(r->res->reason, sizeof(r->res->reason), fmt, ap);
	va_end(ap);
}

static void on_progress(int done, int total, void *ud)
{
	struct run *r = ud;
	int pct = total ? done * 100 / total : 100;
	/* at most ~5 lines per phase */
	if (done == total || pct - r->last_pct >= 25) {
		r->last_pct = pct;
		progress(r, "requests %d/%d", done, total);
	}
}

static struct hr_req *make_reqs(const struct hr_scenario *sc)
{
	struct hr_req *q = calloc((size_t)sc->wl.requests, sizeof(*q));
	if (!q)
		return NULL;
	for (int i = 0; i < sc->wl.requests; i++) {
		q[i].idx = i;
		q[i].planned_tokens = sc->wl.prompt_tokens[i];
		q[i].usage_prompt = q[i].usage_completion = q[i].usage_cached = -1;
		q[i].prompt = sc->wl.prompts ? strdup(sc->wl.prompts[(size_t)i % sc->wl.nprompts])
		                             : hr_prompt_text(i, sc->wl.prompt_tokens[i], 7);
		if (!q[i].prompt) {
			hr_reqs_free(q, (size_t)i);
			return NULL;
		}
	}
	return q;
}

static cJSON *metric_deltas(const struct hr_metrics *b, const struct hr_metrics *a)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < a->n; i++) {
		if (strncmp(a->name[i], "pdkv_", 5) && strncmp(a->name[i], "vllm:", 5))
			continue;
		cJSON_AddNumberToObject(o, a->name[i], hr_metric_delta(b, a, a->name[i]));
	}
	return o;
}

/* How node n ended, for a message: "exit status N", "killed by signal N (Name)" or "exited". */
static const char *ended_how(const struct hr_node *n, char *how, size_t sz)
{
	snprintf(how, sz, "exited");
	if (n->ops)
		n->ops->describe_exit(n, how, sz);
	return how;
}

/* A process that died during the run is a FAIL, unless the scenario expects it (crash faults). */
static void check_alive(struct run *r)
{
	struct {
		struct hr_node *n;
		unsigned bit;
	} v[] = {{&r->d.prefill, HR_NODE_PREFILL},
	         {&r->d.decode, HR_NODE_DECODE},
	         {&r->d.plain, HR_NODE_PLAIN},
	         {&r->d.proxy, HR_NODE_PROXY}};
	for (size_t i = 0; i < PD_ARRAY_SIZE(v); i++) {
		char why[700], how[64];
		if (!v[i].n->started || hr_node_alive(&r->d, v[i].n))
			continue;
		if (r->sc->expect_exit & v[i].bit) {
			progress(r, "%s exited during the run, as expected", v[i].n->name);
			continue;
		}
		/* how it ended (exit status or signal) first: a SIGKILL leaves nothing in the log
		 */
		hr_log_tail(hr_node_log(&r->d, v[i].n), why, sizeof(why));
		fail(r, "%s exited during the run (%s); its log: %s", v[i].n->name,
		     ended_how(v[i].n, how, sizeof(how)), why[0] ? why : "(empty)");
	}
}

static void metrics_copy(struct hr_metrics *dst, const struct hr_metrics *src)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	memset(dst, 0, sizeof(*dst));
	if (!f)
		return;
	for (size_t i = 0; i < src->n; i++)
		fprintf(f, "%s %.17g\n", src->name[i], src->value[i]);
	fclose(f);
	if (text && hr_metrics_parse(text, dst))
		memset(dst, 0, sizeof(*dst));
	free(text);
}

cJSON *hr_request_summary(const struct hr_req *q, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	double *lat = calloc(n ? n : 1, sizeof(double)), tokens = 0;
	size_t ok = 0, sent = 0;
	for (size_t i = 0; i < n; i++) {
		sent += q[i].status != 0 || q[i].curl_err[0];
		if (q[i].status == 200 && !q[i].invalid && !q[i].kv_check_failed) {
			if (lat)
				lat[ok] = q[i].secs;
			ok++;
			tokens += q[i].usage_prompt > 0 ? (double)q[i].usage_prompt : 0;
		}
	}
	cJSON_AddNumberToObject(o, "total", (double)n);
	cJSON_AddNumberToObject(o, "sent", (double)sent);
	cJSON_AddNumberToObject(o, "ok", (double)ok);
	cJSON_AddNumberToObject(o, "prompt_tokens", tokens);
	if (ok && lat) {
		/* pd_stats' one percentile definition (linear between closest ranks) */
		pd_stats_sort(lat, ok);
		cJSON_AddNumberToObject(o, "latency_p50_s", pd_stats_pct_sorted(lat, ok, 50));
		cJSON_AddNumberToObject(o, "latency_p99_s", pd_stats_pct_sorted(lat, ok, 99));
		cJSON_AddNumberToObject(o, "latency_max_s", lat[ok - 1]);
	}
	free(lat);
	return o;
}

static bool stopped(struct run *r, const char *phase)
{
	if (r->o->stop && *r->o->stop) {
		fail(r, "interrupted while %s", phase);
		return true;
	}
	if (pd_now_s() > r->deadline) {
		fail(r, "timed out after %.0fs while %s", r->deadline - r->t0, phase);
		return true;
	}
	return false;
}

/* After a failed startup only the startup check has anything to look at. */
static void run_checks(struct run *r, struct hr_run_data *rd)
{
	const struct hr_scenario *sc = r->sc;
	struct hr_result *res = r->res;
	res->checks = calloc(sc->nchecks, sizeof(*res->checks));
	if (!res->checks) {
		fail(r, "out of memory");
		return;
	}
	res->nchecks = 0;
	for (size_t i = 0; i < sc->nchecks; i++) {
		const struct hr_check *ck = hr_check_find(sc->checks[i]);
		struct hr_check_result *cr = &res->checks[res->nchecks];
		if (rd->startup_error && strcmp(ck->name, "startup"))
			continue;
		res->nchecks++;
		bool want_fail = sc->expect_fail && !strcmp(sc->expect_fail, ck->name);
		cr->name = ck->name;
		cr->pass = ck->fn(rd, cr->detail, sizeof(cr->detail));
		if (want_fail && cr->pass)
			fail(r,
			     "self-test: %s did not fail, the injected fault went undetected: %s",
			     ck->name, cr->detail);
		else if (want_fail && sc->expect_match && !strstr(cr->detail, sc->expect_match))
			fail(r, "self-test: %s failed, but not with \"%s\": %s", ck->name,
			     sc->expect_match, cr->detail);
		else if (!want_fail && !cr->pass)
			fail(r, "%s: %s", ck->name, cr->detail);
	}
}

/* A process died or never got healthy: a FAIL, unless the scenario says startup must fail. */
static void startup_failed(struct run *r, struct hr_run_data *rd, int ret, const char *why)
{
	/* ports are picked free but not held; on a busy host another program can take one in
	 * between, which says nothing about the deployment: start over once on fresh ports */
	if (ret == -ECHILD && r->attempt == 0 && strcasestr(why, "address already in use")) {
		r->port_race = true;
		progress(r, "%s; retrying on other ports", why);
		return;
	}
	if (ret == -ECHILD && hr_scenario_has_check(r->sc, "startup")) {
		rd->startup_error = why;
		run_checks(r, rd);
		return;
	}
	fail(r, "%s", why);
}

/* ---- phase 1, start: metadata service, variables, mooncake.json, the stand-ins ---- */
static int phase_prepare(struct run *r)
{
	const struct hr_scenario *sc = r->sc;
	struct hr_deploy *d = &r->d;
	char why[1024], err[600];
	int ret;
	if (hr_capability_missing(sc, why, sizeof(why))) {
		notrun(r, "%s", why);
		return -1;
	}
	if (hr_find_bin("pdkv-standin", d->standin_exe, sizeof(d->standin_exe)) ||
	    hr_find_bin("pdkv-proxy", d->proxy_exe, sizeof(d->proxy_exe))) {
		notrun(r, "pdkv-standin / pdkv-proxy not found next to pdkv-run or in $PDKV_BIN "
		          "(build them: make)");
		return -1;
	}
	d->plain_on = false;
	for (size_t i = 0; i < sc->nchecks; i++)
		d->plain_on |= hr_check_find(sc->checks[i])->needs_plain;
	ret = pd_mkdir_p(d->workdir);
	if (ret) {
		fail(r, "cannot create work dir %s: %s", d->workdir, strerror(-ret));
		return -1;
	}
	if (sc->meta != HR_META_P2P)
		progress(r, "starting %s metadata service", hr_meta_name(sc->meta));
	ret = hr_deploy_start_meta(d);
	if (ret == -ENOENT) {
		notrun(r, "metadata backend %s: %s", hr_meta_name(sc->meta),
		       d->why[0] ? d->why : "its server is not installed on this host");
		return -1;
	}
	if (ret) {
		fail(r, "metadata backend %s did not start: %s", hr_meta_name(sc->meta),
		     d->why[0] ? d->why : strerror(-ret));
		return -1;
	}
	if (d->meta_up || d->metanode.started)
		progress(r, "metadata at %s", d->meta.conn);
	if (stopped(r, "starting the metadata service"))
		return -1;
	if (hr_deploy_setup_vars(d)) {
		fail(r, "could not find free port blocks for the scenario's ${PORT_...} variables");
		return -1;
	}
	if (hr_deploy_write_mooncake(d, err, sizeof(err))) {
		fail(r, "mooncake: %s", err);
		return -1;
	}
	if (hr_deploy_init_nodes(d)) {
		fail(r, "no free HTTP port on the scenario's loopback addresses");
		return -1;
	}
	return 0;
}

/* Spawns one process from its argv; the node's name is also its log's name. */
static int start_node(struct run *r, struct hr_node *n, const char *name, cJSON *argv,
                      char *const *env, const char *err)
{
	int ret;
	if (!argv) {
		if (!strcmp(name, "proxy"))
			fail(r, "proxy_args: %s", err);
		else
			fail(r, "%s arguments: %s", name, err);
		return -1;
	}
	ret = hr_spawn(&r->d, n, name, argv, env);
	cJSON_Delete(argv);
	if (ret) {
		fail(r, "cannot start %s: %s", name, r->d.why[0] ? r->d.why : strerror(-ret));
		return -1;
	}
	if (r->o->verbose && strcmp(name, "proxy") && n->rhost[0])
		progress(r, "%s: on host %s, pid %d there, log %s", name, n->rhost, n->rpid,
		         n->proc.log);
	else if (r->o->verbose && strcmp(name, "proxy"))
		progress(r, "%s: pid %d, log %s", name, (int)n->proc.pid, n->proc.log);
	return 0;
}

static int phase_start(struct run *r, struct hr_node **nodes, size_t *nn)
{
	const struct hr_scenario *sc = r->sc;
	struct hr_deploy *d = &r->d;
	char err[600];
	struct {
		struct hr_node *n;
		const char *name;
		const cJSON *kv, *args;
		bool on;
	} starts[] = {
	    {&d->prefill, "prefill", sc->kv_prefill, sc->prefill_args, true},
	    {&d->decode, "decode", sc->kv_decode, sc->decode_args, true},
	    {&d->plain, "plain", NULL, NULL, d->plain_on},
	};
	char ver[120];
	hr_scenario_vllm_label(sc, ver, sizeof(ver));
	progress(r, "starting prefill %s, decode %s%s%s%s%s", d->prefill.base_url,
	         d->decode.base_url, d->plain_on ? ", plain stand-in" : "",
	         strchr(ver, ',') ? " (vLLM " : "", strchr(ver, ',') ? ver : "",
	         strchr(ver, ',') ? ")" : "");
	*nn = 0;
	for (size_t i = 0; i < PD_ARRAY_SIZE(starts); i++) {
		cJSON *argv;
		if (!starts[i].on)
			continue;
		argv =
		    hr_standin_argv(d, starts[i].n, starts[i].kv, starts[i].args, err, sizeof(err));
		char **env = starts[i].kv ? hr_standin_env(d, (int)i) : NULL;
		int ret = start_node(r, starts[i].n, starts[i].name, argv, env, err);
		hr_env_free(env);
		if (ret)
			return -1;
		nodes[(*nn)++] = starts[i].n;
	}
	return 0;
}

/* ---- phase 2, wait: the stand-ins healthy, then the proxy in front of them healthy ---- */
static int phase_wait(struct run *r, struct hr_run_data *rd, struct hr_node **nodes, size_t nn)
{
	struct hr_deploy *d = &r->d;
	char why[1024], err[600];
	int ret;
	progress(r, "waiting for /health");
	ret = hr_wait_healthy(d, nodes, nn, fmin(r->deadline, pd_now_s() + HEALTH_BOUND_S),
	                      r->o->stop, why, sizeof(why));
	if (ret) {
		startup_failed(r, rd, ret, why);
		return -1;
	}
	if (start_node(r, &d->proxy, "proxy", hr_proxy_argv(d, err, sizeof(err)), NULL, err))
		return -1;
	nodes[0] = &d->proxy;
	if (r->sc->proxy_cmd)
		ret = hr_router_wait_ready(d, r->deadline, r->o->stop, why, sizeof(why));
	else
		ret = hr_wait_healthy(d, nodes, 1, fmin(r->deadline, pd_now_s() + HEALTH_BOUND_S),
		                      r->o->stop, why, sizeof(why));
	if (ret) {
		startup_failed(r, rd, ret, why);
		return -1;
	}
	r->res->startup_s = pd_now_s() - r->t0;
	progress(r, "all up in %.1fs; proxy %s", r->res->startup_s, d->proxy.base_url);
	return 0;
}

/* ---- phase 3, workload: /metrics before, then every request through the proxy ---- */
static int phase_workload(struct run *r, struct hr_run_data *rd)
{
	const struct hr_scenario *sc = r->sc;
	struct hr_deploy *d = &r->d;
	double tw;
	char why[600];
	if (hr_metrics_scrape(d->prefill.metrics_url, 3000, &rd->p_before) ||
	    hr_metrics_scrape(d->decode.metrics_url, 3000, &rd->d_before)) {
		fail(r, "cannot read /metrics of prefill or decode before the workload");
		return -1;
	}
	rd->d_before_text = hr_metrics_text(d->decode.metrics_url); /* kv_reused's by-source */
	rd->vllm = sc->vllm;
	rd->reqs = make_reqs(sc);
	rd->plain = d->plain_on ? make_reqs(sc) : NULL;
	if (!rd->reqs || (d->plain_on && !rd->plain)) {
		fail(r, "out of memory");
		return -1;
	}
	progress(r, "%d requests through the proxy (%s, %d%% streamed, %d%% cut, concurrency %d)",
	         sc->wl.requests, sc->wl.chat ? "chat" : "completions", sc->wl.stream_pct,
	         sc->wl.disconnect_pct, sc->wl.concurrency);
	tw = pd_now_s();
	r->last_pct = 0;
	hr_net_faults_start(d->net);               /* "faults": timed from the workload's start */
	hr_faults_start(d);                        /* ... and the process faults ("kill") */
	hr_slurm_faults_start(d->rem, d->workdir); /* link faults as steps on Slurm nodes */
	if (hr_scenario_has_check(sc, "resources") && !d->rem) /* /proc of the processes */
		rd->res = hr_res_start(
		    (const char *[]){"prefill", "decode", "proxy"},
		    (const int[]){d->prefill.proc.pid, d->decode.proc.pid, d->proxy.proc.pid}, 3);
	hr_workload_run(d->proxy.base_url, sc, rd->reqs, r->deadline, r->o->stop, on_progress, r);
	hr_res_stop(rd->res, 3.0); /* idle: the stand-ins give free pages back after 2 s */
	hr_net_faults_stop(d->net);
	hr_faults_stop(d, rd->pf_notes, sizeof(rd->pf_notes));
	if (d->net && d->net->applied[0])
		progress(r, "faults: %s", d->net->applied);
	if (hr_slurm_faults_stop(d->rem, why, sizeof(why)))
		fail(r, "faults: %s", why); /* a fault that never happened is no PASS */
	if (hr_slurm_faults_applied(d->rem)[0])
		progress(r, "faults: %s", hr_slurm_faults_applied(d->rem));
	if (rd->pf_notes[0])
		progress(r, "process faults: %s", rd->pf_notes);
	r->res->workload_s = pd_now_s() - tw;
	return stopped(r, "running the workload") ? -1 : 0;
}

/* ---- phase 4, collect: /metrics after, who is still alive, the plain stand-in's answers ---- */
static int phase_collect(struct run *r, struct hr_run_data *rd)
{
	struct hr_deploy *d = &r->d;
	double until = pd_now_s() + 15;
	int sret;
	/* a decode restarted by a fault (or slowed by a sanitizer) may still be coming up */
	while ((sret = hr_metrics_scrape(d->decode.metrics_url, 3000, &rd->d_after)) &&
	       hr_node_alive(d, &d->decode) && pd_now_s() < until && !(r->o->stop && *r->o->stop))
		pd_sleep_ms(250);
	if (!sret)
		rd->d_after_text = hr_metrics_text(d->decode.metrics_url);
	if (sret) {
		char how[64];
		if (hr_node_alive(d, &d->decode))
			fail(r, "cannot read /metrics of decode after the workload");
		else
			fail(r, "cannot read /metrics of decode after the workload (decode %s)",
			     ended_how(&d->decode, how, sizeof(how)));
		return -1;
	}
	if (hr_metrics_scrape(d->prefill.metrics_url, 3000, &rd->p_after)) {
		char how[80] = "";
		/* a crash-fault scenario kills prefill on purpose; its deltas count as 0 */
		if (!hr_node_alive(d, &d->prefill)) {
			char e[64];
			snprintf(how, sizeof(how), " (prefill %s)",
			         ended_how(&d->prefill, e, sizeof(e)));
		}
		progress(r, "prefill /metrics unreadable after the workload%s; its deltas are 0",
		         how);
		metrics_copy(&rd->p_after, &rd->p_before);
	}
	rd->have_metrics = true;
	hr_faults_probe_hostile(d, rd->pf_notes, sizeof(rd->pf_notes)); /* after the scrapes */
	check_alive(r);
	if (d->plain_on) {
		progress(r, "same requests on the plain stand-in");
		r->last_pct = 0;
		hr_workload_run(d->plain.base_url, r->sc, rd->plain, r->deadline, r->o->stop, NULL,
		                r);
		if (stopped(r, "running the workload on the plain stand-in"))
			return -1;
	}
	return 0;
}

/* ---- phase 5, judge: the checks, and the metric deltas the reports show ---- */
static void phase_judge(struct run *r, struct hr_run_data *rd)
{
	run_checks(r, rd);
	r->res->metrics = cJSON_CreateObject();
	cJSON_AddItemToObject(r->res->metrics, "prefill",
	                      metric_deltas(&rd->p_before, &rd->p_after));
	cJSON_AddItemToObject(r->res->metrics, "decode",
	                      metric_deltas(&rd->d_before, &rd->d_after));
}

static void run_body(struct run *r)
{
	struct hr_run_data rd = {.sc = r->sc, .nreqs = (size_t)r->sc->wl.requests};
	struct hr_node *nodes[3];
	size_t nn = 0;

	if (phase_prepare(r) || phase_start(r, nodes, &nn) || phase_wait(r, &rd, nodes, nn))
		return;
	if (r->o->serve) {
		if (r->o->serve(r->d.proxy.base_url, r->d.prefill.metrics_url,
		                r->d.decode.metrics_url, r->o->serve_ud))
			fail(r, "the serve benchmark failed");
		return;
	}
	if (phase_workload(r, &rd) == 0 && phase_collect(r, &rd) == 0) {
		if (hr_router_wanted(r->sc)) {
			progress(r,
			         "router phases: a streamed request, then prefill answering 500");
			hr_router_phases(&r->d, &rd, r->deadline, r->o->stop);
		}
		phase_judge(r, &rd);
	}
	if (rd.reqs)
		r->res->requests = hr_request_summary(rd.reqs, rd.nreqs);
	if (rd.res && r->res->requests)
		cJSON_AddItemToObject(r->res->requests, "soak", hr_res_json(&rd));
	hr_res_free(rd.res);
	hr_reqs_free(rd.reqs, rd.nreqs);
	hr_reqs_free(rd.plain, rd.nreqs);
	hr_router_data_free(&rd);
	hr_metrics_free(&rd.p_before);
	hr_metrics_free(&rd.p_after);
	hr_metrics_free(&rd.d_before);
	hr_metrics_free(&rd.d_after);
	free(rd.d_before_text);
	free(rd.d_after_text);
}

/* "CMD ... (graded as CONTRACT)" for the per-router table, NULL without router checks */
static char *hr_router_describe(const struct hr_scenario *sc)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	if (!hr_router_wanted(sc) || !(f = open_memstream(&out, &len)))
		return NULL;
	if (sc->proxy_cmd)
		for (const cJSON *w = sc->proxy_cmd->child; w; w = w->next)
			fprintf(f, "%s%s", w == sc->proxy_cmd->child ? "" : " ", w->valuestring);
	else
		fprintf(f, "pdkv-proxy --contract %s", sc->proxy_contract);
	fprintf(f, " (graded as %s)", hr_scenario_grade_contract(sc));
	fclose(f);
	return out;
}

/* --proxy-cmd / --proxy-ready: the user's router in place of the scenario's, graded by every
 * router_* check on top of the scenario's own. Returns the merged check list (free it). */
static char **apply_router_opts(struct hr_scenario *run, const struct hr_opts *o)
{
	char **v;
	size_t n = run->nchecks;
	if (o->proxy_ready)
		run->proxy_ready = (char *)o->proxy_ready;
	if (!o->proxy_cmd)
		return NULL;
	run->proxy_cmd = (cJSON *)o->proxy_cmd;
	v = calloc(run->nchecks + hr_check_count(), sizeof(char *));
	if (!v)
		return NULL;
	memcpy(v, run->checks, run->nchecks * sizeof(char *));
	for (size_t i = 0; i < hr_check_count(); i++) {
		const char *name = hr_check_at(i)->name;
		if (hr_check_is_router(name) && !hr_scenario_has_check(run, name))
			v[n++] = (char *)name;
	}
	run->checks = v;
	run->nchecks = n;
	return v;
}

/* Whether the scenario's logs can be written (issue 34, N5): a 4 KiB probe written and synced
 * in its work dir, before the run and after it. A full disk (or a quota) otherwise leaves every
 * log empty behind a PASS that nobody can check. 0, or -errno with why filled. */
static int logs_writable(const char *workdir, char *why, size_t sz)
{
	static const char zeros[4096];
	char probe[1100];
	int ret = pd_mkdir_p(workdir);

	snprintf(probe, sizeof(probe), "%s/.pdkv-log-probe", workdir);
	if (!ret)
		ret = pd_write_file(probe, zeros, sizeof(zeros));
	unlink(probe);
	if (ret)
		snprintf(why, sz, "the logs under %s cannot be written: %s", workdir,
		         strerror(-ret));
	return ret;
}

/* Link faults on other machines: Slurm nodes cut their own link (hr_slurm_faults.c); over
 * --hosts (ssh) nothing cuts it, so such a scenario is NOTRUN, never a PASS without its fault.
 * 0 to run, -1 when the scenario is NOTRUN or FAIL already. */
static int remote_link_faults(struct run *r, struct hr_remote *rem, bool slurm, char *why,
                              size_t sz)
{
	int ret;
	if (!slurm && hr_scenario_has_link_faults(&rem->run)) {
		notrun(r, "faults: link faults are made on netns hosts (no --hosts) or on Slurm "
		          "nodes (--launcher slurm), not over --hosts (ssh)");
		return -1;
	}
	ret = slurm ? hr_slurm_faults_prepare(rem, r->o->progress, why, sz) : 0;
	if (ret == 77)
		notrun(r, "%s", why);
	else if (ret)
		fail(r, "faults: %s", why);
	return ret ? -1 : 0;
}

void hr_run_scenario(const struct hr_scenario *sc, const struct hr_opts *o, struct hr_result *res)
{
	struct hr_net net = {.run = *sc};
	struct hr_remote rem = {.on = false};
	char why[1024];
	/* --launcher, else the scenario's "launcher": slurm = steps on an allocation's nodes */
	const char *launch = o->launcher ? o->launcher : sc->launcher;
	bool slurm = launch && !strcmp(launch, "slurm") && o->slurm;
	bool remote = slurm || (o->hosts && sc->hosts && !(launch && !strcmp(launch, "local")));
	int net_ret = remote ? 0 : hr_net_setup(&net, sc, why, sizeof(why));
	/* with "hosts" the deployment runs on the namespaces' addresses (net.run), with --hosts on
	 * the machines' (rem.run) */
	struct run r = {.sc = &net.run, .o = o, .res = res, .d = {.sc = &net.run, .net = &net}};
	double limit = o->timeout_s > 0    ? o->timeout_s
	               : sc->timeout_s > 0 ? sc->timeout_s
	                                   : DEFAULT_TIMEOUT_S;
	char **merged = apply_router_opts(&net.run, o);
	memset(res, 0, sizeof(*res));
	res->name =
	    o->proxy_label ? pd_asprintf("%s [%s]", sc->name, o->proxy_label) : strdup(sc->name);
	res->path = strdup(sc->path ? sc->path : "");
	res->router = hr_router_describe(&net.run);
	res->expect_fail = sc->expect_fail ? strdup(sc->expect_fail) : NULL;
	res->status = HR_PASS;
	r.t0 = pd_now_s();
	r.deadline = r.t0 + limit;
	if (o->proxy_label)
		snprintf(r.d.workdir, sizeof(r.d.workdir), "%s/%s-%s", o->workdir, sc->name,
		         o->proxy_label);
	else
		snprintf(r.d.workdir, sizeof(r.d.workdir), "%s/%s", o->workdir, sc->name);
	snprintf(res->workdir, sizeof(res->workdir), "%s", r.d.workdir);
	pd_rm_rf(r.d.workdir); /* a previous run's logs would mislead */
	if (net_ret == 77)
		notrun(&r, "hosts: %s", why);
	else if (net_ret)
		fail(&r, "hosts: cannot make the network namespaces: %s", why);
	if (remote && pd_mkdir_p(r.d.workdir) == 0 &&
	    (slurm ? hr_slurm_setup(&rem, o->slurm, &net.run, o->progress, why, sizeof(why))
	           : hr_remote_setup(&rem, &net.run, o, r.d.workdir, why, sizeof(why)))) {
		fail(&r, "%s: %s", slurm ? "--launcher slurm" : "--hosts", why);
		net_ret = -1;
	} else if (remote) {
		r.sc = r.d.sc = &rem.run;
		r.d.rem = &rem;
		net_ret = remote_link_faults(&r, &rem, slurm, why, sizeof(why));
	}

	if (net_ret == 0 && logs_writable(r.d.workdir, why, sizeof(why))) {
		fail(&r, "%s", why);
		net_ret = -1;
	}
	for (; net_ret == 0;) {
		run_body(&r);
		hr_deploy_stop(&r.d);
		if (!r.port_race || r.attempt > 0)
			break;
		r.port_race = false;
		r.attempt++;
		hr_deploy_reset(&r.d);
		pd_rm_rf(r.d.workdir);
	}
	if (res->status == HR_PASS && logs_writable(r.d.workdir, why, sizeof(why)))
		fail(&r, "%s (during the run: its logs may be empty or cut)", why);
	if (res->status != HR_NOTRUN)
		res->logs = hr_deploy_logs(&r.d);
	if (res->logs && net.applied[0])
		cJSON_AddStringToObject(res->logs, "faults", net.applied);
	if (res->logs && hr_slurm_faults_applied(&rem)[0])
		cJSON_AddStringToObject(res->logs, "faults", hr_slurm_faults_applied(&rem));
	hr_net_teardown(&net);    /* kills anything still inside a namespace, removes them */
	hr_remote_teardown(&rem); /* the logs are here now: the remote work dirs go */
	hr_slurm_teardown(&rem);  /* any step of this run still there: scancel */
	if (!hr_deploy_all_gone(&r.d))
		fail(&r, "a process of this scenario could not be stopped");
	res->secs = pd_now_s() - r.t0;
	res->kept = o->keep || res->status == HR_FAIL;
	if (!res->kept)
		pd_rm_rf(r.d.workdir);
	free(merged);
}
