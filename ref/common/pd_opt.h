/* SPDX-License-Identifier: Apache-2.0 */
/* pd_opt: one table-driven option parser for pdkv's own commands — long and short names, typed
 * values with ranges, defaults left in the destination, help text generated from the table. */
#ifndef PD_OPT_H
#define PD_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum pd_opt_type {
	PD_OPT_FLAG,   /* no value: *(bool *)dst = true */
	PD_OPT_BOOL,   /* bare = true, or "=true|false|1|0" (never the next argument): bool */
	PD_OPT_STR,    /* *(const char **)dst = the value (non-empty unless empty_ok) */
	PD_OPT_INT,    /* int in [min, max] */
	PD_OPT_U64,    /* uint64_t in [min, max] */
	PD_OPT_SIZE,   /* uint64_t with K/M/G/KiB... suffixes (pd_parse_size), in [min, max] */
	PD_OPT_DOUBLE, /* double in [min, max]; min_excl: > min */
	PD_OPT_CHOICE, /* *(int *)dst = index of the value in choices ("a|b|c") */
	PD_OPT_FN,     /* fn(value, dst, ud): 0, or -1 = bad value; value NULL when bare */
};

struct pd_opt {
	const char *name; /* long name without "--" (NULL = short only) */
	char shrt;        /* short name ('v'), 0 = none */
	enum pd_opt_type type;
	void *dst;
	const char *arg;  /* the value's name in the help ("FILE"); NULL for flags */
	const char *help; /* help text ("\n" continues on the next line); NULL = not listed */
	const char *want; /* what "expected ..." says on a bad value; NULL = from type and range */
	double min, max;  /* numeric range, inclusive; both 0 = unbounded */
	bool min_excl;
	const char *choices;                             /* PD_OPT_CHOICE */
	int (*fn)(const char *val, void *dst, void *ud); /* PD_OPT_FN */
	bool optional_value; /* PD_OPT_FN: the value only as --name=V, bare allowed */
	bool empty_ok;       /* PD_OPT_STR: "" is a value (vLLM's own flags accept it) */
	bool *seen;          /* set to true when the option is given */
};

struct pd_opt_spec {
	const char *prog;   /* error prefix: "pdkv run" */
	const char *usage;  /* help text before the table */
	const char *footer; /* help text after it (exit codes, environment) */
	const struct pd_opt *opts;
	size_t nopts;
	int max_pos; /* positional arguments allowed: -1 any, 0 none */
	void *ud;    /* passed to fn */
};

/* Parses argv[first..]: --name=V, --name V, -x V, -xV; "--" ends the options. Positional
 * arguments go to pos (argc entries suffice), their count to *npos (both may be NULL when
 * max_pos is 0). Returns 0; 1 after printing the help on stdout (-h, --help: exit 0); 2 after
 * printing "PROG: --flag: expected X, got "Y"" (or an unknown / incomplete option) on stderr. */
int pd_opt_parse(const struct pd_opt_spec *s, int argc, char **argv, int first, char **pos,
                 int *npos);
/* usage, one line per listed option (aligned), footer. */
void pd_opt_help(const struct pd_opt_spec *s, FILE *f);
/* "PROG: FLAG: expected WANT, got "VAL"" on stderr; returns 2 (for checks after parsing). */
int pd_opt_bad(const struct pd_opt_spec *s, const char *flag, const char *val, const char *want);

#endif
