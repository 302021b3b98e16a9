/* bench_te: pdkv-bench on pdkv's transfer engine — the target (registers a patterned buffer,
 * waits for SIGINT/SIGTERM) and the initiator threads (transfer_engine_bench's batch loop). */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_util.h"
#include "te/te.h"
#include "te/te_inspect.h"

struct bench_te {
	struct te_engine *eng;
	uint64_t seg;
	uint64_t rbase, rsize;
	char *local, *scratch; /* host memory, or GPU memory with --use_vram */
	uint64_t region;
	const struct bench_opts *o; /* set once local/scratch are allocated */
};

static int make_engine(const struct bench_opts *o, struct te_engine **eng)
{
	struct te_engine_opts eo = {o->metadata, o->local_name, o->protocol, o->device};
	int ret = te_engine_create(&eo, eng);
	if (ret)
		fprintf(stderr,
		        "pdkv-bench: cannot start the transfer engine (metadata %s, "
		        "protocol %s): %s\n",
		        o->metadata, o->protocol ? o->protocol : "auto", te_strerror(ret));
	return ret;
}

int bench_te_target(const struct bench_opts *o, int sock_lfd, const char *sock_addr)
{
	struct bench_sock_srv srv = {sock_lfd, NULL, 0, 0};
	struct te_engine *eng = NULL;
	pthread_t st;
	bool st_started = false;
	char *buf;
	sigset_t ss;
	int sig = 0, ret;

	buf = bench_mem_alloc(o, o->buffer_size);
	if (!buf) {
		fprintf(stderr, "pdkv-bench: cannot allocate a %llu-byte buffer (%s)\n",
		        (unsigned long long)o->buffer_size, bench_mem_location(o));
		return 1;
	}
	/* the READ pattern (seed 0): what an initiator with --check expects to read */
	if (!o->use_vram) {
		bench_fill(buf, 0, o->buffer_size, 0);
	} else {
		char *h = malloc(o->buffer_size);
		ret = h ? 0 : 1;
		if (h) {
			bench_fill(h, 0, o->buffer_size, 0);
			ret = bench_mem_put(o, buf, h, o->buffer_size);
		}
		free(h);
		if (ret) {
			fprintf(stderr, "pdkv-bench: cannot fill the target's GPU buffer\n");
			goto out;
		}
	}
	if (make_engine(o, &eng))
		goto out;
	ret = te_register(eng, buf, o->buffer_size, bench_mem_location(o));
	if (ret) {
		fprintf(stderr, "pdkv-bench: registering the buffer failed: %s\n",
		        te_strerror(ret));
		goto out;
	}
	srv.buf = buf;
	srv.len = o->buffer_size;
	if (sock_lfd >= 0 && !pthread_create(&st, NULL, bench_sock_server, &srv))
		st_started = true;
	printf("Transfer engine target started: segment %s (protocol %s, metadata %s, buffer %llu "
	       "bytes at %s)\n",
	       te_engine_name(eng), te_engine_protocol(eng), o->metadata,
	       (unsigned long long)o->buffer_size, bench_mem_location(o));
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
		srv.stop = 1;
		shutdown(sock_lfd, SHUT_RDWR);
		pthread_join(st, NULL);
	}
	te_engine_destroy(eng);
	bench_mem_free(o, buf, o->buffer_size);
	return 0;
out:
	te_engine_destroy(eng);
	bench_mem_free(o, buf, o->buffer_size);
	return 1;
}

int bench_te_init(const struct bench_opts *o, uint64_t max_region, struct bench_te **out)
{
	struct bench_te *b = calloc(1, sizeof(*b));
	struct te_segment_view v;
	struct te_buffer_view buf;
	int ret;

	*out = NULL;
	if (!b)
		return 1;
	if (make_engine(o, &b->eng))
		goto fail;
	ret = te_open_segment(b->eng, o->segment, &b->seg);
	if (!ret)
		ret = te_inspect_segment(b->eng, o->segment, &v);
	if (ret) {
		fprintf(stderr, "pdkv-bench: cannot open segment \"%s\" via %s: %s\n", o->segment,
		        o->metadata, te_strerror(ret));
		goto fail;
	}
	if (v.nbuffers < 1 || te_inspect_buffer(b->eng, o->segment, 0, &buf)) {
		fprintf(stderr, "pdkv-bench: segment %s has no registered buffer\n", o->segment);
		goto fail;
	}
	b->rbase = buf.addr;
	b->rsize = buf.length;
	if (max_region > b->rsize) {
		fprintf(stderr,
		        "pdkv-bench: block x batch x threads = %llu bytes does not fit the "
		        "target's buffer (%llu bytes); start the target with a larger "
		        "--buffer_size\n",
		        (unsigned long long)max_region, (unsigned long long)b->rsize);
		goto fail;
	}
	b->region = max_region;
	b->o = o;
	b->local = bench_mem_alloc(o, max_region);
	b->scratch = bench_mem_alloc(o, max_region);
	if (!b->local || !b->scratch || bench_mem_zero(o, b->local, max_region) ||
	    bench_mem_zero(o, b->scratch, max_region)) {
		fprintf(stderr, "pdkv-bench: cannot allocate 2 x %llu bytes (%s)\n",
		        (unsigned long long)max_region, bench_mem_location(o));
		goto fail;
	}
	if ((ret = te_register(b->eng, b->local, max_region, bench_mem_location(o))) ||
	    (ret = te_register(b->eng, b->scratch, max_region, bench_mem_location(o)))) {
		fprintf(stderr, "pdkv-bench: registering local buffers failed: %s\n",
		        te_strerror(ret));
		goto fail;
	}
	*out = b;
	return 0;
fail:
	bench_te_fini(b);
	return 1;
}

void bench_te_fini(struct bench_te *b)
{
	if (!b)
		return;
	te_engine_destroy(b->eng);
	if (b->o) {
		bench_mem_free(b->o, b->local, b->region);
		bench_mem_free(b->o, b->scratch, b->region);
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

/* ---------------------------------------------------------------- initiator threads */
struct thr {
	struct bench_te *b;
	const struct bench_opts *o;
	pthread_barrier_t *bar;
	int t;
	uint64_t block;
	uint64_t est_ns; /* last batch's time: sets the polling interval */
	/* results */
	double xfer_s;
	uint64_t batches, transfers, wrong, failed;
	struct bench_lat lat;
	int err;
	char *tmp; /* --use_vram: host bounce buffer of one block for --check */
};

/* --check's pattern fill / zero / count, through th->tmp when the memory is on the GPU */
static void xfill(struct thr *th, char *dst, uint64_t off, uint64_t seed)
{
	if (!th->o->use_vram) {
		bench_fill(dst, off, th->block, seed);
		return;
	}
	bench_fill(th->tmp, off, th->block, seed);
	if (bench_mem_put(th->o, dst, th->tmp, th->block) && !th->err)
		th->err = TE_ERR_MEMORY;
}

static void xzero(struct thr *th, char *dst)
{
	if (bench_mem_zero(th->o, dst, th->block) && !th->err)
		th->err = TE_ERR_MEMORY;
}

static uint64_t xcount(struct thr *th, const char *p, uint64_t off, uint64_t seed)
{
	if (!th->o->use_vram)
		return bench_count_wrong(p, off, th->block, seed);
	if (bench_mem_get(th->o, th->tmp, p, th->block))
		return th->block;
	return bench_count_wrong(th->tmp, off, th->block, seed);
}

/* Submits one batch and polls every task to its end; returns the batch's transfer time. */
static int run_batch(struct thr *th, int opcode, char *lbase, bool scratch, bool record,
                     double *secs)
{
	const struct bench_opts *o = th->o;
	struct bench_te *b = th->b;
	uint64_t n = o->batch, bid, t0, left;
	struct te_request reqs[1024], *r = reqs;
	struct timespec nap = {0, 20000};
	long backoff = 0;
	int ret;

	if (n > 1024) {
		r = malloc(n * sizeof(*r));
		if (!r)
			return TE_ERR_MEMORY;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = th->block * (i * o->threads + (uint64_t)th->t);
		r[i].opcode = opcode;
		r[i].source =
		    scratch ? lbase + th->block * (i * o->threads + (uint64_t)th->t) : lbase + off;
		r[i].target_id = b->seg;
		r[i].target_offset = b->rbase + off;
		r[i].length = th->block;
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
		el = pd_now_ns() - t0;
		if (el < th->est_ns) {
			ns = (long)((th->est_ns - el) / 8);
		} else {
			backoff = !backoff ? 10000 : backoff < 666666 ? backoff * 3 / 2 : 1000000;
			ns = backoff;
		}
		nap.tv_nsec = ns < 10000 ? 10000 : ns > 1000000 ? 1000000 : ns;
		nanosleep(&nap, NULL);
	}
	th->est_ns = pd_now_ns() - t0;
	*secs = (double)(pd_now_ns() - t0) / 1e9;
	ret = te_batch_free(b->eng, bid);
out:
	if (r != reqs)
		free(r);
	return ret;
}

static void *thr_main(void *arg)
{
	struct thr *th = arg;
	const struct bench_opts *o = th->o;
	struct bench_te *b = th->b;
	uint64_t end, iter = 0;
	double s;

	/* the default 50 us timer slack would dominate the short polling naps */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	if (o->check && o->use_vram && !(th->tmp = malloc(th->block))) {
		th->err = TE_ERR_MEMORY;
		pthread_barrier_wait(th->bar);
		return NULL;
	}
	if (o->check && o->op == TE_READ) {
		/* (re)write the target's READ pattern over our region first, untimed, so a
		 * target that earlier initiators wrote to still checks clean */
		for (uint64_t i = 0; i < o->batch; i++) {
			uint64_t off = th->block * (i * o->threads + (uint64_t)th->t);
			xfill(th, b->local + off, off, 0);
		}
		if (!th->err)
			th->err = run_batch(th, TE_WRITE, b->local, false, false, &s);
	}
	/* warm-up batch: connections and first-touch are not measured */
	if (!th->err)
		th->err = run_batch(th, o->op, b->local, false, false, &s);
	pthread_barrier_wait(th->bar);
	if (th->err)
		goto out;
	th->failed = 0;
	end = pd_now_ns() + (uint64_t)(o->duration * 1e9);
	while (pd_now_ns() < end) {
		iter++;
		if (o->check) {
			for (uint64_t i = 0; i < o->batch; i++) {
				uint64_t off = th->block * (i * o->threads + (uint64_t)th->t);
				if (o->op == TE_WRITE)
					xfill(th, b->local + off, off, iter);
				else
					xzero(th, b->local + off);
			}
			if (th->err)
				break;
		}
		th->err = run_batch(th, o->op, b->local, false, true, &s);
		if (th->err)
			break;
		th->xfer_s += s;
		th->batches++;
		th->transfers += o->batch;
		if (!o->check)
			continue;
		if (o->op == TE_WRITE) {
			/* read the region back into scratch (not timed) and compare */
			th->err = run_batch(th, TE_READ, b->scratch, true, false, &s);
			if (th->err)
				break;
		}
		for (uint64_t i = 0; i < o->batch; i++) {
			uint64_t off = th->block * (i * o->threads + (uint64_t)th->t);
			const char *p = o->op == TE_WRITE ? b->scratch + off : b->local + off;
			th->wrong += xcount(th, p, off, o->op == TE_WRITE ? iter : 0);
		}
	}
out:
	free(th->tmp);
	return NULL;
}

int bench_te_row(struct bench_te *b, const struct bench_opts *o, uint64_t block,
                 struct bench_row *row)
{
	struct thr th[BENCH_MAX_THREADS];
	pthread_t tid[BENCH_MAX_THREADS];
	pthread_barrier_t bar;
	struct bench_lat all = {0};
	uint64_t t0;
	int err = 0;

	memset(th, 0, sizeof(th));
	memset(row, 0, sizeof(*row));
	row->kind = "pdkv";
	row->op = o->op;
	row->block = block;
	row->batch = o->batch;
	row->threads = o->threads;
	pthread_barrier_init(&bar, NULL, (unsigned)o->threads);
	t0 = pd_now_ns();
	for (uint64_t t = 0; t < o->threads; t++) {
		th[t] = (struct thr){.b = b, .o = o, .bar = &bar, .t = (int)t, .block = block};
		if (pthread_create(&tid[t], NULL, thr_main, &th[t])) {
			fprintf(stderr, "pdkv-bench: cannot start thread %llu\n",
			        (unsigned long long)t);
			exit(1);
		}
	}
	for (uint64_t t = 0; t < o->threads; t++) {
		pthread_join(tid[t], NULL);
		if (th[t].err && !err)
			err = th[t].err;
		row->batches += th[t].batches;
		row->transfers += th[t].transfers;
		row->wrong += th[t].wrong;
		row->failed += th[t].failed;
		if (th[t].xfer_s > row->seconds)
			row->seconds = th[t].xfer_s;
		bench_lat_merge(&all, &th[t].lat);
	}
	pthread_barrier_destroy(&bar);
	row->wall = (double)(pd_now_ns() - t0) / 1e9;
	row->bytes = row->transfers * block;
	row->bw = bench_bw(o, row->bytes, row->seconds);
	bench_lat_pct(&all, &row->lat_p50_us, &row->lat_p99_us);
	free(all.v);
	if (err)
		fprintf(stderr, "pdkv-bench: transfer error: %s\n", te_strerror(err));
	return err ? 1 : 0;
}
