/* log.h: one-line logs to stderr, filtered by --log-level.
 *
 * Format strings are always literals in the code (never user data): the
 * printf-format attribute makes the compiler check every call.
 */
#ifndef TB_LOG_H
#define TB_LOG_H

#include "net/config.h"

void tb_log_set_level(int level);
void tb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define tb_log_error(...) tb_log(TB_LOG_ERROR, __VA_ARGS__)
#define tb_log_warn(...) tb_log(TB_LOG_WARN, __VA_ARGS__)
#define tb_log_info(...) tb_log(TB_LOG_INFO, __VA_ARGS__)
#define tb_log_debug(...) tb_log(TB_LOG_DEBUG, __VA_ARGS__)

#endif
