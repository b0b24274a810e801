/* pace.h: the fixed-step accumulator, in deadline form.
 *
 * A room steps at a fixed dt (1/120 s). Instead of adding elapsed time into
 * an accumulator and draining it in dt pieces, we keep the equivalent
 * absolute due time of the next step: `next_ns`. A worker that wakes at
 * `now` owes floor((now - next_ns) / dt) + 1 steps. If that is more than
 * `max_behind_ns` worth (0.25 s), the world is not fast-forwarded through
 * all of them: it takes the capped number of steps, the rest are counted as
 * overruns and the deadline jumps forward, so a stall never becomes a
 * slow-motion or a spiral of death. Pure arithmetic: unit tested alone.
 */
#ifndef TB_PACE_H
#define TB_PACE_H

#include <stdint.h>

typedef struct tb_pace {
    int64_t next_ns;       /* due time of the next step (monotonic) */
    int64_t step_ns;       /* fixed step, e.g. 8333333 */
    int64_t max_behind_ns; /* catch-up cap, e.g. 250 ms */
} tb_pace;

void tb_pace_init(tb_pace *pace, int64_t start_ns, int64_t step_ns, int64_t max_behind_ns);

/* Steps to take now (0 when not yet due). Adds skipped steps to *overrun and
 * stores how late the first due step is in *lateness_ns (0 if not due). */
int tb_pace_take(tb_pace *pace, int64_t now_ns, uint64_t *overrun, int64_t *lateness_ns);

#endif
