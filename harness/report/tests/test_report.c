/* SPDX-License-Identifier: Apache-2.0 */
/* test_report: the statistics of `pdkv report` against values worked out independently (exact
 * U tail counts by enumeration, the normal approximation by a separate Python computation) and
 * compare's decisions on synthetic sample sets with known answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/rpt.h"

static void test_median(void **st)
{
	(void)st;
	double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2};
	assert_true(pd_stats_median(odd, 3) == 3);
	assert_true(pd_stats_median(even, 4) == 2.5);
	assert_true(isnan(pd_stats_median(odd, 0)));
}

/* complete separation of 5 vs 5: only 1 of C(10,5) = 252 splits is as extreme, each side */
static void test_mw_exact_separated(void **st)
{
	(void)st;
	double x[] = {1, 2, 3, 4, 5}, y[] = {6, 7, 8, 9, 10}, u;
	const char *m;
	double p = pd_stats_mann_whitney(x, 5, y, 5, &u, &m);
	assert_string_equal(m, "exact");
	assert_true(u == 0);
	assert_true(fabs(p - 2.0 / 252) < 1e-12);
	/* symmetric: the other way round gives U = 25 and the same p */
	p = pd_stats_mann_whitney(y, 5, x, 5, &u, &m);
	assert_true(u == 25);
	assert_true(fabs(p - 2.0 / 252) < 1e-12);
}

/* 4 vs 4 with U = 1: U = 0 and U = 1 are one split each of C(8,4) = 70 -> p = 2 * 2/70 */
static void test_mw_exact_small(void **st)
{
	(void)st;
	double x[] = {1, 2, 3, 5}, y[] = {4, 6, 7, 8}, u;
	const char *m;
	double p = pd_stats_mann_whitney(x, 4, y, 4, &u, &m);
	assert_true(u == 1);
	assert_true(fabs(p - 4.0 / 70) < 1e-12);
	/* 3 vs 3 can never reach 0.05: the smallest two-sided p is 2/20 */
	p = pd_stats_mann_whitney(x, 3, y + 1, 3, &u, &m);
	assert_true(fabs(p - 0.1) < 1e-12);
}

/* counts U over every 5-subset of the 11 values: the brute-force answer is 38/462 */
static void test_mw_exact_bruteforce(void **st)
{
	(void)st;
	double x[] = {1.1, 2.5, 3.9, 4.2, 7.7}, y[] = {3.0, 5.5, 6.1, 8.8, 9.2, 10.4}, all[11], u;
	const char *m;
	size_t lo = 0, hi = 0, tot = 0;
	double p = pd_stats_mann_whitney(x, 5, y, 6, &u, &m);
	memcpy(all, x, sizeof(x));
	memcpy(all + 5, y, sizeof(y));
	for (unsigned mask = 0; mask < (1u << 11); mask++) {
		double uu = 0;
		if (__builtin_popcount(mask) != 5)
			continue;
		for (int i = 0; i < 11; i++)
			for (int j = 0; j < 11; j++)
				if ((mask >> i & 1) && !(mask >> j & 1) && all[i] > all[j])
					uu++;
		tot++;
		lo += uu <= u;
		hi += uu >= u;
	}
	assert_true(u == 5);
	assert_int_equal(tot, 462);
	assert_true(fabs(p - 2.0 * (double)(lo < hi ? lo : hi) / (double)tot) < 1e-12);
	assert_true(fabs(p - 38.0 / 462) < 1e-12);
}

/* ties -> normal approximation with tie and continuity correction; reference values computed
 * separately in Python (math.erfc), by the textbook formula */
static void test_mw_normal(void **st)
{
	(void)st;
	double x[] = {1, 2, 2, 3, 3, 3, 4}, y[] = {3, 4, 4, 5, 5, 6, 6}, u, a[30], b[30];
	const char *m;
	double p = pd_stats_mann_whitney(x, 7, y, 7, &u, &m);
	assert_string_equal(m, "normal");
	assert_true(u == 3.5);
	assert_true(fabs(p - 0.007590932197742906) < 1e-9);
	/* 60 values (> PD_STATS_EXACT_MAX): normal even without ties */
	for (int i = 0; i < 30; i++) {
		a[i] = 10 + 0.37 * i;
		b[i] = 12 + 0.41 * i;
	}
	p = pd_stats_mann_whitney(a, 30, b, 30, &u, &m);
	assert_string_equal(m, "normal");
	assert_true(u == 274);
	assert_true(fabs(p - 0.009468269708615272) < 1e-9);
	/* all tied: nothing tells the sides apart */
	double t1[] = {2, 2, 2, 2}, t2[] = {2, 2, 2, 2};
	assert_true(pd_stats_mann_whitney(t1, 4, t2, 4, &u, &m) == 1);
}

/* ---------------------------------------------------------------- compare */
static char *bench_json(const char *meta, const double *gb, size_t n, int threads)
{
	char *s = NULL, *p;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	fprintf(f,
	        "{\"tool\":\"pdkv-bench\",\"protocol\":\"tcp\",\"threads\":%d,\"meta\":{%s},"
	        "\"rows\":[",
	        threads, meta);
	for (size_t i = 0; i < n; i++)
		fprintf(f,
		        "%s{\"kind\":\"pdkv\",\"operation\":\"write\",\"block_size\":65536,"
		        "\"batch_size\":128,\"threads\":%d,\"GBps\":%g}",
		        i ? "," : "", threads, gb[i]);
	fprintf(f, "]}");
	fclose(f);
	p = s;
	return p;
}

static enum rpt_outcome outcome_of(const double *a, size_t na, const double *b, size_t nb,
                                   int *status)
{
	struct rpt_doc da, db;
	struct rpt_cmp c;
	struct rpt_opts o = {.threshold_pct = 5, .alpha = 0.05};
	char err[256], *ja = bench_json("\"hostname\":\"h\"", a, na, 1);
	char *jb = bench_json("\"hostname\":\"h\"", b, nb, 1);
	enum rpt_outcome out;
	assert_int_equal(rpt_parse("old.json", ja, &da, err, sizeof(err)), 0);
	assert_int_equal(rpt_parse("new.json", jb, &db, err, sizeof(err)), 0);
	assert_int_equal(rpt_compare(&da, &db, &o, &c), 0);
	assert_int_equal(c.nrows, 1);
	assert_int_equal(c.nwarn, 0);
	out = c.rows[0].out;
	*status = rpt_cmp_status(&c);
	rpt_cmp_free(&c);
	rpt_doc_free(&da);
	rpt_doc_free(&db);
	free(ja);
	free(jb);
	return out;
}

static void test_compare_known(void **st)
{
	(void)st;
	double base[] = {10.0, 10.1, 9.9, 10.05, 9.95};
	double slow[] = {8.0, 8.08, 7.92, 8.04, 7.96};    /* -20 %, low noise */
	double noisy[] = {11.5, 8.7, 10.9, 9.1, 9.6};     /* -2 % median, +-15 % noise */
	double fast[] = {12.0, 12.1, 11.9, 12.05, 11.95}; /* +20 % */
	double little[] = {9.7, 9.8, 9.75, 9.72, 9.78};   /* -2.5 %, significant */
	int status;
	assert_int_equal(outcome_of(base, 5, base, 5, &status), RPT_SAME);
	assert_int_equal(status, 0);
	assert_int_equal(outcome_of(base, 5, slow, 5, &status), RPT_REGRESSION);
	assert_int_equal(status, 1);
	assert_int_equal(outcome_of(base, 5, noisy, 5, &status), RPT_SAME);
	assert_int_equal(status, 0);
	assert_int_equal(outcome_of(base, 5, fast, 5, &status), RPT_BETTER);
	assert_int_equal(status, 0);
	assert_int_equal(outcome_of(base, 5, little, 5, &status), RPT_WORSE);
	assert_int_equal(status, 0); /* within --threshold 5 %: said, not gated */
	assert_int_equal(outcome_of(base, 3, slow, 3, &status), RPT_FEW);
	assert_int_equal(status, 0);
}

static void test_compare_threads_mismatch(void **st)
{
	(void)st;
	double a[] = {10, 10.1, 9.9, 10}, b[] = {10, 10.1, 9.9, 10};
	char *ja = bench_json("\"threads\":1", a, 4, 1), *jb = bench_json("\"threads\":2", b, 4, 2);
	struct rpt_doc da, db;
	struct rpt_cmp c;
	struct rpt_opts o = {.threshold_pct = 5, .alpha = 0.05};
	char err[256];
	bool warned = false;
	assert_int_equal(rpt_parse("a", ja, &da, err, sizeof(err)), 0);
	assert_int_equal(rpt_parse("b", jb, &db, err, sizeof(err)), 0);
	assert_int_equal(rpt_compare(&da, &db, &o, &c), 0);
	for (size_t i = 0; i < c.nwarn; i++)
		warned |= strstr(c.warn[i], "threads differs: old 1, new 2") != NULL;
	assert_true(warned);
	/* the one row still pairs up, and says what differed */
	assert_int_equal(c.nrows, 1);
	assert_non_null(c.rows[0].o);
	assert_non_null(c.rows[0].n);
	assert_non_null(strstr(c.rows[0].note, "threads 1 -> 2"));
	rpt_cmp_free(&c);
	rpt_doc_free(&da);
	rpt_doc_free(&db);
	free(ja);
	free(jb);
}

/* generic rows ({name, metric, samples|value, better}): direction follows "better" */
static void test_compare_rows(void **st)
{
	(void)st;
	const char *a = "{\"rows\":["
	                "{\"name\":\"c8\",\"metric\":\"ttft_p50\",\"unit\":\"ms\",\"better\":"
	                "\"lower\",\"samples\":[100,101,99,100.5,99.5]},"
	                "{\"name\":\"c8\",\"metric\":\"goodput\",\"better\":\"higher\","
	                "\"value\":50},"
	                "{\"name\":\"gone\",\"metric\":\"x\",\"value\":1}]}";
	const char *b = "{\"rows\":["
	                "{\"name\":\"c8\",\"metric\":\"ttft_p50\",\"unit\":\"ms\",\"better\":"
	                "\"lower\",\"samples\":[120,121,119,120.5,119.5]},"
	                "{\"name\":\"c8\",\"metric\":\"goodput\",\"better\":\"higher\","
	                "\"value\":60},"
	                "{\"name\":\"added\",\"metric\":\"x\",\"value\":1}]}";
	struct rpt_doc da, db;
	struct rpt_cmp c;
	struct rpt_opts o = {.threshold_pct = 5, .alpha = 0.05};
	char err[256];
	assert_int_equal(rpt_parse("a", a, &da, err, sizeof(err)), 0);
	assert_int_equal(rpt_parse("b", b, &db, err, sizeof(err)), 0);
	assert_int_equal(da.kind, RPT_ROWS);
	assert_int_equal(rpt_compare(&da, &db, &o, &c), 0);
	assert_int_equal(c.nrows, 4);
	assert_int_equal(c.rows[0].out, RPT_REGRESSION); /* TTFT +20 %: higher is worse */
	assert_string_equal(c.rows[0].o->metric, "ttft_p50 (ms)");
	assert_int_equal(c.rows[1].out, RPT_FEW); /* goodput +20 %, one value: no verdict */
	assert_int_equal(c.rows[2].out, RPT_ONLY_OLD);
	assert_int_equal(c.rows[3].out, RPT_ONLY_NEW);
	assert_int_equal(rpt_cmp_status(&c), 1);
	rpt_cmp_free(&c);
	rpt_doc_free(&da);
	rpt_doc_free(&db);
}

static void test_run_diff(void **st)
{
	(void)st;
	/* s1 breaks (PASS -> FAIL), s3 passes both times but reuses fewer tokens, s4 has a fault
	 * (expect_fail) and its counts follow the fault's timing, s2 goes NOTRUN */
	const char *a =
	    "{\"tool\":\"pdkv run\",\"version\":\"0.1\",\"scenarios\":["
	    "{\"name\":\"s1\",\"status\":\"PASS\",\"checks\":[{\"name\":\"kv_reused\",\"result\":"
	    "\"PASS\",\"detail\":\"reused 100\"}],\"metrics\":{\"decode\":{"
	    "\"pdkv_kv_reused_tokens_total\":100}},\"requests\":{\"total\":3,\"ok\":3,"
	    "\"latency_p50_s\":0.1}},"
	    "{\"name\":\"s2\",\"status\":\"PASS\",\"checks\":[]},"
	    "{\"name\":\"s3\",\"status\":\"PASS\",\"checks\":[],\"metrics\":{\"decode\":{"
	    "\"pdkv_kv_reused_tokens_total\":100,\"vllm:e2e_request_latency_seconds_bucket\":9,"
	    "\"vllm:e2e_request_latency_seconds_sum\":0.3}},"
	    "\"requests\":{\"total\":3,\"ok\":3,\"latency_p50_s\":0.1}},"
	    "{\"name\":\"s4\",\"status\":\"PASS\",\"expect_fail\":\"http_ok\",\"checks\":[],"
	    "\"requests\":{\"total\":10,\"ok\":4}},"
	    "{\"name\":\"self\",\"status\":\"PASS\",\"checks\":[{\"name\":\"kv_reused\",\"result\":"
	    "\"FAIL\",\"expected_to_fail\":true}]}]}";
	const char *b =
	    "{\"tool\":\"pdkv run\",\"version\":\"0.1\",\"scenarios\":["
	    "{\"name\":\"s1\",\"status\":\"FAIL\",\"checks\":[{\"name\":\"kv_reused\",\"result\":"
	    "\"FAIL\",\"detail\":\"reused 0 of 100\"}],\"metrics\":{\"decode\":{"
	    "\"pdkv_kv_reused_tokens_total\":0}},\"requests\":{\"total\":3,\"ok\":3,"
	    "\"latency_p50_s\":0.101}},"
	    "{\"name\":\"s2\",\"status\":\"NOTRUN\",\"reason\":\"no etcd\",\"checks\":[]},"
	    "{\"name\":\"s3\",\"status\":\"PASS\",\"checks\":[],\"metrics\":{\"decode\":{"
	    "\"pdkv_kv_reused_tokens_total\":50,\"vllm:e2e_request_latency_seconds_bucket\":12,"
	    "\"vllm:e2e_request_latency_seconds_sum\":0.6}},"
	    "\"requests\":{\"total\":3,\"ok\":3,\"latency_p50_s\":0.2}},"
	    "{\"name\":\"s4\",\"status\":\"PASS\",\"expect_fail\":\"http_ok\",\"checks\":[],"
	    "\"requests\":{\"total\":10,\"ok\":3}},"
	    "{\"name\":\"self\",\"status\":\"PASS\",\"checks\":[{\"name\":\"kv_reused\",\"result\":"
	    "\"FAIL\",\"expected_to_fail\":true}]}]}";
	struct rpt_doc da, db;
	struct rpt_cmp c;
	struct rpt_opts o = {.threshold_pct = 5, .alpha = 0.05};
	char err[256];
	size_t regressions = 0, seen = 0;
	assert_int_equal(rpt_parse("a", a, &da, err, sizeof(err)), 0);
	assert_int_equal(rpt_parse("b", b, &db, err, sizeof(err)), 0);
	assert_int_equal(da.kind, RPT_RUN);
	assert_int_equal(rpt_compare(&da, &db, &o, &c), 0);
	/* s1 PASS->FAIL, its kv_reused PASS->FAIL, s2 PASS->NOTRUN; self unchanged */
	assert_int_equal(c.nvd, 3);
	assert_int_equal(c.worse_verdicts, 3);
	assert_int_equal(c.new_notrun, 1);
	for (size_t i = 0; i < c.nrows; i++) {
		const struct rpt_row *r = &c.rows[i];
		const char *m = r->o->metric, *sc = r->o->key;
		/* histogram buckets summed over le are never compared */
		assert_null(strstr(m, "_bucket"));
		if (!strcmp(m, "pdkv_kv_reused_tokens_total"))
			/* s3: a count of a steady workload; s1 failed: its counts are no verdict */
			assert_int_equal(r->out, !strncmp(sc, "s3|", 3) ? RPT_REGRESSION : RPT_FEW);
		if (!strcmp(m, "latency_p50_s") ||
		    !strcmp(m, "vllm:e2e_request_latency_seconds_sum"))
			assert_int_equal(r->out, RPT_FEW); /* one value per run: never a verdict */
		if (!strcmp(m, "ok") && !strncmp(sc, "s4|", 3))
			assert_int_equal(r->out, RPT_FEW); /* a fault's timing, not a regression */
		seen += !strcmp(m, "latency_p50_s");
		regressions += r->out == RPT_REGRESSION;
	}
	assert_int_equal(seen, 2);
	assert_int_equal(regressions, 1);
	assert_int_equal(c.regressions, 1);
	assert_int_equal(rpt_cmp_status(&c), 1);
	rpt_cmp_free(&c);
	rpt_doc_free(&da);
	rpt_doc_free(&db);
}

/* bench rows with a socket baseline: socket[i] and pdkv[i] of one repetition as samples */
static char *bench_pair_json(const double *sock, const double *pdkv, size_t n)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	fprintf(f, "{\"tool\":\"pdkv-bench\",\"protocol\":\"tcp\",\"meta\":{\"hostname\":\"h\"},"
	           "\"rows\":[");
	for (int k = 0; k < 2; k++) {
		const double *v = k ? pdkv : sock;
		fprintf(f,
		        "%s{\"kind\":\"%s\",\"operation\":\"write\",\"block_size\":1048576,"
		        "\"batch_size\":128,\"threads\":1,\"GBps\":%g,\"samples\":{\"GBps\":[",
		        k ? "," : "", k ? "pdkv" : "socket", v[0]);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s%g", i ? "," : "", v[i]);
		fprintf(f, "]}}");
	}
	fprintf(f, "]}");
	fclose(f);
	return s;
}

/* the outcome of each row of a bench pair comparison, by metric label prefix */
static int pair_compare(const double *so, const double *po, const double *sn, const double *pn,
                        enum rpt_outcome *pdkv, enum rpt_outcome *sock, enum rpt_outcome *ratio)
{
	char *ja = bench_pair_json(so, po, 5), *jb = bench_pair_json(sn, pn, 5), err[256];
	struct rpt_doc da, db;
	struct rpt_cmp c;
	struct rpt_opts o = {.threshold_pct = 5, .alpha = 0.05};
	int status;
	assert_int_equal(rpt_parse("a", ja, &da, err, sizeof(err)), 0);
	assert_int_equal(rpt_parse("b", jb, &db, err, sizeof(err)), 0);
	assert_int_equal(rpt_compare(&da, &db, &o, &c), 0);
	assert_int_equal(c.nrows, 3);
	for (size_t i = 0; i < c.nrows; i++) {
		const char *k = c.rows[i].o->kind;
		*(!strcmp(k, "pdkv") ? pdkv : !strcmp(k, "socket") ? sock : ratio) = c.rows[i].out;
		if (!strcmp(k, "pdkv") && c.rows[i].out == RPT_WORSE && c.rows[i].change_pct < -5)
			assert_non_null(strstr(c.rows[i].why, "pdkv/socket"));
	}
	status = rpt_cmp_status(&c);
	rpt_cmp_free(&c);
	rpt_doc_free(&da);
	rpt_doc_free(&db);
	free(ja);
	free(jb);
	return status;
}

/* issue 33: the host got busier in the new run — socket and pdkv both halve, the ratio of each
 * interleaved pair holds: no regression; pdkv alone 20 % slower: the ratio says REGRESSION */
static void test_compare_ratio_gate(void **st)
{
	(void)st;
	double so[] = {4.0, 4.1, 3.9, 4.05, 3.95}, po[] = {3.6, 3.7, 3.5, 3.65, 3.55};
	double sn[] = {2.0, 2.1, 1.9, 2.05, 1.95}, pn[] = {1.8, 1.9, 1.7, 1.85, 1.75};
	double ps[] = {2.9, 2.95, 2.8, 2.92, 2.84}; /* -20 %, socket unchanged */
	enum rpt_outcome p, s, r;
	assert_int_equal(pair_compare(so, po, sn, pn, &p, &s, &r), 0);
	assert_int_equal(p, RPT_WORSE); /* -50 %, significant, but the ratio decides */
	assert_int_equal(s, RPT_WORSE); /* the baseline is never gated */
	assert_int_equal(r, RPT_SAME);
	assert_int_equal(pair_compare(so, po, so, ps, &p, &s, &r), 1);
	assert_int_equal(r, RPT_REGRESSION);
	assert_int_equal(p, RPT_WORSE);
	assert_int_equal(s, RPT_SAME);
}

/* Holm: one row at p = 8/252 = 0.032 (5 vs 5, U = 2, -25 %) is a REGRESSION alone; beside three
 * more gated rows that did not move its corrected p is 4 x 0.032 = 0.127: said, not gated */
static void test_compare_holm(void **st)
{
	(void)st;
	const char *row = "{\"name\":\"%s\",\"metric\":\"gbps\",\"better\":\"higher\","
	                  "\"samples\":[%s]}";
	const char *old = "10,11,12,13,14", *moved = "8,9,10.5,10.8,7";
	for (int family = 1; family <= 4; family += 3) {
		char a[1024], b[1024], one[256];
		size_t la = 0, lb = 0;
		struct rpt_doc da, db;
		struct rpt_cmp c;
		struct rpt_opts o = {.threshold_pct = 5, .alpha = 0.05};
		char err[256];
		la += (size_t)snprintf(a + la, sizeof(a) - la, "{\"rows\":[");
		lb += (size_t)snprintf(b + lb, sizeof(b) - lb, "{\"rows\":[");
		for (int i = 0; i < family; i++) {
			char name[16];
			snprintf(name, sizeof(name), "r%d", i);
			snprintf(one, sizeof(one), row, name, old);
			la += (size_t)snprintf(a + la, sizeof(a) - la, "%s%s", i ? "," : "", one);
			snprintf(one, sizeof(one), row, name, i ? old : moved);
			lb += (size_t)snprintf(b + lb, sizeof(b) - lb, "%s%s", i ? "," : "", one);
		}
		snprintf(a + la, sizeof(a) - la, "]}");
		snprintf(b + lb, sizeof(b) - lb, "]}");
		assert_int_equal(rpt_parse("a", a, &da, err, sizeof(err)), 0);
		assert_int_equal(rpt_parse("b", b, &db, err, sizeof(err)), 0);
		assert_int_equal(rpt_compare(&da, &db, &o, &c), 0);
		assert_int_equal(c.family, (size_t)family);
		assert_true(fabs(c.rows[0].p - 8.0 / 252) < 1e-12);
		assert_true(fabs(c.rows[0].p_gate - family * 8.0 / 252) < 1e-12);
		assert_int_equal(c.rows[0].out, family == 1 ? RPT_REGRESSION : RPT_WORSE);
		assert_int_equal(rpt_cmp_status(&c), family == 1 ? 1 : 0);
		if (family > 1)
			assert_non_null(strstr(c.rows[0].why, "Holm"));
		rpt_cmp_free(&c);
		rpt_doc_free(&da);
		rpt_doc_free(&db);
	}
}

static void test_bad_files(void **st)
{
	(void)st;
	struct rpt_doc d;
	char err[256];
	assert_int_equal(rpt_parse("x.json",
	                           "{\"rows\":[{\"kind\":\"pdkv\",\"operation\":\"write\"}]}", &d,
	                           err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "x.json: rows[0].block_size"));
	rpt_doc_free(&d);
	assert_int_equal(rpt_parse("y.json",
	                           "{\"rows\":[{\"name\":\"a\",\"metric\":\"m\","
	                           "\"better\":\"up\",\"value\":1}]}",
	                           &d, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "y.json: rows[0].better"));
	rpt_doc_free(&d);
	assert_int_equal(rpt_parse("z.json", "[1,2]", &d, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "z.json"));
	rpt_doc_free(&d);
	assert_int_equal(rpt_parse("w.json", "{\"scenarios\":[{\"name\":\"a\",\"status\":\"OK\"}]}",
	                           &d, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "w.json: scenarios[0].status"));
	rpt_doc_free(&d);
}

/* Issue 34, N7: a field of the wrong JSON type is an error naming file and field, for every
 * input kind, never an empty document that compares as "0 regressions". */
static void test_wrong_shapes(void **st)
{
	static const struct {
		const char *text, *want;
	} c[] = {
	    {"{\"tool\":\"pdkv-bench\",\"rows\":\"oops\"}",
	     "b.json: rows: expected an array, got a string"},
	    {"{\"tool\":\"pdkv-bench\"}", "b.json: rows: expected an array, got nothing"},
	    {"{\"tool\":\"pdkv-bench\",\"rows\":[],\"meta\":3}",
	     "b.json: meta: expected an object, got a number"},
	    {"{\"tool\":\"pdkv run\",\"scenarios\":{}}",
	     "b.json: scenarios: expected an array, got an object"},
	    {"{\"scenarios\":[{\"name\":\"a\",\"status\":\"PASS\",\"checks\":\"x\"}]}",
	     "b.json: scenarios[0].checks: expected an array, got a string"},
	    {"{\"scenarios\":[{\"name\":\"a\",\"status\":\"PASS\",\"metrics\":[1]}]}",
	     "b.json: scenarios[0].metrics: expected an object, got an array"},
	    {"{\"scenarios\":[{\"name\":\"a\",\"status\":\"PASS\",\"requests\":1}]}",
	     "b.json: scenarios[0].requests: expected an object, got a number"},
	    {"{\"rows\":[],\"meta\":\"m\"}", "b.json: meta: expected an object, got a string"},
	};
	(void)st;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct rpt_doc d;
		char err[256] = "";
		int rc = rpt_parse("b.json", c[i].text, &d, err, sizeof(err));
		if (rc != -1 || !strstr(err, c[i].want))
			fail_msg("%s: rc %d, error \"%s\", expected \"%s\"", c[i].text, rc, err,
			         c[i].want);
		rpt_doc_free(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_median),
	    cmocka_unit_test(test_mw_exact_separated),
	    cmocka_unit_test(test_mw_exact_small),
	    cmocka_unit_test(test_mw_exact_bruteforce),
	    cmocka_unit_test(test_mw_normal),
	    cmocka_unit_test(test_compare_known),
	    cmocka_unit_test(test_compare_threads_mismatch),
	    cmocka_unit_test(test_compare_rows),
	    cmocka_unit_test(test_run_diff),
	    cmocka_unit_test(test_compare_ratio_gate),
	    cmocka_unit_test(test_compare_holm),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_wrong_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
