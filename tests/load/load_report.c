/* load_report.c: the machine a run measured on, and the ramp as a picture.
 *
 * A capacity figure means little without the CPU it ran on and how busy the
 * machine was (issue 20: the same commands held 270 towers on an AMD EPYC and
 * 200 on an Intel Xeon), so tl_machine_read() takes the CPU model and core
 * count from /proc and tl_loadavg() the load averages, for the JSON report.
 *
 * tl_report_write() draws the ramp's steps as one SVG: three panels over a
 * shared x axis (rooms) for p99 tick lateness, the snapshot rate ratio and the
 * CPU of server and generator, each with its target as a dashed line and the
 * held limit as a vertical mark through all three. Every element a reader (or
 * a test) looks for carries a class: "axis x", "axis y" with data-name,
 * "pt <series>" with data-rooms and data-value for each point, "held-mark"
 * with data-rooms. No scripts, no fonts or files from elsewhere: the page
 * opens the same from a disk, a CI artifact or a README. */
#define _GNU_SOURCE
#include "load/load.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the machine ------------------------------------------------------------ */

int tl_loadavg(double out[3])
{
    out[0] = out[1] = out[2] = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return -1;
    int n = fscanf(f, "%lf %lf %lf", &out[0], &out[1], &out[2]);
    fclose(f);
    if (n != 3) {
        out[0] = out[1] = out[2] = NAN;
        return -1;
    }
    return 0;
}

/* true when the space-separated list `flags` holds the word `w` */
static bool tl__has_word(const char *flags, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = flags; (p = strstr(p, w)) != NULL; p += n)
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || p[n] == 0))
            return true;
    return false;
}

void tl_machine_read(tl_machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->cpu_model, sizeof m->cpu_model, "unknown");
    m->cpu_family = m->cpu_model_number = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); /* glibc: from CPUID, where a VM may hide sysfs */
    m->l2_kib = l2 > 0 ? (int)(l2 / 1024) : 0;
#endif
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = cores > 0 ? (int)cores : 0;
    m->load_start[0] = m->load_start[1] = m->load_start[2] = NAN;
    m->load_end[0] = m->load_end[1] = m->load_end[2] = NAN;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[4096];
    bool model = false, flags = false;
    while ((!model || !flags) && fgets(line, sizeof line, f)) { /* the first processor's lines */
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = 0;
        if (!model && strncmp(line, "model name", 10) == 0 && *v) {
            snprintf(m->cpu_model, sizeof m->cpu_model, "%s", v);
            model = true;
        } else if (m->cpu_family < 0 && strncmp(line, "cpu family", 10) == 0) {
            m->cpu_family = atoi(v);
        } else if (m->cpu_model_number < 0 && strncmp(line, "model", 5) == 0 && (line[5] == ' ' || line[5] == '\t')) {
            m->cpu_model_number = atoi(v);
        } else if (m->cpu_mhz == 0 && strncmp(line, "cpu MHz", 7) == 0) {
            m->cpu_mhz = atof(v);
        } else if (!flags && strncmp(line, "flags", 5) == 0) {
            const char *w = tl__has_word(v, "avx512f") ? "avx512f"
                            : tl__has_word(v, "avx2")  ? "avx2"
                            : tl__has_word(v, "sse4_2") ? "sse4_2"
                                                       : "";
            snprintf(m->simd, sizeof m->simd, "%s", w);
            flags = true;
        }
    }
    fclose(f);
}

void tl_machine_describe(const tl_machine *m, char *buf, size_t cap)
{
    char family[48] = "", mhz[24] = "", l2[24] = "", detail[96];
    if (m->cpu_family >= 0)
        snprintf(family, sizeof family, ", family %d model %d", m->cpu_family, m->cpu_model_number);
    if (m->cpu_mhz > 0)
        snprintf(mhz, sizeof mhz, ", %.0f MHz", m->cpu_mhz);
    if (m->l2_kib > 0)
        snprintf(l2, sizeof l2, ", L2 %d KiB", m->l2_kib);
    snprintf(detail, sizeof detail, "%s%s%s", family, mhz, l2); /* each part starts ", " */
    snprintf(buf, cap, "%s%s%s%s%s%s", m->cpu_model, detail[0] ? " (" : "", detail[0] ? detail + 2 : "",
             detail[0] ? ")" : "", m->simd[0] ? " " : "", m->simd);
}

/* ---- the picture -------------------------------------------------------------- */

/* Text for SVG or HTML: the five characters that mean something there escaped. */
static void tl__xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A tick step of 1, 2 or 5 times a power of ten that cuts span into about n parts. */
static double tl__nice_step(double span, int n)
{
    if (!(span > 0))
        return 1;
    double raw = span / n, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

enum { TL_W = 900, TL_LEFT = 70, TL_RIGHT = 170, TL_TOP = 76, TL_PANEL_H = 150, TL_GAP = 40, TL_BOTTOM = 60 };

typedef struct tl__panel {
    const char *name, *label;
    double lo, hi;             /* y range */
    int top;                   /* pixel row of the panel's top */
} tl__panel;

typedef struct tl__frame {
    double x_lo, x_hi;
    int width, plot_w;
} tl__frame;

static double tl__px(const tl__frame *fr, double rooms)
{
    return TL_LEFT + (rooms - fr->x_lo) / (fr->x_hi - fr->x_lo) * fr->plot_w;
}

static double tl__py(const tl__panel *p, double v)
{
    if (v < p->lo) v = p->lo;
    if (v > p->hi) v = p->hi;
    return p->top + TL_PANEL_H - (v - p->lo) / (p->hi - p->lo) * TL_PANEL_H;
}

static void tl__y_axis(FILE *f, const tl__frame *fr, const tl__panel *p, int decimals)
{
    fprintf(f, "<g class=\"axis y\" data-name=\"%s\">\n", p->name);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", TL_LEFT, p->top, TL_LEFT,
            p->top + TL_PANEL_H);
    double step = tl__nice_step(p->hi - p->lo, 4);
    for (double v = ceil(p->lo / step - 1e-9) * step; v <= p->hi + step * 1e-6; v += step) {
        double y = tl__py(p, v);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", TL_LEFT, y,
                TL_LEFT + fr->plot_w, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", TL_LEFT - 6, y + 4);
        fprintf(f, "%.*f", decimals, fabs(v) < step * 1e-6 ? 0.0 : v);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<text class=\"axis-label\" transform=\"translate(16,%d) rotate(-90)\" text-anchor=\"middle\">",
            p->top + TL_PANEL_H / 2);
    tl__xml(f, p->label);
    fprintf(f, "</text>\n</g>\n");
}

/* A dashed horizontal line at a target, named at its left end. */
static void tl__target(FILE *f, const tl__frame *fr, const tl__panel *p, double v, const char *cls, const char *label)
{
    if (isnan(v) || v < p->lo || v > p->hi)
        return;
    double y = tl__py(p, v);
    fprintf(f, "<g class=\"%s\"><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#c0392b\" "
               "stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%.1f\" fill=\"#c0392b\">",
            cls, TL_LEFT, y, TL_LEFT + fr->plot_w, y, TL_LEFT + 6, y - 4);
    tl__xml(f, label);
    fprintf(f, "</text></g>\n");
}

/* One series: a polyline through the steps that have a value, and a point for
 * each; a step that did not hold is drawn hollow. */
static void tl__series(FILE *f, const tl__frame *fr, const tl__panel *p, const char *name, const char *colour,
                       const tl_report *steps, int count, size_t offset, int legend_row)
{
    fprintf(f, "<g class=\"series\" data-name=\"%s\">\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
            name, colour);
    for (int i = 0; i < count; i++) {
        double v = *(const double *)((const char *)&steps[i] + offset);
        if (!isnan(v) && !isinf(v))
            fprintf(f, "%.1f,%.1f ", tl__px(fr, steps[i].rooms), tl__py(p, v));
    }
    fprintf(f, "\"/>\n");
    for (int i = 0; i < count; i++) {
        double v = *(const double *)((const char *)&steps[i] + offset);
        if (isnan(v) || isinf(v))
            continue;
        fprintf(f, "<circle class=\"pt %s%s\" data-rooms=\"%d\" data-value=\"%.4g\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                   "stroke=\"%s\" fill=\"%s\"><title>%d rooms: %.4g (%s)</title></circle>\n",
                name, steps[i].held ? "" : " missed", steps[i].rooms, v, tl__px(fr, steps[i].rooms), tl__py(p, v),
                colour, steps[i].held ? colour : "#fff", steps[i].rooms, v, steps[i].held ? "held" : "fell behind");
    }
    int ly = p->top + 14 + legend_row * 18;
    fprintf(f, "<g class=\"legend\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
               "<text x=\"%d\" y=\"%d\">%s</text></g>\n</g>\n",
            TL_LEFT + fr->plot_w + 6, ly - 4, TL_LEFT + fr->plot_w + 24, ly - 4, colour, TL_LEFT + fr->plot_w + 28,
            ly, name);
}

static double tl__max_of(const tl_report *steps, int count, size_t offset, double floor_value)
{
    double m = floor_value;
    for (int i = 0; i < count; i++) {
        double v = *(const double *)((const char *)&steps[i] + offset);
        if (!isnan(v) && !isinf(v) && v > m)
            m = v;
    }
    return m;
}

static double tl__min_of(const tl_report *steps, int count, size_t offset, double ceil_value)
{
    double m = ceil_value;
    for (int i = 0; i < count; i++) {
        double v = *(const double *)((const char *)&steps[i] + offset);
        if (!isnan(v) && !isinf(v) && v < m)
            m = v;
    }
    return m;
}

static void tl__svg(FILE *f, const tl_report *steps, int count, const tl_report_meta *meta, bool standalone)
{
    tl__frame fr = {.width = TL_W, .plot_w = TL_W - TL_LEFT - TL_RIGHT};
    double rmax = 0, rmin = 1e30;
    for (int i = 0; i < count; i++) {
        if (steps[i].rooms > rmax) rmax = steps[i].rooms;
        if (steps[i].rooms < rmin) rmin = steps[i].rooms;
    }
    if (!count)
        rmin = 0, rmax = 10;
    double xstep = tl__nice_step(rmax > 0 ? rmax : 10, 8);
    fr.x_lo = 0;
    fr.x_hi = ceil((rmax > 0 ? rmax : 10) / xstep) * xstep;
    if (fr.x_hi <= fr.x_lo)
        fr.x_hi = fr.x_lo + 1;

    tl__panel late = {"tick_lateness_p99_ms", "p99 tick lateness (ms)", 0, 0, TL_TOP};
    late.hi = tl__max_of(steps, count, offsetof(tl_report, lateness_p99_ms), meta->target_lateness_ms * 1.5);
    late.hi = ceil(late.hi / tl__nice_step(late.hi, 4)) * tl__nice_step(late.hi, 4);
    tl__panel ratio = {"snapshot_rate_ratio", "snapshots / set rate", 0, 1.05, TL_TOP + TL_PANEL_H + TL_GAP};
    double rlo = tl__min_of(steps, count, offsetof(tl_report, snapshot_rate_ratio), meta->target_ratio);
    ratio.lo = floor((rlo - 0.02) * 50) / 50;
    if (ratio.lo < 0) ratio.lo = 0;
    ratio.hi = tl__max_of(steps, count, offsetof(tl_report, snapshot_rate_ratio), 1.0) + 0.01;
    tl__panel cpu = {"cpu_cores", "CPU (cores)", 0, 0, TL_TOP + 2 * (TL_PANEL_H + TL_GAP)};
    cpu.hi = tl__max_of(steps, count, offsetof(tl_report, server_cpu_cores), meta->machine ? meta->machine->cores : 1);
    cpu.hi = ceil(cpu.hi * 2 + 1e-9) / 2;
    int height = TL_TOP + 3 * TL_PANEL_H + 2 * TL_GAP + TL_BOTTOM;

    fprintf(f, "<svg %sclass=\"tumble-ramp\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n",
            standalone ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", fr.width, height, fr.width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text class=\"title\" x=\"%d\" y=\"22\" "
               "font-size=\"15\" font-weight=\"bold\">",
            TL_LEFT);
    fprintf(f, "tumble-load ramp: ");
    tl__xml(f, meta->scenes ? meta->scenes : "");
    fprintf(f, " rooms x %d players: held %d rooms</text>\n<text class=\"machine\" x=\"%d\" y=\"38\">",
            meta->clients_per_room, meta->max_rooms_held, TL_LEFT);
    /* two lines: the CPU's name alone can take most of the width */
    if (meta->machine) {
        const tl_machine *m = meta->machine;
        char name[256];
        tl_machine_describe(m, name, sizeof name);
        tl__xml(f, name);
        fprintf(f, ", %d cores</text>\n<text class=\"conditions\" x=\"%d\" y=\"54\">load average %.2f at the start, "
                   "%.2f at the end",
                m->cores, TL_LEFT, m->load_start[0], m->load_end[0]);
    }
    if (meta->when) {
        fprintf(f, "%s", meta->machine ? ", " : "");
        tl__xml(f, meta->when);
    }
    fprintf(f, "</text>\n");

    /* panels */
    tl__y_axis(f, &fr, &late, 0);
    tl__target(f, &fr, &late, meta->target_lateness_ms, "target", "target");
    tl__series(f, &fr, &late, "lateness", "#1f77b4", steps, count, offsetof(tl_report, lateness_p99_ms), 0);
    tl__y_axis(f, &fr, &ratio, 2);
    tl__target(f, &fr, &ratio, meta->target_ratio, "target", "target");
    tl__series(f, &fr, &ratio, "ratio", "#2ca02c", steps, count, offsetof(tl_report, snapshot_rate_ratio), 0);
    tl__y_axis(f, &fr, &cpu, 1);
    if (meta->machine && meta->machine->cores > 0)
        tl__target(f, &fr, &cpu, meta->machine->cores, "cores", "all cores");
    tl__series(f, &fr, &cpu, "server-cpu", "#d62728", steps, count, offsetof(tl_report, server_cpu_cores), 0);
    tl__series(f, &fr, &cpu, "generator-cpu", "#9467bd", steps, count, offsetof(tl_report, generator_cpu_cores), 1);
    /* the server's split by thread (missing from a server that does not export it) */
    tl__series(f, &fr, &cpu, "workers-cpu", "#ff7f0e", steps, count, offsetof(tl_report, server_workers_cpu_cores), 2);
    tl__series(f, &fr, &cpu, "network-cpu", "#8c564b", steps, count, offsetof(tl_report, server_network_cpu_cores), 3);

    /* the shared x axis, under the last panel */
    int xb = cpu.top + TL_PANEL_H;
    fprintf(f, "<g class=\"axis x\" data-name=\"rooms\">\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n",
            TL_LEFT, xb, TL_LEFT + fr.plot_w, xb);
    for (double v = fr.x_lo; v <= fr.x_hi + xstep * 1e-6; v += xstep) {
        double x = tl__px(&fr, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/><text x=\"%.1f\" y=\"%d\" "
                   "text-anchor=\"middle\">%.0f</text>\n",
                x, xb, x, xb + 5, x, xb + 18, v);
    }
    fprintf(f, "<text class=\"axis-label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">rooms</text>\n</g>\n",
            TL_LEFT + fr.plot_w / 2, xb + 38);

    /* the held limit through every panel */
    if (meta->max_rooms_held > 0) {
        double x = tl__px(&fr, meta->max_rooms_held);
        fprintf(f, "<g class=\"held-mark\" data-rooms=\"%d\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                   "stroke=\"#2c3e50\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" "
                   "font-weight=\"bold\">held %d</text></g>\n",
                meta->max_rooms_held, x, TL_TOP - 6, x, xb, x, TL_TOP - 9 + 0, meta->max_rooms_held);
    }
    fprintf(f, "</svg>\n");
}

int tl_report_write(const char *path, const tl_report *steps, int count, const tl_report_meta *meta)
{
    size_t n = strlen(path);
    bool svg = n >= 4 && strcasecmp(path + n - 4, ".svg") == 0;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    if (svg) {
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        tl__svg(f, steps, count, meta, true);
    } else {
        fprintf(f, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tumble-load ramp: ");
        tl__xml(f, meta->scenes ? meta->scenes : "");
        fprintf(f, "</title>\n<style>body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse}"
                   "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td.why{text-align:left}</style>\n"
                   "</head><body>\n");
        tl__svg(f, steps, count, meta, false);
        fprintf(f, "<p>A step holds when every player gets at least %.2f of the set snapshot rate, the rooms step "
                   "at 120 steps/s, the server's p99 tick lateness stays under %.2f ms and nothing failed. Hollow "
                   "points fell behind.</p>\n<table class=\"steps\">\n<tr><th>rooms</th><th>players</th>"
                   "<th>snapshot ratio</th><th>steps/s per room</th><th>p99 tick lateness ms</th>"
                   "<th>server CPU cores</th><th>workers</th><th>network thread</th><th>generator CPU cores</th>"
                   "<th>errors</th><th>verdict</th></tr>\n",
                meta->target_ratio, meta->target_lateness_ms);
        for (int i = 0; i < count; i++) {
            const tl_report *r = &steps[i];
            fprintf(f, "<tr class=\"step\"><td>%d</td><td>%d</td><td>%.4f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                       "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%llu</td><td class=\"why\">%s",
                    r->rooms, r->clients, r->snapshot_rate_ratio, r->steps_per_room_s, r->lateness_p99_ms,
                    r->server_cpu_cores, r->server_workers_cpu_cores, r->server_network_cpu_cores,
                    r->generator_cpu_cores, (unsigned long long)r->errors,
                    r->held ? "held" : "fell behind");
            if (r->why[0]) {
                fprintf(f, ": ");
                tl__xml(f, r->why);
            }
            fprintf(f, "</td></tr>\n");
        }
        fprintf(f, "</table>\n</body></html>\n");
    }
    int err = ferror(f);
    if (fclose(f) != 0 || err) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}
