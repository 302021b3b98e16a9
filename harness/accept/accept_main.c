/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-accept (`pdkv accept`): flags, the bench arguments both sides get, signals and the run
 * over the pairs; nodes and sides are acc_run.c's, the verdict acc_judge.c's, reports
 * acc_report.c's. */
#include "accept/acc_run.h"
#include "bench/bench.h"
#include "pd_env.h"
#include "pd_opt.h"
#include "pd_stats.h"
#include "pd_util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

struct args {
	const char *hosts, *pairs, *json, *plot, *workdir, *slow, *ssh_key;
	int netns, repeat, transport, connect_timeout;
	bool slurm, check;
	uint64_t seed;
	struct acc_judge_opts jo;
};

static struct args g_a = {.pairs = "all",
                          .repeat = 3,
                          .seed = 1,
                          .connect_timeout = 10,
                          .jo = {.threshold = 0.8, .max_spread = 0.5, .min_reps = 2}};

static struct pd_opt g_opts[] = {
    {.name = "hosts",
     .type = PD_OPT_STR,
     .dst = &g_a.hosts,
     .arg = "FILE",
     .help = "the nodes: hosts.txt of pdkv run --hosts (NAME [USER@]ADDRESS\n[port=N] "
             "[pdkv=PATH] [KEY=VALUE ...]), reached through ssh"},
    {.name = "slurm",
     .type = PD_OPT_FLAG,
     .dst = &g_a.slurm,
     .help = "the nodes: this Slurm allocation (scontrol show hostnames), each\nside a step "
             "(srun -w NODE -N1 -n1 --overlap); pdkv-bench at the same path"},
    {.name = "netns",
     .type = PD_OPT_INT,
     .dst = &g_a.netns,
     .arg = "N",
     .help = "the nodes: N network namespaces made here (node1..nodeN on\n198.18.0.0/15 "
             "veths into a bridge; root), removed at exit",
     .min = 2,
     .max = HR_NETNS_MAX},
    {.name = "pairs",
     .type = PD_OPT_STR,
     .dst = &g_a.pairs,
     .arg = "all|ring|random:K",
     .help = "which ordered pairs: every one, i -> i+1, or K drawn with --seed\n(default all)"},
    {.name = "seed",
     .type = PD_OPT_U64,
     .dst = &g_a.seed,
     .arg = "N",
     .help = "seed of --pairs random:K (default 1)"},
    {.name = "transport",
     .type = PD_OPT_CHOICE,
     .dst = &g_a.transport,
     .arg = "tcp|rdma",
     .help = "the engine's protocol (default tcp)",
     .choices = "tcp|rdma"},
    {.name = "check",
     .type = PD_OPT_FLAG,
     .dst = &g_a.check,
     .help = "verify every byte moved (a wrong byte fails the pair)"},
    {.name = "repeat",
     .type = PD_OPT_INT,
     .dst = &g_a.repeat,
     .arg = "R",
     .help = "measurements per pair (default 3); their spread decides whether\nthe pair can "
             "be judged",
     .min = 1,
     .max = ACC_MAX_REPS},
    {.name = "threshold",
     .type = PD_OPT_DOUBLE,
     .dst = &g_a.jo.threshold,
     .arg = "F",
     .help = "outlier: below F x the fleet median (default 0.8)",
     .min = 0,
     .max = 1,
     .min_excl = true},
    {.name = "max-spread",
     .type = PD_OPT_DOUBLE,
     .dst = &g_a.jo.max_spread,
     .arg = "F",
     .help = "a pair whose repeats straddle the threshold and whose (max - min)\n/ median is "
             "over F is UNCERTAIN, not judged (default 0.5)",
     .min = 0,
     .max = 100,
     .min_excl = true},
    {.name = "json", .type = PD_OPT_STR, .dst = &g_a.json, .arg = "FILE", .help = "write JSON"},
    {.name = "plot",
     .type = PD_OPT_STR,
     .dst = &g_a.plot,
     .arg = "FILE.png",
     .help = "gnuplot heatmap of the bandwidth matrix"},
    {.name = "workdir",
     .type = PD_OPT_STR,
     .dst = &g_a.workdir,
     .arg = "DIR",
     .help = "the sides' logs (default $TMPDIR/pdkv-accept.XXXXXX, kept)"},
    {.name = "ssh-key",
     .type = PD_OPT_STR,
     .dst = &g_a.ssh_key,
     .arg = "FILE",
     .help = "--hosts: ssh -i FILE (IdentitiesOnly; default: ssh's own choice)"},
    {.name = "connect-timeout",
     .type = PD_OPT_INT,
     .dst = &g_a.connect_timeout,
     .arg = "S",
     .help = "--hosts: ssh ConnectTimeout (default 10)",
     .min = 1,
     .max = 600},
    {.name = "netns-slow",
     .type = PD_OPT_STR,
     .dst = &g_a.slow,
     .arg = "NODE=RATE",
     .help = "self-test with --netns: limit NODE's link to RATE both ways\n(tc tbf, "
             "node2=200mbit) to see what a bad link looks like"},
};

static const struct pd_opt_spec g_spec = {
    .prog = "pdkv accept",
    .usage = "usage: pdkv accept (--hosts FILE | --slurm | --netns N) [options] [-- BENCH "
             "FLAGS]\nFleet acceptance matrix: pdkv bench between pairs of nodes (target on "
             "one, initiator\non the other), the N x N bandwidth and latency, each node's "
             "median and the outliers.\nBENCH FLAGS after -- are pdkv bench's "
             "(--block_size, --batch_size, --threads,\n--duration, --operation, -b/-e/-f, "
             "--device_name, --report_unit ...); accept's\ndefaults: --duration=1 "
             "--report_unit=MB.\n\n",
    .footer = "\nrepeats: --repeat rounds, each pair once per round. fleet median: the median "
              "over\nthe nodes of each node's best pair; a node is an outlier when every "
              "repeat of its\npairs is below --threshold x it (each node's median is printed "
              "beside it). pair\nmedian: over the pairs between nodes not slow; a pair is an "
              "outlier when every\nrepeat is below --threshold x it. A pair whose repeats "
              "straddle the threshold\nand spread over --max-spread, or whose median is below "
              "it, is UNCERTAIN (NOTRUN\nfor that pair), never an outlier.\nexit: 0 no "
              "outlier; 1 an outlier or a failed pair (--check); 2 "
              "bad input;\n77 nothing could be judged (no namespaces here, every pair "
              "uncertain); 130 interrupted\n",
    .opts = g_opts,
    .nopts = PD_ARRAY_SIZE(g_opts),
    .max_pos = -1,
};

/* The bench arguments both sides get: accept's defaults, the user's after --, then accept's
 * own; validated by pdkv bench's own parser. 0, or 2 with the message printed. */
static int bench_args(struct acc_run *r, char **user, int nuser, char *bufsz, size_t bsz)
{
	static char proto[32], rep[32];
	const char *fake[128] = {"pdkv-bench", "--mode=initiator", "--segment_id=127.0.0.1:1"};
	struct bench_opts o;
	struct bench_run_ops ro;
	int nf = 3;
	bool done;
	r->nbargs = 0;
	r->bargs[r->nbargs++] = "--duration=1";
	r->bargs[r->nbargs++] = "--report_unit=MB";
	for (int i = 0; i < nuser; i++) {
		static const char *const own[] = {
		    "--mode", "--segment_id", "--protocol", "--repeat",     "--json",
		    "--csv",  "--baseline",   "--scheme",   "--ready_file", "--check"};
		for (size_t k = 0; k < PD_ARRAY_SIZE(own); k++)
			if (!strncmp(user[i], own[k], strlen(own[k]))) {
				fprintf(
				    stderr,
				    "pdkv accept: bench flag %s: pdkv accept sets it itself (use "
				    "accept's --transport, --repeat, --check, --json)\n",
				    user[i]);
				return 2;
			}
		if (r->nbargs + 8 >= (int)PD_ARRAY_SIZE(r->bargs)) {
			fprintf(stderr, "pdkv accept: too many bench flags\n");
			return 2;
		}
		r->bargs[r->nbargs++] = user[i];
	}
	snprintf(proto, sizeof(proto), "--protocol=%s", g_a.transport ? "rdma" : "tcp");
	snprintf(rep, sizeof(rep), "--repeat=1"); /* accept's repeats are rounds over the pairs */
	r->bargs[r->nbargs++] = proto;
	r->bargs[r->nbargs++] = rep;
	if (g_a.check)
		r->bargs[r->nbargs++] = "--check";
	for (int i = 0; i < r->nbargs; i++)
		fake[nf++] = r->bargs[i];
	fake[nf] = NULL;
	if (bench_parse(nf, (char **)fake, &o, &ro, &done) || done) {
		fprintf(stderr, "pdkv accept: the bench flags after -- were refused (above)\n");
		return 2;
	}
	snprintf(r->unit, sizeof(r->unit), "%s", o.unit);
	if (!ro.buffer_given) {
		uint64_t blk = o.sweep_e > o.block ? o.sweep_e : o.block;
		r->buffer_size = blk * o.batch * o.threads;
		snprintf(bufsz, bsz, "--buffer_size=%llu", (unsigned long long)r->buffer_size);
		r->bargs[r->nbargs++] = bufsz;
	}
	r->row_timeout_s = (o.duration + 15) * ro.nops * (o.sweep_b ? 8 : 1) + 30;
	r->bargs[r->nbargs] = NULL;
	return 0;
}

static int setup(struct acc_run *r, char **pos, int npos, char *src, size_t ssz)
{
	static char bufsz[64];
	char why[1024];
	int ret, ways = !!g_a.hosts + g_a.slurm + (g_a.netns > 0);
	if (ways != 1) {
		fprintf(stderr,
		        "pdkv accept: give exactly one of --hosts FILE, --slurm, --netns N "
		        "(got %d)\n",
		        ways);
		return 2;
	}
	if ((ret = bench_args(r, pos, npos, bufsz, sizeof(bufsz))))
		return ret;
	snprintf(r->bench, sizeof(r->bench), "%s/pdkv-bench", pd_self_dir());
	if (g_a.workdir)
		snprintf(r->workdir, sizeof(r->workdir), "%s", g_a.workdir);
	else {
		const char *t = pd_env_str("TMPDIR");
		snprintf(r->workdir, sizeof(r->workdir), "%s/pdkv-accept.XXXXXX",
		         t && *t ? t : "/tmp");
		if (!mkdtemp(r->workdir)) {
			fprintf(stderr, "pdkv accept: cannot make %s: %s\n", r->workdir,
			        strerror(errno));
			return 2;
		}
	}
	if (mkdir(r->workdir, 0700) && errno != EEXIST) {
		fprintf(stderr, "pdkv accept: --workdir %s: %s\n", r->workdir, strerror(errno));
		return 2;
	}
	if (g_a.netns) {
		ret = acc_nodes_netns(r, g_a.netns, why, sizeof(why));
		snprintf(src, ssz, "netns:%d", g_a.netns);
	} else if (g_a.hosts) {
		ret = acc_nodes_hosts(r, g_a.hosts, g_a.ssh_key, g_a.connect_timeout, why,
		                      sizeof(why));
		snprintf(src, ssz, "hosts:%s", g_a.hosts);
	} else {
		ret = acc_nodes_slurm(r, why, sizeof(why));
		snprintf(src, ssz, "slurm");
	}
	if (!ret && g_a.slow)
		ret = acc_netns_slow(r, g_a.slow, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "pdkv accept: %s%s\n", ret == 77 ? "NOTRUN: " : "", why);
		if (!g_a.workdir) { /* nothing ran: no logs worth keeping */
			const char *rm[] = {"rm", "-rf", r->workdir, NULL};
			hr_cmd_run(rm, NULL, 0, 10000);
		}
	}
	return ret;
}

static void progress(const struct acc_run *r, const struct acc_pair *p, size_t k, size_t np,
                     double secs)
{
	double lo, hi;
	printf("[%zu/%zu] %s -> %s: ", k + 1, np, r->nodes[p->i].name, r->nodes[p->j].name);
	if (p->nrep) {
		double *v = (double *)p->bw;
		pd_stats_minmax(v, (size_t)p->nrep, &lo, &hi);
		printf("%.1f %s/s median of %d (%.1f..%.1f), p50 %.1f us",
		       pd_stats_median(v, (size_t)p->nrep), r->unit, p->nrep, lo, hi,
		       pd_stats_median(p->lat, (size_t)p->nrep));
	}
	if (p->error || p->wrong || p->failed)
		printf("%sFAILED: %s", p->nrep ? "; " : "", p->why);
	else if (!p->nrep)
		printf("no rows: %s", p->why);
	printf(" (%.1f s)\n", secs);
	fflush(stdout);
}

static void run_pairs(struct acc_run *r, int (*pl)[2], struct acc_pair *pairs, size_t np)
{
	bool need[ACC_MAX_NODES] = {0};
	char twhy[ACC_MAX_NODES][300];
	for (size_t k = 0; k < np; k++)
		need[pl[k][1]] = true;
	for (int x = 0; x < r->n; x++) {
		twhy[x][0] = '\0';
		need[x] = need[x] && !g_stop && !acc_target_spawn(r, x, twhy[x], sizeof(twhy[x]));
	}
	for (int x = 0; x < r->n && !g_stop; x++) {
		if (*twhy[x] || (need[x] && acc_target_wait(r, x, twhy[x], sizeof(twhy[x]))))
			fprintf(stderr, "pdkv accept: %s\n", twhy[x]);
		else if (need[x])
			printf("# target on %s (%s): segment %s\n", r->nodes[x].name,
			       r->nodes[x].addr, r->t[x].seg);
	}
	/* rounds: every pair once per round, so a burst of load on a busy host spreads over the
	 * pairs' repeats instead of sinking one pair's */
	for (size_t k = 0; k < np; k++) {
		memset(&pairs[k], 0, sizeof(pairs[k]));
		pairs[k].i = pl[k][0];
		pairs[k].j = pl[k][1];
	}
	for (int round = 0; round < g_a.repeat; round++)
		for (size_t k = 0; k < np; k++) {
			struct acc_pair one, *p = &pairs[k];
			double t0 = pd_now_s();
			if (p->error)
				continue; /* failed in an earlier round */
			if (g_stop || !*r->t[p->j].seg) {
				p->error = true;
				snprintf(p->why, sizeof(p->why), "%s",
				         g_stop ? "interrupted" : twhy[p->j]);
			} else {
				acc_pair_run(r, p->i, p->j, &one);
				for (int q = 0; q < one.nrep && p->nrep < ACC_MAX_REPS; q++) {
					p->bw[p->nrep] = one.bw[q];
					p->lat[p->nrep++] = one.lat[q];
				}
				p->wrong += one.wrong;
				p->failed += one.failed;
				if (one.error || !one.nrep) {
					p->error = one.error;
					memcpy(p->why, one.why, sizeof(p->why));
				}
			}
			printf("round %d/%d ", round + 1, g_a.repeat);
			progress(r, p, k, np, pd_now_s() - t0);
		}
}

int main(int argc, char **argv)
{
	static struct acc_run r;
	static int pl[ACC_MAX_PAIRS][2];
	static struct acc_pair pairs[ACC_MAX_PAIRS];
	struct acc_pairs_spec ps;
	struct acc_verdict v;
	char **pos = calloc((size_t)argc + 1, sizeof(char *)), err[512], src[600], cmd[2048] = "";
	int npos = 0, rc, np;
	if (!pos) {
		fprintf(stderr, "pdkv accept: out of memory\n");
		return 1;
	}
	rc = pd_opt_parse(&g_spec, argc, argv, 1, pos, &npos);
	if (!rc && acc_pairs_parse(g_a.pairs, &ps, err, sizeof(err))) {
		fprintf(stderr, "pdkv accept: %s\n", err);
		rc = 2;
	}
	if (rc) {
		free(pos);
		return rc == 1 ? 0 : 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	rc = setup(&r, pos, npos, src, sizeof(src));
	if (!rc &&
	    (np = acc_pairs_make(&ps, r.n, g_a.seed, pl, ACC_MAX_PAIRS, err, sizeof(err))) < 0) {
		fprintf(stderr, "pdkv accept: %s\n", err);
		rc = 2;
	}
	if (rc) {
		acc_run_teardown(&r);
		free(pos);
		return rc;
	}
	for (int i = 0; i < argc; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s",
		         i ? " " : "pdkv accept", i ? argv[i] : "");
	printf("# pdkv accept: %d nodes (%s), %d pairs, %s, %d repeats each; logs in %s\n", r.n,
	       src, np, g_a.transport ? "rdma" : "tcp", g_a.repeat, r.workdir);
	fflush(stdout);
	run_pairs(&r, pl, pairs, (size_t)np);
	acc_run_teardown(&r);
	acc_judge(pairs, (size_t)np, r.n, &g_a.jo, &v);
	struct acc_report_opts ro = {.unit = r.unit,
	                             .transport = g_a.transport ? "rdma" : "tcp",
	                             .pairs_spec = g_a.pairs,
	                             .source = src,
	                             .command = cmd,
	                             .jo = &g_a.jo};
	acc_print_matrix(r.nodes, r.n, pairs, (size_t)np, &v, &ro);
	rc = g_stop ? 130 : acc_exit_status(&v);
	if (g_a.json && acc_write_json(g_a.json, r.nodes, r.n, pairs, (size_t)np, &v, &ro)) {
		fprintf(stderr, "pdkv accept: --json %s: cannot write it\n", g_a.json);
		rc = rc ? rc : 1;
	}
	if (g_a.plot &&
	    acc_write_plot(g_a.plot, r.nodes, r.n, pairs, (size_t)np, &ro, err, sizeof(err))) {
		fprintf(stderr, "pdkv accept: %s\n", err);
		rc = rc ? rc : 1;
	}
	free(pos);
	return rc;
}
