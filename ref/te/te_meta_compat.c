/* SPDX-License-Identifier: Apache-2.0 */
/* te_meta_compat: which Mooncake release's bytes pdkv writes where releases differ, from
 * PDKV_MOONCAKE_VERSION ("0.3.6", "v0.3.12.post1"); unset = the newest release pdkv knows. */
#include "te_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "pd_env.h"
#include "pd_log.h"

int te_compat_parse(const char *s)
{
	unsigned a, b, c;
	int n = 0;

	if (!s || !*s)
		return 0;
	if (*s == 'v' || *s == 'V')
		s++;
	if (sscanf(s, "%u.%u.%u%n", &a, &b, &c, &n) != 3 || a > 99 || b > 99 || c > 99 ||
	    (s[n] && s[n] != '.' && s[n] != '-' && s[n] != '+'))
		return -1;
	return (int)(a * 10000 + b * 100 + c);
}

/* read at each use (a handful per descriptor write), so a test can switch releases; unset or
 * unparsable = TE_COMPAT_NEWEST */
int te_compat_version(void)
{
	static atomic_bool warned;
	const char *e = pd_env_str("PDKV_MOONCAKE_VERSION");
	int v = te_compat_parse(e);

	if (v < 0 && !atomic_exchange(&warned, true))
		pd_warn("PDKV_MOONCAKE_VERSION=\"%s\": expected a Mooncake release such as 0.3.6 "
		        "or v0.3.12.post1; using the newest pdkv knows (0.3.12.post1)",
		        e);
	return v <= 0 ? TE_COMPAT_NEWEST : v;
}

bool te_compat_http_newline(void)
{
	int v = te_compat_version();
	return v < 306; /* Mooncake's HTTP store dropped the "\n" in 0.3.6 (PR #815) */
}

bool te_compat_rdma_tcp_fields(void)
{
	int v = te_compat_version();
	return v >= 312; /* tcp_proto_version exists from 0.3.12 on */
}

bool te_compat_rdma_hs_current(void)
{
	int v = te_compat_version();
	return v >= 311; /* local_gid/local_lid from 0.3.11, ready_ack 0.3.12 */
}

bool te_compat_metadata_version(void)
{
	int v = te_compat_version();
	/* Mooncake PR #3837 (merged 2026-09-02, after v0.3.12.post1): taken to ship in 0.3.13.
	 * Unset = the newest release (0.3.12.post1), which writes none: no release carries it yet,
	 * and its readers take an absent version as the legacy 0 (what its own P2P handshake
	 * sends) */
	return v >= 313;
}
