/* limits.c: token buckets, and the per-address table of them (see limits.h). */
#include "net/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_bucket_init(tb_bucket *b, double burst, int64_t now_ns)
{
    b->tokens = burst;
    b->last_ns = now_ns;
}

bool tb_bucket_take(tb_bucket *b, double rate, double burst, int64_t now_ns)
{
    if (now_ns > b->last_ns)
        b->tokens += (double)(now_ns - b->last_ns) * rate / 1e9;
    b->last_ns = now_ns;
    if (b->tokens > burst)
        b->tokens = burst;
    if (b->tokens < 1.0)
        return false;
    b->tokens -= 1.0;
    return true;
}

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
                if (t->entries[i].bucket.last_ns < e->bucket.last_ns)
                    e = &t->entries[i];
        } else {
            return true; /* no memory at all: do not punish the client for it */
        }
        snprintf(e->addr, sizeof e->addr, "%s", addr);
        tb_bucket_init(&e->bucket, per_minute, now_ns);
    }
    return tb_bucket_take(&e->bucket, per_minute / 60.0, per_minute, now_ns);
}

void tb_rate_table_free(tb_rate_table *t)
{
    free(t->entries);
    t->entries = NULL;
    t->count = t->cap = 0;
}
