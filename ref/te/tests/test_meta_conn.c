/* SPDX-License-Identifier: Apache-2.0 */
/* test_meta_conn: connection strings (docs/metadata.md) and metadata key names with and without
 * MC_METADATA_CLUSTER_ID. The vLLM adaptor's resolution is ref/cfg's (cfg_meta.c, fixtures). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/te_internal.h"

struct conn_case {
	const char *conn;
	int ret;
	enum te_meta_kind kind;
	const char *url, *host;
	int port, nendpoints;
};

static void test_conn_table(void **state)
{
	static const struct conn_case cases[] = {
	    {"P2PHANDSHAKE", 0, TE_META_P2P, "P2PHANDSHAKE", "", 0, 0},
	    {"etcd://10.0.0.1:2379", 0, TE_META_ETCD, "10.0.0.1:2379", "10.0.0.1", 2379, 1},
	    {"10.0.0.1:2379", 0, TE_META_ETCD, "10.0.0.1:2379", "10.0.0.1", 2379, 1},
	    {"etcd://a:2379,b:2380", 0, TE_META_ETCD, "a:2379,b:2380", "a", 2379, 2},
	    {"etcd://a:1;b:2;c:3", 0, TE_META_ETCD, "a:1,b:2,c:3", "a", 1, 3},
	    {"etcd://http://a:1,http://b:2", 0, TE_META_ETCD, "a:1,b:2", "a", 1, 2},
	    {"etcd://[::1]:2379", 0, TE_META_ETCD, "[::1]:2379", "::1", 2379, 1},
	    {"redis://h:6379", 0, TE_META_REDIS, "h:6379", "h", 6379, 1},
	    {"redis://h", 0, TE_META_REDIS, "h", "h", 12001, 1}, /* Mooncake's default */
	    {"redis://h:6379/", 0, TE_META_REDIS, "h:6379", "h", 6379, 1},
	    {"http://h:8080/metadata", 0, TE_META_HTTP, "http://h:8080/metadata", "h", 8080, 1},
	    {"https://meta.example/md", 0, TE_META_HTTP, "https://meta.example/md", "meta.example",
	     443, 1},
	    {"http://h", 0, TE_META_HTTP, "http://h", "h", 80, 1},
	    /* errors */
	    {"", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"p2phandshake", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0}, /* case matters */
	    {"zk://h:2181", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"ETCD://h:1", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"://h:1", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"etcd://", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"etcd://h", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"etcd://h:0", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"etcd://h:65536", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"etcd://a:1,,b:2", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"h:abc", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"localhost", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"redis://", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"redis://h:x", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"redis://:pw@h:1", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"http://", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"http:///metadata", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	    {"http://h:99999/m", TE_ERR_INVALID_ARGUMENT, 0, NULL, NULL, 0, 0},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct conn_case *c = &cases[i];
		struct te_conn_info ci;
		char err[256] = "";
		int ret = te_conn_parse(c->conn, &ci, err, sizeof(err));
		if (ret != c->ret)
			fail_msg("\"%s\": ret %d, expected %d (%s)", c->conn, ret, c->ret, err);
		if (ret) {
			if (!err[0])
				fail_msg("\"%s\": no error message", c->conn);
			continue;
		}
		if (ci.kind != c->kind || strcmp(ci.url, c->url) || strcmp(ci.host, c->host) ||
		    ci.port != c->port || ci.nendpoints != c->nendpoints)
			fail_msg("\"%s\": got kind %d url \"%s\" host \"%s\" port %d n %d", c->conn,
			         ci.kind, ci.url, ci.host, ci.port, ci.nendpoints);
	}
	/* the message for an unknown scheme names it */
	struct te_conn_info ci;
	char err[256];
	te_conn_parse("zk://h:2181", &ci, err, sizeof(err));
	assert_non_null(strstr(err, "\"zk\""));
	assert_int_equal(te_conn_parse(NULL, &ci, err, sizeof(err)), TE_ERR_INVALID_ARGUMENT);
}

static void check_key(char *k, const char *want)
{
	assert_non_null(k);
	assert_string_equal(k, want);
	free(k);
}

static void test_keys(void **state)
{
	(void)state;
	unsetenv("MC_METADATA_CLUSTER_ID");
	check_key(te_meta_segment_key("192.168.0.2:13003"), "mooncake/ram/192.168.0.2:13003");
	check_key(te_meta_segment_key("nvmeof/x"), "mooncake/nvmeof/x");
	check_key(te_meta_rpc_key("192.168.0.2:13003"), "mooncake/rpc_meta/192.168.0.2:13003");
	setenv("MC_METADATA_CLUSTER_ID", "c1", 1);
	check_key(te_meta_segment_key("h:1"), "mooncake/c1/ram/h:1");
	check_key(te_meta_segment_key("a/b"), "mooncake/c1/a/b");
	check_key(te_meta_rpc_key("h:1"), "mooncake/c1/rpc_meta/h:1");
	setenv("MC_METADATA_CLUSTER_ID", "c2/", 1);
	check_key(te_meta_segment_key("h:1"), "mooncake/c2/ram/h:1");
	check_key(te_meta_rpc_key("h:1"), "mooncake/c2/rpc_meta/h:1");
	setenv("MC_METADATA_CLUSTER_ID", "", 1);
	check_key(te_meta_segment_key("h:1"), "mooncake/ram/h:1");
	unsetenv("MC_METADATA_CLUSTER_ID");
	assert_null(te_meta_segment_key(NULL));
	assert_null(te_meta_rpc_key(NULL));
}

/* P2PHANDSHAKE: a handle with no store; unknown schemes fail cleanly at open. */
static void test_open_p2p_and_errors(void **state)
{
	struct te_meta *m = NULL;
	char err[256] = "", *v = (char *)1;
	(void)state;
	assert_int_equal(te_meta_open("P2PHANDSHAKE", &m, err, sizeof(err)), 0);
	assert_int_equal(te_meta_kind(m), TE_META_P2P);
	assert_string_equal(te_meta_kind_name(te_meta_kind(m)), "P2PHANDSHAKE");
	assert_int_equal(te_meta_put(m, "mooncake/ram/x", "{}\n"), 0);
	assert_int_equal(te_meta_get(m, "mooncake/ram/x", &v), TE_ERR_NOT_FOUND);
	assert_null(v);
	assert_int_equal(te_meta_del(m, "mooncake/ram/x"), 0);
	assert_int_equal(te_meta_put(m, "", "{}"), TE_ERR_INVALID_ARGUMENT);
	te_meta_close(m);
	te_meta_close(NULL);

	m = (void *)1;
	assert_int_equal(te_meta_open("zk://h:2181", &m, err, sizeof(err)),
	                 TE_ERR_INVALID_ARGUMENT);
	assert_null(m);
	assert_non_null(strstr(err, "zk"));
	assert_int_equal(te_meta_open("etcd://h", &m, err, sizeof(err)), TE_ERR_INVALID_ARGUMENT);
	setenv("MC_REDIS_DB_INDEX", "256", 1);
	assert_int_equal(te_meta_open("redis://127.0.0.1:1", &m, err, sizeof(err)),
	                 TE_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(err, "MC_REDIS_DB_INDEX"));
	unsetenv("MC_REDIS_DB_INDEX");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conn_table),
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_open_p2p_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
