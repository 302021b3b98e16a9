/* SPDX-License-Identifier: Apache-2.0 */
/* hr_k8s: the Kubernetes manifests of a scenario (pdkv run --launcher k8s --dry-run). */
#include "hr_k8s.h"

int hr_k8s_write(const struct hr_scenario *sc, size_t n, const char *outdir, FILE *f)
{
	(void)sc;
	(void)n;
	(void)outdir;
	(void)f;
	fprintf(stderr, "pdkv run: --launcher k8s: not written yet\n");
	return -1;
}
