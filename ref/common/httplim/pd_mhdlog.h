/* SPDX-License-Identifier: Apache-2.0 */
/* pd_mhdlog: libmicrohttpd's own error messages through pdkv's logger (MHD_OPTION_EXTERNAL_LOGGER)
 * at most once a second with a count of the rest, and a back-off when accept() runs out of fds. */
#ifndef PD_MHDLOG_H
#define PD_MHDLOG_H

#include <stdarg.h>
#include <stdint.h>

/* MHD_OPTION_EXTERNAL_LOGGER, pd_mhd_log, NULL: a WARN line "libmicrohttpd: MSG" at most once a
 * second (the next one says how many were left out in between; those held when the process
 * exits are counted in a last line, "N more messages left out since the last one"). A message about
 * running out of file descriptors (EMFILE, ENFILE, "resource limit") also makes the calling thread
 * (MHD's accept loop, which would otherwise retry at once, without end) sleep PD_MHD_BACKOFF_MS. */
#define PD_MHD_BACKOFF_MS 100
void pd_mhd_log(void *cls, const char *fmt, va_list ap);
/* Messages seen and messages printed since the process started (for tests). */
void pd_mhd_log_counts(uint64_t *seen, uint64_t *printed);

#endif
