/* SPDX-License-Identifier: Apache-2.0 */
/* bench: pdkv-bench internals — options (transfer_engine_bench and nixlbench spellings), the two
 * back-ends (pdkv's engine, a plain C socket), --scheme's pairs, the --check pattern, reports. */
#ifndef PDKV_BENCH_H
#define PDKV_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pd_proc.h"

#define BENCH_MAX_THREADS 64
#define BENCH_MAX_PAIRS   16   /* engines on one side of a scheme; pairs x threads <= 256 */
#define BENCH_MAX_POINTS  8    /* --num-pairs sweep points */
#define BENCH_MAX_BUFFERS 1024 /* --buffers */

enum bench_mode { BENCH_TARGET, BENCH_INITIATOR, BENCH_LOOPBACK };
enum bench_baseline { BENCH_BASELINE_NONE, BENCH_BASELINE_SOCKET, BENCH_BASELINE_SOCKET_ONLY };
enum bench_scheme_id {
	BENCH_SCHEME_PAIRWISE,
	BENCH_SCHEME_MANYTOONE,
	BENCH_SCHEME_ONETOMANY,
	BENCH_SCHEME_TP
};

struct bench_opts {
	enum bench_mode mode_id;
	const char *mode;     /* its name: target | initiator | loopback (reports) */
	const char *metadata; /* --metadata_server */
	const char *local_name;
	const char *segment;  /* --segment_id */
	const char *protocol; /* tcp | rdma */
	const char *device;   /* --device_name */
	int op;               /* TE_READ | TE_WRITE (the pass being run) */
	const char *ops_str;  /* --operation as given */
	uint64_t block, batch, threads;
	double duration;        /* seconds per row */
	double gap_ms;          /* idle between timed batches, untimed (--gap-ms; 0 = none) */
	const char *affinity;   /* --affinity: none | split | INIT/TARGET CPU lists */
	const char *congestion; /* --congestion: TCP congestion control of every data socket */
	int buffers;            /* --buffers: separate allocations per side (1 = one region) */
	uint64_t max_block;     /* the largest row's bytes per transfer (set after parsing) */
	uint64_t buffer_size;
	const char *unit; /* GB GiB Gb MB MiB Mb KB KiB Kb */
	double unit_div;  /* bytes per unit (bits for the b units handled by unit_bits) */
	bool unit_bits;
	int precision;
	uint64_t sweep_b, sweep_e; /* -b -e (0 = no sweep) */
	double sweep_f;            /* -f */
	bool check;
	double min_bw; /* in report units; 0 = off */
	const char *json, *csv;
	enum bench_baseline baseline_id;
	const char *baseline;        /* its name: none | socket | socket-only (reports) */
	const char *baseline_server; /* initiator: host:port of a target's socket baseline */
	const char *ready_file;      /* target: write "segment\nsocket host:port\n" when up */
	bool quiet;
	int repeat;    /* --repeat: each row N times, interleaved with the socket */
	bool use_vram; /* --use_vram: both sides' buffers are cudaMalloc'd on --gpu_id */
	int gpu_id;
	int target_gpu_id; /* loopback: the spawned target's device; -1 = gpu_id */
	/* rdma: % of line rate and --compare-perftest (bench_rdmarate.c, bench_perftest.c) */
	double line_rate_gbps;      /* initiator devices' line rate, Gb/s; 0 = unknown */
	const char *line_rate_desc; /* how it was summed, or why it is unknown */
	bool compare_perftest;      /* --compare-perftest: ib_write_bw on the same devices */
	const char *target_device;  /* loopback: --target_device_name (default --device_name) */
	const char *perftest_host;  /* --perftest_host (default: the segment's host) */
	double perftest_duration;   /* --perftest_duration, ib_write_bw -D seconds (both sides) */
	int perftest_port;          /* --perftest_port, first port (device i uses port + i) */
	/* --latency (bench_lat.c): one outstanding request (batch 1, 1 thread), --iterations
	 * timed requests per size instead of --duration; --compare-perftest then runs
	 * ib_write_lat / ib_read_lat on the first device pair */
	bool latency;
	uint64_t iterations;
	/* --fault-device-down=NAME@SECONDS (bench_multi.c): `ip link set <netdev> down` under
	 * rdma device NAME (one of --device_name) SECONDS after the first row starts; up again
	 * after the last row */
	const char *fault_down;
	uint64_t max_inflight;    /* --max_inflight: batch per size <= this many bytes; 0 = off */
	uint64_t perftest_bytes;  /* --perftest_bytes: ib_write_bw -n BYTES/size (>= 5), not -D */
	int lat_ops[2], lat_nops; /* the operations in run order (the target's servers follow) */
	bool nic_matrix_given;    /* --nic_priority_matrix: accepted and ignored */
	uint64_t verify_written;  /* target: bytes a Mooncake initiator wrote (zeros); 0 = off */
	const char *compare_mooncake; /* --compare-mooncake: Mooncake's transfer_engine_bench */
	/* KV-shaped transfers (nixlbench kvbench's idea): --kv-geometry L,H,D,B, --block-size
	 * tokens per block, --prompt-tokens N, --kv-run-blocks K (0 = the whole prompt is one run
	 * per buffer) -> one batch = one prompt's block list: 2 x L buffers x runs */
	int kv_geom[4]; /* 0 = not given */
	int kv_block_tokens, kv_prompt_tokens, kv_run_blocks;
	/* nixlbench's communication schemes (bench_scheme.c): scheme_on when any of these flags
	 * was given (else today's single pair). pairs[]: --num-pairs, one sweep point each; tp:
	 * --tp-prefill/--tp-decode (initiator/target follow the operation) or nixlbench's
	 * --num_initiator_dev/--num_target_dev (fixed roles); 0 = not given. */
	bool scheme_on;
	int scheme_id; /* enum bench_scheme_id */
	const char *scheme;
	int pairs[BENCH_MAX_POINTS], npoints;
	int tp_prefill, tp_decode;
	int num_init_dev, num_target_dev;
	/* --scheme --use_vram: CUDA devices seen; initiator engine i's buffers are on GPU
	 * (gpu_id + i) % scheme_ngpu, spawned target t's on (target GPU + t) % scheme_ngpu */
	int scheme_ngpu;
};

/* The operations to run, in order (--operation=write,read), and whether --buffer_size was given. */
struct bench_run_ops {
	int ops[2];
	int nops;
	bool buffer_given;
};
/* the batch for block: --batch_size, capped by --max_inflight / block (at least 1) */
static inline uint64_t bench_batch_for(const struct bench_opts *o, uint64_t batch, uint64_t block)
{
	uint64_t cap = o->max_inflight && block ? o->max_inflight / block : batch;
	return cap < 1 ? 1 : cap < batch ? cap : batch;
}
/* Options (bench_opts.c): 0 (*done after --help: exit 0) or the exit status 2, with the
 * message printed. */
int bench_parse(int argc, char **argv, struct bench_opts *o, struct bench_run_ops *ro, bool *done);

/* a row's share per local RDMA device (bench_multi.c), from te_rdma_stats.h counters */
#define BENCH_MAX_DEVS 8
struct bench_dev_share {
	char name[64];
	uint64_t bytes, moved_in, moved_out;
	bool down; /* port not ACTIVE at the row's end */
};

struct bench_row {
	const char *kind; /* "pdkv" | "socket" */
	int op;           /* TE_READ | TE_WRITE */
	uint64_t block, batch, threads;
	double seconds; /* transfer time (verification excluded) */
	double wall;
	uint64_t batches, transfers, bytes;
	double lat_p50_us, lat_p99_us, lat_max_us;
	double pt_lat_us, pt_lat_p99_us, pt_lat_max_us; /* --latency: ib_*_lat at this size */
	int pt_rtt_factor; /* its figures x this = a round trip (ib_write_lat: 2; read: 1) */
	uint64_t wrong;    /* wrong bytes */
	uint64_t failed;   /* failed transfers */
	double bw;         /* in report units per second */
	double cpu_init_s, cpu_target_s; /* CPU used during the row (target: loopback only) */
	double pct_line_rate;            /* % of o->line_rate_gbps; < 0 = unknown */
	double perftest_bw; /* ib_write_bw at this block size, report units; 0 = none */
	struct bench_scheme_row *scheme; /* --scheme: the pairs behind this aggregate; else NULL */
	int conns;                       /* socket rows: connections opened; else 0 */
	struct bench_dev_share devs[BENCH_MAX_DEVS]; /* rdma pdkv rows: per local device */
	int ndevs;
};

/* One pair of a --scheme row: initiator engine -> target segment, and its own row. */
struct bench_pair_row {
	int initiator, target;
	struct bench_row row;
	double socket_bw; /* engine rows with --baseline: the same pair's socket figure; else 0 */
};
struct bench_scheme_row {
	const char *scheme;
	int initiators, targets, npairs;
	int tp_prefill, tp_decode; /* tp only, else 0 */
	struct bench_pair_row *pairs;
	double bw_min, bw_max, min_max, jain; /* over the pairs' bandwidths */
	double scaling;                       /* aggregate / the first sweep point's; 0 = none */
	int scaling_base;                     /* that point's pairs */
	double socket_bw; /* engine rows with --baseline: the point's best socket aggregate */
};

/* per-thread latency samples (µs) */
struct bench_lat {
	double *v;
	size_t n, cap;
};
void bench_lat_add(struct bench_lat *l, double us);
void bench_lat_merge(struct bench_lat *dst, struct bench_lat *src); /* frees src */
void bench_lat_pct(struct bench_lat *l, double *p50, double *p99);

/* ---- the initiator's back-ends (model: nccl-tests' struct testColl) ----
 * A back-end moves one batch; bench_fanout.c owns everything around it: the threads, warm-up,
 * barrier, timed loop, --check and the reduce into a bench_row. */
#define BENCH_READ  0 /* = TE_READ: remote -> local */
#define BENCH_WRITE 1 /* = TE_WRITE: local -> remote */

struct bench_backend;
struct bench_thread {
	const struct bench_backend *be;
	void *ctx; /* the back-end's row state (engine and segment, socket address) */
	const struct bench_opts *o;
	pthread_barrier_t *bar;
	int t;          /* thread index: its blocks are t, t + threads, t + 2 threads, ... */
	uint64_t block; /* bytes per transfer */
	/* set by thread_init: */
	char *local, *scratch; /* region bases; scratch receives --check's WRITE read-back */
	/* --buffers=N > 1: the region is N allocations, lv / sv (local / scratch); block k of
	 * the region (k = i * threads + t) is at lv[k % N] + (k / N) * block, see bench_block */
	int nbuf;
	char *const *lv, *const *sv;
	bool vram;               /* local/scratch are GPU memory: --check goes through tmp */
	void *priv;              /* per-thread back-end state */
	struct bench_step *step; /* the row's shared batch clock when its lane is lockstep */
	/* results */
	double xfer_s;
	uint64_t batches, transfers, wrong, failed;
	struct bench_lat lat;
	int err;
	char *tmp;
};

/* Where th's i-th block of its local (scratch: false) or scratch region is. */
static inline char *bench_block(const struct bench_thread *th, bool scratch, uint64_t i)
{
	uint64_t k = i * th->o->threads + (uint64_t)th->t;
	if (th->nbuf > 1)
		return (scratch ? th->sv : th->lv)[k % (uint64_t)th->nbuf] +
		       k / (uint64_t)th->nbuf * th->block;
	return (scratch ? th->scratch : th->local) + k * th->block;
}

struct bench_backend {
	const char *kind; /* bench_row.kind: "pdkv" | "socket" */
	int err_memory;   /* the back-end's out-of-memory error code */
	/* On the thread, before the warm-up: local/scratch/vram, connections, priv. err or 0. */
	int (*thread_init)(struct bench_thread *th);
	void (*thread_fini)(struct bench_thread *th); /* may be NULL */
	/* o->batch transfers of op (BENCH_READ/BENCH_WRITE) between buf and the remote region at
	 * this thread's offsets; record: one latency sample per transfer (bench_lat_add); counts
	 * failed transfers in th->failed. *secs = the batch's transfer time. err or 0. */
	int (*batch)(struct bench_thread *th, int op, char *buf, bool record, double *secs);
};

/* One row: o->threads threads of be over ctx, reduced into *row. The first thread error, or 0. */
int bench_run_row(const struct bench_backend *be, void *ctx, const struct bench_opts *o,
                  uint64_t block, struct bench_row *row);
/* Several rows at once (--scheme: one lane per pair): every lane's o->threads threads start
 * after one barrier and run the same duration; lane i is reduced into lanes[i].row. */
struct bench_lane {
	const struct bench_backend *be;
	void *ctx;
	const struct bench_opts *o; /* the lane's shape: batch, threads, op, duration, check */
	uint64_t block;
	/* The lane's threads carry the parts of one batch (the plain-socket baseline of a
	 * one-thread engine row: its batch over as many connections as the engine has lanes).
	 * Each timed batch starts on all of them together and lasts until the last part ends, as
	 * the engine's batch waits for its slowest lane; --check's untimed work is done between
	 * batches, never beside one. */
	bool lockstep;
	struct bench_row row;
};
int bench_run_lanes(struct bench_lane *lanes, size_t n);

/* Pattern: word i (8 bytes at remote offset 8i) of iteration `seed`. seed 0 = the target's
 * fixed READ pattern. Offsets are relative to the remote buffer's start. */
void bench_fill(char *dst, uint64_t remote_off, size_t len, uint64_t seed);
uint64_t bench_count_wrong(const char *buf, uint64_t remote_off, size_t len, uint64_t seed);

/* transfer engine back-end (bench_te.c) */
int bench_te_target(const struct bench_opts *o, int sock_listen_fd, const char *sock_addr);
struct bench_te;
int bench_te_init(const struct bench_opts *o, uint64_t max_region, struct bench_te **out);
int bench_te_row(struct bench_te *b, const struct bench_opts *o, uint64_t block,
                 struct bench_row *row);
void bench_te_fini(struct bench_te *b);
const char *bench_te_local_name(struct bench_te *b);
uint64_t bench_te_remote_size(struct bench_te *b);
/* --buffers=N: bytes of each of the N allocations that hold a region of region bytes (a row's
 * blocks k, k + N, ... in one allocation: at most region / N and one block) */
static inline uint64_t bench_buffer_each(const struct bench_opts *o, uint64_t region)
{
	uint64_t n = o->buffers > 1 ? (uint64_t)o->buffers : 1;
	return ((region + n - 1) / n + (n > 1 ? o->max_block : 0) + 4095) & ~(uint64_t)4095;
}
/* --scheme: an initiator engine with local and scratch regions of `region` bytes (no segment
 * opened); a lane of it: the window [roff, roff + len) of segment's first buffer, local
 * offset loff, sharing the endpoint's engine (bench_te_fini on a lane frees only the lane). */
int bench_te_endpoint(const struct bench_opts *o, uint64_t region, int idx, struct bench_te **out);
int bench_te_lane(struct bench_te *ep, const char *segment, uint64_t roff, uint64_t loff,
                  uint64_t len, struct bench_te **out);
extern const struct bench_backend bench_te_backend;

/* --mode=loopback's spawned targets (bench_loop.c): start one (idx names its ready file and,
 * with a metadata store, its segment), wait for its ready file (segment, socket address), stop
 * it (a target that did not exit cleanly makes rc 1; its log goes unless rc). 0, or 1 with the
 * reason and its log printed. */
struct bench_loop_target {
	struct pd_proc proc;
	char ready[256], seg[256], sockaddr[160];
	char *log;
	bool reported; /* it did not come up: its log was printed */
};
int bench_loop_spawn(const struct bench_opts *o, uint64_t buffer_size, int idx,
                     struct bench_loop_target *lt);
int bench_loop_wait(struct bench_loop_target *lt);
int bench_loop_stop(struct bench_loop_target *lt, int rc);
/* --affinity (bench_affinity.c): parse and resolve it (0, or 2 with the error printed); pin the
 * main thread to the initiator's CPUs; around a spawn, the calling thread on the target's (the
 * child inherits them); the placement in words for the banner and the JSON meta, NULL if off. */
int bench_affinity_parse(const struct bench_opts *o);
int bench_affinity_self(void);
int bench_affinity_child_begin(void);
void bench_affinity_child_end(void);
const char *bench_affinity_desc(void);
/* --congestion (bench_cc.c): check it and set PDKV_TCP_CONGESTION (0, or 2 with the error
 * printed); what ran: "cubic (--congestion; host default bbr)", the name, the host's. */
int bench_cc_parse(const struct bench_opts *o);
const char *bench_cc_desc(void);
const char *bench_cc_name(void);
const char *bench_cc_host(void);
double bench_cpu_self(void);    /* this process's CPU seconds */
double bench_cpu_of(pid_t pid); /* another's (utime + stime); -1 if unknown */

/* --scheme (bench_scheme.c): every sweep point and row of the scheme, as initiator (o->segment
 * a comma list of targets) or loopback (spawns the targets). Exit status. */
int bench_scheme_main(struct bench_opts *o, const struct bench_run_ops *ro, const uint64_t *sizes,
                      size_t ns);
/* its report (bench_report.c): the banner's scheme lines (engines up to ni and nt, their
 * regions); a row: the aggregate, one row per pair, the fairness line */
void bench_scheme_banner(const struct bench_opts *o, int ni, int nt, uint64_t lregion,
                         uint64_t rregion);
void bench_scheme_pairs_print(const struct bench_opts *o, struct bench_row *agg);
/* --baseline: "# ratio pdkv/socket ..." for a point (size as swept) from its best engine row,
 * whose scheme row carries the socket figures; then the per-pair ratios */
void bench_scheme_ratio_print(const struct bench_opts *o, uint64_t size,
                              const struct bench_row *best);

/* CUDA (bench_gpu.c): --use_vram needs a device (else 77 with "no CUDA device"); buffers and
 * copies between host and the buffers of either kind; the cudaMemcpy reference rows. */
int bench_gpu_require(const struct bench_opts *o);
char *bench_mem_alloc(const struct bench_opts *o, uint64_t len);
void bench_mem_free(const struct bench_opts *o, char *p, uint64_t len);
int bench_mem_put(const struct bench_opts *o, char *dst, const void *src, size_t len);
int bench_mem_get(const struct bench_opts *o, void *dst, const char *src, size_t len);
int bench_mem_zero(const struct bench_opts *o, char *p, size_t len);
const char *bench_mem_location(const struct bench_opts *o); /* "cpu:0" | "cuda:N" */
/* --scheme --use_vram: the device of initiator engine i / spawned target t (bench_opts) */
int bench_scheme_gpu(const struct bench_opts *o, bool target, int idx);
/* Prints cudaMemcpy D2D, D2H, H2D (pinned) for batch x block, and cudaMemcpyAsync (Peer when
 * the target is on another GPU) of the batch on one stream, one sync per batch; then the ratio
 * of pdkv_bw (0 = no pdkv row): nvlink_intra against the async device-to-device copy, tcp
 * (staging) against the D2H+H2D copy time. */
void bench_gpu_reference(const struct bench_opts *o, uint64_t block, double pdkv_bw);
int bench_target_gpu(const struct bench_opts *o); /* target_gpu_id, else gpu_id */

/* plain socket back-end (bench_sock.c): same request shape, no engine */
void *bench_sock_server(void *arg); /* arg: struct bench_sock_srv */
struct bench_sock_srv {
	int lfd;
	char *buf;
	uint64_t len;
	volatile int stop;
};
/* host memory for the initiator side: 2 x region bytes (local, scratch), kept across rows */
int bench_sock_prepare(uint64_t region);
/* What a socket row or lane talks to: the target's socket at host:port, the window of its buffer
 * from roff, local and scratch windows at loff of bench_sock_prepare's regions. 0, or 1 with the
 * message printed when server is not host:port. */
struct bench_sock_ctx {
	char host[256];
	int port;
	uint64_t roff, loff;
};
int bench_sock_ctx_init(struct bench_sock_ctx *c, const char *server, uint64_t roff, uint64_t loff);
extern const struct bench_backend bench_sock_backend; /* ctx: a struct bench_sock_ctx */
/* A row on bench_sock_conns(o) connections, one thread each, o->batch x o->threads transfers in
 * flight over them (reported with o's batch and threads); in lockstep (bench_lane.lockstep) when
 * o->threads is 1, as the engine's one batch at a time spans its lanes. */
int bench_sock_row(const struct bench_opts *o, const char *server, uint64_t block,
                   struct bench_row *row);
/* Connections the socket baseline opens: as many as the engine's TCP lanes per peer
 * (te_tcp_lanes_per_peer, as iperf3 -P), fewer when batch x threads does not divide; rdma: one
 * per thread. */
int bench_sock_conns(const struct bench_opts *o);
/* Does the socket row of o run its connections in lockstep (bench_lane.lockstep)? */
bool bench_sock_lockstep(const struct bench_opts *o);

/* line rate (bench_rdmarate.c): sum over the devices in `devices` (comma list; NULL/"" = all)
 * of port 1's active speed x width, in Gb/s, when ACTIVE. desc gets "rxe0 1x 2.5 Gb/s + ...".
 * Returns the number of ports counted (0 = none: *gbps 0, desc says why). */
int bench_rdma_line_rate(const char *devices, double *gbps, char *desc, size_t desclen);
/* GID index the engine would use on dev port 1: MC_GID_INDEX / NCCL_IB_GID_INDEX, else the
 * first RoCEv2 IPv4-mapped (or IB) entry, else 0; -1 when the device cannot be opened. */
int bench_rdma_gid_index(const char *dev);

/* --compare-perftest (bench_perftest.c). check: ib_write_bw on PATH (else message, 2).
 * serve_start: target side, one ib_write_bw server per device (port + i), respawned after each
 * client run, sizes in the order of `sizes` (wrapping). run: initiator side; with local_servers
 * (loopback) starts the servers itself on those devices; fills bw[k] (bytes/s, summed over the
 * device pairs; 0 = failed) for every size. 0, or -1 with the reason and the log printed. */
int bench_perftest_check(const struct bench_opts *o); /* --latency: ib_write_lat, ib_read_lat */
/* ib_write_bw server address: --perftest_host, else the target segment's host (P2PHANDSHAKE:
 * the name's host part; a store: its rpc_meta). 0 or -1 with the reason printed. */
int bench_perftest_host(const struct bench_opts *o, char *host, size_t len);
int bench_perftest_serve_start(const struct bench_opts *o, const uint64_t *sizes, size_t n);
void bench_perftest_serve_stop(void);
/* initiator: bench_perftest_run after the pdkv rows; prints ib_write_bw and pdkv/ib_write_bw per
 * (operation, size), sets rows[].perftest_bw. 0, or -1 when a size could not be measured. */
int bench_perftest_compare(const struct bench_opts *o, struct bench_row *rows, size_t nrows,
                           const uint64_t *sizes, size_t ns, bool loopback);
int bench_perftest_run(const struct bench_opts *o, const char *local_servers, const char *host,
                       const uint64_t *sizes, size_t n, double *bw);
/* one perftest tool's figures at a size: ib_write_bw bytes/s summed over the pairs; ib_*_lat
 * (first pair only) t_typical, 99% percentile and t_max in us as perftest prints them */
struct bench_pt_res {
	double bw;
	double lat, p99, max;
};
int bench_perftest_run_tool(const struct bench_opts *o, const char *bin, const char *local_servers,
                            const char *host, const uint64_t *sizes, size_t n,
                            struct bench_pt_res *res);

/* multi-device (bench_multi.c): check = --fault-device-down's form and context (2 + message);
 * snap = the engine's per-device counters (bench_te.c; 0 devices when not rdma); share = a row's
 * per-device delta from two snaps; print = "# devices:" and "# failover:" lines for a row with
 * more than one device or a fault; fault start/stop = the timer thread and the link back up. */
struct te_rdma_dev_stat;
int bench_fault_check(const struct bench_opts *o);
int bench_te_devsnap(struct bench_te *b, struct te_rdma_dev_stat *out, int max);
void bench_devs_share(struct bench_row *row, const struct te_rdma_dev_stat *a,
                      const struct te_rdma_dev_stat *b, int n);
void bench_devs_print(const struct bench_opts *o, const struct bench_row *row);
int bench_fault_start(const struct bench_opts *o);
int bench_fault_stop(void);

/* --latency (bench_lat.c): check = the flags it cannot go with, batch 1 / 1 thread, default
 * sizes 8 B..64 KiB (2 on usage error, message printed); header/row = its table; compare =
 * --compare-perftest: ib_write_lat / ib_read_lat per size and operation after the pdkv rows,
 * the ratio per (operation, size) printed and stored in the rows. 0, or -1. */
int bench_lat_check(struct bench_opts *o);
void bench_lat_header(const struct bench_opts *o);
void bench_lat_row(const struct bench_opts *o, const struct bench_row *r);
int bench_lat_compare(const struct bench_opts *o, struct bench_row *rows, size_t nrows,
                      const uint64_t *sizes, size_t ns, bool loopback);

/* --compare-mooncake (bench_mooncake.c): check = the path is executable (else message, 2);
 * row = Mooncake's bench as initiator against o->segment with the row's shape (duration
 * rounded to whole seconds, its flag's unit); row->kind "mooncake". 0 or -1 (reason printed). */
int bench_mooncake_check(const char *path);
int bench_mooncake_row(const struct bench_opts *o, uint64_t block, struct bench_row *row);

/* reporting (bench_report.c) */
void bench_banner(const struct bench_opts *o, const char *local, const char *remote,
                  uint64_t remote_size);
void bench_table_header(const struct bench_opts *o);
void bench_table_row(const struct bench_opts *o, struct bench_row *r);
int bench_write_json(const struct bench_opts *o, const char *path, struct bench_row *rows, size_t n,
                     const char *local, const char *remote);
int bench_write_csv(const struct bench_opts *o, const char *path, struct bench_row *rows, size_t n);
double bench_bw(const struct bench_opts *o, uint64_t bytes, double secs);
/* A fresh row of kind for one block size: op, batch and threads from o, the rest zero. */
void bench_row_init(struct bench_row *row, const char *kind, const struct bench_opts *o,
                    uint64_t block);

#endif
