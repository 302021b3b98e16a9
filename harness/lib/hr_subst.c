/* SPDX-License-Identifier: Apache-2.0 */
/* hr_subst: ${VAR} templates in scenario configs (ports, hosts, metadata connection string) and
 * the choice of free port blocks that a V0 pipe and its +100 twin can both use. */
#include "hr.h"
#include "pd_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

int hr_vars_set(struct hr_vars *v, const char *name, const char *value)
{
	for (size_t i = 0; i < v->n; i++) {
		if (!strcmp(v->name[i], name)) {
			snprintf(v->value[i], sizeof(v->value[i]), "%s", value);
			return 0;
		}
	}
	if (v->n >= HR_MAX_VARS || strlen(name) >= sizeof(v->name[0]))
		return -ENOSPC;
	snprintf(v->name[v->n], sizeof(v->name[0]), "%s", name);
	snprintf(v->value[v->n], sizeof(v->value[0]), "%s", value);
	v->n++;
	return 0;
}

const char *hr_vars_get(const struct hr_vars *v, const char *name)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->name[i], name))
			return v->value[i];
	return NULL;
}

bool hr_var_known(const char *name)
{
	static const char *fixed[] = {"PREFILL_HOST", "DECODE_HOST",       "PROXY_HOST",
	                              "METADATA",     "METADATA_HOSTPORT", "WORKDIR"};
	for (size_t i = 0; i < PD_ARRAY_SIZE(fixed); i++)
		if (!strcmp(name, fixed[i]))
			return true;
	if (strncmp(name, "PORT_", 5) || !name[5])
		return false;
	for (const char *p = name + 5; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

int hr_vars_scan(const char *s, int (*fn)(const char *name, void *ud), void *ud)
{
	char name[64];
	for (const char *p = s; (p = strstr(p, "${"));) {
		const char *e = strchr(p + 2, '}');
		size_t len;
		int r;
		if (!e)
			return -1;
		len = (size_t)(e - p - 2);
		if (len == 0 || len >= sizeof(name))
			return -1;
		memcpy(name, p + 2, len);
		name[len] = '\0';
		r = fn(name, ud);
		if (r)
			return r;
		p = e + 1;
	}
	return 0;
}

char *hr_subst(const struct hr_vars *v, const char *s, char *err, size_t errsz)
{
	size_t cap = strlen(s) + 256, len = 0;
	char *out = malloc(cap);
	const char *p = s;
	if (!out)
		return NULL;
	while (*p) {
		const char *e, *val;
		char name[64];
		size_t n;
		if (p[0] != '$' || p[1] != '{') {
			if (len + 2 > cap) {
				char *t = realloc(out, cap *= 2);
				if (!t)
					goto fail;
				out = t;
			}
			out[len++] = *p++;
			continue;
		}
		e = strchr(p + 2, '}');
		n = e ? (size_t)(e - p - 2) : 0;
		if (!e || n == 0 || n >= sizeof(name)) {
			snprintf(err, errsz, "unterminated or empty ${...} in \"%s\"", s);
			goto fail;
		}
		memcpy(name, p + 2, n);
		name[n] = '\0';
		val = hr_vars_get(v, name);
		if (!val) {
			snprintf(err, errsz, "${%s} has no value in this scenario", name);
			goto fail;
		}
		n = strlen(val);
		while (len + n + 2 > cap) {
			char *t = realloc(out, cap *= 2);
			if (!t)
				goto fail;
			out = t;
		}
		memcpy(out + len, val, n);
		len += n;
		p = e + 1;
	}
	out[len] = '\0';
	return out;
fail:
	free(out);
	return NULL;
}

cJSON *hr_subst_json(const struct hr_vars *v, const cJSON *tmpl, char *err, size_t errsz)
{
	cJSON *copy = cJSON_Duplicate(tmpl, 1);
	cJSON *stack[64];
	int sp = 0;
	if (!copy)
		return NULL;
	stack[sp++] = copy;
	while (sp > 0) {
		cJSON *node = stack[--sp];
		for (cJSON *c = node->child; c; c = c->next) {
			if (cJSON_IsString(c)) {
				char *s = hr_subst(v, c->valuestring, err, errsz);
				if (!s) {
					cJSON_Delete(copy);
					return NULL;
				}
				free(c->valuestring);
				c->valuestring = s;
			} else if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && sp < 64) {
				stack[sp++] = c;
			}
		}
	}
	return copy;
}

static bool port_free(const char *host, int port)
{
	struct sockaddr_in sa = {0};
	int fd, ok;
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return false;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	/* no SO_REUSEADDR: a port in TIME_WAIT is not offered */
	ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* Blocks come from 20000..29999: below the kernel's ephemeral range (where pd_free_port's ports
 * come from) and away from the engine's random RPC range 15000..17000. */
int hr_pick_port_block(const char *host, int span)
{
	static unsigned seed;
	if (!seed)
		seed = (unsigned)getpid() ^ (unsigned)pd_now_ns();
	if (!host || !*host)
		host = "127.0.0.1";
	for (int tries = 0; tries < 200; tries++) {
		int base, i;
		seed = seed * 1103515245u + 12345u;
		base = 20000 + (int)((seed >> 8) % 9700u);
		for (i = 0; i < span; i++)
			if (!port_free(host, base + i) || !port_free("0.0.0.0", base + i) ||
			    !port_free(host, base + 100 + i) ||
			    !port_free("0.0.0.0", base + 100 + i))
				break;
		if (i == span)
			return base;
	}
	return -EADDRNOTAVAIL;
}
