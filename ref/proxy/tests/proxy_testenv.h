/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_testenv: what the pdkv-proxy end-to-end tests share — finding the binary, starting it on
 * a free port and waiting for /health, the fake backends' lifecycle, and string assertions. */
#ifndef PROXY_TESTENV_H
#define PROXY_TESTENV_H

#include <stddef.h>
#include <string.h>

#include "fake_backend.h"
#include "pd_proc.h"

/* cmocka's fail_msg must be in scope (include cmocka.h before this header). */
#define assert_has(hay, needle)                                                                    \
	do {                                                                                       \
		if (!strstr((hay), (needle)))                                                      \
			fail_msg("expected \"%s\" in: %s", (needle), (hay));                       \
	} while (0)
#define assert_lacks(hay, needle)                                                                  \
	do {                                                                                       \
		if (strstr((hay), (needle)))                                                       \
			fail_msg("did not expect \"%s\" in: %s", (needle), (hay));                 \
	} while (0)

/* Finds pdkv-proxy ($PDKV_BIN or next to the test), makes tmpdir (a mkdtemp template), starts
 * curl and the fake backends P0 P1 D0 D1. 0 or -1 (with the reason on stderr). */
int pt_setup(char *bin, size_t binsz, char *tmpdir, struct fb P[2], struct fb D[2]);
/* Stops the fakes and curl; removes tmpdir when ret is 0 and PDKV_KEEP is unset, else says
 * where the logs are. Returns ret. */
int pt_teardown(const char *tmpdir, struct fb P[2], struct fb D[2], int ret);
void pt_reset_all(struct fb P[2], struct fb D[2]);

/* GET /health until it answers with want (0 = any HTTP status), at most tries times 20 ms.
 * 0, -ECHILD when the process died, -ETIMEDOUT. */
int pt_wait_health(struct pd_proc *p, int port, long want, int tries);
/* Starts bin on a free 127.0.0.1 port with flags (NULL-terminated) and env (NULL = inherit),
 * logging to tmpdir/name.log, then waits for /health (want, tries as above). */
int pt_start_proxy(const char *bin, const char *tmpdir, struct pd_proc *p, int *port,
                   const char *name, const char *const *flags, char *const *env, long want,
                   int tries);
/* Stops p (if started); -1 when it did not exit with status 0. */
int pt_stop_checked(struct pd_proc *p);

#endif
