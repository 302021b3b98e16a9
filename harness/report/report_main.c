/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-report: `pdkv report compare|diff OLD NEW` (is NEW slower, with statistics) and
 * `pdkv report history DIR` (plots over time); a thin main over the rpt library. */
#include "rpt.h"

#include <stdlib.h>
#include <string.h>

#include "pd_opt.h"
#include "pd_util.h"

static const char usage_fmt[] =
    "usage: pdkv report compare OLD.json NEW.json [--threshold 5%%] [--alpha 0.05]\n"
    "                           [--json[=FILE]] [--markdown[=FILE]] [--history DIR]\n"
    "       pdkv report diff OLD.json NEW.json [same flags]\n"
    "       pdkv report history DIR [--out DIR/plots]\n"
    "\n"
    "compare: per row (bench: kind, operation, block size, batch, threads, protocol,\n"
    "  memory) the median of each side, the change, and a two-sided Mann-Whitney U test\n"
    "  on the samples (exact for small tie-free sets, else normal with tie correction).\n"
    "  \"~\" = no significant change (p >= alpha); \"too few samples\" = fewer than %d on\n"
    "  a side (pdkv bench --repeat %d or more) or one value per run (pdkv run metrics):\n"
    "  no verdict. REGRESSION = significant, beyond --threshold, and, for a pdkv row\n"
    "  measured beside a baseline (socket, ib_write_bw), in the ratio to it. Counts of a\n"
    "  steady scenario (PASS, no expected failure, every request ok) by any change;\n"
    "  histogram _bucket sums are not compared.\n"
    "  Reads pdkv bench --json, pdkv run --json (verdicts, checks, metric deltas) and\n"
    "  rows files {\"rows\": [{name, metric, samples|value, better: higher|lower}]}.\n"
    "  --history DIR (the earlier runs, as ci/bench.sh keeps them): a row gates only\n"
    "  when its new median is also beyond the prediction bound of its medians over\n"
    "  the last 10 earlier runs, mean - t(1-alpha/m; n-1) sd sqrt(1+1/n) of the\n"
    "  medians' logs, so the bound of a higher-is-better row stays above zero (runs\n"
    "  whose own comparison found a regression left out); with fewer than 3 earlier\n"
    "  runs it is reported, not gated.\n"
    "diff: the same comparison, for two pdkv run --json files (before/after an upgrade).\n"
    "history: every *.json in DIR and DIR/*/ (DIR/<UTC time>-<commit>/bench.json), as\n"
    "  gnuplot PNG + SVG per series plus index.md and index.html in --out.\n"
    "\n";

static const char footer[] =
    "\n--json / --markdown alone replace the table on stdout; =FILE writes that file too.\n"
    "Exit: 0 no regression; 1 a row regressed beyond --threshold with significance, or a\n"
    "  verdict got worse; 2 usage or a bad file; history: 77 when gnuplot is missing.\n"
    "Errors: one line \"pdkv report: ...\" on stderr.\n";

static char usage_text[sizeof(usage_fmt) + 16];

struct outs {
	bool json, md; /* to stdout */
	const char *json_file, *md_file;
};

/* --threshold 5% or 2.5 (percent, 0..1000). */
static int opt_threshold(const char *v, void *dst, void *ud)
{
	char *end;
	double d = strtod(v, &end);
	(void)ud;
	if (end == v || (*end && strcmp(end, "%")) || !(d >= 0) || d > 1000)
		return -1;
	*(double *)dst = d;
	return 0;
}

/* --json / --markdown: bare = stdout, =FILE = that file. */
static int opt_json(const char *v, void *dst, void *ud)
{
	struct outs *o = dst;
	(void)ud;
	if (v)
		o->json_file = v;
	else
		o->json = true;
	return v && !*v ? -1 : 0;
}

static int opt_md(const char *v, void *dst, void *ud)
{
	struct outs *o = dst;
	(void)ud;
	if (v)
		o->md_file = v;
	else
		o->md = true;
	return v && !*v ? -1 : 0;
}

/* compare's and diff's rows plus history's --out, one table: the subcommand checks that the
 * flags it got are its own. */
static int parse(int argc, char **argv, struct rpt_opts *opt, struct outs *o, const char **out,
                 const char **hist_dir, char **pos, int *npos)
{
	const struct pd_opt rows[] = {
	    {.name = "threshold",
	     .type = PD_OPT_FN,
	     .dst = &opt->threshold_pct,
	     .arg = "PCT",
	     .help = "compare/diff: a regression is beyond this change\n(default 5%)",
	     .want = "a percentage like 5% or 2.5",
	     .fn = opt_threshold},
	    {.name = "alpha",
	     .type = PD_OPT_DOUBLE,
	     .dst = &opt->alpha,
	     .arg = "P",
	     .help = "compare/diff: significance level (default 0.05)",
	     .want = "a significance level between 0 and 1",
	     .min = 0,
	     .max = 0.999999999,
	     .min_excl = true},
	    {.name = "json",
	     .type = PD_OPT_FN,
	     .dst = o,
	     .arg = "[=FILE]",
	     .help = "compare/diff: JSON on stdout, or into FILE",
	     .want = "a file name",
	     .fn = opt_json,
	     .optional_value = true},
	    {.name = "markdown",
	     .type = PD_OPT_FN,
	     .dst = o,
	     .arg = "[=FILE]",
	     .help = "compare/diff: Markdown on stdout, or into FILE",
	     .want = "a file name",
	     .fn = opt_md,
	     .optional_value = true},
	    {.name = "history",
	     .type = PD_OPT_STR,
	     .dst = hist_dir,
	     .arg = "DIR",
	     .help = "compare/diff: gate only beyond each row's run-to-run\nspread over the "
	             "earlier runs in DIR"},
	    {.name = "out",
	     .shrt = 'o',
	     .type = PD_OPT_STR,
	     .dst = out,
	     .arg = "DIR",
	     .help = "history: where the plots go (default DIR/plots)"},
	};
	const struct pd_opt_spec spec = {.prog = "pdkv report",
	                                 .usage = usage_text,
	                                 .footer = footer,
	                                 .opts = rows,
	                                 .nopts = PD_ARRAY_SIZE(rows),
	                                 .max_pos = -1};
	snprintf(usage_text, sizeof(usage_text), usage_fmt, RPT_MIN_SAMPLES, RPT_MIN_SAMPLES);
	return pd_opt_parse(&spec, argc, argv, 1, pos, npos);
}

static int write_out(const char *path, const char *text)
{
	if (pd_write_file(path, text, strlen(text))) {
		fprintf(stderr, "pdkv report: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

static int emit(const struct rpt_cmp *c, const struct outs *o)
{
	char *md = NULL;
	size_t len = 0;
	int rc = 0;
	if (o->json || o->json_file) {
		cJSON *j = rpt_cmp_json(c);
		char *t = j ? cJSON_Print(j) : NULL;
		cJSON_Delete(j);
		if (!t)
			return -1;
		if (o->json)
			printf("%s\n", t);
		if (o->json_file && write_out(o->json_file, t))
			rc = -1;
		free(t);
	}
	if (o->md || o->md_file) {
		FILE *f = open_memstream(&md, &len);
		if (!f)
			return -1;
		rpt_print_markdown(f, c);
		fclose(f);
		if (o->md)
			fputs(md, stdout);
		if (o->md_file && write_out(o->md_file, md))
			rc = -1;
		free(md);
	}
	if (!o->json && !o->md)
		rpt_print_text(stdout, c);
	return rc;
}

static int compare(int argc, char **argv, char **pos, int npos, const struct rpt_opts *optp,
                   const struct outs *op, const char *hist_dir)
{
	struct rpt_opts opt = *optp;
	struct outs o = *op;
	struct rpt_doc a, b;
	struct rpt_cmp c;
	struct rpt_hist h = {0};
	char err[1024];
	int rc;

	(void)argc;
	if (o.json && o.md) {
		fprintf(stderr, "pdkv report: --json and --markdown both to stdout: give one of "
		                "them a file (--markdown=FILE)\n");
		return 2;
	}
	if (npos != 2) {
		fprintf(stderr, "pdkv report: %s needs OLD.json and NEW.json (got %d files)\n",
		        argv[0], npos);
		return 2;
	}
	if (rpt_load(pos[0], &a, err, sizeof(err))) {
		fprintf(stderr, "pdkv report: %s\n", err);
		rpt_doc_free(&a);
		return 2;
	}
	if (rpt_load(pos[1], &b, err, sizeof(err))) {
		fprintf(stderr, "pdkv report: %s\n", err);
		rpt_doc_free(&a);
		rpt_doc_free(&b);
		return 2;
	}
	if (a.kind != b.kind) {
		fprintf(stderr,
		        "pdkv report: %s is a %s file and %s a %s file: compare two of a kind\n",
		        a.path, rpt_kind_name(a.kind), b.path, rpt_kind_name(b.kind));
		rc = 2;
	} else if (hist_dir && rpt_hist_load(hist_dir, pos[1], b.kind, &h, err, sizeof(err))) {
		fprintf(stderr, "pdkv report: %s\n", err);
		rc = 2;
	} else {
		opt.hist = hist_dir ? &h : NULL;
		if (rpt_compare(&a, &b, &opt, &c)) {
			fprintf(stderr, "pdkv report: out of memory\n");
			rc = 2;
		} else {
			rc = emit(&c, &o) ? 2 : rpt_cmp_status(&c);
			rpt_cmp_free(&c);
		}
	}
	rpt_hist_free(&h);
	rpt_doc_free(&a);
	rpt_doc_free(&b);
	return rc;
}

/* One line "pdkv report: ..." on stderr; returns 2. */
static int say(const char *fmt, const char *a)
{
	fputs("pdkv report: ", stderr);
	fprintf(stderr, fmt, a);
	fputc('\n', stderr);
	return 2;
}

static int history(char **pos, int npos, const char *out)
{
	char err[1024] = "", *dflt = NULL;
	int rc;
	if (npos != 1) {
		fprintf(stderr, "pdkv report: history needs one DIR (got %d)\n", npos);
		return 2;
	}
	if (!out)
		out = dflt = pd_asprintf("%s/plots", pos[0]);
	rc = rpt_history(pos[0], out, stdout, err, sizeof(err));
	if (err[0])
		fprintf(stderr, "pdkv report: %s\n", err);
	free(dflt);
	return rc;
}

int main(int argc, char **argv)
{
	struct rpt_opts opt = {.threshold_pct = 5, .alpha = 0.05};
	struct outs o = {0};
	const char *out = NULL, *hist_dir = NULL;
	char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	int npos = 0, rc;
	bool hist;

	if (!pos)
		return 2;
	rc = parse(argc, argv, &opt, &o, &out, &hist_dir, pos, &npos);
	if (rc) {
		free(pos);
		return rc == 1 ? 0 : 2;
	}
	if (npos < 1 || !strcmp(pos[0], "help")) {
		fputs(usage_text, npos ? stdout : stderr);
		fprintf(npos ? stdout : stderr, "(pdkv report --help lists the flags)\n");
		free(pos);
		return npos ? 0 : 2;
	}
	hist = !strcmp(pos[0], "history");
	if (!hist && strcmp(pos[0], "compare") && strcmp(pos[0], "diff"))
		rc = say("unknown subcommand \"%s\" (compare, diff or history)", pos[0]);
	else if (hist && (o.json || o.md || o.json_file || o.md_file))
		rc = say("%s: --json and --markdown are compare's and diff's", pos[0]);
	else if (!hist && out)
		rc = say("%s: --out is history's", pos[0]);
	else if (hist && hist_dir)
		rc = say("%s: --history is compare's and diff's (history reads its DIR)", pos[0]);
	else
		rc = hist ? history(pos + 1, npos - 1, out)
		          : compare(npos, pos, pos + 1, npos - 1, &opt, &o, hist_dir);
	free(pos);
	return rc;
}
