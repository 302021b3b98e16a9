/* SPDX-License-Identifier: Apache-2.0 */
/* test_cfg_release: --kv-transfer-config parsed as one vLLM release does it — the uuid4 engine_id
 * default, the per-release kv_load_failure_policy default, the typed kv_connector_extra_config
 * fields the stand-ins read, and V0 releases ignoring V1 fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg/cfg.h"

static void parse_ver(const char *ver, const char *json, struct cfg_kv_transfer *kt, int want)
{
	struct cfg_vllm_info rel;
	struct cfg_diags d = {0};
	char err[256], *e = NULL;

	assert_int_equal(cfg_vllm_lookup(ver, &rel, err, sizeof(err)), 0);
	assert_int_equal(cfg_kv_transfer_parse_release(json, &rel, kt, &d, &e), want);
	free(e);
	cfg_diags_free(&d);
}

static bool is_uuid4(const char *s)
{
	if (!s || strlen(s) != 36 || s[14] != '4' || !strchr("89ab", s[19]))
		return false;
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
			return false;
	}
	return true;
}

static void uuid4(void **st)
{
	char a[37], b[37];
	(void)st;

	assert_int_equal(cfg_uuid4(a), 0);
	assert_int_equal(cfg_uuid4(b), 0);
	assert_true(is_uuid4(a));
	assert_true(is_uuid4(b));
	assert_string_not_equal(a, b);
}

static void engine_id_default(void **st)
{
	struct cfg_kv_transfer kt;
	struct cfg_diags d = {0};
	char first[37];
	(void)st;

	/* the generic V1 parse (what the stand-ins call) also fills it */
	assert_int_equal(cfg_kv_transfer_parse("{\"kv_connector\":\"MooncakeConnector\","
	                                       "\"kv_role\":\"kv_producer\"}",
	                                       CFG_VLLM_V1, &kt, &d, NULL),
	                 0);
	assert_true(kt.engine_id_generated);
	assert_true(is_uuid4(kt.engine_id));
	snprintf(first, sizeof(first), "%s", kt.engine_id);
	cfg_kv_transfer_free(&kt);
	parse_ver("0.17", "{\"kv_role\":\"kv_consumer\",\"engine_id\":null}", &kt, 0);
	assert_true(kt.engine_id_generated);
	assert_string_not_equal(kt.engine_id, first);
	cfg_kv_transfer_free(&kt);
	parse_ver("0.17", "{\"kv_role\":\"kv_consumer\",\"engine_id\":\"d-1\"}", &kt, 0);
	assert_false(kt.engine_id_generated);
	assert_string_equal(kt.engine_id, "d-1");
	cfg_kv_transfer_free(&kt);
	/* V0 has no engine_id */
	parse_ver("0.8.5", "{\"kv_role\":\"kv_consumer\",\"engine_id\":\"d-1\"}", &kt, 0);
	assert_null(kt.engine_id);
	assert_false(kt.engine_id_generated);
	cfg_kv_transfer_free(&kt);
	cfg_diags_free(&d);
}

static void policy_per_release(void **st)
{
	struct cfg_kv_transfer kt;
	(void)st;

	parse_ver("0.12", "{}", &kt, 0);
	assert_string_equal(kt.kv_load_failure_policy, "recompute");
	cfg_kv_transfer_free(&kt);
	parse_ver("0.17.0", "{}", &kt, 0);
	assert_string_equal(kt.kv_load_failure_policy, "fail");
	cfg_kv_transfer_free(&kt);
	parse_ver("0.20", "{\"kv_load_failure_policy\":\"recompute\"}", &kt, 0);
	assert_string_equal(kt.kv_load_failure_policy, "recompute");
	cfg_kv_transfer_free(&kt);
	parse_ver("0.17", "{\"kv_load_failure_policy\":\"Fail\"}", &kt, -1);
	cfg_kv_transfer_free(&kt);
	/* 0.8.5: the field does not exist, pydantic ignores the key */
	parse_ver("0.8.5", "{\"kv_load_failure_policy\":\"bogus\"}", &kt, 0);
	cfg_kv_transfer_free(&kt);
}

static void extras(void **st)
{
	struct cfg_kv_transfer kt;
	(void)st;

	parse_ver("0.17", "{\"kv_role\":\"kv_producer\"}", &kt, 0);
	assert_string_equal(kt.mooncake_protocol, "rdma");
	assert_int_equal(kt.num_workers, 10);
	assert_string_equal(kt.device_name, "");
	cfg_kv_transfer_free(&kt);
	parse_ver("0.17",
	          "{\"kv_role\":\"kv_producer\",\"kv_connector_extra_config\":"
	          "{\"mooncake_protocol\":\"tcp\",\"num_workers\":3,\"device_name\":\"mlx5_1\"}}",
	          &kt, 0);
	assert_string_equal(kt.mooncake_protocol, "tcp");
	assert_int_equal(kt.num_workers, 3);
	assert_string_equal(kt.device_name, "mlx5_1");
	cfg_kv_transfer_free(&kt);
	parse_ver("0.15",
	          "{\"kv_role\":\"kv_producer\",\"kv_connector_extra_config\":"
	          "{\"mooncake_protocol\":1,\"num_workers\":\"3\",\"device_name\":[]}}",
	          &kt, 0);
	assert_null(kt.mooncake_protocol);
	assert_int_equal(kt.num_workers, 0);
	assert_null(kt.device_name);
	cfg_kv_transfer_free(&kt);
}

int main(void)
{
	const struct CMUnitTest t[] = {
	    cmocka_unit_test(uuid4),
	    cmocka_unit_test(engine_id_default),
	    cmocka_unit_test(policy_per_release),
	    cmocka_unit_test(extras),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
