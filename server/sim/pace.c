/* pace.c: fixed-step deadlines with a catch-up cap, and the phase grids of a worker (see pace.h). */
#include "sim/pace.h"

void tb_pace_init(tb_pace *pace, int64_t start_ns, int64_t step_ns, int64_t max_behind_ns)
{
    pace->next_ns = start_ns + step_ns;
    pace->step_ns = step_ns;
    pace->max_behind_ns = max_behind_ns;
}

int tb_pace_take(tb_pace *pace, int64_t now_ns, uint64_t *overrun, int64_t *lateness_ns)
{
    if (now_ns < pace->next_ns) {
        *lateness_ns = 0;
        return 0;
    }
    int64_t behind = now_ns - pace->next_ns;
    *lateness_ns = behind;
    int64_t owed = behind / pace->step_ns + 1;
    int64_t cap = pace->max_behind_ns / pace->step_ns;
    if (cap < 1)
        cap = 1;
    if (owed > cap) {
        *overrun += (uint64_t)(owed - cap);
        pace->next_ns += (owed - cap) * pace->step_ns;
        owed = cap;
    }
    pace->next_ns += owed * pace->step_ns;
    return (int)owed;
}

int64_t tb_phase_offset(int phase, int count, int64_t step_ns)
{
    return (int64_t)phase * step_ns / count;
}

int64_t tb_phase_next_due(int64_t origin_ns, int phase, int count, int64_t step_ns, int64_t after_ns)
{
    int64_t due = origin_ns + tb_phase_offset(phase, count, step_ns);
    if (due > after_ns)
        due -= ((due - after_ns - 1) / step_ns) * step_ns; /* the earliest grid time still after after_ns */
    else
        due += ((after_ns - due) / step_ns + 1) * step_ns;
    return due;
}

int tb_phase_pick(const int *rooms, int count)
{
    int best = 0;
    for (int p = 1; p < count; p++)
        if (rooms[p] < rooms[best])
            best = p;
    return best;
}
