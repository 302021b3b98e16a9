/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_check: one verdict for a whole deployment — the exception vLLM would raise first (in
 * vLLM's own order: argparse, connector factory, mooncake.json, pipe, ZMQ), pdkv's own
 * diagnostics, the port plan and its collisions (the "≥ 50 apart" folklore vs the real rule). */
#include "cfg_internal.h"
#include "cfg_names.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		if (!cfg_connector_registered(kt->kv_connector, false)) {
			cfg_report_errf(r, "ValueError: Unsupported connector type: %s",
			                kt->kv_connector);
			cfg_diag_add(&r->diags, CFG_ERROR, F,
			             "kv_connector \"%s\" is not registered in vLLM V0 (checked at "
			             "engine start); write \"MooncakeConnector\" (case-sensitive)",
			             kt->kv_connector);
			*reads_mc = false;
			return;
		}
		if (strcmp(kt->kv_connector, CFG_CONNECTOR_MOONCAKE)) {
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
		if (!kt->kv_connector_module_path &&
		    !cfg_connector_registered(kt->kv_connector, true)) {
			cfg_report_errf(r, "ValueError: Unsupported connector type: %s",
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

/* --vllm-version / --v1-shape through cfg_vllm's table: V0 or V1, the generation, the defaults
 * that moved. Without either, --vllm v1 plans gen A with the generic V1 defaults. */
static int resolve_release(struct cfg_report *r, struct cfg_check_opts *o)
{
	const char *ver = o->vllm_version;
	char err[512];
	enum cfg_gen shape;

	r->gen = o->vllm == CFG_VLLM_V1 ? CFG_GEN_A : CFG_GEN_V0;
	if (!ver && !o->v1_shape)
		return 0;
	if (!ver)
		ver = cfg_vllm_newest;
	if (cfg_vllm_lookup(ver, &r->release, err, sizeof(err))) {
		cfg_diag_add(&r->diags, CFG_ERROR, "--vllm-version", "%s", err);
		return -1;
	}
	if (o->v1_shape) {
		if (cfg_gen_parse(o->v1_shape, &shape) || !cfg_gen_is_b(shape) ||
		    !cfg_gen_is_b(r->release.gen)) {
			cfg_diag_add(
			    &r->diags, CFG_ERROR, "--v1-shape",
			    "--v1-shape %s: expected b0, b1, b2, bn or bl, for a gen B release (>= "
			    "0.16); vLLM %s is gen %s",
			    o->v1_shape, ver, cfg_gen_name(r->release.gen));
			return -1;
		}
		r->release.gen = shape;
	}
	r->release_pinned = true;
	r->gen = r->release.gen;
	o->vllm = cfg_gen_is_v1(r->gen) ? CFG_VLLM_V1 : CFG_VLLM_V0;
	return 0;
}

static int kv_parse(struct cfg_report *r, const char *json, enum cfg_vllm vllm, struct cfg_diags *d,
                    char **e)
{
	if (r->release_pinned)
		return cfg_kv_transfer_parse_release(json, &r->release, &r->kt, d, e);
	return cfg_kv_transfer_parse(json, vllm, &r->kt, d, e);
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
	resolve_release(r, &o);
	r->vllm = o.vllm;
	/* 1. argparse: --kv-transfer-config */
	if (o.kv_transfer) {
		r->kt_given = true;
		r->kt_ok = kv_parse(r, o.kv_transfer, o.vllm, &r->diags, &e) == 0;
		cfg_report_take_err(r, &e);
	} else {
		kv_parse(r, "{}", o.vllm, &tmp, NULL);
		cfg_diags_free(&tmp);
		if (o.vllm == CFG_VLLM_V1)
			cfg_diag_add(
			    &r->diags, CFG_INFO, "kv-transfer-config",
			    "not given; planning the V1 MooncakeConnector with its defaults");
	}
	/* 2. connector factory, env */
	check_connector(r, &o, &reads_mc);
	if (o.vllm == CFG_VLLM_V1 && (!r->kt_given || r->kt_ok))
		cfg_check_v1(r, &o);
	check_mc_env(r, &o);
	/* 3. mooncake.json (V0: SimpleConnector pre-check, from_file, MooncakePipe) */
	path = o.mooncake_path ? o.mooncake_path : o.env.mooncake_config_path;
	if (o.vllm == CFG_VLLM_V0 && reads_mc) {
		r->mc_ok = cfg_mooncake_load_ex(path, !o.mooncake_path, o.vllm, &r->mc, &r->diags,
		                                &e) == 0;
		cfg_report_take_err(r, &e);
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
