/* SPDX-License-Identifier: Apache-2.0 */
/* bench_serve_save: --save-result — one result JSON per sweep point with vllm bench serve's keys
 * and file names (vllm/benchmarks/serve.py: main's result_json, benchmark()'s result dict,
 * compute_result_filename @ 6f955986e), plus pdkv's own figures under "pdkv". */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_serve.h"
#include "pd_util.h"

/* Python's str(float): 20 -> "20.0", 2.5 -> "2.5"; 0 (no rate) -> "inf" */
static void py_float(double v, char *buf, size_t sz)
{
	if (v <= 0)
		snprintf(buf, sz, "inf");
	else if (v == floor(v) && v < 1e15)
		snprintf(buf, sz, "%.1f", v);
	else
		snprintf(buf, sz, "%.17g", v);
}

static void add_metric(cJSON *j, const struct serve_opts *o, unsigned bit, const char *name,
                       const struct dist *d)
{
	char k[64], w[16];

	if (!(o->pct_metrics & bit))
		return;
	snprintf(k, sizeof(k), "mean_%s_ms", name);
	cJSON_AddNumberToObject(j, k, isnan(d->mean) ? 0 : d->mean);
	snprintf(k, sizeof(k), "median_%s_ms", name);
	cJSON_AddNumberToObject(j, k, isnan(d->median) ? 0 : d->median);
	snprintf(k, sizeof(k), "std_%s_ms", name);
	cJSON_AddNumberToObject(j, k, isnan(d->std) ? 0 : d->std);
	for (int i = 0; i < o->npct; i++) {
		serve_pct_word(o->pcts[i], w, sizeof(w));
		snprintf(k, sizeof(k), "p%s_%s_ms", w, name);
		cJSON_AddNumberToObject(j, k, isnan(d->pv[i]) ? 0 : d->pv[i]);
	}
}

static cJSON *result_json(const struct run_ctx *c, const struct result *r, const char *label,
                          const char *date)
{
	const struct serve_opts *o = c->o;
	const char *backend = o->backend == SERVE_OPENAI_CHAT ? "openai-chat" : "openai";
	cJSON *j = cJSON_CreateObject(), *p;
	bool gp = o->goodput_ttft || o->goodput_tpot || o->goodput_e2el;

	cJSON_AddStringToObject(j, "date", date);
	cJSON_AddStringToObject(j, "endpoint_type", backend);
	cJSON_AddStringToObject(j, "backend", backend);
	cJSON_AddStringToObject(j, "label", label);
	cJSON_AddStringToObject(j, "model_id", o->model);
	cJSON_AddStringToObject(j, "tokenizer_id", o->model);
	cJSON_AddNumberToObject(j, "num_prompts", o->num_prompts);
	serve_json_point(j, r);
	cJSON_AddNumberToObject(j, "burstiness", o->burstiness);
	cJSON_AddNumberToObject(j, "duration", r->duration);
	cJSON_AddNumberToObject(j, "completed", (double)r->ok);
	cJSON_AddNumberToObject(j, "failed", (double)r->failed);
	cJSON_AddNumberToObject(j, "total_input_tokens", r->in_tok);
	cJSON_AddNumberToObject(j, "total_output_tokens", r->out_tok);
	cJSON_AddNumberToObject(j, "request_throughput", (double)r->ok / r->duration);
	if (gp)
		cJSON_AddNumberToObject(j, "request_goodput", (double)r->good / r->duration);
	else
		cJSON_AddNullToObject(j, "request_goodput");
	cJSON_AddNumberToObject(j, "output_throughput", r->out_tok / r->duration);
	cJSON_AddNumberToObject(j, "total_token_throughput",
	                        (r->in_tok + r->out_tok) / r->duration);
	for (const cJSON *e = r->detail ? r->detail->child : NULL; e; e = e->next)
		cJSON_AddItemToObject(j, e->string, cJSON_Duplicate(e, true));
	cJSON_AddNumberToObject(j, "max_output_tokens_per_s", r->max_out_tps);
	cJSON_AddNumberToObject(j, "max_concurrent_requests", r->max_conc);
	add_metric(j, o, SERVE_M_TTFT, "ttft", &r->ttft);
	add_metric(j, o, SERVE_M_TPOT, "tpot", &r->tpot);
	add_metric(j, o, SERVE_M_ITL, "itl", &r->itl);
	add_metric(j, o, SERVE_M_E2EL, "e2el", &r->e2e);
	p = cJSON_AddObjectToObject(j, "pdkv");
	cJSON_AddStringToObject(p, "point", r->name);
	cJSON_AddStringToObject(p, "target", r->target);
	cJSON_AddNumberToObject(p, "input_len", o->dataset == SERVE_DS_RANDOM ? r->in_len : -1);
	cJSON_AddStringToObject(p, "dataset",
	                        o->dataset == SERVE_DS_SHAREGPT ? "sharegpt" : "random");
	cJSON_AddBoolToObject(p, "interrupted", r->interrupted);
	if (r->ho_n > 0) {
		cJSON *h = cJSON_AddObjectToObject(p, "handoff");
		cJSON_AddNumberToObject(h, "count", r->ho_n);
		cJSON_AddNumberToObject(h, "mean_ms", r->ho_mean);
		cJSON_AddNumberToObject(h, "p50_ms", r->ho_p50);
		cJSON_AddNumberToObject(h, "p90_ms", r->ho_p90);
		if (!isnan(r->ho_gbs))
			cJSON_AddNumberToObject(h, "goodput_gbs", r->ho_gbs);
	}
	return j;
}

/* vLLM: "{label}-{rate}qps[-concurrency{N}]-{model basename}-{date}.json"; --result-filename
 * names the one point, or gets "-<k>" before ".json" for each of several */
static void file_name(const struct run_ctx *c, int k, const char *label, const char *date,
                      char *out, size_t sz)
{
	const struct serve_opts *o = c->o;
	const struct result *r = &c->res[k];
	const char *base = strrchr(o->model, '/') ? strrchr(o->model, '/') + 1 : o->model;
	char rate[48], conc[48] = "", name[512];

	py_float(r->rate, rate, sizeof(rate));
	if (r->conc > 0)
		snprintf(conc, sizeof(conc), "-concurrency%d", r->conc);
	if (o->result_filename && c->nres == 1)
		snprintf(name, sizeof(name), "%s", o->result_filename);
	else if (o->result_filename) {
		const char *dot = strrchr(o->result_filename, '.');
		int stem = dot ? (int)(dot - o->result_filename) : (int)strlen(o->result_filename);
		snprintf(name, sizeof(name), "%.*s-%d%s", stem, o->result_filename, k + 1,
		         dot ? dot : ".json");
	} else
		snprintf(name, sizeof(name), "%s-%sqps%s-%s-%s.json", label, rate, conc, base,
		         date);
	if (o->result_dir)
		snprintf(out, sz, "%s/%s", o->result_dir, name);
	else
		snprintf(out, sz, "%s", name);
}

int serve_save_results(const struct run_ctx *c)
{
	const struct serve_opts *o = c->o;
	char date[32], path[1200], label[160];
	time_t now = time(NULL);
	int rc = 0;

	strftime(date, sizeof(date), "%Y%m%d-%H%M%S", localtime(&now));
	if (o->result_dir && mkdir(o->result_dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "pdkv bench serve: --result-dir %s: cannot create: %s\n",
		        o->result_dir, strerror(errno));
		return -1;
	}
	for (int k = 0; k < c->nres; k++) {
		const struct result *r = &c->res[k];
		char in[32] = "";
		cJSON *j;
		char *txt;

		if (o->nin > 1)
			snprintf(in, sizeof(in), "-in%d", r->in_len);
		snprintf(label, sizeof(label), "%s%s%s",
		         o->label                          ? o->label
		         : o->backend == SERVE_OPENAI_CHAT ? "openai-chat"
		                                           : "openai",
		         strcmp(r->target, "pd") ? "-single" : "", in);
		file_name(c, k, label, date, path, sizeof(path));
		j = result_json(c, r, label, date);
		txt = j ? cJSON_Print(j) : NULL;
		cJSON_Delete(j);
		if (!txt || pd_write_file(path, txt, strlen(txt))) {
			fprintf(stderr, "pdkv bench serve: --save-result: cannot write %s\n", path);
			rc = -1;
		} else {
			printf("result: %s\n", path);
		}
		cJSON_free(txt);
	}
	return rc;
}
