/* SPDX-License-Identifier: Apache-2.0 */
/* pd_stats: pdkv's one statistics module — percentiles by one definition, median, mean, stdev,
 * min/max, histogram quantiles, the two-sided Mann-Whitney U test and Student's t. Every pdkv
 * tool uses it. */
#ifndef PD_STATS_H
#define PD_STATS_H

#include <stddef.h>

/* Up to this many values in all (and no ties) the U test uses the exact distribution. */
#define PD_STATS_EXACT_MAX 50

/* qsort comparator for doubles, ascending */
int pd_stats_cmp(const void *a, const void *b);
void pd_stats_sort(double *v, size_t n);

/* The p-th percentile (p in 0..100) by ONE definition, used everywhere in pdkv: linear
 * interpolation between the closest ranks (Hyndman & Fan type 7, numpy.percentile's default,
 * Python's statistics.quantiles(method="inclusive")): h = (n - 1) * p / 100,
 * value = s[floor h] + (h - floor h) * (s[floor h + 1] - s[floor h]).
 * pd_stats_pct_sorted wants s sorted ascending; pd_stats_pct sorts a copy. p is clamped to
 * 0..100. NAN when n == 0 (or no memory for the copy). */
double pd_stats_pct_sorted(const double *s, size_t n, double p);
double pd_stats_pct(const double *v, size_t n, double p);
/* the 50th percentile: the middle value, or the mean of the two middle values */
double pd_stats_median(const double *v, size_t n);
double pd_stats_mean(const double *v, size_t n); /* NAN when n == 0 */
/* sample standard deviation (divides by n - 1); NAN when n < 2 */
double pd_stats_stdev(const double *v, size_t n);
void pd_stats_minmax(const double *v, size_t n, double *lo, double *hi); /* NAN when n == 0 */

/* The p-th percentile (0..100) of a Prometheus histogram: le[] the buckets' upper bounds
 * (ascending, the last may be +Inf), cum[] their cumulative counts, count the total. Linear
 * inside the bucket that holds the rank, as Prometheus' histogram_quantile(); a rank in the
 * +Inf bucket gives the highest finite bound. NAN when count <= 0. */
double pd_stats_hist_pct(const double *le, const double *cum, size_t nb, double count, double p);

/* Two-sided Mann-Whitney U test of x (n values) against y (m values). *u gets U of x: the
 * number of (x, y) pairs with x above y, a tie counting 1/2. Exact distribution when
 * n + m <= PD_STATS_EXACT_MAX and no value is tied, else the normal approximation with tie
 * correction (variance n m / 12 * (N + 1 - sum(t^3 - t) / (N (N - 1)))) and continuity
 * correction (|U - n m / 2| - 1/2). *method gets "exact" or "normal" (NULL when a side is
 * empty). Returns the p-value: 1 when every value is tied, NAN when a side is empty. */
double pd_stats_mann_whitney(const double *x, size_t n, const double *y, size_t m, double *u,
                             const char **method);

/* Student's t distribution with df degrees of freedom (df > 0): P(T <= t), from the regularized
 * incomplete beta function; and its p-quantile (0 < p < 1). NAN outside the domain. */
double pd_stats_t_cdf(double t, double df);
double pd_stats_t_quantile(double p, double df);

#endif
