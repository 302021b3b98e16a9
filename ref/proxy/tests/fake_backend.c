/* fake_backend: the proxy tests' stand-in for vLLM prefill/decode instances — records requests,
 * answers /v1/completions, /v1/chat/completions (JSON or SSE), /v1/models, /health. */
#include "fake_backend.h"
#include "pd_util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fb_conn {
	char *body;
	size_t len, cap;
};

struct fb_sse {
	struct fb *f;
	int i;
	int cut; /* FB_CUT: drop after this many chunks, -1 = never */
};

struct fb_half {
	char *body;
	size_t len;
};

/* Waits at most ms for *p (read once: fb_reset may clear the pointer) or for f->field to stop
 * pointing at it. 1 when it became set. */
static int wait_flag(volatile int *const *field, int ms)
{
	volatile int *p = *field;
	for (int waited = 0; p && *field == p && !*p && waited < ms; waited += 2)
		pd_sleep_ms(2);
	return !p || *p;
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
	if (s->i > s->f->sse_chunks)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (s->cut >= 0 && s->i >= s->cut)
		return MHD_CONTENT_READER_END_WITH_ERROR; /* killed mid-stream: no [DONE] */
	if (s->i == 1 && s->f->gate) {
		if (!wait_flag(&s->f->gate, s->f->gate_ms ? s->f->gate_ms : 3000))
			__atomic_add_fetch(&s->f->gate_missed, 1, __ATOMIC_RELAXED);
	} else if (s->i > 0) {
		pd_sleep_ms(2);
	}
	c = chunk(s->i, s->f->sse_chunks);
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
	s->f->sse_ended_at = s->i;
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

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
	struct fb *f = cls;
	struct fb_conn *k = *con_cls;
	char body[1024];
	const char *v;
	int stream = 0, slot = -1;
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
	pthread_mutex_lock(&f->mu);
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

	if (!strcmp(url, "/health"))
		return answer(c, f->health_status ? f->health_status : 200, "text/plain", "");
	if (!strcmp(url, "/query")) {
		if (!f->query_json)
			return answer(c, 404, "application/json", "{\"detail\":\"Not Found\"}");
		return answer(c, 200, "application/json", f->query_json);
	}
	if (!strcmp(url, "/v1/models")) {
		snprintf(body, sizeof(body),
		         "{\"object\":\"list\",\"data\":[{\"id\":\"fake-%s\"}]}", f->name);
		return answer(c, 200, "application/json", body);
	}
	if (f->on_request)
		*f->on_request = 1;
	if (f->hold && !wait_flag(&f->hold, 5000))
		__atomic_add_fetch(&f->hold_missed, 1, __ATOMIC_RELAXED);
	if (slot >= 0) {
		pthread_mutex_lock(&f->mu);
		if (slot < f->n)
			f->reqs[slot].t_out_ns = pd_now_ns();
		pthread_mutex_unlock(&f->mu);
	}
	if (f->mode == FB_DROP)
		return MHD_NO;
	if (f->mode == FB_FAIL500)
		return answer(c, 500, "application/json", "{\"error\":\"injected failure\"}");
	if (f->mode == FB_FAIL400)
		return answer(c, 400, "application/json", FB_FAIL400_BODY);
	if (f->mode == FB_BIG) {
		static const char head[] =
		    "{\"object\":\"text_completion\",\"choices\":[{\"text\":\"";
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
	/* interruptible, so fb_reset ends a stall at once */
	for (int t = 0; f->mode == FB_SLOW && t < f->slow_ms; t += 5)
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
		s->cut = f->mode == FB_CUT ? f->cut_after : -1;
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
	         f->name, f->kvp_json ? ",\"kv_transfer_params\":" : "",
	         f->kvp_json ? f->kvp_json : "");
	if (f->mode == FB_CUT) {
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
	f->mode = FB_OK;
	f->gate = NULL;
	f->gate_missed = 0;
	f->gate_ms = 0;
	f->sse_ended_at = -1;
	f->sse_chunks = 8;
	f->hold = NULL;
	f->hold_missed = 0;
	f->on_request = NULL;
	f->cut_after = 0;
	f->health_status = 0;
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
