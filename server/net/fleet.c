/* fleet.c: leases and checkpoints of the rooms this server runs (see
 * fleet.h; fleet_parts.h for the other files: handoff, lobby).
 *
 * Everything here runs on the network loop. A 100 ms timer drives it:
 *
 *   every tick    rooms whose checkpoint is due (each room on its own
 *                 schedule, spread over the interval so 250 rooms do not
 *                 all ask at once) and whose world changed get a
 *                 TB_INPUT_CHECKPOINT; claims waiting for a lease ask again;
 *                 a drain checks whether it is done
 *   every second  the record of rooms is brought in line with the registry
 *                 (new rooms added, retired ones' leases given up), every
 *                 lease renewed in one script per 500 rooms, and the lobby
 *                 written and the fleet's read back
 *
 * Each Redis step is one Lua script, so what must be atomic is: "write the
 * checkpoint only while the lease is ours" (a server that lost its room
 * cannot overwrite the new owner's state), "take the lease and read the
 * checkpoint" (a handoff), "renew what is ours, take what is free".
 */
#define _GNU_SOURCE
#include "net/fleet_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/log.h"
#include "net/proxy.h"
#include "net/server.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/msg.h"

#define TB__TICK_MS 100
#define TB__RENEW_NS (1000 * TB_NS_PER_MS)
#define TB__RENEW_BATCH 500
#define TB__CKPT_TTL_S "604800" /* a week: a room nobody opens again is forgotten */

/* KEYS: lease, ckpt. ARGV: owner, image, lease ttl ms, tick, unix ms, release. */
static const char tb__write_script[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and v ~= ARGV[1] then return 0 end\n"
    "redis.call('HSET', KEYS[2], 'image', ARGV[2], 'tick', ARGV[4], 'ms', ARGV[5], 'owner', ARGV[1])\n"
    "redis.call('EXPIRE', KEYS[2], " TB__CKPT_TTL_S ")\n"
    "if ARGV[6] == '1' then redis.call('DEL', KEYS[1])\n"
    "else redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3]) end\n"
    "return 1\n";

/* KEYS: leases. ARGV: owner, lease ttl ms. 1 renewed, 2 taken (was free), 0 another's. */
static const char tb__renew_script[] =
    "local out = {}\n"
    "for i, k in ipairs(KEYS) do\n"
    "  local v = redis.call('GET', k)\n"
    "  if v == ARGV[1] then redis.call('PEXPIRE', k, ARGV[2]); out[i] = 1\n"
    "  elseif not v then redis.call('SET', k, ARGV[1], 'PX', ARGV[2]); out[i] = 2\n"
    "  else out[i] = 0 end\n"
    "end\n"
    "return out\n";

/* KEYS: lease. ARGV: owner. */
static const char tb__release_script[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
    "return 0\n";

struct tb_fleet_room {
    char id[TB_ROOM_ID_MAX + 1];
    tb_room *room;          /* a reference */
    int64_t next_ckpt_ns;
    uint64_t ckpt_serial;   /* room->next_serial when the last image was asked for */
    int ckpt_awake;         /* bodies awake then */
    bool written_once;
    bool asked;             /* an image is being made on the worker */
    int64_t asked_ns;
    bool final_wanted;      /* drain: the last image is still to be asked for */
    bool final_done;
    int writes;             /* checkpoint writes waiting for Redis */
    bool lost;
    tb_fleet *fleet;
};

/* A write of one checkpoint, for its reply. */
typedef struct tb__write {
    tb_fleet *fleet;
    tb_fleet_room *entry;
    size_t bytes;
    bool final;
} tb__write;

int64_t tb_fleet_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tb_fleet_key(char *out, size_t cap, const char *what, const char *id)
{
    snprintf(out, cap, "tumble:%s:%s", what, id);
}

/* EVAL (fleet_parts.h). */
int tb_fleet_eval(tb_fleet *fleet, tb_redis_reply_cb cb, void *data, const char *script, int nkeys,
                  const char **keys, int nargs, const char **args, const size_t *arg_lens)
{
    int argc = 3 + nkeys + nargs;
    const char *stack_argv[32];
    size_t stack_lens[32];
    const char **argv = argc <= 32 ? stack_argv : malloc((size_t)argc * sizeof *argv);
    size_t *lens = argc <= 32 ? stack_lens : malloc((size_t)argc * sizeof *lens);
    if (!argv || !lens) {
        if (argv != stack_argv)
            free(argv);
        if (lens != stack_lens)
            free(lens);
        return TB_ENOMEM;
    }
    char numkeys[16];
    snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    argv[0] = "EVAL";
    argv[1] = script;
    argv[2] = numkeys;
    for (int i = 0; i < nkeys; i++)
        argv[3 + i] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[3 + nkeys + i] = args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = (i >= 3 + nkeys && arg_lens && arg_lens[i - 3 - nkeys] != SIZE_MAX) ? arg_lens[i - 3 - nkeys]
                                                                                   : strlen(argv[i]);
    int rc = tb_redis_command(&fleet->redis, cb, data, argc, argv, lens);
    if (argv != stack_argv)
        free(argv);
    if (lens != stack_lens)
        free(lens);
    return rc;
}

/* ---- the record of rooms ------------------------------------------------ */

static int64_t tb__first_checkpoint(tb_fleet *fleet, const char *id)
{
    /* spread the rooms over the interval by their id */
    uint64_t h = tb_fnv1a(TB_FNV_OFFSET, id, strlen(id));
    int64_t interval = fleet->checkpoint_interval_ns;
    return tb_clock_now_ns() + (int64_t)(h % (uint64_t)(interval > 0 ? interval : 1));
}

static tb_fleet_room *tb__add_room(tb_fleet *fleet, tb_room *room)
{
    if (fleet->room_count == fleet->room_cap) {
        int cap = fleet->room_cap ? fleet->room_cap * 2 : 64;
        tb_fleet_room **r = realloc(fleet->rooms, (size_t)cap * sizeof *r);
        if (!r)
            return NULL;
        fleet->rooms = r;
        fleet->room_cap = cap;
    }
    tb_fleet_room *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    fleet->rooms[fleet->room_count++] = e;
    snprintf(e->id, sizeof e->id, "%s", room->id);
    e->room = tb_room_ref(room);
    e->fleet = fleet;
    e->next_ckpt_ns = tb__first_checkpoint(fleet, room->id);
    e->ckpt_serial = room->next_serial;
    e->ckpt_awake = -1;
    room->fleet = e;
    return e;
}

/* Replies in flight point at a record: one is only dropped (by
 * tb__sync_rooms) when nothing is in flight for it. */
static void tb__drop_room(tb_fleet *fleet, int i)
{
    tb_fleet_room *e = fleet->rooms[i];
    if (e->room->fleet == e)
        e->room->fleet = NULL;
    tb_room_unref(e->room);
    free(e);
    fleet->rooms[i] = fleet->rooms[--fleet->room_count];
}

static void tb__released(tb_redis *redis, redisReply *reply, void *data)
{
    (void)redis, (void)reply;
    free(data);
}

static void tb__release_lease(tb_fleet *fleet, const char *id)
{
    char key[96];
    tb_fleet_key(key, sizeof key, "lease", id);
    const char *keys[1] = {key};
    const char *args[1] = {fleet->owner};
    tb_fleet_eval(fleet, tb__released, NULL, tb__release_script, 1, keys, 1, args, NULL);
}

/* The lease is another server's: stop running the room, send its players
 * away (they reconnect through the router to the owner). */
static void tb__lose_room(tb_fleet *fleet, tb_fleet_room *e, const char *why)
{
    fleet->lease_losses_total++;
    tb_log_warn("room %s: %s: stopping it here", e->id, why);
    tb_server_close_room(fleet->server, e->room, "room moved to another server");
    tb_registry_remove(fleet->registry, e->id);
    e->lost = true;
}

/* Records for new rooms of the registry; retired rooms' records go (their
 * lease is given up) once nothing is in flight for them. */
void tb_fleet_sync_rooms(tb_fleet *fleet)
{
    tb_registry *reg = fleet->registry;
    pthread_mutex_lock(&reg->lock);
    for (int i = 0; i < reg->count; i++)
        if (!reg->rooms[i]->fleet)
            tb__add_room(fleet, reg->rooms[i]);
    pthread_mutex_unlock(&reg->lock);
    for (int i = 0; i < fleet->room_count;) {
        tb_fleet_room *e = fleet->rooms[i];
        bool gone = e->lost || atomic_load(&e->room->retire);
        /* a retired room's worker may drop it with the request unanswered: a late
         * image finds no record (room->fleet is cleared) and is ignored */
        bool waiting = e->asked && tb_clock_now_ns() - e->asked_ns < 2 * TB_NS_PER_SEC;
        if (!gone || waiting || e->writes) {
            i++;
            continue;
        }
        if (!e->lost && !e->final_done)
            tb__release_lease(fleet, e->id);
        tb__drop_room(fleet, i);
    }
}

/* ---- checkpoints -------------------------------------------------------- */

static void tb__ask_image(tb_fleet *fleet, tb_fleet_room *e, bool final)
{
    tb_input in;
    memset(&in, 0, sizeof in);
    in.type = TB_INPUT_CHECKPOINT;
    in.flags = final ? 1 : 0;
    in.target = -1;
    in.serial = e->room->next_serial; /* applies nothing new */
    if (tb_room_push_input(e->room, &in) < 0)
        return; /* ring full: next tick */
    e->asked = true;
    e->asked_ns = tb_clock_now_ns();
    if (final)
        e->final_wanted = false;
    e->ckpt_serial = e->room->next_serial;
    e->ckpt_awake = atomic_load(&e->room->awake);
}

static void tb__checkpoints_due(tb_fleet *fleet, int64_t now)
{
    bool up = tb_redis_up(&fleet->redis);
    for (int i = 0; i < fleet->room_count; i++) {
        tb_fleet_room *e = fleet->rooms[i];
        if (e->lost || e->final_done || atomic_load(&e->room->retire))
            continue;
        if (e->final_wanted) {
            if (!e->asked)
                tb__ask_image(fleet, e, true);
            continue;
        }
        if (fleet->draining || now < e->next_ckpt_ns)
            continue;
        e->next_ckpt_ns += fleet->checkpoint_interval_ns;
        if (e->next_ckpt_ns < now)
            e->next_ckpt_ns = now + fleet->checkpoint_interval_ns;
        /* changed: inputs since, or bodies moving then or now */
        int awake = atomic_load(&e->room->awake);
        bool changed = !e->written_once || e->room->next_serial != e->ckpt_serial || awake > 0 || e->ckpt_awake != 0;
        if (!changed)
            continue;
        if (!up || e->asked || e->writes) {
            fleet->checkpoints_skipped_total++;
            continue;
        }
        tb__ask_image(fleet, e, false);
    }
}

static void tb__finish_final(tb_fleet *fleet, tb_fleet_room *e)
{
    e->final_done = true;
    tb_server_close_room(fleet->server, e->room, "room moving to another server");
    if (!fleet->stop_after_drain) /* an admin drain: the server stays, without the room */
        tb_registry_remove(fleet->registry, e->id);
}

static void tb__written(tb_redis *redis, redisReply *reply, void *data)
{
    (void)redis;
    tb__write *w = data;
    tb_fleet *fleet = w->fleet;
    tb_fleet_room *e = w->entry;
    e->writes--;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        fleet->checkpoints_failed_total++;
    } else if (reply->integer == 1) {
        fleet->checkpoints_written_total++;
        fleet->checkpoint_bytes_total += w->bytes;
        e->written_once = true;
    } else if (!e->lost && !w->final) {
        fleet->checkpoints_failed_total++;
        tb__lose_room(fleet, e, "its lease is another server's (checkpoint refused)");
    }
    if (w->final && !e->final_done)
        tb__finish_final(fleet, e);
    free(w);
}

void tb_fleet_on_checkpoint(tb_fleet *fleet, tb_room *room, tb_msg *image, bool final)
{
    tb_fleet_room *e = room->fleet;
    if (!e || e->room != room)
        return;
    e->asked = false;
    if (e->lost)
        return;
    if (!image || image->len == 0) {
        fleet->checkpoints_failed_total++;
        tb_log_warn("room %s: no state image (kind cannot be saved)", e->id);
        if (final)
            tb__finish_final(fleet, e);
        return;
    }
    int64_t t0 = tb_clock_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    tb__write *w = calloc(1, sizeof *w);
    char lease[96], ckpt[96], ttl[16], tick[24], ms[24];
    tb_fleet_key(lease, sizeof lease, "lease", e->id);
    tb_fleet_key(ckpt, sizeof ckpt, "ckpt", e->id);
    snprintf(ttl, sizeof ttl, "%d", fleet->lease_ttl_ms);
    snprintf(tick, sizeof tick, "%llu", (unsigned long long)image->tick);
    snprintf(ms, sizeof ms, "%lld", (long long)tb_fleet_unix_ms());
    const char *keys[2] = {lease, ckpt};
    const char *args[6] = {fleet->owner, (const char *)tb_msg_data(image), ttl, tick, ms, final ? "1" : "0"};
    size_t lens[6] = {SIZE_MAX, image->len, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
    int rc = w ? tb_fleet_eval(fleet, tb__written, w, tb__write_script, 2, keys, 6, args, lens) : TB_ENOMEM;
    if (rc < 0) {
        free(w);
        fleet->checkpoints_skipped_total++;
        if (final)
            tb__finish_final(fleet, e);
        return;
    }
    w->fleet = fleet;
    w->entry = e;
    w->bytes = image->len;
    w->final = final;
    e->writes++;
    fleet->checkpoint_net_ns_total += (uint64_t)(tb_clock_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
}

/* ---- leases ------------------------------------------------------------- */

typedef struct tb__renewal {
    tb_fleet *fleet;
    int count;
    char (*ids)[TB_ROOM_ID_MAX + 1];
} tb__renewal;

static void tb__renewed(tb_redis *redis, redisReply *reply, void *data)
{
    (void)redis;
    tb__renewal *r = data;
    tb_fleet *fleet = r->fleet;
    if (reply && reply->type == REDIS_REPLY_ARRAY && (int)reply->elements == r->count) {
        fleet->renewals_total++;
        for (int i = 0; i < r->count; i++) {
            redisReply *v = reply->element[i];
            if (v->type != REDIS_REPLY_INTEGER || v->integer != 0)
                continue;
            tb_room *room = tb_registry_find(fleet->registry, r->ids[i]);
            tb_fleet_room *e = room ? room->fleet : NULL;
            if (e && !e->lost && !e->final_done)
                tb__lose_room(fleet, e, "its lease is another server's");
            if (room)
                tb_room_unref(room);
        }
    }
    free(r->ids);
    free(r);
}

static void tb__renew(tb_fleet *fleet)
{
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", fleet->lease_ttl_ms);
    const char *args[2] = {fleet->owner, ttl};
    for (int start = 0; start < fleet->room_count; start += TB__RENEW_BATCH) {
        int n = 0;
        tb__renewal *r = calloc(1, sizeof *r);
        char(*keys)[96] = calloc(TB__RENEW_BATCH, sizeof *keys);
        const char **kp = calloc(TB__RENEW_BATCH, sizeof *kp);
        if (r)
            r->ids = calloc(TB__RENEW_BATCH, sizeof *r->ids);
        if (!r || !r->ids || !keys || !kp) {
            if (r)
                free(r->ids);
            free(r), free(keys), free(kp);
            return;
        }
        for (int i = start; i < fleet->room_count && i < start + TB__RENEW_BATCH; i++) {
            tb_fleet_room *e = fleet->rooms[i];
            if (e->lost || e->final_done || e->final_wanted || atomic_load(&e->room->retire))
                continue;
            tb_fleet_key(keys[n], sizeof keys[n], "lease", e->id);
            snprintf(r->ids[n], sizeof r->ids[n], "%s", e->id);
            kp[n] = keys[n];
            n++;
        }
        r->fleet = fleet;
        r->count = n;
        if (n == 0 || tb_fleet_eval(fleet, tb__renewed, r, tb__renew_script, n, kp, 2, args, NULL) < 0) {
            free(r->ids);
            free(r);
        }
        free(keys);
        free(kp);
    }
}

/* ---- drain -------------------------------------------------------------- */

bool tb_fleet_draining(const tb_fleet *fleet) { return fleet->draining; }

bool tb_fleet_admin_allowed(const char *addr, const tb_proxy_list *proxies)
{
    if (strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0 || strncmp(addr, "::ffff:127.", 11) == 0)
        return true;
    return proxies && tb_proxy_trusted(proxies, addr);
}

static void tb__drain_check(tb_fleet *fleet, int64_t now)
{
    if (!fleet->draining || fleet->drained_called)
        return;
    bool done = true;
    for (int i = 0; i < fleet->room_count && done; i++) {
        tb_fleet_room *e = fleet->rooms[i];
        done = e->final_done || e->lost || atomic_load(&e->room->retire);
    }
    if (!done && now < fleet->drain_deadline_ns)
        return;
    fleet->drained_called = true;
    tb_log_info("drain: %s", done ? "every room checkpointed and handed over" : "deadline passed");
    if (fleet->drained_cb)
        fleet->drained_cb(fleet);
}

void tb_fleet_drain(tb_fleet *fleet, int deadline_ms, tb_fleet_drained_cb drained_cb)
{
    if (fleet->draining)
        return;
    fleet->draining = true;
    fleet->stop_after_drain = drained_cb != NULL;
    fleet->drained_cb = drained_cb;
    fleet->drain_deadline_ns = tb_clock_now_ns() + (int64_t)deadline_ms * TB_NS_PER_MS;
    tb_fleet_sync_rooms(fleet);
    tb_fleet_lobby_leave(fleet);
    bool up = tb_redis_up(&fleet->redis);
    tb_log_info("drain: %d room(s) to checkpoint and hand over%s", fleet->room_count,
                up ? "" : " (Redis is down: closing them without a checkpoint)");
    for (int i = 0; i < fleet->room_count; i++) {
        tb_fleet_room *e = fleet->rooms[i];
        if (e->lost || atomic_load(&e->room->retire))
            continue;
        if (!up) {
            tb__finish_final(fleet, e);
            continue;
        }
        e->final_wanted = true;
        if (!e->asked)
            tb__ask_image(fleet, e, true);
    }
    tb__drain_check(fleet, tb_clock_now_ns());
}

/* ---- the timer ---------------------------------------------------------- */

static void tb__on_tick(uv_timer_t *timer)
{
    tb_fleet *fleet = timer->data;
    int64_t now = tb_clock_now_ns();
    bool up = tb_redis_up(&fleet->redis);
    if (now >= fleet->next_renew_ns) {
        fleet->next_renew_ns = now + TB__RENEW_NS;
        tb_fleet_sync_rooms(fleet);
        if (up && !fleet->draining) {
            tb__renew(fleet);
            tb_fleet_lobby_write(fleet);
        }
    }
    tb__checkpoints_due(fleet, now);
    tb_fleet_claims_tick(fleet, now, up);
    tb__drain_check(fleet, now);
}

static void tb__redis_state(tb_redis *redis, bool up)
{
    tb_fleet *fleet = redis->data;
    if (!up && !fleet->warned_down) {
        fleet->warned_down = true;
        tb_log_warn("redis is down: rooms keep running; checkpoints, leases and the fleet lobby wait for it");
    } else if (up && fleet->warned_down) {
        fleet->warned_down = false;
        tb_log_warn("redis is back: checkpoints and leases resume");
        fleet->next_renew_ns = 0; /* renew (and retake free leases) at once */
    }
}

int tb_fleet_init(tb_fleet *fleet, uv_loop_t *loop, const char *redis_url, const char *instance,
                  int checkpoint_interval_s, int lease_ttl_ms, int redis_timeout_ms, char *err, size_t cap)
{
    memset(fleet, 0, sizeof *fleet);
    tb_redis_url url;
    if (tb_redis_url_parse(redis_url, &url, err, cap) < 0)
        return -1;
    fleet->loop = loop;
    snprintf(fleet->instance, sizeof fleet->instance, "%s", instance);
    /* unique even for two processes with one instance name */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned nonce = (unsigned)(ts.tv_nsec ^ (ts.tv_sec << 20) ^ ((unsigned)getpid() << 8));
    snprintf(fleet->owner, sizeof fleet->owner, "%s/%d.%08x", instance, (int)getpid(), nonce);
    fleet->checkpoint_interval_ns = (int64_t)checkpoint_interval_s * TB_NS_PER_SEC;
    fleet->lease_ttl_ms = lease_ttl_ms;
    tb_redis_init(&fleet->redis, loop, &url, redis_timeout_ms);
    fleet->redis.data = fleet;
    fleet->redis.state_cb = tb__redis_state;
    fleet->others_json = strdup("");
    uv_timer_init(loop, &fleet->tick);
    fleet->tick.data = fleet;
    return 0;
}

void tb_fleet_attach(tb_fleet *fleet, tb_server *server, tb_registry *registry)
{
    fleet->server = server;
    fleet->registry = registry;
}

void tb_fleet_start(tb_fleet *fleet)
{
    tb_log_info("fleet: owner %s, redis %s:%d, checkpoints every %lld s, leases %d ms", fleet->owner,
                fleet->redis.url.host, fleet->redis.url.port,
                (long long)(fleet->checkpoint_interval_ns / TB_NS_PER_SEC), fleet->lease_ttl_ms);
    tb_redis_start(&fleet->redis);
    uv_timer_start(&fleet->tick, tb__on_tick, TB__TICK_MS, TB__TICK_MS);
}

static void tb__redis_closed(tb_redis *redis)
{
    tb_fleet *fleet = redis->data;
    if (fleet->closed_cb)
        fleet->closed_cb(fleet);
}

static void tb__tick_closed(uv_handle_t *handle) { (void)handle; }

void tb_fleet_close(tb_fleet *fleet, void (*closed_cb)(tb_fleet *fleet))
{
    if (fleet->closing)
        return;
    fleet->closing = true;
    uv_timer_stop(&fleet->tick);
    uv_close((uv_handle_t *)&fleet->tick, tb__tick_closed);
    fleet->closed_cb = closed_cb;
    tb_redis_close(&fleet->redis, tb__redis_closed); /* pending callbacks run now, with NULL */
    tb_fleet_claims_free(fleet);
    for (int i = 0; i < fleet->room_count; i++) {
        fleet->rooms[i]->room->fleet = NULL;
        tb_room_unref(fleet->rooms[i]->room);
        free(fleet->rooms[i]);
    }
    free(fleet->rooms);
    fleet->rooms = NULL;
    fleet->room_count = fleet->room_cap = 0;
    free(fleet->others_json);
    fleet->others_json = NULL;
}

