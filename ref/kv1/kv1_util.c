/* SPDX-License-Identifier: Apache-2.0 */
/* kv1_util: the ground floor of ref/kv1 — error strings, ZMQ sockets with kv1's bounds, and the
 * bounded condition-variable wait every other file's waits are made of. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include <zmq.h>

#include "kv1_internal.h"
#include "pd_util.h"

void kv1_set_err(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
}

void *kv1_zsock(struct kv1_worker *w, int type, int rcvtimeo_ms)
{
	void *s = zmq_socket(w->zctx, type);
	int zero = 0;
	int64_t max = KV1_MAX_MSG;

	if (!s)
		return NULL;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof(max));
	if (rcvtimeo_ms > 0)
		zmq_setsockopt(s, ZMQ_RCVTIMEO, &rcvtimeo_ms, sizeof(rcvtimeo_ms));
	return s;
}

void *kv1_job_push_open(struct kv1_worker *w)
{
	void *p = kv1_zsock(w, ZMQ_PUSH, 0);

	if (p && zmq_connect(p, w->inproc)) {
		zmq_close(p);
		return NULL;
	}
	return p;
}

void kv1_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns)
{
	uint64_t now = pd_now_ns(), step = 100000000ull;
	struct timespec ts;

	if (now >= deadline_ns)
		return;
	if (deadline_ns - now < step)
		step = deadline_ns - now;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)step;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(cv, mu, &ts);
}
