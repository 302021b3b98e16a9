/* test_cfg_vllm: the vLLM version table — each generation boundary, suffixes, and the releases
 * pdkv refuses with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg/cfg_vllm.h"

static enum cfg_gen gen_of(const char *v)
{
	struct cfg_vllm_info i;
	char err[256];

	if (cfg_vllm_lookup(v, &i, err, sizeof(err))) {
		fail_msg("lookup %s: %s", v, err);
	}
	return i.gen;
}

static void boundaries(void **st)
{
	(void)st;
	assert_int_equal(gen_of("0.6.5"), CFG_GEN_V0);
	assert_int_equal(gen_of("0.8"), CFG_GEN_V0);
	assert_int_equal(gen_of("0.8.5.post1"), CFG_GEN_V0);
	assert_int_equal(gen_of("0.12.0"), CFG_GEN_A);
	assert_int_equal(gen_of("0.15.1"), CFG_GEN_A);
	assert_int_equal(gen_of("0.16"), CFG_GEN_B0);
	assert_int_equal(gen_of("0.16.0rc1"), CFG_GEN_B0);
	assert_int_equal(gen_of("0.17.1+cu128"), CFG_GEN_BN);
	assert_int_equal(gen_of("v0.29.0"), CFG_GEN_BN);
	assert_int_equal(gen_of("1.2"), CFG_GEN_BN);
	assert_int_equal(gen_of(cfg_vllm_newest), CFG_GEN_BN);
}

static void defaults_per_release(void **st)
{
	struct cfg_vllm_info i;
	char err[256];
	(void)st;

	assert_int_equal(cfg_vllm_lookup("0.8.4", &i, err, sizeof(err)), 0);
	assert_null(i.policy);
	assert_int_equal(cfg_vllm_lookup("0.12", &i, err, sizeof(err)), 0);
	assert_string_equal(i.policy, "recompute");
	assert_false(i.reqid_random);
	assert_int_equal(cfg_vllm_lookup("0.14", &i, err, sizeof(err)), 0);
	assert_true(i.reqid_random);
	assert_int_equal(cfg_vllm_lookup("0.17", &i, err, sizeof(err)), 0);
	assert_string_equal(i.policy, "fail");
	assert_true(i.mooncake_metrics);
	assert_false(i.by_source);
	assert_int_equal(cfg_vllm_lookup("0.18.1", &i, err, sizeof(err)), 0);
	assert_true(i.by_source);
	assert_string_equal(i.row, ">= 0.18");
}

static void refused(void **st)
{
	struct cfg_vllm_info i;
	char err[256];
	const char *bad[] = {"", "0", "x.y", "0.8.", "0..8", "12345.1", NULL};
	(void)st;

	for (int k = 0; bad[k]; k++) {
		assert_int_equal(cfg_vllm_lookup(bad[k], &i, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "expected a vLLM release"));
	}
	assert_int_equal(cfg_vllm_lookup(NULL, &i, err, sizeof(err)), -1);
	assert_int_equal(cfg_vllm_lookup("0.10.2", &i, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no connector pdkv emulates"));
	assert_int_equal(cfg_vllm_lookup("0.6.4", &i, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0.6.5"));
}

static void names(void **st)
{
	enum cfg_gen g;
	(void)st;

	for (int k = 0; k < CFG_GEN_COUNT; k++) {
		assert_int_equal(cfg_gen_parse(cfg_gen_name((enum cfg_gen)k), &g), 0);
		assert_int_equal(g, k);
	}
	assert_int_equal(cfg_gen_parse("b", &g), -1);
	assert_int_equal(cfg_gen_parse(NULL, &g), -1);
	assert_true(cfg_gen_is_b(CFG_GEN_BN));
	assert_false(cfg_gen_is_v1(CFG_GEN_V0));
}

static void table_prints(void **st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	(void)st;

	cfg_vllm_print_table(f);
	fclose(f);
	assert_non_null(strstr(buf, "0.13 - 0.15"));
	assert_non_null(strstr(buf, "uncertain:"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest t[] = {
	    cmocka_unit_test(boundaries),   cmocka_unit_test(defaults_per_release),
	    cmocka_unit_test(refused),      cmocka_unit_test(names),
	    cmocka_unit_test(table_prints),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
