/* limits.h: token buckets, and the per-address ones that outlive a connection.
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

/* The one token bucket of the server: `rate` tokens a second, at most
 * `burst` held; a new bucket starts full. Every limit (a connection's input,
 * throw, flood and error allowances, an address's room creations) is one. */
typedef struct tb_bucket {
    double tokens;
    int64_t last_ns;
} tb_bucket;

void tb_bucket_init(tb_bucket *b, double burst, int64_t now_ns);
/* Refill for the time since the last call, then take one token: false (and
 * nothing taken) when less than one is left. */
bool tb_bucket_take(tb_bucket *b, double rate, double burst, int64_t now_ns);

typedef struct tb_rate_entry {
    char addr[48];
    tb_bucket bucket;
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
