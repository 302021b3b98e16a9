/* SPDX-License-Identifier: Apache-2.0 */
/* px_server: pdkv-proxy's front end on libmicrohttpd (a thread per connection) — routes, body
 * limits, request ids and auth per contract, health, error JSON and the access log. */
#include "px_srv.h"
#include "px_fault.h"
#include "httplim/pd_connlim.h"
#include "httplim/pd_mhdhdr.h"
#include "httplim/pd_mhdlog.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_buf.h"
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
#include <sys/socket.h>
#include <unistd.h>

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

/* The toy proxy's /healthcheck, byte for byte as FastAPI renders its dict. */
static enum MHD_Result toy_healthcheck(struct MHD_Connection *c, struct px_req *r)
{
	char js[128];
	snprintf(js, sizeof(js),
	         "{\"status\":\"ok\",\"prefill_instances\":%d,\"decode_instances\":%d}",
	         r->srv->o.n_prefill, r->srv->o.n_decode);
	return px_send_body(c, r, 200, "application/json", js);
}

/* pdkv's own health: backends, contract, readiness and the failure counters. */
static enum MHD_Result do_health(struct MHD_Connection *c, struct px_req *r)
{
	struct px_server *s = r->srv;
	cJSON *o = cJSON_CreateObject(), *p, *d;
	char *js = NULL, waiting[PX_URL_MAX + 64] = "";
	enum MHD_Result ret;
	int ready = !s->ready || px_ready_ok(s->ready);
	if (s->ct->toy_healthcheck && !strcmp(r->path, "/healthcheck"))
		return toy_healthcheck(c, r);
	if (!ready)
		px_ready_waiting(s->ready, waiting, sizeof(waiting));
	if (o && cJSON_AddStringToObject(o, "status", ready ? "ok" : "starting") &&
	    cJSON_AddStringToObject(o, "contract", s->ct->name) &&
	    (p = cJSON_AddArrayToObject(o, "prefill")) &&
	    (d = cJSON_AddArrayToObject(o, "decode"))) {
		for (int i = 0; i < s->o.n_prefill; i++)
			cJSON_AddItemToArray(p, cJSON_CreateString(s->o.prefill[i]));
		for (int i = 0; i < s->o.n_decode; i++)
			cJSON_AddItemToArray(d, cJSON_CreateString(s->o.decode[i]));
		cJSON_AddNumberToObject(o, "prefill_instances", s->o.n_prefill);
		cJSON_AddNumberToObject(o, "decode_instances", s->o.n_decode);
		if (!ready)
			cJSON_AddStringToObject(o, "waiting_for", waiting);
		cJSON_AddNumberToObject(
		    o, "prefill_failures",
		    (double)__atomic_load_n(&s->n_prefill_fail, __ATOMIC_RELAXED));
		cJSON_AddNumberToObject(
		    o, "prefill_failures_after_decode",
		    (double)__atomic_load_n(&s->n_prefill_fail_late, __ATOMIC_RELAXED));
		cJSON_AddNumberToObject(
		    o, "decode_stream_cuts",
		    (double)__atomic_load_n(&s->n_stream_cut, __ATOMIC_RELAXED));
		js = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(o);
	if (!js)
		return px_send_error(c, r, 500, "InternalServerError", "out of memory");
	ret = px_send_body(c, r, ready ? 200 : 503, "application/json", js);
	free(js);
	return ret;
}

/* Request id and Authorization for both backend calls, as the contract sends them. */
static int ids_for(struct MHD_Connection *c, struct px_req *r)
{
	const struct px_contract *k = r->srv->ct;
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
	if (k->rid_from_client && v && rid_ok(v)) {
		snprintf(r->rid, sizeof(r->rid), "%s", v);
	} else {
		if (v && rid_ok(v))
			snprintf(r->client_rid, sizeof(r->client_rid), "%s", v);
		if (px_uuid4(r->rid, sizeof(r->rid)))
			return -EIO;
	}
	if (k->auth_env_bearer) {
		/* f"Bearer {os.environ.get('OPENAI_API_KEY')}": "Bearer None" when unset */
		v = pd_env_raw("OPENAI_API_KEY"); /* set but empty: "Bearer " */
		r->auth = pd_asprintf("Bearer %s", v ? v : "None");
		return r->auth ? 0 : -ENOMEM;
	}
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (v)
		r->auth = strdup(v);
	else if ((v = pd_env_str("OPENAI_API_KEY")))
		r->auth = pd_asprintf("Bearer %s", v);
	return 0;
}

static enum px_route route_of(const char *path)
{
	if (!strcmp(path, "/v1/completions"))
		return PX_R_COMPLETIONS;
	if (!strcmp(path, "/v1/chat/completions"))
		return PX_R_CHAT;
	if (!strcmp(path, "/health") || !strcmp(path, "/healthcheck"))
		return PX_R_HEALTH;
	if (!strcmp(path, "/v1/models"))
		return PX_R_MODELS;
	return PX_R_NONE;
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
		pd_mhdhdr_headers_done(c); /* the header deadline stops here (issue 34, D6) */
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->refs = 1;
		r->srv = s;
		r->p_idx = r->d_idx = r->dp_rank = -1;
		pthread_mutex_init(&r->mu, NULL);
		r->t0_ns = pd_now_ns();
		snprintf(r->method, sizeof(r->method), "%s", method);
		/* the path is untrusted and goes into the log: printable, bounded */
		snprintf(r->path, sizeof(r->path), "%s", url);
		for (char *p = r->path; *p; p++)
			if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
				*p = '?';
		r->route = route_of(url);
		*con_cls = r;
		if (ids_for(c, r))
			return px_send_error(c, r, 500, "InternalServerError",
			                     "cannot make a request id (no randomness)");
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (v) {
			uint64_t cl;
			if (pd_parse_u64(v, &cl) == 0 && cl > s->o.max_body)
				return px_send_error(c, r, 413, "RequestEntityTooLarge",
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
		if (pd_buf_grow(&r->body, &r->cap, r->len + n + 1, 4096)) {
			r->reject = 500;
			return MHD_YES;
		}
		memcpy(r->body + r->len, upload_data, n);
		r->len += n;
		r->body[r->len] = '\0';
		return MHD_YES;
	}
	if (r->responded)
		return MHD_YES;
	if (r->reject == 413)
		return px_send_error(c, r, 413, "RequestEntityTooLarge",
		                     "request body exceeds --max-body %" PRIu64 " bytes",
		                     s->o.max_body);
	if (r->reject)
		return px_send_error(c, r, 500, "InternalServerError",
		                     "out of memory for the request body");
	switch (r->route) {
	case PX_R_COMPLETIONS:
	case PX_R_CHAT:
		if (strcmp(method, "POST"))
			break;
		return px_do_completion(c, r);
	case PX_R_HEALTH:
		if (strcmp(method, "GET"))
			break;
		return do_health(c, r);
	case PX_R_MODELS:
		if (strcmp(method, "GET"))
			break;
		return px_relay(c, r, 0, "/v1/models", "GET", NULL, 0);
	case PX_R_NONE:
		return px_send_error(c, r, 404, "NotFoundError", "no route for %s %s", r->method,
		                     r->path);
	}
	return px_send_error(c, r, 405, "MethodNotAllowed", "%s is not allowed on %s", r->method,
	                     r->path);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	struct px_req *r = *con_cls;
	(void)cls;
	pd_mhdhdr_request_done(c);
	if (!r)
		return;
	r->toe = toe;
	*con_cls = NULL;
	px_req_unref(r);
}

static void server_free(struct px_server *s)
{
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	pd_connlim_free(s->lim);
	free(s);
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
	s->ct = px_fault_contract(px_contract_get(o->contract), o->faults);
	if (o->faults)
		pd_warn("--fault: behaving as a broken router (detector self-test)");
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	fd = pd_tcp_listen(o->host, o->port, 1024);
	if (fd < 0) {
		pd_err("--host %s --port %d: cannot listen: %s", o->host, o->port, strerror(-fd));
		server_free(s);
		return fd;
	}
	*bound_port = o->port;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		*bound_port = ss.ss_family == AF_INET6
		                  ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
		                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	/* a thread per connection, so the connection limits bound the threads; MHD's own limit
	 * is a backstop above ours (ours logs which flag was hit) */
	s->lim = pd_connlim_new("pdkv-proxy", o->max_conns, o->max_conns_per_client);
	if (!s->lim || pd_connlim_header_deadline(s->lim, o->idle_timeout_s)) {
		close(fd);
		server_free(s);
		return -ENOMEM;
	}
	/* readiness polls with s->o, which lives as long as s; started before the daemon so that
	 * handlers never read s->ready while it is being set */
	if (s->ct->readiness && px_ready_start(&s->o, &s->ready)) {
		pd_err("cannot start the readiness poller");
		close(fd);
		server_free(s);
		return -EIO;
	}
	s->d = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0,
	    pd_connlim_accept, s->lim, handler, s, MHD_OPTION_EXTERNAL_LOGGER, pd_mhd_log, NULL,
	    MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
	    MHD_OPTION_NOTIFY_CONNECTION, pd_connlim_notify, s->lim, MHD_OPTION_CONNECTION_LIMIT,
	    o->max_conns + 16, MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->max_conns_per_client + 16,
	    MHD_OPTION_CONNECTION_TIMEOUT, o->idle_timeout_s, MHD_OPTION_END);
	if (!s->d) {
		pd_err("cannot start the HTTP server on %s:%d", o->host, *bound_port);
		close(fd);
		px_ready_stop(s->ready);
		server_free(s);
		return -EIO;
	}
	*out = s;
	return 0;
}

void px_server_stop(struct px_server *s)
{
	if (!s)
		return;
	/* in-flight backend calls abort; their clients get 502 / a cut stream */
	__atomic_store_n(&px_stopping, 1, __ATOMIC_RELAXED);
	MHD_stop_daemon(s->d);
	/* concurrent prefill calls hold requests (and so s); they abort on px_stopping */
	pthread_mutex_lock(&s->mu);
	while (s->bg)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	/* last: handlers and prefill calls pick pairs from it until here (TSan saw it freed first)
	 */
	px_ready_stop(s->ready);
	server_free(s);
}
