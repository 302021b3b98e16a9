/* SPDX-License-Identifier: Apache-2.0 */
/* ms_store: pdkv-metaserver's key/value store with its limits (key, value, total bytes, key
 * count, dump size), apart from the HTTP layer so tests and the fuzzer drive it directly. */
#ifndef MS_STORE_H
#define MS_STORE_H

#include <stdbool.h>
#include <stddef.h>

struct ms_limits {
	size_t max_key;   /* bytes in a key */
	size_t max_value; /* bytes in a value (the PUT body) */
	size_t max_total; /* keys + values held */
	size_t max_keys;  /* number of keys */
	size_t max_dump;  /* bytes of a /dump or ?prefix= answer */
};
#define MS_DEFAULT_MAX_KEY   4096u
#define MS_DEFAULT_MAX_VALUE (16ull << 20)
#define MS_DEFAULT_MAX_TOTAL (256ull << 20)
#define MS_DEFAULT_MAX_KEYS  65536u
#define MS_DEFAULT_MAX_DUMP  (64ull << 20)

void ms_store_limits(const struct ms_limits *l); /* before the first request */
void ms_store_clear(void);
size_t ms_store_keys(void);

/* Keys are klen bytes: empty, longer than max_key or holding a NUL -> -EINVAL / -ENAMETOOLONG.
 * ms_put: 0, -EFBIG (value), -ENOSPC (total or key count), -EEXIST (reject_dup and the key is
 * an rpc_meta key that exists), -ENOMEM. */
int ms_put(const char *key, size_t klen, const void *val, size_t vlen, bool reject_dup);
/* *val malloc'd (NUL-terminated, *vlen without it). 0, -ENOENT, -ENOMEM, key errors. */
int ms_get(const char *key, size_t klen, char **val, size_t *vlen);
int ms_del(const char *key, size_t klen); /* 0, -ENOENT, key errors */
/* {"key": "value", ...} of every key starting with prefix, keys sorted, values JSON-escaped
 * byte for byte (NUL -> \u0000). 0, -EFBIG (answer over max_dump; *outlen = its size),
 * -ENOMEM. */
int ms_dump(const char *prefix, size_t plen, char **out, size_t *outlen);
/* What a key error means, for the HTTP answer. */
const char *ms_strerror(int err);

#endif
