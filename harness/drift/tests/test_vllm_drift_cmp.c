/* SPDX-License-Identifier: Apache-2.0 */
/* test_vllm_drift_cmp: cfg_drift's comparison without Python — pdkv's own model, exported in the
 * extractor's shape, compares clean for every shape; each kind of edit gets its verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg/cfg_drift.h"

/* pdkv's model of gen g (or of release ver) as a tree the extractor could have printed */
static cJSON *tree_of(const char *ver, int g)
{
	struct cfg_model_view v;
	char err[256];
	if (ver)
		assert_int_equal(cfg_model_for_version(ver, g, &v, err, sizeof(err)), 0);
	else
		cfg_model_for_gen((enum cfg_gen)g, &v);
	cJSON *t = cfg_model_json(&v);
	cJSON_AddStringToObject(t, "kind", "source");
	cJSON_AddStringToObject(t, "root", "/test");
	return t;
}

static enum cfg_drift_verdict verdict(const cJSON *t, const char *ver, int g, char *line, size_t sz)
{
	struct cfg_drift d;
	char err[256];
	assert_int_equal(cfg_drift_compare(t, ver, g, &d, err, sizeof(err)), 0);
	if (line)
		cfg_drift_line(&d, line, sz);
	enum cfg_drift_verdict r = d.verdict;
	cfg_drift_free(&d);
	return r;
}

static cJSON *xfer_fields(cJSON *t)
{
	cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "structs"), 0);
	return cJSON_GetObjectItem(s, "fields");
}

static void model_round_trips(void **st)
{
	(void)st;
	for (int g = CFG_GEN_A; g < CFG_GEN_COUNT; g++) {
		cJSON *t = tree_of(NULL, g);
		assert_int_equal(verdict(t, NULL, g, NULL, 0), CFG_DRIFT_MODELS);
		cJSON_Delete(t);
	}
	const char *rel[] = {"0.12", "0.13.1", "0.16", "0.17.1",
	                     "0.19", "0.21",   "0.23", cfg_vllm_newest};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		cJSON *t = tree_of(rel[i], -1);
		assert_int_equal(verdict(t, rel[i], -1, NULL, 0), CFG_DRIFT_MODELS);
		cJSON_Delete(t);
	}
}

static void wire_edits(void **st)
{
	char line[512];
	(void)st;
	/* a new defaulted field */
	cJSON *t = tree_of("0.23", -1), *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "name", "remote_dp_rank");
	cJSON_AddStringToObject(f, "type", "int");
	cJSON_AddStringToObject(f, "default", "0");
	cJSON_AddItemToArray(xfer_fields(t), f);
	assert_int_equal(verdict(t, "0.23.0", -1, line, sizeof(line)), CFG_DRIFT_WIRE);
	assert_non_null(strstr(line, "1 new struct field pdkv does not model"));
	cJSON_Delete(t);
	/* a removed field, two swapped fields, a changed type, a changed option */
	t = tree_of("0.23", -1);
	cJSON_DeleteItemFromArray(xfer_fields(t), 6); /* without kv_block_lens it would be b2 */
	assert_int_equal(verdict(t, "0.23", -1, NULL, 0), CFG_DRIFT_WIRE);
	cJSON_Delete(t);
	t = tree_of("0.23", -1);
	cJSON *first = cJSON_DetachItemFromArray(xfer_fields(t), 0);
	cJSON_AddItemToArray(xfer_fields(t), first);
	assert_int_equal(verdict(t, "0.23", -1, line, sizeof(line)), CFG_DRIFT_WIRE);
	assert_non_null(strstr(line, "changed struct"));
	cJSON_Delete(t);
	t = tree_of("0.23", -1);
	cJSON *rb = cJSON_GetArrayItem(xfer_fields(t), 4);
	cJSON_ReplaceItemInObject(rb, "type", cJSON_CreateString("dict[str, list[int]]"));
	assert_int_equal(verdict(t, "0.23", -1, NULL, 0), CFG_DRIFT_WIRE);
	cJSON_Delete(t);
	t = tree_of("0.23", -1);
	cJSON *opts = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "structs"), 0),
	                                  "options");
	cJSON_AddTrueToObject(opts, "array_like");
	assert_int_equal(verdict(t, "0.23", -1, NULL, 0), CFG_DRIFT_WIRE);
	cJSON_Delete(t);
	/* type aliases and spacing are not differences */
	t = tree_of("0.23", -1);
	rb = cJSON_GetArrayItem(xfer_fields(t), 4);
	cJSON_ReplaceItemInObject(rb, "type",
	                          cJSON_CreateString("dict[str,tuple[str,list[list[int]]]]"));
	assert_int_equal(verdict(t, "0.23", -1, NULL, 0), CFG_DRIFT_MODELS);
	cJSON_Delete(t);
}

static void off_wire_edits(void **st)
{
	char line[512];
	(void)st;
	cJSON *t = tree_of("0.23", -1);
	cJSON *env = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "env"), 0);
	cJSON_ReplaceItemInObject(env, "name", cJSON_CreateString("VLLM_MOONCAKE_ABORT_TIMEOUT"));
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(t, "kv_load_failure_policy"), "default",
	                          cJSON_CreateString("recompute"));
	cJSON_AddItemToArray(cJSON_GetObjectItem(t, "err_msgs"),
	                     cJSON_CreateRaw("{\"text\": \"a new text {}\"}"));
	assert_int_equal(verdict(t, "0.23", -1, line, sizeof(line)), CFG_DRIFT_NON_WIRE);
	assert_non_null(strstr(line, "1 gone env var"));
	assert_non_null(strstr(line, "1 changed policy default"));
	cJSON_Delete(t);
	/* a tree without a version: the closest shape */
	struct cfg_drift d;
	char err[256];
	t = tree_of(NULL, CFG_GEN_B0);
	assert_int_equal(cfg_drift_compare(t, NULL, -1, &d, err, sizeof(err)), 0);
	assert_int_equal(d.view.gen, CFG_GEN_B0);
	assert_non_null(strstr(d.note, "no version found"));
	cfg_drift_free(&d);
	cJSON_Delete(t);
	/* not the extractor's output */
	t = cJSON_Parse("{\"version\": \"0.17\"}");
	assert_int_equal(cfg_drift_compare(t, NULL, -1, &d, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "structs"));
	cJSON_Delete(t);
}

/* the one-call API upgrade-check and run --external use, through the real extractor */
static void summary_call(void **st)
{
	char line[512];
	(void)st;
	if (system("python3 -c pass >/dev/null 2>&1")) {
		skip();
		return;
	}
	assert_int_equal(
	    cfg_drift_summary("fixtures/vllm-drift/new-field", NULL, 120000, line, sizeof(line)),
	    CFG_DRIFT_WIRE);
	assert_non_null(strstr(line, "your vLLM 0.23.0: 1 new struct field pdkv does not model "
	                             "(wire; row "));
	assert_non_null(strstr(line, ", shape bn)"));
	assert_int_equal(
	    cfg_drift_summary("fixtures/vllm-drift/renamed-env", NULL, 120000, line, sizeof(line)),
	    CFG_DRIFT_NON_WIRE);
	assert_int_equal(
	    cfg_drift_summary("fixtures/vllm-drift/no-connector", NULL, 120000, line, sizeof(line)),
	    -1);
	assert_non_null(strstr(line, "vLLM 0.10.1 has no MooncakeConnector"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(model_round_trips),
	    cmocka_unit_test(wire_edits),
	    cmocka_unit_test(off_wire_edits),
	    cmocka_unit_test(summary_call),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
