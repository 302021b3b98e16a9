/* SPDX-License-Identifier: Apache-2.0 */
/* test_pd_stats: pdkv's statistics module against worked values — percentiles as numpy / Python's
 * statistics.quantiles(method="inclusive") give them, stdev, histogram quantiles, U p-values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "pd_stats.h"

#define near(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* Expected values from Python 3's standard library, e.g.
 *   statistics.quantiles([15, 20, 35, 40, 50], n=100, method="inclusive")[p - 1]
 * -> p1 15.2, p25 20.0, p40 29.0, p50 35.0, p90 46.0, p99 49.6; mean 32, stdev 14.404860290887934
 */
static void test_percentiles(void **st)
{
	(void)st;
	double v[] = {50, 15, 40, 20, 35}, s[] = {15, 20, 35, 40, 50};
	near(pd_stats_pct(v, 5, 1), 15.2);
	near(pd_stats_pct(v, 5, 25), 20.0);
	near(pd_stats_pct(v, 5, 40), 29.0);
	near(pd_stats_pct(v, 5, 50), 35.0);
	near(pd_stats_pct(v, 5, 90), 46.0);
	near(pd_stats_pct(v, 5, 99), 49.6);
	near(pd_stats_pct(v, 5, 0), 15);
	near(pd_stats_pct(v, 5, 100), 50);
	near(pd_stats_pct(v, 5, 250), 50); /* clamped */
	near(pd_stats_pct_sorted(s, 5, 90), 46.0);
	assert_true(v[0] == 50); /* pd_stats_pct sorts a copy */
	near(pd_stats_mean(v, 5), 32);
	near(pd_stats_stdev(v, 5), 14.404860290887934);
	assert_true(isnan(pd_stats_pct(v, 0, 50)));
	assert_true(isnan(pd_stats_mean(v, 0)));
	assert_true(isnan(pd_stats_stdev(v, 1)));
	near(pd_stats_pct(v, 1, 99), 50); /* one value: every percentile is it */
}

/* even count: statistics.median([3.5, 1.25, 9.0, 4.75, 2.0, 7.5]) = 4.125; quantiles(...,
 * method="inclusive"): p90 8.25, p99 8.925; mean 4.666666666666667, stdev 3.064582625198196 */
static void test_even(void **st)
{
	(void)st;
	double w[] = {3.5, 1.25, 9.0, 4.75, 2.0, 7.5}, lo, hi;
	near(pd_stats_median(w, 6), 4.125);
	near(pd_stats_pct(w, 6, 90), 8.25);
	near(pd_stats_pct(w, 6, 99), 8.925);
	near(pd_stats_mean(w, 6), 4.666666666666667);
	near(pd_stats_stdev(w, 6), 3.064582625198196);
	pd_stats_minmax(w, 6, &lo, &hi);
	assert_true(lo == 1.25 && hi == 9.0);
	pd_stats_minmax(w, 0, &lo, &hi);
	assert_true(isnan(lo) && isnan(hi));
}

/* buckets le 0.1, 0.5, 1, +Inf with cumulative counts 2, 6, 9, 10, by hand:
 * p10: rank 1 in (0, 0.1] holding 2 -> 0.1 * 1/2 = 0.05; p50: rank 5 in (0.1, 0.5] holding 4
 * from rank 2 -> 0.1 + 0.4 * 3/4 = 0.4; p90: rank 9 -> 1.0; p95: rank 9.5 in +Inf -> 1 */
static void test_hist(void **st)
{
	(void)st;
	double le[] = {0.1, 0.5, 1, INFINITY}, cum[] = {2, 6, 9, 10};
	near(pd_stats_hist_pct(le, cum, 4, 10, 10), 0.05);
	near(pd_stats_hist_pct(le, cum, 4, 10, 50), 0.4);
	near(pd_stats_hist_pct(le, cum, 4, 10, 90), 1.0);
	near(pd_stats_hist_pct(le, cum, 4, 10, 95), 1.0);
	assert_true(isnan(pd_stats_hist_pct(le, cum, 4, 0, 50)));
}

/* tie-free 6 vs 7: U of x = 1; enumerating all C(13, 6) = 1716 splits in Python
 * (itertools.combinations) gives 2 splits with U <= 1 -> p = 2 * 2/1716 = 0.002331002331 */
static void test_mw_exact(void **st)
{
	(void)st;
	double a[] = {10.2, 11.5, 9.8, 12.1, 10.9, 11.1};
	double b[] = {12.4, 13.0, 11.8, 12.9, 13.6, 12.2, 14.1}, u;
	const char *m;
	double p = pd_stats_mann_whitney(a, 6, b, 7, &u, &m);
	assert_string_equal(m, "exact");
	near(u, 1);
	near(p, 4.0 / 1716);
	p = pd_stats_mann_whitney(b, 7, a, 6, &u, &m); /* the other way round: U = 41, same p */
	near(u, 41);
	near(p, 4.0 / 1716);
	/* 4 vs 4 with U = 1 (12.1 > 11.8): U <= 1 in 2 of C(8,4) = 70 splits -> 4/70;
	 * complete separation of 3 vs 3 cannot reach 0.05: 2/20 = 0.1 */
	p = pd_stats_mann_whitney(a, 4, b, 4, &u, &m);
	near(u, 1);
	near(p, 4.0 / 70);
	p = pd_stats_mann_whitney(a, 3, b, 3, &u, &m);
	near(p, 0.1);
}

/* ties -> normal approximation with tie and continuity correction. R's textbook example
 * (wilcox.test(x, y), "W = 58, p-value = 0.1329"); the same by the formula in Python:
 * U = 58, sum(t^3 - t) = 12, p = math.erfc(z / sqrt(2)) = 0.13291945818531886 */
static void test_mw_normal(void **st)
{
	(void)st;
	double x[] = {1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
	double y[] = {0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}, u;
	double t1[] = {2, 2, 2, 2}, t2[] = {2, 2, 2, 2};
	const char *m;
	double p = pd_stats_mann_whitney(x, 9, y, 9, &u, &m);
	assert_string_equal(m, "normal");
	near(u, 58);
	assert_true(fabs(p - 0.13291945818531886) < 1e-12);
	/* all tied: nothing tells the sides apart */
	assert_true(pd_stats_mann_whitney(t1, 4, t2, 4, &u, &m) == 1);
	/* an empty side: no test */
	assert_true(isnan(pd_stats_mann_whitney(x, 9, y, 0, &u, &m)));
	assert_null(m);
}

/* Student's t: closed forms for df 1 (Cauchy: 1/2 + atan(t)/pi) and df 2
 * (1/2 + t / (2 sqrt(2 + t^2))); quantiles from the printed tables (e.g. NIST/SEMATECH
 * e-Handbook 1.3.6.7.2): t(0.975; 1) 12.706, (0.975; 2) 4.303, (0.975; 10) 2.228,
 * (0.95; 30) 1.697, (0.99; 5) 3.365 */
static void test_student_t(void **st)
{
	(void)st;
	assert_true(fabs(pd_stats_t_cdf(1, 1) - 0.75) < 1e-12);
	assert_true(fabs(pd_stats_t_cdf(-3, 1) - (0.5 + atan(-3) / M_PI)) < 1e-12);
	assert_true(fabs(pd_stats_t_cdf(2, 2) - (0.5 + 2 / (2 * sqrt(6)))) < 1e-12);
	assert_true(fabs(pd_stats_t_cdf(0, 7) - 0.5) < 1e-15);
	assert_true(fabs(pd_stats_t_quantile(0.975, 1) - 12.706) < 1e-3);
	assert_true(fabs(pd_stats_t_quantile(0.975, 2) - 4.303) < 1e-3);
	assert_true(fabs(pd_stats_t_quantile(0.975, 10) - 2.228) < 1e-3);
	assert_true(fabs(pd_stats_t_quantile(0.95, 30) - 1.697) < 1e-3);
	assert_true(fabs(pd_stats_t_quantile(0.99, 5) - 3.365) < 1e-3);
	/* df 2 inverts in closed form: t = (2p - 1) sqrt(2 / (1 - (2p - 1)^2)) */
	assert_true(fabs(pd_stats_t_quantile(0.9875, 2) - 0.975 * sqrt(2 / (1 - 0.975 * 0.975))) <
	            1e-9);
	assert_true(fabs(pd_stats_t_quantile(0.025, 2) + 4.303) < 1e-3);
	assert_true(pd_stats_t_quantile(0.5, 3) == 0);
	assert_true(isnan(pd_stats_t_quantile(1, 3)) && isnan(pd_stats_t_quantile(0.9, 0)));
	assert_true(isnan(pd_stats_t_cdf(1, -1)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_percentiles), cmocka_unit_test(test_even),
	    cmocka_unit_test(test_hist),        cmocka_unit_test(test_mw_exact),
	    cmocka_unit_test(test_mw_normal),   cmocka_unit_test(test_student_t),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
