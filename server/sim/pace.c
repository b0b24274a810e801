/* pace.c: fixed-step deadlines with a catch-up cap (see pace.h). */
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
