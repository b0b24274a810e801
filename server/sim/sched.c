/* sched.c: worker threads stepping rooms at 120 Hz (see sched.h).
 *
 * Why the loop looks like this: a 120 Hz step is 8.333 ms, finer than a
 * libuv timer can express, and several rooms on one worker must keep their
 * own cadence. So each room carries its own due time (tb_pace), the worker
 * sleeps with clock_nanosleep(TIMER_ABSTIME) until the earliest one, and a
 * late wake-up only shortens the next sleep. The sleep is capped at 4 ms so a
 * newly adopted room or a stop request is noticed quickly.
 */
#define _GNU_SOURCE
#include "sim/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/clock.h"
#include "sim/error.h"
#include "sim/wire.h"

#define TB__MAX_SLEEP_NS (4 * TB_NS_PER_MS)
#define TB__INPUTS_PER_STEP 256

static void tb__emit(tb_worker *w, int kind, uint32_t client, tb_room *room, tb_msg *msg)
{
    if (!msg)
        return;
    tb_out out = {kind, client, tb_room_ref(room), msg};
    if (tb_ring_push(&w->out, &out) != 0) {
        if (kind == TB_OUT_SNAPSHOT)
            TB_COUNT(w->sched->metrics, snapshots_dropped_total);
        else
            TB_COUNT(w->sched->metrics, events_dropped_total);
        tb_room_unref(room);
        tb_msg_unref(msg);
    }
}

static void tb__emit_error(tb_worker *w, tb_room *room, const tb_input *in, int code)
{
    const char *reason = code == TB_ERANGE ? "out_of_range"
                         : code == TB_EUNKNOWN ? "unknown_name"
                         : code == TB_ECAP ? "limit"
                         : code == TB_ENOTSUP ? "not_supported"
                                              : "invalid";
    tb__emit(w, TB_OUT_CLIENT, in->client, room, tb_wire_error(reason, tb_strerror(code), in->seq));
    TB_COUNT(w->sched->metrics, inputs_rejected_total[TB_REJECT_INVALID]);
}

/* Rebuild the room's world (reset, or another scene of the same kind). */
static int tb__rebuild(tb_room *room, const char *scene_name)
{
    const tb_scene *scene = tb_scene_find(scene_name);
    if (!scene || scene->ops != room->ops)
        return TB_EBADSCENE;
    void *world = NULL;
    int rc = room->ops->create(scene->name, room->seed + room->tick, &world);
    if (rc < 0)
        return rc;
    room->ops->destroy(room->world);
    room->world = world;
    snprintf(room->scene, sizeof room->scene, "%s", scene->name);
    return 0;
}

static void tb__apply_input(tb_worker *w, tb_room *room, const tb_input *in)
{
    tb_metrics *m = w->sched->metrics;
    int rc = 0;
    switch (in->type) {
    case TB_INPUT_JOIN:
        tb__emit(w, TB_OUT_WELCOME, in->client, room, tb_wire_welcome(room, in->client, w->sched->instance));
        return;
    case TB_INPUT_LEAVE:
        room->ops->apply_input(room->world, in);
        return;
    case TB_INPUT_PARAM: {
        rc = room->ops->param_set(room->world, in->name, in->value);
        if (rc == 0) {
            float applied = in->value;
            room->ops->param_get(room->world, in->name, &applied);
            tb__emit(w, TB_OUT_BROADCAST, 0, room, tb_wire_param(in->name, applied, in->client, room->tick));
        }
        break;
    }
    case TB_INPUT_RESET:
        rc = room->ops->apply_input(room->world, in);
        if (rc == TB_ENOTSUP)
            rc = tb__rebuild(room, room->scene);
        break;
    case TB_INPUT_SCENE:
        rc = tb__rebuild(room, in->name);
        if (rc == 0) /* everyone needs the new static description: re-welcome */
            tb__emit(w, TB_OUT_BROADCAST, 0, room, tb_wire_welcome(room, 0, w->sched->instance));
        break;
    default:
        rc = room->ops->apply_input(room->world, in);
        break;
    }
    if (rc < 0)
        tb__emit_error(w, room, in, rc);
    else
        TB_COUNT(m, inputs_applied_total);
}

static void tb__step_room(tb_worker *w, tb_room *room, int64_t now)
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
    for (int s = 0; s < owed; s++) {
        tb_input in;
        for (int i = 0; i < TB__INPUTS_PER_STEP && tb_ring_pop(&room->inputs, &in); i++)
            tb__apply_input(w, room, &in);

        int64_t t0 = tb_clock_now_ns();
        room->ops->step(room->world, dt);
        int64_t t1 = tb_clock_now_ns();
        room->tick++;
        tb_hist_observe(&m->step_time, (t1 - t0) / TB_NS_PER_US);
        atomic_fetch_add_explicit(&room->step_ns_sum, (uint_fast64_t)(t1 - t0), memory_order_relaxed);
        atomic_fetch_add_explicit(&room->step_count, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->steps, 1, memory_order_relaxed);
        TB_COUNT(m, steps_total);

        if (room->ops->poll_event) {
            msgpack_sbuffer sb;
            msgpack_packer pk;
            msgpack_sbuffer_init(&sb);
            msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
            while (room->ops->poll_event(room->world, &pk) == 1) {
                tb__emit(w, TB_OUT_BROADCAST, 0, room, tb_wire_event(sb.data, sb.size, room->tick));
                msgpack_sbuffer_clear(&sb);
            }
            msgpack_sbuffer_destroy(&sb);
        }

        /* Every Nth tick, also inside a catch-up burst: a client that keeps
         * up then misses nothing; the network side drops what it cannot send. */
        if (room->tick % (uint64_t)room->snapshot_every == 0) {
            tb_msg *snap = tb_wire_snapshot(room);
            if (snap) {
                snap->tick = room->tick;
                snap->made_ns = tb_clock_now_ns();
                TB_COUNT(m, snapshots_total);
                tb__emit(w, TB_OUT_SNAPSHOT, 0, room, snap);
            }
        }
    }
    tb_world_info info = {0, 0};
    room->ops->info(room->world, &info);
    atomic_store_explicit(&room->bodies, info.bodies, memory_order_relaxed);
    atomic_store_explicit(&room->awake, info.awake, memory_order_relaxed);
}

static void tb__take_adoptions(tb_worker *w, int64_t now)
{
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->adopt_count; i++) {
        tb_room *room = w->adopt[i];
        if (w->room_count == w->room_cap) {
            int cap = w->room_cap ? w->room_cap * 2 : 16;
            tb_room **rooms = realloc(w->rooms, (size_t)cap * sizeof *rooms);
            if (!rooms) { /* keep it queued; try again next wake */
                memmove(w->adopt, w->adopt + i, (size_t)(w->adopt_count - i) * sizeof *w->adopt);
                w->adopt_count -= i;
                pthread_mutex_unlock(&w->lock);
                return;
            }
            w->rooms = rooms;
            w->room_cap = cap;
        }
        tb_pace_init(&room->pace, now, TB_STEP_NS, TB_MAX_BEHIND_NS);
        w->rooms[w->room_count++] = room;
    }
    w->adopt_count = 0;
    pthread_mutex_unlock(&w->lock);
}

static void tb__drop_retired(tb_worker *w)
{
    for (int i = 0; i < w->room_count;) {
        tb_room *room = w->rooms[i];
        if (!atomic_load_explicit(&room->retire, memory_order_acquire)) {
            i++;
            continue;
        }
        room->ops->destroy(room->world);
        room->world = NULL;
        w->rooms[i] = w->rooms[--w->room_count];
        atomic_fetch_sub(&w->load, 1);
        tb_room_unref(room);
    }
}

static void *tb__worker_main(void *arg)
{
    tb_worker *w = arg;
    tb_sched *sched = w->sched;
    char name[16];
    snprintf(name, sizeof name, "tb-worker-%d", w->index);
    pthread_setname_np(pthread_self(), name);

    while (!atomic_load_explicit(&sched->stop, memory_order_acquire)) {
        int64_t now = tb_clock_now_ns();
        tb__take_adoptions(w, now);
        tb__drop_retired(w);

        size_t before = tb_ring_count(&w->out);
        for (int i = 0; i < w->room_count; i++)
            tb__step_room(w, w->rooms[i], tb_clock_now_ns());
        if (tb_ring_count(&w->out) != before || before > 0)
            sched->wake_cb(sched->wake_data);

        int64_t next = tb_clock_now_ns() + TB__MAX_SLEEP_NS;
        for (int i = 0; i < w->room_count; i++)
            if (w->rooms[i]->pace.next_ns < next)
                next = w->rooms[i]->pace.next_ns;
        tb_clock_sleep_until(next);
    }
    return NULL;
}

int tb_sched_init(tb_sched *sched, int workers, int snapshot_rate_hz, const char *instance,
                  tb_metrics *metrics, tb_sched_wake_cb wake_cb, void *wake_data)
{
    memset(sched, 0, sizeof *sched);
    if (workers < 1 || workers > 256 || snapshot_rate_hz < 1 || snapshot_rate_hz > TB_STEP_HZ ||
        TB_STEP_HZ % snapshot_rate_hz != 0 || !wake_cb)
        return TB_EINVAL;
    sched->workers = calloc((size_t)workers, sizeof *sched->workers);
    if (!sched->workers)
        return TB_ENOMEM;
    sched->worker_count = workers;
    sched->snapshot_every = TB_STEP_HZ / snapshot_rate_hz;
    snprintf(sched->instance, sizeof sched->instance, "%s", instance ? instance : "");
    sched->metrics = metrics;
    sched->wake_cb = wake_cb;
    sched->wake_data = wake_data;
    atomic_init(&sched->stop, false);
    for (int i = 0; i < workers; i++) {
        tb_worker *w = &sched->workers[i];
        w->sched = sched;
        w->index = i;
        pthread_mutex_init(&w->lock, NULL);
        if (tb_ring_init(&w->out, TB_WORKER_OUT_CAPACITY, sizeof(tb_out)) != 0) {
            tb_sched_close(sched);
            return TB_ENOMEM;
        }
    }
    return 0;
}

int tb_sched_start(tb_sched *sched)
{
    for (int i = 0; i < sched->worker_count; i++) {
        tb_worker *w = &sched->workers[i];
        if (pthread_create(&w->thread, NULL, tb__worker_main, w) != 0) {
            tb_sched_stop(sched);
            return TB_ENOMEM;
        }
        w->started = true;
    }
    return 0;
}

int tb_sched_adopt(tb_sched *sched, tb_room *room)
{
    int best = 0;
    for (int i = 1; i < sched->worker_count; i++)
        if (atomic_load(&sched->workers[i].load) < atomic_load(&sched->workers[best].load))
            best = i;
    tb_worker *w = &sched->workers[best];
    room->worker = best;
    room->snapshot_every = sched->snapshot_every;
    atomic_fetch_add(&w->load, 1);
    pthread_mutex_lock(&w->lock);
    if (w->adopt_count == w->adopt_cap) {
        int cap = w->adopt_cap ? w->adopt_cap * 2 : 16;
        tb_room **adopt = realloc(w->adopt, (size_t)cap * sizeof *adopt);
        if (!adopt) {
            pthread_mutex_unlock(&w->lock);
            atomic_fetch_sub(&w->load, 1);
            return TB_ENOMEM;
        }
        w->adopt = adopt;
        w->adopt_cap = cap;
    }
    w->adopt[w->adopt_count++] = tb_room_ref(room);
    pthread_mutex_unlock(&w->lock);
    return best;
}

int tb_sched_poll(tb_sched *sched, tb_out *out)
{
    for (int i = 0; i < sched->worker_count; i++)
        if (tb_ring_pop(&sched->workers[i].out, out))
            return 1;
    return 0;
}

void tb_sched_stop(tb_sched *sched)
{
    atomic_store(&sched->stop, true);
    for (int i = 0; i < sched->worker_count; i++) {
        tb_worker *w = &sched->workers[i];
        if (w->started)
            pthread_join(w->thread, NULL);
        w->started = false;
    }
}

void tb_sched_close(tb_sched *sched)
{
    if (!sched->workers)
        return;
    tb_out out;
    while (tb_sched_poll(sched, &out)) {
        tb_msg_unref(out.msg);
        tb_room_unref(out.room);
    }
    for (int i = 0; i < sched->worker_count; i++) {
        tb_worker *w = &sched->workers[i];
        for (int r = 0; r < w->room_count; r++) {
            tb_room *room = w->rooms[r];
            room->ops->destroy(room->world);
            room->world = NULL;
            tb_room_unref(room);
        }
        for (int r = 0; r < w->adopt_count; r++)
            tb_room_unref(w->adopt[r]);
        free(w->rooms);
        free(w->adopt);
        tb_ring_close(&w->out);
        pthread_mutex_destroy(&w->lock);
    }
    free(sched->workers);
    sched->workers = NULL;
}

uint64_t tb_sched_worker_steps(const tb_sched *sched, int worker)
{
    return atomic_load(&((tb_sched *)sched)->workers[worker].steps);
}

int tb_sched_worker_load(const tb_sched *sched, int worker)
{
    return atomic_load(&((tb_sched *)sched)->workers[worker].load);
}
