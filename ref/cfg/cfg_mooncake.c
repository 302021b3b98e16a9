/* cfg_mooncake: mooncake.json as vLLM's MooncakeTransferEngineConfig.from_file and the Mooncake
 * adaptor read it (docs/vllm-v0.md), the exception vLLM raises, and pdkv's diagnostics. */
#include "cfg_internal.h"
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
	char *s = NULL;

	if (!vllm_error || *vllm_error)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	*vllm_error = s;
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

/* adaptor initialize/initializeExt + TE parseConnectionString (docs/metadata.md). */
static void resolve_metadata(struct cfg_mooncake *mc, enum cfg_vllm vllm, struct cfg_diags *d)
{
	const char *ms = mc->metadata_server, *be = mc->metadata_backend, *sep;
	char f[64], lower[64];
	size_t i;

	fld(f, sizeof(f), "metadata_server");
	if (!ms) {
		cfg_diag_add(
		    d, CFG_ERROR, f,
		    "%s: metadata_server is missing; the adaptor receives None (a null "
		    "pointer) and the engine cannot start. Write e.g. \"metadata_server\": "
		    "\"etcd://192.168.0.139:2379\"",
		    mc->path);
		return;
	}
	if (!*ms) {
		cfg_diag_add(
		    d, CFG_ERROR, f,
		    "%s: metadata_server is empty; write e.g. \"etcd://192.168.0.139:2379\"",
		    mc->path);
	}
	sep = strstr(ms, "://");
	if (strcmp(ms, "P2PHANDSHAKE") == 0 && vllm == CFG_VLLM_V0) {
		/* The adaptor only knows "<scheme>://": a bare word gets the backend (or etcd)
		 * prefix. */
		const char *sc = "etcd";
		if (be) {
			for (i = 0; be[i] && i < sizeof(lower) - 1; i++)
				lower[i] =
				    (char)((be[i] >= 'A' && be[i] <= 'Z') ? be[i] + 32 : be[i]);
			lower[i] = 0;
			sc = lower;
		}
		if (asprintf(&mc->conn_string, "%s://%s", sc, ms) < 0)
			mc->conn_string = NULL;
		cfg_diag_add(
		    d, CFG_ERROR, f,
		    "%s: metadata_server \"P2PHANDSHAKE\" does not reach the transfer engine "
		    "through the V0 adaptor: it becomes \"%s\" (an etcd server named "
		    "P2PHANDSHAKE), TE init fails and vLLM ignores the failure. Use an etcd, "
		    "redis or http metadata server with vLLM V0",
		    mc->path, mc->conn_string ? mc->conn_string : "etcd://P2PHANDSHAKE");
		return;
	}
	if (sep || strcmp(ms, "P2PHANDSHAKE") == 0) {
		mc->conn_string = strdup(ms);
		if (be && sep)
			cfg_diag_add(
			    d, CFG_INFO, "mooncake.json: metadata_backend",
			    "%s: metadata_backend \"%s\" is ignored because metadata_server "
			    "\"%s\" carries a scheme (the prefix wins)",
			    mc->path, be, ms);
	} else {
		const char *scheme = "etcd";
		if (be) {
			for (i = 0; be[i] && i < sizeof(lower) - 1; i++)
				lower[i] =
				    (char)((be[i] >= 'A' && be[i] <= 'Z') ? be[i] + 32 : be[i]);
			lower[i] = 0;
			scheme = lower;
		}
		if (asprintf(&mc->conn_string, "%s://%s", scheme, ms) < 0)
			mc->conn_string = NULL;
		if (be)
			cfg_diag_add(
			    d, CFG_INFO, "mooncake.json: metadata_backend",
			    "%s: metadata_backend is deprecated; write \"metadata_server\": "
			    "\"%s\" and drop metadata_backend",
			    mc->path, mc->conn_string ? mc->conn_string : "");
	}
	if (!mc->conn_string)
		return;
	if (strcmp(mc->conn_string, "P2PHANDSHAKE") == 0)
		return;
	sep = strstr(mc->conn_string, "://");
	{
		size_t sl = (size_t)(sep - mc->conn_string);
		const char *rest = sep + 3;
		bool known = (sl == 4 && !strncmp(mc->conn_string, "etcd", 4)) ||
		             (sl == 5 && !strncmp(mc->conn_string, "redis", 5)) ||
		             (sl == 4 && !strncmp(mc->conn_string, "http", 4)) ||
		             (sl == 5 && !strncmp(mc->conn_string, "https", 5));
		if (!known) {
			cfg_diag_add(
			    d, CFG_ERROR, f,
			    "%s: metadata_server \"%s\": scheme \"%.*s\" has no metadata "
			    "plugin; the transfer engine aborts the process (LOG(FATAL) "
			    "\"Unable to find metadata storage plugin\"). Use etcd://, redis:// "
			    "or http://",
			    mc->path, ms, (int)sl, mc->conn_string);
			return;
		}
		if (!*rest) {
			cfg_diag_add(d, CFG_ERROR, f, "%s: metadata_server \"%s\" names no server",
			             mc->path, ms);
			return;
		}
		if (!strncmp(mc->conn_string, "etcd", 4)) {
			if (strchr(rest, ',') || strchr(rest, ';')) {
				if (vllm == CFG_VLLM_V0)
					cfg_diag_add(
					    d, CFG_WARNING, f,
					    "%s: metadata_server \"%s\" is an etcd endpoint "
					    "list; TE <= 0.3.3.post2 (the one vLLM V0 needs) "
					    "passes it as ONE endpoint and cannot connect. Give "
					    "a single endpoint, e.g. \"etcd://%.*s\"",
					    mc->path, ms, (int)strcspn(rest, ",;"), rest);
				else
					cfg_diag_add(
					    d, CFG_INFO, f,
					    "%s: etcd endpoint list; only newer TE releases "
					    "split it on ','",
					    mc->path);
			} else if (!strchr(rest, ':')) {
				cfg_diag_add(
				    d, CFG_WARNING, f,
				    "%s: metadata_server \"%s\" has no port; write the etcd "
				    "client port explicitly, e.g. \"%s:2379\"",
				    mc->path, ms, ms);
			}
		} else if (!strncmp(mc->conn_string, "redis", 5)) {
			const char *c = strrchr(rest, ':');
			if (!c || strchr(rest, ']') > c)
				cfg_diag_add(
				    d, CFG_WARNING, f,
				    "%s: metadata_server \"%s\" has no port; the transfer "
				    "engine then connects to port 12001 (not redis' 6379). "
				    "Write \"%s:6379\"",
				    mc->path, ms, mc->conn_string);
			if (vllm == CFG_VLLM_V0)
				cfg_diag_add(
				    d, CFG_WARNING, f,
				    "%s: redis metadata needs a transfer engine built with "
				    "USE_REDIS; the stock mooncake-transfer-engine 0.3.3.post2 "
				    "wheel "
				    "is built without it and aborts at init",
				    mc->path);
		} else {
			const char *slash = strchr(rest, '/');
			if (!slash || !slash[1])
				cfg_diag_add(
				    d, CFG_WARNING, f,
				    "%s: metadata_server \"%s\" has no path; the HTTP plugin "
				    "uses the whole string as base URL and the shipped servers "
				    "serve /metadata. Write \"%s%s/metadata\"",
				    mc->path, ms, mc->conn_string, slash ? "" : "");
		}
	}
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

/* MooncakePipe construction up to the ZMQ sockets (docs/vllm-v0.md): the first exception
 * vLLM raises, for the side whose kv_rank is given (both ends are checked by the caller). */
static void v0_construct(struct cfg_mooncake *mc, struct cfg_diags *d, char **err)
{
	const char *urls[2] = {mc->prefill_url, mc->decode_url};
	char *h[2] = {NULL, NULL}, *p[2] = {NULL, NULL};
	int k;
	bool huge, port_bad = false;
	int64_t v;

	for (k = 0; k < 2; k++) {
		const char *t = mc->types[k];
		if (strcmp(t, "str") != 0) {
			set_err(err, "AttributeError: '%s' object has no attribute 'split'",
			        !strcmp(t, "absent") ? "NoneType" : t);
			goto out;
		}
		if (cfg_py_split2(urls[k], ':', &h[k], &p[k])) {
			size_t n = cfg_py_split_count(urls[k], ':');
			if (n < 2)
				set_err(
				    err,
				    "ValueError: not enough values to unpack (expected 2, got 1)");
			else
				set_err(err, "ValueError: too many values to unpack (expected 2)");
			goto out;
		}
	}
	for (k = 0; k < 2; k++) {
		char *r;
		if (cfg_py_int(p[k], &v, &huge) == 0 && (huge || v < -9 || v > 65535 - 9))
			port_bad = true;
		if (cfg_py_int(p[k], &v, &huge)) {
			r = cfg_py_repr(p[k]);
			set_err(err, "ValueError: invalid literal for int() with base 10: %s",
			        r ? r : "");
			free(r);
			goto out;
		}
	}
	/* initialize(): pybind11 takes str or None for each const char * argument. */
	{
		int types_bad = -1;
		for (k = CFG_MC_METADATA_SERVER; k <= CFG_MC_DEVICE_NAME; k++) {
			const char *t = mc->types[k];
			if (k == CFG_MC_METADATA_BACKEND)
				continue;
			if (strcmp(t, "str") && strcmp(t, "NoneType") && strcmp(t, "absent"))
				types_bad = k;
		}
		if (!strcmp(mc->types[CFG_MC_METADATA_BACKEND], "absent") ||
		    !strcmp(mc->types[CFG_MC_METADATA_BACKEND], "NoneType")) {
			if (types_bad >= 0)
				goto typeerr;
		} else {
			const char *t = mc->types[CFG_MC_METADATA_BACKEND];
			char lower[64];
			size_t i;
			if (strcmp(t, "str")) {
				set_err(err, "AttributeError: '%s' object has no attribute 'lower'",
				        t);
				goto out;
			}
			for (i = 0; mc->metadata_backend[i] && i < sizeof(lower) - 1; i++)
				lower[i] = (char)((mc->metadata_backend[i] >= 'A' &&
				                   mc->metadata_backend[i] <= 'Z')
				                      ? mc->metadata_backend[i] + 32
				                      : mc->metadata_backend[i]);
			lower[i] = 0;
			if (strcmp(lower, "etcd") && strcmp(lower, "redis")) {
				set_err(err,
				        "ValueError: Mooncake Configuration error. "
				        "`metadata_backend`should be one of ['etcd', 'redis'].");
				goto out;
			}
			if (types_bad >= 0)
				goto typeerr;
		}
		if (!mc->metadata_server || !mc->protocol || !mc->device_name) {
			/* None → nullptr → std::string(nullptr) inside the adaptor
			 * (docs/vllm-v0.md) */
			set_err(err, "RuntimeError: basic_string::_M_construct null not valid");
			cfg_diag_add(
			    d, CFG_INFO, NULL,
			    "%s: vLLM's exact failure for a null %s is uncertain (the adaptor "
			    "receives a null pointer; a C++ exception or a crash)",
			    mc->path,
			    !mc->metadata_server ? "metadata_server"
			    : !mc->protocol      ? "protocol"
			                         : "device_name");
		}
		/* MooncakePipe then binds port B+9+2r on all interfaces; libzmq rejects ports
		 * outside 0..65535 */
		if (port_bad)
			set_err(err, "zmq.error.ZMQError: Invalid argument");
		goto out;
	typeerr:
		set_err(err,
		        "TypeError: %s(): incompatible function arguments. The following argument "
		        "types are supported: 1. (self, arg0: str, arg1: str, arg2: str, arg3: "
		        "str%s) -> int",
		        mc->metadata_backend ? "initializeExt" : "initialize",
		        mc->metadata_backend ? ", arg4: str" : "");
	}
out:
	for (k = 0; k < 2; k++) {
		free(h[k]);
		free(p[k]);
	}
}

static char *str_or_null(const cJSON *v)
{
	return (v && cJSON_IsString(v)) ? strdup(v->valuestring) : NULL;
}

int cfg_mooncake_load(const char *path, enum cfg_vllm vllm, struct cfg_mooncake *out,
                      struct cfg_diags *d, char **vllm_error)
{
	if (!path)
		return cfg_mooncake_load_ex(getenv("MOONCAKE_CONFIG_PATH"), true, vllm, out, d,
		                            vllm_error);
	return cfg_mooncake_load_ex(path, false, vllm, out, d, vllm_error);
}

int cfg_mooncake_load_ex(const char *path, bool from_env, enum cfg_vllm vllm,
                         struct cfg_mooncake *out, struct cfg_diags *d, char **vllm_error)
{
	char *buf = NULL, *jerr = NULL, *r = NULL;
	size_t len = 0;
	cJSON *root = NULL;
	int ret, k;
	char *err = NULL;
	struct stat st;

	memset(out, 0, sizeof(*out));
	for (k = 0; k < 6; k++)
		snprintf(out->types[k], sizeof(out->types[k]), "absent");
	if (vllm_error)
		*vllm_error = NULL;
	if (from_env) {
		if (!path) {
			if (vllm == CFG_VLLM_V1) {
				cfg_diag_add(
				    d, CFG_INFO, "MOONCAKE_CONFIG_PATH",
				    "not set; fine for vLLM V1, whose MooncakeConnector reads "
				    "no mooncake.json");
				return 0;
			}
			set_err(&err, "ValueError: To use MooncakeConnector, you need to pass the "
			              "ENV: 'MOONCAKE_CONFIG_PATH=/path/to/mooncake_config.json'.");
			cfg_diag_add(
			    d, CFG_ERROR, "MOONCAKE_CONFIG_PATH",
			    "MOONCAKE_CONFIG_PATH is not set (vLLM checks it when the worker "
			    "starts); export MOONCAKE_CONFIG_PATH=/path/to/mooncake.json or pass "
			    "--mooncake-config FILE");
			ret = -1;
			goto out;
		}
		if (!*path)
			cfg_diag_add(
			    d, CFG_ERROR, "MOONCAKE_CONFIG_PATH",
			    "MOONCAKE_CONFIG_PATH is set but empty; vLLM's pre-check passes "
			    "(it only tests for unset) and open('') fails. Point it at the "
			    "mooncake.json file");
	}
	out->path = strdup(path);
	if (vllm == CFG_VLLM_V1)
		cfg_diag_add(d, CFG_INFO, NULL,
		             "%s: vLLM V1's MooncakeConnector does not read mooncake.json; it is "
		             "checked here for reference only",
		             path);
	if (*path && stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		/* Python's open() would block here waiting for a writer; pdkv must not hang */
		cfg_diag_add(d, CFG_ERROR, "mooncake.json",
		             "%s is a FIFO or socket, not a file; vLLM's open() would block. Give "
		             "the path of the JSON file",
		             path);
		ret = -1;
		goto out;
	}
	ret = *path ? pd_read_file(path, MC_MAX_FILE, &buf, &len) : -ENOENT;
	if (ret) {
		if (ret == -EFBIG) {
			cfg_diag_add(d, CFG_ERROR, "mooncake.json",
			             "%s: larger than %u MiB; this is not a mooncake.json", path,
			             MC_MAX_FILE >> 20);
			ret = -1;
			goto out;
		}
		r = cfg_py_repr(path);
		set_err(&err, "%s: [Errno %d] %s: %s", errno_class(-ret), -ret, strerror(-ret),
		        r ? r : path);
		if (!*path && !from_env)
			cfg_diag_add(d, CFG_ERROR, "mooncake.json",
			             "the mooncake.json path is empty; give the file's path");
		if (*path)
			cfg_diag_add(d, CFG_ERROR, "mooncake.json", "%s: cannot read: %s%s", path,
			             strerror(-ret),
			             ret == -EISDIR ? " (give the path of the JSON file, not its "
			                              "directory)"
			                            : "");
		ret = -1;
		goto out;
	}
	root = cfg_pyjson_parse(buf, len, &jerr);
	if (!root) {
		set_err(&err, "%s", jerr ? jerr : "ValueError: unreadable");
		cfg_diag_add(d, CFG_ERROR, "mooncake.json", "%s: not valid JSON: %s%s", path,
		             jerr ? jerr : "?",
		             len == 0 ? " (the file is empty)"
		             : strstr(jerr ? jerr : "", "RecursionError")
		                 ? " (nested deeper than Python's recursion limit)"
		                 : "; fix the syntax (JSON needs double quotes, no trailing "
		                   "commas, no comments)");
		ret = -1;
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		set_err(&err, "AttributeError: '%s' object has no attribute 'get'",
		        cfg_py_type(root));
		cfg_diag_add(
		    d, CFG_ERROR, "mooncake.json",
		    "%s: the top level is a JSON %s; it must be an object {\"prefill_url\": "
		    "..., \"decode_url\": ..., ...}",
		    path, cfg_py_type(root));
		ret = -1;
		goto out;
	}
	out->loaded = true;
	for (k = 0; k < 6; k++) {
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

	/* unknown keys: ignored by vLLM */
	{
		const cJSON *it;
		size_t unknown = 0;
		for (it = root->child; it; it = it->next) {
			bool known = false;
			for (k = 0; k < 6; k++)
				known |= it->string && !strcmp(it->string, cfg_mc_field_names[k]);
			if (!known && it->string && ++unknown <= 10)
				cfg_diag_add(
				    d, CFG_WARNING, "mooncake.json",
				    "%s: unknown key \"%.64s\" is ignored by vLLM (known: "
				    "prefill_url, decode_url, metadata_server, metadata_backend, "
				    "protocol, device_name)",
				    path, it->string);
		}
		if (unknown > 10)
			cfg_diag_add(d, CFG_WARNING, "mooncake.json",
			             "%s: ... and %zu more unknown keys", path, unknown - 10);
	}
	for (k = 0; k < 6; k++) {
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
		cfg_diag_add(
		    d, CFG_ERROR, "mooncake.json: protocol",
		    "%s: protocol \"%s\" is not \"rdma\" or \"tcp\" (case-sensitive); the "
		    "adaptor logs \"Unsupported protocol\", vLLM ignores the failed init and "
		    "transfers fail later",
		    path, out->protocol);
	if (out->metadata_backend) {
		char lower[64];
		size_t i;
		for (i = 0; out->metadata_backend[i] && i < sizeof(lower) - 1; i++)
			lower[i] = (char)((out->metadata_backend[i] >= 'A' &&
			                   out->metadata_backend[i] <= 'Z')
			                      ? out->metadata_backend[i] + 32
			                      : out->metadata_backend[i]);
		lower[i] = 0;
		if (strcmp(lower, "etcd") && strcmp(lower, "redis") && vllm == CFG_VLLM_V0) {
			if (!strcmp(lower, "http"))
				cfg_diag_add(
				    d, CFG_ERROR, "mooncake.json: metadata_backend",
				    "%s: metadata_backend \"%s\" is rejected by vLLM (only etcd "
				    "and redis, although the docs list http). Remove "
				    "metadata_backend and write \"metadata_server\": "
				    "\"http://<host>:<port>/metadata\"",
				    path, out->metadata_backend);
			else
				cfg_diag_add(
				    d, CFG_ERROR, "mooncake.json: metadata_backend",
				    "%s: metadata_backend \"%s\" is not one of etcd, redis; "
				    "remove it and put the scheme in metadata_server (e.g. "
				    "\"etcd://h:2379\")",
				    path, out->metadata_backend);
		}
	}
	resolve_metadata(out, vllm, d);
	split_devices(out, d);
	if (vllm == CFG_VLLM_V0)
		v0_construct(out, d, &err);
	ret = err ? -1 : 0;
out:
	if (vllm_error)
		*vllm_error = err;
	else
		free(err);
	free(jerr);
	free(r);
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
