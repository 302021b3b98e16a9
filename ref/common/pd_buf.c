/* SPDX-License-Identifier: Apache-2.0 */
/* pd_buf: growable NUL-terminated buffer (doubling, capped by max) and the libcurl write
 * callback that fills one — every string builder and HTTP-body collector in pdkv uses it. */
#include "pd_buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pd_buf_grow(char **p, size_t *cap, size_t need, size_t first)
{
	size_t c;
	char *np;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap : first;
	while (c < need)
		c *= 2;
	np = realloc(*p, c);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

int pd_buf_put(struct pd_buf *b, const void *s, size_t n)
{
	if (b->oom)
		return -ENOMEM;
	if (b->over || (b->max && n > b->max - b->len)) {
		b->over = true;
		return -E2BIG;
	}
	if (pd_buf_grow(&b->p, &b->cap, b->len + n + 1, 256)) {
		b->oom = true;
		return -ENOMEM;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int pd_buf_puts(struct pd_buf *b, const char *s)
{
	return pd_buf_put(b, s, strlen(s));
}

int pd_buf_printf(struct pd_buf *b, const char *fmt, ...)
{
	char small[256], *big = NULL;
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return pd_buf_put(b, small, (size_t)n);
	va_start(ap, fmt);
	n = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	ret = pd_buf_put(b, big, (size_t)n);
	free(big);
	return ret;
}

void pd_buf_free(struct pd_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

size_t pd_buf_curl_write(char *data, size_t sz, size_t n, void *ud)
{
	size_t add = sz * n;
	return pd_buf_put(ud, data, add) ? 0 : add;
}
