/* SPDX-License-Identifier: Apache-2.0 */
/* pd_log: level-filtered, timestamped, thread-safe lines on stderr.
 * One fprintf per line so concurrent threads never interleave inside a line. */
#include "pd_log.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

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

/* ---- fatal signals ---- */

static long g_gmtoff; /* the local time's offset, taken when the handlers go in */

static size_t put_str(char *b, size_t at, size_t cap, const char *s)
{
	while (*s && at < cap)
		b[at++] = *s++;
	return at;
}

static size_t put_num(char *b, size_t at, size_t cap, unsigned long v, int width)
{
	char d[24];
	int n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < (int)sizeof(d));
	while (n < width && n < (int)sizeof(d))
		d[n++] = '0';
	while (n && at < cap)
		b[at++] = d[--n];
	return at;
}

/* Only async-signal-safe calls: clock_gettime, write, signal, raise. */
static void on_fatal(int sig)
{
	char b[256];
	size_t n = 0, cap = sizeof(b) - 1;
	const char *abbr = sigabbrev_np(sig);
	struct timespec ts;
	unsigned long sod; /* seconds of the day */
	clock_gettime(CLOCK_REALTIME, &ts);
	sod = (unsigned long)((ts.tv_sec + g_gmtoff) % 86400);
	n = put_num(b, n, cap, sod / 3600, 2);
	n = put_str(b, n, cap, ":");
	n = put_num(b, n, cap, sod / 60 % 60, 2);
	n = put_str(b, n, cap, ":");
	n = put_num(b, n, cap, sod % 60, 2);
	n = put_str(b, n, cap, ".");
	n = put_num(b, n, cap, (unsigned long)ts.tv_nsec / 1000000, 3);
	n = put_str(b, n, cap, " ");
	n = put_str(b, n, cap, g_name);
	n = put_str(b, n, cap, " ERROR killed by signal ");
	n = put_num(b, n, cap, (unsigned long)sig, 1);
	n = put_str(b, n, cap, " (SIG");
	n = put_str(b, n, cap, abbr ? abbr : "?");
	n = put_str(b, n, cap, "), pid ");
	n = put_num(b, n, cap, (unsigned long)getpid(), 1);
	b[n++] = '\n';
	if (write(STDERR_FILENO, b, n) < 0) {
		/* nothing else can be done here */
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void pd_log_fatal_signals(void)
{
	static const int sigs[] = {SIGHUP,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT, SIGBUS,
	                           SIGFPE,  SIGUSR1,   SIGSEGV, SIGUSR2, SIGALRM, SIGSTKFLT,
	                           SIGXCPU, SIGVTALRM, SIGPROF, SIGXFSZ, SIGPWR,  SIGSYS};
	struct sigaction sa;
	time_t now = time(NULL);
	struct tm tm;
	if (localtime_r(&now, &tm))
		g_gmtoff = tm.tm_gmtoff;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;
		/* a disposition set before (ignored, or the program's own handler) is kept */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
	}
}
