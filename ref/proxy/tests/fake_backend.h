/* fake_backend: a minimal OpenAI-style server for the proxy tests (libmicrohttpd). It records
 * every request, answers JSON or SSE like vLLM, or fails / stalls on demand. */
#ifndef FAKE_BACKEND_H
#define FAKE_BACKEND_H

#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>

enum fb_mode { FB_OK, FB_FAIL500, FB_FAIL400, FB_SLOW, FB_BIG };

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
	char *body;
	size_t len;
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
	volatile int sse_ended_at; /* chunks sent when the last SSE answer ended, -1 while none */
	pthread_mutex_t mu;
	struct fb_req reqs[FB_MAX_REQS];
	int n;
};

int fb_start(struct fb *f, const char *name);
void fb_stop(struct fb *f);
void fb_reset(struct fb *f); /* forget recorded requests, mode back to FB_OK */
int fb_count(struct fb *f);
/* The SSE answer the fake sends for n chunks (malloc'd), for comparison. */
char *fb_sse_expected(int n);

#endif
