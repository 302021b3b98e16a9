/* SPDX-License-Identifier: Apache-2.0 */
/* test_accept: pdkv accept's judgement — --pairs parsing and sets, bench row parsing, node and
 * pair outliers against the fleet median, noisy pairs UNCERTAIN (never an outlier), the exit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accept/accept.h"

static const struct acc_judge_opts jo = {.threshold = 0.8, .max_spread = 0.5, .min_reps = 2};
static struct acc_pair pairs[ACC_MAX_PAIRS];
static int pl[ACC_MAX_PAIRS][2];

static void pairs_parse(void **st)
{
	struct acc_pairs_spec ps;
	char err[256];
	(void)st;
	assert_int_equal(acc_pairs_parse("all", &ps, err, sizeof(err)), 0);
	assert_int_equal(ps.kind, ACC_PAIRS_ALL);
	assert_int_equal(acc_pairs_parse("ring", &ps, err, sizeof(err)), 0);
	assert_int_equal(ps.kind, ACC_PAIRS_RING);
	assert_int_equal(acc_pairs_parse("random:5", &ps, err, sizeof(err)), 0);
	assert_int_equal(ps.kind, ACC_PAIRS_RANDOM);
	assert_int_equal(ps.k, 5);
	static const char *const bad[] = {"mesh",      "random:", "random:0", "random:-2",
	                                  "random:3x", "",        "ALL"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(acc_pairs_parse(bad[i], &ps, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "--pairs: expected all, ring or random:K"));
	}
}

static void pairs_make(void **st)
{
	struct acc_pairs_spec ps = {ACC_PAIRS_ALL, 0};
	char err[256];
	int a[ACC_MAX_PAIRS][2];
	(void)st;
	assert_int_equal(acc_pairs_make(&ps, 4, 1, pl, ACC_MAX_PAIRS, err, sizeof(err)), 12);
	for (int k = 0; k < 12; k++)
		assert_int_not_equal(pl[k][0], pl[k][1]);
	ps.kind = ACC_PAIRS_RING;
	assert_int_equal(acc_pairs_make(&ps, 4, 1, pl, ACC_MAX_PAIRS, err, sizeof(err)), 4);
	assert_int_equal(pl[3][0], 3);
	assert_int_equal(pl[3][1], 0);
	assert_int_equal(acc_pairs_make(&ps, 2, 1, pl, ACC_MAX_PAIRS, err, sizeof(err)), 2);
	/* random: K distinct pairs, the same for the same seed, another set for another seed */
	ps = (struct acc_pairs_spec){ACC_PAIRS_RANDOM, 5};
	assert_int_equal(acc_pairs_make(&ps, 5, 7, pl, ACC_MAX_PAIRS, err, sizeof(err)), 5);
	assert_int_equal(acc_pairs_make(&ps, 5, 7, a, ACC_MAX_PAIRS, err, sizeof(err)), 5);
	assert_memory_equal(pl, a, sizeof(int) * 2 * 5);
	for (int x = 0; x < 5; x++)
		for (int y = x + 1; y < 5; y++)
			assert_false(pl[x][0] == pl[y][0] && pl[x][1] == pl[y][1]);
	assert_int_equal(acc_pairs_make(&ps, 5, 8, a, ACC_MAX_PAIRS, err, sizeof(err)), 5);
	assert_true(memcmp(pl, a, sizeof(int) * 2 * 5) != 0);
	/* too many, too few nodes */
	ps.k = 7;
	assert_int_equal(acc_pairs_make(&ps, 2, 1, pl, ACC_MAX_PAIRS, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "random:7: 2 nodes have only 2"));
	assert_int_equal(acc_pairs_make(&ps, 1, 1, pl, ACC_MAX_PAIRS, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at least 2 nodes"));
}

static void set_pair(struct acc_pair *p, int i, int j, double b0, double b1, double b2)
{
	memset(p, 0, sizeof(*p));
	p->i = i;
	p->j = j;
	p->bw[0] = b0;
	p->bw[1] = b1;
	p->bw[2] = b2;
	p->lat[0] = p->lat[1] = p->lat[2] = 10;
	p->nrep = 3;
}

/* all pairs over n nodes; pairs touching `slow` run at 1/10 */
static size_t fleet(int n, int slow)
{
	size_t np = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j) {
				double b = (i == slow || j == slow) ? 100 : 1000;
				set_pair(&pairs[np++], i, j, b * 0.98, b, b * 1.03);
			}
	return np;
}

static void one_slow_node_of_three(void **st)
{
	struct acc_verdict v;
	size_t np = fleet(3, 2);
	(void)st;
	acc_judge(pairs, np, 3, &jo, &v);
	/* 4 of the 6 pairs touch node 2: the nodes' best pairs keep the reference high */
	assert_true(v.node[0].median > 500 && v.node[1].median > 500);
	assert_true(fabs(v.node[2].median - 100) < 1e-9);
	assert_true(fabs(v.fleet_median - 1000) < 1e-9);
	assert_int_equal(v.node[2].state, ACC_SLOW);
	assert_int_equal(v.node[0].state, ACC_OK);
	assert_int_equal(v.node[1].state, ACC_OK);
	assert_int_equal(v.slow_nodes, 1);
	assert_int_equal(v.slow_pairs, 4);
	for (size_t k = 0; k < np; k++)
		assert_int_equal(pairs[k].state,
		                 pairs[k].i == 2 || pairs[k].j == 2 ? ACC_SLOW : ACC_OK);
	assert_int_equal(acc_exit_status(&v), 1);
}

static void healthy_fleet_passes(void **st)
{
	struct acc_verdict v;
	size_t np = fleet(8, -1);
	(void)st;
	pairs[3].bw[1] = 850; /* within the noise a healthy fleet shows */
	acc_judge(pairs, np, 8, &jo, &v);
	assert_int_equal(v.slow_nodes, 0);
	assert_int_equal(v.slow_pairs, 0);
	assert_int_equal(v.judged_pairs, (int)np);
	assert_int_equal(acc_exit_status(&v), 0);
}

static void bad_link_between_good_nodes(void **st)
{
	struct acc_verdict v;
	size_t np = fleet(6, -1);
	(void)st;
	for (size_t k = 0; k < np; k++)
		if (pairs[k].i == 1 && pairs[k].j == 4)
			set_pair(&pairs[k], 1, 4, 300, 310, 305);
	acc_judge(pairs, np, 6, &jo, &v);
	assert_int_equal(v.slow_nodes, 0); /* one slow pair of ten does not move a node median */
	assert_int_equal(v.slow_pairs, 1);
	assert_int_equal(acc_exit_status(&v), 1);
}

static void noisy_pair_is_uncertain_not_outlier(void **st)
{
	struct acc_verdict v;
	size_t np = fleet(3, -1);
	(void)st;
	/* low median but repeats all over the place: no judgement, never a false outlier */
	set_pair(&pairs[0], pairs[0].i, pairs[0].j, 100, 900, 300);
	acc_judge(pairs, np, 3, &jo, &v);
	assert_int_equal(pairs[0].state, ACC_UNCERTAIN);
	assert_non_null(strstr(pairs[0].why, "too noisy"));
	assert_int_equal(v.slow_pairs, 0);
	assert_int_equal(v.slow_nodes, 0);
	assert_int_equal(v.uncertain_pairs, 1);
	assert_int_equal(acc_exit_status(&v), 0);
	/* a single repeat cannot show its spread */
	np = fleet(3, -1);
	pairs[1].nrep = 1;
	acc_judge(pairs, np, 3, &jo, &v);
	assert_int_equal(pairs[1].state, ACC_UNCERTAIN);
	/* everything noisy: nothing judged -> 77 */
	np = fleet(3, -1);
	for (size_t k = 0; k < np; k++)
		set_pair(&pairs[k], pairs[k].i, pairs[k].j, 10, 1000, 500);
	acc_judge(pairs, np, 3, &jo, &v);
	assert_int_equal(v.judged_pairs, 0);
	assert_int_equal(v.slow_nodes, 0);
	assert_int_equal(acc_exit_status(&v), 77);
}

static void failed_pair_fails(void **st)
{
	struct acc_verdict v;
	size_t np = fleet(3, -1);
	(void)st;
	pairs[2].wrong = 64; /* --check found wrong bytes */
	acc_judge(pairs, np, 3, &jo, &v);
	assert_int_equal(pairs[2].state, ACC_FAILED);
	assert_int_equal(v.failed_pairs, 1);
	assert_int_equal(acc_exit_status(&v), 1);
}

static void parse_bench_rows(void **st)
{
	struct acc_pair p = {0};
	const char *out =
	    "# lanes: pdkv 1 TCP connection\n"
	    "  kind   op           block  batch thr         BW\n"
	    "  pdkv   write         4096     16    1     100.00         1000          1.0   2.0   "
	    "       0        0\n"
	    "  pdkv   write        65536     16    1    1200.50         1000         11.0   22.0 "
	    "        0        0\n"
	    "Test completed: duration 1.00, batch count 10, throughput 1200.50 MB/s\n"
	    "  pdkv   write        65536     16    1    1100.25         1000         12.0   22.0 "
	    "        0        0\n"
	    "  pdkv   read         65536     16    1     900.00         1000         13.0   22.0 "
	    "        0        0\n";
	(void)st;
	assert_int_equal(acc_parse_bench(out, &p), 2);
	assert_true(fabs(p.bw[0] - 1200.5) < 1e-9);
	assert_true(fabs(p.bw[1] - 1100.25) < 1e-9);
	assert_true(fabs(p.lat[1] - 12.0) < 1e-9);
	memset(&p, 0, sizeof(p));
	assert_int_equal(acc_parse_bench("pdkv-bench: cannot connect\n", &p), 0);
	memset(&p, 0, sizeof(p));
	assert_int_equal(acc_parse_bench("  pdkv   write  65536 16 1 5.0 1 1.0 2.0 128 3\n", &p),
	                 1);
	assert_int_equal(p.wrong, 128);
	assert_int_equal(p.failed, 3);
}

static void json_report(void **st)
{
	struct acc_verdict v;
	struct acc_node nodes[3] = {{"a", "198.18.0.2", ACC_NODE_NETNS},
	                            {"b", "198.18.0.3", ACC_NODE_NETNS},
	                            {"c", "198.18.0.4", ACC_NODE_NETNS}};
	struct acc_report_opts ro = {"MB", "tcp", "all", "netns:3", "pdkv accept --netns 3", &jo};
	char path[] = "/tmp/pdkv-test-accept.XXXXXX", *text = NULL;
	size_t np = fleet(3, 2), len;
	FILE *f;
	(void)st;
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	acc_judge(pairs, np, 3, &jo, &v);
	assert_int_equal(acc_write_json(path, nodes, 3, pairs, np, &v, &ro), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	text = calloc(1, 65536);
	len = fread(text, 1, 65535, f);
	fclose(f);
	unlink(path);
	assert_true(len > 0);
	assert_non_null(strstr(text, "\"verdict\":\t\"OUTLIERS\""));
	assert_non_null(strstr(text, "\"nodes\":\t[\"c\"]"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(pairs_parse),
	    cmocka_unit_test(pairs_make),
	    cmocka_unit_test(one_slow_node_of_three),
	    cmocka_unit_test(healthy_fleet_passes),
	    cmocka_unit_test(bad_link_between_good_nodes),
	    cmocka_unit_test(noisy_pair_is_uncertain_not_outlier),
	    cmocka_unit_test(failed_pair_fails),
	    cmocka_unit_test(parse_bench_rows),
	    cmocka_unit_test(json_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
