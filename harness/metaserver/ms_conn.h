/* SPDX-License-Identifier: Apache-2.0 */
/* ms_conn: pdkv-metaserver's connection-limit defaults; the limits themselves are the shared
 * libmicrohttpd limiter (ref/common/httplim/pd_connlim.h). */
#ifndef MS_CONN_H
#define MS_CONN_H

#define MS_DEFAULT_MAX_CONN       256u
#define MS_DEFAULT_MAX_CONN_PER   32u
#define MS_DEFAULT_IDLE_TIMEOUT_S 10u

#endif
