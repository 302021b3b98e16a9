/* SPDX-License-Identifier: Apache-2.0 */
/* px_srv: pdkv-proxy's internals shared by the front end (px_server.c) and the completion flow
 * (px_flow.c): the server, one request's state, and the answer helpers. */
#ifndef PX_SRV_H
#define PX_SRV_H

#include "px.h"
#include "px_contract.h"
#include "px_fwd.h"
#include "px_ready.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

struct pd_connlim;
struct px_server {
	struct MHD_Daemon *d;
	struct pd_connlim *lim; /* --max-connections[-per-client] */
	struct px_opts o;
	const struct px_contract *ct;
	struct px_ready *ready;         /* contracts with readiness; else NULL */
	unsigned rr_prefill, rr_decode; /* round-robin cursors (atomic) */
	/* detached concurrent prefill calls: px_server_stop waits for them */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int bg;
	/* counters (atomic), shown by /health */
	uint64_t n_prefill_fail;      /* every prefill failure */
	uint64_t n_prefill_fail_late; /* ... that came after decode had answered the client */
	uint64_t n_stream_cut;        /* decode answers cut after their status went out */
};

enum px_route { PX_R_NONE, PX_R_COMPLETIONS, PX_R_CHAT, PX_R_HEALTH, PX_R_MODELS };

/* Where a prefill failure landed (the concurrent contract can fail at any point). */
enum px_pphase { PX_P_NONE, PX_P_RUNNING, PX_P_OK, PX_P_FAILED };

/* One request. Referenced by the connection, while streaming by the response, and by a
 * concurrent prefill thread; the last reference writes the access log line. */
struct px_req {
	int refs;
	struct px_server *srv;
	enum px_route route;
	char method[8], path[72];
	char *body;
	size_t len, cap;
	int responded; /* a response is queued (e.g. 413 before the upload) */
	int reject;    /* 413 or 500 decided during the upload, sent after it */
	char rid[80];
	char client_rid[80]; /* the client's X-Request-Id when the contract replaces it */
	char *auth;
	int status;
	int p_idx, d_idx, dp_rank; /* backend indexes, -1 = not used */
	char p_note[64];           /* "200" or "FAIL(500)" */
	double p_ms;
	struct px_stream *st;
	int toe; /* MHD termination code */
	uint64_t t0_ns, bytes_out;

	/* prefill state, shared with a concurrent prefill thread under mu */
	pthread_mutex_t mu;
	enum px_pphase p_state;
	int p_status;
	char p_reason[400];
	struct px_answer p_ans; /* kept for a 4xx passthrough */
	char p_url[PX_URL_MAX + 64];
	char p_extra[48]; /* "X-data-parallel-rank: <dp>" when the contract sends it */
	int d_started;    /* the decode call exists (r->st may be cancelled) */
	int committed;    /* decode's status went to the client */
	int d_complete;   /* the client has decode's whole answer */
	int late_fail;    /* prefill failed after d_complete */

	/* decode answer state for the reader */
	int sse;      /* decode answered text/event-stream */
	int cut;      /* the stream broke after the status went out */
	int cut_sent; /* the SSE error event is out: end the stream */
	char cut_why[320];
	char tail[2]; /* last two bytes sent, to close a half-sent SSE event */
};

void px_req_ref(struct px_req *r);
void px_req_unref(struct px_req *r);

enum MHD_Result px_send_body(struct MHD_Connection *c, struct px_req *r, int status,
                             const char *ctype, const char *body);
enum MHD_Result px_send_error(struct MHD_Connection *c, struct px_req *r, int status,
                              const char *type, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
char *px_json_error(int code, const char *type, const char *msg);

/* px_flow.c: POST /v1/completions and /v1/chat/completions under the server's contract. */
enum MHD_Result px_do_completion(struct MHD_Connection *c, struct px_req *r);
/* Sends a call to decode backend idx and answers the client with what decode says. */
enum MHD_Result px_relay(struct MHD_Connection *c, struct px_req *r, int idx, const char *endpoint,
                         const char *method, const char *body, size_t len);

#endif
