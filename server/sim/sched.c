/* sched.c: worker threads stepping rooms at 120 Hz (see sched.h).
 *
 * Why the loop looks like this: a 120 Hz step is 8.333 ms, finer than a
 * libuv timer can express. So the worker sleeps with
 * clock_nanosleep(TIMER_ABSTIME) until the next boundary of its phase grid
 * (TB_SCHED_PHASES boundaries per 8.333 ms period), and a late wake-up only
 * shortens the next sleep. Each room sits on one phase and is due at that
 * phase's boundaries, so the stepping (and the snapshots, every 2nd tick) is
 * spread over the period instead of done in one burst, and a room's tick
 * lateness is its own delay, not the work of every room due before it in
 * one shared slot. One wake-up per phase boundary, whatever the number of
 * rooms, and one uv_async_send per phase pass that produced something. A
 * newly adopted room or a stop request waits at most one period.
 */
#define _GNU_SOURCE
#include "sim/sched.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "physics/rigid.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/record.h"
#include "sim/replay.h"
#include "sim/wire.h"
#include "sim/worker_room.h"

_Static_assert(TB_STEP_HZ == TB_REPLAY_STEP_HZ, "a replay steps at the worker's rate");

#define TB__INPUT_PASS_NS (2 * TB_NS_PER_MS)

static void tb__release_out(tb_out *out)
{
    tb_msg_unref(out->msg);
    tb_msg_unref(out->key);
    tb_room_unref(out->room);
}

/* Move waiting control messages into the ctl ring, oldest first. */
static void tb__flush_overflow(tb_worker *w)
{
    int done = 0;
    while (done < w->overflow_count) {
        tb_out *out = &w->overflow[done];
        out->seq = w->out_seq;
        if (tb_ring_push(&w->ctl, out) != 0)
            break;
        w->out_seq++;
        done++;
    }
    if (done) {
        memmove(w->overflow, w->overflow + done, (size_t)(w->overflow_count - done) * sizeof *w->overflow);
        w->overflow_count -= done;
    }
}

/* A control message must arrive: behind others already waiting, or in the
 * ring, or (ring full) at the end of the overflow list. Only a failed
 * allocation of that list drops it. */
static void tb__push_ctl(tb_worker *w, tb_out *out)
{
    if (w->overflow_count)
        tb__flush_overflow(w);
    if (w->overflow_count == 0) {
        out->seq = w->out_seq;
        if (tb_ring_push(&w->ctl, out) == 0) {
            w->out_seq++;
            return;
        }
    }
    if (w->overflow_count == w->overflow_cap) {
        int cap = w->overflow_cap ? w->overflow_cap * 2 : 256;
        tb_out *list = realloc(w->overflow, (size_t)cap * sizeof *list);
        if (!list) {
            TB_COUNT(w->sched->metrics, events_dropped_total);
            tb__release_out(out);
            return;
        }
        w->overflow = list;
        w->overflow_cap = cap;
    }
    w->overflow[w->overflow_count++] = *out;
}

void tb_worker_emit2(tb_worker *w, int kind, uint32_t client, tb_room *room, tb_msg *msg, tb_msg *key)
                     {
    if (!msg) {
        tb_msg_unref(key);
        return;
    }
    tb_out out = {kind, client, tb_room_ref(room), msg, key, 0};
    if (kind != TB_OUT_SNAPSHOT) {
        tb__push_ctl(w, &out);
        return;
    }
    out.seq = w->out_seq;
    if (tb_ring_push(&w->out, &out) == 0) {
        w->out_seq++;
        return;
    }
    TB_COUNT(w->sched->metrics, snapshots_dropped_total); /* a newer one follows */
    tb__release_out(&out);
}

void tb_worker_emit(tb_worker *w, int kind, uint32_t client, tb_room *room, tb_msg *msg)
                    {
    tb_worker_emit2(w, kind, client, room, msg, NULL);
}

static void tb__wake(tb_worker *w)
{
    w->sched->wake_cb(w->sched->wake_data);
    atomic_fetch_add_explicit(&w->wakes, 1, memory_order_relaxed);
    w->woken_seq = w->out_seq;
}

/* Applies every room's queued inputs; wakes the network thread if that
 * produced anything. */
static void tb__input_pass(tb_worker *w)
{
    uint64_t before = w->out_seq;
    for (int p = 0; p < TB_SCHED_PHASES; p++) {
        tb_sched_phase *ph = &w->phases[p];
        for (int i = 0; i < ph->count; i++)
            if (tb_ring_count(&ph->rooms[i]->inputs))
                tb_worker_apply_inputs(w, ph->rooms[i]);
    }
    if (w->out_seq != before)
        tb__wake(w);
}

/* The input pass, when the worker has been stepping without a sleep for
 * TB__INPUT_PASS_NS and as long since the last pass. A worker that keeps up
 * needs none: each room's inputs are applied before its own step, at most
 * a period away, and its replies go out with the phase. */
static void tb__maybe_input_pass(tb_worker *w, int64_t now)
{
    if (now - w->awake_ns < TB__INPUT_PASS_NS || now < w->next_pass_ns)
        return;
    tb__input_pass(w);
    w->next_pass_ns = now + TB__INPUT_PASS_NS;
}

/* Adds a room to the phase with the fewest rooms, first due at that phase's
 * next boundary. -1 (nothing changed) when the list cannot grow. */
static int tb__place_room(tb_worker *w, tb_room *room, int64_t now)
{
    int counts[TB_SCHED_PHASES];
    for (int p = 0; p < TB_SCHED_PHASES; p++)
        counts[p] = w->phases[p].count;
    tb_sched_phase *ph = &w->phases[tb_phase_pick(counts, TB_SCHED_PHASES)];
    if (ph->count == ph->cap) {
        int cap = ph->cap ? ph->cap * 2 : 16;
        tb_room **rooms = realloc(ph->rooms, (size_t)cap * sizeof *rooms);
        if (!rooms)
            return -1;
        ph->rooms = rooms;
        ph->cap = cap;
    }
    int64_t due = tb_phase_next_due(w->origin_ns, (int)(ph - w->phases), TB_SCHED_PHASES, TB_STEP_NS, now);
    tb_pace_init(&room->pace, due - TB_STEP_NS, TB_STEP_NS, TB_MAX_BEHIND_NS);
    if (ph->count == 0 || due < ph->due_ns)
        ph->due_ns = due;
    ph->rooms[ph->count++] = room;
    return 0;
}

static void tb__take_adoptions(tb_worker *w)
{
    pthread_mutex_lock(&w->lock);
    int64_t now = tb_clock_now_ns();
    for (int i = 0; i < w->adopt_count; i++) {
        tb_room *room = w->adopt[i];
        if (tb__place_room(w, room, now) < 0) { /* keep it queued; try again next wake */
            memmove(w->adopt, w->adopt + i, (size_t)(w->adopt_count - i) * sizeof *w->adopt);
            w->adopt_count -= i;
            pthread_mutex_unlock(&w->lock);
            return;
        }
        if (!room->encoder && tb_worker_start_encoder(room) < 0) /* no snapshots; joins get no welcome */
            atomic_fetch_add(&w->sched->metrics->events_dropped_total, 1);
        if (w->sched->record_dir[0] && !room->record && room->ops->hash) {
            char why[160];
            room->record = tb_record_open(w->sched->record_dir, room, why, sizeof why);
            if (!room->record && w->sched->record_fail_cb)
                w->sched->record_fail_cb(room, why);
        }
    }
    w->adopt_count = 0;
    pthread_mutex_unlock(&w->lock);
}

/* Drops the phase's rooms the registry retired. One tight pass before the
 * stepping, not a check per room inside it: the independent loads overlap,
 * and the rooms are then in cache for the stepping (with thousands of
 * resting rooms, a first touch per room inside the step loop cost 0.1 core). */
static void tb__drop_retired(tb_worker *w, tb_sched_phase *ph)
{
    for (int i = 0; i < ph->count;) {
        tb_room *room = ph->rooms[i];
        if (!atomic_load_explicit(&room->retire, memory_order_acquire)) {
            i++;
            continue;
        }
        room->ops->destroy(room->world);
        room->world = NULL;
        ph->rooms[i] = ph->rooms[--ph->count];
        atomic_fetch_sub(&w->load, 1);
        tb_room_unref(room);
    }
}

/* Resting rooms cost little besides cache misses (the room, its input
 * ring, its world), one after the other: ask for the next rooms' lines
 * while this one steps. Hints only. */
static void tb__prefetch_room(const tb_room *room)
{
    __builtin_prefetch(room);
    __builtin_prefetch(&room->inputs.tail);
    __builtin_prefetch(&room->pace);
    __builtin_prefetch(&room->step_ns_sum);
}

static void tb__prefetch_world(const tb_room *room)
{
    size_t tail = atomic_load_explicit(&room->inputs.tail, memory_order_relaxed);
    __builtin_prefetch(room->inputs.cells + (tail & room->inputs.mask) * room->inputs.stride);
    __builtin_prefetch(room->world);
}

/* Steps the rooms of phase p that are due (all of them, unless some were
 * adopted late or fell behind) and drops the retired ones, with an input
 * pass every TB__INPUT_PASS_NS of a long pass, then wakes the network
 * thread once for what the pass produced. The phase's next due time is its
 * rooms' earliest: whole steps on the phase's grid, so the rooms stay on it
 * after a stall too. */
static void tb__step_phase(tb_worker *w, int p)
{
    tb_sched_phase *ph = &w->phases[p];
    tb__drop_retired(w, ph);
    if (ph->count == 0) {
        ph->due_ns = tb_phase_next_due(w->origin_ns, p, TB_SCHED_PHASES, TB_STEP_NS, tb_clock_now_ns());
        return;
    }
    int64_t due = INT64_MAX;
    for (int i = 0; i < ph->count; i++) {
        int64_t t = tb_clock_now_ns();
        tb__maybe_input_pass(w, t);
        tb_room *room = ph->rooms[i];
        if (i + 2 < ph->count)
            tb__prefetch_room(ph->rooms[i + 2]);
        if (i + 1 < ph->count)
            tb__prefetch_world(ph->rooms[i + 1]);
        tb_worker_step_room(w, room, t);
        if (room->pace.next_ns < due)
            due = room->pace.next_ns;
    }
    ph->due_ns = due;
    /* once for everything the phase's stepping produced */
    if (w->out_seq != w->woken_seq || tb_ring_count(&w->out) > 0 || tb_ring_count(&w->ctl) > 0)
        tb__wake(w);
}

/* The phase to step next: the earliest due at or before now, else -1. */
static int tb__due_phase(const tb_worker *w, int64_t now)
{
    int best = -1;
    for (int p = 0; p < TB_SCHED_PHASES; p++)
        if (w->phases[p].due_ns <= now && (best < 0 || w->phases[p].due_ns < w->phases[best].due_ns))
            best = p;
    return best;
}

/* When to wake next: the earliest due phase that has rooms, and phase 0's
 * boundary in any case (adoptions, stop requests, input passes). */
static int64_t tb__next_wake(const tb_worker *w)
{
    int64_t next = w->phases[0].due_ns;
    for (int p = 1; p < TB_SCHED_PHASES; p++)
        if (w->phases[p].count > 0 && w->phases[p].due_ns < next)
            next = w->phases[p].due_ns;
    return next;
}

/* The rigid worlds this worker steps share one scratch (world.h). */
static _Thread_local tb_rigid_scratch *tb__rigid_scratch;
static tb_rigid_scratch *tb__thread_rigid_scratch(void) { return tb__rigid_scratch; }

/* This thread's CPU (when it has one, tb_sched_start) and nice value
 * (Linux: per thread, by its id), see sched.h. */
static void tb__take_priority(tb_worker *w)
{
    if (w->cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(w->cpu, &one);
        atomic_store(&w->pinned, pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
    }
    const id_t tid = (id_t)syscall(SYS_gettid);
    int want = w->sched->worker_nice, err = 0;
    if (want != 0 && setpriority(PRIO_PROCESS, tid, want) != 0)
        err = errno;
    atomic_store(&w->nice, getpriority(PRIO_PROCESS, tid));
    atomic_store(&w->nice_errno, err);
    atomic_store_explicit(&w->nice_done, true, memory_order_release);
}

static void *tb__worker_main(void *arg)
{
    tb_worker *w = arg;
    tb_sched *sched = w->sched;
    char name[16];
    snprintf(name, sizeof name, "tb-worker-%d", w->index);
    pthread_setname_np(pthread_self(), name);
    tb__take_priority(w);
    /* NULL when memory is short: the worlds keep their own. Freed at the end:
     * a world outlives it only to be saved or destroyed, which never touch it. */
    tb__rigid_scratch = tb_rigid_scratch_create();

    int64_t start = tb_clock_now_ns();
    w->origin_ns = start + TB_STEP_NS;
    w->awake_ns = w->next_pass_ns = start;
    for (int p = 0; p < TB_SCHED_PHASES; p++)
        w->phases[p].due_ns = w->origin_ns + tb_phase_offset(p, TB_SCHED_PHASES, TB_STEP_NS);
    while (!atomic_load_explicit(&sched->stop, memory_order_acquire)) {
        tb__take_adoptions(w);
        if (w->overflow_count)
            tb__flush_overflow(w);

        /* A room's queued inputs are applied right before each of its
         * steps. When the worker has been busy for TB__INPUT_PASS_NS
         * without a sleep (overloaded), every room's inputs are applied
         * every TB__INPUT_PASS_NS too, and what they produced (welcomes,
         * replies) is sent at once, so a join is answered within
         * milliseconds even when the worker takes seconds to step all its
         * rooms. */
        int64_t now = tb_clock_now_ns();
        tb__maybe_input_pass(w, now);
        /* One phase per turn of the loop, the earliest due first: an
         * overloaded worker still sees adoptions and a stop request
         * between phases. Retired rooms are dropped as their phase comes. */
        int p = tb__due_phase(w, now);
        if (p >= 0) {
            tb__step_phase(w, p);
            continue;
        }
        tb_clock_sleep_until(tb__next_wake(w));
        w->awake_ns = tb_clock_now_ns();
    }
    tb_rigid_scratch_destroy(tb__rigid_scratch);
    tb__rigid_scratch = NULL;
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
    tb_tower_memo_init(&sched->tower_memo);
    sched->env.tower_memo = &sched->tower_memo;
    sched->env.tower_memo_build = tb_tower_memo_build;
    sched->env.rigid_scratch = tb__thread_rigid_scratch;
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
        if (tb_ring_init(&w->out, TB_WORKER_OUT_CAPACITY, sizeof(tb_out)) != 0 ||
            tb_ring_init(&w->ctl, TB_WORKER_CTL_CAPACITY, sizeof(tb_out)) != 0) {
            tb_sched_close(sched);
            return TB_ENOMEM;
        }
    }
    return 0;
}

/* Worker i on the i-th CPU the process may use, when there are as many. */
static void tb__place_workers(tb_sched *sched)
{
    cpu_set_t allowed;
    int n = 0;
    if (sched->pin_workers && sched_getaffinity(0, sizeof allowed, &allowed) == 0 &&
        CPU_COUNT(&allowed) == sched->worker_count)
        for (int cpu = 0; cpu < CPU_SETSIZE && n < sched->worker_count; cpu++)
            if (CPU_ISSET(cpu, &allowed))
                sched->workers[n++].cpu = cpu;
    for (int i = n; i < sched->worker_count; i++)
        sched->workers[i].cpu = -1;
}

int tb_sched_start(tb_sched *sched)
{
    tb__place_workers(sched);
    for (int i = 0; i < sched->worker_count; i++) {
        tb_worker *w = &sched->workers[i];
        if (pthread_create(&w->thread, NULL, tb__worker_main, w) != 0) {
            tb_sched_stop(sched);
            return TB_ENOMEM;
        }
        w->started = true;
    }
    for (int i = 0; i < sched->worker_count; i++)
        for (int ms = 0; ms < 1000 && !atomic_load_explicit(&sched->workers[i].nice_done, memory_order_acquire); ms++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    return 0;
}

int tb_sched_workers_pinned(const tb_sched *sched)
{
    int n = 0;
    for (int i = 0; i < sched->worker_count; i++)
        n += atomic_load(&((tb_sched *)sched)->workers[i].pinned);
    return n;
}

int tb_sched_worker_nice(tb_sched *sched, int *refused_errno)
{
    *refused_errno = 0;
    for (int i = 0; i < sched->worker_count && !*refused_errno; i++)
        *refused_errno = atomic_load(&sched->workers[i].nice_errno);
    return sched->worker_count > 0 ? atomic_load(&sched->workers[0].nice) : 0;
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

/* The worker pushes in seq order across its two rings. Popping the
 * snapshot ring before the control ring means any control record older
 * than the snapshot held is already visible (and vice versa), so handing
 * out the lower seq of the two heads keeps the worker's order. */
static int tb__poll_worker(tb_worker *w, tb_out *out)
{
    if (!w->out.cells || !w->ctl.cells) /* tb_sched_init failed part way */
        return 0;
    if (!w->has_out)
        w->has_out = tb_ring_pop(&w->out, &w->held_out);
    if (!w->has_ctl)
        w->has_ctl = tb_ring_pop(&w->ctl, &w->held_ctl);
    if (w->has_ctl && (!w->has_out || w->held_ctl.seq < w->held_out.seq)) {
        *out = w->held_ctl;
        w->has_ctl = false;
        return 1;
    }
    if (w->has_out) {
        *out = w->held_out;
        w->has_out = false;
        return 1;
    }
    return 0;
}

int tb_sched_poll(tb_sched *sched, tb_out *out)
{
    for (int i = 0; i < sched->worker_count; i++)
        if (tb__poll_worker(&sched->workers[i], out))
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
    while (tb_sched_poll(sched, &out))
        tb__release_out(&out);
    for (int i = 0; i < sched->worker_count; i++) {
        tb_worker *w = &sched->workers[i];
        for (int k = 0; k < w->overflow_count; k++)
            tb__release_out(&w->overflow[k]);
        free(w->overflow);
        for (int p = 0; p < TB_SCHED_PHASES; p++) {
            tb_sched_phase *ph = &w->phases[p];
            for (int r = 0; r < ph->count; r++) {
                tb_room *room = ph->rooms[r];
                room->ops->destroy(room->world);
                room->world = NULL;
                tb_room_unref(room);
            }
            free(ph->rooms);
        }
        for (int r = 0; r < w->adopt_count; r++)
            tb_room_unref(w->adopt[r]);
        free(w->adopt);
        tb_ring_close(&w->out);
        tb_ring_close(&w->ctl);
        pthread_mutex_destroy(&w->lock);
    }
    free(sched->workers);
    sched->workers = NULL;
    tb_tower_memo_close(&sched->tower_memo);
    sched->env.tower_memo = NULL;
    sched->env.rigid_scratch = NULL;
}

uint64_t tb_sched_worker_steps(const tb_sched *sched, int worker)
{
    return atomic_load(&((tb_sched *)sched)->workers[worker].steps);
}

int64_t tb_sched_worker_cpu_ns(const tb_sched *sched, int worker)
{
    const tb_worker *w = &sched->workers[worker];
    clockid_t clock;
    if (!w->started || pthread_getcpuclockid(w->thread, &clock) != 0)
        return -1;
    return tb_clock_cpu_ns(clock);
}

int tb_sched_worker_load(const tb_sched *sched, int worker)
{
    return atomic_load(&((tb_sched *)sched)->workers[worker].load);
}

uint64_t tb_sched_worker_wakes(const tb_sched *sched, int worker)
{
    return atomic_load(&((tb_sched *)sched)->workers[worker].wakes);
}
