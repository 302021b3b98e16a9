/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_kvt: --kv-transfer-config as vLLM parses it — V0: pydantic KVTransferConfig.from_cli (lax
 * coercion, unknown keys ignored, argparse's "invalid from_cli value"); V1: the dataclass. */
#include "cfg_internal.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* pydantic's collected validation errors, worded like ValidationError's lines. */
struct perr {
	char *text;
	size_t n;
};

static void perr_add(struct perr *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr_add(struct perr *p, const char *fmt, ...)
{
	va_list ap;
	char *line, *nt = NULL;

	va_start(ap, fmt);
	line = pd_vasprintf(fmt, ap);
	va_end(ap);
	if (!line)
		return;
	if (asprintf(&nt, "%s%s%s", p->text ? p->text : "", p->text ? "; " : "", line) < 0)
		nt = NULL;
	free(line);
	if (!nt)
		return;
	free(p->text);
	p->text = nt;
	p->n++;
}

/* pydantic's input_value: repr() of the Python value the JSON became. */
static char *short_input(const cJSON *v)
{
	char *s;

	if (cJSON_IsString(v))
		s = cfg_py_repr(v->valuestring);
	else if (cJSON_IsNumber(v) && v->valuestring)
		s = strdup(v->valuestring);
	else if (cJSON_IsNull(v))
		s = strdup("None");
	else if (cJSON_IsBool(v))
		s = strdup(cJSON_IsTrue(v) ? "True" : "False");
	else
		s = cJSON_PrintUnformatted(v);
	if (s && strlen(s) > 60)
		strcpy(s + 56, "...");
	return s;
}

enum ftype { F_STR_OPT, F_STR, F_INT_OPT, F_INT, F_FLOAT, F_DICT, F_BOOL, F_POLICY };

/* One field's coercion: the JSON value, its repr() for pydantic's messages, and where the
 * result goes. */
struct cv {
	struct perr *pe;
	const char *name, *in;
	const cJSON *v;
	char **s;
	int64_t *i;
	double *f;
	struct cfg_diags *d;
};

static int coerce_str(const struct cv *c, enum ftype t)
{
	const cJSON *v = c->v;

	if (!cJSON_IsString(v)) {
		perr_add(c->pe,
		         "%s: Input should be a valid string [type=string_type, input_value=%s]",
		         c->name, c->in);
		return -1;
	}
	if (t == F_POLICY && strcmp(v->valuestring, "recompute") &&
	    strcmp(v->valuestring, "fail")) {
		perr_add(c->pe,
		         "%s: Input should be 'recompute' or 'fail' [type=literal_error, "
		         "input_value=%s]",
		         c->name, c->in);
		return -1;
	}
	*c->s = strdup(v->valuestring);
	return 0;
}

/* A JSON number for an int field: ints as Python reads them, floats only when integral. */
static int coerce_int_number(const struct cv *c)
{
	double x = c->v->valuedouble;

	if (!cfg_pyjson_is_float(c->v)) {
		int64_t tmp = 0;
		bool huge = false;
		if (c->v->valuestring && !cfg_py_int(c->v->valuestring, &tmp, &huge)) {
			*c->i = tmp;
			if (huge)
				cfg_diag_add(c->d, CFG_WARNING, NULL,
				             "kv-transfer-config: %s %s does not fit in 64 bits",
				             c->name, c->in);
		} else {
			*c->i = (int64_t)x;
		}
		return 0;
	}
	if (!isfinite(x)) {
		perr_add(c->pe,
		         "%s: Input should be a finite number [type=finite_number, input_value=%s]",
		         c->name, c->in);
		return -1;
	}
	if (x != floor(x)) {
		perr_add(c->pe,
		         "%s: Input should be a valid integer, got a number with a fractional part "
		         "[type=int_from_float, input_value=%s]",
		         c->name, c->in);
		return -1;
	}
	if (fabs(x) >= 9.2e18) {
		perr_add(c->pe,
		         "%s: Unable to parse input string as an integer, exceeded maximum size "
		         "[type=int_parsing_size]",
		         c->name);
		return -1;
	}
	*c->i = (int64_t)x;
	return 0;
}

/* A JSON string for an int field: pydantic strips whitespace, takes a sign, digits and
 * trailing ".0"s. */
static int coerce_int_string(const struct cv *c)
{
	char *cp = strdup(c->v->valuestring), *dot;
	int64_t tmp;
	bool huge = false;
	int ret = -1;

	if (cp && (dot = strchr(cp, '.')) != NULL) {
		size_t k = 1;
		while (dot[k] == '0')
			k++;
		if (k > 1 && (dot[k] == 0 || dot[k] == ' '))
			memmove(dot, dot + k, strlen(dot + k) + 1);
	}
	if (cp && !cfg_py_int(cp, &tmp, &huge)) {
		*c->i = tmp;
		ret = 0;
	} else {
		perr_add(
		    c->pe,
		    "%s: Input should be a valid integer, unable to parse string as an integer "
		    "[type=int_parsing, input_value=%s]",
		    c->name, c->in);
	}
	free(cp);
	return ret;
}

static int coerce_int(const struct cv *c)
{
	if (cJSON_IsBool(c->v)) {
		*c->i = cJSON_IsTrue(c->v);
		return 0;
	}
	if (cJSON_IsNumber(c->v))
		return coerce_int_number(c);
	if (cJSON_IsString(c->v))
		return coerce_int_string(c);
	perr_add(c->pe, "%s: Input should be a valid integer [type=int_type, input_value=%s]",
	         c->name, c->in);
	return -1;
}

/* Python float() of a str: '_' between digits, surrounding whitespace, no hex. */
static int coerce_float_string(const struct cv *c)
{
	char *end = NULL, *cp = strdup(c->v->valuestring), *b = cp;
	double x;
	size_t a, z;
	int ret = -1;

	if (!cp)
		return -1;
	for (a = z = 0; cp[a]; a++)
		if (!(cp[a] == '_' && a > 0 && cp[a - 1] >= '0' && cp[a - 1] <= '9' &&
		      cp[a + 1] >= '0' && cp[a + 1] <= '9'))
			cp[z++] = cp[a];
	cp[z] = 0;
	while (*b == ' ' || *b == '\t' || *b == '\n' || *b == '\r')
		b++;
	x = strtod(b, &end);
	while (end && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	/* strtod also reads hex floats, which Python's float() does not */
	if (end == b || (end && *end) || strpbrk(b, "xX")) {
		perr_add(c->pe,
		         "%s: Input should be a valid number, unable to parse string as a number "
		         "[type=float_parsing, input_value=%s]",
		         c->name, c->in);
	} else {
		*c->f = x;
		ret = 0;
	}
	free(cp);
	return ret;
}

static int coerce_float(const struct cv *c)
{
	if (cJSON_IsBool(c->v)) {
		*c->f = cJSON_IsTrue(c->v);
		return 0;
	}
	if (cJSON_IsNumber(c->v)) {
		*c->f = c->v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(c->v))
		return coerce_float_string(c);
	perr_add(c->pe, "%s: Input should be a valid number [type=float_type, input_value=%s]",
	         c->name, c->in);
	return -1;
}

static int coerce_bool(const struct cv *c)
{
	static const char *const tru[] = {"1", "on", "t", "true", "y", "yes"};
	static const char *const fal[] = {"0", "off", "f", "false", "n", "no"};
	const cJSON *v = c->v;
	int ret = -1;

	if (cJSON_IsBool(v)) {
		*c->i = cJSON_IsTrue(v);
		return 0;
	}
	if (cJSON_IsNumber(v) && !cfg_pyjson_is_float(v) &&
	    (v->valuedouble == 0 || v->valuedouble == 1)) {
		*c->i = v->valuedouble == 1;
		return 0;
	}
	if (!cJSON_IsString(v)) {
		perr_add(c->pe,
		         "%s: Input should be a valid boolean [type=bool_type, input_value=%s]",
		         c->name, c->in);
		return -1;
	}
	for (size_t k = 0; k < 6; k++) {
		if (!strcasecmp(v->valuestring, tru[k])) {
			*c->i = 1;
			ret = 0;
		}
		if (!strcasecmp(v->valuestring, fal[k])) {
			*c->i = 0;
			ret = 0;
		}
	}
	if (ret)
		perr_add(c->pe,
		         "%s: Input should be a valid boolean, unable to interpret input "
		         "[type=bool_parsing, input_value=%s]",
		         c->name, c->in);
	return ret;
}

/* pydantic lax mode, JSON input: returns 0 and fills the out pointers, or adds an error. */
static int coerce(struct perr *pe, const char *name, enum ftype t, const cJSON *v, char **s,
                  int64_t *i, double *f, bool *isnull, struct cfg_diags *d)
{
	char *in = short_input(v);
	struct cv c = {pe, name, in ? in : "", v, s, i, f, d};
	int ret = -1;

	*isnull = false;
	if (cJSON_IsNull(v) && (t == F_STR_OPT || t == F_INT_OPT)) {
		*isnull = true;
		ret = 0;
	} else if (t == F_STR_OPT || t == F_STR || t == F_POLICY) {
		ret = coerce_str(&c, t);
	} else if (t == F_INT_OPT || t == F_INT) {
		ret = coerce_int(&c);
	} else if (t == F_FLOAT) {
		ret = coerce_float(&c);
	} else if (t == F_BOOL) {
		ret = coerce_bool(&c);
	} else if (!cJSON_IsObject(v)) { /* F_DICT */
		perr_add(pe,
		         "%s: Input should be a valid dictionary [type=dict_type, input_value=%s]",
		         name, c.in);
	} else {
		*s = cJSON_PrintUnformatted(v);
		ret = 0;
	}
	free(in);
	return ret;
}

static const char *const v1_keys[] = {"engine_id",
                                      "kv_connector_extra_config",
                                      "kv_connector_module_path",
                                      "enable_permute_local_kv",
                                      "kv_load_failure_policy",
                                      NULL};

enum slot {
	S_NONE,
	S_CONNECTOR,
	S_DEVICE,
	S_SIZE,
	S_ROLE,
	S_RANK,
	S_PSIZE,
	S_IP,
	S_PORT,
	S_ENGINE,
	S_MODULE,
	S_EXTRA,
	S_POLICY
};
static const struct {
	const char *name;
	enum ftype t;
	enum slot slot;
	bool v1;
} fields[] = {
    {"kv_connector", F_STR_OPT, S_CONNECTOR, false},
    {"engine_id", F_STR_OPT, S_ENGINE, true},
    {"kv_buffer_device", F_STR_OPT, S_DEVICE, false},
    {"kv_buffer_size", F_FLOAT, S_SIZE, false},
    {"kv_role", F_STR_OPT, S_ROLE, false},
    {"kv_rank", F_INT_OPT, S_RANK, false},
    {"kv_parallel_size", F_INT, S_PSIZE, false},
    {"kv_ip", F_STR, S_IP, false},
    {"kv_port", F_INT, S_PORT, false},
    {"kv_connector_extra_config", F_DICT, S_EXTRA, true},
    {"kv_connector_module_path", F_STR_OPT, S_MODULE, true},
    {"enable_permute_local_kv", F_BOOL, S_NONE, true},
    {"kv_load_failure_policy", F_POLICY, S_POLICY, true},
    {NULL, F_STR, S_NONE, false},
};

static bool in_list(const char *const *l, const char *k)
{
	for (; *l; l++)
		if (!strcmp(*l, k))
			return true;
	return false;
}

static void defaults(struct cfg_kv_transfer *kt)
{
	memset(kt, 0, sizeof(*kt));
	kt->kv_parallel_size = 1;
	kt->kv_buffer_size = 1e9;
	kt->kv_buffer_device = strdup("cuda");
	kt->kv_ip = strdup("127.0.0.1");
	kt->kv_port = 14579;
	kt->kv_connector_extra_config = strdup("{}");
	kt->kv_load_failure_policy = strdup("recompute");
}

static void setstr(char **dst, char *v, bool isnull)
{
	free(*dst);
	*dst = isnull ? NULL : v;
}

/* One --kv-transfer-config parse: the input, where the result goes, and what went wrong. */
struct kvp {
	const char *json;
	bool v1;
	struct cfg_kv_transfer *out;
	struct cfg_diags *d;
	struct perr pe;
	cJSON *root;
	char *postinit; /* the text model_post_init / __post_init__ raises */
};

/* jiter's parse and the object check; -1 (errors recorded) when pydantic rejects the input. */
static int kvp_root(struct kvp *k)
{
	const char *F = "kv-transfer-config";
	char *jerr = NULL, *in;

	k->root = cfg_pyjson_parse_jiter(k->json, strlen(k->json), &jerr);
	if (!k->root) {
		perr_add(&k->pe, "%s", jerr ? jerr : "Invalid JSON");
		cfg_diag_add(
		    k->d, CFG_ERROR, F,
		    "--kv-transfer-config is not valid JSON (%s); pydantic says: %s. Quote it "
		    "for the shell: --kv-transfer-config '{\"kv_connector\":"
		    "\"MooncakeConnector\",\"kv_role\":\"kv_producer\",\"kv_rank\":0}'",
		    k->json[0] ? "see below" : "empty string", jerr ? jerr : "?");
		free(jerr);
		return -1;
	}
	free(jerr);
	if (cJSON_IsObject(k->root))
		return 0;
	in = short_input(k->root);
	perr_add(&k->pe,
	         "Input should be an object [type=model_type, input_value=%s, input_type=%s]",
	         in ? in : "", cfg_py_type(k->root));
	free(in);
	cfg_diag_add(k->d, CFG_ERROR, F,
	             "--kv-transfer-config must be a JSON object, got a JSON %s",
	             cfg_py_type(k->root));
	return -1;
}

static void kvp_store(struct cfg_kv_transfer *out, enum slot slot, char *s, int64_t i, double fv,
                      bool isnull)
{
	switch (slot) {
	case S_CONNECTOR:
		setstr(&out->kv_connector, s, isnull);
		break;
	case S_DEVICE:
		setstr(&out->kv_buffer_device, s, isnull);
		break;
	case S_ROLE:
		setstr(&out->kv_role, s, isnull);
		break;
	case S_IP:
		setstr(&out->kv_ip, s, false);
		break;
	case S_ENGINE:
		setstr(&out->engine_id, s, isnull);
		break;
	case S_MODULE:
		setstr(&out->kv_connector_module_path, s, isnull);
		break;
	case S_EXTRA:
		setstr(&out->kv_connector_extra_config, s, false);
		break;
	case S_POLICY:
		setstr(&out->kv_load_failure_policy, s, false);
		break;
	case S_SIZE:
		out->kv_buffer_size = fv;
		break;
	case S_RANK:
		out->kv_rank_set = !isnull;
		out->kv_rank = isnull ? 0 : i;
		break;
	case S_PSIZE:
		out->kv_parallel_size = i;
		break;
	case S_PORT:
		out->kv_port = i;
		break;
	case S_NONE:
		free(s);
		break;
	}
}

/* pydantic validates the model's fields in definition order; a duplicate key's last value is
 * the one it sees. */
static void kvp_fields(struct kvp *k)
{
	for (size_t fi = 0; fields[fi].name; fi++) {
		char *s = NULL;
		int64_t i = 0;
		double fv = 0;
		bool isnull = false;
		const cJSON *v;

		if (fields[fi].v1 && !k->v1)
			continue;
		v = cfg_pyjson_get(k->root, fields[fi].name);
		if (!v ||
		    coerce(&k->pe, fields[fi].name, fields[fi].t, v, &s, &i, &fv, &isnull, k->d))
			continue;
		kvp_store(k->out, fields[fi].slot, s, i, fv, isnull);
	}
}

/* Keys the model does not have: vLLM ignores them, pdkv says why that is likely a mistake. */
static void kvp_unknown(struct kvp *k)
{
	const char *F = "kv-transfer-config";
	size_t unknown = 0;

	for (const cJSON *it = k->root->child; it; it = it->next) {
		const char *key = it->string;
		bool known = false;

		for (size_t fi = 0; fields[fi].name; fi++)
			known |= (!fields[fi].v1 || k->v1) && !strcmp(fields[fi].name, key);
		if (known || ++unknown > 10)
			continue;
		if (!k->v1 && in_list(v1_keys, key))
			cfg_diag_add(
			    k->d, CFG_WARNING, F,
			    "key \"%s\" is a vLLM V1 field; V0's KVTransferConfig ignores it "
			    "(did you mean --vllm v1?)",
			    key);
		else if (!strcmp(key, "num_workers") || !strcmp(key, "mooncake_protocol"))
			cfg_diag_add(
			    k->d, CFG_WARNING, F,
			    "key \"%s\" at the top level is ignored; it only reaches the "
			    "connector inside \"kv_connector_extra_config\": {\"%s\": ...}",
			    key, key);
		else
			cfg_diag_add(
			    k->d, CFG_WARNING, F,
			    "unknown key \"%.64s\" is ignored by vLLM (typo? known keys: "
			    "kv_connector, kv_role, kv_rank, kv_parallel_size, kv_buffer_size, "
			    "kv_buffer_device, kv_ip, kv_port%s)",
			    key,
			    k->v1 ? ", engine_id, kv_connector_module_path, "
			            "kv_connector_extra_config, kv_load_failure_policy"
			          : "");
	}
	if (unknown > 10)
		cfg_diag_add(k->d, CFG_WARNING, F, "... and %zu more unknown keys", unknown - 10);
}

/* model_post_init (V0) / __post_init__ (V1): the role checks. Sets k->postinit. */
static void kvp_post_init(struct kvp *k)
{
	const char *role = k->out->kv_role;

	if (role && strcmp(role, "kv_producer") && strcmp(role, "kv_consumer") &&
	    strcmp(role, "kv_both")) {
		if (asprintf(&k->postinit,
		             k->v1 ? "Unsupported kv_role: %s. Supported roles are ('kv_producer', "
		                     "'kv_both', 'kv_consumer')"
		                   : "Unsupported kv_role: %s. Supported roles are `kv_producer`, "
		                     "`kv_consumer`, and `kv_both`",
		             role) < 0)
			k->postinit = NULL;
		cfg_diag_add(k->d, CFG_ERROR, "kv-transfer-config: kv_role",
		             "kv_role \"%s\" is not one of kv_producer, kv_consumer, kv_both "
		             "(case-sensitive); use kv_producer on the prefill instance and "
		             "kv_consumer on the decode instance",
		             role);
	} else if (k->out->kv_connector && !role) {
		if (asprintf(&k->postinit,
		             k->v1 ? "Please specify kv_role when kv_connector is set, supported "
		                     "roles are ('kv_producer', 'kv_both', 'kv_consumer')"
		                   : "Please specify kv_disagg_role when kv_connector is set, "
		                     "supported roles are `kv_producer`, `kv_consumer`, and "
		                     "`kv_both`") < 0)
			k->postinit = NULL;
		cfg_diag_add(k->d, CFG_ERROR, "kv-transfer-config: kv_role",
		             "kv_connector is set but kv_role is missing; add \"kv_role\": "
		             "\"kv_producer\" (prefill) or \"kv_consumer\" (decode)");
	}
}

/* The exception for a rejected input: V1 prints pydantic's lines, V0 argparse's generic text. */
static char *kvp_reject(struct kvp *k)
{
	char *err = NULL, *raw = cfg_py_repr(k->json);
	int rc;

	if (k->v1)
		rc = asprintf(&err,
		              "ArgumentError: argument --kv-transfer-config: %zu validation "
		              "error%s for KVTransferConfig: %s",
		              k->pe.n, k->pe.n == 1 ? "" : "s", k->pe.text ? k->pe.text : "");
	else
		rc = asprintf(&err,
		              "ArgumentError: argument --kv-transfer-config: invalid from_cli "
		              "value: %s",
		              raw ? raw : "''");
	if (rc < 0)
		err = NULL;
	cfg_diag_add(
	    k->d, CFG_ERROR, "kv-transfer-config",
	    "vLLM rejects --kv-transfer-config at argument parsing%s: %zu validation error%s "
	    "for KVTransferConfig: %s",
	    k->v1 ? "" : " (it prints only \"invalid from_cli value\"; pydantic's reason)", k->pe.n,
	    k->pe.n == 1 ? "" : "s", k->pe.text ? k->pe.text : "");
	free(raw);
	return err;
}

/* Runs the stages in vLLM's order; returns the exception text (malloc'd) or NULL. */
static char *kvp_run(struct kvp *k)
{
	char *err = NULL;

	if (kvp_root(k))
		return kvp_reject(k);
	kvp_fields(k);
	kvp_unknown(k);
	if (k->pe.n)
		return kvp_reject(k);
	kvp_post_init(k);
	if (k->postinit && k->v1) {
		/* V1: the dataclass is built after argparse → ValueError at engine config */
		if (asprintf(&err, "ValueError: %s", k->postinit) < 0)
			err = NULL;
		return err ? err : strdup("ValueError");
	}
	if (k->postinit) {
		perr_add(&k->pe, "Value error, %s [type=value_error]", k->postinit);
		return kvp_reject(k);
	}
	k->out->is_producer = k->out->kv_role && (!strcmp(k->out->kv_role, "kv_producer") ||
	                                          !strcmp(k->out->kv_role, "kv_both"));
	k->out->is_consumer = k->out->kv_role && (!strcmp(k->out->kv_role, "kv_consumer") ||
	                                          !strcmp(k->out->kv_role, "kv_both"));
	return NULL;
}

int cfg_uuid4(char out[37])
{
	unsigned char b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
	         b[13], b[14], b[15]);
	return 0;
}

/* What the Mooncake connector reads from kv_connector_extra_config, with its defaults. */
static void v1_extras(struct cfg_kv_transfer *kt)
{
	char *err = NULL;
	const char *x = kt->kv_connector_extra_config ? kt->kv_connector_extra_config : "{}";
	cJSON *ex = cfg_pyjson_parse(x, strlen(x), &err);
	const cJSON *v;

	v = cfg_pyjson_get(ex, "mooncake_protocol");
	kt->mooncake_protocol = !v                  ? strdup("rdma")
	                        : cJSON_IsString(v) ? strdup(v->valuestring)
	                                            : NULL;
	v = cfg_pyjson_get(ex, "num_workers");
	kt->num_workers = !v                                               ? 10
	                  : (cJSON_IsNumber(v) && !cfg_pyjson_is_float(v)) ? (int64_t)v->valuedouble
	                                                                   : 0;
	v = cfg_pyjson_get(ex, "device_name");
	kt->device_name = !v ? strdup("") : cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
	free(err);
	cJSON_Delete(ex);
}

static int kvt_parse(const char *json, bool v1, const char *policy_default,
                     struct cfg_kv_transfer *out, struct cfg_diags *d, char **vllm_error)
{
	struct kvp k = {.json = json ? json : "", .v1 = v1, .out = out, .d = d};
	char *err, id[37];
	bool rejected;

	defaults(out);
	if (policy_default) {
		free(out->kv_load_failure_policy);
		out->kv_load_failure_policy = strdup(policy_default);
	}
	if (vllm_error)
		*vllm_error = NULL;
	err = kvp_run(&k);
	rejected = err != NULL || k.pe.n > 0;
	if (!rejected && v1) {
		/* __post_init__: engine_id None -> str(uuid.uuid4()), a new one at every start */
		if (!out->engine_id && !cfg_uuid4(id)) {
			out->engine_id = strdup(id);
			out->engine_id_generated = true;
		}
		v1_extras(out);
	}
	if (vllm_error)
		*vllm_error = err;
	else
		free(err);
	free(k.pe.text);
	free(k.postinit);
	cJSON_Delete(k.root);
	return rejected ? -1 : 0;
}

int cfg_kv_transfer_parse(const char *json, enum cfg_vllm vllm, struct cfg_kv_transfer *out,
                          struct cfg_diags *d, char **vllm_error)
{
	return kvt_parse(json, vllm == CFG_VLLM_V1, NULL, out, d, vllm_error);
}

int cfg_kv_transfer_parse_release(const char *json, const struct cfg_vllm_info *rel,
                                  struct cfg_kv_transfer *out, struct cfg_diags *d,
                                  char **vllm_error)
{
	if (!rel)
		return kvt_parse(json, true, NULL, out, d, vllm_error);
	return kvt_parse(json, cfg_gen_is_v1(rel->gen), rel->policy, out, d, vllm_error);
}

void cfg_kv_transfer_free(struct cfg_kv_transfer *kt)
{
	if (!kt)
		return;
	free(kt->kv_connector);
	free(kt->kv_role);
	free(kt->kv_buffer_device);
	free(kt->kv_ip);
	free(kt->engine_id);
	free(kt->kv_connector_module_path);
	free(kt->kv_connector_extra_config);
	free(kt->kv_load_failure_policy);
	free(kt->mooncake_protocol);
	free(kt->device_name);
	memset(kt, 0, sizeof(*kt));
}
