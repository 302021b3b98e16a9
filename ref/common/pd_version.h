/* SPDX-License-Identifier: Apache-2.0 */
/* pd_version: what `--version` prints for every pdkv command — the release, the commit built and
 * the build's options (RDMA, CUDA, sanitizers), one line. */
#ifndef PD_VERSION_H
#define PD_VERSION_H

#include <stdbool.h>
#include <stdio.h>

#define PDKV_VERSION "0.1"

/* "PROG 0.1 (commit abc1234; build: rdma-core verbs, CUDA at run time: libcudart found, ASan)" */
void pd_version_print(FILE *f, const char *prog);
/* For a main without pd_opt: true (the line printed on stdout) when argv has --version before
 * any "--"; the caller exits 0. */
bool pd_version_asked(int argc, char **argv, const char *prog);

#endif
