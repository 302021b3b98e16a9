/* SPDX-License-Identifier: Apache-2.0 */
/* px_fwd: libcurl calls to prefill (drained, first bytes kept for the error message) and to
 * decode (own thread; write callback -> bounded ring -> client reader, never the whole body). */
#include "px_fwd.h"
#include "pd_buf.h"
#include "pd_util.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

volatile int px_stopping;

static struct curl_slist *base_headers(const struct px_call *c, int json_body)
{
	struct curl_slist *h = NULL, *t;
	char line[512];
	const char *fixed[] = {"Expect:", json_body ? "Content-Type: application/json" : NULL};
	for (size_t i = 0; i < PD_ARRAY_SIZE(fixed); i++) {
		if (!fixed[i])
			continue;
		if (!(t = curl_slist_append(h, fixed[i])))
			goto oom;
		h = t;
	}
	if (c->extra_header) {
		if (!(t = curl_slist_append(h, c->extra_header)))
			goto oom;
		h = t;
	}
	snprintf(line, sizeof(line), "X-Request-Id: %s", c->request_id);
	if (!(t = curl_slist_append(h, line)))
		goto oom;
	h = t;
	if (c->authorization) {
		char *a = pd_asprintf("Authorization: %s", c->authorization);
		t = a ? curl_slist_append(h, a) : NULL;
		free(a);
		if (!t)
			goto oom;
		h = t;
	}
	return h;
oom:
	curl_slist_free_all(h);
	return NULL;
}

static int progress_cb(void *p, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const volatile int *cancel = p;
	(void)dt, (void)dn, (void)ut, (void)un;
	/* curl's thread reads the flags that other threads set: atomics (the flags guard no data)
	 */
	return px_is_stopping() || (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED));
}

/* The options every backend call shares. env proxies are ignored: a backend is always direct. */
static CURL *easy_for(const struct px_call *c, struct curl_slist *hdrs, char *errbuf, void *cancel)
{
	CURL *e = curl_easy_init();
	if (!e)
		return NULL;
	curl_easy_setopt(e, CURLOPT_URL, c->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, progress_cb);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, cancel);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	if (!strcmp(c->method, "POST")) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body ? c->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	}
	return e;
}

static void curl_reason(int res, const char *errbuf, char *out, size_t sz)
{
	if (res == CURLE_ABORTED_BY_CALLBACK && px_is_stopping())
		snprintf(out, sz, "proxy shutting down");
	else
		snprintf(out, sz, "%s", errbuf[0] ? errbuf : curl_easy_strerror(res));
}

/* ---- drained calls (prefill, readiness probes) ---- */

struct drain {
	struct px_answer *a;
	size_t keep, cap;
};

static size_t drain_cb(char *p, size_t sz, size_t n, void *u)
{
	struct drain *d = u;
	struct px_answer *a = d->a;
	size_t len = sz * n, k = len;
	if (a->len + k > d->keep) {
		k = d->keep - a->len;
		a->truncated = 1;
	}
	if (k && pd_buf_grow(&a->body, &d->cap, a->len + k + 1, 1024))
		return 0; /* aborts the call: out of memory */
	if (k) {
		memcpy(a->body + a->len, p, k);
		a->len += k;
		a->body[a->len] = '\0';
	}
	return len;
}

int px_fetch(const struct px_call *c, size_t keep, struct px_answer *a, char *reason,
             size_t reason_sz)
{
	struct drain d = {.a = a, .keep = keep};
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *h = base_headers(c, c->body != NULL);
	CURL *e = h ? easy_for(c, h, errbuf, (void *)c->cancel) : NULL;
	const char *ct = NULL;
	long code = 0;
	int res, ret = -1;

	memset(a, 0, sizeof(*a));
	if (!e) {
		snprintf(reason, reason_sz, "out of memory");
		goto out;
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, drain_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &d);
	res = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	if (curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(a->ctype, sizeof(a->ctype), "%s", ct);
	a->status = (int)code;
	a->complete = res == CURLE_OK;
	if (res != CURLE_OK) {
		curl_reason(res, errbuf, reason, reason_sz);
		if (res == CURLE_ABORTED_BY_CALLBACK && !px_is_stopping())
			snprintf(reason, reason_sz, "call aborted");
	} else if (code < 200 || code > 299) {
		/* a backend's error text is untrusted: keep it printable and short */
		char head[201];
		size_t n = a->len < 200 ? a->len : 200;
		for (size_t i = 0; i < n; i++)
			head[i] = (unsigned char)a->body[i] < ' ' || a->body[i] == 0x7f
			              ? ' '
			              : a->body[i];
		head[n] = '\0';
		snprintf(reason, reason_sz, "HTTP %ld%s%s", code, n ? ": " : "", head);
	} else {
		ret = 0;
	}
out:
	if (e)
		curl_easy_cleanup(e);
	curl_slist_free_all(h);
	return ret;
}

void px_answer_free(struct px_answer *a)
{
	free(a->body);
	a->body = NULL;
	a->len = 0;
}

/* ---- decode stream ---- */

static int hop_by_hop(const char *line, size_t n)
{
	static const char *const drop[] = {
	    "connection:",  "keep-alive:", "transfer-encoding:", "content-length:", "date:",
	    "server:",      "te:",         "trailer:",           "upgrade:",        "proxy-",
	    "x-request-id:"};
	for (size_t i = 0; i < PD_ARRAY_SIZE(drop); i++) {
		size_t m = strlen(drop[i]);
		if (n >= m && !strncasecmp(line, drop[i], m))
			return 1;
	}
	return 0;
}

static size_t header_cb(char *p, size_t sz, size_t n, void *u)
{
	struct px_stream *s = u;
	size_t len = sz * n, l = len;
	while (l && (p[l - 1] == '\n' || p[l - 1] == '\r'))
		l--;
	pthread_mutex_lock(&s->mu);
	if (l >= 5 && !strncmp(p, "HTTP/", 5)) {
		/* a new status line (after a 1xx): forget earlier headers */
		const char *sp = memchr(p, ' ', l);
		for (int i = 0; i < s->n_hdr; i++)
			free(s->hdr[i]);
		s->n_hdr = 0;
		s->content_length = -1;
		s->status = 0;
		if (sp && (size_t)(sp - p) + 4 <= l && sp[1] >= '1' && sp[1] <= '5' &&
		    sp[2] >= '0' && sp[2] <= '9' && sp[3] >= '0' && sp[3] <= '9')
			s->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
	} else if (l == 0) {
		if (s->status >= 200) {
			s->hdr_done = 1;
			pthread_cond_broadcast(&s->cv);
		}
	} else if (!strncasecmp(p, "content-length:", 15)) {
		char v[32];
		int64_t cl;
		snprintf(v, sizeof(v), "%.*s", (int)(l - 15 < 31 ? l - 15 : 31), p + 15);
		char *t = v;
		while (*t == ' ' || *t == '\t')
			t++;
		s->content_length = pd_parse_i64(t, &cl) == 0 && cl >= 0 ? cl : -1;
	} else if (!strncasecmp(p, "transfer-encoding:", 18)) {
		s->content_length = -1;
	} else if (!hop_by_hop(p, l) && s->n_hdr < PX_MAX_PASS_HEADERS && l < 4096 &&
	           memchr(p, ':', l)) {
		s->hdr[s->n_hdr] = strndup(p, l);
		if (s->hdr[s->n_hdr])
			s->n_hdr++;
	}
	pthread_mutex_unlock(&s->mu);
	return len;
}

/* Producer: blocks while the ring is full, so a slow client slows the backend instead of
 * growing memory. Returning short aborts the call (client gone or shutdown). */
static size_t body_cb(char *p, size_t sz, size_t n, void *u)
{
	struct px_stream *s = u;
	size_t len = sz * n, off = 0;
	pthread_mutex_lock(&s->mu);
	if (!s->hdr_done) {
		s->hdr_done =
		    1; /* body without a header block (HTTP/0.9-ish): status stays as is */
		pthread_cond_broadcast(&s->cv);
	}
	if (!s->t_first_ns && len)
		s->t_first_ns = pd_now_ns();
	while (off < len) {
		size_t room, tail, k;
		while (s->len == s->cap && !s->cancel && !px_is_stopping()) {
			struct timespec ts;
			pd_deadline_in(&ts, CLOCK_REALTIME, 200);
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
		}
		if (s->cancel || px_is_stopping())
			break;
		room = s->cap - s->len;
		tail = (s->head + s->len) % s->cap;
		k = len - off;
		if (k > room)
			k = room;
		if (k > s->cap - tail)
			k = s->cap - tail;
		memcpy(s->ring + tail, p + off, k);
		s->len += k;
		off += k;
		s->bytes += k;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return off;
}

static void *stream_main(void *arg)
{
	struct px_stream *s = arg;
	struct curl_slist *h = base_headers(&s->call, s->call.body != NULL);
	CURL *e = h ? easy_for(&s->call, h, s->errbuf, (void *)&s->cancel) : NULL;
	int res = CURLE_OUT_OF_MEMORY;
	if (e) {
		curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
		curl_easy_setopt(e, CURLOPT_HEADERDATA, s);
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, body_cb);
		curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
		res = curl_easy_perform(e);
		curl_easy_cleanup(e);
	}
	curl_slist_free_all(h);
	pthread_mutex_lock(&s->mu);
	s->result = res;
	s->done = 1;
	s->t_end_ns = pd_now_ns();
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int px_stream_start(struct px_stream *s, const struct px_call *c, size_t queue_bytes)
{
	int ret;
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->content_length = -1;
	s->cap = queue_bytes;
	s->ring = malloc(queue_bytes);
	s->call = *c;
	s->own_url = strdup(c->url);
	s->own_rid = strdup(c->request_id);
	s->own_body = c->body ? malloc(c->body_len + 1) : NULL;
	s->own_auth = c->authorization ? strdup(c->authorization) : NULL;
	s->own_extra = c->extra_header ? strdup(c->extra_header) : NULL;
	if (!s->ring || !s->own_url || !s->own_rid || (c->body && !s->own_body) ||
	    (c->authorization && !s->own_auth) || (c->extra_header && !s->own_extra))
		return -ENOMEM;
	if (c->body) {
		memcpy(s->own_body, c->body, c->body_len);
		s->own_body[c->body_len] = '\0';
	}
	s->call.url = s->own_url;
	s->call.body = s->own_body;
	s->call.request_id = s->own_rid;
	s->call.authorization = s->own_auth;
	s->call.extra_header = s->own_extra;
	s->call.cancel = NULL;
	s->t_start_ns = pd_now_ns();
	ret = pthread_create(&s->thread, NULL, stream_main, s);
	if (ret)
		return -ret;
	s->started = 1;
	return 0;
}

int px_stream_wait_headers(struct px_stream *s)
{
	int st;
	pthread_mutex_lock(&s->mu);
	while (!s->hdr_done && !s->done)
		pthread_cond_wait(&s->cv, &s->mu);
	st = s->hdr_done ? s->status : 0;
	pthread_mutex_unlock(&s->mu);
	return st;
}

int px_stream_wait_body(struct px_stream *s, size_t n)
{
	int ret;
	pthread_mutex_lock(&s->mu);
	while (s->len < n && !s->done)
		pthread_cond_wait(&s->cv, &s->mu);
	ret = s->len >= n ? 0 : -1;
	pthread_mutex_unlock(&s->mu);
	return ret;
}

const char *px_stream_header(struct px_stream *s, const char *name, size_t *vlen)
{
	size_t n = strlen(name);
	/* hdr[] is written only before hdr_done, which the caller waited for */
	for (int i = 0; i < s->n_hdr; i++) {
		const char *h = s->hdr[i], *v;
		if (strncasecmp(h, name, n) || h[n] != ':')
			continue;
		for (v = h + n + 1; *v == ' ' || *v == '\t'; v++)
			;
		if (vlen)
			*vlen = strlen(v);
		return v;
	}
	return NULL;
}

long px_stream_read(struct px_stream *s, char *buf, size_t max)
{
	long n = 0;
	pthread_mutex_lock(&s->mu);
	while (!s->len && !s->done)
		pthread_cond_wait(&s->cv, &s->mu);
	if (s->len) {
		size_t k = s->len < max ? s->len : max;
		if (k > s->cap - s->head)
			k = s->cap - s->head;
		memcpy(buf, s->ring + s->head, k);
		s->head = (s->head + k) % s->cap;
		s->len -= k;
		n = (long)k;
		pthread_cond_broadcast(&s->cv);
	} else {
		n = s->result == CURLE_OK ? 0 : -1;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

const char *px_stream_error(struct px_stream *s)
{
	static __thread char why[300];
	pthread_mutex_lock(&s->mu);
	if (!s->done)
		snprintf(why, sizeof(why), "no answer yet");
	else if (s->result != CURLE_OK)
		curl_reason(s->result, s->errbuf, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "malformed HTTP status line");
	pthread_mutex_unlock(&s->mu);
	return why;
}

void px_stream_cancel(struct px_stream *s)
{
	if (!s->started)
		return;
	pthread_mutex_lock(&s->mu);
	if (!s->done)
		__atomic_store_n(&s->cancel, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void px_stream_finish(struct px_stream *s)
{
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		if (!s->done)
			__atomic_store_n(&s->cancel, 1, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		s->started = 0;
	}
	for (int i = 0; i < s->n_hdr; i++)
		free(s->hdr[i]);
	s->n_hdr = 0;
	free(s->ring);
	free(s->own_url);
	free(s->own_body);
	free(s->own_rid);
	free(s->own_auth);
	free(s->own_extra);
	s->ring = s->own_url = s->own_body = s->own_rid = s->own_auth = s->own_extra = NULL;
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
}
