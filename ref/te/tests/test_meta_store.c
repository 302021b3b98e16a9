/* SPDX-License-Identifier: Apache-2.0 */
/* test_meta_store: te_meta_* against real etcd, redis-server and pdkv-metaserver on free
 * loopback ports (pd_svc) — put/get/del, not-found, big values, URL escaping, concurrency,
 * redis AUTH/SELECT, non-200 answers, and a store that is down. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testsvc/pd_svc.h"
#include "pd_util.h"
#include "te/te_internal.h"

static struct pd_svc svc[3];
static int have[3];

static int setup(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++) {
		int ret = pd_svc_start((enum pd_svc_kind)k, NULL, NULL, &svc[k]);
		have[k] = ret == 0;
		if (ret && ret != -ENOENT) {
			fprintf(stderr, "cannot start %s: %s\n", pd_svc_kind_name(k),
			        strerror(-ret));
			return -1;
		}
		if (ret)
			printf("SKIP part: %s not installed\n", pd_svc_kind_name(k));
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++)
		pd_svc_stop(&svc[k]);
	return 0;
}

static struct te_meta *open_ok(const char *conn)
{
	struct te_meta *m = NULL;
	char err[512] = "";
	int ret = te_meta_open(conn, &m, err, sizeof(err));
	if (ret)
		fail_msg("te_meta_open(%s) = %d: %s", conn, ret, err);
	return m;
}

static void check_value(struct te_meta *m, const char *key, const char *want)
{
	char *v = NULL;
	int ret = te_meta_get(m, key, &v);
	if (ret)
		fail_msg("get %s on %s: %d", key, te_meta_conn(m), ret);
	assert_non_null(v);
	assert_string_equal(v, want);
	free(v);
}

/* What a backend stores for val: HTTP drops the trailing "\n" as the newest Mooncake release does
 * (PDKV_MOONCAKE_VERSION unset), the others keep it. Returns buf. */
static const char *stored(enum pd_svc_kind k, const char *val, char *buf, size_t len)
{
	size_t n = strlen(val);
	snprintf(buf, len, "%.*s", (int)(n - (k == PD_SVC_METASERVER && n && val[n - 1] == '\n')),
	         val);
	return buf;
}

/* The same contract on every backend. */
static void exercise(enum pd_svc_kind k)
{
	static const char *const keys[] = {
	    "mooncake/ram/10.0.0.2:13003",
	    "mooncake/rpc_meta/10.0.0.2:13003",
	    "mooncake/ram/we?ird&key=x+y %25 #frag",
	    "mooncake/nvmeof/a/b:c",
	};
	const char *val = "{\"ip_or_host_name\":\"10.0.0.2\",\"rpc_port\":15423}\n";
	struct te_meta *m;
	char *v = (char *)1, *big, want[128], want2[32];

	if (!have[k])
		skip();
	stored(k, val, want, sizeof(want));
	stored(k, "{\"v\":2}\n", want2, sizeof(want2));
	m = open_ok(svc[k].conn);
	assert_int_equal(te_meta_kind(m), k == PD_SVC_ETCD    ? TE_META_ETCD
	                                  : k == PD_SVC_REDIS ? TE_META_REDIS
	                                                      : TE_META_HTTP);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		assert_int_equal(te_meta_get(m, keys[i], &v), TE_ERR_NOT_FOUND);
		assert_null(v);
		assert_int_equal(te_meta_put(m, keys[i], val), 0);
		check_value(m, keys[i], want);
	}
	/* overwrite, then delete: gone, and a second delete says so */
	assert_int_equal(te_meta_put(m, keys[0], "{\"v\":2}\n"), 0);
	check_value(m, keys[0], want2);
	check_value(m, keys[1], want); /* neighbours untouched */
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		assert_int_equal(te_meta_del(m, keys[i]), 0);
		assert_int_equal(te_meta_get(m, keys[i], &v), TE_ERR_NOT_FOUND);
		assert_int_equal(te_meta_del(m, keys[i]), TE_ERR_NOT_FOUND);
	}
	/* empty value and a 1 MiB value */
	assert_int_equal(te_meta_put(m, "mooncake/ram/empty", ""), 0);
	check_value(m, "mooncake/ram/empty", "");
	assert_int_equal(te_meta_del(m, "mooncake/ram/empty"), 0);
	big = malloc((1 << 20) + 1);
	for (size_t i = 0; i < (1 << 20); i++)
		big[i] = (char)('a' + (i * 7919) % 26);
	big[1 << 20] = '\0';
	assert_int_equal(te_meta_put(m, "mooncake/ram/big", big), 0);
	check_value(m, "mooncake/ram/big", big);
	assert_int_equal(te_meta_del(m, "mooncake/ram/big"), 0);
	free(big);
	/* misuse */
	assert_int_equal(te_meta_put(m, "", val), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_meta_put(m, "k", NULL), TE_ERR_INVALID_ARGUMENT);
	assert_int_equal(te_meta_get(m, NULL, &v), TE_ERR_INVALID_ARGUMENT);
	te_meta_close(m);
}

static void test_etcd(void **state)
{
	(void)state;
	exercise(PD_SVC_ETCD);
}

static void test_redis(void **state)
{
	(void)state;
	exercise(PD_SVC_REDIS);
}

static void test_http(void **state)
{
	(void)state;
	exercise(PD_SVC_METASERVER);
}

/* Keys land in etcd as raw strings: `etcdctl get --prefix mooncake/` shows key and JSON. */
static void test_etcd_etcdctl_and_endpoint_list(void **state)
{
	char cmd[512], out[4096] = "", conn[300];
	struct te_meta *m;
	size_t n;
	FILE *p;
	int dead;
	(void)state;
	if (!have[PD_SVC_ETCD])
		skip();
	m = open_ok(svc[PD_SVC_ETCD].conn);
	assert_int_equal(te_meta_put(m, "mooncake/rpc_meta/n:1", "{\"rpc_port\":15001}\n"), 0);
	snprintf(cmd, sizeof(cmd),
	         "ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:%d get --prefix mooncake/ 2>&1",
	         svc[PD_SVC_ETCD].port);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	if (pclose(p) == 0)
		assert_non_null(strstr(out, "mooncake/rpc_meta/n:1\n{\"rpc_port\":15001}\n"));
	else
		printf("etcdctl not usable here, skipped that check: %s\n", out);
	te_meta_close(m);

	/* a dead first endpoint is skipped */
	dead = pd_free_port("127.0.0.1");
	snprintf(conn, sizeof(conn), "etcd://127.0.0.1:%d,127.0.0.1:%d", dead,
	         svc[PD_SVC_ETCD].port);
	m = open_ok(conn);
	check_value(m, "mooncake/rpc_meta/n:1", "{\"rpc_port\":15001}\n");
	/* bare host:port is etcd too */
	te_meta_close(m);
	snprintf(conn, sizeof(conn), "127.0.0.1:%d", svc[PD_SVC_ETCD].port);
	m = open_ok(conn);
	assert_int_equal(te_meta_kind(m), TE_META_ETCD);
	assert_int_equal(te_meta_del(m, "mooncake/rpc_meta/n:1"), 0);
	te_meta_close(m);
}

/* The key travels as curl_easy_escape(key): '/' -> %2F, ':' -> %3A; the server sees it raw. */
static void test_http_escaping(void **state)
{
	char url[512], body[256] = "";
	struct te_meta *m;
	long status = 0;
	char *resp = NULL, err[256];
	(void)state;
	if (!have[PD_SVC_METASERVER])
		skip();
	m = open_ok(svc[PD_SVC_METASERVER].conn);
	assert_int_equal(te_meta_put(m, "mooncake/ram/10.0.0.2:13003", "{\"a\":1}\n"), 0);
	snprintf(url, sizeof(url), "%s?key=mooncake%%2Fram%%2F10.0.0.2%%3A13003",
	         svc[PD_SVC_METASERVER].conn);
	assert_int_equal(te_meta_http_request("GET", url, NULL, 0, NULL, 3000, &status, &resp, NULL,
	                                      err, sizeof(err)),
	                 0);
	assert_int_equal(status, 200);
	assert_string_equal(resp, "{\"a\":1}"); /* no "\n" by default (the newest release) */
	free(resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/dump", svc[PD_SVC_METASERVER].port);
	assert_int_equal(te_meta_http_request("GET", url, NULL, 0, NULL, 3000, &status, &resp, NULL,
	                                      err, sizeof(err)),
	                 0);
	snprintf(body, sizeof(body), "%s", resp);
	free(resp);
	assert_non_null(strstr(body, "\"mooncake/ram/10.0.0.2:13003\""));
	assert_int_equal(te_meta_del(m, "mooncake/ram/10.0.0.2:13003"), 0);
	te_meta_close(m);
}

static void *hammer(void *arg)
{
	struct te_meta *m = arg;
	static atomic_int next;
	int id = atomic_fetch_add(&next, 1), bad = 0;
	char key[64], val[64], *v;
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "mooncake/ram/t%d", id);
		snprintf(val, sizeof(val), "{\"i\":%d}",
		         i); /* no "\n": the same on every backend */
		if (te_meta_put(m, key, val) || te_meta_get(m, key, &v))
			bad++;
		else if (strcmp(v, val) || (free(v), 0))
			bad++, free(v);
	}
	te_meta_del(m, key);
	return (void *)(intptr_t)bad;
}

/* One handle used by 4 threads at once on every backend. */
static void test_threads(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++) {
		pthread_t t[4];
		struct te_meta *m;
		if (!have[k])
			continue;
		m = open_ok(svc[k].conn);
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, hammer, m);
		for (int i = 0; i < 4; i++) {
			void *r;
			pthread_join(t[i], &r);
			if (r)
				fail_msg("%s: %d failed ops in thread %d", svc[k].conn,
				         (int)(intptr_t)r, i);
		}
		te_meta_close(m);
	}
}

static redisReply *raw_cmd(redisContext *c, const char *fmt, const char *arg)
{
	redisReply *r = arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt);
	assert_non_null(r);
	return r;
}

/* MC_REDIS_DB_INDEX selects the db; MC_REDIS_PASSWORD authenticates; a wrong one is an error. */
static void test_redis_auth_select(void **state)
{
	struct pd_svc r;
	struct te_meta *m = NULL;
	char err[512];
	redisContext *c;
	redisReply *rep;
	(void)state;
	if (!have[PD_SVC_REDIS])
		skip();
	assert_int_equal(pd_svc_start(PD_SVC_REDIS, NULL, NULL, &r), 0);
	c = redisConnect(r.host, r.port);
	assert_true(c && !c->err);
	freeReplyObject(raw_cmd(c, "CONFIG SET requirepass s3cret", NULL));

	setenv("MC_REDIS_DB_INDEX", "3", 1);
	assert_int_equal(te_meta_open(r.conn, &m, err, sizeof(err)), TE_ERR_METADATA);
	assert_non_null(strstr(err, "NOAUTH"));
	setenv("MC_REDIS_PASSWORD", "wrong", 1);
	assert_int_equal(te_meta_open(r.conn, &m, err, sizeof(err)), TE_ERR_METADATA);
	assert_non_null(strstr(err, "MC_REDIS_PASSWORD"));
	setenv("MC_REDIS_PASSWORD", "s3cret", 1);
	m = open_ok(r.conn);
	assert_int_equal(te_meta_put(m, "mooncake/ram/x", "{}\n"), 0);
	te_meta_close(m);

	freeReplyObject(raw_cmd(c, "AUTH %s", "s3cret"));
	rep = raw_cmd(c, "GET %s", "mooncake/ram/x");
	assert_int_equal(rep->type, REDIS_REPLY_NIL); /* not in db 0 */
	freeReplyObject(rep);
	freeReplyObject(raw_cmd(c, "SELECT 3", NULL));
	rep = raw_cmd(c, "GET %s", "mooncake/ram/x");
	assert_int_equal(rep->type, REDIS_REPLY_STRING);
	assert_string_equal(rep->str, "{}\n");
	freeReplyObject(rep);
	redisFree(c);
	unsetenv("MC_REDIS_DB_INDEX");
	unsetenv("MC_REDIS_PASSWORD");
	pd_svc_stop(&r);
}

/* ------------------------------------------------------------------ a server that says no */
static struct {
	int fd;
	int status;
	atomic_int stop;
	atomic_int requests;
} fake = {.fd = -1};

static void *fake_server(void *arg)
{
	(void)arg;
	while (!atomic_load(&fake.stop)) {
		struct pollfd p = {fake.fd, POLLIN, 0};
		char buf[8192], reply[256];
		size_t got = 0;
		if (poll(&p, 1, 50) <= 0)
			continue;
		int c = accept(fake.fd, NULL, NULL);
		if (c < 0)
			continue;
		/* read headers, then Content-Length bytes of body */
		while (got < sizeof(buf) - 1) {
			ssize_t r = read(c, buf + got, sizeof(buf) - 1 - got);
			if (r <= 0)
				break;
			got += (size_t)r;
			buf[got] = '\0';
			char *end = strstr(buf, "\r\n\r\n"),
			     *cl = strcasestr(buf, "content-length:");
			if (end &&
			    (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0) <= got)
				break;
		}
		if (!got) { /* a connection that sent nothing (te_meta_open's connect probe) */
			close(c);
			continue;
		}
		atomic_fetch_add(&fake.requests, 1);
		int n = snprintf(
		    reply, sizeof(reply),
		    "HTTP/1.1 %d Nope\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope",
		    fake.status);
		if (pd_write_full(c, reply, (size_t)n))
			fprintf(stderr, "fake server: write failed\n");
		close(c);
	}
	return NULL;
}

static void test_http_non_200(void **state)
{
	char conn[128], *v = (char *)1;
	struct te_meta *m;
	pthread_t th;
	int port;
	(void)state;
	fake.fd = pd_tcp_listen("127.0.0.1", 0, 16);
	assert_true(fake.fd >= 0);
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	getsockname(fake.fd, (struct sockaddr *)&sa, &sl);
	port = ntohs(sa.sin_port);
	fake.status = 500;
	pthread_create(&th, NULL, fake_server, NULL);
	snprintf(conn, sizeof(conn), "http://127.0.0.1:%d/metadata", port);
	m = open_ok(conn); /* it listens, so it is reachable */
	/* no HTTP request at open: Mooncake sends none, so a probe key would stand out in the
	 * store's log (issue 14, 4) */
	assert_int_equal(atomic_load(&fake.requests), 0);
	assert_int_equal(te_meta_put(m, "mooncake/ram/a", "{}\n"), TE_ERR_METADATA);
	assert_int_equal(te_meta_get(m, "mooncake/ram/a", &v), TE_ERR_METADATA);
	assert_null(v);
	assert_int_equal(te_meta_del(m, "mooncake/ram/a"), TE_ERR_METADATA);
	fake.status = 400; /* e.g. the newer Python server's duplicate rpc_meta answer */
	assert_int_equal(te_meta_put(m, "mooncake/rpc_meta/a", "{}\n"), TE_ERR_METADATA);
	fake.status = 404; /* absent for GET/DELETE; for a PUT it means a wrong server */
	assert_int_equal(te_meta_get(m, "mooncake/ram/a", &v), TE_ERR_NOT_FOUND);
	assert_int_equal(te_meta_del(m, "mooncake/ram/a"), TE_ERR_NOT_FOUND);
	assert_int_equal(te_meta_put(m, "mooncake/ram/a", "{}\n"), TE_ERR_METADATA);
	fake.status = 201; /* Mooncake needs exactly 200 */
	assert_int_equal(te_meta_put(m, "mooncake/ram/a", "{}\n"), TE_ERR_METADATA);
	assert_int_equal(atomic_load(&fake.requests), 8);
	te_meta_close(m);
	atomic_store(&fake.stop, 1);
	pthread_join(th, NULL);
	close(fake.fd);
}

/* HTTP values lose FastWriter's "\n" from Mooncake 0.3.6 on (PR #815), and so by default (the
 * newest release); redis keeps it. */
static void test_http_newline_era(void **state)
{
	const char *val = "{\"ip_or_host_name\":\"10.0.0.2\",\"rpc_port\":15423}\n";
	char want[128];
	(void)state;
	if (!have[PD_SVC_METASERVER] || !have[PD_SVC_REDIS])
		skip();
	for (int era = 0; era < 3; era++) {
		const char *ver = era == 0 ? NULL : era == 1 ? "0.3.5" : "v0.3.6";
		struct te_meta *h, *r;
		if (ver)
			setenv("PDKV_MOONCAKE_VERSION", ver, 1);
		else
			unsetenv("PDKV_MOONCAKE_VERSION");
		h = open_ok(svc[PD_SVC_METASERVER].conn);
		r = open_ok(svc[PD_SVC_REDIS].conn);
		assert_int_equal(te_meta_put(h, "mooncake/rpc_meta/10.0.0.2:13003", val), 0);
		assert_int_equal(te_meta_put(r, "mooncake/rpc_meta/10.0.0.2:13003", val), 0);
		snprintf(want, sizeof(want), "%.*s", (int)strlen(val) - (era != 1), val);
		check_value(h, "mooncake/rpc_meta/10.0.0.2:13003", want);
		check_value(r, "mooncake/rpc_meta/10.0.0.2:13003", val);
		assert_int_equal(te_meta_del(h, "mooncake/rpc_meta/10.0.0.2:13003"), 0);
		assert_int_equal(te_meta_del(r, "mooncake/rpc_meta/10.0.0.2:13003"), 0);
		te_meta_close(h);
		te_meta_close(r);
	}
	unsetenv("PDKV_MOONCAKE_VERSION");
}

/* Nothing listening: open fails with a message naming the address; never a crash or a hang. */
static void test_store_down(void **state)
{
	static const char *const fmt[] = {"etcd://127.0.0.1:%d", "redis://127.0.0.1:%d",
	                                  "http://127.0.0.1:%d/metadata"};
	char conn[128], err[512], port_s[16];
	struct te_meta *m = (void *)1;
	uint64_t t0 = pd_now_ns();
	int port = pd_free_port("127.0.0.1");
	(void)state;
	snprintf(port_s, sizeof(port_s), "%d", port);
	for (int k = 0; k < 3; k++) {
		snprintf(conn, sizeof(conn), fmt[k], port);
		err[0] = '\0';
		assert_int_equal(te_meta_open(conn, &m, err, sizeof(err)), TE_ERR_UNREACHABLE);
		assert_null(m);
		if (!strstr(err, port_s))
			fail_msg("%s: message does not name the address: %s", conn, err);
		printf("  %s -> %s\n", conn, err);
	}
	assert_true(pd_now_ns() - t0 < 5000000000ull);
}

/* The store dies while a handle is open: ops fail with TE_ERR_UNREACHABLE (runs last). */
static void test_store_goes_away(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++) {
		struct te_meta *m;
		char *v = NULL;
		if (!have[k])
			continue;
		m = open_ok(svc[k].conn);
		assert_int_equal(te_meta_put(m, "mooncake/ram/z", "{}\n"), 0);
		pd_svc_stop(&svc[k]);
		assert_int_equal(te_meta_get(m, "mooncake/ram/z", &v), TE_ERR_UNREACHABLE);
		assert_int_equal(te_meta_put(m, "mooncake/ram/z", "{}\n"), TE_ERR_UNREACHABLE);
		assert_int_equal(te_meta_del(m, "mooncake/ram/z"), TE_ERR_UNREACHABLE);
		te_meta_close(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_etcd),
	    cmocka_unit_test(test_redis),
	    cmocka_unit_test(test_http),
	    cmocka_unit_test(test_etcd_etcdctl_and_endpoint_list),
	    cmocka_unit_test(test_http_escaping),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_redis_auth_select),
	    cmocka_unit_test(test_http_non_200),
	    cmocka_unit_test(test_http_newline_era),
	    cmocka_unit_test(test_store_down),
	    cmocka_unit_test(test_store_goes_away),
	};
	if (!getenv("PDKV_LOG"))
		setenv("PDKV_LOG", "error", 1); /* the negative cases warn by design */
	return cmocka_run_group_tests(tests, setup, teardown);
}
