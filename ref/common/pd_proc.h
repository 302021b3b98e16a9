/* SPDX-License-Identifier: Apache-2.0 */
/* pd_proc: child processes that never outlive their parent — used by the test services and
 * the scenario runner. Each child runs in its own process group with PR_SET_PDEATHSIG. Also a
 * command's own set-up: its work directory and the signals that stop it. */
#ifndef PD_PROC_H
#define PD_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct pd_proc {
	pid_t pid;       /* 0 when not running */
	char name[64];   /* for messages */
	char log[512];   /* stdout+stderr go here ("" = inherit) */
	int exit_status; /* wait status once reaped, -1 before */
};

/* Starts argv[0] (PATH searched) with stdout/stderr appended to log_path (NULL = inherit) and
 * env_extra ("K=V", NULL-terminated, may be NULL) added to the environment. 0 or -errno. */
int pd_proc_spawn(struct pd_proc *p, const char *name, char *const argv[], char *const env_extra[],
                  const char *log_path);
/* 1 if still running, 0 if it exited (reaped; exit_status set). */
int pd_proc_alive(struct pd_proc *p);
/* SIGTERM to the group, wait up to grace_ms, then SIGKILL; always reaps. Idempotent. */
int pd_proc_stop(struct pd_proc *p, int grace_ms);
/* Waits for exit up to timeout_ms; 0 when exited, -ETIMEDOUT otherwise. */
int pd_proc_wait(struct pd_proc *p, int timeout_ms);

/* Directory of the running executable (for finding sibling binaries in build/bin). */
const char *pd_self_dir(void);

/* A command's work directory in buf: given (--workdir, created with its parents), else a fresh
 * $TMPDIR/STEM.XXXXXX (/tmp when TMPDIR is unset or empty; *made true: the caller's to remove).
 * 0, or -1 after "PROG: ..." on stderr naming what could not be created. */
int pd_workdir(const char *prog, const char *given, const char *stem, char *buf, size_t sz,
               bool *made);
/* SIGINT, SIGTERM and SIGHUP call fn (no SA_RESTART: blocking calls return EINTR); SIGPIPE is
 * ignored, a closed peer shows as EPIPE. */
void pd_stop_signals(void (*fn)(int));

#endif
