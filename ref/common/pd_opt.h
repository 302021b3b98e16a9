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
	PD_OPT_UINT,   /* unsigned in [min, max] */
	PD_OPT_I64,    /* int64_t in [min, max] */
	PD_OPT_U64,    /* uint64_t in [min, max] */
	PD_OPT_SIZE,   /* uint64_t with K/M/G/KiB... suffixes (pd_parse_size), in [min, max] */
	PD_OPT_DOUBLE, /* double in [min, max]; min_excl: > min */
	PD_OPT_CHOICE, /* *(int *)dst = index of the value in choices ("a|b|c") */
	PD_OPT_FN,     /* fn(value, dst, ud): 0, or -1 = bad value; value NULL when bare */
};

struct pd_opt {
	const char *name; /* long name without "--" (NULL = short only); "-tp": spelled -tp */
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
	/* Words after the value (argparse nargs): called for each following argument that does
	 * not start with '-', unless the value came as --name=V. Returns 1 (taken, go on), 2
	 * (taken, stop), 0 (not taken, stop) or -1 (bad value). */
	int (*more)(const char *word, void *dst, void *ud);
};

/* A named set of rows that several programs share (fabtests' shared.c style): the server
 * limits group below, or a program's own. Listed under its title in the help. */
struct pd_opt_group {
	const char *title;
	const struct pd_opt *opts;
	size_t nopts;
};

struct pd_opt_spec {
	const char *prog;   /* error prefix: "pdkv run" */
	const char *usage;  /* help text before the table */
	const char *footer; /* help text after it (exit codes, environment) */
	const struct pd_opt *opts;
	size_t nopts;
	int max_pos;                       /* positional arguments allowed: -1 any, 0 none */
	void *ud;                          /* passed to fn */
	const struct pd_opt_group *groups; /* searched after opts, listed after them */
	size_t ngroups;
	/* vLLM's FlexibleArgumentParser: '_' and '-' are one in long names, and a separate word
	 * starting with "--" is never a value (argparse: "expected one argument"). */
	bool vllm_style;
	bool underscores; /* only the first: --block_size and --block-size are one */
	/* Errors go here (one line, no newline) instead of stderr, for callers that add context
	 * or tests that read them. */
	char *err;
	size_t errsz;
};

/* Parses argv[first..]: --name=V, --name V, -x V, -xV; "--" ends the options. Positional
 * arguments go to pos (argc entries suffice), their count to *npos (both may be NULL when
 * max_pos is 0). Returns 0; 1 after printing the help or the version on stdout (-h, --help,
 * --version: exit 0); 2 after one line on stderr, always "PROG: ...":
 *   PROG: unknown option --x (see PROG --help)
 *   PROG: --x: missing value            PROG: --x: takes no value
 *   PROG: --x: expected WANT, got "V"   PROG: unexpected argument "V" */
int pd_opt_parse(const struct pd_opt_spec *s, int argc, char **argv, int first, char **pos,
                 int *npos);
/* usage, one line per listed option (aligned), footer. */
void pd_opt_help(const struct pd_opt_spec *s, FILE *f);
/* "PROG: FLAG: expected WANT, got "VAL"" on stderr (or s->err); returns 2 (for checks after
 * parsing). */
int pd_opt_bad(const struct pd_opt_spec *s, const char *flag, const char *val, const char *want);
/* "PROG: MESSAGE" in the same place as the parser's errors; returns 2. */
int pd_opt_fail(const struct pd_opt_spec *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The server limits group (pdkv-proxy, pdkv-standin): --max-connections N,
 * --max-connections-per-client N (1..1000000) and --idle-timeout SEC (1..86400) into the three
 * unsigned destinations; rows[] needs PD_OPT_SERVER_ROWS entries. */
#define PD_OPT_SERVER_ROWS 3
struct pd_opt_group pd_opt_server_group(struct pd_opt *rows, unsigned *max_conns,
                                        unsigned *max_conns_per_client, unsigned *idle_s);

#endif
