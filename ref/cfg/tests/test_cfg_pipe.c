/* SPDX-License-Identifier: Apache-2.0 */
/* test_pipe: cfg_v0_pipe against the names and ports of docs/vllm-v0.md and the +100
 * rule's string-compare quirks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cfg/cfg.h"

static void mk(struct cfg_mooncake *mc, const char *p, const char *d)
{
	memset(mc, 0, sizeof(*mc));
	mc->prefill_url = (char *)p;
	mc->decode_url = (char *)d;
}

static struct cfg_kv_transfer rank(int r)
{
	struct cfg_kv_transfer kt;
	memset(&kt, 0, sizeof(kt));
	kt.kv_rank_set = r >= 0;
	kt.kv_rank = r;
	return kt;
}

static void doc_example(void **st)
{
	struct cfg_mooncake mc;
	struct cfg_kv_transfer p = rank(0), dk = rank(1);
	struct cfg_v0_pipe o;
	struct cfg_diags d = {0};
	(void)st;

	mk(&mc, "192.168.0.137:13003", "192.168.0.139:13003");
	assert_int_equal(cfg_v0_pipe(&mc, &p, 0, &o, &d), 0);
	assert_true(o.prefill_end);
	assert_string_equal(o.own_url, "192.168.0.137:13003");
	assert_string_equal(o.remote_url, "192.168.0.139:13003");
	assert_int_equal(o.bind_data_port, 13012);
	assert_int_equal(o.bind_ack_port, 13013);
	assert_string_equal(o.remote_host, "192.168.0.139");
	assert_int_equal(o.connect_data_port, 13012);
	assert_int_equal(o.connect_ack_port, 13013);

	assert_int_equal(cfg_v0_pipe(&mc, &dk, 1, &o, &d), 0);
	assert_false(o.prefill_end);
	assert_string_equal(o.own_url, "192.168.0.139:13004");
	assert_string_equal(o.remote_url, "192.168.0.137:13004");
	assert_int_equal(o.bind_data_port, 13014);
	assert_int_equal(o.bind_ack_port, 13015);
	assert_int_equal(d.n, 0);
	cfg_diags_free(&d);
}

static void plus100(void **st)
{
	struct cfg_mooncake mc;
	struct cfg_kv_transfer p = rank(0), dk = rank(1), none = rank(-1);
	struct cfg_v0_pipe o;
	struct cfg_diags d = {0};
	(void)st;

	mk(&mc, "127.0.0.1:13003", "127.0.0.1:13003");
	assert_int_equal(cfg_v0_pipe(&mc, &dk, 0, &o, &d), 0);
	assert_int_equal(o.own_base, 13103);
	assert_string_equal(o.own_url, "127.0.0.1:13103");
	assert_int_equal(o.bind_data_port, 13112);
	assert_int_equal(cfg_v0_pipe(&mc, &p, 0, &o, &d), 0);
	assert_int_equal(o.own_base, 13003);
	assert_int_equal(o.remote_base, 13103);
	assert_int_equal(o.connect_data_port, 13112);
	/* kv_rank omitted: decode end */
	assert_int_equal(cfg_v0_pipe(&mc, &none, 0, &o, &d), 0);
	assert_false(o.prefill_end);
	assert_int_equal(cfg_v0_pipe(&mc, NULL, 0, &o, &d), 0);
	assert_false(o.prefill_end);

	/* strings differ: no shift, ports collide */
	mk(&mc, "localhost:13003", "127.0.0.1:13003");
	assert_int_equal(cfg_v0_pipe(&mc, &dk, 0, &o, &d), 0);
	assert_int_equal(o.own_base, 13003);
	mk(&mc, "127.0.0.1:13003", "127.0.0.1:013003");
	assert_int_equal(cfg_v0_pipe(&mc, &dk, 0, &o, &d), 0);
	assert_int_equal(o.own_base, 13003);
	assert_string_equal(o.own_url, "127.0.0.1:13003");
	assert_int_equal(d.n, 0);
	cfg_diags_free(&d);
}

static void bad_urls(void **st)
{
	struct cfg_mooncake mc;
	struct cfg_kv_transfer p = rank(0);
	struct cfg_v0_pipe o;
	struct cfg_diags d = {0};
	(void)st;

	mk(&mc, NULL, "a:1");
	assert_true(cfg_v0_pipe(&mc, &p, 0, &o, &d) < 0);
	mk(&mc, "a:1", "a");
	assert_true(cfg_v0_pipe(&mc, &p, 0, &o, &d) < 0);
	mk(&mc, "a:1:2", "a:1");
	assert_true(cfg_v0_pipe(&mc, &p, 0, &o, &d) < 0);
	mk(&mc, "a:x", "a:1");
	assert_true(cfg_v0_pipe(&mc, &p, 0, &o, &d) < 0);
	assert_int_equal(cfg_diags_count(&d, CFG_ERROR), 4);
	assert_non_null(strstr(d.v[0].message, "NoneType"));
	assert_string_equal(d.v[1].field, "mooncake.json: decode_url");
	/* Python int(): whitespace, underscores, leading zeros */
	mk(&mc, "h: 13_003 ", "h:013003");
	assert_int_equal(cfg_v0_pipe(&mc, &p, 2, &o, &d), 0);
	assert_int_equal(o.own_base, 13003);
	assert_string_equal(o.own_url, "h:13005");
	assert_string_equal(o.remote_url, "h:13005");
	cfg_diags_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(doc_example),
	    cmocka_unit_test(plus100),
	    cmocka_unit_test(bad_urls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
