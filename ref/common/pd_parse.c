/* SPDX-License-Identifier: Apache-2.0 */
/* pd_parse: number and size parsers at the ground floor (pd_env checks values with them, and
 * pd_util reads its environment through pd_env, so they sit below both). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

int pd_parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;
	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end || end == s)
		return -EINVAL;
	*out = v;
	return 0;
}

int pd_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end || end == s)
		return -EINVAL;
	*out = v;
	return 0;
}

int pd_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *sfx;
		uint64_t mul;
	} sfx[] = {{"", 1},           {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1ull << 10},
	           {"k", 1ull << 10}, {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1ull << 20},
	           {"m", 1ull << 20}, {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1ull << 30},
	           {"g", 1ull << 30}};
	char *end;
	double v;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < PD_ARRAY_SIZE(sfx); i++) {
		if (strcmp(end, sfx[i].sfx))
			continue;
		v *= (double)sfx[i].mul;
		if (v >= 18446744073709551616.0)
			return -ERANGE;
		*out = (uint64_t)v;
		return 0;
	}
	return -EINVAL;
}
