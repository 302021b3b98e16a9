/* SPDX-License-Identifier: Apache-2.0 */
/* test_client: the proxy tests' HTTP client on libcurl — one request with status, body,
 * Content-Type and X-Request-Id captured, plus a small formatting helper. */
#ifndef TEST_CLIENT_H
#define TEST_CLIENT_H

#include <curl/curl.h>
#include <stddef.h>

struct tc_resp {
	long status;
	char *body;
	size_t len;
	char ctype[128];
	char rid[96];
	char fake[16];      /* X-Fake-Backend, which only the fake backend sets */
	volatile int *gate; /* set to 1 when the first body bytes arrive */
	int hang_up;        /* abort the transfer after the first body bytes */
	double t_first, t_end;
};

/* A configured easy handle (not started) for POST (body) or GET. */
CURL *tc_req_new(int port, const char *method, const char *path, const char *body, size_t blen,
                 struct curl_slist *h, struct tc_resp *r);
/* One request to 127.0.0.1:port; hdrs is a NULL-terminated list of "K: v" (may be NULL).
 * Keeps r->gate and r->hang_up, frees the previous body. Returns the CURLcode. */
int tc_http(int port, const char *method, const char *path, const char *body,
            const char *const *hdrs, struct tc_resp *r);
void tc_hfree(struct tc_resp *r);
/* printf into one of 16 rotating static buffers (128 bytes): for short test strings. */
char *tc_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

#endif
