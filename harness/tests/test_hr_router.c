/* SPDX-License-Identifier: Apache-2.0 */
/* test_hr_router: the pieces of router grading and external mode that need no process —
 * "proxy.cmd" / "proxy.ready" parsing, --proxy-cmd splitting, matching records by prompt, the
 * router_* checks on canned records, and external kv_reused's choice of signal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hr.h"

static void parse(const char *json, struct hr_scenario *sc, int want, const char *msg)
{
	char err[1024] = "";
	int r = hr_scenario_parse("d/s.json", json, sc, err, sizeof(err));
	if (r != want || (msg && !strstr(err, msg)))
		fail_msg("%s: got %d \"%s\", wanted %d \"%s\"", json, r, err, want, msg ? msg : "");
}

static void proxy_fields(void **st)
{
	struct hr_scenario sc;
	(void)st;
	parse("{\"name\":\"t\",\"vllm\":\"0.17\",\"proxy\":{\"cmd\":[\"r\",\"--port\",\"{port}\"],"
	      "\"ready\":\"/ping\"}}",
	      &sc, 0, NULL);
	assert_int_equal(cJSON_GetArraySize(sc.proxy_cmd), 3);
	assert_string_equal(sc.proxy_ready, "/ping");
	assert_string_equal(hr_scenario_grade_contract(&sc), "mooncake");
	hr_scenario_free(&sc);
	parse("{\"name\":\"t\",\"vllm\":\"0.12\",\"proxy\":{\"contract\":\"auto\"}}", &sc, 0, NULL);
	assert_string_equal(hr_scenario_grade_contract(&sc), "toy");
	hr_scenario_free(&sc);
	parse("{\"name\":\"t\",\"vllm\":\"0.12\",\"proxy\":{\"cmd\":[]}}", &sc, -1,
	      "d/s.json: proxy.cmd: expected a non-empty list of strings");
	parse("{\"name\":\"t\",\"vllm\":\"0.12\",\"proxy\":{\"cmd\":[\"a\",3]}}", &sc, -1,
	      "proxy.cmd: every element must be a string");
	parse("{\"name\":\"t\",\"vllm\":\"0.12\",\"proxy\":{\"ready\":\"/h\"}}", &sc, -1,
	      "proxy.ready: needs proxy.cmd");
	parse("{\"name\":\"t\",\"vllm\":\"0.12\",\"proxy\":{\"cmd\":[\"a\"],\"ready\":\"h\"}}", &sc,
	      -1, "proxy.ready: expected an HTTP path");
	parse("{\"name\":\"t\",\"vllm\":\"0.12\",\"proxy\":{\"cmdd\":[\"a\"]}}", &sc, -1,
	      "unknown key \"cmdd\" (expected contract, cmd or ready)");
}

static void split(void **st)
{
	char err[200];
	cJSON *a = hr_router_split("python3  'my router.py' --x \"a b\" c\\ d", err, sizeof(err));
	(void)st;
	assert_non_null(a);
	assert_int_equal(cJSON_GetArraySize(a), 5);
	assert_string_equal(cJSON_GetArrayItem(a, 1)->valuestring, "my router.py");
	assert_string_equal(cJSON_GetArrayItem(a, 3)->valuestring, "a b");
	assert_string_equal(cJSON_GetArrayItem(a, 4)->valuestring, "c d");
	cJSON_Delete(a);
	assert_null(hr_router_split("a 'b", err, sizeof(err)));
	assert_non_null(strstr(err, "unbalanced '"));
	assert_null(hr_router_split("   ", err, sizeof(err)));
}

static void find_by_prompt(void **st)
{
	cJSON *rec =
	    cJSON_Parse("[{\"body\":{\"prompt\":\"x\"}},"
	                "{\"body\":{\"messages\":[{\"role\":\"user\",\"content\":\"y\"}]}}]");
	(void)st;
	assert_ptr_equal(hr_router_find(rec, "x"), cJSON_GetArrayItem(rec, 0));
	assert_ptr_equal(hr_router_find(rec, "y"), cJSON_GetArrayItem(rec, 1));
	assert_null(hr_router_find(rec, "z"));
	cJSON_Delete(rec);
}

/* one workload request "p0" and its prefill / decode records */
static void canned(struct hr_run_data *rd, struct hr_scenario *sc, struct hr_req *q,
                   const char *contract, const char *pbody, const char *dbody, double p_answer,
                   double d_arrival)
{
	char *rp = NULL, *rdd = NULL;
	memset(rd, 0, sizeof(*rd));
	memset(q, 0, sizeof(*q));
	memset(sc, 0, sizeof(*sc));
	sc->model = "m";
	sc->wl.max_tokens = 8;
	q->prompt = "p0";
	q->status = 200;
	rd->sc = sc;
	rd->reqs = q;
	rd->nreqs = 1;
	rd->contract = contract;
	rd->router_phase = true;
	assert_true(asprintf(&rp, "[{\"t_answer\":%g,\"body\":%s}]", p_answer, pbody) > 0);
	assert_true(asprintf(&rdd, "[{\"t_arrival\":%g,\"body\":%s}]", d_arrival, dbody) > 0);
	rd->rec_p = cJSON_Parse(rp);
	rd->rec_d = cJSON_Parse(rdd);
	assert_non_null(rd->rec_p);
	assert_non_null(rd->rec_d);
	free(rp);
	free(rdd);
	snprintf(rd->p_bootstrap, sizeof(rd->p_bootstrap), "http://127.0.0.2:8998");
	rd->p_query = cJSON_Parse("{\"0\":{\"engine_id\":\"E\"}}");
}

static bool check(const char *name, struct hr_run_data *rd, char *d, size_t sz)
{
	bool r = hr_check_find(name)->fn(rd, d, sz);
	cJSON_Delete(rd->rec_p);
	cJSON_Delete(rd->rec_d);
	cJSON_Delete(rd->p_query);
	return r;
}

#define CLIENT                                                                                     \
	"\"model\":\"m\",\"prompt\":\"p0\",\"max_tokens\":8,\"temperature\":0,\"stream\":false"
#define P_OK                                                                                       \
	"{\"model\":\"m\",\"prompt\":\"p0\",\"max_tokens\":1,\"stream\":false,"                    \
	"\"kv_transfer_params\":{\"do_remote_decode\":true,\"do_remote_prefill\":false,"           \
	"\"transfer_id\":\"xfer-1\"}}"

static void router_checks(void **st)
{
	struct hr_run_data rd;
	struct hr_scenario sc;
	struct hr_req q;
	char d[1024];
	(void)st;
	canned(
	    &rd, &sc, &q, "mooncake", P_OK,
	    "{" CLIENT ",\"kv_transfer_params\":{\"do_remote_decode\":false,\"do_remote_prefill\":"
	    "true,\"remote_bootstrap_addr\":\"http://127.0.0.2:8998\",\"remote_engine_id\":\"E\","
	    "\"transfer_id\":\"xfer-1\"}}",
	    2, 1);
	assert_true(check("router_decode_request", &rd, d, sizeof(d)));
	/* a different transfer_id on decode */
	canned(
	    &rd, &sc, &q, "mooncake", P_OK,
	    "{" CLIENT ",\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_bootstrap_"
	    "addr\":\"http://127.0.0.2:8998\",\"remote_engine_id\":\"E\",\"transfer_id\":\"x2\"}}",
	    2, 1);
	assert_false(check("router_decode_request", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "transfer_id \"x2\" is not the one prefill got (xfer-1)"));
	/* the client's max_tokens changed on the way to decode */
	canned(&rd, &sc, &q, "v0", P_OK,
	       "{\"model\":\"m\",\"prompt\":\"p0\",\"max_tokens\":9,\"temperature\":0,\"stream\":"
	       "false}",
	       1, 2);
	assert_false(check("router_decode_request", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "\"max_tokens\" changed"));
	/* prefill got max_tokens 8 */
	canned(&rd, &sc, &q, "v0", "{" CLIENT "}", "{" CLIENT "}", 1, 2);
	assert_false(check("router_prefill_request", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "max_tokens is not 1"));
	/* toy: ordering */
	canned(&rd, &sc, &q, "toy", P_OK, "{" CLIENT "}", 2, 1);
	assert_false(check("router_ordering", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "1000.0 ms early"));
	canned(&rd, &sc, &q, "mooncake", P_OK, "{" CLIENT "}", 2, 1);
	assert_true(check("router_ordering", &rd, d, sizeof(d)));
	/* toy prefill without the remote_* keys */
	canned(&rd, &sc, &q, "toy", P_OK, "{" CLIENT "}", 1, 2);
	assert_false(check("router_prefill_request", &rd, d, sizeof(d)));
	assert_non_null(strstr(d, "kv_transfer_params.remote_engine_id missing"));
}

static void external_signal(void **st)
{
	struct hr_run_data rd;
	struct hr_req q[2];
	struct hr_scenario sc;
	char d[1024];
	(void)st;
	memset(&rd, 0, sizeof(rd));
	memset(q, 0, sizeof(q));
	memset(&sc, 0, sizeof(sc));
	for (int i = 0; i < 2; i++) {
		q[i].status = 200;
		q[i].usage_prompt = 100;
		q[i].usage_cached = -1;
	}
	rd.sc = &sc;
	rd.reqs = q;
	rd.nreqs = 2;
	/* vLLM 0.16 - 0.20 (#33290): external N, local_compute 1, prompt_tokens_recomputed 1 */
	rd.d_before_text = "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 5\n"
	                   "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 0\n"
	                   "vllm:prompt_tokens_recomputed_total{engine=\"0\"} 0\n";
	rd.d_after_text =
	    "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 7\n"
	    "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 200\n"
	    "vllm:prompt_tokens_recomputed_total{engine=\"0\"} 2\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_PASS);
	assert_non_null(strstr(d, "0.16 - 0.20"));
	assert_non_null(strstr(d, "external_kv_transfer +200 (expected 200"));
	/* the same era, a silent recompute */
	rd.d_after_text = "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 205\n"
	                  "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 0\n"
	                  "vllm:prompt_tokens_recomputed_total{engine=\"0\"} 0\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_FAIL);
	assert_non_null(strstr(d, "local_compute +200 (expected 2)"));
	/* vLLM >= 0.21 (#37460): external N, local_compute 0, no prompt_tokens_recomputed */
	rd.d_before_text =
	    "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 5\n"
	    "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 0\n";
	rd.d_after_text =
	    "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 5\n"
	    "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 200\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_PASS);
	assert_non_null(strstr(d, ">= 0.21"));
	rd.vllm = "0.31";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_PASS);
	rd.vllm = "0.20"; /* its row leaves the era to /metrics */
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_PASS);
	rd.vllm = "0.16"; /* says N+1, but /metrics has no prompt_tokens_recomputed */
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_FAIL);
	assert_non_null(strstr(d, "is decode really 0.16"));
	rd.vllm = NULL;
	/* pdkv's old expectation (external N-1, local_compute 1) holds in no era */
	rd.d_after_text =
	    "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 7\n"
	    "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 198\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_FAIL);
	/* the >= 0.21 era, a silent recompute */
	rd.d_after_text = "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 205\n"
	                  "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 0\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_FAIL);
	assert_non_null(strstr(d, "local_compute +200 (expected 0)"));
	/* a Mamba/GDN model on >= 0.21 (#46807, --external mamba=1): external N-1,
	 * local_compute 1 per request; the plain rule fails it and vice versa */
	rd.d_after_text =
	    "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 7\n"
	    "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 198\n";
	rd.mamba = true;
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_PASS);
	assert_non_null(strstr(d, "external_kv_transfer +198 (expected 198"));
	assert_non_null(strstr(d, "2 Mamba/GDN requests loaded N-1"));
	rd.d_after_text =
	    "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 5\n"
	    "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 200\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_FAIL);
	rd.d_after_text = "vllm:prompt_tokens_by_source_total{source=\"local_compute\"} 205\n"
	                  "vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"} 0\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_FAIL);
	rd.mamba = false;
	/* nothing on /metrics, no cached_tokens in the answers */
	rd.d_before_text = rd.d_after_text = "vllm:prompt_tokens_total 1\n";
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_NOTRUN);
	assert_non_null(strstr(d, "start decode with --enable-prompt-tokens-details"));
	q[0].usage_cached = q[1].usage_cached = 99;
	assert_int_equal(hr_external_kv_reused(&rd, d, sizeof(d)), HR_PASS);
	assert_non_null(strstr(d, "usage.prompt_tokens_details.cached_tokens"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(proxy_fields),    cmocka_unit_test(split),
	    cmocka_unit_test(find_by_prompt),  cmocka_unit_test(router_checks),
	    cmocka_unit_test(external_signal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
