/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_testlib: set-up the kv1 cmocka tests share (kv1_testlib.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "kv1_testlib.h"
#include "pd_util.h"

struct kv1_opts kv1t_opts(enum cfg_gen gen, bool producer, const char *boot, int nbufs, size_t blen,
                          size_t nblk)
{
	struct kv1_opts o = {0};

	o.gen = gen;
	o.producer = producer;
	o.protocol = "tcp";
	o.tp_size = 1;
	o.engine_id = "engine-p0";
	o.bootstrap_url = producer ? boot : NULL;
	o.nbufs = nbufs;
	o.block_len = blen;
	o.num_blocks = nblk;
	return o;
}

struct kv1_worker *kv1t_create(const struct kv1_opts *o)
{
	struct kv1_worker *w = NULL;
	char err[512];

	if (kv1_worker_create(o, &w, err, sizeof(err)))
		fail_msg("kv1_worker_create: %s", err);
	return w;
}

void kv1t_boot_open(struct kv1t_pair *x)
{
	int bport;

	assert_int_equal(kv1_boot_start("127.0.0.1", 0, KV1_SHAPE_B0, &x->b, &bport), 0);
	snprintf(x->boot, sizeof(x->boot), "http://127.0.0.1:%d", bport);
}

void kv1t_pair_close(struct kv1t_pair *x)
{
	kv1_worker_destroy(x->d);
	kv1_worker_destroy(x->p);
	kv1_boot_stop(x->b);
}

uint8_t kv1t_pat(uint8_t salt, int b, size_t i, size_t k)
{
	return (uint8_t)(salt + b * 31 + i * 7 + k % 251);
}

void kv1t_fill(struct kv1_worker *w, int nbufs, size_t blen, const int64_t *ids, size_t n,
               uint8_t salt)
{
	for (int b = 0; b < nbufs; b++)
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < blen; k++)
				kv1_block(w, b, ids[i])[k] = kv1t_pat(salt, b, i, k);
}

struct kv1_stats kv1t_stats(struct kv1_worker *w)
{
	struct kv1_stats st;

	kv1_worker_stats(w, &st);
	return st;
}

bool kv1t_among(int64_t id, const int64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

void *kv1t_ready_later(void *arg)
{
	struct kv1t_later *l = arg;

	pd_sleep_ms(300);
	kv1_send_ready(l->w, l->key, l->ids, l->n);
	return NULL;
}
