/* limits.h: per-address token buckets that outlive a connection.
 *
 * The per-connection limits (input rate, throw rate, grabs held) die with
 * the connection, so a client that reconnects in a loop would get a fresh
 * allowance each time. Limits that must hold across connections of one IP
 * address (room creations) keep their bucket here, on the network thread.
 * The table is bounded: when it is full the entry idle the longest goes
 * (a full bucket carries no state worth keeping).
 */
#ifndef TB_LIMITS_H
#define TB_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

#define TB_RATE_TABLE_MAX 4096

typedef struct tb_rate_entry {
    char addr[48];
    double tokens;
    int64_t last_ns;
} tb_rate_entry;

typedef struct tb_rate_table {
    tb_rate_entry *entries;
    int count, cap;
} tb_rate_table;

/* One token from addr's bucket: per_minute refill, bursts of per_minute.
 * false when the bucket is empty. */
bool tb_rate_take(tb_rate_table *t, const char *addr, int per_minute, int64_t now_ns);
void tb_rate_table_free(tb_rate_table *t);

#endif
