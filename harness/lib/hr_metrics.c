/* SPDX-License-Identifier: Apache-2.0 */
/* hr_metrics: reads a stand-in's /metrics (Prometheus text format 0.0.4) into name -> value,
 * summing the samples of one metric over its labels; the runner's one plain HTTP GET. */
#include "hr.h"
#include "pd_buf.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int add(struct hr_metrics *m, const char *name, size_t nlen, double v)
{
	char **nn;
	double *nv;
	for (size_t i = 0; i < m->n; i++) {
		if (strlen(m->name[i]) == nlen && !strncmp(m->name[i], name, nlen)) {
			m->value[i] += v;
			return 0;
		}
	}
	nn = realloc(m->name, (m->n + 1) * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	m->name = nn;
	nv = realloc(m->value, (m->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	m->value = nv;
	m->name[m->n] = strndup(name, nlen);
	if (!m->name[m->n])
		return -ENOMEM;
	m->value[m->n++] = v;
	return 0;
}

/* A sample line: name[{labels}] value [timestamp]. Comments and blank lines are skipped;
 * a malformed line is an error (the stand-in's output is under test too). */
int hr_metrics_parse(const char *text, struct hr_metrics *m)
{
	const char *p = text;
	memset(m, 0, sizeof(*m));
	while (*p) {
		const char *eol = strchr(p, '\n'), *q = p, *name = p;
		size_t nlen;
		char *end;
		double v;
		if (!eol)
			eol = p + strlen(p);
		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		if (q == eol || *q == '#')
			goto next;
		name = q;
		while (q < eol && *q != '{' && *q != ' ' && *q != '\t')
			q++;
		nlen = (size_t)(q - name);
		if (nlen == 0)
			goto bad;
		if (q < eol && *q == '{') {
			/* label values may contain '}' inside quotes */
			bool inq = false;
			for (q++; q < eol; q++) {
				if (*q == '\\' && inq && q + 1 < eol)
					q++;
				else if (*q == '"')
					inq = !inq;
				else if (*q == '}' && !inq)
					break;
			}
			if (q >= eol)
				goto bad;
			q++;
		}
		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		if (q >= eol)
			goto bad;
		v = strtod(q, &end);
		if (end == q || (end < eol && *end != ' ' && *end != '\t' && *end != '\r'))
			goto bad;
		if (add(m, name, nlen, v))
			goto bad;
	next:
		p = *eol ? eol + 1 : eol;
	}
	return 0;
bad:
	hr_metrics_free(m);
	return -EINVAL;
}

double hr_metrics_get(const struct hr_metrics *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->name[i], name))
			return m->value[i];
	return NAN;
}

void hr_metrics_free(struct hr_metrics *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->name[i]);
	free(m->name);
	free(m->value);
	memset(m, 0, sizeof(*m));
}

long hr_http_get(const char *url, int timeout_ms, struct pd_buf *b)
{
	CURL *c = curl_easy_init();
	long code = 0;
	if (!c)
		return -ENOMEM;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, pd_buf_curl_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return code;
}

int hr_metrics_scrape(const char *url, int timeout_ms, struct hr_metrics *m)
{
	struct pd_buf b = {.max = 16u << 20};
	long code;
	int ret = -EIO;
	memset(m, 0, sizeof(*m));
	code = hr_http_get(url, timeout_ms, &b);
	if (code == -ENOMEM)
		return -ENOMEM;
	if (code == 200 && b.p)
		ret = hr_metrics_parse(b.p, m);
	free(b.p);
	return ret;
}

double hr_metric_delta(const struct hr_metrics *before, const struct hr_metrics *after,
                       const char *name)
{
	double a = hr_metrics_get(after, name), b = hr_metrics_get(before, name);
	if (isnan(a))
		a = 0;
	if (isnan(b))
		b = 0;
	return a - b;
}
