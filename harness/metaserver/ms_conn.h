/* ms_conn: pdkv-metaserver's connection limits — total and per client address, checked when
 * a connection is accepted, with a log line when one is hit (MHD accept-policy callback). */
#ifndef MS_CONN_H
#define MS_CONN_H

#include <microhttpd.h>
#include <sys/socket.h>

#define MS_DEFAULT_MAX_CONN       256u
#define MS_DEFAULT_MAX_CONN_PER   32u
#define MS_DEFAULT_IDLE_TIMEOUT_S 10u

void ms_conn_limits(unsigned max_total, unsigned max_per_client);
/* MHD_OPTION_ACCEPT_POLICY_CALLBACK and MHD_OPTION_NOTIFY_CONNECTION */
enum MHD_Result ms_conn_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void ms_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                    enum MHD_ConnectionNotificationCode toe);
unsigned ms_conn_open(void); /* connections held now */

#endif
