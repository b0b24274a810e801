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

/* Phases: a worker splits the step period into `count` phases and gives
 * every room one of them, so its rooms are not all due at the same instant.
 * Phase p's grid is origin + p * step / count + n * step (whole steps), and a
 * room of phase p keeps its tb_pace on that grid: its lateness is measured
 * from its own due time, not from the start of the worker's period. */

/* Offset of phase p into the period: p * step_ns / count. */
int64_t tb_phase_offset(int phase, int count, int64_t step_ns);

/* The first time on phase p's grid strictly after after_ns. */
int64_t tb_phase_next_due(int64_t origin_ns, int phase, int count, int64_t step_ns, int64_t after_ns);

/* The phase a new room goes to: the one with the fewest rooms (rooms[p]),
 * the lowest index among equals. Deterministic; count >= 1. */
int tb_phase_pick(const int *rooms, int count);

#endif
