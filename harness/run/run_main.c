/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-run (`pdkv run`): runs scenario files — the default suite in scenarios/ when none are
 * named — and reports PASS / FAIL / NOTRUN per scenario, plus --json and --junit files. */
#include "lib/hr.h"
#include "lib/hr_k8s.h"
#include "lib/hr_slurm.h"
#include "lib/hr_ssh.h"
#include "pd_env.h"
#include "pd_log.h"
#include "pd_opt.h"
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
	int saved = errno;
	/* the handler may run on any thread while workload threads poll it: atomic; the first
	 * signal's number decides the exit status (128 + it, as a shell reports) */
	if (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED))
		__atomic_store_n(&g_stop, sig, __ATOMIC_RELAXED);
	errno = saved;
}

struct args {
	const char *junit, *json, *workdir, *filter, *hosts, *ssh_key;
	const char *proxy_ready, *external;
	const char *launcher, *slurm_args, *out; /* --launcher, --slurm-args, --out */
	bool dry_run;
	const char *proxy_cmd[16]; /* --proxy-cmd, repeatable: one graded run per router */
	int nproxy;
	bool strict, keep, list, verbose;
	double timeout_s, ssh_timeout_s;
	char **files;
	int nfiles;
};

static int add_proxy_cmd(const char *val, void *dst, void *ud)
{
	struct args *a = dst;
	(void)ud;
	if (!val || !*val || a->nproxy >= (int)PD_ARRAY_SIZE(a->proxy_cmd))
		return -1;
	a->proxy_cmd[a->nproxy++] = val;
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	const struct pd_opt opts[] = {
	    {.name = "proxy-cmd",
	     .type = PD_OPT_FN,
	     .fn = add_proxy_cmd,
	     .dst = a,
	     .arg = "CMD",
	     .want = "a router command line (at most 16 --proxy-cmd)",
	     .help = "grade this router instead of pdkv-proxy (repeatable); placeholders {port} "
	             "{prefill_url} {decode_url} {prefill_host} {prefill_port} {decode_host} "
	             "{decode_port} {bootstrap_port}"},
	    {.name = "proxy-ready",
	     .type = PD_OPT_STR,
	     .dst = &a->proxy_ready,
	     .arg = "PATH",
	     .help = "the router is ready when PATH answers 2xx (default: /health, /healthcheck "
	             "or /v1/models, or any HTTP answer)"},
	    {.name = "external",
	     .type = PD_OPT_STR,
	     .dst = &a->external,
	     .arg = "prefill=URL,decode=URL,proxy=URL[,reference=URL][,vllm=X.Y][,mamba=1]",
	     .help = "start nothing: send the workload through a live deployment's router and "
	             "judge it from vLLM's own /metrics (vllm=: decode's release, else read "
	             "from its /metrics; mamba=1: a Mamba/GDN model, N-1 tokens loaded)"},
	    {.name = "list",
	     .type = PD_OPT_FLAG,
	     .dst = &a->list,
	     .help = "list the scenarios and their checks, run nothing"},
	    {.name = "filter",
	     .type = PD_OPT_STR,
	     .dst = &a->filter,
	     .arg = "SUBSTR",
	     .help = "only scenarios whose name contains SUBSTR"},
	    {.name = "json",
	     .type = PD_OPT_STR,
	     .dst = &a->json,
	     .arg = "FILE",
	     .help = "write the results as one JSON document"},
	    {.name = "junit",
	     .type = PD_OPT_STR,
	     .dst = &a->junit,
	     .arg = "FILE",
	     .help = "write JUnit XML (NOTRUN = skipped)"},
	    {.name = "strict",
	     .type = PD_OPT_FLAG,
	     .dst = &a->strict,
	     .help = "NOTRUN counts as a failure"},
	    {.name = "timeout",
	     .type = PD_OPT_DOUBLE,
	     .dst = &a->timeout_s,
	     .arg = "S",
	     .help = "per-scenario limit in seconds (default: scenario's, else 120)",
	     .want = "seconds > 0",
	     .min = 0,
	     .max = 1e9,
	     .min_excl = true},
	    {.name = "workdir",
	     .type = PD_OPT_STR,
	     .dst = &a->workdir,
	     .arg = "DIR",
	     .help = "where per-scenario work dirs go (default $TMPDIR/pdkv-run.XXXXXX)"},
	    {.name = "keep",
	     .type = PD_OPT_FLAG,
	     .dst = &a->keep,
	     .help = "keep every work dir (failed ones are always kept)"},
	    {.name = "hosts",
	     .type = PD_OPT_STR,
	     .dst = &a->hosts,
	     .arg = "FILE",
	     .help = "run scenarios with \"hosts\" on these machines through ssh: lines NAME "
	             "[USER@]ADDRESS [port=N] [pdkv=PATH] [KEY=VALUE ...]"},
	    {.name = "launcher",
	     .type = PD_OPT_STR,
	     .dst = &a->launcher,
	     .arg = "ssh|slurm|k8s|local",
	     .help = "where the roles run: ssh (--hosts machines, the default with --hosts), "
	             "slurm (srun steps on the allocation's nodes), k8s (with --dry-run: write "
	             "the manifests), local (this host, namespaces for \"hosts\")"},
	    {.name = "slurm-args",
	     .type = PD_OPT_STR,
	     .dst = &a->slurm_args,
	     .arg = "ARGS",
	     .help = "with --launcher slurm outside an allocation: salloc --no-shell ARGS makes "
	             "one for this run (e.g. \"-N 3 -p gpu\"), cancelled at the end"},
	    {.name = "dry-run",
	     .type = PD_OPT_FLAG,
	     .dst = &a->dry_run,
	     .help = "with --launcher k8s: write the Kubernetes manifests, run nothing"},
	    {.name = "out",
	     .type = PD_OPT_STR,
	     .dst = &a->out,
	     .arg = "DIR",
	     .help = "with --launcher k8s --dry-run: the manifests' directory (default: stdout)"},
	    {.name = "ssh-key",
	     .type = PD_OPT_STR,
	     .dst = &a->ssh_key,
	     .arg = "FILE",
	     .help = "with --hosts: the identity ssh uses (default: ssh's own choice)"},
	    {.name = "ssh-timeout",
	     .type = PD_OPT_DOUBLE,
	     .dst = &a->ssh_timeout_s,
	     .arg = "S",
	     .help = "with --hosts: ssh ConnectTimeout in seconds (default 10)",
	     .want = "seconds 1..300",
	     .min = 1,
	     .max = 300},
	    {.name = "verbose",
	     .shrt = 'v',
	     .type = PD_OPT_FLAG,
	     .dst = &a->verbose,
	     .help = "show every check's numbers, process logs' location"},
	};
	const struct pd_opt_spec spec = {
	    .prog = "pdkv run",
	    .usage = "usage: pdkv run [options] [SCENARIO.json|DIR ...]\n"
	             "Runs 1P1D scenarios (prefill + decode stand-ins, proxy, metadata service) "
	             "and\nchecks that decode really reused the KV prefill produced. No argument: "
	             "the default\nsuite (scenarios/ next to the build, $PDKV_SCENARIOS, or "
	             "./scenarios).\n\n",
	    .footer =
	        "\nexit: 0 none failed, 1 any failed, 77 nothing could run, 2 usage error or a\n"
	        "--json/--junit report that could not be written, 130 / 143 interrupted by\n"
	        "SIGINT / SIGTERM (what ran is still reported)\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = -1,
	};
	memset(a, 0, sizeof(*a));
	a->files = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->files)
		return 2;
	return pd_opt_parse(&spec, argc, argv, 1, a->files, &a->nfiles);
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *default_suite(char *buf, size_t sz)
{
	const char *env = pd_env_str("PDKV_SCENARIOS");
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
		if (!t) {
			closedir(d);
			return -ENOMEM;
		}
		*out = t;
		if (!((*out)[*n] = pd_asprintf("%s/%s", dir, e->d_name))) {
			closedir(d);
			return -ENOMEM;
		}
		(*n)++;
	}
	closedir(d);
	return 0;
}

/* One more file name (a copy) at the end of su's list: 0 or -ENOMEM. */
static int add_file(char ***files, size_t *n, const char *name)
{
	char **t = realloc(*files, (*n + 1) * sizeof(char *));
	if (!t)
		return -ENOMEM;
	*files = t;
	if (!(t[*n] = strdup(name)))
		return -ENOMEM;
	(*n)++;
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

/* What one invocation works on: the files named (or the default suite), the scenarios that
 * parsed, and the report rows (files that did not parse come first). */
struct suite {
	char **files;
	size_t nfiles, nsc;
	struct hr_scenario *sc;
	struct hr_report rep;
};

/* Scenario files from the arguments (directories: their *.json, sorted), else the default
 * suite. 0, or EXIT_SKIP when the default suite has none. */
static int collect_files(const struct args *a, struct suite *su)
{
	char sbuf[PATH_MAX];
	if (a->nfiles == 0) {
		const char *dir = default_suite(sbuf, sizeof(sbuf));
		if (list_dir(dir, &su->files, &su->nfiles) || su->nfiles == 0) {
			fprintf(stderr,
			        "pdkv run: no scenario files in %s (set PDKV_SCENARIOS or name "
			        "files)\n",
			        dir);
			return EXIT_SKIP;
		}
		qsort(su->files, su->nfiles, sizeof(char *), cmp_str);
		return 0;
	}
	for (int i = 0; i < a->nfiles; i++) {
		size_t before = su->nfiles;
		int rc;
		if (is_dir(a->files[i])) {
			rc = list_dir(a->files[i], &su->files, &su->nfiles);
			qsort(su->files + before, su->nfiles - before, sizeof(char *), cmp_str);
		} else {
			rc = add_file(&su->files, &su->nfiles, a->files[i]);
		}
		if (rc == -ENOMEM) {
			fprintf(stderr, "pdkv run: out of memory listing %s\n", a->files[i]);
			return 2;
		}
	}
	return 0;
}

/* Parses everything first: a broken file is a FAIL line naming file and field. */
static void load_scenarios(const struct args *a, struct suite *su)
{
	size_t n = su->nfiles ? su->nfiles : 1;
	su->sc = calloc(n, sizeof(*su->sc));
	su->rep.v = calloc(n, sizeof(*su->rep.v));
	for (size_t i = 0; i < su->nfiles; i++) {
		char err[1024];
		struct hr_scenario *sc = &su->sc[su->nsc];
		if (hr_scenario_load(su->files[i], sc, err, sizeof(err))) {
			struct hr_result *r = &su->rep.v[su->rep.n++];
			const char *base = strrchr(su->files[i], '/');
			memset(r, 0, sizeof(*r));
			r->name = strdup(base ? base + 1 : su->files[i]);
			r->path = strdup(su->files[i]);
			r->status = HR_FAIL;
			r->error = true;
			snprintf(r->reason, sizeof(r->reason), "%s", err);
			continue;
		}
		if (a->filter && !strstr(sc->name, a->filter)) {
			hr_scenario_free(sc);
			continue;
		}
		su->nsc++;
	}
}

/* --list: 1 when a file did not parse, else 0. */
static int list_scenarios(const struct suite *su)
{
	for (size_t i = 0; i < su->rep.n; i++)
		printf("%-40s  INVALID: %s\n", su->rep.v[i].name, su->rep.v[i].reason);
	for (size_t i = 0; i < su->nsc; i++) {
		const struct hr_scenario *sc = &su->sc[i];
		printf("%-40s  %-5s %-4s checks:", sc->name, hr_meta_name(sc->meta), sc->protocol);
		for (size_t k = 0; k < sc->nchecks; k++)
			printf(" %s%s", sc->checks[k],
			       sc->expect_fail && !strcmp(sc->expect_fail, sc->checks[k])
			           ? "(must fail)"
			           : "");
		printf("\n    %s\n", sc->description);
	}
	return su->rep.n ? 1 : 0;
}

/* --external prefill=URL,decode=URL,proxy=URL[,reference=URL] into o; 0 or 2 with the reason */
static int parse_external(const char *spec, struct hr_opts *o, char *buf, size_t sz)
{
	const char *keys[] = {"prefill", "decode", "proxy", "reference", "vllm", "mamba"};
	const char **dst[] = {&o->ext_prefill,   &o->ext_decode, &o->ext_proxy,
	                      &o->ext_reference, &o->ext_vllm,   NULL};
	char *save = NULL, *tok;
	snprintf(buf, sz, "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		size_t k = 0, l;
		if (eq)
			*eq = '\0';
		for (; eq && k < PD_ARRAY_SIZE(keys) && strcmp(tok, keys[k]); k++)
			;
		if (eq && k == 4) { /* vllm=X.Y: checked against cfg_vllm's table by the run */
			*dst[k] = eq + 1;
			continue;
		}
		if (eq && k == 5 && (!strcmp(eq + 1, "0") || !strcmp(eq + 1, "1"))) {
			o->ext_mamba = eq[1] == '1'; /* a Mamba/GDN model: N-1 loaded (#46807) */
			continue;
		}
		if (!eq || k == PD_ARRAY_SIZE(keys) ||
		    (strncmp(eq + 1, "http://", 7) && strncmp(eq + 1, "https://", 8))) {
			if (eq)
				*eq = '='; /* name the whole item */
			fprintf(stderr,
			        "pdkv run: --external: \"%s\": expected prefill=URL, decode=URL, "
			        "proxy=URL or reference=URL with URL http://host:port, vllm=X.Y or "
			        "mamba=0|1\n",
			        tok);
			return 2;
		}
		l = strlen(eq + 1);
		while (l > 8 && eq[l] == '/') /* http://h:p/ and http://h:p are one base */
			eq[l--] = '\0';
		*dst[k] = eq + 1;
	}
	for (size_t k = 0; k < 3; k++)
		if (!*dst[k]) {
			fprintf(stderr, "pdkv run: --external: %s=URL is missing\n", keys[k]);
			return 2;
		}
	return 0;
}

/* --launcher, --slurm-args, --dry-run, --out go together as documented; 0 or 2 (said why) */
static int check_launcher(const struct args *a)
{
	const char *l = a->launcher;
	if (l && strcmp(l, "ssh") && strcmp(l, "slurm") && strcmp(l, "k8s") && strcmp(l, "local")) {
		fprintf(stderr, "pdkv run: --launcher \"%s\": expected ssh, slurm, k8s or local\n",
		        l);
		return 2;
	}
	if (a->slurm_args && (!l || strcmp(l, "slurm"))) {
		fprintf(stderr, "pdkv run: --slurm-args goes with --launcher slurm\n");
		return 2;
	}
	if ((a->dry_run || a->out) && (!l || strcmp(l, "k8s"))) {
		fprintf(stderr, "pdkv run: --dry-run and --out go with --launcher k8s\n");
		return 2;
	}
	if (l && !strcmp(l, "k8s") && !a->dry_run) {
		fprintf(stderr,
		        "pdkv run: --launcher k8s needs --dry-run: pdkv writes the manifests "
		        "(kubectl apply -f DIR runs them); it does not drive a cluster\n");
		return 2;
	}
	if (l && (a->external || a->nproxy) && strcmp(l, "ssh")) {
		fprintf(stderr, "pdkv run: --launcher %s excludes --external and --proxy-cmd\n", l);
		return 2;
	}
	return 0;
}

static struct hr_result *next_row(struct suite *su)
{
	struct hr_result *t = realloc(su->rep.v, (su->rep.n + 1) * sizeof(*t));
	if (!t)
		return NULL;
	su->rep.v = t;
	memset(&t[su->rep.n], 0, sizeof(*t));
	return &t[su->rep.n++];
}

static void one_run(const struct args *a, struct suite *su, const struct hr_opts *o, size_t i)
{
	struct hr_result *r = next_row(su);
	if (!r)
		return;
	if (o->ext_proxy)
		hr_run_external(&su->sc[i], o, r);
	else
		hr_run_scenario(&su->sc[i], o, r);
	if (o->progress_tty)
		fputs("\r\033[K", stderr);
	if (r->status == HR_NOTRUN && a->strict) {
		char why[sizeof(r->reason)];
		snprintf(why, sizeof(why), "%s", r->reason);
		r->status = HR_FAIL;
		snprintf(r->reason, sizeof(r->reason), "NOTRUN under --strict: %.990s", why);
	}
	hr_report_line(stdout, r, a->verbose);
	hr_report_router_table(stdout, r);
}

/* Every scenario in turn, one result line each (--strict turns NOTRUN into FAIL); with
 * --proxy-cmd every scenario once per router. */
static int run_scenarios(const struct args *a, struct suite *su, struct hr_opts *o)
{
	for (size_t i = 0; i < su->rep.n; i++) /* the files that did not parse */
		hr_report_line(stdout, &su->rep.v[i], a->verbose);
	if (!a->nproxy) {
		for (size_t i = 0; i < su->nsc && !g_stop; i++)
			one_run(a, su, o, i);
		return 0;
	}
	for (int k = 0; k < a->nproxy && !g_stop; k++) {
		char err[300], label[32];
		cJSON *cmd = hr_router_split(a->proxy_cmd[k], err, sizeof(err));
		if (!cmd) {
			fprintf(stderr, "pdkv run: --proxy-cmd: %s\n", err);
			return 2;
		}
		for (cJSON *w = cmd->child; w; w = w->next) { /* ./x is relative to here */
			char real[PATH_MAX];
			if (!strncmp(w->valuestring, "./", 2) && realpath(w->valuestring, real))
				cJSON_SetValuestring(w, real);
		}
		snprintf(label, sizeof(label), "router%d", k + 1);
		fprintf(stdout, "# %s: %s\n", label, a->proxy_cmd[k]);
		o->proxy_cmd = cmd;
		o->proxy_label = a->nproxy > 1 ? label : NULL;
		for (size_t i = 0; i < su->nsc && !g_stop; i++)
			one_run(a, su, o, i);
		o->proxy_cmd = NULL;
		cJSON_Delete(cmd);
	}
	return 0;
}

/* --json, --junit, the kept logs line and the summary; the exit status. */
static int finish(const struct args *a, struct suite *su, const char *wbuf, bool made_workdir,
                  double t0)
{
	struct hr_report *rep = &su->rep;
	size_t passed = 0, failed = 0;
	bool any_kept = false;
	int ret, wret;
	bool unwritten = false; /* a report asked for and not written: exit 2, whatever ran */

	rep->interrupted = g_stop != 0;
	rep->wall_s = pd_now_s() - t0;
	rep->versions = a->json ? versions() : NULL;
	for (size_t i = 0; i < rep->n; i++) {
		passed += rep->v[i].status == HR_PASS;
		failed += rep->v[i].status == HR_FAIL;
		any_kept |= rep->v[i].kept;
	}
	mkdir_parent(a->json);
	mkdir_parent(a->junit);
	if (a->json && (wret = hr_report_json(a->json, rep))) {
		fprintf(stderr, "pdkv run: cannot write --json %s: %s\n", a->json, strerror(-wret));
		unwritten = true;
	}
	if (a->junit && (wret = hr_report_junit(a->junit, rep))) {
		fprintf(stderr, "pdkv run: cannot write --junit %s: %s\n", a->junit,
		        strerror(-wret));
		unwritten = true;
	}
	if (made_workdir && !any_kept)
		rmdir(wbuf);
	else if (any_kept)
		fprintf(stdout, "# logs of failed%s scenarios are kept under %s\n",
		        a->keep ? " and passed" : "", wbuf);
	hr_report_summary(stdout, rep);
	if (rep->interrupted)
		ret =
		    128 + (int)g_stop; /* 130 on Ctrl-C, 143 on SIGTERM: what was run is reported */
	else if (failed)
		ret = 1;
	else if (passed == 0)
		ret = EXIT_SKIP;
	else
		ret = 0;
	if (unwritten)
		ret = 2;
	cJSON_Delete(rep->versions);
	return ret;
}

static void suite_free(struct suite *su)
{
	for (size_t i = 0; i < su->rep.n; i++)
		hr_result_free(&su->rep.v[i]);
	free(su->rep.v);
	for (size_t i = 0; i < su->nsc; i++)
		hr_scenario_free(&su->sc[i]);
	free(su->sc);
	for (size_t i = 0; i < su->nfiles; i++)
		free(su->files[i]);
	free(su->files);
}

int main(int argc, char **argv)
{
	struct args a;
	struct suite su = {0};
	struct hr_opts o = {0};
	char wbuf[PATH_MAX], ext[2048], herr[700];
	static struct hr_hosts hosts;
	static struct hr_slurm slurm;
	bool made_workdir = false;
	double t0 = pd_now_s();
	int ret;

	pd_log_set_name("pdkv-run");
	ret = parse_args(argc, argv, &a);
	if (ret) {
		free(a.files);
		return ret == 1 ? 0 : 2;
	}
	ret = collect_files(&a, &su);
	if (ret)
		goto out;
	load_scenarios(&a, &su);
	if (a.list) {
		ret = list_scenarios(&su);
		goto out;
	}
	if (su.nsc == 0 && su.rep.n == 0) {
		fprintf(stderr, "pdkv run: no scenario matches%s%s\n", a.filter ? " --filter " : "",
		        a.filter ? a.filter : "");
		ret = EXIT_SKIP;
		goto out;
	}
	if ((ret = check_launcher(&a)))
		goto out;
	if (a.launcher && !strcmp(a.launcher, "k8s")) {
		for (size_t i = 0; i < su.rep.n; i++) /* the files that did not parse */
			hr_report_line(stderr, &su.rep.v[i], false);
		ret = hr_k8s_write(su.sc, su.nsc, a.out, stdout) || su.rep.n ? 1 : 0;
		goto out;
	}
	if (a.hosts && hr_hosts_load(a.hosts, &hosts, herr, sizeof(herr))) {
		fprintf(stderr, "pdkv run: --hosts: %s\n", herr);
		ret = 2;
		goto out;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pd_stop_signals(on_signal);
	if (pd_workdir("pdkv run", a.workdir, "pdkv-run", wbuf, sizeof(wbuf), &made_workdir)) {
		ret = 2;
		goto out;
	}
	su.rep.workdir = wbuf;
	o.workdir = wbuf;
	o.keep = a.keep;
	o.verbose = a.verbose;
	o.timeout_s = a.timeout_s;
	o.progress = stderr;
	o.progress_tty = isatty(2) && !a.verbose;
	o.stop = &g_stop;
	o.hosts = a.hosts ? &hosts : NULL;
	o.ssh_key = a.ssh_key;
	o.ssh_timeout_s = (int)a.ssh_timeout_s;
	o.launcher = a.launcher;
	hr_slurm_init(&slurm, a.slurm_args);
	o.slurm = &slurm;
	o.proxy_ready = a.proxy_ready;
	if (a.external && (ret = parse_external(a.external, &o, ext, sizeof(ext))))
		goto out;
	if (a.external && a.nproxy) {
		fprintf(stderr, "pdkv run: --external and --proxy-cmd exclude each other (external "
		                "mode starts no process)\n");
		ret = 2;
		goto out;
	}
	fprintf(stderr, "# pdkv run: %zu scenario%s, work dir %s\n", su.nsc, su.nsc == 1 ? "" : "s",
	        wbuf);
	ret = run_scenarios(&a, &su, &o);
	hr_slurm_close(&slurm); /* its own steps, and its own allocation (--slurm-args) */
	if (ret == 0)
		ret = finish(&a, &su, wbuf, made_workdir, t0);
	curl_global_cleanup();
out:
	suite_free(&su);
	free(a.files);
	return ret;
}
