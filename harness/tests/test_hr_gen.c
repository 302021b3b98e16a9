/* SPDX-License-Identifier: Apache-2.0 */
/* test_hr_gen: the scenario fields that pick the connector generation, the router contract and
 * the stand-ins' extra environment — defaults per generation and every error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cfg/cfg_vllm.h"
#include "lib/hr.h"

static void parse_ok(const char *json, struct hr_scenario *sc)
{
	char err[1024] = "";
	if (hr_scenario_parse("dir/s.json", json, sc, err, sizeof(err)))
		fail_msg("parse of %s failed: %s", json, err);
}

static void expect_error(const char *json, const char *want)
{
	struct hr_scenario sc;
	char err[1024] = "";
	int r = hr_scenario_parse("dir/s.json", json, &sc, err, sizeof(err));
	if (r == 0 || !strstr(err, want) || strncmp(err, "dir/s.json: ", 12)) {
		if (r == 0)
			hr_scenario_free(&sc);
		fail_msg("parse of %s gave %d \"%s\", wanted an error containing \"%s\"", json, r,
		         err, want);
	}
}

static void v0_is_the_default(void **st)
{
	struct hr_scenario sc;
	(void)st;
	parse_ok("{\"name\":\"t\",\"metadata\":\"etcd\"}", &sc);
	assert_int_equal(sc.gen, CFG_GEN_V0);
	assert_string_equal(sc.vllm, "0.8.5");
	assert_string_equal(sc.proxy_contract, "v0");
	assert_int_equal(cJSON_GetObjectItem(sc.kv_decode, "kv_rank")->valueint, 1);
	hr_scenario_free(&sc);
}

static void v1_defaults(void **st)
{
	struct hr_scenario sc;
	const cJSON *x;
	(void)st;
	/* no metadata field: V1 uses P2PHANDSHAKE */
	parse_ok("{\"name\":\"t\",\"vllm\":\"0.15.1\",\"protocol\":\"tcp\"}", &sc);
	assert_int_equal(sc.gen, CFG_GEN_A);
	assert_int_equal(sc.meta, HR_META_P2P);
	assert_string_equal(sc.vllm, "0.15.1");
	assert_string_equal(sc.proxy_contract, "toy");
	assert_null(cJSON_GetObjectItem(sc.kv_prefill, "kv_rank"));
	assert_null(cJSON_GetObjectItem(sc.kv_prefill, "kv_buffer_size"));
	x = cJSON_GetObjectItem(sc.kv_prefill, "kv_connector_extra_config");
	assert_string_equal(cJSON_GetObjectItem(x, "mooncake_protocol")->valuestring, "tcp");
	assert_string_equal(cJSON_GetObjectItem(sc.kv_decode, "kv_role")->valuestring,
	                    "kv_consumer");
	hr_scenario_free(&sc);

	parse_ok("{\"name\":\"t\",\"generation\":\"b0\",\"metadata\":\"p2p\"}", &sc);
	assert_int_equal(sc.gen, CFG_GEN_B0);
	assert_string_equal(sc.vllm, "0.16");
	assert_string_equal(sc.proxy_contract, "mooncake");
	hr_scenario_free(&sc);

	/* bn stands for a release that speaks bn (the newest is bl), bl for the newest */
	parse_ok("{\"name\":\"t\",\"generation\":\"bn\"}", &sc);
	assert_string_equal(sc.vllm, "0.23");
	assert_int_equal(sc.gen, CFG_GEN_BN);
	{
		struct cfg_vllm_info vi;
		char err[200];
		assert_int_equal(cfg_vllm_lookup(sc.vllm, &vi, err, sizeof(err)), 0);
		assert_int_equal(vi.gen, CFG_GEN_BN);
	}
	hr_scenario_free(&sc);
	parse_ok("{\"name\":\"t\",\"generation\":\"bl\"}", &sc);
	assert_string_equal(sc.vllm, cfg_vllm_newest);
	assert_int_equal(sc.gen, CFG_GEN_BL);
	hr_scenario_free(&sc);

	/* a gen-B release may pick the other struct shape; the proxy may be overridden */
	parse_ok("{\"name\":\"t\",\"vllm\":\"0.16\",\"generation\":\"bn\","
	         "\"proxy\":{\"contract\":\"auto\"},\"env\":{\"VLLM_X_1\":\"1\"}}",
	         &sc);
	assert_int_equal(sc.gen, CFG_GEN_BN);
	assert_string_equal(sc.proxy_contract, "auto");
	assert_string_equal(cJSON_GetObjectItem(sc.env, "VLLM_X_1")->valuestring, "1");
	hr_scenario_free(&sc);
}

static void errors(void **st)
{
	(void)st;
	expect_error("{\"name\":\"t\",\"vllm\":\"0.15\",\"metadata\":\"etcd\"}",
	             "metadata: vLLM V1 connectors (generation a) publish nothing");
	expect_error("{\"name\":\"t\",\"vllm\":\"0.18\",\"mooncake\":{}}",
	             "mooncake: vLLM V1 connectors (generation b0) read no mooncake.json");
	expect_error("{\"name\":\"t\",\"vllm\":\"0.10\"}", "vllm: --vllm-version 0.10");
	expect_error("{\"name\":\"t\",\"vllm\":15}", "vllm: expected a vLLM release");
	expect_error("{\"name\":\"t\",\"generation\":\"c\"}",
	             "generation: expected v0, a, b0, b1, b2, bn or bl");
	expect_error("{\"name\":\"t\",\"vllm\":\"0.15\",\"generation\":\"bn\"}",
	             "generation: vLLM 0.15 speaks generation a");
	expect_error("{\"name\":\"t\",\"vllm\":\"0.8\",\"generation\":\"a\",\"metadata\":\"etcd\"}",
	             "generation: vLLM 0.8 speaks generation v0");
	expect_error("{\"name\":\"t\",\"generation\":\"a\",\"proxy\":{\"contract\":\"nginx\"}}",
	             "proxy.contract: expected v0, toy, mooncake or auto");
	expect_error("{\"name\":\"t\",\"generation\":\"a\",\"proxy\":{\"cmdline\":[]}}",
	             "proxy: unknown key \"cmdline\"");
	expect_error("{\"name\":\"t\",\"generation\":\"a\",\"proxy\":\"toy\"}",
	             "proxy: expected an object");
	expect_error("{\"name\":\"t\",\"generation\":\"a\",\"env\":{\"lower\":\"1\"}}",
	             "env: \"lower\": expected an upper-case NAME");
	expect_error("{\"name\":\"t\",\"generation\":\"a\",\"env\":{\"X\":1}}", "env: \"X\"");
	expect_error("{\"name\":\"t\",\"generation\":\"a\",\"env\":[]}", "env: expected an object");
}

int main(void)
{
	const struct CMUnitTest t[] = {
	    cmocka_unit_test(v0_is_the_default),
	    cmocka_unit_test(v1_defaults),
	    cmocka_unit_test(errors),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
