/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check: the table of checks a scenario can name. Adding a check = one hr_check_NAME.c file
 * defining `const struct hr_check hr_check_NAME` plus one X(NAME) row below. */
#include "hr.h"
#include "pd_util.h"

#include <string.h>

#define HR_CHECKS(X)                                                                               \
	X(startup)                                                                                 \
	X(http_ok)                                                                                 \
	X(kv_reused)                                                                               \
	X(output_equal)                                                                            \
	X(integrity)                                                                               \
	X(router_prefill_request)                                                                  \
	X(router_decode_request)                                                                   \
	X(router_ordering)                                                                         \
	X(router_prefill_failure)                                                                  \
	X(router_stream)                                                                           \
	X(recovered)                                                                               \
	X(hostile_ok)                                                                              \
	X(resources)

#define DECLARE(n) extern const struct hr_check hr_check_##n;
HR_CHECKS(DECLARE)
#define ROW(n) &hr_check_##n,
static const struct hr_check *const table[] = {HR_CHECKS(ROW)};

const struct hr_check *hr_check_find(const char *name)
{
	for (size_t i = 0; i < PD_ARRAY_SIZE(table); i++)
		if (!strcmp(table[i]->name, name))
			return table[i];
	return NULL;
}

size_t hr_check_count(void)
{
	return PD_ARRAY_SIZE(table);
}

const struct hr_check *hr_check_at(size_t i)
{
	return i < PD_ARRAY_SIZE(table) ? table[i] : NULL;
}
