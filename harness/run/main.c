/* pdkv-run (`pdkv run`): runs scenario files — the default suite in scenarios/ when none are
 * named — and reports PASS / FAIL / NOTRUN per scenario, plus --json and --junit files. */
#include "lib/hr.h"
#include "pd_log.h"
#include "pd_proc.h"
#include "pd_util.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXIT_SKIP 77

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

struct args {
	const char *junit, *json, *workdir, *filter;
	bool strict, keep, list, verbose;
	double timeout_s;
	char **files;
	int nfiles;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: pdkv run [options] [SCENARIO.json|DIR ...]\n"
	    "Runs 1P1D scenarios (prefill + decode stand-ins, proxy, metadata service) and\n"
	    "checks that decode really reused the KV prefill produced. No argument: the default\n"
	    "suite ($PDKV_SCENARIOS, scenarios/ of the build or PREFIX/share/pdkv, "
	    "./scenarios).\n\n"
	    "  --list           list the scenarios and their checks, run nothing\n"
	    "  --filter SUBSTR  only scenarios whose name contains SUBSTR\n"
	    "  --json FILE      write the results as one JSON document\n"
	    "  --junit FILE     write JUnit XML (NOTRUN = skipped)\n"
	    "  --strict         NOTRUN counts as a failure\n"
	    "  --timeout S      per-scenario limit in seconds (default: scenario's, else 120)\n"
	    "  --workdir DIR    where per-scenario work dirs go (default $TMPDIR/pdkv-run.XXXXXX)\n"
	    "  --keep           keep every work dir (failed ones are always kept)\n"
	    "  -v               show every check's numbers, process logs' location\n\n"
	    "exit: 0 none failed, 1 any failed, 77 nothing could run, 2 usage error\n");
}

static int parse_args(int argc, char **argv, struct args *a)
{
	memset(a, 0, sizeof(*a));
	a->files = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->files)
		return 2;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char **val = NULL;
		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(s, "--strict")) {
			a->strict = true;
		} else if (!strcmp(s, "--keep")) {
			a->keep = true;
		} else if (!strcmp(s, "--list")) {
			a->list = true;
		} else if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) {
			a->verbose = true;
		} else if (!strcmp(s, "--junit")) {
			val = &a->junit;
		} else if (!strcmp(s, "--json")) {
			val = &a->json;
		} else if (!strcmp(s, "--workdir")) {
			val = &a->workdir;
		} else if (!strcmp(s, "--filter")) {
			val = &a->filter;
		} else if (!strcmp(s, "--timeout")) {
			char *end;
			if (i + 1 >= argc) {
				fprintf(stderr, "pdkv run: --timeout needs seconds\n");
				return 2;
			}
			a->timeout_s = strtod(argv[++i], &end);
			if (*end || end == argv[i] || a->timeout_s <= 0) {
				fprintf(stderr,
				        "pdkv run: --timeout: expected seconds > 0, got \"%s\"\n",
				        argv[i]);
				return 2;
			}
		} else if (s[0] == '-' && s[1]) {
			fprintf(stderr, "pdkv run: unknown option %s (see pdkv run --help)\n", s);
			return 2;
		} else {
			a->files[a->nfiles++] = argv[i];
		}
		if (val) {
			if (i + 1 >= argc || !argv[i + 1][0]) {
				fprintf(stderr, "pdkv run: %s needs a value\n", s);
				return 2;
			}
			*val = argv[++i];
		}
	}
	return 0;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *default_suite(char *buf, size_t sz)
{
	const char *env = getenv("PDKV_SCENARIOS");
	if (env && *env)
		return env;
	/* build/bin/../../scenarios in a checkout; PREFIX/bin/../share/pdkv/scenarios installed */
	static const char *const rel[] = {"../../scenarios", "../share/pdkv/scenarios"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(buf, sz, "%s/%s", pd_self_dir(), rel[i]);
		if (is_dir(buf)) {
			char real[PATH_MAX];
			if (realpath(buf, real))
				snprintf(buf, sz, "%s", real);
			return buf;
		}
	}
	return "scenarios";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* *.json of a directory, sorted (the suite's order is the file names'). */
static int list_dir(const char *dir, char ***out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		char **t;
		if (l < 6 || strcmp(e->d_name + l - 5, ".json") || e->d_name[0] == '.')
			continue;
		t = realloc(*out, (*n + 1) * sizeof(char *));
		if (!t)
			break;
		*out = t;
		(*out)[(*n)++] = pd_asprintf("%s/%s", dir, e->d_name);
	}
	closedir(d);
	return 0;
}

/* --json reports/out/run.json works on a fresh clone */
static void mkdir_parent(const char *path)
{
	char dir[PATH_MAX], *slash;
	if (!path)
		return;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		pd_mkdir_p(dir);
	}
}

static void add_version(cJSON *v, const char *key, const char *cmd)
{
	char line[200] = "";
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\r\n")] = '\0';
		cJSON_AddStringToObject(v, key, line);
	}
	pclose(p);
}

static cJSON *versions(void)
{
	cJSON *v = cJSON_CreateObject();
	char exe[PATH_MAX + 40];
	cJSON_AddStringToObject(v, "pdkv-run", HR_VERSION);
	cJSON_AddStringToObject(v, "libcurl", curl_version());
	add_version(v, "etcd", "etcd --version 2>/dev/null");
	add_version(v, "redis-server", "redis-server --version 2>/dev/null");
	if (hr_find_bin("pdkv-standin", exe, PATH_MAX) == 0) {
		strcat(exe, " --version 2>/dev/null");
		add_version(v, "pdkv-standin", exe);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct args a;
	char sbuf[PATH_MAX], wbuf[PATH_MAX];
	char **files = NULL;
	size_t nfiles = 0, nsc = 0;
	struct hr_scenario *sc = NULL;
	struct hr_report rep = {0};
	struct hr_opts o = {0};
	struct sigaction sa = {0};
	bool made_workdir = false, any_kept = false;
	size_t passed = 0, failed = 0, notrun = 0;
	double t0 = pd_now_s();
	int ret;

	pd_log_set_name("pdkv-run");
	ret = parse_args(argc, argv, &a);
	if (ret) {
		free(a.files);
		return ret == 1 ? 0 : 2;
	}
	if (a.nfiles == 0) {
		const char *dir = default_suite(sbuf, sizeof(sbuf));
		if (list_dir(dir, &files, &nfiles) || nfiles == 0) {
			fprintf(stderr,
			        "pdkv run: no scenario files in %s (set PDKV_SCENARIOS or name "
			        "files)\n",
			        dir);
			free(a.files);
			return EXIT_SKIP;
		}
		qsort(files, nfiles, sizeof(char *), cmp_str);
	} else {
		for (int i = 0; i < a.nfiles; i++) {
			size_t before = nfiles;
			if (is_dir(a.files[i])) {
				list_dir(a.files[i], &files, &nfiles);
				qsort(files + before, nfiles - before, sizeof(char *), cmp_str);
			} else {
				files = realloc(files, (nfiles + 1) * sizeof(char *));
				files[nfiles++] = strdup(a.files[i]);
			}
		}
	}

	/* Parse everything first: a broken file is a FAIL line naming file and field. */
	sc = calloc(nfiles ? nfiles : 1, sizeof(*sc));
	rep.v = calloc(nfiles ? nfiles : 1, sizeof(*rep.v));
	for (size_t i = 0; i < nfiles; i++) {
		char err[1024];
		if (hr_scenario_load(files[i], &sc[nsc], err, sizeof(err))) {
			struct hr_result *r = &rep.v[rep.n++];
			const char *base = strrchr(files[i], '/');
			memset(r, 0, sizeof(*r));
			r->name = strdup(base ? base + 1 : files[i]);
			r->path = strdup(files[i]);
			r->status = HR_FAIL;
			snprintf(r->reason, sizeof(r->reason), "%s", err);
			continue;
		}
		if (a.filter && !strstr(sc[nsc].name, a.filter)) {
			hr_scenario_free(&sc[nsc]);
			continue;
		}
		nsc++;
	}
	if (a.list) {
		for (size_t i = 0; i < rep.n; i++)
			printf("%-40s  INVALID: %s\n", rep.v[i].name, rep.v[i].reason);
		for (size_t i = 0; i < nsc; i++) {
			printf("%-40s  %-5s %-4s checks:", sc[i].name, hr_meta_name(sc[i].meta),
			       sc[i].protocol);
			for (size_t k = 0; k < sc[i].nchecks; k++)
				printf(" %s%s", sc[i].checks[k],
				       sc[i].expect_fail &&
				               !strcmp(sc[i].expect_fail, sc[i].checks[k])
				           ? "(must fail)"
				           : "");
			printf("\n    %s\n", sc[i].description);
		}
		ret = rep.n ? 1 : 0;
		goto out;
	}
	if (nsc == 0 && rep.n == 0) {
		fprintf(stderr, "pdkv run: no scenario matches%s%s\n", a.filter ? " --filter " : "",
		        a.filter ? a.filter : "");
		ret = EXIT_SKIP;
		goto out;
	}

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (a.workdir) {
		snprintf(wbuf, sizeof(wbuf), "%s", a.workdir);
		if (pd_mkdir_p(wbuf)) {
			fprintf(stderr, "pdkv run: cannot create --workdir %s\n", wbuf);
			ret = 2;
			goto out;
		}
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(wbuf, sizeof(wbuf), "%s/pdkv-run.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(wbuf)) {
			fprintf(stderr, "pdkv run: mkdtemp %s: %s\n", wbuf, strerror(errno));
			ret = 2;
			goto out;
		}
		made_workdir = true;
	}
	rep.workdir = wbuf;
	o.workdir = wbuf;
	o.keep = a.keep;
	o.verbose = a.verbose;
	o.timeout_s = a.timeout_s;
	o.progress = stderr;
	o.progress_tty = isatty(2) && !a.verbose;
	o.stop = &g_stop;
	fprintf(stderr, "# pdkv run: %zu scenario%s, work dir %s\n", nsc, nsc == 1 ? "" : "s",
	        wbuf);

	for (size_t i = 0; i < rep.n; i++) /* the files that did not parse */
		hr_report_line(stdout, &rep.v[i], a.verbose);
	for (size_t i = 0; i < nsc && !g_stop; i++) {
		struct hr_result *r = &rep.v[rep.n++];
		hr_run_scenario(&sc[i], &o, r);
		if (o.progress_tty)
			fputs("\r\033[K", stderr);
		if (r->status == HR_NOTRUN && a.strict) {
			char why[sizeof(r->reason)];
			snprintf(why, sizeof(why), "%s", r->reason);
			r->status = HR_FAIL;
			snprintf(r->reason, sizeof(r->reason), "NOTRUN under --strict: %.990s",
			         why);
		}
		hr_report_line(stdout, r, a.verbose);
	}
	rep.interrupted = g_stop != 0;
	rep.wall_s = pd_now_s() - t0;
	rep.versions = a.json ? versions() : NULL;
	for (size_t i = 0; i < rep.n; i++) {
		passed += rep.v[i].status == HR_PASS;
		failed += rep.v[i].status == HR_FAIL;
		notrun += rep.v[i].status == HR_NOTRUN;
		any_kept |= rep.v[i].kept;
	}
	mkdir_parent(a.json);
	mkdir_parent(a.junit);
	if (a.json && (ret = hr_report_json(a.json, &rep)))
		fprintf(stderr, "pdkv run: cannot write --json %s: %s\n", a.json, strerror(-ret));
	if (a.junit && (ret = hr_report_junit(a.junit, &rep)))
		fprintf(stderr, "pdkv run: cannot write --junit %s: %s\n", a.junit, strerror(-ret));
	if (made_workdir && !any_kept)
		rmdir(wbuf);
	else if (any_kept)
		fprintf(stdout, "# logs of failed%s scenarios are kept under %s\n",
		        a.keep ? " and passed" : "", wbuf);
	hr_report_summary(stdout, &rep);
	if (failed || rep.interrupted)
		ret = 1;
	else if (passed == 0)
		ret = EXIT_SKIP;
	else
		ret = 0;
	cJSON_Delete(rep.versions);
	curl_global_cleanup();
out:
	for (size_t i = 0; i < rep.n; i++)
		hr_result_free(&rep.v[i]);
	free(rep.v);
	for (size_t i = 0; i < nsc; i++)
		hr_scenario_free(&sc[i]);
	free(sc);
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	free(a.files);
	return ret;
}
