/* SPDX-License-Identifier: Apache-2.0 */
/* pd_mhdhdr: the header deadline — connections listed from MHD's connection notifications, a
 * deadline per connection cleared by the access handler's first call, and a watchdog thread. */
#include "httplim/pd_mhdhdr.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

struct hdr_conn {
	struct hdr_conn *prev, *next;
	struct pd_mhdhdr *h;
	int fd;
	_Atomic uint64_t deadline; /* pd_now_ns() after which it is cut; 0 = in a request */
};

struct pd_mhdhdr {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thr;
	bool stop;
	char who[48];
	uint64_t hdr_ns, idle_ns;
	struct hdr_conn *conns;
	unsigned long long dropped;
	uint64_t last_log;
};

static void *watchdog(void *arg)
{
	struct pd_mhdhdr *h = arg;
	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		struct timespec ts;
		uint64_t now = pd_now_ns();
		unsigned cut = 0;

		for (struct hdr_conn *c = h->conns; c; c = c->next) {
			uint64_t d = atomic_load(&c->deadline);
			if (d && now > d) {
				shutdown(c->fd, SHUT_RDWR); /* MHD sees EOF and closes it */
				atomic_store(&c->deadline, 0);
				cut++;
			}
		}
		h->dropped += cut;
		if (cut && now - h->last_log >= 1000000000ull) {
			h->last_log = now;
			pd_warn("%s: closed %u connection(s) whose request header did not complete "
			        "within "
			        "%llu ms (PDKV_HTTP_HEADER_TIMEOUT_MS; %llu so far)",
			        h->who, cut, (unsigned long long)(h->hdr_ns / 1000000), h->dropped);
		}
		pd_deadline_in(&ts, CLOCK_REALTIME, 100);
		pthread_cond_timedwait(&h->cv, &h->mu, &ts);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

struct pd_mhdhdr *pd_mhdhdr_new(const char *who, unsigned idle_ms)
{
	struct pd_mhdhdr *h = calloc(1, sizeof(*h));
	int64_t ms;

	if (!h)
		return NULL;
	pd_env_int("PDKV_HTTP_HEADER_TIMEOUT_MS", &ms); /* 100..3600000, default 10000; warns */
	h->hdr_ns = (uint64_t)ms * 1000000ull;
	h->idle_ns = (uint64_t)idle_ms * 1000000ull;
	snprintf(h->who, sizeof(h->who), "%s", who);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (pthread_create(&h->thr, NULL, watchdog, h)) {
		pthread_mutex_destroy(&h->mu);
		pthread_cond_destroy(&h->cv);
		free(h);
		return NULL;
	}
	return h;
}

void pd_mhdhdr_free(struct pd_mhdhdr *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thr, NULL);
	while (h->conns) {
		struct hdr_conn *c = h->conns;
		h->conns = c->next;
		free(c);
	}
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

void pd_mhdhdr_notify(struct pd_mhdhdr *h, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe)
{
	struct hdr_conn *hc;

	if (!h)
		return;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci || !(hc = calloc(1, sizeof(*hc))))
			return;
		hc->h = h;
		hc->fd = ci->connect_fd;
		atomic_store(&hc->deadline, pd_now_ns() + h->hdr_ns);
		pthread_mutex_lock(&h->mu);
		hc->next = h->conns;
		if (h->conns)
			h->conns->prev = hc;
		h->conns = hc;
		pthread_mutex_unlock(&h->mu);
		*socket_context = hc;
		return;
	}
	if (toe != MHD_CONNECTION_NOTIFY_CLOSED || !(hc = *socket_context))
		return;
	pthread_mutex_lock(&h->mu); /* before MHD closes the socket: no shutdown of a reused fd */
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		h->conns = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	pthread_mutex_unlock(&h->mu);
	*socket_context = NULL;
	free(hc);
}

static struct hdr_conn *entry(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void pd_mhdhdr_headers_done(struct MHD_Connection *c)
{
	struct hdr_conn *hc = entry(c);
	if (hc)
		atomic_store(&hc->deadline, 0);
}

void pd_mhdhdr_request_done(struct MHD_Connection *c)
{
	struct hdr_conn *hc = c ? entry(c) : NULL;
	if (hc)
		atomic_store(&hc->deadline, pd_now_ns() + hc->h->idle_ns + hc->h->hdr_ns);
}

unsigned long long pd_mhdhdr_dropped(struct pd_mhdhdr *h)
{
	pthread_mutex_lock(&h->mu);
	unsigned long long n = h->dropped;
	pthread_mutex_unlock(&h->mu);
	return n;
}
