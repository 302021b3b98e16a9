/* SPDX-License-Identifier: Apache-2.0 */
/* pd_mhdhdr: a whole-header deadline for libmicrohttpd servers (nginx's client_header_timeout):
 * MHD's connection timeout counts idle time only, so a header trickled a line at a time held a
 * slot. */
#ifndef PD_MHDHDR_H
#define PD_MHDHDR_H

#include <microhttpd.h>

/* Default deadline; PDKV_HTTP_HEADER_TIMEOUT_MS (100..3600000) overrides it. */
#define PD_MHD_HEADER_TIMEOUT_MS 10000

struct pd_mhdhdr;

/* who names the server in the log; idle_ms is the server's idle timeout, allowed between the
 * requests of a keep-alive connection on top of the deadline. NULL without memory. Starts one
 * watchdog thread that shuts down (SHUT_RDWR) connections past their deadline; MHD then sees EOF
 * and closes them as any other. */
struct pd_mhdhdr *pd_mhdhdr_new(const char *who, unsigned idle_ms);
void pd_mhdhdr_free(struct pd_mhdhdr *h);
/* From MHD_OPTION_NOTIFY_CONNECTION: STARTED starts the clock (the socket_context slot holds
 * the connection's entry), CLOSED forgets the connection before MHD closes its socket. */
void pd_mhdhdr_notify(struct pd_mhdhdr *h, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode toe);
/* The access handler's first call of a request (headers complete): stops the clock. */
void pd_mhdhdr_headers_done(struct MHD_Connection *c);
/* A request completed (MHD_OPTION_NOTIFY_COMPLETED): the next one's headers must come within
 * idle_ms + the deadline. */
void pd_mhdhdr_request_done(struct MHD_Connection *c);
unsigned long long pd_mhdhdr_dropped(struct pd_mhdhdr *h); /* connections cut so far */

#endif
