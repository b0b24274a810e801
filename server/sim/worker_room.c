/* worker_room.c: what a worker does to one room (worker_room.h).
 *
 * Before each step the room's queued inputs are applied in arrival order
 * (joins get their welcome, sliders and resets are announced, the world's
 * refusals go back to the one client); then the world steps, its events
 * (dice) are broadcast and every snapshot_every ticks a snapshot is
 * encoded, as a delta against the previous one plus a keyframe when a
 * client needs one. A state image for the fleet (net/fleet.h) is made here
 * too, because only this thread may read the world. Nothing here waits:
 * what it produces goes to the network thread through tb_worker_emit.
 */
#define _GNU_SOURCE
#include "sim/worker_room.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/clock.h"
#include "sim/error.h"
#include "sim/persist.h"
#include "sim/record.h"
#include "sim/wire.h"

#define TB__INPUTS_PER_STEP 256

static void tb__emit_error(tb_worker *w, tb_room *room, const tb_input *in, int code, const char *detail)
{
    int proto = tb_wire_code(code);
    char text[160];
    snprintf(text, sizeof text, "%s%s%s", detail ? detail : "", detail ? ": " : "", tb_strerror(code));
    tb_worker_emit(w, TB_OUT_CLIENT, in->client, room, tb_wire_error(proto, text, in->seq));
    TB_COUNT(w->sched->metrics, inputs_rejected_total[proto]);
}

static tb_peer *tb__peer(tb_room *room, uint32_t client)
{
    for (int i = 0; i < room->peer_count; i++)
        if (room->peers[i].id == client)
            return &room->peers[i];
    return NULL;
}

static const char *tb__peer_name(tb_room *room, uint32_t client)
{
    tb_peer *p = tb__peer(room, client);
    return p ? p->name : "";
}

/* Quantize the world's current state into the room's encoder; *out (may be
 * NULL) keeps the input for the tier encoders of the same tick. */
static int tb__encode_state(tb_room *room, tb_snap_input *out)
{
    tb_snap_input in;
    room->ops->fill_snapshot(room->world, &in);
    in.tick = (uint32_t)room->tick;
    tb_proto_err err;
    if (tb_snap_encoder_step(room->encoder, &in, &err) != TB_OK)
        return TB_EINVAL;
    room->encoder_tick = (uint32_t)room->tick;
    if (out)
        *out = in;
    return 0;
}

static void tb__drop_tiers(tb_room *room)
{
    for (int l = 0; l < TB_ROOM_LANES; l++)
        for (int t = 0; t < TB_ROOM_TIERS; t++) {
            if (room->tier_encoder[l][t])
                tb_snap_encoder_destroy(room->tier_encoder[l][t]);
            room->tier_encoder[l][t] = NULL;
        }
}

/* (Re)build the encoder for the world's frame (bounds, meshes): worker_room.h. */
int tb_worker_start_encoder(tb_room *room)
{
    tb_proto_welcome *scratch = tb_wire_scratch();
    memset(scratch, 0, sizeof *scratch);
    room->ops->describe(room->world, scratch);
    tb_proto_frame frame;
    tb_proto_frame_from_static(&frame, &scratch->st);
    if (room->encoder)
        tb_snap_encoder_destroy(room->encoder);
    tb__drop_tiers(room); /* the frame may have changed: tiers start afresh (with a keyframe) */
    room->encoder = tb_snap_encoder_create(&frame, room->ops->max_bodies(room->world));
    if (!room->encoder)
        return TB_ENOMEM;
    return tb__encode_state(room, NULL);
}

/* The world's static description changed between two steps (another scene,
 * a new cloth grid): the new state takes a tick number of its own, without
 * a step, so that every tick names exactly one state (PROTOCOL.md §3): the
 * `scene` keyframe is tick T+1, the next step's snapshot deltas from it.
 * Replays do the same (sim/record.c). */
static int tb__static_changed(tb_room *room)
{
    room->tick++;
    return tb_worker_start_encoder(room);
}

/* Rebuild the room's world (another scene of the same kind). An unknown
 * scene name is a bad value of `action select`; another kind's scene is
 * not allowed in this room. */
static int tb__rebuild(tb_room *room, const char *scene_name)
{
    int rc = tb_room_swap_scene(room, scene_name);
    if (rc == TB_EBADSCENE)
        return TB_EINVAL;
    return rc < 0 ? rc : tb__static_changed(room);
}

/* The room's state image for the fleet (net/fleet.h), made here because
 * only this thread may read the world. After the last one (a drain) the
 * room no longer steps: the image is where the next server continues. */
static void tb__checkpoint(tb_worker *w, tb_room *room, bool final)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    tb_msg *msg = tb_persist_encode(room, &buf, &len) == 0 ? tb_msg_from(buf, len) : tb_msg_new(0);
    free(buf);
    if (msg)
        msg->tick = room->tick;
    if (final)
        room->frozen = true;
    tb_worker_emit(w, TB_OUT_CHECKPOINT, final ? 1 : 0, room, msg);
}

/* A client joins: its welcome (the room's static description and a
 * keyframe), and the others hear of it: of a player by peer_joined, of a
 * watcher by the room's new watcher count (watchers are not peers). */
static void tb__join(tb_worker *w, tb_room *room, const tb_input *in)
{
    bool watcher = in->flags == 1;
    /* An empty room is not encoded (tb__snapshot): the first one in
     * gets the current state from a fresh encoder, and later deltas
     * chain from it. Fresh, because an encoder stepped from a state
     * minutes old would put the whole way since into the keyframe's
     * velocities (the predictor of the next delta). */
    if (room->peer_count == 0 && room->watcher_count == 0 && room->encoder &&
        room->encoder_tick != (uint32_t)room->tick)
        tb_worker_start_encoder(room);
    if (watcher) {
        room->watcher_count++;
    } else if (!tb__peer(room, in->client) && room->peer_count < TB_ROOM_MAX_PEERS) {
        tb_peer *p = &room->peers[room->peer_count++];
        p->id = in->client;
        snprintf(p->name, sizeof p->name, "%s", in->by_name);
        p->contacts = false;
    }
    tb_msg *welcome = tb_wire_welcome(room, in->client, w->sched->instance, TB_MSG_WELCOME);
    if (!welcome) { /* no encoder (out of memory at adoption): say so rather than leave it waiting */
        tb_worker_emit(w, TB_OUT_CLIENT, in->client, room,
                       tb_wire_error(TB_ERR_INTERNAL, "room cannot encode its state", -1));
        return;
    }
    tb_worker_emit(w, TB_OUT_WELCOME, in->client, room, welcome);
    tb_worker_emit(w, TB_OUT_BROADCAST, in->client, room,
                   watcher ? tb_wire_watchers((uint32_t)room->watcher_count)
                           : tb_wire_peer_joined(in->client, in->by_name));
}

/* A client leaves: a player's grabs end and the others hear peer_left; a
 * watcher (holds nothing) only changes the count. */
static void tb__leave(tb_worker *w, tb_room *room, const tb_input *in)
{
    if (in->flags == 1) {
        if (room->watcher_count > 0)
            room->watcher_count--;
        tb_worker_emit(w, TB_OUT_BROADCAST, in->client, room, tb_wire_watchers((uint32_t)room->watcher_count));
        return;
    }
    room->ops->apply_input(room->world, in);
    tb_peer *p = tb__peer(room, in->client);
    if (p) {
        *p = room->peers[--room->peer_count];
        tb_worker_emit(w, TB_OUT_BROADCAST, in->client, room, tb_wire_peer_left(in->client));
    }
}

/* A slider: set, then everyone hears the value as the world took it. */
static int tb__set_param(tb_worker *w, tb_room *room, const tb_input *in)
{
    int rc = room->ops->param_set(room->world, in->name, in->value_d);
    if (rc == TB_WORLD_STATIC_CHANGED) { /* new meshes: everyone needs the static description and a keyframe */
        rc = tb__static_changed(room);
        if (rc == 0)
            tb_worker_emit(w, TB_OUT_SCENE, 0, room, tb_wire_welcome(room, 0, w->sched->instance, TB_MSG_SCENE));
    }
    if (rc == 0) {
        double applied = in->value_d;
        room->ops->param_get(room->world, in->name, &applied);
        applied = tb_world_param_decimal(applied); /* 0.2, not 0.2 widened from float */
        tb_worker_emit(w, TB_OUT_BROADCAST, 0, room,
                       tb_wire_param_changed(in->name, applied, in->client, tb__peer_name(room, in->client)));
    }
    return rc;
}

/* Lag compensation (PROTOCOL.md "Lag compensation"): the steps between the
 * tick the player was looking at and now, for the world to look up in its
 * pose history. Set before the input is recorded, so a replay resolves it
 * alike. A tick from the future, or none, is now; the world caps the age at
 * what its history holds. */
static uint16_t tb__view_age(const tb_room *room, const tb_input *in)
{
    if (in->view_tick == 0 || in->view_tick >= (uint32_t)room->tick)
        return 0;
    uint32_t age = (uint32_t)room->tick - in->view_tick;
    return age > UINT16_MAX ? UINT16_MAX : (uint16_t)age;
}

/* A player touched the world at p (a poke, a grab, a dragged grab point). */
static void tb__touched(tb_room *room, const float p[3])
{
    unsigned k = room->touch_next++ % TB_SNAP_FOCUS_MAX;
    memcpy(room->touch_at[k], p, sizeof room->touch_at[k]);
    room->touch_tick[k] = room->tick ? room->tick : 1;
}

/* The points touched in the last second, for the budgeted streams. */
static uint32_t tb__focus(const tb_room *room, float out[TB_SNAP_FOCUS_MAX][3])
{
    uint32_t n = 0;
    for (int k = 0; k < TB_SNAP_FOCUS_MAX; k++)
        if (room->touch_tick[k] && room->tick - room->touch_tick[k] < TB_STEP_HZ)
            memcpy(out[n++], room->touch_at[k], sizeof out[0]);
    return n;
}

static void tb__apply_input(tb_worker *w, tb_room *room, const tb_input *given)
{
    tb_metrics *m = w->sched->metrics;
    int rc = 0;
    tb_input lagged = *given;
    lagged.view_age = tb__view_age(room, given);
    const tb_input *in = &lagged;
    if (room->record)
        tb_record_input(room->record, room->tick, in);
    room->applied_serial = in->serial;
    if (in->type != TB_INPUT_JOIN && in->type != TB_INPUT_LEAVE && in->recv_ns &&
        (!room->unsent_input_ns || in->recv_ns < room->unsent_input_ns))
        room->unsent_input_ns = in->recv_ns;
    switch (in->type) {
    case TB_INPUT_JOIN:
        tb__join(w, room, in);
        return;
    case TB_INPUT_LEAVE:
        tb__leave(w, room, in);
        return;
    case TB_INPUT_PARAM:
        rc = tb__set_param(w, room, in);
        break;
    case TB_INPUT_RESET:
        rc = room->ops->apply_input(room->world, in);
        if (rc == 0)
            tb_worker_emit(w, TB_OUT_BROADCAST, 0, room,
                           tb_wire_reset(in->name[0] ? in->name : "reset", in->client, tb__peer_name(room, in->client)));
        break;
    case TB_INPUT_SCENE:
        rc = tb__rebuild(room, in->name);
        if (rc == 0) { /* everyone needs the new static description and a keyframe */
            tb_worker_emit(w, TB_OUT_SCENE, 0, room, tb_wire_welcome(room, 0, w->sched->instance, TB_MSG_SCENE));
            /* ... and to hear who switched it (the scene message names the new scene) */
            tb_worker_emit(w, TB_OUT_BROADCAST, 0, room,
                           tb_wire_reset("select", in->client, tb__peer_name(room, in->client)));
        }
        break;
    case TB_INPUT_CONTACTS: {
        tb_peer *p = tb__peer(room, in->client);
        if (!(room->ops->overlays & (1u << TB_WORLD_OVERLAY_CONTACTS)))
            rc = TB_ENOTSUP;
        else if (p)
            p->contacts = in->flags != 0;
        break;
    }
    default:
        rc = room->ops->apply_input(room->world, in);
        break;
    }
    if (rc == TB_ECAP && in->type == TB_INPUT_THROW) {
        /* applied, but the oldest projectile made room: tell the thrower */
        TB_COUNT(m, inputs_applied_total);
        tb__emit_error(w, room, in, rc, "projectile cap: the oldest was recycled");
    } else if (rc < 0) {
        tb__emit_error(w, room, in, rc, in->type == TB_INPUT_PARAM ? in->name : NULL);
    } else {
        TB_COUNT(m, inputs_applied_total);
        if (in->type == TB_INPUT_POKE || in->type == TB_INPUT_GRAB_START || in->type == TB_INPUT_GRAB_MOVE)
            tb__touched(room, in->pos);
    }
}

/* The streams the network thread asked for (room.h, net/link.c): on this
 * snapshot tick, every wanted stream (a lane and a tier) whose tier's stride
 * divides the snapshot index steps its own encoder with the same input and
 * emits its delta (and its keyframe when a session needs one, or when the
 * encoder is new). A lane's encoders spend at most the lane's budget: per
 * snapshot of the tier, kbps x stride / snapshot rate, and every item is
 * refreshed within 0.5 s; what players poked or grabbed in the last second
 * goes first. A stream no session wants any more is dropped.
 * Emitted as TB_OUT_SNAPSHOT with client = TB_ROOM_STREAM(lane, tier). */
static void tb__tier_snapshots(tb_worker *w, tb_room *room, const tb_snap_input *in, int64_t now)
{
    unsigned wanted = atomic_load_explicit(&room->tiers_wanted, memory_order_acquire);
    int snap_hz = TB_STEP_HZ / room->snapshot_every;
    float focus[TB_SNAP_FOCUS_MAX][3];
    uint32_t nfocus = wanted >> TB_ROOM_STREAM(1, 0) ? tb__focus(room, focus) : 0; /* only lanes (budgets) use it */
    for (int l = 0; l < TB_ROOM_LANES; l++)
        for (int t = l ? 0 : 1; t < TB_ROOM_TIERS; t++) {
            unsigned bit = 1u << TB_ROOM_STREAM(l, t);
            tb_snap_encoder **enc = &room->tier_encoder[l][t];
            if (!(wanted & bit)) {
                if (*enc) {
                    tb_snap_encoder_destroy(*enc);
                    *enc = NULL;
                }
                continue;
            }
            if (room->snapshot_index % (uint64_t)tb_room_strides[t] != 0)
                continue;
            if (!*enc) {
                tb_proto_welcome *scratch = tb_wire_scratch();
                memset(scratch, 0, sizeof *scratch);
                room->ops->describe(room->world, scratch);
                tb_proto_frame frame;
                tb_proto_frame_from_static(&frame, &scratch->st);
                *enc = tb_snap_encoder_create(&frame, room->ops->max_bodies(room->world));
                if (!*enc)
                    continue;
                /* a lane's full-rate stream starts from the room's own state of
                 * this tick: its next delta chains from what the room's own
                 * clients hold, so one moving to the lane needs no keyframe */
                room->lane_from_room[l] = t == 0 && tb_snap_encoder_copy_baseline(*enc, room->encoder) == TB_OK;
                if (room->lane_from_room[l])
                    continue;
            }
            /* (a budget that has held nothing back chose what the room's own
             * encoder chose, from the same state: the states stay equal) */
            bool from_room = t == 0 && l && room->lane_from_room[l];
            if (l) {
                tb_snap_encoder_set_focus(*enc, focus[0], nfocus);
                uint64_t kbps = atomic_load_explicit(&room->lane_kbps[l], memory_order_relaxed);
                int per_second = snap_hz / tb_room_strides[t];
                per_second = per_second > 0 ? per_second : 1;
                tb_snap_encoder_set_budget(*enc, (uint32_t)(kbps * 1000u / (uint64_t)per_second), (uint32_t)(per_second + 1) / 2);
            }
            tb_proto_err err;
            if (tb_snap_encoder_step(*enc, in, &err) != TB_OK)
                continue;
            if (l && tb_snap_encoder_budget_stats(*enc).pending) { /* the budget binds: net/link.c may raise it */
                atomic_store_explicit(&room->lane_cut_tick[l], (uint32_t)room->tick, memory_order_relaxed);
                if (t == 0)
                    room->lane_from_room[l] = false;
            }
            const tb_snap_blob *delta = tb_snap_encoder_delta(*enc);
            bool want_key = (atomic_fetch_and_explicit(&room->tier_keys_wanted, ~bit, memory_order_acq_rel) & bit) || !delta;
            tb_msg *key = NULL;
            if (want_key) {
                const tb_snap_blob *k = tb_snap_encoder_key(*enc);
                key = k ? tb_wire_snap_blob(k, room->applied_serial) : NULL;
            }
            tb_msg *msg = delta ? tb_wire_snap_blob(delta, room->applied_serial) : tb_msg_ref(key);
            if (msg) {
                msg->made_ns = now;
                msg->from_room = from_room && delta;
            }
            if (key)
                key->made_ns = now;
            tb_worker_emit2(w, TB_OUT_SNAPSHOT, (uint32_t)TB_ROOM_STREAM(l, t), room, msg, key);
        }
}

static void tb__snapshot(tb_worker *w, tb_room *room)
{
    tb_metrics *m = w->sched->metrics;
    if (room->peer_count == 0 && room->watcher_count == 0) /* nobody to send it to; a join encodes afresh */
        return;
    tb_snap_input in;
    if (!room->encoder || tb__encode_state(room, &in) < 0)
        return;
    const tb_snap_blob *delta = tb_snap_encoder_delta(room->encoder);
    bool want_key = atomic_exchange_explicit(&room->key_wanted, false, memory_order_acq_rel) || !delta;
    tb_msg *key = NULL;
    if (want_key) {
        const tb_snap_blob *k = tb_snap_encoder_key(room->encoder);
        key = k ? tb_wire_snap_blob(k, room->applied_serial) : NULL;
    }
    tb_msg *main_msg = delta ? tb_wire_snap_blob(delta, room->applied_serial) : tb_msg_ref(key);
    int64_t now = tb_clock_now_ns();
    if (room->unsent_input_ns) {
        tb_hist_observe(&m->input_latency, (now - room->unsent_input_ns) / TB_NS_PER_US);
        room->unsent_input_ns = 0;
    }
    if (main_msg)
        main_msg->made_ns = now;
    if (key)
        key->made_ns = now;
    TB_COUNT(m, snapshots_total);
    /* the other streams first: a client moving to a lane whose stream was
     * made from this one's last state takes that stream's delta of this tick
     * as its first (it chains from what the client holds) before this
     * stream's delta of the same tick would move the client on */
    tb__tier_snapshots(w, room, &in, now);
    tb_worker_emit2(w, TB_OUT_SNAPSHOT, 0, room, main_msg, key);

    /* The contacts view, for the clients that asked for it. */
    int viewers = 0;
    for (int i = 0; i < room->peer_count; i++)
        viewers += room->peers[i].contacts;
    if (viewers && (room->ops->overlays & (1u << TB_WORLD_OVERLAY_CONTACTS))) {
        tb_world_overlay ov;
        room->ops->overlay(room->world, TB_WORLD_OVERLAY_CONTACTS, &ov);
        tb_msg *msg = tb_wire_contacts((uint32_t)room->tick, ov.contacts, ov.count);
        for (int i = 0; msg && i < room->peer_count; i++)
            if (room->peers[i].contacts)
                tb_worker_emit(w, TB_OUT_CLIENT, room->peers[i].id, room, tb_msg_ref(msg));
        tb_msg_unref(msg);
    }
}

/* The queued inputs, in arrival order, before the room's next step: none
 * after a drain's last state image (worker_room.h). */
void tb_worker_apply_inputs(tb_worker *w, tb_room *room)
{
    tb_input in;
    for (int i = 0; i < TB__INPUTS_PER_STEP && !room->frozen && tb_ring_pop(&room->inputs, &in); i++) {
        if (in.type == TB_INPUT_CHECKPOINT) /* the network thread's, not a client's: not recorded */
            tb__checkpoint(w, room, in.flags == 1);
        else
            tb__apply_input(w, room, &in);
    }
}

void tb_worker_step_room(tb_worker *w, tb_room *room, int64_t now)
{
    tb_metrics *m = w->sched->metrics;
    uint64_t overrun = 0;
    int64_t lateness = 0;
    int owed = tb_pace_take(&room->pace, now, &overrun, &lateness);
    if (owed == 0)
        return;
    tb_hist_observe(&m->tick_lateness, lateness / TB_NS_PER_US);
    if (overrun)
        TB_COUNT_N(m, overrun_steps_total, overrun);

    const float dt = 1.0f / (float)TB_STEP_HZ;
    /* The shared counters are added once per room and pass, not per step:
     * with thousands of resting rooms, atomics on cache lines both workers
     * write would cost more than the steps themselves. */
    int64_t step_ns = 0;
    uint64_t fast_steps = 0;
    for (int s = 0; s < owed; s++) {
        tb_worker_apply_inputs(w, room);
        if (room->frozen) /* its last checkpoint is made: it lives on elsewhere */
            return;

        int64_t t0 = tb_clock_now_ns();
        room->ops->step(room->world, dt);
        int64_t t1 = tb_clock_now_ns();
        room->tick++;
        step_ns += t1 - t0;
        if (t1 - t0 >= TB_NS_PER_US) /* a step under 1 us is a 0 us observation: added below, at once */
            tb_hist_observe(&m->step_time, (t1 - t0) / TB_NS_PER_US);
        else
            fast_steps++;
        /* a body gone non-finite or out of the room is fixed before anyone sees it */
        int faults = room->ops->check ? room->ops->check(room->world) : 0;
        if (faults > 0) {
            TB_COUNT_N(m, physics_faults_total, (uint_fast64_t)faults);
            if (w->sched->fault_cb)
                w->sched->fault_cb(room, faults);
        }

        tb_world_event ev;
        for (int k = 0; room->ops->poll_event && k < TB_WORLD_EVENTS_PER_STEP &&
                        room->ops->poll_event(room->world, &ev) > 0; k++)
            if (ev.kind == TB_WORLD_EVENT_DICE)
                tb_worker_emit(w, TB_OUT_BROADCAST, 0, room, tb_wire_dice((uint32_t)room->tick, ev.values, ev.count));
            else if (ev.kind == TB_WORLD_EVENT_POKE && w->sched->poke_cb)
                w->sched->poke_cb(room, room->tick, &ev);
        if (room->record && room->tick % TB_RECORD_HASH_EVERY == 0)
            tb_record_hash(room->record, room->tick, room->ops->hash(room->world));

        /* Every Nth tick, also inside a catch-up burst: a client that keeps
         * up then misses nothing; the network side drops what it cannot send. */
        if (room->tick % (uint64_t)room->snapshot_every == 0) {
            room->snapshot_index = room->tick / (uint64_t)room->snapshot_every;
            tb__snapshot(w, room);
        }
    }
    if (fast_steps)
        tb_hist_observe_n(&m->step_time, 0, fast_steps);
    atomic_fetch_add_explicit(&room->step_ns_sum, (uint_fast64_t)step_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&room->step_count, (uint_fast64_t)owed, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->steps, (uint_fast64_t)owed, memory_order_relaxed);
    TB_COUNT_N(m, steps_total, (uint_fast64_t)owed);
    tb_world_info info = {0, 0};
    room->ops->info(room->world, &info);
    atomic_store_explicit(&room->bodies, info.bodies, memory_order_relaxed);
    atomic_store_explicit(&room->awake, info.awake, memory_order_relaxed);
}
