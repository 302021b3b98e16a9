/* SPDX-License-Identifier: Apache-2.0 */
/* sa_record: --record-requests FILE — what each completion request looked like when it reached
 * the stand-in, so a runner can grade the router in front of it (JSON lines, one per request). */
#include "sa_record.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECORD_BODY_MAX (1u << 20) /* bodies above this are recorded as truncated text */

static FILE *g_file;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread cJSON *t_current; /* the record of the request this thread serves */

/* the headers a router sets or forwards (vLLM's routers: X-Request-Id, Authorization, dp rank) */
static const char *const headers[] = {"X-Request-Id", "Authorization", "X-data-parallel-rank",
                                      "Content-Type", "Accept"};

double sa_record_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int sa_record_open(const char *path)
{
	if (!path)
		return 0;
	g_file = fopen(path, "a");
	if (!g_file)
		return -errno;
	return 0;
}

cJSON *sa_record_begin(struct MHD_Connection *c, const char *url, const char *body, size_t len,
                       double t_arrival)
{
	cJSON *r, *h, *b;
	if (!g_file)
		return NULL;
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "path", url);
	cJSON_AddNumberToObject(r, "t_arrival", t_arrival);
	h = cJSON_AddObjectToObject(r, "headers");
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, headers[i]);
		if (v)
			cJSON_AddStringToObject(h, headers[i], v);
	}
	b = body && len <= RECORD_BODY_MAX ? cJSON_ParseWithLength(body, len) : NULL;
	if (b)
		cJSON_AddItemToObject(r, "body", b);
	else if (body) /* not JSON (or too big): the start of the text, so a person sees it */
		cJSON_AddItemToObject(
		    r, "body_text",
		    cJSON_CreateString(len > 4096 ? "(over 4 KiB, not JSON)" : body));
	t_current = r;
	return r;
}

void sa_record_answered(cJSON *rec, int status)
{
	if (!rec)
		return;
	cJSON_AddNumberToObject(rec, "t_answer", sa_record_now());
	if (status)
		cJSON_AddNumberToObject(rec, "status", status);
}

void sa_record_kvtp(const cJSON *kvtp)
{
	if (!t_current)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(t_current, "response_kv_transfer_params");
	cJSON_AddItemToObject(t_current, "response_kv_transfer_params",
	                      kvtp ? cJSON_Duplicate(kvtp, 1) : cJSON_CreateNull());
}

void sa_record_end(cJSON *rec)
{
	char *line;
	if (!rec)
		return;
	if (t_current == rec)
		t_current = NULL;
	cJSON_AddNumberToObject(rec, "t_done", sa_record_now());
	line = cJSON_PrintUnformatted(rec);
	cJSON_Delete(rec);
	if (!line)
		return;
	pthread_mutex_lock(&g_lock);
	fprintf(g_file, "%s\n", line);
	fflush(g_file);
	pthread_mutex_unlock(&g_lock);
	free(line);
}
