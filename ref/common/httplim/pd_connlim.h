/* SPDX-License-Identifier: Apache-2.0 */
/* pd_connlim: connection limits for a libmicrohttpd server — total and per client address,
 * checked at accept (MHD's accept-policy callback) with a rate-limited log line naming the flag. */
#ifndef PD_CONNLIM_H
#define PD_CONNLIM_H

#include <microhttpd.h>
#include <stdint.h>
#include <sys/socket.h>

struct pd_connlim;

/* who: the server's name for the log ("pdkv-standin"); the limits >= 1. NULL without memory. */
struct pd_connlim *pd_connlim_new(const char *who, unsigned max_total, unsigned max_per_client);
void pd_connlim_free(struct pd_connlim *l);
/* MHD_OPTION_ACCEPT_POLICY_CALLBACK (cls = the limiter) */
enum MHD_Result pd_connlim_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
/* MHD_OPTION_NOTIFY_CONNECTION (cls = the limiter) */
void pd_connlim_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe);
/* Adds the whole-header deadline (pd_mhdhdr.h) to the server: its handlers then call
 * pd_mhdhdr_headers_done on a request's first call and pd_mhdhdr_request_done when it completed;
 * idle_s is the server's idle timeout. Call before MHD starts; -1 without memory or thread. */
int pd_connlim_header_deadline(struct pd_connlim *l, unsigned idle_s);
unsigned pd_connlim_open(struct pd_connlim *l);    /* connections held now */
uint64_t pd_connlim_refused(struct pd_connlim *l); /* refused since start */

#endif
