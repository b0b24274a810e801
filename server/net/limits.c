/* limits.c: per-address token buckets (see limits.h). */
#include "net/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tb_rate_take(tb_rate_table *t, const char *addr, int per_minute, int64_t now_ns)
{
    tb_rate_entry *e = NULL;
    for (int i = 0; i < t->count && !e; i++)
        if (strcmp(t->entries[i].addr, addr) == 0)
            e = &t->entries[i];
    if (!e) {
        if (t->count == t->cap && t->cap < TB_RATE_TABLE_MAX) {
            int cap = t->cap ? t->cap * 2 : 16;
            tb_rate_entry *n = realloc(t->entries, (size_t)cap * sizeof *n);
            if (n) {
                t->entries = n;
                t->cap = cap;
            }
        }
        if (t->count < t->cap) {
            e = &t->entries[t->count++];
        } else if (t->count > 0) { /* full: reuse the entry idle the longest */
            e = &t->entries[0];
            for (int i = 1; i < t->count; i++)
                if (t->entries[i].last_ns < e->last_ns)
                    e = &t->entries[i];
        } else {
            return true; /* no memory at all: do not punish the client for it */
        }
        snprintf(e->addr, sizeof e->addr, "%s", addr);
        e->tokens = per_minute;
        e->last_ns = now_ns;
    }
    e->tokens += (double)(now_ns - e->last_ns) * per_minute / 60e9;
    e->last_ns = now_ns;
    if (e->tokens > per_minute)
        e->tokens = per_minute;
    if (e->tokens < 1.0)
        return false;
    e->tokens -= 1.0;
    return true;
}

void tb_rate_table_free(tb_rate_table *t)
{
    free(t->entries);
    t->entries = NULL;
    t->count = t->cap = 0;
}
