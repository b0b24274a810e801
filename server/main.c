/* main.c: tumble-server: flags and environment -> config -> start; signals
 * -> graceful stop.
 *
 * The main thread is the network thread: it owns the libuv loop that
 * libwebsockets runs on (a "foreign" loop to lws). The simulation workers
 * are started by the scheduler. On SIGTERM or SIGINT the server stops
 * accepting, closes every WebSocket with 1001, stops the workers and the
 * loop runs dry; a watchdog guarantees the process is gone within 2 s even
 * if some peer does not cooperate.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "net/config.h"
#include "net/fatal.h"
#include "net/fleet.h"
#include "net/log.h"
#include "net/server.h"
#include "sim/clock.h"
#include "sim/error.h"
#include "sim/persist.h"
#include "sim/record.h"
#include "sim/registry.h"
#include "sim/sched.h"

typedef struct tb_app {
    tb_config cfg;
    uv_loop_t loop;
    tb_metrics metrics;
    tb_server server;
    tb_sched sched;
    tb_registry registry;
    uv_signal_t sigterm, sigint;
    int signals_open;
    tb_fleet fleet; /* with --redis */
} tb_app;

static void *tb__watchdog(void *arg)
{
    (void)arg;
    struct timespec ts = {1, 900 * 1000 * 1000};
    nanosleep(&ts, NULL);
    tb_log_warn("graceful stop took too long; exiting anyway");
    _exit(0);
    return NULL;
}

/* Who sent SIGTERM/SIGINT? libuv's signal handler does not say, so a handler
 * of ours in front of it notes the sender (async-signal-safe: one store)
 * and passes the signal on; tb__on_signal logs it. A stop nobody expected
 * then names its sender in the log. */
static volatile sig_atomic_t tb__stop_sender;
static struct sigaction tb__uv_sigterm, tb__uv_sigint;

static void tb__note_sender(int signum, siginfo_t *info, void *context)
{
    tb__stop_sender = info ? (sig_atomic_t)info->si_pid : 0;
    const struct sigaction *uv = signum == SIGTERM ? &tb__uv_sigterm : &tb__uv_sigint;
    if (uv->sa_flags & SA_SIGINFO)
        uv->sa_sigaction(signum, info, context);
    else if (uv->sa_handler != SIG_DFL && uv->sa_handler != SIG_IGN)
        uv->sa_handler(signum);
}

static void tb__wrap_signal(int signum, struct sigaction *uv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (sigaction(signum, NULL, uv) != 0)
        return;
    sa.sa_sigaction = tb__note_sender;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sa.sa_mask = uv->sa_mask;
    sigaction(signum, &sa, NULL);
}

/* "pid 123 (node --test ...)": the sender's command line, best effort. */
static void tb__describe_pid(long pid, char *out, size_t cap)
{
    char path[64], cmd[160] = "";
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    size_t n = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i + 1 < n; i++)
        if (!cmd[i])
            cmd[i] = ' ';
    cmd[n] = 0;
    snprintf(out, cap, "pid %ld (%s)", pid, n ? cmd : pid > 0 ? "gone" : "the kernel or unknown");
}

static void tb__signal_closed(uv_handle_t *handle) { (void)handle; }

static void tb__server_closed(tb_server *server)
{
    tb_app *app = server->loop->data;
    uv_close((uv_handle_t *)&app->sigterm, tb__signal_closed);
    uv_close((uv_handle_t *)&app->sigint, tb__signal_closed);
    if (server->fleet)
        tb_fleet_close(server->fleet, NULL);
}

/* --redis: every room checkpointed and handed over (or the deadline): stop. */
static void tb__drained(tb_fleet *fleet)
{
    tb_app *app = fleet->loop->data;
    tb_server_stop(&app->server, tb__server_closed);
}

static void tb__on_signal(uv_signal_t *handle, int signum)
{
    tb_app *app = handle->data;
    if (app->server.stopping)
        return;
    /* warn, not info: a stop is rare, and a log that ends should say why */
    char sender[200];
    tb__describe_pid((long)tb__stop_sender, sender, sizeof sender);
    tb_log_warn("signal %d (%s) from %s: stopping", signum, signum == SIGTERM ? "SIGTERM" : "SIGINT", sender);
    if (app->server.fleet && tb_fleet_draining(app->server.fleet))
        return; /* a second signal while draining: the drain's deadline stands */
    pthread_t watchdog;
    if (pthread_create(&watchdog, NULL, tb__watchdog, NULL) == 0)
        pthread_detach(watchdog);
    if (app->server.fleet) { /* hand the rooms over first (at most 1 s) */
        tb_fleet_drain(app->server.fleet, 1000, tb__drained);
        return;
    }
    tb_server_stop(&app->server, tb__server_closed);
}

static void tb__persist_report(const char *path, const char *what)
{
    tb_log_warn("state %s: %s (skipped)", path, what);
}

static void tb__fault(const tb_room *room, int faults)
{
    tb_log_warn("room %s: %d bod%s non-finite or out of the room: removed or reset", room->id, faults,
                faults == 1 ? "y" : "ies");
}

/* Where a poke (or grab start) landed (debug): the world point it was applied at, to the
 * state of tick-1, and how many steps back its player's view was (lag
 * compensation, PROTOCOL.md "Lag compensation"). Tests read it. */
static void tb__poke(const tb_room *room, uint64_t tick, const tb_world_event *ev)
{
    float p[3];
    memcpy(p, &ev->values[3], sizeof p);
    tb_log_debug("room %s: %s by client %u on body %u applied at (%.5f, %.5f, %.5f) to the state of tick %llu, "
                 "view %u steps back",
                 room->id, ev->values[6] == TB_INPUT_GRAB_START ? "grab" : ev->values[6] == TB_INPUT_THROW ? "throw" : "poke",
                 ev->values[0], ev->values[1], p[0],
                 p[1], p[2], (unsigned long long)(tick - 1), ev->values[2]);
}

static void tb__record_fail(const tb_room *room, const char *why)
{
    tb_log_warn("room %s: not recorded: %s", room->id, why);
}

/* --replay FILE: re-simulate a record headless (sim/record.h); exit 0 when
 * every hash matched, 1 when one did not, 2 when the file is not a record. */
static int tb__replay(const char *path)
{
    tb_replay_result r;
    int rc = tb_replay_file(path, &r);
    if (rc < 0) {
        fprintf(stderr, "tumble-server: replay %s: %s\n", path, r.error);
        return 2;
    }
    printf("replay %s: room %s (%s), %llu ticks, %llu inputs, %llu/%llu hashes match%s\n", path, r.room, r.scene,
           (unsigned long long)r.ticks, (unsigned long long)r.inputs, (unsigned long long)r.matched,
           (unsigned long long)r.hashes, rc == 0 ? "" : " -- MISMATCH");
    if (rc != 0)
        printf("first mismatch at tick %llu\n", (unsigned long long)r.first_bad_tick);
    return rc == 0 ? 0 : 1;
}

/* --redis: the fleet (net/fleet.h) on the server's loop; 0, or 2 for a bad URL. */
static int tb__attach_fleet(tb_app *app)
{
    const tb_config *cfg = &app->cfg;
    char err[256] = "";
    if (!cfg->redis[0])
        return 0;
    if (tb_fleet_init(&app->fleet, &app->loop, cfg->redis, cfg->instance, cfg->checkpoint_interval,
                      cfg->lease_ttl_ms, cfg->redis_timeout_ms, err, sizeof err) < 0) {
        fprintf(stderr, "tumble-server: %s\n", err);
        return 2;
    }
    tb_fleet_attach(&app->fleet, &app->server, &app->registry);
    app->server.fleet = &app->fleet;
    return 0;
}

static void tb__watch_signals(tb_app *app)
{
    uv_signal_init(&app->loop, &app->sigterm);
    app->sigterm.data = app;
    uv_signal_start(&app->sigterm, tb__on_signal, SIGTERM);
    uv_signal_init(&app->loop, &app->sigint);
    app->sigint.data = app;
    uv_signal_start(&app->sigint, tb__on_signal, SIGINT);
    tb__wrap_signal(SIGTERM, &tb__uv_sigterm);
    tb__wrap_signal(SIGINT, &tb__uv_sigint);
}

static void tb__walk_close(uv_handle_t *handle, void *arg)
{
    (void)arg;
    if (!uv_is_closing(handle))
        uv_close(handle, NULL);
}

/* The loop has ended (a stop): close what is left, save the rooms with
 * --state-dir, free everything. The exit code. */
static int tb__after_loop(tb_app *app, int exit_code)
{
    const tb_config *cfg = &app->cfg;
    if (!app->server.stopping) { /* only a stop may end the loop: say so if anything else did */
        tb_log_error("event loop ended without a stop request");
        exit_code = 1;
    }
    if (uv_loop_close(&app->loop) == UV_EBUSY) {
        uv_walk(&app->loop, tb__walk_close, NULL);
        uv_run(&app->loop, UV_RUN_DEFAULT);
        uv_loop_close(&app->loop);
    }
    /* The workers have stopped (tb_server_stop joined them), so this thread
     * may read every world: save them before they are freed. */
    if (cfg->state_dir[0] && exit_code == 0) {
        int64_t t0 = tb_clock_now_ns();
        int n = tb_persist_save_all(&app->registry, cfg->state_dir, tb__persist_report);
        tb_log_info("saved %d room(s) to %s in %.1f ms", n, cfg->state_dir,
                    (double)(tb_clock_now_ns() - t0) / 1e6);
    }
    tb_registry_close(&app->registry);
    tb_sched_close(&app->sched);
    tb_log_info("stopped");
    return exit_code;
}

int main(int argc, char **argv)
{
    static tb_app app; /* large; keep it off the stack */
    char err[256] = "";
    int rc = tb_config_parse(&app.cfg, argc, argv, (tb_config_getenv_fn)getenv, err, sizeof err);
    if (rc == TB_CONFIG_HELP) {
        tb_config_usage(stdout, "tumble-server");
        return 0;
    }
    if (rc != TB_CONFIG_OK) {
        fprintf(stderr, "tumble-server: %s\n", err);
        return 2;
    }
    const tb_config *cfg = &app.cfg;
    tb_log_set_level(cfg->log_level);
    if (cfg->replay_file[0])
        return tb__replay(cfg->replay_file);
    if (cfg->state_dir[0] && tb_persist_check_dir(cfg->state_dir, err, sizeof err) < 0) {
        fprintf(stderr, "tumble-server: --state-dir %s: %s\n", cfg->state_dir, err);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (tb_fatal_install() < 0)
        tb_log_warn("cannot install the fatal-signal reporter");

    uv_loop_init(&app.loop);
    app.loop.data = &app;
    tb_metrics_init(&app.metrics);
    tb_server_init(&app.server, &app.loop, cfg, &app.metrics);
    if (!app.server.root_real[0])
        tb_log_warn("client folder %s not found: serving the built-in lobby page", cfg->client_dir);
    rc = tb_sched_init(&app.sched, cfg->workers, cfg->snapshot_rate, cfg->instance, &app.metrics, tb_server_wake,
                       &app.server);
    if (rc < 0) {
        fprintf(stderr, "tumble-server: scheduler: %s\n", tb_strerror(rc));
        return 1;
    }
    snprintf(app.sched.record_dir, sizeof app.sched.record_dir, "%s", cfg->record_dir);
    app.sched.fault_cb = tb__fault;
    app.sched.record_fail_cb = tb__record_fail;
    app.sched.poke_cb = tb__poke;
    app.sched.worker_nice = cfg->worker_nice;
    app.sched.pin_workers = cfg->pin_workers != 0;
    tb_registry_init(&app.registry, &app.sched, &app.metrics, cfg->max_rooms,
                     (int64_t)cfg->room_idle_timeout * TB_NS_PER_SEC, (uint64_t)time(NULL));
    tb_server_attach(&app.server, &app.sched, &app.registry);
    if (tb__attach_fleet(&app) != 0)
        return 2;
    if (tb_sched_start(&app.sched) < 0) {
        fprintf(stderr, "tumble-server: cannot start worker threads\n");
        return 1;
    }
    int refused = 0, nice = tb_sched_worker_nice(&app.sched, &refused);
    atomic_store(&app.metrics.worker_nice, nice);
    atomic_store(&app.metrics.workers_pinned, tb_sched_workers_pinned(&app.sched));
    if (refused)
        tb_log_warn("worker threads at nice %d: nice %d was refused (%s); when the cores are full their steps "
                    "may start late (allow it with CAP_SYS_NICE or RLIMIT_NICE: docs/running.md)",
                    nice, cfg->worker_nice, strerror(refused));
    if (cfg->state_dir[0]) { /* before the defaults, so saved default rooms come back as they were */
        int n = tb_persist_restore(&app.registry, cfg->state_dir, tb__persist_report);
        if (n > 0)
            tb_log_info("restored %d room(s) from %s", n, cfg->state_dir);
    }
    /* in a fleet the default rooms open where the router sends their first
     * player (a hello for "tower" creates it), like any other room */
    rc = cfg->redis[0] ? 0 : tb_registry_open_defaults(&app.registry);
    if (rc < 0 && rc != TB_EMAXROOMS)
        tb_log_warn("default rooms: %s", tb_strerror(rc));

    tb__watch_signals(&app);

    int exit_code = 0;
    if (tb_server_start(&app.server) < 0) {
        exit_code = 1;
        tb_server_stop(&app.server, tb__server_closed);
    } else {
        printf("tumble: listening on %s://%s:%d\n", cfg->tls_cert[0] ? "https" : "http", cfg->bind,
               app.server.port);
        fflush(stdout);
        tb_log_info("instance %s, %d worker(s) at nice %d, %d on a CPU of its own, %d snapshots/s, client folder %s",
                    cfg->instance, cfg->workers, atomic_load(&app.metrics.worker_nice),
                    atomic_load(&app.metrics.workers_pinned), cfg->snapshot_rate,
                    app.server.root_real[0] ? app.server.root_real : "(none)");
        if (app.server.fleet)
            tb_fleet_start(app.server.fleet);
    }

    uv_run(&app.loop, UV_RUN_DEFAULT);
    exit_code = tb__after_loop(&app, exit_code);
    return exit_code;
}
