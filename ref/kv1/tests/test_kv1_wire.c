/* SPDX-License-Identifier: Apache-2.0 */
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

#include <msgpack.h>

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

/* Bl: the Bn example as a vLLM decode after #44528 sends it (receive_kv_from_single_worker fills
 * the registered_* lists; remote_pp_size 1 and the prefix-replay fields are at their defaults and
 * omitted). Composed byte by byte from msgspec's rules, one field a line. */
#define BL_HEX                                                                                     \
	"8b "                                                                                      \
	"af 72656d6f74655f686f73746e616d65 a9 3132372e302e302e31 "                                 \
	"ab 72656d6f74655f706f7274 cd 3a99 "                                                       \
	"ae 72656d6f74655f74705f73697a65 02 "                                                      \
	"ae 72656d6f74655f74705f72616e6b 01 "                                                      \
	"aa 7265715f626c6f636b73 81 a2 7231 92 a2 7831 91 92 03 04 "                               \
	"b3 6b765f6361636865735f626173655f61646472 91 ce 00010000 "                                \
	"aa 626c6f636b5f6c656e73 91 cd 4000 "                                                      \
	"ad 6b765f626c6f636b5f6c656e73 91 cd 4000 "                                                \
	"b6 726567697374657265645f6c617965725f6e616d6573 "                                         \
	"91 bd 6d6f64656c2e6c61796572732e302e73656c665f6174746e2e6174746e "                        \
	"b8 726567697374657265645f6c617965725f696e6469636573 91 00 "                               \
	"b8 726567697374657265645f67726f75705f696e6469636573 91 00"

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
	struct kv1_xfer_meta m = {.remote_hostname = "10.0.0.3",
	                          .remote_port = 16001,
	                          .remote_tp_size = 1,
	                          .remote_tp_rank = 0,
	                          .reqs = &rb,
	                          .nreqs = 1,
	                          .bases = &base,
	                          .nbases = 1,
	                          .remote_pp_size = 1},
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
	struct kv1_xfer_meta m = {.remote_hostname = "127.0.0.1",
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
	                          .remote_pp_size = 1},
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

/* The Bl example of docs/wire-v1.md (the Bn one plus one layer's registered_* lists). */
static struct kv1_xfer_meta bl_example(struct kv1_req_blocks *rb, uint64_t *base, int64_t *lens,
                                       char **names, int64_t *zero)
{
	return (struct kv1_xfer_meta){.remote_hostname = "127.0.0.1",
	                              .remote_port = 15001,
	                              .remote_tp_size = 2,
	                              .remote_tp_rank = 1,
	                              .reqs = rb,
	                              .nreqs = 1,
	                              .bases = base,
	                              .nbases = 1,
	                              .block_lens = lens,
	                              .nblock_lens = 1,
	                              .kv_block_lens = lens,
	                              .nkv_block_lens = 1,
	                              .remote_pp_size = 1,
	                              .layer_names = names,
	                              .nlayer_names = 1,
	                              .layer_indices = zero,
	                              .nlayer_indices = 1,
	                              .group_indices = zero,
	                              .ngroup_indices = 1};
}

static bool key_is(const msgpack_object *k, const char *s)
{
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(s) &&
	       !memcmp(k->via.str.ptr, s, k->via.str.size);
}

/* msgpack-c's independent reading of the Bl bytes: 11 keys in declaration order, each value. */
static void unpack_bl(const char *buf, size_t len)
{
	static const char *const keys[] = {"remote_hostname",
	                                   "remote_port",
	                                   "remote_tp_size",
	                                   "remote_tp_rank",
	                                   "req_blocks",
	                                   "kv_caches_base_addr",
	                                   "block_lens",
	                                   "kv_block_lens",
	                                   "registered_layer_names",
	                                   "registered_layer_indices",
	                                   "registered_group_indices"};
	msgpack_unpacked u;
	size_t off = 0;
	const msgpack_object_kv *kv;
	const msgpack_object *rb, *v;

	msgpack_unpacked_init(&u);
	assert_int_equal(msgpack_unpack_next(&u, buf, len, &off), MSGPACK_UNPACK_SUCCESS);
	assert_int_equal(off, len);
	assert_int_equal(u.data.type, MSGPACK_OBJECT_MAP);
	assert_int_equal(u.data.via.map.size, 11);
	kv = u.data.via.map.ptr;
	for (int i = 0; i < 11; i++)
		assert_true(key_is(&kv[i].key, keys[i]));
	assert_true(key_is(&kv[0].val, "127.0.0.1"));
	assert_int_equal(kv[1].val.via.u64, 15001);
	assert_int_equal(kv[2].val.via.u64, 2);
	assert_int_equal(kv[3].val.via.u64, 1);
	rb = &kv[4].val;
	assert_int_equal(rb->via.map.size, 1);
	assert_true(key_is(&rb->via.map.ptr[0].key, "r1"));
	v = &rb->via.map.ptr[0].val; /* ["x1", [[3, 4]]] */
	assert_true(key_is(&v->via.array.ptr[0], "x1"));
	v = &v->via.array.ptr[1].via.array.ptr[0];
	assert_int_equal(v->via.array.size, 2);
	assert_int_equal(v->via.array.ptr[0].via.u64, 3);
	assert_int_equal(v->via.array.ptr[1].via.u64, 4);
	assert_int_equal(kv[5].val.via.array.ptr[0].via.u64, 0x10000);
	assert_int_equal(kv[6].val.via.array.ptr[0].via.u64, 16384);
	assert_int_equal(kv[7].val.via.array.ptr[0].via.u64, 16384);
	assert_int_equal(kv[8].val.via.array.size, 1);
	assert_true(key_is(&kv[8].val.via.array.ptr[0], "model.layers.0.self_attn.attn"));
	assert_int_equal(kv[9].val.via.array.size, 1);
	assert_int_equal(kv[9].val.via.array.ptr[0].type, MSGPACK_OBJECT_POSITIVE_INTEGER);
	assert_int_equal(kv[9].val.via.array.ptr[0].via.u64, 0);
	assert_int_equal(kv[10].val.via.array.size, 1);
	assert_int_equal(kv[10].val.via.array.ptr[0].via.u64, 0);
	msgpack_unpacked_destroy(&u);
}

static void test_xfer_meta_bl(void **state)
{
	int64_t ids[] = {3, 4}, lens[] = {16384}, zero[] = {0};
	struct kv1_ids bl = {ids, 2};
	struct kv1_req_blocks rb = {"r1", "x1", &bl, 1};
	uint64_t base = 0x10000;
	char *names[] = {"model.layers.0.self_attn.attn"};
	struct kv1_xfer_meta m = bl_example(&rb, &base, lens, names, zero), d;
	char *out, err[256];
	size_t len;
	(void)state;

	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BL, &out, &len), 0);
	assert_int_equal(len, 264);
	assert_bytes(out, len, BL_HEX);
	unpack_bl(out, len);
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nlayer_names, 1);
	assert_string_equal(d.layer_names[0], "model.layers.0.self_attn.attn");
	assert_int_equal(d.nlayer_indices, 1);
	assert_int_equal(d.layer_indices[0], 0);
	assert_int_equal(d.ngroup_indices, 1);
	assert_int_equal(d.remote_pp_size, 1);
	assert_int_equal(d.replay_protocol, 0);
	assert_null(d.replay_layout);
	assert_int_equal(d.nreplay_ckpts, 0);
	kv1_xfer_meta_free(&d);
	/* a pre-#44528 (Bn) prefill reads the same bytes: the three lists are unknown keys */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BN, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nlayer_names, 0);
	assert_int_equal(d.nbases, 1);
	assert_int_equal(d.block_lens[0], 16384);
	kv1_xfer_meta_free(&d);
	free(out);
	/* the Bn shape never sends the lists: the Bn example's bytes */
	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BN, &out, &len), 0);
	assert_bytes(out, len, BN_HEX);
	/* and a Bl prefill reads Bn bytes with the lists empty (the P side then refuses them) */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nlayer_names, 0);
	assert_int_equal(d.nlayer_indices, 0);
	kv1_xfer_meta_free(&d);
	free(out);
}

/* Defaulted fields are written only when set, in declaration order; the prefix-replay ones are
 * kept as sent. */
static void test_xfer_meta_bl_defaults(void **state)
{
	int64_t ids[] = {3, 4}, lens[] = {16384}, zero[] = {0};
	struct kv1_ids bl = {ids, 2};
	struct kv1_req_blocks rb = {"r1", "x1", &bl, 1};
	uint64_t base = 0x10000;
	char *names[] = {"model.layers.0.self_attn.attn"};
	struct kv1_replay_ckpt ck = {"r1", 256, 128, "ab12"};
	struct kv1_xfer_meta m = bl_example(&rb, &base, lens, names, zero), d;
	char *out, err[256];
	size_t len;
	(void)state;

	m.ngroup_indices = 0; /* [] is the default: omitted */
	m.remote_pp_size = 2;
	m.replay_protocol = 1;
	m.replay_layout = "f00d";
	m.replay_ckpts = &ck;
	m.nreplay_ckpts = 1;
	assert_int_equal(kv1_xfer_meta_encode(&m, KV1_SHAPE_BL, &out, &len), 0);
	assert_int_equal((uint8_t)out[0], 0x8e); /* 8 + names + indices + pp + the three */
	assert_null(memmem(out, len, "registered_group_indices", 24));
	{
		const char *a = memmem(out, len, "registered_layer_indices", 24),
		           *b = memmem(out, len, "remote_pp_size", 14),
		           *c = memmem(out, len, "prefix_replay_protocol", 22),
		           *e = memmem(out, len, "prefix_replay_layout", 20),
		           *f = memmem(out, len, "prefix_replay_checkpoints", 25);

		assert_true(a && b && c && e && f && a < b && b < c && c < e && e < f);
		/* {"r1": [256, 128, "ab12"]} closes the map */
		assert_memory_equal(out + len - 15,
		                    "\x81\xa2r1\x93\xcd\x01\x00\xcc\x80\xa4"
		                    "ab12",
		                    15);
	}
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.remote_pp_size, 2);
	assert_int_equal(d.ngroup_indices, 0);
	assert_int_equal(d.replay_protocol, 1);
	assert_string_equal(d.replay_layout, "f00d");
	assert_int_equal(d.nreplay_ckpts, 1);
	assert_string_equal(d.replay_ckpts[0].req_id, "r1");
	assert_int_equal(d.replay_ckpts[0].boundary, 256);
	assert_int_equal(d.replay_ckpts[0].local_hits, 128);
	assert_string_equal(d.replay_ckpts[0].digest, "ab12");
	kv1_xfer_meta_free(&d);
	/* a Bn prefill ignores the Bl-only keys but still reads remote_pp_size */
	assert_int_equal(kv1_xfer_meta_decode(out, len, KV1_SHAPE_BN, &d, err, sizeof(err)), 0);
	assert_int_equal(d.remote_pp_size, 2);
	assert_int_equal(d.nreplay_ckpts, 0);
	kv1_xfer_meta_free(&d);
	free(out);
	/* prefix_replay_layout: None reads as absent */
	{
		uint8_t raw[512];
		size_t n = unhex("8a af \"remote_hostname\" a1 \"h\" ab \"remote_port\" 01 "
		                 "ae \"remote_tp_size\" 01 ae \"remote_tp_rank\" 00 "
		                 "aa \"req_blocks\" 80 b3 \"kv_caches_base_addr\" 90 "
		                 "aa \"block_lens\" 90 ad \"kv_block_lens\" 90 "
		                 "b4 \"prefix_replay_layout\" c0 a5 \"extra\" c3",
		                 raw);

		assert_int_equal(kv1_xfer_meta_decode(raw, n, KV1_SHAPE_BL, &d, err, sizeof(err)),
		                 0);
		assert_null(d.replay_layout);
		kv1_xfer_meta_free(&d);
	}
}

/* Hostile Bl fields: each refused with the field named, never a crash. */
static void test_xfer_meta_bl_hostile(void **state)
{
	static const struct {
		const char *tail, *field;
	} bad[] = {
	    {"b6 \"registered_layer_names\" 91 01", "registered_layer_names"},
	    {"b6 \"registered_layer_names\" 91 a1 00", "registered_layer_names"},
	    {"b6 \"registered_layer_names\" dd 7fffffff", "well-formed"},
	    {"b6 \"registered_layer_names\" dc 1001", "well-formed"},
	    {"b8 \"registered_layer_indices\" 91 ff", "registered_layer_indices"},
	    {"b8 \"registered_layer_indices\" 91 a1 61", "registered_layer_indices"},
	    {"b8 \"registered_group_indices\" a1 61", "registered_group_indices"},
	    {"b6 \"prefix_replay_protocol\" a1 61", "prefix_replay_protocol"},
	    {"b4 \"prefix_replay_layout\" 01", "prefix_replay_layout"},
	    {"b9 \"prefix_replay_checkpoints\" 81 a1 61 92 01 02", "prefix_replay_checkpoints"},
	    {"b9 \"prefix_replay_checkpoints\" 81 a1 61 93 01 02 03", "prefix_replay_checkpoints"},
	    {"b9 \"prefix_replay_checkpoints\" 91 00", "prefix_replay_checkpoints"},
	};
	uint8_t *raw = malloc(1 << 16);
	struct kv1_xfer_meta d;
	char err[256], hex[512];
	(void)state;

	assert_non_null(raw);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n;

		snprintf(hex, sizeof(hex),
		         "89 af \"remote_hostname\" a1 \"h\" ab \"remote_port\" 01 "
		         "ae \"remote_tp_size\" 01 ae \"remote_tp_rank\" 00 "
		         "aa \"req_blocks\" 80 b3 \"kv_caches_base_addr\" 90 "
		         "aa \"block_lens\" 90 ad \"kv_block_lens\" 90 %s",
		         bad[i].tail);
		n = unhex(hex, raw);
		assert_int_equal(kv1_xfer_meta_decode(raw, n, KV1_SHAPE_BL, &d, err, sizeof(err)),
		                 -EBADMSG);
		if (!strstr(err, bad[i].field))
			fail_msg("case %zu: %s", i, err);
		assert_null(d.layer_names); /* left freed and zeroed */
	}
	/* 4097 names (one over KV1_MAX_BASES), each a byte: refused by count */
	{
		size_t n = unhex("89 af \"remote_hostname\" a1 \"h\" ab \"remote_port\" 01 "
		                 "ae \"remote_tp_size\" 01 ae \"remote_tp_rank\" 00 "
		                 "aa \"req_blocks\" 80 b3 \"kv_caches_base_addr\" 90 "
		                 "aa \"block_lens\" 90 ad \"kv_block_lens\" 90 "
		                 "b6 \"registered_layer_names\" dc 1001",
		                 raw);

		for (int k = 0; k < 4097; k++) {
			raw[n++] = 0xa1;
			raw[n++] = 'x';
		}
		assert_int_equal(kv1_xfer_meta_decode(raw, n, KV1_SHAPE_BL, &d, err, sizeof(err)),
		                 -EBADMSG);
		assert_non_null(strstr(err, "registered_layer_names"));
		assert_non_null(strstr(err, "limit"));
	}
	free(raw);
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
	/* a v0.31 prefill's FINISH with prefix_replay_checkpoints ({req: [boundary, digest]}):
	 * the unknown key is skipped */
	n = unhex("83 a6 \"status\" 00 a7 \"ok_reqs\" 91 a2 \"r1\" "
	          "b9 \"prefix_replay_checkpoints\" 81 a2 \"r1\" 92 cd 0100 a4 \"ab12\"",
	          raw);
	assert_int_equal(kv1_xfer_resp_decode(raw, n, &d, err, sizeof(err)), 0);
	assert_int_equal(d.status, KV1_FINISH);
	assert_int_equal(d.nok, 1);
	assert_string_equal(d.ok[0], "r1");
	kv1_xfer_resp_free(&d);
	n = unhex("82 a6 \"status\" 00 b9 \"prefix_replay_checkpoints\" c0", raw);
	assert_int_equal(kv1_xfer_resp_decode(raw, n, &d, err, sizeof(err)), 0);
	kv1_xfer_resp_free(&d);
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
	    cmocka_unit_test(test_agent_meta),
	    cmocka_unit_test(test_xfer_meta_b0),
	    cmocka_unit_test(test_xfer_meta_bn),
	    cmocka_unit_test(test_xfer_resp),
	    cmocka_unit_test(test_raw_replies),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_xfer_meta_bl),
	    cmocka_unit_test(test_xfer_meta_bl_defaults),
	    cmocka_unit_test(test_xfer_meta_bl_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
