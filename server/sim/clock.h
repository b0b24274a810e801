/* clock.h: the one clock the server schedules by.
 *
 * Every deadline in Tumble is an absolute CLOCK_MONOTONIC time in
 * nanoseconds (int64_t, good for 292 years). Workers sleep until such a
 * deadline with clock_nanosleep(TIMER_ABSTIME), so sleeping never drifts:
 * a late wake-up shortens the next sleep instead of pushing every later step.
 */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

#include <stdint.h>
#include <sys/types.h> /* clockid_t, whatever the feature macros */

#define TB_NS_PER_SEC 1000000000LL
#define TB_NS_PER_MS 1000000LL
#define TB_NS_PER_US 1000LL

/* Monotonic now, in ns. */
int64_t tb_clock_now_ns(void);

/* CPU time (user + system) on `clock` in ns: CLOCK_THREAD_CPUTIME_ID (the
 * calling thread), CLOCK_PROCESS_CPUTIME_ID, or another thread's
 * (pthread_getcpuclockid). -1 if the clock cannot be read. */
int64_t tb_clock_cpu_ns(clockid_t clock);

/* Sleep until the absolute monotonic time `deadline_ns` (returns early only
 * on a signal; callers loop anyway). */
void tb_clock_sleep_until(int64_t deadline_ns);

#endif
