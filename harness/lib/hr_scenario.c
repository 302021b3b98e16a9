/* SPDX-License-Identifier: Apache-2.0 */
/* hr_scenario: reads a scenario file (scenarios/README.md documents the schema), fills defaults,
 * and rejects anything it does not understand with "FILE: FIELD: problem, expected ...". */
#include "hr.h"
#include "hr_hosts.h"
#include "cfg/cfg_names.h"
#include "cfg/cfg_vllm.h"
#include "pd_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MODEL "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"

struct pctx {
	const char *path;
	char *err;
	size_t errsz;
	int failed;
};

static int perr(struct pctx *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int perr(struct pctx *c, const char *field, const char *fmt, ...)
{
	va_list ap;
	if (c->failed)
		return -1;
	c->failed = 1;
	va_start(ap, fmt);
	pd_field_verr(c->path, c->err, c->errsz, field, fmt, ap);
	va_end(ap);
	return -1;
}

const char *hr_meta_name(enum hr_meta m)
{
	static const char *names[] = {"etcd", "redis", "http", "p2p"};
	return (unsigned)m < PD_ARRAY_SIZE(names) ? names[m] : "?";
}

static const char *type_name(const cJSON *j)
{
	if (!j)
		return "nothing";
	if (cJSON_IsString(j))
		return "a string";
	if (cJSON_IsNumber(j))
		return "a number";
	if (cJSON_IsBool(j))
		return "a boolean";
	if (cJSON_IsNull(j))
		return "null";
	if (cJSON_IsArray(j))
		return "an array";
	return "an object";
}

static int check_keys(struct pctx *c, const cJSON *obj, const char *prefix, const char *const *ok)
{
	for (const cJSON *k = obj->child; k; k = k->next) {
		size_t i;
		for (i = 0; ok[i]; i++)
			if (!strcmp(k->string, ok[i]))
				break;
		if (!ok[i]) {
			char field[128];
			char known[512] = "";
			for (i = 0; ok[i]; i++) {
				strncat(known, i ? ", " : "", sizeof(known) - strlen(known) - 1);
				strncat(known, ok[i], sizeof(known) - strlen(known) - 1);
			}
			snprintf(field, sizeof(field), "%s%s", prefix, k->string);
			return perr(c, field, "unknown key (known: %s)", known);
		}
	}
	return 0;
}

static int get_str(struct pctx *c, const cJSON *obj, const char *key, const char *field,
                   const char *def, char **out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!j) {
		if (!def)
			return perr(c, field, "missing (required)");
		*out = strdup(def);
		return *out ? 0 : -1;
	}
	if (!cJSON_IsString(j) || !*j->valuestring)
		return perr(c, field, "expected a non-empty string, got %s", type_name(j));
	*out = strdup(j->valuestring);
	return *out ? 0 : -1;
}

static int get_int(struct pctx *c, const cJSON *obj, const char *key, const char *field, int def,
                   int lo, int hi, int *out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!j) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(j) || j->valuedouble != (double)(long long)j->valuedouble ||
	    j->valuedouble < lo || j->valuedouble > hi) {
		if (cJSON_IsNumber(j))
			return perr(c, field, "expected an integer %d..%d, got %g", lo, hi,
			            j->valuedouble);
		return perr(c, field, "expected an integer %d..%d, got %s", lo, hi, type_name(j));
	}
	*out = (int)j->valuedouble;
	return 0;
}

static int get_bool(struct pctx *c, const cJSON *obj, const char *key, const char *field, bool def,
                    bool *out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!j) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsBool(j))
		return perr(c, field, "expected true or false, got %s", type_name(j));
	*out = cJSON_IsTrue(j);
	return 0;
}

struct varck {
	struct pctx *c;
	const char *field;
};
static int var_cb(const char *name, void *ud)
{
	struct varck *v = ud;
	if (hr_var_known(name))
		return 0;
	return perr(v->c, v->field,
	            "unknown variable ${%s} (known: ${PREFILL_HOST} ${DECODE_HOST} ${PROXY_HOST} "
	            "${METADATA} ${METADATA_HOSTPORT} ${WORKDIR} ${PORT_<NAME>})",
	            name);
}

/* Every string inside j may only use variables the runner provides. */
static int check_vars(struct pctx *c, const cJSON *j, const char *field)
{
	struct varck v = {c, field};
	if (cJSON_IsString(j)) {
		int r = hr_vars_scan(j->valuestring, var_cb, &v);
		if (r == -1 && !c->failed)
			return perr(c, field, "unterminated or empty ${...} in \"%s\"",
			            j->valuestring);
		return r ? -1 : 0;
	}
	for (const cJSON *k = j->child; k; k = k->next) {
		char sub[160];
		if (k->string)
			snprintf(sub, sizeof(sub), "%s.%s", field, k->string);
		else
			snprintf(sub, sizeof(sub), "%s[]", field);
		if (check_vars(c, k, sub))
			return -1;
	}
	return 0;
}

/* An object inline, or a string naming a JSON file relative to the scenario's directory. */
static cJSON *inline_or_fixture(struct pctx *c, const cJSON *j, const char *dir, const char *field)
{
	char path[1024], *text = NULL;
	size_t len;
	cJSON *obj;
	int r;
	if (cJSON_IsObject(j))
		return cJSON_Duplicate(j, 1);
	if (!cJSON_IsString(j) || !*j->valuestring) {
		perr(c, field, "expected an object or a fixture file path, got %s", type_name(j));
		return NULL;
	}
	if (j->valuestring[0] == '/')
		snprintf(path, sizeof(path), "%s", j->valuestring);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, j->valuestring);
	r = pd_read_file(path, 1 << 20, &text, &len);
	if (r) {
		perr(c, field, "cannot read fixture %s: %s", path, strerror(-r));
		return NULL;
	}
	obj = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsObject(obj)) {
		cJSON_Delete(obj);
		perr(c, field, "fixture %s is not a JSON object", path);
		return NULL;
	}
	return obj;
}

static int get_args(struct pctx *c, const cJSON *root, const char *key, cJSON **out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!j) {
		*out = cJSON_CreateArray();
		return 0;
	}
	if (!cJSON_IsArray(j))
		return perr(c, key, "expected an array of strings, got %s", type_name(j));
	for (const cJSON *a = j->child; a; a = a->next)
		if (!cJSON_IsString(a))
			return perr(c, key, "expected an array of strings, found %s", type_name(a));
	*out = cJSON_Duplicate(j, 1);
	return check_vars(c, *out, key);
}

/* Fills a side's kv-transfer-config from the common part: connector, role, and for V0 rank
 * and size; V1 (as Mooncake's e2e script starts vLLM) gets the protocol in extra_config. */
static cJSON *kv_side(const cJSON *common, bool producer, const struct hr_scenario *sc)
{
	cJSON *o = common ? cJSON_Duplicate(common, 1) : cJSON_CreateObject();
	if (!cJSON_HasObjectItem(o, "kv_connector"))
		cJSON_AddStringToObject(o, "kv_connector", CFG_CONNECTOR_MOONCAKE);
	if (!cJSON_HasObjectItem(o, "kv_role"))
		cJSON_AddStringToObject(o, "kv_role", producer ? "kv_producer" : "kv_consumer");
	if (cfg_gen_is_v1((enum cfg_gen)sc->gen)) {
		cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "kv_connector_extra_config");
		if (!x)
			x = cJSON_AddObjectToObject(o, "kv_connector_extra_config");
		if (cJSON_IsObject(x) && !cJSON_HasObjectItem(x, "mooncake_protocol"))
			cJSON_AddStringToObject(x, "mooncake_protocol", sc->protocol);
		return o;
	}
	if (!cJSON_HasObjectItem(o, "kv_rank"))
		cJSON_AddNumberToObject(o, "kv_rank", producer ? 0 : 1);
	if (!cJSON_HasObjectItem(o, "kv_parallel_size"))
		cJSON_AddNumberToObject(o, "kv_parallel_size", 2);
	if (!cJSON_HasObjectItem(o, "kv_buffer_size"))
		cJSON_AddNumberToObject(o, "kv_buffer_size", 2e9);
	return o;
}

static int parse_kv(struct pctx *c, const cJSON *root, struct hr_scenario *sc)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "kv_transfer_config");
	const cJSON *p, *d;
	if (!j) {
		sc->kv_prefill = kv_side(NULL, true, sc);
		sc->kv_decode = kv_side(NULL, false, sc);
		return 0;
	}
	if (!cJSON_IsObject(j))
		return perr(c, "kv_transfer_config",
		            "expected an object (common settings, or \"prefill\" and \"decode\")");
	p = cJSON_GetObjectItemCaseSensitive(j, "prefill");
	d = cJSON_GetObjectItemCaseSensitive(j, "decode");
	if (!p && !d) {
		sc->kv_prefill = kv_side(j, true, sc);
		sc->kv_decode = kv_side(j, false, sc);
	} else {
		static const char *const ok[] = {"prefill", "decode", NULL};
		if (!p || !d)
			return perr(c,
			            p ? "kv_transfer_config.decode" : "kv_transfer_config.prefill",
			            "missing (give both prefill and decode, or neither)");
		if (check_keys(c, j, "kv_transfer_config.", ok))
			return -1;
		sc->kv_prefill = inline_or_fixture(c, p, sc->dir, "kv_transfer_config.prefill");
		sc->kv_decode = inline_or_fixture(c, d, sc->dir, "kv_transfer_config.decode");
		if (!sc->kv_prefill || !sc->kv_decode)
			return -1;
	}
	if (check_vars(c, sc->kv_prefill, "kv_transfer_config.prefill") ||
	    check_vars(c, sc->kv_decode, "kv_transfer_config.decode"))
		return -1;
	return 0;
}

static int parse_mooncake(struct pctx *c, const cJSON *root, struct hr_scenario *sc)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "mooncake");
	if (!j) {
		sc->mooncake = cJSON_CreateObject();
		cJSON_AddStringToObject(sc->mooncake, "prefill_url", "${PREFILL_HOST}:${PORT_P}");
		cJSON_AddStringToObject(sc->mooncake, "decode_url", "${DECODE_HOST}:${PORT_D}");
		cJSON_AddStringToObject(sc->mooncake, "metadata_server", "${METADATA}");
		cJSON_AddStringToObject(sc->mooncake, "protocol", sc->protocol);
		cJSON_AddStringToObject(sc->mooncake, "device_name", "");
		return 0;
	}
	sc->mooncake = inline_or_fixture(c, j, sc->dir, "mooncake");
	if (!sc->mooncake)
		return -1;
	return check_vars(c, sc->mooncake, "mooncake");
}

static int parse_topology(struct pctx *c, const cJSON *root, struct hr_scenario *sc)
{
	static const char *const ok[] = {"prefill", "decode", "proxy", NULL};
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "topology");
	const char *keys[] = {"prefill", "decode", "proxy"};
	char **outs[] = {&sc->prefill_host, &sc->decode_host, &sc->proxy_host};
	if (t && !cJSON_IsObject(t))
		return perr(c, "topology", "expected an object, got %s", type_name(t));
	if (t && check_keys(c, t, "topology.", ok))
		return -1;
	for (int i = 0; i < 3; i++) {
		const cJSON *h = t ? cJSON_GetObjectItemCaseSensitive(t, keys[i]) : NULL;
		char field[64];
		struct in_addr in;
		snprintf(field, sizeof(field), "topology.%s", keys[i]);
		if (!h) {
			*outs[i] = strdup("127.0.0.1");
			continue;
		}
		/* an address of this host: 127/8 is all loopback; the Soft-RoCE guest uses its
		 * veth addresses. A name would hide which address the processes bind. */
		if (!cJSON_IsString(h) || inet_pton(AF_INET, h->valuestring, &in) != 1)
			return perr(
			    c, field,
			    "expected an IPv4 address of this host such as \"127.0.0.2\", got %s",
			    cJSON_IsString(h) ? h->valuestring : type_name(h));
		*outs[i] = strdup(h->valuestring);
	}
	return 0;
}

static unsigned lcg(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static int parse_workload(struct pctx *c, const cJSON *root, struct hr_scenario *sc)
{
	static const char *const ok[] = {
	    "requests",   "concurrency",    "prompt_tokens",      "prompts",
	    "stream",     "endpoint",       "max_tokens",         "seed",
	    "ignore_eos", "stream_percent", "disconnect_percent", NULL};
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "workload");
	cJSON *empty = NULL;
	struct hr_workload *wl = &sc->wl;
	const cJSON *pt;
	char *endpoint = NULL;
	int seed;
	if (w && !cJSON_IsObject(w))
		return perr(c, "workload", "expected an object, got %s", type_name(w));
	if (!w)
		w = empty = cJSON_CreateObject();
	if (check_keys(c, w, "workload.", ok) ||
	    get_int(c, w, "requests", "workload.requests", 4, 1, 100000, &wl->requests) ||
	    get_int(c, w, "concurrency", "workload.concurrency", 1, 1, 1024, &wl->concurrency) ||
	    get_int(c, w, "max_tokens", "workload.max_tokens", 16, 1, 100000, &wl->max_tokens) ||
	    get_int(c, w, "seed", "workload.seed", 1, 0, 1 << 30, &seed) ||
	    get_bool(c, w, "stream", "workload.stream", false, &wl->stream) ||
	    get_bool(c, w, "ignore_eos", "workload.ignore_eos", false, &wl->ignore_eos) ||
	    get_int(c, w, "stream_percent", "workload.stream_percent", wl->stream ? 100 : 0, 0, 100,
	            &wl->stream_pct) ||
	    get_int(c, w, "disconnect_percent", "workload.disconnect_percent", 0, 0, 100,
	            &wl->disconnect_pct) ||
	    get_str(c, w, "endpoint", "workload.endpoint", "completions", &endpoint))
		goto fail;
	if (cJSON_GetObjectItemCaseSensitive(w, "stream_percent") &&
	    cJSON_GetObjectItemCaseSensitive(w, "stream")) {
		perr(c, "workload.stream_percent", "give stream or stream_percent, not both");
		goto fail;
	}
	wl->stream = wl->stream_pct == 100; /* what a check that reads one flag sees */
	if (strcmp(endpoint, "completions") && strcmp(endpoint, "chat")) {
		perr(c, "workload.endpoint", "expected \"completions\" or \"chat\", got \"%s\"",
		     endpoint);
		goto fail;
	}
	wl->chat = !strcmp(endpoint, "chat");
	free(endpoint);
	endpoint = NULL;
	wl->prompt_tokens = calloc((size_t)wl->requests, sizeof(int));
	if (!wl->prompt_tokens)
		goto fail;
	pt = cJSON_GetObjectItemCaseSensitive(w, "prompt_tokens");
	if (cJSON_GetObjectItemCaseSensitive(w, "prompts")) {
		const cJSON *ps = cJSON_GetObjectItemCaseSensitive(w, "prompts");
		size_t i = 0;
		if (pt) {
			perr(c, "workload.prompts", "give prompts or prompt_tokens, not both");
			goto fail;
		}
		if (!cJSON_IsArray(ps) || cJSON_GetArraySize(ps) == 0) {
			perr(c, "workload.prompts", "expected a non-empty list of strings");
			goto fail;
		}
		wl->nprompts = (size_t)cJSON_GetArraySize(ps);
		wl->prompts = calloc(wl->nprompts, sizeof(char *));
		if (!wl->prompts)
			goto fail;
		for (const cJSON *e = ps->child; e; e = e->next, i++) {
			if (!cJSON_IsString(e) || !*e->valuestring) {
				perr(c, "workload.prompts",
				     "element %zu: expected a non-empty string", i);
				goto fail;
			}
			wl->prompts[i] = strdup(e->valuestring);
		}
		for (int k = 0; k < wl->requests; k++)
			wl->prompt_tokens[k] = (int)strlen(wl->prompts[(size_t)k % wl->nprompts]);
	} else if (!pt) {
		for (int i = 0; i < wl->requests; i++)
			wl->prompt_tokens[i] = 32;
	} else if (cJSON_IsArray(pt)) {
		int n = cJSON_GetArraySize(pt), i = 0;
		if (n == 0) {
			perr(c, "workload.prompt_tokens",
			     "empty list (give lengths, e.g. [32, 512])");
			goto fail;
		}
		for (const cJSON *e = pt->child; e; e = e->next, i++)
			if (!cJSON_IsNumber(e) || e->valuedouble < 1 || e->valuedouble > 1e6 ||
			    e->valuedouble != (int)e->valuedouble) {
				perr(c, "workload.prompt_tokens",
				     "element %d: expected an integer 1..1000000", i);
				goto fail;
			}
		/* cycled over the requests */
		for (i = 0; i < wl->requests; i++)
			wl->prompt_tokens[i] = cJSON_GetArrayItem(pt, i % n)->valueint;
	} else if (cJSON_IsObject(pt)) {
		static const char *const okr[] = {"min", "max", NULL};
		int lo, hi;
		unsigned s = (unsigned)seed * 2654435761u + 1;
		if (check_keys(c, pt, "workload.prompt_tokens.", okr) ||
		    get_int(c, pt, "min", "workload.prompt_tokens.min", 16, 1, 1000000, &lo) ||
		    get_int(c, pt, "max", "workload.prompt_tokens.max", lo, 1, 1000000, &hi))
			goto fail;
		if (hi < lo) {
			perr(c, "workload.prompt_tokens", "max %d is below min %d", hi, lo);
			goto fail;
		}
		for (int i = 0; i < wl->requests; i++)
			wl->prompt_tokens[i] = lo + (int)(lcg(&s) % (unsigned)(hi - lo + 1));
	} else {
		perr(c, "workload.prompt_tokens",
		     "expected a list of lengths or {\"min\": N, \"max\": M}, got %s",
		     type_name(pt));
		goto fail;
	}
	cJSON_Delete(empty);
	return 0;
fail:
	free(endpoint);
	cJSON_Delete(empty);
	return -1;
}

static int parse_checks(struct pctx *c, const cJSON *root, struct hr_scenario *sc)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "checks");
	const cJSON *ef = cJSON_GetObjectItemCaseSensitive(root, "expect_fail");
	size_t i = 0;
	if (!j) {
		static const char *def[] = {"http_ok", "kv_reused", "output_equal", "integrity"};
		sc->nchecks = PD_ARRAY_SIZE(def);
		sc->checks = calloc(sc->nchecks, sizeof(char *));
		for (i = 0; i < sc->nchecks; i++)
			sc->checks[i] = strdup(def[i]);
	} else {
		if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) == 0)
			return perr(c, "checks", "expected a non-empty list of check names");
		sc->nchecks = (size_t)cJSON_GetArraySize(j);
		sc->checks = calloc(sc->nchecks, sizeof(char *));
		for (const cJSON *e = j->child; e; e = e->next, i++) {
			char known[256] = "";
			if (cJSON_IsString(e) && hr_check_find(e->valuestring)) {
				sc->checks[i] = strdup(e->valuestring);
				continue;
			}
			for (size_t k = 0; k < hr_check_count(); k++) {
				strncat(known, k ? ", " : "", sizeof(known) - strlen(known) - 1);
				strncat(known, hr_check_at(k)->name,
				        sizeof(known) - strlen(known) - 1);
			}
			return perr(c, "checks", "element %zu: %s%s%s is not a check (known: %s)",
			            i, cJSON_IsString(e) ? "\"" : "",
			            cJSON_IsString(e) ? e->valuestring : type_name(e),
			            cJSON_IsString(e) ? "\"" : "", known);
		}
	}
	if (ef) {
		static const char *const ok[] = {"check", "match", NULL};
		const cJSON *ck, *m = cJSON_GetObjectItemCaseSensitive(ef, "match");
		if (!cJSON_IsObject(ef))
			return perr(c, "expect_fail", "expected {\"check\": NAME}, got %s",
			            type_name(ef));
		if (check_keys(c, ef, "expect_fail.", ok) ||
		    get_str(c, ef, "check", "expect_fail.check", NULL, &sc->expect_fail))
			return -1;
		if (m && get_str(c, ef, "match", "expect_fail.match", NULL, &sc->expect_match))
			return -1;
		ck = NULL;
		for (i = 0; i < sc->nchecks; i++)
			if (!strcmp(sc->checks[i], sc->expect_fail))
				ck = ef;
		if (!ck)
			return perr(c, "expect_fail.check",
			            "\"%s\" is not in this scenario's checks list",
			            sc->expect_fail);
	}
	return 0;
}

/* "expect_exit": ["prefill"] — a crash-fault scenario's victim may die without a FAIL. */
static int parse_expect_exit(struct pctx *c, const cJSON *root, struct hr_scenario *sc)
{
	static const char *names[] = {"prefill", "decode", "plain", "proxy"};
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "expect_exit");
	size_t i = 0;
	if (!j)
		return 0;
	if (!cJSON_IsArray(j))
		return perr(c, "expect_exit", "expected a list of process names, got %s",
		            type_name(j));
	for (const cJSON *e = j->child; e; e = e->next, i++) {
		size_t k;
		for (k = 0; k < PD_ARRAY_SIZE(names); k++)
			if (cJSON_IsString(e) && !strcmp(e->valuestring, names[k]))
				break;
		if (k == PD_ARRAY_SIZE(names))
			return perr(c, "expect_exit",
			            "element %zu: expected prefill, decode, plain or proxy", i);
		sc->expect_exit |= 1u << k;
	}
	return 0;
}

/* "needs": capabilities the host must have, else the scenario is NOTRUN ("gpu": a CUDA device;
 * protocol nvlink_intra implies it). */
static int parse_needs(struct pctx *c, const cJSON *root, struct hr_scenario *sc)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "needs"), *it;
	size_t i = 0;

	sc->needs_gpu = !strcmp(sc->protocol, "nvlink_intra");
	if (!n)
		return 0;
	if (!cJSON_IsArray(n)) {
		perr(c, "needs", "expected an array of capabilities such as [\"gpu\"]");
		return -1;
	}
	cJSON_ArrayForEach(it, n)
	{
		if (!cJSON_IsString(it) || strcmp(it->valuestring, "gpu")) {
			perr(c, "needs",
			     "element %zu: expected \"gpu\" (the only capability known)", i);
			return -1;
		}
		sc->needs_gpu = true;
		i++;
	}
	return 0;
}

int hr_scenario_parse(const char *path, const char *json, struct hr_scenario *sc, char *err,
                      size_t errsz)
{
	static const char *const ok[] = {"name",
	                                 "description",
	                                 "metadata",
	                                 "protocol",
	                                 "topology",
	                                 "model",
	                                 "max_model_len",
	                                 "mooncake",
	                                 "kv_transfer_config",
	                                 "standin_args",
	                                 "prefill_args",
	                                 "decode_args",
	                                 "proxy_args",
	                                 "workload",
	                                 "checks",
	                                 "expect_fail",
	                                 "expect_exit",
	                                 "timeout_s",
	                                 "vllm",
	                                 "generation",
	                                 "proxy",
	                                 "env",
	                                 "hosts",
	                                 "faults",
	                                 "mtu",
	                                 "needs",
	                                 "launcher",
	                                 NULL};
	struct pctx c = {path, err, errsz, 0};
	cJSON *root;
	char *meta = NULL, *pcopy;
	const cJSON *to;
	int ret = -1;

	memset(sc, 0, sizeof(*sc));
	sc->path = strdup(path);
	pcopy = strdup(path);
	sc->dir = strdup(pcopy ? dirname(pcopy) : ".");
	free(pcopy);
	root = cJSON_Parse(json);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		int line = 1;
		for (const char *p = json; at && p < at && *p; p++)
			line += *p == '\n';
		perr(&c, "JSON", "syntax error near line %d", line);
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		perr(&c, "JSON", "top level must be an object, got %s", type_name(root));
		goto out;
	}
	if (check_keys(&c, root, "", ok) || get_str(&c, root, "name", "name", NULL, &sc->name) ||
	    get_str(&c, root, "description", "description", "", &sc->description) ||
	    hr_scenario_parse_gen(path, root, sc, err, errsz) ||
	    hr_scenario_parse_hosts(path, root, sc, err, errsz) ||
	    get_str(&c, root, "metadata", "metadata", cfg_gen_is_v1(sc->gen) ? "p2p" : NULL,
	            &meta) ||
	    get_str(&c, root, "protocol", "protocol", "tcp", &sc->protocol) ||
	    get_str(&c, root, "model", "model", DEFAULT_MODEL, &sc->model) ||
	    get_int(&c, root, "max_model_len", "max_model_len", 10000, 16, 10000000,
	            &sc->max_model_len))
		goto out;
	for (const char *p = sc->name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("-_.", *p))) {
			perr(&c, "name", "\"%s\": use letters, digits, '-', '_' or '.' only",
			     sc->name);
			goto out;
		}
	if (!strcmp(meta, "etcd"))
		sc->meta = HR_META_ETCD;
	else if (!strcmp(meta, "redis"))
		sc->meta = HR_META_REDIS;
	else if (!strcmp(meta, "http"))
		sc->meta = HR_META_HTTP;
	else if (!strcmp(meta, "p2p"))
		sc->meta = HR_META_P2P;
	else {
		perr(&c, "metadata", "expected etcd, redis, http or p2p, got \"%s\"", meta);
		goto out;
	}
	if (cfg_gen_is_v1(sc->gen) && sc->meta != HR_META_P2P) {
		perr(&c, "metadata",
		     "vLLM V1 connectors (generation %s) publish nothing in a metadata service: "
		     "they use P2PHANDSHAKE; remove the field or write \"p2p\", got \"%s\"",
		     cfg_gen_name(sc->gen), meta);
		goto out;
	}
	if (cfg_gen_is_v1(sc->gen) && cJSON_HasObjectItem(root, "mooncake")) {
		perr(&c, "mooncake",
		     "vLLM V1 connectors (generation %s) read no mooncake.json; remove the field",
		     cfg_gen_name(sc->gen));
		goto out;
	}
	if (strcmp(sc->protocol, "tcp") && strcmp(sc->protocol, "rdma") &&
	    strcmp(sc->protocol, "nvlink_intra")) {
		perr(&c, "protocol", "expected \"tcp\", \"rdma\" or \"nvlink_intra\", got \"%s\"",
		     sc->protocol);
		goto out;
	}
	if (parse_needs(&c, root, sc) ||
	    get_str(&c, root, "launcher", "launcher", "", &sc->launcher))
		goto out;
	if (!*sc->launcher) {
		free(sc->launcher);
		sc->launcher = NULL;
	}
	if (sc->launcher && strcmp(sc->launcher, "local") && strcmp(sc->launcher, "ssh") &&
	    strcmp(sc->launcher, "slurm")) {
		perr(&c, "launcher", "expected \"local\", \"ssh\" or \"slurm\", got \"%s\"",
		     sc->launcher);
		goto out;
	}
	to = cJSON_GetObjectItemCaseSensitive(root, "timeout_s");
	if (to && (!cJSON_IsNumber(to) || to->valuedouble <= 0 || to->valuedouble > 86400)) {
		perr(&c, "timeout_s", "expected seconds > 0");
		goto out;
	}
	sc->timeout_s = to ? to->valuedouble : 0;
	if (parse_expect_exit(&c, root, sc))
		goto out;
	if (parse_topology(&c, root, sc) || parse_mooncake(&c, root, sc) ||
	    parse_kv(&c, root, sc) || get_args(&c, root, "standin_args", &sc->standin_args) ||
	    get_args(&c, root, "prefill_args", &sc->prefill_args) ||
	    get_args(&c, root, "decode_args", &sc->decode_args) ||
	    get_args(&c, root, "proxy_args", &sc->proxy_args) || parse_workload(&c, root, sc) ||
	    parse_checks(&c, root, sc))
		goto out;
	ret = 0;
out:
	free(meta);
	cJSON_Delete(root);
	if (ret)
		hr_scenario_free(sc);
	return ret;
}

int hr_scenario_load(const char *path, struct hr_scenario *sc, char *err, size_t errsz)
{
	char *text = NULL;
	size_t len;
	int r = pd_read_file(path, 1 << 20, &text, &len);
	if (r) {
		memset(sc, 0, sizeof(*sc));
		snprintf(err, errsz, "%s: cannot read: %s", path, strerror(-r));
		return -1;
	}
	r = hr_scenario_parse(path, text, sc, err, errsz);
	free(text);
	return r;
}

bool hr_scenario_has_check(const struct hr_scenario *sc, const char *check)
{
	for (size_t i = 0; i < sc->nchecks; i++)
		if (!strcmp(sc->checks[i], check))
			return true;
	return false;
}

void hr_scenario_free(struct hr_scenario *sc)
{
	free(sc->path);
	free(sc->dir);
	free(sc->name);
	free(sc->description);
	free(sc->protocol);
	free(sc->prefill_host);
	free(sc->decode_host);
	free(sc->proxy_host);
	free(sc->model);
	cJSON_Delete(sc->mooncake);
	cJSON_Delete(sc->kv_prefill);
	cJSON_Delete(sc->kv_decode);
	cJSON_Delete(sc->standin_args);
	cJSON_Delete(sc->prefill_args);
	cJSON_Delete(sc->decode_args);
	cJSON_Delete(sc->proxy_args);
	free(sc->wl.prompt_tokens);
	for (size_t i = 0; i < sc->wl.nprompts; i++)
		free(sc->wl.prompts[i]);
	free(sc->wl.prompts);
	for (size_t i = 0; i < sc->nchecks; i++)
		free(sc->checks[i]);
	free(sc->checks);
	free(sc->expect_fail);
	free(sc->expect_match);
	free(sc->vllm);
	free(sc->vllm_side[0]);
	free(sc->vllm_side[1]);
	free(sc->proxy_contract);
	cJSON_Delete(sc->proxy_cmd);
	free(sc->proxy_ready);
	cJSON_Delete(sc->env);
	cJSON_Delete(sc->hosts);
	free(sc->launcher);
	cJSON_Delete(sc->faults);
	memset(sc, 0, sizeof(*sc));
}
