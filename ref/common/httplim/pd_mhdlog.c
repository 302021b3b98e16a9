/* SPDX-License-Identifier: Apache-2.0 */
/* pd_mhdlog: libmicrohttpd's error log through pd_log, rate-limited with a count, and a back-off
 * on fd exhaustion (issue 34, N6: 13,432 "Too many open files" lines a second under ulimit -n). */
#include "pd_mhdlog.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_seen, g_printed, g_last_ns, g_held; /* g_held: left out since the last line */

static bool out_of_fds(const char *m)
{
	return strstr(m, "Too many open files") || strstr(m, "resource limit") ||
	       strstr(m, "EMFILE") || strstr(m, "ENFILE");
}

/* The count held since the last line, said at exit: a burst that ends within a second of its
 * first line would otherwise never be counted. */
static void say_held(void)
{
	uint64_t held;
	pthread_mutex_lock(&g_mu);
	held = g_held;
	g_held = 0;
	pthread_mutex_unlock(&g_mu);
	if (held)
		pd_warn("libmicrohttpd: %llu more messages left out since the last one",
		        (unsigned long long)held);
}

void pd_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char m[512];
	uint64_t now = pd_now_ns(), held = 0;
	bool print = false;
	size_t n;

	(void)cls;
	vsnprintf(m, sizeof(m), fmt, ap);
	n = strlen(m);
	while (n && (m[n - 1] == '\n' || m[n - 1] == '\r'))
		m[--n] = '\0';
	pthread_mutex_lock(&g_mu);
	g_seen++;
	if (!g_printed)
		atexit(say_held); /* once: the first message is always printed */
	if (!g_printed || now - g_last_ns >= 1000000000ull) {
		print = true;
		held = g_held;
		g_held = 0;
		g_last_ns = now;
		g_printed++;
	} else {
		g_held++;
	}
	pthread_mutex_unlock(&g_mu);
	if (print && held)
		pd_warn("libmicrohttpd: %s (%llu more messages in the last second left out)", m,
		        (unsigned long long)held);
	else if (print)
		pd_warn("libmicrohttpd: %s", m);
	if (out_of_fds(m))
		pd_sleep_ms(PD_MHD_BACKOFF_MS);
}

void pd_mhd_log_counts(uint64_t *seen, uint64_t *printed)
{
	pthread_mutex_lock(&g_mu);
	*seen = g_seen;
	*printed = g_printed;
	pthread_mutex_unlock(&g_mu);
}
