/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_model: pdkv's model of each vLLM generation as data — the tables `pdkv vllm-drift` compares
 * a vLLM tree with, and their JSON export (`pdkv vllm-drift --model`). */
#include "cfg_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Gen A, MooncakeAgentMetadata (decode -> prefill, all required): the single-file
 * v1/mooncake_connector.py of vLLM PR #24718; docs/wire-v1.md. */
static const struct cfg_model_field f_agent[] = {
    {"remote_hostname", "str", NULL, 0},       {"remote_port", "int", NULL, 0},
    {"request_ids", "list[ReqId]", NULL, 0},   {"kv_caches_base_addr", "list[int]", NULL, 0},
    {"block_ids", "list[list[int]]", NULL, 0},
};
/* Gen B0: mooncake/mooncake_connector.py @ 5c512330429931f2e70242f3fcb2cd3a11965da9. */
static const struct cfg_model_field f_xfer_b0[] = {
    {"remote_hostname", "str", NULL, 0},
    {"remote_port", "int", NULL, 0},
    {"remote_tp_size", "int", NULL, 0},
    {"remote_tp_rank", "int", NULL, 0},
    {"req_blocks", "dict[ReqId, tuple[TransferId, list[int]]]", NULL, 0},
    {"kv_caches_base_addr", "list[int]", NULL, 0},
};
/* Gen B1: the same file @ b745e8b5d (vLLM #36869, heterogeneous TP) adds block_lens; gen B2 @
 * 4d51588e2 (#40860, DeepSeek V4) turns req_blocks' list into one list per KV-cache group. */
static const struct cfg_model_field f_xfer_b1[] = {
    {"remote_hostname", "str", NULL, 0},
    {"remote_port", "int", NULL, 0},
    {"remote_tp_size", "int", NULL, 0},
    {"remote_tp_rank", "int", NULL, 0},
    {"req_blocks", "dict[ReqId, tuple[TransferId, list[int]]]", NULL, 0},
    {"kv_caches_base_addr", "list[int]", NULL, 0},
    {"block_lens", "list[int]", NULL, 0},
};
static const struct cfg_model_field f_xfer_b2[] = {
    {"remote_hostname", "str", NULL, 0},
    {"remote_port", "int", NULL, 0},
    {"remote_tp_size", "int", NULL, 0},
    {"remote_tp_rank", "int", NULL, 0},
    {"req_blocks", "dict[ReqId, tuple[TransferId, list[list[int]]]]", NULL, 0},
    {"kv_caches_base_addr", "list[int]", NULL, 0},
    {"block_lens", "list[int]", NULL, 0},
};
/* Gen BN: per-group block lists, block_lens, kv_block_lens (docs/wire-v1.md). Gen BL: the same
 * file @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1 — registered_layer_* (#44528),
 * remote_pp_size (#56033), prefix_replay_* (DeepSeek-V4.1 prefill-side SWA replay). */
static const struct cfg_model_field f_xfer_bn[] = {
    {"remote_hostname", "str", NULL, 0},
    {"remote_port", "int", NULL, 0},
    {"remote_tp_size", "int", NULL, 0},
    {"remote_tp_rank", "int", NULL, 0},
    {"req_blocks", "dict[ReqId, tuple[TransferId, list[list[int]]]]", NULL, 0},
    {"kv_caches_base_addr", "list[int]", NULL, 0},
    {"block_lens", "list[int]", NULL, 0},
    {"kv_block_lens", "list[int]", NULL, 0},
};
static const struct cfg_model_field f_xfer_bl[] = {
    {"remote_hostname", "str", NULL, 0},
    {"remote_port", "int", NULL, 0},
    {"remote_tp_size", "int", NULL, 0},
    {"remote_tp_rank", "int", NULL, 0},
    {"req_blocks", "dict[ReqId, tuple[TransferId, list[list[int]]]]", NULL, 0},
    {"kv_caches_base_addr", "list[int]", NULL, 0},
    {"block_lens", "list[int]", NULL, 0},
    {"kv_block_lens", "list[int]", NULL, 0},
    {"registered_layer_names", "list[str]", "[]", 0},
    {"registered_layer_indices", "list[int]", "[]", 0},
    {"registered_group_indices", "list[int]", "[]", 0},
    {"remote_pp_size", "int", "1", CFG_F_REMOTE_PP},
    {"prefix_replay_protocol", "int", "0", CFG_F_PREFIX_REPLAY},
    {"prefix_replay_layout", "str | None", "None", CFG_F_PREFIX_REPLAY},
    {"prefix_replay_checkpoints", "dict[ReqId, tuple[int, int, str]]", "{}", CFG_F_PREFIX_REPLAY},
};
/* MooncakeXferResponse, B0 .. BL (prefix_replay_checkpoints @ 00f4240ee645). */
static const struct cfg_model_field f_resp[] = {
    {"status", "MooncakeXferResponseStatus", NULL, 0},
    {"ok_reqs", "list[ReqId] | None", "None", 0},
    {"err_reqs", "list[ReqId] | None", "None", 0},
    {"err_msg", "str | None", "None", 0},
};
static const struct cfg_model_field f_resp_bl[] = {
    {"status", "MooncakeXferResponseStatus", NULL, 0},
    {"ok_reqs", "list[ReqId] | None", "None", 0},
    {"err_reqs", "list[ReqId] | None", "None", 0},
    {"err_msg", "str | None", "None", 0},
    {"prefix_replay_checkpoints", "dict[ReqId, tuple[int, str]] | None", "None",
     CFG_F_PREFIX_REPLAY},
};

#define S(name, opts, f)                                                                           \
	{                                                                                          \
		name, opts, f, N(f)                                                                \
	}
static const struct cfg_model_struct st_a[] = {
    S("MooncakeAgentMetadata", "dict=True,omit_defaults=True", f_agent)};
static const struct cfg_model_struct st_b0[] = {
    S("MooncakeXferMetadata", "omit_defaults=True", f_xfer_b0),
    S("MooncakeXferResponse", "omit_defaults=True", f_resp)};
static const struct cfg_model_struct st_b1[] = {
    S("MooncakeXferMetadata", "omit_defaults=True", f_xfer_b1),
    S("MooncakeXferResponse", "omit_defaults=True", f_resp)};
static const struct cfg_model_struct st_b2[] = {
    S("MooncakeXferMetadata", "omit_defaults=True", f_xfer_b2),
    S("MooncakeXferResponse", "omit_defaults=True", f_resp)};
static const struct cfg_model_struct st_bn[] = {
    S("MooncakeXferMetadata", "omit_defaults=True", f_xfer_bn),
    S("MooncakeXferResponse", "omit_defaults=True", f_resp)};
static const struct cfg_model_struct st_bl[] = {
    S("MooncakeXferMetadata", "omit_defaults=True", f_xfer_bl),
    S("MooncakeXferResponse", "omit_defaults=True", f_resp_bl)};

/* vllm/envs.py: "VLLM_MOONCAKE_BOOTSTRAP_PORT" (os.getenv default "8998", gen A on) and
 * VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT ("480"; P's wait for D, gen B; docs/wire-v1.md). */
static const struct cfg_model_named env_a[] = {{"VLLM_MOONCAKE_BOOTSTRAP_PORT", "8998", 0}};
static const struct cfg_model_named env_b[] = {{"VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT", "480", 0},
                                               {"VLLM_MOONCAKE_BOOTSTRAP_PORT", "8998", 0}};

/* kv_connector_extra_config keys the connector reads (ref/cfg/cfg_v1.c; docs/vllm-versions.md):
 * gen A on: mooncake_protocol ("rdma"), num_workers (10); bn on: device_name; 00f4240ee645:
 * bootstrap_server_address, prefill_side_swa_replay. */
static const struct cfg_model_named ex_a[] = {{"mooncake_protocol", "'rdma'", 0},
                                              {"num_workers", "10", 0}};
static const struct cfg_model_named ex_bn[] = {
    {"bootstrap_server_address", NULL, CFG_F_BOOT_ADDR},
    {"device_name", "''", 0},
    {"mooncake_protocol", "'rdma'", 0},
    {"num_workers", "10", 0},
    {"prefill_side_swa_replay", "False", CFG_F_PREFIX_REPLAY},
};

/* vllm/v1/metrics/loggers.py: labelnames = ["model_name", "engine"]; by_source, cached and
 * recomputed from #33290 (0.16), recomputed removed by #38709 (0.21). vllm:mooncake_* is not
 * listed: MooncakePromMetrics is still a TODO in mooncake/stats.py @ e046c7da8842 (#50374 open). */
static const struct cfg_model_metric metrics[] = {
    {"vllm:prompt_tokens", "model_name,engine", NULL, NULL},
    {"vllm:prompt_tokens_by_source", "model_name,engine,source", "0.16", NULL},
    {"vllm:prompt_tokens_cached", "model_name,engine", "0.16", NULL},
    {"vllm:prompt_tokens_recomputed", "model_name,engine", "0.16", "0.20.99"},
};

/* Bootstrap server (gen B): mooncake/mooncake_utils.py @ e7ad92e5308e. */
static const char *const routes_b[][3] = {
    {"GET", "/query", NULL},
    {"POST", "/register", "engine_id,dp_rank,tp_rank,pp_rank,addr"},
};

/* err_msg texts P sends in MooncakeXferResponse ({} = a formatted value); docs/wire-v1.md for
 * B0/BN, mooncake_connector.py @ b745e8b5d (#36869) for the pairing text of B1, B2 and BL. */
static const char *const err_b[] = {
    "Mooncake transfer engine returned {}",
    "P num blocks less than D",
    "This P tp_rank {} not in remote D target ranks {}",
    "Timeout waiting for P side ready.",
};
static const char *const err_bl[] = {
    "Mooncake transfer engine returned {}",
    "P num blocks less than D",
    "This D tp_rank {} is not paired with P tp_rank {}; expected one of {}.",
    "Timeout waiting for P side ready.",
};
/* Gen A answers with raw bytes (docs/wire-v1.md). */
static const char *const bytes_a[][2] = {{"TRANS_DONE", "trans_done"},
                                         {"TRANS_ERROR", "trans_error"}};

static int parse3(const char *s, int v[3])
{
	int n = 0;
	v[0] = v[1] = v[2] = 0;
	if (!s)
		return -1;
	if (*s == 'v')
		s++;
	while (n < 3 && *s >= '0' && *s <= '9') {
		v[n++] = (int)strtol(s, (char **)&s, 10);
		if (*s != '.')
			break;
		s++;
	}
	return n >= 2 ? 0 : -1;
}

int cfg_model_vercmp(const char *a, const char *b)
{
	int x[3], y[3];
	int pa = parse3(a, x), pb = parse3(b, y);
	if (pa || pb)
		return pa && pb ? 0 : (pa ? -1 : 1);
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

void cfg_model_for_gen(enum cfg_gen g, struct cfg_model_view *v)
{
	memset(v, 0, sizeof(*v));
	v->gen = g;
	v->feat = g == CFG_GEN_BL ? ~0u : 0; /* the later CFG_F_* fields and keys are bl's */
	v->row = cfg_gen_name(g);
	/* fail from 0.17 (#34896), before B1 (#36869) shipped */
	v->policy = g == CFG_GEN_V0 ? NULL : (g >= CFG_GEN_B1 ? "fail" : "recompute");
}

int cfg_model_for_version(const char *version, int gen_override, struct cfg_model_view *v,
                          char *err, size_t errsz)
{
	struct cfg_vllm_info info;
	if (cfg_vllm_lookup(version, &info, err, errsz))
		return -1;
	memset(v, 0, sizeof(*v));
	v->gen = gen_override >= 0 ? (enum cfg_gen)gen_override : info.gen;
	v->feat = info.feat;
	snprintf(v->version, sizeof(v->version), "%s", info.version);
	v->row = info.row;
	v->policy = info.policy;
	return 0;
}

int cfg_model_structs(const struct cfg_model_view *v, const struct cfg_model_struct **out)
{
	switch (v->gen) {
	case CFG_GEN_A:
		*out = st_a;
		return N(st_a);
	case CFG_GEN_B0:
		*out = st_b0;
		return N(st_b0);
	case CFG_GEN_B1:
		*out = st_b1;
		return N(st_b1);
	case CFG_GEN_B2:
		*out = st_b2;
		return N(st_b2);
	case CFG_GEN_BN:
		*out = st_bn;
		return N(st_bn);
	case CFG_GEN_BL:
		*out = st_bl;
		return N(st_bl);
	default:
		*out = NULL;
		return 0;
	}
}

bool cfg_model_field_in(const struct cfg_model_view *v, const struct cfg_model_field *f)
{
	return (v->feat & f->feat) == f->feat;
}

bool cfg_model_named_in(const struct cfg_model_view *v, const struct cfg_model_named *n)
{
	return (v->feat & n->feat) == n->feat;
}

int cfg_model_env(const struct cfg_model_view *v, const struct cfg_model_named **out)
{
	if (v->gen == CFG_GEN_V0)
		return *out = NULL, 0;
	if (v->gen == CFG_GEN_A)
		return *out = env_a, N(env_a);
	return *out = env_b, N(env_b);
}

int cfg_model_extra(const struct cfg_model_view *v, const struct cfg_model_named **out)
{
	if (v->gen == CFG_GEN_V0)
		return *out = NULL, 0;
	if (v->gen < CFG_GEN_BN)
		return *out = ex_a, N(ex_a);
	return *out = ex_bn, N(ex_bn);
}

int cfg_model_metrics(const struct cfg_model_metric **out)
{
	*out = metrics;
	return N(metrics);
}

bool cfg_model_metric_in(const struct cfg_model_view *v, const struct cfg_model_metric *m)
{
	const char *ver = v->version[0] ? v->version : cfg_vllm_newest;
	if (v->gen == CFG_GEN_V0)
		return false;
	if (m->since && cfg_model_vercmp(ver, m->since) < 0)
		return false;
	if (m->until && cfg_model_vercmp(ver, m->until) > 0)
		return false;
	return true;
}

int cfg_model_routes(const struct cfg_model_view *v, const char *const (**out)[3])
{
	if (!cfg_gen_is_b(v->gen))
		return *out = NULL, 0;
	return *out = routes_b, N(routes_b);
}

const char *cfg_model_sockets(const struct cfg_model_view *v)
{
	if (v->gen == CFG_GEN_V0)
		return "";
	return v->gen == CFG_GEN_A ? "REQ,ROUTER" : "DEALER,ROUTER";
}

int cfg_model_err_msgs(const struct cfg_model_view *v, const char *const **out)
{
	if (!cfg_gen_is_b(v->gen))
		return *out = NULL, 0;
	/* B1 / B2 (@ b745e8b5d, 4d51588e2) already have #36869's pairing text */
	if (v->gen == CFG_GEN_BL || v->gen == CFG_GEN_B1 || v->gen == CFG_GEN_B2)
		return *out = err_bl, N(err_bl);
	return *out = err_b, N(err_b);
}

int cfg_model_wire_bytes(const struct cfg_model_view *v, const char *const (**out)[2])
{
	if (v->gen != CFG_GEN_A)
		return *out = NULL, 0;
	return *out = bytes_a, N(bytes_a);
}

static cJSON *csv_array(const char *csv)
{
	cJSON *a;
	char buf[512];
	if (!csv)
		return cJSON_CreateNull();
	a = cJSON_CreateArray();
	snprintf(buf, sizeof(buf), "%s", csv);
	for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
		cJSON_AddItemToArray(a, cJSON_CreateString(t));
	return a;
}

static void add_opt_str(cJSON *o, const char *k, const char *v)
{
	cJSON_AddItemToObject(o, k, v ? cJSON_CreateString(v) : cJSON_CreateNull());
}

static cJSON *structs_json(const struct cfg_model_view *v)
{
	const struct cfg_model_struct *st;
	cJSON *arr = cJSON_CreateArray();
	int n = cfg_model_structs(v, &st);
	for (int i = 0; i < n; i++) {
		cJSON *s = cJSON_CreateObject(), *opts, *fs;
		char buf[256];
		cJSON_AddStringToObject(s, "name", st[i].name);
		opts = cJSON_AddObjectToObject(s, "options");
		fs = cJSON_AddArrayToObject(s, "fields");
		snprintf(buf, sizeof(buf), "%s", st[i].options);
		for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t;
		     t = strtok_r(NULL, ",", &sv)) {
			char *eq = strchr(t, '=');
			if (!eq)
				continue;
			*eq = 0;
			if (!strcmp(eq + 1, "True") || !strcmp(eq + 1, "False"))
				cJSON_AddBoolToObject(opts, t, eq[1] == 'T');
			else
				cJSON_AddStringToObject(opts, t, eq + 1);
		}
		for (int j = 0; j < st[i].nfields; j++) {
			const struct cfg_model_field *f = &st[i].fields[j];
			if (!cfg_model_field_in(v, f))
				continue;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", f->name);
			cJSON_AddStringToObject(o, "type", f->type);
			add_opt_str(o, "default", f->def);
			cJSON_AddBoolToObject(o, "required", !f->def);
			cJSON_AddItemToArray(fs, o);
		}
		cJSON_AddItemToArray(arr, s);
	}
	return arr;
}

static cJSON *named_json(const struct cfg_model_view *v, const struct cfg_model_named *t, int n,
                         const char *key)
{
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		if (!cfg_model_named_in(v, &t[i]))
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, key, t[i].name);
		add_opt_str(o, "default", t[i].def);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

static cJSON *wire_json(const struct cfg_model_view *v, cJSON *j)
{
	const char *const(*routes)[3];
	const char *const *msgs;
	const char *const(*bytes)[2];
	cJSON *arr = cJSON_AddArrayToObject(j, "routes");
	for (int i = 0, n = cfg_model_routes(v, &routes); i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "method", routes[i][0]);
		cJSON_AddStringToObject(o, "path", routes[i][1]);
		cJSON *mf = cJSON_AddArrayToObject(o, "model_fields"),
		      *names = csv_array(routes[i][2]);
		const cJSON *it;
		cJSON_ArrayForEach(it, names)
		{
			cJSON *f = cJSON_CreateObject();
			cJSON_AddStringToObject(f, "name", it->valuestring);
			cJSON_AddItemToArray(mf, f);
		}
		cJSON_Delete(names);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddItemToObject(j, "sockets", csv_array(cfg_model_sockets(v)));
	arr = cJSON_AddArrayToObject(j, "err_msgs");
	for (int i = 0, n = cfg_model_err_msgs(v, &msgs); i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "text", msgs[i]);
		cJSON_AddItemToArray(arr, o);
	}
	arr = cJSON_AddArrayToObject(j, "wire_bytes");
	for (int i = 0, n = cfg_model_wire_bytes(v, &bytes); i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", bytes[i][0]);
		cJSON_AddStringToObject(o, "value", bytes[i][1]);
		cJSON_AddItemToArray(arr, o);
	}
	return j;
}

cJSON *cfg_model_json(const struct cfg_model_view *v)
{
	const struct cfg_model_named *t;
	const struct cfg_model_metric *m;
	cJSON *j = cJSON_CreateObject(), *arr;
	int n;

	add_opt_str(j, "version", v->version[0] ? v->version : NULL);
	cJSON_AddStringToObject(j, "row", v->row);
	cJSON_AddStringToObject(j, "gen", cfg_gen_name(v->gen));
	cJSON_AddItemToObject(j, "structs", structs_json(v));
	wire_json(v, j);
	n = cfg_model_env(v, &t);
	cJSON_AddItemToObject(j, "env", named_json(v, t, n, "name"));
	n = cfg_model_extra(v, &t);
	cJSON_AddItemToObject(j, "extra_config", named_json(v, t, n, "key"));
	if (v->policy) {
		cJSON *p = cJSON_AddObjectToObject(j, "kv_load_failure_policy");
		cJSON_AddStringToObject(p, "default", v->policy);
	} else
		cJSON_AddNullToObject(j, "kv_load_failure_policy");
	arr = cJSON_AddArrayToObject(j, "metrics");
	n = cfg_model_metrics(&m);
	for (int i = 0; i < n; i++) {
		if (!cfg_model_metric_in(v, &m[i]))
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", m[i].name);
		cJSON_AddItemToObject(o, "labels", csv_array(m[i].labels));
		cJSON_AddItemToArray(arr, o);
	}
	return j;
}
