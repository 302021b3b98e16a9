/* SPDX-License-Identifier: Apache-2.0 */
/* pdkv-upgrade-check (`pdkv upgrade-check --from X --to Y`): flags, work dir and signals; the
 * matrix is built and run by upg_run.c and printed by upg_report.c. */
#include "upgrade/upg.h"
#include "pd_env.h"
#include "pd_opt.h"
#include "pd_proc.h"
#include "pd_util.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	int saved = errno;
	(void)sig;
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
	errno = saved;
}

struct args {
	const char *from, *to, *json, *junit, *workdir;
	bool verbose, keep;
	double timeout_s;
};

static int parse_args(int argc, char **argv, struct args *a, const struct pd_opt_spec **out)
{
	static struct pd_opt opts[] = {
	    {.name = "from", .type = PD_OPT_STR, .arg = "X.Y", .help = "the release running now"},
	    {.name = "to", .type = PD_OPT_STR, .arg = "X.Y", .help = "the release to upgrade to"},
	    {.name = "json",
	     .type = PD_OPT_STR,
	     .arg = "FILE",
	     .help = "write the matrix, every cell's checks and the change list as JSON"},
	    {.name = "junit",
	     .type = PD_OPT_STR,
	     .arg = "FILE",
	     .help = "write JUnit XML (a failed old/old or new/new cell is a failure,\nthe "
	             "other cells are skipped with their verdict)"},
	    {.name = "timeout",
	     .type = PD_OPT_DOUBLE,
	     .arg = "S",
	     .help = "per-cell limit in seconds (default 10: a router that never gets\nready "
	             "costs this long)",
	     .want = "seconds > 0",
	     .min = 0,
	     .max = 3600,
	     .min_excl = true},
	    {.name = "workdir",
	     .type = PD_OPT_STR,
	     .arg = "DIR",
	     .help = "where the cells' work dirs go (default $TMPDIR/pdkv-upgrade.XXXXXX)"},
	    {.name = "keep",
	     .type = PD_OPT_FLAG,
	     .help = "keep every cell's work dir (failed ones are always kept)"},
	    {.name = "verbose",
	     .shrt = 'v',
	     .type = PD_OPT_FLAG,
	     .help = "the runner's progress and every check's numbers"},
	};
	static struct pd_opt_spec spec = {
	    .prog = "pdkv upgrade-check",
	    .usage = "usage: pdkv upgrade-check --from X.Y --to X.Y [options]\n"
	             "Rolling-upgrade matrix: a 1P1D deployment with the old or new release on "
	             "each side\n(old/old, old/new, new/old, new/new), under the newer release's "
	             "router contract and,\nwhen it differs, the older one's; then what pdkv's "
	             "version table says changed.\n\n",
	    .footer = "\nverdicts: PASS; FAIL (same connector generation, with the first error "
	              "seen);\nINCOMPATIBLE (different generations, with the error seen); NOTRUN.\n"
	              "exit: 0 old/old (older contract) and new/new (newer contract) passed, mixed "
	              "cells\nbeing information; 1 one of them failed; 77 could not run here; 2 "
	              "usage error; 130 interrupted\n",
	    .opts = opts,
	    .nopts = PD_ARRAY_SIZE(opts),
	    .max_pos = 0,
	};
	void *dst[] = {&a->from,      &a->to,      &a->json, &a->junit,
	               &a->timeout_s, &a->workdir, &a->keep, &a->verbose};
	for (size_t i = 0; i < PD_ARRAY_SIZE(opts); i++)
		opts[i].dst = dst[i];
	*out = &spec;
	return pd_opt_parse(&spec, argc, argv, 1, NULL, NULL);
}

static bool any_kept(const struct upg_plan *p)
{
	for (size_t i = 0; i < p->ncells; i++)
		if (p->cell[i].res.kept)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct args a = {.timeout_s = 10};
	const struct pd_opt_spec *spec;
	struct upg_plan *p = calloc(1, sizeof(*p));
	char err[1024], wd[512];
	bool made;
	int rc = parse_args(argc, argv, &a, &spec);

	if (rc || !p)
		return free(p), rc == 1 ? 0 : 2;
	if (!a.from || !a.to) {
		free(p);
		fprintf(
		    stderr,
		    "%s: %s: missing; expected a vLLM release such as 0.16 (both --from and --to "
		    "are required; `pdkv standin --list-versions` prints the table)\n",
		    spec->prog, a.from ? "--to" : "--from");
		return 2;
	}
	if (upg_plan_init(p, a.from, a.to, err, sizeof(err))) {
		fprintf(stderr, "pdkv upgrade-check: %s\n", err);
		free(p);
		return 2;
	}
	if (pd_workdir("pdkv upgrade-check", a.workdir, "pdkv-upgrade", wd, sizeof(wd), &made))
		return free(p), 2;
	pd_stop_signals(on_signal);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct hr_opts o = {.workdir = wd,
	                    .keep = a.keep,
	                    .verbose = a.verbose,
	                    .timeout_s = a.timeout_s,
	                    .progress = a.verbose ? stderr : NULL,
	                    .progress_tty = false,
	                    .stop = &g_stop};
	upg_run(p, &o, stderr);
	upg_print(stdout, p, a.verbose);
	rc = g_stop ? 130 : upg_exit_code(p);
	if (a.json && upg_write_json(a.json, p))
		fprintf(stderr, "pdkv upgrade-check: --json: cannot write %s\n", a.json), rc = 2;
	if (a.junit && upg_write_junit(a.junit, p))
		fprintf(stderr, "pdkv upgrade-check: --junit: cannot write %s\n", a.junit), rc = 2;
	if (any_kept(p))
		printf("# work dirs kept under %s\n", wd);
	else if (made)
		pd_rm_rf(wd);
	upg_plan_free(p);
	free(p);
	curl_global_cleanup();
	return rc;
}
