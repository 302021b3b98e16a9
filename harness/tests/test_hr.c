/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the runner library: scenario parsing and its error messages, ${VAR}
 * substitution, Prometheus parsing, OpenAI response validation, checks on canned numbers, and
 * the JSON / JUnit reporters (read back and checked). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/hr.h"
#include "pd_util.h"

#define MIN_SCENARIO "{\"name\":\"t\",\"metadata\":\"etcd\"}"

static void expect_parse_error(const char *json, const char *want)
{
	struct hr_scenario sc;
	char err[1024] = "";
	int r = hr_scenario_parse("dir/s.json", json, &sc, err, sizeof(err));
	if (r == 0 || !strstr(err, want)) {
		print_error("parse of %s\n  gave %d \"%s\"\n  wanted an error containing \"%s\"\n",
		            json, r, err, want);
		if (r == 0)
			hr_scenario_free(&sc);
		fail();
	}
	/* every message starts with the file name */
	assert_int_equal(strncmp(err, "dir/s.json: ", 12), 0);
}

/* protocol nvlink_intra implies "needs": ["gpu"] (NOTRUN without CUDA) */
static void test_parse_needs_gpu(void **state)
{
	struct hr_scenario sc;
	char err[512] = "";
	(void)state;
	assert_int_equal(hr_scenario_parse("x/a.json",
	                                   "{\"name\":\"t\",\"vllm\":\"0.18\",\"protocol\":"
	                                   "\"nvlink_intra\"}",
	                                   &sc, err, sizeof(err)),
	                 0);
	assert_true(sc.needs_gpu);
	hr_scenario_free(&sc);
	assert_int_equal(hr_scenario_parse("x/a.json",
	                                   "{\"name\":\"t\",\"vllm\":\"0.18\",\"needs\":[\"gpu\"]}",
	                                   &sc, err, sizeof(err)),
	                 0);
	assert_true(sc.needs_gpu);
	assert_string_equal(sc.protocol, "tcp");
	hr_scenario_free(&sc);
}

static void test_parse_defaults(void **state)
{
	struct hr_scenario sc;
	char err[512] = "";
	(void)state;
	assert_int_equal(hr_scenario_parse("x/a.json", MIN_SCENARIO, &sc, err, sizeof(err)), 0);
	assert_string_equal(sc.name, "t");
	assert_int_equal(sc.meta, HR_META_ETCD);
	assert_string_equal(sc.protocol, "tcp");
	assert_false(sc.needs_gpu);
	assert_string_equal(sc.dir, "x");
	assert_int_equal(sc.wl.requests, 4);
	assert_int_equal(sc.wl.concurrency, 1);
	assert_false(sc.wl.stream);
	assert_int_equal(sc.nchecks, 4);
	assert_true(hr_scenario_has_check(&sc, "kv_reused"));
	assert_null(sc.expect_fail);
	/* the kv-transfer-config of each side gets role and rank */
	assert_string_equal(cJSON_GetObjectItem(sc.kv_prefill, "kv_role")->valuestring,
	                    "kv_producer");
	assert_int_equal(cJSON_GetObjectItem(sc.kv_decode, "kv_rank")->valueint, 1);
	assert_string_equal(cJSON_GetObjectItem(sc.mooncake, "metadata_server")->valuestring,
	                    "${METADATA}");
	hr_scenario_free(&sc);
}

static void test_parse_full(void **state)
{
	struct hr_scenario sc;
	char err[512] = "";
	const char *js =
	    "{\"name\":\"full\",\"metadata\":\"p2p\",\"protocol\":\"rdma\","
	    "\"topology\":{\"prefill\":\"127.0.0.2\",\"decode\":\"127.0.0.3\"},"
	    "\"kv_transfer_config\":{\"kv_buffer_size\":1e6},"
	    "\"standin_args\":[\"--ns-per-token\",\"10\"],\"prefill_args\":[\"--fault\",\"drop\"],"
	    "\"workload\":{\"requests\":5,\"prompt_tokens\":[10,20],\"stream\":true,"
	    "\"endpoint\":\"chat\",\"concurrency\":3},"
	    "\"checks\":[\"http_ok\",\"kv_reused\"],\"expect_fail\":{\"check\":\"kv_reused\"},"
	    "\"timeout_s\":9}";
	(void)state;
	assert_int_equal(hr_scenario_parse("a.json", js, &sc, err, sizeof(err)), 0);
	assert_int_equal(sc.meta, HR_META_P2P);
	assert_string_equal(sc.prefill_host, "127.0.0.2");
	assert_string_equal(sc.proxy_host, "127.0.0.1");
	assert_true(sc.wl.chat && sc.wl.stream);
	/* list lengths are cycled over the requests */
	assert_int_equal(sc.wl.prompt_tokens[0], 10);
	assert_int_equal(sc.wl.prompt_tokens[3], 20);
	assert_int_equal(sc.wl.prompt_tokens[4], 10);
	assert_string_equal(sc.expect_fail, "kv_reused");
	assert_int_equal(sc.expect_exit, 0);
	assert_true(sc.timeout_s == 9);
	assert_true(cJSON_GetObjectItem(sc.kv_decode, "kv_buffer_size")->valuedouble == 1e6);
	hr_scenario_free(&sc);
	assert_int_equal(
	    hr_scenario_parse("a.json",
	                      "{\"name\":\"g\",\"metadata\":\"etcd\",\"workload\":"
	                      "{\"requests\":3,\"prompts\":[\"San Francisco is a\",\"x\"]}}",
	                      &sc, err, sizeof(err)),
	    0);
	assert_int_equal(sc.wl.nprompts, 2);
	assert_int_equal(sc.wl.prompt_tokens[0], 18); /* one token per byte */
	assert_int_equal(sc.wl.prompt_tokens[2], 18);
	hr_scenario_free(&sc);
}

static void test_parse_range_deterministic(void **state)
{
	struct hr_scenario a, b;
	char err[512];
	const char *js = "{\"name\":\"r\",\"metadata\":\"http\",\"workload\":{\"requests\":50,"
	                 "\"prompt_tokens\":{\"min\":5,\"max\":9}}}";
	bool lo = false, hi = false;
	(void)state;
	assert_int_equal(hr_scenario_parse("a.json", js, &a, err, sizeof(err)), 0);
	assert_int_equal(hr_scenario_parse("a.json", js, &b, err, sizeof(err)), 0);
	for (int i = 0; i < 50; i++) {
		assert_int_equal(a.wl.prompt_tokens[i], b.wl.prompt_tokens[i]);
		assert_in_range(a.wl.prompt_tokens[i], 5, 9);
		lo |= a.wl.prompt_tokens[i] == 5;
		hi |= a.wl.prompt_tokens[i] == 9;
	}
	assert_true(lo && hi);
	hr_scenario_free(&a);
	hr_scenario_free(&b);
}

static void test_parse_errors(void **state)
{
	(void)state;
	expect_parse_error("{\"name\":\"t\",", "JSON: syntax error near line 1");
	expect_parse_error("[1]", "JSON: top level must be an object");
	expect_parse_error("{\"metadata\":\"etcd\"}", "name: missing");
	expect_parse_error("{\"name\":\"a b\",\"metadata\":\"etcd\"}", "name: \"a b\"");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"zk\"}",
	                   "metadata: expected etcd, redis, http or p2p, got \"zk\"");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"protocol\":\"udp\"}",
	                   "protocol: expected \"tcp\", \"rdma\" or \"nvlink_intra\"");
	expect_parse_error("{\"name\":\"t\",\"vllm\":\"0.18\",\"needs\":[\"tpu\"]}",
	                   "needs: element 0: expected \"gpu\"");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"chekcs\":[]}",
	                   "chekcs: unknown key");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"workload\":{\"requests\":0}}",
	                   "workload.requests: expected an integer 1..100000, got 0");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"workload\":{\"stream\":1}}",
	                   "workload.stream: expected true or false");
	expect_parse_error(
	    "{\"name\":\"t\",\"metadata\":\"etcd\",\"workload\":{\"endpoint\":\"x\"}}",
	    "workload.endpoint: expected \"completions\" or \"chat\"");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"workload\":{\"prompt_tokens\":"
	                   "{\"min\":9,\"max\":3}}}",
	                   "workload.prompt_tokens: max 3 is below min 9");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"workload\":{\"prompt_tokens\":"
	                   "[1,\"x\"]}}",
	                   "workload.prompt_tokens: element 1");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"checks\":[\"kv_reuse\"]}",
	                   "checks: element 0: \"kv_reuse\" is not a check (known: startup");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"checks\":[\"http_ok\"],"
	                   "\"expect_fail\":{\"check\":\"integrity\"}}",
	                   "expect_fail.check: \"integrity\" is not in this scenario's checks");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"topology\":{\"decode\":"
	                   "\"localhost\"}}",
	                   "topology.decode: expected an IPv4 address of this host");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"mooncake\":{\"prefill_url\":"
	                   "\"${PREFIL_HOST}:1\"}}",
	                   "mooncake.prefill_url: unknown variable ${PREFIL_HOST}");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"mooncake\":\"nope.json\"}",
	                   "mooncake: cannot read fixture dir/nope.json");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"kv_transfer_config\":"
	                   "{\"prefill\":{}}}",
	                   "kv_transfer_config.decode: missing");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"standin_args\":[1]}",
	                   "standin_args: expected an array of strings");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"workload\":{\"prompts\":"
	                   "[\"a\"],\"prompt_tokens\":[1]}}",
	                   "workload.prompts: give prompts or prompt_tokens, not both");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"workload\":{\"prompts\":"
	                   "[\"a\",\"\"]}}",
	                   "workload.prompts: element 1: expected a non-empty string");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"timeout_s\":-1}",
	                   "timeout_s: expected seconds > 0");
	expect_parse_error("{\"name\":\"t\",\"metadata\":\"etcd\",\"expect_exit\":[\"prefil\"]}",
	                   "expect_exit: element 0: expected prefill, decode, plain or proxy");
	/* hostile-peer faults (hr_fault_hostile.c): each field named with what it expects */
#define FAULT(x) "{\"name\":\"t\",\"metadata\":\"etcd\",\"faults\":[" x "]}"
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"rogue\":\"data-port\"}"),
	                   "faults[0]: \"rogue\": expected \"side-channel\"");
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"rogue\":\"side-channel\","
	                         "\"send\":[\"take\",\"steal\"]}"),
	                   "faults[0]: \"send\": expected a list of take, garbage");
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"rogue\":\"side-channel\","
	                         "\"repeat\":0}"),
	                   "faults[0]: \"repeat\": expected 1..256");
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"rogue\":\"side-channel\","
	                         "\"connections\":3}"),
	                   "faults[0]: unknown key \"connections\" (a rogue fault has");
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"flood\":[\"prefill\",\"etcd\"]}"),
	                   "faults[0]: \"flood\": expected one or a list of prefill, decode");
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"flood\":\"proxy\","
	                         "\"connections\":5000}"),
	                   "faults[0]: \"connections\": expected 1..1024");
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"flood\":\"proxy\","
	                         "\"mode\":\"fast\"}"),
	                   "faults[0]: \"mode\": expected \"idle\" or \"slow\"");
	expect_parse_error(FAULT("{\"at\":\"during_workload\",\"flood\":\"proxy\","
	                         "\"from\":\"localhost\"}"),
	                   "faults[0]: \"from\": expected an IPv4 address");
	expect_parse_error(FAULT("{\"at\":\"during_transfer\",\"flood\":\"proxy\"}"),
	                   "faults[0]: expected \"at\": \"during_workload\"");
#undef FAULT
}

static void test_fixture_file(void **state)
{
	char dir[] = "/tmp/test_hr.XXXXXX", path[128], err[512] = "";
	struct hr_scenario sc;
	const char *mc = "{\"prefill_url\":\"${PREFILL_HOST}:${PORT_A}\"}";
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/mc.json", dir);
	assert_int_equal(pd_write_file(path, mc, strlen(mc)), 0);
	snprintf(path, sizeof(path), "%s/s.json", dir);
	assert_int_equal(hr_scenario_parse(path,
	                                   "{\"name\":\"f\",\"metadata\":\"etcd\","
	                                   "\"mooncake\":\"mc.json\"}",
	                                   &sc, err, sizeof(err)),
	                 0);
	assert_string_equal(cJSON_GetObjectItem(sc.mooncake, "prefill_url")->valuestring,
	                    "${PREFILL_HOST}:${PORT_A}");
	hr_scenario_free(&sc);
	assert_int_equal(pd_rm_rf(dir), 0);
}

static void test_subst(void **state)
{
	struct hr_vars v = {0};
	char err[256] = "", *s;
	cJSON *t, *o;
	(void)state;
	assert_true(hr_var_known("PORT_KV"));
	assert_true(hr_var_known("METADATA"));
	assert_false(hr_var_known("PORT_"));
	assert_false(hr_var_known("PORT_x"));
	assert_false(hr_var_known("HOME"));
	hr_vars_set(&v, "PREFILL_HOST", "127.0.0.2");
	hr_vars_set(&v, "PORT_KV", "20001");
	s = hr_subst(&v, "${PREFILL_HOST}:${PORT_KV}/x", err, sizeof(err));
	assert_string_equal(s, "127.0.0.2:20001/x");
	free(s);
	assert_null(hr_subst(&v, "${DECODE_HOST}", err, sizeof(err)));
	assert_non_null(strstr(err, "${DECODE_HOST} has no value"));
	assert_null(hr_subst(&v, "a${PORT_KV", err, sizeof(err)));
	t = cJSON_Parse(
	    "{\"a\":\"${PORT_KV}\",\"b\":[\"${PORT_KV}\",{\"c\":\"${PORT_KV}\"}],\"n\":1}");
	o = hr_subst_json(&v, t, err, sizeof(err));
	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItem(o, "a")->valuestring, "20001");
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "b"), 1), "c")
	        ->valuestring,
	    "20001");
	/* the identical-URL layout keeps identical URLs: same variable, same value */
	cJSON_Delete(t);
	cJSON_Delete(o);
}

static void test_port_block(void **state)
{
	int b, fd;
	(void)state;
	b = hr_pick_port_block("127.0.0.1", 16);
	assert_in_range(b, 20000, 29999 - 116);
	/* a block is usable: both B and B+100 ranges bind */
	fd = pd_tcp_listen("127.0.0.1", b + 9, 4);
	assert_true(fd >= 0);
	close(fd);
	fd = pd_tcp_listen("127.0.0.1", b + 110, 4);
	assert_true(fd >= 0);
	close(fd);
}

static void test_metrics_parse(void **state)
{
	struct hr_metrics m;
	const char *txt = "# HELP pdkv_kv_reused_tokens_total x\n"
	                  "# TYPE pdkv_kv_reused_tokens_total counter\n"
	                  "pdkv_kv_reused_tokens_total 4096\n"
	                  "vllm:prompt_tokens_total{model_name=\"a}b\"} 10\n"
	                  "vllm:prompt_tokens_total{model_name=\"c\"} 5 1700000000\n"
	                  "\n"
	                  "g 1.5e3\n";
	(void)state;
	assert_int_equal(hr_metrics_parse(txt, &m), 0);
	assert_true(hr_metrics_get(&m, "pdkv_kv_reused_tokens_total") == 4096);
	assert_true(hr_metrics_get(&m, "vllm:prompt_tokens_total") == 15);
	assert_true(hr_metrics_get(&m, "g") == 1500);
	assert_true(isnan(hr_metrics_get(&m, "nope")));
	hr_metrics_free(&m);
	assert_int_equal(hr_metrics_parse("x{a=\"1\" 3\n", &m), -EINVAL);
	assert_int_equal(hr_metrics_parse("x\n", &m), -EINVAL);
	assert_int_equal(hr_metrics_parse("x abc\n", &m), -EINVAL);
}

static void parse_body(struct hr_req *r, const char *body, bool chat, bool stream)
{
	memset(r, 0, sizeof(*r));
	r->status = 200;
	r->body = strdup(body);
	hr_response_parse(r, chat, stream);
}

static void clear_req(struct hr_req *r)
{
	free(r->body);
	free(r->text);
	free(r->invalid);
	memset(r, 0, sizeof(*r));
}

static void test_response_parse(void **state)
{
	struct hr_req r;
	(void)state;
	parse_body(&r,
	           "{\"object\":\"text_completion\",\"choices\":[{\"text\":\"abc\"}],"
	           "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}",
	           false, false);
	assert_null(r.invalid);
	assert_string_equal(r.text, "abc");
	assert_int_equal(r.usage_prompt, 7);
	clear_req(&r);
	parse_body(&r,
	           "{\"object\":\"chat.completion\",\"choices\":[{\"message\":{\"role\":"
	           "\"assistant\",\"content\":\"hi\"}}],\"usage\":{\"prompt_tokens\":2}}",
	           true, false);
	assert_null(r.invalid);
	assert_string_equal(r.text, "hi");
	clear_req(&r);
	parse_body(&r, "{\"object\":\"error\",\"message\":\"x\"}", false, false);
	assert_non_null(strstr(r.invalid, "\"object\" is \"error\""));
	clear_req(&r);
	parse_body(&r, "{\"object\":\"text_completion\",\"choices\":[{\"text\":\"a\"}]}", false,
	           false);
	assert_string_equal(r.invalid, "usage block missing");
	clear_req(&r);
	/* SSE chat: role delta, content deltas, usage chunk, [DONE] */
	parse_body(
	    &r,
	    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"role\":"
	    "\"assistant\"}}]}\r\n\r\n"
	    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":"
	    "\"he\"}}]}\n\n"
	    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":"
	    "\"llo\"}}]}\n\n"
	    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":"
	    "{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n"
	    "data: [DONE]\n\n",
	    true, true);
	assert_null(r.invalid);
	assert_string_equal(r.text, "hello");
	assert_true(r.done_marker);
	assert_int_equal(r.usage_prompt, 9);
	clear_req(&r);
	parse_body(&r,
	           "data: {\"object\":\"text_completion\",\"choices\":[{\"text\":\"x\"}],\"usage\":"
	           "{\"prompt_tokens\":1}}\n\n",
	           false, true);
	assert_string_equal(r.invalid, "stream did not end with data: [DONE]");
	clear_req(&r);
	parse_body(&r, "data: [DONE]\n\ndata: {}\n\n", false, true);
	assert_string_equal(r.invalid, "data after [DONE]");
	clear_req(&r);
}

static void test_prompt_text(void **state)
{
	char *a = hr_prompt_text(3, 100, 7), *b = hr_prompt_text(3, 100, 7),
	     *c = hr_prompt_text(4, 100, 7);
	(void)state;
	/* one token per byte in pdkv's fake model */
	assert_int_equal(strlen(a), 100);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	free(a);
	free(b);
	free(c);
	a = hr_prompt_text(12345, 1, 7);
	assert_int_equal(strlen(a), 1);
	free(a);
}

/* Canned metrics and answers for the checks. */
static void canned(struct hr_run_data *rd, struct hr_req *reqs, struct hr_req *plain, double reused,
                   double recomputed, double cks)
{
	char txt[512];
	memset(rd, 0, sizeof(*rd));
	for (int i = 0; i < 2; i++) {
		memset(&reqs[i], 0, sizeof(reqs[i]));
		memset(&plain[i], 0, sizeof(plain[i]));
		reqs[i].idx = plain[i].idx = i;
		reqs[i].status = plain[i].status = 200;
		reqs[i].usage_prompt = 2048;
		reqs[i].text = strdup("same");
		plain[i].text = strdup("same");
	}
	rd->reqs = reqs;
	rd->plain = plain;
	rd->nreqs = 2;
	rd->have_metrics = true;
	hr_metrics_parse("pdkv_kv_reused_tokens_total 100\npdkv_kv_recomputed_tokens_total 0\n"
	                 "pdkv_kv_checksum_failures_total 0\n",
	                 &rd->d_before);
	snprintf(txt, sizeof(txt),
	         "pdkv_kv_reused_tokens_total %g\npdkv_kv_recomputed_tokens_total %g\n"
	         "pdkv_kv_checksum_failures_total %g\n",
	         100 + reused, recomputed, cks);
	hr_metrics_parse(txt, &rd->d_after);
}

static void canned_free(struct hr_run_data *rd)
{
	for (size_t i = 0; i < rd->nreqs; i++) {
		free(rd->reqs[i].text);
		free(rd->plain[i].text);
	}
	hr_metrics_free(&rd->d_before);
	hr_metrics_free(&rd->d_after);
}

static bool run_check(const char *name, const struct hr_run_data *rd, char *d, size_t sz)
{
	const struct hr_check *c = hr_check_find(name);
	assert_non_null(c);
	return c->fn(rd, d, sz);
}

/* A canned run with these counters fails check, its detail saying why. */
static void canned_fails(struct hr_req *reqs, struct hr_req *plain, double reused,
                         double recomputed, double cks, const char *check, const char *why)
{
	struct hr_run_data rd;
	char d[1024];
	canned(&rd, reqs, plain, reused, recomputed, cks);
	assert_false(run_check(check, &rd, d, sizeof(d)));
	if (!strstr(d, why))
		fail_msg("%s detail \"%s\" lacks \"%s\"", check, d, why);
	canned_free(&rd);
}

static void test_checks(void **state)
{
	struct hr_run_data rd;
	struct hr_req q[2], p[2];
	char d[1024];
	(void)state;
	assert_null(hr_check_find("nope"));
	assert_int_equal(hr_check_count(), 13);

	canned(&rd, q, p, 4096, 0, 0);
	/* recovered: needs process faults, the probe answered in full, a restarted decode reusing
	 */
	assert_false(run_check("recovered", &rd, d, sizeof(d)));
	snprintf(rd.pf_notes, sizeof(rd.pf_notes),
	         "decode SIGKILL at +0.5s; decode restarted, healthy at +1.6s; probe after the "
	         "faults: HTTP 200 complete");
	assert_true(run_check("recovered", &rd, d, sizeof(d)));
	snprintf(rd.pf_notes, sizeof(rd.pf_notes),
	         "decode SIGKILL at +0.5s; decode restarted, healthy at +1.6s; probe after the "
	         "faults: HTTP 502 incomplete");
	assert_false(run_check("recovered", &rd, d, sizeof(d)));
	/* hostile_ok: a hostile fault ran, every request ended clearly, the probe was answered,
	 * and prefill counted a rogue peer */
	assert_false(run_check("hostile_ok", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "no rogue or flood fault"));
	snprintf(rd.pf_notes, sizeof(rd.pf_notes),
	         "flood (idle, 16 per target from 127.0.0.9, 3.0 s): proxy 127.0.0.1:1 16/16 "
	         "opened, 0 closed by it; probe after the faults: HTTP 200 complete");
	assert_true(run_check("hostile_ok", &rd, d, sizeof(d)));
	q[1].status = 0; /* hung or cut: no answer at all */
	assert_false(run_check("hostile_ok", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "request #1 ended without a full answer or an error"));
	q[1].status = 200;
	snprintf(rd.pf_notes, sizeof(rd.pf_notes),
	         "rogue on prefill's side channel ROUTER tcp://h:1: not msgpack answered; prefill "
	         "logged 2 warning(s), first: x; probe after the faults: HTTP 200 complete");
	assert_false(run_check("hostile_ok", &rd, d, sizeof(d))); /* counted nowhere */
	assert_non_null(strstr(d, "prefill did not say so"));
	rd.pf_notes[0] = '\0';
	assert_true(run_check("kv_reused", &rd, d, sizeof(d)));
	assert_true(run_check("integrity", &rd, d, sizeof(d)));
	assert_true(run_check("output_equal", &rd, d, sizeof(d)));
	assert_true(run_check("http_ok", &rd, d, sizeof(d)));
	assert_true(run_check("startup", &rd, d, sizeof(d)));
	canned_free(&rd);

	/* silent recompute: the numbers that broke it */
	canned_fails(q, p, 0, 4096, 0, "kv_reused",
	             "decode reused 0 of 4096 prompt tokens, recomputed 4096");
	canned_fails(q, p, 4000, 96, 0, "kv_reused", "reused 4000 of 4096");
	canned_fails(q, p, 4096, 0, 2, "integrity", "checksum failures: decode 2");

	canned(&rd, q, p, 4096, 0, 0);
	free(q[1].text);
	q[1].text = strdup("other");
	assert_false(run_check("output_equal", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "1 of 2 answers differ"));
	assert_non_null(strstr(d, "got \"other\", plain \"same\""));
	q[0].status = 502;
	q[0].body = strdup("{\"error\":\"prefill failed\"}");
	assert_false(run_check("http_ok", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "request 0: HTTP 502 {\"error\":\"prefill failed\"}"));
	free(q[0].body);
	rd.startup_error = "prefill exit status 1 during startup: bad";
	assert_false(run_check("startup", &rd, d, sizeof(d)));
	assert_string_equal(d, rd.startup_error);
	rd.have_metrics = false;
	assert_false(run_check("kv_reused", &rd, d, sizeof(d)));
	canned_free(&rd);
}

static void fill_report(struct hr_report *rep, struct hr_result *v, struct hr_check_result *cr)
{
	memset(rep, 0, sizeof(*rep));
	memset(v, 0, 3 * sizeof(*v));
	cr[0] = (struct hr_check_result){.name = "kv_reused", .pass = false};
	snprintf(cr[0].detail, sizeof(cr[0].detail), "decode reused 0 of 4096 <&\"'> \x01");
	cr[1] = (struct hr_check_result){.name = "http_ok", .pass = true};
	snprintf(cr[1].detail, sizeof(cr[1].detail), "2 of 2");
	v[0].name = "a";
	v[0].path = "s/a.json";
	v[0].status = HR_PASS;
	v[0].checks = &cr[1];
	v[0].nchecks = 1;
	v[1].name = "b&c";
	v[1].path = "s/b.json";
	v[1].status = HR_FAIL;
	snprintf(v[1].reason, sizeof(v[1].reason), "kv_reused: %s", cr[0].detail);
	v[1].checks = cr;
	v[1].nchecks = 2;
	v[2].name = "rdma";
	v[2].path = "s/c.json";
	v[2].status = HR_NOTRUN;
	snprintf(v[2].reason, sizeof(v[2].reason), "no RDMA device");
	rep->v = v;
	rep->n = 3;
	rep->wall_s = 1.5;
}

/* Writes rep with fn to a new file named from the mkstemp template path; its text (malloc'd). */
static char *write_report(int (*fn)(const char *, const struct hr_report *),
                          const struct hr_report *rep, char *path)
{
	char *txt = NULL;
	size_t len;
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fn(path, rep), 0);
	assert_int_equal(pd_read_file(path, 1 << 20, &txt, &len), 0);
	return txt;
}

static void test_report_json(void **state)
{
	struct hr_report rep;
	struct hr_result v[3];
	struct hr_check_result cr[2];
	char path[] = "/tmp/test_hr_json.XXXXXX", *txt;
	cJSON *o, *sc;
	(void)state;
	fill_report(&rep, v, cr);
	txt = write_report(hr_report_json, &rep, path);
	o = cJSON_Parse(txt);
	assert_non_null(o);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "summary"), "failed")->valueint,
	                 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "summary"), "notrun")->valueint,
	                 1);
	sc = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "scenarios"), 1);
	assert_string_equal(cJSON_GetObjectItem(sc, "status")->valuestring, "FAIL");
	assert_non_null(strstr(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(sc, "checks"), 0), "detail")
	        ->valuestring,
	    "reused 0 of 4096"));
	cJSON_Delete(o);
	free(txt);
	unlink(path);
}

static void test_report_junit_and_text(void **state)
{
	struct hr_report rep;
	struct hr_result v[3];
	struct hr_check_result cr[2];
	char path[] = "/tmp/test_hr_junit.XXXXXX", *txt, *buf = NULL, cmd[256];
	size_t blen;
	FILE *f;
	(void)state;
	fill_report(&rep, v, cr);
	txt = write_report(hr_report_junit, &rep, path);
	assert_non_null(
	    strstr(txt, "<testsuites name=\"pdkv run\" tests=\"3\" failures=\"1\" errors=\"0\""));
	assert_non_null(strstr(txt, "skipped=\"1\" errors=\"0\""));
	assert_non_null(strstr(txt, "file: s/b.json\n"));
	assert_non_null(strstr(txt, "name=\"b&amp;c\""));
	assert_non_null(strstr(txt, "<failure type=\"kv_reused\" message=\"kv_reused: decode "
	                            "reused 0 of 4096 &lt;&amp;&quot;&apos;&gt;  \""));
	assert_non_null(strstr(txt, "<skipped message=\"no RDMA device\"/>"));
	assert_null(strchr(txt, '\x01'));
	/* well-formed XML when xmllint is around */
	snprintf(cmd, sizeof(cmd), "command -v xmllint >/dev/null || exit 0; xmllint --noout %s",
	         path);
	assert_int_equal(system(cmd), 0);
	free(txt);
	unlink(path);
	/* a scenario that could not be loaded is an <error>, not a <failure>; and the whole
	 * report passes the schema Jenkins' xUnit plugin checks (a test copy, written for pdkv) */
	v[1].error = true;
	snprintf(path, sizeof(path), "/tmp/test_hr_junit.XXXXXX");
	txt = write_report(hr_report_junit, &rep, path);
	assert_non_null(strstr(txt, "failures=\"0\" errors=\"1\""));
	assert_non_null(strstr(txt, "<error type=\"load\" message=\"kv_reused: "));
	assert_null(strstr(txt, "<failure"));
	snprintf(cmd, sizeof(cmd), "xmllint --noout --schema harness/tests/junit-jenkins.xsd %s",
	         path);
	assert_int_equal(system(cmd), 0);
	v[1].error = false;
	free(txt);
	unlink(path);

	f = open_memstream(&buf, &blen);
	for (size_t i = 0; i < rep.n; i++)
		hr_report_line(f, &v[i], false);
	hr_report_summary(f, &rep);
	fclose(f);
	assert_non_null(strstr(
	    buf,
	    "a                                                               PASS     0.0s\n"));
	/* the failing check and its numbers, once */
	assert_non_null(strstr(buf, "    # kv_reused: decode reused 0 of 4096"));
	assert_null(strstr(buf, "# kv_reused: FAIL:"));
	assert_non_null(strstr(buf, "    # notrun: no RDMA device\n"));
	/* the last line is the plain "N passed, N failed, N skipped" */
	assert_non_null(strstr(buf, "\n1 passed, 1 failed, 1 skipped\n"));
	assert_int_equal(buf[blen - 1], '\n');
	free(buf);
}

static void test_capability(void **state)
{
	struct hr_scenario sc = {0};
	char buf[256], dir[] = "/tmp/test_hr_ib.XXXXXX", sub[128];
	(void)state;
	sc.protocol = "tcp";
	assert_null(hr_capability_missing(&sc, buf, sizeof(buf)));
	sc.protocol = "rdma";
	assert_non_null(mkdtemp(dir));
	setenv("PDKV_SYS_INFINIBAND", dir, 1);
	assert_non_null(hr_capability_missing(&sc, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "protocol rdma needs an RDMA device"));
	snprintf(sub, sizeof(sub), "%s/rxe0", dir);
	assert_int_equal(pd_mkdir_p(sub), 0);
	assert_null(hr_capability_missing(&sc, buf, sizeof(buf)));
	unsetenv("PDKV_SYS_INFINIBAND");
	/* "needs": ["gpu"] with a CUDA runtime that does not load: NOTRUN naming the field */
	sc.protocol = "tcp";
	sc.needs_gpu = true;
	setenv("PDKV_CUDART", "/nonexistent/libcudart.so", 1);
	assert_non_null(hr_capability_missing(&sc, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "needs a CUDA GPU"));
	assert_non_null(strstr(buf, "no CUDA runtime library"));
	unsetenv("PDKV_CUDART");
	sc.needs_gpu = false;
	pd_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_defaults), cmocka_unit_test(test_parse_needs_gpu),
	    cmocka_unit_test(test_parse_full),     cmocka_unit_test(test_parse_range_deterministic),
	    cmocka_unit_test(test_parse_errors),   cmocka_unit_test(test_fixture_file),
	    cmocka_unit_test(test_subst),          cmocka_unit_test(test_port_block),
	    cmocka_unit_test(test_metrics_parse),  cmocka_unit_test(test_response_parse),
	    cmocka_unit_test(test_prompt_text),    cmocka_unit_test(test_checks),
	    cmocka_unit_test(test_report_json),    cmocka_unit_test(test_report_junit_and_text),
	    cmocka_unit_test(test_capability),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
