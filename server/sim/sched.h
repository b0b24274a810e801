/* sched.h: the simulation workers and the 120 Hz pacing of every room.
 *
 * W worker threads; each room is adopted by the least loaded worker and
 * stays there for its life, so a world is only ever touched by one thread
 * and needs no lock. A worker splits the 8.33 ms step period into
 * TB_SCHED_PHASES phases and puts each new room on the phase with the
 * fewest rooms; a room's due times sit on its phase's grid (period 8.33 ms,
 * offset phase x period / TB_SCHED_PHASES), so the worker's rooms are not
 * all due at once and the last room stepped is not late by all the others'
 * work. A worker loops:
 *
 *   adopt new rooms, drop retired ones
 *   when it has been busy 2 ms without a sleep (overloaded), every 2 ms:
 *     apply the queued inputs of every room, and wake the network loop if
 *     that produced replies
 *   for every phase that is due, earliest first, and each of its rooms that
 *     is due (tb_pace): for each owed step, apply the queued inputs in
 *     arrival order, step the world (timed into the step histogram), and on
 *     every Nth tick encode the room's snapshot once; then push what the
 *     phase produced into the worker's output ring and wake the network loop
 *     (wake_cb) once for the phase
 *   sleep until the next phase boundary with an absolute-time sleep
 *
 * Priority: each worker first asks for the nice value tb_sched.worker_nice
 * (main sets it from --worker-nice, -10 by default) for its own thread. Near
 * full cores a worker woken at its phase boundary otherwise waits in the run
 * queue behind the network thread and any other process: at 250 tower rooms
 * on 2 cores the workers spent a third of their time runnable but not
 * running, and a step started up to 21 ms late (p99); at nice -10 they wait
 * a sixth as long (BENCHMARKS.md "Load"). The network thread stays at the
 * server's own nice value and still gets its share (the scheduler's weights,
 * not strict priority), so an overloaded worker cannot starve it. Raising a
 * thread needs root, CAP_SYS_NICE or RLIMIT_NICE; refused, the workers keep
 * the server's own value and main says so.
 *
 * Placement (pin_workers, --pin-workers): when the process may run on
 * exactly as many CPUs as there are workers (the machine, or a cpuset, sized
 * for this server), worker i runs on the i-th of them only. Left to move, a woken worker was at times queued on the CPU where the
 * other worker ran, behind its whole phase, while the other CPU ran the
 * network thread or the generator: at 300 and 325 tower rooms on 2 cores,
 * five 30 s runs each, p99 tick lateness 4.6-7.3 ms pinned against 4.8-10.5
 * unpinned (BENCHMARKS.md "Load"). Otherwise nothing is pinned: with more
 * CPUs the server shares them with others (a Kubernetes node, a big host
 * running several servers), and every server would put its workers on the
 * same first few; with fewer, workers share CPUs anyway.
 *
 * The network thread drains the output rings with tb_sched_poll() and
 * hands each message to the sessions of its room.
 *
 * Lifecycle: tb_sched_init / tb_sched_start / tb_sched_stop / tb_sched_close.
 */
#ifndef TB_SCHED_H
#define TB_SCHED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "sim/metrics.h"
#include "sim/msg.h"
#include "sim/ring.h"
#include "sim/room.h"
#include "sim/tower_memo.h"

#define TB_STEP_HZ 120
#define TB_STEP_NS (1000000000LL / TB_STEP_HZ)
#define TB_MAX_BEHIND_NS 250000000LL
#define TB_WORKER_OUT_CAPACITY 8192 /* snapshots */
#define TB_WORKER_CTL_CAPACITY 4096 /* control messages; overflow waits, never dropped */
#ifndef TB_SCHED_PHASES
#define TB_SCHED_PHASES 4 /* phases of a worker's step period: 2.08 ms apart (BENCHMARKS.md: 4 vs 8) */
#endif

typedef enum tb_out_kind {
    TB_OUT_SNAPSHOT = 1, /* newest-wins: to every up-to-date session of the room */
    TB_OUT_WELCOME,      /* to one session: its welcome; snapshots flow after it */
    TB_OUT_CLIENT,       /* to one session (error, ack) */
    TB_OUT_BROADCAST,    /* to every session of the room (param change, event) */
    TB_OUT_SCENE,        /* to every session: new static description + keyframe */
    TB_OUT_CHECKPOINT,   /* to the fleet (net/fleet.h): msg = state image (empty: failed),
                            client = 1 when it is the last (the room stopped stepping) */
} tb_out_kind;

/* One produced message. The record holds a reference on room, msg and key.
 * SNAPSHOT: msg is the delta (or a keyframe when there is no delta), key an
 * optional keyframe of the same tick for clients that skipped.
 * BROADCAST: client, if not 0, is left out (the author already knows). */
typedef struct tb_out {
    int kind;
    uint32_t client;
    tb_room *room;
    tb_msg *msg;
    tb_msg *key;
    uint64_t seq;   /* the worker's push order across both rings */
} tb_out;

typedef void (*tb_sched_wake_cb)(void *data);

/* The rooms of one phase of a worker (worker thread only). */
typedef struct tb_sched_phase {
    tb_room **rooms;
    int count, cap;
    int64_t due_ns;            /* earliest due step of its rooms; its next grid time when empty */
} tb_sched_phase;

typedef struct tb_worker {
    struct tb_sched *sched;
    int index;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;      /* guards adopt[] */
    tb_room **adopt;
    int adopt_count, adopt_cap;
    tb_sched_phase phases[TB_SCHED_PHASES]; /* worker thread only */
    atomic_int load;           /* rooms owned or being adopted */
    atomic_uint_fast64_t steps;
    atomic_uint_fast64_t wakes;  /* phase passes and input passes that woke the network thread */
    atomic_bool nice_done;     /* the worker has asked for its nice value ... */
    atomic_int nice;           /* ... and runs at this one */
    atomic_int nice_errno;     /* why it was refused (0: granted, or nothing asked) */
    int cpu;                   /* the CPU it is to run on alone (tb_sched_start), -1: any */
    atomic_int pinned;         /* 1 once it runs on that CPU only */
    tb_ring out;               /* tb_out snapshots, worker -> network */
    tb_ring ctl;               /* tb_out control messages, worker -> network */
    /* worker thread only */
    int64_t origin_ns;         /* phase 0's grid: origin_ns + n x TB_STEP_NS */
    int64_t awake_ns;          /* when the worker last woke from a sleep */
    int64_t next_pass_ns;      /* earliest next input pass over every room */
    uint64_t out_seq;          /* next tb_out.seq */
    uint64_t woken_seq;        /* out_seq when the network thread was last woken */
    tb_out *overflow;          /* control messages waiting for room in ctl */
    int overflow_count, overflow_cap;
    /* network thread only (tb_sched_poll): the head of each ring, popped */
    tb_out held_out, held_ctl;
    bool has_out, has_ctl;
} tb_worker;

typedef struct tb_sched {
    tb_worker *workers;
    int worker_count;
    int snapshot_every;
    char instance[64];
    tb_metrics *metrics;
    tb_sched_wake_cb wake_cb;
    void *wake_data;
    atomic_bool stop;
    int worker_nice;        /* set before tb_sched_start: each worker's nice value (0: leave it) */
    bool pin_workers;       /* set before tb_sched_start: each worker on a CPU of its own when
                               the process may use exactly as many CPUs as there are workers */
    /* reliability hooks, set by main after init (both optional) */
    char record_dir[1024];  /* --record: each room's input log goes here */
    void (*fault_cb)(const tb_room *room, int faults); /* a world check fixed something */
    void (*record_fail_cb)(const tb_room *room, const char *why);
    /* a poke was applied before step `tick` (TB_WORLD_EVENT_POKE: who, where) */
    void (*poke_cb)(const tb_room *room, uint64_t tick, const struct tb_world_event *ev);
    /* shared by every room's world (tb_world_env): settled towers */
    tb_tower_memo tower_memo;
    tb_world_env env;
} tb_sched;

/* snapshot_rate_hz must divide 120. TB_EINVAL, TB_ENOMEM. */
int tb_sched_init(tb_sched *sched, int workers, int snapshot_rate_hz, const char *instance,
                  tb_metrics *metrics, tb_sched_wake_cb wake_cb, void *wake_data);
/* Starts the workers and waits (up to a second) until each has asked for
 * its nice value and, with pin_workers, its CPU. */
int tb_sched_start(tb_sched *sched);
/* How many workers run on a CPU of their own. */
int tb_sched_workers_pinned(const tb_sched *sched);
/* The nice value worker 0 runs at; *refused_errno the errno of the first
 * worker whose request was refused (0 if none). */
int tb_sched_worker_nice(tb_sched *sched, int *refused_errno);
/* Hand a room to the least loaded worker (takes a reference). Returns the
 * worker index. */
int tb_sched_adopt(tb_sched *sched, tb_room *room);
/* Pop one produced message from any worker; 1 if *out was filled. */
int tb_sched_poll(tb_sched *sched, tb_out *out);
/* Stops and joins the workers; rooms still owned are released. */
void tb_sched_stop(tb_sched *sched);
void tb_sched_close(tb_sched *sched);

uint64_t tb_sched_worker_steps(const tb_sched *sched, int worker);
/* CPU time (user + system) worker `worker` has used, in ns; -1 when it is
 * not running (before tb_sched_start, after tb_sched_stop). Read from any
 * thread while the workers run (its pthread CPU clock). */
int64_t tb_sched_worker_cpu_ns(const tb_sched *sched, int worker);
int tb_sched_worker_load(const tb_sched *sched, int worker);
/* Times the worker woke the network thread: at most one per phase pass for
 * the stepping, plus one per input pass whose inputs produced replies. */
uint64_t tb_sched_worker_wakes(const tb_sched *sched, int worker);

#endif
