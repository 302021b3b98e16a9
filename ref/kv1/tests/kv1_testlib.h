/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_testlib: set-up the kv1 cmocka tests share — a loopback TE/TCP worker, a gen B0 bootstrap
 * server with a producer / consumer pair, block patterns and the worker's counters. */
#ifndef KV1_TESTLIB_H
#define KV1_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kv1/kv1.h"

/* A prefill (p) and decode (d) worker on one bootstrap server (b, its URL boot). */
struct kv1t_pair {
	struct kv1_boot *b;
	char boot[64];
	struct kv1_worker *p, *d;
};

/* The options every test worker starts from: TE over TCP, tp 1, engine "engine-p0", the
 * bootstrap URL on a producer only, nbufs buffers of nblk blocks of blen bytes. */
struct kv1_opts kv1t_opts(enum cfg_gen gen, bool producer, const char *boot, int nbufs, size_t blen,
                          size_t nblk);
/* kv1_worker_create, failing the test with its message. */
struct kv1_worker *kv1t_create(const struct kv1_opts *o);
/* A gen B0 bootstrap server on a free loopback port into x->b, its URL into x->boot. */
void kv1t_boot_open(struct kv1t_pair *x);
/* Destroys d, p, then the bootstrap server. */
void kv1t_pair_close(struct kv1t_pair *x);

/* Byte k of block i of buffer b in the pattern of salt. */
uint8_t kv1t_pat(uint8_t salt, int b, size_t i, size_t k);
/* Writes the salt pattern into blocks ids[0..n) of every buffer. */
void kv1t_fill(struct kv1_worker *w, int nbufs, size_t blen, const int64_t *ids, size_t n,
               uint8_t salt);
struct kv1_stats kv1t_stats(struct kv1_worker *w);
/* id is one of v[0..n). */
bool kv1t_among(int64_t id, const int64_t *v, size_t n);

/* A thread (pthread_create(..., kv1t_ready_later, &l)) that makes key ready on w 300 ms on. */
struct kv1t_later {
	struct kv1_worker *w;
	const char *key;
	int64_t *ids;
	size_t n;
};
void *kv1t_ready_later(void *arg);

#endif
