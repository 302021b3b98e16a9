/* SPDX-License-Identifier: Apache-2.0 */
/* hr_node: the ground floor of the runner library — one process of a deployment: finding its
 * binary, spawning it through its launcher with its log, waiting for its /health, reading its
 * log. Uses no other file of harness/lib (launchers are reached through n->ops). */
#include "hr_node.h"
#include "hr_deploy.h"
#include "hr_launch.h" /* struct hr_launch_ops */
#include "pd_env.h"
#include "pd_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_exec(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

int hr_find_bin(const char *name, char *out, size_t outsz)
{
	const char *bin = pd_env_str("PDKV_BIN");
	if (bin && *bin) {
		snprintf(out, outsz, "%s/%s", bin, name);
		if (is_exec(out))
			return 0;
	}
	snprintf(out, outsz, "%s/%s", pd_self_dir(), name);
	if (is_exec(out))
		return 0;
	return -ENOENT;
}

/* The line of a log that best explains a failed start: the first one saying "error" (the root
 * cause; later lines are consequences), else the last non-empty line. */
void hr_log_tail(const char *path, char *out, size_t sz)
{
	char *buf = NULL, *line, *save = NULL, *last = NULL;
	size_t len = 0;
	out[0] = '\0';
	if (pd_read_file(path, 64 << 20, &buf, &len) || len == 0) {
		free(buf);
		return;
	}
	for (line = strtok_r(buf, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		if (line[0] == '#' || !line[strspn(line, " \t")])
			continue; /* our command-line header, blank lines */
		if (strcasestr(line, "error")) {
			snprintf(out, sz, "%s", line);
			free(buf);
			return;
		}
		last = line;
	}
	if (last)
		snprintf(out, sz, "%s", last);
	free(buf);
}

void hr_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

int hr_spawn(struct hr_deploy *d, struct hr_node *n, const char *name, cJSON *argv_json,
             char *const *env)
{
	int argc = cJSON_GetArraySize(argv_json), i = 0, ret;
	char **argv;
	if (!n->ops) { /* hr_node_place (hr_launch.c) picks the launcher before any spawn */
		snprintf(d->why, sizeof(d->why), "%s: no launcher placed", name);
		return -EINVAL;
	}
	argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!argv)
		return -ENOMEM;
	for (const cJSON *a = argv_json->child; a; a = a->next)
		argv[i++] = a->valuestring;
	if (snprintf(n->proc.log, sizeof(n->proc.log), "%.480s/%.24s.log", d->workdir, name) < 0)
		n->proc.log[0] = '\0';
	snprintf(n->name, sizeof(n->name), "%s", name);
	if (!n->started) { /* kept for a restart fault (it re-runs them, appending to the log) */
		char **keep = NULL;
		size_t ne = 0;
		while (env && env[ne])
			ne++;
		if (env && (keep = calloc(ne + 1, sizeof(*keep))))
			for (size_t k = 0; k < ne; k++)
				keep[k] = strdup(env[k]);
		cJSON_Delete(n->spawn_argv);
		hr_env_free(n->spawn_env);
		n->spawn_argv = cJSON_Duplicate(argv_json, 1);
		n->spawn_env = keep;
	}
	/* the command line heads the log: a person can re-run it by hand */
	{
		FILE *f = fopen(n->proc.log, n->started ? "a" : "w");
		if (f) {
			fprintf(f, "# %s%s", n->rhost[0] ? "on " : "", n->rhost[0] ? n->rhost : "");
			fprintf(f, "%s", n->rhost[0] ? ": " : "");
			for (i = 0; env && env[i]; i++)
				fprintf(f, "%s ", env[i]);
			for (i = 0; i < argc; i++)
				fprintf(f, i ? " '%s'" : "%s", argv[i]);
			fprintf(f, "\n");
			fclose(f);
		}
	}
	d->why[0] = '\0';
	ret = n->ops->spawn(d, n, argv, env, d->why, sizeof(d->why));
	free(argv);
	if (ret == 0)
		n->started = true;
	return ret;
}

int hr_node_alive(struct hr_deploy *d, struct hr_node *n)
{
	return n->ops ? n->ops->alive(d, n) : 0;
}

const char *hr_node_log(struct hr_deploy *d, struct hr_node *n)
{
	if (n->ops)
		n->ops->fetch_log(d, n);
	return n->proc.log;
}

/* A node's health: its /health answers 200, or (no URL: redis) its port accepts. */
static bool node_healthy(const struct hr_node *x)
{
	int fd;
	if (x->health_url[0])
		return pd_http_status(x->health_url, 500) == 200;
	fd = pd_tcp_connect(x->host, x->port, 500);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* Waits until every node's health_url answers 200; a node that exits fails at once. */
int hr_wait_healthy(struct hr_deploy *d, struct hr_node **nodes, size_t n, double deadline,
                    volatile sig_atomic_t *stop, char *why, size_t sz)
{
	bool *up = calloc(n, sizeof(bool));
	size_t left = n;
	unsigned rounds = 0;
	int ret = 0;
	if (!up)
		return -ENOMEM;
	while (left) {
		for (size_t i = 0; i < n; i++) {
			struct hr_node *x = nodes[i];
			if (up[i])
				continue;
			if (node_healthy(x)) {
				up[i] = true;
				left--;
				continue;
			}
			if (rounds % x->ops->alive_every == 0 && !hr_node_alive(d, x)) {
				char how[64], tail[700];
				x->ops->describe_exit(x, how, sizeof(how));
				hr_log_tail(hr_node_log(d, x), tail, sizeof(tail));
				snprintf(why, sz, "%s %s during startup: %s", x->name, how,
				         tail[0] ? tail : "(empty log)");
				ret = -ECHILD;
				goto out;
			}
		}
		if (!left)
			break;
		if (stop && *stop) {
			snprintf(why, sz, "interrupted while waiting for /health");
			ret = -EINTR;
			goto out;
		}
		if (pd_now_s() > deadline) {
			size_t k = 0;
			char names[200] = "";
			for (size_t i = 0; i < n; i++)
				if (!up[i] && k++ < 4) {
					strncat(names, k > 1 ? ", " : "",
					        sizeof(names) - strlen(names) - 1);
					strncat(names, nodes[i]->name,
					        sizeof(names) - strlen(names) - 1);
				}
			snprintf(why, sz, "timed out waiting for /health of %s", names);
			ret = -ETIMEDOUT;
			goto out;
		}
		pd_sleep_ms(50);
		rounds++;
	}
out:
	free(up);
	return ret;
}
