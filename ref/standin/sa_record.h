/* SPDX-License-Identifier: Apache-2.0 */
/* sa_record: --record-requests FILE — one JSON line per completion request as it reached the
 * stand-in (path, the headers a router sets, the body, arrival / answer / done times). */
#ifndef SA_RECORD_H
#define SA_RECORD_H

#include <cJSON.h>
#include <microhttpd.h>

/* Opens FILE for appending; 0 or -errno. NULL path = recording off. */
int sa_record_open(const char *path);
/* The record of a request being dispatched (NULL when recording is off). */
cJSON *sa_record_begin(struct MHD_Connection *c, const char *url, const char *body, size_t len,
                       double t_arrival);
/* Marks the moment the answer was queued (a JSON answer: before its first byte goes out). */
void sa_record_answered(cJSON *rec, int status);
/* The kv_transfer_params the answer carries (NULL = null), kept in the record of the request
 * this thread serves (libmicrohttpd runs a connection's callbacks on its own thread). */
void sa_record_kvtp(const cJSON *kvtp);
/* Adds the done time, writes the line and frees rec. */
void sa_record_end(cJSON *rec);
/* CLOCK_REALTIME in seconds: comparable between processes on one host. */
double sa_record_now(void);

#endif
