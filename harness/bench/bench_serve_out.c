/* SPDX-License-Identifier: Apache-2.0 */
/* bench_serve_out: what `pdkv bench serve` writes after a sweep — the summary table, the generic
 * rows JSON that `pdkv report compare` reads, CSV, and a gnuplot PNG. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "bench_serve.h"
#include "pd_util.h"

void serve_print_table(const struct run_ctx *c)
{
	printf("\n%-34s %6s %8s %9s %9s %9s %9s %9s %9s %8s\n", "point", "ok", "req/s", "tok/s",
	       "TTFT p50", "TTFT p99", "TPOT p50", "E2E p50", "HO p50", "HO GB/s");
	for (int i = 0; i < c->nres; i++) {
		const struct result *r = &c->res[i];

		printf("%-34s %6zu %8.2f %9.1f %9.2f %9.2f %9.3f %9.2f %9.2f %8.2f\n", r->name,
		       r->ok, (double)r->ok / r->duration, r->out_tok / r->duration, r->ttft.median,
		       r->ttft.p99, r->tpot.median, r->e2e.median, r->ho_p50, r->ho_gbs);
	}
	printf("(ms; HO = KV hand-off on the decode, from its /metrics)\n");
}

/* "request_rate" (a number, or "inf") and "max_concurrency" (a number, or null) as vllm bench
 * serve writes them */
void serve_json_point(cJSON *o, const struct result *r)
{
	if (r->rate > 0)
		cJSON_AddNumberToObject(o, "request_rate", r->rate);
	else
		cJSON_AddStringToObject(o, "request_rate", "inf");
	if (r->conc > 0)
		cJSON_AddNumberToObject(o, "max_concurrency", r->conc);
	else
		cJSON_AddNullToObject(o, "max_concurrency");
}

static void jrow(cJSON *rows, const struct result *r, const char *metric, const char *unit,
                 const char *better, double v)
{
	cJSON *o;

	if (isnan(v) || isinf(v))
		return;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "metric", metric);
	cJSON_AddStringToObject(o, "unit", unit);
	cJSON_AddStringToObject(o, "better", better);
	cJSON_AddNumberToObject(o, "value", v);
	cJSON_AddItemToArray(rows, o);
}

/* The rows JSON `pdkv report compare` reads; the point's input length and rate in each point's
 * "points" entry (a length sweep has one per length). */
int serve_write_json(const struct run_ctx *c, const char *path)
{
	cJSON *j = cJSON_CreateObject(), *meta, *rows, *pts;
	char host[256] = "", *txt;
	int rc;

	gethostname(host, sizeof(host) - 1);
	cJSON_AddStringToObject(j, "tool", "pdkv bench serve");
	meta = cJSON_AddObjectToObject(j, "meta");
	cJSON_AddStringToObject(meta, "hostname", host);
	cJSON_AddNumberToObject(meta, "num_prompts", c->o->num_prompts);
	if (c->o->dataset == SERVE_DS_RANDOM && c->o->nin == 1)
		cJSON_AddNumberToObject(meta, "input_len", c->o->input_len);
	cJSON_AddNumberToObject(meta, "output_len", c->o->output_len);
	cJSON_AddNumberToObject(meta, "seed", c->o->seed);
	cJSON_AddStringToObject(meta, "model", c->o->model);
	cJSON_AddStringToObject(meta, "dataset",
	                        c->o->dataset == SERVE_DS_SHAREGPT ? "sharegpt" : "random");
	pts = cJSON_AddArrayToObject(j, "points");
	rows = cJSON_AddArrayToObject(j, "rows");
	for (int i = 0; i < c->nres; i++) {
		const struct result *r = &c->res[i];
		const struct {
			const char *m;
			const struct dist *d;
		} ds[4] = {
		    {"ttft", &r->ttft}, {"tpot", &r->tpot}, {"itl", &r->itl}, {"e2el", &r->e2e}};
		cJSON *pt = cJSON_CreateObject();

		cJSON_AddStringToObject(pt, "name", r->name);
		cJSON_AddStringToObject(pt, "target", r->target);
		serve_json_point(pt, r);
		/* the point's own mean prompt length (a length sweep, or the dataset's) */
		cJSON_AddNumberToObject(pt, "input_len",
		                        r->ok ? r->in_tok / (double)r->ok : r->in_len);
		cJSON_AddBoolToObject(pt, "interrupted", r->interrupted);
		cJSON_AddItemToArray(pts, pt);
		jrow(rows, r, "completed", "requests", "higher", (double)r->ok);
		jrow(rows, r, "failed", "requests", "lower", (double)r->failed);
		jrow(rows, r, "request_throughput", "req/s", "higher", (double)r->ok / r->duration);
		jrow(rows, r, "output_throughput", "tok/s", "higher", r->out_tok / r->duration);
		jrow(rows, r, "total_token_throughput", "tok/s", "higher",
		     (r->in_tok + r->out_tok) / r->duration);
		for (int k = 0; k < 4; k++) {
			char m[32];

			snprintf(m, sizeof(m), "mean_%s", ds[k].m);
			jrow(rows, r, m, "ms", "lower", ds[k].d->mean);
			snprintf(m, sizeof(m), "median_%s", ds[k].m);
			jrow(rows, r, m, "ms", "lower", ds[k].d->median);
			snprintf(m, sizeof(m), "p90_%s", ds[k].m);
			jrow(rows, r, m, "ms", "lower", ds[k].d->p90);
			snprintf(m, sizeof(m), "p99_%s", ds[k].m);
			jrow(rows, r, m, "ms", "lower", ds[k].d->p99);
		}
		jrow(rows, r, "handoff_count", "hand-offs", "none", r->ho_n);
		jrow(rows, r, "handoff_mean", "ms", "lower", r->ho_mean);
		jrow(rows, r, "handoff_p50", "ms", "lower", r->ho_p50);
		jrow(rows, r, "handoff_p90", "ms", "lower", r->ho_p90);
		jrow(rows, r, "handoff_goodput", "GB/s", "higher", r->ho_gbs);
	}
	txt = cJSON_Print(j);
	cJSON_Delete(j);
	if (!txt)
		return -ENOMEM;
	rc = pd_write_file(path, txt, strlen(txt));
	cJSON_free(txt);
	if (rc)
		errno = -rc;
	return rc;
}

/* One line per point; the rate as vLLM writes it ("inf"), the point's mean prompt length. */
int serve_write_csv(const struct run_ctx *c, const char *path)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen);
	int rc;

	if (!f)
		return -errno;
	fprintf(f, "target,request_rate,max_concurrency,input_len,completed,failed,duration_s,"
	           "input_tokens,output_tokens,request_throughput,output_throughput,mean_ttft_ms,"
	           "median_ttft_ms,p90_ttft_ms,p99_ttft_ms,mean_tpot_ms,median_tpot_ms,p90_tpot_ms,"
	           "p99_tpot_ms,mean_itl_ms,median_itl_ms,p90_itl_ms,p99_itl_ms,mean_e2el_ms,"
	           "median_e2el_ms,p90_e2el_ms,p99_e2el_ms,handoffs,handoff_mean_ms,handoff_p50_ms,"
	           "handoff_p90_ms,handoff_goodput_gbs,interrupted\n");
	for (int i = 0; i < c->nres; i++) {
		const struct result *r = &c->res[i];
		char rate[32] = "inf", conc[16] = "";

		if (r->rate > 0)
			snprintf(rate, sizeof(rate), "%g", r->rate);
		if (r->conc > 0)
			snprintf(conc, sizeof(conc), "%d", r->conc);
		fprintf(f, "%s,%s,%s,%.0f,%zu,%zu,%.4f,%.0f,%.0f,%.4f,%.4f", r->target, rate, conc,
		        r->ok ? r->in_tok / (double)r->ok : r->in_len, r->ok, r->failed,
		        r->duration, r->in_tok, r->out_tok, (double)r->ok / r->duration,
		        r->out_tok / r->duration);
		for (int k = 0; k < 4; k++) {
			const struct dist *d = k == 0   ? &r->ttft
			                       : k == 1 ? &r->tpot
			                       : k == 2 ? &r->itl
			                                : &r->e2e;

			fprintf(f, ",%.4f,%.4f,%.4f,%.4f", d->mean, d->median, d->p90, d->p99);
		}
		fprintf(f, ",%.0f,%.4f,%.4f,%.4f,%.4f,%s\n", r->ho_n, r->ho_mean, r->ho_p50,
		        r->ho_p90, r->ho_gbs, r->interrupted ? "true" : "false");
	}
	if (fclose(f)) {
		free(buf);
		return -errno;
	}
	rc = pd_write_file(path, buf, blen);
	free(buf);
	if (rc)
		errno = -rc;
	return rc;
}

/* Rate for the plot's x axis: "inf" (0 in a result) sits right of the highest finite rate. */
static double plot_rate(const struct run_ctx *c, double rate)
{
	double top = 0;
	if (rate > 0)
		return rate;
	for (int i = 0; i < c->nres; i++)
		if (c->res[i].rate > top)
			top = c->res[i].rate;
	return top > 0 ? top * 2 : 1;
}

static bool same_series(const struct result *a, const struct result *b)
{
	return !strcmp(a->target, b->target) && a->in_len == b->in_len && a->conc == b->conc;
}

/* One data block per series (target, input length, concurrency), rows by rising rate, its
 * title first; then one block of (prompt tokens, hand-off GB/s) per rate x concurrency
 * (*nho of them). Returns the series count. */
static int write_plot_data(FILE *f, const struct run_ctx *c, int *nho)
{
	int nser = 0;
	for (int i = 0; i < c->nres; i++) {
		bool seen = false;
		for (int k = 0; k < i && !seen; k++)
			seen = same_series(&c->res[k], &c->res[i]);
		if (seen)
			continue;
		fprintf(f, "\"%s in=%d conc=%d\"\n", c->res[i].target, c->res[i].in_len,
		        c->res[i].conc);
		double last = -1;
		for (;;) { /* selection by rate: a handful of points */
			int best = -1;
			for (int k = i; k < c->nres; k++) {
				double r = plot_rate(c, c->res[k].rate);
				if (same_series(&c->res[k], &c->res[i]) && r > last &&
				    (best < 0 || r < plot_rate(c, c->res[best].rate)))
					best = k;
			}
			if (best < 0)
				break;
			last = plot_rate(c, c->res[best].rate);
			fprintf(f, "%g %.3f %.3f\n", last, c->res[best].ttft.median,
			        c->res[best].e2e.median);
		}
		fprintf(f, "\n\n");
		nser++;
	}
	/* hand-off: one block per (rate, concurrency) of the pd target, so points at one prompt
	 * length are told apart by their marker and title */
	for (int i = 0; i < c->nres; i++) {
		bool seen = false;
		if (strcmp(c->res[i].target, "pd"))
			continue;
		for (int k = 0; k < i && !seen; k++)
			seen = !strcmp(c->res[k].target, "pd") &&
			       c->res[k].rate == c->res[i].rate && c->res[k].conc == c->res[i].conc;
		if (seen)
			continue;
		if (c->res[i].rate > 0)
			fprintf(f, "\"rate=%g conc=%d\"\n", c->res[i].rate, c->res[i].conc);
		else
			fprintf(f, "\"rate=inf conc=%d\"\n", c->res[i].conc);
		for (int k = i; k < c->nres; k++)
			if (!strcmp(c->res[k].target, "pd") && c->res[k].rate == c->res[i].rate &&
			    c->res[k].conc == c->res[i].conc && !isnan(c->res[k].ho_gbs))
				fprintf(f, "%.0f %.3f\n",
				        c->res[k].ok ? c->res[k].in_tok / (double)c->res[k].ok
				                     : c->res[k].in_len,
				        c->res[k].ho_gbs);
		fprintf(f, "\n\n");
		(*nho)++;
	}
	return nser;
}

/* gnuplot: TTFT median vs request rate, one line per target x input length x concurrency
 * ("inf" drawn right of the highest rate); and hand-off goodput vs prompt length. */
int serve_write_plot(const struct run_ctx *c, const char *png)
{
	char dat[600], gp[600], cmd[1400], xt[128] = "";
	FILE *f;
	int nser, nho = 0;
	bool has_inf = false;

	snprintf(dat, sizeof(dat), "%s.dat", png);
	snprintf(gp, sizeof(gp), "%s.gp", png);
	if (!(f = fopen(dat, "w")))
		return -errno;
	nser = write_plot_data(f, c, &nho);
	fclose(f);
	for (int i = 0; i < c->nres; i++)
		has_inf |= c->res[i].rate <= 0;
	/* "inf" is drawn right of the highest rate: its tick says "inf", not a number */
	if (has_inf)
		snprintf(xt, sizeof(xt), "set xtics add (\"inf\" %g)\n", plot_rate(c, 0));
	if (!(f = fopen(gp, "w")))
		return -errno;
	fprintf(f,
	        "set terminal pngcairo size 1400,520\nset output '%s'\nset multiplot layout 1,2\n"
	        "set title 'TTFT p50 vs request rate'\n"
	        "set xlabel 'request rate (req/s)'\nset ylabel 'ms'\n"
	        "set key below vertical maxrows 3\nset logscale y\n%s"
	        "plot for [i=0:%d] '%s' index i using 1:2 with linespoints pt (i+5) title "
	        "columnheader(1)\n"
	        "unset logscale y\nset xtics autofreq\nset title 'KV hand-off goodput vs prompt "
	        "length'\n"
	        "set xlabel 'prompt tokens'\nset ylabel 'GB/s'\nset yrange [0:*]\n",
	        png, xt, nser - 1, dat);
	if (nho > 0)
		fprintf(f,
		        "plot for [i=%d:%d] '%s' index i using 1:2 with linespoints pt (i-%d+5) ps "
		        "1.5 title columnheader(1)\n",
		        nser, nser + nho - 1, dat, nser);
	else
		fprintf(f, "set label 'no hand-off measured' at graph 0.3,0.5\nplot NaN notitle\n");
	fprintf(f, "unset multiplot\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gnuplot '%s' 2>/dev/null", gp);
	if (system(cmd) != 0) {
		fprintf(stderr,
		        "pdkv bench serve: gnuplot failed or is not installed; data in %s\n", dat);
		return -1;
	}
	printf("plot: %s\n", png);
	return 0;
}

/* "P99.9" / "P50": vLLM's p_word */
void serve_pct_word(double p, char *buf, size_t sz)
{
	if (p == floor(p))
		snprintf(buf, sz, "%d", (int)p);
	else
		snprintf(buf, sz, "%g", p);
}
