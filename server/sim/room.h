/* room.h: one shared world, its inputs, its pacing, and who holds it.
 *
 * A room is created by the registry (on a join, or at start for the default
 * rooms), adopted by one worker for its whole life, and referenced by the
 * registry, its worker, every session in it and every queued output that
 * names it; the last tb_room_unref() frees it. Ownership of fields:
 *
 *   worker thread only : world, tick, pace, snapshot cadence, step stats
 *                        writes (read by others through atomics)
 *   network thread only: net (the session list), idle_since_ns
 *   any thread         : refs, clients, retire, inputs (lock-free ring)
 *   immutable          : id, scene, ops, keep, seed
 */
#ifndef TB_ROOM_H
#define TB_ROOM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/pace.h"
#include "sim/ring.h"
#include "sim/world.h"
#include "tb_proto.h"

#define TB_ROOM_ID_MAX 32
/* Inputs queued for the next step. A worker drains the queue every step
 * (8.33 ms) and each client is held to --input-rate (120/s, one a step,
 * bursts of 240), so 256 holds one client's whole burst arriving within a
 * step (the rate limiter, not the queue, answers a flood) and a step's
 * inputs from every possible peer (TB_ROOM_MAX_PEERS, 64) four times over.
 * A full queue refuses the input with `rate_limited` ("room input queue
 * full"); a LEAVE waits on the network thread and is retried.
 * 256 x 152 B = 39 kB a room (512 was 78 kB). */
#define TB_ROOM_INPUT_CAPACITY 256
#define TB_ROOM_MAX_PEERS TB_PROTO_MAX_PEERS
/* Stream tiers (issue 17, net/link.c): a client on a link too slow for every
 * snapshot streams every k-th one, k = tb_room_strides[tier]. Tier 0 is the
 * room's own stream (the main encoder); each other tier in use has its own
 * encoder, stepped on its own ticks, so its deltas chain from its previous
 * tick with predictor state of their own. */
#define TB_ROOM_TIERS 6
extern const int tb_room_strides[TB_ROOM_TIERS]; /* 1, 2, 3, 4, 6, 12 */
/* Bandwidth lanes (issue 17, PROTOCOL.md "Bandwidth budgets"): lane 0 is
 * unbudgeted; a client with a budget (--client-kbps, hello.kbps) streams a
 * lane whose encoders spend at most that budget (tb_snap_encoder_set_budget).
 * Clients with the same budget share a lane; a room has at most 3 budgets at
 * once (a fourth client budget takes the nearest lane below it). A stream is
 * a lane and a tier: its bit in tiers_wanted is TB_ROOM_STREAM(lane, tier). */
#define TB_ROOM_LANES 4
#define TB_ROOM_STREAM(lane, tier) ((lane) * 8 + (tier))
#define TB_ROOM_STREAMS (TB_ROOM_LANES * 8)

/* A client in the room as the worker knows it (names for events, views). */
typedef struct tb_peer {
    uint32_t id;
    char name[TB_PROTO_NAME_MAX + 1];
    bool contacts;   /* wants the contacts debug view */
} tb_peer;

typedef struct tb_room {
    char id[TB_ROOM_ID_MAX + 1];
    char scene[24];       /* worker thread (changes on a scene select) */
    _Atomic(const tb_scene *) scene_def; /* the same, readable from any thread */
    const tb_world_ops *ops;
    bool keep;     /* default room: never disposed when idle */
    uint64_t seed;

    atomic_int refs;
    atomic_int clients;   /* players joined (network thread writes); --max-clients-per-room */
    atomic_int watchers;  /* watchers joined (network thread writes); --max-watchers-per-room */
    atomic_bool retire;   /* set by the registry; the worker drops the room */
    int worker;           /* index of the owning worker */
    tb_ring inputs;       /* tb_input records, network -> worker */

    /* worker thread */
    void *world;
    const tb_world_env *env;   /* what the world shares (the scheduler's tower memo), or NULL */
    uint64_t tick;
    tb_pace pace;
    int snapshot_every;   /* steps per snapshot (120 / snapshot rate) */
    tb_snap_encoder *encoder;  /* quantized state of the last snapshot tick */
    uint32_t encoder_tick;     /* the tick that state is from */
    tb_peer peers[TB_ROOM_MAX_PEERS]; /* the players; watchers are only counted */
    int peer_count;
    int watcher_count;         /* watchers joined, as the worker has seen their JOIN/LEAVE */
    uint64_t applied_serial;   /* last input (by arrival number) applied */
    int64_t unsent_input_ns;   /* arrival of the oldest input no snapshot has shown yet */
    atomic_bool key_wanted;    /* a client skipped: add a keyframe next snapshot */
    /* streams 1.. (bit TB_ROOM_STREAM(lane, tier)): wanted by some session / a
     * session needs the stream's keyframe (network thread sets, worker reads
     * and clears keys) */
    atomic_uint tiers_wanted, tier_keys_wanted;
    tb_snap_encoder *tier_encoder[TB_ROOM_LANES][TB_ROOM_TIERS]; /* worker; [0][0] unused (encoder is lane 0 tier 0) */
    atomic_uint lane_kbps[TB_ROOM_LANES]; /* a lane's budget, kbit/s (network thread sets; [0] = 0: none) */
    int lane_users[TB_ROOM_LANES];       /* sessions joined on each lane (network thread) */
    atomic_uint lane_cut_tick[TB_ROOM_LANES]; /* the last tick a lane's budget left something out (worker) */
    /* the lane's full-rate encoder holds the room's own state: made from it
     * (tb_snap_encoder_copy_baseline) and has held nothing back since (worker) */
    bool lane_from_room[TB_ROOM_LANES];
    /* where players poked and grabbed lately (worker): a budget sends what
     * is near them first (tb_snap_encoder_set_focus) */
    float touch_at[TB_SNAP_FOCUS_MAX][3];
    uint64_t touch_tick[TB_SNAP_FOCUS_MAX]; /* 0: none */
    unsigned touch_next;
    uint64_t snapshot_index;   /* tick / snapshot_every of the last snapshot: tier t steps when it divides by its stride */
    struct tb_record *record;  /* --record: this room's input log (sim/record.h), or NULL */
    bool frozen;               /* its last checkpoint is made (a drain): no more steps */

    /* statistics, written by the worker, read by /api/rooms */
    atomic_uint_fast64_t step_ns_sum;
    atomic_uint_fast64_t step_count;
    atomic_int bodies;
    atomic_int awake;

    /* network thread */
    void *net;
    void *fleet;               /* net/fleet.c's record of it (--redis), or NULL */
    uint32_t net_tick;         /* tick of the newest snapshot delivered to the network thread */
    int64_t idle_since_ns;
    uint64_t next_serial;
} tb_room;

/* Room ids are [A-Za-z0-9_-]{1,32}: safe in URLs, logs and file names. */
bool tb_room_id_valid(const char *id);

/* Allocates a room with one reference; the world is created later, on its
 * worker (tb_room_start_world). TB_EBADID, TB_EBADSCENE, TB_ENOMEM. */
int tb_room_new(const char *id, const char *scene, uint64_t seed, bool keep, tb_room **out);
tb_room *tb_room_ref(tb_room *room);
void tb_room_unref(tb_room *room);

/* Queue an input for the next step. TB_EFULL when the ring is full. */
int tb_room_push_input(tb_room *room, const tb_input *in);

/* Replace the room's world with a fresh one of scene `scene_name` (same kind;
 * seeded from the room's seed and tick, so a replay rebuilds the same world).
 * TB_EBADSCENE for an unknown scene, TB_ENOTSUP for another kind's; the old
 * world stays then. The worker's thread only. */
int tb_room_swap_scene(tb_room *room, const char *scene_name);

/* Mean step time in microseconds since the room started (0 if none). */
double tb_room_mean_step_us(const tb_room *room);

#endif
