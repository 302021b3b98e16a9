/* SPDX-License-Identifier: Apache-2.0 */
/* upg: `pdkv upgrade-check` — a rolling-upgrade matrix (old/new prefill x old/new decode, per
 * router contract) run through the scenario runner, and what pdkv's version table says changed. */
#ifndef UPG_H
#define UPG_H

#include "cfg/cfg_vllm.h"
#include "lib/hr.h"

#include <stdbool.h>
#include <stdio.h>

enum upg_verdict { UPG_PASS = 0, UPG_FAIL, UPG_INCOMPATIBLE, UPG_NOTRUN };

#define UPG_MAX_CONTRACTS 2
#define UPG_MAX_CELLS     (4 * UPG_MAX_CONTRACTS)

struct upg_cell {
	int p_new, d_new;     /* 0 = the older release on that side, 1 = the newer */
	const char *contract; /* the router contract of this run (upg_plan.contract[]) */
	int ci;               /* its index in upg_plan.contract */
	enum upg_verdict verdict;
	char
	    error[1500]; /* the first error seen (a process's ERROR / WARN line, else the reason) */
	struct hr_result
	    res; /* what the runner reported (empty when the cell could not be built) */
	bool ran;
};

struct upg_plan {
	struct cfg_vllm_info ver[2];             /* [0] the older release, [1] the newer */
	bool downgrade;                          /* --from is the newer one */
	const char *contract[UPG_MAX_CONTRACTS]; /* [0] the newer's contract, [1] the older's */
	char contract_buf[UPG_MAX_CONTRACTS][16];
	size_t ncontracts;
	struct upg_cell cell[UPG_MAX_CELLS];
	size_t ncells;
	double wall_s;
	char workdir[512];
	bool interrupted;
};

/* Looks both releases up, orders them, picks the contracts and lays the cells out. 0, or -1 with
 * err naming the flag and what is expected. */
int upg_plan_init(struct upg_plan *p, const char *from, const char *to, char *err, size_t errsz);
/* The scenario of one cell (in memory, parsed by the runner's own parser). 0, or -1 with err
 * (the parser's message: a V0 / V1 pair cannot be deployed). */
int upg_cell_scenario(const struct upg_plan *p, const struct upg_cell *c, struct hr_scenario *sc,
                      char *err, size_t errsz);
/* Runs every cell through hr_run_scenario; one progress line per cell on o->progress or
 * stderr. */
void upg_run(struct upg_plan *p, const struct hr_opts *o, FILE *progress);
void upg_plan_free(struct upg_plan *p);

/* The cell whose sides are (p_new, d_new) under contract index ci, or NULL. */
const struct upg_cell *upg_cell_at(const struct upg_plan *p, size_t ci, int p_new, int d_new);
/* 0 when old/old (under the older release's own contract) and new/new (under the newer's)
 * passed, 77 when one of them could not run here, else 1. */
int upg_exit_code(const struct upg_plan *p);
/* True for the two cells the exit code rests on: old/old under the older release's contract,
 * new/new under the newer's. */
bool upg_cell_decides(const struct upg_plan *p, const struct upg_cell *c);
const char *upg_verdict_name(enum upg_verdict v);

/* Reporting (upg_report.c): the matrices, the change list, JSON, JUnit. */
void upg_print(FILE *f, const struct upg_plan *p, bool verbose);
/* The change list between the two releases as JSON: [{"kind","what"}...]. */
cJSON *upg_changes(const struct upg_plan *p);
cJSON *upg_json(const struct upg_plan *p);
int upg_write_json(const char *path, const struct upg_plan *p);
int upg_write_junit(const char *path, const struct upg_plan *p);

#endif
