/* SPDX-License-Identifier: Apache-2.0 */
/* pd_proc: spawn/stop helpers. Children get their own process group so that stopping one
 * also stops whatever it started (etcd, redis, shells), and die with their parent. */
#include "pd_proc.h"
#include "pd_env.h"
#include "pd_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int pd_proc_spawn(struct pd_proc *p, const char *name, char *const argv[], char *const env_extra[],
                  const char *log_path)
{
	int errpipe[2];
	pid_t pid, parent = getpid();
	int child_err = 0;
	ssize_t r;

	memset(p, 0, sizeof(*p));
	p->exit_status = -1;
	snprintf(p->name, sizeof(p->name), "%s", name ? name : argv[0]);
	if (log_path)
		snprintf(p->log, sizeof(p->log), "%s", log_path);
	if (pipe2(errpipe, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(errpipe[0]);
		close(errpipe[1]);
		return -e;
	}
	if (pid == 0) {
		int e;
		setpgid(0, 0);
		/* the signal comes when the *thread* that forked us ends: spawn from
		 * threads that outlive the child (hr_faults keeps its thread for that) */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		if (log_path) {
			int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd < 0)
				goto fail;
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0) {
			dup2(nul, 0);
			close(nul);
		}
		for (int i = 0; env_extra && env_extra[i]; i++)
			putenv(env_extra[i]);
		execvp(argv[0], argv);
	fail:
		e = errno;
		if (write(errpipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	setpgid(pid, pid);
	close(errpipe[1]);
	do
		r = read(errpipe[0], &child_err, sizeof(child_err));
	while (r < 0 && errno == EINTR);
	close(errpipe[0]);
	if (r == (ssize_t)sizeof(child_err)) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -child_err;
	}
	p->pid = pid;
	return 0;
}

int pd_proc_alive(struct pd_proc *p)
{
	int st;
	pid_t r;
	if (p->pid <= 0)
		return 0;
	r = waitpid(p->pid, &st, WNOHANG);
	if (r == 0)
		return 1;
	if (r == p->pid)
		p->exit_status = st;
	p->pid = 0;
	return 0;
}

int pd_proc_wait(struct pd_proc *p, int timeout_ms)
{
	uint64_t end = pd_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (pd_proc_alive(p)) {
		if (pd_now_ns() >= end)
			return -ETIMEDOUT;
		pd_sleep_ms(10);
	}
	return 0;
}

int pd_proc_stop(struct pd_proc *p, int grace_ms)
{
	if (p->pid <= 0)
		return 0;
	kill(-p->pid, SIGTERM);
	kill(p->pid, SIGTERM);
	if (pd_proc_wait(p, grace_ms) == 0)
		return 0;
	kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
	return pd_proc_wait(p, 5000);
}

const char *pd_self_dir(void)
{
	static char dir[PATH_MAX];
	if (!dir[0]) {
		ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
		if (n <= 0)
			return ".";
		dir[n] = '\0';
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
	}
	return dir;
}

int pd_workdir(const char *prog, const char *given, const char *stem, char *buf, size_t sz,
               bool *made)
{
	const char *tmp = pd_env_str("TMPDIR");
	*made = false;
	if (given) {
		snprintf(buf, sz, "%s", given);
		if (pd_mkdir_p(buf)) {
			fprintf(stderr, "%s: cannot create --workdir %s\n", prog, buf);
			return -1;
		}
		return 0;
	}
	snprintf(buf, sz, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", stem);
	if (!mkdtemp(buf)) {
		fprintf(stderr, "%s: mkdtemp %s: %s\n", prog, buf, strerror(errno));
		return -1;
	}
	*made = true;
	return 0;
}

void pd_stop_signals(void (*fn)(int))
{
	struct sigaction sa = {0};
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
