/* SPDX-License-Identifier: Apache-2.0 */
/* hr_report_text: the terminal report — one fabtests-style line per scenario ("%-60s%8s%8.1fs",
 * valid YAML), the numbers under a failure, and a last line "N passed, N failed, N skipped". */
#include "hr.h"

#include <string.h>

static void checks_detail(FILE *f, const struct hr_result *r, bool all)
{
	for (size_t i = 0; i < r->nchecks; i++) {
		const struct hr_check_result *c = &r->checks[i];
		bool expected = r->expect_fail && !strcmp(r->expect_fail, c->name);
		if (c->notrun)
			fprintf(f, "    # %s: NOTRUN: %s\n", c->name, c->detail);
		else if (expected)
			fprintf(f, "    # self-test: %s %s as it must: %s\n", c->name,
			        c->pass ? "did NOT fail" : "failed", c->detail);
		else if (!c->pass && r->reason[0] && strstr(r->reason, c->detail))
			continue; /* already the reason line */
		else if (!c->pass || all)
			fprintf(f, "    # %s: %s%s\n", c->name, c->pass ? "" : "FAIL: ", c->detail);
	}
}

void hr_report_line(FILE *f, const struct hr_result *r, bool verbose)
{
	fprintf(f, "%-60s%8s%8.1fs\n", r->name, hr_status_name(r->status), r->secs);
	if (r->status == HR_NOTRUN) {
		fprintf(f, "    # notrun: %s\n", r->reason);
		fflush(f);
		return;
	}
	if (r->status == HR_FAIL && r->reason[0])
		fprintf(f, "    # %s\n", r->reason);
	checks_detail(f, r, verbose);
	for (const cJSON *l = (verbose || r->status == HR_FAIL) && r->logs ? r->logs->child : NULL;
	     l; l = l->next) {
		const cJSON *w = cJSON_GetObjectItem(l, "warnings"),
		            *e = cJSON_GetObjectItem(l, "errors");
		const cJSON *first = cJSON_GetObjectItem(l, "first_error");
		if (!first)
			first = cJSON_GetObjectItem(l, "first_warning");
		if (!first)
			continue;
		fprintf(f, "    # %s.log: %d warnings, %d errors; first: %.200s\n", l->string,
		        w ? w->valueint : 0, e ? e->valueint : 0, first->valuestring);
	}
	if ((r->status == HR_FAIL || verbose) && r->workdir[0] && r->kept)
		fprintf(f, "    # logs: %s\n", r->workdir);
	fflush(f);
}

void hr_report_summary(FILE *f, const struct hr_report *rep)
{
	size_t p = 0, fl = 0, n = 0;
	for (size_t i = 0; i < rep->n; i++) {
		if (rep->v[i].status == HR_PASS)
			p++;
		else if (rep->v[i].status == HR_FAIL)
			fl++;
		else
			n++;
	}
	fprintf(f, "# %zu scenarios: %zu passed, %zu failed, %zu notrun in %.1fs%s\n", rep->n, p,
	        fl, n, rep->wall_s, rep->interrupted ? " (interrupted)" : "");
	fprintf(f, "%zu passed, %zu failed, %zu skipped\n", p, fl, n);
	fflush(f);
}

/* One table per graded router: every check of the run, PASS/FAIL/NOTRUN, the evidence. */
void hr_report_router_table(FILE *f, const struct hr_result *r)
{
	if (!r->router || !r->nchecks)
		return;
	fprintf(f, "    # router: %s\n", r->router);
	fprintf(f, "    #   %-24s %-7s %s\n", "check", "result", "evidence");
	for (size_t i = 0; i < r->nchecks; i++) {
		const struct hr_check_result *c = &r->checks[i];
		bool expected = r->expect_fail && !strcmp(r->expect_fail, c->name);
		fprintf(f, "    #   %-24s %-7s %.400s\n", c->name,
		        c->notrun  ? "NOTRUN"
		        : c->pass  ? "PASS"
		        : expected ? "FAIL*"
		                   : "FAIL",
		        c->detail);
	}
	fflush(f);
}
