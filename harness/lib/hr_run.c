/* hr_run: one scenario from start to verdict — work dir, metadata service, stand-ins, proxy,
 * workload, /metrics before and after, checks, teardown (also on failure, timeout, Ctrl-C). */
#include "hr_deploy.h"
#include "pd_log.h"
#include "pd_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_S 120.0
#define HEALTH_BOUND_S    30.0
#define PORT_SPAN         16 /* B .. B+10+2r for TP up to 2, and B+100.. for identical URLs */

struct run {
	const struct hr_scenario *sc;
	const struct hr_opts *o;
	struct hr_result *res;
	struct hr_deploy d;
	double t0, deadline;
	int picked[HR_MAX_VARS];
	size_t npicked;
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

/* ${PORT_X}: a fresh block per name, far enough from the others that B+100 stays clear too */
static int port_var(const char *name, void *ud)
{
	struct run *r = ud;
	char val[16];
	int base = -1;
	if (strncmp(name, "PORT_", 5) || hr_vars_get(&r->d.vars, name))
		return 0;
	for (int tries = 0; tries < 50 && base < 0; tries++) {
		base = hr_pick_port_block(r->sc->prefill_host, PORT_SPAN);
		for (size_t i = 0; base >= 0 && i < r->npicked; i++)
			if (abs(base - r->picked[i]) < 100 + 2 * PORT_SPAN)
				base = -1;
	}
	if (base < 0)
		return -1;
	if (r->npicked < HR_MAX_VARS)
		r->picked[r->npicked++] = base;
	snprintf(val, sizeof(val), "%d", base);
	return hr_vars_set(&r->d.vars, name, val) ? -1 : 0;
}

static int scan_json(struct run *r, const cJSON *j)
{
	if (cJSON_IsString(j))
		return hr_vars_scan(j->valuestring, port_var, r);
	for (const cJSON *c = j ? j->child : NULL; c; c = c->next)
		if (scan_json(r, c))
			return -1;
	return 0;
}

static int setup_vars(struct run *r)
{
	const struct hr_scenario *sc = r->sc;
	struct hr_vars *v = &r->d.vars;
	char hp[128];
	hr_vars_set(v, "PREFILL_HOST", sc->prefill_host);
	hr_vars_set(v, "DECODE_HOST", sc->decode_host);
	hr_vars_set(v, "PROXY_HOST", sc->proxy_host);
	hr_vars_set(v, "WORKDIR", r->d.workdir);
	if (sc->meta == HR_META_P2P) {
		hr_vars_set(v, "METADATA", "P2PHANDSHAKE");
		hr_vars_set(v, "METADATA_HOSTPORT", "P2PHANDSHAKE");
	} else {
		hr_vars_set(v, "METADATA", r->d.meta.conn);
		snprintf(hp, sizeof(hp), "%s:%d", r->d.meta.host, r->d.meta.port);
		hr_vars_set(v, "METADATA_HOSTPORT", hp);
	}
	if (scan_json(r, sc->mooncake) || scan_json(r, sc->kv_prefill) ||
	    scan_json(r, sc->kv_decode) || scan_json(r, sc->standin_args) ||
	    scan_json(r, sc->prefill_args) || scan_json(r, sc->decode_args) ||
	    scan_json(r, sc->proxy_args))
		return -1;
	return 0;
}

static int node_init(struct run *r, struct hr_node *n, const char *host)
{
	int port = pd_free_port(host);
	if (port < 0)
		return port;
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->port = port;
	snprintf(n->base_url, sizeof(n->base_url), "http://%s:%d", host, port);
	snprintf(n->health_url, sizeof(n->health_url), "%s/health", n->base_url);
	snprintf(n->metrics_url, sizeof(n->metrics_url), "%s/metrics", n->base_url);
	(void)r;
	return 0;
}

static void add_str(cJSON *a, const char *s)
{
	cJSON_AddItemToArray(a, cJSON_CreateString(s));
}

static void add_all(cJSON *a, const cJSON *more)
{
	for (const cJSON *m = more ? more->child : NULL; m; m = m->next)
		add_str(a, m->valuestring);
}

/* argv of a stand-in launched the way the guide launches vLLM */
static cJSON *standin_argv(struct run *r, const char *exe, struct hr_node *n, const cJSON *kv,
                           const cJSON *side_args, char *err, size_t errsz)
{
	const struct hr_scenario *sc = r->sc;
	cJSON *a = cJSON_CreateArray(), *common = NULL, *side = NULL;
	char num[32];
	add_str(a, exe);
	add_str(a, "--model");
	add_str(a, sc->model);
	add_str(a, "--host");
	add_str(a, n->host);
	add_str(a, "--port");
	snprintf(num, sizeof(num), "%d", n->port);
	add_str(a, num);
	add_str(a, "--max-model-len");
	snprintf(num, sizeof(num), "%d", sc->max_model_len);
	add_str(a, num);
	if (kv) {
		cJSON *k = hr_subst_json(&r->d.vars, kv, err, errsz);
		char *txt = k ? cJSON_PrintUnformatted(k) : NULL;
		cJSON_Delete(k);
		if (!txt)
			goto fail;
		add_str(a, "--kv-transfer-config");
		add_str(a, txt);
		free(txt);
	}
	common = hr_subst_json(&r->d.vars, sc->standin_args, err, errsz);
	side = side_args ? hr_subst_json(&r->d.vars, side_args, err, errsz) : cJSON_CreateArray();
	if (!common || !side)
		goto fail;
	add_all(a, common);
	add_all(a, side);
	cJSON_Delete(common);
	cJSON_Delete(side);
	return a;
fail:
	cJSON_Delete(common);
	cJSON_Delete(side);
	cJSON_Delete(a);
	return NULL;
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
		q[i].usage_prompt = q[i].usage_completion = -1;
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
		char why[700];
		if (!v[i].n->started || pd_proc_alive(&v[i].n->proc))
			continue;
		if (r->sc->expect_exit & v[i].bit) {
			progress(r, "%s exited during the run, as expected", v[i].n->name);
			continue;
		}
		hr_log_tail(v[i].n->proc.log, why, sizeof(why));
		fail(r, "%s exited during the run: %s", v[i].n->name, why[0] ? why : "(empty log)");
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

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static cJSON *request_summary(const struct hr_req *q, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	double *lat = calloc(n ? n : 1, sizeof(double)), tokens = 0;
	size_t ok = 0, sent = 0;
	for (size_t i = 0; i < n; i++) {
		sent += q[i].status != 0 || q[i].curl_err[0];
		if (q[i].status == 200 && !q[i].invalid) {
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
		qsort(lat, ok, sizeof(double), cmp_double);
		cJSON_AddNumberToObject(o, "latency_p50_s", lat[ok / 2]);
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

static int write_mooncake(struct run *r, char *err, size_t errsz)
{
	cJSON *mc = hr_subst_json(&r->d.vars, r->sc->mooncake, err, errsz);
	char path[700], *txt;
	int ret;
	if (!mc)
		return -EINVAL;
	txt = cJSON_Print(mc);
	cJSON_Delete(mc);
	if (!txt)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/mooncake.json", r->d.workdir);
	ret = pd_write_file(path, txt, strlen(txt));
	free(txt);
	return ret;
}

static void run_body(struct run *r)
{
	const struct hr_scenario *sc = r->sc;
	struct hr_deploy *d = &r->d;
	char standin[600], proxy[600], err[600], env[800], why[1024];
	struct hr_node *nodes[3];
	size_t nn = 0;
	bool plain = false;
	struct hr_run_data rd = {.sc = sc, .nreqs = (size_t)sc->wl.requests};
	cJSON *argv;
	double tw;
	int ret;

	if (hr_capability_missing(sc, why, sizeof(why))) {
		notrun(r, "%s", why);
		return;
	}
	if (hr_find_bin("pdkv-standin", standin, sizeof(standin)) ||
	    hr_find_bin("pdkv-proxy", proxy, sizeof(proxy))) {
		notrun(r, "pdkv-standin / pdkv-proxy not found next to pdkv-run or in $PDKV_BIN "
		          "(build them: make)");
		return;
	}
	for (size_t i = 0; i < sc->nchecks; i++)
		plain |= hr_check_find(sc->checks[i])->needs_plain;
	ret = pd_mkdir_p(d->workdir);
	if (ret) {
		fail(r, "cannot create work dir %s: %s", d->workdir, strerror(-ret));
		return;
	}

	if (sc->meta != HR_META_P2P) {
		static const enum pd_svc_kind kinds[] = {PD_SVC_ETCD, PD_SVC_REDIS,
		                                         PD_SVC_METASERVER};
		progress(r, "starting %s metadata service", hr_meta_name(sc->meta));
		ret = pd_svc_start(kinds[sc->meta], "127.0.0.1", d->workdir, &d->meta);
		if (ret == -ENOENT) {
			notrun(r, "metadata backend %s: its server is not installed on this host",
			       hr_meta_name(sc->meta));
			return;
		}
		if (ret) {
			fail(r, "metadata backend %s did not start: %s", hr_meta_name(sc->meta),
			     strerror(-ret));
			return;
		}
		d->meta_up = true;
		progress(r, "metadata at %s", d->meta.conn);
	}
	if (stopped(r, "starting the metadata service"))
		return;
	if (setup_vars(r)) {
		fail(r, "could not find free port blocks for the scenario's ${PORT_...} variables");
		return;
	}
	if (write_mooncake(r, err, sizeof(err))) {
		fail(r, "mooncake: %s", err);
		return;
	}
	if (node_init(r, &d->prefill, sc->prefill_host) ||
	    node_init(r, &d->decode, sc->decode_host) || node_init(r, &d->proxy, sc->proxy_host) ||
	    (plain && node_init(r, &d->plain, "127.0.0.1"))) {
		fail(r, "no free HTTP port on the scenario's loopback addresses");
		return;
	}
	snprintf(env, sizeof(env), "MOONCAKE_CONFIG_PATH=%s/mooncake.json", d->workdir);

	progress(r, "starting prefill %s, decode %s%s", d->prefill.base_url, d->decode.base_url,
	         plain ? ", plain stand-in" : "");
	struct {
		struct hr_node *n;
		const char *name;
		const cJSON *kv, *args;
		bool on;
	} starts[] = {
	    {&d->prefill, "prefill", sc->kv_prefill, sc->prefill_args, true},
	    {&d->decode, "decode", sc->kv_decode, sc->decode_args, true},
	    {&d->plain, "plain", NULL, NULL, plain},
	};
	for (size_t i = 0; i < PD_ARRAY_SIZE(starts); i++) {
		if (!starts[i].on)
			continue;
		argv = standin_argv(r, standin, starts[i].n, starts[i].kv, starts[i].args, err,
		                    sizeof(err));
		if (!argv) {
			fail(r, "%s arguments: %s", starts[i].name, err);
			return;
		}
		ret = hr_spawn(d, starts[i].n, starts[i].name, argv, starts[i].kv ? env : NULL);
		cJSON_Delete(argv);
		if (ret) {
			fail(r, "cannot start %s: %s", starts[i].name, strerror(-ret));
			return;
		}
		nodes[nn++] = starts[i].n;
		if (r->o->verbose)
			progress(r, "%s: pid %d, log %s", starts[i].name,
			         (int)starts[i].n->proc.pid, starts[i].n->proc.log);
	}
	progress(r, "waiting for /health");
	ret = hr_wait_healthy(d, nodes, nn, fmin(r->deadline, pd_now_s() + HEALTH_BOUND_S),
	                      r->o->stop, why, sizeof(why));
	if (ret) {
		startup_failed(r, &rd, ret, why);
		return;
	}

	argv = cJSON_CreateArray();
	add_str(argv, proxy);
	add_str(argv, "--host");
	add_str(argv, d->proxy.host);
	add_str(argv, "--port");
	snprintf(err, sizeof(err), "%d", d->proxy.port);
	add_str(argv, err);
	add_str(argv, "--prefill");
	add_str(argv, d->prefill.base_url);
	add_str(argv, "--decode");
	add_str(argv, d->decode.base_url);
	{
		cJSON *pa = hr_subst_json(&d->vars, sc->proxy_args, err, sizeof(err));
		if (!pa) {
			cJSON_Delete(argv);
			fail(r, "proxy_args: %s", err);
			return;
		}
		add_all(argv, pa);
		cJSON_Delete(pa);
	}
	ret = hr_spawn(d, &d->proxy, "proxy", argv, NULL);
	cJSON_Delete(argv);
	if (ret) {
		fail(r, "cannot start proxy: %s", strerror(-ret));
		return;
	}
	nodes[0] = &d->proxy;
	ret = hr_wait_healthy(d, nodes, 1, fmin(r->deadline, pd_now_s() + HEALTH_BOUND_S),
	                      r->o->stop, why, sizeof(why));
	if (ret) {
		startup_failed(r, &rd, ret, why);
		return;
	}
	r->res->startup_s = pd_now_s() - r->t0;
	progress(r, "all up in %.1fs; proxy %s", r->res->startup_s, d->proxy.base_url);

	if (hr_metrics_scrape(d->prefill.metrics_url, 3000, &rd.p_before) ||
	    hr_metrics_scrape(d->decode.metrics_url, 3000, &rd.d_before)) {
		fail(r, "cannot read /metrics of prefill or decode before the workload");
		goto out;
	}
	rd.reqs = make_reqs(sc);
	rd.plain = plain ? make_reqs(sc) : NULL;
	if (!rd.reqs || (plain && !rd.plain)) {
		fail(r, "out of memory");
		goto out;
	}
	progress(r, "%d requests through the proxy (%s, %s, concurrency %d)", sc->wl.requests,
	         sc->wl.chat ? "chat" : "completions", sc->wl.stream ? "stream" : "no stream",
	         sc->wl.concurrency);
	tw = pd_now_s();
	r->last_pct = 0;
	hr_workload_run(d->proxy.base_url, sc, rd.reqs, r->deadline, r->o->stop, on_progress, r);
	r->res->workload_s = pd_now_s() - tw;
	if (stopped(r, "running the workload"))
		goto out;
	if (hr_metrics_scrape(d->decode.metrics_url, 3000, &rd.d_after)) {
		fail(r, "cannot read /metrics of decode after the workload%s",
		     pd_proc_alive(&d->decode.proc) ? "" : " (decode exited)");
		goto out;
	}
	if (hr_metrics_scrape(d->prefill.metrics_url, 3000, &rd.p_after)) {
		/* a crash-fault scenario kills prefill on purpose; its deltas count as 0 */
		progress(r, "prefill /metrics unreadable after the workload%s; its deltas are 0",
		         pd_proc_alive(&d->prefill.proc) ? "" : " (prefill exited)");
		metrics_copy(&rd.p_after, &rd.p_before);
	}
	rd.have_metrics = true;
	check_alive(r);
	if (plain) {
		progress(r, "same requests on the plain stand-in");
		r->last_pct = 0;
		hr_workload_run(d->plain.base_url, sc, rd.plain, r->deadline, r->o->stop, NULL, r);
		if (stopped(r, "running the workload on the plain stand-in"))
			goto out;
	}
	run_checks(r, &rd);
	r->res->metrics = cJSON_CreateObject();
	cJSON_AddItemToObject(r->res->metrics, "prefill", metric_deltas(&rd.p_before, &rd.p_after));
	cJSON_AddItemToObject(r->res->metrics, "decode", metric_deltas(&rd.d_before, &rd.d_after));
out:
	if (rd.reqs)
		r->res->requests = request_summary(rd.reqs, rd.nreqs);
	hr_reqs_free(rd.reqs, rd.nreqs);
	hr_reqs_free(rd.plain, rd.nreqs);
	hr_metrics_free(&rd.p_before);
	hr_metrics_free(&rd.p_after);
	hr_metrics_free(&rd.d_before);
	hr_metrics_free(&rd.d_after);
}

void hr_run_scenario(const struct hr_scenario *sc, const struct hr_opts *o, struct hr_result *res)
{
	struct run r = {.sc = sc, .o = o, .res = res};
	double limit = o->timeout_s > 0    ? o->timeout_s
	               : sc->timeout_s > 0 ? sc->timeout_s
	                                   : DEFAULT_TIMEOUT_S;
	memset(res, 0, sizeof(*res));
	res->name = strdup(sc->name);
	res->path = strdup(sc->path ? sc->path : "");
	res->expect_fail = sc->expect_fail ? strdup(sc->expect_fail) : NULL;
	res->status = HR_PASS;
	r.t0 = pd_now_s();
	r.deadline = r.t0 + limit;
	snprintf(r.d.workdir, sizeof(r.d.workdir), "%s/%s", o->workdir, sc->name);
	snprintf(res->workdir, sizeof(res->workdir), "%s", r.d.workdir);
	pd_rm_rf(r.d.workdir); /* a previous run's logs would mislead */

	for (;;) {
		run_body(&r);
		hr_deploy_stop(&r.d);
		if (!r.port_race || r.attempt > 0)
			break;
		r.port_race = false;
		r.attempt++;
		r.npicked = 0;
		memset(&r.d.vars, 0, sizeof(r.d.vars));
		pd_rm_rf(r.d.workdir);
	}
	if (res->status != HR_NOTRUN)
		res->logs = hr_deploy_logs(&r.d);
	if (!hr_deploy_all_gone(&r.d))
		fail(&r, "a process of this scenario could not be stopped");
	res->secs = pd_now_s() - r.t0;
	res->kept = o->keep || res->status == HR_FAIL;
	if (!res->kept)
		pd_rm_rf(r.d.workdir);
}
