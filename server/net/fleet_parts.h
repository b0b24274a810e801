/* fleet_parts.h: what the fleet's files share (fleet.h says what the fleet
 * does).
 *   fleet.c        the record of rooms run here, checkpoints, leases,
 *                  drain, the 100 ms timer, lifecycle;
 *   fleet_claim.c  a hello for a room not run here: lease and checkpoint
 *                  asked for, the room restored (handoff);
 *   fleet_lobby.c  the lobby rows written and read, /api/rooms, metrics.
 * Everything runs on the network loop.
 */
#ifndef TB_FLEET_PARTS_H
#define TB_FLEET_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>

#include "net/fleet.h"

/* fleet.c */
int64_t tb_fleet_unix_ms(void);
/* "tumble:<what>:<id>" */
void tb_fleet_key(char *out, size_t cap, const char *what, const char *id);
/* EVAL script with keys and args (bytes with lengths; a length SIZE_MAX, or
 * arg_lens NULL: strlen). 0, or a negative code when not sent (cb is not
 * called then). */
int tb_fleet_eval(tb_fleet *fleet, tb_redis_reply_cb cb, void *data, const char *script, int nkeys,
                  const char **keys, int nargs, const char **args, const size_t *arg_lens);
/* Records for the registry's new rooms; retired rooms' records go (their
 * lease given up) once nothing is in flight for them. */
void tb_fleet_sync_rooms(tb_fleet *fleet);

/* fleet_claim.c */
void tb_fleet_claims_tick(tb_fleet *fleet, int64_t now, bool up);
void tb_fleet_claims_free(tb_fleet *fleet);

/* fleet_lobby.c */
/* Write this server's rows and read the others' (every second). */
void tb_fleet_lobby_write(tb_fleet *fleet);
/* Leave the lobby (a drain). */
void tb_fleet_lobby_leave(tb_fleet *fleet);

#endif
