/* SPDX-License-Identifier: Apache-2.0 */
/* te_testpat: the byte pattern the transfer-engine GPU tests write and compare (xorshift64 from
 * a seed), shared so that both sides of a test agree on what a buffer must hold. */
#ifndef TE_TESTPAT_H
#define TE_TESTPAT_H

#include <stddef.h>
#include <stdint.h>

static inline void te_testpat_fill(char *p, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (char)x;
	}
}

#endif
