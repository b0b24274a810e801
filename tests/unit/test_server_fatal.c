/* test_server_fatal.c: the fatal-signal reporter (server/net/fatal.c). Each
 * case forks a child that installs it and then really faults or aborts; the
 * parent reads the child's stderr through a pipe and checks that the child
 * wrote the report line and still died of the signal (so core dumps and
 * sanitizer reports are not lost). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "net/fatal.h"

typedef void (*child_fn)(void);

/* Runs fn in a child with stderr on a pipe; returns the wait status and
 * fills out with what the child wrote. */
static int run_child(child_fn fn, char *out, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit no_core = {0, 0}; /* a test must not litter cores */
        setrlimit(RLIMIT_CORE, &no_core);
        /* cmocka catches these signals itself: start from the defaults,
         * as the server does (a sanitizer's handlers are not tested here) */
        for (int sig = 1; sig < 32; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                signal(sig, SIG_DFL);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        if (tb_fatal_install() != 0)
            _exit(3);
        fn();
        _exit(4); /* not reached when the signal kills */
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < cap && (n = read(fds[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* A write to a read-only page: a real fault, and one the sanitizers do not
 * intercept before it happens (unlike a null store under UBSan). */
static void readonly_write(void)
{
    volatile int *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        _exit(5);
    *p = 1;
}

static void call_abort(void) { abort(); }

static void sent_sigbus(void) { kill(getpid(), SIGBUS); }

static void a_segfault_is_reported_and_still_kills(void **state)
{
    (void)state;
    char out[8192];
    int status = run_child(readonly_write, out, sizeof out);
    assert_non_null(strstr(out, "tumble-server: fatal signal 11 (SIGSEGV, fault at 0x"));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGSEGV);
}

static void an_abort_is_reported_and_still_kills(void **state)
{
    (void)state;
    char out[4096];
    int status = run_child(call_abort, out, sizeof out);
    assert_non_null(strstr(out, "fatal signal 6 (SIGABRT, sent by a process)"));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void a_sent_fatal_signal_is_reported_and_still_kills(void **state)
{
    (void)state;
    char out[4096];
    int status = run_child(sent_sigbus, out, sizeof out);
    assert_non_null(strstr(out, "fatal signal 7 (SIGBUS, sent by a process)"));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGBUS);
}

static void the_line_is_bounded_and_terminated(void **state)
{
    (void)state;
    char big[160], small[16];
    int n = tb_fatal_format(big, sizeof big, SIGSEGV, 1, (void *)0xdeadbeef, 123, 456);
    assert_string_equal(big, "tumble-server: fatal signal 11 (SIGSEGV, fault at 0xdeadbeef) pid 123 thread 456\n");
    assert_int_equal(n, (int)strlen(big));
    n = tb_fatal_format(small, sizeof small, SIGSEGV, 1, NULL, 1, 1);
    assert_int_equal(n, 15);
    assert_int_equal(small[15], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_segfault_is_reported_and_still_kills),
        cmocka_unit_test(an_abort_is_reported_and_still_kills),
        cmocka_unit_test(a_sent_fatal_signal_is_reported_and_still_kills),
        cmocka_unit_test(the_line_is_bounded_and_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
