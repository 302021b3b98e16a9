/* SPDX-License-Identifier: Apache-2.0 */
/* bench_serve: `pdkv bench serve` — flags (vllm bench serve's names), the rate x concurrency
 * sweep against a proxy (external, or a scenario's deployment started by the runner library),
 * the stand-ins' hand-off histograms around each point, and the text / JSON / CSV / PNG output. */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "bench_serve.h"
#include "lib/hr.h"
#include "pd_log.h"
#include "pd_stats.h"
#include "pd_util.h"
#include "pd_env.h"

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

/* GET <metrics URL's base>/pdkv/handoffs?after=SEQ (pdkv stand-ins): the hand-offs one by one;
 * *seq = the stand-in's count. Returns the number of entries, -1 when the endpoint is absent. */
static long fetch_ho(const char *metrics_url, unsigned long long after, unsigned long long *seq,
                     double **secs, double **bytes)
{
	char url[600], *t;
	const char *m = metrics_url ? strstr(metrics_url, "/metrics") : NULL;
	cJSON *o, *sv, *bv;
	long n = -1;

	*secs = *bytes = NULL;
	if (!m)
		return -1;
	snprintf(url, sizeof(url), "%.*s/pdkv/handoffs?after=%llu", (int)(m - metrics_url),
	         metrics_url, after);
	if (!(t = http_get(url)))
		return -1;
	o = cJSON_Parse(t);
	free(t);
	sv = cJSON_GetObjectItemCaseSensitive(o, "seconds");
	bv = cJSON_GetObjectItemCaseSensitive(o, "bytes");
	if (cJSON_IsArray(sv) && cJSON_IsArray(bv) &&
	    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "seq"))) {
		int k = cJSON_GetArraySize(sv);
		*seq = (unsigned long long)cJSON_GetObjectItemCaseSensitive(o, "seq")->valuedouble;
		*secs = calloc((size_t)k + 1, sizeof(double));
		*bytes = calloc((size_t)k + 1, sizeof(double));
		n = 0;
		for (int i = 0; *secs && *bytes && i < k && i < cJSON_GetArraySize(bv); i++) {
			(*secs)[n] = cJSON_GetArrayItem(sv, i)->valuedouble;
			(*bytes)[n++] = cJSON_GetArrayItem(bv, i)->valuedouble;
		}
	}
	cJSON_Delete(o);
	return n;
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

/* seconds in, ms out: mean, median, std (numpy's, ddof 0), p90, p99 and the asked percentiles,
 * by numpy's default (linear between closest ranks), as vllm bench serve computes them */
static struct dist dist_of(const struct serve_opts *o, double *v, size_t n)
{
	struct dist d = {NAN, NAN, NAN, NAN, NAN, {0}};
	double s = 0, ss = 0;

	for (int k = 0; k < SERVE_MAX_PCT; k++)
		d.pv[k] = NAN;
	if (!n)
		return d;
	qsort(v, n, sizeof(*v), pd_stats_cmp);
	for (size_t i = 0; i < n; i++)
		s += v[i];
	d.mean = s / (double)n * 1e3;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] * 1e3 - d.mean) * (v[i] * 1e3 - d.mean);
	d.std = sqrt(ss / (double)n);
	d.median = pd_stats_pct_sorted(v, n, 50) * 1e3;
	d.p90 = pd_stats_pct_sorted(v, n, 90) * 1e3;
	d.p99 = pd_stats_pct_sorted(v, n, 99) * 1e3;
	for (int k = 0; k < o->npct; k++)
		d.pv[k] = pd_stats_pct_sorted(v, n, o->pcts[k]) * 1e3;
	return d;
}

/* vLLM's peaks: output tokens per 1 s window of the run, requests in flight at once */
static void peaks(const struct serve_point *pt, struct result *r)
{
	size_t nb = (size_t)ceil(pt->duration) + 2;
	double *tok = calloc(nb, sizeof(double)), t0 = INFINITY;
	int maxc = 0;

	for (size_t i = 0; i < pt->n; i++)
		if (pt->reqs[i].sent && pt->reqs[i].start < t0)
			t0 = pt->reqs[i].start;
	for (size_t i = 0; tok && i < pt->n; i++) {
		const struct serve_req *q = &pt->reqs[i];
		double t;
		int c = 0;

		if (!q->ok)
			continue;
		t = q->start - t0 + q->ttft;
		for (size_t k = 0; k <= q->nitl; k++) {
			size_t b = (size_t)(t > 0 ? t : 0);
			if (b < nb)
				tok[b] += 1;
			if (k < q->nitl)
				t += q->itl[k];
		}
		for (size_t k = 0; k < pt->n; k++) /* in flight when q started */
			c += pt->reqs[k].sent && pt->reqs[k].start <= q->start &&
			     pt->reqs[k].start + pt->reqs[k].e2e > q->start;
		if (c > maxc)
			maxc = c;
	}
	for (size_t b = 0; tok && b < nb; b++)
		if (tok[b] > r->max_out_tps)
			r->max_out_tps = tok[b];
	r->max_conc = maxc;
	free(tok);
}

/* a request within every --goodput SLO (vLLM: ttft, tpot, e2el in ms) */
static bool good(const struct serve_opts *o, double ttft, double tpot, double e2e)
{
	return (!o->goodput_ttft || ttft * 1e3 <= o->goodput_ttft) &&
	       (!o->goodput_tpot || tpot * 1e3 <= o->goodput_tpot) &&
	       (!o->goodput_e2el || e2e * 1e3 <= o->goodput_e2el);
}

/* vllm bench serve's per-request lists for --save-result */
static cJSON *detail_of(const struct serve_point *pt)
{
	cJSON *d = cJSON_CreateObject();
	cJSON *il = cJSON_AddArrayToObject(d, "input_lens"),
	      *ol = cJSON_AddArrayToObject(d, "output_lens"),
	      *tt = cJSON_AddArrayToObject(d, "ttfts"), *it = cJSON_AddArrayToObject(d, "itls"),
	      *st = cJSON_AddArrayToObject(d, "start_times"),
	      *er = cJSON_AddArrayToObject(d, "errors");

	for (size_t i = 0; i < pt->n; i++) {
		const struct serve_req *q = &pt->reqs[i];
		cJSON *a = cJSON_CreateArray();

		if (!q->sent || q->interrupted)
			continue;
		cJSON_AddItemToArray(il, cJSON_CreateNumber(q->in_len));
		cJSON_AddItemToArray(ol, cJSON_CreateNumber(q->ok ? (double)q->ntok : 0));
		cJSON_AddItemToArray(tt, cJSON_CreateNumber(q->ok ? q->ttft : 0));
		for (size_t k = 0; k < q->nitl; k++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(q->itl[k]));
		cJSON_AddItemToArray(it, a);
		cJSON_AddItemToArray(st, cJSON_CreateNumber(q->start));
		cJSON_AddItemToArray(er, cJSON_CreateString(q->ok    ? ""
		                                            : q->err ? q->err
		                                                     : "failed"));
	}
	return d;
}

static void summarise(const struct serve_point *pt, struct result *r)
{
	const struct serve_opts *o = pt->o;
	size_t n = pt->n, k = 0, ni = 0;
	double *ttft = calloc(n + 1, sizeof(double)), *tpot = calloc(n + 1, sizeof(double)),
	       *e2e = calloc(n + 1, sizeof(double)), *itl;

	for (size_t i = 0; i < n; i++)
		ni += pt->reqs[i].nitl;
	itl = calloc(ni + 1, sizeof(double));
	ni = 0;
	for (size_t i = 0; ttft && tpot && e2e && itl && i < n; i++) {
		const struct serve_req *q = &pt->reqs[i];

		if (!q->sent || q->interrupted) { /* cut short by a signal: not a failure */
			r->interrupted = true;
			continue;
		}
		if (!q->ok) {
			r->failed++;
			continue;
		}
		ttft[k] = q->ttft;
		e2e[k] = q->e2e;
		tpot[k] = q->ntok > 1 ? (q->e2e - q->ttft) / (double)(q->ntok - 1) : 0;
		r->good += good(o, ttft[k], tpot[k], e2e[k]);
		memcpy(itl + ni, q->itl, q->nitl * sizeof(double));
		ni += q->nitl;
		r->in_tok += q->in_len;
		r->out_tok += (double)q->ntok;
		k++;
	}
	r->ok = k;
	r->duration = pt->duration;
	r->ttft = dist_of(o, ttft, k);
	r->tpot = dist_of(o, tpot, k);
	r->e2e = dist_of(o, e2e, k);
	r->itl = dist_of(o, itl, ni);
	peaks(pt, r);
	if (o->save_result)
		r->detail = detail_of(pt);
	free(ttft);
	free(tpot);
	free(e2e);
	free(itl);
}

static void rule(const char *title, char c)
{
	int n = (int)strlen(title), left = (50 - n) / 2;

	for (int i = 0; i < left; i++)
		putchar(c);
	fputs(title, stdout);
	for (int i = left + n; i < 50; i++)
		putchar(c);
	putchar('\n');
}

static void print_metric(const struct serve_opts *o, unsigned bit, const char *title,
                         const char *abbr, const struct dist *d)
{
	char l[64], w[16];

	if (!(o->pct_metrics & bit))
		return;
	rule(title, '-');
	snprintf(l, sizeof(l), "Mean %s (ms):", abbr);
	printf("%-40s %-10.2f\n", l, d->mean);
	snprintf(l, sizeof(l), "Median %s (ms):", abbr);
	printf("%-40s %-10.2f\n", l, d->median);
	for (int k = 0; k < o->npct; k++) {
		serve_pct_word(o->pcts[k], w, sizeof(w));
		snprintf(l, sizeof(l), "P%s %s (ms):", w, abbr);
		printf("%-40s %-10.2f\n", l, d->pv[k]);
	}
}

/* vllm bench serve's result block as vllm/benchmarks/serve.py prints it ("{:<40} {:<10}"),
 * after a line naming the point, plus pdkv's hand-off section */
static void print_block(const struct serve_opts *o, const struct result *r)
{
	printf("# point: %s%s\n", r->name, r->interrupted ? " (interrupted: partial)" : "");
	rule(" Serving Benchmark Result ", '=');
	printf("%-40s %-10zu\n", "Successful requests:", r->ok);
	printf("%-40s %-10zu\n", "Failed requests:", r->failed);
	if (r->conc > 0)
		printf("%-40s %-10d\n", "Maximum request concurrency:", r->conc);
	if (r->rate > 0)
		printf("%-40s %-10.2f\n", "Request rate configured (RPS):", r->rate);
	printf("%-40s %-10.2f\n", "Benchmark duration (s):", r->duration);
	printf("%-40s %-10.0f\n", "Total input tokens:", r->in_tok);
	printf("%-40s %-10.0f\n", "Total generated tokens:", r->out_tok);
	printf("%-40s %-10.2f\n", "Request throughput (req/s):", (double)r->ok / r->duration);
	if (o->goodput_ttft || o->goodput_tpot || o->goodput_e2el)
		printf("%-40s %-10.2f\n",
		       "Request goodput (req/s):", (double)r->good / r->duration);
	printf("%-40s %-10.2f\n", "Output token throughput (tok/s):", r->out_tok / r->duration);
	printf("%-40s %-10.2f\n", "Peak output token throughput (tok/s):", r->max_out_tps);
	printf("%-40s %-10.2f\n", "Peak concurrent requests:", r->max_conc);
	printf("%-40s %-10.2f\n",
	       "Total token throughput (tok/s):", (r->in_tok + r->out_tok) / r->duration);
	print_metric(o, SERVE_M_TTFT, "Time to First Token", "TTFT", &r->ttft);
	print_metric(o, SERVE_M_TPOT, "Time per Output Token (excl. 1st token)", "TPOT", &r->tpot);
	print_metric(o, SERVE_M_ITL, "Inter-token Latency", "ITL", &r->itl);
	print_metric(o, SERVE_M_E2EL, "End-to-end Latency", "E2EL", &r->e2e);
	if (r->ho_n > 0) {
		rule("KV hand-off (pdkv)", '-');
		printf("%-40s %-10.0f\n", "Decode hand-offs:", r->ho_n);
		printf("%-40s %-10.2f\n%-40s %-10.2f\n%-40s %-10.2f\n",
		       "Mean hand-off, P + D (ms):", r->ho_mean, "Median hand-off (ms):", r->ho_p50,
		       "P90 hand-off (ms):", r->ho_p90);
		printf("%-40s %-10.2f\n", "Hand-off goodput (GB/s):", r->ho_gbs);
		printf("%-40s %-10.2f\n", "  of which on the prefill (ms):", r->ho_p_mean);
	}
	rule("", '=');
}

/* ---------------------------------------------------------------- one target, the sweep */

/* the point's name: "pd rate=inf conc=2", with "in=N" when prompt lengths are swept */
static void point_name(const struct serve_opts *o, struct result *r)
{
	char rs[32] = "inf", cs[32] = "none", t[sizeof(r->target)];

	memcpy(t, r->target, sizeof(t));
	if (r->rate > 0)
		snprintf(rs, sizeof(rs), "%g", r->rate);
	if (r->conc > 0)
		snprintf(cs, sizeof(cs), "%d", r->conc);
	if (o->nin > 1)
		snprintf(r->name, sizeof(r->name), "%s in=%d rate=%s conc=%s", t, r->in_len, rs,
		         cs);
	else
		snprintf(r->name, sizeof(r->name), "%s rate=%s conc=%s", t, rs, cs);
}

/* The hand-off figures of a point: from the stand-ins' per-request list when they serve one
 * (exact percentiles), else from their histograms (interpolated inside a bucket) */
static void handoff_figures(struct result *r, const struct hmet *pa, const struct hmet *da,
                            double *ps, long np, double *ds, double *db, long nd)
{
	if (nd > 0) {
		double psum = 0, dsum = 0, bsum = 0, pm;

		for (long i = 0; i < np; i++)
			psum += ps[i];
		for (long i = 0; i < nd; i++)
			dsum += ds[i], bsum += db[i];
		pm = np > 0 ? psum / (double)np : 0;
		qsort(ds, (size_t)nd, sizeof(double), pd_stats_cmp);
		if (np > 0)
			qsort(ps, (size_t)np, sizeof(double), pd_stats_cmp);
		r->ho_n = (double)nd;
		r->ho_p_mean = pm * 1e3;
		r->ho_mean = (pm + dsum / (double)nd) * 1e3;
		r->ho_p50 = ((np > 0 ? pd_stats_pct_sorted(ps, (size_t)np, 50) : 0) +
		             pd_stats_pct_sorted(ds, (size_t)nd, 50)) *
		            1e3;
		r->ho_p90 = ((np > 0 ? pd_stats_pct_sorted(ps, (size_t)np, 90) : 0) +
		             pd_stats_pct_sorted(ds, (size_t)nd, 90)) *
		            1e3;
		r->ho_gbs = r->ho_mean > 0 ? bsum / (double)nd / (r->ho_mean / 1e3) / 1e9 : NAN;
		return;
	}
	if (da->sec.count > 0) {
		double pm = pa->sec.count > 0 ? pa->sec.sum / pa->sec.count : 0,
		       dm = da->sec.sum / da->sec.count;

		r->ho_n = da->sec.count;
		r->ho_p_mean = pm * 1e3;
		r->ho_mean = (pm + dm) * 1e3;
		r->ho_p50 = (pa->sec.count > 0 ? hist_q(&pa->sec, 0.5) : 0) * 1e3 +
		            hist_q(&da->sec, 0.5) * 1e3;
		r->ho_p90 = (pa->sec.count > 0 ? hist_q(&pa->sec, 0.9) : 0) * 1e3 +
		            hist_q(&da->sec, 0.9) * 1e3;
		r->ho_gbs = pm + dm > 0 ? da->bytes.sum / da->sec.count / (pm + dm) / 1e9 : NAN;
	}
}

static int run_point(struct run_ctx *c, const char *target, const char *url, const char *pm,
                     const char *dm, double rate, int conc, int in_len)
{
	struct serve_point pt = {
	    .o = c->o, .base_url = url, .rate = rate, .concurrency = conc, .input_len = in_len};
	struct result *r = &c->res[c->nres];
	struct hmet pb, pa, db, da;
	unsigned long long pseq = 0, dseq = 0, junk;
	double *ps = NULL, *pbytes = NULL, *ds = NULL, *dbytes = NULL;
	long np, nd;

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
	point_name(c->o, r);
	pt.label = r->name;
	if (serve_point_warmup(&pt))
		return -1;
	scrape(pm, &pb);
	scrape(dm, &db);
	fetch_ho(pm, ~0ull, &pseq, &ps, &pbytes); /* after = max: only the count */
	free(ps), free(pbytes);
	fetch_ho(dm, ~0ull, &dseq, &ds, &dbytes);
	free(ds), free(dbytes);
	if (serve_point_run(&pt)) {
		serve_point_free(&pt);
		return -1;
	}
	scrape(pm, &pa);
	scrape(dm, &da);
	np = fetch_ho(pm, pseq, &junk, &ps, &pbytes);
	nd = fetch_ho(dm, dseq, &junk, &ds, &dbytes);
	summarise(&pt, r);
	serve_point_free(&pt);
	hist_delta(&da.sec, &db.sec);
	hist_delta(&da.bytes, &db.bytes);
	hist_delta(&pa.sec, &pb.sec);
	/* hand-off = the prefill's part + the decode's part */
	handoff_figures(r, &pa, &da, ps, np, ds, dbytes, nd);
	free(ps), free(pbytes), free(ds), free(dbytes);
	if (r->ok || r->failed) {
		print_block(c->o, r);
		fflush(stdout);
		c->nres++;
	}
	/* any failed request fails the run, streamed or not (issue 34: 2 of N failed, exit 0) */
	return r->failed || (!r->interrupted && !r->ok) ? -1 : 0;
}

static int sweep(struct run_ctx *c, const char *url, const char *pm, const char *dm)
{
	const struct serve_opts *o = c->o;
	int rc = 0;

	for (int l = 0; l < o->nin; l++)
		for (int i = 0; i < o->nrates; i++)
			for (int j = 0; j < o->nconc; j++) {
				int in = o->in_lens[l];

				if (serve_stop)
					return rc;
				rc |= run_point(c, "pd", url, pm, dm, o->rates[i], o->conc[j], in);
				if (c->single_url && !serve_stop)
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
	snprintf(logp, 600, "%s/pdkv-serve-single-%d.log", pd_env_str("TMPDIR"), (int)getpid());
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

static void on_signal(int sig)
{
	if (!serve_stop)
		serve_stop = sig;
}

/* Runs the sweep against the scenario's deployment (the runner library starts and stops it). */
static int run_scenario(struct run_ctx *c, const struct serve_opts *o)
{
	struct hr_scenario sc;
	struct hr_opts ho = {0};
	struct hr_result res;
	char err[1024], wd[600];
	int rc;

	if (hr_scenario_load(o->scenario, &sc, err, sizeof(err))) {
		fprintf(stderr, "pdkv bench serve: %s\n", err);
		return 2;
	}
	snprintf(wd, sizeof(wd), "%s/pdkv-serve-XXXXXX", pd_env_str("TMPDIR"));
	if (!mkdtemp(wd)) {
		fprintf(stderr, "pdkv bench serve: cannot make a work dir %s: %s\n", wd,
		        strerror(errno));
		hr_scenario_free(&sc);
		return 1;
	}
	ho.workdir = wd;
	ho.timeout_s = 3600;
	ho.progress = stderr;
	ho.serve = on_deployed;
	ho.serve_ud = c;
	ho.stop = &serve_stop;
	hr_run_scenario(&sc, &ho, &res);
	rc = res.status == HR_PASS ? 0 : 1;
	if (rc && !serve_stop) {
		fprintf(stderr, "pdkv bench serve: scenario %s: %s (logs in %s)\n", sc.name,
		        res.reason[0] ? res.reason : "failed", res.workdir);
	} else {
		pd_rm_rf(wd); /* nothing left in $TMPDIR after the run */
		if (res.workdir[0] && strcmp(res.workdir, wd))
			pd_rm_rf(res.workdir);
	}
	hr_result_free(&res);
	hr_scenario_free(&sc);
	return rc;
}

/* what was measured: the table and every file asked for (partial after a signal) */
static int write_outputs(const struct run_ctx *c, const struct serve_opts *o)
{
	int rc = 0;

	serve_print_table(c);
	if (o->json && serve_write_json(c, o->json)) {
		fprintf(stderr, "pdkv bench serve: cannot write --json %s: %s\n", o->json,
		        strerror(errno));
		rc = 1;
	}
	if (o->csv && serve_write_csv(c, o->csv)) {
		fprintf(stderr, "pdkv bench serve: cannot write --csv %s: %s\n", o->csv,
		        strerror(errno));
		rc = 1;
	}
	if (o->save_result && serve_save_results(c))
		rc = 1;
	if (o->plot && c->nres)
		serve_write_plot(c, o->plot);
	return rc;
}

int bench_serve_main(int argc, char **argv)
{
	static struct run_ctx c;
	struct serve_opts o;
	struct sigaction sa = {0};
	char urlbuf[300], single[300] = "", logp[600] = "";
	pid_t spid = 0;
	int rc;

	rc = serve_parse(argc, argv, &o, urlbuf, sizeof(urlbuf));
	if (rc)
		return rc == 1 ? 0 : 2;
	c.o = &o;
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_ALL);
	if (o.compare_single) {
		if (*o.single_url) {
			snprintf(single, sizeof(single), "%s", o.single_url);
		} else if ((spid = start_single(&o, single, sizeof(single), logp)) < 0) {
			fprintf(stderr,
			        "pdkv bench serve: --compare-single: could not start a plain "
			        "pdkv-standin (log %s)\n",
			        logp);
			curl_global_cleanup();
			return 1;
		}
		c.single_url = single;
	}
	if (o.scenario)
		rc = run_scenario(&c, &o);
	else
		rc = sweep(&c, o.base_url, o.prefill_metrics, o.decode_metrics) ? 1 : 0;
	if (rc != 2 && write_outputs(&c, &o))
		rc = 1;
	if (spid > 0) {
		kill(spid, SIGTERM);
		waitpid(spid, NULL, 0);
		if (!rc || serve_stop)
			unlink(logp);
	}
	serve_dataset_free();
	for (int i = 0; i < c.nres; i++)
		cJSON_Delete(c.res[i].detail);
	curl_global_cleanup();
	if (serve_stop) {
		fprintf(stderr,
		        "pdkv bench serve: interrupted (%s): %d point(s) written, "
		        "everything started here stopped\n",
		        serve_stop == SIGINT ? "SIGINT" : "SIGTERM", c.nres);
		return 128 + serve_stop;
	}
	return rc;
}
