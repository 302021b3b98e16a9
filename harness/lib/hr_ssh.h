/* SPDX-License-Identifier: Apache-2.0 */
/* hr_ssh: starting a scenario's processes on other machines through plain OpenSSH — hosts.txt,
 * one ControlMaster connection per host, remote start / alive / stop by process group, scp. */
#ifndef HR_SSH_H
#define HR_SSH_H

#include <stdbool.h>
#include <stddef.h>

#define HR_HOSTS_MAX    16
#define HR_HOST_ENV_MAX 16

/* One line of hosts.txt:   NAME [USER@]ADDRESS [port=N] [pdkv=PATH] [KEY=VALUE ...]
 * '#' starts a comment; KEY=VALUE pairs other than port/pdkv are the remote environment. */
struct hr_sshhost {
	char name[32];
	char user[32]; /* "" = ssh's default */
	char addr[128];
	int port;       /* 0 = 22 */
	char pdkv[256]; /* the pdkv command there; default "pdkv" (PATH) */
	char env[HR_HOST_ENV_MAX][256];
	size_t nenv;
	int line; /* in hosts.txt, for messages */
};

struct hr_hosts {
	char path[512];
	size_t n;
	struct hr_sshhost h[HR_HOSTS_MAX];
};

/* Parses hosts.txt text; -1 with err = "PATH:LINE: what is wrong, expected ...". */
int hr_hosts_parse(const char *path, const char *text, struct hr_hosts *hs, char *err, size_t sz);
int hr_hosts_load(const char *path, struct hr_hosts *hs, char *err, size_t sz);
const struct hr_sshhost *hr_hosts_find(const struct hr_hosts *hs, const char *name);

/* One launcher: its options and the state it must clean up. */
struct hr_ssh {
	char dir[512];      /* known_hosts */
	char ctl[64];       /* ControlPath sockets: a short private dir (sun_path is 108 bytes) */
	char identity[512]; /* -i KEY (IdentitiesOnly), "" = ssh's own choice */
	int connect_timeout_s;
	bool masters[HR_HOSTS_MAX]; /* a ControlMaster may be running for hosts->h[i] */
	const struct hr_hosts *hosts;
};

/* dir: created if missing, holds UserKnownHostsFile (StrictHostKeyChecking=accept-new: a new
 * key is recorded on first contact, a changed one refused) and the control sockets. */
int hr_ssh_init(struct hr_ssh *s, const struct hr_hosts *hosts, const char *dir,
                const char *identity, int connect_timeout_s);
/* Runs a shell command line on host; its exit status, or -errno. out gets stdout+stderr.
 * Connection and authentication failures come back as -EHOSTUNREACH / -EACCES with err
 * naming the host and ssh's reason. */
int hr_ssh_run(struct hr_ssh *s, const char *host, const char *cmdline, char *out, size_t outsz,
               int timeout_ms, char *err, size_t errsz);
/* Reachable, authenticated, and its pdkv command runs (`pdkv --help`): 0, or -errno and err. */
int hr_ssh_check(struct hr_ssh *s, const char *host, char *err, size_t errsz);
/* Starts argv in remote_dir (created) with the host's environment plus env (NULL-terminated
 * "K=V", may be NULL), detached (setsid nohup) with its output in remote_dir/NAME.log; the
 * remote pid (= its process group) into *pid. */
int hr_ssh_start(struct hr_ssh *s, const char *host, const char *remote_dir, const char *name,
                 const char *const argv[], const char *const env[], int *pid, char *err,
                 size_t errsz);
/* 1 running, 0 gone, -errno when the host could not be asked. */
int hr_ssh_alive(struct hr_ssh *s, const char *host, int pid);
/* SIGTERM to the remote process group, up to grace_ms, then SIGKILL. 0 when it is gone. */
int hr_ssh_stop(struct hr_ssh *s, const char *host, int pid, int grace_ms);
/* scp one file there / back. */
int hr_ssh_put(struct hr_ssh *s, const char *host, const char *local, const char *remote, char *err,
               size_t errsz);
int hr_ssh_get(struct hr_ssh *s, const char *host, const char *remote, const char *local, char *err,
               size_t errsz);
/* Ends every ControlMaster (ssh -O exit) and removes the control sockets. Idempotent. */
void hr_ssh_close(struct hr_ssh *s);
/* Single-quotes s for a POSIX shell into out; -1 when it does not fit. */
int hr_shell_quote(const char *s, char *out, size_t sz);

#endif
