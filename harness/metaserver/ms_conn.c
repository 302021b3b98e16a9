/* ms_conn: counts connections per client address under one lock; a connection over the total
 * or the per-client limit is refused at accept (MHD closes it) and logged once a second. */
#include "metaserver/ms_conn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pd_log.h"
#include "pd_util.h"

struct client {
	struct client *next;
	int family;
	uint8_t addr[16];
	unsigned n;
};

static struct {
	pthread_mutex_t mu;
	unsigned max_total, max_per, open;
	struct client *clients;
	uint64_t last_log;
	unsigned long long refused;
} cs = {.mu = PTHREAD_MUTEX_INITIALIZER,
        .max_total = MS_DEFAULT_MAX_CONN,
        .max_per = MS_DEFAULT_MAX_CONN_PER};

void ms_conn_limits(unsigned max_total, unsigned max_per_client)
{
	cs.max_total = max_total;
	cs.max_per = max_per_client;
}

unsigned ms_conn_open(void)
{
	pthread_mutex_lock(&cs.mu);
	unsigned n = cs.open;
	pthread_mutex_unlock(&cs.mu);
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

static struct client **find(int fam, const uint8_t *a)
{
	struct client **pp = &cs.clients;
	while (*pp && ((*pp)->family != fam || memcmp((*pp)->addr, a, 16)))
		pp = &(*pp)->next;
	return pp;
}

enum MHD_Result ms_conn_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	char txt[INET6_ADDRSTRLEN] = "?";
	uint8_t a[16];
	int fam;
	const char *why = NULL;
	unsigned have = 0, lim = 0;
	(void)cls;
	(void)addrlen;
	if (!key_of(addr, &fam, a, txt, sizeof(txt)))
		return MHD_YES; /* not IP: no per-client count */
	pthread_mutex_lock(&cs.mu);
	struct client **pp = find(fam, a);
	if (cs.open >= cs.max_total) {
		why = "--max-connections";
		have = cs.open;
		lim = cs.max_total;
	} else if (*pp && (*pp)->n >= cs.max_per) {
		why = "--max-connections-per-client";
		have = (*pp)->n;
		lim = cs.max_per;
	} else if (!*pp && !(*pp = calloc(1, sizeof(**pp)))) {
		why = "memory";
	}
	if (!why) {
		(*pp)->family = fam;
		memcpy((*pp)->addr, a, 16);
		(*pp)->n++;
		cs.open++;
		pthread_mutex_unlock(&cs.mu);
		return MHD_YES;
	}
	cs.refused++;
	uint64_t now = pd_now_ns();
	bool log = now - cs.last_log >= 1000000000ull;
	unsigned long long refused = cs.refused;
	if (log) {
		cs.last_log = now;
		cs.refused = 0;
	}
	pthread_mutex_unlock(&cs.mu);
	if (log)
		pd_warn("connection from %s refused: %u connections held, limit %s %u (%llu "
		        "refused in the last second)",
		        txt, have, why, lim, refused);
	return MHD_NO;
}

void ms_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                    enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *ci;
	uint8_t a[16];
	int fam;
	(void)cls;
	(void)socket_context;
	if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !key_of(ci->client_addr, &fam, a, NULL, 0))
		return;
	pthread_mutex_lock(&cs.mu);
	struct client **pp = find(fam, a), *cl = *pp;
	if (cl) {
		if (cs.open)
			cs.open--;
		if (--cl->n == 0) {
			*pp = cl->next;
			free(cl);
		}
	}
	pthread_mutex_unlock(&cs.mu);
}
