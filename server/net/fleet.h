/* fleet.h: rooms that outlive their server (--redis).
 *
 * Past one machine, servers sit behind a router that hashes the room id to
 * a server. Redis holds what must outlive any one of them:
 *
 *   tumble:lease:<room>   the owner of the room (this server's owner id,
 *                         "<instance>/<pid>.<random>"), with a TTL the
 *                         owner renews every second. One owner at a time:
 *                         a server runs a room only while it holds the
 *                         lease; one that finds it lost stops the room and
 *                         closes its players with 1001.
 *   tumble:ckpt:<room>    the room's latest checkpoint: a hash of the state
 *                         image --state-dir writes (sim/persist.h), its tick
 *                         and when and by whom it was written. Every
 *                         --checkpoint-interval seconds each room whose world
 *                         changed is written again; a drain writes it a
 *                         last time and gives the lease up in the same step.
 *   tumble:lobby:<owner>  this server's rooms as JSON rows (TTL 3 s), and
 *   tumble:servers        a sorted set of the live owners (score: expiry),
 *                         so /api/rooms on any server lists the whole fleet.
 *
 * Handoff: a hello for a room this server does not run asks Redis, in one
 * script, for the lease and the checkpoint. Granted with a checkpoint: the
 * room is rebuilt from it (world and tick continue) and the hello goes on.
 * Granted without: the room is created as before. Held by another server:
 * asked again every 200 ms until the lease expires (its owner died) or the
 * owner gives it up (drain), for at most the lease TTL and a second; then
 * the client is told which server holds it.
 *
 * A state image is made on the room's worker (an internal input asks for
 * it; sim/sched.c), comes back through the worker's control ring as a
 * TB_OUT_CHECKPOINT message and is written from here: Redis calls only ever
 * run on the network loop (net/redis.h).
 *
 * Redis down or slow: rooms keep running; checkpoints, renewals and lobby
 * updates are skipped (a warning when it goes, one when it is back, and
 * counters in /metrics); rooms asked for while Redis is down are created
 * locally. When Redis is back, renewal takes every lease that is free
 * again, and gives up a room whose lease another server took meanwhile.
 *
 * Lifecycle: tb_fleet_init / tb_fleet_start / tb_fleet_drain / tb_fleet_close.
 */
#ifndef TB_FLEET_H
#define TB_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/redis.h"
#include "sim/registry.h"
#include "sim/wire.h"

struct tb_server;
struct tb_msg;
typedef struct tb_fleet tb_fleet;
typedef void (*tb_fleet_drained_cb)(tb_fleet *fleet);

typedef struct tb_fleet_room tb_fleet_room;   /* a room this server runs */
typedef struct tb_fleet_pending tb_fleet_pending; /* hellos for one room, waiting for Redis */

struct tb_fleet {
    uv_loop_t *loop;
    struct tb_server *server;
    tb_registry *registry;
    tb_redis redis;
    char owner[128];
    char instance[64];
    int64_t checkpoint_interval_ns;
    int lease_ttl_ms;
    uv_timer_t tick;
    int64_t next_renew_ns, next_lobby_ns;

    tb_fleet_room **rooms;  /* each allocated alone: replies in flight point at them */
    int room_count, room_cap;
    tb_fleet_pending *claims;

    /* /api/rooms: the other servers' rows, from the last lobby read */
    char *others_json;  /* rows without the brackets, "" when none */
    int others_servers;

    bool draining, stop_after_drain;
    int64_t drain_deadline_ns;
    tb_fleet_drained_cb drained_cb;
    bool drained_called;
    bool warned_down;
    bool closing;
    void (*closed_cb)(tb_fleet *fleet);

    /* statistics (/metrics) */
    uint64_t checkpoints_written_total, checkpoints_failed_total, checkpoints_skipped_total;
    uint64_t checkpoint_bytes_total;
    uint64_t checkpoint_net_ns_total;  /* network-thread CPU time sending them */
    uint64_t handoffs_total, restore_failures_total;
    uint64_t lease_losses_total, claims_refused_total, claims_degraded_total;
    uint64_t renewals_total, lobby_updates_total;
};

/* Owner id from the instance name; the URL checked (0, or -1 + reason). */
int tb_fleet_init(tb_fleet *fleet, uv_loop_t *loop, const char *redis_url, const char *instance,
                  int checkpoint_interval_s, int lease_ttl_ms, int redis_timeout_ms, char *err, size_t cap);
void tb_fleet_attach(tb_fleet *fleet, struct tb_server *server, tb_registry *registry);
void tb_fleet_start(tb_fleet *fleet);

/* A hello for a room the registry does not have. 1: the fleet took it and
 * will call tb_server_fleet_join (server.c) when Redis has answered; 0:
 * go on as without a fleet. */
int tb_fleet_claim(tb_fleet *fleet, uint32_t client, const tb_client_msg *hello);
/* A state image from a worker (TB_OUT_CHECKPOINT); final: the room stopped
 * stepping after it (a drain). */
void tb_fleet_on_checkpoint(tb_fleet *fleet, tb_room *room, struct tb_msg *image, bool final);

/* Checkpoint every room a last time, give up its lease, close its players
 * with 1001; then drained_cb (at the latest after deadline_ms). */
void tb_fleet_drain(tb_fleet *fleet, int deadline_ms, tb_fleet_drained_cb drained_cb);
bool tb_fleet_draining(const tb_fleet *fleet);

/* /api/rooms: this server's rows and the fleet's, as one JSON array
 * (malloc'ed, *len bytes); NULL when out of memory. */
char *tb_fleet_rooms_json(tb_fleet *fleet, size_t *len);
/* May this address (the one a request counts as) drain the server? Loopback
 * or inside a trusted proxy range. */
struct tb_proxy_list;
bool tb_fleet_admin_allowed(const char *addr, const struct tb_proxy_list *proxies);
/* Prometheus text for the fleet counters (malloc'ed). */
char *tb_fleet_metrics_text(tb_fleet *fleet);

void tb_fleet_close(tb_fleet *fleet, void (*closed_cb)(tb_fleet *fleet));

#endif
