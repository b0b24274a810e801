/* registry.h: every open room by id; creation, limits, idle disposal.
 *
 * The network thread asks the registry for a room when a client joins:
 * an existing room is returned as is, a missing one is created with the
 * scene the join asked for (if the room limit allows), its world built,
 * and handed to a worker. The default rooms (tower, dice, flag, cape,
 * dough) are opened at start and kept. A room without clients for the idle
 * timeout is retired: removed from the registry and dropped by its worker.
 * A mutex guards the table; it is only contended by /api/rooms.
 *
 * Rooms are kept twice: in a dense array (listing, idle sweep) and in an
 * open-addressing hash index by id, so a join's lookup costs the same with
 * 10 or 10,000 rooms open.
 */
#ifndef TB_REGISTRY_H
#define TB_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/room.h"
#include "sim/sched.h"

typedef struct tb_registry {
    pthread_mutex_t lock;
    tb_room **rooms;
    int count, cap;
    tb_room **index;      /* hash of id -> room; NULL empty, or the tombstone */
    int index_cap;        /* power of two */
    int index_used;       /* live entries + tombstones */
    int max_rooms;
    int64_t idle_timeout_ns;
    uint64_t next_seed;
    tb_sched *sched;
    tb_metrics *metrics;
} tb_registry;

/* A lobby row, copied out under the lock. */
typedef struct tb_room_row {
    char id[TB_ROOM_ID_MAX + 1];
    char kind[16];
    char scene[24];
    int clients, bodies, awake, worker;
    double step_us;
    uint64_t steps;
    bool keep;
} tb_room_row;

int tb_registry_init(tb_registry *reg, tb_sched *sched, tb_metrics *metrics, int max_rooms,
                     int64_t idle_timeout_ns, uint64_t seed);
/* Opens one kept room per default scene, with the scene as its id. */
int tb_registry_open_defaults(tb_registry *reg);
/* Existing room (scene ignored) or a new one. *out holds a reference the
 * caller releases. *created tells which. TB_EBADID, TB_EBADSCENE,
 * TB_EMAXROOMS, TB_ENOMEM. */
int tb_registry_get_or_create(tb_registry *reg, const char *id, const char *scene, bool keep,
                              tb_room **out, bool *created);
/* Add a room built elsewhere (a restored one: world loaded, tick set) and
 * hand it to a worker. Takes the caller's reference. TB_EBUSY when the id
 * is taken, TB_EMAXROOMS, TB_ENOMEM. */
int tb_registry_insert(tb_registry *reg, tb_room *room);
/* Referenced room or NULL. */
tb_room *tb_registry_find(tb_registry *reg, const char *id);
/* Retire rooms idle (no clients) since before now - timeout; network
 * thread, which keeps room->idle_since_ns. Returns rooms retired. */
int tb_registry_sweep(tb_registry *reg, int64_t now_ns);
/* Retire one room now, whatever its clients (its lease moved to another
 * server, net/fleet.h). 1 if it was open. */
int tb_registry_remove(tb_registry *reg, const char *id);
/* Up to cap rows; returns the number of rooms (may exceed cap). */
int tb_registry_rows(tb_registry *reg, tb_room_row *rows, int cap);
int tb_registry_count(tb_registry *reg);
void tb_registry_close(tb_registry *reg);

#endif
