/* SPDX-License-Identifier: Apache-2.0 */
/* bench_opts: pdkv-bench's options — one pd_opt table with transfer_engine_bench's spellings,
 * the defaults, and the combinations the table cannot check. */
#include "bench.h"
#include "bench_opts_rdma.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_opt.h"
#include "pd_util.h"
#include "pd_meta_scheme.h"

static int set_unit(struct bench_opts *o, const char *u)
{
	static const struct {
		const char *n;
		double div;
		bool bits;
	} units[] = {{"GB", 1e9, 0}, {"GiB", 1073741824.0, 0}, {"Gb", 1e9, 1},
	             {"MB", 1e6, 0}, {"MiB", 1048576.0, 0},    {"Mb", 1e6, 1},
	             {"KB", 1e3, 0}, {"KiB", 1024.0, 0},       {"Kb", 1e3, 1}};
	for (size_t i = 0; i < PD_ARRAY_SIZE(units); i++)
		if (!strcmp(u, units[i].n)) {
			o->unit = units[i].n;
			o->unit_div = units[i].div;
			o->unit_bits = units[i].bits;
			return 0;
		}
	return -1;
}

/* What the option table writes into, and what the per-option callbacks need. */
struct parsed {
	struct bench_opts *o;
	struct bench_run_ops *ro;
	int mode, baseline; /* indexes into bench_mode_names / bench_baseline_names */
	int scheme;         /* index into bench_scheme_names */
	bool scheme_seen, pairs_seen, tp_seen, dev_seen;
};

static const char *const bench_mode_names[] = {"target", "initiator", "loopback"};
static const char *const bench_baseline_names[] = {"none", "socket", "socket-only"};
static const char *const bench_scheme_names[] = {"pairwise", "manytoone", "onetomany", "tp"};

static int opt_protocol(const char *v, void *dst, void *ud)
{
	(void)ud;
	if (strcmp(v, "tcp") && strcmp(v, "rdma") && strcmp(v, "nvlink_intra"))
		return -1;
	*(const char **)dst = v;
	return 0;
}

static int opt_auto(const char *v, void *dst, void *ud)
{
	(void)ud;
	if (!v || !strcmp(v, "true") || !strcmp(v, "1"))
		*(const char **)dst = NULL; /* the engine picks: rdma when an HCA exists */
	return 0;
}

static int opt_operation(const char *v, void *dst, void *ud)
{
	struct parsed *p = ud;
	char tmp[64], *tok, *save = NULL;
	(void)dst;
	snprintf(tmp, sizeof(tmp), "%s", v);
	p->o->ops_str = v;
	p->ro->nops = 0;
	for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (p->ro->nops == 2 || (strcmp(tok, "read") && strcmp(tok, "write")))
			return -1;
		p->ro->ops[p->ro->nops++] = strcmp(tok, "read") ? BENCH_WRITE : BENCH_READ;
	}
	return p->ro->nops ? 0 : -1;
}

/* --kv-geometry LAYERS,KV_HEADS,HEAD_DIM,DTYPE_BYTES */
static int opt_kv_geometry(const char *v, void *dst, void *ud)
{
	int *g = dst, n = 0;
	char tmp[96], *tok, *save = NULL;
	(void)ud;
	snprintf(tmp, sizeof(tmp), "%s", v);
	for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int64_t x;
		if (n == 4 || pd_parse_i64(tok, &x) || x < 1 || x > 65536)
			return -1;
		g[n++] = (int)x;
	}
	return n == 4 && (g[3] == 1 || g[3] == 2 || g[3] == 4) ? 0 : -1;
}

/* --num-pairs N[,N..]: one sweep point per entry, each 1..BENCH_MAX_PAIRS */
static int opt_pairs(const char *v, void *dst, void *ud)
{
	struct bench_opts *o = dst;
	char tmp[128], *tok, *save = NULL;
	(void)ud;
	snprintf(tmp, sizeof(tmp), "%s", v);
	o->npoints = 0;
	for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int64_t x;
		if (o->npoints == BENCH_MAX_POINTS || pd_parse_i64(tok, &x) || x < 1 ||
		    x > BENCH_MAX_PAIRS)
			return -1;
		o->pairs[o->npoints++] = (int)x;
	}
	return o->npoints ? 0 : -1;
}

static int opt_unit(const char *v, void *dst, void *ud)
{
	(void)ud;
	return set_unit(dst, v);
}

static int opt_size_nonzero(const char *v, void *dst, void *ud)
{
	(void)ud;
	return pd_parse_size(v, dst) || !*(uint64_t *)dst ? -1 : 0;
}

#define HIDDEN NULL /* an alias: same destination, not listed in the help */
static struct bench_opts g_o;
static struct bench_run_ops g_ro;
static struct parsed g_p = {.o = &g_o, .ro = &g_ro};
static const char *g_matrix;
static const struct pd_opt bench_optv[] = {
    {.name = "mode",
     .type = PD_OPT_CHOICE,
     .dst = &g_p.mode,
     .arg = "=target|initiator|loopback",
     .help = "loopback = spawn a local target, run the\ninitiator against it, stop it (default)",
     .choices = "target|initiator|loopback"},
    {.name = "metadata_server",
     .type = PD_OPT_STR,
     .dst = &g_o.metadata,
     .arg = "=CONN",
     .help = "P2PHANDSHAKE (default), etcd://h:p, h:p, redis://h:p,\nhttp://h:p/metadata"},
    {.name = "local_server_name",
     .type = PD_OPT_STR,
     .dst = &g_o.local_name,
     .arg = "=NAME",
     .help = "default: the host name (P2P rewrites it to ip:port)"},
    {.name = "segment_id",
     .type = PD_OPT_STR,
     .dst = &g_o.segment,
     .arg = "=NAME",
     .help = "initiator: the target's segment (the target prints it)"},
    {.name = "protocol",
     .type = PD_OPT_FN,
     .dst = &g_o.protocol,
     .arg = "=tcp|rdma|nvlink_intra",
     .help = "default tcp; --auto_discovery picks rdma if an HCA exists;\nnvlink_intra: CUDA IPC "
             "between processes of one host",
     .want = "tcp, rdma or nvlink_intra",
     .fn = opt_protocol},
    {.name = "auto_discovery",
     .type = PD_OPT_FN,
     .dst = &g_o.protocol,
     .arg = "true|false",
     .help = HIDDEN,
     .fn = opt_auto,
     .optional_value = true},
    {.name = "device_name",
     .type = PD_OPT_STR,
     .dst = &g_o.device,
     .arg = "=LIST",
     .help = "rdma devices, comma list"},
    {.name = "operation",
     .type = PD_OPT_FN,
     .arg = "=read|write[,..]",
     .help = "default read; write,read runs both",
     .want = "read, write, or a list of both",
     .fn = opt_operation},
    {.name = "block_size",
     .type = PD_OPT_SIZE,
     .dst = &g_o.block,
     .arg = "=N",
     .help = "bytes per transfer (65536)",
     .want = "a size like 65536 or 1M",
     .min = 1,
     .max = (double)(1ull << 36)},
    {.name = "batch_size",
     .type = PD_OPT_SIZE,
     .dst = &g_o.batch,
     .arg = "=N",
     .help = "transfers per batch (128)",
     .want = "1..65536",
     .min = 1,
     .max = 65536},
    {.name = "threads",
     .type = PD_OPT_U64,
     .dst = &g_o.threads,
     .arg = "=N",
     .help = "initiator threads (1)",
     .want = "1..64",
     .min = 1,
     .max = BENCH_MAX_THREADS},
    {.name = "num_threads",
     .type = PD_OPT_U64,
     .dst = &g_o.threads,
     .arg = "=N",
     .help = HIDDEN,
     .want = "1..64",
     .min = 1,
     .max = BENCH_MAX_THREADS},
    {.name = "duration",
     .type = PD_OPT_DOUBLE,
     .dst = &g_o.duration,
     .arg = "=S",
     .help = "seconds per row (10)",
     .want = "seconds > 0",
     .max = 86400,
     .min_excl = true},
    {.name = "buffer_size",
     .type = PD_OPT_SIZE,
     .dst = &g_o.buffer_size,
     .arg = "=N",
     .help = "target buffer (1 GiB; loopback: just what rows need)",
     .want = "a size >= 4096 like 1G",
     .min = 4096,
     .max = (double)UINT64_MAX,
     .seen = &g_ro.buffer_given},
    {.name = "report_unit",
     .type = PD_OPT_FN,
     .dst = &g_o,
     .arg = "=UNIT",
     .help = "GB|GiB|Gb|MB|MiB|Mb|KB|KiB|Kb (GB)",
     .want = "GB|GiB|Gb|MB|MiB|Mb|KB|KiB|Kb",
     .fn = opt_unit},
    {.name = "report_precision",
     .type = PD_OPT_INT,
     .dst = &g_o.precision,
     .arg = "=N",
     .help = "decimals (2)",
     .want = "0..9",
     .max = 9},
    {.name = "nic_priority_matrix",
     .type = PD_OPT_STR,
     .dst = &g_matrix,
     .arg = "=FILE",
     .help = HIDDEN,
     .seen = &g_o.nic_matrix_given},
    {.shrt = 'b',
     .type = PD_OPT_FN,
     .dst = &g_o.sweep_b,
     .arg = "MIN",
     .help = "size sweep (nccl-tests): -b MIN -e MAX -f FACTOR,\none row per block size",
     .want = "a size like 64K",
     .fn = opt_size_nonzero},
    {.shrt = 'e',
     .type = PD_OPT_FN,
     .dst = &g_o.sweep_e,
     .arg = "MAX",
     .help = HIDDEN,
     .want = "a size like 1M",
     .fn = opt_size_nonzero},
    {.shrt = 'f',
     .type = PD_OPT_DOUBLE,
     .dst = &g_o.sweep_f,
     .arg = "FACTOR",
     .help = HIDDEN,
     .want = "a factor > 1",
     .min = 1,
     .max = 1024,
     .min_excl = true},
    {.name = "check",
     .type = PD_OPT_FLAG,
     .dst = &g_o.check,
     .help = "verify every byte; #wrong per row (not timed)"},
    {.name = "gap-ms",
     .type = PD_OPT_DOUBLE,
     .dst = &g_o.gap_ms,
     .arg = "=MS",
     .help = "idle MS ms between timed batches (not timed): each batch is a one-shot\n"
             "transfer after a pause, as one prompt's KV hand-off is",
     .want = "milliseconds, 0 to 10000",
     .max = 10000},
    {.name = "affinity",
     .type = PD_OPT_STR,
     .dst = &g_o.affinity,
     .arg = "=SPEC",
     .help = "loopback: split (the initiator on the first half of this\nprocess's CPUs, the "
             "target on the rest), I/T (CPU lists,\ne.g. 0-3/4-7) or none (default); every row "
             "alike",
     .want = "split, none or CPU lists like 0-3/4-7"},
    {.name = "congestion",
     .type = PD_OPT_STR,
     .dst = &g_o.congestion,
     .arg = "=NAME",
     .help = "TCP congestion control of every data socket of the run, pdkv's\nand the socket "
             "baseline's alike (e.g. cubic; default: the host's;\nsets PDKV_TCP_CONGESTION)",
     .want = "a name from net.ipv4.tcp_available_congestion_control"},
    {.name = "buffers",
     .type = PD_OPT_INT,
     .dst = &g_o.buffers,
     .arg = "=N",
     .help = "each side's memory as N separate allocations, transfer k\nof a batch in "
             "allocation k mod N (a KV cache of N\nper-layer tensors, as vLLM registers "
             "them); 1 (default):\none region per side",
     .want = "1..1024",
     .min = 1,
     .max = BENCH_MAX_BUFFERS},
    {.name = "min-bw",
     .type = PD_OPT_DOUBLE,
     .dst = &g_o.min_bw,
     .arg = "=X",
     .help = "exit 1 if a pdkv row is below X report_units/s",
     .want = "a bandwidth in report units",
     .max = INFINITY},
    {.name = "min_bw",
     .type = PD_OPT_DOUBLE,
     .dst = &g_o.min_bw,
     .arg = "=X",
     .help = HIDDEN,
     .want = "a bandwidth in report units",
     .max = INFINITY},
    {.name = "json",
     .type = PD_OPT_STR,
     .dst = &g_o.json,
     .arg = "=FILE",
     .help = "machine-readable results (and --csv=FILE)"},
    {.name = "csv", .type = PD_OPT_STR, .dst = &g_o.csv, .arg = "=FILE", .help = HIDDEN},
    {.name = "baseline",
     .type = PD_OPT_CHOICE,
     .dst = &g_p.baseline,
     .arg = "=none|socket|socket-only",
     .help =
         "socket: also run a plain C socket with the same\nshape and print the ratio (target side "
         "serves it too;\n--scheme: the same pairs, all at once); socket-only:\nthe socket alone",
     .choices = "none|socket|socket-only"},
    {.name = "baseline_server",
     .type = PD_OPT_STR,
     .dst = &g_o.baseline_server,
     .arg = "=H:P[,H:P..]",
     .help = "initiator: the target's socket baseline address\n(--scheme: one per --segment_id, "
             "in its order)"},
    {.name = "ready_file",
     .type = PD_OPT_STR,
     .dst = &g_o.ready_file,
     .arg = "=FILE",
     .help = HIDDEN},
    {.name = "verify_written",
     .type = PD_OPT_SIZE,
     .dst = &g_o.verify_written,
     .arg = "=BYTES",
     .help = "target: at exit, check that the first BYTES are zero\n(what Mooncake's bench "
             "writes, from never-written\nmemory) and the rest still the READ pattern; exit 1 "
             "if not"},
    {.name = "repeat",
     .type = PD_OPT_INT,
     .dst = &g_o.repeat,
     .arg = "=N",
     .help = "run every row N times (socket and pdkv interleaved);\nthe ratio line uses the best "
             "of each, the next one lists\neach interleaved pair's ratio and their median",
     .want = "1..100",
     .min = 1,
     .max = 100},
    {.name = "use_vram",
     .type = PD_OPT_BOOL,
     .dst = &g_o.use_vram,
     .arg = "[=true|false]",
     .help = "both sides' buffers in GPU memory (cudaMalloc on\n--gpu_id, registered as cuda:N); "
             "prints "
             "cudaMemcpy\nD2D/D2H/H2D for the same sizes; exit 77 without CUDA"},
    {.name = "gpu_id",
     .type = PD_OPT_INT,
     .dst = &g_o.gpu_id,
     .arg = "=N",
     .help = "CUDA device for --use_vram (0)",
     .want = "a CUDA device number 0..1023",
     .max = 1023},
    {.name = "target_gpu_id",
     .type = PD_OPT_INT,
     .dst = &g_o.target_gpu_id,
     .arg = "=N",
     .help = "loopback --use_vram: the spawned target's CUDA device\n(default --gpu_id); the "
             "reference copies between the two",
     .want = "a CUDA device number 0..1023",
     .min = -1,
     .max = 1023},
    {.name = "compare-perftest",
     .type = PD_OPT_FLAG,
     .dst = &g_o.compare_perftest,
     .help =
         "rdma: also run ib_write_bw (perftest) per size on the\nsame device pairs; prints "
         "pdkv/ib_write_bw per size.\ntarget: keeps ib_write_bw servers up (port P+i, -s per\nsize "
         "in -b/-e/-f order: give both sides the same sizes)"},
    {.name = "compare_perftest", .type = PD_OPT_FLAG, .dst = &g_o.compare_perftest, .help = HIDDEN},
    {.name = "compare-mooncake",
     .type = PD_OPT_STR,
     .dst = &g_o.compare_mooncake,
     .arg = "=PATH",
     .help = "initiator/loopback: after each pdkv row, run Mooncake's\ntransfer_engine_bench "
             "(PATH) with the same shape against\nthe same target; prints pdkv/Mooncake per "
             "row"},
    {.name = "kv-geometry",
     .type = PD_OPT_FN,
     .dst = &g_o.kv_geom,
     .arg = "=L,H,D,B",
     .help = "KV-shaped transfers: layers, kv heads, head dim, dtype\nbytes (28,4,128,2 = "
             "Qwen2.5-7B); one batch = one prompt's\nblock list as vLLM lays it out: per-layer "
             "K and V\nbuffers, runs of blocks (overrides --block_size/--batch_size)",
     .want = "four positive integers L,H,D,B with B 1, 2 or 4",
     .fn = opt_kv_geometry},
    {.name = "block-size",
     .type = PD_OPT_INT,
     .dst = &g_o.kv_block_tokens,
     .arg = "=T",
     .help = "--kv-geometry: tokens per KV block (16)",
     .want = "tokens 1..65536",
     .min = 1,
     .max = 65536},
    {.name = "prompt-tokens",
     .type = PD_OPT_INT,
     .dst = &g_o.kv_prompt_tokens,
     .arg = "=N",
     .help = "--kv-geometry: the prompt's tokens (1024)",
     .want = "tokens 1..10000000",
     .min = 1,
     .max = 10000000},
    {.name = "kv-run-blocks",
     .type = PD_OPT_INT,
     .dst = &g_o.kv_run_blocks,
     .arg = "=K",
     .help = "--kv-geometry: blocks per contiguous run (0 = the whole\nprompt: one run per "
             "buffer, as a fresh allocator gives)",
     .want = "blocks 0..10000000",
     .min = 0,
     .max = 10000000},
    {.name = "scheme",
     .type = PD_OPT_CHOICE,
     .dst = &g_p.scheme,
     .arg = "=pairwise|manytoone|onetomany|tp",
     .help = "nixlbench's schemes, every engine its own: N pairs\n(default), N initiators -> 1 "
             "target, 1 initiator -> N\ntargets, P-TP -> D-TP ranks; prints per-pair rows,\n"
             "fairness (min/max, Jain) and scaling over --num-pairs",
     .choices = "pairwise|manytoone|onetomany|tp",
     .seen = &g_p.scheme_seen},
    {.name = "num-pairs",
     .type = PD_OPT_FN,
     .dst = &g_o,
     .arg = "=N[,N..]",
     .help = "--scheme: pairs (manytoone: initiators, onetomany:\ntargets), 1..16; a list "
             "sweeps and prints\nscaling = aggregate(N) / aggregate(first N)",
     .want = "a list of pair counts 1..16 like 1,2,4",
     .fn = opt_pairs,
     .seen = &g_p.pairs_seen},
    {.name = "num_pairs",
     .type = PD_OPT_FN,
     .dst = &g_o,
     .arg = "=N[,N..]",
     .help = HIDDEN,
     .want = "a list of pair counts 1..16 like 1,2,4",
     .fn = opt_pairs,
     .seen = &g_p.pairs_seen},
    {.name = "tp-prefill",
     .type = PD_OPT_INT,
     .dst = &g_o.tp_prefill,
     .arg = "=P",
     .help = "--scheme=tp: prefill ranks; read: decode ranks pull\n(initiators), write: "
             "prefill ranks push",
     .want = "ranks 1..16",
     .min = 1,
     .max = BENCH_MAX_PAIRS,
     .seen = &g_p.tp_seen},
    {.name = "tp-decode",
     .type = PD_OPT_INT,
     .dst = &g_o.tp_decode,
     .arg = "=D",
     .help = "--scheme=tp: decode ranks (each moves the heads it owns)",
     .want = "ranks 1..16",
     .min = 1,
     .max = BENCH_MAX_PAIRS,
     .seen = &g_p.tp_seen},
    {.name = "num_initiator_dev",
     .type = PD_OPT_INT,
     .dst = &g_o.num_init_dev,
     .arg = "=N",
     .help = "nixlbench: initiator engines (tp: initiator ranks,\nwhatever the operation)",
     .want = "engines 1..16",
     .min = 1,
     .max = BENCH_MAX_PAIRS,
     .seen = &g_p.dev_seen},
    {.name = "num_target_dev",
     .type = PD_OPT_INT,
     .dst = &g_o.num_target_dev,
     .arg = "=N",
     .help = "nixlbench: target engines (segments)",
     .want = "engines 1..16",
     .min = 1,
     .max = BENCH_MAX_PAIRS,
     .seen = &g_p.dev_seen},
    {.name = "target_device_name",
     .type = PD_OPT_STR,
     .dst = &g_o.target_device,
     .arg = "=LIST",
     .help = "loopback: the spawned target's devices (--device_name)"},
    BENCH_RDMA_OPTS /* bench_opts_rdma.h */
};
#undef HIDDEN

static const struct pd_opt_spec bench_spec = {
    .prog = "pdkv-bench",
    .usage = "usage: pdkv bench [flags]   (flags spelled as Mooncake's transfer_engine_bench)\n",
    .footer = "  rdma: rows end with % of line rate (port 1 speed x width of --device_name, "
              "summed)\n"
              "Exit: 0 ok; 1 wrong bytes, failed transfers or under --min-bw; 2 bad usage.\n",
    .opts = bench_optv,
    .nopts = PD_ARRAY_SIZE(bench_optv),
    .max_pos = 0,
    .ud = &g_p,
};

static void set_defaults(struct bench_opts *o, struct bench_run_ops *ro)
{
	*o = (struct bench_opts){.metadata = PD_META_P2P,
	                         .protocol = "tcp",
	                         .op = BENCH_READ,
	                         .block = 65536,
	                         .batch = 128,
	                         .threads = 1,
	                         .duration = 10,
	                         .buffer_size = 1ull << 30,
	                         .precision = 2,
	                         .sweep_f = 2,
	                         .ops_str = "read",
	                         .repeat = 1,
	                         .buffers = 1,
	                         .perftest_duration = 3,
	                         .perftest_port = 18515,
	                         .iterations = 1000,
	                         .target_gpu_id = -1};
	set_unit(o, "GB");
	ro->ops[0] = BENCH_READ;
	ro->nops = 1;
	ro->buffer_given = false;
	g_p.mode = BENCH_LOOPBACK;
	g_p.baseline = BENCH_BASELINE_NONE;
	g_p.scheme = BENCH_SCHEME_PAIRWISE;
	g_p.scheme_seen = g_p.pairs_seen = g_p.tp_seen = g_p.dev_seen = false;
}

static bool scheme_given(const struct parsed *p)
{
	return p->scheme_seen || p->pairs_seen || p->tp_seen || p->dev_seen;
}

__attribute__((format(printf, 1, 2))) static int scheme_err(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "pdkv-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

/* --scheme and its counts: one rule per scheme for which side --num-pairs sets, nixlbench's
 * --num_initiator_dev/--num_target_dev as the other spelling, and the comparisons that have no
 * multi-pair form (Mooncake's bench and ib_write_bw run one pair). */
static int check_scheme(struct bench_opts *o, const struct parsed *p)
{
	int n = 0, i = o->num_init_dev, t = o->num_target_dev, hi, lo;
	o->scheme_on = scheme_given(p);
	o->scheme_id = p->scheme;
	o->scheme = bench_scheme_names[p->scheme];
	if (!o->scheme_on)
		return 0;
	if (o->mode_id == BENCH_TARGET) {
		fprintf(stderr, "pdkv-bench: --scheme and its counts are for the initiator or "
		                "loopback; a target serves one segment (start one per target)\n");
		return 2;
	}
	/* Mooncake's transfer_engine_bench and ib_write_bw run one pair: no same-topology run */
	if (o->compare_mooncake)
		return scheme_err(
		    "--compare-mooncake is not supported with --scheme=%s: Mooncake's "
		    "transfer_engine_bench runs one initiator against one target. Run "
		    "the single-pair comparison separately (the same flags without "
		    "--scheme and its counts), or use --baseline=socket for a "
		    "same-topology reference",
		    o->scheme);
	if (o->compare_perftest)
		return scheme_err("--compare-perftest is not supported with --scheme=%s: "
		                  "ib_write_bw runs one pair of devices. Run the single-pair "
		                  "comparison separately (the same flags without --scheme and its "
		                  "counts), or use --baseline=socket for a same-topology reference",
		                  o->scheme);
	if (p->tp_seen && o->scheme_id != BENCH_SCHEME_TP)
		return scheme_err("--tp-prefill/--tp-decode are for --scheme=tp");
	if (o->scheme_id == BENCH_SCHEME_TP) {
		if (p->pairs_seen)
			return scheme_err(
			    "--num-pairs does not apply to --scheme=tp: its pairs follow "
			    "--tp-prefill/--tp-decode");
		if (p->tp_seen && p->dev_seen)
			return scheme_err(
			    "--scheme=tp: give --tp-prefill/--tp-decode or nixlbench's "
			    "--num_initiator_dev/--num_target_dev, not both");
		if (!p->dev_seen) {
			o->tp_prefill = o->tp_prefill ? o->tp_prefill : 1;
			o->tp_decode = o->tp_decode ? o->tp_decode : 1;
			i = o->tp_prefill;
			t = o->tp_decode;
		} else {
			o->num_init_dev = i = i ? i : 1;
			o->num_target_dev = t = t ? t : 1;
		}
		hi = i > t ? i : t;
		lo = i > t ? t : i;
		if (hi % lo)
			return scheme_err("--scheme=tp: %s %d and %s %d: the larger must be a "
			                  "multiple of the smaller (vLLM's rule)",
			                  p->dev_seen ? "--num_initiator_dev" : "--tp-prefill", i,
			                  p->dev_seen ? "--num_target_dev" : "--tp-decode", t);
		if (o->kv_geom[0] && o->kv_geom[1] % hi)
			return scheme_err(
			    "--scheme=tp: --kv-geometry's %d kv heads do not split over %d "
			    "ranks (vLLM would replicate heads; not modelled)",
			    o->kv_geom[1], hi);
		o->pairs[0] = hi;
		o->npoints = 1;
	} else {
		bool pw = o->scheme_id == BENCH_SCHEME_PAIRWISE;
		bool m2o = o->scheme_id == BENCH_SCHEME_MANYTOONE;
		if (pw && i && t && i != t)
			return scheme_err("--scheme=pairwise: --num_initiator_dev %d and "
			                  "--num_target_dev %d must be equal",
			                  i, t);
		if ((m2o && t > 1) || (!pw && !m2o && i > 1))
			return scheme_err(m2o ? "--scheme=manytoone has one target (got "
			                        "--num_target_dev %d)"
			                      : "--scheme=onetomany has one initiator (got "
			                        "--num_initiator_dev %d)",
			                  m2o ? t : i);
		n = pw ? (i ? i : t) : m2o ? i : t;
		if (p->pairs_seen && n > 1)
			return scheme_err("give --num-pairs or nixlbench's --num_initiator_dev/"
			                  "--num_target_dev (%d), not both",
			                  n);
		if (!p->pairs_seen) {
			o->pairs[0] = n ? n : 1;
			o->npoints = 1;
		}
	}
	for (int k = 0; k < o->npoints; k++)
		if ((uint64_t)o->pairs[k] * o->threads > 256)
			return scheme_err("--scheme: %d pairs x %d threads is over 256 threads",
			                  o->pairs[k], (int)o->threads);
	return 0;
}

/* Combinations the table cannot see: sweep bounds, and flags that only make sense together. */
static int check_combinations(struct bench_opts *o)
{
	if (o->gap_ms > 0 && o->compare_mooncake) {
		fprintf(stderr,
		        "pdkv-bench: --gap-ms cannot go with --compare-mooncake: Mooncake's "
		        "bench runs its batches back to back, so its rows would not compare\n");
		return 2;
	}
	if ((o->latency && bench_lat_check(o)) || bench_fault_check(o) || bench_affinity_parse(o) ||
	    bench_cc_parse(o))
		return 2;
	if (o->buffers > 1 && (o->baseline_id != BENCH_BASELINE_NONE || o->compare_mooncake ||
	                       o->compare_perftest || o->verify_written || scheme_given(&g_p))) {
		fprintf(stderr,
		        "pdkv-bench: --buffers=%d is for pdkv's engine rows alone: not with "
		        "--baseline, --compare-mooncake, --compare-perftest, "
		        "--verify_written or --scheme\n",
		        o->buffers);
		return 2;
	}
	if (o->sweep_b || o->sweep_e) {
		if (!o->sweep_b)
			o->sweep_b = o->block;
		if (!o->sweep_e)
			o->sweep_e = o->sweep_b;
		if (o->sweep_e < o->sweep_b) {
			fprintf(stderr, "pdkv-bench: -e %llu is below -b %llu\n",
			        (unsigned long long)o->sweep_e, (unsigned long long)o->sweep_b);
			return 2;
		}
		o->block = o->sweep_b;
	}
	if (o->kv_geom[0]) {
		uint64_t bt = o->kv_block_tokens ? (uint64_t)o->kv_block_tokens : 16,
		         n = o->kv_prompt_tokens ? (uint64_t)o->kv_prompt_tokens : 1024,
		         blen = bt * (uint64_t)o->kv_geom[1] * (uint64_t)o->kv_geom[2] *
		                (uint64_t)o->kv_geom[3],
		         nblk = (n + bt - 1) / bt, run, nruns;
		if (o->sweep_b || o->sweep_e) {
			fprintf(stderr,
			        "pdkv-bench: --kv-geometry sets the transfer shape: no -b/-e "
			        "sweep with it\n");
			return 2;
		}
		run = o->kv_run_blocks && (uint64_t)o->kv_run_blocks < nblk
		          ? (uint64_t)o->kv_run_blocks
		          : nblk;
		nruns = (nblk + run - 1) / run;
		o->block = run * blen;
		o->batch = 2 * (uint64_t)o->kv_geom[0] * nruns;
		if (!o->quiet)
			printf(
			    "# kv-geometry %d,%d,%d,%d: %llu tokens = %llu blocks of %llu tokens "
			    "(%llu bytes per buffer); one batch = %d layers x K,V x %llu run(s) "
			    "of %llu blocks = %llu requests of %llu bytes (%.1f MB per prompt)\n",
			    o->kv_geom[0], o->kv_geom[1], o->kv_geom[2], o->kv_geom[3],
			    (unsigned long long)n, (unsigned long long)nblk, (unsigned long long)bt,
			    (unsigned long long)blen, o->kv_geom[0], (unsigned long long)nruns,
			    (unsigned long long)run, (unsigned long long)o->batch,
			    (unsigned long long)o->block, (double)(o->block * o->batch) / 1e6);
	} else if (o->kv_block_tokens || o->kv_prompt_tokens || o->kv_run_blocks) {
		fprintf(stderr, "pdkv-bench: --block-size / --prompt-tokens / --kv-run-blocks "
		                "shape --kv-geometry transfers: give --kv-geometry too (bytes per "
		                "transfer are --block_size)\n");
		return 2;
	}
	if (o->mode_id == BENCH_INITIATOR && !o->segment) {
		fprintf(stderr,
		        "pdkv-bench: --mode=initiator needs --segment_id (the target prints "
		        "it)\n");
		return 2;
	}
	if (o->compare_perftest && (!o->protocol || strcmp(o->protocol, "rdma"))) {
		fprintf(stderr,
		        "pdkv-bench: --compare-perftest compares against ib_write_bw, an RDMA "
		        "benchmark: it needs --protocol=rdma (got %s)\n",
		        o->protocol ? o->protocol : "--auto_discovery");
		return 2;
	}
	if (o->target_device && o->mode_id != BENCH_LOOPBACK) {
		fprintf(stderr, "pdkv-bench: --target_device_name is for --mode=loopback (a "
		                "separate target takes --device_name)\n");
		return 2;
	}
	if (o->use_vram && o->baseline_id != BENCH_BASELINE_NONE) {
		if (scheme_given(&g_p))
			fprintf(stderr,
			        "pdkv-bench: --baseline=%s moves host memory only: not with "
			        "--scheme --use_vram; run the scheme without --use_vram for its "
			        "socket reference\n",
			        o->baseline);
		else
			fprintf(stderr,
			        "pdkv-bench: --baseline=%s moves host memory only; with --use_vram "
			        "the cudaMemcpy rows are the reference\n",
			        o->baseline);
		return 2;
	}
	if (o->mode_id == BENCH_INITIATOR && o->baseline_id != BENCH_BASELINE_NONE &&
	    !o->baseline_server) {
		fprintf(stderr,
		        "pdkv-bench: --baseline=%s as initiator needs --baseline_server=H:P "
		        "(printed by a target started with --baseline=socket)\n",
		        o->baseline);
		return 2;
	}
	return 0;
}

int bench_parse(int argc, char **argv, struct bench_opts *o, struct bench_run_ops *ro, bool *done)
{
	int rc;
	set_defaults(&g_o, &g_ro);
	rc = pd_opt_parse(&bench_spec, argc, argv, 1, NULL, NULL);
	*done = rc == 1;
	if (rc)
		return rc == 1 ? 0 : 2;
	g_o.mode_id = (enum bench_mode)g_p.mode;
	g_o.mode = bench_mode_names[g_p.mode];
	g_o.baseline_id = (enum bench_baseline)g_p.baseline;
	g_o.baseline = bench_baseline_names[g_p.baseline];
	if (g_o.nic_matrix_given)
		fprintf(stderr, "pdkv-bench: note: --nic_priority_matrix is ignored (pdkv "
		                "discovers the topology)\n");
	memcpy(g_o.lat_ops, g_ro.ops, sizeof(g_o.lat_ops));
	g_o.lat_nops = g_ro.nops;
	rc = check_combinations(&g_o);
	if (!rc)
		rc = check_scheme(&g_o, &g_p);
	*o = g_o;
	*ro = g_ro;
	return rc;
}
