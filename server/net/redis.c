/* redis.c: the asynchronous Redis connection (see redis.h).
 *
 * States: DOWN -> (watchdog, after the backoff) RESOLVING -> CONNECTING ->
 * UP -> (error, close by Redis, timeout) DOWN. The watchdog timer (every
 * 100 ms) drives the retries and the timeouts; hiredis drives the rest
 * through the libuv adapter's uv_poll handle on the connection's socket.
 *
 * Commands sent are kept in a list, oldest first: Redis answers in order,
 * so the head is the one that has waited longest, and the watchdog only
 * looks at it.
 */
#define _GNU_SOURCE
#include "net/redis.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <async.h>
#include <hiredis.h>
#include <sds.h>

#include "net/log.h"
#include "sim/clock.h"
#include "sim/error.h"

#define TB__WATCHDOG_MS 100
#define TB__BACKOFF_MIN_MS 100
#define TB__BACKOFF_MAX_MS 2000
#define TB__MAX_PENDING 8192
#define TB__MAX_UNSENT (64u << 20) /* bytes hiredis holds unwritten */

struct tb_redis_req {
    tb_redis *redis;
    tb_redis_reply_cb cb;
    void *data;
    int64_t sent_ns;
    tb_redis_req *prev, *next;
};

/* ---- the libuv adapter -------------------------------------------------
 *
 * hiredis's own adapters/libuv.h does the same with one uv_poll_t per
 * connection; this copy also times the reads and writes it drives (the
 * network-thread CPU cost of Redis, tumble_redis_loop_seconds_total) and
 * does not leak its state when uv_poll_init fails. */

typedef struct tb__uv_events {
    redisAsyncContext *ac;
    tb_redis *redis;
    uv_poll_t poll;
    int events;
} tb__uv_events;

static void tb__uv_poll(uv_poll_t *handle, int status, int events)
{
    tb__uv_events *p = handle->data;
    int64_t t0 = tb_clock_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    tb_redis *redis = p->redis;
    if (status != 0)
        events = UV_READABLE | UV_WRITABLE; /* let hiredis find the error */
    if (p->ac && (events & UV_READABLE))
        redisAsyncHandleRead(p->ac);
    if (p->ac && (events & UV_WRITABLE))
        redisAsyncHandleWrite(p->ac);
    redis->loop_ns_total += (uint64_t)(tb_clock_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
}

static void tb__uv_update(tb__uv_events *p, int events)
{
    p->events = events;
    if (events)
        uv_poll_start(&p->poll, events, tb__uv_poll);
    else
        uv_poll_stop(&p->poll);
}

static void tb__uv_add_read(void *data) { tb__uv_events *p = data; tb__uv_update(p, p->events | UV_READABLE); }
static void tb__uv_del_read(void *data) { tb__uv_events *p = data; tb__uv_update(p, p->events & ~UV_READABLE); }
static void tb__uv_add_write(void *data) { tb__uv_events *p = data; tb__uv_update(p, p->events | UV_WRITABLE); }
static void tb__uv_del_write(void *data) { tb__uv_events *p = data; tb__uv_update(p, p->events & ~UV_WRITABLE); }

static void tb__uv_closed(uv_handle_t *handle) { free(handle->data); }

static void tb__uv_cleanup(void *data)
{
    tb__uv_events *p = data;
    p->ac = NULL; /* the context is being freed */
    uv_close((uv_handle_t *)&p->poll, tb__uv_closed);
}

static int tb__uv_attach(redisAsyncContext *ac, tb_redis *redis)
{
    if (ac->ev.data)
        return REDIS_ERR;
    tb__uv_events *p = calloc(1, sizeof *p);
    if (!p)
        return REDIS_ERR;
    if (uv_poll_init(redis->loop, &p->poll, ac->c.fd) != 0) {
        free(p);
        return REDIS_ERR;
    }
    p->ac = ac;
    p->redis = redis;
    p->poll.data = p;
    ac->ev.addRead = tb__uv_add_read;
    ac->ev.delRead = tb__uv_del_read;
    ac->ev.addWrite = tb__uv_add_write;
    ac->ev.delWrite = tb__uv_del_write;
    ac->ev.cleanup = tb__uv_cleanup;
    ac->ev.data = p;
    return REDIS_OK;
}

/* ---- URL ---------------------------------------------------------------- */

int tb_redis_url_parse(const char *text, tb_redis_url *url, char *err, size_t cap)
{
    memset(url, 0, sizeof *url);
    url->port = 6379;
    const char *p = text;
    if (strncmp(p, "redis://", 8) == 0) {
        p += 8;
    } else if (strstr(p, "://")) {
        snprintf(err, cap, "redis URL must start with redis:// (got '%s')", text);
        return -1;
    }
    const char *at = strrchr(p, '@');
    const char *slash = strchr(p, '/');
    if (at && (!slash || at < slash)) { /* [user]:password@ */
        const char *colon = memchr(p, ':', (size_t)(at - p));
        size_t ulen = colon ? (size_t)(colon - p) : 0;
        const char *pw = colon ? colon + 1 : p;
        size_t plen = (size_t)(at - pw);
        if (ulen >= sizeof url->user || plen >= sizeof url->password) {
            snprintf(err, cap, "redis URL: user or password too long");
            return -1;
        }
        memcpy(url->user, p, ulen);
        memcpy(url->password, pw, plen);
        p = at + 1;
    }
    const char *host_end;
    if (*p == '[') { /* [IPv6]:port */
        const char *close = strchr(p, ']');
        if (!close) {
            snprintf(err, cap, "redis URL: missing ] after an IPv6 address");
            return -1;
        }
        if ((size_t)(close - p - 1) >= sizeof url->host || close == p + 1) {
            snprintf(err, cap, "redis URL: bad host");
            return -1;
        }
        memcpy(url->host, p + 1, (size_t)(close - p - 1));
        host_end = close + 1;
    } else {
        host_end = p + strcspn(p, ":/");
        if (host_end == p || (size_t)(host_end - p) >= sizeof url->host) {
            snprintf(err, cap, "redis URL: missing or too long host in '%s'", text);
            return -1;
        }
        memcpy(url->host, p, (size_t)(host_end - p));
    }
    for (const char *h = url->host; *h; h++)
        if (*h <= ' ' || *h == '@' || *h == '?' || *h == '#') {
            snprintf(err, cap, "redis URL: bad character in host");
            return -1;
        }
    p = host_end;
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535 || (*end && *end != '/')) {
            snprintf(err, cap, "redis URL: port must be 1..65535");
            return -1;
        }
        url->port = (int)port;
        p = end;
    }
    if (*p == '/' && p[1]) {
        char *end;
        long db = strtol(p + 1, &end, 10);
        if (end == p + 1 || *end || db < 0 || db > 100000) {
            snprintf(err, cap, "redis URL: database must be a number (got '%s')", p + 1);
            return -1;
        }
        url->db = (int)db;
    } else if (*p && strcmp(p, "/") != 0) {
        snprintf(err, cap, "redis URL: unexpected '%s'", p);
        return -1;
    }
    return 0;
}

/* ---- state -------------------------------------------------------------- */

static void tb__set_state(tb_redis *redis, int state)
{
    bool was_up = redis->state == TB_REDIS_UP;
    redis->state = state;
    redis->state_since_ns = tb_clock_now_ns();
    if (state == TB_REDIS_DOWN) {
        redis->retry_at_ns = redis->state_since_ns + (int64_t)redis->backoff_ms * TB_NS_PER_MS;
        redis->backoff_ms = redis->backoff_ms * 2 > TB__BACKOFF_MAX_MS ? TB__BACKOFF_MAX_MS : redis->backoff_ms * 2;
    }
    bool up = state == TB_REDIS_UP;
    if (was_up != up && redis->state_cb && !redis->closing)
        redis->state_cb(redis, up);
}

/* Gives up the connection: every pending command is answered with NULL. */
static void tb__drop(tb_redis *redis, const char *why)
{
    redisAsyncContext *ac = redis->ac;
    snprintf(redis->last_error, sizeof redis->last_error, "%.159s", why);
    if (!redis->closing)
        tb_log_warn("redis %s:%d: %s", redis->url.host, redis->url.port, why);
    redis->ac = NULL;
    tb__set_state(redis, TB_REDIS_DOWN);
    if (ac)
        redisAsyncFree(ac); /* runs the pending callbacks (NULL) and the disconnect callback */
}

static void tb__on_connect(const redisAsyncContext *ac, int status)
{
    tb_redis *redis = ac->data;
    if (!redis || redis->ac != ac)
        return;
    if (status != REDIS_OK) {
        char why[400];
        snprintf(why, sizeof why, "cannot connect: %s", ac->errstr[0] ? ac->errstr : "error");
        snprintf(redis->last_error, sizeof redis->last_error, "%.159s", why);
        if (!redis->closing)
            tb_log_warn("redis %s:%d: %s", redis->url.host, redis->url.port, why);
        redis->ac = NULL; /* hiredis frees it after this callback */
        tb__set_state(redis, TB_REDIS_DOWN);
        return;
    }
    redis->connects_total++;
    redis->backoff_ms = TB__BACKOFF_MIN_MS;
    tb_log_info("redis %s:%d: connected", redis->url.host, redis->url.port);
    tb__set_state(redis, TB_REDIS_UP);
}

static void tb__on_disconnect(const redisAsyncContext *ac, int status)
{
    tb_redis *redis = ac->data;
    if (!redis || redis->ac != ac) /* tb__drop or close: already handled */
        return;
    char why[400];
    snprintf(why, sizeof why, "connection lost%s%s", ac->errstr[0] ? ": " : "", ac->errstr);
    snprintf(redis->last_error, sizeof redis->last_error, "%.159s", why);
    if (!redis->closing)
        tb_log_warn("redis %s:%d: %s", redis->url.host, redis->url.port, why);
    (void)status;
    redis->ac = NULL;
    tb__set_state(redis, TB_REDIS_DOWN);
}

/* ---- commands ----------------------------------------------------------- */

static void tb__unlink(tb_redis *redis, tb_redis_req *req)
{
    if (req->prev)
        req->prev->next = req->next;
    else
        redis->head = req->next;
    if (req->next)
        req->next->prev = req->prev;
    else
        redis->tail = req->prev;
    redis->pending--;
}

static void tb__on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    tb_redis_req *req = privdata;
    tb_redis *redis = req->redis;
    redisReply *reply = r;
    tb__unlink(redis, req);
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        if (!redis->closing)
            tb_log_warn("redis: error reply: %.*s", (int)reply->len, reply->str);
        snprintf(redis->last_error, sizeof redis->last_error, "%.*s", (int)reply->len, reply->str);
        reply = NULL;
    }
    if (!reply)
        redis->failures_total++;
    if (req->cb)
        req->cb(redis, reply, req->data);
    free(req);
}

static int tb__send(tb_redis *redis, tb_redis_reply_cb cb, void *data, int argc, const char **argv,
                    const size_t *lens)
{
    tb_redis_req *req = calloc(1, sizeof *req);
    if (!req)
        return TB_ENOMEM;
    req->redis = redis;
    req->cb = cb;
    req->data = data;
    req->sent_ns = tb_clock_now_ns();
    if (redisAsyncCommandArgv(redis->ac, tb__on_reply, req, argc, argv, lens) != REDIS_OK) {
        free(req);
        return TB_EBUSY;
    }
    req->prev = redis->tail;
    if (redis->tail)
        redis->tail->next = req;
    else
        redis->head = req;
    redis->tail = req;
    redis->pending++;
    redis->commands_total++;
    for (int i = 0; i < argc; i++)
        redis->bytes_sent_total += lens[i];
    return 0;
}

int tb_redis_command(tb_redis *redis, tb_redis_reply_cb cb, void *data, int argc, const char **argv,
                     const size_t *lens)
{
    if (redis->state != TB_REDIS_UP || !redis->ac || redis->closing || redis->pending >= redis->max_pending ||
        (redis->ac->c.obuf && sdslen(redis->ac->c.obuf) > TB__MAX_UNSENT)) {
        redis->refused_total++;
        return TB_EBUSY;
    }
    return tb__send(redis, cb, data, argc, argv, lens);
}

bool tb_redis_up(const tb_redis *redis) { return redis->state == TB_REDIS_UP; }

/* ---- connecting --------------------------------------------------------- */

static void tb__connect_ip(tb_redis *redis, const char *ip)
{
    redisAsyncContext *ac = redisAsyncConnect(ip, redis->url.port);
    if (!ac || ac->err) {
        char why[400];
        snprintf(why, sizeof why, "cannot connect to %s: %s", ip, ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        redis->ac = NULL;
        snprintf(redis->last_error, sizeof redis->last_error, "%.159s", why);
        tb_log_warn("redis %s:%d: %s", redis->url.host, redis->url.port, why);
        tb__set_state(redis, TB_REDIS_DOWN);
        return;
    }
    ac->data = redis;
    if (tb__uv_attach(ac, redis) != REDIS_OK) {
        redisAsyncFree(ac);
        tb__set_state(redis, TB_REDIS_DOWN);
        return;
    }
    redis->ac = ac;
    redisAsyncSetConnectCallback(ac, tb__on_connect);
    redisAsyncSetDisconnectCallback(ac, tb__on_disconnect);
    tb__set_state(redis, TB_REDIS_CONNECTING);
    /* Sent once connected, before anything else; a PING when there is
     * nothing to say (hiredis 0.14 only finishes a connect once it has
     * something to write). */
    if (redis->url.password[0]) {
        const char *argv[3] = {"AUTH", redis->url.user, redis->url.password};
        size_t lens[3] = {4, strlen(redis->url.user), strlen(redis->url.password)};
        if (redis->url.user[0])
            tb__send(redis, NULL, NULL, 3, argv, lens);
        else
            tb__send(redis, NULL, NULL, 2, (const char *[]){"AUTH", redis->url.password},
                     (size_t[]){4, strlen(redis->url.password)});
    }
    char db[16];
    snprintf(db, sizeof db, "%d", redis->url.db);
    if (redis->url.db)
        tb__send(redis, NULL, NULL, 2, (const char *[]){"SELECT", db}, (size_t[]){6, strlen(db)});
    else
        tb__send(redis, NULL, NULL, 1, (const char *[]){"PING"}, (size_t[]){4});
}

static void tb__on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    tb_redis *redis = req->data;
    redis->resolving = false;
    if (redis->closing) {
        if (res)
            uv_freeaddrinfo(res);
        if (redis->closed_handles && redis->close_cb) /* the watchdog closed first */
            redis->close_cb(redis);
        return;
    }
    char ip[INET6_ADDRSTRLEN] = "";
    if (status == 0 && res) {
        const void *a = res->ai_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                                                  : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
        inet_ntop(res->ai_family, a, ip, sizeof ip);
    }
    if (res)
        uv_freeaddrinfo(res);
    if (!ip[0]) {
        char why[400];
        snprintf(why, sizeof why, "cannot resolve %s: %s", redis->url.host, status ? uv_strerror(status) : "no address");
        snprintf(redis->last_error, sizeof redis->last_error, "%.159s", why);
        tb_log_warn("redis: %s", why);
        tb__set_state(redis, TB_REDIS_DOWN);
        return;
    }
    tb__connect_ip(redis, ip);
}

static void tb__connect(tb_redis *redis)
{
    unsigned char buf[16];
    if (inet_pton(AF_INET, redis->url.host, buf) == 1 || inet_pton(AF_INET6, redis->url.host, buf) == 1) {
        tb__connect_ip(redis, redis->url.host);
        return;
    }
    /* hiredis would resolve the name itself, blocking the loop: resolve on
     * libuv's thread pool first. */
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    redis->resolve.data = redis;
    tb__set_state(redis, TB_REDIS_RESOLVING);
    if (uv_getaddrinfo(redis->loop, &redis->resolve, tb__on_resolved, redis->url.host, NULL, &hints) != 0) {
        tb__set_state(redis, TB_REDIS_DOWN);
        return;
    }
    redis->resolving = true;
}

static void tb__watchdog(uv_timer_t *timer)
{
    tb_redis *redis = timer->data;
    int64_t now = tb_clock_now_ns();
    switch (redis->state) {
    case TB_REDIS_DOWN:
        if (now >= redis->retry_at_ns)
            tb__connect(redis);
        break;
    case TB_REDIS_RESOLVING:
        break; /* the thread pool answers; a stuck resolver only delays the retry */
    case TB_REDIS_CONNECTING:
        if (now - redis->state_since_ns > redis->timeout_ns) {
            redis->timeouts_total++;
            tb__drop(redis, "connect timed out");
        }
        break;
    case TB_REDIS_UP:
        if (redis->head && now - redis->head->sent_ns > redis->timeout_ns) {
            char why[96];
            snprintf(why, sizeof why, "no reply for %lld ms: dropping the connection",
                     (long long)((now - redis->head->sent_ns) / TB_NS_PER_MS));
            redis->timeouts_total++;
            tb__drop(redis, why);
        }
        break;
    }
}

int tb_redis_init(tb_redis *redis, uv_loop_t *loop, const tb_redis_url *url, int timeout_ms)
{
    memset(redis, 0, sizeof *redis);
    redis->loop = loop;
    redis->url = *url;
    redis->timeout_ns = (int64_t)timeout_ms * TB_NS_PER_MS;
    redis->backoff_ms = TB__BACKOFF_MIN_MS;
    redis->max_pending = TB__MAX_PENDING;
    redis->state = TB_REDIS_DOWN;
    uv_timer_init(loop, &redis->watchdog);
    redis->watchdog.data = redis;
    return 0;
}

void tb_redis_start(tb_redis *redis)
{
    tb__connect(redis);
    uv_timer_start(&redis->watchdog, tb__watchdog, TB__WATCHDOG_MS, TB__WATCHDOG_MS);
}

static void tb__watchdog_closed(uv_handle_t *handle)
{
    tb_redis *redis = handle->data;
    redis->closed_handles = true;
    if (!redis->resolving && redis->close_cb)
        redis->close_cb(redis);
}

void tb_redis_close(tb_redis *redis, tb_redis_close_cb close_cb)
{
    if (redis->closing)
        return;
    redis->closing = true;
    redis->close_cb = close_cb;
    if (redis->resolving)
        uv_cancel((uv_req_t *)&redis->resolve);
    redisAsyncContext *ac = redis->ac;
    redis->ac = NULL;
    redis->state = TB_REDIS_DOWN;
    if (ac)
        redisAsyncFree(ac);
    uv_timer_stop(&redis->watchdog);
    uv_close((uv_handle_t *)&redis->watchdog, tb__watchdog_closed);
}
