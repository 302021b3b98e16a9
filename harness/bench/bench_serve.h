/* SPDX-License-Identifier: Apache-2.0 */
/* bench_serve: `pdkv bench serve` — a serving benchmark through a PD deployment's proxy with
 * vllm bench serve's flags and output, plus the stand-ins' KV hand-off histograms. */
#ifndef BENCH_SERVE_H
#define BENCH_SERVE_H

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#define SERVE_MAX_POINTS 32
#define SERVE_MAX_PCT    16

/* which latency metrics get percentiles (--percentile-metrics), vllm bench serve's names */
enum { SERVE_M_TTFT = 1, SERVE_M_TPOT = 2, SERVE_M_ITL = 4, SERVE_M_E2EL = 8 };
enum serve_backend { SERVE_OPENAI, SERVE_OPENAI_CHAT };
enum serve_dataset { SERVE_DS_RANDOM, SERVE_DS_SHAREGPT };

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
	int seed;
	double timeout_s;
	/* vllm bench serve's start of each run: one unmeasured test request (the point's first
	 * prompt), retried until it succeeds or ready_check_s passes (0: none), then num_warmups
	 * more of it; neither counts in the point's figures or hand-off metrics */
	int ready_check_s, num_warmups;
	const char *json, *csv, *plot;
	const char *single_args; /* --single-args: extra pdkv-standin flags for the plain one */
	/* vllm bench serve's flags (vllm/benchmarks/serve.py, datasets/datasets.py) */
	int backend; /* enum serve_backend */
	int dataset; /* enum serve_dataset */
	const char *dataset_path;
	int sharegpt_output_len; /* 0 = the dataset's own completion length */
	bool ignore_eos;
	double burstiness; /* 1 = Poisson; gamma-distributed gaps otherwise */
	bool save_result;
	const char *result_dir, *result_filename, *label;
	unsigned pct_metrics; /* SERVE_M_* */
	double pcts[SERVE_MAX_PCT];
	int npct;
	double goodput_ttft, goodput_tpot, goodput_e2el; /* SLOs in ms, 0 = none */
	bool endpoint_seen;
};

struct serve_req {
	char *prompt; /* owned */
	int in_len, out_len;
	double start, ttft, e2e;
	double *itl;
	size_t nitl, ntok;
	bool ok;
	bool sent;        /* false: never started (the sweep was interrupted first) */
	bool interrupted; /* aborted in flight by SIGINT/SIGTERM: neither ok nor failed */
	bool unreachable; /* no HTTP answer at all (connection refused, reset, timed out) */
	const char *err;
};

struct serve_point {
	const struct serve_opts *o;
	const char *base_url;
	const char *label; /* "pd rate=inf conc=2": the progress line's name */
	double rate;
	int concurrency;
	int input_len;
	size_t n;
	struct serve_req *reqs;
	double duration;
};

struct dist {
	double mean, median, std, p90, p99;
	double pv[SERVE_MAX_PCT]; /* the --metric-percentiles, in order */
};

struct result {
	char name[96], target[16];
	double rate;
	int conc, in_len;
	size_t ok, failed, good; /* good: within every --goodput SLO */
	double duration, in_tok, out_tok;
	struct dist ttft, tpot, itl, e2e;
	/* decode side hand-off (from /metrics): count, mean, p50, p90 ms, goodput GB/s */
	double ho_n, ho_mean, ho_p50, ho_p90, ho_gbs, ho_p_mean;
	bool interrupted; /* the point was cut short by SIGINT/SIGTERM: partial figures */
	double max_out_tps, max_conc; /* vLLM's peak output tok/s (1 s windows), peak in flight */
	cJSON *detail; /* vllm bench serve's per-request lists (input_lens, ttfts, ...) */
};

struct run_ctx {
	const struct serve_opts *o;
	struct result res[2 * SERVE_MAX_POINTS * SERVE_MAX_POINTS];
	int nres;
	const char *single_url;
};

/* Set by SIGINT/SIGTERM (the signal number): no new requests, in-flight ones aborted, what was
 * measured is written, everything started is stopped, exit 128 + signal. */
extern volatile sig_atomic_t serve_stop;

/* bench_serve_opts.c: the flags (vllm bench serve's spellings); 0, 1 help printed, 2 usage. */
int serve_parse(int argc, char **argv, struct serve_opts *o, char *urlbuf, size_t ubsz);
/* bench_serve_data.c: the point's prompts and output lengths (random or ShareGPT), -1 with the
 * error printed (the dataset file and what is wrong) */
int serve_dataset_fill(const struct serve_opts *o, int in_len, struct serve_req *reqs, size_t n);
void serve_dataset_free(void);

/* bench_serve_out.c: the sweep's table, rows JSON (pdkv report compare), CSV, gnuplot PNG */
void serve_print_table(const struct run_ctx *c);
int serve_write_json(const struct run_ctx *c, const char *path);
int serve_write_csv(const struct run_ctx *c, const char *path);
int serve_write_plot(const struct run_ctx *c, const char *png);
/* a point's "request_rate" ("inf" or a number) and "max_concurrency" (null or a number) */
void serve_json_point(cJSON *o, const struct result *r);
/* "99" / "99.9": how vLLM names a percentile in its output (p_word) */
void serve_pct_word(double p, char *buf, size_t sz);
/* --save-result: vllm bench serve's result JSON, one file per point (its file names) */
int serve_save_results(const struct run_ctx *c);

/* bench_serve_load.c: the point's unmeasured test run and warm-ups (-1 with the reason
 * printed: the test request never succeeded), then its measured requests */
int serve_point_warmup(struct serve_point *pt);
int serve_point_run(struct serve_point *pt);
void serve_point_free(struct serve_point *pt);
int bench_serve_main(int argc, char **argv);

#endif
