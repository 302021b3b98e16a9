/* cfg_check: one verdict for a whole deployment — the exception vLLM would raise first (in
 * vLLM's own order: argparse, connector factory, mooncake.json, pipe, ZMQ), pdkv's own
 * diagnostics, the port plan and its collisions (the "≥ 50 apart" folklore vs the real rule). */
#include "cfg_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void first_err(struct cfg_report *r, char **e)
{
	if (!*e)
		return;
	if (!r->vllm_error)
		r->vllm_error = *e;
	else
		free(*e);
	*e = NULL;
}

static void first_errf(struct cfg_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void first_errf(struct cfg_report *r, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	first_err(r, &s);
}

static const char *const v0_connectors[] = {"PyNcclConnector", "MooncakeConnector",
                                            "LMCacheConnector", "MooncakeStoreConnector", NULL};
static const char *const v1_connectors[] = {
    "MooncakeConnector",  "NixlConnector",  "SharedStorageConnector", "P2pNcclConnector",
    "LMCacheConnectorV1", "MultiConnector", "OffloadingConnector",    NULL};

static bool listed(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return true;
	return false;
}

/* Python int() of an env var, as vLLM reads VLLM_MOONCAKE_* (ValueError otherwise). */
static void env_int_check(struct cfg_report *r, const char *name, const char *val)
{
	int64_t v;
	bool huge;

	if (!val || !cfg_py_int(val, &v, &huge))
		return;
	char *rp = cfg_py_repr(val);
	first_errf(r, "ValueError: invalid literal for int() with base 10: %s", rp ? rp : "");
	cfg_diag_add(&r->diags, CFG_ERROR, name,
	             "%s=%s is not an integer; vLLM reads it with int()", name, rp ? rp : "");
	free(rp);
}

static void check_connector(struct cfg_report *r, const struct cfg_check_opts *o, bool *reads_mc)
{
	const struct cfg_kv_transfer *kt = &r->kt;
	const char *F = "kv-transfer-config: kv_connector";
	bool v1 = o->vllm == CFG_VLLM_V1;

	*reads_mc = !v1;
	if (!r->kt_given || !r->kt_ok)
		return;
	if (!kt->kv_connector) {
		cfg_diag_add(
		    &r->diags, CFG_ERROR, F,
		    "kv_connector is not set: vLLM runs this instance without KV transfer. "
		    "Add \"kv_connector\": \"MooncakeConnector\"");
		*reads_mc = false;
		return;
	}
	if (!v1) {
		if (!listed(v0_connectors, kt->kv_connector)) {
			first_errf(r, "ValueError: Unsupported connector type: %s",
			           kt->kv_connector);
			cfg_diag_add(&r->diags, CFG_ERROR, F,
			             "kv_connector \"%s\" is not registered in vLLM V0 (checked at "
			             "engine start); write \"MooncakeConnector\" (case-sensitive)",
			             kt->kv_connector);
			*reads_mc = false;
			return;
		}
		if (strcmp(kt->kv_connector, "MooncakeConnector")) {
			cfg_diag_add(&r->diags, CFG_INFO, F,
			             "kv_connector \"%s\" does not use mooncake.json; only "
			             "MooncakeConnector is checked in depth",
			             kt->kv_connector);
			*reads_mc = false;
		}
		if (!kt->kv_rank_set)
			cfg_diag_add(
			    &r->diags, CFG_WARNING, "kv-transfer-config: kv_rank",
			    "kv_rank is not set: the Mooncake pipe treats it as the decode end "
			    "(anything but 0). Write \"kv_rank\": 0 on prefill, 1 on decode");
		else if (kt->is_producer && !kt->is_consumer && kt->kv_rank != 0)
			cfg_diag_add(
			    &r->diags, CFG_WARNING, "kv-transfer-config: kv_rank",
			    "kv_producer with kv_rank %lld: this instance takes the decode end "
			    "of the pipe (kv_rank 0 = prefill end). If the decode instance also "
			    "follows the guide (kv_rank 1) both bind the same ports; write "
			    "\"kv_rank\": 0",
			    (long long)kt->kv_rank);
		else if (kt->is_consumer && !kt->is_producer && kt->kv_rank == 0)
			cfg_diag_add(
			    &r->diags, CFG_WARNING, "kv-transfer-config: kv_rank",
			    "kv_consumer with kv_rank 0 takes the prefill end of the pipe; with "
			    "a prefill instance at kv_rank 0 too, both bind the prefill ports "
			    "(Address already in use on one host, a hang on two). Write "
			    "\"kv_rank\": 1");
		if (kt->kv_buffer_size <= 0)
			cfg_diag_add(
			    &r->diags, CFG_ERROR, "kv-transfer-config: kv_buffer_size",
			    "kv_buffer_size %g: no KV item ever fits, the producer's insert "
			    "waits forever (vLLM >= 0.7.3). Use e.g. 2e9",
			    kt->kv_buffer_size);
		if (kt->kv_parallel_size != 2 && kt->kv_parallel_size != 1)
			cfg_diag_add(
			    &r->diags, CFG_INFO, "kv-transfer-config: kv_parallel_size",
			    "kv_parallel_size %lld is not used by MooncakeConnector (the guide "
			    "writes 2)",
			    (long long)kt->kv_parallel_size);
	} else {
		if (!kt->kv_connector_module_path && !listed(v1_connectors, kt->kv_connector)) {
			first_errf(r, "ValueError: Unsupported connector type: %s",
			           kt->kv_connector);
			cfg_diag_add(
			    &r->diags, CFG_ERROR, F,
			    "kv_connector \"%s\" is not in vLLM V1's registry and no "
			    "kv_connector_module_path is given; write \"MooncakeConnector\"",
			    kt->kv_connector);
			return;
		}
		if (kt->kv_rank_set || kt->kv_parallel_size != 1 || kt->kv_buffer_size != 1e9)
			cfg_diag_add(
			    &r->diags, CFG_INFO, "kv-transfer-config",
			    "kv_rank / kv_parallel_size / kv_buffer_size are V0 fields; the "
			    "V1 MooncakeConnector ignores them");
	}
}

static void check_v1_extra(struct cfg_report *r, const struct cfg_check_opts *o)
{
	char *err = NULL;
	const char *x = r->kt.kv_connector_extra_config;
	cJSON *root = x ? cfg_pyjson_parse(x, strlen(x), &err) : NULL;
	const cJSON *it;
	const char *F = "kv-transfer-config: kv_connector_extra_config";
	bool oot = cfg_v1_is_oot(&r->kt);

	r->v1_protocol = strdup(oot && o->env.protocol ? o->env.protocol : "rdma");
	for (it = root ? root->child : NULL; it; it = it->next) {
		if (!strcmp(it->string, "mooncake_protocol")) {
			if (!oot && cJSON_IsString(it)) {
				free(r->v1_protocol);
				r->v1_protocol = strdup(it->valuestring);
			}
			if (!cJSON_IsString(it) ||
			    (strcmp(it->valuestring, "rdma") && strcmp(it->valuestring, "tcp")))
				cfg_diag_add(&r->diags, CFG_ERROR, F,
				             "mooncake_protocol must be \"rdma\" or \"tcp\"");
			if (oot)
				cfg_diag_add(&r->diags, CFG_WARNING, F,
				             "the Mooncake out-of-tree connector reads "
				             "VLLM_MOONCAKE_PROTOCOL, not mooncake_protocol");
		} else if (!strcmp(it->string, "num_workers")) {
			if (!cJSON_IsNumber(it) || cfg_pyjson_is_float(it) || it->valuedouble < 1)
				cfg_diag_add(&r->diags, CFG_ERROR, F,
				             "num_workers must be a positive integer (default 10)");
		} else if (!strcmp(it->string, "device_name")) {
			if (!cJSON_IsString(it))
				cfg_diag_add(
				    &r->diags, CFG_ERROR, F,
				    "device_name must be a string such as \"mlx5_0,mlx5_1\"");
			else if (strpbrk(it->valuestring, " \t"))
				cfg_diag_add(
				    &r->diags, CFG_WARNING, F,
				    "device_name \"%s\" contains whitespace; write the list "
				    "without spaces",
				    it->valuestring);
		} else {
			cfg_diag_add(&r->diags, CFG_WARNING, F,
			             "key \"%.64s\" is not read by the Mooncake connector (known: "
			             "mooncake_protocol, num_workers, device_name)",
			             it->string);
		}
	}
	free(err);
	cJSON_Delete(root);
	if (!oot) {
		if (o->env.side_channel_port)
			cfg_diag_add(
			    &r->diags, CFG_WARNING, "VLLM_MOONCAKE_SIDE_CHANNEL_PORT",
			    "is read only by the Mooncake out-of-tree connector; the in-tree "
			    "one uses VLLM_MOONCAKE_BOOTSTRAP_PORT (default 8998)");
		if (o->env.sender_workers)
			cfg_diag_add(&r->diags, CFG_WARNING, "VLLM_MOONCAKE_SENDER_WORKERS",
			             "is not read by the in-tree connector; set "
			             "kv_connector_extra_config.num_workers");
		if (o->env.protocol)
			cfg_diag_add(&r->diags, CFG_WARNING, "VLLM_MOONCAKE_PROTOCOL",
			             "is not read by the in-tree connector; set "
			             "kv_connector_extra_config.mooncake_protocol");
		env_int_check(r, "VLLM_MOONCAKE_BOOTSTRAP_PORT", o->env.bootstrap_port);
	} else {
		if (o->env.bootstrap_port)
			cfg_diag_add(&r->diags, CFG_WARNING, "VLLM_MOONCAKE_BOOTSTRAP_PORT",
			             "is not read by the out-of-tree connector; it uses "
			             "VLLM_MOONCAKE_SIDE_CHANNEL_PORT (default 6557)");
		env_int_check(r, "VLLM_MOONCAKE_SIDE_CHANNEL_PORT", o->env.side_channel_port);
		env_int_check(r, "VLLM_MOONCAKE_SENDER_WORKERS", o->env.sender_workers);
	}
	env_int_check(r, "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT", o->env.abort_timeout);
	cfg_diag_add(&r->diags, CFG_INFO, NULL,
	             "vLLM V1 %s connector: side-channel port = %s + dp_rank*tp_size + tp_rank on "
	             "the prefill host (gen A). vLLM >= 0.16 (gen B) instead serves an HTTP "
	             "bootstrap server on that port and uses random worker ports",
	             oot ? "Mooncake out-of-tree" : "in-tree",
	             oot ? "VLLM_MOONCAKE_SIDE_CHANNEL_PORT (6557)"
	                 : "VLLM_MOONCAKE_BOOTSTRAP_PORT (8998)");
}

static void check_mc_env(struct cfg_report *r, const struct cfg_check_opts *o)
{
	const struct cfg_env *e = &o->env;
	bool v0 = o->vllm == CFG_VLLM_V0;
	int lo, hi;

	if (e->legacy_rpc)
		cfg_diag_add(&r->diags, CFG_INFO, "MC_LEGACY_RPC_PORT_BINDING",
		             "set: the transfer engine binds the port inside its segment name (the "
		             "URL port + rank) and, for tcp, that port + 1");
	if (e->tcp_bind_address)
		cfg_diag_add(&r->diags, CFG_INFO, "MC_TCP_BIND_ADDRESS",
		             "the engine publishes %s as its RPC address", e->tcp_bind_address);
	if (e->handshake_port)
		cfg_diag_add(&r->diags, CFG_INFO, "MC_HANDSHAKE_PORT",
		             "%s is used only for segment names without a port", e->handshake_port);
	if (e->cluster_id)
		cfg_diag_add(
		    &r->diags, v0 ? CFG_WARNING : CFG_INFO, "MC_METADATA_CLUSTER_ID",
		    v0 ? "ignored by TE <= 0.3.3.post2 (vLLM V0's adaptor era); it needs TE "
		         ">= 0.3.7.post1"
		       : "metadata keys get the prefix mooncake/%s/; both sides need the same "
		         "value",
		    e->cluster_id);
	if (e->min_rpc || e->max_rpc || e->min_prc || e->max_prc) {
		if (v0) {
			cfg_diag_add(
			    &r->diags, CFG_WARNING, "MC_MIN_RPC_PORT",
			    "the RPC port range variables need TE >= 0.3.7 (PRC spelling) / "
			    ">= 0.3.11 (RPC spelling); vLLM V0's TE <= 0.3.3.post2 always "
			    "picks from [15000,17000]");
		} else {
			cfg_te_rpc_range(e, o->vllm, &lo, &hi);
			if (lo >= hi)
				cfg_diag_add(
				    &r->diags, CFG_ERROR, "MC_MIN_RPC_PORT",
				    "RPC port range [%d,%d] is empty; MC_MIN_RPC_PORT must be "
				    "below MC_MAX_RPC_PORT",
				    lo, hi);
			if ((e->min_rpc && e->min_prc && strcmp(e->min_rpc, e->min_prc)) ||
			    (e->max_rpc && e->max_prc && strcmp(e->max_rpc, e->max_prc)))
				cfg_diag_add(
				    &r->diags, CFG_WARNING, "MC_MIN_PRC_PORT",
				    "both MC_*_RPC_PORT and MC_*_PRC_PORT are set to different "
				    "values; which one wins depends on the TE version");
		}
	}
	if (v0 && (e->bootstrap_port || e->side_channel_port || e->sender_workers || e->protocol))
		cfg_diag_add(&r->diags, CFG_INFO, "VLLM_MOONCAKE_*",
		             "VLLM_MOONCAKE_* variables are read only by the V1 connectors");
}

static void set_defaults(struct cfg_check_opts *o, const struct cfg_check_opts *in)
{
	*o = *in;
	if (o->tp < 1)
		o->tp = 1;
	if (o->dp < 1)
		o->dp = 1;
	if (!o->prefill_http_port)
		o->prefill_http_port = 8100;
	if (!o->decode_http_port)
		o->decode_http_port = 8200;
	if (!o->proxy_port)
		o->proxy_port = 8000;
}

int cfg_check(const struct cfg_check_opts *in, struct cfg_report *r)
{
	struct cfg_check_opts o;
	struct cfg_diags tmp = {0};
	char *e = NULL;
	bool reads_mc = true;
	const char *path;

	memset(r, 0, sizeof(*r));
	set_defaults(&o, in);
	r->vllm = o.vllm;
	/* 1. argparse: --kv-transfer-config */
	if (o.kv_transfer) {
		r->kt_given = true;
		r->kt_ok = cfg_kv_transfer_parse(o.kv_transfer, o.vllm, &r->kt, &r->diags, &e) == 0;
		first_err(r, &e);
	} else {
		cfg_kv_transfer_parse("{}", o.vllm, &r->kt, &tmp, NULL);
		cfg_diags_free(&tmp);
		if (o.vllm == CFG_VLLM_V1)
			cfg_diag_add(
			    &r->diags, CFG_INFO, "kv-transfer-config",
			    "not given; planning the V1 MooncakeConnector with its defaults");
	}
	/* 2. connector factory, env */
	check_connector(r, &o, &reads_mc);
	if (o.vllm == CFG_VLLM_V1 && (!r->kt_given || r->kt_ok))
		check_v1_extra(r, &o);
	check_mc_env(r, &o);
	/* 3. mooncake.json (V0: SimpleConnector pre-check, from_file, MooncakePipe) */
	path = o.mooncake_path ? o.mooncake_path : o.env.mooncake_config_path;
	if (o.vllm == CFG_VLLM_V0 && reads_mc) {
		r->mc_ok = cfg_mooncake_load_ex(path, !o.mooncake_path, o.vllm, &r->mc, &r->diags,
		                                &e) == 0;
		first_err(r, &e);
	} else if (o.mooncake_path) {
		r->mc_ok = cfg_mooncake_load_ex(path, false, o.vllm, &r->mc, &r->diags, &e) == 0;
		free(e);
		e = NULL;
	}
	/* 4. ports, ZMQ, collisions */
	cfg_check_ports(r, &o);
	r->vllm_accepted = r->vllm_error == NULL;
	r->ok =
	    r->vllm_accepted && cfg_diags_count(&r->diags, CFG_ERROR) == 0 && r->nconflicts == 0;
	return r->ok ? 0 : 1;
}

void cfg_report_free(struct cfg_report *r)
{
	if (!r)
		return;
	free(r->vllm_error);
	cfg_mooncake_free(&r->mc);
	cfg_kv_transfer_free(&r->kt);
	free(r->eff_prefill_url);
	free(r->eff_decode_url);
	free(r->v1_protocol);
	free(r->ports);
	cfg_conflicts_free(r->conflicts, r->nconflicts);
	cfg_diags_free(&r->diags);
	memset(r, 0, sizeof(*r));
}
