/* SPDX-License-Identifier: Apache-2.0 */
/* accept: pdkv accept's internals — the nodes, which pairs to measure, each pair's repeated
 * pdkv-bench rows, the judgement (medians, outliers, uncertain pairs) and its reports. */
#ifndef PDKV_ACCEPT_H
#define PDKV_ACCEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACC_MAX_NODES 64
#define ACC_MAX_REPS  32
#define ACC_MAX_PAIRS (ACC_MAX_NODES * (ACC_MAX_NODES - 1))

/* ---- pairs (acc_judge.c) ---- */
enum acc_pairs_kind { ACC_PAIRS_ALL, ACC_PAIRS_RING, ACC_PAIRS_RANDOM };
struct acc_pairs_spec {
	enum acc_pairs_kind kind;
	int k; /* random:K */
};
/* "all" | "ring" | "random:K" (K >= 1). 0, or -1 with err naming --pairs and what is expected. */
int acc_pairs_parse(const char *v, struct acc_pairs_spec *ps, char *err, size_t errsz);
/* The ordered pairs (initiator, target) to measure over n nodes, in run order: all = every
 * i != j; ring = i -> i+1 (mod n); random:K = K distinct ordered pairs drawn with seed. Returns
 * the count (>= 1), or -1 with err (fewer than 2 nodes, K over n(n-1)). */
int acc_pairs_make(const struct acc_pairs_spec *ps, int n, uint64_t seed, int (*out)[2], size_t max,
                   char *err, size_t errsz);

/* ---- one pair's measurement and the fleet's judgement ---- */
enum acc_state {
	ACC_NOT_MEASURED, /* not in the pair set */
	ACC_OK,           /* measured, spread within --max-spread, at or above the threshold */
	ACC_SLOW,         /* measured, consistent, below threshold x fleet median: an outlier */
	ACC_UNCERTAIN,    /* the repeats spread over --max-spread (or too few): no judgement */
	ACC_FAILED        /* pdkv-bench failed, or --check found wrong bytes / failed transfers */
};
const char *acc_state_name(enum acc_state s); /* "-" ok SLOW UNCERTAIN FAILED */

struct acc_pair {
	int i, j; /* initiator node, target node */
	double bw[ACC_MAX_REPS];
	double lat[ACC_MAX_REPS]; /* p50 latency per repeat, us */
	int nrep;
	uint64_t wrong, failed;
	bool error; /* the bench did not run / exited non-zero */
	char why[200];
	/* judged */
	double bw_med, lat_med, spread; /* spread = (max - min) / median of the repeats */
	double lo, hi;                  /* the repeats' range */
	enum acc_state state;
};

struct acc_node_verdict {
	double median;   /* over its usable pairs, either direction; NAN when none */
	double score;    /* its best usable pair's median: what the node can do at least */
	double best_rep; /* its best single repeat */
	int npairs;      /* usable pairs behind it */
	enum acc_state state;
};

struct acc_judge_opts {
	double threshold;  /* below threshold x fleet median is an outlier (0.8) */
	double max_spread; /* repeats on both sides of the threshold spreading over it: uncertain */
	int min_reps;      /* fewer successful repeats: uncertain (2) */
};

struct acc_verdict {
	int n;
	double fleet_median; /* median of the nodes' best pairs: the nodes' reference; NAN: none */
	double pair_median;  /* median of the pairs between nodes not slow: the pairs' reference */
	struct acc_node_verdict node[ACC_MAX_NODES];
	int slow_pairs, slow_nodes, failed_pairs, uncertain_pairs, judged_pairs;
};

/* Judges every pair in pairs[0..np) and every node. A node's score is its best pair's median
 * (one healthy peer shows a healthy node; every pair of a bad node is slow); the fleet median
 * is the median of the scores, so one bad node, whose pairs are most of a small fleet's, does
 * not drag the reference down. A node is an outlier when even its best repeat is below
 * threshold x fleet median; a pair when all its repeats are below threshold x pair_median
 * (or, straddling it, when they agree within max_spread and their median is). Repeats that straddle
 * and spread wider are UNCERTAIN, never outliers. */
void acc_judge(struct acc_pair *pairs, size_t np, int n, const struct acc_judge_opts *jo,
               struct acc_verdict *v);
/* Exit status of the verdict: 0 no outlier, 1 an outlier or a failed pair, 77 nothing judged. */
int acc_exit_status(const struct acc_verdict *v);

/* Parses pdkv-bench's stdout: each "  pdkv OP BLOCK BATCH THREADS BW IOPS P50 P99 WRONG FAILED"
 * table row of the largest block becomes one repeat. Returns the rows taken (0 = none). */
int acc_parse_bench(const char *out, struct acc_pair *p);

/* ---- nodes and running (acc_run.c) ---- */
enum acc_node_kind { ACC_NODE_NETNS, ACC_NODE_SSH, ACC_NODE_SLURM };
struct acc_node {
	char name[64];
	char addr[128];
	enum acc_node_kind kind;
};

struct acc_report_opts {
	const char *unit;       /* pdkv-bench's report unit, "GB" */
	const char *transport;  /* tcp | rdma */
	const char *pairs_spec; /* as given */
	const char *source;     /* "netns:3", "hosts:FILE", "slurm:NODELIST" */
	const char *command;    /* the command line, for the JSON and the plot's title */
	const struct acc_judge_opts *jo;
};

/* ---- reports (acc_report.c) ---- */
void acc_print_matrix(const struct acc_node *nodes, int n, const struct acc_pair *pairs, size_t np,
                      const struct acc_verdict *v, const struct acc_report_opts *ro);
int acc_write_json(const char *path, const struct acc_node *nodes, int n,
                   const struct acc_pair *pairs, size_t np, const struct acc_verdict *v,
                   const struct acc_report_opts *ro);
/* gnuplot heatmap (PNG) of the bandwidth matrix; 0, or -1 with err (gnuplot missing or failed). */
int acc_write_plot(const char *path, const struct acc_node *nodes, int n,
                   const struct acc_pair *pairs, size_t np, const struct acc_report_opts *ro,
                   char *err, size_t errsz);

#endif
