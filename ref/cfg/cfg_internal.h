/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_internal: helpers shared by the cfg library's files — Python-faithful string/number
 * behaviour (int(), repr(), str.split) and the Python-json reader. Not a public interface. */
#ifndef CFG_INTERNAL_H
#define CFG_INTERNAL_H

#include "cfg/cfg.h"
#include "cfg/cfg_names.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Python int(s) for a str: surrounding whitespace, sign, '_' between digits, leading zeros.
 * 0 on success (value saturated to int64 range, *huge set when it was), -1 when Python would
 * raise "invalid literal for int() with base 10". */
int cfg_py_int(const char *s, int64_t *out, bool *huge);
/* repr() of a Python str (quotes chosen like CPython). malloc'd. */
char *cfg_py_repr(const char *s);
/* Number of pieces s.split(':') gives. */
size_t cfg_py_split_count(const char *s, char sep);
/* Splits "host:port" the way vLLM's url.split(':') does: exactly two pieces, else -1.
 * host/port are malloc'd. */
int cfg_py_split2(const char *s, char sep, char **a, char **b);
/* libzmq's syntax check of a tcp:// connect address host part (zmq_connect EINVAL). */
bool cfg_zmq_host_ok(const char *host);

/* Python json (json.load) reader: the value tree is cJSON (so NaN/Infinity are numbers, duplicate
 * keys keep the last value like a dict). On failure returns NULL and *err gets
 * "ExceptionClass: message" exactly as CPython's json/codec/int layers word it. */
struct cJSON;
struct cJSON *cfg_pyjson_parse(const char *buf, size_t len, char **err);
/* The same parser, worded the way pydantic's JSON parser (jiter) words failures. */
struct cJSON *cfg_pyjson_parse_jiter(const char *buf, size_t len, char **err);
/* Python type name of a cJSON value ('NoneType', 'int', 'float', 'str', 'list', 'dict', 'bool'). */
const char *cfg_py_type(const struct cJSON *v);
bool cfg_pyjson_is_float(const struct cJSON *v);
/* obj.get(key) of a Python dict: the last of duplicate keys; NULL when absent. */
const struct cJSON *cfg_pyjson_get(const struct cJSON *obj, const char *key);
/* Max nesting before Python's RecursionError: json.load in a fresh CPython 3.11 script fails at
 * 996 levels; inside vLLM its own stack frames lower that a little (not modelled). */
#define CFG_PYJSON_MAX_DEPTH 995

const char *cfg_severity_name(enum cfg_severity s);
void cfg_te_rpc_range(const struct cfg_env *env, enum cfg_vllm vllm, int *lo, int *hi);
bool cfg_v1_is_oot(const struct cfg_kv_transfer *kt);
/* cfg_mooncake_load with the path already looked up: from_env says it came from
 * MOONCAKE_CONFIG_PATH (NULL = unset). */
int cfg_mooncake_load_ex(const char *path, bool from_env, enum cfg_vllm vllm,
                         struct cfg_mooncake *out, struct cfg_diags *d, char **vllm_error);
void cfg_check_ports(struct cfg_report *r, const struct cfg_check_opts *o);
/* ASCII str.lower() into a bounded buffer (n >= 1). */
void cfg_ascii_lower(char *dst, size_t n, const char *src);
/* The adaptor's metadata resolution into mc->conn_string, with pdkv's diagnostics (cfg_meta.c). */
void cfg_mc_resolve_metadata(struct cfg_mooncake *mc, enum cfg_vllm vllm, struct cfg_diags *d);
/* Sets r->vllm_error unless an earlier stage already did (the exception vLLM raises first);
 * take_err hands *e over (or frees it) and clears it (cfg_diag.c). */
void cfg_report_take_err(struct cfg_report *r, char **e);
void cfg_report_errf(struct cfg_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The V1 connector's checks (cfg_v1.c); r->kt, r->gen and r->release are set. */
void cfg_check_v1(struct cfg_report *r, const struct cfg_check_opts *o);

#endif
