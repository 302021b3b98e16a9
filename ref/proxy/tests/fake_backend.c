/* SPDX-License-Identifier: Apache-2.0 */
/* fake_backend: the proxy tests' stand-in for vLLM prefill/decode instances — records requests,
 * answers /v1/completions, /v1/chat/completions (JSON or SSE), /v1/models, /health. */
#include "fake_backend.h"
#include "pd_tsan.h"
#include "pd_util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fb_conn {
	char *body;
	size_t len, cap;
};

/* the fb settings a stream needs are copied when it starts: fb_reset for the next test may run
 * while MHD still reads the last stream of this one */
struct fb_sse {
	struct fb *f;
	int i;
	int cut; /* FB_CUT: drop after this many chunks, -1 = never */
	int chunks, gate_ms;
	volatile int *gate;
};

struct fb_half {
	char *body;
	size_t len;
};

/* Waits at most ms for *p (read once: fb_reset may clear the pointer) or for f->field to stop
 * pointing at it. 1 when it became set. */
static int wait_flag(volatile int *const *field, int ms)
{
	volatile int *p = __atomic_load_n(field, __ATOMIC_RELAXED);
	for (int waited = 0; p && __atomic_load_n(field, __ATOMIC_RELAXED) == p &&
	                     !__atomic_load_n(p, __ATOMIC_RELAXED) && waited < ms;
	     waited += 2)
		pd_sleep_ms(2);
	return !p || __atomic_load_n(p, __ATOMIC_RELAXED);
}

static char *chunk(int i, int n)
{
	if (i < n)
		return pd_asprintf(
		    "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":"
		    "[{\"index\":0,\"text\":\" tok%d\",\"finish_reason\":%s}]}\n\n",
		    i, i == n - 1 ? "\"length\"" : "null");
	return pd_asprintf("data: [DONE]\n\n");
}

char *fb_sse_expected(int n)
{
	size_t len = 0;
	char *all = calloc(1, 1);
	for (int i = 0; i <= n && all; i++) {
		char *c = chunk(i, n), *t;
		size_t cl = c ? strlen(c) : 0;
		t = c ? realloc(all, len + cl + 1) : NULL;
		if (!t) {
			free(c);
			free(all);
			return NULL;
		}
		all = t;
		memcpy(all + len, c, cl + 1);
		len += cl;
		free(c);
	}
	return all;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct fb_sse *s = cls;
	char *c;
	size_t n;
	(void)pos;
	if (s->i > s->chunks)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (s->cut >= 0 && s->i >= s->cut)
		return MHD_CONTENT_READER_END_WITH_ERROR; /* killed mid-stream: no [DONE] */
	if (s->i == 1 && s->gate) {
		if (!wait_flag(&s->f->gate, s->gate_ms ? s->gate_ms : 3000))
			__atomic_add_fetch(&s->f->gate_missed, 1, __ATOMIC_RELAXED);
	} else if (s->i > 0) {
		pd_sleep_ms(2);
	}
	c = chunk(s->i, s->chunks);
	if (!c)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = strlen(c);
	if (n > max)
		n = max; /* chunks are tiny; MHD's buffer is larger */
	memcpy(buf, c, n);
	free(c);
	s->i++;
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct fb_sse *s = cls;
	__atomic_store_n(&s->f->sse_ended_at, s->i, __ATOMIC_RELAXED); /* the test polls it */
	free(s);
}

static ssize_t half_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct fb_half *h = cls;
	size_t n = h->len / 2 > pos ? h->len / 2 - (size_t)pos : 0;
	if (!n)
		return MHD_CONTENT_READER_END_WITH_ERROR; /* killed mid-answer */
	if (n > max)
		n = max;
	memcpy(buf, h->body + pos, n);
	return (ssize_t)n;
}

static void half_free(void *cls)
{
	struct fb_half *h = cls;
	free(h->body);
	free(h);
}

static enum MHD_Result answer(struct MHD_Connection *c, int status, const char *ctype,
                              const char *body)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "X-Fake-Backend", "yes");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* FB_BIG: a completion of FB_BIG_BYTES, more than the proxy buffers */
static enum MHD_Result answer_big(struct MHD_Connection *c)
{
	static const char head[] = "{\"object\":\"text_completion\",\"choices\":[{\"text\":\"";
	char *big = malloc(FB_BIG_BYTES + 1);
	size_t hl = strlen(head);
	enum MHD_Result ret;
	struct MHD_Response *r;
	if (!big)
		return MHD_NO;
	memcpy(big, head, hl);
	for (size_t i = hl; i < FB_BIG_BYTES - 4; i++)
		big[i] = (char)('a' + i % 26);
	memcpy(big + FB_BIG_BYTES - 4, "\"}]}", 4);
	r = MHD_create_response_from_buffer(FB_BIG_BYTES, big, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* FB_CUT without stream: the first half of body, then the connection is cut */
static enum MHD_Result answer_half(struct MHD_Connection *c, const char *body)
{
	struct fb_half *h = calloc(1, sizeof(*h));
	struct MHD_Response *r;
	enum MHD_Result ret;
	if (!h || !(h->body = strdup(body))) {
		free(h);
		return MHD_NO;
	}
	h->len = strlen(body);
	r = MHD_create_response_from_callback(h->len, 4096, half_read, h, half_free);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
	struct fb *f = cls;
	struct fb_conn *k = *con_cls;
	char body[1024];
	const char *v;
	int stream = 0, slot = -1, mode, slow_ms, cut_after, chunks, gate_ms;
	const char *kvp_json, *query_json;
	volatile int *gate, *hold, *on_request;
	(void)version;
	if (!k) {
		*con_cls = calloc(1, sizeof(struct fb_conn));
		return *con_cls ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		if (k->len + *upload_size + 1 > k->cap) {
			k->cap = (k->len + *upload_size + 1) * 2;
			k->body = realloc(k->body, k->cap);
			if (!k->body)
				return MHD_NO;
		}
		memcpy(k->body + k->len, upload, *upload_size);
		k->len += *upload_size;
		k->body[k->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	/* the test set f up before it sent this request: an order through sockets (pd_tsan.h) */
	PD_TSAN_WIRE_RECV();
	pthread_mutex_lock(&f->mu);
	/* one consistent view of the settings: fb_reset for the next test may run while this
	 * answer is still being written */
	mode = __atomic_load_n(&f->mode, __ATOMIC_RELAXED); /* the test ends a stall by it */
	slow_ms = f->slow_ms;
	cut_after = f->cut_after;
	chunks = f->sse_chunks;
	gate_ms = f->gate_ms;
	kvp_json = f->kvp_json;
	query_json = f->query_json;
	gate = f->gate;
	hold = __atomic_load_n(&f->hold, __ATOMIC_RELAXED);
	on_request = f->on_request;
	if (f->n < FB_MAX_REQS) {
		struct fb_req *r = &f->reqs[f->n++];
		memset(r, 0, sizeof(*r));
		snprintf(r->method, sizeof(r->method), "%s", method);
		snprintf(r->path, sizeof(r->path), "%s", url);
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
		snprintf(r->rid, sizeof(r->rid), "%s", v ? v : "");
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
		snprintf(r->auth, sizeof(r->auth), "%s", v ? v : "");
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-data-parallel-rank");
		snprintf(r->dp, sizeof(r->dp), "%s", v ? v : "");
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
		snprintf(r->ctype, sizeof(r->ctype), "%s", v ? v : "");
		r->body = k->body ? strndup(k->body, k->len) : NULL;
		r->len = k->len;
		r->t_in_ns = pd_now_ns();
		slot = f->n - 1;
	}
	pthread_mutex_unlock(&f->mu);

	if (!strcmp(url, "/health")) {
		/* the proxy's readiness poller asks while the test flips it */
		int hs = __atomic_load_n(&f->health_status, __ATOMIC_RELAXED);
		return answer(c, hs ? hs : 200, "text/plain", "");
	}
	if (!strcmp(url, "/query")) {
		if (!query_json)
			return answer(c, 404, "application/json", "{\"detail\":\"Not Found\"}");
		return answer(c, 200, "application/json", query_json);
	}
	if (!strcmp(url, "/v1/models")) {
		snprintf(body, sizeof(body),
		         "{\"object\":\"list\",\"data\":[{\"id\":\"fake-%s\"}]}", f->name);
		return answer(c, 200, "application/json", body);
	}
	if (on_request)
		__atomic_store_n(on_request, 1, __ATOMIC_RELAXED);
	if (hold && !wait_flag(&f->hold, 5000))
		__atomic_add_fetch(&f->hold_missed, 1, __ATOMIC_RELAXED);
	if (slot >= 0) {
		pthread_mutex_lock(&f->mu);
		if (slot < f->n)
			f->reqs[slot].t_out_ns = pd_now_ns();
		pthread_mutex_unlock(&f->mu);
	}
	if (mode == FB_DROP)
		return MHD_NO;
	if (mode == FB_FAIL500)
		return answer(c, 500, "application/json", "{\"error\":\"injected failure\"}");
	if (mode == FB_FAIL400)
		return answer(c, 400, "application/json", FB_FAIL400_BODY);
	if (mode == FB_BIG)
		return answer_big(c);
	/* interruptible, so fb_reset ends a stall at once */
	for (int t = 0; mode == FB_SLOW && t < slow_ms &&
	                __atomic_load_n(&f->mode, __ATOMIC_RELAXED) == FB_SLOW;
	     t += 5)
		pd_sleep_ms(5);
	if (k->body) {
		cJSON *j = cJSON_Parse(k->body);
		stream = cJSON_IsTrue(cJSON_GetObjectItem(j, "stream"));
		cJSON_Delete(j);
	}
	if (stream) {
		struct fb_sse *s = calloc(1, sizeof(*s));
		struct MHD_Response *r;
		enum MHD_Result ret;
		if (!s)
			return MHD_NO;
		s->f = f;
		s->cut = mode == FB_CUT ? cut_after : -1;
		s->chunks = chunks;
		s->gate = gate;
		s->gate_ms = gate_ms;
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, s,
		                                      sse_free);
		MHD_add_response_header(r, "Content-Type", "text/event-stream");
		ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	snprintf(body, sizeof(body),
	         "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"model\":\"fake\",\"backend\":"
	         "\"%s\","
	         "\"choices\":[{\"index\":0,\"text\":\" Paris\",\"finish_reason\":\"length\"}],"
	         "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}%s%s}",
	         f->name, kvp_json ? ",\"kv_transfer_params\":" : "", kvp_json ? kvp_json : "");
	if (mode == FB_CUT)
		return answer_half(c, body);
	return answer(c, 200, "application/json", body);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	struct fb_conn *k = *con_cls;
	(void)cls, (void)c, (void)toe;
	if (k) {
		free(k->body);
		free(k);
		*con_cls = NULL;
	}
}

int fb_start(struct fb *f, const char *name)
{
	int fd;
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->sse_chunks = 8;
	f->sse_ended_at = -1;
	pthread_mutex_init(&f->mu, NULL);
	f->port = pd_free_port("127.0.0.1");
	fd = f->port > 0 ? pd_tcp_listen("127.0.0.1", f->port, 128) : -1;
	if (fd < 0)
		return -1;
	f->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD, 0,
	                        NULL, NULL, handler, f, MHD_OPTION_LISTEN_SOCKET, fd,
	                        MHD_OPTION_NOTIFY_COMPLETED, completed, f, MHD_OPTION_END);
	return f->d ? 0 : -1;
}

void fb_reset(struct fb *f)
{
	pthread_mutex_lock(&f->mu);
	for (int i = 0; i < f->n; i++)
		free(f->reqs[i].body);
	f->n = 0;
	/* atomics for what a handler or stream of the last test may still read unlocked */
	__atomic_store_n(&f->mode, FB_OK, __ATOMIC_RELAXED);
	__atomic_store_n(&f->gate, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&f->gate_missed, 0, __ATOMIC_RELAXED);
	f->gate_ms = 0;
	__atomic_store_n(&f->sse_ended_at, -1, __ATOMIC_RELAXED);
	f->sse_chunks = 8;
	__atomic_store_n(&f->hold, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&f->hold_missed, 0, __ATOMIC_RELAXED);
	f->on_request = NULL;
	f->cut_after = 0;
	__atomic_store_n(&f->health_status, 0, __ATOMIC_RELAXED);
	f->kvp_json = NULL;
	pthread_mutex_unlock(&f->mu);
}

int fb_count_path(struct fb *f, const char *path)
{
	int n = 0;
	pthread_mutex_lock(&f->mu);
	for (int i = 0; i < f->n; i++)
		n += !strcmp(f->reqs[i].path, path);
	pthread_mutex_unlock(&f->mu);
	return n;
}

int fb_count(struct fb *f)
{
	int n;
	pthread_mutex_lock(&f->mu);
	n = f->n;
	pthread_mutex_unlock(&f->mu);
	return n;
}

void fb_stop(struct fb *f)
{
	if (f->d)
		MHD_stop_daemon(f->d);
	f->d = NULL;
	fb_reset(f);
	pthread_mutex_destroy(&f->mu);
}
