/* SPDX-License-Identifier: Apache-2.0 */
/* px_ready: mooncake readiness as mooncake_connector_proxy.py does it (each prefill in order:
 * GET /health every 1 s until 2xx, then GET bootstrap /query), but retrying a bad /query. */
#include "px_ready.h"
#include "px.h"
#include "px_fwd.h"
#include "pd_log.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUERY_MAX_BYTES (1u << 20)

/* A rank's last probe (px_ready_rank_check): under mu, reused for PROBE_TTL_NS. */
struct rank_state {
	struct px_rank rk;
	pthread_mutex_t mu;
	uint64_t checked_ns;
	int dead; /* -1 never probed */
	char why[600];
};

#define PROBE_TTL_NS 1000000000ull

struct px_prefill_dp {
	int n_dp;
	struct rank_state *rank; /* [n_dp], set once before ready */
	char bootstrap_addr[PX_URL_MAX];
};

struct px_ready {
	const struct px_opts *o;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	volatile int stop;
	int ready; /* written once (release), then the table below is read-only */
	char waiting[PX_URL_MAX + 64];
	unsigned rr;
	int n_pairs;
	struct px_prefill_dp pf[PX_MAX_BACKENDS];
};

/* worker_addr {tp: {pp: addr}}: the pp "0" address of the first PX_RANK_WORKERS tp ranks
 * (anything else is left for the decode to judge, as the original router never reads it). */
static void parse_workers(const cJSON *wa, struct px_rank *rk)
{
	const cJSON *tp;

	rk->nworkers = 0;
	cJSON_ArrayForEach(tp, wa)
	{
		const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tp, "0"));

		if (rk->nworkers < PX_RANK_WORKERS && a && strlen(a) < PX_WORKER_MAX)
			snprintf(rk->worker[rk->nworkers++], PX_WORKER_MAX, "%s", a);
	}
}

int px_ready_parse_query(const char *body, size_t len, struct px_rank *ranks, char *why,
                         size_t whysz)
{
	cJSON *root = body ? cJSON_ParseWithLength(body, len) : NULL, *it;
	int n = 0, ret = -EPROTO;
	unsigned char *seen = calloc(PX_MAX_DP, 1);

	if (!seen) {
		snprintf(why, whysz, "out of memory");
		goto out;
	}

	if (!cJSON_IsObject(root)) {
		snprintf(why, whysz, "not a JSON object");
		goto out;
	}
	cJSON_ArrayForEach(it, root)
	{
		int64_t dp;
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(it, "engine_id");
		const char *s = cJSON_GetStringValue(e);
		size_t sl = s ? strlen(s) : 0;
		if (pd_parse_i64(it->string, &dp) || dp < 0 || dp >= PX_MAX_DP) {
			snprintf(why, whysz, "key \"%.32s\" is not a dp rank 0..%d", it->string,
			         PX_MAX_DP - 1);
			goto out;
		}
		if (seen[dp]++) {
			snprintf(why, whysz, "dp rank %d appears twice", (int)dp);
			goto out;
		}
		if (!s || !sl || sl >= PX_ENGINE_ID_MAX) {
			snprintf(why, whysz, "\"%d\".engine_id: expected a string of 1..%d bytes",
			         (int)dp, PX_ENGINE_ID_MAX - 1);
			goto out;
		}
		for (size_t i = 0; i < sl; i++)
			if ((unsigned char)s[i] < ' ' || s[i] == 0x7f) {
				snprintf(why, whysz, "\"%d\".engine_id has a control character",
				         (int)dp);
				goto out;
			}
		memcpy(ranks[dp].engine_id, s, sl + 1);
		parse_workers(cJSON_GetObjectItemCaseSensitive(it, "worker_addr"), &ranks[dp]);
		n++;
	}
	if (!n) {
		snprintf(why, whysz, "no dp rank registered yet ({})");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (!seen[i]) {
			/* the original would index dp_engine_id[i] and fail every request */
			snprintf(why, whysz, "dp ranks are not 0..%d (rank %d missing)", n - 1, i);
			goto out;
		}
	ret = n;
out:
	free(seen);
	cJSON_Delete(root);
	return ret;
}

/* Sleeps up to ms, waking at once on stop. */
static void nap(struct px_ready *r, int ms)
{
	struct timespec ts;
	pd_deadline_in(&ts, CLOCK_REALTIME, ms);
	pthread_mutex_lock(&r->mu);
	if (!r->stop)
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	pthread_mutex_unlock(&r->mu);
}

static void set_waiting(struct px_ready *r, const char *what)
{
	pthread_mutex_lock(&r->mu);
	snprintf(r->waiting, sizeof(r->waiting), "%s", what);
	pthread_mutex_unlock(&r->mu);
}

/* One probe: GET url; 0 on 2xx with the answer in a, else -1 with why. */
static int probe(struct px_ready *r, const char *url, size_t keep, struct px_answer *a, char *why,
                 size_t whysz)
{
	struct px_call c = {
	    .url = url,
	    .method = "GET",
	    .request_id = "pdkv-proxy-readiness",
	    .timeout_ms = 5000,
	    .connect_timeout_ms = r->o->connect_timeout_ms < 5000 ? r->o->connect_timeout_ms : 5000,
	    .cancel = &r->stop,
	};
	return px_fetch(&c, keep, a, why, whysz);
}

/* The parsed table into prefill pf's rank states. 0 or -ENOMEM. */
static int keep_ranks(struct px_prefill_dp *pf, const struct px_rank *rk, int n)
{
	pf->rank = calloc((size_t)n, sizeof(*pf->rank));
	if (!pf->rank)
		return -ENOMEM;
	for (int k = 0; k < n; k++) {
		pf->rank[k].rk = rk[k];
		pf->rank[k].dead = -1;
		pthread_mutex_init(&pf->rank[k].mu, NULL);
	}
	pf->n_dp = n;
	return 0;
}

/* Waits until prefill i is up and its bootstrap table is valid. 0, or -1 when stopped. */
static int wait_prefill(struct px_ready *r, int i)
{
	struct px_prefill_dp *pf = &r->pf[i];
	char url[PX_URL_MAX + 16], why[400], last[400] = "";
	int tries = 0;
	struct px_rank *rk = calloc(PX_MAX_DP, sizeof(*rk));

	if (!rk)
		return -1;
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		struct px_answer a;
		int n;
		snprintf(url, sizeof(url), "%s/health", r->o->prefill[i]);
		set_waiting(r, url);
		if (probe(r, url, 4096, &a, why, sizeof(why))) {
			px_answer_free(&a);
			pd_dbg("prefill %s not ready: %s", url, why);
			nap(r, 1000);
			continue;
		}
		px_answer_free(&a);
		snprintf(url, sizeof(url), "%s/query", pf->bootstrap_addr);
		set_waiting(r, url);
		if (probe(r, url, QUERY_MAX_BYTES, &a, why, sizeof(why)) == 0) {
			n = a.truncated ? -EPROTO
			                : px_ready_parse_query(a.body, a.len, rk, why, sizeof(why));
			if (a.truncated)
				snprintf(why, sizeof(why), "answer larger than %u bytes",
				         QUERY_MAX_BYTES);
			px_answer_free(&a);
			if (n > 0 && !keep_ranks(pf, rk, n)) {
				free(rk);
				return 0;
			}
		} else {
			px_answer_free(&a);
		}
		/* the original gives up for good here; pdkv says why and keeps trying */
		if (strcmp(why, last) || ++tries % 30 == 0)
			pd_warn("bootstrap %s for prefill %s: %s (retrying every 1 s)", url,
			        r->o->prefill[i], why);
		snprintf(last, sizeof(last), "%s", why);
		nap(r, 1000);
	}
	free(rk);
	return -1;
}

static void *ready_main(void *arg)
{
	struct px_ready *r = arg;
	int pairs = 0;
	for (int i = 0; i < r->o->n_prefill; i++) {
		if (wait_prefill(r, i))
			return NULL;
		pairs += r->pf[i].n_dp;
		pd_info("Inited prefiller %s with dp_size=%d (bootstrap %s; engine_id[0] %s)",
		        r->o->prefill[i], r->pf[i].n_dp, r->pf[i].bootstrap_addr,
		        r->pf[i].rank[0].rk.engine_id);
	}
	pthread_mutex_lock(&r->mu);
	r->n_pairs = pairs;
	r->waiting[0] = '\0';
	__atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&r->mu);
	pd_info("All prefiller instances are ready.");
	return NULL;
}

int px_ready_start(const struct px_opts *o, struct px_ready **out)
{
	struct px_ready *r = calloc(1, sizeof(*r));
	int ret;
	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->o = o;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	for (int i = 0; i < o->n_prefill; i++) {
		char host[300];
		if (px_url_host(o->prefill[i], host, sizeof(host)))
			snprintf(host, sizeof(host), "localhost");
		/* http:// even for an https prefill, as the original's make_http_path */
		snprintf(r->pf[i].bootstrap_addr, sizeof(r->pf[i].bootstrap_addr), "http://%s:%d",
		         host, o->bootstrap[i] ? o->bootstrap[i] : 8998);
	}
	ret = pthread_create(&r->thread, NULL, ready_main, r);
	if (ret) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		free(r);
		return -ret;
	}
	*out = r;
	return 0;
}

void px_ready_stop(struct px_ready *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED); /* read unlocked by the probe loop */
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	for (int i = 0; i < r->o->n_prefill; i++) {
		for (int k = 0; r->pf[i].rank && k < r->pf[i].n_dp; k++)
			pthread_mutex_destroy(&r->pf[i].rank[k].mu);
		free(r->pf[i].rank);
	}
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

int px_ready_ok(struct px_ready *r)
{
	return __atomic_load_n(&r->ready, __ATOMIC_ACQUIRE);
}

void px_ready_waiting(struct px_ready *r, char *buf, size_t n)
{
	pthread_mutex_lock(&r->mu);
	snprintf(buf, n, "%s", r->waiting);
	pthread_mutex_unlock(&r->mu);
}

void px_ready_pick(struct px_ready *r, struct px_pair *p)
{
	unsigned k = __atomic_fetch_add(&r->rr, 1, __ATOMIC_RELAXED) % (unsigned)r->n_pairs;
	for (int i = 0; i < r->o->n_prefill; i++) {
		if (k < (unsigned)r->pf[i].n_dp) {
			p->prefill = i;
			p->dp_rank = (int)k;
			p->engine_id = r->pf[i].rank[k].rk.engine_id;
			p->bootstrap_addr = r->pf[i].bootstrap_addr;
			return;
		}
		k -= (unsigned)r->pf[i].n_dp;
	}
}

/* A TCP connect to "tcp://host:port" within ms. 0, or -errno with why. */
static int probe_tcp(const char *addr, int ms, char *why, size_t whysz)
{
	char host[PX_WORKER_MAX], port[16];
	const char *hp = strncmp(addr, "tcp://", 6) ? NULL : addr + 6, *colon;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int fd = -1, ret = -EINVAL, err = 0;
	socklen_t el = sizeof(err);

	colon = hp ? strrchr(hp, ':') : NULL;
	if (!colon || (size_t)(colon - hp) >= sizeof(host) || strlen(colon + 1) >= sizeof(port)) {
		snprintf(why, whysz, "not a tcp://host:port address");
		return -EINVAL;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - hp), hp);
	snprintf(port, sizeof(port), "%s", colon + 1);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	if (getaddrinfo(host, port, &hints, &ai) || !ai) {
		snprintf(why, whysz, "cannot resolve %.150s", host);
		return -EHOSTUNREACH;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		ret = -errno;
	} else if (fd >= 0) {
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		int n = poll(&pf, 1, ms);

		if (n == 0)
			ret = -ETIMEDOUT;
		else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el))
			ret = -errno;
		else
			ret = err ? -err : 0;
	} else {
		ret = -errno;
	}
	if (ret)
		snprintf(why, whysz, "connect: %s%s", strerror(-ret),
		         ret == -ETIMEDOUT ? " (no answer)" : "");
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return ret;
}

int px_ready_rank_check(struct px_ready *r, const struct px_pair *p, char *why, size_t whysz)
{
	struct rank_state *st = &r->pf[p->prefill].rank[p->dp_rank];
	int ms = r->o->connect_timeout_ms > 0 && r->o->connect_timeout_ms < 1000
	             ? (int)r->o->connect_timeout_ms
	             : 1000;
	uint64_t now = pd_now_ns();
	int dead;

	pthread_mutex_lock(&st->mu);
	if (st->dead < 0 || now - st->checked_ns > PROBE_TTL_NS) {
		int was = st->dead;
		char e[200];

		st->dead = 0;
		for (int k = 0; k < st->rk.nworkers && !st->dead; k++)
			if (probe_tcp(st->rk.worker[k], ms, e, sizeof(e))) {
				st->dead = 1;
				snprintf(
				    st->why, sizeof(st->why),
				    "prefill %.160s dp rank %d (engine %.64s): worker %.160s does "
				    "not answer (%.120s)",
				    r->o->prefill[p->prefill], p->dp_rank, st->rk.engine_id,
				    st->rk.worker[k], e);
			}
		st->checked_ns = pd_now_ns();
		if (st->dead != was && (st->dead || was > 0)) {
			if (st->dead)
				pd_warn("%s; its requests fail at once", st->why);
			else
				pd_info("prefill %.200s dp rank %d answers again",
				        r->o->prefill[p->prefill], p->dp_rank);
		}
	}
	dead = st->dead;
	if (dead)
		snprintf(why, whysz, "%s", st->why);
	pthread_mutex_unlock(&st->mu);
	return dead ? -EHOSTUNREACH : 0;
}
