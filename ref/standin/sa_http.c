/* SPDX-License-Identifier: Apache-2.0 */
/* sa_http: pdkv-standin's OpenAI-compatible HTTP front end on libmicrohttpd (thread per
 * connection): routing, request validation with vLLM's error shapes, JSON and SSE responses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <microhttpd.h>

#include "httplim/pd_connlim.h"
#include "httplim/pd_mhdhdr.h"
#include "httplim/pd_mhdlog.h"
#include "pd_log.h"
#include "pd_util.h"
#include "sa.h"
#include "sa_record.h"
#include "sa_req.h"
#include "sa_resp.h"

struct sa_http {
	struct sa *s;
	struct MHD_Daemon *d;
	struct pd_connlim *lim; /* --max-connections[-per-client]: bounds the threads too */
	int lfd;
	atomic_int completions; /* --fault fail-after=N counts them */
	/* bytes of request bodies held now (reserved on Content-Length, or as a chunked body
	 * grows), bounded by --max-body-in-flight (issue 34, D7) */
	_Atomic int64_t body_bytes;
};

struct conn {
	char *body;
	size_t len, cap;
	size_t held;        /* of h->body_bytes: released in on_completed */
	bool too_big, busy; /* over --max-body; over --max-body-in-flight */
	bool counted;
	double t_arrival; /* --record-requests */
	cJSON *rec;
	int status;
};

/* Takes n more bytes of the in-flight bound; false (nothing taken) when they do not fit. */
static bool body_take(struct sa_http *h, struct conn *cn, size_t n)
{
	int64_t cur = atomic_load(&h->body_bytes);
	do {
		if (cur + (int64_t)n > h->s->o.max_body_in_flight)
			return false;
	} while (!atomic_compare_exchange_weak(&h->body_bytes, &cur, cur + (int64_t)n));
	cn->held += n;
	return true;
}

/* The size limits are checked on Content-Length before a byte is buffered (413, or 503 when
 * the bodies in flight would pass --max-body-in-flight, without reading into memory), and a
 * body that fits is held in one allocation of its announced size. */
static void body_reserve(struct sa_http *h, struct MHD_Connection *c, struct conn *cn)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	uint64_t n;

	if (!cl || pd_parse_u64(cl, &n))
		return;
	if (n > (uint64_t)h->s->o.max_body) {
		cn->too_big = true;
		return;
	}
	if (!body_take(h, cn, (size_t)n + 1)) {
		cn->busy = true;
		return;
	}
	cn->body = malloc((size_t)n + 1);
	cn->cap = cn->body ? (size_t)n + 1 : 0;
}

/* Appends one piece of the body; a body past either bound is dropped (its bytes are read and
 * discarded, the answer is 413 / 503). MHD_NO when memory runs out. */
static enum MHD_Result body_add(struct sa_http *h, struct conn *cn, const char *p, size_t n)
{
	if (cn->too_big || cn->busy)
		return MHD_YES;
	if (cn->len + n > (size_t)h->s->o.max_body) {
		cn->too_big = true;
	} else if (cn->len + n + 1 > cn->cap) {
		size_t nc = (cn->len + n + 1) * 2;
		char *nb;

		if (nc > (size_t)h->s->o.max_body + 1)
			nc = (size_t)h->s->o.max_body + 1;
		if (nc > cn->held && !body_take(h, cn, nc - cn->held)) {
			cn->busy = true;
		} else if (!(nb = realloc(cn->body, nc))) {
			return MHD_NO;
		} else {
			cn->body = nb;
			cn->cap = nc;
		}
	}
	if (cn->too_big || cn->busy) {
		free(cn->body);
		cn->body = NULL;
		cn->len = cn->cap = 0;
		return MHD_YES;
	}
	memcpy(cn->body + cn->len, p, n);
	cn->len += n;
	cn->body[cn->len] = 0;
	return MHD_YES;
}

static enum MHD_Result queue(struct MHD_Connection *c, int status, const char *ctype,
                             const char *text, size_t len, const struct sa_req *r)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	char num[32];

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	if (r) {
		MHD_add_response_header(resp, "X-Request-Id", r->id);
		snprintf(num, sizeof(num), "%zu", r->reused);
		MHD_add_response_header(resp, "X-PDKV-Reused-Tokens", num);
		snprintf(num, sizeof(num), "%zu", r->recomputed);
		MHD_add_response_header(resp, "X-PDKV-Recomputed-Tokens", num);
		if (r->kv_check_failed) /* issue 34, N4: visible, whatever the policy did */
			MHD_add_response_header(resp, "X-PDKV-KV-Check", "failed");
		if (r->kvp.do_remote_prefill && r->kvp.transfer_id[0]) /* N3: whose KV it pulled */
			MHD_add_response_header(resp, "X-PDKV-Transfer-Id", r->kvp.transfer_id);
	}
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A 200 answer of text the caller built with malloc (NULL: out of memory); frees it. */
static enum MHD_Result queue_owned(struct MHD_Connection *c, const char *ctype, char *text)
{
	enum MHD_Result ret;

	if (!text)
		return MHD_NO;
	ret = queue(c, 200, ctype, text, strlen(text), NULL);
	free(text);
	return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, cJSON *j,
                                 const struct sa_req *r)
{
	char *txt = cJSON_PrintUnformatted(j);
	enum MHD_Result ret;

	cJSON_Delete(j);
	if (!txt)
		return MHD_NO;
	ret = queue(c, status, "application/json", txt, strlen(txt), r);
	free(txt);
	return ret;
}

/* vLLM's ErrorResponse: {"object":"error","message":...,"type":...,"param":null,"code":N}. */
static enum MHD_Result send_error_r(struct MHD_Connection *c, int status, const char *msg,
                                    const struct sa_req *r)
{
	cJSON *j = cJSON_CreateObject();
	const char *type = status == 400   ? "BadRequestError"
	                   : status == 401 ? "Unauthorized"
	                   : status == 404 ? "NotFoundError"
	                   : status == 413 ? "PayloadTooLarge"
	                   : status == 503 ? "ServiceUnavailableError"
	                                   : "InternalServerError";

	cJSON_AddStringToObject(j, "object", "error");
	cJSON_AddStringToObject(j, "message", msg);
	cJSON_AddStringToObject(j, "type", type);
	cJSON_AddNullToObject(j, "param");
	cJSON_AddNumberToObject(j, "code", status);
	return send_json(c, status, j, r);
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *msg)
{
	return send_error_r(c, status, msg, NULL);
}

/* 413 / 503 for a body over --max-body / --max-body-in-flight, naming the flag. */
static enum MHD_Result send_body_refused(struct sa_http *h, struct MHD_Connection *c,
                                         const struct conn *cn)
{
	char msg[200];
	if (cn->too_big) {
		snprintf(msg, sizeof(msg), "request body larger than %lld bytes (--max-body)",
		         (long long)h->s->o.max_body);
		return send_error(c, 413, msg);
	}
	snprintf(
	    msg, sizeof(msg),
	    "request bodies in flight would pass %lld bytes (--max-body-in-flight); retry later",
	    (long long)h->s->o.max_body_in_flight);
	return send_error(c, 503, msg);
}

/* A body that is not UTF-8 never reaches vLLM's request model: FastAPI's body parsing raises
 * HTTPException(400, "There was an error parsing the body") for anything but a JSON decode error
 * (json.loads on bytes decodes UTF-8 with surrogatepass), and vLLM's http_exception_handler
 * answers it with type = the status phrase (vllm/entrypoints/serve/utils/server_utils.py @
 * 0753ceeb9cb7). Issue 34, D11. */
static enum MHD_Result send_not_utf8(struct MHD_Connection *c)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "object", "error");
	cJSON_AddStringToObject(j, "message", "There was an error parsing the body");
	cJSON_AddStringToObject(j, "type", "Bad Request");
	cJSON_AddNullToObject(j, "param");
	cJSON_AddNumberToObject(j, "code", 400);
	return send_json(c, 400, j, NULL);
}

static enum MHD_Result send_detail(struct MHD_Connection *c, int status, const char *detail)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "detail", detail);
	return send_json(c, status, j, NULL);
}

static enum MHD_Result get_models(struct sa *s, struct MHD_Connection *c)
{
	cJSON *j = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(j, "data");

	cJSON_AddStringToObject(j, "object", "list");
	for (int i = 0; i < s->o.nserved; i++) {
		cJSON *m = cJSON_CreateObject();

		cJSON_AddStringToObject(m, "id", s->o.served[i]);
		cJSON_AddStringToObject(m, "object", "model");
		cJSON_AddNumberToObject(m, "created", (double)(long long)s->started);
		cJSON_AddStringToObject(m, "owned_by", "vllm");
		cJSON_AddStringToObject(m, "root", s->o.model);
		cJSON_AddNullToObject(m, "parent");
		cJSON_AddNumberToObject(m, "max_model_len", (double)s->o.max_model_len);
		cJSON_AddItemToArray(data, m);
	}
	return send_json(c, 200, j, NULL);
}

struct stream {
	struct sa_http *h;
	struct sa_req r;
	struct mdl_gen g;
	uint64_t t0;
	long long gen, created;
	const char *finish;
	int phase; /* 0 role chunk (chat), 1 tokens, 2 usage, 3 [DONE], 4 end, 5 failed */
	char *pend;
	size_t plen, poff;
	struct MHD_Response *resp; /* for the trailer of a failed KV check */
};

static void stream_set(struct stream *st, cJSON *j)
{
	char *txt = cJSON_PrintUnformatted(j);

	cJSON_Delete(j);
	free(st->pend);
	st->pend = txt ? pd_asprintf("data: %s\n\n", txt) : NULL;
	free(txt);
	st->plen = st->pend ? strlen(st->pend) : 0;
	st->poff = 0;
}

/* A V1 stream whose blocks are still being checked (sa_verify_wait) goes on only once they
 * proved to be the prompt's KV; otherwise it ends with vLLM's streamed error object and no
 * [DONE] (phase 5). true = go on. */
static bool stream_checked(struct stream *st)
{
	cJSON *j, *e;
	int v;

	if (!st->r.verify)
		return true;
	v = sa_verify_wait(&st->r);
	if (!v)
		return true;
	if (v == -EBADMSG) { /* the headers are out: an HTTP trailer marks it (issue 34, N4) */
		st->r.kv_check_failed = true;
		MHD_add_response_footer(st->resp, "X-PDKV-KV-Check", "failed");
	}
	j = cJSON_CreateObject();
	e = cJSON_AddObjectToObject(j, "error");
	cJSON_AddStringToObject(e, "object", "error");
	cJSON_AddStringToObject(e, "message",
	                        v == -EBADMSG ? "the KV cache received for this request is not "
	                                        "the prompt's (checksum mismatch)"
	                                      : "the KV cache received for this request could not "
	                                        "be read");
	cJSON_AddStringToObject(e, "type", "InternalServerError");
	cJSON_AddNullToObject(e, "param");
	cJSON_AddNumberToObject(e, "code", 500);
	stream_set(st, j);
	st->phase = 5;
	atomic_fetch_add(&st->h->s->n.requests_failed, 1);
	return false;
}

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	struct sa *s = st->h->s;
	const char *obj = st->r.chat ? "chat.completion.chunk" : "text_completion";
	cJSON *j;
	(void)pos;

	while (st->poff >= st->plen) {
		if (atomic_load(&s->stopping))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		switch (st->phase) {
		case 0:
			j = sa_resp_head(&st->r, obj, st->created);
			cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "choices"),
			                     sa_resp_choice(&st->r, "", NULL, true, true));
			stream_set(st, j);
			st->phase = 1;
			break;
		case 1: {
			char txt[2] = {0, 0};
			int t;

			if (st->gen >= 1 && !stream_checked(st))
				break;
			t = sa_resp_next_tok(s, &st->r, &st->g, st->t0, &st->gen, &st->finish);

			if (t >= 0)
				txt[0] = (char)t;
			j = sa_resp_head(&st->r, obj, st->created);
			cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "choices"),
			                     sa_resp_choice(&st->r, txt, st->finish, true, false));
			stream_set(st, j);
			if (st->finish) {
				sa_resp_finished(s, &st->r, st->finish);
				st->phase = 2;
			}
			break;
		}
		case 2:
			if (!stream_checked(st))
				break;
			st->phase = 3;
			if (!st->r.include_usage)
				break;
			j = sa_resp_head(&st->r, obj, st->created);
			cJSON_AddArrayToObject(j, "choices");
			cJSON_AddItemToObject(j, "usage", sa_resp_usage(s, &st->r, st->gen));
			stream_set(st, j);
			break;
		case 3:
			free(st->pend);
			st->pend = strdup("data: [DONE]\n\n");
			st->plen = st->pend ? strlen(st->pend) : 0;
			st->poff = 0;
			st->phase = 4;
			break;
		default:
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (!st->pend)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	size_t n = st->plen - st->poff < max ? st->plen - st->poff : max;
	memcpy(buf, st->pend + st->poff, n);
	st->poff += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;
	struct sa *s = st->h->s;

	if (st->r.send_tracked)
		sa_resp_finished(s, &st->r, "abort"); /* client went away before the end */
	sa_verify_wait(&st->r); /* a stream that ended early: its check still holds blocks */
	sa_resp_log(s, &st->r,
	            st->phase == 4   ? 200
	            : st->phase == 5 ? 500
	                             : 499,
	            st->gen, st->finish);
	atomic_fetch_sub(&s->n.running, 1);
	free(st->pend);
	sa_req_free(&st->r);
	free(st);
}

static enum MHD_Result respond(struct sa_http *h, struct MHD_Connection *c, struct sa_req *r)
{
	struct sa *s = h->s;
	long long created = (long long)time(NULL), gen = 0;
	const char *finish = NULL;
	struct mdl_gen g;
	enum MHD_Result ret;

	mdl_gen_init(&g, r->seed, r->ignore_eos);
	if (r->stream) {
		struct stream *st = calloc(1, sizeof(*st));
		struct MHD_Response *resp;

		if (!st)
			return MHD_NO;
		st->h = h;
		st->r = *r;
		memset(r, 0, sizeof(*r)); /* the stream owns the request now */
		st->g = g;
		st->t0 = pd_now_ns();
		st->created = created;
		st->phase = st->r.chat ? 0 : 1;
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_cb, st,
		                                         stream_free);
		if (!resp) {
			stream_free(st);
			return MHD_NO;
		}
		MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
		MHD_add_response_header(resp, "X-Request-Id", st->r.id);
		if (st->r
		        .kv_check_failed) /* checked before the stream began (V0; gen A/B hybrid) */
			MHD_add_response_header(resp, "X-PDKV-KV-Check", "failed");
		else if (st->r.verify) /* checked after the first token: maybe a trailer */
			MHD_add_response_header(resp, "Trailer", "X-PDKV-KV-Check");
		if (st->r.kvp.do_remote_prefill && st->r.kvp.transfer_id[0])
			MHD_add_response_header(resp, "X-PDKV-Transfer-Id", st->r.kvp.transfer_id);
		st->resp = resp;
		ret = MHD_queue_response(c, 200, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	char *text = malloc((size_t)r->max_tokens + 1);
	size_t k = 0;
	uint64_t t0 = pd_now_ns();
	cJSON *j;

	if (!text)
		return send_error(c, 500, "out of memory");
	while (!finish) {
		int t = sa_resp_next_tok(s, r, &g, t0, &gen, &finish);

		if (t >= 0)
			text[k++] = (char)t;
	}
	text[k] = 0;
	sa_resp_finished(s, r, finish);
	j = sa_resp_head(r, r->chat ? "chat.completion" : "text_completion", created);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "choices"),
	                     sa_resp_choice(r, text, finish, false, true));
	cJSON_AddItemToObject(j, "usage", sa_resp_usage(s, r, gen));
	sa_resp_add_kvtp(s, j, r);
	free(text);
	ret = send_json(c, 200, j, r);
	sa_resp_log(s, r, 200, gen, finish);
	atomic_fetch_sub(&s->n.running, 1);
	return ret;
}

static enum MHD_Result completion(struct sa_http *h, struct MHD_Connection *c, struct conn *cn,
                                  bool chat)
{
	struct sa *s = h->s;
	struct sa_req r;
	char *msg_alloc = NULL;
	const char *msg = NULL;
	int status;
	enum MHD_Result ret;

	atomic_fetch_add(&s->n.requests, 1);
	if (s->o.fault.fail_marker[0] && cn->body &&
	    memmem(cn->body, cn->len, s->o.fault.fail_marker, strlen(s->o.fault.fail_marker))) {
		atomic_fetch_add(&s->n.requests_failed, 1);
		pd_info("request failed on purpose (--fault fail-marker=%s)",
		        s->o.fault.fail_marker);
		cn->status = 500;
		return send_error(c, 500, "injected failure (--fault fail-marker)");
	}
	if (s->o.fault.fail_after >= 0 &&
	    atomic_fetch_add(&h->completions, 1) >= s->o.fault.fail_after) {
		atomic_fetch_add(&s->n.requests_failed, 1);
		pd_info("request failed on purpose (--fault fail-after=%d)", s->o.fault.fail_after);
		cn->status = 500;
		return send_error(c, 500, "injected failure (--fault fail-after)");
	}
	status = sa_req_parse(s, cn->body, cn->len, chat,
	                      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id"), &r,
	                      &msg_alloc);
	if (status) {
		atomic_fetch_add(&s->n.requests_failed, 1);
		pd_info("request rejected (%d): %s", status, msg_alloc ? msg_alloc : "?");
		cn->status = status;
		ret = send_error(c, status, msg_alloc ? msg_alloc : "bad request");
		free(msg_alloc);
		return ret;
	}
	{
		const char *dh =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-data-parallel-rank");
		int64_t dv;

		r.dp_header =
		    dh && !pd_parse_i64(dh, &dv) && dv >= 0 && dv < s->o.dp ? (int)dv : -1;
		r.dp = r.dp_header >= 0 ? r.dp_header
		                        : (int)(atomic_fetch_add(&s->dp_rr, 1) % (unsigned)s->o.dp);
		sa_v1_engine_id(s, &r);
	}
	atomic_fetch_add(&s->n.running, 1);
	atomic_fetch_add(&s->n.prompt_tokens, r.ntok);
	status = sa_prefill(s, &r, &msg, &msg_alloc);
	if (status) {
		atomic_fetch_add(&s->n.requests_failed, 1);
		atomic_fetch_sub(&s->n.running, 1);
		sa_resp_log(s, &r, status, 0, NULL);
		cn->status = status;
		/* the request's headers too: whose transfer_id failed (issue 34, N3) */
		ret = send_error_r(c, status, msg_alloc ? msg_alloc : msg, &r);
		free(msg_alloc);
		sa_req_free(&r);
		return ret;
	}
	cn->status = 200;
	ret = respond(h, c, &r);
	sa_verify_wait(&r); /* a stream that could not be set up still had a check running */
	sa_req_free(&r);
	return ret;
}

static bool authorized(struct sa *s, struct MHD_Connection *c)
{
	const char *a;

	if (!s->o.api_key)
		return true;
	a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	return a && !strncmp(a, "Bearer ", 7) && !strcmp(a + 7, s->o.api_key);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	struct sa_http *h = cls;
	struct sa *s = h->s;
	struct conn *cn = *con_cls;
	bool post = !strcmp(method, "POST"), get = !strcmp(method, "GET");
	(void)version;

	if (!cn) {
		pd_mhdhdr_headers_done(c); /* the header deadline stops here (issue 34, D6) */
		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return MHD_NO;
		*con_cls = cn;
		cn->counted = true;
		cn->t_arrival = sa_record_now();
		atomic_fetch_add(&s->n.inflight, 1);
		body_reserve(h, c, cn);
		return MHD_YES;
	}
	if (*upload_size) {
		enum MHD_Result r = body_add(h, cn, upload, *upload_size);
		*upload_size = 0;
		return r;
	}
	if (!strcmp(url, "/health")) {
		if (!get)
			return send_detail(c, 405, "Method Not Allowed");
		return sa_ready(s) ? queue(c, 200, "application/json", "", 0, NULL)
		                   : queue(c, 503, "application/json", "", 0, NULL);
	}
	if (!strcmp(url, "/metrics"))
		return queue_owned(c, "text/plain; version=0.0.4; charset=utf-8",
		                   sa_metrics_text(s));
	if (!strcmp(url, "/pdkv/handoffs") && get) { /* per-request hand-offs: pdkv bench serve */
		const char *a = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");

		return queue_owned(c, "application/json",
		                   sa_metrics_handoffs_json(s, a ? strtoull(a, NULL, 10) : 0));
	}
	if (!strcmp(url, "/version") && get)
		return queue(c, 200, "application/json",
		             "{\"version\":\"pdkv-standin " SA_VERSION "\"}",
		             strlen("{\"version\":\"pdkv-standin " SA_VERSION "\"}"), NULL);
	if (!strcmp(url, "/v1/models") || !strcmp(url, "/v1/completions") ||
	    !strcmp(url, "/v1/chat/completions")) {
		bool models = !strcmp(url, "/v1/models");

		if ((models && !get) || (!models && !post))
			return send_detail(c, 405, "Method Not Allowed");
		if (!authorized(s, c)) {
			cJSON *j = cJSON_CreateObject();

			cJSON_AddStringToObject(j, "error", "Unauthorized");
			return send_json(c, 401, j, NULL);
		}
		if (models)
			return get_models(s, c);
		if (atomic_load(&s->stopping))
			return send_error(c, 503, "server is shutting down");
		if (cn->too_big || cn->busy)
			return send_body_refused(h, c, cn);
		if (pd_utf8_invalid_at(cn->body, cn->len, true) >= 0)
			return send_not_utf8(c);
		enum MHD_Result ret;
		cn->rec = sa_record_begin(c, url, cn->body, cn->len, cn->t_arrival);
		ret = completion(h, c, cn, !strcmp(url, "/v1/chat/completions"));
		sa_record_answered(cn->rec, cn->status);
		return ret;
	}
	return send_detail(c, 404, "Not Found");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct sa_http *h = cls;
	struct conn *cn = *con_cls;
	(void)toe;

	pd_mhdhdr_request_done(c);
	if (!cn)
		return;
	if (cn->counted)
		atomic_fetch_sub(&h->s->n.inflight, 1);
	atomic_fetch_sub(&h->body_bytes, (int64_t)cn->held);
	sa_record_end(cn->rec);
	free(cn->body);
	free(cn);
	*con_cls = NULL;
}

int sa_http_start(struct sa *s, struct sa_http **out, int *bound_port)
{
	struct sa_http *h = calloc(1, sizeof(*h));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!h)
		return -ENOMEM;
	h->s = s;
	h->lfd = pd_tcp_listen(s->o.host, s->o.port, 512); /* SO_REUSEADDR */
	if (h->lfd < 0) {
		int ret = h->lfd;

		free(h);
		return ret;
	}
	if (getsockname(h->lfd, (struct sockaddr *)&ss, &sl) == 0)
		*bound_port = ss.ss_family == AF_INET6
		                  ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	/* our limiter refuses (and logs) first; MHD's limits stay as a backstop above it */
	h->lim = pd_connlim_new("pdkv-standin", s->o.max_conns, s->o.max_conns_per_client);
	if (h->lim && !pd_connlim_header_deadline(h->lim, s->o.idle_timeout_s))
		h->d = MHD_start_daemon(
		    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
		        MHD_USE_ITC | MHD_USE_ERROR_LOG,
		    0, pd_connlim_accept, h->lim, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
		    pd_mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, h->lfd, MHD_OPTION_NOTIFY_COMPLETED,
		    on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, pd_connlim_notify, h->lim,
		    MHD_OPTION_CONNECTION_LIMIT, s->o.max_conns + 16,
		    MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->o.max_conns_per_client + 16,
		    MHD_OPTION_CONNECTION_TIMEOUT, s->o.idle_timeout_s,
		    MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
	if (!h->d) {
		pd_connlim_free(h->lim);
		close(h->lfd);
		free(h);
		return -EIO;
	}
	*out = h;
	return 0;
}

int sa_http_quiesce(struct sa_http *h, int grace_ms)
{
	uint64_t end = pd_now_ns() + (uint64_t)grace_ms * 1000000ULL;
	int fd = MHD_quiesce_daemon(h->d);

	if (fd >= 0) {
		close(fd);
		h->lfd = -1;
	}
	while (atomic_load(&h->s->n.running) > 0 && pd_now_ns() < end)
		pd_sleep_ms(10);
	return atomic_load(&h->s->n.running);
}

void sa_http_stop(struct sa_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	if (h->lfd >= 0)
		close(h->lfd);
	pd_connlim_free(h->lim);
	free(h);
}
