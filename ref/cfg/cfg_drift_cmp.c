/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_drift_cmp: compares what vllm_extract.py read from a vLLM tree with cfg_model's view of
 * its release, item by item (known / changed / new / gone), and picks the verdict. */
#include "cfg_drift.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void add(struct cfg_drift *d, const char *cat, const char *status, bool wire,
                const char *name, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void add(struct cfg_drift *d, const char *cat, const char *status, bool wire,
                const char *name, const char *fmt, ...)
{
	va_list ap;
	if (d->nitems == d->cap) {
		int cap = d->cap ? d->cap * 2 : 64;
		struct cfg_drift_item *n = realloc(d->items, (size_t)cap * sizeof(*n));
		if (!n)
			return;
		d->items = n;
		d->cap = cap;
	}
	struct cfg_drift_item *it = &d->items[d->nitems++];
	it->cat = cat;
	it->status = status;
	it->wire = wire && strcmp(status, "known");
	snprintf(it->name, sizeof(it->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof(it->detail), fmt, ap);
	va_end(ap);
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *arr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsArray(v) ? v : NULL;
}

static const cJSON *find_by(const cJSON *a, const char *key, const char *val)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, a)
	{
		const char *s = str(it, key);
		if (s && !strcmp(s, val))
			return it;
	}
	return NULL;
}

static bool eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* A type as written, without spaces or quotes, the str aliases resolved, Optional[X] = X|None. */
static void norm_type(const char *t, char *out, size_t sz)
{
	static const char *const alias[] = {"ReqId", "TransferId", "EngineId", "WorkerAddr"};
	char tmp[256];
	size_t n = 0;
	for (const char *p = t ? t : ""; *p && n + 1 < sizeof(tmp); p++)
		if (!isspace((unsigned char)*p) && *p != '"' && *p != '\'')
			tmp[n++] = *p;
	tmp[n] = 0;
	n = 0;
	for (const char *p = tmp; *p && n + 8 < sz;) {
		bool hit = false;
		for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
			size_t l = strlen(alias[i]);
			if (!strncmp(p, alias[i], l) && !isalnum((unsigned char)p[l]) &&
			    (p == tmp || !isalnum((unsigned char)p[-1]))) {
				n += (size_t)snprintf(out + n, sz - n, "str");
				p += l;
				hit = true;
				break;
			}
		}
		if (!hit)
			out[n++] = *p++;
	}
	out[n] = 0;
	size_t l = strlen(out);
	if (!strncmp(out, "Optional[", 9) && l > 10 && out[l - 1] == ']') {
		memmove(out, out + 9, l - 10);
		snprintf(out + l - 10, sz - (l - 10), "|None");
	}
}

static bool same_type(const char *a, const char *b)
{
	char x[256], y[256];
	norm_type(a, x, sizeof(x));
	norm_type(b, y, sizeof(y));
	return !strcmp(x, y);
}

/* "k=v,k=v" of the tree's struct options, sorted by key (cJSON keeps insertion order). */
static void opts_text(const cJSON *o, char *out, size_t sz)
{
	const char *keys[16];
	int n = 0;
	const cJSON *it;
	size_t len = 0;
	cJSON_ArrayForEach(it, o) if (n < 16 && it->string) keys[n++] = it->string;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];
			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	out[0] = 0;
	for (int i = 0; i < n && len < sz; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
		char val[64];
		if (cJSON_IsBool(v))
			snprintf(val, sizeof(val), "%s", cJSON_IsTrue(v) ? "True" : "False");
		else if (cJSON_IsNumber(v))
			snprintf(val, sizeof(val), "%g", v->valuedouble);
		else
			snprintf(val, sizeof(val), "%s", cJSON_IsString(v) ? v->valuestring : "?");
		len += (size_t)snprintf(out + len, sz - len, "%s%s=%s", i ? "," : "", keys[i], val);
	}
}

static const char *row_name(const struct cfg_drift *d, char *buf, size_t sz)
{
	snprintf(buf, sz, "%s (%s)", d->view.row, cfg_gen_name(d->view.gen));
	return buf;
}

static void cmp_fields(struct cfg_drift *d, const struct cfg_model_struct *m, const cJSON *tf)
{
	char nm[160], rb[96], order_m[1024] = "", order_t[1024] = "";
	const cJSON *it;
	int pos = 0;
	size_t lm = 0, lt = 0;

	row_name(d, rb, sizeof(rb));
	for (int i = 0; i < m->nfields; i++) {
		const struct cfg_model_field *f = &m->fields[i];
		if (!cfg_model_field_in(&d->view, f))
			continue;
		pos++;
		const cJSON *t = find_by(tf, "name", f->name);
		snprintf(nm, sizeof(nm), "%s.%s", m->name, f->name);
		if (!t) {
			add(d, "field", "gone", true, nm,
			    "%s%s%s in pdkv's model, not in this vLLM", f->type,
			    f->def ? " = " : "", f->def ? f->def : "");
			continue;
		}
		lm += (size_t)snprintf(order_m + lm, sizeof(order_m) - lm, "%s ", f->name);
		const char *tt = str(t, "type"), *td = str(t, "default");
		if (!same_type(f->type, tt) || !eq(f->def, td))
			add(d, "field", "changed", true, nm, "%s%s%s -> %s%s%s", f->type,
			    f->def ? " = " : "", f->def ? f->def : "", tt ? tt : "?",
			    td ? " = " : "", td ? td : "");
		else
			add(d, "field", "known", false, nm, "same as row %s, field %d", rb, pos);
	}
	cJSON_ArrayForEach(it, tf)
	{
		const char *n = str(it, "name"), *tt = str(it, "type"), *td = str(it, "default");
		bool in_model = false;
		for (int i = 0; n && i < m->nfields; i++)
			in_model |= cfg_model_field_in(&d->view, &m->fields[i]) &&
			            !strcmp(m->fields[i].name, n);
		if (!n)
			continue;
		if (in_model) {
			lt += (size_t)snprintf(order_t + lt, sizeof(order_t) - lt, "%s ", n);
			continue;
		}
		snprintf(nm, sizeof(nm), "%s.%s", m->name, n);
		add(d, "field", "new", true, nm, "%s%s%s%s", tt ? tt : "?", td ? " = " : "",
		    td ? td : "", td ? "" : " (required)");
	}
	if (strcmp(order_m, order_t))
		add(d, "struct", "changed", true, m->name, "field order: %s-> %s", order_m,
		    order_t);
}

static void cmp_structs(struct cfg_drift *d, const cJSON *tree)
{
	const struct cfg_model_struct *st;
	const cJSON *ts = arr(tree, "structs"), *it;
	int n = cfg_model_structs(&d->view, &st);
	char rb[96], o[256];

	row_name(d, rb, sizeof(rb));
	for (int i = 0; i < n; i++) {
		const cJSON *t = find_by(ts, "name", st[i].name);
		if (!t) {
			add(d, "struct", "gone", true, st[i].name,
			    "in pdkv's model (row %s), not in this vLLM's connector", rb);
			continue;
		}
		opts_text(cJSON_GetObjectItemCaseSensitive(t, "options"), o, sizeof(o));
		if (strcmp(o, st[i].options))
			add(d, "struct", "changed", true, st[i].name, "options %s -> %s",
			    st[i].options, o);
		else
			add(d, "struct", "known", false, st[i].name, "options %s, same as row %s",
			    o, rb);
		cmp_fields(d, &st[i], arr(t, "fields"));
	}
	cJSON_ArrayForEach(it, ts)
	{
		const char *name = str(it, "name");
		bool known = false;
		for (int i = 0; name && i < n; i++)
			known |= !strcmp(st[i].name, name);
		if (name && !known)
			add(d, "struct", "new", true, name,
			    "msgspec.Struct in %s, not in pdkv's model",
			    str(it, "file") ? str(it, "file") : "?");
	}
}

static void csv_of(const cJSON *a, const char *key, char *out, size_t sz)
{
	const cJSON *it;
	size_t len = 0;
	out[0] = 0;
	cJSON_ArrayForEach(it, a)
	{
		const char *s = key ? str(it, key) : (cJSON_IsString(it) ? it->valuestring : NULL);
		if (s && len < sz)
			len += (size_t)snprintf(out + len, sz - len, "%s%s", len ? "," : "", s);
	}
}

static void cmp_routes(struct cfg_drift *d, const cJSON *tree)
{
	const char *const(*r)[3];
	int n = cfg_model_routes(&d->view, &r);
	const cJSON *tr = arr(tree, "routes"), *it;
	char nm[160], f[512];

	for (int i = 0; i < n; i++) {
		const cJSON *t = NULL;
		cJSON_ArrayForEach(it, tr) if (eq(str(it, "method"), r[i][0]) &&
		                               eq(str(it, "path"), r[i][1])) t = it;
		snprintf(nm, sizeof(nm), "%s %s", r[i][0], r[i][1]);
		if (!t) {
			add(d, "route", "gone", true, nm,
			    "bootstrap server route pdkv serves and calls");
			continue;
		}
		csv_of(arr(t, "model_fields"), "name", f, sizeof(f));
		if (r[i][2] && strcmp(f, r[i][2]))
			add(d, "route", "changed", true, nm, "request %s -> %s", r[i][2], f);
		else
			add(d, "route", "known", false, nm, "%s%s", r[i][2] ? "request " : "",
			    r[i][2] ? r[i][2] : "no request body");
	}
	cJSON_ArrayForEach(it, tr)
	{
		bool known = false;
		for (int i = 0; i < n; i++)
			known |= eq(str(it, "method"), r[i][0]) && eq(str(it, "path"), r[i][1]);
		if (known)
			continue;
		snprintf(nm, sizeof(nm), "%s %s", str(it, "method") ? str(it, "method") : "?",
		         str(it, "path") ? str(it, "path") : "?");
		csv_of(arr(it, "model_fields"), "name", f, sizeof(f));
		add(d, "route", "new", true, nm, "%s%s", *f ? "request " : "no request model", f);
	}
}

static bool in_csv(const char *csv, const char *s)
{
	size_t l = strlen(s);
	for (const char *p = csv; p && *p;) {
		if (!strncmp(p, s, l) && (p[l] == ',' || !p[l]))
			return true;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return false;
}

static void cmp_sockets(struct cfg_drift *d, const cJSON *tree)
{
	const char *model = cfg_model_sockets(&d->view);
	char tree_csv[256], one[32];
	csv_of(arr(tree, "sockets"), NULL, tree_csv, sizeof(tree_csv));
	for (const char *p = model; *p;) {
		size_t l = strcspn(p, ",");
		snprintf(one, sizeof(one), "%.*s", (int)l, p);
		if (in_csv(tree_csv, one))
			add(d, "socket", "known", false, one, "zmq.%s on the side channel", one);
		else
			add(d, "socket", "gone", true, one, "pdkv's side channel uses zmq.%s", one);
		p += l + (p[l] == ',');
	}
	for (const char *p = tree_csv; *p;) {
		size_t l = strcspn(p, ",");
		snprintf(one, sizeof(one), "%.*s", (int)l, p);
		if (!in_csv(model, one))
			add(d, "socket", "new", true, one, "zmq.%s in the connector", one);
		p += l + (p[l] == ',');
	}
}

static void cmp_named(struct cfg_drift *d, const char *cat, const cJSON *ta, const char *key,
                      const struct cfg_model_named *t, int n, const char *what)
{
	const cJSON *it;
	for (int i = 0; i < n; i++) {
		if (!cfg_model_named_in(&d->view, &t[i]))
			continue;
		const cJSON *x = find_by(ta, key, t[i].name);
		const char *def = x ? str(x, "default") : NULL;
		if (!x)
			add(d, cat, "gone", false, t[i].name,
			    "%s pdkv knows, not read by this vLLM", what);
		else if (t[i].def && def && strcmp(t[i].def, def))
			add(d, cat, "changed", false, t[i].name, "default %s -> %s", t[i].def, def);
		else
			add(d, cat, "known", false, t[i].name, "default %s", def ? def : "(none)");
	}
	cJSON_ArrayForEach(it, ta)
	{
		const char *name = str(it, key), *def = str(it, "default");
		bool known = false;
		for (int i = 0; name && i < n; i++)
			known |= cfg_model_named_in(&d->view, &t[i]) && !strcmp(t[i].name, name);
		if (name && !known)
			add(d, cat, "new", false, name, "%s pdkv does not model (default %s)", what,
			    def ? def : "none");
	}
}

static void base_name(const char *s, char *out, size_t sz)
{
	size_t l = strlen(s);
	if (l > 6 && !strcmp(s + l - 6, "_total"))
		l -= 6;
	snprintf(out, sz, "%.*s", (int)l, s);
}

/* A metric vLLM registers that pdkv does not model is listed when it is the connector's own
 * or a prompt-token counter (the signals pdkv's checks read); NIXL's and the rest are not. */
static bool metric_interesting(const cJSON *m)
{
	const char *n = str(m, "name"), *f = str(m, "file");
	return n && (strstr(n, "mooncake") || !strncmp(n, "vllm:prompt_tokens", 18) ||
	             (f && strstr(f, "mooncake")));
}

static void cmp_metrics(struct cfg_drift *d, const cJSON *tree)
{
	const struct cfg_model_metric *m;
	int n = cfg_model_metrics(&m);
	const cJSON *tm = arr(tree, "metrics"), *it;
	char a[128], b[128], labels[256];
	for (int i = 0; i < n; i++) {
		if (!cfg_model_metric_in(&d->view, &m[i]))
			continue;
		const cJSON *t = NULL;
		cJSON_ArrayForEach(it, tm)
		{
			base_name(str(it, "name") ? str(it, "name") : "", a, sizeof(a));
			if (!strcmp(a, m[i].name))
				t = it;
		}
		if (!t) {
			add(d, "metric", "gone", false, m[i].name,
			    "pdkv's checks read it; not registered");
			continue;
		}
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(t, "labels");
		csv_of(l, NULL, labels, sizeof(labels));
		if (m[i].labels && cJSON_IsArray(l) && strcmp(labels, m[i].labels))
			add(d, "metric", "changed", false, m[i].name, "labels %s -> %s",
			    m[i].labels, labels);
		else
			add(d, "metric", "known", false, m[i].name, "labels %s",
			    cJSON_IsArray(l) ? labels : "(not read)");
	}
	cJSON_ArrayForEach(it, tm)
	{
		bool known = false;
		if (!metric_interesting(it))
			continue;
		base_name(str(it, "name"), b, sizeof(b));
		for (int i = 0; i < n; i++)
			known |= cfg_model_metric_in(&d->view, &m[i]) && !strcmp(m[i].name, b);
		if (!known) {
			csv_of(cJSON_GetObjectItemCaseSensitive(it, "labels"), NULL, labels,
			       sizeof(labels));
			add(d, "metric", "new", false, b, "registered in %s (labels %s)",
			    str(it, "file") ? str(it, "file") : "?", *labels ? labels : "?");
		}
	}
}

static void cmp_texts(struct cfg_drift *d, const cJSON *tree)
{
	const char *const *msgs;
	const char *const(*bytes)[2];
	int n = cfg_model_err_msgs(&d->view, &msgs);
	const cJSON *te = arr(tree, "err_msgs"), *tb = arr(tree, "wire_bytes"), *it;
	for (int i = 0; i < n; i++)
		add(d, "err_msg", find_by(te, "text", msgs[i]) ? "known" : "gone", false, msgs[i],
		    "err_msg P sends");
	cJSON_ArrayForEach(it, te)
	{
		const char *t = str(it, "text");
		bool known = false;
		for (int i = 0; t && i < n; i++)
			known |= !strcmp(msgs[i], t);
		if (t && !known)
			add(d, "err_msg", "new", false, t, "sent in %s",
			    str(it, "function") ? str(it, "function") : "?");
	}
	n = cfg_model_wire_bytes(&d->view, &bytes);
	for (int i = 0; i < n; i++) {
		const cJSON *t = find_by(tb, "name", bytes[i][0]);
		const char *v = t ? str(t, "value") : NULL;
		if (!t)
			add(d, "wire_bytes", "gone", true, bytes[i][0], "b\"%s\" reply",
			    bytes[i][1]);
		else if (!eq(v, bytes[i][1]))
			add(d, "wire_bytes", "changed", true, bytes[i][0], "b\"%s\" -> b\"%s\"",
			    bytes[i][1], v ? v : "?");
		else
			add(d, "wire_bytes", "known", false, bytes[i][0], "b\"%s\"", v);
	}
}

static void cmp_all(struct cfg_drift *d, const cJSON *tree)
{
	const struct cfg_model_named *t;
	int n;
	const cJSON *pol = cJSON_GetObjectItemCaseSensitive(tree, "kv_load_failure_policy");
	const char *pd = cJSON_IsObject(pol) ? str(pol, "default") : NULL;

	cmp_structs(d, tree);
	cmp_routes(d, tree);
	cmp_sockets(d, tree);
	n = cfg_model_env(&d->view, &t);
	if (arr(tree, "env"))
		cmp_named(d, "env", arr(tree, "env"), "name", t, n, "env var");
	n = cfg_model_extra(&d->view, &t);
	cmp_named(d, "extra_config", arr(tree, "extra_config"), "key", t, n, "extra-config key");
	if (d->view.policy && !pd)
		add(d, "policy", "gone", false, "kv_load_failure_policy", "default %s not found",
		    d->view.policy);
	else if (pd && !eq(d->view.policy, pd))
		add(d, "policy", d->view.policy ? "changed" : "new", false,
		    "kv_load_failure_policy", "default %s -> %s",
		    d->view.policy ? d->view.policy : "(none)", pd);
	else if (pd)
		add(d, "policy", "known", false, "kv_load_failure_policy", "default %s", pd);
	cmp_metrics(d, tree);
	cmp_texts(d, tree);
}

static int count_wire(const struct cfg_drift *d)
{
	int n = 0;
	for (int i = 0; i < d->nitems; i++)
		n += d->items[i].wire;
	return n;
}

static void reset(struct cfg_drift *d)
{
	d->nitems = 0;
}

/* The shape (generation) with the fewest wire differences; ties go to the newer one. Works on a
 * scratch comparison, so d's items stay. */
static enum cfg_gen closest(const struct cfg_drift *d, const cJSON *tree, int *wire)
{
	enum cfg_gen best = CFG_GEN_A;
	int bw = -1;
	struct cfg_drift s = {.view = d->view};
	for (int g = CFG_GEN_A; g < CFG_GEN_COUNT; g++) {
		if (d->view.version[0])
			s.view.gen = (enum cfg_gen)g;
		else
			cfg_model_for_gen((enum cfg_gen)g, &s.view);
		s.nitems = 0;
		cmp_structs(&s, tree);
		cmp_routes(&s, tree);
		cmp_sockets(&s, tree);
		int w = count_wire(&s);
		if (bw < 0 || w <= bw) {
			bw = w;
			best = (enum cfg_gen)g;
		}
	}
	free(s.items);
	*wire = bw;
	return best;
}

static int pick_view(struct cfg_drift *d, const cJSON *tree, int gen_override, char *err,
                     size_t errsz)
{
	char lerr[256];
	if (d->version[0] &&
	    !cfg_model_for_version(d->version, gen_override, &d->view, lerr, sizeof(lerr))) {
		if (cfg_model_vercmp(d->version, cfg_vllm_newest) > 0)
			snprintf(d->note, sizeof(d->note),
			         "vLLM %s is newer than pdkv's newest row (%s): compared with that "
			         "row's shape",
			         d->version, cfg_vllm_newest);
		return 0;
	}
	if (gen_override >= 0) {
		cfg_model_for_gen((enum cfg_gen)gen_override, &d->view);
		return 0;
	}
	if (d->version[0])
		snprintf(d->note, sizeof(d->note), "%s; ", lerr);
	int w;
	cfg_model_for_gen(CFG_GEN_BL, &d->view);
	enum cfg_gen g = closest(d, tree, &w);
	cfg_model_for_gen(g, &d->view);
	size_t l = strlen(d->note);
	snprintf(d->note + l, sizeof(d->note) - l,
	         "%s: compared with the closest shape pdkv models, %s",
	         d->version[0] ? "no row for it" : "no version found in the tree", cfg_gen_name(g));
	(void)err;
	(void)errsz;
	return 0;
}

int cfg_drift_compare(const cJSON *tree, const char *version, int gen_override, struct cfg_drift *d,
                      char *err, size_t errsz)
{
	const char *v = version ? version : str(tree, "version");
	memset(d, 0, sizeof(*d));
	snprintf(d->version, sizeof(d->version), "%s", v ? v : "");
	snprintf(d->root, sizeof(d->root), "%s", str(tree, "root") ? str(tree, "root") : "");
	snprintf(d->kind, sizeof(d->kind), "%s", str(tree, "kind") ? str(tree, "kind") : "");
	if (!arr(tree, "structs")) {
		snprintf(err, errsz, "the extractor's output has no \"structs\" array");
		return -1;
	}
	if (pick_view(d, tree, gen_override, err, errsz))
		return -1;
	if (d->view.gen == CFG_GEN_V0) {
		snprintf(err, errsz,
		         "vLLM %s's row (%s) is the V0 MooncakePipe, but the tree has a V1 "
		         "MooncakeConnector; give --vllm-version or --shape",
		         d->version, d->view.row);
		return -1;
	}
	cmp_all(d, tree);
	/* the row's shape differs on the wire: does another shape pdkv has match exactly? */
	if (count_wire(d) && gen_override < 0 && d->view.version[0]) {
		int w;
		enum cfg_gen row_gen = d->view.gen, g = closest(d, tree, &w);
		if (w == 0 && g != row_gen) {
			reset(d);
			d->view.gen = g;
			add(d, "shape", "changed", false, "generation",
			    "row %s says %s; the structs are pdkv's %s (run pdkv with --v1-shape "
			    "%s)",
			    d->view.row, cfg_gen_name(row_gen), cfg_gen_name(g), cfg_gen_name(g));
			cmp_all(d, tree);
		}
	}
	d->verdict = CFG_DRIFT_MODELS;
	for (int i = 0; i < d->nitems; i++)
		if (strcmp(d->items[i].status, "known"))
			d->verdict = d->items[i].wire
			                 ? CFG_DRIFT_WIRE
			                 : (d->verdict == CFG_DRIFT_WIRE ? CFG_DRIFT_WIRE
			                                                 : CFG_DRIFT_NON_WIRE);
	return 0;
}

void cfg_drift_free(struct cfg_drift *d)
{
	free(d->items);
	d->items = NULL;
	d->nitems = d->cap = 0;
}
