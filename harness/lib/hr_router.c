/* SPDX-License-Identifier: Apache-2.0 */
/* hr_router: grading a user's router — its command line with {placeholders}, its readiness
 * probe, the stand-ins' request records, and the extra phases (a streamed probe, prefill 500s). */
#include "hr_deploy.h"
#include "hr_router.h"
#include "cfg/cfg_vllm.h"
#include "pd_buf.h"
#include "pd_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define READY_BOUND_S 30.0
#define FAIL_PHASE_S  20.0 /* a router that hangs on a failed prefill is a FAIL, not a hang */
#define FAIL_REQUESTS 2

bool hr_check_is_router(const char *name)
{
	return !strncmp(name, "router_", 7);
}

bool hr_router_wanted(const struct hr_scenario *sc)
{
	for (size_t i = 0; i < sc->nchecks; i++)
		if (hr_check_is_router(sc->checks[i]))
			return true;
	return false;
}

cJSON *hr_router_split(const char *line, char *err, size_t errsz)
{
	cJSON *a = cJSON_CreateArray();
	char *w = malloc(strlen(line) + 1);
	const char *p = line;
	if (!a || !w)
		goto fail;
	while (*p) {
		size_t n = 0;
		bool any = false;
		while (*p == ' ' || *p == '\t')
			p++;
		while (*p && *p != ' ' && *p != '\t') {
			char q = *p;
			any = true;
			if (q == '\'' || q == '"') {
				const char *end = strchr(p + 1, q);
				if (!end) {
					snprintf(err, errsz, "unbalanced %c in \"%s\"", q, line);
					goto fail;
				}
				memcpy(w + n, p + 1, (size_t)(end - p - 1));
				n += (size_t)(end - p - 1);
				p = end + 1;
			} else if (q == '\\' && p[1]) {
				w[n++] = p[1];
				p += 2;
			} else {
				w[n++] = *p++;
			}
		}
		if (any) {
			w[n] = '\0';
			cJSON_AddItemToArray(a, cJSON_CreateString(w));
		}
	}
	free(w);
	if (cJSON_GetArraySize(a) == 0) {
		snprintf(err, errsz, "empty command line");
		cJSON_Delete(a);
		return NULL;
	}
	return a;
fail:
	free(w);
	cJSON_Delete(a);
	return NULL;
}

/* {name} -> its value; an unknown {name} is an error naming it (a typo would start a router on
 * a literal "{prefil_url}") */
static char *fill(const struct hr_deploy *d, const char *s, char *err, size_t errsz)
{
	char val[8][200];
	const char *names[8] = {"port",         "prefill_url", "decode_url",  "prefill_host",
	                        "prefill_port", "decode_host", "decode_port", "bootstrap_port"};
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	snprintf(val[0], sizeof(val[0]), "%d", d->proxy.port);
	snprintf(val[1], sizeof(val[1]), "%s", d->prefill.base_url);
	snprintf(val[2], sizeof(val[2]), "%s", d->decode.base_url);
	snprintf(val[3], sizeof(val[3]), "%s", d->prefill.host);
	snprintf(val[4], sizeof(val[4]), "%d", d->prefill.port);
	snprintf(val[5], sizeof(val[5]), "%s", d->decode.host);
	snprintf(val[6], sizeof(val[6]), "%d", d->decode.port);
	snprintf(val[7], sizeof(val[7]), "%d", d->bootstrap_port[0] ? d->bootstrap_port[0] : 8998);
	f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	for (const char *p = s; *p;) {
		const char *end = *p == '{' ? strchr(p, '}') : NULL;
		size_t k = 0;
		if (!end) {
			fputc(*p++, f);
			continue;
		}
		for (; k < 8; k++)
			if (strlen(names[k]) == (size_t)(end - p - 1) &&
			    !strncmp(p + 1, names[k], (size_t)(end - p - 1)))
				break;
		if (k == 8) {
			if (end - p - 1 > 0 && end - p - 1 < 40 &&
			    strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_") == (size_t)(end - p - 1)) {
				snprintf(
				    err, errsz,
				    "unknown placeholder {%.*s} (known: {port}, {prefill_url}, "
				    "{decode_url}, {prefill_host}, {prefill_port}, {decode_host}, "
				    "{decode_port}, {bootstrap_port})",
				    (int)(end - p - 1), p + 1);
				fclose(f);
				free(out);
				return NULL;
			}
			fputc(*p++, f); /* a literal brace (JSON on a command line) */
			continue;
		}
		fputs(val[k], f);
		p = end + 1;
	}
	fclose(f);
	return out;
}

cJSON *hr_router_argv(struct hr_deploy *d, char *err, size_t errsz)
{
	cJSON *a = cJSON_CreateArray();
	for (const cJSON *w = d->sc->proxy_cmd->child; w; w = w->next) {
		char *s = fill(d, w->valuestring, err, errsz), exe[600];
		if (!s) {
			cJSON_Delete(a);
			return NULL;
		}
		/* pdkv's own binaries (pdkv-proxy) resolve next to pdkv-run, others through PATH */
		if (w == d->sc->proxy_cmd->child && !strchr(s, '/') &&
		    hr_find_bin(s, exe, sizeof(exe)) == 0) {
			free(s);
			s = strdup(exe);
		} else if (!strncmp(s, "./", 2) && d->sc->dir && d->sc->dir[0]) {
			/* a script next to the scenario file ("./routers/x.py") */
			char *abs = pd_asprintf("%s/%s", d->sc->dir, s + 2);
			free(s);
			s = abs;
		}
		cJSON_AddItemToArray(a, cJSON_CreateString(s ? s : ""));
		free(s);
	}
	return a;
}

int hr_router_wait_ready(struct hr_deploy *d, double deadline, volatile sig_atomic_t *stop,
                         char *why, size_t sz)
{
	static const char *const paths[] = {"/health", "/healthcheck", "/v1/models"};
	const char *ready = d->sc->proxy_ready;
	double end = fmin(deadline, pd_now_s() + READY_BOUND_S);
	long last = 0;
	for (;;) {
		char url[400];
		size_t absent = 0;
		if (!hr_node_alive(d, &d->proxy)) { /* through its launcher: local or --hosts */
			char tail[700];
			hr_log_tail(hr_node_log(d, &d->proxy), tail, sizeof(tail));
			snprintf(why, sz, "the router exited during startup: %s",
			         tail[0] ? tail : "(empty log)");
			return -ECHILD;
		}
		for (size_t i = 0; i < (ready ? 1 : PD_ARRAY_SIZE(paths)); i++) {
			snprintf(url, sizeof(url), "%s%s", d->proxy.base_url,
			         ready ? ready : paths[i]);
			last = pd_http_status(url, 500);
			if (last >= 200 && last < 300)
				return 0;
			absent += last == 404 || last == 405;
		}
		/* an HTTP server without any of those routes: accepting and answering is ready */
		if (!ready && absent == PD_ARRAY_SIZE(paths))
			return 0;
		if (stop && *stop) {
			snprintf(why, sz, "interrupted while waiting for the router");
			return -EINTR;
		}
		if (pd_now_s() > end) {
			snprintf(
			    why, sz,
			    "the router at %s was not ready within %.0fs (%s: last answer %ld)",
			    d->proxy.base_url, READY_BOUND_S,
			    ready ? ready : "/health, /healthcheck, /v1/models", last);
			return -ETIMEDOUT;
		}
		pd_sleep_ms(100);
	}
}

void hr_router_record_path(const struct hr_deploy *d, bool prefill, char *out, size_t sz)
{
	snprintf(out, sz, "%s/%s.requests.jsonl", d->workdir, prefill ? "prefill" : "decode");
}

static cJSON *load_records(const char *path)
{
	cJSON *a = cJSON_CreateArray();
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	if (pd_read_file(path, 256 << 20, &buf, &len) == 0)
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			cJSON *o = cJSON_Parse(line);
			if (o)
				cJSON_AddItemToArray(a, o);
		}
	free(buf);
	return a;
}

static struct hr_req *phase_reqs(int n, int idx0, int ntok)
{
	struct hr_req *q = calloc((size_t)n, sizeof(*q));
	for (int i = 0; q && i < n; i++) {
		q[i].idx = idx0 + i;
		q[i].planned_tokens = ntok;
		q[i].usage_prompt = q[i].usage_completion = q[i].usage_cached = -1;
		q[i].prompt = hr_prompt_text(idx0 + i, ntok, 11);
	}
	return q;
}

/* gen B: prefill's /query, so router_decode_request can name the right remote_engine_id */
static void read_query(struct hr_deploy *d, struct hr_run_data *rd)
{
	char url[220];
	struct pd_buf b = {.max = 1 << 20};
	snprintf(rd->p_bootstrap, sizeof(rd->p_bootstrap), "http://%s:%d", d->prefill.host,
	         d->bootstrap_port[0]);
	snprintf(url, sizeof(url), "%s/query", rd->p_bootstrap);
	if (hr_http_get(url, 3000, &b) > 0 && b.p)
		rd->p_query = cJSON_ParseWithLength(b.p, b.len);
	free(b.p);
}

void hr_router_phases(struct hr_deploy *d, struct hr_run_data *rd, double deadline,
                      volatile sig_atomic_t *stop)
{
	struct hr_scenario one = *d->sc;
	char path[700];
	rd->contract = hr_scenario_grade_contract(d->sc);
	if (cfg_gen_is_b((enum cfg_gen)(d->sc->vllm_side[0] ? d->sc->gen_side[0] : d->sc->gen)))
		read_query(d, rd); /* prefill's generation: a rolling upgrade mixes them */
	/* a streamed request: SSE must pass through with [DONE] */
	one.wl.requests = one.wl.concurrency = 1;
	one.wl.stream = true;
	one.wl.stream_pct = 100; /* hr_workload plans each request's stream from the share */
	one.wl.disconnect_pct = 0;
	rd->probe = phase_reqs(1, 900, 64);
	if (rd->probe)
		hr_workload_run(d->proxy.base_url, &one, rd->probe, deadline, stop, NULL, NULL);
	/* prefill answers these 500 (--fault fail-marker): the router must answer an error */
	if (hr_scenario_has_check(d->sc, "router_prefill_failure")) {
		one.wl.requests = FAIL_REQUESTS;
		one.wl.stream = false;
		one.wl.stream_pct = 0;
		rd->fail = phase_reqs(FAIL_REQUESTS, 910, 64);
		for (int i = 0; rd->fail && i < FAIL_REQUESTS; i++) {
			char *p = NULL;
			if (asprintf(&p, "%s %s", HR_ROUTER_FAIL_MARKER, rd->fail[i].prompt) > 0) {
				free(rd->fail[i].prompt);
				rd->fail[i].prompt = p;
			}
		}
		rd->nfail = rd->fail ? FAIL_REQUESTS : 0;
		if (rd->fail)
			hr_workload_run(d->proxy.base_url, &one, rd->fail,
			                fmin(deadline, pd_now_s() + FAIL_PHASE_S), stop, NULL,
			                NULL);
	}
	pd_sleep_ms(200); /* the stand-ins write a record when the connection is done */
	hr_router_record_path(d, true, path, sizeof(path));
	rd->rec_p = load_records(path);
	hr_router_record_path(d, false, path, sizeof(path));
	rd->rec_d = load_records(path);
	rd->router_phase = true;
}

void hr_router_data_free(struct hr_run_data *rd)
{
	cJSON_Delete(rd->rec_p);
	cJSON_Delete(rd->rec_d);
	cJSON_Delete(rd->p_query);
	hr_reqs_free(rd->probe, rd->probe ? 1 : 0);
	hr_reqs_free(rd->fail, rd->nfail);
}
