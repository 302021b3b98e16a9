/* SPDX-License-Identifier: Apache-2.0 */
/* scenario_fixture: shared by the scenario-parsing tests (test_hr_gen, test_hr_sides) — parse a
 * scenario text as "dir/s.json" and expect it to parse, or to fail with a given message. */
#ifndef SCENARIO_FIXTURE_H
#define SCENARIO_FIXTURE_H

#include "lib/hr.h"

/* Parses json into sc; fails the test with the parser's message when it does not parse. */
void scfx_parse_ok(const char *json, struct hr_scenario *sc);
/* json must fail to parse with an error that starts "dir/s.json: " and contains want. */
void scfx_expect_error(const char *json, const char *want);

#endif
