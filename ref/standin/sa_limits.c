/* SPDX-License-Identifier: Apache-2.0 */
/* sa_limits: pdkv-standin's server limits (issues 11, 34) — the connection, idle and body flags of
 * the HTTP server and the V0 connector's side-channel limits, parsed apart from vLLM's flags. */
#include "sa.h"

#include <stdio.h>
#include <string.h>

#include "pd_util.h"

static const struct {
	const char *name;
	int64_t lo, hi;
} flags[] = {
    {"--max-connections", 1, 1000000},      {"--max-connections-per-client", 1, 1000000},
    {"--idle-timeout", 1, 86400},           {"--kv-zmq-max-msg-bytes", 64, 1ll << 30},
    {"--kv-insert-timeout-ms", 0, 3600000}, {"--kv-block-wait-timeout-ms", 0, 3600000},
    {"--max-body", 1024, 1ll << 34},        {"--max-body-in-flight", 1024, 1ll << 36},
};

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

bool sa_limits_is_flag(const char *name)
{
	if (!strcmp(name, "--kv-integrity-policy"))
		return true;
	for (size_t i = 0; i < PD_ARRAY_SIZE(flags); i++)
		if (!strcmp(name, flags[i].name))
			return true;
	return false;
}

int sa_limits_flag(const char *name, const char *val, struct sa_opts *o)
{
	if (!strcmp(name, "--kv-integrity-policy")) {
		static const char *const pol[] = {"off", "fail", "recompute"};
		for (int i = 0; i < 3; i++)
			if (!strcmp(val, pol[i])) {
				o->kv_integrity_policy = i;
				return 0;
			}
		fprintf(stderr,
		        "pdkv-standin: error: argument --kv-integrity-policy: invalid choice: '%s' "
		        "(choose from 'off', 'fail', 'recompute')\n",
		        val);
		return 2;
	}
	for (size_t i = 0; i < PD_ARRAY_SIZE(flags); i++) {
		int64_t v;
		if (strcmp(name, flags[i].name))
			continue;
		if (pd_parse_i64(val, &v) || v < flags[i].lo || v > flags[i].hi) {
			fprintf(
			    stderr,
			    "pdkv-standin: error: argument %s: expected a whole number %lld..%lld, "
			    "got '%s'\n",
			    name, (long long)flags[i].lo, (long long)flags[i].hi, val);
			return 2;
		}
		switch (i) {
		case 0:
			o->max_conns = (unsigned)v;
			break;
		case 1:
			o->max_conns_per_client = (unsigned)v;
			break;
		case 2:
			o->idle_timeout_s = (unsigned)v;
			break;
		case 3:
			o->kv_zmq_max_msg_bytes = v;
			break;
		case 5:
			o->kv_block_wait_ms = (int)v; /* 0 = fail at once when the pool is short */
			break;
		case 6:
			o->max_body = v;
			break;
		case 7:
			o->max_body_in_flight = v;
			break;
		case 4:
			/* 0 = wait until shutdown, as vLLM (kvc: < 0); kvc's 0 is its 5 s default
			 */
			o->kv_insert_timeout_ms = v == 0 ? -1 : (int)v;
			break;
		}
		return 0;
	}
	return 1;
}
