/* SPDX-License-Identifier: Apache-2.0 */
/* te_republish: the engine's keeper thread — with a metadata store, checks every few seconds
 * that its rpc_meta and segment keys are still there and puts them back when the store lost them
 * (a restart with an empty store), so peers started afterwards find the engine. */
#include "te_engine_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

#define TE_REPUBLISH_S 5 /* env PDKV_TE_REPUBLISH_S; 0 = no keeper */

/* 1 = key present, 0 = missing, <0 = store error. */
static int key_present(struct te_engine *eng, const char *key)
{
	char *v = NULL;
	int r = te_meta_get(eng->meta, key, &v);
	free(v);
	if (r == TE_ERR_NOT_FOUND)
		return 0;
	return r ? r : 1;
}

/* Puts key back with value; logs the outcome. */
static void put_back(struct te_engine *eng, const char *key, const char *value)
{
	int r = te_meta_put(eng->meta, key, value);
	if (r)
		pd_err("te: metadata key %s is missing from %s and putting it back failed: %s", key,
		       eng->conn, te_strerror(r));
	else
		pd_warn("te: metadata key %s was missing from %s (store restarted or wiped?); "
		        "re-published it",
		        key, eng->conn);
}

/* One check of both keys. Holds pub_lock so a concurrent (un)register publish or the
 * destroy's key removal does not interleave. */
static void keeper_check(struct te_engine *eng)
{
	char *rk = te_meta_rpc_key(eng->name), *sk = te_meta_segment_key(eng->name);
	int rp = 1, sp = 1;

	pthread_mutex_lock(&eng->pub_lock);
	if (rk && sk && eng->rpc_published && eng->seg_published && eng->local_json) {
		rp = key_present(eng, rk);
		sp = rp < 0 ? rp : key_present(eng, sk);
		if (rp == 0) {
			char *val =
			    te_rpcmeta_encode(eng->local_ip, eng->rpc_port, eng->rpc_version);
			if (val)
				put_back(eng, rk, val);
			free(val);
		}
		if (sp == 0)
			put_back(eng, sk, eng->local_json);
	}
	pthread_mutex_unlock(&eng->pub_lock);
	if (rp < 0 || sp < 0) {
		if (!eng->keeper.unreachable)
			pd_warn(
			    "te: metadata store %s not answering (%s); its keys are checked again "
			    "every %d s",
			    eng->conn, te_strerror(rp < 0 ? rp : sp), eng->keeper.period_s);
		eng->keeper.unreachable = true;
	} else {
		if (eng->keeper.unreachable)
			pd_info("te: metadata store %s answers again", eng->conn);
		eng->keeper.unreachable = false;
	}
	atomic_store(&eng->keeper.meta_ok, rp >= 0 && sp >= 0);
	free(rk);
	free(sk);
}

static void *keeper_main(void *arg)
{
	struct te_engine *eng = arg;
	pthread_mutex_lock(&eng->keeper.mu);
	while (!eng->keeper.stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += eng->keeper.period_s;
		while (!eng->keeper.stop &&
		       pthread_cond_timedwait(&eng->keeper.cv, &eng->keeper.mu, &ts) != ETIMEDOUT)
			;
		if (eng->keeper.stop)
			break;
		pthread_mutex_unlock(&eng->keeper.mu);
		keeper_check(eng);
		pthread_mutex_lock(&eng->keeper.mu);
	}
	pthread_mutex_unlock(&eng->keeper.mu);
	return NULL;
}

void te_keeper_start(struct te_engine *eng)
{
	pthread_condattr_t ca;
	int64_t v;

	atomic_store(&eng->keeper.meta_ok, true);
	if (!eng->meta)
		return;
	pd_env_int("PDKV_TE_REPUBLISH_S", &v); /* 0..3600 s, default TE_REPUBLISH_S (5) */
	if (v == 0)
		return;
	eng->keeper.period_s = (int)v;
	pthread_mutex_init(&eng->keeper.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&eng->keeper.cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&eng->keeper.thr, NULL, keeper_main, eng)) {
		pd_warn("te: cannot start the metadata keeper thread; keys are not re-published");
		pthread_mutex_destroy(&eng->keeper.mu);
		pthread_cond_destroy(&eng->keeper.cv);
		return;
	}
	eng->keeper.running = true;
}

void te_keeper_stop(struct te_engine *eng)
{
	if (!eng->keeper.running)
		return;
	pthread_mutex_lock(&eng->keeper.mu);
	eng->keeper.stop = true;
	pthread_cond_broadcast(&eng->keeper.cv);
	pthread_mutex_unlock(&eng->keeper.mu);
	pthread_join(eng->keeper.thr, NULL);
	pthread_mutex_destroy(&eng->keeper.mu);
	pthread_cond_destroy(&eng->keeper.cv);
	eng->keeper.running = false;
}

bool te_engine_meta_ok(const struct te_engine *eng)
{
	return eng && atomic_load(&((struct te_engine *)eng)->keeper.meta_ok);
}
