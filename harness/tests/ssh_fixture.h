/* SPDX-License-Identifier: Apache-2.0 */
/* ssh_fixture: shared by the sshd tests (test_ssh, test_hosts) — network namespaces with a real
 * sshd (Debian openssh-server) in each, keys made for the test, and leak counting. */
#ifndef SSH_FIXTURE_H
#define SSH_FIXTURE_H

#include "lib/hr_netns.h"
#include "pd_proc.h"

#include <stddef.h>

struct sshfx {
	char dir[128]; /* hostkey, userkey, wrongkey, authorized_keys, sshd configs and logs */
	struct hr_netns nn;
	struct pd_proc sshd[HR_NETNS_MAX];
	size_t nsshd;
	char pdkv[600]; /* build/bin/pdkv */
};

/* NULL when this host can run the fixture, else the reason (a SKIP). */
const char *sshfx_missing(char *why, size_t sz);
/* Namespaces for hosts[0..n) with an sshd each on port 22 of its address: 0 or -1. */
int sshfx_up(struct sshfx *f, const char *const *hosts, size_t n);
/* Stops the sshds, removes the namespaces and the directory. */
void sshfx_down(struct sshfx *f);
/* An address on the fixture's bridge where nothing answers. */
void sshfx_ghost(const struct sshfx *f, char *out, size_t sz);
/* Processes (other than this one) whose command line contains s. */
int sshfx_procs_with(const char *s);
/* Processes inside host's namespace other than its sshd listener, after up to wait_ms for
 * sshd's per-connection processes to end. */
int sshfx_procs_in(const struct sshfx *f, const char *host, int wait_ms);
int sshfx_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
