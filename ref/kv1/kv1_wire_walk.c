/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_wire_walk: the bounds pre-check every kv1 msgpack message passes before msgpack-c unpacks
 * it (declared counts against the bytes left, nesting depth). */
#include <stddef.h>
#include <stdint.h>

#include "kv1_wire.h"

/* msgpack-c allocates a container's elements from the declared count before reading them, so a
 * 6-byte message could ask for gigabytes. This walk checks every declared count against the bytes
 * left (each element needs at least one byte), the nesting depth and the total length first. */
static int be(const uint8_t *p, int n, uint64_t *v)
{
	*v = 0;
	for (int i = 0; i < n; i++)
		*v = *v << 8 | p[i];
	return 0;
}

int kv1_wire_walk(const uint8_t *p, size_t n, size_t *pos, int depth)
{
	uint64_t cnt = 0, skip = 0;
	int pairs = 0;
	uint8_t b;

	if (depth > KV1_MAX_DEPTH || *pos >= n)
		return -1;
	b = p[(*pos)++];
	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
		return 0;
	if ((b & 0xe0) == 0xa0) {
		skip = b & 0x1f;
	} else if ((b & 0xf0) == 0x90) {
		cnt = b & 0x0f;
	} else if ((b & 0xf0) == 0x80) {
		cnt = b & 0x0f;
		pairs = 1;
	} else {
		static const int8_t fixed[] = {
		    /* c4..df: bin8 bin16 bin32 ext8 ext16 ext32 f32 f64 u8 u16 u32 u64 i8 i16
		       i32 i64 fixext1 2 4 8 16 str8 str16 str32 arr16 arr32 map16 map32 */
		    -1, -2, -4, -1, -2, -4, 4,  8,  1,  2,  4,  8,  1,  2,
		    4,  8,  2,  3,  5,  9,  17, -1, -2, -4, -2, -4, -2, -4};
		int f, hl;

		if (b < 0xc4 || b > 0xdf)
			return -1;
		f = fixed[b - 0xc4];
		if (f > 0) {
			skip = (uint64_t)f;
		} else {
			hl = -f;
			if (n - *pos < (size_t)hl)
				return -1;
			be(p + *pos, hl, &cnt);
			*pos += (size_t)hl;
			if (b <= 0xc6 || (b >= 0xd9 && b <= 0xdb)) {
				skip = cnt;
				cnt = 0;
			} else if (b <= 0xc9) {
				skip = cnt + 1; /* ext: type byte + data */
				cnt = 0;
			} else {
				pairs = b >= 0xde;
			}
		}
	}
	if (skip) {
		if (n - *pos < skip)
			return -1;
		*pos += skip;
		return 0;
	}
	if (cnt > (n - *pos) >> pairs)
		return -1;
	for (uint64_t i = 0; i < cnt << pairs; i++)
		if (kv1_wire_walk(p, n, pos, depth + 1))
			return -1;
	return 0;
}
