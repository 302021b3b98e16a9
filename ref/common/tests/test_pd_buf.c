/* SPDX-License-Identifier: Apache-2.0 */
/* test_pd_buf: the shared buffer — growth, NUL termination, the max cap and its sticky
 * failure, printf, and the libcurl write callback's abort past max. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "pd_buf.h"

static void test_grow(void **state)
{
	struct pd_buf b = {0};
	(void)state;
	assert_int_equal(pd_buf_put(&b, "", 0), 0);
	assert_string_equal(b.p, "");
	for (int i = 0; i < 1000; i++)
		assert_int_equal(pd_buf_puts(&b, "0123456789"), 0);
	assert_int_equal(b.len, 10000);
	assert_int_equal(b.p[10000], '\0');
	assert_int_equal(pd_buf_printf(&b, "[%d:%s]", 42, "x"), 0);
	assert_string_equal(b.p + 10000, "[42:x]");
	pd_buf_free(&b);
	assert_null(b.p);
}

static void test_max(void **state)
{
	struct pd_buf b = {.max = 8};
	char chunk[6] = "abcde";
	(void)state;
	assert_int_equal(pd_buf_put(&b, "12345678", 8), 0);
	assert_int_equal(pd_buf_put(&b, "9", 1), -E2BIG);
	assert_true(b.over);
	assert_int_equal(pd_buf_put(&b, "", 0), -E2BIG); /* sticky */
	assert_string_equal(b.p, "12345678");
	pd_buf_free(&b);
	b = (struct pd_buf){.max = 8};
	assert_int_equal(pd_buf_curl_write(chunk, 1, 5, &b), 5);
	assert_int_equal(pd_buf_curl_write(chunk, 1, 5, &b), 0); /* aborts the transfer */
	pd_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grow),
	    cmocka_unit_test(test_max),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
