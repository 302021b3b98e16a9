/* SPDX-License-Identifier: Apache-2.0 */
/* te_gate: the gate te_gate.h describes, a mutex and a condition around the server's hook. */
#include "te_gate.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "te/te_inspect.h"

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum te_gate_kind kind;
	int limit, seen;
	bool release;
} g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, TE_GATE_READ, 0, 0, false};

static void hook(uint64_t addr, uint64_t len)
{
	(void)addr;
	(void)len;
	pthread_mutex_lock(&g.mu);
	if (g.seen < g.limit && !g.release) {
		g.seen++;
		pthread_cond_broadcast(&g.cv);
		while (!g.release)
			pthread_cond_wait(&g.cv, &g.mu);
	}
	pthread_mutex_unlock(&g.mu);
}

static void set_hook(enum te_gate_kind kind, te_test_read_fn fn)
{
	if (kind == TE_GATE_READ)
		te_test_set_read_hook(fn);
	else
		te_test_set_write_hook(fn);
}

void te_gate_arm(enum te_gate_kind kind, int limit)
{
	pthread_mutex_lock(&g.mu);
	g.kind = kind;
	g.limit = limit;
	g.seen = 0;
	g.release = false;
	pthread_mutex_unlock(&g.mu);
	set_hook(kind, hook);
}

int te_gate_seen(void)
{
	int n;

	pthread_mutex_lock(&g.mu);
	n = g.seen;
	pthread_mutex_unlock(&g.mu);
	return n;
}

bool te_gate_wait_held(int timeout_s)
{
	struct timespec ts;
	int seen;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_s;
	pthread_mutex_lock(&g.mu);
	while (!g.seen)
		if (pthread_cond_timedwait(&g.cv, &g.mu, &ts))
			break;
	seen = g.seen;
	pthread_mutex_unlock(&g.mu);
	return seen > 0;
}

void te_gate_release(void)
{
	enum te_gate_kind kind;

	pthread_mutex_lock(&g.mu);
	g.release = true;
	kind = g.kind;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	set_hook(kind, NULL);
}
