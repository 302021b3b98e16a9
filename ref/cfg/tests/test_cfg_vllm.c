/* SPDX-License-Identifier: Apache-2.0 */
/* test_cfg_vllm: the vLLM version table — each generation and metrics-era boundary, a citation
 * on every row, suffixes, releases past the table, and the releases pdkv refuses. */
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

static struct cfg_vllm_info info_of(const char *v)
{
	struct cfg_vllm_info i;
	char err[256];

	if (cfg_vllm_lookup(v, &i, err, sizeof(err))) {
		fail_msg("lookup %s: %s", v, err);
	}
	return i;
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
	/* mooncake_connector.py's history: b0 until #36869 (b1), #40860 (b2), then bn */
	assert_int_equal(gen_of("0.17.1+cu128"), CFG_GEN_B0);
	assert_int_equal(gen_of("0.18.0"), CFG_GEN_B0);
	assert_int_equal(gen_of("0.19"), CFG_GEN_B1);
	assert_int_equal(gen_of("0.19.1"), CFG_GEN_B1);
	assert_int_equal(gen_of("0.20"), CFG_GEN_B1);
	assert_int_equal(gen_of("0.21.0"), CFG_GEN_B2);
	assert_int_equal(gen_of("0.22"), CFG_GEN_B2);
	assert_int_equal(gen_of("0.23"), CFG_GEN_BN);
	assert_int_equal(gen_of("0.23.1"), CFG_GEN_BN); /* the BL boundary (#44528) */
	assert_int_equal(gen_of("0.24"), CFG_GEN_BL);
	assert_int_equal(gen_of("v0.29.0"), CFG_GEN_BL);
	assert_int_equal(gen_of("0.31.0"), CFG_GEN_BL);
	assert_int_equal(gen_of("1.2"), CFG_GEN_BL);
	assert_string_equal(cfg_vllm_newest, "0.31");
	assert_int_equal(gen_of(cfg_vllm_newest), CFG_GEN_BL);
}

/* By-source counting and feature flags across the eras (cfg_vllm.c's citations). */
static void eras(void **st)
{
	struct cfg_vllm_info i;
	(void)st;

	i = info_of("0.15");
	assert_int_equal(i.src, CFG_SRC_NONE);
	assert_false(i.recomputed);
	i = info_of("0.16");
	assert_int_equal(i.src, CFG_SRC_N_1);
	assert_true(i.recomputed);
	assert_int_equal(i.feat, 0);
	i = info_of("0.17");
	assert_int_equal(i.src, CFG_SRC_N_1);
	assert_string_equal(i.policy, "fail");
	assert_int_equal(i.feat, 0);
	assert_non_null(strstr(i.uncertain, "#36869")); /* 0.18 may already be b1 */
	/* #36869 brought block_lens (b1) and the TP pairing together */
	i = info_of("0.19");
	assert_int_equal(i.gen, CFG_GEN_B1);
	assert_true(i.feat & CFG_F_TP_TOPOLOGY);
	assert_non_null(strstr(i.cite, "b745e8b5d"));
	i = info_of("0.20.1");
	assert_non_null(strstr(i.uncertain, "#40860")); /* 0.20 may already be b2 */
	assert_int_equal(i.src, CFG_SRC_N_1);
	assert_true(i.recomputed);
	assert_non_null(strstr(i.uncertain, "#37460"));
	i = info_of("0.21");
	assert_int_equal(i.src, CFG_SRC_N_0);
	assert_false(i.recomputed);
	assert_true(i.feat & CFG_F_TP_TOPOLOGY);
	assert_false(i.feat & CFG_F_HMA);
	i = info_of("0.22");
	assert_true(i.feat & CFG_F_HMA);
	i = info_of("0.24");
	assert_false(i.feat & CFG_F_GDN_N1);
	i = info_of("0.25.1");
	assert_false(i.feat & CFG_F_GDN_N1);
	i = info_of("0.26");
	assert_true(i.feat & CFG_F_GDN_N1);
	assert_false(i.feat & CFG_F_REMOTE_PP);
	i = info_of("0.30");
	assert_true(i.feat & CFG_F_REMOTE_PP);
	assert_false(i.feat & CFG_F_PREFIX_REPLAY);
	i = info_of("0.31");
	assert_true(i.feat & CFG_F_PREFIX_REPLAY);
	assert_true(i.feat & CFG_F_BOOT_ADDR);
	assert_true(i.feat & CFG_F_D_FAIL_REPORT);
	assert_false(i.past_newest);
	assert_string_equal(i.row, "0.31");
	/* a release past the table resolves to the newest row and says so */
	i = info_of("0.33");
	assert_true(i.past_newest);
	assert_int_equal(i.gen, CFG_GEN_BL);
	assert_int_equal(i.src, CFG_SRC_N_0);
	assert_non_null(strstr(i.row, "0.31"));
	assert_non_null(strstr(i.row, "newer"));
	assert_false(info_of("0.31.2").past_newest);
}

/* Every row rests on a citation that names a vLLM PR or a source file at a commit. */
static void citations(void **st)
{
	size_t n = cfg_vllm_rows();
	(void)st;

	assert_true(n >= 14);
	for (size_t k = 0; k < n; k++) {
		const char *range, *cite;
		int gen;

		assert_int_equal(cfg_vllm_row(k, &range, &cite, &gen), 0);
		if (!cite || !*cite)
			fail_msg("row %s has no citation", range);
		if (!strchr(cite, '#') && !strstr(cite, " @ "))
			fail_msg("row %s: citation \"%s\" names no PR or commit", range, cite);
	}
	assert_int_equal(cfg_vllm_row(n, &(const char *){NULL}, &(const char *){NULL}, &(int){0}),
	                 -1);
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
	assert_int_equal(cfg_vllm_lookup("0.18.1", &i, err, sizeof(err)), 0);
	assert_string_equal(i.row, "0.17 - 0.18");
	assert_non_null(i.cite);
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
	assert_string_equal(cfg_gen_name(CFG_GEN_B1), "b1");
	assert_string_equal(cfg_gen_name(CFG_GEN_B2), "b2");
	assert_int_equal(cfg_gen_parse("b2", &g), 0);
	assert_int_equal(g, CFG_GEN_B2);
	/* the shapes keep vLLM's order, so the "has" tests are comparisons */
	assert_false(cfg_gen_has_block_lens(CFG_GEN_B0));
	assert_true(cfg_gen_has_block_lens(CFG_GEN_B1));
	assert_false(cfg_gen_grouped(CFG_GEN_B1));
	assert_true(cfg_gen_grouped(CFG_GEN_B2));
	assert_false(cfg_gen_has_bn(CFG_GEN_B2));
	assert_true(cfg_gen_has_bn(CFG_GEN_BN));
	assert_true(cfg_gen_grouped(CFG_GEN_BL));
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
	assert_non_null(strstr(buf, "evidence: #36869"));
	assert_non_null(strstr(buf, "0.31 "));
	assert_null(strstr(buf, "0.32"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest t[] = {
	    cmocka_unit_test(boundaries),   cmocka_unit_test(defaults_per_release),
	    cmocka_unit_test(refused),      cmocka_unit_test(names),
	    cmocka_unit_test(table_prints), cmocka_unit_test(eras),
	    cmocka_unit_test(citations),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
