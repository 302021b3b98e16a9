/* SPDX-License-Identifier: Apache-2.0 */
/* hr_k8s: pdkv run --launcher k8s --dry-run — the Kubernetes manifests a scenario needs (a Pod
 * per role, a headless Service for their addresses), written as JSON; nothing is run. */
#ifndef HR_K8S_H
#define HR_K8S_H

#include "hr.h"

#include <stdio.h>

/* The manifests of each scenario: one file DIR/SCENARIO.json each (a kind: List), or all on
 * f when outdir is NULL. 0, or -1 with the reason printed on stderr. */
int hr_k8s_write(const struct hr_scenario *sc, size_t n, const char *outdir, FILE *f);

#endif
