/* SPDX-License-Identifier: Apache-2.0 */
/* scenario_fixture: parse-or-fail helpers of the scenario-parsing tests (scenario_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "scenario_fixture.h"

void scfx_parse_ok(const char *json, struct hr_scenario *sc)
{
	char err[1024] = "";
	if (hr_scenario_parse("dir/s.json", json, sc, err, sizeof(err)))
		fail_msg("parse of %s failed: %s", json, err);
}

void scfx_expect_error(const char *json, const char *want)
{
	struct hr_scenario sc;
	char err[1024] = "";
	int r = hr_scenario_parse("dir/s.json", json, &sc, err, sizeof(err));
	if (r == 0 || !strstr(err, want) || strncmp(err, "dir/s.json: ", 12)) {
		if (r == 0)
			hr_scenario_free(&sc);
		fail_msg("parse of %s gave %d \"%s\", wanted an error containing \"%s\"", json, r,
		         err, want);
	}
}
