/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_v1: the V1 MooncakeConnector half of cfg_check — kv_connector_extra_config types, the
 * VLLM_MOONCAKE_* environment, and what changes per release (engine_id, kv_load_failure_policy,
 * the gen A request-id hazard, RDMA on this host). Release data comes from cfg_vllm's table. */
#include "cfg_internal.h"
#include "pd_util.h"

#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F_EXTRA "kv-transfer-config: kv_connector_extra_config"

/* Python int() of an env var, as vLLM reads VLLM_MOONCAKE_* (ValueError otherwise). */
static void env_int_check(struct cfg_report *r, const char *name, const char *val)
{
	int64_t v;
	bool huge;
	char *rp;

	if (!val || !cfg_py_int(val, &v, &huge))
		return;
	rp = cfg_py_repr(val);
	cfg_report_errf(r, "ValueError: invalid literal for int() with base 10: %s", rp ? rp : "");
	cfg_diag_add(&r->diags, CFG_ERROR, name,
	             "%s=%s is not an integer; vLLM reads it with int()", name, rp ? rp : "");
	free(rp);
}

static void extra_protocol(struct cfg_report *r, const cJSON *it, bool oot)
{
	if (!oot && cJSON_IsString(it)) {
		free(r->v1_protocol);
		r->v1_protocol = strdup(it->valuestring);
	}
	if (!cJSON_IsString(it))
		cfg_diag_add(&r->diags, CFG_ERROR, F_EXTRA,
		             "mooncake_protocol must be \"rdma\", \"tcp\" or \"nvlink_intra\" (a "
		             "string; default \"rdma\"), got a JSON %s",
		             cfg_py_type(it));
	else if (strcmp(it->valuestring, "rdma") && strcmp(it->valuestring, "tcp") &&
	         strcmp(it->valuestring, "nvlink_intra")) /* Mooncake's intra-node CUDA IPC */
		cfg_diag_add(
		    &r->diags, CFG_ERROR, F_EXTRA,
		    "mooncake_protocol must be \"rdma\", \"tcp\" or \"nvlink_intra\" (lower "
		    "case; default \"rdma\"), got \"%.64s\"",
		    it->valuestring);
	if (oot)
		cfg_diag_add(&r->diags, CFG_WARNING, F_EXTRA,
		             "the Mooncake out-of-tree connector reads VLLM_MOONCAKE_PROTOCOL, not "
		             "mooncake_protocol");
}

static void extra_device(struct cfg_report *r, const cJSON *it)
{
	enum cfg_gen g = r->gen;

	if (!cJSON_IsString(it)) {
		cfg_diag_add(
		    &r->diags, CFG_ERROR, F_EXTRA,
		    "device_name must be a string such as \"mlx5_0,mlx5_1\", got a JSON %s",
		    cfg_py_type(it));
		return;
	}
	if (strpbrk(it->valuestring, " \t"))
		cfg_diag_add(
		    &r->diags, CFG_WARNING, F_EXTRA,
		    "device_name \"%s\" contains whitespace; write the list without spaces",
		    it->valuestring);
	/* device_name is read from bn on (not in mooncake_connector.py up to 6f955986e, b2) */
	if (r->release_pinned && cfg_gen_is_v1(g) && !cfg_gen_has_bn(g) && *it->valuestring)
		cfg_diag_add(&r->diags, CFG_WARNING, F_EXTRA,
		             "device_name \"%s\" is not used by vLLM %s (gen %s initialises the "
		             "engine with device_name \"\"; only gen bn reads it)",
		             it->valuestring, r->release.version, cfg_gen_name(g));
}

/* bootstrap_server_address (host:port): gen B prefills register there and start no bootstrap
 * server of their own. vLLM validates it in get_mooncake_bootstrap_addr
 * (mooncake_connector.py @ 00f4240e) with the error text used below; only the prefill reads it. */
static void extra_boot_addr(struct cfg_report *r, const cJSON *it)
{
	const char *role = r->kt.kv_role ? r->kt.kv_role : "";
	char host[256];
	int port;

	if (r->release_pinned && !(r->release.feat & CFG_F_BOOT_ADDR)) {
		cfg_diag_add(
		    &r->diags, CFG_WARNING, F_EXTRA,
		    "bootstrap_server_address is not read by vLLM %s: its prefill starts "
		    "its own bootstrap server on VLLM_MOONCAKE_BOOTSTRAP_PORT and registers "
		    "there, whatever this key says",
		    r->release.version);
		return;
	}
	if (!cJSON_IsString(it) || pd_split_hostport(it->valuestring, host, sizeof(host), &port)) {
		if (strcmp(role, "kv_consumer"))
			cfg_report_errf(r,
			                "ValueError: bootstrap_server_address must specify a host "
			                "and port");
		cfg_diag_add(
		    &r->diags, strcmp(role, "kv_consumer") ? CFG_ERROR : CFG_WARNING, F_EXTRA,
		    "bootstrap_server_address must specify a host and port (\"host:port\", "
		    "e.g. \"10.0.0.5:8998\"), got %s%.64s%s",
		    cJSON_IsString(it) ? "\"" : "a JSON ",
		    cJSON_IsString(it) ? it->valuestring : cfg_py_type(it),
		    cJSON_IsString(it) ? "\"" : "");
		return;
	}
	if (!strcmp(role, "kv_consumer"))
		cfg_diag_add(&r->diags, CFG_INFO, F_EXTRA,
		             "bootstrap_server_address is read only by the prefill (kv_producer); "
		             "a decode learns the address from the router's kv_transfer_params");
	else
		cfg_diag_add(
		    &r->diags, CFG_INFO, F_EXTRA,
		    "bootstrap_server_address %s: this prefill starts no bootstrap server; "
		    "run one there (pdkv bootstrap) and point the router at it",
		    it->valuestring);
}

/* The keys the in-tree connector reads from kv_connector_extra_config, with their types. */
static void check_extra(struct cfg_report *r, bool oot)
{
	char *err = NULL;
	const char *x = r->kt.kv_connector_extra_config;
	cJSON *root = x ? cfg_pyjson_parse(x, strlen(x), &err) : NULL;

	for (const cJSON *it = root ? root->child : NULL; it; it = it->next) {
		if (!strcmp(it->string, "mooncake_protocol"))
			extra_protocol(r, it, oot);
		else if (!strcmp(it->string, "num_workers")) {
			if (!cJSON_IsNumber(it) || cfg_pyjson_is_float(it) || it->valuedouble < 1)
				cfg_diag_add(&r->diags, CFG_ERROR, F_EXTRA,
				             "num_workers must be a positive integer (the transfer "
				             "thread count, default 10)");
		} else if (!strcmp(it->string, "device_name"))
			extra_device(r, it);
		else if (!strcmp(it->string, "bootstrap_server_address"))
			extra_boot_addr(r, it);
		else
			cfg_diag_add(&r->diags, CFG_WARNING, F_EXTRA,
			             "key \"%.64s\" is not read by the Mooncake connector (known: "
			             "mooncake_protocol, num_workers, device_name, "
			             "bootstrap_server_address)",
			             it->string);
	}
	free(err);
	cJSON_Delete(root);
}

static void check_env(struct cfg_report *r, const struct cfg_check_opts *o, bool oot)
{
	const struct cfg_env *e = &o->env;

	if (!oot) {
		if (e->side_channel_port)
			cfg_diag_add(
			    &r->diags, CFG_WARNING, "VLLM_MOONCAKE_SIDE_CHANNEL_PORT",
			    "is read only by the Mooncake out-of-tree connector; the in-tree "
			    "one uses VLLM_MOONCAKE_BOOTSTRAP_PORT (default 8998)");
		if (e->sender_workers)
			cfg_diag_add(&r->diags, CFG_WARNING, "VLLM_MOONCAKE_SENDER_WORKERS",
			             "is not read by the in-tree connector; set "
			             "kv_connector_extra_config.num_workers");
		if (e->protocol)
			cfg_diag_add(&r->diags, CFG_WARNING, "VLLM_MOONCAKE_PROTOCOL",
			             "is not read by the in-tree connector; set "
			             "kv_connector_extra_config.mooncake_protocol");
		env_int_check(r, "VLLM_MOONCAKE_BOOTSTRAP_PORT", e->bootstrap_port);
	} else {
		if (e->bootstrap_port)
			cfg_diag_add(&r->diags, CFG_WARNING, "VLLM_MOONCAKE_BOOTSTRAP_PORT",
			             "is not read by the out-of-tree connector; it uses "
			             "VLLM_MOONCAKE_SIDE_CHANNEL_PORT (default 6557)");
		env_int_check(r, "VLLM_MOONCAKE_SIDE_CHANNEL_PORT", e->side_channel_port);
		env_int_check(r, "VLLM_MOONCAKE_SENDER_WORKERS", e->sender_workers);
	}
	env_int_check(r, "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT", e->abort_timeout);
}

static void note_side_channel(struct cfg_report *r, bool oot)
{
	if (!oot && cfg_gen_is_b(r->gen)) {
		cfg_diag_add(
		    &r->diags, CFG_INFO, NULL,
		    "vLLM %s (gen %s): the prefill's dp-rank-0 worker serves the HTTP "
		    "bootstrap server (/register, /query) on 0.0.0.0:"
		    "VLLM_MOONCAKE_BOOTSTRAP_PORT (8998); every prefill worker binds its "
		    "ZMQ ROUTER on a random port and registers it there; the router must "
		    "send a transfer_id to both instances (pdkv-proxy --contract mooncake)",
		    r->release.version, cfg_gen_name(r->gen));
		return;
	}
	if (!oot && r->release_pinned) {
		cfg_diag_add(&r->diags, CFG_INFO, NULL,
		             "vLLM %s (gen a): each prefill worker binds its ZMQ ROUTER at "
		             "VLLM_MOONCAKE_BOOTSTRAP_PORT (8998) + dp_rank*tp_size + tp_rank on "
		             "get_ip(); decode connects there with the remote_host/remote_port the "
		             "router copies from P's response into D's request (vLLM's toy proxy; "
		             "pdkv-proxy --contract toy)",
		             r->release.version);
		return;
	}
	cfg_diag_add(&r->diags, CFG_INFO, NULL,
	             "vLLM V1 %s connector: side-channel port = %s + dp_rank*tp_size + tp_rank on "
	             "the prefill host (gen A). vLLM >= 0.16 (gen B) instead serves an HTTP "
	             "bootstrap server on that port and uses random worker ports",
	             oot ? "Mooncake out-of-tree" : "in-tree",
	             oot ? "VLLM_MOONCAKE_SIDE_CHANNEL_PORT (6557)"
	                 : "VLLM_MOONCAKE_BOOTSTRAP_PORT (8998)");
}

static void note_engine_id(struct cfg_report *r)
{
	if (!r->kt.engine_id_generated)
		return;
	cfg_diag_add(&r->diags, CFG_INFO, "kv-transfer-config: engine_id",
	             "not given: vLLM sets engine_id to a fresh uuid4 at every start (pdkv drew "
	             "%s; your instance will draw another)%s",
	             r->kt.engine_id,
	             r->gen == CFG_GEN_A && r->release_pinned
	                 ? ""
	                 : ". Gen B registers it with the bootstrap server, so a restarted "
	                   "prefill has a new id; write \"engine_id\" to pin it");
}

/* kv_load_failure_policy given in the raw JSON (the parsed struct only holds the result). */
static bool policy_given(const char *json)
{
	char *err = NULL;
	cJSON *root = json ? cfg_pyjson_parse_jiter(json, strlen(json), &err) : NULL;
	bool given = cfg_pyjson_get(root, "kv_load_failure_policy") != NULL;

	free(err);
	cJSON_Delete(root);
	return given;
}

static void note_policy(struct cfg_report *r, const struct cfg_check_opts *o)
{
	const char *F = "kv-transfer-config: kv_load_failure_policy";
	const char *pol = r->kt.kv_load_failure_policy, *unc = r->release.uncertain;
	bool fail = pol && !strcmp(pol, "fail");

	if (o->kv_transfer && policy_given(o->kv_transfer))
		return;
	if (!r->release_pinned) {
		cfg_diag_add(
		    &r->diags, CFG_INFO, F,
		    "not given: the default depends on the release (\"recompute\" up to "
		    "0.16, \"fail\" from 0.17: vLLM PR #34896); pdkv assumed \"recompute\". "
		    "Pass --vllm-version X.Y to pin it");
		return;
	}
	cfg_diag_add(&r->diags, CFG_INFO, F, "not given: vLLM %s defaults to \"%s\": %s%s%s%s",
	             r->release.version, pol ? pol : "?",
	             fail ? "a failed KV load fails the request with an error finish reason"
	                  : "a failed KV load is silently recomputed on decode (right output, no "
	                    "reuse; only a reuse check such as pdkv's kv_reused notices)",
	             unc && strstr(unc, "policy") ? " (uncertain for this release: " : "",
	             unc && strstr(unc, "policy") ? unc : "",
	             unc && strstr(unc, "policy") ? ")" : "");
}

static bool env_true(const char *v)
{
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true"));
}

/* Gen A pairs P and D by the engine's request id (docs/wire-v1.md): with randomised ids P
 * never finds D's id and still answers trans_done. */
static void warn_reqid(struct cfg_report *r, const struct cfg_check_opts *o, bool oot)
{
	const char *F = "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION", *v = o->env.disable_reqid_random;

	if (oot || r->gen != CFG_GEN_A)
		return;
	if (!r->release_pinned) {
		cfg_diag_add(
		    &r->diags, CFG_INFO, F,
		    "gen A on vLLM 0.13 - 0.15 randomises request ids, so P and D stop "
		    "pairing (decode reads KV blocks nobody wrote); pass --vllm-version to "
		    "check this release");
		return;
	}
	if (!r->release.reqid_random)
		return;
	if (env_true(v)) {
		cfg_diag_add(
		    &r->diags, CFG_INFO, F,
		    "=%s: P and D keep the router's request id, so gen A pairs them as long "
		    "as both get the same X-Request-Id (the toy proxy sends one)",
		    v);
		return;
	}
	cfg_diag_add(&r->diags, CFG_WARNING, F,
	             "%s%s%s: vLLM %s appends a random suffix to every request id (vLLM PR "
	             "#27987) and gen A pairs P and D by that id, so P answers trans_done without "
	             "writing and decode runs on KV blocks nobody wrote (wrong output, no error). "
	             "Set VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1 on both instances (the switch "
	             "came with vLLM PR #34415; a release without it needs gen B, >= 0.16)",
	             v ? "is \"" : "is not set", v ? v : "", v ? "\"" : "", r->release.version);
}

static void advise_rdma(struct cfg_report *r, const struct cfg_check_opts *o)
{
	const char *dir = o->env.ib_sysfs ? o->env.ib_sysfs : "/sys/class/infiniband";
	const char *x = r->kt.kv_connector_extra_config;
	bool dflt =
	    cfg_v1_is_oot(&r->kt) ? !o->env.protocol : !x || !strstr(x, "\"mooncake_protocol\"");

	/* pd_dir_count(dir): the RDMA devices this host lists (what ibv_devices shows) */
	if (!r->v1_protocol || strcmp(r->v1_protocol, "rdma") || pd_dir_count(dir) > 0)
		return;
	cfg_diag_add(&r->diags, CFG_WARNING, F_EXTRA,
	             "mooncake_protocol is \"rdma\"%s but this host lists no RDMA device in %s. "
	             "An instance started here gets no NIC: depending on the Mooncake build the "
	             "engine fails at init or falls back to TCP, which cannot reach an RDMA peer. "
	             "If it runs here, write \"kv_connector_extra_config\": "
	             "{\"mooncake_protocol\": \"tcp\"}; if the config is for another host, run "
	             "ibv_devices there",
	             dflt ? " (the default)" : "", dir);
}

static void check_module_path(struct cfg_report *r)
{
	const char *m = r->kt.kv_connector_module_path, *c = r->kt.kv_connector;

	if (!m || !c)
		return;
	if (cfg_connector_registered(c, true))
		cfg_diag_add(&r->diags, CFG_WARNING, "kv-transfer-config: kv_connector_module_path",
		             "\"%s\" is not used: kv_connector \"%s\" is in vLLM's registry, which "
		             "the factory consults first%s",
		             m, c,
		             !strcmp(m, "mooncake.mooncake_connector_v1")
		                 ? "; for Mooncake's out-of-tree connector write \"kv_connector\": "
		                   "\"MooncakeConnectorV1\""
		                 : "");
	else if (!cfg_v1_is_oot(&r->kt))
		cfg_diag_add(&r->diags, CFG_INFO, "kv-transfer-config: kv_connector_module_path",
		             "vLLM imports class \"%s\" from module \"%s\" at engine start; pdkv "
		             "cannot check that module",
		             c, m);
}

void cfg_check_v1(struct cfg_report *r, const struct cfg_check_opts *o)
{
	bool oot = cfg_v1_is_oot(&r->kt);

	r->v1_protocol = strdup(oot && o->env.protocol ? o->env.protocol : "rdma");
	check_extra(r, oot);
	check_env(r, o, oot);
	check_module_path(r);
	note_side_channel(r, oot);
	note_engine_id(r);
	note_policy(r, o);
	warn_reqid(r, o, oot);
	advise_rdma(r, o);
}
