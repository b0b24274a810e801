/* fleet_claim.c: a hello for a room this server does not run (fleet.h,
 * "Handoff").
 *
 * The hello waits here while Redis is asked, in one script, for the room's
 * lease and its checkpoint. Granted with a checkpoint: the room is rebuilt
 * from the image at its saved tick and inserted in the registry, then every
 * hello that waited for it joins (tb_server_fleet_join). Granted without:
 * the room is created as any other. Held by another server: asked again
 * every TB__CLAIM_RETRY_NS until the lease is given up (a drain) or expires
 * (a crash), at most the lease TTL and a second; then the client is told
 * which server holds it. Redis down or not answering: the room opens here
 * without a lease (rooms keep working; fleet.h "Redis trouble").
 */
#define _GNU_SOURCE
#include "net/fleet_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/log.h"
#include "net/server.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/persist.h"

#define TB__CLAIM_RETRY_NS (200 * TB_NS_PER_MS)

/* KEYS: lease, ckpt. ARGV: owner, lease ttl ms. */
static const char tb__claim_script[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and v ~= ARGV[1] then return {0, v, redis.call('PTTL', KEYS[1])} end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "local c = redis.call('HMGET', KEYS[2], 'image', 'ms', 'owner', 'tick')\n"
    "return {1, c[1], c[2], c[3], c[4]}\n";

typedef struct tb__waiter {
    uint32_t client;
    tb_client_msg hello;
} tb__waiter;

struct tb_fleet_pending {
    char id[TB_ROOM_ID_MAX + 1];
    tb__waiter *waiters;
    int count, cap;
    int64_t deadline_ns, next_try_ns;
    bool asking;
    char holder[128];
    tb_fleet *fleet;
    tb_fleet_pending *next;
};

static void tb__claim_ask(tb_fleet *fleet, tb_fleet_pending *c);

static void tb__claim_finish(tb_fleet *fleet, tb_fleet_pending *c, int verdict, const char *why)
{
    for (tb_fleet_pending **p = &fleet->claims; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    for (int i = 0; i < c->count; i++)
        tb_server_fleet_join(fleet->server, c->waiters[i].client, &c->waiters[i].hello, verdict, why);
    free(c->waiters);
    free(c);
}

/* Rebuilds the room from its checkpoint and opens it here at the saved tick. */
static void tb__restore(tb_fleet *fleet, const char *id, redisReply *image, redisReply *ms, redisReply *owner)
{
    int64_t t0 = tb_clock_now_ns();
    tb_room *room = NULL;
    char why[160] = "";
    const tb_world_env *env = fleet->registry->sched ? &fleet->registry->sched->env : NULL;
    int rc = tb_persist_decode((const unsigned char *)image->str, image->len, env, &room, why, sizeof why);
    if (rc == 0 && strcmp(room->id, id) != 0) {
        snprintf(why, sizeof why, "checkpoint is of room %s", room->id);
        tb_room_unref(room);
        rc = TB_EINVAL;
    }
    if (rc < 0) {
        fleet->restore_failures_total++;
        tb_log_warn("room %s: checkpoint refused (%s): starting it afresh", id, why);
        return;
    }
    uint64_t tick = room->tick;
    rc = tb_registry_insert(fleet->registry, room);
    if (rc < 0) {
        if (rc != TB_EBUSY) {
            fleet->restore_failures_total++;
            tb_log_warn("room %s: not restored: %s", id, tb_strerror(rc));
        }
        return;
    }
    fleet->handoffs_total++;
    long long age = -1;
    if (ms && ms->type == REDIS_REPLY_STRING)
        age = tb_fleet_unix_ms() - strtoll(ms->str, NULL, 10);
    tb_log_info("room %s: restored from its checkpoint at tick %llu (%zu bytes, %lld ms old, written by %.*s) in %.2f ms",
                id, (unsigned long long)tick, image->len, age, owner && owner->type == REDIS_REPLY_STRING ? (int)owner->len : 1,
                owner && owner->type == REDIS_REPLY_STRING ? owner->str : "?", (double)(tb_clock_now_ns() - t0) / 1e6);
    tb_fleet_sync_rooms(fleet);
}

static void tb__claimed(tb_redis *redis, redisReply *reply, void *data)
{
    (void)redis;
    tb_fleet_pending *c = data;
    tb_fleet *fleet = c->fleet;
    c->asking = false;
    int64_t now = tb_clock_now_ns();
    if (fleet->closing) {
        tb__claim_finish(fleet, c, TB_ESHUTDOWN, "server shutting down");
        return;
    }
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER) {
        if (now + TB__CLAIM_RETRY_NS < c->deadline_ns && tb_redis_up(&fleet->redis)) {
            c->next_try_ns = now + TB__CLAIM_RETRY_NS;
            return;
        }
        fleet->claims_degraded_total++;
        tb_log_warn("room %s: Redis did not answer: opening it here without a lease", c->id);
        tb__claim_finish(fleet, c, 0, NULL);
        return;
    }
    if (reply->element[0]->integer == 1) {
        redisReply *image = reply->elements > 1 ? reply->element[1] : NULL;
        if (image && image->type == REDIS_REPLY_STRING && image->len > 0)
            tb__restore(fleet, c->id, image, reply->elements > 2 ? reply->element[2] : NULL,
                        reply->elements > 3 ? reply->element[3] : NULL);
        tb__claim_finish(fleet, c, 0, NULL);
        return;
    }
    if (reply->elements > 1 && reply->element[1]->type == REDIS_REPLY_STRING)
        snprintf(c->holder, sizeof c->holder, "%.*s", (int)reply->element[1]->len, reply->element[1]->str);
    if (now + TB__CLAIM_RETRY_NS < c->deadline_ns) { /* its owner may be draining, or dead */
        c->next_try_ns = now + TB__CLAIM_RETRY_NS;
        return;
    }
    fleet->claims_refused_total++;
    char why[320];
    snprintf(why, sizeof why, "room %s is running on another server (%s); try again", c->id, c->holder);
    tb_log_info("%s", why);
    tb__claim_finish(fleet, c, TB_EBUSY, why);
}

static void tb__claim_ask(tb_fleet *fleet, tb_fleet_pending *c)
{
    char lease[96], ckpt[96], ttl[16];
    tb_fleet_key(lease, sizeof lease, "lease", c->id);
    tb_fleet_key(ckpt, sizeof ckpt, "ckpt", c->id);
    snprintf(ttl, sizeof ttl, "%d", fleet->lease_ttl_ms);
    const char *keys[2] = {lease, ckpt};
    const char *args[2] = {fleet->owner, ttl};
    if (tb_fleet_eval(fleet, tb__claimed, c, tb__claim_script, 2, keys, 2, args, NULL) == 0) {
        c->asking = true;
        return;
    }
    /* Redis went away meanwhile: the room opens here (see fleet.h) */
    fleet->claims_degraded_total++;
    tb__claim_finish(fleet, c, 0, NULL);
}

int tb_fleet_claim(tb_fleet *fleet, uint32_t client, const tb_client_msg *hello)
{
    if (fleet->draining) {
        tb_server_fleet_join(fleet->server, client, hello, TB_ESHUTDOWN, "server draining: reconnect");
        return 1;
    }
    if (!tb_redis_up(&fleet->redis)) {
        fleet->claims_degraded_total++;
        return 0;
    }
    tb_fleet_pending *c = fleet->claims;
    while (c && strcmp(c->id, hello->room) != 0)
        c = c->next;
    bool fresh = !c;
    if (fresh) {
        c = calloc(1, sizeof *c);
        if (!c)
            return 0;
        snprintf(c->id, sizeof c->id, "%s", hello->room);
        c->fleet = fleet;
        c->deadline_ns = tb_clock_now_ns() + ((int64_t)fleet->lease_ttl_ms + 1000) * TB_NS_PER_MS;
    }
    if (c->count == c->cap) {
        int cap = c->cap ? c->cap * 2 : 4;
        tb__waiter *w = realloc(c->waiters, (size_t)cap * sizeof *w);
        if (!w) {
            if (fresh)
                free(c);
            return 0;
        }
        c->waiters = w;
        c->cap = cap;
    }
    c->waiters[c->count].client = client;
    c->waiters[c->count].hello = *hello;
    c->count++;
    if (fresh) {
        c->next = fleet->claims;
        fleet->claims = c;
        tb__claim_ask(fleet, c); /* may finish it at once */
    }
    return 1;
}

/* Claims waiting for another server's lease ask again every
 * TB__CLAIM_RETRY_NS; with Redis down they open here (fleet.h). */
void tb_fleet_claims_tick(tb_fleet *fleet, int64_t now, bool up)
{
    for (tb_fleet_pending *c = fleet->claims, *next; c; c = next) {
        next = c->next;
        if (c->asking || now < c->next_try_ns)
            continue;
        if (up) {
            tb__claim_ask(fleet, c);
        } else {
            fleet->claims_degraded_total++;
            tb__claim_finish(fleet, c, 0, NULL);
        }
    }
}

/* The fleet closes: the waiting hellos are dropped with their sessions. */
void tb_fleet_claims_free(tb_fleet *fleet)
{
    while (fleet->claims) {
        tb_fleet_pending *c = fleet->claims;
        fleet->claims = c->next;
        free(c->waiters);
        free(c);
    }
}
