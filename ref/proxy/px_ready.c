/* px_ready: mooncake readiness as mooncake_connector_proxy.py does it (each prefill in order:
 * GET /health every 1 s until 2xx, then GET bootstrap /query), but retrying a bad /query. */
#include "px_ready.h"
#include "px.h"
#include "px_fwd.h"
#include "pd_log.h"
#include "pd_util.h"

#include <cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUERY_MAX_BYTES (1u << 20)

struct px_prefill_dp {
	int n_dp;
	char engine_id[PX_MAX_DP][PX_ENGINE_ID_MAX];
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

int px_ready_parse_query(const char *body, size_t len, char (*ids)[PX_ENGINE_ID_MAX], char *why,
                         size_t whysz)
{
	cJSON *root = body ? cJSON_ParseWithLength(body, len) : NULL, *it;
	int seen[PX_MAX_DP] = {0}, n = 0, ret = -EPROTO;

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
		memcpy(ids[dp], s, sl + 1);
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

/* Waits until prefill i is up and its bootstrap table is valid. 0, or -1 when stopped. */
static int wait_prefill(struct px_ready *r, int i)
{
	struct px_prefill_dp *pf = &r->pf[i];
	char url[PX_URL_MAX + 16], why[400], last[400] = "";
	int tries = 0;
	while (!r->stop) {
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
			                : px_ready_parse_query(a.body, a.len, pf->engine_id, why,
			                                       sizeof(why));
			if (a.truncated)
				snprintf(why, sizeof(why), "answer larger than %u bytes",
				         QUERY_MAX_BYTES);
			px_answer_free(&a);
			if (n > 0) {
				pf->n_dp = n;
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
		        r->pf[i].engine_id[0]);
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
	r->stop = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
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
			p->engine_id = r->pf[i].engine_id[k];
			p->bootstrap_addr = r->pf[i].bootstrap_addr;
			return;
		}
		k -= (unsigned)r->pf[i].n_dp;
	}
}
