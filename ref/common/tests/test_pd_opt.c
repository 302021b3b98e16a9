/* SPDX-License-Identifier: Apache-2.0 */
/* test_pd_opt: the table-driven option parser — every value type, both spellings, the
 * "expected X, got Y" exit 2, help from the table, positional arguments, option groups, nargs
 * words, single-dash long names and vLLM's spellings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "pd_opt.h"

static bool flag, on = true;
static const char *file;
static int n, pick;
static uint64_t size;
static double secs;

static const struct pd_opt opts[] = {
    {.name = "flag", .shrt = 'f', .type = PD_OPT_FLAG, .dst = &flag, .help = "a flag"},
    {.name = "on", .type = PD_OPT_BOOL, .dst = &on, .help = "a bool"},
    {.name = "file", .type = PD_OPT_STR, .dst = &file, .arg = "FILE", .help = "a path"},
    {.name = "n", .type = PD_OPT_INT, .dst = &n, .min = 1, .max = 9, .help = "1..9"},
    {.name = "size", .shrt = 's', .type = PD_OPT_SIZE, .dst = &size, .arg = "B", .help = "x"},
    {.name = "secs",
     .type = PD_OPT_DOUBLE,
     .dst = &secs,
     .min = 0,
     .max = 60,
     .min_excl = true,
     .help = "two\nlines"},
    {.name = "pick", .type = PD_OPT_CHOICE, .dst = &pick, .choices = "a|b|c", .help = "p"},
};
static const struct pd_opt_spec spec = {.prog = "t", .opts = opts, .nopts = 7, .max_pos = 2};

static int parse(int argc, char **argv, char **pos, int *np)
{
	return pd_opt_parse(&spec, argc, argv, 1, pos, np);
}

static void test_values(void **state)
{
	char *argv[] = {"t",  "--flag", "--on=false", "--file", "x.json", "--n=3", "pos1",  "-s",
	                "1M", "--secs", "2.5",        "--pick", "c",      "--",    "--pos2"};
	char *pos[16];
	int np = 0;
	(void)state;
	assert_int_equal(parse(15, argv, pos, &np), 0);
	assert_true(flag);
	assert_false(on);
	assert_string_equal(file, "x.json");
	assert_int_equal(n, 3);
	assert_int_equal(size, 1 << 20);
	assert_true(secs == 2.5);
	assert_int_equal(pick, 2);
	assert_int_equal(np, 2);
	assert_string_equal(pos[0], "pos1");
	assert_string_equal(pos[1], "--pos2");
}

static void test_errors(void **state)
{
	char *bad_n[] = {"t", "--n=10"}, *bad_secs[] = {"t", "--secs", "0"},
	     *bad_pick[] = {"t", "--pick=d"}, *unknown[] = {"t", "--nope"},
	     *missing[] = {"t", "--file"}, *flag_val[] = {"t", "--flag=1"},
	     *too_many[] = {"t", "a", "b", "c"}, *help[] = {"t", "--help"};
	char *pos[4];
	(void)state;
	assert_int_equal(parse(2, bad_n, pos, NULL), 2);
	assert_int_equal(parse(3, bad_secs, pos, NULL), 2);
	assert_int_equal(parse(2, bad_pick, pos, NULL), 2);
	assert_int_equal(parse(2, unknown, pos, NULL), 2);
	assert_int_equal(parse(2, missing, pos, NULL), 2);
	assert_int_equal(parse(2, flag_val, pos, NULL), 2);
	assert_int_equal(parse(4, too_many, pos, NULL), 2);
	assert_int_equal(parse(2, help, pos, NULL), 1);
}

static void test_help(void **state)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	(void)state;
	pd_opt_help(&spec, f);
	fclose(f);
	assert_non_null(strstr(out, "  --flag, -f"));
	assert_non_null(strstr(out, "  --file FILE"));
	/* continuation lines align under the first */
	assert_non_null(strstr(out, " two\n                              lines\n"));
	free(out);
}

/* Groups, argparse nargs words, single-dash long names, vLLM's '_' = '-', the error buffer. */
static const char *words[4];
static int nwords, tp;
static unsigned conns, per, idle;

static int take(const char *v, void *dst, void *ud)
{
	(void)dst;
	(void)ud;
	if (nwords >= 4)
		return -1;
	words[nwords++] = v;
	return 0;
}

static int take_more(const char *w, void *dst, void *ud)
{
	return take(w, dst, ud) ? -1 : 1;
}

static int parse_ext(int argc, char **argv, char *err, size_t errsz)
{
	static const struct pd_opt own[] = {
	    {.name = "names", .type = PD_OPT_FN, .fn = take, .more = take_more, .help = "n"},
	    {.name = "-tp", .type = PD_OPT_INT, .dst = &tp, .min = 1, .max = 8, .help = "tp"},
	    {.name = "max-model-len", .type = PD_OPT_INT, .dst = &n, .help = "len"},
	};
	struct pd_opt srv[PD_OPT_SERVER_ROWS];
	struct pd_opt_group g[] = {pd_opt_server_group(srv, &conns, &per, &idle)};
	const struct pd_opt_spec s = {.prog = "t",
	                              .opts = own,
	                              .nopts = 3,
	                              .groups = g,
	                              .ngroups = 1,
	                              .vllm_style = true,
	                              .err = err,
	                              .errsz = errsz};
	nwords = 0;
	return pd_opt_parse(&s, argc, argv, 1, NULL, NULL);
}

static void test_extensions(void **state)
{
	char *ok[] = {
	    "t", "--names",           "a", "b", "--max_model_len=7", "-tp", "2", "--idle-timeout",
	    "9", "--max_connections", "5"};
	char *inl[] = {"t", "--names=a", "b"}, *dash_val[] = {"t", "--max-model-len", "--names"};
	char *bad_grp[] = {"t", "--idle-timeout", "0"}, *unknown[] = {"t", "--nope=1"};
	char err[200] = "";
	(void)state;
	assert_int_equal(parse_ext(11, ok, err, sizeof(err)), 0);
	assert_int_equal(nwords, 2);
	assert_string_equal(words[1], "b");
	assert_int_equal(n, 7);
	assert_int_equal(tp, 2);
	assert_int_equal(idle, 9);
	assert_int_equal(conns, 5);
	/* --names=a takes no more words: "b" is a stray positional */
	assert_int_equal(parse_ext(3, inl, err, sizeof(err)), 2);
	assert_string_equal(err, "t: unexpected argument \"b\"");
	/* vLLM style: a word starting with "--" is not a value */
	assert_int_equal(parse_ext(3, dash_val, err, sizeof(err)), 2);
	assert_string_equal(err, "t: --max-model-len: missing value");
	assert_int_equal(parse_ext(3, bad_grp, err, sizeof(err)), 2);
	assert_string_equal(err, "t: --idle-timeout: expected a whole number 1..86400, got \"0\"");
	assert_int_equal(parse_ext(2, unknown, err, sizeof(err)), 2);
	assert_string_equal(err, "t: unknown option --nope (see t --help)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_help),
	    cmocka_unit_test(test_extensions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
