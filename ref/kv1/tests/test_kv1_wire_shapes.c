/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-exact tests of kv1_wire's gen-B shapes B1 (block_lens, vLLM #36869) and B2 (per-group
 * block lists, #40860), the worked examples of docs/wire-v1.md, and how the shapes read each other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "kv1/kv1_wire.h"

/* Hex with spaces allowed. */
static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;

	while (*h) {
		unsigned v;

		if (*h == ' ') {
			h++;
			continue;
		}
		if (sscanf(h, "%2x", &v) != 1)
			fail_msg("bad hex at %.8s", h);
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

static void assert_bytes(const char *got, size_t glen, const char *hex)
{
	uint8_t want[1024];
	size_t n = unhex(hex, want);

	if (glen != n || memcmp(got, want, n)) {
		char g[2100] = "";

		for (size_t i = 0; i < glen && i < 1000; i++)
			sprintf(g + 2 * i, "%02x", (uint8_t)got[i]);
		fail_msg("encoding differs (%zu vs %zu bytes)\n got %s", glen, n, g);
	}
}

/* B1, written by hand from msgspec's rules (a Struct is a map of its fields in declaration
 * order, omit_defaults drops nothing here as every field is required; a tuple is an array;
 * ints take the smallest msgpack form): the docs' Bn example without kv_block_lens. */
#define B1_HEX                                                                                     \
	"87 "                                                                                      \
	"af 72656d6f74655f686f73746e616d65 a9 3132372e302e302e31 "                                 \
	"ab 72656d6f74655f706f7274 cd 3a99 "                                                       \
	"ae 72656d6f74655f74705f73697a65 02 "                                                      \
	"ae 72656d6f74655f74705f72616e6b 01 "                                                      \
	"aa 7265715f626c6f636b73 81 a2 7231 92 a2 7831 92 03 04 "                                  \
	"b3 6b765f6361636865735f626173655f61646472 91 ce 00010000 "                                \
	"aa 626c6f636b5f6c656e73 91 cd 4000"

/* B2: the same with req_blocks' list one list per KV-cache group (here one group). */
#define B2_HEX                                                                                     \
	"87 "                                                                                      \
	"af 72656d6f74655f686f73746e616d65 a9 3132372e302e302e31 "                                 \
	"ab 72656d6f74655f706f7274 cd 3a99 "                                                       \
	"ae 72656d6f74655f74705f73697a65 02 "                                                      \
	"ae 72656d6f74655f74705f72616e6b 01 "                                                      \
	"aa 7265715f626c6f636b73 81 a2 7231 92 a2 7831 91 92 03 04 "                               \
	"b3 6b765f6361636865735f626173655f61646472 91 ce 00010000 "                                \
	"aa 626c6f636b5f6c656e73 91 cd 4000"

static int64_t ids[] = {3, 4};
static struct kv1_ids one = {ids, 2};
static struct kv1_req_blocks rb = {"r1", "x1", &one, 1};
static uint64_t base = 0x10000;
static int64_t lens[] = {16384};

static struct kv1_xfer_meta example(void)
{
	return (struct kv1_xfer_meta){.remote_hostname = "127.0.0.1",
	                              .remote_port = 15001,
	                              .remote_tp_size = 2,
	                              .remote_tp_rank = 1,
	                              .reqs = &rb,
	                              .nreqs = 1,
	                              .bases = &base,
	                              .nbases = 1,
	                              .block_lens = lens,
	                              .nblock_lens = 1,
	                              .kv_block_lens = lens,
	                              .nkv_block_lens = 1,
	                              .remote_pp_size = 1};
}

static bool key_is(const msgpack_object *k, const char *s)
{
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(s) &&
	       !memcmp(k->via.str.ptr, s, k->via.str.size);
}

/* msgpack-c's reading of the bytes: 7 keys in declaration order, block_lens last, and the
 * block-id list of req_blocks flat (B1) or one array per group (B2). */
static void unpack_check(const char *buf, size_t len, bool grouped)
{
	static const char *const keys[] = {"remote_hostname", "remote_port", "remote_tp_size",
	                                   "remote_tp_rank",  "req_blocks",  "kv_caches_base_addr",
	                                   "block_lens"};
	msgpack_unpacked u;
	const msgpack_object *o, *lists;

	msgpack_unpacked_init(&u);
	assert_int_equal(msgpack_unpack_next(&u, buf, len, NULL), MSGPACK_UNPACK_SUCCESS);
	o = &u.data;
	assert_int_equal(o->type, MSGPACK_OBJECT_MAP);
	assert_int_equal(o->via.map.size, 7);
	for (int i = 0; i < 7; i++)
		assert_true(key_is(&o->via.map.ptr[i].key, keys[i]));
	lists = &o->via.map.ptr[4].val.via.map.ptr[0].val.via.array.ptr[1];
	assert_int_equal(lists->type, MSGPACK_OBJECT_ARRAY);
	assert_int_equal(lists->via.array.ptr[0].type,
	                 grouped ? MSGPACK_OBJECT_ARRAY : MSGPACK_OBJECT_POSITIVE_INTEGER);
	assert_int_equal(o->via.map.ptr[6].val.via.array.ptr[0].via.u64, 16384);
	msgpack_unpacked_destroy(&u);
}

static void test_b1(void **state)
{
	struct kv1_xfer_meta m = example(), d;
	char *out, err[256], ms[256];
	size_t len;
	(void)state;

	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_B1, &out, &len), 0);
	assert_bytes(out, len, B1_HEX);
	unpack_check(out, len, false);
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B1, &d, err, sizeof(err)), 0);
	assert_int_equal(d.reqs[0].ngroups, 1); /* the flat list is one group */
	assert_int_equal(d.reqs[0].groups[0].n, 2);
	assert_int_equal(d.reqs[0].groups[0].v[1], 4);
	assert_int_equal(d.nblock_lens, 1);
	assert_int_equal(d.block_lens[0], 16384);
	assert_int_equal(d.nkv_block_lens, 0);
	kv1_xfer_meta_free(&d);
	/* a B0 prefill ignores block_lens, an unknown key to it */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B0, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nblock_lens, 0);
	kv1_xfer_meta_free(&d);
	/* a B2 prefill wants one list per group: the flat ids are not arrays */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B2, &d, err, sizeof(err)),
	                 -EBADMSG);
	assert_non_null(strstr(err, "expected `array`, got `int`"));
	/* a Bn prefill: kv_block_lens is required there */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BN, &d, err, sizeof(err)),
	                 -EBADMSG);
	assert_string_equal(err, "MooncakeXferMetadata: missing required field `kv_block_lens`");
	free(out);
	/* a B0 decode's 6 fields to a B1 prefill: block_lens is missing, as msgspec words it */
	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_B0, &out, &len), 0);
	assert_int_equal((uint8_t)out[0], 0x86);
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B1, &d, err, sizeof(err)),
	                 -EBADMSG);
	assert_string_equal(err, "MooncakeXferMetadata: missing required field `block_lens`");
	kv1_wire_err_to_msgspec(err, ms, sizeof(ms));
	assert_string_equal(ms, "Object missing required field `block_lens`");
	free(out);
	/* B1 has one flat list per request: two groups cannot be encoded */
	{
		struct kv1_ids two[2] = {{ids, 1}, {ids + 1, 1}};
		struct kv1_req_blocks rb2 = {"r1", "x1", two, 2};

		m.reqs = &rb2;
		assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_B1, &out, &len), -EINVAL);
	}
}

static void test_b2(void **state)
{
	struct kv1_xfer_meta m = example(), d;
	struct kv1_ids two[2] = {{ids, 2}, {ids + 1, 1}};
	struct kv1_req_blocks rb2 = {"r1", "x1", two, 2};
	char *out, err[256];
	size_t len;
	(void)state;

	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_B2, &out, &len), 0);
	assert_bytes(out, len, B2_HEX);
	unpack_check(out, len, true);
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B2, &d, err, sizeof(err)), 0);
	assert_int_equal(d.reqs[0].ngroups, 1);
	assert_int_equal(d.reqs[0].groups[0].n, 2);
	assert_int_equal(d.block_lens[0], 16384);
	kv1_xfer_meta_free(&d);
	/* a B1 prefill reads a flat list: the group arrays are not ints */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B1, &d, err, sizeof(err)),
	                 -EBADMSG);
	assert_non_null(strstr(err, "expected `int`, got `array`"));
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B0, &d, err, sizeof(err)),
	                 -EBADMSG);
	assert_non_null(strstr(err, "expected `int`, got `array`"));
	free(out);
	/* two groups: [[3, 4], [4]] */
	m.reqs = &rb2;
	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_B2, &out, &len), 0);
	assert_non_null(memmem(out, len, "\x92\xa2x1\x92\x92\x03\x04\x91\x04", 10));
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B2, &d, err, sizeof(err)), 0);
	assert_int_equal(d.reqs[0].ngroups, 2);
	assert_int_equal(d.reqs[0].groups[1].v[0], 4);
	kv1_xfer_meta_free(&d);
	free(out);
	/* a Bn decode's 8 fields: a B2 prefill ignores kv_block_lens */
	m.reqs = &rb;
	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BN, &out, &len), 0);
	assert_int_equal((uint8_t)out[0], 0x88);
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_B2, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nkv_block_lens, 0);
	kv1_xfer_meta_free(&d);
	free(out);
}

/* Bounds and types of block_lens hold for B1 as for Bn. */
static void test_b1_hostile(void **state)
{
	uint8_t raw[512];
	size_t n;
	struct kv1_xfer_meta d;
	char err[256];
	(void)state;

	/* block_lens a string */
	n = unhex(B1_HEX, raw);
	raw[n - 4] = 0xa3; /* 91 cd 40 00 -> a3 "cd@" */
	assert_int_equal(kv1_xfer_meta_decode(raw, n, KV1_SHAPE_B1, &d, err, sizeof(err)),
	                 -EBADMSG);
	assert_non_null(strstr(err, "block_lens"));
	/* truncated */
	n = unhex(B1_HEX, raw);
	assert_int_equal(kv1_xfer_meta_decode(raw, n - 3, KV1_SHAPE_B1, &d, err, sizeof(err)),
	                 -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_b1),
	    cmocka_unit_test(test_b2),
	    cmocka_unit_test(test_b1_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
