/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_drift_out: a drift comparison for people (table + verdict), as JSON, and as the one line
 * `pdkv upgrade-check` and `pdkv run --external` print. */
#include "cfg_drift.h"

#include <string.h>

const char *cfg_drift_verdict_text(enum cfg_drift_verdict v)
{
	switch (v) {
	case CFG_DRIFT_MODELS:
		return "pdkv models this vLLM";
	case CFG_DRIFT_NON_WIRE:
		return "pdkv models it with differences that do not touch the wire";
	default:
		return "pdkv does not model this vLLM's wire";
	}
}

static const char *cat_word(const char *cat)
{
	static const char *const m[][2] = {
	    {"struct", "struct"},         {"field", "struct field"},
	    {"route", "bootstrap route"}, {"socket", "socket type"},
	    {"env", "env var"},           {"extra_config", "extra-config key"},
	    {"policy", "policy default"}, {"metric", "metric"},
	    {"err_msg", "error text"},    {"wire_bytes", "reply bytes"},
	    {"shape", "struct shape"},
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (!strcmp(m[i][0], cat))
			return m[i][1];
	return cat;
}

/* "2 new struct fields, 1 gone env var" over the differences with wire == want. */
static size_t counts(const struct cfg_drift *d, bool want, char *out, size_t sz)
{
	static const char *const st[] = {"new", "gone", "changed"};
	size_t len = 0;
	out[0] = 0;
	for (int i = 0; i < d->nitems; i++) {
		const struct cfg_drift_item *it = &d->items[i];
		bool first = true;
		int n = 0;
		if (!strcmp(it->status, "known") || it->wire != want)
			continue;
		for (int j = 0; j < i; j++) /* counted already with an earlier item? */
			if (!strcmp(d->items[j].cat, it->cat) &&
			    !strcmp(d->items[j].status, it->status) && d->items[j].wire == want)
				first = false;
		if (!first)
			continue;
		for (int j = i; j < d->nitems; j++)
			n += !strcmp(d->items[j].cat, it->cat) &&
			     !strcmp(d->items[j].status, it->status) && d->items[j].wire == want;
		for (size_t s = 0; s < 3; s++)
			if (!strcmp(st[s], it->status) && len < sz)
				len += (size_t)snprintf(out + len, sz - len, "%s%d %s %s%s",
				                        len ? ", " : "", n, it->status,
				                        cat_word(it->cat), n > 1 ? "s" : "");
	}
	return len;
}

void cfg_drift_line(const struct cfg_drift *d, char *out, size_t sz)
{
	char c[384];
	int l = snprintf(out, sz, "your vLLM %s: ", d->version[0] ? d->version : "(no version)");
	if (l < 0 || (size_t)l >= sz)
		return;
	if (d->verdict == CFG_DRIFT_WIRE) {
		counts(d, true, c, sizeof(c));
		snprintf(out + l, sz - (size_t)l, "%s pdkv does not model (wire; row %s, shape %s)",
		         c, d->view.row, cfg_gen_name(d->view.gen));
	} else if (d->verdict == CFG_DRIFT_NON_WIRE) {
		counts(d, false, c, sizeof(c));
		snprintf(out + l, sz - (size_t)l,
		         "pdkv models its wire (row %s, shape %s); off the wire: %s", d->view.row,
		         cfg_gen_name(d->view.gen), c);
	} else
		snprintf(out + l, sz - (size_t)l, "pdkv models it (row %s, shape %s)", d->view.row,
		         cfg_gen_name(d->view.gen));
}

void cfg_drift_print(FILE *f, const struct cfg_drift *d, bool all)
{
	const char *last = "";
	int hidden = 0;
	char line[512];

	fprintf(f, "vLLM %s (%s %s)\n", d->version[0] ? d->version : "(no version found)", d->kind,
	        d->root);
	fprintf(f, "pdkv's model: row %s, shape %s\n", d->view.row, cfg_gen_name(d->view.gen));
	if (d->note[0])
		fprintf(f, "note: %s\n", d->note);
	for (int i = 0; i < d->nitems; i++) {
		const struct cfg_drift_item *it = &d->items[i];
		bool known = !strcmp(it->status, "known");
		if (known && !all && strcmp(it->cat, "struct") && strcmp(it->cat, "field")) {
			hidden++;
			continue;
		}
		if (strcmp(last, it->cat))
			fprintf(f, "\n%s\n", cat_word(it->cat));
		last = it->cat;
		fprintf(f, "  %-8s %-44s %s%s\n", it->status, it->name, it->detail,
		        it->wire ? "  [wire]" : "");
	}
	if (hidden)
		fprintf(f, "\n(%d more items known; --all lists them)\n", hidden);
	cfg_drift_line(d, line, sizeof(line));
	fprintf(f, "\n%s\nverdict: %s\n", line, cfg_drift_verdict_text(d->verdict));
}

cJSON *cfg_drift_json(const struct cfg_drift *d)
{
	cJSON *j = cJSON_CreateObject(), *a, *v;
	char line[512];
	v = cJSON_AddObjectToObject(j, "vllm");
	if (d->version[0])
		cJSON_AddStringToObject(v, "version", d->version);
	else
		cJSON_AddNullToObject(v, "version");
	cJSON_AddStringToObject(v, "kind", d->kind);
	cJSON_AddStringToObject(v, "root", d->root);
	cJSON_AddStringToObject(j, "row", d->view.row);
	cJSON_AddStringToObject(j, "gen", cfg_gen_name(d->view.gen));
	cJSON_AddStringToObject(j, "note", d->note);
	a = cJSON_AddArrayToObject(j, "items");
	for (int i = 0; i < d->nitems; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "category", d->items[i].cat);
		cJSON_AddStringToObject(o, "name", d->items[i].name);
		cJSON_AddStringToObject(o, "status", d->items[i].status);
		cJSON_AddStringToObject(o, "detail", d->items[i].detail);
		cJSON_AddBoolToObject(o, "wire", d->items[i].wire);
		cJSON_AddItemToArray(a, o);
	}
	static const char *const key[] = {"models", "models_off_wire", "wire_differs"};
	cJSON_AddStringToObject(j, "verdict", key[d->verdict]);
	cJSON_AddStringToObject(j, "verdict_text", cfg_drift_verdict_text(d->verdict));
	cfg_drift_line(d, line, sizeof(line));
	cJSON_AddStringToObject(j, "summary", line);
	cJSON_AddNumberToObject(j, "exit", d->verdict == CFG_DRIFT_WIRE ? 1 : 0);
	return j;
}
