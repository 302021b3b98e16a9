/* SPDX-License-Identifier: Apache-2.0 */
/* test_hr_sides: "vllm" per side ({"prefill": X, "decode": Y}) — each side's release and
 * generation, the newer side's router contract, every error message, and each stand-in's argv. */
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
#include "lib/hr_deploy.h"

static void string_form_sets_both_sides(void **st)
{
	struct hr_scenario sc;
	(void)st;
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":\"0.16\",\"generation\":\"bn\"}", &sc);
	assert_string_equal(sc.vllm_side[0], "0.16");
	assert_string_equal(sc.vllm_side[1], "0.16");
	assert_int_equal(sc.gen_side[0], CFG_GEN_BN);
	assert_int_equal(sc.gen_side[1], CFG_GEN_BN);
	hr_scenario_free(&sc);
	scfx_parse_ok("{\"name\":\"t\",\"metadata\":\"etcd\"}", &sc); /* no "vllm": V0 default */
	assert_string_equal(sc.vllm_side[0], sc.vllm);
	assert_int_equal(sc.gen_side[1], CFG_GEN_V0);
	hr_scenario_free(&sc);
}

static void per_side_newer_side_wins(void **st)
{
	struct hr_scenario sc;
	char buf[64];
	(void)st;
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.16\",\"decode\":\"0.21\"}}", &sc);
	assert_string_equal(sc.vllm_side[0], "0.16");
	assert_string_equal(sc.vllm_side[1], "0.21");
	assert_int_equal(sc.gen_side[0], CFG_GEN_B0);
	assert_int_equal(sc.gen_side[1], CFG_GEN_B2);
	assert_string_equal(sc.vllm, "0.21");
	assert_int_equal(sc.gen, CFG_GEN_B2);
	assert_int_equal(sc.meta, HR_META_P2P);
	assert_string_equal(sc.proxy_contract, "mooncake");
	assert_string_equal(hr_scenario_vllm_label(&sc, buf, sizeof(buf)),
	                    "prefill 0.16, decode 0.21");
	hr_scenario_free(&sc);

	/* the newer on prefill; within one generation the later release (patch counts) */
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":{\"decode\":\"0.12\",\"prefill\":\"0.15.1\"}}",
	              &sc);
	assert_string_equal(sc.vllm, "0.15.1");
	assert_int_equal(sc.gen, CFG_GEN_A);
	assert_string_equal(sc.proxy_contract, "toy");
	hr_scenario_free(&sc);
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.15.1\",\"decode\":\"0.15.2\"}}",
	              &sc);
	assert_string_equal(sc.vllm, "0.15.2");
	hr_scenario_free(&sc);

	/* gen A against gen B: the contract of gen B unless the scenario forces one */
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.15\",\"decode\":\"0.16\"}}", &sc);
	assert_int_equal(sc.gen, CFG_GEN_B0);
	assert_string_equal(sc.proxy_contract, "mooncake");
	hr_scenario_free(&sc);
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.15\",\"decode\":\"0.16\"},"
	              "\"proxy\":{\"contract\":\"toy\"}}",
	              &sc);
	assert_string_equal(sc.proxy_contract, "toy");
	assert_string_equal(hr_scenario_grade_contract(&sc), "toy");
	hr_scenario_free(&sc);
}

static void per_side_errors(void **st)
{
	(void)st;
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefil\":\"0.16\",\"decode\":\"0.17\"}}",
	                  "vllm: unknown key \"prefil\" (expected {\"prefill\"");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.16\"}}",
	                  "vllm.decode: missing");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefill\":0.16,\"decode\":\"0.17\"}}",
	                  "vllm.prefill: expected a vLLM release such as \"0.16\"");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.16\",\"decode\":\"x\"}}",
	                  "vllm.decode: --vllm-version: expected a vLLM release");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.9\",\"decode\":\"0.17\"}}",
	                  "vllm.prefill: --vllm-version 0.9: no connector pdkv emulates");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.8.5\",\"decode\":\"0.12\"}}",
	                  "vllm: prefill 0.8.5 speaks generation v0 and decode 0.12 generation a");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.16\",\"decode\":\"0.17\"},"
	                  "\"generation\":\"bn\"}",
	                  "generation: cannot be combined with a per-side \"vllm\" object");
	scfx_expect_error("{\"name\":\"t\",\"vllm\":16}", "vllm: expected a vLLM release such as "
	                                                  "\"0.15\", or {\"prefill\"");
	/* V1 rules still hold for a per-side V1 pair */
	scfx_expect_error("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.16\",\"decode\":\"0.17\"},"
	                  "\"metadata\":\"etcd\"}",
	                  "metadata: vLLM V1 connectors");
}

/* the value after flag in a stand-in's argv, or NULL */
static const char *arg_after(const cJSON *a, const char *flag)
{
	for (const cJSON *x = a->child; x && x->next; x = x->next)
		if (!strcmp(x->valuestring, flag))
			return x->next->valuestring;
	return NULL;
}

static void each_standin_gets_its_release(void **st)
{
	static struct hr_deploy d;
	struct hr_scenario sc;
	char err[256];
	cJSON *p, *q, *plain;
	(void)st;
	scfx_parse_ok("{\"name\":\"t\",\"vllm\":{\"prefill\":\"0.16\",\"decode\":\"0.19\"}}", &sc);
	memset(&d, 0, sizeof(d));
	d.sc = &sc;
	snprintf(d.standin_exe, sizeof(d.standin_exe), "pdkv-standin");
	p = hr_standin_argv(&d, &d.prefill, sc.kv_prefill, sc.prefill_args, err, sizeof(err));
	q = hr_standin_argv(&d, &d.decode, sc.kv_decode, sc.decode_args, err, sizeof(err));
	plain = hr_standin_argv(&d, &d.plain, NULL, NULL, err, sizeof(err));
	assert_non_null(p);
	assert_non_null(q);
	assert_non_null(plain);
	assert_string_equal(arg_after(p, "--vllm-version"), "0.16");
	assert_string_equal(arg_after(p, "--v1-shape"), "b0");
	assert_string_equal(arg_after(q, "--vllm-version"), "0.19");
	assert_string_equal(arg_after(q, "--v1-shape"), "b1");
	assert_null(arg_after(plain, "--vllm-version"));
	cJSON_Delete(p);
	cJSON_Delete(q);
	cJSON_Delete(plain);
	hr_scenario_free(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(string_form_sets_both_sides),
	    cmocka_unit_test(per_side_newer_side_wins),
	    cmocka_unit_test(per_side_errors),
	    cmocka_unit_test(each_standin_gets_its_release),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
