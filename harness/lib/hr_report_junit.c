/* SPDX-License-Identifier: Apache-2.0 */
/* hr_report_junit: --junit FILE — JUnit XML for CI dashboards: one testcase per scenario, a
 * <failure> carrying the numbers, <error> for a scenario that could not be loaded, <skipped> with
 * the reason for NOTRUN; valid against Jenkins xUnit's JUnit schema
 * (harness/tests/junit-jenkins.xsd). */
#include "hr.h"

#include <errno.h>
#include <string.h>
#include <sys/utsname.h>
#include <stdlib.h>
#include <time.h>

#include "pd_util.h"

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		switch (ch) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			/* XML 1.0 forbids most control characters even escaped */
			if (ch < 0x20 && ch != '\n' && ch != '\t')
				fputc(' ', f);
			else
				fputc(ch, f);
		}
	}
}

int hr_report_junit(const char *path, const struct hr_report *rep)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen); /* pd_write_file: whole or not at all */
	size_t fails = 0, skips = 0, errors = 0;
	char ts[64], host[128] = "localhost";
	time_t now = time(NULL);
	struct utsname u;
	int ret = 0;

	if (!f)
		return -errno;
	if (uname(&u) == 0)
		snprintf(host, sizeof(host), "%s", u.nodename);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", gmtime(&now));
	for (size_t i = 0; i < rep->n; i++) {
		fails += rep->v[i].status == HR_FAIL && !rep->v[i].error;
		errors += rep->v[i].status == HR_FAIL && rep->v[i].error;
		skips += rep->v[i].status == HR_NOTRUN;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f,
	        "<testsuites name=\"pdkv run\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
	        "time=\"%.3f\">\n",
	        rep->n, fails, errors, rep->wall_s);
	fprintf(f,
	        "  <testsuite name=\"pdkv.scenarios\" tests=\"%zu\" failures=\"%zu\" "
	        "skipped=\"%zu\" errors=\"%zu\" time=\"%.3f\" timestamp=\"%s\" hostname=\"",
	        rep->n, fails, skips, errors, rep->wall_s, ts);
	xml_text(f, host);
	fprintf(f, "\">\n");
	for (size_t i = 0; i < rep->n; i++) {
		const struct hr_result *r = &rep->v[i];
		fprintf(f, "    <testcase classname=\"pdkv.scenarios\" name=\"");
		xml_text(f, r->name);
		fprintf(f, "\" time=\"%.3f\">\n", r->secs);
		if (r->status == HR_NOTRUN) {
			fprintf(f, "      <skipped message=\"");
			xml_text(f, r->reason);
			fprintf(f, "\"/>\n");
		} else if (r->status == HR_FAIL && r->error) {
			fprintf(f, "      <error type=\"load\" message=\"");
			xml_text(f, r->reason);
			fprintf(f, "\"/>\n");
		} else if (r->status == HR_FAIL) {
			const char *type = "scenario";
			for (size_t k = 0; k < r->nchecks; k++) {
				bool want_fail =
				    r->expect_fail && !strcmp(r->expect_fail, r->checks[k].name);
				if (r->checks[k].pass == want_fail) {
					type = r->checks[k].name;
					break;
				}
			}
			fprintf(f, "      <failure type=\"");
			xml_text(f, type);
			fprintf(f, "\" message=\"");
			xml_text(f, r->reason);
			fprintf(f, "\">");
			for (size_t k = 0; k < r->nchecks; k++) {
				fprintf(f, "%s: %s: ", r->checks[k].name,
				        r->checks[k].pass ? "PASS" : "FAIL");
				xml_text(f, r->checks[k].detail);
				fputc('\n', f);
			}
			fprintf(f, "</failure>\n");
		}
		/* the scenario file: Jenkins' schema has no testcase/@file, so it goes here */
		if (r->path || r->nchecks || (r->kept && r->workdir[0])) {
			fprintf(f, "      <system-out>");
			if (r->path) {
				fprintf(f, "file: ");
				xml_text(f, r->path);
				fputc('\n', f);
			}
			for (size_t k = 0; k < r->nchecks && r->status != HR_FAIL; k++) {
				bool want_fail =
				    r->expect_fail && !strcmp(r->expect_fail, r->checks[k].name);
				fprintf(f, "%s: %s: ", r->checks[k].name,
				        r->checks[k].pass ? "PASS"
				        : want_fail ? "FAIL (expected: self-test caught its fault)"
				                    : "FAIL");
				xml_text(f, r->checks[k].detail);
				fputc('\n', f);
			}
			if (r->kept && r->workdir[0]) {
				fprintf(f, "logs: ");
				xml_text(f, r->workdir);
				fputc('\n', f);
			}
			fprintf(f, "</system-out>\n");
		}
		fprintf(f, "    </testcase>\n");
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
	if (fclose(f))
		ret = -errno;
	if (!ret)
		ret = pd_write_file(path, buf, blen);
	free(buf);
	return ret;
}
