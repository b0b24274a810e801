/* clock.c: monotonic time and absolute-time sleeps (see clock.h). */
#define _POSIX_C_SOURCE 200809L
#include "sim/clock.h"

#include <errno.h>
#include <time.h>

int64_t tb_clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * TB_NS_PER_SEC + ts.tv_nsec;
}

int64_t tb_clock_cpu_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * TB_NS_PER_SEC + ts.tv_nsec;
}

void tb_clock_sleep_until(int64_t deadline_ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ns / TB_NS_PER_SEC);
    ts.tv_nsec = (long)(deadline_ns % TB_NS_PER_SEC);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}
