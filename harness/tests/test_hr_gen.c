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
#include "scenario_fixture.h"

static void v0_is_the_default(void **st)
{
	struct hr_scenario sc;
	(void)st;
	scfx_parse_ok("{\"name\":\"t\",\"metadata\":\"etcd\"}", &sc);
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
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":\"0.15.1\",\"protocol\":\"tcp\"}", &sc);
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

	scfx_parse_ok("{\"name\":\"t\",\"generation\":\"b0\",\"metadata\":\"p2p\"}", &sc);
	assert_int_equal(sc.gen, CFG_GEN_B0);
	assert_string_equal(sc.vllm, "0.16");
	assert_string_equal(sc.proxy_contract, "mooncake");
	hr_scenario_free(&sc);

	/* bn stands for a release that speaks bn (the newest is bl), bl for the newest */
	scfx_parse_ok("{\"name\":\"t\",\"generation\":\"bn\"}", &sc);
	assert_string_equal(sc.vllm, "0.23");
	assert_int_equal(sc.gen, CFG_GEN_BN);
	{
		struct cfg_vllm_info vi;
		char err[200];
		assert_int_equal(cfg_vllm_lookup(sc.vllm, &vi, err, sizeof(err)), 0);
		assert_int_equal(vi.gen, CFG_GEN_BN);
	}
	hr_scenario_free(&sc);
	scfx_parse_ok("{\"name\":\"t\",\"generation\":\"bl\"}", &sc);
	assert_string_equal(sc.vllm, cfg_vllm_newest);
	assert_int_equal(sc.gen, CFG_GEN_BL);
	hr_scenario_free(&sc);

	/* a gen-B release may pick the other struct shape; the proxy may be overridden */
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":\"0.16\",\"generation\":\"bn\","
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
	scfx_expect_error("{\"name\":\"t\",\"vllm\":\"0.15\",\"metadata\":\"etcd\"}",
	                  "metadata: vLLM V1 connectors (generation a) publish nothing");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":\"0.18\",\"mooncake\":{}}",
	                  "mooncake: vLLM V1 connectors (generation b0) read no mooncake.json");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":\"0.10\"}", "vllm: --vllm-version 0.10");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":15}", "vllm: expected a vLLM release");
	scfx_expect_error("{\"name\":\"t\",\"generation\":\"c\"}",
	                  "generation: expected v0, a, b0, b1, b2, bn or bl");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":\"0.15\",\"generation\":\"bn\"}",
	                  "generation: vLLM 0.15 speaks generation a");
	scfx_expect_error(
	    "{\"name\":\"t\",\"vllm\":\"0.8\",\"generation\":\"a\",\"metadata\":\"etcd\"}",
	    "generation: vLLM 0.8 speaks generation v0");
	scfx_expect_error(
	    "{\"name\":\"t\",\"generation\":\"a\",\"proxy\":{\"contract\":\"nginx\"}}",
	    "proxy.contract: expected v0, toy, mooncake or auto");
	scfx_expect_error("{\"name\":\"t\",\"generation\":\"a\",\"proxy\":{\"cmdline\":[]}}",
	                  "proxy: unknown key \"cmdline\"");
	scfx_expect_error("{\"name\":\"t\",\"generation\":\"a\",\"proxy\":\"toy\"}",
	                  "proxy: expected an object");
	scfx_expect_error("{\"name\":\"t\",\"generation\":\"a\",\"env\":{\"lower\":\"1\"}}",
	                  "env: \"lower\": expected an upper-case NAME");
	scfx_expect_error("{\"name\":\"t\",\"generation\":\"a\",\"env\":{\"X\":1}}", "env: \"X\"");
	scfx_expect_error("{\"name\":\"t\",\"generation\":\"a\",\"env\":[]}",
	                  "env: expected an object");
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
