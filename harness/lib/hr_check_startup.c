/* SPDX-License-Identifier: Apache-2.0 */
/* hr_check_startup: the deployment came up — every stand-in and the proxy answered /health.
 * As an expect_fail target it states that a configuration must be refused at startup. */
#include "hr.h"

static bool startup(const struct hr_run_data *rd, char *detail, size_t sz)
{
	if (rd->startup_error) {
		snprintf(detail, sz, "%s", rd->startup_error);
		return false;
	}
	snprintf(detail, sz, "prefill, decode and proxy answered /health");
	return true;
}

const struct hr_check hr_check_startup = {
    .name = "startup",
    .what = "prefill, decode (and plain) stand-ins and the proxy start and answer /health",
    .fn = startup,
};
