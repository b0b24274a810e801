/* record.c: writing input logs with state hashes, and replaying a record
 * file (see record.h). The layout and the re-simulation are sim/replay.c's,
 * shared with the browser's replay viewer (the WebAssembly build):
 *   "TBREC001", u64 image length, the room's image (sim/room_image.h)
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
#include "sim/replay.h"
#include "sim/room.h"
#include "sim/room_image.h"

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
    fwrite(TB_RECORD_MAGIC, 1, 8, rec->f);
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

/* ---- replay: the file read whole, then sim/replay.c ------------------------ */

int tb_replay_file(const char *path, tb_replay_result *res)
{
    memset(res, 0, sizeof *res);
    FILE *f = fopen(path, "rbe");
    if (!f) {
        snprintf(res->error, sizeof res->error, "cannot open %s", path);
        return -1;
    }
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 1u << 16;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                snprintf(res->error, sizeof res->error, "out of memory");
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    tb_replay *rp = NULL;
    char why[160];
    int rc = tb_replay_open(buf, len, &rp, why, sizeof why);
    free(buf);
    if (rc < 0) {
        snprintf(res->error, sizeof res->error, "%s", why);
        return -1;
    }
    tb_room *room = tb_replay_room(rp);
    snprintf(res->room, sizeof res->room, "%s", room->id);
    snprintf(res->scene, sizeof res->scene, "%s", room->scene);
    tb_replay_event ev;
    while ((rc = tb_replay_next(rp, &ev)) > 0) {
        if (ev.kind == 'I') {
            res->inputs++;
        } else {
            res->hashes++;
            if (ev.got == ev.want)
                res->matched++;
            else if (res->first_bad_tick == 0)
                res->first_bad_tick = ev.tick;
        }
    }
    if (rc < 0)
        snprintf(res->error, sizeof res->error, "%s", tb_replay_error(rp));
    res->ticks = tb_replay_room(rp)->tick - tb_replay_start_tick(rp);
    tb_replay_close(rp);
    if (res->error[0])
        return -1;
    return res->matched == res->hashes ? 0 : 1;
}
