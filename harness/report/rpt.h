/* SPDX-License-Identifier: Apache-2.0 */
/* rpt: the library behind `pdkv report` — loads pdkv's JSON outputs (bench, run, generic rows)
 * into one model, compares two of them with statistics, prints tables and plots a history. */
#ifndef RPT_H
#define RPT_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pd_stats.h" /* median, min/max, the Mann-Whitney U test: ref/common/pd_stats.h */

/* Fewer samples than this on either side: "too few samples" (no test). With alpha 0.05 the
 * smallest two-sided exact p-value of 3 vs 3 samples is 0.1, of 4 vs 4 it is 0.029. */
#define RPT_MIN_SAMPLES 4

/* ---- the model (rpt_load.c) ------------------------------------------------------------------ */
enum rpt_kind { RPT_BENCH = 1, RPT_RUN, RPT_ROWS };
enum { RPT_LOWER = -1, RPT_NONE = 0, RPT_HIGHER = 1 };

/* One thing measured: a bench row's GB/s over its repetitions, a scenario's TTFT, ... */
struct rpt_series {
	char *key;    /* identity across files: rows with the same key are compared */
	char *label;  /* for people */
	char *metric; /* "GB/s", "% line rate", "latency_p50_s", ... */
	char *loose;  /* bench: kind|op|block (pairs rows of runs with different settings) */
	char *group;  /* bench: the row without its kind (history: pdkv and socket share a plot) */
	char *kind;   /* bench: "pdkv" | "socket"; else NULL */
	int better;   /* RPT_HIGHER | RPT_LOWER | RPT_NONE (information only) */
	bool scalar;  /* one value per run, not repetitions: no U test */
	bool exact;   /* a count of a deterministic workload: any change is real */
	/* bench, a pdkv row measured beside a baseline in the same run: the ratio row that
	 * decides ("pdkv/socket", "x ib_write_bw"); NULL = this row decides itself */
	const char *ratio_row;
	double *v;
	size_t n, cap;
};

/* A scenario's status (check NULL) or one check's result in a `pdkv run --json` file. */
struct rpt_verdict {
	char *scenario;
	char *check;
	char *status; /* PASS | FAIL | NOTRUN */
	bool ok;      /* PASS, or a FAIL that the scenario expects (self-tests) */
	char *detail;
};

struct rpt_kv {
	char *k, *v;
};

struct rpt_doc {
	char *path;
	enum rpt_kind kind;
	struct rpt_kv *meta; /* flattened: "hostname", "env.MC_TCP_LANES_PER_PEER", ... */
	size_t nmeta;
	struct rpt_series *s;
	size_t ns;
	struct rpt_verdict *vd;
	size_t nvd;
};

/* Reads and classifies path. On error -1 with err = "FILE: FIELD: what is wrong"; -2 for a
 * `pdkv report` output (a comparison, not a run). */
int rpt_load(const char *path, struct rpt_doc *d, char *err, size_t errsz);
int rpt_parse(const char *path, const char *text, struct rpt_doc *d, char *err, size_t errsz);
void rpt_doc_free(struct rpt_doc *d);
const char *rpt_meta_get(const struct rpt_doc *d, const char *k); /* NULL when absent */
const char *rpt_kind_name(enum rpt_kind k);

/* ---- run-to-run spread from a history (rpt_spread.c) ------------------------------------------
 */
/* Two runs of one commit on a shared host differ by more than their samples say: the host's
 * state moves a whole run's samples together. With `compare --history DIR` a row gates only
 * when its new median also lies beyond the prediction bound of its medians over the earlier
 * runs kept in DIR (rpt_spread_k; at least RPT_SPREAD_MIN_RUNS of them, the last
 * RPT_SPREAD_MAX_RUNS, leaving out runs whose own comparison found a regression); with fewer it
 * is reported, not gated. */
#define RPT_SPREAD_MIN_RUNS 3
#define RPT_SPREAD_MAX_RUNS 10

struct rpt_hist {
	char *dir;
	struct rpt_doc *docs; /* the earlier runs' files, oldest first */
	size_t *run;          /* docs[i] belongs to run run[i] (0 = the oldest kept) */
	size_t n, nruns;
	size_t left_out; /* runs left out: their own comparison found a regression */
};

struct rpt_spread {
	size_t runs;     /* earlier runs that have the row */
	bool log;        /* every median > 0: center and sd_pct are of their logs */
	double center;   /* the geometric mean of their medians (log), else the mean */
	double sd_pct;   /* the standard deviation of their logs x 100 (log), else % of center */
	double k;        /* the gate in standard deviations (rpt_spread_k) */
	double gate_pct; /* the bound, % from center in the bad direction, at least --threshold */
};

/* The bound k standard deviations from center in the bad direction (better > 0: lower), as %
 * of center: on the log scale 1 - exp(-k sd) for a higher-is-better row, which stays below
 * 100 %, and exp(k sd) - 1 for a lower-is-better one; k * sd_pct on the linear scale. */
double rpt_spread_gate_pct(const struct rpt_spread *sp, double k, int better);

/* How many run-to-run standard deviations one more run of the same code may lie from the mean
 * of n earlier runs, one-sided, with a chance of alpha / m (m rows gate: Bonferroni):
 * t(1 - alpha / m; n - 1) * sqrt(1 + 1/n), the normal prediction bound. 3 runs, alpha 0.05, 4
 * rows: 7.16; 10 runs: 2.83. */
double rpt_spread_k(size_t n, double alpha, size_t m);

/* Loads the runs in dir that came before new_path (when new_path is itself a run kept in
 * dir: those whose names sort before its run's) or, else, every run in dir but new_path;
 * only files of kind. -1 with err set when dir cannot be read. */
int rpt_hist_load(const char *dir, const char *new_path, enum rpt_kind kind, struct rpt_hist *h,
                  char *err, size_t errsz);
void rpt_hist_free(struct rpt_hist *h);
/* s's spread over h (s matched by key and metric); runs = 0 when no earlier run has it */
void rpt_hist_spread(const struct rpt_hist *h, const struct rpt_series *s, struct rpt_spread *sp);

/* rpt_history.c: sorted names of dir's entries ending in suffix (NULL: every entry but dot
 * files); NULL when dir cannot be read */
char **rpt_list_dir(const char *dir, const char *suffix, size_t *n);
void rpt_free_list(char **v, size_t n);

/* ---- comparison (rpt_compare.c) -------------------------------------------------------------- */
struct rpt_opts {
	double threshold_pct;        /* a change smaller than this is no regression (5) */
	double alpha;                /* significance level (0.05) */
	const struct rpt_hist *hist; /* --history: gate only beyond the run-to-run spread */
};

enum rpt_outcome {
	RPT_SAME = 0,   /* "~": no significant change (or within threshold for a scalar) */
	RPT_BETTER,     /* significant, in the good direction */
	RPT_WORSE,      /* significant, in the bad direction, within the threshold */
	RPT_REGRESSION, /* significant, bad direction, beyond the threshold: exit 1 */
	RPT_CHANGED,    /* significant, a metric without a direction */
	RPT_FEW, /* too few samples for the U test (one value per run, or < RPT_MIN_SAMPLES) */
	RPT_ONLY_OLD,
	RPT_ONLY_NEW,
};

struct rpt_row {
	const struct rpt_series *o, *n; /* either may be NULL (row on one side only) */
	double med_o, med_n, change_pct, p, u;
	double p_gate;    /* p after Holm's correction over the gated family (rows with family) */
	bool family;      /* can gate: U-tested, has a direction, measures pdkv (not a baseline) */
	int dir;          /* +1 the good direction, -1 the bad one, 0 none or no change */
	const char *test; /* "exact" | "normal" | "threshold" | NULL */
	enum rpt_outcome out;
	char note[160]; /* paired despite different settings: what differed */
	char why[256];  /* why a change is not gated ("the ratio to socket decides"), or "" */
	struct rpt_spread sprd; /* --history, for a row that would gate: its run-to-run spread */
	bool sprd_set;
};

struct rpt_vdiff {
	const struct rpt_verdict *o, *n; /* either may be NULL */
	bool worse, better;
};

struct rpt_cmp {
	const struct rpt_doc *a, *b;
	struct rpt_opts opt;
	struct rpt_row *rows;
	size_t nrows;
	struct rpt_vdiff *vd; /* only the verdicts that changed, appeared or went away */
	size_t nvd;
	char **warn; /* metadata that differs between the two runs */
	size_t nwarn;
	char **notes; /* differences expected between runs (commit, version) */
	size_t nnotes;
	size_t regressions, improvements, worse_verdicts, new_notrun;
	size_t few_moved; /* too few samples for a verdict, moved beyond the threshold */
	size_t family;    /* rows that can gate: the m of Holm's correction */
};

int rpt_compare(const struct rpt_doc *a, const struct rpt_doc *b, const struct rpt_opts *opt,
                struct rpt_cmp *c);
void rpt_cmp_free(struct rpt_cmp *c);
const char *rpt_outcome_name(enum rpt_outcome o);
/* 1 when something got worse (a regression beyond the threshold or a worse verdict), else 0 */
int rpt_cmp_status(const struct rpt_cmp *c);

/* ---- output (rpt_print.c) -------------------------------------------------------------------- */
void rpt_print_text(FILE *f, const struct rpt_cmp *c);
void rpt_print_markdown(FILE *f, const struct rpt_cmp *c);
cJSON *rpt_cmp_json(const struct rpt_cmp *c);
/* "1.23", "12.3k" style number for tables */
void rpt_fmt_num(char *buf, size_t len, double v);

/* ---- history (rpt_history.c) ----------------------------------------------------------------- */
/* Reads every *.json in dir and dir/<run>/ (sorted by name: the history layout names runs
 * <UTC timestamp>-<commit>), writes gnuplot PNG + SVG plots per series and index.md /
 * index.html into out. Prints what it did to f. 0 ok, 1 failure, 2 usage (err set), 77 when
 * gnuplot is missing (data and index written, no plots). */
int rpt_history(const char *dir, const char *out, FILE *f, char *err, size_t errsz);

#endif
