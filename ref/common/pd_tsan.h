/* SPDX-License-Identifier: Apache-2.0 */
/* pd_tsan: happens-before annotations for ThreadSanitizer at pdkv's hand-off points that TSan
 * cannot see (bytes through a socket, a ZMQ message); they compile to nothing without TSan. */
#ifndef PD_TSAN_H
#define PD_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define PD_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PD_TSAN 1
#endif
#endif

extern char pd_tsan_wire;

#ifdef PD_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* One process-wide sync object stands for "the wire": a thread that has written (or read)
 * memory and then sends bytes about it releases it; a thread that receives bytes acquires it.
 * Coarser than the real order (any receive is ordered after every earlier send), which can hide
 * a race between two threads that also talk over pdkv's sockets, never invent one. */
#define PD_TSAN_WIRE_SEND() __tsan_release(&pd_tsan_wire)
#define PD_TSAN_WIRE_RECV() __tsan_acquire(&pd_tsan_wire)
#else
#define PD_TSAN_WIRE_SEND() ((void)0)
#define PD_TSAN_WIRE_RECV() ((void)0)
#endif

/* rc = pd_tsan_recv_rc(zmq_msg_recv(...)): the acquire after a receive, as an expression */
static inline int pd_tsan_recv_rc(int rc)
{
	PD_TSAN_WIRE_RECV();
	return rc;
}

#endif
