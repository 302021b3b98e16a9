/* rpt_stats: the statistics of `pdkv report compare` — median, range and the two-sided
 * Mann-Whitney U test (exact distribution for small tie-free samples, normal approximation). */
#include "rpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double rpt_median(const double *v, size_t n)
{
	double *t, m;
	if (!n)
		return NAN;
	t = malloc(n * sizeof(*t));
	if (!t)
		return NAN;
	memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), cmp_d);
	m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	free(t);
	return m;
}

void rpt_minmax(const double *v, size_t n, double *lo, double *hi)
{
	*lo = *hi = n ? v[0] : NAN;
	for (size_t i = 1; i < n; i++) {
		if (v[i] < *lo)
			*lo = v[i];
		if (v[i] > *hi)
			*hi = v[i];
	}
}

struct obs {
	double v;
	int side; /* 0 = x, 1 = y */
};

static int cmp_obs(const void *a, const void *b)
{
	return cmp_d(&((const struct obs *)a)->v, &((const struct obs *)b)->v);
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

double rpt_mann_whitney(const double *x, size_t n, const double *y, size_t m, double *u,
                        const char **method)
{
	size_t N = n + m;
	struct obs *o;
	double rx = 0, ties = 0, mu, var, z, p;
	bool tied = false;

	*u = NAN;
	*method = NULL;
	if (!n || !m)
		return NAN;
	o = malloc(N * sizeof(*o));
	if (!o)
		return NAN;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct obs){x[i], 0};
	for (size_t i = 0; i < m; i++)
		o[n + i] = (struct obs){y[i], 1};
	qsort(o, N, sizeof(*o), cmp_obs);
	/* mid-ranks: a run of t equal values shares the mean of its ranks */
	for (size_t i = 0; i < N;) {
		size_t j = i;
		while (j + 1 < N && o[j + 1].v == o[i].v)
			j++;
		double t = (double)(j - i + 1), rank = ((double)i + (double)j) / 2 + 1;
		if (t > 1) {
			tied = true;
			ties += t * t * t - t;
		}
		for (size_t k = i; k <= j; k++)
			if (o[k].side == 0)
				rx += rank;
		i = j + 1;
	}
	free(o);
	*u = rx - (double)n * (double)(n + 1) / 2;
	if (!tied && N <= RPT_EXACT_MAX) {
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
