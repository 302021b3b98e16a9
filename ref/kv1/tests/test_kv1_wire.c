/* Byte-exact tests of kv1_wire against msgspec/python-msgpack output (the worked examples of
 * docs/wire-v1.md), plus decode robustness: key order, unknown keys, missing fields, bad types,
 * hostile lengths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv1/kv1_wire.h"

/* Hex with spaces and quoted ASCII ("abc") allowed, as written in the docs. */
static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;

	while (*h) {
		unsigned v;

		if (*h == ' ' || *h == '\n') {
			h++;
			continue;
		}
		if (*h == '"') {
			for (h++; *h && *h != '"'; h++)
				out[n++] = (uint8_t)*h;
			h++;
			continue;
		}
		sscanf(h, "%2x", &v);
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

static void assert_bytes(const char *got, size_t glen, const char *hex)
{
	uint8_t want[4096];
	size_t n = unhex(hex, want);

	if (glen != n || memcmp(got, want, n)) {
		char g[8192] = "", w[8192] = "";

		for (size_t i = 0; i < glen && i < 4000; i++)
			sprintf(g + 2 * i, "%02x", (uint8_t)got[i]);
		for (size_t i = 0; i < n && i < 4000; i++)
			sprintf(w + 2 * i, "%02x", want[i]);
		fail_msg("encoding differs (%zu vs %zu bytes)\n got  %s\n want %s", glen, n, g, w);
	}
}

#define AGENT_HEX                                                                                  \
	"85 af 72656d6f74655f686f73746e616d65 a8 31302e302e302e32"                                 \
	"ab 72656d6f74655f706f7274 cd 3c3f"                                                        \
	"ab 726571756573745f696473 91 ab 636d706c2d313233342d30"                                   \
	"b3 6b765f6361636865735f626173655f61646472 92 cf 00007f1200000000 cf 00007f1300000000"     \
	"a9 626c6f636b5f696473 91 93 07 08 09"

#define B0_HEX                                                                                     \
	"86 af 72656d6f74655f686f73746e616d65 a8 31302e302e302e33 ab 72656d6f74655f706f7274 "      \
	"cd 3e81 ae 72656d6f74655f74705f73697a65 01 ae 72656d6f74655f74705f72616e6b 00 aa "        \
	"7265715f626c6f636b73 81 a9 636d706c2d64312d30 92 a7 786665722d7531 93 07 08 09 b3 "       \
	"6b765f6361636865735f626173655f61646472 91 cf 00007f1200000000"

/* Bn: hand-assembled from the encoding rules (no worked bytes in vLLM's tree). */
#define BN_HEX                                                                                     \
	"88 af \"remote_hostname\" a9 \"127.0.0.1\" ab \"remote_port\" cd 3a99 "                   \
	"ae \"remote_tp_size\" 02 ae \"remote_tp_rank\" 01 aa \"req_blocks\" 81 a2 \"r1\" "        \
	"92 a2 \"x1\" 91 92 03 04 b3 \"kv_caches_base_addr\" 91 ce 00010000 "                      \
	"aa \"block_lens\" 91 cd 4000 ad \"kv_block_lens\" 91 cd 4000"

#define FINISH_HEX "82 a6 737461747573 00 a7 6f6b5f72657173 91 a9 636d706c2d64312d30"
#define CONT_HEX   "82 a6 737461747573 01 a7 6f6b5f72657173 91 a9 636d706c2d64312d30"
#define ERRX_HEX   "82 a6 737461747573 02 a7 6572725f6d7367 a1 78"
#define TIMEOUT_HEX                                                                                \
	"83 a6 737461747573 00 a8 6572725f72657173 91 a9 636d706c2d64312d30 a7 6572725f6d7367 "    \
	"d9 21 \"Timeout waiting for P side ready.\""

static void test_agent_meta(void **state)
{
	int64_t ids[] = {7, 8, 9};
	struct kv1_ids bl = {ids, 3};
	char *rid = "cmpl-1234-0";
	uint64_t bases[] = {0x7f1200000000ull, 0x7f1300000000ull};
	struct kv1_agent_meta m = {"10.0.0.2", 15423, &rid, 1, bases, 2, &bl, 1}, d;
	char *out, err[256];
	size_t len;
	uint8_t raw[512];
	size_t n;
	(void)state;

	assert_int_equal(kv1_agent_meta_encode(&m, &out, &len), 0);
	assert_int_equal(len, 120);
	assert_bytes(out, len, AGENT_HEX);
	assert_int_equal(kv1_agent_meta_decode(out, len, &d, err, sizeof(err)), 0);
	assert_string_equal(d.remote_hostname, "10.0.0.2");
	assert_int_equal(d.remote_port, 15423);
	assert_int_equal(d.nreq, 1);
	assert_string_equal(d.request_ids[0], "cmpl-1234-0");
	assert_int_equal(d.nbases, 2);
	assert_true(d.bases[1] == 0x7f1300000000ull);
	assert_int_equal(d.block_ids[0].n, 3);
	assert_int_equal(d.block_ids[0].v[2], 9);
	kv1_agent_meta_free(&d);
	free(out);
	/* docs/wire-v1.md's example */
	{
		int64_t ids2[] = {3, 4};
		struct kv1_ids bl2 = {ids2, 2};
		char *rid2 = "cmpl-abc-0";
		uint64_t b2[] = {0x7f0000000000ull, 0x7f0000100000ull};
		struct kv1_agent_meta m2 = {"192.168.1.5", 15001, &rid2, 1, b2, 2, &bl2, 1};

		assert_int_equal(kv1_agent_meta_encode(&m2, &out, &len), 0);
		assert_int_equal(len, 121);
		assert_bytes(
		    out, len,
		    "85 af \"remote_hostname\" ab \"192.168.1.5\" ab \"remote_port\" cd 3a99 "
		    "ab \"request_ids\" 91 aa \"cmpl-abc-0\" b3 \"kv_caches_base_addr\" 92 "
		    "cf 00007f0000000000 cf 00007f0000100000 a9 \"block_ids\" 91 92 03 04");
		free(out);
	}

	/* any key order; an unknown key is ignored */
	n = unhex("86 a9 \"block_ids\" 91 90 a1 \"z\" c0 b3 \"kv_caches_base_addr\" 90 "
	          "ab \"request_ids\" 91 a1 \"r\" ab \"remote_port\" 01 af \"remote_hostname\" "
	          "a1 \"h\"",
	          raw);
	assert_int_equal(kv1_agent_meta_decode(raw, n, &d, err, sizeof(err)), 0);
	assert_string_equal(d.request_ids[0], "r");
	assert_int_equal(d.block_ids[0].n, 0);
	kv1_agent_meta_free(&d);
	/* missing field */
	n = unhex("81 af \"remote_hostname\" a1 \"h\"", raw);
	assert_int_equal(kv1_agent_meta_decode(raw, n, &d, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "MooncakeAgentMetadata: missing required field `remote_port`");
}

static void test_xfer_meta_b0(void **state)
{
	int64_t ids[] = {7, 8, 9};
	struct kv1_ids bl = {ids, 3};
	struct kv1_req_blocks rb = {"cmpl-d1-0", "xfer-u1", &bl, 1};
	uint64_t base = 0x7f1200000000ull;
	struct kv1_xfer_meta m = {"10.0.0.3", 16001, 1, 0, &rb, 1, &base, 1, NULL, 0, NULL, 0, 1},
	                     d;
	char *out, err[256];
	size_t len;
	(void)state;

	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_B0, &out, &len), 0);
	assert_int_equal(len, 138);
	assert_bytes(out, len, B0_HEX);
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B0, &d, err, sizeof(err)), 0);
	assert_string_equal(d.reqs[0].req_id, "cmpl-d1-0");
	assert_string_equal(d.reqs[0].transfer_id, "xfer-u1");
	assert_int_equal(d.reqs[0].ngroups, 1);
	assert_int_equal(d.reqs[0].groups[0].v[0], 7);
	assert_int_equal(d.remote_port, 16001);
	kv1_xfer_meta_free(&d);
	/* an older (B0) D talking to a newer (Bn) P: Bn's required field is missing */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BN, &d, err, sizeof(err)),
	                 -EBADMSG);
	assert_string_equal(err, "MooncakeXferMetadata: missing required field `block_lens`");
	{
		char ms[256];

		kv1_wire_err_to_msgspec(err, ms, sizeof(ms));
		assert_string_equal(ms, "Object missing required field `block_lens`");
	}
	free(out);
}

static void test_xfer_meta_bn(void **state)
{
	int64_t ids[] = {3, 4};
	struct kv1_ids bl = {ids, 2};
	struct kv1_req_blocks rb = {"r1", "x1", &bl, 1};
	uint64_t base = 0x10000;
	int64_t lens[] = {16384};
	struct kv1_xfer_meta m = {"127.0.0.1", 15001, 2, 1, &rb, 1, &base, 1, lens, 1, lens, 1, 1},
	                     d;
	char *out, err[256];
	size_t len;
	(void)state;

	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BN, &out, &len), 0);
	assert_bytes(out, len, BN_HEX);
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BN, &d, err, sizeof(err)), 0);
	assert_int_equal(d.reqs[0].ngroups, 1);
	assert_int_equal(d.reqs[0].groups[0].n, 2);
	assert_int_equal(d.block_lens[0], 16384);
	assert_int_equal(d.remote_pp_size, 1);
	kv1_xfer_meta_free(&d);
	/* a newer D's extra keys mean nothing to a B0 P */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B0, &d, err, sizeof(err)),
	                 -EBADMSG); /* but req_blocks' per-group lists are not B0's ints */
	assert_non_null(strstr(err, "expected `int`, got `array`"));
	free(out);
	/* remote_pp_size != 1 is encoded after the omitted defaulted lists */
	m.remote_pp_size = 2;
	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BN, &out, &len), 0);
	assert_int_equal((uint8_t)out[0], 0x89);
	assert_memory_equal(out + len - 16, "\xaeremote_pp_size\x02", 16);
	free(out);
}

static void check_resp(const struct kv1_xfer_resp *r, const char *hex)
{
	char *out, err[256];
	size_t len;
	struct kv1_xfer_resp d;

	assert_int_equal(kv1_xfer_resp_encode(r, &out, &len), 0);
	assert_bytes(out, len, hex);
	assert_int_equal(kv1_xfer_resp_decode(out, len, &d, err, sizeof(err)), 0);
	assert_int_equal(d.status, r->status);
	assert_int_equal(d.has_ok, r->has_ok);
	assert_int_equal(d.nok, r->nok);
	assert_int_equal(d.has_err, r->has_err);
	if (r->err_msg)
		assert_string_equal(d.err_msg, r->err_msg);
	else
		assert_null(d.err_msg);
	kv1_xfer_resp_free(&d);
	free(out);
}

static void test_xfer_resp(void **state)
{
	char *id = "cmpl-d1-0";
	struct kv1_xfer_resp fin = {KV1_FINISH, true, false, &id, 1, NULL, 0, NULL};
	struct kv1_xfer_resp cont = {KV1_CONTINUE, true, false, &id, 1, NULL, 0, NULL};
	struct kv1_xfer_resp ex = {KV1_ERROR, false, false, NULL, 0, NULL, 0, "x"};
	struct kv1_xfer_resp to = {KV1_FINISH, false, true, NULL,
	                           0,          &id,   1,    "Timeout waiting for P side ready."};
	uint8_t raw[256];
	size_t n;
	struct kv1_xfer_resp d;
	char err[256];
	(void)state;

	check_resp(&fin, FINISH_HEX);
	{
		char *out;
		size_t len;

		assert_int_equal(kv1_xfer_resp_encode(&fin, &out, &len), 0);
		assert_int_equal(len, 28);
		free(out);
	}
	check_resp(&cont, CONT_HEX);
	check_resp(&ex, ERRX_HEX);
	check_resp(&to, TIMEOUT_HEX);
	/* explicit nulls are the defaults; status out of the enum is rejected */
	n = unhex("83 a7 \"ok_reqs\" c0 a6 \"status\" 01 a7 \"err_msg\" c0", raw);
	assert_int_equal(kv1_xfer_resp_decode(raw, n, &d, err, sizeof(err)), 0);
	assert_false(d.has_ok);
	assert_null(d.err_msg);
	kv1_xfer_resp_free(&d);
	n = unhex("81 a6 \"status\" 03", raw);
	assert_int_equal(kv1_xfer_resp_decode(raw, n, &d, err, sizeof(err)), -EBADMSG);
	n = unhex("81 a6 \"status\" a1 \"0\"", raw);
	assert_int_equal(kv1_xfer_resp_decode(raw, n, &d, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "MooncakeXferResponse: expected `int`, got `str` - at `$.status`");
}

static void test_raw_replies(void **state)
{
	(void)state;
	assert_bytes(KV1_TRANS_DONE, strlen(KV1_TRANS_DONE), "74 72 61 6e 73 5f 64 6f 6e 65");
	assert_bytes(KV1_TRANS_ERROR, strlen(KV1_TRANS_ERROR), "74 72 61 6e 73 5f 65 72 72 6f 72");
}

/* Lengths declared by a hostile peer never turn into allocations. */
static void test_hostile(void **state)
{
	static const char *const bad[] = {
	    "df ffffffff",                                       /* map32 of 4G pairs in 5 bytes */
	    "dd 7fffffff 00",                                    /* array32 */
	    "81 a6 \"status\" db ffffffff",                      /* str32 longer than the message */
	    "81 a6 \"status\"",                                  /* truncated */
	    "81 a6 \"status\" 00 00",                            /* trailing bytes */
	    "91 00",                                             /* not a map */
	    "c1",                                                /* never-used byte */
	    "81 a6 \"status\" 91 91 91 91 91 91 91 91 91 91 00", /* too deep */
	};
	struct kv1_xfer_resp d;
	struct kv1_agent_meta a;
	uint8_t raw[256];
	char err[256];
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = unhex(bad[i], raw);

		assert_int_equal(kv1_xfer_resp_decode(raw, n, &d, err, sizeof(err)), -EBADMSG);
		assert_int_equal(kv1_agent_meta_decode(raw, n, &a, err, sizeof(err)), -EBADMSG);
	}
	assert_int_equal(kv1_xfer_resp_decode(raw, 0, &d, err, sizeof(err)), -EBADMSG);
	/* a request id with a NUL, a port out of range, a negative block id */
	{
		size_t n =
		    unhex("85 af \"remote_hostname\" a1 \"h\" ab \"remote_port\" ce 00010000 "
		          "ab \"request_ids\" 90 b3 \"kv_caches_base_addr\" 90 a9 "
		          "\"block_ids\" 90",
		          raw);
		assert_int_equal(kv1_agent_meta_decode(raw, n, &a, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "remote_port"));
		n = unhex("85 af \"remote_hostname\" a1 \"h\" ab \"remote_port\" 01 "
		          "ab \"request_ids\" 91 a2 61 00 b3 \"kv_caches_base_addr\" 90 a9 "
		          "\"block_ids\" 90",
		          raw);
		assert_int_equal(kv1_agent_meta_decode(raw, n, &a, err, sizeof(err)), -EBADMSG);
		n = unhex("85 af \"remote_hostname\" a1 \"h\" ab \"remote_port\" 01 "
		          "ab \"request_ids\" 91 a1 61 b3 \"kv_caches_base_addr\" 90 a9 "
		          "\"block_ids\" 91 91 ff",
		          raw);
		assert_int_equal(kv1_agent_meta_decode(raw, n, &a, err, sizeof(err)), -EBADMSG);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_agent_meta),   cmocka_unit_test(test_xfer_meta_b0),
	    cmocka_unit_test(test_xfer_meta_bn), cmocka_unit_test(test_xfer_resp),
	    cmocka_unit_test(test_raw_replies),  cmocka_unit_test(test_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
