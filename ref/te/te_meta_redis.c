/* SPDX-License-Identifier: Apache-2.0 */
/* te_meta_redis: redis via hiredis — SET/GET/DEL, MC_REDIS_PASSWORD (AUTH, with
 * MC_REDIS_USERNAME), MC_REDIS_DB_INDEX (SELECT 0-255); one connection behind a mutex. */
#include "te_internal.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_env.h"
#include "pd_log.h"
#include "pd_util.h"

#define REDIS_TIMEOUT_MS 5000 /* Mooncake has none; pdkv must never hang on a dead store */

struct redis {
	pthread_mutex_t lock;
	redisContext *c;
	char host[256];
	int port;
	int db; /* -1 = no SELECT */
	char user[128], pass[256];
};

static void rd_drop(struct redis *r)
{
	if (r->c)
		redisFree(r->c);
	r->c = NULL;
}

/* (Re)connects, authenticates and selects the db. 0 or TE_ERR_*, reason in err. */
static int rd_connect(struct redis *r, char *err, size_t errlen)
{
	struct timeval tv = {REDIS_TIMEOUT_MS / 1000, (REDIS_TIMEOUT_MS % 1000) * 1000};
	redisReply *rep = NULL;
	int ret = TE_ERR_UNREACHABLE;

	rd_drop(r);
	r->c = redisConnectWithTimeout(r->host, r->port, tv);
	if (!r->c || r->c->err) {
		snprintf(err, errlen, "redis %s:%d: connect: %s", r->host, r->port,
		         r->c ? r->c->errstr : "out of memory");
		goto fail;
	}
	redisSetTimeout(r->c, tv);
	ret = TE_ERR_METADATA;
	if (r->pass[0]) {
		rep = r->user[0] ? redisCommand(r->c, "AUTH %s %s", r->user, r->pass)
		                 : redisCommand(r->c, "AUTH %s", r->pass);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			snprintf(err, errlen, "redis %s:%d: AUTH (MC_REDIS_PASSWORD) failed: %s",
			         r->host, r->port, rep ? rep->str : r->c->errstr);
			goto fail;
		}
		freeReplyObject(rep);
		rep = NULL;
	}
	if (r->db >= 0) {
		rep = redisCommand(r->c, "SELECT %d", r->db);
		if (!rep || rep->type == REDIS_REPLY_ERROR) {
			snprintf(err, errlen,
			         "redis %s:%d: SELECT %d (MC_REDIS_DB_INDEX) failed: %s", r->host,
			         r->port, r->db, rep ? rep->str : r->c->errstr);
			goto fail;
		}
		freeReplyObject(rep);
		rep = NULL;
	}
	/* a PING proves the server answers and that no AUTH is missing */
	rep = redisCommand(r->c, "PING");
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "redis %s:%d: PING failed: %s%s", r->host, r->port,
		         rep ? rep->str : r->c->errstr,
		         rep && strstr(rep->str, "NOAUTH") ? " (set MC_REDIS_PASSWORD)" : "");
		if (!rep)
			ret = TE_ERR_UNREACHABLE;
		goto fail;
	}
	freeReplyObject(rep);
	return 0;
fail:
	if (rep)
		freeReplyObject(rep);
	rd_drop(r);
	return ret;
}

/* Runs one command (argv form, binary-safe), reconnecting once after an I/O error. */
static redisReply *rd_cmd_locked(struct redis *r, int argc, const char **argv, const size_t *lens,
                                 const char *key, int *ret)
{
	char err[512] = "";
	redisReply *rep = NULL;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!r->c && (*ret = rd_connect(r, err, sizeof(err))))
			break;
		rep = redisCommandArgv(r->c, argc, argv, lens);
		if (rep)
			break;
		snprintf(err, sizeof(err), "redis %s:%d: %s: %s", r->host, r->port, argv[0],
		         r->c->errstr);
		*ret = TE_ERR_UNREACHABLE;
		rd_drop(r);
	}
	if (!rep) {
		pd_warn("redis %s of \"%s\" failed: %s", argv[0], key, err);
		return NULL;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		pd_warn("redis %s of \"%s\" failed: %s", argv[0], key, rep->str);
		freeReplyObject(rep);
		*ret = TE_ERR_METADATA;
		return NULL;
	}
	*ret = 0;
	return rep;
}

/* rd_cmd_locked under r->lock: the one connection is shared by the engine's threads. */
static redisReply *rd_cmd(struct redis *r, int argc, const char **argv, const size_t *lens,
                          const char *key, int *ret)
{
	redisReply *rep;
	pthread_mutex_lock(&r->lock);
	rep = rd_cmd_locked(r, argc, argv, lens, key, ret);
	pthread_mutex_unlock(&r->lock);
	return rep;
}

static int redis_open(const struct te_conn_info *ci, void **state, char *errbuf, size_t errlen)
{
	struct redis *r = calloc(1, sizeof(*r));
	const char *pass = pd_env_str("MC_REDIS_PASSWORD"), *user = pd_env_str("MC_REDIS_USERNAME");
	int64_t v;
	int db = pd_env_int("MC_REDIS_DB_INDEX", &v); /* 0..255, a bad value refuses */
	int ret;

	if (!r)
		return TE_ERR_MEMORY;
	pthread_mutex_init(&r->lock, NULL);
	snprintf(r->host, sizeof(r->host), "%s", ci->host);
	r->port = ci->port;
	r->db = -1;
	if (db < 0) {
		snprintf(errbuf, errlen, "%s", pd_env_error());
		ret = TE_ERR_INVALID_ARGUMENT;
		goto fail;
	}
	if (db == 1)
		r->db = (int)v;
	if (pass && strlen(pass) >= sizeof(r->pass)) {
		snprintf(errbuf, errlen, "MC_REDIS_PASSWORD longer than %zu bytes",
		         sizeof(r->pass) - 1);
		ret = TE_ERR_INVALID_ARGUMENT;
		goto fail;
	}
	snprintf(r->pass, sizeof(r->pass), "%s", pass ? pass : "");
	snprintf(r->user, sizeof(r->user), "%s", user ? user : "");
	ret = rd_connect(r, errbuf, errlen);
	if (ret)
		goto fail;
	*state = r;
	return 0;
fail:
	pthread_mutex_destroy(&r->lock);
	free(r);
	return ret;
}

static int redis_put(void *state, const char *key, const char *val, size_t len)
{
	struct redis *r = state;
	const char *argv[] = {"SET", key, val};
	size_t lens[] = {3, strlen(key), len};
	int ret;
	redisReply *rep = rd_cmd(r, 3, argv, lens, key, &ret);
	if (rep)
		freeReplyObject(rep);
	return ret;
}

static int redis_get(void *state, const char *key, char **val, size_t *len)
{
	struct redis *r = state;
	const char *argv[] = {"GET", key};
	size_t lens[] = {3, strlen(key)};
	int ret;
	redisReply *rep = rd_cmd(r, 2, argv, lens, key, &ret);
	if (!rep)
		return ret;
	if (rep->type == REDIS_REPLY_NIL) {
		ret = TE_ERR_NOT_FOUND;
	} else if (rep->type != REDIS_REPLY_STRING) {
		pd_warn("redis GET of \"%s\": unexpected reply type %d", key, rep->type);
		ret = TE_ERR_METADATA;
	} else if (!(*val = malloc(rep->len + 1))) {
		ret = TE_ERR_MEMORY;
	} else {
		memcpy(*val, rep->str, rep->len);
		(*val)[rep->len] = '\0';
		*len = rep->len;
	}
	freeReplyObject(rep);
	return ret;
}

static int redis_del(void *state, const char *key)
{
	struct redis *r = state;
	const char *argv[] = {"DEL", key};
	size_t lens[] = {3, strlen(key)};
	int ret;
	redisReply *rep = rd_cmd(r, 2, argv, lens, key, &ret);
	if (!rep)
		return ret;
	if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0)
		ret = TE_ERR_NOT_FOUND;
	freeReplyObject(rep);
	return ret;
}

static void redis_close(void *state)
{
	struct redis *r = state;
	rd_drop(r);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

const struct te_meta_backend te_meta_redis_backend = {
    .kind = TE_META_REDIS,
    .open = redis_open,
    .put = redis_put,
    .get = redis_get,
    .del = redis_del,
    .close = redis_close,
};
