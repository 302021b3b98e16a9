/* SPDX-License-Identifier: Apache-2.0 */
/* pd_log: level-filtered, timestamped, thread-safe lines on stderr.
 * One fprintf per line so concurrent threads never interleave inside a line. */
#include "pd_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static char g_name[64] = "pdkv";
static int g_level = -1;

void pd_log_set_name(const char *name)
{
	snprintf(g_name, sizeof(g_name), "%s", name);
}

/* g_level is read by every logging thread while main may set it (or the first caller derives
 * it from PDKV_LOG): relaxed atomics, since it is a lone value that guards no other data. */
void pd_log_set_level(enum pd_log_level lvl)
{
	__atomic_store_n(&g_level, (int)lvl, __ATOMIC_RELAXED);
}

enum pd_log_level pd_log_get_level(void)
{
	int lvl = __atomic_load_n(&g_level, __ATOMIC_RELAXED);
	if (lvl < 0) {
		const char *e = getenv("PDKV_LOG");
		int want = PD_LOG_INFO, unset = -1;
		if (e && !strcmp(e, "error"))
			want = PD_LOG_ERROR;
		else if (e && !strcmp(e, "warn"))
			want = PD_LOG_WARN;
		else if (e && !strcmp(e, "debug"))
			want = PD_LOG_DEBUG;
		/* first one wins: a pd_log_set_level that got in between is kept */
		if (!__atomic_compare_exchange_n(&g_level, &unset, want, 0, __ATOMIC_RELAXED,
		                                 __ATOMIC_RELAXED))
			want = unset;
		lvl = want;
	}
	return (enum pd_log_level)lvl;
}

void pd_log_msg(enum pd_log_level lvl, const char *fmt, ...)
{
	static const char *tag[] = {"ERROR", "WARN", "INFO", "DEBUG"};
	char msg[2048];
	struct timeval tv;
	struct tm tm;
	va_list ap;

	if ((int)lvl > (int)pd_log_get_level())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld %s %-5s %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
	        (long)(tv.tv_usec / 1000), g_name, tag[lvl], msg);
}
