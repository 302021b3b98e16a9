/* SPDX-License-Identifier: Apache-2.0 */
/* te_meta_http: Mooncake's HTTP metadata protocol — <base>?key=<curl_easy_escape(key)>;
 * GET 200 = value, 404 = absent; PUT (application/json) and DELETE need 200; 3 s timeout.
 * Values end with "\n" unless the emulated release is 0.3.6 or later (te_compat_http_newline). */
#include "te_internal.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"

#define HTTP_TIMEOUT_MS 3000

struct http {
	char base[1024];
};

static char *key_url(struct http *h, const char *key)
{
	char *esc = curl_easy_escape(NULL, key, 0), *url;
	if (!esc)
		return NULL;
	url = pd_asprintf("%s?key=%s", h->base, esc);
	curl_free(esc);
	return url;
}

/* One request; maps the answer: 200 -> 0, 404 -> NOT_FOUND, other -> METADATA. */
static int http_do(struct http *h, const char *method, const char *key, const char *body,
                   size_t len, char **resp, size_t *resp_len)
{
	char err[512] = "", *url = key_url(h, key), *text = NULL;
	size_t tlen = 0;
	long status = 0;
	int ret;

	if (!url)
		return TE_ERR_MEMORY;
	ret = te_meta_http_request(method, url, body, len, body ? "application/json" : NULL,
	                           HTTP_TIMEOUT_MS, &status, &text, &tlen, err, sizeof(err));
	if (ret) {
		pd_warn("http metadata %s \"%s\" failed: %s", method, key, err);
	} else if (status == 404 && strcmp(method, "PUT")) { /* a PUT 404 is a wrong server */
		ret = TE_ERR_NOT_FOUND;
	} else if (status != 200) {
		pd_warn("http metadata %s %s: HTTP %ld: %.200s", method, url, status, text);
		ret = TE_ERR_METADATA;
	} else if (resp) {
		*resp = text;
		*resp_len = tlen;
		text = NULL;
	}
	free(text);
	free(url);
	return ret;
}

/* Proves something listens at the server's address with a TCP connect and no HTTP request:
 * Mooncake sends nothing at start, so a probe GET would show up in the store's log as a key
 * no Mooncake engine ever reads. */
static int http_open(const struct te_conn_info *ci, void **state, char *errbuf, size_t errlen)
{
	struct http *h = calloc(1, sizeof(*h));
	char cerr[CURL_ERROR_SIZE] = "";
	CURLcode rc = CURLE_FAILED_INIT;
	CURL *c;

	if (!h)
		return TE_ERR_MEMORY;
	snprintf(h->base, sizeof(h->base), "%s", ci->url);
	te_meta_http_global_init();
	c = curl_easy_init();
	if (c) {
		curl_easy_setopt(c, CURLOPT_URL, h->base);
		curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1500L);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)HTTP_TIMEOUT_MS);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
		curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
		rc = curl_easy_perform(c);
		curl_easy_cleanup(c);
	}
	if (rc != CURLE_OK) {
		snprintf(errbuf, errlen, "http metadata server %s is unreachable: %s", ci->url,
		         cerr[0] ? cerr : curl_easy_strerror(rc));
		free(h);
		return rc == CURLE_FAILED_INIT ? TE_ERR_MEMORY : TE_ERR_UNREACHABLE;
	}
	*state = h;
	return 0;
}

static int http_put(void *state, const char *key, const char *val, size_t len)
{
	/* from 0.3.6 Mooncake's HTTP store writes values without FastWriter's "\n" */
	if (!te_compat_http_newline() && len && val[len - 1] == '\n')
		len--;
	return http_do(state, "PUT", key, val, len, NULL, NULL);
}

static int http_get(void *state, const char *key, char **val, size_t *len)
{
	return http_do(state, "GET", key, NULL, 0, val, len);
}

static int http_del(void *state, const char *key)
{
	return http_do(state, "DELETE", key, NULL, 0, NULL, NULL);
}

static void http_close(void *state)
{
	free(state);
}

const struct te_meta_backend te_meta_http_backend = {
    .kind = TE_META_HTTP,
    .open = http_open,
    .put = http_put,
    .get = http_get,
    .del = http_del,
    .close = http_close,
};
