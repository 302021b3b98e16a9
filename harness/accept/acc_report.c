/* SPDX-License-Identifier: Apache-2.0 */
/* acc_report: pdkv accept's reports — the N x N bandwidth and latency tables with each node's
 * median and the outliers (human), the same as JSON, and a gnuplot heatmap of the matrix. */
#include "accept.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/hr_netns.h"
#include "pd_util.h"

static const struct acc_pair *pair_at(const struct acc_pair *pairs, size_t np, int i, int j)
{
	for (size_t k = 0; k < np; k++)
		if (pairs[k].i == i && pairs[k].j == j)
			return &pairs[k];
	return NULL;
}

/* A cell: "-" not measured, "FAILED", the median with "*" when slow, "?" when uncertain. */
static void cell(const struct acc_pair *p, bool lat, char *out, size_t sz)
{
	double v = p ? (lat ? p->lat_med : p->bw_med) : NAN;
	if (!p)
		snprintf(out, sz, ".");
	else if (p->state == ACC_FAILED)
		snprintf(out, sz, "FAILED");
	else if (isnan(v))
		snprintf(out, sz, "?");
	else
		snprintf(out, sz, "%.1f%s", v,
		         p->state == ACC_SLOW        ? "*"
		         : p->state == ACC_UNCERTAIN ? "?"
		                                     : "");
}

static void table(const struct acc_node *nodes, int n, const struct acc_pair *pairs, size_t np,
                  const struct acc_verdict *v, bool lat)
{
	char c[32];
	printf("%-12s", lat ? "p50 us" : "init\\target");
	for (int j = 0; j < n; j++)
		printf(" %10.10s", nodes[j].name);
	if (!lat)
		printf(" %10s %10s  %s", "median", "best", "node");
	printf("\n");
	for (int i = 0; i < n; i++) {
		printf("%-12.12s", nodes[i].name);
		for (int j = 0; j < n; j++) {
			if (i == j)
				snprintf(c, sizeof(c), "-");
			else
				cell(pair_at(pairs, np, i, j), lat, c, sizeof(c));
			printf(" %10s", c);
		}
		if (!lat) {
			if (isnan(v->node[i].median))
				printf(" %10s %10s  %s", "?", "?", "UNCERTAIN (no usable pair)");
			else
				printf(" %10.1f %10.1f  %s", v->node[i].median, v->node[i].score,
				       v->node[i].state == ACC_SLOW        ? "SLOW"
				       : v->node[i].state == ACC_UNCERTAIN ? "UNCERTAIN"
				                                           : "ok");
		}
		printf("\n");
	}
}

void acc_print_matrix(const struct acc_node *nodes, int n, const struct acc_pair *pairs, size_t np,
                      const struct acc_verdict *v, const struct acc_report_opts *ro)
{
	double thr = ro->jo->threshold * v->fleet_median;
	printf("\n== pdkv accept: %d nodes (%s), %s, --pairs %s (%zu measured)\n", n, ro->source,
	       ro->transport, ro->pairs_spec, np);
	printf("bandwidth %s/s, median of each pair's repeats (row: initiator, column: target; "
	       "* slow, ? uncertain, . not in --pairs)\n",
	       ro->unit);
	table(nodes, n, pairs, np, v, false);
	printf("\nlatency p50 us per transfer (median of the repeats)\n");
	table(nodes, n, pairs, np, v, true);
	if (isnan(v->fleet_median))
		printf("\nfleet median: none (no node had a judged pair)\n");
	else
		printf("\nfleet median %.1f %s/s (median of the nodes' best pairs): a node is an "
		       "outlier below --threshold %.2f x it = %.1f %s/s\npair median %.1f %s/s "
		       "(median of the pairs between nodes not slow): a pair is an outlier below "
		       "%.1f %s/s\n",
		       v->fleet_median, ro->unit, ro->jo->threshold, thr, ro->unit, v->pair_median,
		       ro->unit, ro->jo->threshold * v->pair_median, ro->unit);
	for (int x = 0; x < n; x++)
		if (v->node[x].state == ACC_SLOW)
			printf("OUTLIER node %s (%s): best pair %.1f %s/s = %.2f x fleet median, "
			       "median %.1f over %d pair%s, no repeat above %.1f\n",
			       nodes[x].name, nodes[x].addr, v->node[x].score, ro->unit,
			       v->node[x].score / v->fleet_median, v->node[x].median,
			       v->node[x].npairs, v->node[x].npairs == 1 ? "" : "s",
			       v->node[x].best_rep);
		else if (v->node[x].state == ACC_UNCERTAIN && !isnan(v->node[x].score))
			printf("UNCERTAIN node %s: best pair %.1f %s/s below the threshold but a "
			       "repeat reached %.1f (NOTRUN: not judged)\n",
			       nodes[x].name, v->node[x].score, ro->unit, v->node[x].best_rep);
	for (size_t k = 0; k < np; k++) {
		const struct acc_pair *p = &pairs[k];
		const char *a = nodes[p->i].name, *b = nodes[p->j].name;
		if (p->state == ACC_SLOW) {
			bool ni = v->node[p->i].state == ACC_SLOW,
			     nj = v->node[p->j].state == ACC_SLOW;
			printf("OUTLIER pair %s -> %s: %.1f %s/s = %.2f x pair median%s%s%s\n", a,
			       b, p->bw_med, ro->unit, p->bw_med / v->pair_median,
			       ni || nj ? " (explained by slow node "
			                : " (both nodes are fine: the link "
			                  "between them)",
			       ni   ? a
			       : nj ? b
			            : "",
			       ni || nj ? ")" : "");
		} else if (p->state == ACC_FAILED)
			printf("FAILED pair %s -> %s: %s%s%s\n", a, b,
			       p->wrong || p->failed ? "--check: " : "", p->why,
			       p->wrong ? " (wrong bytes)" : "");
		else if (p->state == ACC_UNCERTAIN)
			printf("UNCERTAIN pair %s -> %s: %s (NOTRUN: not judged)\n", a, b, p->why);
	}
	printf("VERDICT: %s — %d slow node%s, %d slow pair%s, %d failed, %d uncertain, %d judged\n",
	       acc_exit_status(v) == 0   ? "PASS (no outlier)"
	       : acc_exit_status(v) == 1 ? "OUTLIERS"
	                                 : "NOTRUN (nothing could be judged)",
	       v->slow_nodes, v->slow_nodes == 1 ? "" : "s", v->slow_pairs,
	       v->slow_pairs == 1 ? "" : "s", v->failed_pairs, v->uncertain_pairs, v->judged_pairs);
	fflush(stdout);
}

static cJSON *num_or_null(double x)
{
	return isnan(x) || isinf(x) ? cJSON_CreateNull() : cJSON_CreateNumber(x);
}

static cJSON *pair_json(const struct acc_node *nodes, const struct acc_pair *p)
{
	cJSON *o = cJSON_CreateObject(), *bw = cJSON_AddArrayToObject(o, "bw_repeats");
	cJSON_AddStringToObject(o, "initiator", nodes[p->i].name);
	cJSON_AddStringToObject(o, "target", nodes[p->j].name);
	for (int r = 0; r < p->nrep; r++)
		cJSON_AddItemToArray(bw, cJSON_CreateNumber(p->bw[r]));
	cJSON_AddItemToObject(o, "bw_median", num_or_null(p->bw_med));
	cJSON_AddItemToObject(o, "lat_p50_us", num_or_null(p->lat_med));
	cJSON_AddItemToObject(o, "spread", num_or_null(p->spread));
	cJSON_AddItemToObject(o, "bw_min", num_or_null(p->lo));
	cJSON_AddItemToObject(o, "bw_max", num_or_null(p->hi));
	cJSON_AddStringToObject(o, "state", acc_state_name(p->state));
	cJSON_AddNumberToObject(o, "wrong_bytes", (double)p->wrong);
	cJSON_AddNumberToObject(o, "failed_transfers", (double)p->failed);
	if (p->state == ACC_FAILED || p->state == ACC_UNCERTAIN)
		cJSON_AddStringToObject(o, "why", p->why);
	return o;
}

int acc_write_json(const char *path, const struct acc_node *nodes, int n,
                   const struct acc_pair *pairs, size_t np, const struct acc_verdict *v,
                   const struct acc_report_opts *ro)
{
	cJSON *root = cJSON_CreateObject(), *arr, *m, *on, *op;
	char date[32], *s;
	time_t now = time(NULL);
	int rc;
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	cJSON_AddStringToObject(root, "tool", "pdkv accept");
	cJSON_AddStringToObject(root, "date", date);
	cJSON_AddStringToObject(root, "command", ro->command);
	cJSON_AddStringToObject(root, "source", ro->source);
	cJSON_AddStringToObject(root, "transport", ro->transport);
	cJSON_AddStringToObject(root, "pairs", ro->pairs_spec);
	snprintf(date, sizeof(date), "%s/s", ro->unit);
	cJSON_AddStringToObject(root, "unit", date);
	cJSON_AddNumberToObject(root, "threshold", ro->jo->threshold);
	cJSON_AddNumberToObject(root, "max_spread", ro->jo->max_spread);
	cJSON_AddItemToObject(root, "fleet_median", num_or_null(v->fleet_median));
	cJSON_AddItemToObject(root, "pair_median", num_or_null(v->pair_median));
	arr = cJSON_AddArrayToObject(root, "nodes");
	on = cJSON_CreateArray();
	for (int x = 0; x < n; x++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", nodes[x].name);
		cJSON_AddStringToObject(o, "address", nodes[x].addr);
		cJSON_AddItemToObject(o, "median", num_or_null(v->node[x].median));
		cJSON_AddItemToObject(o, "best_pair", num_or_null(v->node[x].score));
		cJSON_AddNumberToObject(o, "pairs", v->node[x].npairs);
		cJSON_AddStringToObject(o, "state", acc_state_name(v->node[x].state));
		cJSON_AddItemToArray(arr, o);
		if (v->node[x].state == ACC_SLOW)
			cJSON_AddItemToArray(on, cJSON_CreateString(nodes[x].name));
	}
	arr = cJSON_AddArrayToObject(root, "pairs");
	op = cJSON_CreateArray();
	for (size_t k = 0; k < np; k++) {
		cJSON_AddItemToArray(arr, pair_json(nodes, &pairs[k]));
		if (pairs[k].state == ACC_SLOW || pairs[k].state == ACC_FAILED) {
			char b[140];
			snprintf(b, sizeof(b), "%s->%s", nodes[pairs[k].i].name,
			         nodes[pairs[k].j].name);
			cJSON_AddItemToArray(op, cJSON_CreateString(b));
		}
	}
	m = cJSON_AddArrayToObject(root, "matrix"); /* [initiator][target] bw medians, null: none */
	for (int i = 0; i < n; i++) {
		cJSON *row = cJSON_CreateArray();
		for (int j = 0; j < n; j++) {
			const struct acc_pair *p = i == j ? NULL : pair_at(pairs, np, i, j);
			cJSON_AddItemToArray(row, num_or_null(p ? p->bw_med : NAN));
		}
		cJSON_AddItemToArray(m, row);
	}
	arr = cJSON_AddObjectToObject(root, "outliers");
	cJSON_AddItemToObject(arr, "nodes", on);
	cJSON_AddItemToObject(arr, "pairs", op);
	rc = acc_exit_status(v);
	cJSON_AddStringToObject(root, "verdict",
	                        rc == 0   ? "PASS"
	                        : rc == 1 ? "OUTLIERS"
	                                  : "NOTRUN");
	cJSON_AddNumberToObject(root, "exit", rc);
	s = cJSON_Print(root);
	rc = s ? pd_write_file(path, s, strlen(s)) : -1;
	free(s);
	cJSON_Delete(root);
	return rc ? -1 : 0;
}

/* gnuplot's single-quoted strings: a quote doubles */
static void gp_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

int acc_write_plot(const char *path, const struct acc_node *nodes, int n,
                   const struct acc_pair *pairs, size_t np, const struct acc_report_opts *ro,
                   char *err, size_t errsz)
{
	char *data = pd_asprintf("%s.dat", path), *gp = pd_asprintf("%s.gp", path), out[2048],
	     date[32], title[700];
	const char *argv[] = {"gnuplot", gp, NULL};
	time_t now = time(NULL);
	FILE *f;
	int ret = -1;
	if (!data || !gp || !(f = fopen(data, "w"))) {
		pd_seterr(err, errsz, "--plot %s: cannot write %s.dat", path, path);
		goto out;
	}
	for (int i = 0; i < n; i++) { /* one row per initiator; NaN = no figure */
		for (int j = 0; j < n; j++) {
			const struct acc_pair *p = i == j ? NULL : pair_at(pairs, np, i, j);
			fprintf(f, "%s%g", j ? " " : "", p && !isnan(p->bw_med) ? p->bw_med : NAN);
		}
		fprintf(f, "\n");
	}
	fclose(f);
	if (!(f = fopen(gp, "w"))) {
		pd_seterr(err, errsz, "--plot %s: cannot write %s.gp", path, path);
		goto out;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	snprintf(title, sizeof(title), "pdkv accept %s/s, %s, %s", ro->unit, ro->transport, date);
	for (const char *c = ro->command; *c && strlen(title) + 8 < sizeof(title);) {
		size_t n = strlen(c) > 80 ? 80 : strlen(c), t = strlen(title); /* 80-column lines */
		for (size_t i = 0; i < n && t + 4 < sizeof(title); i++)
			if (c[i] != '"' && c[i] != '\\') {
				if (!i) {
					title[t++] = '\\';
					title[t++] = 'n';
				}
				title[t++] = c[i];
			}
		title[t] = '\0';
		c += n;
	}
	fprintf(f, "set terminal pngcairo size %d,%d noenhanced\nset output ", 500 + 60 * n,
	        420 + 50 * n);
	gp_quote(f, path);
	fprintf(f, "\nset title \"%s\" font ',9'\n", title);
	fprintf(f,
	        "set xlabel 'target'\nset ylabel 'initiator'\nset datafile missing 'nan'\n"
	        "set cbrange [0:*]\nset palette defined (0 'red', 0.5 'yellow', 1 'green')\nset "
	        "yrange [] "
	        "reverse\nset cblabel '%s/s'\nset xtics (",
	        ro->unit);
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s", i ? ", " : "");
		gp_quote(f, nodes[i].name);
		fprintf(f, " %d", i);
	}
	fprintf(f, ")\nset ytics (");
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s", i ? ", " : "");
		gp_quote(f, nodes[i].name);
		fprintf(f, " %d", i);
	}
	fprintf(f, ")\nplot ");
	gp_quote(f, data);
	fprintf(f, " matrix with image notitle, ");
	gp_quote(f, data);
	fprintf(f, " matrix using 1:2:($3 == $3 ? sprintf('%%.1f', $3) : '') with labels "
	           "notitle\n");
	fclose(f);
	ret = hr_cmd_run(argv, out, sizeof(out), 60000);
	if (ret)
		pd_seterr(err, errsz, "--plot %s: gnuplot %s: %.300s", path,
		          ret == -ENOENT ? "is not installed (apt-get install gnuplot-nox)"
		                         : "failed",
		          out);
	ret = ret ? -1 : 0;
out:
	free(data);
	free(gp);
	return ret;
}
