/* SPDX-License-Identifier: Apache-2.0 */
/* test_te_ipc_desc: the nvlink_intra descriptor without a GPU — worked bytes as Mooncake writes
 * its intra-node descriptor (shm_name = upper-case hex of the 64-byte IPC handle) plus pdkv's
 * pdkv_host_id, a Mooncake descriptor without it, and every shm_name rejection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/te.h"
#include "te/te_internal.h"

#define HEX64                                                                                      \
	"000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"                         \
	"202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"

static const char worked[] =
    "{\"buffers\":[{\"addr\":139637976727552,\"length\":1073741824,\"name\":\"cuda:0\","
    "\"shm_name\":\"" HEX64 "\"},{\"addr\":94558013157376,\"length\":4096,\"name\":\"cpu:0\","
    "\"shm_name\":\"\"}],\"name\":\"127.0.0.1:15001\",\"pdkv_host_id\":\"b0a7e5c1-0000-4000-8000-"
    "000000000001\",\"protocol\":\"nvlink_intra\",\"tcp_data_port\":15002,\"tcp_proto_version\":2,"
    "\"timestamp\":\"2026-12-01 10:00:00.000000\"}\n";

/* What Mooncake's own encoder writes for nvlink_intra (tcp ports 0, no host id). */
static const char mooncake[] =
    "{\"buffers\":[{\"addr\":139637976727552,\"length\":1073741824,\"name\":\"cuda:1\","
    "\"shm_name\":\"" HEX64 "\"}],\"name\":\"node:12345\",\"protocol\":\"nvlink_intra\","
    "\"tcp_data_port\":0,\"tcp_proto_version\":0,\"timestamp\":\"2026-12-01 10:00:00.000000\"}\n";

static void test_worked_bytes(void **state)
{
	struct te_segment_desc *d = NULL;
	char err[256] = "", *enc;
	(void)state;

	assert_int_equal(te_desc_decode(worked, strlen(worked), &d, err, sizeof(err)), 0);
	assert_string_equal(d->protocol, "nvlink_intra");
	assert_string_equal(d->host_id, "b0a7e5c1-0000-4000-8000-000000000001");
	assert_int_equal(d->nbuffers, 2);
	assert_string_equal(d->buffers[0].shm_name, HEX64);
	assert_string_equal(d->buffers[1].shm_name, "");
	assert_int_equal(d->tcp_data_port, 15002);
	enc = te_desc_encode(d);
	assert_non_null(enc);
	assert_string_equal(enc, worked);
	free(enc);
	te_desc_free(d);
}

static void test_mooncake_descriptor(void **state)
{
	struct te_segment_desc *d = NULL;
	char err[256] = "";
	(void)state;

	assert_int_equal(te_desc_decode(mooncake, strlen(mooncake), &d, err, sizeof(err)), 0);
	assert_string_equal(d->host_id, "");
	assert_string_equal(d->buffers[0].name, "cuda:1");
	assert_string_equal(d->buffers[0].shm_name, HEX64);
	assert_non_null(te_desc_find_range(d, 139637976727552ull + 5, 100));
	te_desc_free(d);
}

static void bad(const char *shm, const char *want)
{
	char json[1024], err[256] = "";
	struct te_segment_desc *d = NULL;

	snprintf(
	    json, sizeof(json),
	    "{\"buffers\":[{\"addr\":4096,\"length\":4096,\"name\":\"cuda:0\",\"shm_name\":%s}],"
	    "\"name\":\"n\",\"protocol\":\"nvlink_intra\"}",
	    shm);
	assert_int_equal(te_desc_decode(json, strlen(json), &d, err, sizeof(err)),
	                 TE_ERR_MALFORMED_JSON);
	assert_null(d);
	if (!strstr(err, want))
		fail_msg("shm_name %s: error \"%s\" lacks \"%s\"", shm, err, want);
}

static void test_bad_shm_name(void **state)
{
	(void)state;
	bad("\"ABC\"", "buffers[0].shm_name");                      /* odd length */
	bad("\"ZZ\"", "buffers[0].shm_name");                       /* not hex */
	bad("42", "buffers[0].shm_name");                           /* not a string */
	bad("\"" HEX64 "00\"", "cudaIpcMemHandle_t (at most 128)"); /* longer than a handle */
}

static void test_other_protocols_unchanged(void **state)
{
	static const char tcp[] = "{\"buffers\":[{\"addr\":4096,\"length\":4096,\"name\":\"s\","
	                          "\"shm_name\":\"zz\"}],\"name\":\"s\",\"pdkv_host_id\":\"h\","
	                          "\"protocol\":\"tcp\",\"timestamp\":\"t\"}\n";
	struct te_segment_desc *d = NULL;
	char err[256] = "", *enc;
	(void)state;

	/* tcp ignores both fields, as Mooncake's tcp reader does, and never writes them */
	assert_int_equal(te_desc_decode(tcp, strlen(tcp), &d, err, sizeof(err)), 0);
	assert_string_equal(d->buffers[0].shm_name, "");
	assert_string_equal(d->host_id, "");
	enc = te_desc_encode(d);
	assert_null(strstr(enc, "shm_name"));
	assert_null(strstr(enc, "pdkv_host_id"));
	free(enc);
	te_desc_free(d);
}

static void test_unknown_protocol_message(void **state)
{
	static const char j[] = "{\"name\":\"s\",\"protocol\":\"nvlink\"}";
	struct te_segment_desc *d = NULL;
	char err[256] = "";
	(void)state;
	assert_int_equal(te_desc_decode(j, strlen(j), &d, err, sizeof(err)), TE_ERR_MALFORMED_JSON);
	assert_non_null(strstr(err, "\"nvlink_intra\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_worked_bytes),
	    cmocka_unit_test(test_mooncake_descriptor),
	    cmocka_unit_test(test_bad_shm_name),
	    cmocka_unit_test(test_other_protocols_unchanged),
	    cmocka_unit_test(test_unknown_protocol_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
