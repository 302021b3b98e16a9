/* SPDX-License-Identifier: Apache-2.0 */
/* px_flow: one completion under the server's contract — prefill then decode (v0, toy) or both
 * at once (mooncake) — and the decode passthrough that never lets a broken answer look whole. */
#include "px_srv.h"
#include "px_fault.h"
#include "pd_log.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define P_KEEP_ERR (64u << 10) /* prefill error text kept for a 4xx passthrough */

/* ---- decode passthrough ---- */

/* The decode answer broke after its status went to the client: say why, once. */
static void stream_cut(struct px_req *r)
{
	struct px_server *s = r->srv;
	pthread_mutex_lock(&r->mu);
	if (r->p_state == PX_P_FAILED)
		snprintf(r->cut_why, sizeof(r->cut_why), "prefill %.200s failed: %.100s", r->p_url,
		         r->p_reason);
	else
		snprintf(r->cut_why, sizeof(r->cut_why), "decode %.200s: %.100s",
		         r->d_idx >= 0 ? s->o.decode[r->d_idx] : "-", px_stream_error(r->st));
	pthread_mutex_unlock(&r->mu);
	r->cut = 1;
	__atomic_add_fetch(&s->n_stream_cut, 1, __ATOMIC_RELAXED);
	pd_warn("decode stream cut after %" PRIu64 " bytes to the client: %s (rid=%s)",
	        r->bytes_out, r->cut_why, r->rid);
}

/* The SSE error event that ends a cut stream (no [DONE] follows, the connection closes). */
static ssize_t cut_event(struct px_req *r, char *buf, size_t max)
{
	cJSON *o = cJSON_CreateObject(), *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
	char *js = NULL;
	int n = -1;
	if (e && cJSON_AddStringToObject(e, "message", r->cut_why) &&
	    cJSON_AddStringToObject(e, "type", "BadGateway") &&
	    cJSON_AddNumberToObject(e, "code", 502))
		js = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	/* a half-sent event is closed first, so the error is an event of its own */
	if (js)
		n = snprintf(
		    buf, max, "%sdata: %s\n\n",
		    r->bytes_out && (r->tail[0] != '\n' || r->tail[1] != '\n') ? "\n\n" : "", js);
	free(js);
	r->cut_sent = 1;
	if (n <= 0 || (size_t)n >= max)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	r->bytes_out += (uint64_t)n;
	return n;
}

static ssize_t reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct px_req *r = cls;
	long n;
	int p_failed;
	(void)pos;
	if (r->cut_sent)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = px_stream_read(r->st, buf, max);
	pthread_mutex_lock(&r->mu);
	/* once prefill failed, decode's output is not passed on (it may be a recompute) */
	p_failed = r->p_state == PX_P_FAILED;
	if (!p_failed && n >= 0 &&
	    (n == 0 || (r->st->content_length >= 0 &&
	                r->bytes_out + (uint64_t)n >= (uint64_t)r->st->content_length)))
		r->d_complete = 1;
	pthread_mutex_unlock(&r->mu);
	if (n > 0 && !p_failed) {
		if (n >= 2)
			memcpy(r->tail, buf + n - 2, 2);
		else
			r->tail[0] = r->tail[1], r->tail[1] = buf[0];
		r->bytes_out += (uint64_t)n;
		return n;
	}
	if (n == 0 && !p_failed)
		return MHD_CONTENT_READER_END_OF_STREAM;
	stream_cut(r);
	return r->sse ? cut_event(r, buf, max) : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void reader_free(void *cls)
{
	struct px_req *r = cls;
	/* the client is done (or gone): stop the backend call now, not when it finishes */
	px_stream_cancel(r->st);
	px_req_unref(r);
}

/* A failed prefill, as the client must see it: a 4xx is the client's fault and passes
 * through as is (so load balancers do not retry it); anything else is a 502. */
static enum MHD_Result prefill_failed(struct MHD_Connection *c, struct px_req *r)
{
	struct px_answer *a = &r->p_ans;
	__atomic_add_fetch(&r->srv->n_prefill_fail, 1, __ATOMIC_RELAXED);
	snprintf(r->p_note, sizeof(r->p_note), "FAIL(%d)", r->p_status);
	if (a->complete && r->p_status >= 400 && r->p_status <= 499) {
		pd_info("prefill %s refused the request: %s (rid=%s); passed to the client",
		        r->p_url, r->p_reason, r->rid);
		if (a->len && !a->truncated && strlen(a->body) == a->len)
			return px_send_body(c, r, r->p_status,
			                    a->ctype[0] ? a->ctype : "application/json", a->body);
		return px_send_error(c, r, r->p_status, "BadRequestError", "prefill %s: %s",
		                     r->p_url, r->p_reason);
	}
	/* no fall-through: decoding now would silently recompute the prompt */
	return px_send_error(c, r, 502, "BadGateway", "prefill %s: %s", r->p_url, r->p_reason);
}

static int prefill_has_failed(struct px_req *r)
{
	int f;
	pthread_mutex_lock(&r->mu);
	f = r->p_state == PX_P_FAILED;
	pthread_mutex_unlock(&r->mu);
	return f;
}

enum MHD_Result px_relay(struct MHD_Connection *c, struct px_req *r, int idx, const char *endpoint,
                         const char *method, const char *body, size_t len)
{
	struct px_server *s = r->srv;
	struct MHD_Response *resp;
	char url[PX_URL_MAX + 64];
	struct px_call call = {
	    .url = url,
	    .method = method,
	    .body = body,
	    .body_len = len,
	    .request_id = r->rid,
	    .authorization = r->auth,
	    .timeout_ms = s->o.decode_timeout_ms,
	    .connect_timeout_ms = s->o.connect_timeout_ms,
	};
	const char *ct;
	enum MHD_Result ret;
	int status, failed;

	snprintf(url, sizeof(url), "%s%s", s->o.decode[idx], endpoint);
	r->d_idx = idx;
	r->st = calloc(1, sizeof(*r->st));
	if (!r->st)
		return px_send_error(c, r, 500, "InternalServerError", "out of memory");
	if (px_stream_start(r->st, &call, s->o.queue_bytes))
		return px_send_error(c, r, 500, "InternalServerError",
		                     "decode %s: cannot start call", url);
	pthread_mutex_lock(&r->mu);
	r->d_started = 1; /* from here a failing concurrent prefill cancels this call */
	failed = r->p_state == PX_P_FAILED;
	pthread_mutex_unlock(&r->mu);
	if (failed)
		px_stream_cancel(r->st);
	status = px_stream_wait_headers(r->st);
	ct = status ? px_stream_header(r->st, "Content-Type", NULL) : NULL;
	r->sse = ct && !strncasecmp(ct, "text/event-stream", 17);
	/* a whole JSON answer that fits the queue is checked complete before its status goes
	 * out, so a decode that dies mid-answer is a 502, not a short 200 */
	if (status >= 200 && status <= 599 && !r->sse && r->st->content_length >= 0 &&
	    (uint64_t)r->st->content_length <= s->o.queue_bytes &&
	    px_stream_wait_body(r->st, (size_t)r->st->content_length) && !prefill_has_failed(r))
		return px_send_error(c, r, 502, "BadGateway", "decode %s: answer cut short: %s",
		                     url, px_stream_error(r->st));
	pthread_mutex_lock(&r->mu);
	failed = r->p_state == PX_P_FAILED;
	r->committed = !failed && status >= 200 && status <= 599;
	pthread_mutex_unlock(&r->mu);
	if (failed) {
		px_stream_cancel(r->st);
		return prefill_failed(c, r);
	}
	if (!r->committed)
		return px_send_error(c, r, 502, "BadGateway", "decode %s: %s", url,
		                     px_stream_error(r->st));
	resp = MHD_create_response_from_callback(
	    r->st->content_length >= 0 ? (uint64_t)r->st->content_length : MHD_SIZE_UNKNOWN,
	    16 * 1024, reader_cb, r, reader_free);
	if (!resp)
		return px_send_error(c, r, 500, "InternalServerError", "out of memory");
	px_req_ref(r); /* dropped in reader_free */
	for (int i = 0; i < r->st->n_hdr; i++) {
		char *h = r->st->hdr[i], *colon = strchr(h, ':'), *v;
		if (!colon)
			continue;
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		MHD_add_response_header(resp, h, v);
		*colon = ':';
	}
	MHD_add_response_header(resp, "X-Request-Id", r->rid);
	r->status = status;
	r->responded = 1;
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- prefill ---- */

static void call_for(struct px_req *r, struct px_call *c, const char *body, const char *extra)
{
	memset(c, 0, sizeof(*c));
	c->url = r->p_url;
	c->method = "POST";
	c->body = body;
	c->body_len = strlen(body);
	c->request_id = r->rid;
	c->authorization = r->auth;
	c->extra_header = extra;
	c->timeout_ms = r->srv->o.prefill_timeout_ms;
	c->connect_timeout_ms = r->srv->o.connect_timeout_ms;
}

/* The prefill answer into r (under r->mu for the concurrent case). */
static void record_prefill(struct px_req *r, int ret, struct px_answer *a, const char *why)
{
	r->p_status = a->status;
	r->p_ans = *a;
	snprintf(r->p_reason, sizeof(r->p_reason), "%s", ret ? why : "");
	if (!ret)
		snprintf(r->p_note, sizeof(r->p_note), "%d", a->status);
	else
		snprintf(r->p_note, sizeof(r->p_note), "FAIL(%d)", a->status);
	r->p_state = ret ? PX_P_FAILED : PX_P_OK;
}

struct pjob {
	struct px_req *r;
	char *body;
};

/* A concurrent prefill: its failure cancels decode, or cuts its stream, or (decode already
 * answered the client) is logged and counted; never silent. */
static void *prefill_main(void *arg)
{
	struct pjob *j = arg;
	struct px_req *r = j->r;
	struct px_server *s = r->srv;
	struct px_call c;
	struct px_answer a;
	char why[400];
	uint64_t t = pd_now_ns();
	int ret, late = 0, committed;

	call_for(r, &c, j->body, r->p_extra[0] ? r->p_extra : NULL);
	ret = px_fetch(&c, P_KEEP_ERR, &a, why, sizeof(why));
	if (ret && (s->o.faults & PX_FAULT_IGNORE_PREFILL_ERRORS)) {
		/* what mooncake_connector_proxy.py does: the prefill task's exception is unobserved
		 */
		pd_warn("--fault ignore-prefill-errors: prefill %s failed: %s (rid=%s); ignored",
		        r->p_url, why, r->rid);
		ret = 0;
	}
	pthread_mutex_lock(&r->mu);
	r->p_ms = (pd_now_ns() - t) / 1e6;
	record_prefill(r, ret, &a, why);
	committed = r->committed;
	if (ret && r->d_complete)
		late = r->late_fail = 1;
	else if (ret && r->d_started)
		px_stream_cancel(r->st);
	pthread_mutex_unlock(&r->mu);
	if (ret && committed) {
		/* before commit the request's own thread answers the client with the error */
		__atomic_add_fetch(&s->n_prefill_fail, 1, __ATOMIC_RELAXED);
		if (late) {
			__atomic_add_fetch(&s->n_prefill_fail_late, 1, __ATOMIC_RELAXED);
			pd_warn("prefill %s failed after decode had answered the client: %s "
			        "(rid=%s; that answer may be a recompute)",
			        r->p_url, why, r->rid);
		} else {
			pd_warn("prefill %s failed while decode was answering: %s (rid=%s); "
			        "cutting the decode stream",
			        r->p_url, why, r->rid);
		}
	}
	free(j->body);
	free(j);
	px_req_unref(r);
	pthread_mutex_lock(&s->mu);
	s->bg--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int start_prefill(struct px_req *r, char *body)
{
	struct px_server *s = r->srv;
	struct pjob *j = calloc(1, sizeof(*j));
	pthread_attr_t at;
	pthread_t t;
	int ret;
	if (!j) {
		free(body);
		return -ENOMEM;
	}
	j->r = r;
	j->body = body;
	r->p_state = PX_P_RUNNING;
	px_req_ref(r);
	pthread_mutex_lock(&s->mu);
	s->bg++;
	pthread_mutex_unlock(&s->mu);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &at, prefill_main, j);
	pthread_attr_destroy(&at);
	if (ret) {
		r->p_state = PX_P_NONE;
		pthread_mutex_lock(&s->mu);
		s->bg--;
		pthread_mutex_unlock(&s->mu);
		px_req_unref(r);
		free(j->body);
		free(j);
		return -ret;
	}
	return 0;
}

/* ---- the flow ---- */

/* The decode body: the client's bytes, plus the kv_transfer_params the contract wants. */
static enum MHD_Result decode_with(struct MHD_Connection *c, struct px_req *r, const char *ep,
                                   char *params)
{
	struct px_server *s = r->srv;
	char *dbody = NULL;
	size_t dlen = 0;
	enum MHD_Result ret;
	int idx =
	    (int)(__atomic_fetch_add(&s->rr_decode, 1, __ATOMIC_RELAXED) % (unsigned)s->o.n_decode);
	if (params &&
	    px_json_with_key(r->body, r->len, "kv_transfer_params", params, &dbody, &dlen)) {
		free(params);
		return px_send_error(c, r, 500, "InternalServerError",
		                     "cannot build the decode body");
	}
	free(params);
	ret = dbody ? px_relay(c, r, idx, ep, "POST", dbody, dlen)
	            : px_relay(c, r, idx, ep, "POST", r->body, r->len);
	free(dbody);
	return ret;
}

/* P answers first, then decode is called; meet: 1 or 2 in the first pair of --fault
 * reuse-transfer-id, whose calls go in the order px_fault_first_pair_prefill sets */
static enum MHD_Result sequential(struct MHD_Connection *c, struct px_req *r, const char *ep,
                                  char *pbody, struct px_xfer *x, int meet)
{
	struct px_server *s = r->srv;
	const struct px_contract *k = s->ct;
	struct px_call call;
	struct px_answer a;
	char why[400];
	char *params = NULL;
	uint64_t t = pd_now_ns();
	int ret;
	enum MHD_Result mret;

	if (meet)
		px_fault_first_pair_prefill(meet, false, PX_FAULT_MEET_MS);
	call_for(r, &call, pbody, r->p_extra[0] ? r->p_extra : NULL);
	ret = px_fetch(&call, k->keep_p_answer ? s->o.max_body : P_KEEP_ERR, &a, why, sizeof(why));
	r->p_ms = (pd_now_ns() - t) / 1e6;
	free(pbody);
	record_prefill(r, ret, &a, why);
	if (meet)
		px_fault_first_pair_prefill(meet, true, PX_FAULT_MEET_MS);
	if (ret)
		return prefill_failed(c, r);
	if (k->keep_p_answer) {
		cJSON *pa = a.truncated ? NULL : cJSON_ParseWithLength(a.body, a.len);
		ret = a.truncated ? -EPROTO : k->decode_params(x, pa, &params, why, sizeof(why));
		if (a.truncated)
			snprintf(why, sizeof(why), "answer larger than --max-body %" PRIu64,
			         s->o.max_body);
		cJSON_Delete(pa);
		if (ret == -ENOMEM)
			return px_send_error(c, r, 500, "InternalServerError", "out of memory");
		if (ret) {
			__atomic_add_fetch(&s->n_prefill_fail, 1, __ATOMIC_RELAXED);
			snprintf(r->p_note, sizeof(r->p_note), "BAD(%d)", a.status);
			return px_send_error(c, r, 502, "BadGateway", "prefill %s: %s", r->p_url,
			                     why);
		}
	} else if ((ret = k->decode_params(x, NULL, &params, why, sizeof(why)))) {
		return px_send_error(c, r, 500, "InternalServerError", "cannot build decode body");
	}
	mret = decode_with(c, r, ep, params);
	if (meet == 1)
		px_fault_first_pair_decoded();
	return mret;
}

static enum MHD_Result concurrent(struct MHD_Connection *c, struct px_req *r, const char *ep,
                                  char *pbody, struct px_xfer *x)
{
	char *params = NULL, why[200];
	if (r->srv->ct->decode_params(x, NULL, &params, why, sizeof(why))) {
		free(pbody);
		return px_send_error(c, r, 500, "InternalServerError", "out of memory");
	}
	if (start_prefill(r, pbody)) {
		free(params);
		return px_send_error(c, r, 500, "InternalServerError",
		                     "cannot start the prefill call");
	}
	return decode_with(c, r, ep, params);
}

/* The body must be one JSON object; 0 or an answer already queued (*ret). */
static cJSON *parse_body(struct MHD_Connection *c, struct px_req *r, enum MHD_Result *ret)
{
	const char *end = NULL;
	cJSON *root;
	if (!r->body || !r->len) {
		*ret = px_send_error(c, r, 400, "BadRequestError",
		                     "request body is empty; expected a JSON object");
		return NULL;
	}
	root = cJSON_ParseWithOpts(r->body, &end, 1);
	if (!root) {
		char near[40] = "";
		const char *e = cJSON_GetErrorPtr();
		for (size_t i = 0; e && i < sizeof(near) - 1 && e[i]; i++)
			near[i] =
			    (unsigned char)e[i] < ' ' || (unsigned char)e[i] >= 0x7f ? ' ' : e[i];
		*ret = px_send_error(c, r, 400, "BadRequestError", "invalid JSON body near \"%s\"",
		                     near);
		return NULL;
	}
	if (end != r->body + r->len || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		*ret =
		    px_send_error(c, r, 400, "BadRequestError",
		                  end != r->body + r->len ? "invalid JSON body: a NUL byte inside"
		                                          : "request body must be a JSON object");
		return NULL;
	}
	return root;
}

enum MHD_Result px_do_completion(struct MHD_Connection *c, struct px_req *r)
{
	struct px_server *s = r->srv;
	const struct px_contract *k = s->ct;
	const char *ep = r->route == PX_R_CHAT ? "/v1/chat/completions" : "/v1/completions";
	struct px_xfer x = {.rid = r->rid, .dp_rank = -1};
	struct px_pair pair = {0};
	enum MHD_Result ret = MHD_NO;
	cJSON *root;
	char *pbody;
	int meet = 0;

	if (k->readiness && !px_ready_ok(s->ready)) {
		/* what mooncake_connector_proxy.py answers before all prefills are ready */
		return px_send_body(c, r, 503, "application/json",
		                    "{\"detail\":\"Service Unavailable\"}");
	}
	if (!(root = parse_body(c, r, &ret)))
		return ret;
	if (k->readiness) {
		char why[640];

		px_ready_pick(s->ready, &pair);
		r->p_idx = pair.prefill;
		r->dp_rank = pair.dp_rank;
		/* The original keeps this rank's turn in its round robin and the decode would wait
		 * for a worker that never answers; pdkv keeps the turn but fails it at once. */
		if (px_ready_rank_check(s->ready, &pair, why, sizeof(why))) {
			cJSON_Delete(root);
			__atomic_add_fetch(&s->n_prefill_fail, 1, __ATOMIC_RELAXED);
			snprintf(r->p_note, sizeof(r->p_note), "RANK-DOWN");
			return px_send_error(c, r, 503, "ServiceUnavailable", "%s", why);
		}
		r->dp_rank = x.dp_rank = pair.dp_rank;
		x.engine_id = pair.engine_id;
		x.bootstrap_addr = pair.bootstrap_addr;
		snprintf(x.transfer_id, sizeof(x.transfer_id), "xfer-%.36s", r->rid);
		if (s->o.faults & PX_FAULT_REUSE_TRANSFER_ID)
			meet = px_fault_transfer_id(x.transfer_id, sizeof(x.transfer_id));
	} else {
		r->p_idx = (int)(__atomic_fetch_add(&s->rr_prefill, 1, __ATOMIC_RELAXED) %
		                 (unsigned)s->o.n_prefill);
	}
	snprintf(r->p_url, sizeof(r->p_url), "%s%s", s->o.prefill[r->p_idx], ep);
	if (k->dp_header && x.dp_rank >= 0)
		snprintf(r->p_extra, sizeof(r->p_extra), "X-data-parallel-rank: %d", x.dp_rank);
	pbody = px_contract_prefill_body(k, root, &x);
	cJSON_Delete(root);
	if (!pbody)
		return px_send_error(c, r, 500, "InternalServerError", "out of memory");
	return k->concurrent && !meet ? concurrent(c, r, ep, pbody, &x)
	                              : sequential(c, r, ep, pbody, &x, meet);
}
