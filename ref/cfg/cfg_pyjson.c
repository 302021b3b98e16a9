/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_pyjson: a JSON reader that fails exactly like CPython's json.load (and, in a second
 * wording, like pydantic's jiter), so pdkv can print the exception vLLM would raise. */
#include "cfg_internal.h"
#include "pd_buf.h"
#include "pd_util.h"

#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Marks on cJSON numbers: the literal was a float (has '.', 'e', NaN/Infinity). The literal text
 * itself is kept in valuestring (cJSON_Delete frees it). */
#define PJ_FLOAT (1 << 14)

struct pj {
	const uint32_t *s;
	size_t n;
	bool jiter;
	int depth;
	char *err;
};

static void pj_fail(struct pj *p, size_t pos, const char *py, const char *jt)
{
	size_t i, line = 1, col, last_nl = (size_t)-1;

	if (p->err)
		return;
	for (i = 0; i < pos && i < p->n; i++)
		if (p->s[i] == '\n') {
			line++;
			last_nl = i;
		}
	col = last_nl == (size_t)-1 ? pos + 1 : pos - last_nl;
	if (p->jiter) {
		if (pos >= p->n && col > 0)
			col--; /* jiter reports EOF at the column of the last character */
		if (asprintf(&p->err, "Invalid JSON: %s at line %zu column %zu [type=json_invalid]",
		             jt, line, col) < 0)
			p->err = NULL;
	} else {
		if (asprintf(&p->err,
		             "json.decoder.JSONDecodeError: %s: line %zu column %zu (char %zu)", py,
		             line, col, pos) < 0)
			p->err = NULL;
	}
}

static void pj_fail_raw(struct pj *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pj_fail_raw(struct pj *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err)
		return;
	va_start(ap, fmt);
	if (vasprintf(&p->err, fmt, ap) < 0)
		p->err = NULL;
	va_end(ap);
}

static bool pj_ws(uint32_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t pj_skip(struct pj *p, size_t i)
{
	while (i < p->n && pj_ws(p->s[i]))
		i++;
	return i;
}

/* Appends code point c as UTF-8 (surrogates as 3-byte WTF-8, like Python's surrogatepass). */
static int pj_put(char **buf, size_t *len, size_t *cap, uint32_t c)
{
	char tmp[4];
	size_t k = pd_utf8_encode(c, tmp);

	if (pd_buf_grow(buf, cap, *len + k + 1, 32))
		return -1;
	memcpy(*buf + *len, tmp, k);
	*len += k;
	(*buf)[*len] = 0;
	return 0;
}

static int pj_hex(uint32_t c)
{
	if (c >= '0' && c <= '9')
		return (int)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (int)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (int)(c - 'A' + 10);
	return -1;
}

/* CPython scanstring_unicode (strict=True); end = index after the opening quote. */
static char *pj_string(struct pj *p, size_t end, size_t *next)
{
	size_t begin = end - 1, i = end, len = 0, cap = 0;
	char *out = NULL;
	uint32_t c;

	if (pj_put(&out, &len, &cap, 'x'))
		goto oom;
	len = 0;
	out[0] = 0;
	for (;;) {
		while (i < p->n && p->s[i] != '"' && p->s[i] != '\\') {
			if (p->s[i] <= 0x1f) {
				pj_fail(p, i, "Invalid control character at",
				        "control character (\\u0000-\\u001F) found while parsing a "
				        "string");
				goto bad;
			}
			if (pj_put(&out, &len, &cap, p->s[i]))
				goto oom;
			i++;
		}
		if (i >= p->n) {
			pj_fail(p, p->jiter ? p->n : begin, "Unterminated string starting at",
			        "EOF while parsing a string");
			goto bad;
		}
		if (p->s[i] == '"') {
			*next = i + 1;
			return out;
		}
		i++; /* backslash */
		if (i == p->n) {
			pj_fail(p, p->jiter ? p->n : begin, "Unterminated string starting at",
			        "EOF while parsing a string");
			goto bad;
		}
		c = p->s[i];
		if (c != 'u') {
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			default:
				c = 0;
			}
			if (c == 0) {
				pj_fail(p, i - 1, "Invalid \\escape", "invalid escape");
				goto bad;
			}
			i++;
		} else {
			size_t e;
			int k, h;

			i++;
			e = i + 4;
			if (e >= p->n) {
				pj_fail(p, i - 1, "Invalid \\uXXXX escape", "invalid escape");
				goto bad;
			}
			c = 0;
			for (k = 0; k < 4; k++) {
				h = pj_hex(p->s[i + k]);
				if (h < 0) {
					pj_fail(p, e - 5, "Invalid \\uXXXX escape",
					        "invalid escape");
					goto bad;
				}
				c = (c << 4) | (uint32_t)h;
			}
			i = e;
			if (c >= 0xd800 && c <= 0xdbff && e + 6 < p->n && p->s[e] == '\\' &&
			    p->s[e + 1] == 'u') {
				uint32_t c2 = 0;
				size_t e2 = e + 6;
				for (k = 0; k < 4; k++) {
					h = pj_hex(p->s[e + 2 + k]);
					if (h < 0) {
						pj_fail(p, e2 - 5, "Invalid \\uXXXX escape",
						        "invalid escape");
						goto bad;
					}
					c2 = (c2 << 4) | (uint32_t)h;
				}
				if (c2 >= 0xdc00 && c2 <= 0xdfff) {
					c = 0x10000 + (((c - 0xd800) << 10) | (c2 - 0xdc00));
					i = e2;
				}
			}
		}
		if (pj_put(&out, &len, &cap, c))
			goto oom;
	}
oom:
	pj_fail_raw(p, "MemoryError: out of memory");
bad:
	free(out);
	return NULL;
}

static bool pj_digit(uint32_t c)
{
	return c >= '0' && c <= '9';
}

/* CPython _match_number_unicode. */
static cJSON *pj_number(struct pj *p, size_t start, size_t *next)
{
	size_t i = start, end = p->n, k, ndig;
	bool is_float = false;
	char *lit;
	cJSON *v;

	if (p->s[i] == '-') {
		i++;
		if (i >= end)
			goto stop;
	}
	if (p->s[i] >= '1' && p->s[i] <= '9') {
		i++;
		while (i < end && pj_digit(p->s[i]))
			i++;
	} else if (p->s[i] == '0') {
		i++;
	} else {
		goto stop;
	}
	if (i + 1 < end && p->s[i] == '.' && pj_digit(p->s[i + 1])) {
		is_float = true;
		i += 2;
		while (i < end && pj_digit(p->s[i]))
			i++;
	}
	if (i + 1 < end && (p->s[i] == 'e' || p->s[i] == 'E')) {
		size_t e_start = i;
		i++;
		if (i + 1 < end && (p->s[i] == '-' || p->s[i] == '+'))
			i++;
		while (i < end && pj_digit(p->s[i]))
			i++;
		if (pj_digit(p->s[i - 1]))
			is_float = true;
		else
			i = e_start;
	}
	ndig = i - start - (p->s[start] == '-');
	if (!is_float && ndig > 4300 && !p->jiter) {
		pj_fail_raw(
		    p,
		    "ValueError: Exceeds the limit (4300 digits) for integer string conversion: "
		    "value has %zu digits; use sys.set_int_max_str_digits() to increase the limit",
		    ndig);
		return NULL;
	}
	lit = malloc(i - start + 1);
	if (!lit) {
		pj_fail_raw(p, "MemoryError: out of memory");
		return NULL;
	}
	for (k = start; k < i; k++)
		lit[k - start] = (char)p->s[k];
	lit[i - start] = 0;
	v = cJSON_CreateNumber(strtod(lit, NULL));
	if (!v) {
		free(lit);
		pj_fail_raw(p, "MemoryError: out of memory");
		return NULL;
	}
	v->valuestring = lit;
	if (is_float)
		v->type |= PJ_FLOAT;
	*next = i;
	return v;
stop:
	if (p->jiter && start >= p->n)
		pj_fail(p, start, "Expecting value", "EOF while parsing a value");
	else
		pj_fail(p, start, "Expecting value", p->jiter ? "expected value" : "");
	return NULL;
}

static bool pj_lit(struct pj *p, size_t i, const char *w)
{
	size_t k, n = strlen(w);

	if (i + n > p->n)
		return false;
	for (k = 0; k < n; k++)
		if (p->s[i + k] != (uint32_t)(unsigned char)w[k])
			return false;
	return true;
}

static cJSON *pj_named(double d, const char *lit)
{
	cJSON *v = cJSON_CreateNumber(d);
	if (v) {
		v->valuestring = strdup(lit);
		v->type |= PJ_FLOAT;
	}
	return v;
}

static cJSON *pj_value(struct pj *p, size_t idx, size_t *next);

static cJSON *pj_object(struct pj *p, size_t idx, size_t *next)
{
	cJSON *obj = cJSON_CreateObject(), *val;
	char *key;
	size_t ni;

	if (!obj)
		goto oom;
	idx = pj_skip(p, idx);
	if (idx >= p->n || p->s[idx] != '}') {
		for (;;) {
			if (idx >= p->n || p->s[idx] != '"') {
				pj_fail(p, idx, "Expecting property name enclosed in double quotes",
				        idx >= p->n ? "EOF while parsing an object"
				                    : "key must be a string");
				goto bad;
			}
			key = pj_string(p, idx + 1, &ni);
			if (!key)
				goto bad;
			idx = pj_skip(p, ni);
			if (idx >= p->n || p->s[idx] != ':') {
				free(key);
				pj_fail(p, idx, "Expecting ':' delimiter",
				        idx >= p->n ? "EOF while parsing an object"
				                    : "expected `:`");
				goto bad;
			}
			idx = pj_skip(p, idx + 1);
			val = pj_value(p, idx, &ni);
			if (!val) {
				free(key);
				goto bad;
			}
			/* Keys are kept in order; lookups take the last one, like a dict. */
			val->string = key;
			cJSON_AddItemToArray(obj, val);
			idx = pj_skip(p, ni);
			if (idx < p->n && p->s[idx] == '}')
				break;
			if (idx >= p->n || p->s[idx] != ',') {
				pj_fail(p, idx, "Expecting ',' delimiter",
				        idx >= p->n ? "EOF while parsing an object"
				                    : "expected `,` or `}`");
				goto bad;
			}
			idx = pj_skip(p, idx + 1);
			if (p->jiter && idx < p->n && p->s[idx] == '}') {
				pj_fail(p, idx, "", "trailing comma");
				goto bad;
			}
		}
	}
	*next = idx + 1;
	return obj;
oom:
	pj_fail_raw(p, "MemoryError: out of memory");
bad:
	cJSON_Delete(obj);
	return NULL;
}

static cJSON *pj_array(struct pj *p, size_t idx, size_t *next)
{
	cJSON *arr = cJSON_CreateArray(), *val;
	size_t ni;

	if (!arr) {
		pj_fail_raw(p, "MemoryError: out of memory");
		return NULL;
	}
	idx = pj_skip(p, idx);
	if (idx >= p->n || p->s[idx] != ']') {
		for (;;) {
			val = pj_value(p, idx, &ni);
			if (!val)
				goto bad;
			cJSON_AddItemToArray(arr, val);
			idx = pj_skip(p, ni);
			if (idx < p->n && p->s[idx] == ']')
				break;
			if (idx >= p->n || p->s[idx] != ',') {
				pj_fail(p, idx, "Expecting ',' delimiter",
				        idx >= p->n ? "EOF while parsing a list"
				                    : "expected `,` or `]`");
				goto bad;
			}
			idx = pj_skip(p, idx + 1);
			if (p->jiter && idx < p->n && p->s[idx] == ']') {
				pj_fail(p, idx, "", "trailing comma");
				goto bad;
			}
		}
	}
	*next = idx + 1;
	return arr;
bad:
	cJSON_Delete(arr);
	return NULL;
}

/* CPython scan_once_unicode. */
static cJSON *pj_value(struct pj *p, size_t idx, size_t *next)
{
	cJSON *v;
	uint32_t c;

	if (idx >= p->n) {
		pj_fail(p, idx, "Expecting value", "EOF while parsing a value");
		return NULL;
	}
	c = p->s[idx];
	switch (c) {
	case '"': {
		char *s = pj_string(p, idx + 1, next);
		if (!s)
			return NULL;
		v = cJSON_CreateString("");
		if (!v) {
			free(s);
			pj_fail_raw(p, "MemoryError: out of memory");
			return NULL;
		}
		free(v->valuestring);
		v->valuestring = s;
		return v;
	}
	case '{':
	case '[':
		if (++p->depth > (p->jiter ? 200 : CFG_PYJSON_MAX_DEPTH)) {
			if (p->jiter)
				pj_fail(p, idx, "", "recursion limit exceeded");
			else
				pj_fail_raw(
				    p,
				    "RecursionError: maximum recursion depth exceeded while "
				    "decoding a JSON %s from a unicode string",
				    c == '{' ? "object" : "array");
			return NULL;
		}
		v = c == '{' ? pj_object(p, idx + 1, next) : pj_array(p, idx + 1, next);
		p->depth--;
		return v;
	case 'n':
		if (pj_lit(p, idx, "null")) {
			*next = idx + 4;
			return cJSON_CreateNull();
		}
		break;
	case 't':
		if (pj_lit(p, idx, "true")) {
			*next = idx + 4;
			return cJSON_CreateTrue();
		}
		break;
	case 'f':
		if (pj_lit(p, idx, "false")) {
			*next = idx + 5;
			return cJSON_CreateFalse();
		}
		break;
	case 'N':
		if (pj_lit(p, idx, "NaN")) {
			*next = idx + 3;
			return pj_named(__builtin_nan(""), "NaN");
		}
		break;
	case 'I':
		if (pj_lit(p, idx, "Infinity")) {
			*next = idx + 8;
			return pj_named(__builtin_inf(), "Infinity");
		}
		break;
	case '-':
		if (pj_lit(p, idx, "-Infinity")) {
			*next = idx + 9;
			return pj_named(-__builtin_inf(), "-Infinity");
		}
		break;
	}
	return pj_number(p, idx, next);
}

/* Decodes UTF-8 the way Python's strict utf-8 codec does (same three failure wordings), then
 * applies text-mode universal newlines when asked. Returns code points or NULL with *err. */
static uint32_t *pj_decode(const char *buf, size_t len, bool newlines, bool surrogateescape,
                           size_t *out_n, char **err)
{
	const unsigned char *b = (const unsigned char *)buf;
	uint32_t *cp = malloc((len + 1) * sizeof(*cp));
	size_t i = 0, n = 0;

	if (!cp) {
		if (asprintf(err, "MemoryError: out of memory") < 0)
			*err = NULL;
		return NULL;
	}
	while (i < len) {
		unsigned char c = b[i];
		uint32_t v;
		size_t need, k;
		unsigned char lo = 0x80, hi = 0xbf;
		const char *why = NULL;

		if (c < 0x80) {
			v = c;
			need = 0;
		} else if (c >= 0xc2 && c <= 0xdf) {
			v = c & 0x1f;
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			v = c & 0x0f;
			need = 2;
			if (c == 0xe0)
				lo = 0xa0;
			if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			v = c & 0x07;
			need = 3;
			if (c == 0xf0)
				lo = 0x90;
			if (c == 0xf4)
				hi = 0x8f;
		} else {
			why = "invalid start byte";
			need = 0;
			v = 0;
		}
		for (k = 1; !why && k <= need; k++) {
			unsigned char cc;
			if (i + k >= len) {
				why = "unexpected end of data";
				break;
			}
			cc = b[i + k];
			if (cc < (k == 1 ? lo : 0x80) || cc > (k == 1 ? hi : 0xbf)) {
				why = "invalid continuation byte";
				break;
			}
			v = (v << 6) | (cc & 0x3f);
		}
		if (why) {
			if (surrogateescape) {
				cp[n++] = 0xdc00 + c;
				i++;
				continue;
			}
			/* CPython names the maximal valid prefix: "bytes in position a-b" */
			if (k > 1 && need) {
				if (asprintf(
				        err,
				        "UnicodeDecodeError: 'utf-8' codec can't decode bytes in "
				        "position %zu-%zu: %s",
				        i, i + k - 1, why) < 0)
					*err = NULL;
			} else if (asprintf(
			               err,
			               "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x%02x "
			               "in position %zu: %s",
			               c, i, why) < 0) {
				*err = NULL;
			}
			free(cp);
			return NULL;
		}
		i += need + 1;
		if (newlines && v == '\r') {
			if (i < len && b[i] == '\n')
				i++;
			v = '\n';
		}
		cp[n++] = v;
	}
	*out_n = n;
	return cp;
}

static cJSON *pj_parse(const char *buf, size_t len, char **err, bool jiter)
{
	struct pj p = {.jiter = jiter};
	uint32_t *cp;
	size_t n = 0, idx, end;
	cJSON *v = NULL;

	*err = NULL;
	cp = pj_decode(buf, len, !jiter, jiter, &n, err);
	if (!cp)
		return NULL;
	p.s = cp;
	p.n = n;
	if (!jiter && n > 0 && cp[0] == 0xfeff) {
		pj_fail(&p, 0, "Unexpected UTF-8 BOM (decode using utf-8-sig)", "");
		goto out;
	}
	idx = pj_skip(&p, 0);
	v = pj_value(&p, idx, &end);
	if (!v)
		goto out;
	end = pj_skip(&p, end);
	if (end != n) {
		pj_fail(&p, end, "Extra data", "trailing characters");
		cJSON_Delete(v);
		v = NULL;
	}
out:
	if (!v) {
		*err = p.err;
		if (!*err && asprintf(err, "MemoryError: out of memory") < 0)
			*err = NULL;
	}
	free(cp);
	return v;
}

cJSON *cfg_pyjson_parse(const char *buf, size_t len, char **err)
{
	return pj_parse(buf, len, err, false);
}

cJSON *cfg_pyjson_parse_jiter(const char *buf, size_t len, char **err)
{
	return pj_parse(buf, len, err, true);
}

const char *cfg_py_type(const cJSON *v)
{
	if (!v || cJSON_IsNull(v))
		return "NoneType";
	if (cJSON_IsBool(v))
		return "bool";
	if (cJSON_IsNumber(v))
		return (v->type & PJ_FLOAT) ? "float" : "int";
	if (cJSON_IsString(v))
		return "str";
	if (cJSON_IsArray(v))
		return "list";
	if (cJSON_IsObject(v))
		return "dict";
	return "object";
}

bool cfg_pyjson_is_float(const cJSON *v)
{
	return v && cJSON_IsNumber(v) && (v->type & PJ_FLOAT);
}

const cJSON *cfg_pyjson_get(const cJSON *obj, const char *key)
{
	const cJSON *it, *last = NULL;

	if (!obj || !cJSON_IsObject(obj))
		return NULL;
	for (it = obj->child; it; it = it->next)
		if (it->string && strcmp(it->string, key) == 0)
			last = it;
	return last;
}
