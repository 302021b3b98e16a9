/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_report: the two renderings of a cfg_check verdict — issue 2's --json object (a contract
 * that CI scripts parse) and the human report (errors first, then the port table). */
#include "cfg_internal.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static void v1_config(const struct cfg_report *r, cJSON *cfg)
{
	char *err = NULL;
	const char *x = r->kt.kv_connector_extra_config;
	cJSON *ex = x ? cfg_pyjson_parse(x, strlen(x), &err) : NULL;
	const cJSON *dn = cfg_pyjson_get(ex, "device_name");
	cJSON *arr = cJSON_CreateArray();
	const char *proto = r->v1_protocol ? r->v1_protocol : "rdma";

	cJSON_AddItemToObject(cfg, "prefill_url", cJSON_CreateNull());
	cJSON_AddItemToObject(cfg, "decode_url", cJSON_CreateNull());
	cJSON_AddItemToObject(cfg, "metadata_server", cJSON_CreateString(CFG_META_P2P));
	cJSON_AddItemToObject(cfg, "metadata_backend", cJSON_CreateNull());
	cJSON_AddItemToObject(cfg, "protocol", cJSON_CreateString(proto));
	if (dn && cJSON_IsString(dn) && dn->valuestring[0]) {
		char *s = strdup(dn->valuestring), *save = NULL, *t;
		/* split on ',' keeping empty pieces like str.split */
		char *q = s;
		while (s && q) {
			t = strchr(q, ',');
			if (t)
				*t = 0;
			cJSON_AddItemToArray(arr, cJSON_CreateString(q));
			q = t ? t + 1 : NULL;
		}
		(void)save;
		free(s);
	}
	cJSON_AddItemToObject(cfg, "device_names", arr);
	free(err);
	cJSON_Delete(ex);
}

char *cfg_report_json(const struct cfg_report *r)
{
	cJSON *o = cJSON_CreateObject(), *v, *cfg, *kt, *arr;
	const struct cfg_kv_transfer *k = &r->kt;
	char *s, *out = NULL;
	size_t i, j;

	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "ok", r->ok);
	v = cJSON_AddObjectToObject(o, "vllm");
	cJSON_AddBoolToObject(v, "accepted", r->vllm_accepted);
	cJSON_AddItemToObject(v, "error", str_or_null(r->vllm_error));
	cJSON_AddStringToObject(v, "version", r->vllm == CFG_VLLM_V1 ? "v1" : "v0");
	/* the release the verdict is for (--vllm-version), its table row and generation */
	cJSON_AddItemToObject(v, "release",
	                      str_or_null(r->release_pinned ? r->release.version : NULL));
	cJSON_AddItemToObject(v, "row", str_or_null(r->release_pinned ? r->release.row : NULL));
	cJSON_AddStringToObject(v, "generation", cfg_gen_name(r->gen));

	cfg = cJSON_AddObjectToObject(o, "config");
	if (r->vllm == CFG_VLLM_V1) {
		v1_config(r, cfg);
	} else {
		cJSON_AddItemToObject(cfg, "prefill_url", str_or_null(r->eff_prefill_url));
		cJSON_AddItemToObject(cfg, "decode_url", str_or_null(r->eff_decode_url));
		cJSON_AddItemToObject(cfg, "metadata_server", str_or_null(r->mc.conn_string));
		cJSON_AddItemToObject(cfg, "metadata_backend", str_or_null(r->mc.metadata_backend));
		cJSON_AddItemToObject(cfg, "protocol", str_or_null(r->mc.protocol));
		arr = cJSON_AddArrayToObject(cfg, "device_names");
		for (i = 0; i < r->mc.ndevice_names; i++)
			cJSON_AddItemToArray(arr, str_or_null(r->mc.device_names[i]));
	}
	cJSON_AddItemToObject(cfg, "path", str_or_null(r->mc.path));

	kt = cJSON_AddObjectToObject(o, "kv_transfer");
	cJSON_AddItemToObject(kt, "kv_connector", str_or_null(k->kv_connector));
	cJSON_AddItemToObject(kt, "kv_role", str_or_null(k->kv_role));
	if (k->kv_rank_set)
		cJSON_AddNumberToObject(kt, "kv_rank", (double)k->kv_rank);
	else
		cJSON_AddNullToObject(kt, "kv_rank");
	cJSON_AddNumberToObject(kt, "kv_parallel_size", (double)k->kv_parallel_size);
	cJSON_AddNumberToObject(kt, "kv_buffer_size", k->kv_buffer_size);
	cJSON_AddItemToObject(kt, "kv_buffer_device", str_or_null(k->kv_buffer_device));
	cJSON_AddItemToObject(kt, "kv_ip", str_or_null(k->kv_ip));
	cJSON_AddNumberToObject(kt, "kv_port", (double)k->kv_port);
	if (r->vllm == CFG_VLLM_V1) {
		char *err = NULL;
		const char *x = k->kv_connector_extra_config ? k->kv_connector_extra_config : "{}";
		cJSON *ex = cfg_pyjson_parse(x, strlen(x), &err);
		cJSON_AddItemToObject(kt, "engine_id", str_or_null(k->engine_id));
		cJSON_AddItemToObject(kt, "kv_connector_module_path",
		                      str_or_null(k->kv_connector_module_path));
		cJSON_AddItemToObject(kt, "kv_connector_extra_config",
		                      ex ? ex : cJSON_CreateObject());
		cJSON_AddItemToObject(kt, "kv_load_failure_policy",
		                      str_or_null(k->kv_load_failure_policy));
		cJSON_AddBoolToObject(kt, "engine_id_generated", k->engine_id_generated);
		free(err);
	}
	cJSON_AddBoolToObject(kt, "given", r->kt_given);

	arr = cJSON_AddArrayToObject(o, "ports");
	for (i = 0; i < r->nports; i++) {
		const struct cfg_port *p = &r->ports[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "host", p->host);
		cJSON_AddNumberToObject(e, "port", p->port);
		cJSON_AddStringToObject(e, "side", p->side);
		cJSON_AddNumberToObject(e, "rank", p->rank);
		cJSON_AddStringToObject(e, "purpose", p->purpose);
		cJSON_AddBoolToObject(e, "binds", p->binds);
		cJSON_AddItemToArray(arr, e);
	}
	arr = cJSON_AddArrayToObject(o, "conflicts");
	for (i = 0; i < r->nconflicts; i++) {
		const struct cfg_conflict *c = &r->conflicts[i];
		cJSON *e = cJSON_CreateObject(), *pu;
		cJSON_AddStringToObject(e, "host", c->host);
		cJSON_AddNumberToObject(e, "port", c->port);
		pu = cJSON_AddArrayToObject(e, "purposes");
		for (j = 0; j < c->npurposes; j++)
			cJSON_AddItemToArray(pu, cJSON_CreateString(c->purposes[j]));
		cJSON_AddItemToArray(arr, e);
	}
	arr = cJSON_AddArrayToObject(o, "diagnostics");
	for (j = 0; j < 3; j++)
		for (i = 0; i < r->diags.n; i++) {
			const struct cfg_diag *dg = &r->diags.v[i];
			cJSON *e;
			if ((size_t)dg->severity != j)
				continue;
			e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "severity", cfg_severity_name(dg->severity));
			cJSON_AddItemToObject(e, "field", str_or_null(dg->field));
			cJSON_AddItemToObject(e, "message", str_or_null(dg->message));
			cJSON_AddItemToArray(arr, e);
		}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (s && asprintf(&out, "%s\n", s) < 0)
		out = NULL;
	free(s);
	return out;
}

static void print_diags(const struct cfg_report *r, FILE *f)
{
	static const char *const head[3] = {"Errors", "Warnings", "Notes"};
	size_t i, j, n;

	for (j = 0; j < 3; j++) {
		n = cfg_diags_count(&r->diags, (enum cfg_severity)j);
		if (!n)
			continue;
		fprintf(f, "%s (%zu):\n", head[j], n);
		for (i = 0; i < r->diags.n; i++) {
			const struct cfg_diag *d = &r->diags.v[i];
			if ((size_t)d->severity != j)
				continue;
			fprintf(f, "  %-7s %s%s%s\n", cfg_severity_name(d->severity),
			        d->field ? d->field : "", d->field ? ": " : "", d->message);
		}
	}
}

static void print_ports(const struct cfg_report *r, FILE *f)
{
	size_t i, k;

	if (!r->nports) {
		fprintf(f, "Ports: none planned (the configuration could not be read)\n");
		return;
	}
	fprintf(f, "Ports (%zu; port 0 = chosen at run time):\n", r->nports);
	fprintf(f, "  %-7s %4s  %-22s %5s  %-7s %s\n", "side", "rank", "host", "port", "action",
	        "purpose");
	for (i = 0; i < r->nports; i++) {
		const struct cfg_port *p = &r->ports[i];
		fprintf(f, "  %-7s %4d  %-22.64s %5d  %-7s %s\n", p->side, p->rank, p->host,
		        p->port,
		        p->binds                                     ? "bind"
		        : strncmp(p->purpose, "TE segment name", 15) ? "connect"
		                                                     : "name",
		        p->purpose);
	}
	if (!r->nconflicts) {
		fprintf(f, "Conflicts: none\n");
		return;
	}
	fprintf(f, "Conflicts (%zu):\n", r->nconflicts);
	for (i = 0; i < r->nconflicts; i++) {
		fprintf(f, "  %s:%d\n", r->conflicts[i].host, r->conflicts[i].port);
		for (k = 0; k < r->conflicts[i].npurposes; k++)
			fprintf(f, "      %s\n", r->conflicts[i].purposes[k]);
	}
}

void cfg_report_print(const struct cfg_report *r, FILE *f, bool ports_first)
{
	size_t i;

	fprintf(f, "Verdict: %s\n", r->ok ? "OK (usable)" : "NOT OK");
	if (r->release_pinned)
		fprintf(f, "vLLM %s (table row %s, gen %s): %s%s\n", r->release.version,
		        r->release.row, cfg_gen_name(r->gen),
		        r->vllm_accepted ? "accepts this configuration" : "rejects it with ",
		        r->vllm_accepted ? "" : r->vllm_error);
	else
		fprintf(f, "vLLM %s: %s%s\n", r->vllm == CFG_VLLM_V1 ? "V1" : "V0",
		        r->vllm_accepted ? "accepts this configuration" : "rejects it with ",
		        r->vllm_accepted ? "" : r->vllm_error);
	if (ports_first) {
		print_ports(r, f);
		print_diags(r, f);
		return;
	}
	print_diags(r, f);
	if (r->vllm == CFG_VLLM_V0 && r->mc.loaded) {
		fprintf(f, "Config (%s):\n", r->mc.path);
		fprintf(f, "  prefill_url     %s\n", r->eff_prefill_url ? r->eff_prefill_url : "-");
		fprintf(f, "  decode_url      %s%s\n", r->eff_decode_url ? r->eff_decode_url : "-",
		        " (effective, after the +100 rule)");
		fprintf(f, "  metadata        %s\n", r->mc.conn_string ? r->mc.conn_string : "-");
		fprintf(f, "  protocol        %s\n", r->mc.protocol ? r->mc.protocol : "None");
		fprintf(f, "  device_names   ");
		for (i = 0; i < r->mc.ndevice_names; i++)
			fprintf(f, " \"%s\"", r->mc.device_names[i] ? r->mc.device_names[i] : "");
		fprintf(f, "%s\n", r->mc.ndevice_names ? "" : " (none)");
	}
	if (r->vllm == CFG_VLLM_V1 && r->kt.engine_id)
		fprintf(f, "engine_id: %s%s\n", r->kt.engine_id,
		        r->kt.engine_id_generated ? " (generated: a fresh uuid4 at every start)"
		                                  : "");
	if (r->vllm == CFG_VLLM_V1 && r->kt.kv_load_failure_policy)
		fprintf(f, "kv_load_failure_policy: %s\n", r->kt.kv_load_failure_policy);
	print_ports(r, f);
}
