/* load_metrics.c: what the server says about itself while it is loaded.
 *
 * GET /metrics on the server's own host:port over a plain uv_tcp (HTTP/1.0,
 * Connection: close: the reply is the whole body, no chunking), parse the
 * Prometheus text into (key, value) pairs, and read histograms as quantiles of
 * the bucket deltas between two scrapes. The server's CPU time comes from its
 * process_cpu_seconds_total (and by thread from tumble_worker_cpu_seconds_total
 * and tumble_network_thread_cpu_seconds_total), else from /proc/<pid>, as its
 * memory does. */
#define _GNU_SOURCE
#include "load/load.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Prometheus text ---------------------------------------------------------- */

int tl_prom_parse(tl_prom *p, const char *text, size_t len)
{
    p->count = 0;
    const char *end = text + len;
    for (const char *line = text; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        if (le > line && le[-1] == '\r')
            le--;
        if (le > line && *line != '#') {
            const char *sp = le;
            while (sp > line && sp[-1] != ' ')
                sp--;
            size_t klen = sp > line ? (size_t)(sp - 1 - line) : 0;
            if (klen > 0 && klen < sizeof p->s[0].key) {
                char num[64];
                size_t nlen = (size_t)(le - sp);
                if (nlen > 0 && nlen < sizeof num) {
                    memcpy(num, sp, nlen);
                    num[nlen] = 0;
                    char *e = NULL;
                    double v = strtod(num, &e);
                    if (e && *e == 0) {
                        if (p->count == p->cap) {
                            size_t cap = p->cap ? p->cap * 2 : 128;
                            tl_prom_sample *s = realloc(p->s, cap * sizeof *s);
                            if (!s)
                                return -1;
                            p->s = s;
                            p->cap = cap;
                        }
                        memcpy(p->s[p->count].key, line, klen);
                        p->s[p->count].key[klen] = 0;
                        p->s[p->count].value = v;
                        p->count++;
                    }
                }
            }
        }
        line = nl ? nl + 1 : end;
    }
    p->ok = p->count > 0;
    return p->ok ? 0 : -1;
}

void tl_prom_free(tl_prom *p)
{
    free(p->s);
    memset(p, 0, sizeof *p);
}

double tl_prom_get(const tl_prom *p, const char *key)
{
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->s[i].key, key) == 0)
            return p->s[i].value;
    return NAN;
}

double tl_prom_sum(const tl_prom *p, const char *name)
{
    size_t n = strlen(name);
    double sum = 0;
    bool any = false;
    for (size_t i = 0; i < p->count; i++)
        if (strncmp(p->s[i].key, name, n) == 0 && (p->s[i].key[n] == 0 || p->s[i].key[n] == '{')) {
            sum += p->s[i].value;
            any = true;
        }
    return any ? sum : NAN;
}

/* Buckets of histogram `name` (cumulative counts by upper bound `le`), in the
 * order printed, which Prometheus requires to be ascending. */
static size_t tl__buckets(const tl_prom *p, const char *name, double *le, double *cum, size_t cap)
{
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s_bucket{le=\"", name);
    size_t n = strlen(prefix), k = 0;
    for (size_t i = 0; i < p->count && k < cap; i++) {
        if (strncmp(p->s[i].key, prefix, n) != 0)
            continue;
        const char *v = p->s[i].key + n;
        le[k] = strncmp(v, "+Inf", 4) == 0 ? INFINITY : strtod(v, NULL);
        cum[k] = p->s[i].value;
        k++;
    }
    return k;
}

double tl_prom_hist_quantile(const tl_prom *before, const tl_prom *after, const char *name, double q)
{
    double le_a[64], cum_a[64], le_b[64], cum_b[64];
    size_t na = tl__buckets(after, name, le_a, cum_a, 64);
    size_t nb = before ? tl__buckets(before, name, le_b, cum_b, 64) : 0;
    if (na == 0 || (before && nb != na))
        return NAN;
    double delta[64];
    for (size_t i = 0; i < na; i++)
        delta[i] = cum_a[i] - (nb ? cum_b[i] : 0); /* still cumulative */
    double total = delta[na - 1];
    if (total <= 0)
        return NAN;
    double rank = q * total, prev_cum = 0, prev_le = 0;
    for (size_t i = 0; i < na; i++) {
        if (delta[i] >= rank) {
            double in = delta[i] - prev_cum;
            double hi = isinf(le_a[i]) ? prev_le * 2 : le_a[i];
            if (in <= 0)
                return hi;
            return prev_le + (hi - prev_le) * ((rank - prev_cum) / in);
        }
        prev_cum = delta[i];
        prev_le = le_a[i];
    }
    return prev_le;
}

/* ---- GET /metrics --------------------------------------------------------------- */

static void tl__scrape_finish(tl_scrape *s);

static void tl__scrape_closed_cb(uv_handle_t *h)
{
    tl_scrape *s = h->data;
    if (--s->handles_open == 0) {
        if (s->status == 0) {
            const char *body = s->buf ? strstr(s->buf, "\r\n\r\n") : NULL;
            if (!body || strncmp(s->buf, "HTTP/1.", 7) != 0 || strncmp(s->buf + 9, "200", 3) != 0)
                s->status = -1;
            else if (tl_prom_parse(s->out, body + 4, s->len - (size_t)(body + 4 - s->buf)) != 0)
                s->status = -1;
        }
        free(s->buf);
        s->buf = NULL;
        s->out->at = tl_now();
        s->out->ok = s->status == 0;
        s->done_cb(s, s->status);
    }
}

static void tl__scrape_finish(tl_scrape *s)
{
    if (!uv_is_closing((uv_handle_t *)&s->tcp))
        uv_close((uv_handle_t *)&s->tcp, tl__scrape_closed_cb);
    if (!uv_is_closing((uv_handle_t *)&s->timeout))
        uv_close((uv_handle_t *)&s->timeout, tl__scrape_closed_cb);
}

static void tl__scrape_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    tl_scrape *s = h->data;
    if (s->cap - s->len < 65536 + 1) {
        size_t cap = s->cap ? s->cap * 2 : 262144;
        char *b = realloc(s->buf, cap);
        if (!b) {
            buf->base = NULL;
            buf->len = 0;
            return;
        }
        s->buf = b;
        s->cap = cap;
    }
    buf->base = s->buf + s->len;
    buf->len = s->cap - s->len - 1;
}

static void tl__scrape_read_cb(uv_stream_t *stream, ssize_t n, const uv_buf_t *buf)
{
    tl_scrape *s = stream->data;
    if (n > 0) {
        s->len += (size_t)n;
        s->buf[s->len] = 0;
        return;
    }
    if (n < 0) {
        if (n != UV_EOF)
            s->status = (int)n;
        tl__scrape_finish(s);
    }
}

static void tl__scrape_write_cb(uv_write_t *req, int status)
{
    tl_scrape *s = req->data;
    if (status < 0) {
        s->status = status;
        tl__scrape_finish(s);
    }
}

static void tl__scrape_connect_cb(uv_connect_t *req, int status)
{
    tl_scrape *s = req->data;
    if (status < 0) {
        s->status = status;
        tl__scrape_finish(s);
        return;
    }
    uv_buf_t b = uv_buf_init(s->request, (unsigned)strlen(s->request));
    s->write.data = s;
    int rc = uv_write(&s->write, (uv_stream_t *)&s->tcp, &b, 1, tl__scrape_write_cb);
    if (rc == 0)
        rc = uv_read_start((uv_stream_t *)&s->tcp, tl__scrape_alloc_cb, tl__scrape_read_cb);
    if (rc < 0) {
        s->status = rc;
        tl__scrape_finish(s);
    }
}

static void tl__scrape_timeout_cb(uv_timer_t *t)
{
    tl_scrape *s = t->data;
    s->status = UV_ETIMEDOUT;
    tl__scrape_finish(s);
}

int tl_scrape_start(tl_scrape *s, uv_loop_t *loop, const struct sockaddr *addr, const char *host_header,
                    tl_prom *out, tl_scrape_cb done_cb)
{
    void *data = s->data;
    memset(s, 0, sizeof *s);
    s->data = data;
    s->out = out;
    s->done_cb = done_cb;
    snprintf(s->request, sizeof s->request,
             "GET /metrics HTTP/1.0\r\nHost: %s\r\nConnection: close\r\nUser-Agent: tumble-load\r\n\r\n", host_header);
    uv_tcp_init(loop, &s->tcp);
    uv_timer_init(loop, &s->timeout);
    s->tcp.data = s->timeout.data = s->connect.data = s;
    s->handles_open = 2;
    uv_timer_start(&s->timeout, tl__scrape_timeout_cb, 5000, 0);
    int rc = uv_tcp_connect(&s->connect, &s->tcp, addr, tl__scrape_connect_cb);
    if (rc < 0) {
        s->status = rc;
        tl__scrape_finish(s);
    }
    return 0;
}

/* ---- /proc ---------------------------------------------------------------------- */

double tl_proc_cpu_seconds(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* Fields after the ")" that ends the command name: state is field 3,
     * utime field 14, stime field 15. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long utime = 0, stime = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double tl_proc_rss_mb(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    double mb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            mb = strtod(line + 6, NULL) / 1024.0;
            break;
        }
    fclose(f);
    return mb;
}

/* Socket inode of a LISTEN entry for `port` in /proc/net/tcp or tcp6. */
static unsigned long tl__listen_inode(const char *file, int port)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return 0;
    char line[512];
    unsigned long inode = 0;
    if (!fgets(line, sizeof line, f)) { /* header */
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        char local[128];
        unsigned st = 0;
        unsigned long ino = 0;
        if (sscanf(line, "%*d: %127s %*s %x %*s %*s %*s %*d %*d %lu", local, &st, &ino) != 3)
            continue;
        const char *colon = strrchr(local, ':');
        if (!colon || st != 0x0A) /* TCP_LISTEN */
            continue;
        if ((int)strtol(colon + 1, NULL, 16) == port) {
            inode = ino;
            break;
        }
    }
    fclose(f);
    return inode;
}

int tl_find_listener_pid(int port)
{
    unsigned long inode = tl__listen_inode("/proc/net/tcp", port);
    if (!inode)
        inode = tl__listen_inode("/proc/net/tcp6", port);
    if (!inode)
        return 0;
    char want[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    int found = 0;
    struct dirent *d;
    while (!found && (d = readdir(proc))) {
        if (!isdigit((unsigned char)d->d_name[0]))
            continue;
        char fddir[300];
        snprintf(fddir, sizeof fddir, "/proc/%s/fd", d->d_name);
        DIR *fds = opendir(fddir);
        if (!fds)
            continue;
        struct dirent *e;
        while ((e = readdir(fds))) {
            char link[600], target[64];
            snprintf(link, sizeof link, "%s/%s", fddir, e->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = 0;
            if (strcmp(target, want) == 0) {
                found = atoi(d->d_name);
                break;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return found;
}
