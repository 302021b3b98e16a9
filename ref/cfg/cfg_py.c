/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_py: small pieces of Python behaviour that vLLM's config code relies on — int() of a str,
 * repr() of a str, str.split — reproduced so pdkv reaches the same verdict as vLLM. */
#include "cfg_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool py_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
	       (c >= 0x1c && c <= 0x1f);
}

int cfg_py_int(const char *s, int64_t *out, bool *huge)
{
	const char *b = s, *e = s + strlen(s);
	bool neg = false, prev_digit = false, any = false, big = false;
	uint64_t v = 0;

	while (b < e && py_space(*b))
		b++;
	while (e > b && py_space(e[-1]))
		e--;
	if (b < e && (*b == '+' || *b == '-'))
		neg = *b++ == '-';
	for (; b < e; b++) {
		if (*b == '_') {
			if (!prev_digit || b + 1 >= e || !isdigit((unsigned char)b[1]))
				return -1;
			prev_digit = false;
			continue;
		}
		if (!isdigit((unsigned char)*b))
			return -1;
		any = prev_digit = true;
		if (v > (UINT64_MAX - 9) / 10)
			big = true;
		else
			v = v * 10 + (uint64_t)(*b - '0');
	}
	if (!any)
		return -1;
	if (big || v > (uint64_t)INT64_MAX) {
		big = true;
		v = (uint64_t)INT64_MAX;
	}
	if (huge)
		*huge = big;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

char *cfg_py_repr(const char *s)
{
	bool sq = strchr(s, '\'') != NULL, dq = strchr(s, '"') != NULL;
	char q = (sq && !dq) ? '"' : '\'';
	size_t n = strlen(s), k = 0;
	char *o = malloc(n * 4 + 3);
	const unsigned char *p;

	if (!o)
		return NULL;
	o[k++] = q;
	for (p = (const unsigned char *)s; *p; p++) {
		if (*p == (unsigned char)q || *p == '\\') {
			o[k++] = '\\';
			o[k++] = (char)*p;
		} else if (*p == '\n') {
			o[k++] = '\\';
			o[k++] = 'n';
		} else if (*p == '\r') {
			o[k++] = '\\';
			o[k++] = 'r';
		} else if (*p == '\t') {
			o[k++] = '\\';
			o[k++] = 't';
		} else if (*p < 0x20 || *p == 0x7f) {
			k += (size_t)sprintf(o + k, "\\x%02x", *p);
		} else {
			o[k++] = (char)*p;
		}
	}
	o[k++] = q;
	o[k] = 0;
	return o;
}

size_t cfg_py_split_count(const char *s, char sep)
{
	size_t n = 1;

	for (; *s; s++)
		if (*s == sep)
			n++;
	return n;
}

int cfg_py_split2(const char *s, char sep, char **a, char **b)
{
	const char *c = strchr(s, sep);

	*a = *b = NULL;
	if (!c || strchr(c + 1, sep))
		return -1;
	*a = strndup(s, (size_t)(c - s));
	*b = strdup(c + 1);
	if (!*a || !*b) {
		free(*a);
		free(*b);
		*a = *b = NULL;
		return -1;
	}
	return 0;
}

bool cfg_zmq_host_ok(const char *h)
{
	const unsigned char *c = (const unsigned char *)h;

	/* libzmq socket_base_t::connect: first char alnum/'['/':', then a fixed character set. */
	if (*c && (isalnum(*c) || *c == '[' || *c == ':')) {
		c++;
		while (isalnum(*c) || strchr(".-:%;[]_*", *c))
			if (*c)
				c++;
			else
				break;
	}
	return *c == 0;
}
