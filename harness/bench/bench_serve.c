/* bench_serve: `pdkv bench serve` — flags (vllm bench serve's names), the rate x concurrency
 * sweep against a proxy (external, or a scenario's deployment started by the runner library),
 * the stand-ins' hand-off histograms around each point, and the text / JSON / CSV / PNG output. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_serve.h"
#include "lib/hr.h"
#include "pd_log.h"
#include "pd_stats.h"
#include "pd_util.h"

/* ---------------------------------------------------------------- /metrics */

struct hist {
	double le[40], cnt[40], sum, count; /* cumulative bucket counts */
	int n;
};
struct hmet {
	struct hist sec, bytes;
};

static size_t grow(char *p, size_t sz, size_t n, void *ud)
{
	char **b = ud;
	size_t have = *b ? strlen(*b) : 0, len = sz * n;
	char *q = realloc(*b, have + len + 1);

	if (!q)
		return 0;
	memcpy(q + have, p, len);
	q[have + len] = 0;
	*b = q;
	return len;
}

static char *http_get(const char *url)
{
	CURL *e = curl_easy_init();
	char *b = NULL;

	if (!e)
		return NULL;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, grow);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (curl_easy_perform(e) != CURLE_OK) {
		free(b);
		b = NULL;
	}
	curl_easy_cleanup(e);
	return b;
}

static void parse_hist(const char *text, const char *name, struct hist *h)
{
	size_t nl = strlen(name);

	memset(h, 0, sizeof(*h));
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *sp, *eol = strchr(l, '\n');
		double v;

		if (!eol)
			eol = l + strlen(l);
		for (sp = eol; sp > l && sp[-1] != ' ' && sp[-1] != '}'; sp--)
			;
		if (strncmp(l, name, nl) || sp == l)
			continue;
		v = atof(sp);
		if (!strncmp(l + nl, "_bucket{", 8) && h->n < 40) {
			const char *le = strstr(l, "le=\"");

			if (!le || le > eol)
				continue;
			h->le[h->n] = !strncmp(le + 4, "+Inf", 4) ? INFINITY : atof(le + 4);
			h->cnt[h->n++] = v;
		} else if (!strncmp(l + nl, "_sum{", 5)) {
			h->sum = v;
		} else if (!strncmp(l + nl, "_count{", 7)) {
			h->count = v;
		}
	}
}

static void scrape(const char *url, struct hmet *m)
{
	char *t = url ? http_get(url) : NULL;

	memset(m, 0, sizeof(*m));
	if (!t)
		return;
	parse_hist(t, "pdkv_kv_handoff_seconds", &m->sec);
	parse_hist(t, "pdkv_kv_handoff_bytes", &m->bytes);
	free(t);
}

static void hist_delta(struct hist *a, const struct hist *b) /* a = a - b */
{
	for (int i = 0; i < a->n && i < b->n; i++)
		a->cnt[i] -= b->cnt[i];
	a->sum -= b->sum;
	a->count -= b->count;
}

/* Quantile (0..1) from cumulative buckets, linear inside the bucket (Prometheus'
 * histogram_quantile): pd_stats_hist_pct */
static double hist_q(const struct hist *h, double q)
{
	return pd_stats_hist_pct(h->le, h->cnt, h->n > 0 ? (size_t)h->n : 0, h->count, q * 100);
}

/* ---------------------------------------------------------------- statistics */

static struct dist dist_of(double *v, size_t n) /* seconds in, ms out */
{
	struct dist d = {NAN, NAN, NAN, NAN};

	if (!n)
		return d;
	pd_stats_sort(v, n);
	d.mean = pd_stats_mean(v, n) * 1e3;
	d.median = pd_stats_pct_sorted(v, n, 50) * 1e3;
	d.p90 = pd_stats_pct_sorted(v, n, 90) * 1e3;
	d.p99 = pd_stats_pct_sorted(v, n, 99) * 1e3;
	return d;
}

static void summarise(const struct serve_point *pt, struct result *r)
{
	size_t n = pt->n, k = 0, ni = 0;
	double *ttft = calloc(n + 1, sizeof(double)), *tpot = calloc(n + 1, sizeof(double)),
	       *e2e = calloc(n + 1, sizeof(double)), *itl;

	for (size_t i = 0; i < n; i++)
		ni += pt->reqs[i].nitl;
	itl = calloc(ni + 1, sizeof(double));
	ni = 0;
	for (size_t i = 0; ttft && tpot && e2e && itl && i < n; i++) {
		const struct serve_req *q = &pt->reqs[i];

		if (!q->ok) {
			r->failed++;
			continue;
		}
		ttft[k] = q->ttft;
		e2e[k] = q->e2e;
		tpot[k] = q->ntok > 1 ? (q->e2e - q->ttft) / (double)(q->ntok - 1) : 0;
		memcpy(itl + ni, q->itl, q->nitl * sizeof(double));
		ni += q->nitl;
		r->in_tok += q->in_len;
		r->out_tok += (double)q->ntok;
		k++;
	}
	r->ok = k;
	r->duration = pt->duration;
	r->ttft = dist_of(ttft, k);
	r->tpot = dist_of(tpot, k);
	r->e2e = dist_of(e2e, k);
	r->itl = dist_of(itl, ni);
	free(ttft);
	free(tpot);
	free(e2e);
	free(itl);
}

static void print_dist(const char *title, const char *abbr, const struct dist *d)
{
	int pad = (int)(50 - strlen(title) - 2) / 2;

	printf("%.*s%s%.*s\n", pad, "------------------------------", title,
	       50 - pad - (int)strlen(title), "------------------------------");
	const char *k[4] = {"Mean", "Median", "P90", "P99"};
	const double v[4] = {d->mean, d->median, d->p90, d->p99};

	for (int i = 0; i < 4; i++) {
		char l[64];

		snprintf(l, sizeof(l), "%s %s (ms):", k[i], abbr);
		printf("%-40s%-10.2f\n", l, v[i]);
	}
}

/* vllm bench serve's result block, plus pdkv's hand-off section */
static void print_block(const struct result *r)
{
	printf("============ Serving Benchmark Result ============\n");
	printf("%-40s%s\n", "Target:", r->target);
	if (r->rate > 0)
		printf("%-40s%g\n", "Traffic request rate:", r->rate);
	else
		printf("%-40s%s\n", "Traffic request rate:", "inf");
	if (r->conc > 0)
		printf("%-40s%d\n", "Max request concurrency:", r->conc);
	else
		printf("%-40s%s\n", "Max request concurrency:", "None");
	printf("%-40s%-10zu\n", "Successful requests:", r->ok);
	printf("%-40s%-10zu\n", "Failed requests:", r->failed);
	printf("%-40s%-10.2f\n", "Benchmark duration (s):", r->duration);
	printf("%-40s%-10.0f\n", "Total input tokens:", r->in_tok);
	printf("%-40s%-10.0f\n", "Total generated tokens:", r->out_tok);
	printf("%-40s%-10.2f\n", "Request throughput (req/s):", (double)r->ok / r->duration);
	printf("%-40s%-10.2f\n", "Output token throughput (tok/s):", r->out_tok / r->duration);
	printf("%-40s%-10.2f\n",
	       "Total Token throughput (tok/s):", (r->in_tok + r->out_tok) / r->duration);
	print_dist("Time to First Token", "TTFT", &r->ttft);
	print_dist("Time per Output Token (excl. 1st token)", "TPOT", &r->tpot);
	print_dist("Inter-token Latency", "ITL", &r->itl);
	print_dist("End-to-end Latency", "E2EL", &r->e2e);
	if (r->ho_n > 0) {
		printf("---------------KV hand-off (pdkv)-----------------\n");
		printf("%-40s%-10.0f\n", "Decode hand-offs:", r->ho_n);
		printf("%-40s%-10.2f\n%-40s%-10.2f\n%-40s%-10.2f\n",
		       "Mean hand-off, P + D (ms):", r->ho_mean, "Median hand-off (ms):", r->ho_p50,
		       "P90 hand-off (ms):", r->ho_p90);
		printf("%-40s%-10.2f\n", "Hand-off goodput (GB/s):", r->ho_gbs);
		printf("%-40s%-10.2f\n", "  of which on the prefill (ms):", r->ho_p_mean);
	}
	printf("==================================================\n");
}

/* ---------------------------------------------------------------- one target, the sweep */

static int run_point(struct run_ctx *c, const char *target, const char *url, const char *pm,
                     const char *dm, double rate, int conc, int in_len)
{
	struct serve_point pt = {
	    .o = c->o, .base_url = url, .rate = rate, .concurrency = conc, .input_len = in_len};
	struct result *r = &c->res[c->nres];
	struct hmet pb, pa, db, da;

	if (c->nres >= (int)(sizeof(c->res) / sizeof(c->res[0]))) {
		fprintf(stderr, "pdkv bench serve: too many sweep points (at most %zu)\n",
		        sizeof(c->res) / sizeof(c->res[0]));
		return -1;
	}
	memset(r, 0, sizeof(*r));
	pt.n = (size_t)c->o->num_prompts;
	snprintf(r->target, sizeof(r->target), "%s", target);
	r->rate = rate;
	r->conc = conc;
	r->in_len = in_len;
	{
		char rs[32] = "inf", cs[32] = "none";

		if (rate > 0)
			snprintf(rs, sizeof(rs), "%g", rate);
		if (conc > 0)
			snprintf(cs, sizeof(cs), "%d", conc);
		if (c->o->nin > 1)
			snprintf(r->name, sizeof(r->name), "%s in=%d rate=%s conc=%s", target,
			         in_len, rs, cs);
		else
			snprintf(r->name, sizeof(r->name), "%s rate=%s conc=%s", target, rs, cs);
	}
	scrape(pm, &pb);
	scrape(dm, &db);
	if (serve_point_run(&pt)) {
		serve_point_free(&pt);
		return -1;
	}
	scrape(pm, &pa);
	scrape(dm, &da);
	summarise(&pt, r);
	serve_point_free(&pt);
	hist_delta(&da.sec, &db.sec);
	hist_delta(&da.bytes, &db.bytes);
	hist_delta(&pa.sec, &pb.sec);
	/* hand-off = the prefill's part + the decode's part (each side's histogram) */
	if (da.sec.count > 0) {
		double pm = pa.sec.count > 0 ? pa.sec.sum / pa.sec.count : 0,
		       dm = da.sec.sum / da.sec.count;

		r->ho_n = da.sec.count;
		r->ho_p_mean = pm * 1e3;
		r->ho_mean = (pm + dm) * 1e3;
		r->ho_p50 = (pa.sec.count > 0 ? hist_q(&pa.sec, 0.5) : 0) * 1e3 +
		            hist_q(&da.sec, 0.5) * 1e3;
		r->ho_p90 = (pa.sec.count > 0 ? hist_q(&pa.sec, 0.9) : 0) * 1e3 +
		            hist_q(&da.sec, 0.9) * 1e3;
		r->ho_gbs = pm + dm > 0 ? da.bytes.sum / da.sec.count / (pm + dm) / 1e9 : NAN;
	}
	print_block(r);
	fflush(stdout);
	c->nres++;
	return r->ok ? 0 : -1;
}

static int sweep(struct run_ctx *c, const char *url, const char *pm, const char *dm)
{
	const struct serve_opts *o = c->o;
	int rc = 0;

	for (int l = 0; l < o->nin; l++)
		for (int i = 0; i < o->nrates; i++)
			for (int j = 0; j < o->nconc; j++) {
				int in = o->in_lens[l];

				rc |= run_point(c, "pd", url, pm, dm, o->rates[i], o->conc[j], in);
				if (c->single_url)
					rc |= run_point(c, "single", c->single_url, NULL, NULL,
					                o->rates[i], o->conc[j], in);
			}
	return rc;
}

/* A plain (non-disaggregated) stand-in for --compare-single without a URL. */
static pid_t start_single(const struct serve_opts *o, char *url, size_t usz, char *logp)
{
	char exe[600], buf[4096];
	pid_t pid;
	int port = 0;

	if (hr_find_bin("pdkv-standin", exe, sizeof(exe)))
		return -1;
	snprintf(logp, 200, "/tmp/pdkv-serve-single-%d.log", (int)getpid());
	pid = fork();
	if (pid == 0) {
		char *argv[64] = {exe,         "--port",          "0",    "--host",
		                  "127.0.0.1", "--max-model-len", "65536"};
		int k = 7;
		char *extra = o->single_args ? strdup(o->single_args) : NULL;

		for (char *t = extra ? strtok(extra, " ") : NULL; t && k < 62;
		     t = strtok(NULL, " "))
			argv[k++] = t;
		argv[k] = NULL;
		if (!freopen(logp, "w", stdout) || !freopen(logp, "a", stderr))
			_exit(127);
		execv(exe, argv);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 200 && !port; i++) {
		FILE *f = fopen(logp, "r");

		pd_sleep_ms(50);
		while (f && fgets(buf, sizeof(buf), f)) {
			char *p = strstr(buf, "listening on http://127.0.0.1:");

			if (p)
				port = atoi(p + strlen("listening on http://127.0.0.1:"));
		}
		if (f)
			fclose(f);
	}
	if (!port) {
		if (pid > 0)
			kill(pid, SIGTERM);
		return -1;
	}
	snprintf(url, usz, "http://127.0.0.1:%d", port);
	pd_sleep_ms(200);
	return pid;
}

static int on_deployed(const char *proxy, const char *pm, const char *dm, void *ud)
{
	printf("# deployment up: proxy %s, prefill metrics %s, decode metrics %s\n", proxy, pm, dm);
	return sweep(ud, proxy, pm, dm);
}

/* ---------------------------------------------------------------- flags */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: pdkv bench serve [SCENARIO.json] [flags]   (flags as vllm bench serve)\n"
	        "  SCENARIO.json               the runner starts the scenario's deployment\n"
	        "  --base-url URL | --host H --port P\n"
	        "                              or drive a running proxy\n"
	        "  --prefill-metrics URL --decode-metrics URL\n"
	        "                              stand-ins' /metrics (hand-off histograms)\n"
	        "  --request-rate LIST         inf or req/s, Poisson arrivals (inf)\n"
	        "  --max-concurrency LIST      concurrency caps (none)\n"
	        "  --num-prompts N             requests per point (1000)\n"
	        "  --random-input-len LIST     prompt tokens (1024; alias --input-len)\n"
	        "  --random-output-len N       output tokens (128; alias --output-len)\n"
	        "  --seed N                    prompts and arrivals (0)\n"
	        "  --model NAME --endpoint PATH (/v1/completions)\n"
	        "  --compare-single[=URL]      same load on a plain stand-in (started here\n"
	        "                              without URL, with --single-args \"FLAGS\")\n"
	        "  --json FILE --csv FILE --plot FILE.png --timeout S (per request, 600)\n"
	        "Exit: 0 ok; 1 a point had failed requests or the deployment failed; 2 usage.\n");
}

static int parse_list(const char *s, double *v, int *n, bool ints, const char *flag)
{
	char *d = strdup(s), *save = NULL;

	*n = 0;
	for (char *t = strtok_r(d, ",", &save); t && *n < SERVE_MAX_POINTS;
	     t = strtok_r(NULL, ",", &save)) {
		char *end;
		double x = (!ints && !strcmp(t, "inf")) ? 0 : strtod(t, &end);

		if ((ints || strcmp(t, "inf")) && (*end || x <= 0 || (ints && x != floor(x)))) {
			fprintf(stderr, "pdkv bench serve: %s: '%s' is not %s\n", flag, t,
			        ints ? "a positive integer" : "inf or a positive number");
			free(d);
			return -1;
		}
		v[(*n)++] = x;
	}
	free(d);
	return *n ? 0 : -1;
}

static int pos_int(const char *s, const char *flag, int *out)
{
	int64_t v;

	if (pd_parse_i64(s, &v) || v < 1 || v > 100000000) {
		fprintf(stderr, "pdkv bench serve: %s: '%s' is not a positive integer\n", flag, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* getopt_long ids of the long flags (all above any short option's char). */
enum {
	O_BASE = 1000,
	O_HOST,
	O_PORT,
	O_PM,
	O_DM,
	O_RATE,
	O_CONC,
	O_NP,
	O_IN,
	O_OUT,
	O_SEED,
	O_MODEL,
	O_EP,
	O_CMP,
	O_SA,
	O_JSON,
	O_CSV,
	O_PLOT,
	O_TMO,
	O_HELP
};

static const struct option serve_lo[] = {{"base-url", 1, 0, O_BASE},
                                         {"host", 1, 0, O_HOST},
                                         {"port", 1, 0, O_PORT},
                                         {"prefill-metrics", 1, 0, O_PM},
                                         {"decode-metrics", 1, 0, O_DM},
                                         {"request-rate", 1, 0, O_RATE},
                                         {"max-concurrency", 1, 0, O_CONC},
                                         {"num-prompts", 1, 0, O_NP},
                                         {"random-input-len", 1, 0, O_IN},
                                         {"input-len", 1, 0, O_IN},
                                         {"random-output-len", 1, 0, O_OUT},
                                         {"output-len", 1, 0, O_OUT},
                                         {"seed", 1, 0, O_SEED},
                                         {"model", 1, 0, O_MODEL},
                                         {"endpoint", 1, 0, O_EP},
                                         {"compare-single", 2, 0, O_CMP},
                                         {"single-args", 1, 0, O_SA},
                                         {"json", 1, 0, O_JSON},
                                         {"csv", 1, 0, O_CSV},
                                         {"plot", 1, 0, O_PLOT},
                                         {"timeout", 1, 0, O_TMO},
                                         {"help", 0, 0, O_HELP},
                                         {0, 0, 0, 0}};

/* vllm bench serve's defaults (and the model the scenarios serve). */
static void serve_defaults(struct serve_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->model = "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4";
	o->endpoint = "/v1/completions";
	o->rates[0] = 0;
	o->nrates = 1;
	o->conc[0] = 0;
	o->nconc = 1;
	o->num_prompts = 1000;
	o->input_len = 1024;
	o->in_lens[0] = 1024;
	o->nin = 1;
	o->output_len = 128;
	o->timeout_s = 600;
}

/* The load flags: rates, caps, prompt counts and lengths, seed, timeout. 0 or 2 (usage). */
static int parse_load(int c, const char *arg, struct serve_opts *o)
{
	double cv[SERVE_MAX_POINTS];
	int tmp;

	switch (c) {
	case O_RATE:
		return parse_list(arg, o->rates, &o->nrates, false, "--request-rate") ? 2 : 0;
	case O_CONC:
		if (parse_list(arg, cv, &o->nconc, true, "--max-concurrency"))
			return 2;
		for (int i = 0; i < o->nconc; i++)
			o->conc[i] = (int)cv[i];
		return 0;
	case O_NP:
		return pos_int(arg, "--num-prompts", &o->num_prompts) ? 2 : 0;
	case O_IN:
		if (parse_list(arg, cv, &o->nin, true, "--random-input-len"))
			return 2;
		for (int i = 0; i < o->nin; i++)
			o->in_lens[i] = (int)cv[i];
		o->input_len = o->in_lens[0];
		return 0;
	case O_OUT:
		return pos_int(arg, "--random-output-len", &o->output_len) ? 2 : 0;
	case O_SEED:
		if (pos_int(arg, "--seed", &tmp) && strcmp(arg, "0"))
			return 2;
		o->seed = strcmp(arg, "0") ? tmp : 0;
		return 0;
	case O_TMO:
		if (pos_int(arg, "--timeout", &tmp))
			return 2;
		o->timeout_s = tmp;
		return 0;
	}
	return 0;
}

/* One getopt_long result. 0 go on, 1 help printed, 2 usage error. */
static int parse_opt(int c, const char *arg, struct serve_opts *o, const char **host, int *port)
{
	switch (c) {
	case O_BASE:
		o->base_url = arg;
		return 0;
	case O_HOST:
		*host = arg;
		return 0;
	case O_PORT:
		return pos_int(arg, "--port", port) || *port > 65535 ? 2 : 0;
	case O_PM:
		o->prefill_metrics = arg;
		return 0;
	case O_DM:
		o->decode_metrics = arg;
		return 0;
	case O_MODEL:
		o->model = arg;
		return 0;
	case O_EP:
		o->endpoint = arg;
		return 0;
	case O_CMP:
		o->compare_single = true;
		o->single_url = arg ? arg : "";
		return 0;
	case O_SA:
		o->single_args = arg;
		return 0;
	case O_JSON:
		o->json = arg;
		return 0;
	case O_CSV:
		o->csv = arg;
		return 0;
	case O_PLOT:
		o->plot = arg;
		return 0;
	case O_RATE:
	case O_CONC:
	case O_NP:
	case O_IN:
	case O_OUT:
	case O_SEED:
	case O_TMO:
		return parse_load(c, arg, o);
	case O_HELP:
	case 'h':
		usage(stdout);
		return 1;
	default:
		usage(stderr);
		return 2;
	}
}

static int parse(int argc, char **argv, struct serve_opts *o, char *urlbuf, size_t ubsz)
{
	const char *host = NULL;
	int port = 0, c, rc;

	serve_defaults(o);
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "h", serve_lo, NULL)) != -1)
		if ((rc = parse_opt(c, optarg, o, &host, &port)))
			return rc;
	if (optind < argc)
		o->scenario = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "pdkv bench serve: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o->base_url && host && port) {
		snprintf(urlbuf, ubsz, "http://%s:%d", host, port);
		o->base_url = urlbuf;
	}
	if (!o->scenario == !o->base_url) {
		fprintf(stderr, "pdkv bench serve: give either SCENARIO.json or the proxy "
		                "(--base-url URL, or --host H --port P)\n");
		return 2;
	}
	return 0;
}

int bench_serve_main(int argc, char **argv)
{
	static struct run_ctx c;
	struct serve_opts o;
	char urlbuf[300], single[300] = "", logp[200] = "";
	pid_t spid = 0;
	int rc;

	rc = parse(argc, argv, &o, urlbuf, sizeof(urlbuf));
	if (rc)
		return rc == 1 ? 0 : 2;
	c.o = &o;
	curl_global_init(CURL_GLOBAL_ALL);
	if (o.compare_single) {
		if (*o.single_url) {
			snprintf(single, sizeof(single), "%s", o.single_url);
		} else if ((spid = start_single(&o, single, sizeof(single), logp)) < 0) {
			fprintf(stderr,
			        "pdkv bench serve: --compare-single: could not start a plain "
			        "pdkv-standin (log %s)\n",
			        logp);
			return 1;
		}
		c.single_url = single;
	}
	if (o.scenario) {
		struct hr_scenario sc;
		struct hr_opts ho = {0};
		struct hr_result res;
		char err[1024], wd[] = "/tmp/pdkv-serve-XXXXXX";

		if (hr_scenario_load(o.scenario, &sc, err, sizeof(err))) {
			fprintf(stderr, "pdkv bench serve: %s\n", err);
			rc = 2;
			goto out;
		}
		if (!mkdtemp(wd)) {
			rc = 1;
			hr_scenario_free(&sc);
			goto out;
		}
		ho.workdir = wd;
		ho.timeout_s = 3600;
		ho.progress = stderr;
		ho.serve = on_deployed;
		ho.serve_ud = &c;
		hr_run_scenario(&sc, &ho, &res);
		rc = res.status == HR_PASS ? 0 : 1;
		if (rc)
			fprintf(stderr, "pdkv bench serve: scenario %s: %s (logs in %s)\n", sc.name,
			        res.reason[0] ? res.reason : "failed", res.workdir);
		else
			pd_rm_rf(wd);
		hr_result_free(&res);
		hr_scenario_free(&sc);
	} else {
		rc = sweep(&c, o.base_url, o.prefill_metrics, o.decode_metrics) ? 1 : 0;
	}
	serve_print_table(&c);
	if (o.json && serve_write_json(&c, o.json))
		rc = 1;
	if (o.csv && serve_write_csv(&c, o.csv))
		rc = 1;
	if (o.plot)
		serve_write_plot(&c, o.plot);
out:
	if (spid > 0) {
		kill(spid, SIGTERM);
		waitpid(spid, NULL, 0);
	}
	curl_global_cleanup();
	return rc;
}
