/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-report: `pdkv report compare|diff OLD NEW` (is NEW slower, with statistics) and
 * `pdkv report history DIR` (plots over time); a thin main over the rpt library. */
#include "rpt.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"
#include "pd_version.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: pdkv report compare OLD.json NEW.json [--threshold 5%%] [--alpha 0.05]\n"
	    "                           [--json[=FILE]] [--markdown[=FILE]]\n"
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
	    "diff: the same comparison, for two pdkv run --json files (before/after an upgrade).\n"
	    "history: every *.json in DIR and DIR/*/ (DIR/<UTC time>-<commit>/bench.json), as\n"
	    "  gnuplot PNG + SVG per series plus index.md and index.html in --out.\n"
	    "--json / --markdown alone replace the table on stdout; =FILE writes that file too.\n"
	    "Exit: 0 no regression; 1 a row regressed beyond --threshold with significance, or a\n"
	    "  verdict got worse; 2 usage or a bad file; history: 77 when gnuplot is missing.\n",
	    RPT_MIN_SAMPLES, RPT_MIN_SAMPLES);
}

static int bad(const char *flag, const char *val, const char *want)
{
	fprintf(stderr, "pdkv-report: %s: expected %s, got \"%s\"\n", flag, want, val ? val : "");
	return 2;
}

static int write_out(const char *path, const char *text)
{
	if (pd_write_file(path, text, strlen(text))) {
		fprintf(stderr, "pdkv-report: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

struct outs {
	bool json, md; /* to stdout */
	const char *json_file, *md_file;
};

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

static int compare(int argc, char **argv)
{
	static const struct option lo[] = {{"threshold", 1, 0, 't'}, {"alpha", 1, 0, 'a'},
	                                   {"json", 2, 0, 'j'},      {"markdown", 2, 0, 'm'},
	                                   {"help", 0, 0, 'h'},      {0, 0, 0, 0}};
	struct rpt_opts opt = {.threshold_pct = 5, .alpha = 0.05};
	struct outs o = {0};
	struct rpt_doc a, b;
	struct rpt_cmp c;
	char err[1024], *end;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 't':
			opt.threshold_pct = strtod(optarg, &end);
			if (end == optarg || (*end && strcmp(end, "%")) ||
			    !(opt.threshold_pct >= 0) || opt.threshold_pct > 1000)
				return bad("--threshold", optarg, "a percentage like 5% or 2.5");
			break;
		case 'a':
			opt.alpha = strtod(optarg, &end);
			if (end == optarg || *end || !(opt.alpha > 0) || !(opt.alpha < 1))
				return bad("--alpha", optarg,
				           "a significance level between 0 and 1");
			break;
		case 'j':
			if (optarg)
				o.json_file = optarg;
			else
				o.json = true;
			break;
		case 'm':
			if (optarg)
				o.md_file = optarg;
			else
				o.md = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.json && o.md) {
		fprintf(stderr, "pdkv-report: --json and --markdown both to stdout: give one of "
		                "them a file (--markdown=FILE)\n");
		return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "pdkv-report: %s needs OLD.json and NEW.json (got %d files)\n",
		        argv[0], argc - optind);
		return 2;
	}
	if (rpt_load(argv[optind], &a, err, sizeof(err))) {
		fprintf(stderr, "pdkv-report: %s\n", err);
		rpt_doc_free(&a);
		return 2;
	}
	if (rpt_load(argv[optind + 1], &b, err, sizeof(err))) {
		fprintf(stderr, "pdkv-report: %s\n", err);
		rpt_doc_free(&a);
		rpt_doc_free(&b);
		return 2;
	}
	if (a.kind != b.kind) {
		fprintf(stderr,
		        "pdkv-report: %s is a %s file and %s a %s file: compare two of a kind\n",
		        a.path, rpt_kind_name(a.kind), b.path, rpt_kind_name(b.kind));
		rc = 2;
	} else if (rpt_compare(&a, &b, &opt, &c)) {
		fprintf(stderr, "pdkv-report: out of memory\n");
		rc = 2;
	} else {
		rc = emit(&c, &o) ? 2 : rpt_cmp_status(&c);
		rpt_cmp_free(&c);
	}
	rpt_doc_free(&a);
	rpt_doc_free(&b);
	return rc;
}

static int history(int argc, char **argv)
{
	static const struct option lo[] = {{"out", 1, 0, 'o'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	const char *out = NULL;
	char err[1024] = "", *dflt = NULL;
	int ch, rc;
	while ((ch = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		if (ch == 'o')
			out = optarg;
		else if (ch == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "pdkv-report: history needs one DIR (got %d)\n", argc - optind);
		return 2;
	}
	if (!out)
		out = dflt = pd_asprintf("%s/plots", argv[optind]);
	rc = rpt_history(argv[optind], out, stdout, err, sizeof(err));
	if (err[0])
		fprintf(stderr, "pdkv-report: %s\n", err);
	free(dflt);
	return rc;
}

int main(int argc, char **argv)
{
	if (pd_version_asked(argc, argv, "pdkv report"))
		return 0;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "compare") || !strcmp(argv[1], "diff"))
		return compare(argc - 1, argv + 1);
	if (!strcmp(argv[1], "history"))
		return history(argc - 1, argv + 1);
	fprintf(stderr, "pdkv-report: unknown subcommand \"%s\" (compare, diff or history)\n",
	        argv[1]);
	return 2;
}
