/* SPDX-License-Identifier: Apache-2.0 */
/* te_meta_curl: the one libcurl request the HTTP-speaking metadata backends (etcd's JSON gateway,
 * Mooncake's HTTP metadata server) share; below te_meta.c and its backends. */
#include "te_internal.h"

#include "pd_buf.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_MAX_RESPONSE (256u << 20)

/* ------------------------------------------------------------------ libcurl */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void te_meta_http_global_init(void)
{
	pthread_once(&curl_once, curl_init_once);
}

int te_meta_http_request(const char *method, const char *url, const char *body, size_t len,
                         const char *content_type, long timeout_ms, long *status, char **resp,
                         size_t *resp_len, char *errbuf, size_t errlen)
{
	char cerr[CURL_ERROR_SIZE] = "", ct[128];
	struct curl_slist *hdr = NULL;
	struct pd_buf b = {.max = META_MAX_RESPONSE};
	CURLcode rc;
	CURL *c;
	int ret = TE_ERR_UNREACHABLE;

	pthread_once(&curl_once, curl_init_once);
	*status = 0;
	if (resp)
		*resp = NULL;
	if (resp_len)
		*resp_len = 0;
	c = curl_easy_init(); /* one handle per call: thread-safe without a lock */
	if (!c) {
		snprintf(errbuf, errlen, "curl_easy_init failed");
		return TE_ERR_MEMORY;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 1500 ? timeout_ms : 1500L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, pd_buf_curl_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (!strcmp(method, "GET")) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		if (body || strcmp(method, "DELETE")) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			                 (curl_off_t)(body ? len : 0));
		}
	}
	if (content_type) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
		hdr = curl_slist_append(hdr, ct);
	}
	hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);

	rc = curl_easy_perform(c);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		ret = 0;
	} else if (b.over) {
		snprintf(errbuf, errlen, "%s %s: response larger than %u bytes", method, url,
		         META_MAX_RESPONSE);
		ret = TE_ERR_METADATA;
	} else {
		snprintf(errbuf, errlen, "%s %s: %s", method, url,
		         cerr[0] ? cerr : curl_easy_strerror(rc));
		ret = rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_COULDNT_CONNECT ||
		              rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_RECV_ERROR ||
		              rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING
		          ? TE_ERR_UNREACHABLE
		          : TE_ERR_METADATA;
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	if (ret == 0 && resp) {
		*resp = b.p ? b.p : strdup("");
		if (resp_len)
			*resp_len = b.len;
		if (!*resp)
			ret = TE_ERR_MEMORY;
	} else {
		free(b.p);
	}
	return ret;
}
