/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_model: pdkv's model of what a vLLM release puts on the KV-transfer wire and around it
 * (msgspec structs, bootstrap routes, sockets, env vars, extra-config keys, metrics, error texts).
 */
#ifndef CFG_MODEL_H
#define CFG_MODEL_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "cfg_vllm.h"

/* One msgspec field. def NULL = required; otherwise the default as Python writes it. feat: the
 * CFG_F_* bit a row must have for the field to exist (0 = every row of the generation). */
struct cfg_model_field {
	const char *name, *type, *def;
	unsigned feat;
};

struct cfg_model_struct {
	const char *name;
	const char *options; /* msgspec struct keywords, "k=v,k=v" sorted by key */
	const struct cfg_model_field *fields;
	int nfields;
};

struct cfg_model_named {
	const char *name, *def; /* def: a default, or NULL when pdkv does not know or none */
	unsigned feat;
};

struct cfg_model_metric {
	const char *name;          /* as registered, without prometheus_client's _total suffix */
	const char *labels;        /* "a,b,c" in order, NULL = not compared */
	const char *since, *until; /* first / last release (NULL = open) */
};

/* What pdkv expects of one release (or one generation when no version is given). */
struct cfg_model_view {
	enum cfg_gen gen;
	unsigned feat;      /* CFG_F_* of the row, or every bit for a bare generation */
	char version[32];   /* "": a bare generation (every field of the shape) */
	const char *row;    /* the table row, or the generation's name */
	const char *policy; /* kv_load_failure_policy default or NULL */
};

/* Fills v for a release (0) or -1 with err as cfg_vllm_lookup's. gen_override >= 0 forces that
 * generation's shape (for a release past the table or a shape chosen by hand). */
int cfg_model_for_version(const char *version, int gen_override, struct cfg_model_view *v,
                          char *err, size_t errsz);
void cfg_model_for_gen(enum cfg_gen g, struct cfg_model_view *v);

/* Iterators over the model of a view; each returns the count and sets *out to a static array
 * that holds every entry of every era; cfg_model_*_in tells whether entry i applies to v. */
int cfg_model_structs(const struct cfg_model_view *v, const struct cfg_model_struct **out);
bool cfg_model_field_in(const struct cfg_model_view *v, const struct cfg_model_field *f);
int cfg_model_env(const struct cfg_model_view *v, const struct cfg_model_named **out);
int cfg_model_extra(const struct cfg_model_view *v, const struct cfg_model_named **out);
bool cfg_model_named_in(const struct cfg_model_view *v, const struct cfg_model_named *n);
int cfg_model_metrics(const struct cfg_model_metric **out);
bool cfg_model_metric_in(const struct cfg_model_view *v, const struct cfg_model_metric *m);
/* Routes "METHOD /path" with the request model's fields ("a,b,c" or NULL); sockets; texts. */
int cfg_model_routes(const struct cfg_model_view *v, const char *const (**out)[3]);
const char *cfg_model_sockets(const struct cfg_model_view *v); /* "DEALER,ROUTER" sorted */
int cfg_model_err_msgs(const struct cfg_model_view *v, const char *const **out);
int cfg_model_wire_bytes(const struct cfg_model_view *v, const char *const (**out)[2]);

/* -1 / 0 / 1 as "X.Y[.Z]" compares (suffixes ignored); unparsable sorts first. */
int cfg_model_vercmp(const char *a, const char *b);

/* The model of v as JSON (the shape vllm_extract.py prints, plus "row" and "gen"). */
cJSON *cfg_model_json(const struct cfg_model_view *v);

#endif
