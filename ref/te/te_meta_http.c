/* te_meta_http: Mooncake's HTTP metadata protocol — <base>?key=<curl_easy_escape(key)>;
 * GET 200 = value, 404 = absent; PUT (application/json) and DELETE need 200; 3 s timeout. */
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

static int http_open(const struct te_conn_info *ci, void **state, char *errbuf, size_t errlen)
{
	struct http *h = calloc(1, sizeof(*h));
	char err[512] = "", *url, *text = NULL;
	long status = 0;
	int ret;

	if (!h)
		return TE_ERR_MEMORY;
	snprintf(h->base, sizeof(h->base), "%s", ci->url);
	/* any HTTP answer (200 or 404) proves the server is there; nothing answering is an error */
	url = key_url(h, "mooncake/pdkv-probe");
	if (!url) {
		free(h);
		return TE_ERR_MEMORY;
	}
	ret = te_meta_http_request("GET", url, NULL, 0, NULL, HTTP_TIMEOUT_MS, &status, &text, NULL,
	                           err, sizeof(err));
	free(text);
	free(url);
	if (ret) {
		snprintf(errbuf, errlen, "http metadata server %s is unreachable: %s", ci->url,
		         err);
		free(h);
		return ret;
	}
	if (status != 200 && status != 404)
		pd_warn("http metadata server %s answered a probe GET with HTTP %ld", ci->url,
		        status);
	*state = h;
	return 0;
}

static int http_put(void *state, const char *key, const char *val, size_t len)
{
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
