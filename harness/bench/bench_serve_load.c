/* SPDX-License-Identifier: Apache-2.0 */
/* bench_serve_load: the load of `pdkv bench serve` — streamed completions or chat completions
 * through a proxy with Poisson or gamma arrivals (or all at once) under a concurrency cap,
 * timing TTFT, inter-token gaps and end-to-end latency per request (vllm bench serve's
 * definitions), a progress line a second, and a stop on SIGINT/SIGTERM. */
#include <cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_serve.h"
#include "lib/hr_http.h"
#include "pd_util.h"

/* Set by `pdkv bench serve`'s SIGINT/SIGTERM handler (bench_serve.c): the load stops early. */
volatile sig_atomic_t serve_stop;

/* xorshift64*: the arrivals depend on --seed only */
static uint64_t rnd(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 2685821657736338717ULL;
}

/* uniform in (0, 1] */
static double unif(uint64_t *st)
{
	return ((double)(rnd(st) >> 11) + 1.0) / 9007199254740993.0;
}

struct req_ctx {
	const struct serve_point *pt;
	struct serve_req *q;
	double t0, tlast;
	char line[512];
	size_t nline;
	size_t cap_itl;
	bool kv_check_failed; /* X-PDKV-KV-Check: failed (pdkv-standin, issue 34 N4) */
	bool sse_error;       /* a `data: {"error": ...}` event: the server gave up mid-stream */
};

/* A pdkv-standin decode marks an answer whose received KV failed its checksum; such an answer
 * is a failed request even with status 200 (its text followed the wrong KV). */
static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct req_ctx *c = ud;
	size_t len = sz * n;
	if (len >= 24 && !strncasecmp(p, "X-PDKV-KV-Check: failed", 23))
		c->kv_check_failed = true;
	return len;
}

static void add_itl(struct req_ctx *c, double gap)
{
	struct serve_req *q = c->q;

	if (q->nitl == c->cap_itl) {
		size_t nc = c->cap_itl ? 2 * c->cap_itl : 64;
		double *p = realloc(q->itl, nc * sizeof(*p));

		if (!p)
			return;
		q->itl = p;
		c->cap_itl = nc;
	}
	q->itl[q->nitl++] = gap;
}

/* One SSE line: a chunk with text is one output token (the fake model: one byte per token). */
static void on_line(struct req_ctx *c, const char *l)
{
	double now = pd_now_s();

	if (strncmp(l, "data: ", 6) || !strncmp(l + 6, "[DONE]", 6))
		return;
	/* pdkv-standin (KV that fails its check after the first token) and pdkv-proxy (a cut
	 * decode) end a broken stream with an error event; the transfer itself may end cleanly
	 * (the proxy passes no trailers), so this is what marks the request failed */
	if (!strncmp(l + 6, "{\"error\"", 8)) {
		c->sse_error = true;
		return;
	}
	if (!strstr(l, "\"text\":\"") && !strstr(l, "\"content\":\""))
		return;
	if (strstr(l, "\"text\":\"\"") || strstr(l, "\"content\":\"\""))
		return;
	if (!c->q->ntok)
		c->q->ttft = now - c->t0;
	else
		add_itl(c, now - c->tlast);
	c->tlast = now;
	c->q->ntok++;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct req_ctx *c = ud;
	size_t len = sz * n;

	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\n') {
			c->line[c->nline] = 0;
			on_line(c, c->line);
			c->nline = 0;
		} else if (c->nline < sizeof(c->line) - 1) {
			c->line[c->nline++] = p[i];
		}
	}
	return len;
}

/* vllm/benchmarks/lib/endpoint_request_func.py @ 6f955986e: the completions and chat payloads,
 * streamed with usage; ignore_eos only when asked */
static char *request_body(const struct serve_opts *o, const struct serve_req *q)
{
	cJSON *b = cJSON_CreateObject(), *so;
	char *txt;

	cJSON_AddStringToObject(b, "model", o->model);
	if (o->backend == SERVE_OPENAI_CHAT) {
		cJSON *msgs = cJSON_AddArrayToObject(b, "messages"), *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", "user");
		cJSON_AddStringToObject(m, "content", q->prompt);
		cJSON_AddItemToArray(msgs, m);
		cJSON_AddNumberToObject(b, "max_completion_tokens", q->out_len);
	} else {
		cJSON_AddStringToObject(b, "prompt", q->prompt);
		cJSON_AddNumberToObject(b, "max_tokens", q->out_len);
	}
	cJSON_AddNumberToObject(b, "temperature", 0); /* pdkv: outputs comparable across runs */
	cJSON_AddBoolToObject(b, "stream", true);
	so = cJSON_AddObjectToObject(b, "stream_options");
	cJSON_AddBoolToObject(so, "include_usage", true);
	if (o->ignore_eos)
		cJSON_AddBoolToObject(b, "ignore_eos", true);
	txt = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	return txt;
}

/* libcurl's progress callback: a non-zero return aborts the transfer */
static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)ud, (void)a, (void)b, (void)c, (void)d;
	return serve_stop != 0;
}

static void one_request(const struct serve_point *pt, struct serve_req *q)
{
	const struct serve_opts *o = pt->o;
	struct req_ctx c = {.pt = pt, .q = q};
	char url[600], *body = request_body(o, q);
	struct curl_slist *h = NULL;
	CURL *e = curl_easy_init();
	long code = 0;
	CURLcode cc;

	snprintf(url, sizeof(url), "%s%s", pt->base_url, o->endpoint);
	q->sent = true;
	if (!e || !body) {
		q->err = "out of memory";
		goto out;
	}
	hr_http_post_json(e, url, body, &h, on_data, on_header, on_progress, &c,
	                  (long)(o->timeout_s * 1000));
	c.t0 = pd_now_s();
	q->start = c.t0;
	cc = curl_easy_perform(e);
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		q->interrupted = true;
		q->err = "interrupted";
	} else if (cc != CURLE_OK) {
		q->err = "transport error or timeout";
		q->unreachable = true;
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	q->e2e = pd_now_s() - c.t0;
	if (!q->err && code != 200)
		q->err = "HTTP status not 200";
	if (!q->err && c.kv_check_failed)
		q->err = "KV failed the decode's integrity check (X-PDKV-KV-Check: failed)";
	if (!q->err && c.sse_error)
		q->err = "the stream ended with an error event";
	if (!q->err && q->ntok == 0)
		q->err = "no tokens streamed";
	q->ok = !q->err;
out:
	curl_slist_free_all(h);
	if (e)
		curl_easy_cleanup(e);
	cJSON_free(body);
}

struct sched {
	const struct serve_point *pt;
	pthread_mutex_t mu;
	size_t next;
	atomic_size_t done, failed;
	atomic_bool finished;
	double *arrive; /* absolute start times */
};

static void *worker(void *arg)
{
	struct sched *s = arg;

	for (;;) {
		size_t i;
		double wait;

		pthread_mutex_lock(&s->mu);
		if (s->next >= s->pt->n) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		i = s->next++;
		pthread_mutex_unlock(&s->mu);
		while (!serve_stop && (wait = s->arrive[i] - pd_now_s()) > 0)
			pd_sleep_ms(wait > 0.1 ? 100 : (int)(wait * 1000) + 1);
		if (serve_stop)
			return NULL;
		one_request(s->pt, &s->pt->reqs[i]);
		atomic_fetch_add(&s->done, 1);
		if (!s->pt->reqs[i].ok && !s->pt->reqs[i].interrupted)
			atomic_fetch_add(&s->failed, 1);
	}
}

/* One progress line a second on stderr, as vllm bench serve's tqdm bar: requests done of the
 * point's total, failures, elapsed and the ETA at the rate so far ("\r" on a terminal). */
static void *progress(void *arg)
{
	struct sched *s = arg;
	double t0 = pd_now_s();
	bool tty = isatty(2);

	while (!atomic_load(&s->finished)) {
		for (int i = 0; i < 10 && !atomic_load(&s->finished); i++)
			pd_sleep_ms(100);
		size_t done = atomic_load(&s->done), fail = atomic_load(&s->failed), n = s->pt->n;
		double el = pd_now_s() - t0,
		       eta = done ? el / (double)done * (double)(n - done) : NAN;
		char etas[32] = "?", fs[48] = "";

		if (!isnan(eta))
			snprintf(etas, sizeof(etas), "%.0f s", eta);
		if (fail)
			snprintf(fs, sizeof(fs), " (%zu failed)", fail);
		fprintf(stderr, "%s[%s] %zu/%zu requests%s, %.1f s elapsed, ETA %s%s",
		        tty ? "\r\033[K" : "", s->pt->label ? s->pt->label : "point", done, n, fs,
		        el, etas, tty ? "" : "\n");
		fflush(stderr);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	return NULL;
}

/* standard normal (Box-Muller) and gamma(shape k, scale 1) (Marsaglia-Tsang; k < 1 by the
 * boost gamma(k) = gamma(k + 1) * U^(1/k)) for vLLM's --burstiness arrivals */
static double normal(uint64_t *st)
{
	return sqrt(-2.0 * log(unif(st))) * cos(2 * M_PI * unif(st));
}

static double gamma_draw(double k, uint64_t *st)
{
	double d, c;

	if (k < 1)
		return gamma_draw(k + 1, st) * pow(unif(st), 1.0 / k);
	d = k - 1.0 / 3.0;
	c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x = normal(st), v = 1 + c * x, u;
		if (v <= 0)
			continue;
		v = v * v * v;
		u = unif(st);
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return d * v;
	}
}

/* One unmeasured request of the point's first prompt; true when it succeeded (else *err, and
 * *unreachable when no HTTP answer came). */
static bool test_request(const struct serve_point *pt, const char **err, bool *unreachable)
{
	struct serve_req q = {0};
	bool ok;

	*unreachable = false;
	if (serve_dataset_fill(pt->o, pt->input_len, &q, 1)) {
		*err = "cannot make the prompt";
		return false;
	}
	one_request(pt, &q);
	ok = q.ok;
	*unreachable = q.unreachable;
	*err = q.err ? q.err : "?";
	free(q.prompt);
	free(q.itl);
	return ok;
}

/* vllm bench serve (vllm/benchmarks/serve.py benchmark() at vLLM 009e6d4, its ready check in
 * vllm/benchmarks/lib/ready_checker.py at 032a8d2): "Starting initial single prompt
 * test run..." with the run's first prompt, retried until it succeeds or the ready-check
 * timeout passes, then --num-warmups more of it, before the measured requests. Here once per
 * sweep point, as vLLM's sweeps start one vllm bench serve per point; so a point's figures
 * never carry a deployment's first-request costs (connections, first touch of KV memory).
 * One difference: vLLM waits (retrying every 5 s) also while the endpoint answers with an
 * error; here only while nothing answers. A deployment that is up and fails requests is what
 * pdkv reports, so the point is measured at once and its failures count. */
int serve_point_warmup(struct serve_point *pt)
{
	const struct serve_opts *o = pt->o;
	double end = pd_now_s() + o->ready_check_s;
	const char *err = "?";
	bool unreachable, ok = false;
	int tries = 1;

	if (o->ready_check_s) {
		printf("Starting initial single prompt test run...\n");
		fflush(stdout);
		while (!(ok = test_request(pt, &err, &unreachable)) && !serve_stop) {
			if (!unreachable) {
				printf("Initial test run failed (%s): the endpoint answers, so the "
				       "point is measured now and its failures count.\n",
				       err);
				break;
			}
			if (pd_now_s() >= end) {
				fprintf(
				    stderr,
				    "pdkv bench serve: [%s] initial test run failed (%d tries in "
				    "%d s, --ready-check-timeout-sec) - please make sure benchmark "
				    "arguments are correctly specified. Error: %s\n",
				    pt->label ? pt->label : "point", tries, o->ready_check_s, err);
				return -1;
			}
			tries++;
			pd_sleep_ms(1000); /* nothing answers yet: again in a second */
		}
		if (serve_stop)
			return 0;
		if (ok)
			printf("Initial test run completed.\n");
	} else {
		printf("Skipping endpoint ready check.\n");
	}
	if (o->num_warmups) {
		printf("Warming up with %d requests...\n", o->num_warmups);
		fflush(stdout);
		for (int i = 0; i < o->num_warmups && !serve_stop; i++)
			test_request(pt, &err, &unreachable);
		printf("Warmup run completed.\n");
	}
	printf("Starting main benchmark run...\n");
	fflush(stdout);
	return 0;
}

int serve_point_run(struct serve_point *pt)
{
	const struct serve_opts *o = pt->o;
	size_t nw = pt->concurrency > 0 ? (size_t)pt->concurrency : pt->n;
	uint64_t st = (uint64_t)o->seed * 2654435761ULL + 88172645463325252ULL;
	struct sched s = {.pt = pt};
	pthread_t *th, pth;
	double t = 0, t0;
	bool have_pth;

	if (nw > pt->n)
		nw = pt->n;
	pt->reqs = calloc(pt->n, sizeof(*pt->reqs));
	s.arrive = calloc(pt->n, sizeof(double));
	th = calloc(nw, sizeof(*th));
	if (!pt->reqs || !s.arrive || !th ||
	    serve_dataset_fill(o, pt->input_len, pt->reqs, pt->n)) {
		free(s.arrive);
		free(th);
		return -1;
	}
	for (size_t i = 0; i < pt->n; i++) {
		/* vllm/benchmarks/serve.py get_request: gaps ~ gamma(burstiness, 1/(rate *
		 * burstiness)); burstiness 1 is the exponential of a Poisson process */
		if (pt->rate > 0)
			t += o->burstiness == 1.0
			         ? -log(unif(&st)) / pt->rate
			         : gamma_draw(o->burstiness, &st) / (pt->rate * o->burstiness);
		s.arrive[i] = t;
	}
	pthread_mutex_init(&s.mu, NULL);
	t0 = pd_now_s();
	for (size_t i = 0; i < pt->n; i++)
		s.arrive[i] += t0;
	have_pth = !pthread_create(&pth, NULL, progress, &s);
	for (size_t i = 0; i < nw; i++)
		if (pthread_create(&th[i], NULL, worker, &s))
			th[i] = 0;
	for (size_t i = 0; i < nw; i++)
		if (th[i])
			pthread_join(th[i], NULL);
	pt->duration = pd_now_s() - t0;
	atomic_store(&s.finished, true);
	if (have_pth)
		pthread_join(pth, NULL);
	pthread_mutex_destroy(&s.mu);
	free(s.arrive);
	free(th);
	return 0;
}

void serve_point_free(struct serve_point *pt)
{
	for (size_t i = 0; pt->reqs && i < pt->n; i++) {
		free(pt->reqs[i].prompt);
		free(pt->reqs[i].itl);
	}
	free(pt->reqs);
	pt->reqs = NULL;
}
