/* SPDX-License-Identifier: Apache-2.0 */
/* test_client: the proxy tests' HTTP client (see test_client.h). */
#include "test_client.h"
#include "pd_tsan.h"
#include "pd_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static size_t on_body(char *p, size_t sz, size_t n, void *u)
{
	struct tc_resp *r = u;
	size_t len = sz * n;
	char *nb;
	if (r->hang_up && r->len)
		return 0;
	nb = realloc(r->body, r->len + len + 1);
	if (!nb)
		return 0;
	r->body = nb;
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = '\0';
	if (!r->t_first)
		r->t_first = pd_now_s();
	if (r->gate)
		__atomic_store_n(r->gate, 1, __ATOMIC_RELAXED); /* the fake's SSE reader polls it */
	return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *u)
{
	struct tc_resp *r = u;
	size_t len = sz * n, l = len;
	while (l && (p[l - 1] == '\r' || p[l - 1] == '\n'))
		l--;
	if (l > 14 && !strncasecmp(p, "Content-Type: ", 14))
		snprintf(r->ctype, sizeof(r->ctype), "%.*s", (int)(l - 14), p + 14);
	if (l > 16 && !strncasecmp(p, "X-Fake-Backend: ", 16))
		snprintf(r->fake, sizeof(r->fake), "%.*s", (int)(l - 16), p + 16);
	if (l > 14 && !strncasecmp(p, "X-Request-Id: ", 14))
		snprintf(r->rid, sizeof(r->rid), "%.*s", (int)(l - 14), p + 14);
	return len;
}

CURL *tc_req_new(int port, const char *method, const char *path, const char *body, size_t blen,
                 struct curl_slist *h, struct tc_resp *r)
{
	char url[256];
	CURL *e = curl_easy_init();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	if (!strcmp(method, "POST")) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)blen);
	}
	return e;
}

/* One request; extra headers "K: v" (NULL-terminated list, may be NULL). */
int tc_http(int port, const char *method, const char *path, const char *body,
            const char *const *hdrs, struct tc_resp *r)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	CURL *e;
	int res;
	for (int i = 0; hdrs && hdrs[i]; i++)
		h = curl_slist_append(h, hdrs[i]);
	free(r->body);
	volatile int *gate = r->gate;
	int hang_up = r->hang_up;
	memset(r, 0, sizeof(*r));
	r->gate = gate;
	r->hang_up = hang_up;
	e = tc_req_new(port, method, path, body, body ? strlen(body) : 0, h, r);
	/* what the test set in a fake backend before this request is seen by its handler (the
	 * order runs through sockets, which TSan does not see) */
	PD_TSAN_WIRE_SEND();
	res = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
	r->t_end = pd_now_s();
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	if (!r->body)
		r->body = calloc(1, 1);
	return res;
}

void tc_hfree(struct tc_resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

char *tc_fmt(const char *f, ...)
{
	static char bufs[16][128];
	static int k;
	char *b = bufs[k++ % 16];
	va_list ap;
	va_start(ap, f);
	vsnprintf(b, 128, f, ap);
	va_end(ap);
	return b;
}
