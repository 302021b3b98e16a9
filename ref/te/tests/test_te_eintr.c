/* SPDX-License-Identifier: Apache-2.0 */
/* test_te_eintr: a paused or signalled peer is a slow peer, not a lost one (issue 34, N2) — TCP
 * transfers of some MiB over loopback while every thread is pounded with a signal whose handler
 * has no SA_RESTART, and an initiator process stopped (SIGSTOP) mid-transfer and resumed; a slow
 * target still confirms each WRITE soon after it landed (issue 33). */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pd_log.h"
#include "pd_util.h"
#include "te/te.h"
#include "te/te_inspect.h"

#define BUF   (16u << 20)
#define SLICE (1u << 20)

static atomic_long g_hits;
static atomic_bool g_pound;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&g_hits, 1);
}

/* No SA_RESTART: every blocking call a signal lands in returns EINTR (or a short count). */
static void install_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
}

/* Signals every other thread of this process, over and over, until told to stop. */
static void *pound_main(void *arg)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	(void)arg;
	while (atomic_load(&g_pound)) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *de;
		if (!d)
			break;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid > 0 && tid != self)
				syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
		}
		closedir(d);
		usleep(50);
	}
	return NULL;
}

static struct te_engine *mk(const char *name)
{
	struct te_engine_opts o = {"P2PHANDSHAKE", name, "tcp", NULL};
	struct te_engine *e = NULL;
	int r = te_engine_create(&o, &e);
	if (r)
		fail_msg("te_engine_create(%s): %d %s", name, r, te_strerror(r));
	return e;
}

/* One batch of BUF/SLICE requests of op from a to b's buffer; 0 when all completed. */
static int batch(struct te_engine *a, uint64_t seg, int op, char *la, char *lb)
{
	struct te_request r[BUF / SLICE];
	struct te_task_status st;
	uint64_t b, end = pd_now_ns() + 20000000000ull;
	size_t n = BUF / SLICE, done = 0;
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		r[i] = (struct te_request){op, la + i * SLICE, seg,
		                           (uint64_t)(uintptr_t)(lb + i * SLICE), SLICE};
	if (te_batch_alloc(a, n, &b) || te_batch_submit(a, b, r, n))
		return -1;
	while (done < n && pd_now_ns() < end) {
		done = 0;
		for (size_t i = 0; i < n; i++) {
			if (te_batch_status(a, b, i, &st))
				return -1;
			if (st.status == TE_COMPLETED)
				done++;
			else if (st.status == TE_FAILED)
				bad++, done++;
		}
		if (done < n)
			pd_sleep_ms(1);
	}
	if (done < n || te_batch_free(a, b))
		return -2;
	return bad;
}

/* WRITEs then READs of a whole buffer, rounds times, bytes checked after each. */
static int rounds_of_transfers(struct te_engine *a, struct te_engine *b, char *la, char *lb,
                               int rounds)
{
	uint64_t seg;
	if (te_open_segment(a, te_engine_name(b), &seg))
		return -1;
	for (int k = 0; k < rounds; k++) {
		int r;
		for (size_t i = 0; i < BUF; i++)
			la[i] = (char)(i * 13 + (size_t)k);
		memset(lb, 0, BUF);
		if ((r = batch(a, seg, TE_WRITE, la, lb))) {
			pd_err("round %d: WRITE batch: %d failed", k, r);
			return r;
		}
		/* v1 WRITEs end when sent: wait for them to land before the READs (other lanes) */
		for (uint64_t end = pd_now_ns() + 10000000000ull;
		     memcmp(lb, la, BUF) && pd_now_ns() < end;)
			pd_sleep_ms(1);
		memset(la, 0x5a, BUF);
		if ((r = batch(a, seg, TE_READ, la, lb))) {
			pd_err("round %d: READ batch: %d failed", k, r);
			return r;
		}
		for (size_t i = 0; i < BUF; i++)
			if (la[i] != (char)(i * 13 + (size_t)k) || lb[i] != la[i]) {
				pd_err("round %d: byte %zu differs", k, i);
				return -3;
			}
	}
	return 0;
}

static void pounded(const char *proto)
{
	struct te_engine *a, *b;
	char *la = malloc(BUF), *lb = malloc(BUF);
	pthread_t th;
	long before;
	int r;

	if (proto)
		setenv("MC_TCP_PROTO", proto, 1);
	a = mk("sig-a");
	b = mk("sig-b");
	assert_int_equal(te_register(a, la, BUF, "cpu:0"), 0);
	assert_int_equal(te_register(b, lb, BUF, "cpu:0"), 0);
	install_handler();
	before = atomic_load(&g_hits);
	atomic_store(&g_pound, true);
	assert_int_equal(pthread_create(&th, NULL, pound_main, NULL), 0);
	r = rounds_of_transfers(a, b, la, lb, 6);
	atomic_store(&g_pound, false);
	pthread_join(th, NULL);
	signal(SIGUSR1, SIG_IGN);
	print_message("MC_TCP_PROTO=%s: %ld signals delivered during the transfers\n",
	              proto ? proto : "(2)", atomic_load(&g_hits) - before);
	assert_true(atomic_load(&g_hits) - before > 100);
	assert_int_equal(r, 0);
	te_engine_destroy(a);
	te_engine_destroy(b);
	unsetenv("MC_TCP_PROTO");
	free(la);
	free(lb);
}

static void test_signals_v2(void **state)
{
	(void)state;
	pounded(NULL);
}

static void test_signals_v1(void **state)
{
	(void)state;
	pounded("1");
}

/* The initiator in a child process, transferring round after round, is stopped for 2 s twice
 * (SIGSTOP: no handler, yet sockets with a receive timeout return EINTR on resume) while its
 * transfers are in flight; every round must still complete with the right bytes. */
static void test_sigstop_initiator(void **state)
{
	int up[2], st = 0;
	char c;
	pid_t pid;
	(void)state;

	assert_int_equal(pipe(up), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct te_engine *a = mk("stop-a"), *b = mk("stop-b");
		char *la = malloc(BUF), *lb = malloc(BUF);
		int r;
		close(up[0]);
		if (te_register(a, la, BUF, "cpu:0") || te_register(b, lb, BUF, "cpu:0"))
			_exit(3);
		if (write(up[1], "u", 1) != 1)
			_exit(3);
		/* ~5 s of rounds: long enough for both pauses to land mid-transfer */
		r = 0;
		for (uint64_t end = pd_now_ns() + 5000000000ull; !r && pd_now_ns() < end;)
			r = rounds_of_transfers(a, b, la, lb, 1);
		te_engine_destroy(a);
		te_engine_destroy(b);
		_exit(r ? 1 : 0);
	}
	close(up[1]);
	assert_int_equal(read(up[0], &c, 1), 1);
	for (int i = 0; i < 2; i++) {
		pd_sleep_ms(300);
		assert_int_equal(kill(pid, SIGSTOP), 0);
		pd_sleep_ms(2000);
		assert_int_equal(kill(pid, SIGCONT), 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(up[0]);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the stopped initiator's transfers failed (status 0x%x)", st);
}

/* pd_tcp_connect's wait is bounded by its timeout, not cut short by the first signal: a
 * listener whose accept queue is full leaves the connect pending for the whole timeout. */
static void test_connect_deadline(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fill[4], r;
	pthread_t th;
	uint64_t t0;
	char port[16];
	(void)state;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	snprintf(port, sizeof(port), "%d", ntohs(a.sin_port));
	for (int i = 0; i < 4; i++) /* fill the accept queue; later SYNs are dropped */
		fill[i] = pd_tcp_connect("127.0.0.1", ntohs(a.sin_port), 100);
	install_handler();
	atomic_store(&g_pound, true);
	assert_int_equal(pthread_create(&th, NULL, pound_main, NULL), 0);
	t0 = pd_now_ns();
	r = pd_tcp_connect("127.0.0.1", ntohs(a.sin_port), 600);
	t0 = pd_now_ns() - t0;
	atomic_store(&g_pound, false);
	pthread_join(th, NULL);
	signal(SIGUSR1, SIG_IGN);
	if (r >= 0) {
		close(r);
		skip(); /* the kernel took the connection after all: nothing to measure */
	}
	print_message("pd_tcp_connect: %d after %llu ms under signals\n", r,
	              (unsigned long long)(t0 / 1000000));
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(t0 >= 550000000ull);
	for (int i = 0; i < 4; i++)
		if (fill[i] >= 0)
			close(fill[i]);
	close(lfd);
}

/* A slow target (every WRITE held 30 ms before its body is read, as a starved server thread
 * would be) whose socket always holds the next request: the status of the first WRITE must
 * come back soon after it landed, not once 64 statuses are pending or the queue ran dry (issue
 * 33: statuses coalesced that way came back every 64 WRITEs, ~25 MB at the speed of a starved
 * decode, and whole batches timed out with their bytes landed). */
static atomic_int g_seen;

static void slow_write(uint64_t addr, uint64_t len)
{
	(void)addr;
	(void)len;
	atomic_fetch_add(&g_seen, 1);
	pd_sleep_ms(30);
}

/* One round against the slow target: NW WRITEs of SLICE, as NW batches of one (one_batch
 * false) or one batch of NW; returns how many the target had seen when the initiator saw the
 * first one confirmed. Every WRITE completes and lands. */
static int slow_round(struct te_engine *a, uint64_t seg, char *la, char *lb, bool one_batch)
{
	enum { NW = 16 };
	uint64_t bid[NW];
	struct te_request r[NW];
	struct te_task_status st = {0, 0};
	int seen_at_first = -1, nb = one_batch ? 1 : NW;

	memset(la, one_batch ? 9 : 7, BUF);
	atomic_store(&g_seen, 0);
	for (int i = 0; i < NW; i++)
		r[i] = (struct te_request){TE_WRITE, la + (size_t)i * SLICE, seg,
		                           (uint64_t)(uintptr_t)(lb + (size_t)i * SLICE), SLICE};
	for (int i = 0; i < nb; i++) {
		assert_int_equal(te_batch_alloc(a, (size_t)(NW / nb), &bid[i]), 0);
		assert_int_equal(te_batch_submit(a, bid[i], r + i, (size_t)(NW / nb)), 0);
	}
	for (uint64_t end = pd_now_ns() + 20000000000ull; pd_now_ns() < end; pd_sleep_ms(1)) {
		assert_int_equal(te_batch_status(a, bid[0], 0, &st), 0);
		if (st.status == TE_COMPLETED || st.status == TE_FAILED) {
			seen_at_first = atomic_load(&g_seen);
			break;
		}
	}
	print_message("%s: first WRITE confirmed after the target had seen %d of %d\n",
	              one_batch ? "one batch of 16" : "16 batches of one", seen_at_first, NW);
	assert_int_equal(st.status, TE_COMPLETED);
	for (int i = 0; i < NW; i++) /* the rest complete too */
		for (uint64_t end = pd_now_ns() + 20000000000ull;; pd_sleep_ms(1)) {
			int b = one_batch ? 0 : i;
			assert_int_equal(te_batch_status(a, bid[b], one_batch ? (size_t)i : 0, &st),
			                 0);
			if (st.status == TE_COMPLETED)
				break;
			assert_true(st.status != TE_FAILED && pd_now_ns() < end);
		}
	for (int i = 0; i < nb; i++)
		assert_int_equal(te_batch_free(a, bid[i]), 0);
	assert_int_equal(memcmp(la, lb, (size_t)NW * SLICE), 0);
	return seen_at_first;
}

static void test_slow_target_status(void **state)
{
	struct te_engine *a, *b;
	char *la = malloc(BUF), *lb = malloc(BUF);
	uint64_t seg;
	(void)state;

	setenv("MC_TCP_LANES_PER_PEER", "1", 1); /* every WRITE on one connection, in order */
	a = mk("slow-a");
	b = mk("slow-b");
	assert_int_equal(te_register(a, la, BUF, "cpu:0"), 0);
	assert_int_equal(te_register(b, lb, BUF, "cpu:0"), 0);
	assert_int_equal(te_open_segment(a, te_engine_name(b), &seg), 0);
	te_test_set_write_hook(slow_write);
	/* 2 on a quiet host (the target is inside the next WRITE's 30 ms when the first status is
	 * read); the bound leaves room for a host too loaded to run the initiator's reader for a
	 * while (8 seen at load 170). It fails what went wrong before: the server's old
	 * coalescing confirmed nothing before the queue ran dry (16 of 16); on a fresh lane (the
	 * first round) the sender sent all 16 in one call and a status that came early waited
	 * for the call's end (9-13 of 16). (A reader waiting with SO_RCVLOWAT for the statuses
	 * outstanding, unbounded in time, saw 3-4 of 16: within the bound, so not caught here.) */
	for (int k = 0; k < 2; k++) {
		int seen = slow_round(a, seg, la, lb, k == 1);
		assert_true(seen >= 1 && seen <= 8);
	}
	te_test_set_write_hook(NULL);
	te_engine_destroy(a);
	te_engine_destroy(b);
	unsetenv("MC_TCP_LANES_PER_PEER");
	free(la);
	free(lb);
}

int main(void)
{
	const struct CMUnitTest t[] = {
	    cmocka_unit_test(test_signals_v2),         cmocka_unit_test(test_signals_v1),
	    cmocka_unit_test(test_sigstop_initiator),  cmocka_unit_test(test_connect_deadline),
	    cmocka_unit_test(test_slow_target_status),
	};
	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1); /* loopback only */
	return cmocka_run_group_tests(t, NULL, NULL);
}
