/* SPDX-License-Identifier: Apache-2.0 */
/* kvc_testenv: what the connector's engine tests share — a real etcd, a prefill/decode pair of
 * configs on 127.0.0.1 with identical URLs (+100 rule), realistic items and comparisons. */
#ifndef KVC_TESTENV_H
#define KVC_TESTENV_H

#include <stdbool.h>
#include <stddef.h>

#include "kvc/kvc_internal.h"
#include "testsvc/pd_svc.h"

/* Qwen2.5-7B geometry: 28 layers, 4 KV heads, 128 dims, bf16; 64 tokens; hidden 3584 */
#define L   28
#define T   64
#define H   4
#define D   128
#define HID 3584

extern struct pd_svc g_etcd;

struct env {
	int base;
	size_t pool;
	char url[64];
	struct cfg_mooncake mc;
	struct cfg_kv_transfer kp, kd;
};

void env_init(struct env *e);
/* The options mk() uses; tests may change fields before kt_create(). */
struct kvc_opts env_opts(struct env *e, bool producer, int fmt, int miss, int miss_wait_ms,
                         int select_timeout_ms);
struct kvc *kt_create(const struct kvc_opts *o); /* fails the test unless created and ready */
struct kvc *mk(struct env *e, bool producer, int fmt, int miss, int miss_wait_ms,
               int select_timeout_ms);
void make_item(struct kvc_item *it, int64_t seed, int ntok);
void assert_tensor_eq(const struct kvc_tensor *a, const struct kvc_tensor *b);
void assert_item_eq(const struct kvc_item *a, const struct kvc_item *b);
void wait_acks(struct kvc *c);
/* main(): starts etcd, runs the n tests as one cmocka group, stops etcd; the group's result,
 * 77 (skip: no etcd) or 1. env_run_tests(array) passes the array's size. */
struct CMUnitTest;
int env_run_group(const char *name, const struct CMUnitTest *tests, size_t n);
#define env_run_tests(tests) env_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]))

#endif
