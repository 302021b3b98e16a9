/* SPDX-License-Identifier: Apache-2.0 */
/* pd_env: reads environment variables through their row in pd_env_table.c — type and range
 * checks, the default, and the row's bad-value policy (warn once, ignore, or refuse). */
#include "pd_env.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pd_log.h"
#include "pd_util.h"

static const char *const cmd_names[PD_ENV_C_NCMDS] = {
    "pdkv",           "pdkv-run",           "pdkv-config",     "pdkv-ports",   "pdkv-bench",
    "pdkv-report",    "pdkv-doctor",        "pdkv-standin",    "pdkv-proxy",   "pdkv-metaserver",
    "pdkv-bootstrap", "pdkv-upgrade-check", "pdkv-vllm-drift", "pdkv-interop", "make"};

/* one warning per bad variable and process (a reader may run per transfer) */
static atomic_bool warned[PD_ENV_MAX_ROWS];
static __thread char last_error[400];

const char *pd_env_cmd_name(unsigned bit)
{
	for (int i = 0; i < PD_ENV_C_NCMDS; i++)
		if (bit == 1u << i)
			return cmd_names[i];
	return NULL;
}

unsigned pd_env_cmd_bit(const char *name)
{
	for (int i = 0; name && i < PD_ENV_C_NCMDS; i++)
		if (!strcmp(name, cmd_names[i]) ||
		    (!strncmp(cmd_names[i], "pdkv-", 5) && !strcmp(name, cmd_names[i] + 5)))
			return 1u << i;
	return 0;
}

const struct pd_env_var *pd_env_find(const char *name)
{
	for (size_t i = 0; name && i < pd_env_count(); i++)
		if (!strcmp(pd_env_at(i)->name, name))
			return pd_env_at(i);
	return NULL;
}

static bool in_choices(const char *choices, const char *v)
{
	size_t l = strlen(v);

	for (const char *p = choices; p && *p;) {
		size_t k = strcspn(p, "|");

		if (k == l && !strncmp(p, v, l))
			return true;
		p += k + (p[k] == '|');
	}
	return false;
}

static int bool_of(const char *v, bool *out)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "true"))
		*out = true;
	else if (!strcmp(v, "0") || !strcasecmp(v, "false"))
		*out = false;
	else
		return -1;
	return 0;
}

static int float_of(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return errno || end == v || *end || !isfinite(*out) ? -1 : 0;
}

int pd_env_check(const struct pd_env_var *r, const char *v, char *msg, size_t msz)
{
	int64_t i;
	uint64_t u;
	double d;
	bool b;

	if (msz)
		*msg = '\0';
	if (!v || !*v)
		return 0;
	switch (r->type) {
	case PD_ENV_INT:
		if (!pd_parse_i64(v, &i) && i >= r->lo && i <= r->hi)
			return 0;
		snprintf(msg, msz, "expected an integer %lld..%lld", (long long)r->lo,
		         (long long)r->hi);
		return -1;
	case PD_ENV_SIZE:
		if (!pd_parse_size(v, &u) && u >= (uint64_t)r->lo && u <= (uint64_t)r->hi)
			return 0;
		snprintf(msg, msz, "expected a size such as 4M, %lld..%lld bytes", (long long)r->lo,
		         (long long)r->hi);
		return -1;
	case PD_ENV_BOOL:
		if (!bool_of(v, &b))
			return 0;
		snprintf(msg, msz, "expected 0 or 1");
		return -1;
	case PD_ENV_ENUM:
		if (in_choices(r->choices, v))
			return 0;
		snprintf(msg, msz, "expected one of %s", r->choices);
		return -1;
	case PD_ENV_FLOAT:
		if (!float_of(v, &d) && d > (double)r->lo && d < (double)r->hi)
			return 0;
		snprintf(msg, msz, "expected a number above %lld and below %lld", (long long)r->lo,
		         (long long)r->hi);
		return -1;
	default:
		return 0;
	}
}

/* The row and value of name for a typed read: 1 set and good, 0 unset, -1 bad (policy applied),
 * -2 not in the table or of another type. */
static int lookup(const char *name, enum pd_env_type want, const struct pd_env_var **row,
                  const char **val)
{
	const struct pd_env_var *r = pd_env_find(name);
	char why[160];

	*row = r;
	*val = NULL;
	if (!r || r->type != want) {
		pd_err("pd_env: %s is %s (add a row to ref/common/pd_env_table.c)", name,
		       r ? "read with the wrong type" : "not in the table");
		return -2;
	}
	*val = getenv(name);
	if (!*val || !**val)
		return 0;
	if (!pd_env_check(r, *val, why, sizeof(why)))
		return 1;
	snprintf(last_error, sizeof(last_error), "%s=\"%s\": %s%s%s", name, *val, why,
	         r->def ? "; default " : "", r->def ? r->def : "");
	if (r->bad == PD_ENV_WARN && !atomic_exchange(&warned[r - pd_env_at(0)], true))
		pd_warn("ignoring %s (using the default)", last_error);
	return -1;
}

static int64_t def_i64(const struct pd_env_var *r)
{
	int64_t v = 0;

	return r && r->def && !pd_parse_i64(r->def, &v) ? v : 0;
}

int pd_env_int(const char *name, int64_t *out)
{
	const struct pd_env_var *r;
	const char *v;
	int rc = lookup(name, PD_ENV_INT, &r, &v);

	*out = def_i64(r);
	if (rc == 1)
		pd_parse_i64(v, out);
	return rc < -1 ? 0 : rc;
}

int pd_env_int_or(const char *name, const char *older, int64_t *out)
{
	int rc = pd_env_int(name, out);

	return rc || !older ? rc : pd_env_int(older, out);
}

int pd_env_size(const char *name, uint64_t *out)
{
	const struct pd_env_var *r;
	const char *v;
	int rc = lookup(name, PD_ENV_SIZE, &r, &v);

	*out = 0;
	if (r && r->def)
		pd_parse_size(r->def, out);
	if (rc == 1)
		pd_parse_size(v, out);
	return rc < -1 ? 0 : rc;
}

int pd_env_bool(const char *name, bool *out)
{
	const struct pd_env_var *r;
	const char *v;
	int rc = lookup(name, PD_ENV_BOOL, &r, &v);

	*out = false;
	if (r && r->def)
		bool_of(r->def, out);
	if (rc == 1)
		bool_of(v, out);
	return rc < -1 ? 0 : rc;
}

int pd_env_float(const char *name, double *out)
{
	const struct pd_env_var *r;
	const char *v;
	int rc = lookup(name, PD_ENV_FLOAT, &r, &v);

	*out = 0;
	if (r && r->def)
		float_of(r->def, out);
	if (rc == 1)
		float_of(v, out);
	return rc < -1 ? 0 : rc;
}

const char *pd_env_str(const char *name)
{
	const struct pd_env_var *r = pd_env_find(name);
	const char *v;

	if (!r) {
		pd_err("pd_env: %s is not in the table (add a row to ref/common/pd_env_table.c)",
		       name);
		return NULL;
	}
	v = getenv(name);
	if (v && *v && r->type == PD_ENV_ENUM && lookup(name, PD_ENV_ENUM, &r, &v) < 0)
		v = NULL;
	return v && *v ? v : r->def;
}

bool pd_env_set(const char *name)
{
	if (!pd_env_find(name))
		pd_err("pd_env: %s is not in the table (add a row to ref/common/pd_env_table.c)",
		       name);
	return getenv(name) != NULL;
}

const char *pd_env_raw(const char *name)
{
	if (!pd_env_find(name))
		pd_err("pd_env: %s is not in the table (add a row to ref/common/pd_env_table.c)",
		       name);
	return getenv(name);
}

const char *pd_env_error(void)
{
	return last_error;
}
