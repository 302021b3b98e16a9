/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for pd_util and pd_proc: strict parsing, host:port splitting, real sockets and
 * real child processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pd_meta_scheme.h"
#include "pd_proc.h"
#include "pd_tcpcc.h"
#include "pd_util.h"

static void test_parse_numbers(void **state)
{
	int64_t i;
	uint64_t u;
	(void)state;
	assert_int_equal(pd_parse_i64("42", &i), 0);
	assert_int_equal(i, 42);
	assert_int_equal(pd_parse_i64("4x", &i), -EINVAL);
	assert_int_equal(pd_parse_i64("", &i), -EINVAL);
	assert_int_equal(pd_parse_i64("99999999999999999999", &i), -ERANGE);
	assert_int_equal(pd_parse_u64("-1", &u), -EINVAL);
	assert_int_equal(pd_parse_size("64KiB", &u), 0);
	assert_int_equal(u, 65536);
	assert_int_equal(pd_parse_size("2e9", &u), 0);
	assert_int_equal(u, 2000000000ull);
	assert_int_equal(pd_parse_size("1M", &u), 0);
	assert_int_equal(u, 1048576);
	assert_int_equal(pd_parse_size("1Q", &u), -EINVAL);
}

static void test_hostport(void **state)
{
	char h[64];
	int port;
	(void)state;
	assert_int_equal(pd_split_hostport("10.0.0.1:13003", h, sizeof(h), &port), 0);
	assert_string_equal(h, "10.0.0.1");
	assert_int_equal(port, 13003);
	assert_int_equal(pd_split_hostport("[::1]:80", h, sizeof(h), &port), 0);
	assert_string_equal(h, "::1");
	assert_int_equal(pd_split_hostport("host", h, sizeof(h), &port), -EINVAL);
	assert_int_equal(pd_split_hostport("host:0", h, sizeof(h), &port), -EINVAL);
	assert_int_equal(pd_split_hostport("host:70000", h, sizeof(h), &port), -EINVAL);
	assert_int_equal(pd_split_hostport(":80", h, sizeof(h), &port), -EINVAL);
}

static void test_sockets(void **state)
{
	int port, lfd, cfd;
	(void)state;
	port = pd_free_port("127.0.0.1");
	{ /* issue 11 D13: below the ephemeral range, where no connect() can take it */
		FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
		int lo = 0, hi = 0;
		if (f && fscanf(f, "%d %d", &lo, &hi) == 2 && lo > 11000)
			assert_true(port >= 10000 && port < lo);
		if (f)
			fclose(f);
	}
	assert_true(port > 0);
	lfd = pd_tcp_listen("127.0.0.1", port, 4);
	assert_true(lfd >= 0);
	assert_int_equal(pd_wait_tcp("127.0.0.1", port, 1000), 0);
	cfd = pd_tcp_connect("127.0.0.1", port, 1000);
	assert_true(cfd >= 0);
	close(cfd);
	close(lfd);
	assert_int_equal(pd_wait_tcp("127.0.0.1", port, 100), -ETIMEDOUT);
}

struct feed {
	int fd;
	size_t len;
};

static void *feed_main(void *arg)
{
	struct feed *f = arg;
	char b[3001];
	for (size_t off = 0; off < f->len;) { /* odd pieces, so no recv lines up with a write */
		size_t n = f->len - off < sizeof(b) ? f->len - off : sizeof(b);
		for (size_t i = 0; i < n; i++)
			b[i] = (char)((off + i) * 131 >> 3);
		struct iovec v[2] = {{b, n / 3}, {b + n / 3, n - n / 3}};
		/* at most 1000 bytes per sendmsg, cut inside and across the two iovecs */
		if (pd_writev_full_max(f->fd, v, 2, 1000))
			break;
		off += n;
	}
	return NULL;
}

/* A socketpair in sv whose first 1 MiB + 77 bytes, fed in odd pieces (feed_main), rd read
 * whole and right; returns a buffer of that size for the caller's use (and free). */
static char *read_fed(int sv[2], int (*rd)(int, void *, size_t))
{
	struct feed f = {0, (1 << 20) + 77};
	pthread_t th;
	char *buf = malloc(f.len);

	assert_non_null(buf);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f.fd = sv[1];
	assert_int_equal(pthread_create(&th, NULL, feed_main, &f), 0);
	assert_int_equal(rd(sv[0], buf, f.len), 0);
	pthread_join(th, NULL);
	for (size_t i = 0; i < f.len; i++)
		if (buf[i] != (char)(i * 131 >> 3))
			fail_msg("byte %zu wrong", i);
	return buf;
}

/* pd_read_full asks for at most PDKV_TCP_RECV_CHUNK per recv, pd_writev_full_max sends at most
 * max per sendmsg, and every byte still arrives in order; a value below 4K or not a size gives the
 * default. */
static void test_recv_chunk(void **state)
{
	int sv[2];
	char *buf;
	(void)state;
	assert_int_equal(pd_sock_recv_chunk(), 4096); /* main() set 4K before any use */
	buf = read_fed(sv, pd_read_full);
	close(sv[1]);
	assert_int_equal(pd_read_full(sv[0], buf, 1), -EPIPE);
	close(sv[0]);
	free(buf);
	assert_int_equal(pd_chunk_parse("X", NULL, PD_SOCK_RECV_CHUNK), PD_SOCK_RECV_CHUNK);
	assert_int_equal(pd_chunk_parse("X", "1M", PD_SOCK_RECV_CHUNK), 1 << 20);
	assert_int_equal(pd_chunk_parse("X", "0", PD_SOCK_RECV_CHUNK), SIZE_MAX - 1);
	assert_int_equal(pd_chunk_parse("X", "100", PD_SOCK_RECV_CHUNK),
	                 PD_SOCK_RECV_CHUNK); /* below 4K */
	assert_int_equal(pd_chunk_parse("X", "lots", PD_SOCK_RECV_CHUNK), PD_SOCK_RECV_CHUNK);
}

static void *late_main(void *arg)
{
	int fd = *(int *)arg;

	pd_sleep_ms(30); /* well past the 200 us the test spins */
	if (pd_write_full(fd, "late", 4))
		return arg;
	return NULL;
}

/* pd_recvmsg_spin and pd_read_full_spin: bytes that are there or on their way are taken, bytes
 * that come after the spin are still waited for, EOF and errors end the wait at once. */
static void test_recv_spin(void **state)
{
	int sv[2];
	pthread_t th;
	char *buf, b4[4];
	struct iovec v = {b4, sizeof(b4)};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
	void *rv = &rv;
	(void)state;
	assert_int_equal(pd_sock_spin_ns(), 200000); /* main() set 200 us before any use */
	buf = read_fed(sv, pd_read_full_spin);
	assert_int_equal(pthread_create(&th, NULL, late_main, &sv[1]), 0);
	assert_int_equal(pd_recvmsg_spin(sv[0], &m, MSG_WAITALL), 4);
	pthread_join(th, &rv);
	assert_null(rv);
	assert_memory_equal(b4, "late", 4);
	close(sv[1]);
	assert_int_equal(pd_recvmsg_spin(sv[0], &m, MSG_WAITALL), 0); /* EOF */
	assert_int_equal(pd_read_full_spin(sv[0], buf, 1), -EPIPE);
	close(sv[0]);
	errno = 0;
	assert_int_equal(pd_recvmsg_spin(sv[0], &m, 0), -1); /* closed fd: no spin, no wait */
	assert_int_equal(errno, EBADF);
	free(buf);
	assert_int_equal(pd_spin_parse_ns("X", NULL), PD_SOCK_SPIN_US * 1000);
	assert_int_equal(pd_spin_parse_ns("X", "0"), 0);
	assert_int_equal(pd_spin_parse_ns("X", "7"), 7000);
	assert_int_equal(pd_spin_parse_ns("X", "-1"), PD_SOCK_SPIN_US * 1000);
	assert_int_equal(pd_spin_parse_ns("X", "100001"), PD_SOCK_SPIN_US * 1000);
	assert_int_equal(pd_spin_parse_ns("X", "fast"), PD_SOCK_SPIN_US * 1000);
}

static void test_files(void **state)
{
	char dir[] = "/tmp/pdkv-common-XXXXXX";
	char *path, *data;
	size_t len;
	(void)state;
	assert_non_null(mkdtemp(dir));
	path = pd_asprintf("%s/a/b/c.txt", dir);
	char *sub = pd_asprintf("%s/a/b", dir);
	assert_int_equal(pd_mkdir_p(sub), 0);
	assert_int_equal(pd_write_file(path, "hello", 5), 0);
	assert_int_equal(pd_read_file(path, 100, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(data, "hello");
	free(data);
	assert_int_equal(pd_read_file(path, 3, &data, &len), -EFBIG);
	assert_int_equal(pd_read_file(sub, 100, &data, &len), -EISDIR);
	assert_int_equal(pd_rm_rf(dir), 0);
	assert_int_equal(pd_read_file(path, 100, &data, &len), -ENOENT);
	free(path);
	free(sub);
}

/* A write that fails part-way (here: over RLIMIT_FSIZE, as on a full disk) leaves the previous
 * file whole and no temporary beside it; /dev/full reports ENOSPC (issue 34, N5). */
static void test_write_file_fails_whole(void **state)
{
	char dir[] = "/tmp/pdkv-common-XXXXXX", *path, *data, big[65536];
	struct rlimit old, lim;
	size_t len;
	(void)state;
	assert_non_null(mkdtemp(dir));
	path = pd_asprintf("%s/report.json", dir);
	assert_int_equal(pd_write_file(path, "previous", 8), 0);
	memset(big, 'x', sizeof(big));
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 4096;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(pd_write_file(path, big, sizeof(big)), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(pd_read_file(path, 100, &data, &len), 0);
	assert_string_equal(data, "previous");
	free(data);
	assert_int_equal(pd_dir_count(dir), 1); /* no temporary left */
	assert_int_equal(pd_write_file("/dev/full", "x", 1), -ENOSPC);
	assert_int_equal(pd_write_file(path, big, sizeof(big)), 0);
	assert_int_equal(pd_read_file(path, sizeof(big), &data, &len), 0);
	assert_int_equal(len, sizeof(big));
	free(data);
	assert_int_equal(pd_rm_rf(dir), 0);
	free(path);
}

static void test_proc(void **state)
{
	struct pd_proc p;
	char *argv_sleep[] = {"sleep", "30", NULL};
	char *argv_bad[] = {"/nonexistent/pdkv-no-such-binary", NULL};
	(void)state;
	assert_int_equal(pd_proc_spawn(&p, "sleep", argv_sleep, NULL, NULL), 0);
	assert_int_equal(pd_proc_alive(&p), 1);
	assert_int_equal(pd_proc_stop(&p, 1000), 0);
	assert_int_equal(pd_proc_alive(&p), 0);
	assert_int_equal(pd_proc_spawn(&p, "bad", argv_bad, NULL, NULL), -ENOENT);
}

/* The small formatting, directory and deadline helpers the modules share. */
static void test_helpers(void **state)
{
	char err[32], dir[] = "/tmp/pdkv-test-common-XXXXXX", path[64], *s;
	struct timespec a, b;
	(void)state;
	pd_seterr(NULL, 0, "ignored %d", 1);
	pd_seterr(err, sizeof(err), "x=%d", 7);
	assert_string_equal(err, "x=7");
	assert_int_equal(pd_field_err("f.json", err, sizeof(err), "hosts", "bad %s", "name"), -1);
	assert_string_equal(err, "f.json: hosts: bad name");
	pd_field_err("a-rather-long-path/that-fills.json", err, 12, "f", "m");
	assert_string_equal(err, "a-rather-lo"); /* cut, still terminated */
	s = pd_asprintf("%s-%d", "v", 3);
	assert_string_equal(s, "v-3");
	free(s);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(pd_dir_count(dir), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%c%d", dir, i ? 'f' : '.', i);
		assert_int_equal(pd_write_file(path, "", 0), 0);
	}
	assert_int_equal(pd_dir_count(dir), 2); /* the dot file does not count */
	pd_rm_rf(dir);
	assert_int_equal(pd_dir_count(dir), -1);
	clock_gettime(CLOCK_MONOTONIC, &a);
	pd_deadline_in(&b, CLOCK_MONOTONIC, 1999);
	assert_true(b.tv_nsec >= 0 && b.tv_nsec < 1000000000L);
	double d = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	assert_true(d >= 1.999 && d < 1.999 + 60); /* later by at least ms, whatever the load */
}

/* pd_workdir: --workdir made with its parents; else a fresh directory under $TMPDIR */
static void test_workdir(void **state)
{
	char base[] = "/tmp/pdkv-wd.XXXXXX", given[128], buf[256];
	const char *t0 = getenv("TMPDIR");
	char *old = t0 ? strdup(t0) : NULL;
	bool made = true;
	(void)state;
	assert_non_null(mkdtemp(base));
	snprintf(given, sizeof(given), "%s/a/b", base);
	assert_int_equal(pd_workdir("test", given, "x", buf, sizeof(buf), &made), 0);
	assert_false(made);
	assert_string_equal(buf, given);
	assert_int_equal(pd_dir_count(given), 0);
	setenv("TMPDIR", base, 1);
	assert_int_equal(pd_workdir("test", NULL, "pdkv-t", buf, sizeof(buf), &made), 0);
	assert_true(made);
	assert_int_equal(strncmp(buf, base, strlen(base)), 0);
	assert_non_null(strstr(buf, "/pdkv-t."));
	assert_int_equal(pd_dir_count(buf), 0);
	snprintf(given, sizeof(given), "%s/f", base);
	assert_int_equal(pd_write_file(given, "", 0), 0);
	snprintf(given, sizeof(given), "%s/f/sub", base); /* under a file: cannot be made */
	assert_int_equal(pd_workdir("test", given, "x", buf, sizeof(buf), &made), -1);
	if (old)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
	free(old);
	pd_rm_rf(base);
}

/* pd_meta_url writes each store's URL so that the registry reads it back as that store */
static void test_meta_url(void **state)
{
	static const enum pd_meta_store stores[] = {PD_META_STORE_ETCD, PD_META_STORE_REDIS,
	                                            PD_META_STORE_HTTP};
	static const char *const want[] = {"etcd://h1:2379", "redis://h1:2379",
	                                   "http://h1:2379/metadata"};
	char url[64];
	(void)state;
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(pd_meta_url(url, sizeof(url), stores[i], "h1", 2379),
		                 (int)strlen(want[i]));
		assert_string_equal(url, want[i]);
		assert_non_null(pd_meta_scheme_of(url));
		assert_int_equal(pd_meta_scheme_of(url)->kind, stores[i]);
		assert_false(pd_meta_is_p2p(url));
	}
	assert_int_equal(pd_meta_url(url, sizeof(url), (enum pd_meta_store)0, "h1", 1), -1);
	assert_string_equal(url, "");
	assert_true(pd_meta_is_p2p(PD_META_P2P));
	assert_false(pd_meta_is_p2p(NULL));
	assert_false(pd_meta_is_p2p("p2phandshake"));
}

/* pd_iov_advance: whole entries dropped, the next one started later, nothing left past the end */
static void test_iov_advance(void **state)
{
	char a[4], b[8];
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b)}}, *v = iov;
	int n = 2;

	(void)state;
	pd_iov_advance(&v, &n, 0);
	assert_ptr_equal(v, iov);
	assert_int_equal(n, 2);
	pd_iov_advance(&v, &n, 6); /* all of a, 2 bytes of b */
	assert_ptr_equal(v, &iov[1]);
	assert_int_equal(n, 1);
	assert_ptr_equal(v->iov_base, b + 2);
	assert_int_equal(v->iov_len, 6);
	pd_iov_advance(&v, &n, 6);
	assert_int_equal(n, 0);
}

/* pd_utf8_encode: each length, the bytes pd_utf8_seq accepts back */
static void test_utf8_encode(void **state)
{
	static const struct {
		uint32_t cp;
		const char *want;
	} cases[] = {{0x41, "A"},
	             {0xe9, "\xc3\xa9"},
	             {0x20ac, "\xe2\x82\xac"},
	             {0x1f600, "\xf0\x9f\x98\x80"}};
	char out[4];

	(void)state;
	for (size_t i = 0; i < PD_ARRAY_SIZE(cases); i++) {
		size_t n = pd_utf8_encode(cases[i].cp, out);

		assert_int_equal(n, strlen(cases[i].want));
		assert_memory_equal(out, cases[i].want, n);
		assert_int_equal(pd_utf8_seq((const unsigned char *)out, n, false), n);
	}
}

/* PDKV_TCP_CONGESTION: a name the kernel offers is what the socket then uses; one it refuses
 * is reported (-errno) and the socket keeps the host's default; unset changes nothing */
static void test_sock_congestion(void **state)
{
	char host[32], avail[256], got[32];
	socklen_t gl;
	int fd;
	const char *want;
	(void)state;

	if (pd_tcp_cc_host(host, sizeof(host), avail, sizeof(avail)))
		skip();
	want = strcmp(host, "reno") ? "reno" : "cubic";
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	unsetenv("PDKV_TCP_CONGESTION");
	assert_int_equal(pd_sock_congestion(fd), 0);
	gl = sizeof(got);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, got, &gl), 0);
	assert_string_equal(got, host);
	setenv("PDKV_TCP_CONGESTION", want, 1);
	assert_int_equal(pd_sock_congestion(fd), 0);
	gl = sizeof(got);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, got, &gl), 0);
	assert_string_equal(got, want);
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setenv("PDKV_TCP_CONGESTION", "nosuchcc", 1);
	assert_int_equal(pd_sock_congestion(fd), -ENOENT);
	gl = sizeof(got);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, got, &gl), 0);
	assert_string_equal(got, host);
	unsetenv("PDKV_TCP_CONGESTION");
	close(fd);
}

int main(void)
{
	setenv("PDKV_TCP_RECV_CHUNK", "4K", 1); /* test_recv_chunk */
	setenv("PDKV_TCP_SPIN_US", "200", 1);   /* test_recv_spin */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_numbers), cmocka_unit_test(test_hostport),
	    cmocka_unit_test(test_sockets),       cmocka_unit_test(test_files),
	    cmocka_unit_test(test_proc),          cmocka_unit_test(test_write_file_fails_whole),
	    cmocka_unit_test(test_helpers),       cmocka_unit_test(test_recv_chunk),
	    cmocka_unit_test(test_recv_spin),     cmocka_unit_test(test_meta_url),
	    cmocka_unit_test(test_workdir),       cmocka_unit_test(test_iov_advance),
	    cmocka_unit_test(test_utf8_encode),   cmocka_unit_test(test_sock_congestion),
	};
	return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
