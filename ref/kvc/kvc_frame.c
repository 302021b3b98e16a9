/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_frame: the MooncakePipe side-channel frames as vLLM puts them on the wire — the pickled
 * (ptr, len) tuple and b'ACK' (PIPE-a/b) and the big-endian u64 pair / raw "ACK" (PIPE-c). */
#include <stdio.h>
#include <string.h>

#include "kvc/kvc_internal.h"

/* pickle opcodes used by CPython for a tuple of two ints and for short bytes */
#define OP_PROTO          0x80
#define OP_FRAME          0x95
#define OP_BININT         0x4a
#define OP_BININT1        0x4b
#define OP_BININT2        0x4d
#define OP_LONG1          0x8a
#define OP_TUPLE2         0x86
#define OP_MEMOIZE        0x94
#define OP_STOP           0x2e
#define OP_SHORT_BINBYTES 0x43
#define PICKLE_HDR        11 /* PROTO v, FRAME u64 */

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* save_long of pickle protocol >= 2 for a non-negative value */
static size_t put_int(uint8_t *p, uint64_t v)
{
	size_t n;
	if (v <= 0xff) {
		p[0] = OP_BININT1;
		p[1] = (uint8_t)v;
		return 2;
	}
	if (v <= 0xffff) {
		p[0] = OP_BININT2;
		p[1] = (uint8_t)v;
		p[2] = (uint8_t)(v >> 8);
		return 3;
	}
	if (v <= 0x7fffffff) {
		p[0] = OP_BININT;
		for (int i = 0; i < 4; i++)
			p[1 + i] = (uint8_t)(v >> (8 * i));
		return 5;
	}
	/* encode_long: (bit_length >> 3) + 1 bytes of little-endian two's complement */
	n = (size_t)((64 - __builtin_clzll(v)) >> 3) + 1;
	p[0] = OP_LONG1;
	p[1] = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		p[2 + i] = i < 8 ? (uint8_t)(v >> (8 * i)) : 0;
	return 2 + n;
}

size_t kvc_pickle_tuple2(uint64_t a, uint64_t b, uint8_t *out)
{
	size_t n = PICKLE_HDR;
	out[0] = OP_PROTO;
	out[1] = 4;
	out[2] = OP_FRAME;
	n += put_int(out + n, a);
	n += put_int(out + n, b);
	out[n++] = OP_TUPLE2;
	out[n++] = OP_MEMOIZE;
	out[n++] = OP_STOP;
	put_le64(out + 3, n - PICKLE_HDR);
	return n;
}

/* One int opcode at p[*off]; non-negative values that fit a u64 only. */
static int get_int(const uint8_t *p, size_t n, size_t *off, uint64_t *v)
{
	size_t o = *off, len;
	if (o >= n)
		return KVC_ERR_PROTOCOL;
	switch (p[o]) {
	case OP_BININT1:
		if (o + 2 > n)
			return KVC_ERR_PROTOCOL;
		*v = p[o + 1];
		*off = o + 2;
		return 0;
	case OP_BININT2:
		if (o + 3 > n)
			return KVC_ERR_PROTOCOL;
		*v = (uint64_t)p[o + 1] | (uint64_t)p[o + 2] << 8;
		*off = o + 3;
		return 0;
	case OP_BININT:
		if (o + 5 > n || (p[o + 4] & 0x80)) /* negative: not a pointer or length */
			return KVC_ERR_PROTOCOL;
		*v = (uint64_t)p[o + 1] | (uint64_t)p[o + 2] << 8 | (uint64_t)p[o + 3] << 16 |
		     (uint64_t)p[o + 4] << 24;
		*off = o + 5;
		return 0;
	case OP_LONG1:
		if (o + 2 > n)
			return KVC_ERR_PROTOCOL;
		len = p[o + 1];
		if (len < 1 || len > 9 || o + 2 + len > n)
			return KVC_ERR_PROTOCOL;
		if (p[o + 1 + len] & 0x80) /* sign bit of the last byte: negative */
			return KVC_ERR_PROTOCOL;
		if (len == 9 && p[o + 10] != 0) /* > 2^64-1 */
			return KVC_ERR_PROTOCOL;
		*v = 0;
		for (size_t i = 0; i < len && i < 8; i++)
			*v |= (uint64_t)p[o + 2 + i] << (8 * i);
		*off = o + 2 + len;
		return 0;
	default:
		return KVC_ERR_PROTOCOL;
	}
}

/* PROTO 4|5, FRAME whose length is exactly the rest of the message. */
static int check_header(const uint8_t *p, size_t n)
{
	if (n < PICKLE_HDR + 1 || p[0] != OP_PROTO || (p[1] != 4 && p[1] != 5) || p[2] != OP_FRAME)
		return KVC_ERR_PROTOCOL;
	if (get_le64(p + 3) != n - PICKLE_HDR)
		return KVC_ERR_PROTOCOL;
	return 0;
}

int kvc_unpickle_tuple2(const uint8_t *p, size_t n, uint64_t *a, uint64_t *b)
{
	size_t off = PICKLE_HDR;
	if (!p || n > KVC_FRAME_MAX || check_header(p, n) < 0)
		return KVC_ERR_PROTOCOL;
	if (get_int(p, n, &off, a) < 0 || get_int(p, n, &off, b) < 0)
		return KVC_ERR_PROTOCOL;
	/* TUPLE2, then MEMOIZE (CPython memoizes tuples) — optional for other picklers — STOP */
	if (off >= n || p[off++] != OP_TUPLE2)
		return KVC_ERR_PROTOCOL;
	if (off < n && p[off] == OP_MEMOIZE)
		off++;
	if (off + 1 != n || p[off] != OP_STOP)
		return KVC_ERR_PROTOCOL;
	return 0;
}

size_t kvc_pickle_ack(uint8_t *out)
{
	static const uint8_t ack[KVC_PICKLE_ACK_LEN] = {
	    0x80, 0x04, 0x95, 0x07, 0, 0, 0, 0, 0, 0, 0, 0x43, 0x03, 'A', 'C', 'K', 0x94, 0x2e};
	memcpy(out, ack, sizeof(ack));
	return sizeof(ack);
}

bool kvc_is_pickled_ack(const uint8_t *p, size_t n)
{
	size_t off = PICKLE_HDR;
	if (!p || n > KVC_FRAME_MAX || check_header(p, n) < 0)
		return false;
	if (n - off < 6 || p[off] != OP_SHORT_BINBYTES || p[off + 1] != 3 ||
	    memcmp(p + off + 2, "ACK", 3) != 0)
		return false;
	off += 5;
	if (p[off] == OP_MEMOIZE)
		off++;
	return off + 1 == n && p[off] == OP_STOP;
}

void kvc_u64be_put(uint8_t *out, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (56 - 8 * i));
}

int kvc_u64be_get(const uint8_t *p, size_t n, uint64_t *v)
{
	if (!p || n != 8)
		return KVC_ERR_PROTOCOL;
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v = *v << 8 | p[i];
	return 0;
}

void kvc_hex(const void *p, size_t n, char *out, size_t cap)
{
	const uint8_t *b = p;
	size_t o = 0, shown = n < 32 ? n : 32;
	if (!cap)
		return;
	out[0] = 0;
	for (size_t i = 0; i < shown && o + 4 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%02x", i ? " " : "", b[i]);
	if (shown < n && o + 5 < cap)
		snprintf(out + o, cap - o, " ...");
	if (n == 0)
		snprintf(out, cap, "(empty)");
}
