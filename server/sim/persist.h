/* persist.h: rooms to files and back, so a restart loses nothing.
 *
 * On SIGTERM, once the workers have stopped (nothing steps any more, so the
 * network thread may read every world), main saves each open room to
 * <state-dir>/room-<id>.state: kind and scene, seed, keep flag, room tick
 * and the world's full state (sim/world.h save: physics image with sleep
 * state and contact cache, plus the adapter's own). Each file is written to
 * a temporary name, fsync'ed and renamed, so a crash mid-save leaves the
 * old file or the new one, never half of one. State files of rooms that no
 * longer exist are removed.
 *
 * On start, before the default rooms are opened, every room-*.state file is
 * read back: header and checksum checked, the world loaded (the world's own
 * load checks the image again), and the room handed to a worker at the saved
 * tick. A file that fails any check is reported through the callback,
 * renamed to *.bad (kept for a look, never retried) and skipped.
 */
#ifndef TB_PERSIST_H
#define TB_PERSIST_H

#include <stddef.h>
#include <stdint.h>

#include "sim/registry.h"
#include "sim/room.h"
#include "sim/room_image.h" /* tb_persist_encode, tb_persist_decode: the file image */

typedef void (*tb_persist_report_fn)(const char *path, const char *what);

/* Write buf to dir/name atomically (temp file, fsync, rename, fsync dir). */
int tb_persist_write_file(const char *dir, const char *name, const unsigned char *buf, size_t len);

/* At start: make dir (and missing parents) and check a file can be written
 * and synced there, so an unusable --state-dir is found before the first
 * save, not at it. TB_EINVAL with a reason in why. */
int tb_persist_check_dir(const char *dir, char *why, size_t cap);

/* Save every room of the registry; returns rooms saved or a TB_E* code.
 * Files of rooms not open any more are removed; a room whose save failed
 * keeps its previous file. */
int tb_persist_save_all(tb_registry *reg, const char *dir, tb_persist_report_fn report);
/* Restore every state file of dir into the registry; returns rooms restored.
 * Missing dir: 0. */
int tb_persist_restore(tb_registry *reg, const char *dir, tb_persist_report_fn report);

#endif
