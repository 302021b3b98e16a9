/* SPDX-License-Identifier: Apache-2.0 */
/* hr_http: the one libcurl set-up of an OpenAI request (POST of a JSON body, streamed answer),
 * shared by the scenario workload (hr_workload.c) and pdkv bench serve (bench_serve_load.c). */
#ifndef HR_HTTP_H
#define HR_HTTP_H

#include <curl/curl.h>

/* Sets on easy handle c: url, body as the POST fields, a "Content-Type: application/json"
 * header appended to *h (the caller frees *h after the transfer), body_cb and hdr_cb with ud as
 * their data, xfer_cb (progress on; a non-zero return aborts) with ud, a timeout_ms limit on
 * the whole transfer and no signals. The caller adds what is its own and performs it. */
void hr_http_post_json(CURL *c, const char *url, const char *body, struct curl_slist **h,
                       curl_write_callback body_cb, curl_write_callback hdr_cb,
                       curl_xferinfo_callback xfer_cb, void *ud, long timeout_ms);

#endif
