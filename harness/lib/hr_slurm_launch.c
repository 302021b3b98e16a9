/* SPDX-License-Identifier: Apache-2.0 */
/* hr_slurm_launch: the Slurm launcher's ops — each node one srun job step on its Slurm node,
 * its output streamed into the run's work dir, ended by scancel of its step id. */
#include "hr_deploy.h"
#include "hr_launch.h"
#include "hr_netns.h"
#include "hr_slurm.h"
#include "pd_env.h"
#include "pd_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLURM_CMD_MS 30000 /* squeue, scancel */

int hr_slurm_steps(const struct hr_slurm *s, const char *name_prefix, char *out, size_t sz)
{
	const char *argv[] = {"squeue", "-h", "-s", "-j", s->job, "-o", "%i %j", NULL};
	char list[8192], *save = NULL;
	int found = 0;
	out[0] = '\0';
	if (!s->job[0])
		return 0;
	int ret = hr_cmd_run(argv, list, sizeof(list), SLURM_CMD_MS);
	if (ret)
		return ret < 0 ? ret : -EIO;
	for (char *t = strtok_r(list, "\r\n", &save); t; t = strtok_r(NULL, "\r\n", &save)) {
		char id[64], name[200];
		if (sscanf(t, "%63s %199s", id, name) != 2 ||
		    strncmp(name, name_prefix, strlen(name_prefix)))
			continue;
		if (strlen(out) + strlen(id) + 2 >= sz)
			break;
		if (found++)
			strcat(out, ",");
		strcat(out, id);
	}
	return found;
}

int hr_slurm_cancel(const char *ids, const char *sig)
{
	char flag[48];
	const char *argv[] = {"scancel", flag, ids, NULL};
	char out[1024];
	snprintf(flag, sizeof(flag), "--signal=%s", sig ? sig : "KILL");
	return ids[0] ? hr_cmd_run(argv, out, sizeof(out), SLURM_CMD_MS) : 0;
}

/* In the step: make its work dir on the node, write the V0 mooncake.json there (its text is
 * passed along, no shared file system is assumed), then become the command. */
static const char step_script[] =
    "d=$1; j=$2; shift 2; mkdir -p \"$d\" && cd \"$d\" || exit 126; "
    "if [ -n \"$j\" ]; then printf '%s\\n' \"$j\" >mooncake.json || exit 126; fi; exec \"$@\"";

struct words {
	char *v[200];
	size_t n;
};

static void push(struct words *w, char *s)
{
	if (s && w->n + 1 < PD_ARRAY_SIZE(w->v))
		w->v[w->n++] = s;
	w->v[w->n] = NULL;
}

static bool has_key(char *const env[], const char *key)
{
	size_t l = strlen(key);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], key, l) && env[i][l] == '=')
			return true;
	return false;
}

/* the step's name: the run's prefix and the node's name (one scenario at a time) */
static void step_name(const struct hr_deploy *d, const struct hr_node *n, char *out, size_t sz)
{
	snprintf(out, sz, "%s%s", d->rem->slurm->prefix, n->name);
}

/* the text of the V0 mooncake.json the env points at, or "" */
static char *mooncake_text(char *const env[])
{
	static const char key[] = "MOONCAKE_CONFIG_PATH=";
	char *text = NULL;
	size_t len = 0;
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], key, sizeof(key) - 1) &&
		    pd_read_file(env[i] + sizeof(key) - 1, 1 << 20, &text, &len) == 0)
			return text;
	return strdup("");
}

/* argv[0]: this host's path of the program; a bare pdkv-* name (the metadata server's) is
 * found here too. The nodes see the same path (a shared install, or the package's). */
static char *program(char *const argv0)
{
	const char *bin = pd_env_str("PDKV_BIN");
	char exe[600];
	if (strchr(argv0, '/') || strncmp(argv0, "pdkv-", 5))
		return strdup(argv0);
	snprintf(exe, sizeof(exe), "%s/%s", bin ? bin : pd_self_dir(), argv0);
	return strdup(access(exe, X_OK) == 0 ? exe : argv0);
}

static int slurm_spawn(struct hr_deploy *d, struct hr_node *n, char *const argv[],
                       char *const env[], char *err, size_t errsz)
{
	struct hr_slurm *s = d->rem->slurm;
	struct words w = {.n = 0};
	const char *addr = n->host;
	char *own[16] = {0}, *json = mooncake_text(env), name[128];
	size_t no = 0;
	int ret;
	step_name(d, n, name, sizeof(name));
	for (size_t i = 0; i < s->n; i++) /* the node's own address, whatever the role's host */
		if (!strcmp(s->node[i], n->rhost))
			addr = s->addr[i];
	push(&w, "srun");
	push(&w, own[no++] = pd_asprintf("--jobid=%s", s->job));
	push(&w, "--overlap"); /* beside the other roles' steps on a node, whatever they hold */
	push(&w, "--nodes=1");
	push(&w, "--ntasks=1");
	push(&w, own[no++] = pd_asprintf("--nodelist=%s", n->rhost));
	push(&w, own[no++] = pd_asprintf("--job-name=%s", name));
	push(&w, "--kill-on-bad-exit=1");
	push(&w, "--quiet");
	push(&w, "/bin/sh");
	push(&w, "-c");
	push(&w, (char *)step_script);
	push(&w, "sh");
	push(&w, n->rdir);
	push(&w, json);
	push(&w, "env");
	/* the runner's own (srun passes its environment on) must not pin a node to loopback */
	if (!has_key(env, "VLLM_HOST_IP"))
		push(&w, own[no++] = pd_asprintf("VLLM_HOST_IP=%s", addr));
	if (!has_key(env, "MC_TCP_BIND_ADDRESS"))
		push(&w, own[no++] = pd_asprintf("MC_TCP_BIND_ADDRESS=%s", addr));
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], "MOONCAKE_CONFIG_PATH=", 21))
			push(&w, env[i]);
		else
			push(&w, own[no++] =
			             pd_asprintf("MOONCAKE_CONFIG_PATH=%s/mooncake.json", n->rdir));
	push(&w, own[no++] = program(argv[0]));
	for (size_t i = 1; argv[i]; i++)
		push(&w, argv[i]);
	char log[sizeof(n->proc.log)]; /* pd_proc_spawn copies it into n->proc.log */
	snprintf(log, sizeof(log), "%s", n->proc.log);
	ret = pd_proc_spawn(&n->proc, n->name, w.v, NULL, log);
	if (ret)
		snprintf(err, errsz, "cannot start srun for %s: %s", n->name, strerror(-ret));
	else
		n->rpid = 1; /* a step of this node may exist until stop cancels it */
	for (size_t i = 0; i < no; i++)
		free(own[i]);
	free(json);
	return ret;
}

static int slurm_alive(struct hr_deploy *d, struct hr_node *n)
{
	(void)d;
	return pd_proc_alive(&n->proc); /* srun stays until its step ends */
}

/* waits up to ms for srun to end (its step has then ended) */
static bool srun_gone_within(struct hr_node *n, int ms)
{
	for (int t = 0; t < ms; t += 50) {
		if (!pd_proc_alive(&n->proc))
			return true;
		pd_sleep_ms(50);
	}
	return !pd_proc_alive(&n->proc);
}

/* scancel of the node's step: SIGTERM, then SIGKILL after grace_ms; then srun itself */
static void slurm_stop(struct hr_deploy *d, struct hr_node *n, int grace_ms)
{
	char name[128], ids[1024];
	step_name(d, n, name, sizeof(name));
	if (n->rpid && d->rem->slurm->open &&
	    hr_slurm_steps(d->rem->slurm, name, ids, sizeof(ids)) > 0) {
		hr_slurm_cancel(ids, "TERM");
		if (!srun_gone_within(n, grace_ms)) {
			hr_slurm_cancel(ids, "KILL");
			srun_gone_within(n, 5000);
		}
	}
	pd_proc_stop(&n->proc, 1000); /* srun forwards a SIGTERM to its step as well */
	n->rpid = 0;
}

/* a process fault: the signal goes to the node's step (scancel), so a SIGKILL reaches the
 * process on its node and srun then ends with the step */
static void slurm_signal(struct hr_deploy *d, struct hr_node *n, int sig)
{
	char name[128], ids[1024];
	step_name(d, n, name, sizeof(name));
	if (d->rem->slurm->open && hr_slurm_steps(d->rem->slurm, name, ids, sizeof(ids)) > 0 &&
	    hr_slurm_cancel(ids, sig == SIGKILL   ? "KILL"
	                         : sig == SIGTERM ? "TERM"
	                                          : "INT") == 0)
		return;
	kill(-n->proc.pid, sig); /* no step found: srun at least */
}

static void slurm_fetch(struct hr_deploy *d, struct hr_node *n)
{
	(void)d; /* srun streams the step's output into proc.log as it comes */
	(void)n;
}

static void slurm_describe(const struct hr_node *n, char *out, size_t sz)
{
	int st = n->proc.exit_status;
	if (st >= 0 && WIFEXITED(st))
		snprintf(out, sz, "its step on node %s ended (srun exit status %d)", n->rhost,
		         WEXITSTATUS(st));
	else if (st >= 0 && WIFSIGNALED(st))
		snprintf(out, sz, "srun of its step on node %s killed by signal %d", n->rhost,
		         WTERMSIG(st));
	else
		snprintf(out, sz, "its step on node %s ended", n->rhost);
}

const struct hr_launch_ops hr_launch_slurm = {
    .name = "slurm",
    .spawn = slurm_spawn,
    .alive = slurm_alive,
    .stop = slurm_stop,
    .fetch_log = slurm_fetch,
    .describe_exit = slurm_describe,
    .alive_every = 1,
    .signal = slurm_signal,
};
