/* hr_result: what one scenario run produced (status, checks, metrics) and its lifetime. */
#include "hr.h"

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
