/* SPDX-License-Identifier: Apache-2.0 */
/* pd_opt: the table-driven option parser (pd_opt.h) — matching, typed conversion with the
 * "expected X, got Y" errors, and the help text generated from the same table. */
#include "pd_opt.h"
#include "pd_version.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

#define HELP_COL 30

int pd_opt_bad(const struct pd_opt_spec *s, const char *flag, const char *val, const char *want)
{
	fprintf(stderr, "%s: %s: expected %s, got \"%s\"\n", s->prog, flag, want, val ? val : "");
	return 2;
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

static const struct pd_opt *find_long(const struct pd_opt_spec *s, const char *name, size_t len)
{
	for (size_t i = 0; i < s->nopts; i++)
		if (s->opts[i].name && strlen(s->opts[i].name) == len &&
		    !strncmp(s->opts[i].name, name, len))
			return &s->opts[i];
	return NULL;
}

static const struct pd_opt *find_short(const struct pd_opt_spec *s, char c)
{
	for (size_t i = 0; i < s->nopts; i++)
		if (s->opts[i].shrt == c)
			return &s->opts[i];
	return NULL;
}

static int unknown(const struct pd_opt_spec *s, const char *arg)
{
	fprintf(stderr, "%s: unknown option %s (see %s --help)\n", s->prog, arg, s->prog);
	return 2;
}

/* One option at argv[*i]; 0, or 2 after the message. */
static int one_option(const struct pd_opt_spec *s, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v = NULL, *eq;
	const struct pd_opt *o;
	char flag[96], wbuf[160];

	if (a[1] == '-') {
		eq = strchr(a, '=');
		o = find_long(s, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
		snprintf(flag, sizeof(flag), "%.*s", (int)(eq ? (size_t)(eq - a) : strlen(a)), a);
		if (!o)
			return unknown(s, flag);
		if (eq)
			v = eq + 1;
		if (eq && o->type == PD_OPT_FLAG) {
			fprintf(stderr, "%s: %s takes no value\n", s->prog, flag);
			return 2;
		}
	} else {
		o = find_short(s, a[1]);
		snprintf(flag, sizeof(flag), "-%c", a[1]);
		if (!o)
			return unknown(s, a);
		if (a[2] && takes_value(o))
			v = a + 2;
		else if (a[2])
			return unknown(s, a);
	}
	if (!v && takes_value(o)) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "%s: %s needs a value\n", s->prog, flag);
			return 2;
		}
		v = argv[++*i];
	}
	if (convert(s, o, v))
		return pd_opt_bad(s, flag, v,
		                  o->want ? o->want : default_want(o, wbuf, sizeof(wbuf)));
	if (o->seen)
		*o->seen = true;
	return 0;
}

static bool has_option(const struct pd_opt_spec *s, const char *name)
{
	for (size_t i = 0; i < s->nopts; i++)
		if (s->opts[i].name && !strcmp(s->opts[i].name, name))
			return true;
	return false;
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
		if (s->max_pos >= 0 && n >= s->max_pos) {
			fprintf(stderr, "%s: unexpected argument \"%s\"\n", s->prog, a);
			return 2;
		}
		if (pos)
			pos[n] = argv[i];
		n++;
	}
	if (npos)
		*npos = n;
	return 0;
}

void pd_opt_help(const struct pd_opt_spec *s, FILE *f)
{
	if (s->usage)
		fputs(s->usage, f);
	for (size_t i = 0; i < s->nopts; i++) {
		const struct pd_opt *o = &s->opts[i];
		char left[128];
		const char *h = o->help;
		int n;
		if (!h)
			continue;
		if (o->name && o->shrt)
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
	if (!has_option(s, "version"))
		fprintf(f, "%-*s %s\n", HELP_COL - 1, "  --version",
		        "the release, commit and build options");
	if (s->footer)
		fputs(s->footer, f);
}
