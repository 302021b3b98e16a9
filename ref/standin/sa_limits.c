/* SPDX-License-Identifier: Apache-2.0 */
/* sa_limits: pdkv-standin's server limits (issues 11, 34) — the body and V0 side-channel limit
 * rows of its option table (the connection limits are pd_opt's shared server group). */
#include "sa.h"

#include <stdio.h>
#include <string.h>

#include "pd_util.h"

void sa_limits_default(struct sa_opts *o)
{
	o->max_conns = SA_DEFAULT_MAX_CONNS;
	o->max_conns_per_client = SA_DEFAULT_MAX_CONNS_PER_CLIENT;
	o->idle_timeout_s = SA_DEFAULT_IDLE_TIMEOUT_S;
	o->kv_zmq_max_msg_bytes = 0; /* kvc's default */
	o->kv_insert_timeout_ms = 0;
	o->kv_block_wait_ms = SA_DEFAULT_KV_BLOCK_WAIT_MS;
	o->max_body = SA_DEFAULT_MAX_BODY;
	o->max_body_in_flight = SA_DEFAULT_MAX_BODY_IN_FLIGHT;
	o->kv_integrity_policy = SA_KVI_DEFAULT;
}

/* --kv-insert-timeout-ms: 0 = wait until shutdown, as vLLM (kvc: < 0); kvc's own 0 is its
 * 5 s default, which the flag's absence keeps. */
static int opt_insert_timeout(const char *v, void *dst, void *ud)
{
	int64_t n;
	(void)ud;
	if (pd_parse_i64(v, &n) || n < 0 || n > 3600000)
		return -1;
	*(int *)dst = n == 0 ? -1 : (int)n;
	return 0;
}

#define LIMIT(nm, ty, d, lo, hi, a, h)                                                             \
	(struct pd_opt)                                                                            \
	{                                                                                          \
		.name = nm, .type = ty, .dst = d, .min = lo, .max = hi, .arg = a, .help = h,       \
		.want = "a whole number " #lo ".." #hi                                             \
	}

struct pd_opt_group sa_limits_group(struct pd_opt *rows, struct sa_opts *o)
{
	size_t n = 0;
	rows[n++] = LIMIT("kv-zmq-max-msg-bytes", PD_OPT_I64, &o->kv_zmq_max_msg_bytes, 64,
	                  1073741824, "N", "V0 side channel: largest message (default 4096)");
	rows[n++] = (struct pd_opt){.name = "kv-insert-timeout-ms",
	                            .type = PD_OPT_FN,
	                            .dst = &o->kv_insert_timeout_ms,
	                            .arg = "MS",
	                            .help = "V0: how long an insert waits (0 = until shutdown)",
	                            .want = "a whole number 0..3600000",
	                            .fn = opt_insert_timeout};
	rows[n++] =
	    LIMIT("kv-block-wait-timeout-ms", PD_OPT_INT, &o->kv_block_wait_ms, 0, 3600000, "MS",
	          "V1: how long a request waits for free KV blocks\n(default 120000; "
	          "0 = fail at once)");
	rows[n++] = LIMIT("max-body", PD_OPT_I64, &o->max_body, 1024, 17179869184, "BYTES",
	                  "one request's body (default 64 MiB; larger -> 413)");
	rows[n++] =
	    LIMIT("max-body-in-flight", PD_OPT_I64, &o->max_body_in_flight, 1024, 68719476736,
	          "BYTES", "all bodies being received or held at once\n(default 256 MiB)");
	rows[n++] = (struct pd_opt){.name = "kv-integrity-policy",
	                            .type = PD_OPT_CHOICE,
	                            .dst = &o->kv_integrity_policy,
	                            .arg = "P",
	                            .choices = "off|fail|recompute",
	                            .help = "KV failing its checksum: off (decode from it, as\n"
	                                    "vLLM), fail, recompute",
	                            .want = "a value to choose from 'off', 'fail', 'recompute'"};
	return (struct pd_opt_group){.title = "limits (pdkv's own)", .opts = rows, .nopts = n};
}
