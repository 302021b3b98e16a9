/* SPDX-License-Identifier: Apache-2.0 */
/* pd_util: small helpers every pdkv module needs — time, files, numbers, sockets.
 * All fallible functions return 0 or a negative errno-style code. */
#ifndef PD_UTIL_H
#define PD_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define PD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

uint64_t pd_now_ns(void); /* CLOCK_MONOTONIC */
double pd_now_s(void);
void pd_sleep_ms(int ms);
/* *v read under mu: a counter another thread changes, read once for a caller. */
size_t pd_locked_size(pthread_mutex_t *mu, const size_t *v);
/* Sleeps of microseconds for the calling thread: its timer slack goes from Linux's default
 * 50 us to 1 us (once per thread), so a wait that polls a transfer with short naps (kvc's
 * READ, kv1's WRITE, pdkv bench) notices the end within a few us instead of
 * every nap lasting 50 us or more. te_transfer_sync leaves its caller's slack alone. */
void pd_fine_naps(void);
/* Futex on a 32-bit word of this process: wake wakes every sleeper of *a; wait sleeps while
 * *a == v, at most ns: 0 when woken, else -1 (errno ETIMEDOUT, EAGAIN: *a != v, EINTR). */
void pd_futex_wake(uint32_t *a);
int pd_futex_wait(uint32_t *a, uint32_t v, uint64_t ns);

/* Reads a whole file (NUL-terminated, *len without the NUL). Refuses files over max bytes.
 * Returns 0, -ENOENT, -EISDIR, -EFBIG, or another -errno. */
int pd_read_file(const char *path, size_t max, char **out, size_t *len);
/* Writes a whole file: into a temporary beside it, fsync, rename over path, so a failed write
 * (a full disk) leaves the previous file (or none), never a truncated one. Not a regular file
 * (/dev/stdout, a FIFO, a symbolic link): written in place. 0 or -errno (-ENOSPC, ...). */
int pd_write_file(const char *path, const void *data, size_t len);
int pd_mkdir_p(const char *path);
/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no overlong forms, nothing
 * above U+10FFFF; encoded surrogates U+D800..DFFF only when surrogates), or 0 when the bytes
 * there are not one. n >= 1. */
size_t pd_utf8_seq(const unsigned char *s, size_t n, bool surrogates);
/* Writes code point cp (at most U+10FFFF) as UTF-8 into out; returns its length, 1 to 4. */
size_t pd_utf8_encode(uint32_t cp, char out[4]);
/* Offset of the first byte of s[0..n) that is not well-formed UTF-8, or -1 when all is. */
long pd_utf8_invalid_at(const char *s, size_t n, bool surrogates);
int pd_rm_rf(const char *path); /* removes a directory tree; refuses "/" and "" */

/* Strict number parsing: the whole string must be consumed. 0 or -EINVAL/-ERANGE. */
int pd_parse_i64(const char *s, int64_t *out);
int pd_parse_u64(const char *s, uint64_t *out);
/* Sizes with an optional K/M/G/KiB/MiB/GiB suffix (binary) or plain number or 2e9. */
int pd_parse_size(const char *s, uint64_t *out);

/* Splits "host:port" (also "[v6]:port"). host_out gets at most host_sz-1 chars.
 * Port must be 1..65535. */
int pd_split_hostport(const char *s, char *host_out, size_t host_sz, int *port_out);

/* A TCP port that is free right now on host: below the ephemeral range (so no connect() takes
 * it before the caller binds it) when there is room, else from bind to port 0. */
int pd_free_port(const char *host);
/* Waits until a TCP connect to host:port succeeds; 0 or -ETIMEDOUT. */
int pd_wait_tcp(const char *host, int port, int timeout_ms);
/* Sets SO_REUSEADDR, binds and listens; returns the fd or -errno. host NULL = any. */
int pd_tcp_listen(const char *host, int port, int backlog);
/* Connects with a timeout; returns the fd or -errno. */
int pd_tcp_connect(const char *host, int port, int timeout_ms);
/* Full read/write loops; 0, -EPIPE on EOF, or -errno. Sockets are read with MSG_WAITALL and
 * written with MSG_NOSIGNAL. pd_writev_full sends every iovec (it advances iov in place). */
struct iovec;
int pd_read_full(int fd, void *buf, size_t len);
/* The most one recv() of a large body asks for (PDKV_TCP_RECV_CHUNK, a size; 0 = no cap;
 * default PD_SOCK_RECV_CHUNK). Measured, not derived (docs/tcp.md): over TCP loopback on 2
 * cores, 4 MiB READs ran at 2.9-3.0 GB/s asked for whole and 4.1-4.4 GB/s asked for in 256 KiB
 * pieces (`pdkv bench`, same run). */
#define PD_SOCK_RECV_CHUNK (256 << 10)
size_t pd_sock_recv_chunk(void);
/* How long a receive of a body that is on its way polls (MSG_DONTWAIT) before it sleeps in the
 * kernel (PDKV_TCP_SPIN_US, microseconds; 0 = never). Measured (docs/tcp.md): on a 2-core
 * host the hand-offs moved up to a quarter more per second with 50 us than without (a thread
 * that sleeps for every piece is woken onto the sender's core); `pdkv bench` and a 16-core
 * host did not move beyond the noise. */
#define PD_SOCK_SPIN_US 50
uint64_t pd_sock_spin_ns(void);
/* The spin an environment value e of variable name gives, in ns (NULL or "": the default;
 * not 0..100000 us: a warning and the default). */
uint64_t pd_spin_parse_ns(const char *name, const char *e);
/* recvmsg(fd, m, flags) after polling for up to pd_sock_spin_ns() while nothing has come. */
struct msghdr;
ssize_t pd_recvmsg_spin(int fd, struct msghdr *m, int flags);
/* pd_read_full whose receives poll first (pd_recvmsg_spin): for bodies whose bytes follow. */
int pd_read_full_spin(int fd, void *buf, size_t len);
/* The most one send of a large READ reply or WRITE body hands the kernel (PDKV_TCP_SEND_CHUNK;
 * 0 = no cap; default PD_SOCK_SEND_CHUNK): 16 MiB READs ran at 3.4-4.0 GB/s sent whole and
 * 5.3-5.5 GB/s sent 1 MiB per sendmsg (same host, same run; 256 KiB pieces were slower than
 * whole ones); 16 MiB WRITEs at 2.5-2.7 against 3.6-4.0 GB/s, 1 MiB WRITEs at 3.0-3.2 against
 * 3.6-3.7, 64 KiB ones unchanged (2 cores, loopback). */
#define PD_SOCK_SEND_CHUNK (1 << 20)
size_t pd_sock_send_chunk(void);
/* The cap an environment value e of variable name gives (NULL or "": def; not a size or below
 * 4K: a warning and def; 0: SIZE_MAX - 1, no cap). */
size_t pd_chunk_parse(const char *name, const char *e, size_t def);
/* Moves the vector *v of *n entries past done bytes a sendmsg/recvmsg moved: whole entries are
 * dropped, the next one starts later. */
void pd_iov_advance(struct iovec **v, int *n, size_t done);
/* pd_writev_full handing sendmsg at most max bytes per call (0 or SIZE_MAX: no cap). */
int pd_writev_full_max(int fd, struct iovec *iov, int n, size_t max);
/* Shortens v[0..n) (n >= 1) to at most max bytes in all, for one sendmsg: returns how many
 * entries to send; the last of them may be cut, its full length left in *full (put it back if
 * the vector is used again). */
size_t pd_iov_cap(struct iovec *v, int n, size_t max, size_t *full);
int pd_write_full(int fd, const void *buf, size_t len);
int pd_writev_full(int fd, struct iovec *iov, int n);

/* printf into a malloc'd string (abort-free: NULL on failure). */
char *pd_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ts = clock's now + ms: the absolute deadline pthread_cond_timedwait wants (CLOCK_REALTIME
 * unless the condition variable was set to another clock). */
void pd_deadline_in(struct timespec *ts, clockid_t clock, int ms);
/* Entries of directory dir not starting with '.'; -1 when it cannot be opened. */
int pd_dir_count(const char *dir);
char *pd_vasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* printf into a caller's error buffer; nothing when err is NULL or sz 0. */
void pd_seterr(char *err, size_t sz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "<path>: <field>: <message>" into err (the form of every config-file error); returns -1. */
int pd_field_err(const char *path, char *err, size_t sz, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int pd_field_verr(const char *path, char *err, size_t sz, const char *field, const char *fmt,
                  va_list ap) __attribute__((format(printf, 5, 0)));

#endif
