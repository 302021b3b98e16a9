/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_boot: the gen B bootstrap server on libmicrohttpd (bodies, status codes and texts of vLLM's
 * FastAPI MooncakeBootstrapServer) and its libcurl clients (register with retries, query). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <curl/curl.h>
#include <microhttpd.h>

#include "httplim/pd_mhdlog.h"
#include "kv1_boot.h"
#include "pd_log.h"
#include "pd_util.h"

struct worker {
	int tp, pp;
	char addr[KV1_BOOT_ADDR_MAX + 1];
};

struct engine {
	int dp;
	char *engine_id;
	struct worker *w;
	size_t nw;
};

struct kv1_boot {
	struct MHD_Daemon *d;
	int lfd;
	enum kv1_shape shape;
	pthread_mutex_t mu;
	struct engine *e; /* in registration order (FastAPI's dict order) */
	size_t ne;
};

struct body {
	char *p;
	size_t len;
	bool too_big;
};

static enum MHD_Result reply(struct MHD_Connection *c, int status, cJSON *j)
{
	char *txt = cJSON_PrintUnformatted(j);
	struct MHD_Response *r;
	enum MHD_Result ret;

	cJSON_Delete(j);
	if (!txt)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(txt);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result detail(struct MHD_Connection *c, int status, const char *text)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "detail", text);
	return reply(c, status, j);
}

/* FastAPI's 422: {"detail":[{"type":..,"loc":["body",field],"msg":..}]} (pydantic v2 shape). */
static enum MHD_Result unprocessable(struct MHD_Connection *c, const char *type, const char *field,
                                     const char *msg)
{
	cJSON *j = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(j, "detail");
	cJSON *e = cJSON_CreateObject(), *loc = cJSON_CreateArray();

	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddItemToArray(loc, cJSON_CreateString("body"));
	if (field)
		cJSON_AddItemToArray(loc, cJSON_CreateString(field));
	cJSON_AddItemToObject(e, "loc", loc);
	cJSON_AddStringToObject(e, "msg", msg);
	cJSON_AddItemToArray(a, e);
	return reply(c, 422, j);
}

static enum MHD_Result do_query(struct kv1_boot *b, struct MHD_Connection *c)
{
	cJSON *j = cJSON_CreateObject();
	char k[16];

	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->ne; i++) {
		struct engine *e = &b->e[i];
		cJSON *o = cJSON_CreateObject(), *wa;

		snprintf(k, sizeof(k), "%d", e->dp);
		cJSON_AddItemToObject(j, k, o);
		cJSON_AddStringToObject(o, "engine_id", e->engine_id);
		wa = cJSON_AddObjectToObject(o, "worker_addr");
		for (size_t w = 0; w < e->nw; w++) {
			cJSON *tp;

			snprintf(k, sizeof(k), "%d", e->w[w].tp);
			tp = cJSON_GetObjectItemCaseSensitive(wa, k);
			if (!tp)
				tp = cJSON_AddObjectToObject(wa, k);
			snprintf(k, sizeof(k), "%d", e->w[w].pp);
			cJSON_AddStringToObject(tp, k, e->w[w].addr);
		}
	}
	pthread_mutex_unlock(&b->mu);
	return reply(c, 200, j);
}

static enum MHD_Result check_int(struct MHD_Connection *c, const cJSON *j, const char *f, int hi,
                                 int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, f);

	if (!v)
		return unprocessable(c, "missing", f, "Field required");
	/* no cast before the range is known: (long long)1e300 is undefined (found by fuzz_kv1_wire)
	 */
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble != floor(v->valuedouble))
		return unprocessable(c, "int_type", f, "Input should be a valid integer");
	if (v->valuedouble < 0 || v->valuedouble >= hi)
		return unprocessable(c, "less_than", f, "Input is out of the range pdkv accepts");
	*out = (int)v->valuedouble;
	return MHD_YES;
}

/* Returns MHD_YES with *done false when the request passed validation. */
static enum MHD_Result parse_register(struct MHD_Connection *c, const cJSON *j, int v[3],
                                      const char **engine_id, const char **addr, bool *done)
{
	static const char *const ints[3] = {"dp_rank", "tp_rank", "pp_rank"};
	static const int his[3] = {KV1_BOOT_MAX_DP, KV1_BOOT_MAX_TP, KV1_BOOT_MAX_PP};
	const cJSON *s;

	*done = true;
	if (!cJSON_IsObject(j))
		return unprocessable(c, "model_attributes_type", NULL,
		                     "Input should be a valid dictionary or object to extract "
		                     "fields from");
	s = cJSON_GetObjectItemCaseSensitive(j, "engine_id");
	if (!s)
		return unprocessable(c, "missing", "engine_id", "Field required");
	if (!cJSON_IsString(s) || strlen(s->valuestring) > KV1_MAX_STR)
		return unprocessable(c, "string_type", "engine_id",
		                     "Input should be a valid string");
	*engine_id = s->valuestring;
	for (int i = 0; i < 3; i++) {
		int x = -1;
		enum MHD_Result r = check_int(c, j, ints[i], his[i], &x);

		if (x < 0)
			return r;
		v[i] = x;
	}
	s = cJSON_GetObjectItemCaseSensitive(j, "addr");
	if (!s)
		return unprocessable(c, "missing", "addr", "Field required");
	if (!cJSON_IsString(s) || strlen(s->valuestring) > KV1_BOOT_ADDR_MAX)
		return unprocessable(c, "string_type", "addr", "Input should be a valid string");
	*addr = s->valuestring;
	*done = false;
	return MHD_YES;
}

static enum MHD_Result add_worker(struct kv1_boot *b, struct MHD_Connection *c, const int v[3],
                                  const char *engine_id, const char *addr)
{
	struct engine *e = NULL;
	char msg[1024];

	for (size_t i = 0; i < b->ne; i++)
		if (b->e[i].dp == v[0])
			e = &b->e[i];
	if (e && strcmp(e->engine_id, engine_id)) {
		snprintf(msg, sizeof(msg), "Engine ID mismatch for dp_rank=%d: expected %s, got %s",
		         v[0], e->engine_id, engine_id);
		return detail(c, 400, msg);
	}
	for (size_t w = 0; e && w < e->nw; w++) {
		if (e->w[w].tp != v[1] || e->w[w].pp != v[2])
			continue;
		if (b->shape >= KV1_SHAPE_BN && !strcmp(e->w[w].addr, addr))
			goto ok; /* retry-safe re-registration */
		snprintf(msg, sizeof(msg),
		         "Worker with dp_rank=%d, tp_rank=%d, pp_rank=%d is already registered at "
		         "%s, but still want to register at %s",
		         v[0], v[1], v[2], e->w[w].addr, addr);
		return detail(c, 400, msg);
	}
	if (!e) {
		struct engine *ne;

		if (b->ne >= KV1_BOOT_MAX_DP)
			return detail(c, 400, "too many dp ranks registered");
		ne = realloc(b->e, (b->ne + 1) * sizeof(*ne));
		if (!ne)
			return MHD_NO;
		b->e = ne;
		e = &b->e[b->ne++];
		memset(e, 0, sizeof(*e));
		e->dp = v[0];
		e->engine_id = strdup(engine_id);
	}
	{
		struct worker *nw;

		if (e->nw >= (size_t)KV1_BOOT_MAX_TP)
			return detail(c, 400, "too many workers registered");
		nw = realloc(e->w, (e->nw + 1) * sizeof(*nw));
		if (!nw)
			return MHD_NO;
		e->w = nw;
		nw = &e->w[e->nw++];
		nw->tp = v[1];
		nw->pp = v[2];
		snprintf(nw->addr, sizeof(nw->addr), "%s", addr);
	}
	pd_dbg("bootstrap: registered dp_rank=%d tp_rank=%d pp_rank=%d engine %s at %s", v[0], v[1],
	       v[2], engine_id, addr);
ok : {
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "status", "ok");
	return reply(c, 200, j);
}
}

static enum MHD_Result do_register(struct kv1_boot *b, struct MHD_Connection *c, struct body *bd)
{
	cJSON *j;
	int v[3];
	const char *engine_id = NULL, *addr = NULL;
	bool done;
	enum MHD_Result ret;

	if (bd->too_big)
		return detail(c, 413, "Request body too large");
	j = cJSON_ParseWithLength(bd->p ? bd->p : "", bd->len);
	if (!j)
		return unprocessable(c, "json_invalid", NULL, "JSON decode error");
	ret = parse_register(c, j, v, &engine_id, &addr, &done);
	if (!done) {
		pthread_mutex_lock(&b->mu);
		ret = add_worker(b, c, v, engine_id, addr);
		pthread_mutex_unlock(&b->mu);
	}
	cJSON_Delete(j);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	struct kv1_boot *b = cls;
	struct body *bd = *con_cls;
	(void)version;

	if (!bd) {
		bd = calloc(1, sizeof(*bd));
		*con_cls = bd;
		return bd ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		if (bd->len + *upload_size > KV1_BOOT_BODY_MAX) {
			bd->too_big = true;
		} else if (!bd->too_big) {
			char *np = realloc(bd->p, bd->len + *upload_size + 1);

			if (!np)
				return MHD_NO;
			bd->p = np;
			memcpy(bd->p + bd->len, upload, *upload_size);
			bd->len += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (!strcmp(url, "/register")) {
		if (strcmp(method, "POST"))
			return detail(c, 405, "Method Not Allowed");
		return do_register(b, c, bd);
	}
	if (!strcmp(url, "/query")) {
		if (strcmp(method, "GET"))
			return detail(c, 405, "Method Not Allowed");
		return do_query(b, c);
	}
	return detail(c, 404, "Not Found");
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
	struct body *bd = *con_cls;
	(void)cls;
	(void)c;
	(void)toe;

	if (bd)
		free(bd->p);
	free(bd);
	*con_cls = NULL;
}

int kv1_boot_start(const char *host, int port, enum kv1_shape shape, struct kv1_boot **out,
                   int *bound_port)
{
	return kv1_boot_start_lim(host, port, shape, &KV1_BOOT_LIMITS_DEFAULT, out, bound_port);
}

size_t kv1_boot_engines(struct kv1_boot *b)
{
	return pd_locked_size(&b->mu, &b->ne);
}

int kv1_boot_start_lim(const char *host, int port, enum kv1_shape shape,
                       const struct kv1_boot_limits *lim, struct kv1_boot **out, int *bound_port)
{
	struct kv1_boot *b;
	const union MHD_DaemonInfo *di;

	if (!lim || !lim->max_connections || lim->max_connections > 10000 || !lim->idle_timeout_s ||
	    lim->idle_timeout_s > 86400)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->shape = shape;
	pthread_mutex_init(&b->mu, NULL);
	b->lfd = pd_tcp_listen(host ? host : "0.0.0.0", port, 64);
	if (b->lfd < 0) {
		int ret = b->lfd;

		pthread_mutex_destroy(&b->mu);
		free(b);
		return ret;
	}
	/* Limits: lim's connections and idle timeout, 64 KiB bodies (checked above). */
	b->d =
	    MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0,
	                     NULL, NULL, on_request, b, MHD_OPTION_EXTERNAL_LOGGER, pd_mhd_log,
	                     NULL, MHD_OPTION_LISTEN_SOCKET, b->lfd, MHD_OPTION_NOTIFY_COMPLETED,
	                     on_done, b, MHD_OPTION_CONNECTION_LIMIT, lim->max_connections,
	                     MHD_OPTION_CONNECTION_TIMEOUT, lim->idle_timeout_s, MHD_OPTION_END);
	if (!b->d) {
		close(b->lfd);
		pthread_mutex_destroy(&b->mu);
		free(b);
		return -EIO;
	}
	di = MHD_get_daemon_info(b->d, MHD_DAEMON_INFO_BIND_PORT);
	if (bound_port)
		*bound_port = di ? di->port : port;
	*out = b;
	return 0;
}

void kv1_boot_stop(struct kv1_boot *b)
{
	if (!b)
		return;
	MHD_stop_daemon(b->d);
	close(b->lfd);
	for (size_t i = 0; i < b->ne; i++) {
		free(b->e[i].engine_id);
		free(b->e[i].w);
	}
	free(b->e);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

/* ------------------------------------------------------------------ clients */

struct cbuf {
	char *p;
	size_t len;
	bool over;
};

static size_t collect(char *d, size_t sz, size_t n, void *ud)
{
	struct cbuf *b = ud;
	size_t k = sz * n;
	char *np;

	if (b->len + k > KV1_BOOT_QUERY_MAX) {
		b->over = true;
		return 0;
	}
	np = realloc(b->p, b->len + k + 1);
	if (!np)
		return 0;
	b->p = np;
	memcpy(b->p + b->len, d, k);
	b->len += k;
	b->p[b->len] = 0;
	return k;
}

/* One HTTP call. Returns the HTTP status, or -1 (connect error / timeout: retryable) with err. */
static long http(const char *url, const char *post, int timeout_ms, struct cbuf *out, char *err,
                 size_t errsz)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	long status = -1;
	CURLcode rc;

	if (!c) {
		snprintf(err, errsz, "curl_easy_init failed");
		return -2;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	if (post) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(err, errsz, "%s: %s", url, curl_easy_strerror(rc));
	if (rc != CURLE_OK && rc != CURLE_COULDNT_CONNECT && rc != CURLE_OPERATION_TIMEDOUT)
		status = -2; /* not retryable */
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/* The payload as vLLM's messages print it (pydantic's str() of RegisterWorkerPayload). */
static void payload_text(char *out, size_t sz, const char *engine_id, int dp_rank, int tp_rank,
                         int pp_rank, const char *addr)
{
	snprintf(out, sz, "engine_id='%s' dp_rank=%d tp_rank=%d pp_rank=%d addr='%s'", engine_id,
	         dp_rank, tp_rank, pp_rank, addr);
}

int kv1_boot_register(const char *base_url, const char *engine_id, int dp_rank, int tp_rank,
                      int pp_rank, const char *addr, enum kv1_shape shape, int timeout_ms,
                      char *err, size_t errsz)
{
	cJSON *j = cJSON_CreateObject();
	char *body, url[512], pl[KV1_BOOT_ADDR_MAX + 400];
	int attempts = shape >= KV1_SHAPE_BN ? 3 : 30, delay_ms = 1000, ret = -1;

	cJSON_AddStringToObject(j, "engine_id", engine_id);
	cJSON_AddNumberToObject(j, "dp_rank", dp_rank);
	cJSON_AddNumberToObject(j, "tp_rank", tp_rank);
	cJSON_AddNumberToObject(j, "pp_rank", pp_rank);
	cJSON_AddStringToObject(j, "addr", addr);
	body = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!body) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	payload_text(pl, sizeof(pl), engine_id, dp_rank, tp_rank, pp_rank, addr);
	snprintf(url, sizeof(url), "%s/register", base_url);
	for (int a = 1; a <= attempts; a++) {
		struct cbuf b = {0};
		long st = http(url, body, timeout_ms, &b, err, errsz);

		if (st == 200) {
			ret = 0;
		} else if (st > 0) {
			snprintf(err, errsz,
			         "Error registering %s with bootstrap server: HTTP %ld %s",
			         shape >= KV1_SHAPE_BN ? pl : addr, st, b.p ? b.p : "");
		} else if (st == -1 && a < attempts) {
			if (shape >= KV1_SHAPE_BN)
				pd_warn(
				    "Bootstrap registration attempt %d/%d for %s failed with %s. "
				    "Retrying in %.1fs.",
				    a, attempts, pl, err, delay_ms / 1000.0);
			free(b.p);
			pd_sleep_ms(delay_ms);
			if (shape >= KV1_SHAPE_BN)
				delay_ms = delay_ms * 2 > 10000 ? 10000 : delay_ms * 2;
			continue;
		} else if (st == -1 && shape >= KV1_SHAPE_BN) {
			/* vLLM's RuntimeError after the last attempt
			 * (register_worker_with_bootstrap, mooncake_connector.py @ 00f4240e); the
			 * last transport error follows it */
			char e2[2048];

			snprintf(
			    e2, sizeof(e2),
			    "Failed to register %s with the Mooncake bootstrap server at %s after "
			    "%d attempts. (last error: %s)",
			    pl, url, attempts, err);
			snprintf(err, errsz, "%s", e2);
		} else if (st == -1) {
			char e2[512];

			snprintf(e2, sizeof(e2),
			         "Failed to register %s with bootstrap server %s after "
			         "%d attempts: %s",
			         addr, base_url, attempts, err);
			snprintf(err, errsz, "%s", e2);
		}
		free(b.p);
		break;
	}
	free(body);
	return ret;
}

static int parse_engine(const cJSON *k, struct kv1_boot_engine *e, char *err, size_t errsz)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(k, "engine_id");
	const cJSON *wa = cJSON_GetObjectItemCaseSensitive(k, "worker_addr"), *tp;
	int64_t dp;

	if (pd_parse_i64(k->string, &dp) || dp < 0 || dp >= KV1_BOOT_MAX_DP ||
	    !cJSON_IsString(id) || !cJSON_IsObject(wa)) {
		snprintf(err, errsz,
		         "/query: entry \"%s\": expected {\"engine_id\": str, "
		         "\"worker_addr\": {tp: {pp: addr}}}",
		         k->string);
		return -1;
	}
	e->dp_rank = (int)dp;
	e->engine_id = strdup(id->valuestring);
	e->ntp = cJSON_GetArraySize(wa);
	if (e->ntp > KV1_BOOT_MAX_TP) {
		snprintf(err, errsz, "/query: %d tp ranks (limit %d)", e->ntp, KV1_BOOT_MAX_TP);
		return -1;
	}
	e->addr = calloc((size_t)e->ntp + 1, sizeof(char *));
	e->pp_addr = calloc(((size_t)e->ntp + 1) * KV1_QUERY_MAX_PP, sizeof(char *));
	e->npp = calloc((size_t)e->ntp + 1, sizeof(int));
	if (!e->engine_id || !e->addr || !e->pp_addr || !e->npp)
		return -1;
	cJSON_ArrayForEach(tp, wa)
	{
		int64_t t, p;
		const cJSON *a;

		if (pd_parse_i64(tp->string, &t) || t < 0 || t >= e->ntp || !cJSON_IsObject(tp) ||
		    !cJSON_GetArraySize(tp)) {
			snprintf(err, errsz, "/query: dp %lld tp \"%s\": expected {pp: addr}",
			         (long long)dp, tp->string);
			return -1;
		}
		cJSON_ArrayForEach(a, tp) /* {pp_rank: worker_addr}, vLLM #44528 */
		{
			char **slot;

			if (pd_parse_i64(a->string, &p) || p < 0 || p >= KV1_QUERY_MAX_PP ||
			    !cJSON_IsString(a) || strlen(a->valuestring) > KV1_BOOT_ADDR_MAX) {
				snprintf(err, errsz,
				         "/query: dp %lld tp %lld pp \"%s\": expected a pp rank "
				         "0..%d and an address of at most %d bytes",
				         (long long)dp, (long long)t, a->string,
				         KV1_QUERY_MAX_PP - 1, KV1_BOOT_ADDR_MAX);
				return -1;
			}
			slot = &e->pp_addr[t * KV1_QUERY_MAX_PP + p];
			if (!*slot)
				e->npp[t]++;
			free(*slot);
			if (!(*slot = strdup(a->valuestring)))
				return -1;
		}
		free(e->addr[t]);
		e->addr[t] = e->pp_addr[t * KV1_QUERY_MAX_PP]
		                 ? strdup(e->pp_addr[t * KV1_QUERY_MAX_PP])
		                 : NULL;
	}
	return 0;
}

int kv1_boot_query(const char *base_url, int timeout_ms, struct kv1_boot_table *t, char *err,
                   size_t errsz)
{
	struct cbuf b = {0};
	char url[512];
	cJSON *j = NULL, *k;
	long st;
	int ret = -1;

	memset(t, 0, sizeof(*t));
	snprintf(url, sizeof(url), "%s/query", base_url);
	st = http(url, NULL, timeout_ms, &b, err, errsz);
	if (st < 0)
		goto out;
	if (st != 200) {
		snprintf(err, errsz, "%s: HTTP %ld", url, st);
		goto out;
	}
	j = cJSON_ParseWithLength(b.p ? b.p : "", b.len);
	if (!cJSON_IsObject(j)) {
		snprintf(err, errsz, "%s: answer is not a JSON object", url);
		goto out;
	}
	t->n = (size_t)cJSON_GetArraySize(j);
	if (t->n > KV1_BOOT_MAX_DP) {
		snprintf(err, errsz, "%s: %zu dp ranks (limit %d)", url, t->n, KV1_BOOT_MAX_DP);
		goto out;
	}
	t->v = calloc(t->n + 1, sizeof(*t->v));
	if (!t->v)
		goto out;
	size_t i = 0;
	cJSON_ArrayForEach(k, j)
	{
		if (parse_engine(k, &t->v[i++], err, errsz))
			goto out;
	}
	ret = 0;
out:
	cJSON_Delete(j);
	free(b.p);
	if (ret)
		kv1_boot_table_free(t);
	return ret;
}

const struct kv1_boot_engine *kv1_boot_find(const struct kv1_boot_table *t, const char *engine_id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].engine_id && !strcmp(t->v[i].engine_id, engine_id))
			return &t->v[i];
	return NULL;
}

void kv1_boot_table_free(struct kv1_boot_table *t)
{
	for (size_t i = 0; t->v && i < t->n; i++) {
		for (int k = 0; t->v[i].addr && k < t->v[i].ntp; k++)
			free(t->v[i].addr[k]);
		for (int k = 0; t->v[i].pp_addr && k < t->v[i].ntp * KV1_QUERY_MAX_PP; k++)
			free(t->v[i].pp_addr[k]);
		free(t->v[i].addr);
		free(t->v[i].pp_addr);
		free(t->v[i].npp);
		free(t->v[i].engine_id);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}
