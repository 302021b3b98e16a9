/* SPDX-License-Identifier: Apache-2.0 */
/* hr_report_json: --json FILE — one JSON document per run (perftest --out_json habit): host and
 * versions, summary, and per scenario its status, checks with numbers, metric deltas, timings. */
#include "hr.h"
#include "pd_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

static cJSON *scenario_json(const struct hr_result *r)
{
	cJSON *o = cJSON_CreateObject(), *cks;
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "file", r->path ? r->path : "");
	cJSON_AddStringToObject(o, "status", hr_status_name(r->status));
	if (r->router)
		cJSON_AddStringToObject(o, "router", r->router);
	if (r->reason[0])
		cJSON_AddStringToObject(o, "reason", r->reason);
	cJSON_AddNumberToObject(o, "seconds", r->secs);
	cJSON_AddNumberToObject(o, "startup_s", r->startup_s);
	cJSON_AddNumberToObject(o, "workload_s", r->workload_s);
	if (r->expect_fail)
		cJSON_AddStringToObject(o, "expect_fail", r->expect_fail);
	cks = cJSON_AddArrayToObject(o, "checks");
	for (size_t i = 0; i < r->nchecks; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "name", r->checks[i].name);
		cJSON_AddStringToObject(c, "result",
		                        r->checks[i].notrun ? "NOTRUN"
		                        : r->checks[i].pass ? "PASS"
		                                            : "FAIL");
		cJSON_AddBoolToObject(c, "expected_to_fail",
		                      r->expect_fail && !strcmp(r->expect_fail, r->checks[i].name));
		cJSON_AddStringToObject(c, "detail", r->checks[i].detail);
		cJSON_AddItemToArray(cks, c);
	}
	if (r->metrics)
		cJSON_AddItemToObject(o, "metrics", cJSON_Duplicate(r->metrics, 1));
	if (r->requests)
		cJSON_AddItemToObject(o, "requests", cJSON_Duplicate(r->requests, 1));
	if (r->logs)
		cJSON_AddItemToObject(o, "logs", cJSON_Duplicate(r->logs, 1));
	if (r->kept && r->workdir[0])
		cJSON_AddStringToObject(o, "workdir", r->workdir);
	return o;
}

int hr_report_json(const char *path, const struct hr_report *rep)
{
	cJSON *root = cJSON_CreateObject(), *sum, *arr;
	struct utsname u;
	char ts[64], *text;
	time_t now = time(NULL);
	size_t p = 0, f = 0, n = 0;
	int ret;

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	cJSON_AddStringToObject(root, "tool", "pdkv run");
	cJSON_AddStringToObject(root, "version", HR_VERSION);
	cJSON_AddStringToObject(root, "finished", ts);
	if (uname(&u) == 0) {
		cJSON *h = cJSON_AddObjectToObject(root, "host");
		cJSON_AddStringToObject(h, "hostname", u.nodename);
		cJSON_AddStringToObject(h, "kernel", u.release);
		cJSON_AddStringToObject(h, "machine", u.machine);
	}
	if (rep->versions)
		cJSON_AddItemToObject(root, "versions", cJSON_Duplicate(rep->versions, 1));
	for (size_t i = 0; i < rep->n; i++) {
		if (rep->v[i].status == HR_PASS)
			p++;
		else if (rep->v[i].status == HR_FAIL)
			f++;
		else
			n++;
	}
	sum = cJSON_AddObjectToObject(root, "summary");
	cJSON_AddNumberToObject(sum, "scenarios", (double)rep->n);
	cJSON_AddNumberToObject(sum, "passed", (double)p);
	cJSON_AddNumberToObject(sum, "failed", (double)f);
	cJSON_AddNumberToObject(sum, "notrun", (double)n);
	cJSON_AddNumberToObject(sum, "wall_s", rep->wall_s);
	cJSON_AddBoolToObject(sum, "interrupted", rep->interrupted);
	arr = cJSON_AddArrayToObject(root, "scenarios");
	for (size_t i = 0; i < rep->n; i++)
		cJSON_AddItemToArray(arr, scenario_json(&rep->v[i]));
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return -ENOMEM;
	{
		size_t len = strlen(text);
		char *t2 = realloc(text, len + 2);
		if (t2) {
			text = t2;
			text[len++] = '\n';
			text[len] = '\0';
		}
		ret = pd_write_file(path, text, strlen(text));
	}
	free(text);
	return ret;
}
