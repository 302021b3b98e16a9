/* SPDX-License-Identifier: Apache-2.0 */
/* rpt_history: `pdkv report history DIR` — every run kept in DIR (DIR/<UTC
 * time>-<commit>/NAME.json) as gnuplot series over time (median with min..max bars, ratios, % of
 * line rate) and an index. */
#include "rpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pd_util.h"

struct hline {
	char *title;
	double *med, *lo, *hi; /* per run; NAN = not measured in that run */
};
struct hplot {
	char *stem, *title, *ylabel;
	struct hline *l;
	size_t nl;
};
struct hrun {
	char *name;  /* entry in DIR */
	char *label; /* x tic */
	struct rpt_doc *docs;
	size_t ndocs;
};
struct hist {
	struct hrun *r;
	size_t nr;
	struct hplot *p;
	size_t np;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **rpt_list_dir(const char *dir, const char *suffix, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name), sl = suffix ? strlen(suffix) : 0;
		char **p;
		if (e->d_name[0] == '.' ||
		    (suffix && (l <= sl || strcmp(e->d_name + l - sl, suffix))))
			continue;
		p = realloc(v, (*n + 1) * sizeof(*p));
		if (!p)
			break;
		v = p;
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (v)
		qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

void rpt_free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* "20250502T101500Z-abc1234" -> "05-02 10:15 abc1234"; anything else as it is */
static char *run_label(const char *name)
{
	int Y, M, D, h, m, s;
	char z, rest[64] = "";
	if (sscanf(name, "%4d%2d%2dT%2d%2d%2d%c-%63s", &Y, &M, &D, &h, &m, &s, &z, rest) >= 7 &&
	    z == 'Z')
		return pd_asprintf("%02d-%02d %02d:%02d %.10s", M, D, h, m, rest);
	return strdup(name);
}

static int load_one(struct hrun *r, const char *path, FILE *f)
{
	char err[512];
	struct rpt_doc *p = realloc(r->docs, (r->ndocs + 1) * sizeof(*p));
	if (!p)
		return -1;
	r->docs = p;
	int rc = rpt_load(path, &p[r->ndocs], err, sizeof(err));
	if (rc) {
		if (rc != -2) /* compare.json next to the run: expected, not worth a line */
			fprintf(f, "history: skipping %s\n", err);
		rpt_doc_free(&p[r->ndocs]);
		return 0;
	}
	r->ndocs++;
	return 0;
}

static int load_runs(struct hist *h, const char *dir, FILE *f)
{
	size_t n;
	char **names = rpt_list_dir(dir, NULL, &n);
	for (size_t i = 0; i < n; i++) {
		char *path = pd_asprintf("%s/%s", dir, names[i]);
		struct stat st;
		struct hrun *p, *r;
		if (!path || stat(path, &st) ||
		    (!S_ISDIR(st.st_mode) &&
		     (strlen(names[i]) < 6 || strcmp(names[i] + strlen(names[i]) - 5, ".json")))) {
			free(path);
			continue;
		}
		p = realloc(h->r, (h->nr + 1) * sizeof(*p));
		if (!p) {
			free(path);
			break;
		}
		h->r = p;
		r = &h->r[h->nr];
		memset(r, 0, sizeof(*r));
		r->name = strdup(names[i]);
		r->label = run_label(names[i]);
		if (S_ISDIR(st.st_mode)) {
			size_t nj;
			char **js = rpt_list_dir(path, ".json", &nj);
			for (size_t k = 0; k < nj; k++) {
				char *jp = pd_asprintf("%s/%s", path, js[k]);
				if (jp)
					load_one(r, jp, f);
				free(jp);
			}
			rpt_free_list(js, nj);
		} else
			load_one(r, path, f);
		free(path);
		if (r->ndocs)
			h->nr++;
		else {
			free(r->name);
			free(r->label);
			free(r->docs);
		}
	}
	rpt_free_list(names, n);
	return 0;
}

static struct hplot *plot_get(struct hist *h, const char *stem, const char *title,
                              const char *ylabel)
{
	struct hplot *p;
	char clean[300];
	snprintf(clean, sizeof(clean), "%s", stem);
	for (char *c = clean; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')))
			*c = '-';
	for (size_t i = 0; i < h->np; i++)
		if (!strcmp(h->p[i].stem, clean))
			return &h->p[i];
	p = realloc(h->p, (h->np + 1) * sizeof(*p));
	if (!p)
		return NULL;
	h->p = p;
	p = &h->p[h->np++];
	memset(p, 0, sizeof(*p));
	p->stem = strdup(clean);
	p->title = strdup(title);
	p->ylabel = strdup(ylabel);
	return p;
}

static int line_set(struct hist *h, struct hplot *p, const char *title, size_t run, double med,
                    double lo, double hi)
{
	struct hline *l = NULL;
	for (size_t i = 0; i < p->nl; i++)
		if (!strcmp(p->l[i].title, title))
			l = &p->l[i];
	if (!l) {
		struct hline *nl = realloc(p->l, (p->nl + 1) * sizeof(*nl));
		if (!nl)
			return -1;
		p->l = nl;
		l = &p->l[p->nl++];
		l->title = strdup(title);
		l->med = malloc(h->nr * sizeof(double));
		l->lo = malloc(h->nr * sizeof(double));
		l->hi = malloc(h->nr * sizeof(double));
		if (!l->title || !l->med || !l->lo || !l->hi)
			return -1;
		for (size_t i = 0; i < h->nr; i++)
			l->med[i] = l->lo[i] = l->hi[i] = NAN;
	}
	l->med[run] = med;
	l->lo[run] = lo;
	l->hi[run] = hi;
	return 0;
}

/* the series of one file of run k into the plots */
static int collect_doc(struct hist *h, size_t k, const struct rpt_doc *d)
{
	for (size_t i = 0; i < d->ns; i++) {
		const struct rpt_series *s = &d->s[i];
		double med = pd_stats_median(s->v, s->n), lo, hi;
		char stem[300], title[300];
		const char *what = s->label ? s->label : s->key;
		struct hplot *p;
		pd_stats_minmax(s->v, s->n, &lo, &hi);
		if (d->kind == RPT_RUN || !s->n)
			continue; /* run files: the verdict table of the index */
		if (d->kind == RPT_ROWS) {
			snprintf(stem, sizeof(stem), "%s-%s", s->key, s->metric);
			snprintf(title, sizeof(title), "%s: %s", s->key, s->metric);
			if (!(p = plot_get(h, stem, title, s->metric)) ||
			    line_set(h, p, s->key, k, med, lo, hi))
				return -1;
			continue;
		}
		/* bench: the group without its kind names the plot; "pdkv write ..." minus "pdkv "
		 */
		if (strchr(what, ' '))
			what = strchr(what, ' ') + 1;
		if (!strcmp(s->metric, "GB/s")) {
			snprintf(stem, sizeof(stem), "bw-%s", s->group);
			snprintf(title, sizeof(title), "bandwidth: %s (median, bars min..max)",
			         what);
			if (!(p = plot_get(h, stem, title, "GB/s")) ||
			    line_set(h, p, s->kind, k, med, lo, hi))
				return -1;
		} else if (!strcmp(s->metric, "x socket")) {
			snprintf(stem, sizeof(stem), "ratio-%s", s->group);
			snprintf(title, sizeof(title), "ratio to the baseline: %s", what);
			if (!(p = plot_get(h, stem, title, "ratio")) ||
			    line_set(h, p, "pdkv / socket (per interleaved pair)", k, med, lo, hi))
				return -1;
		} else if (!strcmp(s->metric, "x ib_write_bw")) {
			char lt[64];
			snprintf(stem, sizeof(stem), "ratio-%s", s->group);
			snprintf(title, sizeof(title), "ratio to the baseline: %s", what);
			snprintf(lt, sizeof(lt), "%s / ib_write_bw", s->kind);
			if (!(p = plot_get(h, stem, title, "ratio")) ||
			    line_set(h, p, lt, k, med, lo, hi))
				return -1;
		} else if (!strcmp(s->metric, "% line rate")) {
			snprintf(stem, sizeof(stem), "linerate-%s", s->group);
			snprintf(title, sizeof(title), "%% of line rate: %s", what);
			if (!(p = plot_get(h, stem, title, "% of line rate")) ||
			    line_set(h, p, s->kind, k, med, lo, hi))
				return -1;
		}
	}
	return 0;
}

static void put_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "\t?");
	else
		fprintf(f, "\t%.6g", v);
}

/* gnuplot string literal: double quotes, backslash and quote escaped */
static void gp_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int write_plot_data(const struct hist *h, const struct hplot *p, const char *out, FILE *gp,
                           const char *png_term)
{
	char *path = pd_asprintf("%s/%s.dat", out, p->stem);
	FILE *f = path ? fopen(path, "w") : NULL;
	free(path);
	if (!f)
		return -1;
	fprintf(f, "# run\tlabel");
	for (size_t j = 0; j < p->nl; j++)
		fprintf(f, "\t%s median\tmin\tmax", p->l[j].title);
	fprintf(f, "\n");
	for (size_t i = 0; i < h->nr; i++) {
		fprintf(f, "%zu\t%s", i, h->r[i].label);
		for (size_t j = 0; j < p->nl; j++) {
			put_num(f, p->l[j].med[i]);
			put_num(f, p->l[j].lo[i]);
			put_num(f, p->l[j].hi[i]);
		}
		fprintf(f, "\n");
	}
	if (fclose(f))
		return -1;
	for (int t = 0; t < 2; t++) {
		fprintf(gp, "set terminal %s size 960,480 noenhanced\nset output ",
		        t ? "svg" : png_term);
		fprintf(gp, "\"%s.%s\"\nset title ", p->stem, t ? "svg" : "png");
		gp_str(gp, p->title);
		fprintf(gp, "\nset ylabel ");
		gp_str(gp, p->ylabel);
		fprintf(gp, "\nplot ");
		for (size_t j = 0; j < p->nl; j++) {
			fprintf(gp, "%s\"%s.dat\" using 1:%zu:%zu:%zu%s with yerrorlines title ",
			        j ? ", " : "", p->stem, 3 + 3 * j, 4 + 3 * j, 5 + 3 * j,
			        j ? "" : ":xtic(2)");
			gp_str(gp, p->l[j].title);
		}
		fprintf(gp, "\n");
	}
	return 0;
}

/* runs `gnuplot ARGS` in dir with output to /dev/null (quiet) or log; its exit status */
static int run_gnuplot(const char *dir, char *const argv[], const char *log)
{
	pid_t pid = fork();
	int st;
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (dir && chdir(dir))
			_exit(126);
		execvp("gnuplot", argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void hist_free(struct hist *h)
{
	for (size_t i = 0; i < h->nr; i++) {
		for (size_t k = 0; k < h->r[i].ndocs; k++)
			rpt_doc_free(&h->r[i].docs[k]);
		free(h->r[i].docs);
		free(h->r[i].name);
		free(h->r[i].label);
	}
	for (size_t i = 0; i < h->np; i++) {
		for (size_t j = 0; j < h->p[i].nl; j++) {
			free(h->p[i].l[j].title);
			free(h->p[i].l[j].med);
			free(h->p[i].l[j].lo);
			free(h->p[i].l[j].hi);
		}
		free(h->p[i].l);
		free(h->p[i].stem);
		free(h->p[i].title);
		free(h->p[i].ylabel);
	}
	free(h->r);
	free(h->p);
}

static void html_esc(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
}

/* the engine's MC_* environment a bench run recorded: what set two runs apart */
static void run_env(const struct hrun *r, char *buf, size_t len)
{
	size_t used = 0;
	snprintf(buf, len, "-");
	for (size_t d = 0; d < r->ndocs; d++)
		for (size_t i = 0; i < r->docs[d].nmeta && used < len; i++) {
			const struct rpt_kv *kv = &r->docs[d].meta[i];
			if (strncmp(kv->k, "env.", 4) || !strcmp(kv->k, "env.MC_TCP_BIND_ADDRESS"))
				continue;
			used += (size_t)snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "",
			                         kv->k + 4, kv->v);
		}
}

static const char *run_meta(const struct hrun *r, const char *k)
{
	for (size_t i = 0; i < r->ndocs; i++) {
		const char *v = rpt_meta_get(&r->docs[i], k);
		if (v)
			return v;
	}
	return "-";
}

/* scenario x run table of the `pdkv run` files kept in the history */
static void verdict_table(FILE *f, const struct hist *h, bool html)
{
	const char **names = NULL;
	size_t nn = 0;
	for (size_t k = 0; k < h->nr; k++)
		for (size_t d = 0; d < h->r[k].ndocs; d++)
			for (size_t i = 0; i < h->r[k].docs[d].nvd; i++) {
				const struct rpt_verdict *v = &h->r[k].docs[d].vd[i];
				bool seen = false;
				const char **p;
				if (v->check)
					continue;
				for (size_t j = 0; j < nn && !seen; j++)
					seen = !strcmp(names[j], v->scenario);
				if (seen || !(p = realloc(names, (nn + 1) * sizeof(*p))))
					continue;
				names = p;
				names[nn++] = v->scenario;
			}
	if (!nn)
		return;
	fprintf(
	    f, html ? "<h2>scenario verdicts (pdkv run)</h2>\n<table border=1><tr><th>scenario</th>"
	            : "\n## scenario verdicts (pdkv run)\n\n| scenario |");
	for (size_t k = 0; k < h->nr; k++)
		fprintf(f, html ? "<th>%s</th>" : " %s |", h->r[k].label);
	fprintf(f, html ? "</tr>\n" : "\n|---|");
	if (!html) {
		for (size_t k = 0; k < h->nr; k++)
			fprintf(f, "---|");
		fprintf(f, "\n");
	}
	for (size_t j = 0; j < nn; j++) {
		fprintf(f, html ? "<tr><td>%s</td>" : "| %s |", names[j]);
		for (size_t k = 0; k < h->nr; k++) {
			const char *st = "-";
			for (size_t d = 0; d < h->r[k].ndocs; d++)
				for (size_t i = 0; i < h->r[k].docs[d].nvd; i++) {
					const struct rpt_verdict *v = &h->r[k].docs[d].vd[i];
					if (!v->check && !strcmp(v->scenario, names[j]))
						st = v->status;
				}
			fprintf(f, html ? "<td>%s</td>" : " %s |", st);
		}
		fprintf(f, html ? "</tr>\n" : "\n");
	}
	if (html)
		fprintf(f, "</table>\n");
	free(names);
}

static int rpt_history_index(const struct hist *h, const char *out, bool plots)
{
	char *mp = pd_asprintf("%s/index.md", out), *hp = pd_asprintf("%s/index.html", out);
	FILE *md = mp ? fopen(mp, "w") : NULL, *ht = hp ? fopen(hp, "w") : NULL;
	int rc = 0;
	free(mp);
	free(hp);
	if (!md || !ht) {
		if (md)
			fclose(md);
		if (ht)
			fclose(ht);
		return -1;
	}
	fprintf(md,
	        "# pdkv history\n\n%zu runs, oldest first. Each point is the median of the "
	        "run's repetitions; the bars go from the slowest to the fastest one.\n\n"
	        "| # | run | files | commit | host | threads | environment |\n"
	        "|---|---|---|---|---|---|---|\n",
	        h->nr);
	fprintf(ht,
	        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pdkv history</title>"
	        "</head>\n<body style=\"font-family: sans-serif\">\n<h1>pdkv history</h1>\n"
	        "<p>%zu runs, oldest first. Each point is the median of the run's repetitions; "
	        "the bars go from the slowest to the fastest one.</p>\n<table border=1>"
	        "<tr><th>#</th><th>run</th><th>files</th><th>commit</th><th>host</th>"
	        "<th>threads</th><th>environment</th></tr>\n",
	        h->nr);
	for (size_t k = 0; k < h->nr; k++) {
		const struct hrun *r = &h->r[k];
		char files[512] = "", env[512];
		size_t len = 0;
		for (size_t d = 0; d < r->ndocs && len < sizeof(files); d++) {
			const char *b = strrchr(r->docs[d].path, '/');
			len += (size_t)snprintf(files + len, sizeof(files) - len, "%s%s",
			                        d ? " " : "", b ? b + 1 : r->docs[d].path);
		}
		run_env(r, env, sizeof(env));
		fprintf(md, "| %zu | %s | %s | %s | %s | %s | %s |\n", k, r->name, files,
		        run_meta(r, "commit"), run_meta(r, "hostname"), run_meta(r, "threads"),
		        env);
		fprintf(ht, "<tr><td>%zu</td><td>", k);
		html_esc(ht, r->name);
		fprintf(ht, "</td><td>");
		html_esc(ht, files);
		fprintf(ht, "</td><td>");
		html_esc(ht, run_meta(r, "commit"));
		fprintf(ht, "</td><td>");
		html_esc(ht, run_meta(r, "hostname"));
		fprintf(ht, "</td><td>");
		html_esc(ht, run_meta(r, "threads"));
		fprintf(ht, "</td><td>");
		html_esc(ht, env);
		fprintf(ht, "</td></tr>\n");
	}
	fprintf(ht, "</table>\n");
	if (!plots)
		fprintf(md,
		        "\n(no plots: gnuplot is not installed; the .dat files hold the data)\n");
	for (size_t i = 0; i < h->np; i++) {
		const struct hplot *p = &h->p[i];
		fprintf(md, "\n## %s\n\n", p->title);
		if (plots)
			fprintf(md, "![%s](%s.png)\n\n[SVG](%s.svg) · ", p->title, p->stem,
			        p->stem);
		fprintf(md, "[data](%s.dat)\n", p->stem);
		fprintf(ht, "<h2>");
		html_esc(ht, p->title);
		fprintf(ht, "</h2>\n");
		if (plots)
			fprintf(ht, "<p><a href=\"%s.svg\"><img src=\"%s.png\" alt=\"\"></a></p>\n",
			        p->stem, p->stem);
		fprintf(ht, "<p><a href=\"%s.dat\">data</a></p>\n", p->stem);
	}
	verdict_table(md, h, false);
	verdict_table(ht, h, true);
	fprintf(ht, "</body></html>\n");
	rc |= fclose(md) ? -1 : 0;
	rc |= fclose(ht) ? -1 : 0;
	return rc;
}

int rpt_history(const char *dir, const char *out, FILE *f, char *err, size_t errsz)
{
	struct hist h = {0};
	struct stat st;
	char *gpath, *probe_argv[] = {"gnuplot", "-e", "set terminal pngcairo", NULL};
	char *gp_argv[] = {"gnuplot", "plots.gp", NULL};
	const char *png;
	FILE *gp;
	int rc = 0, g;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errsz,
		         "%s: not a directory (expected the history dir: "
		         "DIR/<UTC time>-<commit>/*.json)",
		         dir);
		return 2;
	}
	if (pd_mkdir_p(out)) {
		snprintf(err, errsz, "%s: cannot create the output directory: %s", out,
		         strerror(errno));
		return 1;
	}
	load_runs(&h, dir, f);
	if (!h.nr) {
		snprintf(err, errsz, "%s: no pdkv JSON file in it or in its subdirectories", dir);
		hist_free(&h);
		return 1;
	}
	for (size_t k = 0; k < h.nr; k++)
		for (size_t d = 0; d < h.r[k].ndocs; d++)
			if (collect_doc(&h, k, &h.r[k].docs[d])) {
				snprintf(err, errsz, "out of memory");
				hist_free(&h);
				return 1;
			}
	g = run_gnuplot(NULL, probe_argv, NULL);
	png = g == 0 ? "pngcairo" : "png";
	gpath = pd_asprintf("%s/plots.gp", out);
	gp = gpath ? fopen(gpath, "w") : NULL;
	if (!gp) {
		snprintf(err, errsz, "%s/plots.gp: cannot write", out);
		free(gpath);
		hist_free(&h);
		return 1;
	}
	fprintf(gp, "# written by pdkv report history; run in this directory: gnuplot plots.gp\n"
	            "set datafile separator \"\\t\"\nset datafile missing \"?\"\n"
	            "set xtics rotate by -30 noenhanced\nset key below\nset grid\n"
	            "set offsets 0.3, 0.3, 0, 0\nset yrange [0:*]\nset bars small\n");
	for (size_t i = 0; i < h.np && !rc; i++)
		if (write_plot_data(&h, &h.p[i], out, gp, png))
			rc = 1;
	fclose(gp);
	if (!rc && (g == 127 || g < 0)) {
		fprintf(f,
		        "history: gnuplot not found (apt-get install gnuplot-nox): data, "
		        "plots.gp and index only, in %s\n",
		        out);
		rc = rpt_history_index(&h, out, false) ? 1 : 77;
		free(gpath);
		hist_free(&h);
		return rc;
	}
	if (!rc && h.np) {
		char *log = pd_asprintf("%s/gnuplot.log", out);
		if (run_gnuplot(out, gp_argv, log)) {
			snprintf(err, errsz, "gnuplot failed on %s (log %s)", gpath, log);
			rc = 1;
		}
		free(log);
	}
	if (!rc && rpt_history_index(&h, out, true)) {
		snprintf(err, errsz, "%s: cannot write index.md / index.html", out);
		rc = 1;
	}
	if (!rc)
		fprintf(f, "history: %zu runs, %zu plots (PNG + SVG) in %s; open %s/index.html\n",
		        h.nr, h.np, out, out);
	free(gpath);
	hist_free(&h);
	return rc;
}
