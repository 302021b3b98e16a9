/* hr_deploy: internal to the runner library — one scenario's processes (hr_deploy.c) as used by
 * the scenario flow (hr_run.c). */
#ifndef HR_DEPLOY_H
#define HR_DEPLOY_H

#include "hr.h"
#include "pd_proc.h"
#include "pd_svc.h"

struct hr_node {
	char name[32];
	struct pd_proc proc;
	bool started;
	char host[64];
	int port;
	char base_url[128]; /* http://host:port */
	char health_url[160];
	char metrics_url[160];
};

struct hr_deploy {
	char workdir[512];
	struct pd_svc meta;
	bool meta_up;
	struct hr_node prefill, decode, plain, proxy;
	struct hr_vars vars;
};

void hr_log_tail(const char *path, char *out, size_t sz);
/* argv_json: array of strings (argv[0] = full path); env: "K=V" or NULL. Log: WORKDIR/NAME.log */
int hr_spawn(struct hr_deploy *d, struct hr_node *n, const char *name, cJSON *argv_json,
             const char *env);
int hr_wait_healthy(struct hr_deploy *d, struct hr_node **nodes, size_t n, double deadline,
                    volatile sig_atomic_t *stop, char *why, size_t sz);
void hr_deploy_stop(struct hr_deploy *d);
bool hr_deploy_all_gone(const struct hr_deploy *d);
/* {"prefill": {"warnings": N, "errors": N, "first_warning": ..., "first_error": ...}, ...} */
cJSON *hr_deploy_logs(const struct hr_deploy *d);

#endif
