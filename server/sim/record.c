/* record.c: input logs with state hashes, and their replay (see record.h).
 *
 * File layout (native endian, like the state files):
 *   "TBREC001", u64 image length, the room's state file image (persist.c)
 *   records: u8 kind, then
 *     'I': u64 tick, tb_input (recv_ns zeroed)
 *     'H': u64 tick, u64 hash
 * A record cut short by a crash replays up to its last whole record.
 */
#define _GNU_SOURCE
#include "sim/record.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/error.h"
#include "sim/persist.h"
#include "sim/room.h"
#include "sim/sched.h"

#define TB__REC_MAGIC "TBREC001"
#define TB__REC_MAX_IMAGE (64u << 20)

struct tb_record {
    FILE *f;
    char path[1100];
};

tb_record *tb_record_open(const char *dir, const tb_room *room, char *why, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tb_record *rec = calloc(1, sizeof *rec);
    if (!rec) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    snprintf(rec->path, sizeof rec->path, "%s/%s-%lld.rec", dir, room->id,
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    unsigned char *img = NULL;
    size_t len = 0;
    int rc = tb_persist_encode(room, &img, &len);
    if (rc < 0) {
        snprintf(why, cap, "state: %s", tb_strerror(rc));
        free(rec);
        return NULL;
    }
    rec->f = fopen(rec->path, "wbe");
    if (!rec->f) {
        snprintf(why, cap, "cannot create %s", rec->path);
        free(img);
        free(rec);
        return NULL;
    }
    uint64_t n = len;
    fwrite(TB__REC_MAGIC, 1, 8, rec->f);
    fwrite(&n, sizeof n, 1, rec->f);
    fwrite(img, 1, len, rec->f);
    fflush(rec->f);
    free(img);
    return rec;
}

void tb_record_input(tb_record *rec, uint64_t tick, const tb_input *in)
{
    tb_input copy = *in;
    copy.recv_ns = 0; /* timing is not part of what happened */
    fputc('I', rec->f);
    fwrite(&tick, sizeof tick, 1, rec->f);
    fwrite(&copy, sizeof copy, 1, rec->f);
}

void tb_record_hash(tb_record *rec, uint64_t tick, uint64_t hash)
{
    fputc('H', rec->f);
    fwrite(&tick, sizeof tick, 1, rec->f);
    fwrite(&hash, sizeof hash, 1, rec->f);
    fflush(rec->f);
}

void tb_record_close(tb_record *rec)
{
    if (!rec)
        return;
    if (rec->f)
        fclose(rec->f);
    free(rec);
}

const char *tb_record_path(const tb_record *rec) { return rec->path; }

/* ---- replay ----------------------------------------------------------------
 * Mirrors the worker (sim/sched.c tb__apply_input and tb__step_room): the
 * same world calls in the same order. Protocol replies are not produced. */

static int tb__replay_input(tb_room *room, const tb_input *in)
{
    switch (in->type) {
    case TB_INPUT_JOIN:
    case TB_INPUT_CONTACTS:
        return 0;
    case TB_INPUT_PARAM: {
        int rc = room->ops->param_set(room->world, in->name, in->value_d);
        if (rc == TB_WORLD_STATIC_CHANGED)
            room->tick++; /* a static change takes a tick of its own (sched.c tb__static_changed) */
        return rc;
    }
    case TB_INPUT_SCENE: {
        int rc = tb_room_swap_scene(room, in->name);
        if (rc == 0)
            room->tick++;
        return rc;
    }
    default: /* LEAVE, RESET and the world inputs */
        return room->ops->apply_input(room->world, in);
    }
}

static void tb__replay_step(tb_room *room)
{
    room->ops->step(room->world, 1.0f / (float)TB_STEP_HZ);
    room->tick++;
    if (room->ops->check)
        room->ops->check(room->world);
    tb_world_event ev; /* told to nobody, but taken as the server does (a dice result is told once) */
    for (int k = 0; room->ops->poll_event && k < TB_WORLD_EVENTS_PER_STEP &&
                    room->ops->poll_event(room->world, &ev) > 0; k++) {
    }
}

int tb_replay_file(const char *path, tb_replay_result *res)
{
    memset(res, 0, sizeof *res);
    FILE *f = fopen(path, "rbe");
    if (!f) {
        snprintf(res->error, sizeof res->error, "cannot open %s", path);
        return -1;
    }
    char magic[8];
    uint64_t len = 0;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, TB__REC_MAGIC, 8) != 0 || fread(&len, sizeof len, 1, f) != 1 ||
        len > TB__REC_MAX_IMAGE) {
        snprintf(res->error, sizeof res->error, "not a tumble record");
        fclose(f);
        return -1;
    }
    unsigned char *img = malloc(len ? len : 1);
    if (!img || fread(img, 1, len, f) != len) {
        snprintf(res->error, sizeof res->error, "truncated state image");
        free(img);
        fclose(f);
        return -1;
    }
    tb_room *room = NULL;
    char why[160];
    int rc = tb_persist_decode(img, len, NULL, &room, why, sizeof why);
    free(img);
    if (rc < 0) {
        snprintf(res->error, sizeof res->error, "state image: %s", why);
        fclose(f);
        return -1;
    }
    snprintf(res->room, sizeof res->room, "%s", room->id);
    snprintf(res->scene, sizeof res->scene, "%s", room->scene);
    uint64_t start = room->tick;
    for (int kind; (kind = fgetc(f)) != EOF;) {
        uint64_t tick;
        if (fread(&tick, sizeof tick, 1, f) != 1)
            break;
        if (tick < room->tick || tick - room->tick > 120ull * 3600 * 24) {
            snprintf(res->error, sizeof res->error, "record out of order at tick %llu", (unsigned long long)tick);
            break;
        }
        if (kind == 'I') {
            tb_input in;
            if (fread(&in, sizeof in, 1, f) != 1)
                break;
            in.name[sizeof in.name - 1] = 0;
            in.by_name[sizeof in.by_name - 1] = 0;
            while (room->tick < tick)
                tb__replay_step(room);
            tb__replay_input(room, &in);
            res->inputs++;
        } else if (kind == 'H') {
            uint64_t want;
            if (fread(&want, sizeof want, 1, f) != 1)
                break;
            while (room->tick < tick)
                tb__replay_step(room);
            res->hashes++;
            if (room->ops->hash(room->world) == want)
                res->matched++;
            else if (res->matched + 1 == res->hashes || res->first_bad_tick == 0)
                res->first_bad_tick = res->first_bad_tick ? res->first_bad_tick : tick;
        } else {
            snprintf(res->error, sizeof res->error, "unknown record kind 0x%02x", kind & 0xff);
            break;
        }
    }
    fclose(f);
    res->ticks = room->tick - start;
    tb_room_unref(room);
    if (res->error[0])
        return -1;
    return res->matched == res->hashes ? 0 : 1;
}
