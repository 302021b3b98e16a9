/* SPDX-License-Identifier: Apache-2.0 */
/* test_pd_opt: the table-driven option parser — every value type, both spellings, the
 * "expected X, got Y" exit 2, help from the table, positional arguments. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
