/* bench_serve_out: what `pdkv bench serve` writes after a sweep — the summary table, the generic
 * rows JSON that `pdkv report compare` reads, CSV, and a gnuplot PNG. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_serve.h"

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

static void jrow(FILE *f, bool *first, const char *name, const char *metric, const char *unit,
                 const char *better, double v)
{
	if (isnan(v) || isinf(v))
		return;
	fprintf(
	    f,
	    "%s\n  {\"name\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", \"better\": \"%s\", "
	    "\"value\": %.6g}",
	    *first ? "" : ",", name, metric, unit, better, v);
	*first = false;
}

int serve_write_json(const struct run_ctx *c, const char *path)
{
	FILE *f = fopen(path, "w");
	bool first = true;
	char host[256] = "";

	if (!f)
		return -errno;
	gethostname(host, sizeof(host) - 1);
	fprintf(
	    f,
	    "{\"tool\": \"pdkv bench serve\", \"meta\": {\"hostname\": \"%s\", \"num_prompts\": "
	    "%d, \"input_len\": %d, \"output_len\": %d, \"seed\": %ld, \"model\": \"%s\"},\n"
	    "\"rows\": [",
	    host, c->o->num_prompts, c->o->input_len, c->o->output_len, c->o->seed, c->o->model);
	for (int i = 0; i < c->nres; i++) {
		const struct result *r = &c->res[i];
		const struct {
			const char *m;
			const struct dist *d;
		} ds[4] = {
		    {"ttft", &r->ttft}, {"tpot", &r->tpot}, {"itl", &r->itl}, {"e2el", &r->e2e}};

		jrow(f, &first, r->name, "completed", "requests", "higher", (double)r->ok);
		jrow(f, &first, r->name, "request_throughput", "req/s", "higher",
		     (double)r->ok / r->duration);
		jrow(f, &first, r->name, "output_throughput", "tok/s", "higher",
		     r->out_tok / r->duration);
		jrow(f, &first, r->name, "total_token_throughput", "tok/s", "higher",
		     (r->in_tok + r->out_tok) / r->duration);
		for (int k = 0; k < 4; k++) {
			char m[32];

			snprintf(m, sizeof(m), "mean_%s", ds[k].m);
			jrow(f, &first, r->name, m, "ms", "lower", ds[k].d->mean);
			snprintf(m, sizeof(m), "median_%s", ds[k].m);
			jrow(f, &first, r->name, m, "ms", "lower", ds[k].d->median);
			snprintf(m, sizeof(m), "p90_%s", ds[k].m);
			jrow(f, &first, r->name, m, "ms", "lower", ds[k].d->p90);
			snprintf(m, sizeof(m), "p99_%s", ds[k].m);
			jrow(f, &first, r->name, m, "ms", "lower", ds[k].d->p99);
		}
		jrow(f, &first, r->name, "handoff_count", "hand-offs", "none", r->ho_n);
		jrow(f, &first, r->name, "handoff_mean", "ms", "lower", r->ho_mean);
		jrow(f, &first, r->name, "handoff_p50", "ms", "lower", r->ho_p50);
		jrow(f, &first, r->name, "handoff_p90", "ms", "lower", r->ho_p90);
		jrow(f, &first, r->name, "handoff_goodput", "GB/s", "higher", r->ho_gbs);
	}
	fprintf(f, "\n]}\n");
	return fclose(f) ? -errno : 0;
}

int serve_write_csv(const struct run_ctx *c, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "target,request_rate,max_concurrency,completed,failed,duration_s,input_tokens,"
	           "output_tokens,request_throughput,output_throughput,mean_ttft_ms,median_ttft_ms,"
	           "p90_ttft_ms,p99_ttft_ms,mean_tpot_ms,median_tpot_ms,p90_tpot_ms,p99_tpot_ms,"
	           "mean_itl_ms,median_itl_ms,p90_itl_ms,p99_itl_ms,mean_e2el_ms,median_e2el_ms,"
	           "p90_e2el_ms,p99_e2el_ms,handoffs,handoff_mean_ms,handoff_p50_ms,handoff_p90_ms,"
	           "handoff_goodput_gbs\n");
	for (int i = 0; i < c->nres; i++) {
		const struct result *r = &c->res[i];

		fprintf(f, "%s,%g,%d,%zu,%zu,%.4f,%.0f,%.0f,%.4f,%.4f", r->target, r->rate, r->conc,
		        r->ok, r->failed, r->duration, r->in_tok, r->out_tok,
		        (double)r->ok / r->duration, r->out_tok / r->duration);
		for (int k = 0; k < 4; k++) {
			const struct dist *d = k == 0   ? &r->ttft
			                       : k == 1 ? &r->tpot
			                       : k == 2 ? &r->itl
			                                : &r->e2e;

			fprintf(f, ",%.4f,%.4f,%.4f,%.4f", d->mean, d->median, d->p90, d->p99);
		}
		fprintf(f, ",%.0f,%.4f,%.4f,%.4f,%.4f\n", r->ho_n, r->ho_mean, r->ho_p50, r->ho_p90,
		        r->ho_gbs);
	}
	return fclose(f) ? -errno : 0;
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
 * title first; then one block of (prompt tokens, hand-off GB/s). Returns the series count. */
static int write_plot_data(FILE *f, const struct run_ctx *c)
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
	fprintf(f, "\"hand-off\"\n");
	for (int i = 0; i < c->nres; i++)
		if (!strcmp(c->res[i].target, "pd") && !isnan(c->res[i].ho_gbs))
			fprintf(f, "%d %.3f\n", c->res[i].in_len, c->res[i].ho_gbs);
	return nser;
}

/* gnuplot: TTFT median vs request rate, one line per target x input length x concurrency
 * ("inf" drawn right of the highest rate); and hand-off goodput vs prompt length. */
int serve_write_plot(const struct run_ctx *c, const char *png)
{
	char dat[600], gp[600], cmd[1400];
	FILE *f;
	int nser;

	snprintf(dat, sizeof(dat), "%s.dat", png);
	snprintf(gp, sizeof(gp), "%s.gp", png);
	if (!(f = fopen(dat, "w")))
		return -errno;
	nser = write_plot_data(f, c);
	fclose(f);
	if (!(f = fopen(gp, "w")))
		return -errno;
	fprintf(f,
	        "set terminal pngcairo size 1200,480\nset output '%s'\nset multiplot layout 1,2\n"
	        "set title 'TTFT p50 vs request rate (rightmost point: inf)'\n"
	        "set xlabel 'request rate (req/s)'\nset ylabel 'ms'\nset key top left\n"
	        "set logscale y\n"
	        "plot for [i=0:%d] '%s' index i using 1:2 with linespoints title columnheader(1)\n"
	        "unset logscale y\nset title 'KV hand-off goodput vs prompt length'\n"
	        "set xlabel 'prompt tokens'\nset ylabel 'GB/s'\nset yrange [0:*]\n"
	        "plot '%s' index %d using 1:2 with points pt 7 title columnheader(1)\n"
	        "unset multiplot\n",
	        png, nser - 1, dat, dat, nser);
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
