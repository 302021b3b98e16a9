/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_mooncake: mooncake.json as vLLM's MooncakeTransferEngineConfig.from_file and the Mooncake
 * adaptor read it (docs/vllm-v0.md), the exception vLLM raises, and pdkv's diagnostics. */
#include "cfg_internal.h"
#include "pd_env.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const cfg_mc_field_names[6] = {"prefill_url",      "decode_url", "metadata_server",
                                           "metadata_backend", "protocol",   "device_name"};

#define MC_MAX_FILE (64u << 20)

static void set_err(char **vllm_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(char **vllm_error, const char *fmt, ...)
{
	va_list ap;

	if (!vllm_error || *vllm_error)
		return;
	va_start(ap, fmt);
	*vllm_error = pd_vasprintf(fmt, ap);
	va_end(ap);
}

static const char *errno_class(int e)
{
	switch (e) {
	case ENOENT:
		return "FileNotFoundError";
	case EISDIR:
		return "IsADirectoryError";
	case EACCES:
	case EPERM:
		return "PermissionError";
	case ENOTDIR:
		return "NotADirectoryError";
	default:
		return "OSError";
	}
}

static char *fld(char *buf, size_t n, const char *key)
{
	snprintf(buf, n, "mooncake.json: %s", key);
	return buf;
}

static void split_devices(struct cfg_mooncake *mc, struct cfg_diags *d)
{
	const char *s = mc->device_name ? mc->device_name : "";
	size_t n = *s ? cfg_py_split_count(s, ',') : 0, i = 0;
	const char *p = s;
	char f[64];
	int warned_empty = 0, warned_space = 0;

	fld(f, sizeof(f), "device_name");
	mc->device_names = calloc(n + 1, sizeof(char *));
	if (!mc->device_names)
		return;
	while (n && i < n) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		mc->device_names[i++] = strndup(p, l);
		p = c ? c + 1 : p + l;
	}
	mc->ndevice_names = i;
	for (i = 0; i < mc->ndevice_names; i++) {
		const char *t = mc->device_names[i];
		if (!t)
			continue;
		if (!*t && !warned_empty++)
			cfg_diag_add(
			    d, CFG_WARNING, f,
			    "%s: device_name \"%s\" has an empty entry (position %zu); remove "
			    "the extra ','",
			    mc->path, s, i);
		else if (*t && strpbrk(t, " \t") && !warned_space++)
			cfg_diag_add(
			    d, CFG_WARNING, f,
			    "%s: device_name \"%s\": entry \"%s\" contains whitespace; the "
			    "adaptor splits on ',' only, so no NIC has that name. Write the "
			    "list without spaces, e.g. \"erdma_0,erdma_1\"",
			    mc->path, s, t);
	}
	if (mc->protocol && !strcmp(mc->protocol, "rdma") && !*s)
		cfg_diag_add(
		    d, CFG_ERROR, f,
		    "%s: protocol is \"rdma\" but device_name is empty; the RDMA transport "
		    "gets no NIC and TE init fails (vLLM ignores that and fails at the first "
		    "transfer). Write the RDMA device(s), e.g. \"device_name\": \"mlx5_0\" "
		    "(see ibv_devices)",
		    mc->path);
	if (mc->protocol && !strcmp(mc->protocol, "tcp") && *s)
		cfg_diag_add(d, CFG_INFO, f, "%s: device_name \"%s\" is not used with protocol tcp",
		             mc->path, s);
}

/* MooncakePipe construction (docs/vllm-v0.md): url.split(':') into two pieces and int() of each
 * port. 0 ok, -1 with the exception set; *port_bad when a ZMQ port B+9/B+10 would fall outside
 * 0..65535. */
static int v0_urls(const struct cfg_mooncake *mc, char **err, bool *port_bad)
{
	const char *urls[2] = {mc->prefill_url, mc->decode_url};
	char *h[2] = {NULL, NULL}, *p[2] = {NULL, NULL};
	int k, ret = -1;
	bool huge;
	int64_t v;

	for (k = 0; k < 2; k++) {
		const char *t = mc->types[k];
		if (strcmp(t, "str") != 0) {
			set_err(err, "AttributeError: '%s' object has no attribute 'split'",
			        !strcmp(t, "absent") ? "NoneType" : t);
			goto out;
		}
		if (cfg_py_split2(urls[k], ':', &h[k], &p[k])) {
			if (cfg_py_split_count(urls[k], ':') < 2)
				set_err(err, "ValueError: not enough values to unpack (expected 2, "
				             "got 1)");
			else
				set_err(err, "ValueError: too many values to unpack (expected 2)");
			goto out;
		}
	}
	for (k = 0; k < 2; k++) {
		char *r;
		if (cfg_py_int(p[k], &v, &huge) == 0) {
			*port_bad |= huge || v < -9 || v > 65535 - 9;
			continue;
		}
		r = cfg_py_repr(p[k]);
		set_err(err, "ValueError: invalid literal for int() with base 10: %s", r ? r : "");
		free(r);
		goto out;
	}
	ret = 0;
out:
	for (k = 0; k < 2; k++) {
		free(h[k]);
		free(p[k]);
	}
	return ret;
}

/* The adaptor (docs/vllm-v0.md) + pybind11: metadata_backend.lower() and the membership test, then
 * initialize() / initializeExt() take str or None for each const char * argument. */
static int v0_init_args(const struct cfg_mooncake *mc, char **err)
{
	const char *bt = mc->types[CFG_MC_METADATA_BACKEND];
	bool types_bad = false;
	char lower[64];

	for (int k = CFG_MC_METADATA_SERVER; k <= CFG_MC_DEVICE_NAME; k++) {
		const char *t = mc->types[k];
		if (k != CFG_MC_METADATA_BACKEND && strcmp(t, "str") && strcmp(t, "NoneType") &&
		    strcmp(t, "absent"))
			types_bad = true;
	}
	if (strcmp(bt, "absent") && strcmp(bt, "NoneType")) {
		if (strcmp(bt, "str")) {
			set_err(err, "AttributeError: '%s' object has no attribute 'lower'", bt);
			return -1;
		}
		cfg_ascii_lower(lower, sizeof(lower), mc->metadata_backend);
		if (strcmp(lower, "etcd") && strcmp(lower, "redis")) {
			set_err(err, "ValueError: Mooncake Configuration error. "
			             "`metadata_backend`should be one of ['etcd', 'redis'].");
			return -1;
		}
	}
	if (!types_bad)
		return 0;
	set_err(err,
	        "TypeError: %s(): incompatible function arguments. The following argument "
	        "types are supported: 1. (self, arg0: str, arg1: str, arg2: str, arg3: "
	        "str%s) -> int",
	        mc->metadata_backend ? "initializeExt" : "initialize",
	        mc->metadata_backend ? ", arg4: str" : "");
	return -1;
}

/* MooncakePipe construction up to the ZMQ sockets (docs/vllm-v0.md): the first exception
 * vLLM raises, for the side whose kv_rank is given (both ends are checked by the caller). */
static void v0_construct(struct cfg_mooncake *mc, struct cfg_diags *d, char **err)
{
	bool port_bad = false;
	size_t sl;

	if (v0_urls(mc, err, &port_bad) || v0_init_args(mc, err))
		return;
	if (!mc->metadata_server || !mc->protocol || !mc->device_name) {
		/* None → nullptr → std::string(nullptr) inside the adaptor (uncertain) */
		set_err(err, "RuntimeError: basic_string::_M_construct null not valid");
		cfg_diag_add(d, CFG_INFO, NULL,
		             "%s: vLLM's exact failure for a null %s is uncertain (the adaptor "
		             "receives a null pointer; a C++ exception or a crash)",
		             mc->path,
		             !mc->metadata_server ? "metadata_server"
		             : !mc->protocol      ? "protocol"
		                                  : "device_name");
	}
	/* initialize() → the engine's MetadataStoragePlugin::Create: a scheme without a plugin
	 * is LOG(FATAL), i.e. the worker process aborts; no Python exception exists to name */
	if (mc->conn_string && !cfg_meta_scheme_known(mc->conn_string, &sl))
		set_err(
		    err,
		    "process abort (Mooncake LOG(FATAL)): Unable to find metadata storage plugin "
		    "%.*s",
		    (int)sl, mc->conn_string);
	/* MooncakePipe then binds port B+9+2r on all interfaces; libzmq rejects ports outside
	 * 0..65535 */
	if (port_bad)
		set_err(err, "zmq.error.ZMQError: Invalid argument");
}

static char *str_or_null(const cJSON *v)
{
	return (v && cJSON_IsString(v)) ? strdup(v->valuestring) : NULL;
}

int cfg_mooncake_load(const char *path, enum cfg_vllm vllm, struct cfg_mooncake *out,
                      struct cfg_diags *d, char **vllm_error)
{
	if (!path)
		return cfg_mooncake_load_ex(pd_env_raw("MOONCAKE_CONFIG_PATH"), true, vllm, out, d,
		                            vllm_error);
	return cfg_mooncake_load_ex(path, false, vllm, out, d, vllm_error);
}

/* MOONCAKE_CONFIG_PATH as SimpleConnector checks it. 1 = go on reading path, 0 = nothing to read
 * (V1 without the variable), -1 = vLLM fails here. */
static int mc_env_path(const char *path, enum cfg_vllm vllm, struct cfg_diags *d, char **err)
{
	if (path) {
		if (!*path)
			cfg_diag_add(
			    d, CFG_ERROR, "MOONCAKE_CONFIG_PATH",
			    "MOONCAKE_CONFIG_PATH is set but empty; vLLM's pre-check passes "
			    "(it only tests for unset) and open('') fails. Point it at the "
			    "mooncake.json file");
		return 1;
	}
	if (vllm == CFG_VLLM_V1) {
		cfg_diag_add(d, CFG_INFO, "MOONCAKE_CONFIG_PATH",
		             "not set; fine for vLLM V1, whose MooncakeConnector reads no "
		             "mooncake.json");
		return 0;
	}
	set_err(err, "ValueError: To use MooncakeConnector, you need to pass the ENV: "
	             "'MOONCAKE_CONFIG_PATH=/path/to/mooncake_config.json'.");
	cfg_diag_add(d, CFG_ERROR, "MOONCAKE_CONFIG_PATH",
	             "MOONCAKE_CONFIG_PATH is not set (vLLM checks it when the worker starts); "
	             "export MOONCAKE_CONFIG_PATH=/path/to/mooncake.json or pass "
	             "--mooncake-config FILE");
	return -1;
}

/* open() + read(): 0 with the bytes, or -1 with open()'s exception. */
static int mc_read(const char *path, bool from_env, struct cfg_diags *d, char **err, char **buf,
                   size_t *len)
{
	struct stat st;
	char *r;
	int ret;

	if (*path && stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		/* Python's open() would block here waiting for a writer; pdkv must not hang */
		cfg_diag_add(d, CFG_ERROR, "mooncake.json",
		             "%s is a FIFO or socket, not a file; vLLM's open() would block. Give "
		             "the path of the JSON file",
		             path);
		return -1;
	}
	ret = *path ? pd_read_file(path, MC_MAX_FILE, buf, len) : -ENOENT;
	if (!ret)
		return 0;
	if (ret == -EFBIG) {
		cfg_diag_add(d, CFG_ERROR, "mooncake.json",
		             "%s: larger than %u MiB; this is not a mooncake.json", path,
		             MC_MAX_FILE >> 20);
		return -1;
	}
	r = cfg_py_repr(path);
	set_err(err, "%s: [Errno %d] %s: %s", errno_class(-ret), -ret, strerror(-ret),
	        r ? r : path);
	free(r);
	if (!*path && !from_env)
		cfg_diag_add(d, CFG_ERROR, "mooncake.json",
		             "the mooncake.json path is empty; give the file's path");
	if (*path)
		cfg_diag_add(
		    d, CFG_ERROR, "mooncake.json", "%s: cannot read: %s%s", path, strerror(-ret),
		    ret == -EISDIR ? " (give the path of the JSON file, not its directory)" : "");
	return -1;
}

/* json.load and the .get() that needs a dict; NULL with the exception set otherwise. */
static cJSON *mc_parse(const char *path, const char *buf, size_t len, struct cfg_diags *d,
                       char **err)
{
	char *jerr = NULL;
	cJSON *root = cfg_pyjson_parse(buf, len, &jerr);

	if (!root) {
		set_err(err, "%s", jerr ? jerr : "ValueError: unreadable");
		cfg_diag_add(d, CFG_ERROR, "mooncake.json", "%s: not valid JSON: %s%s", path,
		             jerr ? jerr : "?",
		             len == 0 ? " (the file is empty)"
		             : strstr(jerr ? jerr : "", "RecursionError")
		                 ? " (nested deeper than Python's recursion limit)"
		                 : "; fix the syntax (JSON needs double quotes, no trailing "
		                   "commas, no comments)");
		free(jerr);
		return NULL;
	}
	free(jerr);
	if (cJSON_IsObject(root))
		return root;
	set_err(err, "AttributeError: '%s' object has no attribute 'get'", cfg_py_type(root));
	cfg_diag_add(d, CFG_ERROR, "mooncake.json",
	             "%s: the top level is a JSON %s; it must be an object {\"prefill_url\": "
	             "..., \"decode_url\": ..., ...}",
	             path, cfg_py_type(root));
	cJSON_Delete(root);
	return NULL;
}

/* from_file's .get() calls with their defaults, plus each key's Python type. */
static void mc_fields(struct cfg_mooncake *out, const cJSON *root)
{
	for (int k = 0; k < 6; k++) {
		const cJSON *v = cfg_pyjson_get(root, cfg_mc_field_names[k]);
		if (v)
			snprintf(out->types[k], sizeof(out->types[k]), "%s", cfg_py_type(v));
	}
	out->prefill_url = str_or_null(cfg_pyjson_get(root, "prefill_url"));
	out->decode_url = str_or_null(cfg_pyjson_get(root, "decode_url"));
	out->metadata_server = str_or_null(cfg_pyjson_get(root, "metadata_server"));
	out->metadata_backend = str_or_null(cfg_pyjson_get(root, "metadata_backend"));
	if (!cfg_pyjson_get(root, "protocol"))
		out->protocol = strdup("tcp");
	else
		out->protocol = str_or_null(cfg_pyjson_get(root, "protocol"));
	if (!cfg_pyjson_get(root, "device_name"))
		out->device_name = strdup("");
	else
		out->device_name = str_or_null(cfg_pyjson_get(root, "device_name"));
}

/* unknown keys: ignored by vLLM */
static void mc_unknown(const char *path, const cJSON *root, struct cfg_diags *d)
{
	size_t unknown = 0;

	for (const cJSON *it = root->child; it; it = it->next) {
		bool known = false;
		for (int k = 0; k < 6; k++)
			known |= it->string && !strcmp(it->string, cfg_mc_field_names[k]);
		if (!known && it->string && ++unknown <= 10)
			cfg_diag_add(d, CFG_WARNING, "mooncake.json",
			             "%s: unknown key \"%.64s\" is ignored by vLLM (known: "
			             "prefill_url, decode_url, metadata_server, metadata_backend, "
			             "protocol, device_name)",
			             path, it->string);
	}
	if (unknown > 10)
		cfg_diag_add(d, CFG_WARNING, "mooncake.json", "%s: ... and %zu more unknown keys",
		             path, unknown - 10);
}

/* Values from_file takes as they are but the adaptor cannot use. */
static void mc_type_diags(const struct cfg_mooncake *out, const char *path, struct cfg_diags *d)
{
	for (int k = 0; k < 6; k++) {
		char f[64];
		const char *t = out->types[k];
		fld(f, sizeof(f), cfg_mc_field_names[k]);
		if (!strcmp(t, "absent") && k == CFG_MC_PROTOCOL)
			cfg_diag_add(
			    d, CFG_INFO, f,
			    "%s: protocol is absent; vLLM passes \"tcp\" (the docs' "
			    "auto-detection is not implemented). Write \"protocol\": \"rdma\" "
			    "for RDMA",
			    path);
		else if (!strcmp(t, "NoneType") && k == CFG_MC_PROTOCOL)
			cfg_diag_add(d, CFG_ERROR, f,
			             "%s: protocol is null, which vLLM passes on as None (not the "
			             "\"tcp\" default); write \"tcp\" or \"rdma\"",
			             path);
		else if (!strcmp(t, "NoneType") && k == CFG_MC_DEVICE_NAME)
			cfg_diag_add(
			    d, CFG_ERROR, f,
			    "%s: device_name is null, which vLLM passes on as None (not the "
			    "\"\" default); write \"\" for tcp or the NIC names for rdma",
			    path);
		else if (strcmp(t, "str") && strcmp(t, "absent") && strcmp(t, "NoneType"))
			cfg_diag_add(d, CFG_ERROR, f, "%s: %s must be a string, got a JSON %s",
			             path, cfg_mc_field_names[k], t);
	}
	if (out->protocol && strcmp(out->protocol, "rdma") && strcmp(out->protocol, "tcp"))
		cfg_diag_add(d, CFG_ERROR, "mooncake.json: protocol",
		             "%s: protocol \"%s\" is not \"rdma\" or \"tcp\" (case-sensitive); the "
		             "adaptor logs \"Unsupported protocol\", vLLM ignores the failed init "
		             "and transfers fail later",
		             path, out->protocol);
}

static void mc_backend_diags(const struct cfg_mooncake *out, const char *path, enum cfg_vllm vllm,
                             struct cfg_diags *d)
{
	char lower[64];

	if (!out->metadata_backend || vllm != CFG_VLLM_V0)
		return;
	cfg_ascii_lower(lower, sizeof(lower), out->metadata_backend);
	if (!strcmp(lower, "etcd") || !strcmp(lower, "redis"))
		return;
	if (!strcmp(lower, "http"))
		cfg_diag_add(d, CFG_ERROR, "mooncake.json: metadata_backend",
		             "%s: metadata_backend \"%s\" is rejected by vLLM (only etcd and "
		             "redis, although the docs list http). Remove metadata_backend and "
		             "write \"metadata_server\": \"http://<host>:<port>/metadata\"",
		             path, out->metadata_backend);
	else
		cfg_diag_add(d, CFG_ERROR, "mooncake.json: metadata_backend",
		             "%s: metadata_backend \"%s\" is not one of etcd, redis; remove it and "
		             "put the scheme in metadata_server (e.g. \"etcd://h:2379\")",
		             path, out->metadata_backend);
}

int cfg_mooncake_load_ex(const char *path, bool from_env, enum cfg_vllm vllm,
                         struct cfg_mooncake *out, struct cfg_diags *d, char **vllm_error)
{
	char *buf = NULL, *err = NULL;
	size_t len = 0;
	cJSON *root = NULL;
	int ret = -1, k;

	memset(out, 0, sizeof(*out));
	for (k = 0; k < 6; k++)
		snprintf(out->types[k], sizeof(out->types[k]), "absent");
	if (vllm_error)
		*vllm_error = NULL;
	if (from_env && (k = mc_env_path(path, vllm, d, &err)) <= 0) {
		ret = k;
		goto out;
	}
	out->path = strdup(path);
	if (vllm == CFG_VLLM_V1)
		cfg_diag_add(d, CFG_INFO, NULL,
		             "%s: vLLM V1's MooncakeConnector does not read mooncake.json; it is "
		             "checked here for reference only",
		             path);
	if (mc_read(path, from_env, d, &err, &buf, &len) ||
	    !(root = mc_parse(path, buf, len, d, &err)))
		goto out;
	out->loaded = true;
	mc_fields(out, root);
	mc_unknown(path, root, d);
	mc_type_diags(out, path, d);
	mc_backend_diags(out, path, vllm, d);
	cfg_mc_resolve_metadata(out, vllm, d);
	split_devices(out, d);
	if (vllm == CFG_VLLM_V0)
		v0_construct(out, d, &err);
	ret = err ? -1 : 0;
out:
	if (vllm_error)
		*vllm_error = err;
	else
		free(err);
	free(buf);
	cJSON_Delete(root);
	return ret;
}

void cfg_mooncake_free(struct cfg_mooncake *mc)
{
	size_t i;

	if (!mc)
		return;
	free(mc->path);
	free(mc->prefill_url);
	free(mc->decode_url);
	free(mc->metadata_server);
	free(mc->metadata_backend);
	free(mc->protocol);
	free(mc->device_name);
	free(mc->conn_string);
	for (i = 0; mc->device_names && i < mc->ndevice_names; i++)
		free(mc->device_names[i]);
	free(mc->device_names);
	memset(mc, 0, sizeof(*mc));
}
