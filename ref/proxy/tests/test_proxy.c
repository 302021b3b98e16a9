/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end tests for pdkv-proxy: the real binary between in-process fake prefill/decode
 * servers (fake_backend.c) on free loopback ports, in the default v0 contract. Checks request
 * shapes, SSE passthrough, round robin, failure mapping, limits, request ids, toy flags and
 * clean shutdown (prefill 4xx and decode cut mid-answer: test_contracts.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_backend.h"
#include "proxy_testenv.h"
#include "test_client.h"
#include "pd_proc.h"
#include "pd_util.h"

static struct fb P[2], D[2];
static char bin[PATH_MAX], tmpdir[] = "/tmp/pdkv-proxy-test-XXXXXX";
static struct pd_proc proxy_a, proxy_b;
static int port_a, port_b, dead_port;

/* ---- helpers ---- */

static cJSON *req_json(struct fb *f, int i)
{
	cJSON *j;
	pthread_mutex_lock(&f->mu);
	assert_true(i < f->n);
	j = cJSON_Parse(f->reqs[i].body ? f->reqs[i].body : "");
	pthread_mutex_unlock(&f->mu);
	if (!j)
		fail_msg("%s request %d body is not JSON", f->name, i);
	return j;
}

static int total(struct fb *f)
{
	return fb_count(&f[0]) + fb_count(&f[1]);
}

static struct fb *which(struct fb *f)
{
	return fb_count(&f[0]) ? &f[0] : &f[1];
}

static void check_error_json(struct tc_resp *r, long status, const char *type, const char *msg_part)
{
	cJSON *j = cJSON_Parse(r->body);
	if (r->status != status)
		fail_msg("status %ld, want %ld; body %s", r->status, status, r->body);
	if (!j)
		fail_msg("error body is not JSON: %s", r->body);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "object")), "error");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "type")), type);
	assert_int_equal((long)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "code")), status);
	assert_has(cJSON_GetStringValue(cJSON_GetObjectItem(j, "message")), msg_part);
	assert_has(r->ctype, "application/json");
	cJSON_Delete(j);
}

/* Starts pdkv-proxy on a free port with the given flags (NULL-terminated). */
static int start_proxy(struct pd_proc *p, int *port, const char *name, const char *const *flags)
{
	return pt_start_proxy(bin, tmpdir, p, port, name, flags, NULL, 200, 250);
}

/* ---- tests on proxy A: 2 prefill + 2 decode, all URL spellings ---- */

static const char *BODY =
    "{\"model\":\"Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4\",\"prompt\":\"San Francisco is a\","
    "\"max_tokens\":1000,\"temperature\":0}";
static const char *BODY_STREAM =
    "{\"model\":\"m\", \"prompt\":\"San Francisco is a\", \"max_tokens\":8,"
    " \"stream\":true, \"stream_options\":{\"include_usage\":true}}";

static void test_health(void **state)
{
	struct tc_resp r = {0};
	const char *paths[] = {"/health", "/healthcheck"};
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		cJSON *j, *p, *d;
		assert_int_equal(tc_http(port_a, "GET", paths[i], NULL, NULL, &r), CURLE_OK);
		assert_int_equal(r.status, 200);
		j = cJSON_Parse(r.body);
		assert_non_null(j);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "ok");
		p = cJSON_GetObjectItem(j, "prefill");
		d = cJSON_GetObjectItem(j, "decode");
		assert_int_equal(cJSON_GetArraySize(p), 2);
		assert_int_equal(cJSON_GetArraySize(d), 2);
		/* every spelling normalised to a base URL */
		assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(p, 0)),
		                    tc_fmt("http://127.0.0.1:%d", P[0].port));
		assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(p, 1)),
		                    tc_fmt("http://127.0.0.1:%d", P[1].port));
		assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(d, 0)),
		                    tc_fmt("http://127.0.0.1:%d", D[0].port));
		assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(d, 1)),
		                    tc_fmt("http://127.0.0.1:%d", D[1].port));
		assert_int_equal(
		    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "prefill_instances")), 2);
		cJSON_Delete(j);
	}
	tc_hfree(&r);
}

static void test_completion_json(void **state)
{
	struct tc_resp r = {0};
	const char *hdrs[] = {"X-Request-Id: test-rid-123", "Authorization: Bearer sk-test", NULL};
	struct fb *p, *d;
	cJSON *j;
	(void)state;
	pt_reset_all(P, D);
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY, hdrs, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(total(P), 1);
	assert_int_equal(total(D), 1);
	p = which(P);
	d = which(D);
	/* the client gets decode's answer unchanged */
	assert_has(r.body, tc_fmt("\"backend\":\"%s\"", d->name));
	assert_has(r.ctype, "application/json");
	assert_string_equal(r.fake, "yes"); /* decode's own headers pass through */
	/* prefill: same request, max_tokens=1, stream=false */
	assert_string_equal(p->reqs[0].path, "/v1/completions");
	j = req_json(p, 0);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "max_tokens")), 1);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "stream")));
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "prompt")),
	                    "San Francisco is a");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "model")),
	                    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4");
	cJSON_Delete(j);
	/* decode: the original bytes */
	assert_string_equal(d->reqs[0].path, "/v1/completions");
	assert_int_equal(d->reqs[0].len, strlen(BODY));
	assert_memory_equal(d->reqs[0].body, BODY, strlen(BODY));
	/* request id and authorization on both calls and on the answer */
	assert_string_equal(p->reqs[0].rid, "test-rid-123");
	assert_string_equal(d->reqs[0].rid, "test-rid-123");
	assert_string_equal(r.rid, "test-rid-123");
	assert_string_equal(p->reqs[0].auth, "Bearer sk-test");
	assert_string_equal(d->reqs[0].auth, "Bearer sk-test");

	/* without an id the proxy makes one (uuid4) and sends the same one to both */
	pt_reset_all(P, D);
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	p = which(P);
	d = which(D);
	assert_int_equal(strlen(p->reqs[0].rid), 36);
	assert_string_equal(p->reqs[0].rid, d->reqs[0].rid);
	assert_string_equal(r.rid, d->reqs[0].rid);
	assert_string_equal(d->reqs[0].auth, "");
	tc_hfree(&r);
}

static void test_stream_sse(void **state)
{
	struct tc_resp r = {0};
	volatile int gate = 0;
	char *want = fb_sse_expected(8);
	struct fb *p, *d;
	cJSON *j;
	(void)state;
	pt_reset_all(P, D);
	D[0].gate = D[1].gate = &gate;
	r.gate = &gate;
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY_STREAM, NULL, &r),
	                 CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_has(r.ctype, "text/event-stream");
	/* all chunks, in order, ending with [DONE] */
	assert_string_equal(r.body, want);
	assert_has(r.body, "data: [DONE]\n\n");
	/* the first chunk reached the client before decode produced the second: no buffering */
	if (D[0].gate_missed + D[1].gate_missed)
		fail_msg(
		    "the first SSE chunk did not reach the client before decode sent the next: "
		    "the proxy buffered the stream");
	p = which(P);
	d = which(D);
	j = req_json(p, 0);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "stream")));
	assert_null(cJSON_GetObjectItem(j, "stream_options"));
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "max_tokens")), 1);
	cJSON_Delete(j);
	assert_memory_equal(d->reqs[0].body, BODY_STREAM, strlen(BODY_STREAM));
	free(want);
	tc_hfree(&r);
}

/* A client that hangs up mid-stream: the proxy aborts the decode call instead of draining it. */
static void test_client_hangup(void **state)
{
	struct tc_resp r = {0};
	char path[PATH_MAX], *log = NULL;
	size_t len;
	int ended = -1;
	(void)state;
	pt_reset_all(P, D);
	D[0].sse_chunks = D[1].sse_chunks = 400; /* 2 ms apart: ~0.8 s if nobody stops it */
	r.hang_up = 1;
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY_STREAM, NULL, &r),
	                 CURLE_WRITE_ERROR);
	for (int i = 0; i < 300 && ended < 0; i++) {
		ended = __atomic_load_n(&D[0].sse_ended_at, __ATOMIC_RELAXED);
		if (ended < 0)
			ended = __atomic_load_n(&D[1].sse_ended_at, __ATOMIC_RELAXED);
		pd_sleep_ms(10);
	}
	if (ended < 0 || ended >= 400)
		fail_msg(
		    "decode sent %d of 400 chunks after the client hung up (want an early stop)",
		    ended);
	snprintf(path, sizeof(path), "%s/proxy-a.log", tmpdir);
	for (int i = 0; i < 100; i++) {
		free(log);
		log = NULL;
		assert_int_equal(pd_read_file(path, 16 << 20, &log, &len), 0);
		if (strstr(log, tc_fmt("rid=%s ", r.rid)) &&
		    strstr(log, "(client gone or aborted)"))
			break;
		pd_sleep_ms(20);
	}
	assert_has(log, "(client gone or aborted)");
	free(log);
	r.hang_up = 0;
	assert_int_equal(tc_http(port_a, "GET", "/health", NULL, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	tc_hfree(&r);
}

/* A decode answer far larger than the stream queue (--stream-buffer 4KiB on proxy A) arrives
 * byte for byte. */
static void test_big_answer(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	D[0].mode = D[1].mode = FB_BIG;
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, FB_BIG_BYTES);
	/* the fake fills the text with 'a' + (offset in the body % 26) */
	const char *t = strstr(r.body, "\"text\":\"");
	assert_non_null(t);
	for (size_t i = (size_t)(t - r.body) + 8; i < FB_BIG_BYTES - 4; i++)
		if (r.body[i] != (char)('a' + i % 26))
			fail_msg("byte %zu of the big answer differs", i);
	assert_string_equal(r.body + FB_BIG_BYTES - 4, "\"}]}");
	tc_hfree(&r);
}

static void test_round_robin_chat(void **state)
{
	struct tc_resp r = {0};
	const char *chat = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	                   "\"max_completion_tokens\":50}";
	(void)state;
	pt_reset_all(P, D);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(tc_http(port_a, "POST", "/v1/chat/completions", chat, NULL, &r),
		                 CURLE_OK);
		assert_int_equal(r.status, 200);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fb_count(&P[i]), 2);
		assert_int_equal(fb_count(&D[i]), 2);
		assert_string_equal(P[i].reqs[0].path, "/v1/chat/completions");
		assert_string_equal(D[i].reqs[1].path, "/v1/chat/completions");
		cJSON *j = req_json(&P[i], 0);
		assert_int_equal(
		    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "max_completion_tokens")), 1);
		assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "max_tokens")),
		                 1);
		cJSON_Delete(j);
		assert_memory_equal(D[i].reqs[0].body, chat, strlen(chat));
	}

	/* duplicate keys: Python keeps the last one, so none may survive in the prefill copy */
	pt_reset_all(P, D);
	assert_int_equal(
	    tc_http(port_a, "POST", "/v1/completions",
	            "{\"prompt\":\"x\",\"max_tokens\":500,\"stream\":true,\"max_tokens\":700,"
	            "\"stream\":true,\"stream_options\":{},\"stream_options\":{}}",
	            NULL, &r),
	    CURLE_OK);
	assert_int_equal(r.status, 200);
	{
		const char *b = which(P)->reqs[0].body, *k = strstr(b, "\"max_tokens\"");
		if (!k || strstr(k + 1, "\"max_tokens\"") || strstr(b, "stream_options") ||
		    strstr(b, "true"))
			fail_msg("prefill body keeps a duplicate: %s", b);
	}
	tc_hfree(&r);
}

static void test_prefill_500(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	P[0].mode = P[1].mode = FB_FAIL500;
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	check_error_json(&r, 502, "BadGateway", "prefill http://127.0.0.1:");
	assert_has(r.body, "HTTP 500");
	assert_has(r.body, "injected failure");
	assert_int_equal(total(P), 1);
	assert_int_equal(total(D), 0); /* no fall-through to decode */
	tc_hfree(&r);
}

static void test_decode_4xx_passthrough(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	D[0].mode = D[1].mode = FB_FAIL400;
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 400);
	assert_string_equal(r.body, FB_FAIL400_BODY);
	assert_has(r.ctype, "application/json");
	assert_int_equal(total(P), 1);
	assert_int_equal(total(D), 1);
	tc_hfree(&r);
}

static void test_bad_requests(void **state)
{
	struct tc_resp r = {0};
	char *big;
	(void)state;
	pt_reset_all(P, D);
	assert_int_equal(
	    tc_http(port_a, "POST", "/v1/completions", "{\"prompt\": \"x\",", NULL, &r), CURLE_OK);
	check_error_json(&r, 400, "BadRequestError", "invalid JSON");
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", "[1,2]", NULL, &r), CURLE_OK);
	check_error_json(&r, 400, "BadRequestError", "JSON object");
	assert_int_equal(tc_http(port_a, "POST", "/v1/chat/completions", "", NULL, &r), CURLE_OK);
	check_error_json(&r, 400, "BadRequestError", "empty");
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", "{} trailing", NULL, &r),
	                 CURLE_OK);
	check_error_json(&r, 400, "BadRequestError", "invalid JSON");
	assert_int_equal(tc_http(port_a, "GET", "/v1/completions", NULL, NULL, &r), CURLE_OK);
	check_error_json(&r, 405, "MethodNotAllowed", "GET");
	assert_int_equal(tc_http(port_a, "GET", "/nope", NULL, NULL, &r), CURLE_OK);
	check_error_json(&r, 404, "NotFoundError", "/nope");
	/* proxy A runs with --max-body 64KiB */
	big = malloc(100 * 1024 + 1);
	memset(big, ' ', 100 * 1024);
	big[0] = '{';
	big[100 * 1024 - 1] = '}';
	big[100 * 1024] = '\0';
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", big, NULL, &r), CURLE_OK);
	check_error_json(&r, 413, "RequestEntityTooLarge", "65536");
	/* the same without a Content-Length (chunked upload): found while reading */
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", big,
	                         (const char *[]){"Transfer-Encoding: chunked", NULL}, &r),
	                 CURLE_OK);
	check_error_json(&r, 413, "RequestEntityTooLarge", "65536");
	free(big);
	assert_int_equal(total(P) + total(D), 0);
	/* the proxy still serves after all that */
	assert_int_equal(tc_http(port_a, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	tc_hfree(&r);
}

static void test_models(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	assert_int_equal(tc_http(port_a, "GET", "/v1/models", NULL, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_has(r.body, "fake-D0");
	assert_int_equal(fb_count(&D[0]), 1);
	assert_string_equal(D[0].reqs[0].method, "GET");
	assert_int_equal(total(P), 0);
	tc_hfree(&r);
}

static void test_concurrent(void **state)
{
	enum { N = 16 };
	struct tc_resp r[N];
	CURL *e[N];
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	CURLM *m = curl_multi_init();
	int running = 1;
	double t0 = pd_now_s();
	(void)state;
	pt_reset_all(P, D);
	memset(r, 0, sizeof(r));
	for (int i = 0; i < N; i++) {
		const char *b = i % 2 ? BODY : BODY_STREAM;
		e[i] = tc_req_new(port_a, "POST", "/v1/completions", b, strlen(b), h, &r[i]);
		curl_multi_add_handle(m, e[i]);
	}
	while (running && pd_now_s() - t0 < 10) {
		curl_multi_perform(m, &running);
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (int i = 0; i < N; i++) {
		curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &r[i].status);
		curl_multi_remove_handle(m, e[i]);
		curl_easy_cleanup(e[i]);
	}
	curl_multi_cleanup(m);
	curl_slist_free_all(h);
	for (int i = 0; i < N; i++) {
		if (r[i].status != 200)
			fail_msg("concurrent request %d: status %ld body %s", i, r[i].status,
			         r[i].body ? r[i].body : "");
		if (i % 2 == 0)
			assert_has(r[i].body, "data: [DONE]");
		free(r[i].body);
	}
	assert_int_equal(total(P), N);
	assert_int_equal(total(D), N);
}

static void test_access_log(void **state)
{
	char path[PATH_MAX], *log = NULL;
	size_t len;
	(void)state;
	snprintf(path, sizeof(path), "%s/proxy-a.log", tmpdir);
	assert_int_equal(pd_read_file(path, 16 << 20, &log, &len), 0);
	assert_has(log, "POST /v1/completions 200 rid=test-rid-123 prefill=http://127.0.0.1:");
	assert_has(log, "ttfb=");
	assert_has(log, "POST /v1/completions 502 rid=");
	assert_has(log, "GET /v1/models 200");
	free(log);
}

/* ---- proxy B: prefill = [nothing listening, P0], decode = [nothing listening] ---- */

static void test_backend_down_and_timeout(void **state)
{
	struct tc_resp r = {0};
	double t;
	(void)state;
	pt_reset_all(P, D);
	/* 1: prefill down -> 502, decode not tried */
	assert_int_equal(tc_http(port_b, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	check_error_json(&r, 502, "BadGateway",
	                 tc_fmt("prefill http://127.0.0.1:%d/v1/completions: ", dead_port));
	/* 2: prefill P0 stalls past --prefill-timeout 0.4 -> 502 naming the timeout */
	P[0].mode = FB_SLOW;
	P[0].slow_ms = 3000;
	t = pd_now_s();
	assert_int_equal(tc_http(port_b, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	check_error_json(&r, 502, "BadGateway",
	                 tc_fmt("prefill http://127.0.0.1:%d/v1/completions: ", P[0].port));
	assert_has(r.body, "timed out");
	assert_true(pd_now_s() - t < 2.0);
	__atomic_store_n(&P[0].mode, FB_OK, __ATOMIC_RELAXED); /* ends the stall */
	assert_int_equal(total(D), 0);
	/* 3: prefill down again (round robin), 4: prefill fine, decode down -> 502 naming decode */
	assert_int_equal(tc_http(port_b, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 502);
	assert_int_equal(tc_http(port_b, "POST", "/v1/completions", BODY, NULL, &r), CURLE_OK);
	check_error_json(&r, 502, "BadGateway",
	                 tc_fmt("decode http://127.0.0.1:%d/v1/completions: ", dead_port));
	assert_int_equal(fb_count(&P[0]), 2);
	tc_hfree(&r);
}

/* ---- proxy C: the toy proxy's spellings; then a clean SIGTERM with a request in flight ---- */

struct bg {
	pthread_t t;
	int port;
	struct tc_resp r;
};

static void *bg_request(void *arg)
{
	struct bg *b = arg;
	tc_http(b->port, "POST", "/v1/completions", BODY, NULL, &b->r);
	return NULL;
}

static void test_toy_flags_and_shutdown(void **state)
{
	struct pd_proc c;
	struct tc_resp r = {0};
	struct bg b = {0};
	int port;
	double t;
	const char *flags[] = {"--prefiller-host",
	                       "127.0.0.1",
	                       "--prefiller-port",
	                       tc_fmt("%d,%d", P[0].port, P[1].port),
	                       "--decoder-hosts",
	                       "127.0.0.1",
	                       "127.0.0.1",
	                       "--decoder-ports",
	                       tc_fmt("%d", D[0].port),
	                       tc_fmt("%d", D[1].port),
	                       NULL};
	cJSON *j;
	(void)state;
	pt_reset_all(P, D);
	assert_int_equal(start_proxy(&c, &port, "proxy-c", flags), 0);
	assert_int_equal(tc_http(port, "GET", "/healthcheck", NULL, NULL, &r), CURLE_OK);
	j = cJSON_Parse(r.body);
	assert_non_null(j);
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "prefill"), 1)),
	    tc_fmt("http://127.0.0.1:%d", P[1].port));
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "decode"), 1)),
	    tc_fmt("http://127.0.0.1:%d", D[1].port));
	cJSON_Delete(j);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tc_http(port, "POST", "/v1/completions", BODY, NULL, &r),
		                 CURLE_OK);
		assert_int_equal(r.status, 200);
	}
	assert_int_equal(fb_count(&P[0]), 1);
	assert_int_equal(fb_count(&D[1]), 1);

	/* SIGTERM while decode stalls: the proxy aborts the call and exits 0, promptly */
	D[0].mode = D[1].mode = FB_SLOW;
	D[0].slow_ms = D[1].slow_ms = 5000;
	b.port = port;
	assert_int_equal(pthread_create(&b.t, NULL, bg_request, &b), 0);
	for (int i = 0; i < 200 && total(D) < 3; i++)
		pd_sleep_ms(10);
	assert_int_equal(total(D), 3);
	t = pd_now_s();
	kill(c.pid, SIGTERM);
	assert_int_equal(pd_proc_wait(&c, 4000), 0);
	t = pd_now_s() - t;
	pthread_join(b.t, NULL);
	pt_reset_all(P, D);
	if (!WIFEXITED(c.exit_status) || WEXITSTATUS(c.exit_status) != 0)
		fail_msg("proxy-c did not exit 0 on SIGTERM (wait status 0x%x)", c.exit_status);
	if (t > 3.0)
		fail_msg("proxy-c took %.1f s to stop", t);
	/* the in-flight client got an answer or a closed connection, never a hang */
	assert_true(b.r.t_end > 0);
	if (b.r.status)
		assert_int_equal(b.r.status, 502);
	tc_hfree(&b.r);
	tc_hfree(&r);
	pd_proc_stop(&c, 1000);
}

/* ---- the binary's own flag handling ---- */

static int run_bin(const char *const *args, char **out)
{
	struct pd_proc p;
	char *argv[16], logp[PATH_MAX];
	size_t len;
	int argc = 0;
	argv[argc++] = bin;
	for (int i = 0; args[i]; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	snprintf(logp, sizeof(logp), "%s/run.log", tmpdir);
	unlink(logp);
	assert_int_equal(pd_proc_spawn(&p, "pdkv-proxy", argv, NULL, logp), 0);
	if (pd_proc_wait(&p, 3000)) {
		pd_proc_stop(&p, 100);
		fail_msg("pdkv-proxy %s did not exit", args[0]);
	}
	assert_int_equal(pd_read_file(logp, 1 << 20, out, &len), 0);
	return WIFEXITED(p.exit_status) ? WEXITSTATUS(p.exit_status) : 128;
}

static void test_binary_flags(void **state)
{
	char *out = NULL;
	(void)state;
	assert_int_equal(run_bin((const char *[]){"--help", NULL}, &out), 0);
	assert_has(out, "--prefiller-host");
	assert_has(out, "--contract NAME");
	assert_has(out, "mooncake_connector_proxy.py");
	free(out);
	assert_int_equal(run_bin((const char *[]){"--contract", "nixl", NULL}, &out), 2);
	assert_has(out, "--contract: expected v0, toy, mooncake or auto");
	free(out);
	assert_int_equal(run_bin((const char *[]){"--bogus", NULL}, &out), 2);
	assert_has(out, "pdkv-proxy: unknown option --bogus");
	free(out);
	assert_int_equal(run_bin((const char *[]){"--decode", "nohostport", NULL}, &out), 2);
	assert_has(out, "--decode: expected http://host:port or host:port");
	free(out);
	assert_int_equal(
	    run_bin((const char *[]){"--decoder-port", "1,2", "--decoder-host", "a,b,c", NULL},
	            &out),
	    2);
	assert_has(out, "must match");
	free(out);
	assert_int_equal(run_bin((const char *[]){"--prefill-timeout", "soon", NULL}, &out), 2);
	assert_has(out, "--prefill-timeout");
	free(out);
}

/* ---- setup ---- */

static int setup(void **state)
{
	(void)state;
	if (pt_setup(bin, sizeof(bin), tmpdir, P, D))
		return -1;
	dead_port = pd_free_port("127.0.0.1");
	const char *fa[] = {"--prefill",
	                    tc_fmt("http://127.0.0.1:%d/v1/completions", P[0].port),
	                    "--prefill",
	                    tc_fmt("127.0.0.1:%d", P[1].port),
	                    "--decode",
	                    tc_fmt("http://127.0.0.1:%d", D[0].port),
	                    "--decode",
	                    tc_fmt("127.0.0.1:%d/v1/", D[1].port),
	                    "--max-body",
	                    "64KiB",
	                    "--connect-timeout",
	                    "2",
	                    "--stream-buffer",
	                    "4KiB",
	                    NULL};
	if (start_proxy(&proxy_a, &port_a, "proxy-a", fa))
		return -1;
	const char *fbb[] = {"--prefill",
	                     tc_fmt("127.0.0.1:%d", dead_port),
	                     "--prefill",
	                     tc_fmt("http://127.0.0.1:%d", P[0].port),
	                     "--decode",
	                     tc_fmt("127.0.0.1:%d", dead_port),
	                     "--prefill-timeout",
	                     "0.4",
	                     "--connect-timeout",
	                     "1",
	                     NULL};
	if (start_proxy(&proxy_b, &port_b, "proxy-b", fbb))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	int ret = 0;
	(void)state;
	ret |= pt_stop_checked(&proxy_a);
	ret |= pt_stop_checked(&proxy_b);
	return pt_teardown(tmpdir, P, D, ret);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_health),
	    cmocka_unit_test(test_completion_json),
	    cmocka_unit_test(test_stream_sse),
	    cmocka_unit_test(test_client_hangup),
	    cmocka_unit_test(test_big_answer),
	    cmocka_unit_test(test_round_robin_chat),
	    cmocka_unit_test(test_prefill_500),
	    cmocka_unit_test(test_decode_4xx_passthrough),
	    cmocka_unit_test(test_bad_requests),
	    cmocka_unit_test(test_models),
	    cmocka_unit_test(test_concurrent),
	    cmocka_unit_test(test_access_log),
	    cmocka_unit_test(test_backend_down_and_timeout),
	    cmocka_unit_test(test_toy_flags_and_shutdown),
	    cmocka_unit_test(test_binary_flags),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
