/* fatal.c: report fatal signals on stderr, then die of them (see fatal.h). */
#define _GNU_SOURCE
#include "net/fatal.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int tb__fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define TB__NFATAL ((int)(sizeof tb__fatal_signals / sizeof tb__fatal_signals[0]))
static struct sigaction tb__previous[TB__NFATAL];
static int tb__installed;

static const char *tb__signal_name(int signum)
{
    switch (signum) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
    }
}

/* Appends s to buf at *at, never past cap - 1. */
static void tb__put(char *buf, int cap, int *at, const char *s)
{
    while (*s && *at < cap - 1)
        buf[(*at)++] = *s++;
}

static void tb__put_num(char *buf, int cap, int *at, uint64_t v, unsigned base)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v && n < (int)sizeof digits);
    while (n && *at < cap - 1)
        buf[(*at)++] = digits[--n];
}

int tb_fatal_format(char *buf, int cap, int signum, int code, const void *addr, long pid, long tid)
{
    int at = 0;
    if (cap <= 0)
        return 0;
    tb__put(buf, cap, &at, "tumble-server: fatal signal ");
    tb__put_num(buf, cap, &at, (uint64_t)signum, 10);
    tb__put(buf, cap, &at, " (");
    tb__put(buf, cap, &at, tb__signal_name(signum));
    tb__put(buf, cap, &at, code > 0 ? ", fault at 0x" : ", sent by a process");
    if (code > 0)
        tb__put_num(buf, cap, &at, (uint64_t)(uintptr_t)addr, 16);
    tb__put(buf, cap, &at, ") pid ");
    tb__put_num(buf, cap, &at, (uint64_t)pid, 10);
    tb__put(buf, cap, &at, " thread ");
    tb__put_num(buf, cap, &at, (uint64_t)tid, 10);
    tb__put(buf, cap, &at, "\n");
    buf[at] = 0;
    return at;
}

static void tb__on_fatal(int signum, siginfo_t *info, void *context)
{
    (void)context;
    int saved_errno = errno;
    char line[160];
    int n = tb_fatal_format(line, sizeof line, signum, info ? info->si_code : 0, info ? info->si_addr : NULL,
                            (long)getpid(), (long)syscall(SYS_gettid));
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    for (int i = 0; i < TB__NFATAL; i++)
        if (tb__fatal_signals[i] == signum)
            sigaction(signum, &tb__previous[i], NULL);
    /* A fault (si_code > 0, from the kernel) recurs when the instruction is
     * re-executed on return, now reaching the previous handler with the
     * real fault address. A signal that was sent (kill, raise, abort) does
     * not: send it again; it is blocked in here and arrives on return. */
    if (!info || info->si_code <= 0 || signum == SIGABRT)
        raise(signum);
    errno = saved_errno;
}

int tb_fatal_install(void)
{
    if (tb__installed)
        return 0;
    /* An alternate stack of our own unless one is set (a sanitizer's). */
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
        static char alt[64 * 1024];
        stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
        sigaltstack(&ss, NULL);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = tb__on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < TB__NFATAL; i++)
        if (sigaction(tb__fatal_signals[i], &sa, &tb__previous[i]) != 0)
            return -1;
    tb__installed = 1;
    return 0;
}
