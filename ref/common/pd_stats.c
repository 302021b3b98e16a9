/* SPDX-License-Identifier: Apache-2.0 */
/* pd_stats: percentiles (linear interpolation between closest ranks), median, mean, stdev,
 * histogram quantiles and the two-sided Mann-Whitney U test (exact or normal approximation). */
#include "pd_stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int pd_stats_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void pd_stats_sort(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), pd_stats_cmp);
}

double pd_stats_pct_sorted(const double *s, size_t n, double p)
{
	double h;
	size_t i;
	if (!n || isnan(p))
		return NAN;
	p = p < 0 ? 0 : p > 100 ? 100 : p;
	h = (double)(n - 1) * p / 100;
	i = (size_t)h;
	if (i + 1 >= n)
		return s[n - 1];
	return s[i] + (h - (double)i) * (s[i + 1] - s[i]);
}

double pd_stats_pct(const double *v, size_t n, double p)
{
	double *t, r;
	if (!n)
		return NAN;
	t = malloc(n * sizeof(*t));
	if (!t)
		return NAN;
	memcpy(t, v, n * sizeof(*t));
	pd_stats_sort(t, n);
	r = pd_stats_pct_sorted(t, n, p);
	free(t);
	return r;
}

double pd_stats_median(const double *v, size_t n)
{
	return pd_stats_pct(v, n, 50);
}

double pd_stats_mean(const double *v, size_t n)
{
	double s = 0;
	if (!n)
		return NAN;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return s / (double)n;
}

double pd_stats_stdev(const double *v, size_t n)
{
	double m, ss = 0;
	if (n < 2)
		return NAN;
	m = pd_stats_mean(v, n);
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - m) * (v[i] - m);
	return sqrt(ss / (double)(n - 1));
}

void pd_stats_minmax(const double *v, size_t n, double *lo, double *hi)
{
	*lo = *hi = n ? v[0] : NAN;
	for (size_t i = 1; i < n; i++) {
		if (v[i] < *lo)
			*lo = v[i];
		if (v[i] > *hi)
			*hi = v[i];
	}
}

double pd_stats_hist_pct(const double *le, const double *cum, size_t nb, double count, double p)
{
	double want, lo = 0, prev = 0;
	if (!(count > 0) || isnan(p))
		return NAN;
	p = p < 0 ? 0 : p > 100 ? 100 : p;
	want = p / 100 * count;
	for (size_t i = 0; i < nb; i++) {
		if (cum[i] >= want) {
			double hi = isinf(le[i]) ? lo : le[i], in = cum[i] - prev;
			return in > 0 ? lo + (hi - lo) * (want - prev) / in : hi;
		}
		prev = cum[i];
		lo = le[i];
	}
	return lo;
}

/* ---------------------------------------------------------------- Mann-Whitney U */
struct obs {
	double v;
	int side; /* 0 = x, 1 = y */
};

static int cmp_obs(const void *a, const void *b)
{
	return pd_stats_cmp(&((const struct obs *)a)->v, &((const struct obs *)b)->v);
}

/* P(U <= u) and P(U >= u) under H0 for sample sizes n, m without ties. The rank sum of the n
 * x-values is the sum of a uniformly random n-subset of 1..N; c[k][s] counts the k-subsets of
 * the ranks seen so far with sum s (doubles: C(50,25) ~ 1.3e14 is exact in a double). */
static double exact_p(size_t n, size_t m, double u)
{
	size_t N = n + m, maxs = n * (2 * N - n + 1) / 2, w = maxs + 1;
	double *c = calloc((n + 1) * w, sizeof(double)), total = 0, lo = 0, hi = 0, p;
	if (!c)
		return NAN;
	c[0] = 1;
	for (size_t r = 1; r <= N; r++)
		for (size_t k = r < n ? r : n; k >= 1; k--)
			for (size_t s = maxs; s >= r; s--)
				c[k * w + s] += c[(k - 1) * w + s - r];
	for (size_t s = 0; s <= maxs; s++) {
		double cnt = c[n * w + s], us;
		if (cnt == 0)
			continue;
		us = (double)s - (double)(n * (n + 1) / 2);
		total += cnt;
		if (us <= u + 1e-9)
			lo += cnt;
		if (us >= u - 1e-9)
			hi += cnt;
	}
	free(c);
	p = 2 * (lo < hi ? lo : hi) / total;
	return p > 1 ? 1 : p;
}

/* rank sum of x (mid-ranks for ties) and sum(t^3 - t) over the runs of tied values */
static int rank_x(const double *x, size_t n, const double *y, size_t m, double *rx, double *ties)
{
	size_t N = n + m;
	struct obs *o = malloc(N * sizeof(*o));
	if (!o)
		return -1;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct obs){x[i], 0};
	for (size_t i = 0; i < m; i++)
		o[n + i] = (struct obs){y[i], 1};
	qsort(o, N, sizeof(*o), cmp_obs);
	*rx = *ties = 0;
	for (size_t i = 0; i < N;) {
		size_t j = i;
		while (j + 1 < N && o[j + 1].v == o[i].v)
			j++;
		double t = (double)(j - i + 1), rank = ((double)i + (double)j) / 2 + 1;
		*ties += t * t * t - t;
		for (size_t k = i; k <= j; k++)
			if (o[k].side == 0)
				*rx += rank;
		i = j + 1;
	}
	free(o);
	return 0;
}

double pd_stats_mann_whitney(const double *x, size_t n, const double *y, size_t m, double *u,
                             const char **method)
{
	size_t N = n + m;
	double rx, ties, mu, var, z, p;

	*u = NAN;
	*method = NULL;
	if (!n || !m || rank_x(x, n, y, m, &rx, &ties))
		return NAN;
	*u = rx - (double)n * (double)(n + 1) / 2;
	if (ties == 0 && N <= PD_STATS_EXACT_MAX) {
		*method = "exact";
		return exact_p(n, m, *u);
	}
	*method = "normal";
	mu = (double)n * (double)m / 2;
	var = (double)n * (double)m / 12 * ((double)(N + 1) - ties / ((double)N * (double)(N - 1)));
	if (!(var > 0))
		return 1; /* every value equal: nothing tells the sides apart */
	z = fabs(*u - mu) - 0.5;
	if (z < 0)
		z = 0;
	z /= sqrt(var);
	p = erfc(z / sqrt(2));
	return p > 1 ? 1 : p;
}

/* The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated by
 * the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2). */
static double beta_cf(double x, double a, double b)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;
	d = fabs(d) < tiny ? tiny : d;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, num, del;
		/* even step */
		num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		/* odd step */
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return h;
}

static double inc_beta(double x, double a, double b)
{
	double front;
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(x, a, b) / a;
	return 1 - exp(lgamma(a + b) - lgamma(a) - lgamma(b) + b * log1p(-x) + a * log(x)) *
	               beta_cf(1 - x, b, a) / b;
}

double pd_stats_t_cdf(double t, double df)
{
	double tail;
	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1 : 0;
	tail = 0.5 * inc_beta(df / (df + t * t), df / 2, 0.5); /* P(T > |t|) */
	return t >= 0 ? 1 - tail : tail;
}

double pd_stats_t_quantile(double p, double df)
{
	double lo = 0, hi = 1;
	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	if (p < 0.5)
		return -pd_stats_t_quantile(1 - p, df);
	if (p == 0.5)
		return 0;
	while (pd_stats_t_cdf(hi, df) < p && hi < 1e12)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;
		if (pd_stats_t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}
