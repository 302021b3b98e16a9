/* SPDX-License-Identifier: Apache-2.0 */
/* px_fwd: pdkv-proxy's backend side on libcurl — a drained prefill call and a decode call whose
 * body flows through a bounded queue to the client, with status and headers known first. */
#ifndef PX_FWD_H
#define PX_FWD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Set once on shutdown: every backend call in flight aborts (checked by curl's progress hook). */
extern volatile int px_stopping; /* set once by px_server_stop; read with px_is_stopping */
static inline int px_is_stopping(void)
{
	return __atomic_load_n(&px_stopping, __ATOMIC_RELAXED);
}

/* What every backend call carries. */
struct px_call {
	const char *url;    /* full endpoint URL */
	const char *method; /* "POST" or "GET" */
	const char *body;   /* POST body (may be NULL for GET) */
	size_t body_len;
	const char *request_id;    /* X-Request-Id */
	const char *authorization; /* Authorization header value, or NULL */
	const char *extra_header;  /* one more "Name: value" line, or NULL */
	long timeout_ms;           /* whole call; 0 = none */
	long connect_timeout_ms;
	volatile int *cancel; /* px_fetch: abort when it becomes non-zero (may be NULL) */
};

/* A drained answer: status, Content-Type and the first `keep` bytes of the body. */
struct px_answer {
	int status; /* 0 when no HTTP status came back */
	char ctype[128];
	char *body; /* NUL-terminated, may be NULL when empty */
	size_t len;
	int truncated; /* the body was longer than keep */
	int complete;  /* the exchange finished (status, headers and body all arrived) */
};

/* Sends the call and drains the answer, keeping up to keep bytes. 0 when the backend said 2xx;
 * otherwise -1 and reason gets a short text ("HTTP 500: <start of body>", "Failed to connect
 * to ...", "Timeout was reached"). a is filled either way; free it with px_answer_free. */
int px_fetch(const struct px_call *c, size_t keep, struct px_answer *a, char *reason,
             size_t reason_sz);
void px_answer_free(struct px_answer *a);

#define PX_MAX_PASS_HEADERS 32

/* One decode call in flight, owned by the client response that reads it. */
struct px_stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started;

	/* ring buffer between curl's write callback (producer) and the client (consumer) */
	char *ring;
	size_t cap, head, len;

	int hdr_done; /* final (non-1xx) status line and headers seen */
	int done;     /* curl returned */
	int cancel;   /* the client went away: abort the call */
	int status;   /* HTTP status from the backend, 0 if none */
	int result;   /* CURLcode */
	char errbuf[256];
	int64_t content_length;         /* -1 when absent or chunked */
	char *hdr[PX_MAX_PASS_HEADERS]; /* end-to-end headers as "Name: value" */
	int n_hdr;

	uint64_t t_start_ns, t_first_ns, t_end_ns; /* t_first = first body byte, 0 if none */
	uint64_t bytes;                            /* body bytes received from the backend */

	struct px_call call; /* strings below are owned copies */
	char *own_url, *own_body, *own_rid, *own_auth, *own_extra;
};

/* Starts the call on its own thread. 0 or -errno (nothing to clean up on failure but _free). */
int px_stream_start(struct px_stream *s, const struct px_call *c, size_t queue_bytes);
/* Blocks until the status is known or the call ended. Returns the status, 0 if none. */
int px_stream_wait_headers(struct px_stream *s);
/* After the headers: blocks until n body bytes are queued or the call ended. Returns 0 when
 * they are, -1 when the call ended short. n must not exceed the queue size. */
int px_stream_wait_body(struct px_stream *s, size_t n);
/* Value of the first passed-through header called name (case-insensitive), or NULL. Valid
 * until px_stream_finish. */
const char *px_stream_header(struct px_stream *s, const char *name, size_t *vlen);
/* Copies up to max body bytes: >0 bytes, 0 at a clean end, -1 when the call failed. Blocks. */
long px_stream_read(struct px_stream *s, char *buf, size_t max);
/* Reason a call without a status failed ("Failed to connect to ..."). */
const char *px_stream_error(struct px_stream *s);
/* Asks a running call to abort (the client went away); returns at once. */
void px_stream_cancel(struct px_stream *s);
/* Aborts if still running, joins the thread, frees everything but s itself. */
void px_stream_finish(struct px_stream *s);

#endif
