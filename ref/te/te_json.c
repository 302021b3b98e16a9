/* SPDX-License-Identifier: Apache-2.0 */
/* te_json: the JSON bytes Mooncake reads and writes — jsoncpp FastWriter output (compact, keys
 * sorted byte-wise, "\n" at the end) and a strict parser that keeps 64-bit integers exact. */
#include "te_internal.h"

#include "pd_buf.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

#define JSON_MAX_DEPTH   64
#define JSON_MAX_MEMBERS 10000 /* per object: bounds the duplicate-key scan on hostile input */

/* ------------------------------------------------------------------ writer */
/* Length of the valid UTF-8 sequence at p (< e), its code point in *cp; 0 if invalid. */
static unsigned utf8_seq(const unsigned char *p, const unsigned char *e, unsigned *cp)
{
	unsigned c = *p, n;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0)
		n = 1, *cp = c & 0x1f;
	else if ((c & 0xf0) == 0xe0)
		n = 2, *cp = c & 0x0f;
	else if ((c & 0xf8) == 0xf0)
		n = 3, *cp = c & 0x07;
	else
		return 0;
	if ((size_t)(e - p) < n + 1)
		return 0;
	for (unsigned i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*cp = (*cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 1 && *cp < 0x80) || (n == 2 && *cp < 0x800) || (n == 3 && *cp < 0x10000) ||
	    *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return n + 1;
}

/* One code point at *s; invalid input gives U+FFFD and consumes one byte (as jsoncpp). */
static unsigned utf8_next(const unsigned char **s, const unsigned char *e)
{
	unsigned cp, n = utf8_seq(*s, e, &cp);
	*s += n ? n : 1;
	return n ? cp : 0xfffd;
}

/* jsoncpp 1.9 valueToQuotedString (emitUTF8 = false): non-ASCII as \uXXXX, lowercase hex. */
static void sb_quote(struct pd_buf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str, *e = s + strlen(str);
	char tmp[16];
	pd_buf_put(b, "\"", 1);
	while (s < e) {
		const unsigned char *run = s;
		while (s < e && *s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\')
			s++;
		pd_buf_put(b, (const char *)run, (size_t)(s - run));
		if (s >= e)
			break;
		switch (*s) {
		case '"':
			pd_buf_puts(b, "\\\"");
			s++;
			continue;
		case '\\':
			pd_buf_puts(b, "\\\\");
			s++;
			continue;
		case '\b':
			pd_buf_puts(b, "\\b");
			s++;
			continue;
		case '\f':
			pd_buf_puts(b, "\\f");
			s++;
			continue;
		case '\n':
			pd_buf_puts(b, "\\n");
			s++;
			continue;
		case '\r':
			pd_buf_puts(b, "\\r");
			s++;
			continue;
		case '\t':
			pd_buf_puts(b, "\\t");
			s++;
			continue;
		}
		unsigned cp = utf8_next(&s, e);
		if (cp >= 0x10000) {
			cp -= 0x10000;
			snprintf(tmp, sizeof(tmp), "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
			         0xdc00 + (cp & 0x3ff));
		} else {
			snprintf(tmp, sizeof(tmp), "\\u%04x", cp);
		}
		pd_buf_puts(b, tmp);
	}
	pd_buf_put(b, "\"", 1);
}

static void sb_number(struct pd_buf *b, double d)
{
	char tmp[64];
	if (isnan(d)) {
		pd_buf_puts(b, "null");
		return;
	}
	if (isinf(d)) {
		pd_buf_puts(b, d > 0 ? "1e+9999" : "-1e+9999");
		return;
	}
	if (d == floor(d) && d >= 0 && d < 18446744073709551616.0)
		snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)d);
	else if (d == floor(d) && d < 0 && d >= -9223372036854775808.0)
		snprintf(tmp, sizeof(tmp), "%lld", (long long)d);
	else
		snprintf(tmp, sizeof(tmp), "%.17g", d);
	pd_buf_puts(b, tmp);
}

static int cmp_child(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	int c = strcmp(x->string ? x->string : "", y->string ? y->string : "");
	return c ? c : (x < y ? -1 : x > y); /* stable for duplicate keys */
}

static void write_item(struct pd_buf *b, const cJSON *it, int depth)
{
	const cJSON *c;
	size_t n = 0, i;
	if (depth > JSON_MAX_DEPTH * 4) {
		b->oom = true;
		return;
	}
	switch (it->type & 0xff) {
	case cJSON_False:
		pd_buf_puts(b, "false");
		return;
	case cJSON_True:
		pd_buf_puts(b, "true");
		return;
	case cJSON_NULL:
		pd_buf_puts(b, "null");
		return;
	case cJSON_Number:
		sb_number(b, it->valuedouble);
		return;
	case cJSON_Raw:
		pd_buf_puts(b, it->valuestring ? it->valuestring : "null");
		return;
	case cJSON_String:
		sb_quote(b, it->valuestring ? it->valuestring : "");
		return;
	case cJSON_Array:
		pd_buf_put(b, "[", 1);
		for (c = it->child; c; c = c->next) {
			if (c != it->child)
				pd_buf_put(b, ",", 1);
			write_item(b, c, depth + 1);
		}
		pd_buf_put(b, "]", 1);
		return;
	case cJSON_Object: {
		const cJSON **v;
		for (c = it->child; c; c = c->next)
			n++;
		v = malloc((n ? n : 1) * sizeof(*v));
		if (!v) {
			b->oom = true;
			return;
		}
		for (c = it->child, i = 0; c; c = c->next)
			v[i++] = c;
		qsort(v, n, sizeof(*v), cmp_child);
		pd_buf_put(b, "{", 1);
		for (i = 0; i < n; i++) {
			if (i)
				pd_buf_put(b, ",", 1);
			sb_quote(b, v[i]->string ? v[i]->string : "");
			pd_buf_put(b, ":", 1);
			write_item(b, v[i], depth + 1);
		}
		pd_buf_put(b, "}", 1);
		free(v);
		return;
	}
	default:
		pd_buf_puts(b, "null");
	}
}

char *te_json_fast_write(const struct cJSON *item)
{
	struct pd_buf b = {0};
	if (!item)
		return NULL;
	write_item(&b, item, 0);
	pd_buf_put(&b, "\n", 1);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* ------------------------------------------------------------------ parser */
struct parser {
	const char *s, *e, *start;
	char *err;
	size_t errlen;
	int failed;
};

static void perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr(struct parser *p, const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	if (p->failed)
		return;
	p->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "JSON %s at offset %zu", msg,
		         (size_t)(p->s - p->start));
}

static void skip_ws(struct parser *p)
{
	while (p->s < p->e && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static void put_utf8(struct pd_buf *b, unsigned cp)
{
	char t[4];

	pd_buf_put(b, t, pd_utf8_encode(cp, t));
}

/* Parses a string at p->s (on the opening quote); returns a malloc'd NUL-free C string. */
static char *parse_string(struct parser *p)
{
	struct pd_buf b = {0};
	p->s++;
	pd_buf_put(&b, "", 0);
	while (!p->failed) {
		const char *run = p->s;
		while (p->s < p->e && *p->s != '"' && *p->s != '\\' &&
		       (unsigned char)*p->s >= 0x20) {
			unsigned cp, n = 1;
			if ((unsigned char)*p->s >= 0x80 &&
			    !(n = utf8_seq((const unsigned char *)p->s, (const unsigned char *)p->e,
			                   &cp))) {
				perr(p, "invalid UTF-8 in string");
				break;
			}
			p->s += n;
		}
		if (p->failed)
			break;
		pd_buf_put(&b, run, (size_t)(p->s - run));
		if (p->s >= p->e) {
			perr(p, "unterminated string");
			break;
		}
		if (*p->s == '"') {
			p->s++;
			if (b.oom)
				perr(p, "out of memory");
			else
				return b.p;
			break;
		}
		if ((unsigned char)*p->s < 0x20) {
			perr(p, "control character in string");
			break;
		}
		/* backslash */
		if (p->e - p->s < 2) {
			perr(p, "unterminated escape");
			break;
		}
		char c = p->s[1];
		p->s += 2;
		switch (c) {
		case '"':
			pd_buf_put(&b, "\"", 1);
			break;
		case '\\':
			pd_buf_put(&b, "\\", 1);
			break;
		case '/':
			pd_buf_put(&b, "/", 1);
			break;
		case 'b':
			pd_buf_put(&b, "\b", 1);
			break;
		case 'f':
			pd_buf_put(&b, "\f", 1);
			break;
		case 'n':
			pd_buf_put(&b, "\n", 1);
			break;
		case 'r':
			pd_buf_put(&b, "\r", 1);
			break;
		case 't':
			pd_buf_put(&b, "\t", 1);
			break;
		case 'u': {
			unsigned cp, lo;
			if (p->e - p->s < 4 || hex4(p->s, &cp)) {
				perr(p, "bad \\u escape");
				break;
			}
			p->s += 4;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (p->e - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u' ||
				    hex4(p->s + 2, &lo) || lo < 0xdc00 || lo > 0xdfff) {
					perr(p, "unpaired surrogate");
					break;
				}
				p->s += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				perr(p, "unpaired surrogate");
				break;
			} else if (cp == 0) {
				perr(p, "\\u0000 in string");
				break;
			}
			put_utf8(&b, cp);
			break;
		}
		default:
			perr(p, "bad escape \\%c", c);
		}
	}
	free(b.p);
	return NULL;
}

static cJSON *parse_number(struct parser *p)
{
	const char *s = p->s;
	char buf[64];
	cJSON *it;
	if (s < p->e && *s == '-')
		s++;
	if (s >= p->e || *s < '0' || *s > '9')
		goto bad;
	if (*s == '0')
		s++;
	else
		while (s < p->e && *s >= '0' && *s <= '9')
			s++;
	if (s < p->e && *s == '.') {
		s++;
		if (s >= p->e || *s < '0' || *s > '9')
			goto bad;
		while (s < p->e && *s >= '0' && *s <= '9')
			s++;
	}
	if (s < p->e && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < p->e && (*s == '+' || *s == '-'))
			s++;
		if (s >= p->e || *s < '0' || *s > '9')
			goto bad;
		while (s < p->e && *s >= '0' && *s <= '9')
			s++;
	}
	if ((size_t)(s - p->s) >= sizeof(buf)) {
		perr(p, "number too long");
		return NULL;
	}
	memcpy(buf, p->s, (size_t)(s - p->s));
	buf[s - p->s] = '\0';
	p->s = s;
	it = cJSON_CreateRaw(buf);
	if (!it) {
		perr(p, "out of memory");
		return NULL;
	}
	it->valuedouble = strtod(buf, NULL);
	return it;
bad:
	perr(p, "bad number");
	return NULL;
}

static cJSON *parse_value(struct parser *p, int depth);

static cJSON *parse_container(struct parser *p, int depth, int is_obj)
{
	cJSON *c = is_obj ? cJSON_CreateObject() : cJSON_CreateArray();
	size_t n = 0;
	char close = is_obj ? '}' : ']';
	if (!c) {
		perr(p, "out of memory");
		return NULL;
	}
	p->s++;
	skip_ws(p);
	if (p->s < p->e && *p->s == close) {
		p->s++;
		return c;
	}
	while (!p->failed) {
		char *key = NULL;
		cJSON *v;
		skip_ws(p);
		if (is_obj) {
			if (p->s >= p->e || *p->s != '"') {
				perr(p, "expected object key");
				break;
			}
			key = parse_string(p);
			if (!key)
				break;
			skip_ws(p);
			if (p->s >= p->e || *p->s != ':') {
				free(key);
				perr(p, "expected ':'");
				break;
			}
			p->s++;
			if (++n > JSON_MAX_MEMBERS) {
				free(key);
				perr(p, "object with more than %d members", JSON_MAX_MEMBERS);
				break;
			}
		}
		v = parse_value(p, depth + 1);
		if (!v) {
			free(key);
			break;
		}
		if (!is_obj) {
			cJSON_AddItemToArray(c, v);
		} else if (cJSON_GetObjectItemCaseSensitive(c, key)) {
			cJSON_ReplaceItemInObjectCaseSensitive(c, key, v); /* last wins */
		} else {
			cJSON_AddItemToObject(c, key, v);
		}
		free(key);
		skip_ws(p);
		if (p->s < p->e && *p->s == ',') {
			p->s++;
			continue;
		}
		if (p->s < p->e && *p->s == close) {
			p->s++;
			return c;
		}
		perr(p, "expected ',' or '%c'", close);
	}
	cJSON_Delete(c);
	return NULL;
}

static int literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(p->e - p->s) >= n && !memcmp(p->s, word, n)) {
		p->s += n;
		return 1;
	}
	return 0;
}

static cJSON *parse_value(struct parser *p, int depth)
{
	char *str;
	cJSON *it;
	if (depth > JSON_MAX_DEPTH) {
		perr(p, "nested deeper than %d", JSON_MAX_DEPTH);
		return NULL;
	}
	skip_ws(p);
	if (p->s >= p->e) {
		perr(p, "unexpected end");
		return NULL;
	}
	switch (*p->s) {
	case '{':
		return parse_container(p, depth, 1);
	case '[':
		return parse_container(p, depth, 0);
	case '"':
		str = parse_string(p);
		if (!str)
			return NULL;
		it = cJSON_CreateString(str);
		free(str);
		if (!it)
			perr(p, "out of memory");
		return it;
	case 't':
		if (literal(p, "true"))
			return cJSON_CreateTrue();
		break;
	case 'f':
		if (literal(p, "false"))
			return cJSON_CreateFalse();
		break;
	case 'n':
		if (literal(p, "null"))
			return cJSON_CreateNull();
		break;
	default:
		if (*p->s == '-' || (*p->s >= '0' && *p->s <= '9'))
			return parse_number(p);
	}
	perr(p, "unexpected character '%c'", *p->s);
	return NULL;
}

struct cJSON *te_json_parse(const char *text, size_t len, char *errbuf, size_t errlen)
{
	struct parser p = {text, text + len, text, errbuf, errlen, 0};
	cJSON *root;
	if (!text) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "JSON text is NULL");
		return NULL;
	}
	root = parse_value(&p, 0);
	if (!root)
		return NULL;
	skip_ws(&p);
	if (p.s != p.e) {
		perr(&p, "trailing garbage");
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

int te_json_get_uint(const struct cJSON *item, uint64_t max, uint64_t *out)
{
	uint64_t v;
	if (!item)
		return TE_ERR_MALFORMED_JSON;
	if (cJSON_IsRaw(item) && item->valuestring) {
		const char *s = item->valuestring;
		if (*s == '-')
			return TE_ERR_MALFORMED_JSON;
		if (strpbrk(s, ".eE")) {
			/* jsoncpp accepts an integral real ("1.0", "1e3"); only exact ones here */
			double d = strtod(s, NULL);
			if (!(d >= 0 && d < 9007199254740992.0 && d == floor(d)))
				return TE_ERR_MALFORMED_JSON;
			v = (uint64_t)d;
		} else if (pd_parse_u64(s, &v)) {
			return TE_ERR_MALFORMED_JSON;
		}
	} else if (cJSON_IsNumber(item)) {
		double d = item->valuedouble;
		if (!(d >= 0 && d < 9007199254740992.0 && d == floor(d)))
			return TE_ERR_MALFORMED_JSON;
		v = (uint64_t)d;
	} else {
		return TE_ERR_MALFORMED_JSON;
	}
	if (v > max)
		return TE_ERR_MALFORMED_JSON;
	*out = v;
	return 0;
}
