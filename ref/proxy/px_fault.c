/* SPDX-License-Identifier: Apache-2.0 */
/* px_fault: --fault, a pdkv-proxy that behaves like a broken router (drops transfer_id, does
 * not copy prefill's kv_transfer_params) so that the runner's checks can be shown to catch it. */
#include "px.h"
#include "px_contract.h"
#include "px_fault.h"
#include "pd_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
	const char *name;
	unsigned bit;
} names[] = {
    {"drop-transfer-id", PX_FAULT_DROP_TRANSFER_ID},
    {"no-copy-params", PX_FAULT_NO_COPY_PARAMS},
    {"ignore-prefill-errors", PX_FAULT_IGNORE_PREFILL_ERRORS},
    {"reuse-transfer-id", PX_FAULT_REUSE_TRANSFER_ID},
};

int px_fault_parse(const char *spec, unsigned *out, char *err, size_t errsz)
{
	char *copy = strdup(spec), *tok, *save = NULL;
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i].name))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			snprintf(err, errsz,
			         "--fault: expected drop-transfer-id, no-copy-params, "
			         "ignore-prefill-errors or reuse-transfer-id (comma list), got "
			         "\"%.64s\"",
			         tok);
			free(copy);
			return -EINVAL;
		}
		*out |= names[i].bit;
	}
	free(copy);
	return 0;
}

/* One faulty router per process: the wrapped row and the faults it applies. */
static const struct px_contract *base;
static unsigned faults;
static struct px_contract faulty;

static void drop_tid(cJSON *o)
{
	cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "kv_transfer_params");
	if (cJSON_IsObject(p))
		px_json_del_all(p, "transfer_id");
}

static int f_prefill_edit(cJSON *body, const struct px_xfer *x)
{
	int ret = base->prefill_edit(body, x);
	if (!ret && (faults & PX_FAULT_DROP_TRANSFER_ID))
		drop_tid(body);
	return ret;
}

static int f_decode_params(const struct px_xfer *x, const cJSON *p_answer, char **out, char *why,
                           size_t whysz)
{
	int ret = base->decode_params(x, p_answer, out, why, whysz);
	cJSON *o;
	if (ret || !*out)
		return ret;
	if (faults & PX_FAULT_NO_COPY_PARAMS) {
		free(*out);
		*out = NULL; /* the client's body goes to decode unchanged: no kv_transfer_params */
		return 0;
	}
	if (!(faults & PX_FAULT_DROP_TRANSFER_ID) || !(o = cJSON_Parse(*out)))
		return 0;
	px_json_del_all(o, "transfer_id");
	free(*out);
	*out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return *out ? 0 : -ENOMEM;
}

const struct px_contract *px_fault_contract(const struct px_contract *k, unsigned f)
{
	if (!f)
		return k;
	base = k;
	faults = f;
	faulty = *k;
	faulty.prefill_edit = f_prefill_edit;
	faulty.decode_params = f_decode_params;
	return &faulty;
}

int px_fault_transfer_id(char *tid, size_t n)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static char last[128];
	static unsigned long k;
	unsigned long mine;

	pthread_mutex_lock(&mu);
	mine = k++;
	if (mine % 2)
		snprintf(tid, n, "%s", last);
	else
		snprintf(last, sizeof(last), "%s", tid);
	pthread_mutex_unlock(&mu);
	return mine < 2 ? (int)mine + 1 : 0;
}

/* the first pair's meeting point */
static pthread_mutex_t meet_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cv = PTHREAD_COND_INITIALIZER;
static int answered, decoded;

/* waits on meet_cv (meet_mu held) until *what >= n or the deadline dl */
static void meet_wait(const int *what, int n, const struct timespec *dl)
{
	while (*what < n && pthread_cond_timedwait(&meet_cv, &meet_mu, dl) != ETIMEDOUT)
		;
}

void px_fault_first_pair_prefill(int who, bool answered_now, int ms)
{
	struct timespec dl;

	pd_deadline_in(&dl, CLOCK_REALTIME, ms); /* a default condition variable's clock */
	pthread_mutex_lock(&meet_mu);
	if (!answered_now) { /* before the prefill call: the second waits for the first's */
		if (who == 2)
			meet_wait(&answered, 1, &dl);
	} else {
		answered++;
		pthread_cond_broadcast(&meet_cv);
		if (who == 1) /* the first's decode waits for the second's prefill */
			meet_wait(&answered, 2, &dl);
		else /* the second's for the first's decode */
			meet_wait(&decoded, 1, &dl);
	}
	pthread_mutex_unlock(&meet_mu);
}

void px_fault_first_pair_decoded(void)
{
	pthread_mutex_lock(&meet_mu);
	decoded = 1;
	pthread_cond_broadcast(&meet_cv);
	pthread_mutex_unlock(&meet_mu);
}
