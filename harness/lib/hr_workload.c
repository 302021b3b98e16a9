/* SPDX-License-Identifier: Apache-2.0 */
/* hr_workload: the OpenAI client side of a scenario — deterministic prompts, bounded-concurrency
 * requests over libcurl (one easy handle per worker thread), and response validation. */
#include "hr.h"
#include "hr_http.h"
#include "pd_buf.h"
#include "pd_util.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BODY (64u << 20)

/* pdkv's fake model tokenizes one token per byte (ref/model/mdl.h), so a prompt of ntok tokens
 * is ntok bytes: "r<idx>" then words from a small vocabulary, cut to length. Distinct per idx. */
char *hr_prompt_text(int idx, int ntok, unsigned seed)
{
	static const char *vocab[] = {"the",  "kv",     "cache", "moves", "from",   "prefill",
	                              "to",   "decode", "over",  "rdma",  "and",    "tcp",
	                              "each", "token",  "has",   "keys",  "values", "layers"};
	size_t cap = (size_t)ntok + 32, len;
	char *s;
	unsigned st = seed * 2654435761u ^ (unsigned)idx * 40503u ^ 0x9e3779b9u;
	if (ntok < 1)
		ntok = 1;
	s = malloc(cap);
	if (!s)
		return NULL;
	len = (size_t)snprintf(s, cap, "r%d", idx);
	while (len < (size_t)ntok) {
		const char *w;
		st = st * 1103515245u + 12345u;
		w = vocab[(st >> 8) % PD_ARRAY_SIZE(vocab)];
		len += (size_t)snprintf(s + len, cap - len, " %s", w);
		if (len >= cap - 16)
			break;
	}
	s[ntok] = '\0';
	return s;
}

static void set_invalid(struct hr_req *r, const char *why)
{
	if (!r->invalid)
		r->invalid = strdup(why);
}

static void take_usage(struct hr_req *r, const cJSON *u)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(u, "completion_tokens");
	if (cJSON_IsNumber(p))
		r->usage_prompt = (long)p->valuedouble;
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens_details");
	const cJSON *k =
	    cJSON_IsObject(d) ? cJSON_GetObjectItemCaseSensitive(d, "cached_tokens") : NULL;
	if (cJSON_IsNumber(c))
		r->usage_completion = (long)c->valuedouble;
	if (cJSON_IsNumber(k)) /* vLLM with --enable-prompt-tokens-details (external mode) */
		r->usage_cached = (long)k->valuedouble;
}

/* Appends the text piece of one choice; returns -1 when the shape is wrong. */
static int choice_text(const cJSON *obj, bool chat, bool stream, char **acc)
{
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(obj, "choices"), *c0, *t = NULL;
	char *n;
	if (!cJSON_IsArray(ch))
		return -1;
	c0 = cJSON_GetArrayItem(ch, 0);
	if (!c0)
		return stream ? 0 : -1; /* a usage-only chunk has no choices */
	if (!chat) {
		t = cJSON_GetObjectItemCaseSensitive(c0, "text");
	} else {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(c0, stream ? "delta" : "message");
		if (!cJSON_IsObject(m))
			return -1;
		t = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (stream && (!t || cJSON_IsNull(t)))
			return 0; /* the role-only first delta */
	}
	if (!cJSON_IsString(t))
		return -1;
	n = pd_asprintf("%s%s", *acc ? *acc : "", t->valuestring);
	if (!n)
		return -1;
	free(*acc);
	*acc = n;
	return 0;
}

static const char *want_object(bool chat, bool stream)
{
	if (chat)
		return stream ? "chat.completion.chunk" : "chat.completion";
	return "text_completion";
}

static int check_object(const cJSON *o, bool chat, bool stream, char *why, size_t sz)
{
	const cJSON *ob = cJSON_GetObjectItemCaseSensitive(o, "object");
	if (!cJSON_IsObject(o)) {
		snprintf(why, sz, "not a JSON object");
		return -1;
	}
	if (!cJSON_IsString(ob) || strcmp(ob->valuestring, want_object(chat, stream))) {
		snprintf(why, sz, "\"object\" is %s%s%s, expected \"%s\"",
		         cJSON_IsString(ob) ? "\"" : "",
		         cJSON_IsString(ob) ? ob->valuestring : "absent",
		         cJSON_IsString(ob) ? "\"" : "", want_object(chat, stream));
		return -1;
	}
	return 0;
}

void hr_response_parse(struct hr_req *r, bool chat, bool stream)
{
	char why[200];
	char *acc = NULL;
	r->usage_prompt = r->usage_completion = r->usage_cached = -1;
	r->done_marker = false;
	if (!r->body) {
		set_invalid(r, "no body");
		return;
	}
	if (!stream) {
		cJSON *o = cJSON_Parse(r->body);
		const cJSON *u;
		if (!o) {
			set_invalid(r, "body is not JSON");
			return;
		}
		if (check_object(o, chat, false, why, sizeof(why))) {
			set_invalid(r, why);
		} else if (choice_text(o, chat, false, &acc)) {
			set_invalid(r, chat ? "choices[0].message.content missing"
			                    : "choices[0].text missing");
		} else {
			u = cJSON_GetObjectItemCaseSensitive(o, "usage");
			if (!cJSON_IsObject(u))
				set_invalid(r, "usage block missing");
			else
				take_usage(r, u);
		}
		cJSON_Delete(o);
		goto out;
	}
	/* SSE: events are "data: ..." lines; the last must be [DONE] */
	for (char *line = r->body; line && *line;) {
		char *eol = strchr(line, '\n'), *data;
		cJSON *o;
		if (eol)
			*eol = '\0';
		if (eol > line && eol[-1] == '\r')
			eol[-1] = '\0';
		data = line;
		if (!*data || *data == ':')
			goto next;
		if (strncmp(data, "data:", 5)) {
			snprintf(why, sizeof(why), "stream line is not \"data: ...\": %.60s", data);
			set_invalid(r, why);
			goto next;
		}
		data += 5;
		while (*data == ' ')
			data++;
		if (r->done_marker) {
			set_invalid(r, "data after [DONE]");
			goto next;
		}
		if (!strcmp(data, "[DONE]")) {
			r->done_marker = true;
			goto next;
		}
		o = cJSON_Parse(data);
		if (!o) {
			snprintf(why, sizeof(why), "stream chunk is not JSON: %.60s", data);
			set_invalid(r, why);
		} else if (check_object(o, chat, true, why, sizeof(why))) {
			set_invalid(r, why);
		} else if (choice_text(o, chat, true, &acc)) {
			set_invalid(r, "stream chunk without choices[0] text");
		} else {
			const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "usage");
			if (cJSON_IsObject(u))
				take_usage(r, u);
		}
		cJSON_Delete(o);
	next:
		if (eol)
			*eol = '\n';
		if (eol && eol > line && eol[-1] == '\0')
			eol[-1] = '\r';
		line = eol ? eol + 1 : NULL;
	}
	if (!r->done_marker)
		set_invalid(r, "stream did not end with data: [DONE]");
	if (r->usage_prompt < 0)
		set_invalid(r, "no usage block in the stream");
out:
	if (r->invalid) {
		free(acc);
		return;
	}
	r->text = acc ? acc : strdup("");
}

struct wctx {
	const char *base_url;
	const struct hr_scenario *sc;
	struct hr_req *reqs;
	atomic_int next;
	int done;
	double deadline;
	volatile sig_atomic_t *stop;
	void (*progress)(int, int, void *);
	void *ud;
	pthread_mutex_t mu;
};

char *hr_request_body(const struct hr_scenario *sc, const char *prompt)
{
	cJSON *o = cJSON_CreateObject();
	char *s;
	cJSON_AddStringToObject(o, "model", sc->model);
	if (sc->wl.chat) {
		cJSON *msgs = cJSON_AddArrayToObject(o, "messages");
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", "user");
		cJSON_AddStringToObject(m, "content", prompt);
		cJSON_AddItemToArray(msgs, m);
	} else {
		cJSON_AddStringToObject(o, "prompt", prompt);
	}
	cJSON_AddNumberToObject(o, "max_tokens", sc->wl.max_tokens);
	if (sc->wl.ignore_eos) /* vLLM's sampling param: no stop at EOS, prefill's token included */
		cJSON_AddBoolToObject(o, "ignore_eos", true);
	cJSON_AddNumberToObject(o, "temperature", 0);
	cJSON_AddBoolToObject(o, "stream", sc->wl.stream);
	if (sc->wl.stream) {
		cJSON *so = cJSON_AddObjectToObject(o, "stream_options");
		cJSON_AddBoolToObject(so, "include_usage", 1);
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* workload.stream_percent / disconnect_percent: which requests stream and which clients hang up,
 * spread evenly (every run of 100 consecutive requests has exactly that many: 37 and 61 are
 * prime to 100) and the same on the proxy and on the plain stand-in. */
static void plan_request(const struct hr_workload *wl, struct hr_req *r)
{
	r->stream = (r->idx * 37 % 100) < wl->stream_pct;
	r->disconnect = ((r->idx * 61 + 13) % 100) < wl->disconnect_pct;
}

/* One client's request: its body and where the answer goes. */
struct one {
	struct wctx *w;
	struct hr_req *r;
	struct pd_buf b;
	double t0;
};

/* A streamed client that hangs up does so once the first piece of the answer is in. */
static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct one *o = ud;
	size_t got = pd_buf_curl_write(p, sz, n, &o->b);
	if (got == sz * n && o->r->disconnect && o->r->stream && o->b.len > 0) {
		o->r->cut = true;
		return 0; /* CURLE_WRITE_ERROR: the connection closes mid-stream */
	}
	return got;
}

/* A plain client that hangs up does so a few ms after its request went out: while the prefill,
 * the transfer or the decode works on it. */
static int on_xfer(void *ud, curl_off_t a, curl_off_t b, curl_off_t ultotal, curl_off_t ulnow)
{
	struct one *o = ud;
	struct hr_req *r = o->r;
	(void)a;
	(void)b;
	/* set by a signal handler on another thread: an atomic read, not just volatile */
	if (o->w->stop && __atomic_load_n(o->w->stop, __ATOMIC_RELAXED))
		return 1;
	if (r->disconnect && !r->stream && ultotal > 0 && ulnow == ultotal &&
	    pd_now_s() - o->t0 > 0.002 + 0.001 * (r->idx % 8)) {
		r->cut = true;
		return 1; /* CURLE_ABORTED_BY_CALLBACK: the connection closes */
	}
	return 0;
}

/* pdkv-standin marks an answer whose received KV failed the decode's checksum: a failed request
 * even with status 200 (--external, the request summary). */
static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct hr_req *r = ((struct one *)ud)->r;
	size_t len = sz * n;
	if (len >= 23 && !strncasecmp(p, "X-PDKV-KV-Check: failed", 23))
		r->kv_check_failed = true;
	if (len > 20 && !strncasecmp(p, "X-PDKV-Transfer-Id:", 19)) { /* issue 34, N3 */
		size_t a = 19, b = len;
		while (a < b && (p[a] == ' ' || p[a] == '\t'))
			a++;
		while (b > a && (p[b - 1] == '\r' || p[b - 1] == '\n' || p[b - 1] == ' '))
			b--;
		snprintf(r->transfer_id, sizeof(r->transfer_id), "%.*s", (int)(b - a), p + a);
	}
	return len;
}

static void one_request(struct wctx *w, CURL *c, struct hr_req *r)
{
	const struct hr_scenario *sc = w->sc;
	struct hr_scenario this = *sc; /* the body's "stream" is this request's */
	char url[512];
	struct curl_slist *h = NULL;
	struct one o = {.w = w, .r = r, .b = {.max = MAX_BODY}, .t0 = pd_now_s()};
	char *body;
	double left = w->deadline - o.t0;
	CURLcode cc;

	if (left < 0.5)
		left = 0.5;
	plan_request(&sc->wl, r);
	this.wl.stream = r->stream;
	snprintf(url, sizeof(url), "%s%s", w->base_url,
	         sc->wl.chat ? "/v1/chat/completions" : "/v1/completions");
	body = hr_request_body(&this, r->prompt);
	if (!body) {
		snprintf(r->curl_err, sizeof(r->curl_err), "out of memory");
		return;
	}
	curl_easy_reset(c);
	hr_http_post_json(c, url, body, &h, on_body, on_header, on_xfer, &o, (long)(left * 1000));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	cc = curl_easy_perform(c);
	r->secs = pd_now_s() - o.t0;
	if (cc == CURLE_OK) {
		r->cut = false; /* the whole answer came before the client hung up */
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	} else {
		r->cut = r->cut && (cc == CURLE_WRITE_ERROR || cc == CURLE_ABORTED_BY_CALLBACK);
		snprintf(r->curl_err, sizeof(r->curl_err), "%s%s", curl_easy_strerror(cc),
		         r->cut ? " (the client hung up on purpose)" : "");
	}
	r->body = o.b.p;
	if (r->status == 200)
		hr_response_parse(r, sc->wl.chat, r->stream);
	else
		r->usage_prompt = r->usage_completion = -1;
	curl_slist_free_all(h);
	free(body);
}

static void *worker(void *arg)
{
	struct wctx *w = arg;
	CURL *c = curl_easy_init();
	if (!c)
		return NULL;
	for (;;) {
		int i = atomic_fetch_add(&w->next, 1);
		if (i >= w->sc->wl.requests ||
		    (w->stop && __atomic_load_n(w->stop, __ATOMIC_RELAXED)) ||
		    pd_now_s() > w->deadline)
			break;
		one_request(w, c, &w->reqs[i]);
		pthread_mutex_lock(&w->mu);
		w->done++;
		if (w->progress)
			w->progress(w->done, w->sc->wl.requests, w->ud);
		pthread_mutex_unlock(&w->mu);
	}
	curl_easy_cleanup(c);
	return NULL;
}

int hr_workload_run(const char *base_url, const struct hr_scenario *sc, struct hr_req *reqs,
                    double deadline, volatile sig_atomic_t *stop,
                    void (*progress)(int done, int total, void *ud), void *ud)
{
	struct wctx w = {.base_url = base_url,
	                 .sc = sc,
	                 .reqs = reqs,
	                 .deadline = deadline,
	                 .stop = stop,
	                 .progress = progress,
	                 .ud = ud};
	int nt = sc->wl.concurrency < sc->wl.requests ? sc->wl.concurrency : sc->wl.requests;
	pthread_t *th = calloc((size_t)nt, sizeof(*th));
	int started = 0;
	if (!th)
		return -ENOMEM;
	atomic_init(&w.next, 0);
	pthread_mutex_init(&w.mu, NULL);
	for (int i = 0; i < nt; i++)
		if (pthread_create(&th[i], NULL, worker, &w) == 0)
			started++;
		else
			break;
	if (started == 0)
		worker(&w);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&w.mu);
	free(th);
	return w.done == sc->wl.requests ? 0 : -EINTR;
}

void hr_reqs_free(struct hr_req *reqs, size_t n)
{
	if (!reqs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(reqs[i].prompt);
		free(reqs[i].body);
		free(reqs[i].text);
		free(reqs[i].invalid);
	}
	free(reqs);
}
