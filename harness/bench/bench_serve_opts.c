/* SPDX-License-Identifier: Apache-2.0 */
/* bench_serve_opts: the flags of `pdkv bench serve`, spelt as vllm bench serve spells them
 * (vllm/benchmarks/serve.py and datasets/datasets.py @ 6f955986e), parsed by pdkv's one option
 * parser. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_serve.h"
#include "pd_opt.h"
#include "pd_util.h"

/* "inf" or a positive number (rates; inf = 0) or a positive integer (ints), comma-separated */
static int parse_list(const char *s, double *v, int *n, bool ints)
{
	char *d = strdup(s), *save = NULL;
	int rc = 0;

	*n = 0;
	for (char *t = strtok_r(d, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		double x = (!ints && !strcmp(t, "inf")) ? 0 : strtod(t, &end);

		if (*n >= SERVE_MAX_POINTS ||
		    ((ints || strcmp(t, "inf")) && (*end || !(x > 0) || (ints && x != floor(x))))) {
			rc = -1;
			break;
		}
		v[(*n)++] = x;
	}
	free(d);
	return rc || !*n ? -1 : 0;
}

static int fn_rates(const char *val, void *dst, void *ud)
{
	struct serve_opts *o = ud;
	(void)dst;
	return parse_list(val, o->rates, &o->nrates, false);
}

static int fn_conc(const char *val, void *dst, void *ud)
{
	struct serve_opts *o = ud;
	double v[SERVE_MAX_POINTS];
	(void)dst;
	if (parse_list(val, v, &o->nconc, true))
		return -1;
	for (int i = 0; i < o->nconc; i++)
		o->conc[i] = (int)v[i];
	return 0;
}

static int fn_inlen(const char *val, void *dst, void *ud)
{
	struct serve_opts *o = ud;
	double v[SERVE_MAX_POINTS];
	(void)dst;
	if (parse_list(val, v, &o->nin, true))
		return -1;
	for (int i = 0; i < o->nin; i++)
		o->in_lens[i] = (int)v[i];
	o->input_len = o->in_lens[0];
	return 0;
}

static int fn_compare(const char *val, void *dst, void *ud)
{
	struct serve_opts *o = ud;
	(void)dst;
	o->compare_single = true;
	o->single_url = val ? val : "";
	return 0;
}

/* ttft,tpot,itl,e2el in any order */
static int fn_pmetrics(const char *val, void *dst, void *ud)
{
	struct serve_opts *o = ud;
	static const char *names[] = {"ttft", "tpot", "itl", "e2el"};
	char *d = strdup(val), *save = NULL;
	int rc = 0;
	(void)dst;
	o->pct_metrics = 0;
	for (char *t = strtok_r(d, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		int k = 0;
		while (k < 4 && strcmp(t, names[k]))
			k++;
		if (k == 4)
			rc = -1;
		else
			o->pct_metrics |= 1u << k;
	}
	free(d);
	return rc || !o->pct_metrics ? -1 : 0;
}

/* "25,50,99.9": numbers in (0, 100] */
static int fn_pcts(const char *val, void *dst, void *ud)
{
	struct serve_opts *o = ud;
	char *d = strdup(val), *save = NULL;
	int rc = 0;
	(void)dst;
	o->npct = 0;
	for (char *t = strtok_r(d, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		char *end;
		double p = strtod(t, &end);
		if (*end || !(p > 0 && p <= 100) || o->npct >= SERVE_MAX_PCT)
			rc = -1;
		else
			o->pcts[o->npct++] = p;
	}
	free(d);
	return rc || !o->npct ? -1 : 0;
}

/* --goodput ttft:500 tpot:50 ...: KEY:VALUE (ms), KEY one of ttft tpot e2el (vLLM's set) */
static int fn_goodput(const char *val, void *dst, void *ud)
{
	struct serve_opts *o = ud;
	char *d = strdup(val), *save = NULL;
	int rc = 0;
	(void)dst;
	for (char *t = strtok_r(d, " ,", &save); t && !rc; t = strtok_r(NULL, " ,", &save)) {
		char *c = strchr(t, ':'), *end;
		double v;
		if (!c)
			rc = -1;
		else {
			*c = 0;
			v = strtod(c + 1, &end);
			if (*end || !(v > 0))
				rc = -1;
			else if (!strcmp(t, "ttft"))
				o->goodput_ttft = v;
			else if (!strcmp(t, "tpot"))
				o->goodput_tpot = v;
			else if (!strcmp(t, "e2el"))
				o->goodput_e2el = v;
			else
				rc = -1;
		}
	}
	free(d);
	return rc;
}

/* vllm bench serve's defaults (and the model the scenarios serve). */
static void serve_defaults(struct serve_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->model = "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4";
	o->endpoint = "/v1/completions";
	o->nrates = 1;
	o->nconc = 1;
	o->num_prompts = 1000;
	o->input_len = 1024;
	o->in_lens[0] = 1024;
	o->nin = 1;
	o->output_len = 128;
	o->timeout_s = 600;
	o->ready_check_s = 600;
	o->burstiness = 1.0;
	o->pct_metrics = SERVE_M_TTFT | SERVE_M_TPOT | SERVE_M_ITL; /* vLLM's, for generation */
	o->pcts[0] = 99;
	o->npct = 1;
}

/* What the flags say together: the target, the endpoint by backend, the dataset file. */
static int serve_check(const struct pd_opt_spec *spec, struct serve_opts *o, const char *host,
                       int port, char *urlbuf, size_t ubsz)
{
	if (!o->base_url && host && port) {
		snprintf(urlbuf, ubsz, "http://%s:%d", host, port);
		o->base_url = urlbuf;
	}
	if (!o->scenario == !o->base_url) {
		fprintf(stderr, "pdkv bench serve: give either SCENARIO.json or the proxy "
		                "(--base-url URL, or --host H --port P)\n");
		return 2;
	}
	if (o->backend == SERVE_OPENAI_CHAT && !o->endpoint_seen)
		o->endpoint = "/v1/chat/completions";
	bool need_path = o->dataset == SERVE_DS_SHAREGPT;
	if (need_path && !o->dataset_path)
		return pd_opt_bad(spec, "--dataset-path", "", "a ShareGPT JSON file");
	if (!need_path && o->dataset_path)
		return pd_opt_bad(spec, "--dataset-path", o->dataset_path,
		                  "no file with --dataset-name random");
	if (o->result_filename && strchr(o->result_filename, '/') && o->result_dir)
		return pd_opt_bad(spec, "--result-filename", o->result_filename,
		                  "a file name without '/' when --result-dir is given");
	return 0;
}

#define STR(n, d, a, h)                                                                            \
	{                                                                                          \
		.name = n, .type = PD_OPT_STR, .dst = d, .arg = a, .help = h                       \
	}
#define LIST(n, f, a, h, w)                                                                        \
	{                                                                                          \
		.name = n, .type = PD_OPT_FN, .fn = f, .arg = a, .help = h, .want = w              \
	}

/* The flags, into s_o (and s_host, s_port, s_timeout): file scope so that serve_parse stays
 * short; serve_parse is called once per process. */
static struct serve_opts s_o;
static const char *s_host;
static int s_port, s_timeout;
static const struct pd_opt s_opts[] = {
    STR("base-url", &s_o.base_url, "URL", "drive a running proxy (or --host H --port P)"),
    STR("host", &s_host, "H", NULL),
    {.name = "port", .type = PD_OPT_INT, .dst = &s_port, .arg = "P", .min = 1, .max = 65535},
    STR("prefill-metrics", &s_o.prefill_metrics, "URL",
        "the prefill stand-in's /metrics (hand-off histograms)"),
    STR("decode-metrics", &s_o.decode_metrics, "URL", "the decode stand-in's /metrics"),
    {.name = "backend",
     .type = PD_OPT_CHOICE,
     .dst = &s_o.backend,
     .arg = "openai|openai-chat",
     .choices = "openai|openai-chat",
     .help = "/v1/completions (default) or /v1/chat/completions requests"},
    STR("model", &s_o.model, "NAME", "the model name sent (Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4)"),
    {.name = "endpoint",
     .type = PD_OPT_STR,
     .dst = &s_o.endpoint,
     .arg = "PATH",
     .help = "request path (by --backend: /v1/completions or /v1/chat/completions)",
     .seen = &s_o.endpoint_seen},
    {.name = "dataset-name",
     .type = PD_OPT_CHOICE,
     .dst = &s_o.dataset,
     .arg = "random|sharegpt",
     .choices = "random|sharegpt",
     .help = "random prompts of --random-input-len (default), or a ShareGPT file"},
    STR("dataset-path", &s_o.dataset_path, "FILE",
        "ShareGPT JSON: [{\"conversations\": [{\"value\": prompt}, {\"value\": answer}]}]"),
    {.name = "sharegpt-output-len",
     .type = PD_OPT_INT,
     .dst = &s_o.sharegpt_output_len,
     .arg = "N",
     .min = 1,
     .max = 1000000,
     .help = "output tokens per ShareGPT request (default: the answer's length)"},
    LIST("request-rate", fn_rates, "LIST", "inf or req/s, comma-separated (inf)",
         "inf or positive numbers, comma-separated"),
    {.name = "burstiness",
     .type = PD_OPT_DOUBLE,
     .dst = &s_o.burstiness,
     .arg = "F",
     .min = 0,
     .max = 1e6,
     .min_excl = true,
     .help = "arrival gaps: 1 Poisson (default); <1 burstier, >1 more uniform (gamma)"},
    LIST("max-concurrency", fn_conc, "LIST", "concurrency caps, comma-separated (none)",
         "positive integers, comma-separated"),
    {.name = "num-prompts",
     .type = PD_OPT_INT,
     .dst = &s_o.num_prompts,
     .arg = "N",
     .min = 1,
     .max = 100000000,
     .help = "requests per point (1000)"},
    LIST("random-input-len", fn_inlen, "LIST",
         "prompt tokens, comma-separated: a sweep dimension (1024)",
         "positive integers, comma-separated"),
    LIST("input-len", fn_inlen, "LIST", NULL, "positive integers, comma-separated"),
    {.name = "random-output-len",
     .type = PD_OPT_INT,
     .dst = &s_o.output_len,
     .arg = "N",
     .min = 1,
     .max = 1000000,
     .help = "output tokens (128)"},
    {.name = "output-len", .type = PD_OPT_INT, .dst = &s_o.output_len, .min = 1, .max = 1e6},
    {.name = "ignore-eos",
     .type = PD_OPT_FLAG,
     .dst = &s_o.ignore_eos,
     .help = "send ignore_eos: every request generates its full output length"},
    {.name = "seed",
     .type = PD_OPT_INT,
     .dst = &s_o.seed,
     .arg = "N",
     .min = 0,
     .max = 2147483647,
     .help = "prompts, dataset order and arrivals (0)"},
    LIST("percentile-metrics", fn_pmetrics, "LIST",
         "metrics with percentiles: ttft,tpot,itl,e2el (ttft,tpot,itl)",
         "a comma-separated subset of ttft,tpot,itl,e2el"),
    LIST("metric-percentiles", fn_pcts, "LIST", "percentiles reported (99), e.g. 50,90,99",
         "numbers in (0, 100], comma-separated"),
    LIST("goodput", fn_goodput, "\"KEY:MS ...\"",
         "SLOs for request goodput, KEY ttft|tpot|e2el, e.g. \"ttft:500 tpot:50\"",
         "KEY:VALUE pairs, KEY ttft, tpot or e2el, VALUE ms > 0"),
    {.name = "save-result",
     .type = PD_OPT_FLAG,
     .dst = &s_o.save_result,
     .help = "vllm bench serve's result JSON, one file per point"},
    STR("result-dir", &s_o.result_dir, "DIR", "where --save-result writes (.)"),
    STR("result-filename", &s_o.result_filename, "NAME",
        "file name (one point; else NAME-<n>.json per point)"),
    STR("label", &s_o.label, "NAME", "the result files' prefix (the backend)"),
    {.name = "compare-single",
     .type = PD_OPT_FN,
     .fn = fn_compare,
     .optional_value = true,
     .arg = "[=URL]",
     .help = "the same load on a plain stand-in (started here without URL)"},
    STR("single-args", &s_o.single_args, "\"FLAGS\"", "pdkv-standin flags for that one"),
    STR("json", &s_o.json, "FILE", "rows JSON (pdkv report compare)"),
    STR("csv", &s_o.csv, "FILE", "one CSV line per point"),
    STR("plot", &s_o.plot, "FILE.png", "gnuplot: TTFT vs rate, hand-off vs prompt length"),
    {.name = "ready-check-timeout-sec",
     .type = PD_OPT_INT,
     .dst = &s_o.ready_check_s,
     .arg = "S",
     .min = 0,
     .max = 86400,
     .help = "each point starts with one unmeasured test request, retried\n"
             "up to S s until it succeeds (600); 0: none"},
    {.name = "num-warmups",
     .type = PD_OPT_INT,
     .dst = &s_o.num_warmups,
     .arg = "N",
     .min = 0,
     .max = 100000,
     .help = "then N unmeasured warm-up requests of it (0)"},
    {.name = "timeout",
     .type = PD_OPT_INT,
     .dst = &s_timeout,
     .arg = "S",
     .min = 1,
     .max = 86400,
     .help = "per request (600)"},
};

/* Returns 0, 1 (help printed) or 2 (usage error printed). */
int serve_parse(int argc, char **argv, struct serve_opts *o, char *urlbuf, size_t ubsz)
{
	char **pos;
	int npos = 0, rc;
	const struct pd_opt_spec spec = {
	    .prog = "pdkv bench serve",
	    .usage =
	        "usage: pdkv bench serve [SCENARIO.json] [flags]   (flags as vllm bench serve)\n"
	        "  SCENARIO.json: the runner starts the scenario's deployment; or give the\n"
	        "  proxy of a running one with --base-url.\n",
	    .footer =
	        "Progress: one line per second on stderr (requests done, elapsed, ETA).\n"
	        "Exit: 0 ok; 1 a point had failed requests or the deployment failed; 2 usage;\n"
	        "130/143 interrupted by SIGINT/SIGTERM (what was measured is still written).\n",
	    .opts = s_opts,
	    .nopts = sizeof(s_opts) / sizeof(s_opts[0]),
	    .max_pos = 1,
	    .ud = &s_o,
	};

	serve_defaults(&s_o);
	s_host = NULL;
	s_port = 0;
	s_timeout = 600;
	pos = calloc((size_t)argc + 1, sizeof(*pos));
	if (!pos)
		return 2;
	rc = pd_opt_parse(&spec, argc, argv, 1, pos, &npos);
	s_o.scenario = npos ? pos[0] : NULL;
	free(pos);
	if (!rc) {
		s_o.timeout_s = s_timeout;
		rc = serve_check(&spec, &s_o, s_host, s_port, urlbuf, ubsz);
	}
	*o = s_o;
	return rc;
}
