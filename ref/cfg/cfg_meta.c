/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_meta: mooncake.json's metadata_server / metadata_backend as the V0 adaptor turns them into
 * a transfer-engine connection string (docs/metadata.md), and what the engine does with it.
 */
#include "cfg_internal.h"
#include "cfg_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F_MS "mooncake.json: metadata_server"

void cfg_ascii_lower(char *dst, size_t n, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i < n - 1; i++)
		dst[i] = (char)((src[i] >= 'A' && src[i] <= 'Z') ? src[i] + 32 : src[i]);
	dst[i] = 0;
}

/* "P2PHANDSHAKE" through the V0 adaptor: it only knows "<scheme>://", so the bare word gets the
 * backend (or etcd) prefix. */
static void v0_p2p(struct cfg_mooncake *mc, struct cfg_diags *d)
{
	const char *ms = mc->metadata_server, *be = mc->metadata_backend;
	char lower[64] = "etcd";

	if (be)
		cfg_ascii_lower(lower, sizeof(lower), be);
	if (asprintf(&mc->conn_string, "%s://%s", lower, ms) < 0)
		mc->conn_string = NULL;
	cfg_diag_add(d, CFG_ERROR, F_MS,
	             "%s: metadata_server \"P2PHANDSHAKE\" does not reach the transfer engine "
	             "through the V0 adaptor: it becomes \"%s\" (an etcd server named "
	             "P2PHANDSHAKE), TE init fails and vLLM ignores the failure. Use an etcd, "
	             "redis or http metadata server with vLLM V0",
	             mc->path, mc->conn_string ? mc->conn_string : "etcd://P2PHANDSHAKE");
}

/* Sets mc->conn_string from metadata_server (+ metadata_backend). */
static void build_conn(struct cfg_mooncake *mc, struct cfg_diags *d)
{
	const char *ms = mc->metadata_server, *be = mc->metadata_backend;
	const char *sep = strstr(ms, "://");
	char lower[64] = "etcd";

	if (sep || strcmp(ms, CFG_META_P2P) == 0) {
		mc->conn_string = strdup(ms);
		if (be && sep)
			cfg_diag_add(
			    d, CFG_INFO, "mooncake.json: metadata_backend",
			    "%s: metadata_backend \"%s\" is ignored because metadata_server "
			    "\"%s\" carries a scheme (the prefix wins)",
			    mc->path, be, ms);
		return;
	}
	if (be)
		cfg_ascii_lower(lower, sizeof(lower), be);
	if (asprintf(&mc->conn_string, "%s://%s", lower, ms) < 0)
		mc->conn_string = NULL;
	if (be)
		cfg_diag_add(d, CFG_INFO, "mooncake.json: metadata_backend",
		             "%s: metadata_backend is deprecated; write \"metadata_server\": "
		             "\"%s\" and drop metadata_backend",
		             mc->path, mc->conn_string ? mc->conn_string : "");
}

static void check_etcd(const struct cfg_mooncake *mc, const char *rest, enum cfg_vllm vllm,
                       struct cfg_diags *d)
{
	const char *ms = mc->metadata_server;

	if (strchr(rest, ',') || strchr(rest, ';')) {
		if (vllm == CFG_VLLM_V0)
			cfg_diag_add(
			    d, CFG_WARNING, F_MS,
			    "%s: metadata_server \"%s\" is an etcd endpoint list; TE <= "
			    "0.3.3.post2 (the one vLLM V0 needs) passes it as ONE endpoint "
			    "and cannot connect. Give a single endpoint, e.g. \"etcd://%.*s\"",
			    mc->path, ms, (int)strcspn(rest, ",;"), rest);
		else
			cfg_diag_add(
			    d, CFG_INFO, F_MS,
			    "%s: etcd endpoint list; only newer TE releases split it on ','",
			    mc->path);
	} else if (!strchr(rest, ':')) {
		cfg_diag_add(d, CFG_WARNING, F_MS,
		             "%s: metadata_server \"%s\" has no port; write the etcd client port "
		             "explicitly, e.g. \"%s:2379\"",
		             mc->path, ms, ms);
	}
}

static void check_redis(const struct cfg_mooncake *mc, const char *rest, enum cfg_vllm vllm,
                        struct cfg_diags *d)
{
	const char *c = strrchr(rest, ':');

	if (!c || strchr(rest, ']') > c)
		cfg_diag_add(d, CFG_WARNING, F_MS,
		             "%s: metadata_server \"%s\" has no port; the transfer engine then "
		             "connects to port 12001 (not redis' 6379). Write \"%s:6379\"",
		             mc->path, mc->metadata_server, mc->conn_string);
	if (vllm == CFG_VLLM_V0)
		cfg_diag_add(d, CFG_WARNING, F_MS,
		             "%s: redis metadata needs a transfer engine built with USE_REDIS; the "
		             "stock mooncake-transfer-engine 0.3.3.post2 wheel is built without it "
		             "and aborts at init",
		             mc->path);
}

static void check_http(const struct cfg_mooncake *mc, const char *rest, struct cfg_diags *d)
{
	const char *slash = strchr(rest, '/');

	if (!slash || !slash[1])
		cfg_diag_add(d, CFG_WARNING, F_MS,
		             "%s: metadata_server \"%s\" has no path; the HTTP plugin uses the "
		             "whole string as base URL and the shipped servers serve /metadata. "
		             "Write \"%s%s/metadata\"",
		             mc->path, mc->metadata_server, mc->conn_string, slash ? "" : "");
}

/* adaptor initialize/initializeExt + TE parseConnectionString (docs/metadata.md). */
void cfg_mc_resolve_metadata(struct cfg_mooncake *mc, enum cfg_vllm vllm, struct cfg_diags *d)
{
	const char *ms = mc->metadata_server, *rest;
	size_t sl;

	if (!ms) {
		cfg_diag_add(
		    d, CFG_ERROR, F_MS,
		    "%s: metadata_server is missing; the adaptor receives None (a null "
		    "pointer) and the engine cannot start. Write e.g. \"metadata_server\": "
		    "\"etcd://192.168.0.139:2379\"",
		    mc->path);
		return;
	}
	if (!*ms)
		cfg_diag_add(
		    d, CFG_ERROR, F_MS,
		    "%s: metadata_server is empty; write e.g. \"etcd://192.168.0.139:2379\"",
		    mc->path);
	if (strcmp(ms, CFG_META_P2P) == 0 && vllm == CFG_VLLM_V0) {
		v0_p2p(mc, d);
		return;
	}
	build_conn(mc, d);
	if (!mc->conn_string || strcmp(mc->conn_string, CFG_META_P2P) == 0)
		return;
	if (!cfg_meta_scheme_known(mc->conn_string, &sl)) {
		cfg_diag_add(d, CFG_ERROR, F_MS,
		             "%s: metadata_server \"%s\": scheme \"%.*s\" has no metadata plugin; "
		             "the transfer engine aborts the whole process at init (LOG(FATAL) "
		             "\"Unable to find metadata storage plugin %.*s\"; newer engines add "
		             "\"with conn string: ...\"), so vLLM dies without a Python exception. "
		             "Mooncake knows etcd://h:p (or bare h:p), redis://h:p, "
		             "http(s)://h:p/path and P2PHANDSHAKE",
		             mc->path, ms, (int)sl, mc->conn_string, (int)sl, mc->conn_string);
		return;
	}
	rest = strstr(mc->conn_string, "://") + 3;
	if (!*rest) {
		cfg_diag_add(d, CFG_ERROR, F_MS, "%s: metadata_server \"%s\" names no server",
		             mc->path, ms);
		return;
	}
	if (!strncmp(mc->conn_string, "etcd", 4))
		check_etcd(mc, rest, vllm, d);
	else if (!strncmp(mc->conn_string, "redis", 5))
		check_redis(mc, rest, vllm, d);
	else
		check_http(mc, rest, d);
}
