/* SPDX-License-Identifier: Apache-2.0 */
/* fake_backend: a minimal OpenAI-style server for the proxy tests (libmicrohttpd). It records
 * every request (body, headers, times), answers JSON or SSE like vLLM, serves a bootstrap
 * /query, and fails, stalls, holds or dies mid-answer on demand. */
#ifndef FAKE_BACKEND_H
#define FAKE_BACKEND_H

#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* FB_CUT: SSE sends cut_after chunks, JSON half its body, then the connection drops (a decode
 * killed mid-answer). FB_DROP: the connection closes before any answer. */
enum fb_mode { FB_OK, FB_FAIL500, FB_FAIL400, FB_SLOW, FB_BIG, FB_CUT, FB_DROP };

#define FB_BIG_BYTES (1 << 20) /* FB_BIG: a JSON answer this large, text of 'a'..'z' */

#define FB_MAX_REQS 128
#define FB_FAIL400_BODY                                                                            \
	"{\"object\":\"error\",\"message\":\"max_tokens is too "                                   \
	"large\",\"type\":\"BadRequestError\",\"code\":400}"

struct fb_req {
	char method[8];
	char path[64];
	char rid[80];
	char auth[128];
	char dp[16];    /* X-data-parallel-rank, "" when absent */
	char ctype[64]; /* Content-Type */
	char *body;
	size_t len;
	uint64_t t_in_ns;  /* the whole request had arrived */
	uint64_t t_out_ns; /* the answer was queued (0 for streamed answers) */
};

struct fb {
	struct MHD_Daemon *d;
	int port;
	char name[16];
	volatile int mode;
	int slow_ms;    /* FB_SLOW: delay before answering */
	int sse_chunks; /* tokens in a streamed answer */
	/* Streaming proof: after the first chunk, wait (at most 3 s) for *gate to become 1, which
	 * the test client sets when it has received that chunk. gate_missed counts timeouts. */
	volatile int *gate;
	volatile int gate_missed;
	int gate_ms;               /* how long the gate waits (default 3000) */
	volatile int sse_ended_at; /* chunks sent when the last SSE answer ended, -1 while none */
	/* Completions only: wait (at most 5 s) until *hold is non-zero before answering;
	 * hold_missed counts timeouts. *on_request is set to 1 when a completion arrives. */
	volatile int *hold;
	volatile int hold_missed;
	volatile int *on_request;
	int cut_after;              /* FB_CUT: SSE chunks sent before the drop */
	volatile int health_status; /* GET /health answer; 0 = 200 */
	const char *query_json;     /* GET /query answer (200), NULL = 404 */
	const char *kvp_json;       /* top-level "kv_transfer_params" in JSON answers, or NULL */
	pthread_mutex_t mu;
	struct fb_req reqs[FB_MAX_REQS];
	int n;
};

int fb_start(struct fb *f, const char *name);
void fb_stop(struct fb *f);
void fb_reset(struct fb *f); /* forget recorded requests, mode back to FB_OK */
int fb_count(struct fb *f);
/* Requests recorded whose path is path. */
int fb_count_path(struct fb *f, const char *path);
/* The SSE answer the fake sends for n chunks (malloc'd), for comparison. */
char *fb_sse_expected(int n);

#endif
