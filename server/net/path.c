/* path.c: the static-file path sanitiser (see path.h). */
#define _GNU_SOURCE
#include "net/path.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "sim/error.h"

static int tb__hex(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode %XX in place, repeatedly, until stable (at most 3 rounds). */
static int tb__decode(char *s)
{
    for (int round = 0; round < 3; round++) {
        char *r = s, *w = s;
        int changed = 0;
        while (*r) {
            if (r[0] == '%') {
                int hi = r[1] ? tb__hex(r[1]) : -1, lo = hi >= 0 && r[2] ? tb__hex(r[2]) : -1;
                if (hi < 0 || lo < 0)
                    return -1;
                int c = hi * 16 + lo;
                if (c == 0)
                    return -1;
                *w++ = (char)c;
                r += 3;
                changed = 1;
            } else {
                *w++ = *r++;
            }
        }
        *w = 0;
        if (!changed)
            return 0;
    }
    return strchr(s, '%') ? -1 : 0;
}

int tb_path_resolve(const char *root_real, const char *url_path, char *out, size_t out_cap)
{
    char path[PATH_MAX];
    if (!url_path || url_path[0] != '/' || strlen(url_path) >= sizeof path)
        return TB_EPATH;
    strcpy(path, url_path);
    char *q = strpbrk(path, "?#");
    if (q)
        *q = 0;
    if (tb__decode(path) < 0)
        return TB_EPATH;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '\\')
            return TB_EPATH;
    /* Refuse "." and ".." segments outright, wherever they are. */
    for (const char *seg = path; seg; seg = strchr(seg + 1, '/')) {
        const char *s = seg + 1;
        size_t n = strcspn(s, "/");
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return TB_EPATH;
    }
    char joined[PATH_MAX * 2];
    size_t rl = strlen(root_real), pl = strlen(path);
    if (rl + pl + sizeof "index.html" >= sizeof joined)
        return TB_EPATH;
    memcpy(joined, root_real, rl);
    memcpy(joined + rl, path, pl + 1);
    if (joined[rl + pl - 1] == '/')
        strcat(joined, "index.html");

    char real[PATH_MAX];
    if (!realpath(joined, real))
        return TB_ENOENT;
    if (strncmp(real, root_real, rl) != 0 || (real[rl] != '/' && real[rl] != 0))
        return TB_EPATH; /* a symlink pointing out of the folder */
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISREG(st.st_mode))
        return TB_ENOENT;
    if (strlen(real) >= out_cap)
        return TB_EPATH;
    strcpy(out, real);
    return 0;
}

const char *tb_path_mime(const char *path)
{
    static const struct {
        const char *ext, *mime;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},
        {".webp", "image/webp"},
        {".ico", "image/x-icon"},
        {".wasm", "application/wasm"},
        {".txt", "text/plain; charset=utf-8"},
        {".woff2", "font/woff2"},
        {".glb", "model/gltf-binary"},
        {".gltf", "model/gltf+json"},
    };
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcasecmp(dot, types[i].ext) == 0)
                return types[i].mime;
    return "application/octet-stream";
}
