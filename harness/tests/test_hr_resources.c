/* SPDX-License-Identifier: Apache-2.0 */
/* test_hr_resources: the resources check's verdict on hand-made /proc samples — flat passes, a
 * leak of fds, threads or RSS fails naming the process — and live samples of this process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/hr.h"

static const char *const names[] = {"prefill", "decode"};

/* 20 samples over 10 s: decode's figures follow grow() from a warm base; prefill stays flat */
static bool judge(long dfd, long dth, long drss_kib, char *detail, size_t sz)
{
	struct hr_res *res = hr_res_start(names, NULL, 2);
	struct hr_run_data rd = {.res = res};
	const struct hr_check *ck = hr_check_find("resources");
	bool pass;

	assert_non_null(res);
	assert_non_null(ck);
	for (int k = 0; k < 20; k++) {
		bool warm = k > 0;
		double f = k / 19.0; /* 0 .. 1 over the run */

		hr_res_add(res, 0, k * 0.5, warm ? 100 : 20, warm ? 40 : 8, warm ? 200000 : 15000);
		hr_res_add(res, 1, k * 0.5, warm ? 100 + (long)(dfd * f) : 20,
		           warm ? 40 + (long)(dth * f) : 8,
		           warm ? 200000 + (long)(drss_kib * f) : 15000);
	}
	pass = ck->fn(&rd, detail, sz);
	hr_res_free(res);
	return pass;
}

static void flat_passes(void **state)
{
	char d[1024];
	(void)state;
	assert_true(judge(0, 0, 0, d, sizeof(d)));
	assert_non_null(
	    strstr(d, "prefill: fds 20/100/100/100, threads 8/40/40/40, RSS 15/195/195/195"));
	assert_null(strstr(d, "GREW"));
	/* within the stated bound: a few connections and 40 MiB more */
	assert_true(judge(10, 2, 40 * 1024, d, sizeof(d)));
}

static void leaks_fail(void **state)
{
	char d[1024];
	(void)state;
	assert_false(judge(60, 0, 0, d, sizeof(d))); /* an fd per ~100 requests */
	assert_non_null(strstr(d, "GREW decode: fds 20/"));
	assert_null(strstr(d, "GREW prefill"));
	assert_false(judge(0, 12, 0, d, sizeof(d)));         /* threads */
	assert_false(judge(0, 0, 200 * 1024, d, sizeof(d))); /* 200 MiB of RSS */
	assert_non_null(strstr(d, "bound: end <= base"));
}

static void no_samples_fail(void **state)
{
	char d[256];
	struct hr_run_data rd = {0};
	(void)state;
	assert_false(hr_check_find("resources")->fn(&rd, d, sizeof(d)));
	assert_non_null(strstr(d, "no samples"));
}

/* live: this process sampled from /proc, figures in the JSON */
static void live_self(void **state)
{
	int pid = (int)getpid();
	struct hr_res *res = hr_res_start((const char *[]){"self"}, &pid, 1);
	struct hr_run_data rd = {.res = res};
	cJSON *j;
	const cJSON *e;
	(void)state;
	assert_non_null(res);
	hr_res_stop(res, 0.6);
	j = hr_res_json(&rd);
	e = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "processes"), "self");
	assert_non_null(e);
	assert_true(cJSON_GetObjectItem(e, "samples")->valueint >= 2);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "end"), "fds")->valueint >= 3);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "end"), "threads")->valueint >= 1);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "end"), "rss_mib")->valuedouble > 0);
	cJSON_Delete(j);
	hr_res_free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(flat_passes),
	    cmocka_unit_test(leaks_fail),
	    cmocka_unit_test(no_samples_fail),
	    cmocka_unit_test(live_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
