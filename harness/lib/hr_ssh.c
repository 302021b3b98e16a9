/* SPDX-License-Identifier: Apache-2.0 */
/* hr_ssh: hosts.txt parsing and a launcher over plain ssh/scp (BatchMode, one ControlMaster per
 * host, own timeouts): remote start under setsid nohup, alive, stop by process group, copies. */
#include "hr_ssh.h"
#include "pd_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- hosts.txt ---- */

static bool word_ok(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return true;
}

static int parse_opt(struct hr_sshhost *h, const char *tok, char *why, size_t sz)
{
	const char *eq = strchr(tok, '=');
	size_t klen = eq ? (size_t)(eq - tok) : 0;
	if (!eq || klen == 0) {
		pd_seterr(why, sz, "\"%s\": expected KEY=VALUE (port=N, pdkv=PATH or environment)",
		          tok);
		return -1;
	}
	if (klen == 4 && !strncmp(tok, "port", 4)) {
		char *end;
		long p = strtol(eq + 1, &end, 10);
		if (*end || end == eq + 1 || p < 1 || p > 65535) {
			pd_seterr(why, sz, "port \"%s\": expected 1..65535", eq + 1);
			return -1;
		}
		h->port = (int)p;
	} else if (klen == 4 && !strncmp(tok, "pdkv", 4)) {
		if (!eq[1] || strlen(eq + 1) >= sizeof(h->pdkv)) {
			pd_seterr(why, sz, "pdkv=: expected the path of pdkv on that host");
			return -1;
		}
		snprintf(h->pdkv, sizeof(h->pdkv), "%s", eq + 1);
	} else {
		char key[64];
		snprintf(key, sizeof(key), "%.*s", (int)klen, tok);
		if (klen >= sizeof(key) || isdigit((unsigned char)key[0]) || !word_ok(key, "_")) {
			pd_seterr(why, sz,
			          "environment name \"%s\": expected [A-Za-z_][A-Za-z0-9_]*", key);
			return -1;
		}
		if (h->nenv == HR_HOST_ENV_MAX || strlen(tok) >= sizeof(h->env[0])) {
			pd_seterr(why, sz, "\"%s\": at most %d variables of < 256 bytes", tok,
			          HR_HOST_ENV_MAX);
			return -1;
		}
		snprintf(h->env[h->nenv++], sizeof(h->env[0]), "%s", tok);
	}
	return 0;
}

static int parse_dest(struct hr_sshhost *h, const char *tok, char *why, size_t sz)
{
	const char *at = strchr(tok, '@');
	const char *addr = at ? at + 1 : tok;
	if (at) {
		size_t ul = (size_t)(at - tok);
		if (ul == 0 || ul >= sizeof(h->user)) {
			pd_seterr(why, sz, "\"%s\": expected [USER@]ADDRESS", tok);
			return -1;
		}
		snprintf(h->user, sizeof(h->user), "%.*s", (int)ul, tok);
		if (!word_ok(h->user, "._-")) {
			pd_seterr(why, sz, "user \"%s\": expected letters, digits . _ -", h->user);
			return -1;
		}
	}
	/* a host name, IPv4 or IPv6 address; never an ssh option ("-oProxyCommand=...") */
	if (!*addr || addr[0] == '-' || strlen(addr) >= sizeof(h->addr) || !word_ok(addr, ".-:")) {
		pd_seterr(why, sz, "address \"%s\": expected a host name or IP address", addr);
		return -1;
	}
	snprintf(h->addr, sizeof(h->addr), "%s", addr);
	return 0;
}

static int parse_line(struct hr_hosts *hs, char *line, int lineno, char *why, size_t sz)
{
	char *save = NULL, *tok;
	struct hr_sshhost *h;
	int i = 0;
	line[strcspn(line, "#")] = '\0';
	tok = strtok_r(line, " \t\r", &save);
	if (!tok)
		return 0;
	if (hs->n == HR_HOSTS_MAX) {
		pd_seterr(why, sz, "more than %d hosts", HR_HOSTS_MAX);
		return -1;
	}
	h = &hs->h[hs->n];
	memset(h, 0, sizeof(*h));
	h->line = lineno;
	snprintf(h->pdkv, sizeof(h->pdkv), "pdkv");
	for (; tok; tok = strtok_r(NULL, " \t\r", &save), i++) {
		int r = 0;
		if (i == 0) {
			if (strlen(tok) >= sizeof(h->name) || !word_ok(tok, "_-")) {
				pd_seterr(why, sz, "host name \"%s\": expected letters, digits _ -",
				          tok);
				return -1;
			}
			if (hr_hosts_find(hs, tok)) {
				pd_seterr(why, sz, "host \"%s\" listed twice", tok);
				return -1;
			}
			snprintf(h->name, sizeof(h->name), "%s", tok);
		} else if (i == 1) {
			r = parse_dest(h, tok, why, sz);
		} else {
			r = parse_opt(h, tok, why, sz);
		}
		if (r)
			return -1;
	}
	if (i < 2) {
		pd_seterr(why, sz, "host \"%s\" has no address: expected NAME [USER@]ADDRESS ...",
		          h->name);
		return -1;
	}
	hs->n++;
	return 0;
}

int hr_hosts_parse(const char *path, const char *text, struct hr_hosts *hs, char *err, size_t sz)
{
	char *copy = strdup(text ? text : ""), *line, *save = NULL, why[400];
	int lineno = 0, ret = 0;
	memset(hs, 0, sizeof(*hs));
	snprintf(hs->path, sizeof(hs->path), "%s", path);
	if (!copy)
		return -1;
	/* strtok_r would skip empty lines and shift the numbers: split by hand */
	for (line = copy; line && ret == 0; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		lineno++;
		if (parse_line(hs, line, lineno, why, sizeof(why))) {
			pd_seterr(err, sz, "%s:%d: %s", path, lineno, why);
			ret = -1;
		}
	}
	free(copy);
	if (ret == 0 && hs->n == 0) {
		pd_seterr(err, sz, "%s: no hosts (expected lines NAME [USER@]ADDRESS ...)", path);
		ret = -1;
	}
	return ret;
}

int hr_hosts_load(const char *path, struct hr_hosts *hs, char *err, size_t sz)
{
	char *buf = NULL;
	size_t len = 0;
	int ret = pd_read_file(path, 1 << 20, &buf, &len);
	if (ret) {
		pd_seterr(err, sz, "%s: cannot read: %s", path, strerror(-ret));
		free(buf);
		return -1;
	}
	ret = hr_hosts_parse(path, buf, hs, err, sz);
	free(buf);
	return ret;
}

const struct hr_sshhost *hr_hosts_find(const struct hr_hosts *hs, const char *name)
{
	for (size_t i = 0; name && i < hs->n; i++)
		if (!strcmp(hs->h[i].name, name))
			return &hs->h[i];
	return NULL;
}

int hr_shell_quote(const char *s, char *out, size_t sz)
{
	size_t n = 0;
	if (sz < 3)
		return -1;
	out[n++] = '\'';
	for (; *s; s++) {
		const char *piece = *s == '\'' ? "'\\''" : NULL;
		size_t pl = piece ? 4 : 1;
		if (n + pl + 2 > sz)
			return -1;
		if (piece)
			memcpy(out + n, piece, pl);
		else
			out[n] = *s;
		n += pl;
	}
	out[n++] = '\'';
	out[n] = '\0';
	return 0;
}
