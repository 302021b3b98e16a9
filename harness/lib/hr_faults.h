/* SPDX-License-Identifier: Apache-2.0 */
/* hr_faults: internal to the runner library — what a process-fault kind is (one file per kind,
 * listed in hr_faults.c's table as the checks are in hr_check.c), the fault thread's state the
 * kinds run with, and what the hostile kinds share (hr_fault_hostile.c). */
#ifndef HR_FAULTS_H
#define HR_FAULTS_H

#include "hr_deploy.h"
#include "pd_util.h"

#include <pthread.h>

struct hr_pfaults {
	struct hr_deploy *d;
	pthread_t thr;
	volatile sig_atomic_t stop;
	volatile sig_atomic_t opened; /* a flood's connections are open (hr_fault_flood_run) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;      /* the faults and the probe are over (hr_faults_stop waits for it) */
	bool release;   /* the deployment has stopped: the thread may end (hr_faults_release) */
	bool restarted; /* a kill fault restarted something: probe once they are done */
	double t0;
	char notes[2048];
};

/* Adding a kind = one hr_fault_NAME.c defining `const struct hr_fault_kind hr_fault_NAME` plus
 * one X(NAME) row in hr_faults.c. */
struct hr_fault_kind {
	const char *key; /* the entry's key that names the kind: {"kill": ...} */
	bool hostile;    /* a hostile peer: its probe request runs after /metrics */
	/* validates one entry (field names it in errors): 0, or -1 with err set */
	int (*parse)(const char *path, const char *field, const cJSON *e, char *err, size_t errsz);
	/* runs it on the fault thread once its "after_ms" is due; notes what it did */
	void (*run)(struct hr_pfaults *f, const cJSON *e);
};

/* Sleeps until at (pd_now_s clock); false when the faults were stopped meanwhile. */
static inline bool hr_fault_wait_until(struct hr_pfaults *f, double at)
{
	while (!f->stop && pd_now_s() < at)
		pd_sleep_ms(20);
	return !f->stop;
}

#define hr_fault_note(f, ...) hr_note_add((f)->notes, sizeof((f)->notes), __VA_ARGS__)

/* ---- shared by the hostile kinds (hr_fault_hostile.c) ---- */
/* s is one of l[0..n-1] */
bool hr_fault_in_list(const char *s, const char *const *l, size_t n);
/* A string or a non-empty array of strings, each one of list[]. */
bool hr_fault_names_ok(const cJSON *v, const char *const *list, size_t n);
/* v absent, or a number in lo..hi */
bool hr_fault_num_in(const cJSON *v, double lo, double hi);
/* What every hostile entry must have: only keys[] (else "unknown key (has)"), "at":
 * "during_workload", "after_ms" 0..600000, "duration_ms" 1..60000. 0 or -1 with err. */
int hr_fault_hostile_common(const char *path, const char *field, const cJSON *e,
                            const char *const *keys, size_t nkeys, const char *has, char *err,
                            size_t sz);
/* where prefill's ports are, for the faults (hr_fault_hostile.c) */
struct hr_addr {
	char host[64];
	int port;
};
/* Prefill's side channel from its log: V0 the data PUSH (ack: the ACK PUSH port), V1 the ROUTER. */
bool hr_hostile_side_channel(struct hr_deploy *d, struct hr_addr *a, int *ack_port);
/* V1: prefill's KV region count and block length from its log. */
bool hr_hostile_kv_regions(struct hr_deploy *d, int *nbufs, long *block_len);
/* A TCP connection from src (NULL: any) within 2 s, or -1. */
int hr_hostile_connect(const char *src, const struct hr_addr *a);
/* Did the peer close fd within ms? (what it sends is read and dropped) */
bool hr_hostile_closed_within(int fd, int ms);

#endif
