/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_diag: the diagnostics list every cfg function appends to (errors, warnings, infos), each
 * naming the field, the bad value and what to write instead. */
#include "cfg/cfg.h"
#include "cfg_internal.h"
#include "pd_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfg_diag_add(struct cfg_diags *d, enum cfg_severity sev, const char *field, const char *fmt,
                  ...)
{
	va_list ap;
	char *msg = NULL;
	int n;

	if (!d)
		return;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct cfg_diag *v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return;
		d->v = v;
		d->cap = cap;
	}
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > 2048) { /* a 1 MB value quoted in a message helps nobody */
		size_t k = 2040;
		while (k > 0 && ((unsigned char)msg[k] & 0xc0) == 0x80)
			k--; /* cut on a UTF-8 character boundary */
		strcpy(msg + k, " [...]");
	}
	d->v[d->n].severity = sev;
	d->v[d->n].field = field ? strdup(field) : NULL;
	d->v[d->n].message = msg;
	d->n++;
}

size_t cfg_diags_count(const struct cfg_diags *d, enum cfg_severity sev)
{
	size_t i, c = 0;

	if (!d)
		return 0;
	for (i = 0; i < d->n; i++)
		if (d->v[i].severity == sev)
			c++;
	return c;
}

void cfg_diags_free(struct cfg_diags *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		free(d->v[i].field);
		free(d->v[i].message);
	}
	free(d->v);
	memset(d, 0, sizeof(*d));
}

const char *cfg_severity_name(enum cfg_severity s)
{
	switch (s) {
	case CFG_ERROR:
		return "error";
	case CFG_WARNING:
		return "warning";
	default:
		return "info";
	}
}

/* ------------------------------------------------------------------ the first vLLM error */
void cfg_report_take_err(struct cfg_report *r, char **e)
{
	if (!*e)
		return;
	if (!r->vllm_error)
		r->vllm_error = *e;
	else
		free(*e);
	*e = NULL;
}

void cfg_report_errf(struct cfg_report *r, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = pd_vasprintf(fmt, ap);
	va_end(ap);
	cfg_report_take_err(r, &s);
}
