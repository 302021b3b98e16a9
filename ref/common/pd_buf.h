/* SPDX-License-Identifier: Apache-2.0 */
/* pd_buf: the one growable byte/string buffer (always NUL-terminated, optional size cap) and
 * the one libcurl body collector built on it. */
#ifndef PD_BUF_H
#define PD_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct pd_buf {
	char *p; /* NULL until the first put; then NUL-terminated */
	size_t len, cap;
	size_t max; /* largest len accepted; 0 = unbounded */
	bool oom;   /* a put failed for memory: later puts do nothing */
	bool over;  /* a put would have passed max: later puts do nothing */
};

/* Grows the allocation *p of *cap bytes to at least need, doubling from *cap (first when 0);
 * 0, or -ENOMEM with *p and *cap unchanged. For bodies kept outside a struct pd_buf. */
int pd_buf_grow(char **p, size_t *cap, size_t need, size_t first);
/* Appends n bytes (n = 0 still allocates, so p is a valid "" afterwards). 0, -ENOMEM or
 * -E2BIG (past max); after a failure every later put fails the same way. */
int pd_buf_put(struct pd_buf *b, const void *s, size_t n);
int pd_buf_puts(struct pd_buf *b, const char *s);
int pd_buf_printf(struct pd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pd_buf_free(struct pd_buf *b);

/* CURLOPT_WRITEFUNCTION with CURLOPT_WRITEDATA a struct pd_buf: the response body, up to
 * b->max bytes; past it (b->over) or out of memory the transfer is aborted. */
size_t pd_buf_curl_write(char *data, size_t sz, size_t n, void *ud);

#endif
