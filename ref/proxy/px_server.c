/* px_server: pdkv-proxy's front end on libmicrohttpd (a thread per connection) — routes, body
 * limits, prefill-then-decode ordering, error JSON, request ids and the access log. */
#include "px.h"
#include "px_fwd.h"
#include "pd_log.h"
#include "pd_util.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

struct px_server {
	struct MHD_Daemon *d;
	struct px_opts o;
	unsigned rr_prefill, rr_decode; /* round-robin cursors (atomic) */
};

enum route { R_NONE, R_COMPLETIONS, R_CHAT, R_HEALTH, R_MODELS };

/* One request. Referenced by the connection and, while streaming, by the response; the last
 * reference writes the access log line. */
struct px_req {
	int refs;
	struct px_server *srv;
	enum route route;
	char method[8], path[72];
	char *body;
	size_t len, cap;
	int responded; /* a response is queued (e.g. 413 before the upload) */
	int reject;    /* 413 or 500 decided during the upload, sent after it */
	char rid[80];
	char *auth;
	int status;
	int p_idx, d_idx; /* backend indexes, -1 = not used */
	char p_note[64];  /* "200" or "FAIL" */
	double p_ms;
	struct px_stream *st;
	int toe; /* MHD termination code */
	uint64_t t0_ns, bytes_out;
};

static void access_log(struct px_req *r)
{
	struct px_server *s = r->srv;
	char dec[160] = "decode=-";
	if (r->st) {
		struct px_stream *st = r->st;
		double ttfb = st->t_first_ns ? (st->t_first_ns - st->t_start_ns) / 1e6 : -1;
		double tot = st->t_end_ns ? (st->t_end_ns - st->t_start_ns) / 1e6 : -1;
		snprintf(dec, sizeof(dec), "decode=%s %d ttfb=%.1fms total=%.1fms",
		         r->d_idx >= 0 ? s->o.decode[r->d_idx] : "-", st->status, ttfb, tot);
	}
	/* health pollers would drown the log: their lines are debug */
	pd_log_msg(r->route == R_HEALTH && r->status == 200 ? PD_LOG_DEBUG : PD_LOG_INFO,
	           "%s %s %d rid=%s prefill=%s %s %.1fms %s in=%zuB out=%" PRIu64 "B time=%.1fms%s",
	           r->method, r->path, r->status, r->rid[0] ? r->rid : "-",
	           r->p_idx >= 0 ? s->o.prefill[r->p_idx] : "-", r->p_idx >= 0 ? r->p_note : "-",
	           r->p_ms, dec, r->len, r->bytes_out, (pd_now_ns() - r->t0_ns) / 1e6,
	           r->toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? ""
	                                                         : " (client gone or aborted)");
}

static void req_unref(struct px_req *r)
{
	if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (r->st)
		px_stream_finish(r->st); /* joins, so the decode times below are final */
	if (r->status)
		access_log(r);
	free(r->st);
	free(r->body);
	free(r->auth);
	free(r);
}

static char *json_error(int code, const char *type, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;
	if (o && cJSON_AddStringToObject(o, "object", "error") &&
	    cJSON_AddStringToObject(o, "message", msg) &&
	    cJSON_AddStringToObject(o, "type", type) && cJSON_AddNumberToObject(o, "code", code))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static enum MHD_Result send_body(struct MHD_Connection *c, struct px_req *r, int status,
                                 const char *ctype, const char *body)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t n = body ? strlen(body) : 0;
	resp =
	    MHD_create_response_from_buffer(n, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	if (r->rid[0])
		MHD_add_response_header(resp, "X-Request-Id", r->rid);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	r->status = status;
	r->bytes_out = n;
	r->responded = 1;
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, struct px_req *r, int status,
                                  const char *type, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum MHD_Result send_error(struct MHD_Connection *c, struct px_req *r, int status,
                                  const char *type, const char *fmt, ...)
{
	char msg[768];
	char *js;
	enum MHD_Result ret;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	js = json_error(status, type, msg);
	ret = send_body(c, r, status, "application/json", js ? js : "{\"object\":\"error\"}");
	free(js);
	if (status >= 500)
		pd_warn("%s %s -> %d: %s (rid=%s)", r->method, r->path, status, msg, r->rid);
	return ret;
}

/* ---- request ids ---- */

static int rid_ok(const char *v)
{
	size_t n = strlen(v);
	if (!n || n >= 72)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)v[i]) || strchr("-_.:", v[i])))
			return 0;
	return 1;
}

static void rid_new(char *out, size_t sz)
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = pd_now_ns() ^ ((uint64_t)getpid() << 32);
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)(i * 37);
	}
	b[6] = (b[6] & 0x0f) | 0x40; /* uuid4 layout, as the toy proxy's uuid.uuid4() */
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, sz, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
	         b[13], b[14], b[15]);
}

/* ---- decode passthrough ---- */

static ssize_t reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct px_req *r = cls;
	long n = px_stream_read(r->st, buf, max);
	(void)pos;
	if (n > 0) {
		r->bytes_out += (uint64_t)n;
		return n;
	}
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void reader_free(void *cls)
{
	struct px_req *r = cls;
	/* the client is done (or gone): stop the backend call now, not when it finishes */
	px_stream_cancel(r->st);
	req_unref(r);
}

/* Sends the call to decode backend idx and answers the client with whatever decode says. */
static enum MHD_Result relay(struct MHD_Connection *c, struct px_req *r, int idx,
                             const char *endpoint, const char *method, const char *body, size_t len)
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
	enum MHD_Result ret;
	int status;

	snprintf(url, sizeof(url), "%s%s", s->o.decode[idx], endpoint);
	r->d_idx = idx;
	r->st = calloc(1, sizeof(*r->st));
	if (!r->st)
		return send_error(c, r, 500, "InternalServerError", "out of memory");
	if (px_stream_start(r->st, &call, s->o.queue_bytes))
		return send_error(c, r, 500, "InternalServerError", "decode %s: cannot start call",
		                  url);
	status = px_stream_wait_headers(r->st);
	if (status < 200 || status > 599)
		return send_error(c, r, 502, "BadGateway", "decode %s: %s", url,
		                  px_stream_error(r->st));
	resp = MHD_create_response_from_callback(
	    r->st->content_length >= 0 ? (uint64_t)r->st->content_length : MHD_SIZE_UNKNOWN,
	    16 * 1024, reader_cb, r, reader_free);
	if (!resp)
		return send_error(c, r, 500, "InternalServerError", "out of memory");
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_ACQ_REL); /* dropped in reader_free */
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

/* ---- routes ---- */

/* Keys are matched case-sensitively and every duplicate goes: Python's json keeps the LAST of
 * duplicate keys, so a left-over "max_tokens" would silently win on the backend. */
static void del_all(cJSON *o, const char *key)
{
	while (cJSON_GetObjectItemCaseSensitive(o, key))
		cJSON_DeleteItemFromObjectCaseSensitive(o, key);
}

static int set_item(cJSON *o, const char *key, cJSON *v)
{
	if (!v)
		return -ENOMEM;
	del_all(o, key);
	if (!cJSON_AddItemToObject(o, key, v)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	return 0;
}

/* The guide's recipe: the same request with max_tokens=1, not streamed (toy proxy: also
 * max_completion_tokens=1 when present, stream_options removed). */
static char *prefill_body(const cJSON *root)
{
	cJSON *p = cJSON_Duplicate(root, 1);
	char *out = NULL;
	if (!p)
		return NULL;
	if (set_item(p, "max_tokens", cJSON_CreateNumber(1)) ||
	    set_item(p, "stream", cJSON_CreateFalse()))
		goto out;
	if (cJSON_GetObjectItemCaseSensitive(p, "max_completion_tokens") &&
	    set_item(p, "max_completion_tokens", cJSON_CreateNumber(1)))
		goto out;
	del_all(p, "stream_options");
	out = cJSON_PrintUnformatted(p);
out:
	cJSON_Delete(p);
	return out;
}

static enum MHD_Result do_completion(struct MHD_Connection *c, struct px_req *r)
{
	struct px_server *s = r->srv;
	const char *ep = r->route == R_CHAT ? "/v1/chat/completions" : "/v1/completions";
	const char *end = NULL;
	cJSON *root;
	char *pbody = NULL, reason[400], url[PX_URL_MAX + 64];
	enum MHD_Result ret;
	int pst = 0, idx;
	uint64_t t;

	if (!r->body || !r->len)
		return send_error(c, r, 400, "BadRequestError",
		                  "request body is empty; expected a JSON object");
	root = cJSON_ParseWithOpts(r->body, &end, 1);
	if (!root) {
		char near[40] = "";
		const char *e = cJSON_GetErrorPtr();
		for (size_t i = 0; e && i < sizeof(near) - 1 && e[i]; i++)
			near[i] =
			    (unsigned char)e[i] < ' ' || (unsigned char)e[i] >= 0x7f ? ' ' : e[i];
		return send_error(c, r, 400, "BadRequestError", "invalid JSON body near \"%s\"",
		                  near);
	}
	if (end != r->body + r->len || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return send_error(c, r, 400, "BadRequestError",
		                  end != r->body + r->len ? "invalid JSON body: a NUL byte inside"
		                                          : "request body must be a JSON object");
	}
	pbody = prefill_body(root);
	cJSON_Delete(root);
	if (!pbody)
		return send_error(c, r, 500, "InternalServerError", "out of memory");

	idx = (int)(__atomic_fetch_add(&s->rr_prefill, 1, __ATOMIC_RELAXED) %
	            (unsigned)s->o.n_prefill);
	r->p_idx = idx;
	snprintf(url, sizeof(url), "%s%s", s->o.prefill[idx], ep);
	struct px_call call = {
	    .url = url,
	    .method = "POST",
	    .body = pbody,
	    .body_len = strlen(pbody),
	    .request_id = r->rid,
	    .authorization = r->auth,
	    .timeout_ms = s->o.prefill_timeout_ms,
	    .connect_timeout_ms = s->o.connect_timeout_ms,
	};
	t = pd_now_ns();
	ret = px_prefill(&call, &pst, reason, sizeof(reason));
	r->p_ms = (pd_now_ns() - t) / 1e6;
	free(pbody);
	if (ret) {
		/* no fall-through: decoding now would silently recompute the prompt */
		snprintf(r->p_note, sizeof(r->p_note), "FAIL(%d)", pst);
		return send_error(c, r, 502, "BadGateway", "prefill %s: %s", url, reason);
	}
	snprintf(r->p_note, sizeof(r->p_note), "%d", pst);
	idx =
	    (int)(__atomic_fetch_add(&s->rr_decode, 1, __ATOMIC_RELAXED) % (unsigned)s->o.n_decode);
	return relay(c, r, idx, ep, "POST", r->body, r->len);
}

static enum MHD_Result do_health(struct MHD_Connection *c, struct px_req *r)
{
	struct px_server *s = r->srv;
	cJSON *o = cJSON_CreateObject(), *p, *d;
	char *js = NULL;
	enum MHD_Result ret;
	if (o && cJSON_AddStringToObject(o, "status", "ok") &&
	    (p = cJSON_AddArrayToObject(o, "prefill")) &&
	    (d = cJSON_AddArrayToObject(o, "decode"))) {
		for (int i = 0; i < s->o.n_prefill; i++)
			cJSON_AddItemToArray(p, cJSON_CreateString(s->o.prefill[i]));
		for (int i = 0; i < s->o.n_decode; i++)
			cJSON_AddItemToArray(d, cJSON_CreateString(s->o.decode[i]));
		cJSON_AddNumberToObject(o, "prefill_instances", s->o.n_prefill);
		cJSON_AddNumberToObject(o, "decode_instances", s->o.n_decode);
		js = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(o);
	if (!js)
		return send_error(c, r, 500, "InternalServerError", "out of memory");
	ret = send_body(c, r, 200, "application/json", js);
	free(js);
	return ret;
}

static enum route route_of(const char *path)
{
	if (!strcmp(path, "/v1/completions"))
		return R_COMPLETIONS;
	if (!strcmp(path, "/v1/chat/completions"))
		return R_CHAT;
	if (!strcmp(path, "/health") || !strcmp(path, "/healthcheck"))
		return R_HEALTH;
	if (!strcmp(path, "/v1/models"))
		return R_MODELS;
	return R_NONE;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
	struct px_server *s = cls;
	struct px_req *r = *con_cls;
	(void)version;

	if (!r) {
		const char *v;
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->refs = 1;
		r->srv = s;
		r->p_idx = r->d_idx = -1;
		r->t0_ns = pd_now_ns();
		snprintf(r->method, sizeof(r->method), "%s", method);
		/* the path is untrusted and goes into the log: printable, bounded */
		snprintf(r->path, sizeof(r->path), "%s", url);
		for (char *p = r->path; *p; p++)
			if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
				*p = '?';
		r->route = route_of(url);
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
		if (v && rid_ok(v))
			snprintf(r->rid, sizeof(r->rid), "%s", v);
		else
			rid_new(r->rid, sizeof(r->rid));
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		if (v)
			r->auth = strdup(v);
		else if ((v = getenv("OPENAI_API_KEY")) && *v)
			r->auth = pd_asprintf("Bearer %s", v);
		*con_cls = r;
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (v) {
			uint64_t cl;
			if (pd_parse_u64(v, &cl) == 0 && cl > s->o.max_body)
				return send_error(c, r, 413, "RequestEntityTooLarge",
				                  "request body of %" PRIu64
				                  " bytes exceeds --max-body %" PRIu64,
				                  cl, s->o.max_body);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		/* MHD cannot answer in the middle of an upload: read the rest, drop it, answer
		 * after */
		if (r->responded || r->reject)
			return MHD_YES;
		if (r->len + n > s->o.max_body) {
			r->reject = 413;
			return MHD_YES;
		}
		if (r->len + n + 1 > r->cap) {
			size_t cap = r->cap ? r->cap : 4096;
			char *nb;
			while (cap < r->len + n + 1)
				cap *= 2;
			nb = realloc(r->body, cap);
			if (!nb) {
				r->reject = 500;
				return MHD_YES;
			}
			r->body = nb;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload_data, n);
		r->len += n;
		r->body[r->len] = '\0';
		return MHD_YES;
	}
	if (r->responded)
		return MHD_YES;
	if (r->reject == 413)
		return send_error(c, r, 413, "RequestEntityTooLarge",
		                  "request body exceeds --max-body %" PRIu64 " bytes",
		                  s->o.max_body);
	if (r->reject)
		return send_error(c, r, 500, "InternalServerError",
		                  "out of memory for the request body");
	switch (r->route) {
	case R_COMPLETIONS:
	case R_CHAT:
		if (strcmp(method, "POST"))
			break;
		return do_completion(c, r);
	case R_HEALTH:
		if (strcmp(method, "GET"))
			break;
		return do_health(c, r);
	case R_MODELS:
		if (strcmp(method, "GET"))
			break;
		return relay(c, r, 0, "/v1/models", "GET", NULL, 0);
	case R_NONE:
		return send_error(c, r, 404, "NotFoundError", "no route for %s %s", r->method,
		                  r->path);
	}
	return send_error(c, r, 405, "MethodNotAllowed", "%s is not allowed on %s", r->method,
	                  r->path);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	struct px_req *r = *con_cls;
	(void)cls, (void)c;
	if (!r)
		return;
	r->toe = toe;
	*con_cls = NULL;
	req_unref(r);
}

int px_server_start(const struct px_opts *o, struct px_server **out, int *bound_port)
{
	struct px_server *s;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	fd = pd_tcp_listen(o->host, o->port, 1024);
	if (fd < 0) {
		pd_err("--host %s --port %d: cannot listen: %s", o->host, o->port, strerror(-fd));
		free(s);
		return fd;
	}
	*bound_port = o->port;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		*bound_port = ss.ss_family == AF_INET6
		                  ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	s->d = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0,
	    NULL, NULL, handler, s, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED,
	    completed, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300, MHD_OPTION_END);
	if (!s->d) {
		pd_err("cannot start the HTTP server on %s:%d", o->host, *bound_port);
		close(fd);
		free(s);
		return -EIO;
	}
	*out = s;
	return 0;
}

void px_server_stop(struct px_server *s)
{
	if (!s)
		return;
	px_stopping = 1; /* in-flight backend calls abort; their clients get 502 / a cut stream */
	MHD_stop_daemon(s->d);
	free(s);
}
