/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end tests of pdkv-proxy's router contracts (v0 failure mapping, toy, mooncake): exact
 * prefill and decode bodies and headers, ordering, readiness, round robin and every failure
 * path, between in-process fake backends (fake_backend.c) on loopback. No timing assertions. */
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_backend.h"
#include "proxy_testenv.h"
#include "test_client.h"
#include "pd_proc.h"
#include "pd_util.h"

static struct fb P[2], D[2];
static char bin[PATH_MAX], tmpdir[] = "/tmp/pdkv-contract-test-XXXXXX";
static struct pd_proc v0, toy, moon;
static int v0_port, toy_port, moon_port;
static volatile int never; /* a flag nobody sets: holds a fake until fb_reset */
/* flags the fakes wait on live here, not on a test's stack: a fake may outlive a failed test */
static volatile int gate, d_arrived;

/* /query tables whose workers listen (worker_fd): pdkv-proxy fails a rank whose worker does not
 * answer a connect (issue 34) */
static char QUERY_P0[512], QUERY_P1[256];
static int worker_fd = -1;

static void make_queries(void)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int port;

	worker_fd = pd_tcp_listen("127.0.0.1", 0, 64);
	assert_true(worker_fd >= 0);
	assert_int_equal(getsockname(worker_fd, (struct sockaddr *)&a, &al), 0);
	port = ntohs(a.sin_port);
	snprintf(QUERY_P0, sizeof(QUERY_P0),
	         "{\"0\":{\"engine_id\":\"eng-p0-dp0\",\"worker_addr\":{\"0\":{\"0\":"
	         "\"tcp://127.0.0.1:%d\"}}},\"1\":{\"engine_id\":\"eng-p0-dp1\",\"worker_addr\":"
	         "{\"0\":{\"0\":\"tcp://127.0.0.1:%d\"}}}}",
	         port, port);
	snprintf(QUERY_P1, sizeof(QUERY_P1),
	         "{\"0\":{\"engine_id\":\"eng-p1-dp0\",\"worker_addr\":{\"0\":{\"0\":"
	         "\"tcp://127.0.0.1:%d\"}}}}",
	         port);
}

static int completions(struct fb *f)
{
	return fb_count_path(&f[0], "/v1/completions") + fb_count_path(&f[1], "/v1/completions") +
	       fb_count_path(&f[0], "/v1/chat/completions") +
	       fb_count_path(&f[1], "/v1/chat/completions");
}

/* The recorded completion request with X-Request-Id rid (copied out), or fails. */
static struct fb_req find_req(struct fb *f, int nf, const char *rid, int *which)
{
	struct fb_req out = {0};
	for (int k = 0; k < nf; k++) {
		pthread_mutex_lock(&f[k].mu);
		for (int i = 0; i < f[k].n; i++)
			if (!strcmp(f[k].reqs[i].rid, rid) && strstr(f[k].reqs[i].path, "/v1/")) {
				out = f[k].reqs[i];
				out.body = f[k].reqs[i].body ? strdup(f[k].reqs[i].body) : NULL;
				if (which)
					*which = k;
			}
		pthread_mutex_unlock(&f[k].mu);
	}
	if (!out.body)
		fail_msg("no request with X-Request-Id %s reached %s/%s", rid, f[0].name,
		         nf > 1 ? f[1].name : "-");
	return out;
}

static void assert_uuid4(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	if (strlen(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' ||
	    s[14] != '4' || !strchr("89ab", s[19]))
		fail_msg("\"%s\" is not an RFC 4122 version 4 UUID", s);
	for (int i = 0; i < 36; i++)
		if (i != 8 && i != 13 && i != 18 && i != 23 && !strchr(hex, s[i]))
			fail_msg("\"%s\" is not lower-case hex", s);
}

static char *read_log(const char *name)
{
	char path[PATH_MAX], *log = NULL;
	size_t len;
	snprintf(path, sizeof(path), "%s/%s.log", tmpdir, name);
	assert_int_equal(pd_read_file(path, 16 << 20, &log, &len), 0);
	return log;
}

/* Polls the log (bounded) until it has needle. */
static void wait_log(const char *name, const char *needle)
{
	char *log = NULL;
	for (int i = 0; i < 500; i++) {
		free(log);
		log = read_log(name);
		if (strstr(log, needle))
			break;
		pd_sleep_ms(20);
	}
	assert_has(log, needle);
	free(log);
}

static int start_proxy(struct pd_proc *p, int *port, const char *name, const char *const *flags,
                       char *const *env, long want)
{
	return pt_start_proxy(bin, tmpdir, p, port, name, flags, env, want, 500);
}

/* ---- v0 (the default contract): issue 11 D11 and D12 ---- */

static const char *V0_BODY = "{\"prompt\":\"San Francisco is a\",\"max_tokens\":1000}";
static const char *V0_STREAM =
    "{\"prompt\":\"San Francisco is a\",\"max_tokens\":8,\"stream\":true}";

/* D11: a prefill 4xx is the client's fault: passed through as that 4xx (a 502 would make load
 * balancers retry it), decode not called. */
static void test_prefill_4xx_passthrough(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	P[0].mode = P[1].mode = FB_FAIL400;
	assert_int_equal(tc_http(v0_port, "POST", "/v1/completions", V0_BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 400);
	assert_string_equal(r.body, FB_FAIL400_BODY);
	assert_has(r.ctype, "application/json");
	assert_int_equal(completions(P), 1);
	assert_int_equal(completions(D), 0);
	tc_hfree(&r);
}

/* D12: decode killed mid-answer. A stream ends with an error event and no [DONE] (and the
 * transfer itself is incomplete); a whole JSON answer is a 502; the log says "decode stream
 * cut", not "client gone". */
static void test_decode_cut(void **state)
{
	struct tc_resp r = {0};
	char *log = NULL, path[PATH_MAX];
	size_t len;
	int res;
	(void)state;
	pt_reset_all(P, D);
	D[0].mode = D[1].mode = FB_CUT;
	D[0].cut_after = D[1].cut_after = 3;
	res = tc_http(v0_port, "POST", "/v1/completions", V0_STREAM, NULL, &r);
	assert_int_not_equal(res, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_has(r.body, " tok2");
	assert_has(r.body, "\n\ndata: {\"error\":{\"message\":\"decode http://127.0.0.1:");
	assert_has(r.body, "\"type\":\"BadGateway\",\"code\":502}}\n\n");
	if (strstr(r.body, "[DONE]") || strstr(r.body, " tok3"))
		fail_msg("a cut stream looks complete: %s", r.body);
	snprintf(path, sizeof(path), "%s/v0.log", tmpdir);
	for (int i = 0; i < 100; i++) {
		free(log);
		assert_int_equal(pd_read_file(path, 16 << 20, &log, &len), 0);
		if (strstr(log, tc_fmt("rid=%s ", r.rid)) && strstr(log, "(decode stream cut: "))
			break;
		pd_sleep_ms(20);
	}
	assert_has(log, "decode stream cut after ");
	{
		const char *line = strstr(log, tc_fmt("200 rid=%s ", r.rid));
		assert_non_null(line);
		const char *eol = strchr(line, '\n');
		char *l = strndup(line, eol ? (size_t)(eol - line) : strlen(line));
		assert_has(l, "(decode stream cut: decode http://127.0.0.1:");
		if (strstr(l, "client gone"))
			fail_msg("a decode cut logged as the client's: %s", l);
		free(l);
	}
	free(log);

	/* non-stream: decode dies half way through its JSON -> 502, nothing half-sent */
	pt_reset_all(P, D);
	D[0].mode = D[1].mode = FB_CUT;
	assert_int_equal(tc_http(v0_port, "POST", "/v1/completions", V0_BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 502);
	assert_has(r.body, "\"type\":\"BadGateway\"");
	assert_has(r.body, "answer cut short");
	/* decode closes without answering -> 502 */
	pt_reset_all(P, D);
	D[0].mode = D[1].mode = FB_DROP;
	assert_int_equal(tc_http(v0_port, "POST", "/v1/completions", V0_BODY, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 502);
	assert_has(r.body, "\"message\":\"decode http://127.0.0.1:");
	tc_hfree(&r);
}

/* ---- toy ---- */

static const char *TOY_KVP = "{\"do_remote_prefill\":true,\"do_remote_decode\":false,"
                             "\"remote_host\":\"10.1.2.3\",\"remote_port\":8998}";
static const char *TOY_P_PARAMS =
    "\"kv_transfer_params\":{\"do_remote_decode\":true,\"do_remote_prefill\":false,"
    "\"remote_engine_id\":null,\"remote_block_ids\":null,\"remote_host\":null,"
    "\"remote_port\":null}";

static void test_toy_bodies(void **state)
{
	const char *body = "{\"model\":\"m\",\"prompt\":\"San Francisco is a\",\"max_tokens\":20,"
	                   "\"min_tokens\":2,\"stream\":true,\"stream_options\":{\"include_usage\":"
	                   "true}}";
	const char *hdrs[] = {"X-Request-Id: client-1", "Authorization: Bearer from-client", NULL};
	struct tc_resp r = {0};
	struct fb_req p, d;
	char *want;
	(void)state;
	pt_reset_all(P, D);
	P[0].kvp_json = TOY_KVP;
	assert_int_equal(tc_http(toy_port, "POST", "/v1/completions", body, hdrs, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_has(r.body, "data: [DONE]");
	assert_uuid4(r.rid);
	p = find_req(P, 1, r.rid, NULL);
	d = find_req(D, 1, r.rid, NULL);
	/* prefill: Python dict order — replaced keys stay, new keys at the end; min_* popped */
	want = pd_asprintf("{\"model\":\"m\",\"prompt\":\"San Francisco is a\",\"max_tokens\":1,"
	                   "\"stream\":false,%s}",
	                   TOY_P_PARAMS);
	assert_string_equal(p.body, want);
	free(want);
	/* decode: the client's bytes plus prefill's returned params, verbatim */
	want = pd_asprintf("%.*s,\"kv_transfer_params\":%s}", (int)strlen(body) - 1, body, TOY_KVP);
	assert_string_equal(d.body, want);
	free(want);
	/* a fresh uuid4 on both calls (the client's id is not used), Bearer $OPENAI_API_KEY */
	assert_string_equal(p.rid, d.rid);
	assert_string_equal(p.auth, "Bearer sk-toy");
	assert_string_equal(d.auth, "Bearer sk-toy");
	assert_string_equal(p.dp, "");
	assert_has(p.ctype, "application/json");
	/* strictly ordered: prefill answered before decode was called */
	if (!(p.t_out_ns && p.t_out_ns <= d.t_in_ns))
		fail_msg("decode was called before prefill answered");
	free(p.body);
	free(d.body);

	/* prefill returns null / no params: decode gets the client's bytes unchanged */
	for (int k = 0; k < 2; k++) {
		pt_reset_all(P, D);
		P[0].kvp_json = k ? "null" : NULL;
		assert_int_equal(tc_http(toy_port, "POST", "/v1/completions", body, NULL, &r),
		                 CURLE_OK);
		assert_int_equal(r.status, 200);
		d = find_req(D, 1, r.rid, NULL);
		assert_string_equal(d.body, body);
		free(d.body);
	}

	/* chat: max_completion_tokens=1 on prefill, min_completion_tokens only on decode */
	pt_reset_all(P, D);
	P[0].kvp_json = TOY_KVP;
	body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":9,"
	       "\"min_completion_tokens\":3}";
	assert_int_equal(tc_http(toy_port, "POST", "/v1/chat/completions", body, NULL, &r),
	                 CURLE_OK);
	assert_int_equal(r.status, 200);
	p = find_req(P, 1, r.rid, NULL);
	d = find_req(D, 1, r.rid, NULL);
	assert_string_equal(p.path, "/v1/chat/completions");
	want = pd_asprintf("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	                   "\"max_completion_tokens\":1,%s,\"stream\":false,\"max_tokens\":1}",
	                   TOY_P_PARAMS);
	assert_string_equal(p.body, want);
	free(want);
	assert_has(d.body, "\"min_completion_tokens\":3");
	assert_has(d.body, "\"remote_host\":\"10.1.2.3\"");
	free(p.body);
	free(d.body);
	tc_hfree(&r);
}

static void test_toy_healthcheck_and_failures(void **state)
{
	const char *body = "{\"prompt\":\"x\",\"max_tokens\":5}";
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	assert_int_equal(tc_http(toy_port, "GET", "/healthcheck", NULL, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"status\":\"ok\",\"prefill_instances\":1,"
	                            "\"decode_instances\":1}");
	assert_has(r.ctype, "application/json");

	/* prefill 5xx -> 502, decode never called */
	P[0].mode = FB_FAIL500;
	assert_int_equal(tc_http(toy_port, "POST", "/v1/completions", body, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 502);
	assert_has(r.body, "\"type\":\"BadGateway\"");
	assert_has(r.body, "HTTP 500");
	assert_int_equal(completions(D), 0);
	/* prefill 4xx -> that 4xx with prefill's body, decode never called */
	P[0].mode = FB_FAIL400;
	assert_int_equal(tc_http(toy_port, "POST", "/v1/completions", body, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 400);
	assert_string_equal(r.body, FB_FAIL400_BODY);
	assert_int_equal(completions(D), 0);
	/* prefill answered 200 with something that is not JSON: 502, decode never called */
	P[0].mode = FB_OK;
	P[0].kvp_json = "{"; /* makes the whole answer invalid JSON */
	assert_int_equal(tc_http(toy_port, "POST", "/v1/completions", body, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 502);
	assert_has(r.body, "not a JSON object");
	assert_int_equal(completions(D), 0);
	tc_hfree(&r);
}

/* ---- mooncake ---- */

static void test_mooncake_readiness(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	__atomic_store_n(&P[0].health_status, 503, __ATOMIC_RELAXED);
	P[0].query_json = QUERY_P0;
	P[1].query_json = "{}"; /* bootstrap up, nothing registered yet */
	/* the fakes serve /query on their own ports, so those are the bootstrap ports */
	const char *flags[] = {"--contract",
	                       "mooncake",
	                       "--prefill",
	                       tc_fmt("http://127.0.0.1:%d", P[0].port),
	                       tc_fmt("%d", P[0].port),
	                       "--prefill",
	                       tc_fmt("http://127.0.0.1:%d/v1", P[1].port),
	                       tc_fmt("%d", P[1].port),
	                       "--decode",
	                       tc_fmt("127.0.0.1:%d", D[0].port),
	                       "--decode",
	                       tc_fmt("127.0.0.1:%d", D[1].port),
	                       NULL};
	assert_int_equal(start_proxy(&moon, &moon_port, "moon", flags, NULL, 0), 0);

	/* P0 /health is 503: not ready, completions get the original's 503 and reach nobody */
	assert_int_equal(
	    tc_http(moon_port, "POST", "/v1/completions", "{\"prompt\":\"x\"}", NULL, &r),
	    CURLE_OK);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body, "{\"detail\":\"Service Unavailable\"}");
	assert_int_equal(tc_http(moon_port, "GET", "/health", NULL, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 503);
	assert_has(r.body, "\"status\":\"starting\"");

	/* P0 healthy; P1's bootstrap table is {} so still not ready */
	__atomic_store_n(&P[0].health_status, 0, __ATOMIC_RELAXED);
	wait_log("moon", tc_fmt("Inited prefiller http://127.0.0.1:%d with dp_size=2", P[0].port));
	wait_log("moon", "no dp rank registered yet");
	assert_int_equal(
	    tc_http(moon_port, "POST", "/v1/completions", "{\"prompt\":\"x\"}", NULL, &r),
	    CURLE_OK);
	assert_int_equal(r.status, 503);
	assert_int_equal(completions(P) + completions(D), 0);
	assert_true(fb_count_path(&P[0], "/query") >= 1);

	/* P1 registers: ready */
	P[1].query_json = QUERY_P1;
	assert_int_equal(pt_wait_health(&moon, moon_port, 200, 1000), 0);
	wait_log("moon", "All prefiller instances are ready.");
	assert_int_equal(tc_http(moon_port, "GET", "/health", NULL, NULL, &r), CURLE_OK);
	assert_has(r.body, "\"contract\":\"mooncake\"");
	tc_hfree(&r);
}

static void test_mooncake_bodies_round_robin(void **state)
{
	const char *body = "{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":7,\"min_tokens\":1}";
	static const struct {
		int p, dp;
		const char *eid;
	} want[] = {{0, 0, "eng-p0-dp0"}, {0, 1, "eng-p0-dp1"}, {1, 0, "eng-p1-dp0"},
	            {0, 0, "eng-p0-dp0"}, {0, 1, "eng-p0-dp1"}, {1, 0, "eng-p1-dp0"}};
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	for (int i = 0; i < 6; i++) {
		struct fb_req p, d;
		int pw = -1, dw = -1;
		char *exp;
		assert_int_equal(tc_http(moon_port, "POST", "/v1/completions", body, NULL, &r),
		                 CURLE_OK);
		assert_int_equal(r.status, 200);
		assert_uuid4(r.rid);
		/* prefill runs concurrently: wait (bounded) until it has been recorded */
		for (int k = 0; k < 500 && completions(P) < i + 1; k++)
			pd_sleep_ms(10);
		p = find_req(P, 2, r.rid, &pw);
		d = find_req(D, 2, r.rid, &dw);
		assert_int_equal(pw, want[i].p);
		assert_int_equal(dw, i % 2);
		assert_string_equal(p.dp, tc_fmt("%d", want[i].dp));
		assert_string_equal(d.dp, "");
		assert_string_equal(p.auth, "Bearer None");
		assert_string_equal(d.auth, "Bearer None");
		exp = pd_asprintf(
		    "{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":1,\"min_tokens\":"
		    "1,\"kv_transfer_params\":{\"do_remote_decode\":true,"
		    "\"do_remote_prefill\":false,\"transfer_id\":\"xfer-%s\"},"
		    "\"stream\":false}",
		    r.rid);
		assert_string_equal(p.body, exp);
		free(exp);
		exp =
		    pd_asprintf("%.*s,\"kv_transfer_params\":{\"do_remote_decode\":false,"
		                "\"do_remote_prefill\":true,\"remote_bootstrap_addr\":"
		                "\"http://127.0.0.1:%d\",\"remote_engine_id\":\"%s\","
		                "\"transfer_id\":\"xfer-%s\"}}",
		                (int)strlen(body) - 1, body, P[want[i].p].port, want[i].eid, r.rid);
		assert_string_equal(d.body, exp);
		free(exp);
		free(p.body);
		free(d.body);
	}
	tc_hfree(&r);
}

/* Prefill is still in flight when decode is called: each prefill fake holds its answer until
 * a decode fake has received the request (a sequential router would time the hold out). */
static void test_mooncake_concurrent(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	pt_reset_all(P, D);
	d_arrived = 0;
	/* atomic: the last test's handler may still wait on the old hold */
	__atomic_store_n(&P[0].hold, &d_arrived, __ATOMIC_RELAXED);
	__atomic_store_n(&P[1].hold, &d_arrived, __ATOMIC_RELAXED);
	D[0].on_request = D[1].on_request = &d_arrived;
	assert_int_equal(
	    tc_http(moon_port, "POST", "/v1/completions", "{\"prompt\":\"x\"}", NULL, &r),
	    CURLE_OK);
	assert_int_equal(r.status, 200);
	for (int k = 0; k < 500 && completions(P) < 1; k++)
		pd_sleep_ms(10);
	/* the prefill answer is in (or timed out): wait for its access line */
	wait_log("moon", tc_fmt("rid=%s ", r.rid));
	assert_int_equal(P[0].hold_missed + P[1].hold_missed, 0);
	pt_reset_all(P, D);
	tc_hfree(&r);
}

static void test_mooncake_prefill_fails_first(void **state)
{
	struct tc_resp r = {0};
	(void)state;
	/* prefill 5xx while decode waits (as a real decode waits for the KV): 502, decode aborted
	 */
	pt_reset_all(P, D);
	P[0].mode = P[1].mode = FB_FAIL500;
	/* atomic: the last test's handler may still wait on the old hold */
	__atomic_store_n(&D[0].hold, &never, __ATOMIC_RELAXED);
	__atomic_store_n(&D[1].hold, &never, __ATOMIC_RELAXED);
	assert_int_equal(
	    tc_http(moon_port, "POST", "/v1/completions", "{\"prompt\":\"x\"}", NULL, &r),
	    CURLE_OK);
	assert_int_equal(r.status, 502);
	assert_has(r.body, "\"type\":\"BadGateway\"");
	assert_has(r.body, "prefill http://127.0.0.1:");
	assert_has(r.body, "HTTP 500");
	/* prefill 4xx: passed through as is */
	pt_reset_all(P, D);
	P[0].mode = P[1].mode = FB_FAIL400;
	/* atomic: the last test's handler may still wait on the old hold */
	__atomic_store_n(&D[0].hold, &never, __ATOMIC_RELAXED);
	__atomic_store_n(&D[1].hold, &never, __ATOMIC_RELAXED);
	assert_int_equal(
	    tc_http(moon_port, "POST", "/v1/completions", "{\"prompt\":\"x\"}", NULL, &r),
	    CURLE_OK);
	assert_int_equal(r.status, 400);
	assert_string_equal(r.body, FB_FAIL400_BODY);
	pt_reset_all(P, D);
	tc_hfree(&r);
}

/* Prefill fails after decode's stream started: the stream ends with an error event, no [DONE]. */
static void test_mooncake_prefill_fails_mid_stream(void **state)
{
	struct tc_resp r = {0};
	int res;
	(void)state;
	pt_reset_all(P, D);
	gate = 0;
	D[0].gate_ms = D[1].gate_ms = 10000; /* longer than any abort takes */
	P[0].mode = P[1].mode = FB_FAIL500;
	/* atomic: the last test's handler may still wait on the old hold */
	__atomic_store_n(&P[0].hold, &gate, __ATOMIC_RELAXED);
	__atomic_store_n(&P[1].hold, &gate,
	                 __ATOMIC_RELAXED); /* fail only once the client has decode's first chunk */
	D[0].gate = D[1].gate = &never;     /* decode stalls after its first chunk */
	r.gate = &gate;
	res = tc_http(moon_port, "POST", "/v1/completions",
	              "{\"prompt\":\"x\",\"stream\":true,\"max_tokens\":8}", NULL, &r);
	assert_int_not_equal(res, CURLE_OK); /* the stream must not look complete */
	assert_int_equal(r.status, 200);
	assert_has(r.body, " tok0");
	assert_has(r.body, "data: {\"error\":{\"message\":\"prefill http://127.0.0.1:");
	assert_lacks(r.body, "[DONE]");
	wait_log("moon", "decode stream cut");
	wait_log("moon", "failed while decode was answering");
	pt_reset_all(P, D);
	tc_hfree(&r);
}

/* Prefill fails after the client has decode's whole answer: logged and counted. */
static void test_mooncake_prefill_fails_late(void **state)
{
	struct tc_resp r = {0};
	int seen = 0;
	(void)state;
	pt_reset_all(P, D);
	gate = 0;
	P[0].mode = P[1].mode = FB_FAIL500;
	/* atomic: the last test's handler may still wait on the old hold */
	__atomic_store_n(&P[0].hold, &gate, __ATOMIC_RELAXED);
	__atomic_store_n(&P[1].hold, &gate, __ATOMIC_RELAXED);
	r.gate = &gate;
	assert_int_equal(
	    tc_http(moon_port, "POST", "/v1/completions", "{\"prompt\":\"x\"}", NULL, &r),
	    CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_has(r.body, "\"text\":\" Paris\"");
	r.gate = NULL;
	wait_log("moon", "failed after decode had answered the client");
	for (int i = 0; i < 500 && !seen; i++) {
		struct tc_resp h = {0};
		if (tc_http(moon_port, "GET", "/health", NULL, NULL, &h) == CURLE_OK)
			seen = strstr(h.body, "\"prefill_failures_after_decode\":1") != NULL;
		tc_hfree(&h);
		if (!seen)
			pd_sleep_ms(10);
	}
	assert_true(seen);
	pt_reset_all(P, D);
	tc_hfree(&r);
}

/* ---- setup ---- */

static int setup(void **state)
{
	char *toy_env[] = {"OPENAI_API_KEY=sk-toy", NULL};
	(void)state;
	unsetenv("OPENAI_API_KEY"); /* the mooncake proxy must send "Bearer None" */
	if (pt_setup(bin, sizeof(bin), tmpdir, P, D))
		return -1;
	const char *ft[] = {"--contract",
	                    "toy",
	                    "--prefiller-host",
	                    "127.0.0.1",
	                    "--prefiller-port",
	                    tc_fmt("%d", P[0].port),
	                    "--decoder-host",
	                    "127.0.0.1",
	                    "--decoder-port",
	                    tc_fmt("%d", D[0].port),
	                    NULL};
	const char *fv[] = {"--prefill", tc_fmt("127.0.0.1:%d", P[0].port), "--decode",
	                    tc_fmt("127.0.0.1:%d", D[0].port), NULL};
	if (start_proxy(&v0, &v0_port, "v0", fv, NULL, 200))
		return -1;
	return start_proxy(&toy, &toy_port, "toy", ft, toy_env, 200);
}

static int teardown(void **state)
{
	int ret = 0;
	(void)state;
	pt_reset_all(P, D);
	struct pd_proc *procs[] = {&v0, &toy, &moon};
	for (int i = 0; i < 3; i++)
		ret |= pt_stop_checked(procs[i]);
	return pt_teardown(tmpdir, P, D, ret);
}

int main(void)
{
	make_queries();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prefill_4xx_passthrough),
	    cmocka_unit_test(test_decode_cut),
	    cmocka_unit_test(test_toy_bodies),
	    cmocka_unit_test(test_toy_healthcheck_and_failures),
	    cmocka_unit_test(test_mooncake_readiness),
	    cmocka_unit_test(test_mooncake_bodies_round_robin),
	    cmocka_unit_test(test_mooncake_concurrent),
	    cmocka_unit_test(test_mooncake_prefill_fails_first),
	    cmocka_unit_test(test_mooncake_prefill_fails_mid_stream),
	    cmocka_unit_test(test_mooncake_prefill_fails_late),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
