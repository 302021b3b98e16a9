/* SPDX-License-Identifier: Apache-2.0 */
/* pd_log: one logging entry point for every pdkv library and binary.
 * Level from PDKV_LOG (error|warn|info|debug, default info); lines go to stderr with a prefix. */
#ifndef PD_LOG_H
#define PD_LOG_H

enum pd_log_level { PD_LOG_ERROR = 0, PD_LOG_WARN, PD_LOG_INFO, PD_LOG_DEBUG };

/* Name shown in every line (the program, e.g. "pdkv-standin[prefill]"). */
void pd_log_set_name(const char *name);
void pd_log_set_level(enum pd_log_level lvl);
enum pd_log_level pd_log_get_level(void);
void pd_log_msg(enum pd_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs a line naming the signal (async-signal-safe) before a signal whose default action ends
 * the process silently does so: SIGHUP, SIGUSR1/2, SIGALRM, SIGSEGV, SIGBUS, SIGABRT, ... .
 * Then the default action runs (a core where one is allowed). Signals the program handles
 * itself (SIGINT, SIGTERM) and ignores (SIGPIPE) are left alone; SIGKILL cannot be seen. */
void pd_log_fatal_signals(void);

#define pd_err(...)  pd_log_msg(PD_LOG_ERROR, __VA_ARGS__)
#define pd_warn(...) pd_log_msg(PD_LOG_WARN, __VA_ARGS__)
#define pd_info(...) pd_log_msg(PD_LOG_INFO, __VA_ARGS__)
#define pd_dbg(...)  pd_log_msg(PD_LOG_DEBUG, __VA_ARGS__)

#endif
