/* log.c: timestamped stderr lines (see log.h). The level is process-wide:
 * it is set once by main before any thread starts. */
#define _POSIX_C_SOURCE 200809L
#include "net/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int tb__log_level = TB_LOG_INFO;

void tb_log_set_level(int level) { tb__log_level = level; }

void tb_log(int level, const char *fmt, ...)
{
    if (level > tb__log_level)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[1024];
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %-5s ", tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, tb_log_level_name(level));
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
