/* fatal.h: a last word before the process dies of a fatal signal.
 *
 * tb_fatal_install() hooks SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT
 * (on an alternate stack in the main thread, so a stack overflow there is
 * reported too). The handler
 * writes one line to stderr with write(2) -- signal, fault address, pid,
 * thread -- then puts back the handler that was there before (the default,
 * or a sanitizer's) and lets the signal take its course: a fault re-executes
 * and faults again, a sent signal is raised again. So the process still dies
 * of the same signal, dumps core if allowed, and ASan still prints its
 * report. Everything in the handler is async-signal-safe.
 */
#ifndef TB_FATAL_H
#define TB_FATAL_H

/* Idempotent; call once from main before starting threads. 0 or -1. */
int tb_fatal_install(void);

/* The line the handler writes, formatted into buf (for tests); returns its
 * length. Async-signal-safe. */
int tb_fatal_format(char *buf, int cap, int signum, int code, const void *addr, long pid, long tid);

#endif
