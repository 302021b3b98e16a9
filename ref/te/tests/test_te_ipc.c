/* SPDX-License-Identifier: Apache-2.0 */
/* test_te_ipc: the nvlink_intra transport between two real processes on one GPU — the target
 * (a forked child) exports cuda:0 buffers by CUDA IPC, the initiator copies device to device;
 * a second child that plays another host (PDKV_IPC_HOST_ID) gets the TCP staging path. WRITE
 * then READ back, READ of the target's own pattern, host<->GPU, host memory over the fallback,
 * batches; every byte checked. Exits 77 (SKIP) without a CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pd_util.h"
#include "te/te.h"
#include "te/te_gpu.h"
#include "te/te_inspect.h"
#include "te_testpat.h"

#define BUFLEN (80u << 20)

struct peer { /* a target child, as the initiator knows it */
	pid_t pid;
	int done_fd; /* closing it tells the child to exit */
	char seg[256];
	uint64_t gpu, cpu; /* its buffers' addresses (BUFLEN each) */
	uint64_t id;
	char *sgpu, *scpu; /* what the initiator wrote there: the bytes they must hold */
};

static struct peer same, other;
static struct te_engine *E;
static char *lgpu, *lcpu, *lgpu2; /* local: cuda:0 x2, host */
static char *want, *got;

static struct te_engine *mk(void)
{
	struct te_engine_opts o = {"P2PHANDSHAKE", "ipc-test", "nvlink_intra", NULL};
	struct te_engine *e = NULL;
	return te_engine_create(&o, &e) ? NULL : e;
}

/* The child: registers a cuda:0 and a host buffer holding pattern 1000, reports
 * "segment gpu cpu" (or "SKIP reason") on out, serves until done_fd closes. */
static void child(int out, int done, const char *host_id)
{
	char why[256] = "", line[512];
	struct te_engine *e;
	char *g = NULL, *c = malloc(BUFLEN), *h = malloc(BUFLEN);

	if (host_id)
		setenv("PDKV_IPC_HOST_ID", host_id, 1);
	if (te_gpu_device_count(why, sizeof(why)) <= 0) {
		snprintf(line, sizeof(line), "SKIP %s\n", why);
		pd_write_full(out, line, strlen(line));
		_exit(0);
	}
	e = mk();
	if (!e || !c || !h || te_gpu_malloc(0, BUFLEN, (void **)&g))
		_exit(1);
	te_testpat_fill(h, BUFLEN, 1000);
	memcpy(c, h, BUFLEN);
	if (te_gpu_copy(0, g, h, BUFLEN) || te_register(e, g, BUFLEN, "cuda:0") ||
	    te_register(e, c, BUFLEN, "cpu:0"))
		_exit(1);
	snprintf(line, sizeof(line), "%s %llu %llu\n", te_engine_name(e),
	         (unsigned long long)(uintptr_t)g, (unsigned long long)(uintptr_t)c);
	pd_write_full(out, line, strlen(line));
	while (read(done, line, 1) > 0)
		;
	te_engine_destroy(e);
	te_gpu_free(g);
	_exit(0);
}

/* Forks a target; 0, 77 (no GPU, reason printed) or -1. Must run before this process uses
 * CUDA: a forked child cannot use the parent's CUDA state. */
static int spawn(struct peer *p, const char *host_id)
{
	int o[2], d[2];
	char line[512] = "";
	unsigned long long g, c;
	ssize_t n, k = 0;

	if (pipe(o) || pipe(d))
		return -1;
	p->pid = fork();
	if (p->pid == 0) {
		close(o[0]);
		close(d[1]);
		if (p != &same && same.pid > 0) /* else the first target never sees its EOF */
			close(same.done_fd);
		child(o[1], d[0], host_id);
	}
	close(o[1]);
	close(d[0]);
	p->done_fd = d[1];
	while (k < (ssize_t)sizeof(line) - 1 && (n = read(o[0], line + k, 1)) == 1 &&
	       line[k++] != '\n')
		;
	close(o[0]);
	if (!strncmp(line, "SKIP", 4)) {
		printf("SKIP: no CUDA device: %s", line + 5);
		return 77;
	}
	if (sscanf(line, "%255s %llu %llu", p->seg, &g, &c) != 3)
		return -1;
	p->gpu = g;
	p->cpu = c;
	p->sgpu = malloc(BUFLEN);
	p->scpu = malloc(BUFLEN);
	if (!p->sgpu || !p->scpu)
		return -1;
	te_testpat_fill(p->sgpu, BUFLEN, 1000);
	memcpy(p->scpu, p->sgpu, BUFLEN);
	return 0;
}

static void reap(struct peer *p)
{
	int st = 0;
	if (p->pid <= 0)
		return;
	close(p->done_fd);
	waitpid(p->pid, &st, 0);
	free(p->sgpu);
	free(p->scpu);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "target %d ended with status 0x%x\n", (int)p->pid, st);
}

static void put(char *mem, const char *src, size_t len)
{
	assert_int_equal(te_gpu_copy(0, mem, src, len), 0);
}

static void get(char *dst, const char *mem, size_t len)
{
	assert_int_equal(te_gpu_copy(0, dst, mem, len), 0);
}

static void xfer(const struct peer *p, int op, char *local, uint64_t raddr, size_t len)
{
	int r = te_transfer_sync(E, op, p->seg, local, raddr, len, 30000);
	if (r)
		fail_msg("%s %zu B with %s: %s", op == TE_WRITE ? "WRITE" : "READ", len, p->seg,
		         te_strerror(r));
}

static void check(const char *what, size_t len)
{
	size_t bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += got[i] != want[i];
	if (bad)
		fail_msg("%s, %zu B: %zu wrong bytes", what, len, bad);
}

/* The shadow of the remote buffer at r (its start). */
static char *shadow(const struct peer *p, uint64_t r)
{
	return r >= p->gpu && r < p->gpu + BUFLEN ? p->sgpu + (r - p->gpu) : p->scpu + (r - p->cpu);
}

/* WRITE len bytes from l+lo to remote r+ro, READ them back into lgpu2 (a zeroed region), and
 * the bytes on both sides of the range, which must be as they were. */
static void roundtrip(const struct peer *p, char *l, bool lvram, uint64_t r, size_t lo, size_t ro,
                      size_t len, uint64_t seed)
{
	char *sh = shadow(p, r);

	te_testpat_fill(want, len, seed);
	if (lvram)
		put(l + lo, want, len);
	else
		memcpy(l + lo, want, len);
	xfer(p, TE_WRITE, l + lo, r + ro, len);
	memset(got, 0, len);
	put(lgpu2 + 3, got, len);
	xfer(p, TE_READ, lgpu2 + 3, r + ro, len);
	get(got, lgpu2 + 3, len);
	check("WRITE then READ back", len);
	memcpy(sh + ro, want, len);
	xfer(p, TE_READ, lgpu2, r + ro + len, 4096);
	get(got, lgpu2, 4096);
	if (memcmp(got, sh + ro + len, 4096))
		fail_msg("the bytes after the WRITTEN range of %zu B changed", len);
	xfer(p, TE_READ, lgpu2, r + ro - 1, 1);
	get(got, lgpu2, 1);
	assert_int_equal(got[0], sh[ro - 1]);
}

static const size_t sizes[] = {1, 4095, 65536 + 7, (2u << 20) + 1, (9u << 20) + 5, 64u << 20};

static void sweep(const struct peer *p, char *l, bool lvram, uint64_t r)
{
	for (size_t k = 0; k < PD_ARRAY_SIZE(sizes); k++)
		roundtrip(p, l, lvram, r, 1 + k * 3, 5 + k * 11, sizes[k], 2 * k + 1);
}

static void test_paths(void **state)
{
	(void)state;
	assert_string_equal(te_engine_protocol(E), "nvlink_intra");
	assert_string_equal(te_inspect_peer_path(E, same.seg), "cuda-ipc");
	assert_string_equal(te_inspect_peer_path(E, other.seg), "tcp");
}

static void test_target_pattern(void **state)
{
	(void)state;
	te_testpat_fill(want, BUFLEN, 1000);
	xfer(&same, TE_READ, lgpu, same.gpu, BUFLEN);
	get(got, lgpu, BUFLEN);
	check("READ of the target's cuda:0 pattern over CUDA IPC", BUFLEN);
	xfer(&same, TE_READ, lcpu, same.gpu + 7, 1u << 20);
	if (memcmp(lcpu, want + 7, 1u << 20))
		fail_msg("READ of cuda:0 over CUDA IPC into host memory differs");
}

static void test_ipc_gpu_to_gpu(void **state)
{
	(void)state;
	sweep(&same, lgpu, true, same.gpu);
}

static void test_ipc_host_to_gpu(void **state)
{
	(void)state;
	sweep(&same, lcpu, false, same.gpu);
}

/* the target's host buffer has no IPC handle: the same peer reaches it over TCP */
static void test_host_buffer_over_tcp(void **state)
{
	(void)state;
	sweep(&same, lgpu, true, same.cpu);
}

static void test_other_host_over_tcp(void **state)
{
	(void)state;
	sweep(&other, lgpu, true, other.gpu);
	sweep(&other, lcpu, false, other.gpu);
}

/* 128 unaligned 64 KiB+13 blocks in one batch, IPC and TCP peers mixed in one submit */
static void test_batch(void **state)
{
	enum { N = 128 };
	const size_t blk = 65536 + 13;
	struct te_request rq[N];
	uint64_t b;
	(void)state;

	te_testpat_fill(want, N * blk, 77);
	put(lgpu + 3, want, N * blk);
	for (int i = 0; i < N; i++) {
		const struct peer *p = i % 3 ? &same : &other;
		rq[i] = (struct te_request){TE_WRITE, lgpu + 3 + i * blk, p->id,
		                            p->gpu + 9 + (uint64_t)i * blk, blk};
	}
	assert_int_equal(te_batch_alloc(E, 2 * N, &b), 0);
	assert_int_equal(te_batch_submit(E, b, rq, N), 0);
	for (int i = 0; i < N; i++) {
		rq[i].opcode = TE_READ;
		rq[i].source = lgpu2 + 3 + i * blk;
	}
	for (int i = 0; i < N; i++) { /* every WRITE ended before the READs go */
		struct te_task_status st = {0, 0};
		uint64_t end = pd_now_ns() + 30000000000ull;
		while (pd_now_ns() < end && !te_batch_status(E, b, (size_t)i, &st) &&
		       st.status != TE_COMPLETED && st.status != TE_FAILED)
			pd_sleep_ms(1);
		assert_int_equal(st.status, TE_COMPLETED);
	}
	assert_int_equal(te_batch_submit(E, b, rq, N), 0);
	for (int i = 0; i < N; i++) {
		struct te_task_status st = {0, 0};
		uint64_t end = pd_now_ns() + 30000000000ull;
		while (pd_now_ns() < end && !te_batch_status(E, b, (size_t)(N + i), &st) &&
		       st.status != TE_COMPLETED && st.status != TE_FAILED)
			pd_sleep_ms(1);
		assert_int_equal(st.status, TE_COMPLETED);
		assert_int_equal(st.transferred_bytes, blk);
	}
	assert_int_equal(te_batch_free(E, b), 0);
	get(got, lgpu2 + 3, N * blk);
	check("batch of 128 x 64 KiB+13 (IPC and TCP mixed)", N * blk);
	for (int i = 0; i < N; i++)
		memcpy((i % 3 ? &same : &other)->sgpu + 9 + i * blk, want + i * blk, blk);
}

/* out of range on the IPC path is refused at submit, as on every path */
static void test_out_of_range(void **state)
{
	(void)state;
	assert_int_equal(
	    te_transfer_sync(E, TE_WRITE, same.seg, lgpu, same.gpu + BUFLEN - 10, 11, 5000),
	    TE_ERR_OUT_OF_RANGE);
}

static int setup(void **state)
{
	(void)state;
	E = mk();
	want = malloc(BUFLEN);
	got = malloc(BUFLEN);
	lcpu = malloc(BUFLEN);
	if (!E || !want || !got || !lcpu || te_gpu_malloc(0, BUFLEN, (void **)&lgpu) ||
	    te_gpu_malloc(0, BUFLEN, (void **)&lgpu2) || te_register(E, lgpu, BUFLEN, "cuda:0") ||
	    te_register(E, lgpu2, BUFLEN, "cuda:0") || te_register(E, lcpu, BUFLEN, "cpu:0"))
		return -1;
	if (te_open_segment(E, same.seg, &same.id) || te_open_segment(E, other.seg, &other.id))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	te_engine_destroy(E);
	te_gpu_free(lgpu);
	te_gpu_free(lgpu2);
	free(lcpu);
	free(want);
	free(got);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_target_pattern),
	    cmocka_unit_test(test_ipc_gpu_to_gpu),
	    cmocka_unit_test(test_ipc_host_to_gpu),
	    cmocka_unit_test(test_host_buffer_over_tcp),
	    cmocka_unit_test(test_other_host_over_tcp),
	    cmocka_unit_test(test_batch),
	    cmocka_unit_test(test_out_of_range),
	};
	int rc;

	setenv("MC_TCP_BIND_ADDRESS", "127.0.0.1", 1);
	signal(SIGPIPE, SIG_IGN);
	rc = spawn(&same, NULL);
	if (!rc)
		rc = spawn(&other, "another-host");
	if (rc) {
		reap(&same);
		reap(&other);
		if (rc != 77)
			fprintf(stderr, "FAIL: a target did not come up\n");
		return rc == 77 ? 77 : 1;
	}
	rc = cmocka_run_group_tests(tests, setup, teardown);
	reap(&same);
	reap(&other);
	return rc;
}
