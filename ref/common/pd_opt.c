/* SPDX-License-Identifier: Apache-2.0 */
/* pd_opt: the table-driven option parser (pd_opt.h) — matching, typed conversion with the
 * "expected X, got Y" errors, and the help text generated from the same table. */
#include "pd_opt.h"
#include "pd_version.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

#define HELP_COL 30

static int vfail(const struct pd_opt_spec *s, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (s->err && s->errsz)
		snprintf(s->err, s->errsz, "%s: %s", s->prog, msg);
	else
		fprintf(stderr, "%s: %s\n", s->prog, msg);
	return 2;
}

int pd_opt_fail(const struct pd_opt_spec *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(s, fmt, ap);
	va_end(ap);
	return 2;
}

int pd_opt_bad(const struct pd_opt_spec *s, const char *flag, const char *val, const char *want)
{
	return pd_opt_fail(s, "%s: expected %s, got \"%.200s\"", flag, want, val ? val : "");
}

/* Every row: the spec's own, then each group's. */
static size_t nrows(const struct pd_opt_spec *s)
{
	size_t n = s->nopts;
	for (size_t g = 0; g < s->ngroups; g++)
		n += s->groups[g].nopts;
	return n;
}

static const struct pd_opt *row(const struct pd_opt_spec *s, size_t k)
{
	if (k < s->nopts)
		return &s->opts[k];
	k -= s->nopts;
	for (size_t g = 0; g < s->ngroups; k -= s->groups[g].nopts, g++)
		if (k < s->groups[g].nopts)
			return &s->groups[g].opts[k];
	return NULL;
}

static bool in_range(const struct pd_opt *o, double v)
{
	if (o->min == 0 && o->max == 0)
		return true;
	return (o->min_excl ? v > o->min : v >= o->min) && v <= o->max;
}

/* The "expected ..." text when the table gives none. */
static const char *default_want(const struct pd_opt *o, char *buf, size_t sz)
{
	bool ranged = o->min != 0 || o->max != 0;
	switch (o->type) {
	case PD_OPT_BOOL:
		return "true or false";
	case PD_OPT_INT:
	case PD_OPT_UINT:
	case PD_OPT_I64:
	case PD_OPT_U64:
		if (ranged)
			snprintf(buf, sz, "an integer %.0f..%.0f", o->min, o->max);
		else
			snprintf(buf, sz, "an integer");
		return buf;
	case PD_OPT_SIZE:
		return "a size like 64K or 1M";
	case PD_OPT_DOUBLE:
		if (ranged)
			snprintf(buf, sz, "a number %s%g..%g", o->min_excl ? "> " : "", o->min,
			         o->max);
		else
			snprintf(buf, sz, "a number");
		return buf;
	case PD_OPT_CHOICE: {
		/* "a|b|c" -> "a, b or c" */
		size_t n = 0;
		const char *p = o->choices;
		buf[0] = '\0';
		while (p && *p && n + 1 < sz) {
			size_t l = strcspn(p, "|");
			bool last = !p[l];
			n += (size_t)snprintf(buf + n, sz - n, "%s%.*s",
			                      n ? (last ? " or " : ", ") : "", (int)l, p);
			p += l + !last;
			if (last)
				break;
		}
		return buf;
	}
	default:
		return "a value";
	}
}

static int choice_index(const char *choices, const char *v)
{
	int i = 0;
	for (const char *p = choices; p && *p; i++) {
		size_t l = strcspn(p, "|");
		if (strlen(v) == l && !strncmp(p, v, l))
			return i;
		p += l;
		if (*p)
			p++;
	}
	return -1;
}

/* Converts v into o->dst; 0 or -1 (bad value). */
static int convert(const struct pd_opt_spec *s, const struct pd_opt *o, const char *v)
{
	int64_t i;
	uint64_t u;
	double d;
	char *end;
	int k;

	switch (o->type) {
	case PD_OPT_FLAG:
		*(bool *)o->dst = true;
		return 0;
	case PD_OPT_BOOL:
		if (!v || !strcmp(v, "true") || !strcmp(v, "1"))
			*(bool *)o->dst = true;
		else if (!strcmp(v, "false") || !strcmp(v, "0"))
			*(bool *)o->dst = false;
		else
			return -1;
		return 0;
	case PD_OPT_STR:
		if (!*v && !o->empty_ok)
			return -1;
		*(const char **)o->dst = v;
		return 0;
	case PD_OPT_INT:
		if (pd_parse_i64(v, &i) || !in_range(o, (double)i) || i < INT32_MIN ||
		    i > INT32_MAX)
			return -1;
		*(int *)o->dst = (int)i;
		return 0;
	case PD_OPT_I64:
		if (pd_parse_i64(v, &i) || !in_range(o, (double)i))
			return -1;
		*(int64_t *)o->dst = i;
		return 0;
	case PD_OPT_UINT:
		if (pd_parse_u64(v, &u) || !in_range(o, (double)u) || u > UINT32_MAX)
			return -1;
		*(unsigned *)o->dst = (unsigned)u;
		return 0;
	case PD_OPT_U64:
		if (pd_parse_u64(v, &u) || !in_range(o, (double)u))
			return -1;
		*(uint64_t *)o->dst = u;
		return 0;
	case PD_OPT_SIZE:
		if (pd_parse_size(v, &u) || !in_range(o, (double)u))
			return -1;
		*(uint64_t *)o->dst = u;
		return 0;
	case PD_OPT_DOUBLE:
		errno = 0;
		d = strtod(v, &end);
		if (*end || end == v || errno || !isfinite(d) || !in_range(o, d))
			return -1;
		*(double *)o->dst = d;
		return 0;
	case PD_OPT_CHOICE:
		k = choice_index(o->choices, v);
		if (k < 0)
			return -1;
		*(int *)o->dst = k;
		return 0;
	case PD_OPT_FN:
		return o->fn(v, o->dst, s->ud);
	}
	return -1;
}

static bool takes_value(const struct pd_opt *o)
{
	return o->type != PD_OPT_FLAG && o->type != PD_OPT_BOOL &&
	       !(o->type == PD_OPT_FN && o->optional_value);
}

/* The long name (without "--", or "-tp" for a single-dash one) of len bytes; vllm_style: '_'
 * and '-' compare equal. */
static bool name_eq(const struct pd_opt_spec *s, const char *want, const char *name, size_t len)
{
	if (strlen(want) != len)
		return false;
	bool fold = s->vllm_style || s->underscores;
	for (size_t i = 0; i < len; i++) {
		char a = want[i], b = name[i];
		if (fold && a == '_')
			a = '-';
		if (fold && b == '_')
			b = '-';
		if (a != b)
			return false;
	}
	return true;
}

static const struct pd_opt *find_long(const struct pd_opt_spec *s, const char *name, size_t len)
{
	for (size_t i = 0, n = nrows(s); i < n; i++) {
		const struct pd_opt *o = row(s, i);
		if (o->name && name_eq(s, o->name, name, len))
			return o;
	}
	return NULL;
}

static const struct pd_opt *find_short(const struct pd_opt_spec *s, char c)
{
	for (size_t i = 0, n = nrows(s); i < n; i++)
		if (row(s, i)->shrt == c)
			return row(s, i);
	return NULL;
}

static int unknown(const struct pd_opt_spec *s, const char *arg)
{
	return pd_opt_fail(s, "unknown option %.100s (see %s --help)", arg, s->prog);
}

/* The row of argv word a: --long[=V], -tp[=V] (single-dash long), -x[V]. *v: an inline value;
 * flag: the flag as written, for messages. NULL after the message (*rc = 2). */
static const struct pd_opt *match(const struct pd_opt_spec *s, const char *a, const char **v,
                                  char *flag, size_t flagsz, int *rc)
{
	const char *eq = strchr(a, '=');
	size_t nl = eq ? (size_t)(eq - a) : strlen(a);
	const struct pd_opt *o = NULL;

	*rc = 2;
	snprintf(flag, flagsz, "%.*s", (int)nl, a);
	if (a[1] == '-')
		o = find_long(s, a + 2, nl - 2);
	else if (nl > 2)
		o = find_long(s, a, nl); /* "-tp" rows */
	if (o) {
		*v = eq ? eq + 1 : NULL;
		if (eq && o->type == PD_OPT_FLAG) {
			pd_opt_fail(s, "%s: takes no value", flag);
			return NULL;
		}
		return o;
	}
	if (a[1] == '-') {
		unknown(s, flag);
		return NULL;
	}
	o = find_short(s, a[1]);
	snprintf(flag, flagsz, "-%c", a[1]);
	if (!o || (a[2] && !takes_value(o))) {
		unknown(s, a);
		return NULL;
	}
	*v = a[2] ? a + 2 : NULL;
	return o;
}

/* The argparse nargs words after a value given as a separate word (or a bare flag). */
static int more_words(const struct pd_opt_spec *s, const struct pd_opt *o, const char *flag,
                      int argc, char **argv, int *i)
{
	while (*i + 1 < argc && argv[*i + 1][0] != '-') {
		int r = o->more(argv[*i + 1], o->dst, s->ud);
		if (r < 0) {
			char wbuf[160];
			return pd_opt_bad(s, flag, argv[*i + 1],
			                  o->want ? o->want : default_want(o, wbuf, sizeof(wbuf)));
		}
		if (r == 0)
			break;
		++*i;
		if (r == 2)
			break;
	}
	return 0;
}

/* One option at argv[*i]; 0, or 2 after the message. */
static int one_option(const struct pd_opt_spec *s, int argc, char **argv, int *i)
{
	const char *v = NULL;
	const struct pd_opt *o;
	char flag[112], wbuf[160];
	bool inline_v;
	int rc;

	o = match(s, argv[*i], &v, flag, sizeof(flag), &rc);
	if (!o)
		return rc;
	inline_v = v != NULL;
	if (!v && takes_value(o)) {
		if (*i + 1 >= argc ||
		    (s->vllm_style && argv[*i + 1][0] == '-' && argv[*i + 1][1] == '-'))
			return pd_opt_fail(s, "%s: missing value", flag);
		v = argv[++*i];
	}
	if (convert(s, o, v))
		return pd_opt_bad(s, flag, v,
		                  o->want ? o->want : default_want(o, wbuf, sizeof(wbuf)));
	if (o->more && !inline_v && (rc = more_words(s, o, flag, argc, argv, i)))
		return rc;
	if (o->seen)
		*o->seen = true;
	return 0;
}

static bool has_option(const struct pd_opt_spec *s, const char *name)
{
	return find_long(s, name, strlen(name)) != NULL;
}

int pd_opt_parse(const struct pd_opt_spec *s, int argc, char **argv, int first, char **pos,
                 int *npos)
{
	bool only_pos = false;
	int n = 0;

	for (int i = first; i < argc; i++) {
		const char *a = argv[i];
		int rc;
		if (!only_pos && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			pd_opt_help(s, stdout);
			return 1;
		}
		if (!only_pos && !strcmp(a, "--version") && !has_option(s, "version")) {
			pd_version_print(stdout, s->prog);
			return 1;
		}
		if (!only_pos && !strcmp(a, "--")) {
			only_pos = true;
			continue;
		}
		if (!only_pos && a[0] == '-' && a[1]) {
			rc = one_option(s, argc, argv, &i);
			if (rc)
				return rc;
			continue;
		}
		if (s->max_pos >= 0 && n >= s->max_pos)
			return pd_opt_fail(s, "unexpected argument \"%.200s\"", a);
		if (pos)
			pos[n] = argv[i];
		n++;
	}
	if (npos)
		*npos = n;
	return 0;
}

static void help_row(const struct pd_opt *o, FILE *f)
{
	char left[128];
	const char *h = o->help;
	int n;

	if (!h)
		return;
	if (o->name && o->name[0] == '-')
		n = snprintf(left, sizeof(left), "  %s", o->name);
	else if (o->name && o->shrt)
		n = snprintf(left, sizeof(left), "  --%s, -%c", o->name, o->shrt);
	else if (o->name)
		n = snprintf(left, sizeof(left), "  --%s", o->name);
	else
		n = snprintf(left, sizeof(left), "  -%c", o->shrt);
	/* "FILE" is written " FILE"; "=FILE" and "[=V]" are written as given */
	if (o->arg && n > 0 && (size_t)n < sizeof(left))
		snprintf(left + n, sizeof(left) - (size_t)n, "%s%s",
		         o->arg[0] == '=' || o->arg[0] == '[' ? "" : " ", o->arg);
	fprintf(f, "%-*s", HELP_COL - 1, left);
	if (strlen(left) >= HELP_COL - 1)
		fprintf(f, "\n%*s", HELP_COL - 1, "");
	for (;;) {
		size_t l = strcspn(h, "\n");
		fprintf(f, " %.*s\n", (int)l, h);
		if (!h[l])
			break;
		h += l + 1;
		fprintf(f, "%*s", HELP_COL - 1, "");
	}
}

void pd_opt_help(const struct pd_opt_spec *s, FILE *f)
{
	if (s->usage)
		fputs(s->usage, f);
	for (size_t i = 0; i < s->nopts; i++)
		help_row(&s->opts[i], f);
	if (!has_option(s, "version"))
		fprintf(f, "%-*s %s\n", HELP_COL - 1, "  --version",
		        "the release, commit and build options");
	for (size_t g = 0; g < s->ngroups; g++) {
		if (s->groups[g].title)
			fprintf(f, "\n%s:\n", s->groups[g].title);
		for (size_t i = 0; i < s->groups[g].nopts; i++)
			help_row(&s->groups[g].opts[i], f);
	}
	if (s->footer)
		fputs(s->footer, f);
}

struct pd_opt_group pd_opt_server_group(struct pd_opt *rows, unsigned *max_conns,
                                        unsigned *max_conns_per_client, unsigned *idle_s)
{
	rows[0] = (struct pd_opt){.name = "max-connections",
	                          .type = PD_OPT_UINT,
	                          .dst = max_conns,
	                          .arg = "N",
	                          .help = "client connections held at once; more are refused\n"
	                                  "at accept, with a WARNING once a second",
	                          .want = "a whole number 1..1000000",
	                          .min = 1,
	                          .max = 1000000};
	rows[1] = (struct pd_opt){.name = "max-connections-per-client",
	                          .type = PD_OPT_UINT,
	                          .dst = max_conns_per_client,
	                          .arg = "N",
	                          .help = "the same per client address",
	                          .want = "a whole number 1..1000000",
	                          .min = 1,
	                          .max = 1000000};
	rows[2] = (struct pd_opt){.name = "idle-timeout",
	                          .type = PD_OPT_UINT,
	                          .dst = idle_s,
	                          .arg = "SEC",
	                          .help = "close a client connection idle this long",
	                          .want = "a whole number 1..86400",
	                          .min = 1,
	                          .max = 86400};
	return (struct pd_opt_group){
	    .title = "server limits", .opts = rows, .nopts = PD_OPT_SERVER_ROWS};
}
