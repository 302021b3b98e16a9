/* bench_serve_load: the load of `pdkv bench serve` — streamed completions through a proxy with
 * Poisson arrivals (or all at once) under a concurrency cap, timing TTFT, inter-token gaps and
 * end-to-end latency per request (vllm bench serve's definitions). */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_serve.h"
#include "pd_util.h"

struct req_ctx {
	const struct serve_point *pt;
	struct serve_req *q;
	double t0, tlast;
	char line[512];
	size_t nline;
	size_t cap_itl;
	bool kv_check_failed; /* X-PDKV-KV-Check: failed (pdkv-standin, issue 34 N4) */
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

static void one_request(const struct serve_point *pt, struct serve_req *q)
{
	const struct serve_opts *o = pt->o;
	struct req_ctx c = {.pt = pt, .q = q};
	char url[600], *body;
	struct curl_slist *h = NULL;
	CURL *e = curl_easy_init();
	long code = 0;

	snprintf(url, sizeof(url), "%s%s", pt->base_url, o->endpoint);
	body =
	    pd_asprintf("{\"model\":\"%s\",\"prompt\":\"%s\",\"max_tokens\":%d,\"temperature\":0,"
	                "\"ignore_eos\":true,\"stream\":true}",
	                o->model, q->prompt, q->out_len);
	if (!e || !body) {
		q->err = "out of memory";
		goto out;
	}
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &c);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &c);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(o->timeout_s * 1000));
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	c.t0 = pd_now_s();
	q->start = c.t0;
	if (curl_easy_perform(e) != CURLE_OK)
		q->err = "transport error or timeout";
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	q->e2e = pd_now_s() - c.t0;
	if (!q->err && code != 200)
		q->err = "HTTP status not 200";
	if (!q->err && c.kv_check_failed)
		q->err = "KV failed the decode's integrity check (X-PDKV-KV-Check: failed)";
	if (!q->err && q->ntok == 0)
		q->err = "no tokens streamed";
	q->ok = !q->err;
out:
	curl_slist_free_all(h);
	if (e)
		curl_easy_cleanup(e);
	free(body);
}

struct sched {
	const struct serve_point *pt;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t next, running;
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
		wait = s->arrive[i] - pd_now_s();
		if (wait > 0)
			pd_sleep_ms((int)(wait * 1000));
		one_request(s->pt, &s->pt->reqs[i]);
	}
}

/* xorshift64*: the prompts and arrivals depend on --seed only */
static uint64_t rnd(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 2685821657736338717ULL;
}

int serve_point_run(struct serve_point *pt)
{
	const struct serve_opts *o = pt->o;
	size_t nw = pt->concurrency > 0 ? (size_t)pt->concurrency : pt->n;
	uint64_t st = (uint64_t)o->seed * 2654435761ULL + 88172645463325252ULL;
	struct sched s = {.pt = pt};
	pthread_t *th;
	double t = 0, t0;
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz ";

	pt->reqs = calloc(pt->n, sizeof(*pt->reqs));
	s.arrive = calloc(pt->n, sizeof(double));
	th = calloc(nw, sizeof(*th));
	if (!pt->reqs || !s.arrive || !th)
		return -1;
	for (size_t i = 0; i < pt->n; i++) {
		struct serve_req *q = &pt->reqs[i];

		q->in_len = pt->input_len;
		q->out_len = o->output_len;
		q->prompt = malloc((size_t)q->in_len + 1);
		if (!q->prompt)
			return -1;
		for (int k = 0; k < q->in_len; k++)
			q->prompt[k] = alpha[rnd(&st) % (sizeof(alpha) - 1)];
		q->prompt[q->in_len] = 0;
		if (pt->rate > 0) { /* Poisson process: exponential gaps */
			double u = ((double)(rnd(&st) >> 11) + 1.0) / 9007199254740993.0;

			t += -log(u) / pt->rate;
		}
		s.arrive[i] = t;
	}
	pthread_mutex_init(&s.mu, NULL);
	t0 = pd_now_s();
	for (size_t i = 0; i < pt->n; i++)
		s.arrive[i] += t0;
	for (size_t i = 0; i < nw; i++)
		if (pthread_create(&th[i], NULL, worker, &s))
			th[i] = 0;
	for (size_t i = 0; i < nw; i++)
		if (th[i])
			pthread_join(th[i], NULL);
	pt->duration = pd_now_s() - t0;
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
