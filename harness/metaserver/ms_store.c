/* SPDX-License-Identifier: Apache-2.0 */
/* ms_store: the metaserver's in-memory store (hash table under one lock) and its limits; the
 * /dump writer escapes control and non-UTF-8 bytes, so its answer is valid UTF-8 JSON. */
#include "metaserver/ms_store.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

struct entry {
	struct entry *next;
	char *key;
	char *val;
	size_t klen, vlen;
};

static struct {
	pthread_mutex_t lock;
	struct entry **b;
	size_t nb, n, bytes;
	struct ms_limits lim;
} st = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .lim = {MS_DEFAULT_MAX_KEY, MS_DEFAULT_MAX_VALUE, MS_DEFAULT_MAX_TOTAL, MS_DEFAULT_MAX_KEYS,
            MS_DEFAULT_MAX_DUMP},
};

void ms_store_limits(const struct ms_limits *l)
{
	pthread_mutex_lock(&st.lock);
	st.lim = *l;
	pthread_mutex_unlock(&st.lock);
}

/* keys are klen bytes, not necessarily NUL-terminated (the fuzzer found hash_str reading
 * past one) */
static uint64_t hash_str(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static struct entry **slot_of(const char *key, size_t klen)
{
	struct entry **pp = &st.b[hash_str(key, klen) & (st.nb - 1)];
	while (*pp && ((*pp)->klen != klen || memcmp((*pp)->key, key, klen)))
		pp = &(*pp)->next;
	return pp;
}

static int store_grow(void)
{
	size_t nb = st.nb ? st.nb * 2 : 64;
	struct entry **b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < st.nb; i++) {
		struct entry *e = st.b[i], *next;
		for (; e; e = next) {
			next = e->next;
			size_t h = hash_str(e->key, e->klen) & (nb - 1);
			e->next = b[h];
			b[h] = e;
		}
	}
	free(st.b);
	st.b = b;
	st.nb = nb;
	return 0;
}

static void entry_free(struct entry *e)
{
	free(e->key);
	free(e->val);
	free(e);
}

void ms_store_clear(void)
{
	pthread_mutex_lock(&st.lock);
	for (size_t i = 0; i < st.nb; i++) {
		struct entry *e = st.b[i], *next;
		for (; e; e = next) {
			next = e->next;
			entry_free(e);
		}
	}
	free(st.b);
	st.b = NULL;
	st.nb = st.n = st.bytes = 0;
	pthread_mutex_unlock(&st.lock);
}

size_t ms_store_keys(void)
{
	pthread_mutex_lock(&st.lock);
	size_t n = st.n;
	pthread_mutex_unlock(&st.lock);
	return n;
}

/* A key is a C string: "a%00b" would otherwise be stored as "a" and overwrite it. */
static int key_check(const char *key, size_t klen)
{
	if (!key || klen == 0)
		return -EINVAL;
	if (memchr(key, '\0', klen))
		return -EILSEQ;
	if (klen > st.lim.max_key)
		return -ENAMETOOLONG;
	return 0;
}

const char *ms_strerror(int err)
{
	switch (err) {
	case -EINVAL:
		return "empty key";
	case -EILSEQ:
		return "key contains a NUL byte (%00)";
	case -ENAMETOOLONG:
		return "key longer than --max-key";
	case -EFBIG:
		return "value larger than --max-body";
	case -ENOSPC:
		return "store full (--max-total bytes or --max-keys keys)";
	case -EEXIST:
		return "Duplicate rpc_meta key not allowed";
	case -ENOENT:
		return "metadata not found";
	default:
		return "out of memory";
	}
}

int ms_put(const char *key, size_t klen, const void *val, size_t vlen, bool reject_dup)
{
	struct entry **pp, *e;
	char *v;
	int ret = 0;

	pthread_mutex_lock(&st.lock);
	if ((ret = key_check(key, klen)))
		goto out;
	if (vlen > st.lim.max_value) {
		ret = -EFBIG;
		goto out;
	}
	if ((st.n >= st.nb && store_grow()) || !st.nb) {
		ret = -ENOMEM;
		goto out;
	}
	pp = slot_of(key, klen);
	e = *pp;
	if (e && reject_dup && memmem(key, klen, "rpc_meta", 8)) {
		/* newer Mooncake Python server (#818): a second engine with the same name fails */
		ret = -EEXIST;
		goto out;
	}
	/* room for the new bytes once the old value (if any) is gone */
	size_t held = st.bytes - (e ? e->vlen : 0) + (e ? 0 : klen);
	if ((!e && st.n >= st.lim.max_keys) || held + vlen > st.lim.max_total) {
		ret = -ENOSPC;
		goto out;
	}
	v = malloc(vlen + 1);
	if (!v) {
		ret = -ENOMEM;
		goto out;
	}
	if (vlen)
		memcpy(v, val, vlen);
	v[vlen] = '\0';
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->key = strndup(key, klen))) {
			free(e);
			free(v);
			ret = -ENOMEM;
			goto out;
		}
		e->klen = klen;
		*pp = e;
		st.n++;
		st.bytes += klen;
	} else {
		st.bytes -= e->vlen;
		free(e->val);
	}
	e->val = v;
	e->vlen = vlen;
	st.bytes += vlen;
out:
	pthread_mutex_unlock(&st.lock);
	return ret;
}

int ms_get(const char *key, size_t klen, char **val, size_t *vlen)
{
	int ret = 0;
	*val = NULL;
	*vlen = 0;
	pthread_mutex_lock(&st.lock);
	if ((ret = key_check(key, klen)))
		goto out;
	struct entry *e = st.nb ? *slot_of(key, klen) : NULL;
	if (!e) {
		ret = -ENOENT;
		goto out;
	}
	*val = malloc(e->vlen + 1);
	if (!*val) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(*val, e->val, e->vlen + 1);
	*vlen = e->vlen;
out:
	pthread_mutex_unlock(&st.lock);
	return ret;
}

int ms_del(const char *key, size_t klen)
{
	struct entry *e = NULL;
	int ret;
	pthread_mutex_lock(&st.lock);
	if ((ret = key_check(key, klen)) == 0 && st.nb) {
		struct entry **pp = slot_of(key, klen);
		e = *pp;
		if (e) {
			*pp = e->next;
			st.n--;
			st.bytes -= e->klen + e->vlen;
		}
	}
	pthread_mutex_unlock(&st.lock);
	if (ret)
		return ret;
	if (!e)
		return -ENOENT;
	entry_free(e);
	return 0;
}

/* JSON string body of n bytes: escapes '"', '\\' and every byte below 0x20 (NUL included);
 * well-formed UTF-8 goes through as is, and each byte that is not part of it (binary values)
 * becomes \u0080..\u00ff, its Latin-1 reading, so /dump is always valid UTF-8 JSON (GET of
 * the key returns the exact bytes). out NULL: only counts. */
static size_t json_str(char *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		size_t u = ch >= 0x80 ? pd_utf8_seq((const unsigned char *)s + i, n - i, false) : 1;
		if (u > 1) {
			if (out)
				memcpy(out + k, s + i, u);
			k += u;
			i += u - 1;
		} else if (ch == '"' || ch == '\\') {
			if (out) {
				out[k] = '\\';
				out[k + 1] = (char)ch;
			}
			k += 2;
		} else if (ch < 0x20 || ch >= 0x80) {
			if (out) {
				memcpy(out + k, "\\u00", 4);
				out[k + 4] = hex[ch >> 4];
				out[k + 5] = hex[ch & 15];
			}
			k += 6;
		} else {
			if (out)
				out[k] = (char)ch;
			k++;
		}
	}
	return k;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp((*(struct entry *const *)a)->key, (*(struct entry *const *)b)->key);
}

/* "{\n\t\"k\":\t\"v\",\n ... }" (cJSON_Print's layout, which /dump had before) */
static size_t dump_write(char *out, struct entry **v, size_t nk)
{
	size_t k = 0;
#define PUT(s, n)                                                                                  \
	do {                                                                                       \
		if (out)                                                                           \
			memcpy(out + k, s, n);                                                     \
		k += n;                                                                            \
	} while (0)
	PUT("{", 1);
	for (size_t i = 0; i < nk; i++) {
		PUT(i ? ",\n\t\"" : "\n\t\"", i ? 4u : 3u);
		k += json_str(out ? out + k : NULL, v[i]->key, v[i]->klen);
		PUT("\":\t\"", 4);
		k += json_str(out ? out + k : NULL, v[i]->val, v[i]->vlen);
		PUT("\"", 1);
	}
	PUT(nk ? "\n}" : "}", nk ? 2u : 1u);
#undef PUT
	return k;
}

int ms_dump(const char *prefix, size_t plen, char **out, size_t *outlen)
{
	struct entry **v = NULL;
	size_t nk = 0, len;
	int ret = 0;
	*out = NULL;
	*outlen = 0;
	pthread_mutex_lock(&st.lock);
	v = calloc(st.n + 1, sizeof(*v));
	if (!v) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < st.nb; i++)
		for (struct entry *e = st.b[i]; e; e = e->next)
			if (e->klen >= plen && !memcmp(e->key, prefix, plen))
				v[nk++] = e;
	qsort(v, nk, sizeof(*v), cmp_entry);
	len = dump_write(NULL, v, nk); /* size first: the answer is bounded before it exists */
	*outlen = len;
	if (len > st.lim.max_dump) {
		ret = -EFBIG;
		goto out;
	}
	*out = malloc(len + 1);
	if (!*out) {
		ret = -ENOMEM;
		goto out;
	}
	dump_write(*out, v, nk);
	(*out)[len] = '\0';
out:
	pthread_mutex_unlock(&st.lock);
	free(v);
	return ret;
}
