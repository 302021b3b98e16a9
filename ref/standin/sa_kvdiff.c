/* SPDX-License-Identifier: Apache-2.0 */
/* sa_kvdiff: where a V0 answer's keys and values differ from what the fake model computes for
 * its tokens. Only run after a checksum mismatch, so the report says which bytes went wrong — a
 * transport slice left unwritten (zeros), a stale range, one row — and not only that they did:
 * "keys: 65536 bytes differ in 1 range: [1048576, +65536) zeros, layer 2 token 0 head 0". */
#include <stdio.h>
#include <string.h>

#include "sa.h"

#define MAX_RANGES 3

/* Appends to out (size sz, used *n) the differing ranges of got against want. Bytes that
 * agree for less than a row between two differences belong to one range. */
static void diff_one(const char *what, const uint8_t *got, const uint8_t *want, size_t len,
                     size_t row, size_t ntok, int nheads, char *out, size_t sz, size_t *n)
{
	size_t bad = 0, ranges = 0, lo = 0, hi = 0;
	bool open = false;

#define PUT(...)                                                                                   \
	do {                                                                                       \
		int k_ = snprintf(out + *n, *n < sz ? sz - *n : 0, __VA_ARGS__);                   \
		*n += k_ > 0 ? (size_t)k_ : 0;                                                     \
	} while (0)
	PUT("%s%s: ", *n ? "; " : "", what);
	for (size_t i = 0; i <= len; i++) {
		bool d = i < len && got[i] != want[i];

		bad += d;
		if (d && open && i - hi < row) {
			hi = i + 1;
			continue;
		}
		if (open && (d || i == len || i - hi >= row)) {
			if (++ranges <= MAX_RANGES) {
				size_t r0 = lo / row, zeros = 0;

				for (size_t k = lo; k < hi; k++)
					zeros += got[k] == 0;
				PUT("%s[%zu, +%zu)%s layer %zu token %zu head %zu",
				    ranges > 1 ? ", " : "", lo, hi - lo,
				    zeros == hi - lo ? " zeros" : "", r0 / ((size_t)nheads * ntok),
				    r0 / (size_t)nheads % ntok, r0 % (size_t)nheads);
			}
			open = false;
		}
		if (d && !open) {
			open = true;
			lo = i;
			hi = i + 1;
		}
	}
	if (!bad)
		PUT("none differ");
	else
		PUT("%s (%zu bytes in %zu range%s)", ranges > MAX_RANGES ? ", ..." : "", bad,
		    ranges, ranges == 1 ? "" : "s");
#undef PUT
}

void sa_kv_diff(const struct mdl_geom *g, const int64_t *tokens, size_t ntok, int head0, int nheads,
                int shard, int nshards, const void *keys, const void *values, char *out, size_t sz)
{
	struct mdl_kv kv;
	size_t n = 0;

	if (sz)
		out[0] = '\0';
	if (mdl_kv_compute(g, tokens, ntok, head0, nheads, shard, nshards, &kv)) {
		snprintf(out, sz, "expected KV not computed (out of memory)");
		return;
	}
	diff_one("keys", keys, kv.keys, kv.bytes_each, mdl_kv_row_bytes(g), ntok, nheads, out, sz,
	         &n);
	diff_one("values", values, kv.values, kv.bytes_each, mdl_kv_row_bytes(g), ntok, nheads, out,
	         sz, &n);
	mdl_kv_free(&kv);
}
