/* pdkv-bench: transfer_engine_bench's flags and output on pdkv's engine, plus an nccl-tests
 * size sweep, --check, a plain-socket baseline, and a loopback mode that spawns its own target. */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pd_log.h"
#include "pd_proc.h"
#include "pd_util.h"
#include "te/te.h"
#include "te/te_inspect.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: pdkv bench [flags]   (flags spelled as Mooncake's transfer_engine_bench)\n"
	    "  --mode=target|initiator|loopback   loopback = spawn a local target, run the\n"
	    "                                     initiator against it, stop it (default)\n"
	    "  --metadata_server=CONN       P2PHANDSHAKE (default), etcd://h:p, h:p, redis://h:p,\n"
	    "                               http://h:p/metadata\n"
	    "  --local_server_name=NAME     default: the host name (P2P rewrites it to ip:port)\n"
	    "  --segment_id=NAME            initiator: the target's segment (the target prints "
	    "it)\n"
	    "  --protocol=tcp|rdma          default tcp; --auto_discovery picks rdma if an HCA "
	    "exists\n"
	    "  --device_name=LIST           rdma devices, comma list\n"
	    "  --operation=read|write[,..]  default read; write,read runs both\n"
	    "  --block_size=N (65536)  --batch_size=N (128)  --threads=N (1)  --duration=S (10)\n"
	    "  --buffer_size=N              target buffer (1 GiB; loopback: just what rows need)\n"
	    "  --report_unit=GB|GiB|Gb|MB|MiB|Mb|KB|KiB|Kb (GB)  --report_precision=N (2)\n"
	    "  -b MIN -e MAX -f FACTOR      size sweep (nccl-tests); one row per block size\n"
	    "  --check                      verify every byte; #wrong per row (not timed)\n"
	    "  --min-bw=X                   exit 1 if a pdkv row is below X report_units/s\n"
	    "  --json=FILE --csv=FILE       machine-readable results\n"
	    "  --baseline=none|socket|socket-only  socket: also run a plain C socket with the "
	    "same\n"
	    "                               shape and print the ratio (target side serves it too)\n"
	    "  --baseline_server=H:P        initiator: the target's socket baseline address\n"
	    "  --repeat=N                   run every row N times (socket and pdkv interleaved);\n"
	    "                               the ratio line uses the best of each\n"
	    "  --use_vram[=true|false]      both sides' buffers in GPU memory (cudaMalloc on\n"
	    "                               --gpu_id, registered as cuda:N); prints cudaMemcpy\n"
	    "                               D2D/D2H/H2D for the same sizes; exit 77 without CUDA\n"
	    "  --gpu_id=N                   CUDA device for --use_vram (0)\n"
	    "  rdma: rows end with %% of line rate (port 1 speed x width of --device_name, "
	    "summed)\n"
	    "  --compare-perftest           rdma: also run ib_write_bw (perftest) per size on the\n"
	    "                               same device pairs; prints pdkv/ib_write_bw per size.\n"
	    "                               target: keeps ib_write_bw servers up (port P+i, -s "
	    "per\n"
	    "                               size in -b/-e/-f order: give both sides the same "
	    "sizes)\n"
	    "  --target_device_name=LIST    loopback: the spawned target's devices "
	    "(--device_name)\n"
	    "  --perftest_host=IP           initiator: ib_write_bw server address (default: the\n"
	    "                               target segment's host)\n"
	    "  --perftest_duration=S (3)    ib_write_bw -D, same on both sides\n"
	    "  --perftest_port=P (18515)    device i uses port P+i\n"
	    "Exit: 0 ok; 1 wrong bytes, failed transfers or under --min-bw; 2 bad usage.\n");
}

static int bad(const char *flag, const char *val, const char *want)
{
	fprintf(stderr, "pdkv-bench: %s: expected %s, got \"%s\"\n", flag, want, val ? val : "");
	return 2;
}

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

enum {
	F_MODE = 256,
	F_META,
	F_LOCAL,
	F_SEG,
	F_PROTO,
	F_DEV,
	F_OP,
	F_BLOCK,
	F_BATCH,
	F_THREADS,
	F_DUR,
	F_BUF,
	F_UNIT,
	F_PREC,
	F_AUTO,
	F_MATRIX,
	F_CHECK,
	F_MINBW,
	F_JSON,
	F_CSV,
	F_BASE,
	F_BASESRV,
	F_READY,
	F_REPEAT,
	F_VRAM,
	F_GPU,
	F_CMPPT,
	F_TDEV,
	F_PTHOST,
	F_PTDUR,
	F_PTPORT,
	F_HELP
};

static const struct option longopts[] = {
    {"mode", 1, 0, F_MODE},
    {"metadata_server", 1, 0, F_META},
    {"local_server_name", 1, 0, F_LOCAL},
    {"segment_id", 1, 0, F_SEG},
    {"protocol", 1, 0, F_PROTO},
    {"device_name", 1, 0, F_DEV},
    {"operation", 1, 0, F_OP},
    {"block_size", 1, 0, F_BLOCK},
    {"batch_size", 1, 0, F_BATCH},
    {"threads", 1, 0, F_THREADS},
    {"duration", 1, 0, F_DUR},
    {"buffer_size", 1, 0, F_BUF},
    {"report_unit", 1, 0, F_UNIT},
    {"report_precision", 1, 0, F_PREC},
    {"auto_discovery", 2, 0, F_AUTO},
    {"nic_priority_matrix", 1, 0, F_MATRIX},
    {"check", 0, 0, F_CHECK},
    {"min-bw", 1, 0, F_MINBW},
    {"min_bw", 1, 0, F_MINBW},
    {"json", 1, 0, F_JSON},
    {"csv", 1, 0, F_CSV},
    {"baseline", 1, 0, F_BASE},
    {"baseline_server", 1, 0, F_BASESRV},
    {"ready_file", 1, 0, F_READY},
    {"repeat", 1, 0, F_REPEAT},
    {"use_vram", 2, 0, F_VRAM},
    {"gpu_id", 1, 0, F_GPU},
    {"compare-perftest", 0, 0, F_CMPPT},
    {"compare_perftest", 0, 0, F_CMPPT},
    {"target_device_name", 1, 0, F_TDEV},
    {"perftest_host", 1, 0, F_PTHOST},
    {"perftest_duration", 1, 0, F_PTDUR},
    {"perftest_port", 1, 0, F_PTPORT},
    {"help", 0, 0, F_HELP},
    {0, 0, 0, 0},
};

struct run_ops {
	int ops[2];
	int nops;
	bool buffer_given;
};

static int parse(int argc, char **argv, struct bench_opts *o, struct run_ops *ro)
{
	int c;
	uint64_t v;
	double d;
	char *end;

	*o = (struct bench_opts){.mode = "loopback",
	                         .metadata = "P2PHANDSHAKE",
	                         .protocol = "tcp",
	                         .op = TE_READ,
	                         .block = 65536,
	                         .batch = 128,
	                         .threads = 1,
	                         .duration = 10,
	                         .buffer_size = 1ull << 30,
	                         .precision = 2,
	                         .sweep_f = 2,
	                         .baseline = "none",
	                         .ops_str = "read",
	                         .repeat = 1,
	                         .perftest_duration = 3,
	                         .perftest_port = 18515};
	set_unit(o, "GB");
	ro->ops[0] = TE_READ;
	ro->nops = 1;
	ro->buffer_given = false;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "b:e:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case F_MODE:
			if (strcmp(optarg, "target") && strcmp(optarg, "initiator") &&
			    strcmp(optarg, "loopback"))
				return bad("--mode", optarg, "target, initiator or loopback");
			o->mode = optarg;
			break;
		case F_META:
			o->metadata = optarg;
			break;
		case F_LOCAL:
			o->local_name = optarg;
			break;
		case F_SEG:
			o->segment = optarg;
			break;
		case F_PROTO:
			if (strcmp(optarg, "tcp") && strcmp(optarg, "rdma"))
				return bad("--protocol", optarg, "tcp or rdma");
			o->protocol = optarg;
			break;
		case F_DEV:
			o->device = optarg;
			break;
		case F_AUTO:
			if (!optarg || !strcmp(optarg, "true") || !strcmp(optarg, "1"))
				o->protocol = NULL;
			break;
		case F_MATRIX:
			fprintf(stderr, "pdkv-bench: note: --nic_priority_matrix is ignored (pdkv "
			                "discovers the topology)\n");
			break;
		case F_OP: {
			char tmp[64], *tok, *save = NULL;
			snprintf(tmp, sizeof(tmp), "%s", optarg);
			o->ops_str = optarg;
			ro->nops = 0;
			for (tok = strtok_r(tmp, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (ro->nops == 2 || (strcmp(tok, "read") && strcmp(tok, "write")))
					return bad("--operation", optarg,
					           "read, write, or a list of both");
				ro->ops[ro->nops++] = strcmp(tok, "read") ? TE_WRITE : TE_READ;
			}
			if (!ro->nops)
				return bad("--operation", optarg, "read or write");
			break;
		}
		case F_BLOCK:
			if (pd_parse_size(optarg, &o->block) || !o->block ||
			    o->block > (1ull << 36))
				return bad("--block_size", optarg, "a size like 65536 or 1M");
			break;
		case F_BATCH:
			if (pd_parse_size(optarg, &o->batch) || !o->batch || o->batch > 65536)
				return bad("--batch_size", optarg, "1..65536");
			break;
		case F_THREADS:
			if (pd_parse_u64(optarg, &o->threads) || !o->threads ||
			    o->threads > BENCH_MAX_THREADS)
				return bad("--threads", optarg, "1..64");
			break;
		case F_DUR:
			d = strtod(optarg, &end);
			if (*end || end == optarg || !(d > 0) || d > 86400)
				return bad("--duration", optarg, "seconds > 0");
			o->duration = d;
			break;
		case F_BUF:
			if (pd_parse_size(optarg, &o->buffer_size) || o->buffer_size < 4096)
				return bad("--buffer_size", optarg, "a size >= 4096 like 1G");
			ro->buffer_given = true;
			break;
		case F_UNIT:
			if (set_unit(o, optarg))
				return bad("--report_unit", optarg,
				           "GB|GiB|Gb|MB|MiB|Mb|KB|KiB|Kb");
			break;
		case F_PREC:
			if (pd_parse_u64(optarg, &v) || v > 9)
				return bad("--report_precision", optarg, "0..9");
			o->precision = (int)v;
			break;
		case 'b':
			if (pd_parse_size(optarg, &o->sweep_b) || !o->sweep_b)
				return bad("-b", optarg, "a size like 64K");
			break;
		case 'e':
			if (pd_parse_size(optarg, &o->sweep_e) || !o->sweep_e)
				return bad("-e", optarg, "a size like 1M");
			break;
		case 'f':
			d = strtod(optarg, &end);
			if (*end || end == optarg || !(d > 1) || d > 1024)
				return bad("-f", optarg, "a factor > 1");
			o->sweep_f = d;
			break;
		case F_CHECK:
			o->check = true;
			break;
		case F_MINBW:
			d = strtod(optarg, &end);
			if (*end || end == optarg || !(d >= 0))
				return bad("--min-bw", optarg, "a bandwidth in report units");
			o->min_bw = d;
			break;
		case F_JSON:
			o->json = optarg;
			break;
		case F_CSV:
			o->csv = optarg;
			break;
		case F_BASE:
			if (strcmp(optarg, "none") && strcmp(optarg, "socket") &&
			    strcmp(optarg, "socket-only"))
				return bad("--baseline", optarg, "none, socket or socket-only");
			o->baseline = optarg;
			break;
		case F_BASESRV:
			o->baseline_server = optarg;
			break;
		case F_READY:
			o->ready_file = optarg;
			break;
		case F_REPEAT:
			if (pd_parse_u64(optarg, &v) || v < 1 || v > 100)
				return bad("--repeat", optarg, "1..100");
			o->repeat = (int)v;
			break;
		case F_VRAM:
			if (!optarg || !strcmp(optarg, "true") || !strcmp(optarg, "1"))
				o->use_vram = true;
			else if (!strcmp(optarg, "false") || !strcmp(optarg, "0"))
				o->use_vram = false;
			else
				return bad("--use_vram", optarg, "true or false");
			break;
		case F_GPU:
			if (pd_parse_u64(optarg, &v) || v > 1023)
				return bad("--gpu_id", optarg, "a CUDA device number 0..1023");
			o->gpu_id = (int)v;
			break;
		case F_CMPPT:
			o->compare_perftest = true;
			break;
		case F_TDEV:
			o->target_device = optarg;
			break;
		case F_PTHOST:
			o->perftest_host = optarg;
			break;
		case F_PTDUR:
			d = strtod(optarg, &end);
			if (*end || end == optarg || !(d >= 1) || d > 3600)
				return bad("--perftest_duration", optarg, "whole seconds 1..3600");
			o->perftest_duration = d;
			break;
		case F_PTPORT:
			if (pd_parse_u64(optarg, &v) || v < 1024 || v > 65000)
				return bad("--perftest_port", optarg, "a port 1024..65000");
			o->perftest_port = (int)v;
			break;
		case 'h':
		case F_HELP:
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "pdkv-bench: unknown or incomplete flag \"%s\"\n",
			        argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pdkv-bench: unexpected argument \"%s\"\n", argv[optind]);
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
	if (!strcmp(o->mode, "initiator") && !o->segment) {
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
	if (o->target_device && strcmp(o->mode, "loopback")) {
		fprintf(stderr, "pdkv-bench: --target_device_name is for --mode=loopback (a "
		                "separate target takes --device_name)\n");
		return 2;
	}
	if (o->use_vram && strcmp(o->baseline, "none")) {
		fprintf(stderr,
		        "pdkv-bench: --baseline=%s moves host memory only; with --use_vram "
		        "the cudaMemcpy rows are the reference\n",
		        o->baseline);
		return 2;
	}
	if (!strcmp(o->mode, "initiator") && strcmp(o->baseline, "none") && !o->baseline_server) {
		fprintf(stderr,
		        "pdkv-bench: --baseline=%s as initiator needs --baseline_server=H:P "
		        "(printed by a target started with --baseline=socket)\n",
		        o->baseline);
		return 2;
	}
	return 0;
}

static size_t sizes_of(const struct bench_opts *o, uint64_t *out, size_t max)
{
	size_t n = 0;
	if (!o->sweep_b) {
		out[n++] = o->block;
		return n;
	}
	for (double s = (double)o->sweep_b; s <= (double)o->sweep_e * 1.0000001 && n < max;
	     s *= o->sweep_f)
		out[n++] = (uint64_t)llround(s);
	return n;
}

static void default_name(struct bench_opts *o, const char *role, char *buf, size_t len)
{
	char host[128] = "localhost";
	if (o->local_name)
		return;
	gethostname(host, sizeof(host) - 1);
	if (strcmp(o->metadata, "P2PHANDSHAKE") && role)
		snprintf(buf, len, "%s:bench-%s-%d", host, role, (int)getpid());
	else
		snprintf(buf, len, "%s", host);
	o->local_name = buf;
}

/* Listening socket for the plain-socket baseline (target side). */
static int sock_listen(char *addr, size_t len)
{
	const char *bind = getenv("MC_TCP_BIND_ADDRESS");
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char ip[128];
	int fd = pd_tcp_listen(bind && *bind ? bind : NULL, 0, 16);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&sa, &sl))
		return -1;
	te_inspect_local_ip(ip, sizeof(ip));
	snprintf(addr, len, "%s:%d", ip, ntohs(sa.sin_port));
	return fd;
}

static double cpu_self(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime+stime of another process (the spawned target), from /proc/PID/stat; -1 if unknown */
static double cpu_of(pid_t pid)
{
	char path[64], *txt = NULL, *p;
	unsigned long long ut, st;
	double v = -1;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (pd_read_file(path, 4096, &txt, NULL))
		return -1;
	p = strrchr(txt, ')'); /* comm may hold spaces */
	if (p &&
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
		v = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	free(txt);
	return v;
}

struct runner {
	pid_t target_pid;
	struct bench_opts *o;
	struct bench_te *te;
	const char *sock_server;
	struct bench_row rows[128];
	size_t nrows;
	int rc;
};

static void add_row(struct runner *r, struct bench_row *row, double c0, double t0)
{
	double t1 = cpu_of(r->target_pid);
	row->cpu_init_s = cpu_self() - c0;
	row->cpu_target_s = t0 >= 0 && t1 >= 0 ? t1 - t0 : 0;
	row->pct_line_rate =
	    r->o->line_rate_gbps > 0 && row->seconds > 0
	        ? (double)row->bytes * 8 / row->seconds / 1e9 / r->o->line_rate_gbps * 100
	        : -1;
	bench_table_row(r->o, row);
	if (row->bytes)
		printf("# cpu: initiator %.2f s, target %.2f s = %.2f s per GB moved\n",
		       row->cpu_init_s, row->cpu_target_s,
		       (row->cpu_init_s + row->cpu_target_s) / ((double)row->bytes / 1e9));
	if (row->wrong || row->failed) {
		fprintf(stderr,
		        "pdkv-bench: %s %s %llu B: %llu wrong bytes, %llu failed transfers\n",
		        row->kind, row->op ? "write" : "read", (unsigned long long)row->block,
		        (unsigned long long)row->wrong, (unsigned long long)row->failed);
		r->rc = 1;
	}
	if (r->o->min_bw > 0 && !strcmp(row->kind, "pdkv") && row->bw < r->o->min_bw) {
		fprintf(stderr, "pdkv-bench: BW result %.*f %s/s is below --min-bw %g\n",
		        r->o->precision, row->bw, r->o->unit, r->o->min_bw);
		r->rc = 1;
	}
	if (r->nrows < PD_ARRAY_SIZE(r->rows))
		r->rows[r->nrows++] = *row;
}

static void run_all(struct runner *r, const struct run_ops *ro)
{
	struct bench_opts *o = r->o;
	uint64_t sizes[64];
	size_t ns = sizes_of(o, sizes, PD_ARRAY_SIZE(sizes));

	bench_table_header(o);
	for (int k = 0; k < ro->nops; k++) {
		o->op = ro->ops[k];
		for (size_t i = 0; i < ns; i++) {
			double best_s = 0, best_p = 0;
			for (int rep = 0; rep < o->repeat; rep++) {
				struct bench_row srow, prow;
				double c0, t0;
				if (strcmp(o->baseline, "none")) {
					c0 = cpu_self();
					t0 = cpu_of(r->target_pid);
					if (bench_sock_row(o, r->sock_server, sizes[i], &srow))
						r->rc = 1;
					add_row(r, &srow, c0, t0);
					if (srow.bw > best_s)
						best_s = srow.bw;
				}
				if (!strcmp(o->baseline, "socket-only"))
					continue;
				c0 = cpu_self();
				t0 = cpu_of(r->target_pid);
				if (bench_te_row(r->te, o, sizes[i], &prow))
					r->rc = 1;
				add_row(r, &prow, c0, t0);
				if (prow.bw > best_p)
					best_p = prow.bw;
			}
			bench_gpu_reference(o, sizes[i], best_p);
			if (best_s > 0 && best_p > 0)
				printf("# ratio pdkv/socket %s %llu B: %.*f / %.*f %s/s = %.2f%s\n",
				       o->op ? "write" : "read", (unsigned long long)sizes[i],
				       o->precision, best_p, o->precision, best_s, o->unit,
				       best_p / best_s, o->repeat > 1 ? " (best of each)" : "");
		}
	}
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct run_ops ro;
	struct runner r = {0};
	struct pd_proc target = {0};
	char namebuf[256], seg[256], sockaddr_s[160], ready[256] = "";
	uint64_t sizes[64], max_block = 0, region;
	size_t ns;
	int rc;

	pd_log_set_name("pdkv-bench");
	rc = parse(argc, argv, &o, &ro);
	if (!rc)
		rc = bench_gpu_require(&o);
	if (!rc && o.compare_perftest)
		rc = bench_perftest_check();
	if (rc)
		return rc;
	ns = sizes_of(&o, sizes, PD_ARRAY_SIZE(sizes));
	for (size_t i = 0; i < ns; i++)
		if (sizes[i] > max_block)
			max_block = sizes[i];
	region = max_block * o.batch * o.threads;
	if (o.buffer_size < region)
		o.buffer_size = region;

	if (!strcmp(o.mode, "target")) {
		sigset_t ss;
		int lfd = -1;
		/* block before any thread exists, so sigwait() in the target gets them */
		sigemptyset(&ss);
		sigaddset(&ss, SIGINT);
		sigaddset(&ss, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &ss, NULL);
		default_name(&o, "target", namebuf, sizeof(namebuf));
		if (strcmp(o.baseline, "none") &&
		    (lfd = sock_listen(sockaddr_s, sizeof(sockaddr_s))) < 0) {
			fprintf(stderr, "pdkv-bench: cannot listen for the socket baseline\n");
			return 1;
		}
		if (o.compare_perftest && bench_perftest_serve_start(&o, sizes, ns)) {
			if (lfd >= 0)
				close(lfd);
			return 1;
		}
		rc = bench_te_target(&o, lfd, sockaddr_s);
		if (o.compare_perftest)
			bench_perftest_serve_stop();
		if (lfd >= 0)
			close(lfd);
		return rc;
	}

	if (!strcmp(o.mode, "loopback")) {
		char *targv[24], bufarg[64], *log;
		static char a_meta[1100], a_proto[64], a_dev[600], a_ready[300], a_name[300],
		    a_gpu[64];
		const char *self = pd_self_dir();
		char exe[PATH_MAX + 16];
		int ta = 0;
		uint64_t end;

		snprintf(exe, sizeof(exe), "%s/pdkv-bench", self);
		snprintf(ready, sizeof(ready), "%s/pdkv-bench-ready.%d",
		         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
		unlink(ready);
		if (!ro.buffer_given)
			o.buffer_size = region;
		snprintf(bufarg, sizeof(bufarg), "--buffer_size=%llu",
		         (unsigned long long)o.buffer_size);
		targv[ta++] = exe;
		targv[ta++] = "--mode=target";
		snprintf(a_meta, sizeof(a_meta), "--metadata_server=%s", o.metadata);
		targv[ta++] = a_meta;
		if (o.protocol) {
			snprintf(a_proto, sizeof(a_proto), "--protocol=%s", o.protocol);
			targv[ta++] = a_proto;
		} else {
			targv[ta++] = "--auto_discovery";
		}
		if (o.target_device || o.device) {
			snprintf(a_dev, sizeof(a_dev), "--device_name=%s",
			         o.target_device ? o.target_device : o.device);
			targv[ta++] = a_dev;
		}
		targv[ta++] = bufarg;
		snprintf(a_ready, sizeof(a_ready), "--ready_file=%s", ready);
		targv[ta++] = a_ready;
		if (strcmp(o.metadata, "P2PHANDSHAKE")) {
			char host[128] = "localhost";
			gethostname(host, sizeof(host) - 1);
			snprintf(a_name, sizeof(a_name), "--local_server_name=%s:bench-target-%d",
			         host, (int)getpid());
			targv[ta++] = a_name;
		}
		if (strcmp(o.baseline, "none"))
			targv[ta++] = "--baseline=socket";
		if (o.use_vram) {
			snprintf(a_gpu, sizeof(a_gpu), "--gpu_id=%d", o.gpu_id);
			targv[ta++] = "--use_vram";
			targv[ta++] = a_gpu;
		}
		targv[ta] = NULL;
		log = pd_asprintf("%s.log", ready);
		if (pd_proc_spawn(&target, "bench-target", targv, NULL, log)) {
			fprintf(stderr, "pdkv-bench: cannot start %s\n", exe);
			return 1;
		}
		end = pd_now_ns() + 20000000000ull;
		for (;;) {
			char *txt = NULL;
			if (!pd_read_file(ready, 4096, &txt, NULL)) {
				char *nl = strchr(txt, '\n');
				if (nl) {
					*nl = '\0';
					snprintf(seg, sizeof(seg), "%s", txt);
					snprintf(sockaddr_s, sizeof(sockaddr_s), "%s", nl + 1);
					sockaddr_s[strcspn(sockaddr_s, "\n")] = '\0';
				}
				free(txt);
				break;
			}
			if (!pd_proc_alive(&target) || pd_now_ns() > end) {
				char *tl = NULL;
				fprintf(stderr,
				        "pdkv-bench: the spawned target did not come up; its "
				        "log (%s):\n",
				        log);
				if (!pd_read_file(log, 1 << 16, &tl, NULL))
					fputs(tl, stderr);
				free(tl);
				pd_proc_stop(&target, 2000);
				return 1;
			}
			pd_sleep_ms(20);
		}
		o.segment = seg;
		if (strcmp(o.baseline, "none"))
			o.baseline_server = sockaddr_s;
		free(log);
	}

	default_name(&o, "initiator", namebuf, sizeof(namebuf));
	r.o = &o;
	r.target_pid = target.pid;
	r.sock_server = o.baseline_server;
	if (strcmp(o.baseline, "socket-only")) {
		if (bench_te_init(&o, region, &r.te)) {
			rc = 1;
			goto out;
		}
	}
	if (strcmp(o.baseline, "none") && bench_sock_prepare(region)) {
		rc = 1;
		goto out;
	}
	if (o.protocol && !strcmp(o.protocol, "rdma")) {
		static char lrdesc[512];
		if (!bench_rdma_line_rate(o.device, &o.line_rate_gbps, lrdesc, sizeof(lrdesc)))
			fprintf(stderr, "pdkv-bench: no %% of line rate in this report: %s\n",
			        lrdesc);
		o.line_rate_desc = lrdesc;
	}
	bench_banner(&o, r.te ? bench_te_local_name(r.te) : "-", o.segment,
	             r.te ? bench_te_remote_size(r.te) : o.buffer_size);
	run_all(&r, &ro);
	rc = r.rc;
	if (o.compare_perftest &&
	    bench_perftest_compare(&o, r.rows, r.nrows, sizes, ns, !strcmp(o.mode, "loopback")))
		rc = rc ? rc : 1;
	if (o.json && bench_write_json(&o, o.json, r.rows, r.nrows,
	                               r.te ? bench_te_local_name(r.te) : "-", o.segment)) {
		fprintf(stderr, "pdkv-bench: cannot write --json %s\n", o.json);
		rc = 1;
	}
	if (o.csv && bench_write_csv(&o, o.csv, r.rows, r.nrows)) {
		fprintf(stderr, "pdkv-bench: cannot write --csv %s\n", o.csv);
		rc = 1;
	}
out:
	bench_te_fini(r.te);
	if (target.pid) {
		pd_proc_stop(&target, 5000);
		if (!WIFEXITED(target.exit_status) || WEXITSTATUS(target.exit_status)) {
			fprintf(stderr,
			        "pdkv-bench: the spawned target did not exit cleanly "
			        "(status 0x%x)\n",
			        target.exit_status);
			rc = rc ? rc : 1;
		}
		unlink(ready);
		{
			char *log = pd_asprintf("%s.log", ready);
			if (log && !rc)
				unlink(log);
			free(log);
		}
	}
	return rc;
}
