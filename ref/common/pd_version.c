/* SPDX-License-Identifier: Apache-2.0 */
/* pd_version: the one `--version` line of every pdkv command (pd_version.h); the commit comes
 * from build/gen/pdkv_git.h, written by the build at each commit. */
#include "pd_version.h"

#include <dlfcn.h>
#include <string.h>

#if __has_include("pdkv_git.h")
#include "pdkv_git.h"
#endif
#ifndef PDKV_GIT_COMMIT
#define PDKV_GIT_COMMIT "unknown"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define PD_SAN ", ASan"
#elif defined(__SANITIZE_THREAD__)
#define PD_SAN ", TSan"
#else
#define PD_SAN ""
#endif

void pd_version_print(FILE *f, const char *prog)
{
	/* the engine loads libcudart when GPU memory is asked for; say whether it would find it */
	static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
	const char *cuda = "libcudart not found";

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *cu = dlopen(libs[i], RTLD_LAZY | RTLD_LOCAL);
		if (cu) {
			cuda = libs[i];
			dlclose(cu);
			break;
		}
	}
	fprintf(f,
	        "%s %s (commit %s; build: TCP, RDMA via rdma-core verbs, CUDA at run time: %s%s)\n",
	        prog, PDKV_VERSION, PDKV_GIT_COMMIT, cuda, PD_SAN);
}

bool pd_version_asked(int argc, char **argv, const char *prog)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--version")) {
			pd_version_print(stdout, prog);
			return true;
		}
	return false;
}
