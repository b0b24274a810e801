/* persist.c: room state files (see persist.h): writing them atomically,
 * saving every room, restoring a folder. The file image itself (a room to
 * bytes and back, no I/O) is sim/room_image.c. */
#define _GNU_SOURCE
#include "sim/persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/error.h"

#define TB__MAX_FILE (64u << 20)

int tb_persist_write_file(const char *dir, const char *name, const unsigned char *buf, size_t len)
{
    char tmp[4096], path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name) >= (int)sizeof tmp)
        return TB_EINVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return TB_ENOENT;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            unlink(tmp);
            return TB_EINVAL;
        }
        done += (size_t)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return TB_EINVAL;
    }
    if (rename(tmp, path) != 0) {
        unlink(tmp);
        return TB_EINVAL;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int tb_persist_check_dir(const char *dir, char *why, size_t cap)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(why, cap, "path too long");
        return TB_EINVAL;
    }
    /* make the folder and its missing parents (mkdir -p) */
    for (char *p = path + 1;; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(path, 0700) != 0 && errno != EEXIST) {
                snprintf(why, cap, "cannot create %s: %s", path, strerror(errno));
                return TB_EINVAL;
            }
            if (end)
                break;
            *p = '/';
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "not a folder");
        return TB_EINVAL;
    }
    /* writable: a file can be made, synced and removed there (as a save will) */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.probe-%ld.tmp", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, cap, "cannot write there: %s", strerror(errno));
        return TB_EINVAL;
    }
    int bad = fsync(fd) != 0 ? errno : 0;
    close(fd);
    unlink(probe);
    if (bad) {
        snprintf(why, cap, "cannot sync there: %s", strerror(bad));
        return TB_EINVAL;
    }
    return 0;
}

static bool tb__state_name(const char *name, char *id, size_t cap)
{
    size_t n = strlen(name);
    const char *pre = "room-", *suf = ".state";
    if (n <= strlen(pre) + strlen(suf) || strncmp(name, pre, strlen(pre)) != 0 ||
        strcmp(name + n - strlen(suf), suf) != 0)
        return false;
    size_t idlen = n - strlen(pre) - strlen(suf);
    if (idlen >= cap)
        return false;
    memcpy(id, name + strlen(pre), idlen);
    id[idlen] = 0;
    return true;
}

int tb_persist_save_all(tb_registry *reg, const char *dir, tb_persist_report_fn report)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        if (report)
            report(dir, "cannot create the state folder");
        return TB_ENOENT;
    }
    int saved = 0;
    pthread_mutex_lock(&reg->lock);
    int count = reg->count;
    /* every open room, saved or not: a room whose save failed keeps its
     * previous file (it is not stale, only not updated) */
    char(*ids)[TB_ROOM_ID_MAX + 1] = calloc((size_t)(count ? count : 1), sizeof *ids);
    for (int i = 0; i < count; i++) {
        tb_room *room = reg->rooms[i];
        if (ids)
            snprintf(ids[i], sizeof ids[i], "%s", room->id);
        unsigned char *buf = NULL;
        size_t len = 0;
        char name[64];
        snprintf(name, sizeof name, "room-%s.state", room->id);
        int rc = tb_persist_encode(room, &buf, &len);
        if (rc == 0)
            rc = tb_persist_write_file(dir, name, buf, len);
        free(buf);
        if (rc < 0) {
            if (report)
                report(name, tb_strerror(rc));
            continue;
        }
        saved++;
        TB_COUNT(reg->metrics, rooms_saved_total);
    }
    pthread_mutex_unlock(&reg->lock);
    /* Files of rooms that are gone (retired while idle) would come back. */
    DIR *d = opendir(dir);
    for (struct dirent *e; ids && d && (e = readdir(d));) {
        char id[TB_ROOM_ID_MAX + 1];
        if (!tb__state_name(e->d_name, id, sizeof id))
            continue;
        bool live = false;
        for (int i = 0; i < count && !live; i++)
            live = strcmp(ids[i], id) == 0;
        if (!live)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d)
        closedir(d);
    free(ids);
    return saved;
}

static int tb__read_file(int dfd, const char *name, unsigned char **buf, size_t *len, char *why, size_t cap)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(why, cap, "cannot open: %s", strerror(errno));
        return TB_ENOENT;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)TB__MAX_FILE) {
        close(fd);
        snprintf(why, cap, "not a regular file of at most %u bytes", TB__MAX_FILE);
        return TB_EINVAL;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *b = malloc(size ? size : 1);
    size_t done = 0;
    while (b && done < size) {
        ssize_t n = read(fd, b + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fd);
    if (!b) {
        snprintf(why, cap, "out of memory");
        return TB_ENOMEM;
    }
    *buf = b;
    *len = done;
    return 0;
}

int tb_persist_restore(tb_registry *reg, const char *dir, tb_persist_report_fn report)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int restored = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char id[TB_ROOM_ID_MAX + 1], why[160] = "", path[4096];
        if (!tb__state_name(e->d_name, id, sizeof id))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unsigned char *buf = NULL;
        size_t len = 0;
        tb_room *room = NULL;
        int rc = tb__read_file(dirfd(d), e->d_name, &buf, &len, why, sizeof why);
        if (rc == 0)
            rc = tb_persist_decode(buf, len, reg->sched ? &reg->sched->env : NULL, &room, why, sizeof why);
        free(buf);
        if (rc == 0 && strcmp(room->id, id) != 0) {
            snprintf(why, sizeof why, "file name does not match room id %s", room->id);
            tb_room_unref(room);
            room = NULL;
            rc = TB_EINVAL;
        }
        if (rc == 0) {
            rc = tb_registry_insert(reg, room);
            if (rc < 0)
                snprintf(why, sizeof why, "not restored: %s", tb_strerror(rc));
        }
        if (rc < 0) {
            TB_COUNT(reg->metrics, state_files_rejected_total);
            if (report)
                report(path, why);
            if (rc == TB_EINVAL) { /* keep it for a look, never retry it */
                char bad[4200];
                snprintf(bad, sizeof bad, "%s.bad", path);
                rename(path, bad);
            }
            continue;
        }
        TB_COUNT(reg->metrics, rooms_restored_total);
        restored++;
    }
    closedir(d);
    return restored;
}
