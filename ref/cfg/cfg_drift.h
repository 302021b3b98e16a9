/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_drift: `pdkv vllm-drift` as a library — runs vllm_extract.py on a vLLM tree, compares what
 * it found with cfg_model, and says per item and overall whether pdkv models that vLLM. */
#ifndef CFG_DRIFT_H
#define CFG_DRIFT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "cfg_model.h"

enum cfg_drift_verdict {
	CFG_DRIFT_MODELS = 0,   /* "pdkv models this vLLM" (exit 0) */
	CFG_DRIFT_NON_WIRE = 1, /* "... with differences that do not touch the wire" (exit 0) */
	CFG_DRIFT_WIRE = 2,     /* "pdkv does not model this vLLM's wire" (exit 1) */
};

struct cfg_drift_item {
	const char *cat;    /* "struct", "field", "route", "socket", "env", "extra_config",
	                       "policy", "metric", "err_msg", "wire_bytes", "shape" */
	char name[160];     /* e.g. "MooncakeXferMetadata.block_lens" */
	const char *status; /* "known", "changed", "new", "gone" */
	char detail[320];   /* "same as row 0.17 (bn), field 7", "old -> new", ... */
	bool wire;          /* a difference that touches the wire */
};

struct cfg_drift {
	char version[64]; /* the tree's version, "" when none was found */
	char root[512], kind[16];
	struct cfg_model_view view; /* what it was compared with */
	char note[512];             /* how the row was chosen (newer than the table, ...) */
	struct cfg_drift_item *items;
	int nitems, cap;
	enum cfg_drift_verdict verdict;
};

/* The extractor script (PDKV_VLLM_EXTRACT, beside the binary, ../share/pdkv/, or the source
 * tree's harness/drift/); NULL when none is found. */
const char *cfg_drift_extractor(char *buf, size_t sz);
/* The directory of the vllm package `python3` imports, found without importing it (importlib's
 * find_spec). 0, or -1 with err. */
int cfg_drift_default_path(char *buf, size_t sz, char *err, size_t errsz);
/* Runs `python3 EXTRACTOR --root path` for at most deadline_ms. 0 with *out (caller frees), or
 * -1 with err ("vLLM X has no MooncakeConnector ...", "python3 not found", ...). */
int cfg_drift_extract(const char *path, int deadline_ms, cJSON **out, char *err, size_t errsz);
/* Compares an extractor result with pdkv's model. version (may be NULL) replaces the tree's
 * own; gen_override >= 0 forces a shape. 0, or -1 with err. Free with cfg_drift_free. */
int cfg_drift_compare(const cJSON *tree, const char *version, int gen_override, struct cfg_drift *d,
                      char *err, size_t errsz);
void cfg_drift_free(struct cfg_drift *d);

const char *cfg_drift_verdict_text(enum cfg_drift_verdict v);
void cfg_drift_print(FILE *f, const struct cfg_drift *d, bool all);
cJSON *cfg_drift_json(const struct cfg_drift *d);
/* "your vLLM 0.33.1: 2 new struct fields pdkv does not model (wire)" into out. */
void cfg_drift_line(const struct cfg_drift *d, char *out, size_t sz);

/* For `pdkv upgrade-check` and `pdkv run --external`: extract + compare + line in one call
 * (path NULL = the vllm `python3` imports). Returns the verdict (0, 1, 2), or -1 with the
 * reason in out ("cannot read vLLM at X: ..."). Bounded by deadline_ms. */
int cfg_drift_summary(const char *path, const char *version, int deadline_ms, char *out, size_t sz);

#endif
