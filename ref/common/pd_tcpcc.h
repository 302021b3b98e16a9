/* SPDX-License-Identifier: Apache-2.0 */
/* pd_tcpcc: the TCP congestion control of data sockets (PDKV_TCP_CONGESTION, docs/tcp.md). */
#ifndef PD_TCPCC_H
#define PD_TCPCC_H

#include <stddef.h>

/* PDKV_TCP_CONGESTION: the TCP congestion control a data socket uses (TCP_CONGESTION), e.g.
 * cubic; unset keeps the host's net.ipv4.tcp_congestion_control. pdkv's transport and the
 * bench's plain-socket baseline both call this on every data socket, so the two compare like
 * for like. A name the kernel refuses is warned about once (what the host offers) and the
 * socket keeps the default. Returns 0, or -errno of the refusal. */
int pd_sock_congestion(int fd);
/* Sets TCP_CONGESTION name on fd; 0, or -errno (-ENOENT: the host offers no such name). */
int pd_tcp_cc_set(int fd, const char *name);
/* The host's default congestion control (net.ipv4.tcp_congestion_control) into buf, and, when
 * avail is not NULL, what it offers (tcp_available_congestion_control); 0 or -errno. */
int pd_tcp_cc_host(char *buf, size_t len, char *avail, size_t alen);

#endif
