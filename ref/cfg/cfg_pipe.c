/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_pipe: the V0 MooncakePipe's names and ports for one TP rank (docs/vllm-v0.md):
 * url.split(':'), the +100 rule by string compare, TE segment names and the ZMQ B+9+2r/B+10+2r. */
#include "cfg_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pipe_url(const char *key, const char *url, const char *type, char **host, char **port,
                    int64_t *base, struct cfg_diags *d)
{
	char field[64];
	bool huge = false;

	snprintf(field, sizeof(field), "mooncake.json: %s", key);
	if (!url && *type && strcmp(type, "absent") && strcmp(type, "NoneType"))
		return -EINVAL; /* a wrong JSON type, reported by cfg_mooncake_load */
	if (!url) {
		cfg_diag_add(
		    d, CFG_ERROR, field,
		    "%s is missing or null; vLLM fails with AttributeError: 'NoneType' object "
		    "has no attribute 'split'. Write \"%s\": \"<ip>:<port>\", e.g. "
		    "\"192.168.0.137:13003\"",
		    key, key);
		return -EINVAL;
	}
	if (cfg_py_split2(url, ':', host, port)) {
		size_t n = cfg_py_split_count(url, ':');
		cfg_diag_add(
		    d, CFG_ERROR, field,
		    "%s \"%s\" splits on ':' into %zu piece%s, vLLM needs exactly host:port "
		    "(IPv6 literals and schemes are not supported); write e.g. "
		    "\"192.168.0.137:13003\"",
		    key, url, n, n == 1 ? "" : "s");
		return -EINVAL;
	}
	if (cfg_py_int(*port, base, &huge) || huge || *base < -1000000 || *base > 1000000) {
		cfg_diag_add(d, CFG_ERROR, field,
		             "%s \"%s\": port \"%s\" is not a usable integer; write a port number "
		             "1..65525 (e.g. 13003)",
		             key, url, *port);
		free(*host);
		free(*port);
		*host = *port = NULL;
		return -EINVAL;
	}
	return 0;
}

int cfg_v0_pipe(const struct cfg_mooncake *mc, const struct cfg_kv_transfer *kt, int local_rank,
                struct cfg_v0_pipe *out, struct cfg_diags *d)
{
	char *hp = NULL, *pp = NULL, *hd = NULL, *pd = NULL;
	int64_t bp = 0, bd = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!mc || local_rank < 0 || local_rank > 4096)
		return -EINVAL;
	ret = pipe_url("prefill_url", mc->prefill_url, mc->types[CFG_MC_PREFILL_URL], &hp, &pp, &bp,
	               d);
	if (ret)
		goto out;
	ret =
	    pipe_url("decode_url", mc->decode_url, mc->types[CFG_MC_DECODE_URL], &hd, &pd, &bd, d);
	if (ret)
		goto out;
	if (strlen(hp) >= sizeof(out->own_host) || strlen(hd) >= sizeof(out->own_host)) {
		cfg_diag_add(d, CFG_ERROR, "mooncake.json: prefill_url",
		             "host name longer than %zu characters", sizeof(out->own_host) - 1);
		ret = -ENAMETOOLONG;
		goto out;
	}
	/* vLLM compares the strings, not the addresses: "localhost" vs "127.0.0.1" or "13003" vs
	 * "013003" do not trigger the shift. */
	if (strcmp(hp, hd) == 0 && strcmp(pp, pd) == 0)
		bd += 100;
	/* kv_rank 0 is the prefill end; anything else (None included) is the decode end. */
	out->prefill_end = kt && kt->kv_rank_set && kt->kv_rank == 0;
	snprintf(out->own_host, sizeof(out->own_host), "%s", out->prefill_end ? hp : hd);
	snprintf(out->remote_host, sizeof(out->remote_host), "%s", out->prefill_end ? hd : hp);
	out->own_base = (int)(out->prefill_end ? bp : bd);
	out->remote_base = (int)(out->prefill_end ? bd : bp);
	snprintf(out->own_url, sizeof(out->own_url), "%s:%d", out->own_host,
	         out->own_base + local_rank);
	snprintf(out->remote_url, sizeof(out->remote_url), "%s:%d", out->remote_host,
	         out->remote_base + local_rank);
	out->bind_data_port = out->own_base + 9 + 2 * local_rank;
	out->bind_ack_port = out->own_base + 10 + 2 * local_rank;
	out->connect_data_port = out->remote_base + 9 + 2 * local_rank;
	out->connect_ack_port = out->remote_base + 10 + 2 * local_rank;
	ret = 0;
out:
	free(hp);
	free(pp);
	free(hd);
	free(pd);
	return ret;
}
