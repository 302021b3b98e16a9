/* SPDX-License-Identifier: Apache-2.0 */
/* px_req: one proxied request's references and end (its access log line), and the answers the
 * front end and the flows send it (a body, an error JSON); below px_server.c and px_flow.c. */
#include "px_srv.h"
#include "pd_log.h"
#include "pd_util.h"

#include <cJSON.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void access_log(struct px_req *r)
{
	struct px_server *s = r->srv;
	char dec[160] = "decode=-", dp[16] = "", note[512] = "";
	if (r->st) {
		struct px_stream *st = r->st;
		double ttfb = st->t_first_ns ? (st->t_first_ns - st->t_start_ns) / 1e6 : -1;
		double tot = st->t_end_ns ? (st->t_end_ns - st->t_start_ns) / 1e6 : -1;
		snprintf(dec, sizeof(dec), "decode=%s %d ttfb=%.1fms total=%.1fms",
		         r->d_idx >= 0 ? s->o.decode[r->d_idx] : "-", st->status, ttfb, tot);
	}
	if (r->dp_rank >= 0)
		snprintf(dp, sizeof(dp), " dp=%d", r->dp_rank);
	if (r->cut)
		snprintf(note, sizeof(note), " (decode stream cut: %s)", r->cut_why);
	else if (r->late_fail)
		snprintf(note, sizeof(note), " (prefill failed after decode answered: %s)",
		         r->p_reason);
	else if (r->toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		snprintf(note, sizeof(note), " (client gone or aborted)");
	/* health pollers would drown the log: their lines are debug */
	pd_log_msg(
	    r->route == PX_R_HEALTH && r->status == 200 ? PD_LOG_DEBUG : PD_LOG_INFO,
	    "%s %s %d rid=%s%s%s prefill=%s%s %s %.1fms %s in=%zuB out=%" PRIu64 "B time=%.1fms%s",
	    r->method, r->path, r->status, r->rid[0] ? r->rid : "-",
	    r->client_rid[0] ? " client_rid=" : "", r->client_rid,
	    r->p_idx >= 0 ? s->o.prefill[r->p_idx] : "-", dp, r->p_idx >= 0 ? r->p_note : "-",
	    r->p_ms, dec, r->len, r->bytes_out, (pd_now_ns() - r->t0_ns) / 1e6, note);
}

void px_req_ref(struct px_req *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_ACQ_REL);
}

void px_req_unref(struct px_req *r)
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
	px_answer_free(&r->p_ans);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

char *px_json_error(int code, const char *type, const char *msg)
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

enum MHD_Result px_send_body(struct MHD_Connection *c, struct px_req *r, int status,
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

enum MHD_Result px_send_error(struct MHD_Connection *c, struct px_req *r, int status,
                              const char *type, const char *fmt, ...)
{
	char msg[768];
	char *js;
	enum MHD_Result ret;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	js = px_json_error(status, type, msg);
	ret = px_send_body(c, r, status, "application/json", js ? js : "{\"object\":\"error\"}");
	free(js);
	if (status >= 500)
		pd_warn("%s %s -> %d: %s (rid=%s)", r->method, r->path, status, msg, r->rid);
	return ret;
}
