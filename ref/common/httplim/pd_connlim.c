/* SPDX-License-Identifier: Apache-2.0 */
/* pd_connlim: counts a server's connections per client address under one lock; one over the
 * total or the per-client limit is refused at accept (MHD closes it), logged once a second. */
#include "httplim/pd_connlim.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httplim/pd_mhdhdr.h"
#include "pd_log.h"
#include "pd_util.h"

struct client {
	struct client *next;
	int family;
	uint8_t addr[16];
	unsigned n;
};

struct pd_connlim {
	pthread_mutex_t mu;
	char who[48];
	unsigned max_total, max_per, open;
	struct client *clients;
	uint64_t last_log, refused_since_log, refused;
	struct pd_mhdhdr *hdr; /* the header deadline, when set (issue 34, D6) */
};

int pd_connlim_header_deadline(struct pd_connlim *l, unsigned idle_s)
{
	if (!l->hdr)
		l->hdr = pd_mhdhdr_new(l->who, idle_s * 1000u);
	return l->hdr ? 0 : -1;
}

struct pd_connlim *pd_connlim_new(const char *who, unsigned max_total, unsigned max_per_client)
{
	struct pd_connlim *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	pthread_mutex_init(&l->mu, NULL);
	snprintf(l->who, sizeof(l->who), "%s", who);
	l->max_total = max_total ? max_total : 1;
	l->max_per = max_per_client ? max_per_client : 1;
	return l;
}

void pd_connlim_free(struct pd_connlim *l)
{
	if (!l)
		return;
	pd_mhdhdr_free(l->hdr);
	while (l->clients) {
		struct client *c = l->clients;
		l->clients = c->next;
		free(c);
	}
	pthread_mutex_destroy(&l->mu);
	free(l);
}

unsigned pd_connlim_open(struct pd_connlim *l)
{
	pthread_mutex_lock(&l->mu);
	unsigned n = l->open;
	pthread_mutex_unlock(&l->mu);
	return n;
}

uint64_t pd_connlim_refused(struct pd_connlim *l)
{
	pthread_mutex_lock(&l->mu);
	uint64_t n = l->refused;
	pthread_mutex_unlock(&l->mu);
	return n;
}

/* family + address bytes of a peer (the port does not count: one client, many sockets) */
static bool key_of(const struct sockaddr *sa, int *fam, uint8_t *a, char *txt, size_t n)
{
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		memset(a + 4, 0, 12);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else {
		return false;
	}
	*fam = sa->sa_family;
	if (txt)
		inet_ntop(*fam, a, txt, (socklen_t)n);
	return true;
}

static struct client **find(struct pd_connlim *l, int fam, const uint8_t *a)
{
	struct client **pp = &l->clients;
	while (*pp && ((*pp)->family != fam || memcmp((*pp)->addr, a, 16)))
		pp = &(*pp)->next;
	return pp;
}

enum MHD_Result pd_connlim_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct pd_connlim *l = cls;
	char txt[INET6_ADDRSTRLEN] = "?";
	uint8_t a[16];
	int fam;
	const char *why = NULL;
	unsigned have = 0, lim = 0;
	uint64_t now, refused = 0;
	bool log;
	(void)addrlen;

	if (!key_of(addr, &fam, a, txt, sizeof(txt)))
		return MHD_YES; /* not IP: no per-client count */
	pthread_mutex_lock(&l->mu);
	struct client **pp = find(l, fam, a);
	if (l->open >= l->max_total) {
		why = "--max-connections";
		have = l->open;
		lim = l->max_total;
	} else if (*pp && (*pp)->n >= l->max_per) {
		why = "--max-connections-per-client";
		have = (*pp)->n;
		lim = l->max_per;
	} else if (!*pp && !(*pp = calloc(1, sizeof(**pp)))) {
		why = "memory";
	}
	if (!why) {
		(*pp)->family = fam;
		memcpy((*pp)->addr, a, 16);
		(*pp)->n++;
		l->open++;
		pthread_mutex_unlock(&l->mu);
		return MHD_YES;
	}
	l->refused++;
	l->refused_since_log++;
	now = pd_now_ns();
	log = now - l->last_log >= 1000000000ull;
	if (log) {
		refused = l->refused_since_log;
		l->last_log = now;
		l->refused_since_log = 0;
	}
	pthread_mutex_unlock(&l->mu);
	if (log)
		pd_warn("%s: connection from %s refused: %u connections held, limit %s %u (%llu "
		        "refused since the last such line)",
		        l->who, txt, have, why, lim, (unsigned long long)refused);
	return MHD_NO;
}

void pd_connlim_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe)
{
	struct pd_connlim *l = cls;
	const union MHD_ConnectionInfo *ci;
	uint8_t a[16];
	int fam;
	pd_mhdhdr_notify(l->hdr, c, socket_context, toe);
	if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !key_of(ci->client_addr, &fam, a, NULL, 0))
		return;
	pthread_mutex_lock(&l->mu);
	struct client **pp = find(l, fam, a), *cl = *pp;
	if (cl) {
		if (l->open)
			l->open--;
		if (--cl->n == 0) {
			*pp = cl->next;
			free(cl);
		}
	}
	pthread_mutex_unlock(&l->mu);
}
