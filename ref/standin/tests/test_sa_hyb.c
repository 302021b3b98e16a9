/* SPDX-License-Identifier: Apache-2.0 */
/* sa_v1_hyb: the --kv-groups spec (with Mamba/GDN groups), the window clipping of a request's
 * blocks against vLLM's blocks_per_sw = cdiv(W, block_size) + 1 (mooncake_connector.py @ 00f4240e)
 * and the rows the fake model keeps per layer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "standin/sa.h"

static struct sa s;

static void setup_sa(const char *spec, bool wire)
{
	char err[256];

	memset(&s, 0, sizeof(s));
	s.o.block_size = 16;
	s.o.geom.layers = 4;
	s.kv_layout = SA_KV_SPLIT;
	if (sa_hyb_parse(spec, &s.hyb, err, sizeof(err)))
		fail_msg("%s", err);
	s.hyb.wire = wire;
}

static void test_parse(void **state)
{
	struct sa_hyb h;
	char err[256];
	(void)state;

	assert_int_equal(sa_hyb_parse("full,sliding:128", &h, err, sizeof(err)), 0);
	assert_int_equal(h.ng, 2);
	assert_int_equal(h.win[0], 0);
	assert_int_equal(h.win[1], 128);
	assert_int_equal(sa_hyb_parse("sliding:4,full,sliding:64", &h, err, sizeof(err)), 0);
	assert_int_equal(h.ng, 3);
	assert_int_not_equal(sa_hyb_parse("full", &h, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "at least two groups"));
	assert_int_not_equal(sa_hyb_parse("full,full", &h, err, sizeof(err)), 0);
	assert_int_not_equal(sa_hyb_parse("full,sliding:0", &h, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "group 1 (\"sliding:0\")"));
	assert_int_equal(sa_hyb_parse("full,mamba", &h, err, sizeof(err)), 0);
	assert_true(h.mamba);
	assert_int_equal(h.win[1], SA_HYB_MAMBA);
	assert_int_not_equal(sa_hyb_parse("mamba,mamba", &h, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "at least one \"full\""));
	assert_int_not_equal(sa_hyb_parse("full,gdn", &h, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "is not \"full\", \"mamba\""));
	assert_int_not_equal(sa_hyb_parse("full,sliding:12x", &h, err, sizeof(err)), 0);
}

/* Mamba/GDN (#46807): the state group keeps one block; the N-1 rule only from CFG_F_GDN_N1 on
 * and only for a prompt of more than one token (_get_remote_prefill_token_count). */
static void test_mamba(void **state)
{
	struct sa_glay gl;
	size_t *t0;
	(void)state;

	setup_sa("full,mamba", true);
	sa_hyb_layout(&s, 600, true, &gl);
	assert_int_equal(gl.cnt[0], 38);
	assert_int_equal(gl.cnt[1], 1);
	assert_int_equal(gl.first[1], 37);
	assert_int_equal(sa_hyb_t0(&s, 600, &t0), 0);
	assert_int_equal(t0[0], 0);
	assert_int_equal(t0[1], 37 * 16);
	free(t0);
	assert_int_equal(sa_hyb_remote_tokens(&s, 600), 600); /* a release before #46807 */
	s.vi.feat = CFG_F_GDN_N1;
	assert_int_equal(sa_hyb_remote_tokens(&s, 600), 599);
	assert_int_equal(sa_hyb_remote_tokens(&s, 1), 1);
	setup_sa("full,sliding:64", true);
	s.vi.feat = CFG_F_GDN_N1;
	assert_int_equal(sa_hyb_remote_tokens(&s, 600), 600); /* no Mamba layers */
}

/* 600 tokens = 38 blocks of 16; W = 64: 64/16 + 1 = 5 blocks kept (33 dropped); W = 65: 6. */
static void test_layout(void **state)
{
	struct sa_glay gl;
	size_t *t0;
	(void)state;

	setup_sa("full,sliding:64", true);
	sa_hyb_layout(&s, 600, true, &gl);
	assert_int_equal(gl.ng, 2);
	assert_int_equal(gl.cnt[0], 38);
	assert_int_equal(gl.first[0], 0);
	assert_int_equal(gl.cnt[1], 5);
	assert_int_equal(gl.first[1], 33);
	assert_int_equal(gl.off[1], 38);
	assert_int_equal(gl.total, 43);
	sa_hyb_layout(&s, 600, false, &gl); /* P computing: every block of every group */
	assert_int_equal(gl.total, 76);
	sa_hyb_layout(&s, 20, true, &gl); /* shorter than the window: all 2 blocks */
	assert_int_equal(gl.cnt[1], 2);
	assert_int_equal(gl.first[1], 0);
	assert_int_equal(sa_hyb_t0(&s, 600, &t0), 0);
	assert_int_equal(t0[0], 0);
	assert_int_equal(t0[1], 33 * 16);
	assert_int_equal(t0[2], 0);
	assert_int_equal(t0[3], 33 * 16);
	free(t0);
	setup_sa("full,sliding:65", true);
	sa_hyb_layout(&s, 600, true, &gl);
	assert_int_equal(gl.cnt[1], 6);
	/* HMA off on the wire: one list of every block, the model still keeps the window */
	setup_sa("full,sliding:64", false);
	sa_hyb_layout(&s, 600, true, &gl);
	assert_int_equal(gl.ng, 1);
	assert_int_equal(gl.total, 38);
	assert_int_equal(sa_hyb_t0(&s, 600, &t0), 0);
	assert_int_equal(t0[1], 33 * 16);
	free(t0);
}

static void test_buf_groups(void **state)
{
	uint8_t bg[8];
	(void)state;

	setup_sa("full,sliding:64", true);
	sa_hyb_buf_groups(&s, bg, 8); /* split K / V buffers: layer = buffer / 2 */
	assert_int_equal(bg[0], 0);
	assert_int_equal(bg[1], 0);
	assert_int_equal(bg[2], 1);
	assert_int_equal(bg[3], 1);
	assert_int_equal(bg[4], 0);
	assert_int_equal(bg[7], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_layout),
	    cmocka_unit_test(test_mamba),
	    cmocka_unit_test(test_buf_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
