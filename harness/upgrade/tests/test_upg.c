/* SPDX-License-Identifier: Apache-2.0 */
/* test_upg: upgrade-check's plan (release order, contracts, cells), each cell's scenario, the
 * exit rule and the change list — including feature bits the version table may gain later. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "upgrade/upg.h"

static struct upg_plan p;

static void plan_orders_and_lays_out(void **st)
{
	char err[512];
	(void)st;
	assert_int_equal(upg_plan_init(&p, "0.16", "0.31", err, sizeof(err)), 0);
	assert_false(p.downgrade);
	assert_string_equal(p.ver[0].version, "0.16");
	assert_int_equal(p.ncontracts, 1);
	assert_string_equal(p.contract[0], "mooncake");
	assert_int_equal(p.ncells, 4);

	assert_int_equal(upg_plan_init(&p, "0.31", "0.16", err, sizeof(err)), 0);
	assert_true(p.downgrade);
	assert_string_equal(p.ver[0].version, "0.16");
	assert_string_equal(p.ver[1].version, "0.31");

	/* gen A -> gen B: the newer contract first, then the older one; eight cells */
	assert_int_equal(upg_plan_init(&p, "0.15", "0.16", err, sizeof(err)), 0);
	assert_int_equal(p.ncontracts, 2);
	assert_string_equal(p.contract[0], "mooncake");
	assert_string_equal(p.contract[1], "toy");
	assert_int_equal(p.ncells, 8);
	assert_non_null(upg_cell_at(&p, 1, 1, 0));
	assert_string_equal(upg_cell_at(&p, 1, 1, 0)->contract, "toy");
}

static void plan_errors(void **st)
{
	char err[512];
	(void)st;
	assert_int_equal(upg_plan_init(&p, "0.9", "0.16", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--from: --vllm-version 0.9: no connector"));
	assert_int_equal(upg_plan_init(&p, "0.16", "x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--to: "));
	assert_int_equal(upg_plan_init(&p, "0.16", "0.16.0", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "same release"));
}

static void cell_scenarios(void **st)
{
	struct hr_scenario sc;
	char err[1024];
	(void)st;
	assert_int_equal(upg_plan_init(&p, "0.15", "0.16", err, sizeof(err)), 0);
	/* new prefill, old decode, the older (toy) contract */
	assert_int_equal(upg_cell_scenario(&p, upg_cell_at(&p, 1, 1, 0), &sc, err, sizeof(err)), 0);
	assert_string_equal(sc.vllm_side[0], "0.16");
	assert_string_equal(sc.vllm_side[1], "0.15");
	assert_string_equal(sc.proxy_contract, "toy");
	assert_int_equal(sc.nchecks, 4);
	/* 0.15's row randomises request ids: its documented workaround is set */
	assert_string_equal(
	    cJSON_GetObjectItem(sc.env, "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION")->valuestring, "1");
	hr_scenario_free(&sc);

	/* V0 against V1 cannot be deployed: the parser says why */
	assert_int_equal(upg_plan_init(&p, "0.8.5", "0.12", err, sizeof(err)), 0);
	assert_int_equal(upg_cell_scenario(&p, upg_cell_at(&p, 0, 0, 1), &sc, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "vllm: prefill 0.8.5 speaks generation v0"));
	assert_int_equal(upg_cell_scenario(&p, upg_cell_at(&p, 0, 0, 0), &sc, err, sizeof(err)), 0);
	assert_int_equal(sc.meta, HR_META_HTTP);
	hr_scenario_free(&sc);
}

static void exit_rule(void **st)
{
	char err[512];
	struct upg_cell *oo, *nn;
	(void)st;
	assert_int_equal(upg_plan_init(&p, "0.15", "0.16", err, sizeof(err)), 0);
	for (size_t i = 0; i < p.ncells; i++)
		p.cell[i].verdict = UPG_INCOMPATIBLE;
	oo = (struct upg_cell *)upg_cell_at(&p, 1, 0, 0); /* old/old under toy */
	nn = (struct upg_cell *)upg_cell_at(&p, 0, 1, 1); /* new/new under mooncake */
	assert_int_equal(upg_exit_code(&p), 1);
	oo->verdict = nn->verdict = UPG_PASS;
	assert_int_equal(upg_exit_code(&p), 0); /* mixed cells do not count */
	assert_true(upg_cell_decides(&p, oo));
	assert_false(upg_cell_decides(&p, upg_cell_at(&p, 0, 0, 0)));
	nn->verdict = UPG_NOTRUN;
	assert_int_equal(upg_exit_code(&p), 77);
	oo->verdict = UPG_FAIL;
	assert_int_equal(upg_exit_code(&p), 1);
}

static bool has_change(const cJSON *a, const char *kind, const char *what)
{
	for (const cJSON *c = a->child; c; c = c->next)
		if (!strcmp(cJSON_GetObjectItem(c, "kind")->valuestring, kind) &&
		    strstr(cJSON_GetObjectItem(c, "what")->valuestring, what))
			return true;
	return false;
}

static void change_list(void **st)
{
	char err[512];
	cJSON *a;
	(void)st;
	assert_int_equal(upg_plan_init(&p, "0.16", "0.21", err, sizeof(err)), 0);
	p.ver[0].feat = CFG_F_TP_TOPOLOGY;
	p.ver[1].feat = CFG_F_BOOT_ADDR | (1u << 20); /* bit 20: one this file does not know */
	a = upg_changes(&p);
	assert_true(has_change(a, "wire", "b0 -> b2"));
	assert_true(has_change(a, "default", "kv_load_failure_policy default recompute -> fail"));
	assert_true(has_change(a, "metrics", "- vllm:prompt_tokens_recomputed"));
	assert_false(has_change(a, "metrics", "vllm:mooncake_"));
	assert_true(
	    has_change(a, "config", "+ kv_connector_extra_config.bootstrap_server_address"));
	assert_true(has_change(a, "behaviour", "- heterogeneous TP"));
	assert_true(has_change(a, "feature", "+ feature bit 20"));
	assert_false(has_change(a, "router", "contract"));
	cJSON_Delete(a);

	assert_int_equal(upg_plan_init(&p, "0.15", "0.16", err, sizeof(err)), 0);
	a = upg_changes(&p);
	assert_true(has_change(a, "router", "contract toy -> mooncake"));
	cJSON_Delete(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(plan_orders_and_lays_out),
	    cmocka_unit_test(plan_errors),
	    cmocka_unit_test(cell_scenarios),
	    cmocka_unit_test(exit_rule),
	    cmocka_unit_test(change_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
