/* SPDX-License-Identifier: Apache-2.0 */
/* doc_boot: pdkv doctor's gen B bootstrap server finding (--bootstrap=URL). */
#ifndef DOC_BOOT_H
#define DOC_BOOT_H

/* doctor_main.c's report(level 0 OK / 1 WARN / 2 FAIL, check, fix or NULL, printf format, ...) */
typedef void (*doc_report_fn)(int lvl, const char *check, const char *fix, const char *fmt, ...);

/* GET URL/query: WARN when the server answers on a non-loopback address, FAIL for each listed
 * worker that does not answer a TCP connect (1 s). */
void doc_check_bootstrap(const char *url, doc_report_fn rep);

#endif
