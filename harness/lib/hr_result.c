/* SPDX-License-Identifier: Apache-2.0 */
/* hr_result: what one scenario run produced (status, checks, metrics) and its lifetime. */
#include "hr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hr_status_name(enum hr_status s)
{
	switch (s) {
	case HR_PASS:
		return "PASS";
	case HR_FAIL:
		return "FAIL";
	case HR_NOTRUN:
		return "NOTRUN";
	}
	return "?";
}

void hr_result_free(struct hr_result *r)
{
	free(r->name);
	free(r->path);
	free(r->checks);
	free(r->expect_fail);
	free(r->router);
	cJSON_Delete(r->metrics);
	cJSON_Delete(r->requests);
	cJSON_Delete(r->logs);
	memset(r, 0, sizeof(*r));
}

void hr_note_add(char *buf, size_t sz, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;
	if (n + 3 >= sz)
		return;
	if (n)
		buf[n++] = ';', buf[n++] = ' ', buf[n] = '\0';
	va_start(ap, fmt);
	vsnprintf(buf + n, sz - n, fmt, ap);
	va_end(ap);
}
