/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_regions' pure functions against vLLM's (mooncake_connector.py, kv_connector/utils.py @
 * 00f4240e): TP pairing and the sender plan for (P2,D4), (P4,D2), (P2,D2); region expansion,
 * alignment by (layer name, occurrence) and the length checks with vLLM's texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv1/kv1.h"

static void targets_are(int rank, int tp, int remote_tp, int n, const int *want)
{
	int t[8];

	assert_int_equal(kv1_tp_targets(rank, tp, remote_tp, t, 8), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(t[i], want[i]);
}

static void test_tp_targets(void **state)
{
	(void)state;
	assert_int_equal(kv1_tp_ratio(2, 4), -2);
	assert_int_equal(kv1_tp_ratio(4, 2), 2);
	assert_int_equal(kv1_tp_ratio(2, 2), 1);
	assert_int_equal(kv1_tp_ratio(3, 2), 0);
	/* D4 reading P2: D rank d pairs with P rank d / 2; P rank p accepts D ranks 2p, 2p+1 */
	targets_are(1, 4, 2, 1, (int[]){0});
	targets_are(2, 4, 2, 1, (int[]){1});
	targets_are(1, 2, 4, 2, (int[]){2, 3});
	/* D2 reading P4: D rank d pulls from P ranks 2d, 2d+1; P rank p serves D rank p / 2 */
	targets_are(1, 2, 4, 2, (int[]){2, 3});
	targets_are(3, 4, 2, 1, (int[]){1});
	/* equal TP: the same rank */
	targets_are(1, 2, 2, 1, (int[]){1});
}

static void plan_is(int p, int ptp, int d, int dtp, int64_t plen, int64_t dlen, bool send,
                    int64_t src, int64_t dst, int64_t len)
{
	struct kv1_tp_plan pl;

	kv1_tp_plan(p, ptp, d, dtp, plen, dlen, false, &pl);
	assert_int_equal(pl.send, send);
	assert_int_equal(pl.src_off, src);
	assert_int_equal(pl.dst_off, dst);
	assert_int_equal(pl.len, len);
}

static void test_tp_plan(void **state)
{
	struct kv1_tp_plan pl;
	(void)state;

	/* (P2, D4): P's 1024-byte block holds two D ranks' 512 bytes: slice by D rank */
	plan_is(0, 2, 0, 4, 1024, 512, true, 0, 0, 512);
	plan_is(0, 2, 1, 4, 1024, 512, true, 512, 0, 512);
	plan_is(1, 2, 3, 4, 1024, 512, true, 512, 0, 512);
	/* (P4, D2): P's 512 bytes land at its place in D's 1024-byte block */
	plan_is(0, 4, 0, 2, 512, 1024, true, 0, 0, 512);
	plan_is(1, 4, 0, 2, 512, 1024, true, 0, 512, 512);
	plan_is(3, 4, 1, 2, 512, 1024, true, 0, 512, 512);
	/* (P2, D2): whole blocks */
	plan_is(1, 2, 1, 2, 1024, 1024, true, 0, 0, 1024);
	/* replicated (MLA), P4 -> D2: one P rank of each pair sends the whole block */
	kv1_tp_plan(1, 4, 0, 2, 512, 512, true, &pl);
	assert_false(pl.send);
	kv1_tp_plan(2, 4, 1, 2, 512, 512, true, &pl);
	assert_true(pl.send && pl.dst_off == 0 && pl.len == 512);
}

static void test_expand(void **state)
{
	char *names[] = {"model.layers.0.self_attn.attn", "model.layers.0.self_attn.attn"};
	int64_t idx[] = {0, 0}, lens[] = {64, 64}, grp[] = {0};
	uint64_t bases[] = {0x1000, 0x2000};
	struct kv1_xfer_meta m = {.bases = bases,
	                          .nbases = 2,
	                          .block_lens = lens,
	                          .nblock_lens = 2,
	                          .kv_block_lens = lens,
	                          .nkv_block_lens = 2,
	                          .layer_names = names,
	                          .nlayer_names = 2,
	                          .layer_indices = idx,
	                          .nlayer_indices = 2};
	struct kv1_region *r;
	size_t n;
	char msg[300];
	(void)state;

	assert_int_equal(kv1_regions_expand(&m, &r, &n, msg, sizeof(msg)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(r[1].base, 0x2000);
	assert_int_equal(r[1].group, 0); /* [] derived: one group */
	free(r);
	m.group_indices = grp;
	m.ngroup_indices = 1;
	assert_int_equal(kv1_regions_expand(&m, &r, &n, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "Mooncake transfer regions require matching group metadata "
	                         "lengths, got group_indices=1, layer_names=2.");
	m.nlayer_indices = 0;
	assert_int_equal(kv1_regions_expand(&m, &r, &n, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "Mooncake transfer regions require matching metadata lengths, "
	                         "got base_addrs=2, block_lens=2, kv_block_lens=2, "
	                         "layer_names=2, layer_indices=0.");
}

static void test_align(void **state)
{
	const char *a = "model.layers.0.self_attn.attn", *b = "model.layers.1.self_attn.attn";
	/* P: L0, L0, L1, L1; D lists them in another order */
	struct kv1_region loc[] = {{a, 0, 0, 0x10, 64, 64},
	                           {a, 0, 0, 0x20, 64, 64},
	                           {b, 1, 0, 0x30, 64, 64},
	                           {b, 1, 0, 0x40, 64, 64}};
	struct kv1_region rem[] = {{b, 1, 0, 0x300, 64, 64},
	                           {a, 0, 0, 0x100, 64, 64},
	                           {b, 1, 0, 0x400, 64, 64},
	                           {a, 0, 0, 0x200, 64, 32}};
	long map[4];
	char msg[300];
	(void)state;

	assert_int_equal(kv1_regions_align(loc, 4, rem, 4, false, map, msg, sizeof(msg)), 0);
	assert_int_equal(map[0], 1);
	assert_int_equal(map[1], 3);
	assert_int_equal(map[2], 0);
	assert_int_equal(map[3], 2);
	assert_int_equal(kv1_regions_check_lens(loc, 4, rem, map, 2, 2, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "Mooncake KV region length mismatch for homogeneous TP at region "
	                         "1: local=64, remote=32.");
	rem[3].kv_block_len = 64;
	assert_int_equal(kv1_regions_check_lens(loc, 4, rem, map, 2, 2, msg, sizeof(msg)), 0);
	assert_int_equal(kv1_regions_check_lens(loc, 4, rem, map, 2, 4, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "Mooncake source KV region length does not match the consumer TP "
	                         "ratio at region 0: local=64, remote=64, tp_ratio=-2.");
	assert_int_equal(kv1_regions_check_lens(loc, 4, rem, map, 4, 2, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "Mooncake destination KV region length does not match the "
	                         "producer TP ratio at region 0: local=64, remote=64, "
	                         "tp_ratio=2.");
	rem[1].index = 5;
	assert_int_equal(kv1_regions_align(loc, 4, rem, 4, false, map, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "Mooncake registered layer index mismatch for "
	                         "model.layers.0.self_attn.attn: producer=0, consumer=5.");
	rem[1].index = 0;
	rem[2].group = 1;
	assert_int_equal(kv1_regions_align(loc, 4, rem, 4, false, map, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "Mooncake registered group index mismatch for "
	                         "model.layers.1.self_attn.attn: producer=0, consumer=1.");
	rem[2].group = 0;
	/* D holds layer 0 only (another PP stage): refused, unless partial layers are allowed */
	assert_int_equal(kv1_regions_align(loc, 4, &rem[1], 1, false, map, msg, sizeof(msg)),
	                 -EINVAL);
	assert_string_equal(msg, "Mooncake producer registered layer has no matching consumer "
	                         "occurrence: model.layers.0.self_attn.attn occurrence 1.");
	/* partial layers skip only layers D lacks altogether, not a missing occurrence */
	assert_int_equal(kv1_regions_align(loc, 4, &rem[1], 1, true, map, msg, sizeof(msg)),
	                 -EINVAL);
	{
		struct kv1_region only_a[] = {rem[1], rem[3]};

		assert_int_equal(kv1_regions_align(loc, 4, only_a, 2, false, map, msg, sizeof(msg)),
		                 -EINVAL);
		assert_string_equal(msg, "Mooncake producer registered layer has no matching "
		                         "consumer occurrence: model.layers.1.self_attn.attn "
		                         "occurrence 0.");
		assert_int_equal(kv1_regions_align(loc, 4, only_a, 2, true, map, msg, sizeof(msg)),
		                 0);
		assert_true(map[0] == 0 && map[1] == 1 && map[2] == -1 && map[3] == -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tp_targets),
	    cmocka_unit_test(test_tp_plan),
	    cmocka_unit_test(test_expand),
	    cmocka_unit_test(test_align),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
