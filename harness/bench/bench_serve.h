/* bench_serve: `pdkv bench serve` — a serving benchmark through a PD deployment's proxy with
 * vllm bench serve's flags and output, plus the stand-ins' KV hand-off histograms. */
#ifndef BENCH_SERVE_H
#define BENCH_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#define SERVE_MAX_POINTS 32

struct serve_opts {
	const char *scenario; /* SCENARIO.json: the runner starts the deployment */
	const char *base_url; /* external proxy */
	const char *prefill_metrics, *decode_metrics;
	const char *single_url; /* --compare-single=URL; "" = start a plain stand-in */
	bool compare_single;
	const char *model, *endpoint;
	double rates[SERVE_MAX_POINTS]; /* 0 = inf */
	int nrates;
	int conc[SERVE_MAX_POINTS]; /* 0 = no cap */
	int nconc;
	int num_prompts, input_len, output_len;
	int in_lens[SERVE_MAX_POINTS]; /* --random-input-len LIST: a sweep dimension */
	int nin;
	long seed;
	double timeout_s;
	const char *json, *csv, *plot;
	const char *single_args; /* --single-args: extra pdkv-standin flags for the plain one */
};

struct serve_req {
	char *prompt;
	int in_len, out_len;
	double start, ttft, e2e;
	double *itl;
	size_t nitl, ntok;
	bool ok;
	const char *err;
};

struct serve_point {
	const struct serve_opts *o;
	const char *base_url;
	double rate;
	int concurrency;
	int input_len;
	size_t n;
	struct serve_req *reqs;
	double duration;
};

struct dist {
	double mean, median, p90, p99;
};

struct result {
	char name[96], target[16];
	double rate;
	int conc, in_len;
	size_t ok, failed;
	double duration, in_tok, out_tok;
	struct dist ttft, tpot, itl, e2e;
	/* decode side hand-off (from /metrics): count, mean, p50, p90 ms, goodput GB/s */
	double ho_n, ho_mean, ho_p50, ho_p90, ho_gbs, ho_p_mean;
};

struct run_ctx {
	const struct serve_opts *o;
	struct result res[2 * SERVE_MAX_POINTS * SERVE_MAX_POINTS];
	int nres;
	const char *single_url;
};

/* bench_serve_out.c: the sweep's table, rows JSON (pdkv report compare), CSV, gnuplot PNG */
void serve_print_table(const struct run_ctx *c);
int serve_write_json(const struct run_ctx *c, const char *path);
int serve_write_csv(const struct run_ctx *c, const char *path);
int serve_write_plot(const struct run_ctx *c, const char *png);

int serve_point_run(struct serve_point *pt);
void serve_point_free(struct serve_point *pt);
int bench_serve_main(int argc, char **argv);

#endif
