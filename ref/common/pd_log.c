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

void pd_log_set_level(enum pd_log_level lvl)
{
	g_level = (int)lvl;
}

enum pd_log_level pd_log_get_level(void)
{
	if (g_level < 0) {
		const char *e = getenv("PDKV_LOG");
		g_level = PD_LOG_INFO;
		if (e && !strcmp(e, "error"))
			g_level = PD_LOG_ERROR;
		else if (e && !strcmp(e, "warn"))
			g_level = PD_LOG_WARN;
		else if (e && !strcmp(e, "debug"))
			g_level = PD_LOG_DEBUG;
	}
	return (enum pd_log_level)g_level;
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
