/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_drift_run: finds vllm_extract.py and the vllm package python3 sees, and runs the extractor
 * as a child with a deadline and a bounded output, parsing its JSON. */
#include "cfg_drift.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pd_env.h"
#include "pd_proc.h"

#define OUT_MAX (16u << 20)

const char *cfg_drift_extractor(char *buf, size_t sz)
{
	const char *env = pd_env_str("PDKV_VLLM_EXTRACT");
	const char *rel[] = {"vllm_extract.py", "../share/pdkv/vllm_extract.py",
	                     "../../harness/drift/vllm_extract.py"};
	if (env && *env)
		return snprintf(buf, sz, "%s", env) < (int)sz ? buf : NULL;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
		if (snprintf(buf, sz, "%s/%s", pd_self_dir(), rel[i]) < (int)sz &&
		    access(buf, R_OK) == 0)
			return buf;
	return NULL;
}

static const char *python(void)
{
	const char *p = pd_env_str("PDKV_PYTHON"); /* default python3 */
	return p && *p ? p : "python3";
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Runs argv with stdout captured (stderr inherited, stdin /dev/null) for at most deadline_ms.
 * 0 with *out (NUL-terminated) and *status (wait status), or -1 with err. */
static int run_capture(char *const argv[], int deadline_ms, char **out, int *status, char *err,
                       size_t errsz)
{
	int fd[2];
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	long end = now_ms() + deadline_ms;
	bool killed = false;
	pid_t pid;

	if (!buf || pipe2(fd, O_CLOEXEC)) {
		free(buf);
		snprintf(err, errsz, "cannot start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		free(buf);
		snprintf(err, errsz, "cannot start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		setpgid(0, 0);
		dup2(fd[1], 1);
		if (nul >= 0)
			dup2(nul, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	for (;;) {
		struct pollfd p = {fd[0], POLLIN, 0};
		long left = end - now_ms();
		if (left <= 0 || len > OUT_MAX) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				break;
			buf = nb;
		}
		ssize_t n = read(fd[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	buf[len] = 0;
	if (killed) {
		free(buf);
		snprintf(err, errsz, "%s did not finish within %d ms (or printed over %u MiB)",
		         argv[0], deadline_ms, OUT_MAX >> 20);
		return -1;
	}
	*out = buf;
	return 0;
}

int cfg_drift_default_path(char *buf, size_t sz, char *err, size_t errsz)
{
	/* find_spec locates the package without running vllm/__init__.py */
	char *argv[] = {(char *)python(), "-c",
	                "import importlib.util as u, os; s = u.find_spec('vllm'); "
	                "print(os.path.dirname(s.origin) if s and s.origin else '')",
	                NULL};
	char *out = NULL;
	int st = 0;
	if (run_capture(argv, 20000, &out, &st, err, errsz))
		return -1;
	out[strcspn(out, "\n")] = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		snprintf(err, errsz,
		         "%s not found (install python3, or give --vllm PATH with "
		         "PDKV_PYTHON pointing at a Python 3)",
		         python());
		free(out);
		return -1;
	}
	if (!*out) {
		snprintf(err, errsz,
		         "%s cannot find a vllm package (give --vllm PATH: the vllm "
		         "package directory, a source checkout or a wheel)",
		         python());
		free(out);
		return -1;
	}
	snprintf(buf, sz, "%s", out);
	free(out);
	return 0;
}

int cfg_drift_extract(const char *path, int deadline_ms, cJSON **out, char *err, size_t errsz)
{
	char script[PATH_MAX];
	char *text = NULL;
	int st = 0;
	cJSON *j;

	*out = NULL;
	if (!cfg_drift_extractor(script, sizeof(script))) {
		snprintf(err, errsz,
		         "vllm_extract.py not found beside %s, in ../share/pdkv/ or in "
		         "the source tree (set PDKV_VLLM_EXTRACT)",
		         pd_self_dir());
		return -1;
	}
	char *argv[] = {(char *)python(), script, "--root", (char *)path, NULL};
	if (run_capture(argv, deadline_ms, &text, &st, err, errsz))
		return -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		snprintf(err, errsz,
		         "%s not found (vllm-drift reads vLLM with Python's ast module; "
		         "install python3 or set PDKV_PYTHON)",
		         python());
		free(text);
		return -1;
	}
	j = cJSON_Parse(text);
	free(text);
	if (!j || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		snprintf(err, errsz,
		         "vllm_extract.py on %s printed no JSON (exit status %d; see its "
		         "message above)",
		         path, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	if (cJSON_IsString(e)) {
		snprintf(err, errsz, "%s", e->valuestring);
		cJSON_Delete(j);
		return -1;
	}
	*out = j;
	return 0;
}

int cfg_drift_summary(const char *path, const char *version, int deadline_ms, char *out, size_t sz)
{
	char dir[PATH_MAX], err[512];
	cJSON *tree = NULL;
	struct cfg_drift d;
	int v;

	if (!path) {
		if (cfg_drift_default_path(dir, sizeof(dir), err, sizeof(err))) {
			snprintf(out, sz, "cannot see your vLLM: %s", err);
			return -1;
		}
		path = dir;
	}
	if (cfg_drift_extract(path, deadline_ms, &tree, err, sizeof(err))) {
		snprintf(out, sz, "cannot read vLLM at %s: %s", path, err);
		return -1;
	}
	if (cfg_drift_compare(tree, version, -1, &d, err, sizeof(err))) {
		cJSON_Delete(tree);
		snprintf(out, sz, "cannot compare vLLM at %s: %s", path, err);
		return -1;
	}
	cfg_drift_line(&d, out, sz);
	v = (int)d.verdict;
	cfg_drift_free(&d);
	cJSON_Delete(tree);
	return v;
}
