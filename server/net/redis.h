/* redis.h: one asynchronous Redis connection on the network loop.
 *
 * What a fleet of servers shares (room checkpoints, leases, the lobby) lives
 * in Redis (net/fleet.h). Every Redis call goes through this connection:
 * hiredis's async API with its libuv adapter, on the same libuv loop as
 * libwebsockets, so no call ever runs on a worker and none blocks the loop:
 *
 *   - the libuv adapter is redis.c's own copy of hiredis's (timed);
 *   - the host name is resolved with uv_getaddrinfo (hiredis would call
 *     getaddrinfo itself, which blocks), then hiredis connects to the
 *     numeric address without blocking;
 *   - hiredis 0.14 (Debian 12) has no command timeout, so a watchdog timer
 *     looks at the oldest unanswered command: older than the timeout (Redis
 *     hung, or a network that drops packets) and the connection is freed,
 *     which answers every pending command with a NULL reply, and a new one
 *     is made after a backoff. A connect that takes as long is given up the
 *     same way;
 *   - a command issued while the connection is down, or while too much is
 *     already waiting, fails at once (TB_EBUSY): callers skip work rather
 *     than queue it without bound.
 *
 * A reply callback always runs exactly once per accepted command, on the
 * loop, with the reply or with NULL (error reply, connection lost, timeout).
 *
 * Lifecycle: tb_redis_init / tb_redis_start / tb_redis_close.
 */
#ifndef TB_REDIS_H
#define TB_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct redisAsyncContext;
struct redisReply;
typedef struct tb_redis tb_redis;

/* reply is NULL on failure (connection lost, timeout, error reply). */
typedef void (*tb_redis_reply_cb)(tb_redis *redis, struct redisReply *reply, void *data);
typedef void (*tb_redis_state_cb)(tb_redis *redis, bool up);
typedef void (*tb_redis_close_cb)(tb_redis *redis);

/* redis://[[user]:password@]host[:port][/db] */
typedef struct tb_redis_url {
    char host[256];
    int port;
    char user[64];
    char password[256];
    int db;
} tb_redis_url;

enum { TB_REDIS_DOWN = 0, TB_REDIS_RESOLVING, TB_REDIS_CONNECTING, TB_REDIS_UP };

typedef struct tb_redis_req tb_redis_req;

struct tb_redis {
    uv_loop_t *loop;
    tb_redis_url url;
    struct redisAsyncContext *ac;
    int state;
    int64_t state_since_ns;
    int64_t timeout_ns;       /* oldest reply, or a connect, may take this long */
    int64_t retry_at_ns;      /* DOWN: next connect attempt */
    int backoff_ms;
    uv_timer_t watchdog;
    uv_getaddrinfo_t resolve;
    bool resolving;           /* resolve request outstanding */
    tb_redis_req *head, *tail; /* commands sent, oldest first */
    int pending;
    int max_pending;
    bool closing, closed_handles;
    tb_redis_close_cb close_cb;
    tb_redis_state_cb state_cb;
    void *data;               /* the owner's */
    char last_error[160];
    /* statistics */
    uint64_t commands_total, failures_total, refused_total, timeouts_total, connects_total;
    uint64_t bytes_sent_total;
    uint64_t loop_ns_total; /* network-thread CPU time in hiredis's reads and writes */
};

/* 0, or -1 with a one-line reason. */
int tb_redis_url_parse(const char *text, tb_redis_url *url, char *err, size_t cap);

int tb_redis_init(tb_redis *redis, uv_loop_t *loop, const tb_redis_url *url, int timeout_ms);
void tb_redis_start(tb_redis *redis);
bool tb_redis_up(const tb_redis *redis);
/* Sends a command (arguments as bytes). 0: cb will be called once; TB_EBUSY:
 * not connected or too much waiting, cb will not be called. */
int tb_redis_command(tb_redis *redis, tb_redis_reply_cb cb, void *data, int argc, const char **argv,
                     const size_t *lens);
/* Frees the connection (pending callbacks get NULL) and closes the handles;
 * close_cb runs on the loop once they are closed. */
void tb_redis_close(tb_redis *redis, tb_redis_close_cb close_cb);

#endif
