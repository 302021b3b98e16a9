/* SPDX-License-Identifier: Apache-2.0 */
/* hr_http: the libcurl options every OpenAI request of pdkv run and pdkv bench serve shares. */
#include "hr_http.h"

void hr_http_post_json(CURL *c, const char *url, const char *body, struct curl_slist **h,
                       curl_write_callback body_cb, curl_write_callback hdr_cb,
                       curl_xferinfo_callback xfer_cb, void *ud, long timeout_ms)
{
	*h = curl_slist_append(*h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, ud);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hdr_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, ud);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, xfer_cb);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, ud);
}
