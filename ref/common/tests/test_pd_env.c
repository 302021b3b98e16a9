/* SPDX-License-Identifier: Apache-2.0 */
/* test_pd_env: the environment table's typed reads — default when unset, the value when good,
 * the default plus the policy when bad — and the table's own consistency (unique names,
 * defaults inside their ranges, a doc and a reader for every row). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"

static void test_int(void **st)
{
	int64_t v;

	(void)st;
	unsetenv("MC_TRANSFER_TIMEOUT");
	assert_int_equal(pd_env_int("MC_TRANSFER_TIMEOUT", &v), 0);
	assert_int_equal(v, 30);
	setenv("MC_TRANSFER_TIMEOUT", "120", 1);
	assert_int_equal(pd_env_int("MC_TRANSFER_TIMEOUT", &v), 1);
	assert_int_equal(v, 120);
	/* above the range: the old reader multiplied this by 1000 into an int */
	setenv("MC_TRANSFER_TIMEOUT", "9999999999", 1);
	assert_int_equal(pd_env_int("MC_TRANSFER_TIMEOUT", &v), -1);
	assert_int_equal(v, 30);
	assert_non_null(strstr(pd_env_error(), "MC_TRANSFER_TIMEOUT=\"9999999999\""));
	assert_non_null(strstr(pd_env_error(), "5..86400"));
	setenv("MC_TRANSFER_TIMEOUT", "4", 1);
	assert_int_equal(pd_env_int("MC_TRANSFER_TIMEOUT", &v), -1);
	setenv("MC_TRANSFER_TIMEOUT", "30s", 1);
	assert_int_equal(pd_env_int("MC_TRANSFER_TIMEOUT", &v), -1);
	setenv("MC_TRANSFER_TIMEOUT", "", 1);
	assert_int_equal(pd_env_int("MC_TRANSFER_TIMEOUT", &v), 0);
	unsetenv("MC_TRANSFER_TIMEOUT");
	/* a default that is not a number (computed by the reader) reads as 0 */
	unsetenv("PDKV_KV1_RECV_HOLD_S");
	assert_int_equal(pd_env_int("PDKV_KV1_RECV_HOLD_S", &v), 0);
	assert_int_equal(v, 0);
	/* not in the table, or the wrong type: unset, never a crash */
	setenv("PDKV_NOT_A_VARIABLE", "1", 1);
	assert_int_equal(pd_env_int("PDKV_NOT_A_VARIABLE", &v), 0);
	assert_int_equal(pd_env_int("PDKV_LOG", &v), 0);
}

static void test_other_types(void **st)
{
	uint64_t z;
	bool b;
	double d;

	(void)st;
	setenv("PDKV_GPU_CHUNK", "4M", 1);
	assert_int_equal(pd_env_size("PDKV_GPU_CHUNK", &z), 1);
	assert_int_equal(z, 4u << 20);
	setenv("PDKV_GPU_CHUNK", "1K", 1);
	assert_int_equal(pd_env_size("PDKV_GPU_CHUNK", &z), -1);
	assert_int_equal(z, 2u << 20);
	unsetenv("PDKV_GPU_CHUNK");
	setenv("PDKV_KVC_READ_AHEAD", "0", 1);
	assert_int_equal(pd_env_bool("PDKV_KVC_READ_AHEAD", &b), 1);
	assert_false(b);
	setenv("PDKV_KVC_READ_AHEAD", "maybe", 1);
	assert_int_equal(pd_env_bool("PDKV_KVC_READ_AHEAD", &b), -1);
	assert_true(b);
	unsetenv("PDKV_KVC_READ_AHEAD");
	setenv("VLLM_LOG_STATS_INTERVAL", "0.5", 1);
	assert_int_equal(pd_env_float("VLLM_LOG_STATS_INTERVAL", &d), 1);
	assert_true(d == 0.5);
	setenv("VLLM_LOG_STATS_INTERVAL", "-1", 1);
	assert_int_equal(pd_env_float("VLLM_LOG_STATS_INTERVAL", &d), -1);
	assert_true(d == 10.0);
	unsetenv("VLLM_LOG_STATS_INTERVAL");
	setenv("PDKV_LOG", "loud", 1);
	assert_string_equal(pd_env_str("PDKV_LOG"), "info");
	setenv("PDKV_LOG", "debug", 1);
	assert_string_equal(pd_env_str("PDKV_LOG"), "debug");
	unsetenv("PDKV_LOG");
	unsetenv("TMPDIR");
	assert_string_equal(pd_env_str("TMPDIR"), "/tmp");
	setenv("MC_FORCE_TCP", "", 1);
	assert_true(pd_env_set("MC_FORCE_TCP"));
	unsetenv("MC_FORCE_TCP");
	assert_false(pd_env_set("MC_FORCE_TCP"));
}

static void test_table(void **st)
{
	char msg[200];

	(void)st;
	assert_true(pd_env_count() > 60);
	for (size_t i = 0; i < pd_env_count(); i++) {
		const struct pd_env_var *r = pd_env_at(i);

		assert_non_null(r->doc);
		assert_true(strlen(r->doc) > 10);
		assert_true(r->cmds != 0);
		assert_ptr_equal(pd_env_find(r->name), r); /* names are unique */
		if (r->def && pd_env_check(r, r->def, msg, sizeof(msg)))
			fail_msg("%s: default %s is bad: %s", r->name, r->def, msg);
		if (r->type == PD_ENV_ENUM)
			assert_non_null(r->choices);
		if (r->type == PD_ENV_INT || r->type == PD_ENV_SIZE)
			assert_true(r->lo <= r->hi);
	}
	assert_null(pd_env_at(pd_env_count()));
	assert_string_equal(pd_env_cmd_name(pd_env_cmd_bit("run")), "pdkv-run");
	assert_int_equal(pd_env_cmd_bit("pdkv-standin"), PD_ENV_C_STANDIN);
	assert_int_equal(pd_env_cmd_bit("nope"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_int),
	    cmocka_unit_test(test_other_types),
	    cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
