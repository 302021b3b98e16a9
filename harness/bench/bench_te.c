/* SPDX-License-Identifier: Apache-2.0 */
/* bench_te: pdkv-bench on pdkv's transfer engine — the target (registers a patterned buffer,
 * waits for SIGINT/SIGTERM) and the initiator threads (transfer_engine_bench's batch loop). */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"
#include "te/te.h"
#include "te/te_inspect.h"
#include "te/te_rdma_stats.h"
#include "pd_meta_scheme.h"

struct bench_te {
	struct te_engine *eng;
	uint64_t seg;
	uint64_t rbase, rsize;
	char *local, *scratch; /* host memory, or GPU memory with --use_vram */
	uint64_t region;
	const struct bench_opts *o; /* set once local/scratch are allocated */
	bool lane;                  /* a window of an endpoint's engine and regions: owns neither */
	/* --buffers=N > 1: N allocations each of local, scratch and the target's (rv, addresses
	 * in the target); each is each bytes; local = lv[0], scratch = sv[0] */
	int nbuf;
	uint64_t each;
	char *lv[BENCH_MAX_BUFFERS], *sv[BENCH_MAX_BUFFERS];
	uint64_t rv[BENCH_MAX_BUFFERS];
};

/* idx > 0 (a scheme's further engines) with a metadata store: the name gets "-idx", so each
 * engine has its own keys; P2PHANDSHAKE names are ip:port already. */
static int make_engine(const struct bench_opts *o, int idx, struct te_engine **eng)
{
	char name[300];
	struct te_engine_opts eo = {o->metadata, o->local_name, o->protocol, o->device};
	int ret;
	if (idx > 0 && o->local_name && !pd_meta_is_p2p(o->metadata)) {
		snprintf(name, sizeof(name), "%s-%d", o->local_name, idx);
		eo.local_server_name = name;
	}
	ret = te_engine_create(&eo, eng);
	if (ret)
		fprintf(stderr,
		        "pdkv-bench: cannot start the transfer engine (metadata %s, "
		        "protocol %s): %s\n",
		        o->metadata, o->protocol ? o->protocol : "auto", te_strerror(ret));
	return ret;
}

/* --verify_written=N: a Mooncake initiator wrote [0, N) from memory it never wrote (zeros);
 * everything past it must still be the READ pattern. Host buffers only. */
static int verify_written(const struct bench_opts *o, const char *buf)
{
	uint64_t n = o->verify_written < o->buffer_size ? o->verify_written : o->buffer_size;
	uint64_t nonzero = 0, wrong;

	if (o->use_vram) {
		fprintf(stderr, "pdkv-bench: --verify_written needs host memory (no --use_vram)\n");
		return 1;
	}
	for (uint64_t i = 0; i < n; i++)
		nonzero += buf[i] != 0;
	wrong = bench_count_wrong(buf + n, n, o->buffer_size - n, 0);
	printf("Verify: %llu written bytes not zero, %llu bytes past them changed (of %llu)\n",
	       (unsigned long long)nonzero, (unsigned long long)wrong,
	       (unsigned long long)(o->buffer_size - n));
	return nonzero || wrong ? 1 : 0;
}

/* Frees v[0..n) of each bytes. */
static void mem_free_all(const struct bench_opts *o, char **v, int n, uint64_t each)
{
	for (int j = 0; j < n; j++)
		bench_mem_free(o, v[j], each);
}

/* The target's memory: one buffer of --buffer_size, or --buffers=N of buffer_size / N each
 * (*each bytes), holding the READ pattern (seed 0) an initiator with --check expects. */
static int target_mem(const struct bench_opts *o, char **v, int *n, uint64_t *each)
{
	char *h = NULL;
	int ret = 0;

	*n = o->buffers > 1 ? o->buffers : 1;
	*each = *n > 1 ? (o->buffer_size / (uint64_t)*n + 4095) & ~(uint64_t)4095 : o->buffer_size;
	for (int j = 0; j < *n; j++)
		if (!(v[j] = bench_mem_alloc(o, *each))) {
			fprintf(stderr, "pdkv-bench: cannot allocate %s%llu-byte buffer (%s)\n",
			        *n > 1 ? "another " : "a ", (unsigned long long)*each,
			        bench_mem_location(o));
			mem_free_all(o, v, j, *each);
			return 1;
		}
	if (o->use_vram && !(h = malloc(*each)))
		ret = 1;
	for (int j = 0; !ret && j < *n; j++) {
		bench_fill(o->use_vram ? h : v[j], (uint64_t)j * *each, *each, 0);
		if (o->use_vram)
			ret = bench_mem_put(o, v[j], h, *each);
	}
	free(h);
	if (ret) {
		fprintf(stderr, "pdkv-bench: cannot fill the target's GPU buffer\n");
		mem_free_all(o, v, *n, *each);
	}
	return ret;
}

int bench_te_target(const struct bench_opts *o, int sock_lfd, const char *sock_addr)
{
	struct bench_sock_srv srv = {sock_lfd, NULL, 0, 0};
	struct te_engine *eng = NULL;
	pthread_t st;
	bool st_started = false;
	char *v[BENCH_MAX_BUFFERS];
	uint64_t each;
	sigset_t ss;
	int sig = 0, ret, n;

	if (target_mem(o, v, &n, &each))
		return 1;
	if (make_engine(o, 0, &eng))
		goto out;
	for (int j = 0; j < n; j++)
		if ((ret = te_register(eng, v[j], each, bench_mem_location(o)))) {
			fprintf(stderr, "pdkv-bench: registering the buffer failed: %s\n",
			        te_strerror(ret));
			goto out;
		}
	srv.buf = v[0];
	srv.len = each;
	if (sock_lfd >= 0 && !pthread_create(&st, NULL, bench_sock_server, &srv))
		st_started = true;
	if (n > 1)
		printf("Transfer engine target started: segment %s (protocol %s, metadata %s, %d "
		       "buffers of %llu bytes at %s)\n",
		       te_engine_name(eng), te_engine_protocol(eng), o->metadata, n,
		       (unsigned long long)each, bench_mem_location(o));
	else
		printf("Transfer engine target started: segment %s (protocol %s, metadata %s, "
		       "buffer %llu bytes at %s)\n",
		       te_engine_name(eng), te_engine_protocol(eng), o->metadata,
		       (unsigned long long)each, bench_mem_location(o));
	if (st_started)
		printf("Socket baseline listening on %s (initiator: --baseline_server=%s)\n",
		       sock_addr, sock_addr);
	printf("Run the initiator with --segment_id=%s; stop this target with Ctrl-C.\n",
	       te_engine_name(eng));
	fflush(stdout);
	if (o->ready_file) {
		char *s =
		    pd_asprintf("%s\n%s\n", te_engine_name(eng), st_started ? sock_addr : "-");
		char *tmp = pd_asprintf("%s.tmp", o->ready_file);
		if (!s || !tmp || pd_write_file(tmp, s, strlen(s)) || rename(tmp, o->ready_file))
			fprintf(stderr, "pdkv-bench: cannot write %s\n", o->ready_file);
		free(s);
		free(tmp);
	}
	/* SIGINT/SIGTERM were blocked in main before any thread existed */
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	sigwait(&ss, &sig);
	printf("Target: %s received, removing metadata keys and exiting\n",
	       sig == SIGINT ? "SIGINT" : "SIGTERM");
	fflush(stdout);
	ret = 0;
	if (st_started) {
		__atomic_store_n(&srv.stop, 1, __ATOMIC_RELAXED);
		shutdown(sock_lfd, SHUT_RDWR);
		pthread_join(st, NULL);
	}
	te_engine_destroy(eng);
	ret = o->verify_written ? verify_written(o, v[0]) : 0;
	mem_free_all(o, v, n, each);
	return ret;
out:
	te_engine_destroy(eng);
	mem_free_all(o, v, n, each);
	return 1;
}

/* Registers the local buffers before opening the target (as Mooncake's bench): over
 * P2PHANDSHAKE the open sends our descriptor, which then lists them. */
int bench_te_endpoint(const struct bench_opts *o, uint64_t region, int idx, struct bench_te **out)
{
	struct bench_te *b = calloc(1, sizeof(*b));
	int ret;

	*out = NULL;
	if (!b)
		return 1;
	if (make_engine(o, idx, &b->eng))
		goto fail;
	b->region = region;
	b->o = o;
	b->nbuf = o->buffers > 1 ? o->buffers : 1;
	b->each = b->nbuf > 1 ? bench_buffer_each(o, region) : region;
	for (int j = 0; j < b->nbuf; j++) {
		b->lv[j] = bench_mem_alloc(o, b->each);
		b->sv[j] = bench_mem_alloc(o, b->each);
		if (!b->lv[j] || !b->sv[j] || bench_mem_zero(o, b->lv[j], b->each) ||
		    bench_mem_zero(o, b->sv[j], b->each)) {
			fprintf(stderr, "pdkv-bench: cannot allocate 2 x %d x %llu bytes (%s)\n",
			        b->nbuf, (unsigned long long)b->each, bench_mem_location(o));
			goto fail;
		}
		if ((ret = te_register(b->eng, b->lv[j], b->each, bench_mem_location(o))) ||
		    (ret = te_register(b->eng, b->sv[j], b->each, bench_mem_location(o)))) {
			fprintf(stderr, "pdkv-bench: registering local buffers failed: %s\n",
			        te_strerror(ret));
			goto fail;
		}
	}
	b->local = b->lv[0];
	b->scratch = b->sv[0];
	*out = b;
	return 0;
fail:
	bench_te_fini(b);
	return 1;
}

/* --buffers=N: the first N of segment's nbuffers buffers, each at least each bytes. */
static int open_buffers(struct bench_te *b, const char *segment, int nbuffers, uint64_t each)
{
	struct te_buffer_view buf;

	if (nbuffers < b->nbuf) {
		fprintf(stderr,
		        "pdkv-bench: --buffers=%d: segment %s has %d registered buffer%s; start "
		        "its target with --buffers=%d\n",
		        b->nbuf, segment, nbuffers, nbuffers == 1 ? "" : "s", b->nbuf);
		return 1;
	}
	for (int j = 0; j < b->nbuf; j++) {
		if (te_inspect_buffer(b->eng, segment, j, &buf))
			return 1;
		if (buf.length < each) {
			fprintf(stderr,
			        "pdkv-bench: --buffers=%d: buffer %d of %s has %llu bytes, %llu "
			        "needed; start the target with --buffer_size=%llu or more\n",
			        b->nbuf, j, segment, (unsigned long long)buf.length,
			        (unsigned long long)each,
			        (unsigned long long)each * (uint64_t)b->nbuf);
			return 1;
		}
		b->rv[j] = buf.addr;
	}
	return 0;
}

/* Opens segment on b's engine: its first buffer, which must hold `need` bytes (--buffers=N:
 * its first N buffers, each N-th of it). */
static int open_target(struct bench_te *b, const char *segment, uint64_t need)
{
	struct te_segment_view v;
	struct te_buffer_view buf;
	int ret = te_open_segment(b->eng, segment, &b->seg);
	if (!ret)
		ret = te_inspect_segment(b->eng, segment, &v);
	if (ret) {
		fprintf(stderr, "pdkv-bench: cannot open segment \"%s\" via %s: %s\n", segment,
		        b->o ? b->o->metadata : "-", te_strerror(ret));
		return 1;
	}
	if (v.nbuffers < 1 || te_inspect_buffer(b->eng, segment, 0, &buf)) {
		fprintf(stderr, "pdkv-bench: segment %s has no registered buffer\n", segment);
		return 1;
	}
	b->rbase = buf.addr;
	b->rsize = buf.length;
	if (b->nbuf > 1)
		return open_buffers(b, segment, v.nbuffers, bench_buffer_each(b->o, need));
	if (need > b->rsize) {
		fprintf(stderr,
		        "pdkv-bench: block x batch x threads = %llu bytes does not fit the "
		        "buffer of %s (%llu bytes); start the target with a larger "
		        "--buffer_size\n",
		        (unsigned long long)need, segment, (unsigned long long)b->rsize);
		return 1;
	}
	return 0;
}

int bench_te_init(const struct bench_opts *o, uint64_t max_region, struct bench_te **out)
{
	if (bench_te_endpoint(o, max_region, 0, out))
		return 1;
	if (open_target(*out, o->segment, max_region)) {
		bench_te_fini(*out);
		*out = NULL;
		return 1;
	}
	return 0;
}

int bench_te_lane(struct bench_te *ep, const char *segment, uint64_t roff, uint64_t loff,
                  uint64_t len, struct bench_te **out)
{
	struct bench_te *l = calloc(1, sizeof(*l));
	*out = NULL;
	if (!l)
		return 1;
	l->lane = true;
	l->eng = ep->eng;
	l->o = ep->o;
	if (loff + len > ep->region || open_target(l, segment, roff + len)) {
		if (loff + len > ep->region)
			fprintf(stderr, "pdkv-bench: internal: lane past its engine's region\n");
		free(l);
		return 1;
	}
	l->rbase += roff;
	l->rsize = len;
	l->local = ep->local + loff;
	l->scratch = ep->scratch + loff;
	l->region = len;
	*out = l;
	return 0;
}

void bench_te_fini(struct bench_te *b)
{
	if (!b)
		return;
	if (b->lane) {
		free(b);
		return;
	}
	te_engine_destroy(b->eng);
	if (b->o) {
		mem_free_all(b->o, b->lv, b->nbuf, b->each);
		mem_free_all(b->o, b->sv, b->nbuf, b->each);
	}
	free(b);
}

const char *bench_te_local_name(struct bench_te *b)
{
	return te_engine_name(b->eng);
}

uint64_t bench_te_remote_size(struct bench_te *b)
{
	return b->rsize;
}

/* ---------------------------------------------------------------- the engine back-end */
struct te_thr {
	/* the last batch's time of each opcode ([1]: WRITE): sets the polling interval. Per
	 * opcode: with --check a timed WRITE batch follows an untimed READ-back, and a READ's
	 * time made the naps around a WRITE's end up to 1 ms too long */
	uint64_t est_ns[2];
	long slow_pct; /* PDKV_TEST_SLOWDOWN_PCT: test only */
};

static int te_thread_init(struct bench_thread *th)
{
	struct bench_te *b = th->ctx;
	pd_fine_naps(); /* the default 50 us timer slack would dominate the short polling naps */
	th->local = b->local;
	th->scratch = b->scratch;
	th->nbuf = b->nbuf;
	th->lv = b->lv;
	th->sv = b->sv;
	th->vram = th->o->use_vram;
	th->priv = calloc(1, sizeof(struct te_thr));
	if (!th->priv)
		return TE_ERR_MEMORY;
	/* PDKV_TEST_SLOWDOWN_PCT (test only, never set in production): every batch of pdkv's
	 * engine back-end takes that many percent longer (a sleep inside its timed region), and
	 * nothing else does (not the socket baseline): the slowdown of pdkv alone that the
	 * regression gate must catch (harness/report/tests/test_verdict_noise.sh). 1..1000;
	 * anything else is 0. */
	{
		int64_t pct; /* 1..1000; unset or bad (warned): 0 */

		pd_env_int("PDKV_TEST_SLOWDOWN_PCT", &pct);
		((struct te_thr *)th->priv)->slow_pct = (long)pct;
	}
	return 0;
}

static void te_thread_fini(struct bench_thread *th)
{
	free(th->priv);
}

/* Submits one batch and polls every task to its end; returns the batch's transfer time. */
static int te_batch(struct bench_thread *th, int opcode, char *lbase, bool record, double *secs)
{
	const struct bench_opts *o = th->o;
	struct bench_te *b = th->ctx;
	struct te_thr *p = th->priv;
	uint64_t n = o->batch, bid, t0, left;
	struct te_request reqs[1024], *r = reqs;
	struct timespec nap = {0, 20000};
	long backoff = 0;
	int ret, wr = opcode == TE_WRITE;

	if (n > 1024) {
		r = malloc(n * sizeof(*r));
		if (!r)
			return TE_ERR_MEMORY;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = i * o->threads + (uint64_t)th->t, off = th->block * k;
		r[i].opcode = opcode;
		r[i].source = lbase + off;
		r[i].target_id = b->seg;
		r[i].target_offset = b->rbase + off;
		r[i].length = th->block;
		if (b->nbuf > 1) { /* --buffers: block k in allocation k mod N, on both sides */
			r[i].source = bench_block(th, lbase == th->scratch, i);
			r[i].target_offset =
			    b->rv[k % (uint64_t)b->nbuf] + k / (uint64_t)b->nbuf * th->block;
		}
	}
	ret = te_batch_alloc(b->eng, n, &bid);
	if (ret)
		goto out;
	t0 = pd_now_ns();
	ret = te_batch_submit(b->eng, bid, r, n);
	if (ret) {
		te_batch_free(b->eng, bid);
		goto out;
	}
	/* Poll in submission order (lanes finish nearly FIFO), one status call per finished task
	 * plus one per pass. Between passes, real sleeps (the RDMA tier's Soft-RoCE needs the
	 * core): while the last batch's time has not passed, 1/8 of what is left of it (the naps
	 * shrink towards its end); then from 10 us, 1.5x longer per pass without progress, at
	 * most 1 ms. Fewer wake-ups than fixed naps of 1/64 batch, no later an end seen. */
	left = 0;
	while (left < n) {
		struct te_task_status st;
		uint64_t el;
		long ns;
		if (!te_batch_status(b->eng, bid, left, &st) &&
		    (st.status == TE_COMPLETED || st.status == TE_FAILED)) {
			if (st.status == TE_FAILED)
				th->failed++;
			if (record)
				bench_lat_add(&th->lat, (double)(pd_now_ns() - t0) / 1e3);
			left++;
			backoff = 0;
			continue;
		}
		if (o->latency) { /* one request in flight: spin as ib_*_lat does, yield to rxe */
			sched_yield();
			continue;
		}
		el = pd_now_ns() - t0;
		if (el < p->est_ns[wr]) {
			ns = (long)((p->est_ns[wr] - el) / 8);
		} else {
			backoff = !backoff ? 10000 : backoff < 666666 ? backoff * 3 / 2 : 1000000;
			ns = backoff;
		}
		nap.tv_nsec = ns < 10000 ? 10000 : ns > 1000000 ? 1000000 : ns;
		nanosleep(&nap, NULL);
	}
	p->est_ns[wr] = pd_now_ns() - t0;
	if (p->slow_pct) { /* PDKV_TEST_SLOWDOWN_PCT: test only */
		uint64_t ns = p->est_ns[wr] * (uint64_t)p->slow_pct / 100;
		nanosleep(&(struct timespec){(time_t)(ns / 1000000000), (long)(ns % 1000000000)},
		          NULL);
	}
	*secs = (double)(pd_now_ns() - t0) / 1e9;
	ret = te_batch_free(b->eng, bid);
out:
	if (r != reqs)
		free(r);
	return ret;
}

const struct bench_backend bench_te_backend = {
    .kind = "pdkv",
    .err_memory = TE_ERR_MEMORY,
    .thread_init = te_thread_init,
    .thread_fini = te_thread_fini,
    .batch = te_batch,
};

int bench_te_devsnap(struct bench_te *b, struct te_rdma_dev_stat *out, int max)
{
	return b ? te_rdma_device_stats(b->eng, out, max) : 0;
}

int bench_te_row(struct bench_te *b, const struct bench_opts *o, uint64_t block,
                 struct bench_row *row)
{
	struct te_rdma_dev_stat s0[BENCH_MAX_DEVS], s1[BENCH_MAX_DEVS];
	int nd = bench_te_devsnap(b, s0, BENCH_MAX_DEVS);
	int err = bench_run_row(&bench_te_backend, b, o, block, row);
	if (nd > 0 && bench_te_devsnap(b, s1, BENCH_MAX_DEVS) == nd)
		bench_devs_share(row, s0, s1, nd);
	if (err)
		fprintf(stderr, "pdkv-bench: transfer error: %s\n", te_strerror(err));
	return err ? 1 : 0;
}
