/* fleet_lobby.c: what the fleet shows (fleet.h, "Fleet-wide lobby").
 *
 * Every second each server writes its rooms as JSON rows under
 * tumble:lobby:<owner> (TTL 3 s), keeps itself in the tumble:servers sorted
 * set (score: when it expires) and reads back the other servers' rows, all
 * in one script; /api/rooms joins this server's rows (fresh) with the
 * others' (at most a second old). A draining server leaves the lobby at
 * once. Also here: the fleet's Prometheus counters.
 */
#define _GNU_SOURCE
#include "net/fleet_parts.h"
#include "net/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB__LOBBY_TTL_MS 3000

/* KEYS: servers, this lobby. ARGV: owner, rows, unix ms now, ttl ms. Writes
 * this server's rows, drops the servers that stopped renewing, returns
 * owner, rows, owner, rows... of the others. */
static const char tb__lobby_script[] =
    "redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])\n"
    "redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])\n"
    "local out = {}\n"
    "for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do\n"
    "  if id ~= ARGV[1] then\n"
    "    local v = redis.call('GET', 'tumble:lobby:' .. id)\n"
    "    if v then out[#out + 1] = id; out[#out + 1] = v end\n"
    "  end\n"
    "end\n"
    "return out\n";

/* KEYS: servers, this lobby. ARGV: owner. */
static const char tb__leave_script[] =
    "redis.call('ZREM', KEYS[1], ARGV[1])\n"
    "return redis.call('DEL', KEYS[2])\n";

/* This server's rooms as JSON objects separated by commas (no brackets),
 * the same fields as /api/rooms without a fleet. */
static void tb__own_rows(tb_fleet *fleet, tb_strbuf *b)
{
    int cap = fleet->registry->max_rooms + 8;
    tb_room_row *rows = calloc((size_t)cap, sizeof *rows);
    if (!rows) {
        b->failed = true;
        return;
    }
    int n = tb_registry_rows(fleet->registry, rows, cap);
    int written = 0;
    for (int i = 0; i < n && i < cap; i++) {
        const tb_room_row *r = &rows[i];
        tb_strbuf_printf(b, "%s{\"id\":", written++ ? "," : "");
        tb_strbuf_json_str(b, r->id);
        tb_strbuf_printf(b, ",\"kind\":");
        tb_strbuf_json_str(b, r->kind);
        tb_strbuf_printf(b, ",\"scene\":");
        tb_strbuf_json_str(b, r->scene);
        tb_strbuf_printf(b,
                      ",\"clients\":%d,\"bodies\":%d,\"awake\":%d,\"step_us\":%.2f,\"steps\":%llu,\"worker\":%d,"
                      "\"default\":%s,\"instance\":",
                      r->clients, r->bodies, r->awake, r->step_us, (unsigned long long)r->steps, r->worker,
                      r->keep ? "true" : "false");
        tb_strbuf_json_str(b, fleet->instance);
        tb_strbuf_printf(b, "}");
    }
    free(rows);
}

static void tb__lobby_read(tb_redis *redis, redisReply *reply, void *data)
{
    (void)redis;
    tb_fleet *fleet = data;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    fleet->lobby_updates_total++;
    tb_strbuf b = {0};
    int servers = 0;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        redisReply *rows = reply->element[i + 1];
        if (rows->type != REDIS_REPLY_STRING || rows->len == 0)
            continue;
        /* each server wrote its rows itself (tb__own_rows): joined as they are */
        tb_strbuf_printf(&b, "%s%.*s", b.len ? "," : "", (int)rows->len, rows->str);
        servers++;
    }
    if (b.failed) {
        free(b.buf);
        return;
    }
    free(fleet->others_json);
    fleet->others_json = b.buf ? b.buf : strdup("");
    fleet->others_servers = servers;
}

void tb_fleet_lobby_write(tb_fleet *fleet)
{
    tb_strbuf b = {0};
    tb__own_rows(fleet, &b);
    if (b.failed) {
        free(b.buf);
        return;
    }
    char lobby[192], now[24], ttl[16];
    snprintf(lobby, sizeof lobby, "tumble:lobby:%s", fleet->owner);
    snprintf(now, sizeof now, "%lld", (long long)tb_fleet_unix_ms());
    snprintf(ttl, sizeof ttl, "%d", TB__LOBBY_TTL_MS);
    const char *keys[2] = {"tumble:servers", lobby};
    const char *args[4] = {fleet->owner, b.buf ? b.buf : "", now, ttl};
    size_t lens[4] = {SIZE_MAX, b.len, SIZE_MAX, SIZE_MAX};
    tb_fleet_eval(fleet, tb__lobby_read, fleet, tb__lobby_script, 2, keys, 4, args, lens);
    free(b.buf);
}

char *tb_fleet_rooms_json(tb_fleet *fleet, size_t *len)
{
    tb_strbuf b = {0};
    tb_strbuf_printf(&b, "[");
    tb__own_rows(fleet, &b);
    size_t own_end = b.len;
    if (fleet->others_json && fleet->others_json[0])
        tb_strbuf_printf(&b, "%s%s", own_end > 1 ? "," : "", fleet->others_json);
    tb_strbuf_printf(&b, "]\n");
    if (b.failed) {
        free(b.buf);
        return NULL;
    }
    *len = b.len;
    return b.buf;
}

static void tb__left(tb_redis *redis, redisReply *reply, void *data)
{
    (void)redis, (void)reply, (void)data;
}

void tb_fleet_lobby_leave(tb_fleet *fleet)
{
    char lobby[192];
    snprintf(lobby, sizeof lobby, "tumble:lobby:%s", fleet->owner);
    const char *keys[2] = {"tumble:servers", lobby};
    const char *args[1] = {fleet->owner};
    tb_fleet_eval(fleet, tb__left, NULL, tb__leave_script, 2, keys, 1, args, NULL);
}

char *tb_fleet_metrics_text(tb_fleet *fleet)
{
    tb_strbuf b = {0};
    const tb_redis *r = &fleet->redis;
#define TB__M(name, type, help, fmt, value) \
    tb_strbuf_printf(&b, "# HELP tumble_" name " " help "\n# TYPE tumble_" name " " type "\ntumble_" name " " fmt "\n", value)
    TB__M("redis_up", "gauge", "1 while the Redis connection is up.", "%d", r->state == TB_REDIS_UP);
    TB__M("redis_commands_total", "counter", "Redis commands sent.", "%llu", (unsigned long long)r->commands_total);
    TB__M("redis_failures_total", "counter", "Redis commands that failed (error, lost, timed out).", "%llu",
          (unsigned long long)r->failures_total);
    TB__M("redis_refused_total", "counter", "Redis commands not sent: connection down or too much waiting.", "%llu",
          (unsigned long long)r->refused_total);
    TB__M("redis_timeouts_total", "counter", "Redis connections dropped for a reply or connect that took too long.",
          "%llu", (unsigned long long)r->timeouts_total);
    TB__M("redis_connects_total", "counter", "Redis connections made.", "%llu", (unsigned long long)r->connects_total);
    TB__M("redis_loop_seconds_total", "counter", "Network-thread CPU time in Redis reads, writes and reply callbacks.",
          "%.6f", (double)r->loop_ns_total / 1e9);
    TB__M("redis_pending", "gauge", "Redis commands waiting for their reply.", "%d", r->pending);
    TB__M("fleet_rooms", "gauge", "Rooms this server runs under a lease.", "%d", fleet->room_count);
    TB__M("fleet_servers", "gauge", "Other servers in the fleet lobby at the last read.", "%d", fleet->others_servers);
    TB__M("checkpoints_written_total", "counter", "Room checkpoints written to Redis.", "%llu",
          (unsigned long long)fleet->checkpoints_written_total);
    TB__M("checkpoints_failed_total", "counter", "Room checkpoints Redis did not take (error, timeout, lease lost).",
          "%llu", (unsigned long long)fleet->checkpoints_failed_total);
    TB__M("checkpoints_skipped_total", "counter", "Room checkpoints due but skipped (Redis down or busy).", "%llu",
          (unsigned long long)fleet->checkpoints_skipped_total);
    TB__M("checkpoint_bytes_total", "counter", "Bytes of room checkpoints written.", "%llu",
          (unsigned long long)fleet->checkpoint_bytes_total);
    TB__M("checkpoint_network_seconds_total", "counter", "Network-thread CPU time spent sending checkpoints.", "%.6f",
          (double)fleet->checkpoint_net_ns_total / 1e9);
    TB__M("handoffs_total", "counter", "Rooms restored here from another server's checkpoint.", "%llu",
          (unsigned long long)fleet->handoffs_total);
    TB__M("restore_failures_total", "counter", "Checkpoints that could not be restored (room started afresh).", "%llu",
          (unsigned long long)fleet->restore_failures_total);
    TB__M("lease_losses_total", "counter", "Rooms stopped here because another server holds their lease.", "%llu",
          (unsigned long long)fleet->lease_losses_total);
    TB__M("claims_refused_total", "counter", "Joins refused: the room is running on another server.", "%llu",
          (unsigned long long)fleet->claims_refused_total);
    TB__M("claims_degraded_total", "counter", "Rooms opened without a lease because Redis was down.", "%llu",
          (unsigned long long)fleet->claims_degraded_total);
#undef TB__M
    if (b.failed) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}
